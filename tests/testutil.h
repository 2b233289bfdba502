/* testutil.h -- small helpers shared by the cmocka suites. */
#ifndef KEEL_TESTUTIL_H
#define KEEL_TESTUTIL_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh directory under $TMPDIR (or /tmp); removed by tu_rmdir. */
static inline char *tu_mkdtemp(void)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char *p;
	if (asprintf(&p, "%s/keel-test-XXXXXX", base) < 0 || !mkdtemp(p))
		abort();
	return p;
}

static inline void tu_rmdir(char *dir)
{
	char *cmd;
	if (asprintf(&cmd, "rm -rf '%s'", dir) >= 0) {
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
		free(cmd);
	}
	free(dir);
}

static inline char *tu_path(const char *dir, const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

/* Reads a whole file; NULL if it cannot. */
static inline unsigned char *tu_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	unsigned char *buf = malloc((size_t)st.st_size + 1);
	ssize_t n = buf ? pread(fd, buf, (size_t)st.st_size, 0) : -1;
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

static inline int tu_write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	ssize_t n = len ? pwrite(fd, buf, len, 0) : 0;
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

#endif /* KEEL_TESTUTIL_H */
