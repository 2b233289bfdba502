/*
 * why.c -- savers with one known missing step, for tests/shim.sh: torture's
 * explanation of a violation must name the call, the missing step and the
 * call site (the line marked SITE: below).  "why DIR MODE" is the workload,
 * "why DIR MODE --check" the checker (one "KEY VALUE" line per key).
 *
 *   rename     save_config: cfg.tmp written and fsynced, renamed over cfg;
 *              the directory is never fsynced
 *   append     append_record: "k=vN\n" appended to log; never fdatasynced
 *   truncsave  save_truncate: cfg cut to 0 and rewritten in place; never
 *              fsynced.  The cut is declared as a delete first: a kill
 *              between the ftruncate and the pwrite leaves cfg empty, which
 *              no sync would change (the saver is not atomic); only what a
 *              power cut loses after the ack is the missing sync
 *   crowd      as rename, after 1,000 small files written and never
 *              synced: 2,000 records a power cut may drop (it keeps a
 *              random part of them; git leaves 1,400), and the cause is
 *              still the one rename
 *   bigwrite   one key saved without a sync, then 64 KiB rewrites of big
 *              with fdatasync, over and over: a kill lands inside one
 *              (the fdatasync: the device flush is most of the time)
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIG (64u << 10)

static const char *dir;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void say(const char *line)
{
	int fd = atoi(getenv("KEEL_TORTURE_FD"));
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		exit(3);
}

static void path(char *buf, const char *name)
{
	snprintf(buf, 4096, "%s/%s", dir, name);
}

/* The file NAME is created and its name made durable, once. */
static int durable_file(const char *name)
{
	char p[4096];
	int fd, d;

	path(p, name);
	fd = open(p, O_RDWR | O_CREAT, 0644);
	d = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || d < 0 || fsync(fd) != 0 || fsync(d) != 0)
		die(name);
	close(d);
	return fd;
}

__attribute__((noinline)) static void save_config(const char *v)
{
	char tmp[4096], p[4096];
	int fd;

	path(tmp, "cfg.tmp");
	path(p, "cfg");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, v, strlen(v)) != (ssize_t)strlen(v) ||
	    fsync(fd) != 0 || close(fd) != 0)
		die("cfg.tmp");
	if (rename(tmp, p) != 0) /* SITE:rename */
		die("rename");
	/* missing: fsync of the directory */
}

__attribute__((noinline)) static void append_record(int fd, const char *v)
{
	char rec[64];
	int n = snprintf(rec, sizeof rec, "k=%s\n", v);

	if (write(fd, rec, (size_t)n) != n) /* SITE:append */
		die("write");
	/* missing: fdatasync(fd) */
}

__attribute__((noinline)) static void save_truncate(int fd, const char *v)
{
	if (ftruncate(fd, 0) != 0) /* SITE:truncate */
		die("ftruncate");
	if (pwrite(fd, v, strlen(v), 0) != (ssize_t)strlen(v)) /* SITE:pwrite */
		die("pwrite");
	/* missing: fsync(fd) */
}

/* The noise of crowd: files nobody reads, created and written unsynced. */
static void crowd(void)
{
	char p[4096], name[32];

	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof name, "n%03d", i);
		path(p, name);
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, name, strlen(name)) < 0 || close(fd))
			die(name);
	}
}

__attribute__((noinline)) static void rewrite_big(int fd, char *buf)
{
	if (pwrite(fd, buf, BIG, 0) != (ssize_t)BIG || fdatasync(fd) != 0)
		die("big");
}

static void check(const char *mode)
{
	char p[4096], buf[256], last[64] = "";
	FILE *f;

	if (!strcmp(mode, "append")) {
		path(p, "log");
		if (!(f = fopen(p, "r")))
			return;
		while (fgets(buf, sizeof buf, f))
			if (!strncmp(buf, "k=", 2) && buf[strlen(buf) - 1] == '\n')
				snprintf(last, sizeof last, "%.*s",
				         (int)strlen(buf) - 3, buf + 2);
		fclose(f);
		if (last[0])
			printf("k %s\n", last);
		return;
	}
	path(p, !strcmp(mode, "bigwrite") ? "key" : "cfg");
	if (!(f = fopen(p, "r")))
		return;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	if (n)
		printf("%s %s\n", !strcmp(mode, "bigwrite") ? "key" : "cfg", buf);
}

int main(int argc, char **argv)
{
	char v[32], line[128], *big = NULL;
	const char *mode;
	int fd = -1;

	if (argc < 3) {
		fprintf(stderr, "usage: why DIR MODE [--check]\n");
		return 2;
	}
	dir = argv[1];
	mode = argv[2];
	if (argc > 3 && !strcmp(argv[3], "--check")) {
		check(mode);
		return 0;
	}
	if (!strcmp(mode, "append"))
		fd = durable_file("log");
	if (!strcmp(mode, "truncsave"))
		fd = durable_file("cfg");
	if (!strcmp(mode, "append"))
		lseek(fd, 0, SEEK_END);
	if (!strcmp(mode, "crowd"))
		crowd();
	for (unsigned i = 1; i < 1000000; i++) {
		snprintf(v, sizeof v, "v%u", i + (unsigned)getpid() * 1000);
		snprintf(line, sizeof line, "intent %u %s %s\n", i,
		         !strcmp(mode, "append") ? "k" :
		         !strcmp(mode, "bigwrite") ? "key" : "cfg", v);
		if (!strcmp(mode, "truncsave")) {
			char cut[64];
			snprintf(cut, sizeof cut, "intent t%u cfg delete\n", i);
			say(cut);
		}
		say(line);
		if (!strcmp(mode, "rename") || !strcmp(mode, "crowd")) {
			save_config(v);
		} else if (!strcmp(mode, "append")) {
			append_record(fd, v);
		} else if (!strcmp(mode, "truncsave")) {
			save_truncate(fd, v);
		} else if (!strcmp(mode, "bigwrite")) {
			int k = durable_file("key");
			if (pwrite(k, v, strlen(v), 0) != (ssize_t)strlen(v))
				die("key");
			close(k);
		} else {
			fprintf(stderr, "unknown mode %s\n", mode);
			return 2;
		}
		snprintf(line, sizeof line, "ack %u\n", i);
		say(line);
		if (!strcmp(mode, "bigwrite"))
			break;
		usleep(2000);
	}
	if (!strcmp(mode, "bigwrite")) {
		int b = durable_file("big");
		if (!(big = malloc(BIG)))
			die("malloc");
		for (unsigned i = 0;; i++) {
			memset(big, (int)('a' + i % 26), BIG);
			rewrite_big(b, big);
		}
	}
	return 0;
}
