/*
 * undotrunc.c -- an LD_PRELOAD library that plays a power cut for file
 * truncations never synced: a truncate changes the file's size, metadata
 * that reaches the disk only with a sync of the file (or a journal commit
 * some seconds later), so a power cut right after the truncate may find
 * the file as it was.  Every ftruncate that shrinks a file whose name ends
 * with UNDOTRUNC_SUFFIX is kept (the bytes it cut off, up to 64 MiB) until
 * an fsync or fdatasync of that file; at exit, each one not synced since is
 * undone, newest first -- the file gets its cut bytes back.  Writes are left
 * alone: this isolates the truncate.  Each step is reported on stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEEP_MAX (64u << 20)

struct cut {
	char path[PATH_MAX];
	dev_t dev;
	ino_t ino;
	off_t from, to;      /* the size before and after            */
	unsigned char *bytes; /* what lay in [to, from)               */
	struct cut *next;
};
static struct cut *pending; /* newest first */

static int (*real_ftruncate)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static void load(void)
{
	if (!real_ftruncate) {
		real_ftruncate = (int (*)(int, off_t))dlsym(RTLD_NEXT, "ftruncate");
		real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
		real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	}
}

static int followed(int fd, char *path)
{
	const char *sfx = getenv("UNDOTRUNC_SUFFIX");
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, PATH_MAX - 1);
	if (!sfx || n <= 0)
		return 0;
	path[n] = '\0';
	size_t l = strlen(sfx);
	return (size_t)n >= l && strcmp(path + n - l, sfx) == 0;
}

int ftruncate(int fd, off_t len)
{
	char path[PATH_MAX];
	struct stat st;

	load();
	if (followed(fd, path) && fstat(fd, &st) == 0 && len < st.st_size &&
	    st.st_size - len <= (off_t)KEEP_MAX) {
		struct cut *c = calloc(1, sizeof *c);
		if (c && (c->bytes = malloc((size_t)(st.st_size - len))) &&
		    pread(fd, c->bytes, (size_t)(st.st_size - len), len) ==
		        st.st_size - len) {
			snprintf(c->path, sizeof c->path, "%s", path);
			c->dev = st.st_dev;
			c->ino = st.st_ino;
			c->from = st.st_size;
			c->to = len;
			c->next = pending;
			pending = c;
			fprintf(stderr, "  undotrunc: ftruncate %s from %lld to %lld "
			        "(not synced yet)\n", path, (long long)c->from,
			        (long long)len);
		} else if (c) {
			free(c->bytes);
			free(c);
		}
	}
	return real_ftruncate(fd, len);
}

/* the name callers built with _FILE_OFFSET_BITS=64 reach (Tokyo Cabinet) */
int ftruncate64(int fd, off_t len)
{
	return ftruncate(fd, len);
}

/* A sync of FD's file makes its truncations durable. */
static void synced(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return;
	for (struct cut **p = &pending; *p;) {
		struct cut *c = *p;
		if (c->dev == st.st_dev && c->ino == st.st_ino) {
			fprintf(stderr, "  undotrunc: %s synced\n", c->path);
			*p = c->next;
			free(c->bytes);
			free(c);
		} else {
			p = &c->next;
		}
	}
}

int fsync(int fd)
{
	load();
	int rc = real_fsync(fd);
	if (rc == 0)
		synced(fd);
	return rc;
}

int fdatasync(int fd)
{
	load();
	int rc = real_fdatasync(fd);
	if (rc == 0)
		synced(fd);
	return rc;
}

__attribute__((destructor)) static void power_cut(void)
{
	for (struct cut *c = pending; c; c = c->next) {
		int fd = open(c->path, O_WRONLY);
		if (fd < 0 || pwrite(fd, c->bytes, (size_t)(c->from - c->to),
		                     c->to) != c->from - c->to) {
			fprintf(stderr, "  undotrunc: cannot undo %s\n", c->path);
		} else {
			fprintf(stderr, "  undotrunc: power cut: the truncation of "
			        "%s to %lld undone (%lld bytes back)\n", c->path,
			        (long long)c->to, (long long)(c->from - c->to));
		}
		if (fd >= 0)
			close(fd);
	}
}
