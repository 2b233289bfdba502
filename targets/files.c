/*
 * files.c -- the recipes applications write by hand to keep a small file
 * (a configuration, a state file) safe, as a torture --target files:CONFIG
 * adapter (adapter.h).  One file per key, except append-log.
 *
 *   overwrite          open(KEY, O_TRUNC), write, close: no sync at all
 *   rename-nosync      write KEY.tmp, rename it over KEY: no sync at all
 *   rename-fsync-file  write KEY.tmp, fsync it, rename: the directory is
 *                      not synced
 *   rename-full        write KEY.tmp, fsync it, rename, fsync the directory
 *                      (the full recipe)
 *   append-log         one log of "KEY VALUE HASH" records, fdatasync after
 *                      each; opening cuts a torn tail off (the log file's
 *                      creation is made durable with a directory fsync)
 *
 * The put is acknowledged when the recipe's last call returned.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter.h"

enum { OVERWRITE, RENAME_NOSYNC, RENAME_FSYNC_FILE, RENAME_FULL, APPEND_LOG };

static const char *const configs[] = { "overwrite", "rename-nosync",
	"rename-fsync-file", "rename-full", "append-log", NULL };

typedef struct files {
	char dir[4096];
	int config;
	int log;      /* append-log: the log, O_APPEND; else -1 */
} files;

static const char *version(void)
{
	return "POSIX calls (no engine)";
}

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "files: %s %s: %s\n", what, path, strerror(errno));
	return -1;
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return fail("fsync of the directory", dir);
	}
	return close(fd);
}

static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t k = write(fd, buf, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

/* ---- the append-only log ------------------------------------------------- */

/* FNV-1a of "KEY VALUE": a record is valid when its hash matches. */
static uint32_t hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Parses one record line (without its newline); 0 if valid. */
static int parse_record(char *line, size_t n, char **key, char **val)
{
	char *sp1, *sp2, *end;
	unsigned long h;

	line[n] = '\0';
	sp2 = strrchr(line, ' ');
	if (!sp2 || sp2 == line)
		return -1;
	h = strtoul(sp2 + 1, &end, 16);
	if (*end || end - sp2 != 9 || h != hash(line, (size_t)(sp2 - line)))
		return -1;
	*sp2 = '\0';
	sp1 = strchr(line, ' ');
	if (!sp1)
		return -1;
	*sp1 = '\0';
	*key = line;
	*val = sp1 + 1;
	return 0;
}

/* Reads the log and calls FN on every valid record up to the first
 * invalid one (a torn tail); *VALID_END gets that record's offset. */
static int scan_log(int fd, void (*fn)(const char *, const char *, void *),
                    void *arg, off_t *valid_end)
{
	struct stat st;
	char *buf, *p, *nl, *key, *val;
	off_t end = 0;

	if (fstat(fd, &st) != 0)
		return -1;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		return -1;
	}
	for (p = buf; (nl = memchr(p, '\n', (size_t)(buf + st.st_size - p)));
	     p = nl + 1) {
		if (parse_record(p, (size_t)(nl - p), &key, &val) != 0)
			break;
		if (fn)
			fn(key, val, arg);
		end = nl + 1 - buf;
	}
	free(buf);
	*valid_end = end;
	return 0;
}

static int open_log(files *f)
{
	char path[4200];
	struct stat st;
	off_t end;
	int fresh;

	snprintf(path, sizeof path, "%s/log", f->dir);
	fresh = stat(path, &st) != 0;
	f->log = open(path, O_RDWR | O_CREAT | O_APPEND, 0644);
	if (f->log < 0)
		return fail("open", path);
	if (fresh)
		return sync_dir(f->dir);
	/* recovery: cut a torn record off, so new records follow whole ones */
	if (scan_log(f->log, NULL, NULL, &end) != 0)
		return fail("read", path);
	if (end != st.st_size &&
	    (ftruncate(f->log, end) != 0 || fdatasync(f->log) != 0))
		return fail("truncating the torn tail of", path);
	return 0;
}

static int put_log(files *f, const char *key, const char *val)
{
	char rec[256];
	int n = snprintf(rec, sizeof rec, "%s %s", key, val);

	snprintf(rec + n, sizeof rec - (size_t)n, " %08x\n",
	         hash(rec, (size_t)n));
	if (write_all(f->log, rec, strlen(rec)) != 0)
		return fail("append to", "log");
	if (fdatasync(f->log) != 0)
		return fail("fdatasync", "log");
	return 0;
}

/* ---- one file per key -------------------------------------------------------- */

static int put_file(files *f, const char *key, const char *val)
{
	char tmp[4200], path[4200];
	int fd;

	snprintf(path, sizeof path, "%s/%s", f->dir, key);
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", f->dir, key);
	fd = open(f->config == OVERWRITE ? path : tmp,
	          O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fail("open", f->config == OVERWRITE ? path : tmp);
	if (write_all(fd, val, strlen(val)) != 0) {
		close(fd);
		return fail("write", path);
	}
	if ((f->config == RENAME_FSYNC_FILE || f->config == RENAME_FULL) &&
	    fsync(fd) != 0) {
		close(fd);
		return fail("fsync", tmp);
	}
	if (close(fd) != 0)
		return fail("close", path);
	if (f->config == OVERWRITE)
		return 0;
	if (rename(tmp, path) != 0)
		return fail("rename", tmp);
	return f->config == RENAME_FULL ? sync_dir(f->dir) : 0;
}

/* ---- the adapter ----------------------------------------------------------- */

static int files_open(const char *dir, int config, void **store)
{
	files *f = calloc(1, sizeof *f);

	if (!f)
		return -1;
	snprintf(f->dir, sizeof f->dir, "%s", dir);
	f->config = config;
	f->log = -1;
	*store = f;
	return config == APPEND_LOG ? open_log(f) : 0;
}

static int files_put(void *store, const char *key, const char *val)
{
	files *f = store;

	return f->config == APPEND_LOG ? put_log(f, key, val) :
	                                 put_file(f, key, val);
}

static void remember(const char *key, const char *val, void *arg)
{
	char (*last)[64] = arg;
	int k = atoi(key + 1);

	if (key[0] == 'k' && k >= 0 && k < ADAPTER_KEYS)
		snprintf(last[k], sizeof last[k], "%s", val);
}

static int check_log(files *f)
{
	char last[ADAPTER_KEYS][64] = { { 0 } };
	off_t end;

	if (scan_log(f->log, remember, last, &end) != 0)
		return fail("read", "log");
	for (int k = 0; k < ADAPTER_KEYS; k++)
		if (last[k][0])
			printf("k%d %s\n", k, last[k]);
	return 0;
}

static int check_files(files *f)
{
	DIR *d = opendir(f->dir);
	struct dirent *e;
	char path[4400], val[256];

	if (!d)
		return fail("opendir", f->dir);
	while ((e = readdir(d))) {
		if (e->d_name[0] != 'k' || strchr(e->d_name, '.'))
			continue; /* KEY.tmp, the simulator's stash files */
		snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
		int fd = open(path, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, val, sizeof val - 1);
		if (fd >= 0)
			close(fd);
		if (n < 0) {
			closedir(d);
			return fail("read", path);
		}
		val[n] = '\0';
		/* an empty or torn file is a value nobody wrote */
		for (ssize_t i = 0; i < n; i++)
			if (val[i] <= ' ' || val[i] > '~')
				val[i] = '?';
		printf("%s %s\n", e->d_name, n ? val : "<empty>");
	}
	closedir(d);
	return 0;
}

static int files_check(void *store)
{
	files *f = store;

	return f->config == APPEND_LOG ? check_log(f) : check_files(f);
}

static void files_close(void *store)
{
	files *f = store;

	if (f->log >= 0)
		close(f->log);
	free(f);
}

int main(int argc, char **argv)
{
	static const adapter a = { "files", configs, version, files_open,
		files_put, files_check, files_close };

	return adapter_main(&a, argc, argv);
}
