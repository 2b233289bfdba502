/*
 * family.c -- one workload per family of calls the shim wraps, for
 * tests/shim.sh.  Each puts values under 8 keys and acknowledges them over
 * $KEEL_TORTURE_FD; SAFE syncs what the family needs before the ack, UNSAFE
 * leaves that sync out, so torture --power-loss must pass the first and
 * catch the second.  "family DIR FAMILY --check" is the checker.
 *
 *   append     one log file, O_APPEND write() of "KEY=VALUE\n"; fdatasync
 *   overwrite  one file of 32-byte slots, pwrite() in place; fdatasync
 *   truncate   a file per key whose SIZE is the value; ftruncate; fsync
 *   rename     KEY.tmp written, fsynced, renamed over KEY; directory fsync
 *   unlink     an absent key is created (file and directory fsynced),
 *              a present one unlinked; directory fsync
 *   remove     the same, deleting with remove(3) (glibc's calls its own
 *              unlink, which the shim wraps through remove itself)
 *   odsync     slots written with pwritev() on an O_DSYNC descriptor
 *              (UNSAFE: a plain descriptor, no sync)
 *   stdio      fopen("a") + fprintf + fflush; fsync(fileno()); between,
 *              a seek past the largest offset, which must fail as it
 *              does without the shim
 *   dup        writes through a dup()ed descriptor and an F_DUPFD one;
 *              fdatasync on the original
 *   fsyncname  KEY.tmp written and fsynced, renamed over KEY, then KEY
 *              fsynced again: never a directory fsync.  Durable where a
 *              file's fsync makes its name durable (torture --fs ext4,
 *              xfs, btrfs), not under --fs posix; UNSAFE leaves out the
 *              fsync after the rename.  60 puts a process, then it exits
 *              (files replaced without a directory sync stay tracked)
 *   mmap       a file of 1 KiB slots over two pages, mapped MAP_SHARED
 *              once and written by stores (every third value by read()
 *              from a pipe straight into the mapping); msync(MS_SYNC) and
 *              fdatasync in turn (UNSAFE: msync(MS_ASYNC) or nothing);
 *              it installs a SIGSEGV handler of its own first and makes
 *              it catch one fault, which the shim's handler must pass on
 */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define KEYS 8
#define SLOT 32
#define MSLOT 1024 /* mmap: a slot's stride (four to a page) */

static const char *dir, *family;
static int safe;
static int map_fd = -1;       /* mmap: the slots file and its mapping */
static unsigned char *map;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void say(const char *fmt, unsigned op, const char *k, const char *v)
{
	char line[256];
	int fd = atoi(getenv("KEEL_TORTURE_FD"));
	int n = snprintf(line, sizeof line, fmt, op, k, v);
	if (write(fd, line, (size_t)n) != n)
		exit(3);
}

static void path(char *buf, const char *name)
{
	snprintf(buf, 4096, "%s/%s", dir, name);
}

static void dir_sync(void)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) != 0 || close(fd) != 0)
		die("dir fsync");
}

static int open_file(const char *name, int flags)
{
	char p[4096];
	path(p, name);
	int fd = open(p, flags, 0644);
	if (fd < 0)
		die(name);
	return fd;
}

/* Is LINE[0..N) one record "kD=vN\n" as put() writes it? */
static int well_formed(const char *line, size_t n)
{
	int k, used = 0;
	unsigned v;
	char tail;

	return n > 0 && line[n - 1] == '\n' && memchr(line, '\0', n) == NULL &&
	       sscanf(line, "k%d=v%u%c%n", &k, &v, &tail, &used) == 3 &&
	       tail == '\n' && (size_t)used == n && k >= 0 && k < KEYS;
}

/*
 * SAFE appends: before its first append, a writer cuts the log back to its
 * longest prefix of whole records and syncs the cut, as a careful log
 * writer does.  A crash can leave the last, unacknowledged record torn or
 * garbled; appending behind it would glue the next record onto it, and the
 * reader would lose an acknowledged record (torture --device garbage found
 * this in the recipe).
 */
static void log_recover(void)
{
	char p[4096], line[256];
	long keep = 0;

	path(p, "log");
	FILE *f = fopen(p, "r");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		size_t n = strlen(line);
		if (!well_formed(line, n))
			break;
		keep += (long)n;
	}
	fclose(f);
	int fd = open_file("log", O_WRONLY);
	if (ftruncate(fd, keep) != 0 || fsync(fd) != 0)
		die("log recovery");
	close(fd);
}

static void put_slot(int k, const char *key, const char *v)
{
	char rec[SLOT];
	int od = !strcmp(family, "odsync") && safe ? O_DSYNC : 0;
	int fd = open_file("slots", O_RDWR | O_CREAT | od);

	memset(rec, ' ', sizeof rec);
	int n = snprintf(rec, sizeof rec, "%s=%s", key, v);
	rec[n] = ' ';
	rec[SLOT - 1] = '\n';
	if (!strcmp(family, "odsync")) {
		struct iovec iov[2] = { { rec, 10 }, { rec + 10, SLOT - 10 } };
		if (pwritev(fd, iov, 2, (off_t)k * SLOT) != SLOT)
			die("pwritev");
	} else if (!strcmp(family, "dup")) {
		int d = k % 2 ? dup(fd) : fcntl(fd, F_DUPFD, 100);
		if (d < 0 || lseek(d, (off_t)k * SLOT, SEEK_SET) < 0 ||
		    write(d, rec, SLOT) != SLOT)
			die("dup write");
		close(d);
		if (safe && fdatasync(fd) != 0)
			die("fdatasync");
	} else {
		if (pwrite(fd, rec, SLOT, (off_t)k * SLOT) != SLOT)
			die("pwrite");
		if (safe && fdatasync(fd) != 0)
			die("fdatasync");
	}
	close(fd);
}

static sigjmp_buf segv_back;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_back, 1);
}

/* A program's own SIGSEGV handler still sees the faults that are not the
 * shim's: one store into a PROT_NONE page must land in on_segv. */
static void own_handler_works(void)
{
	struct sigaction sa;
	volatile int caught = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_segv;
	if (sigaction(SIGSEGV, &sa, NULL) != 0)
		die("sigaction");
	char *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
	                  -1, 0);
	if (none == MAP_FAILED)
		die("mmap");
	if (sigsetjmp(segv_back, 1) == 0)
		*(volatile char *)none = 1;
	else
		caught = 1;
	if (!caught) {
		fprintf(stderr, "family: the store into PROT_NONE did not fault\n");
		exit(1);
	}
	munmap(none, 4096);
}

/* mmap: the slots file is made its full size, durably, once per life;
 * then mapped for good. */
static void map_open(void)
{
	map_fd = open_file("mslots", O_RDWR | O_CREAT);
	if (ftruncate(map_fd, KEYS * MSLOT) != 0 || fsync(map_fd) != 0)
		die("mslots");
	dir_sync();
	map = mmap(NULL, KEYS * MSLOT, PROT_READ | PROT_WRITE, MAP_SHARED,
	           map_fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	own_handler_works();
}

static void put_map(unsigned i, int k, const char *key, const char *v)
{
	char rec[SLOT];
	unsigned char *at = map + (size_t)k * MSLOT;
	int p[2];

	memset(rec, ' ', sizeof rec);
	int n = snprintf(rec, sizeof rec, "%s=%s", key, v);
	rec[n] = ' ';
	rec[SLOT - 1] = '\n';
	if (i % 3 == 0) {
		/* the kernel stores into the mapping: no fault to catch */
		if (pipe(p) != 0 || write(p[1], rec, SLOT) != SLOT ||
		    read(p[0], at, SLOT) != SLOT)
			die("read into the mapping");
		close(p[0]);
		close(p[1]);
	} else {
		memcpy(at, rec, SLOT);
	}
	unsigned char *pg = map + (size_t)k * MSLOT / 4096 * 4096;
	if (safe && i % 2 && msync(pg, 4096, MS_SYNC) != 0)
		die("msync");
	if (safe && !(i % 2) && fdatasync(map_fd) != 0)
		die("fdatasync");
	if (!safe && i % 2 && msync(pg, 4096, MS_ASYNC) != 0)
		die("msync");
}

static void put_file(const char *key, const char *v, int del)
{
	char p[4096], from[4096], tmp[64];
	int fd;

	path(p, key);
	if (!strcmp(family, "truncate")) {
		fd = open_file(key, O_RDWR | O_CREAT);
		if (ftruncate(fd, atoi(v + 1)) != 0)
			die("ftruncate");
		if (safe && fsync(fd) != 0)
			die("fsync");
		close(fd);
		dir_sync();
	} else if (!strcmp(family, "rename")) {
		snprintf(tmp, sizeof tmp, "%s.tmp", key);
		fd = open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
		if (write(fd, v, strlen(v)) != (ssize_t)strlen(v) || fsync(fd))
			die("write");
		close(fd);
		path(from, tmp);
		if (rename(from, p) != 0)
			die("rename");
		if (safe)
			dir_sync();
	} else if (!strcmp(family, "fsyncname")) {
		snprintf(tmp, sizeof tmp, "%s.tmp", key);
		fd = open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
		if (write(fd, v, strlen(v)) != (ssize_t)strlen(v) || fsync(fd))
			die("write");
		path(from, tmp);
		if (rename(from, p) != 0)
			die("rename");
		if (safe && fsync(fd) != 0)
			die("fsync after rename");
		close(fd);
	} else if (del) {
		if ((!strcmp(family, "remove") ? remove(p) : unlink(p)) != 0)
			die("unlink");
		if (safe)
			dir_sync();
	} else {
		fd = open_file(key, O_WRONLY | O_CREAT | O_TRUNC);
		if (write(fd, v, strlen(v)) != (ssize_t)strlen(v) || fsync(fd))
			die("write");
		close(fd);
		dir_sync();
	}
}

static void put(unsigned i, int k, const char *v, int del)
{
	char key[16], p[4096], rec[64];

	snprintf(key, sizeof key, "k%d", k);
	if (!strcmp(family, "append")) {
		int fd = open_file("log", O_WRONLY | O_CREAT | O_APPEND);
		int n = snprintf(rec, sizeof rec, "%s=%s\n", key, v);
		if (write(fd, rec, (size_t)n) != n)
			die("write");
		if (safe && fdatasync(fd) != 0)
			die("fdatasync");
		close(fd);
	} else if (!strcmp(family, "stdio")) {
		path(p, "log");
		FILE *f = fopen(p, "a");
		if (!f)
			die("fopen");
		fprintf(f, "%s=%s\n", key, v);
		if (fflush(f) != 0)
			die("fflush");
		/* a seek the kernel refuses (past the largest offset: the
		 * file is not empty now) fails here too: the shim makes the
		 * stream over a tracked file of its own */
		if (fseeko(f, INT64_MAX, SEEK_END) != -1) {
			fprintf(stderr, "family: a seek past the largest "
			        "offset did not fail\n");
			exit(1);
		}
		if (safe && fsync(fileno(f)) != 0)
			die("fsync");
		fclose(f);
	} else if (!strcmp(family, "overwrite") || !strcmp(family, "odsync") ||
	           !strcmp(family, "dup")) {
		put_slot(k, key, v);
	} else if (!strcmp(family, "truncate") || !strcmp(family, "rename") ||
	           !strcmp(family, "unlink") || !strcmp(family, "remove") ||
	           !strcmp(family, "fsyncname")) {
		put_file(key, v, del);
	} else if (!strcmp(family, "mmap")) {
		put_map(i, k, key, v);
	} else {
		fprintf(stderr, "unknown family %s\n", family);
		exit(2);
	}
}

/* ---- checkers ------------------------------------------------------------- */

static void check_log(void)
{
	char p[4096], line[256], last[KEYS][64] = { { 0 } };
	path(p, "log");
	FILE *f = fopen(p, "r");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		int k;
		char v[64];
		size_t n = strlen(line);
		if (!well_formed(line, n))
			break; /* a torn or garbled last record: never acknowledged */
		if (sscanf(line, "k%d=%63s", &k, v) == 2)
			snprintf(last[k], sizeof last[k], "%s", v);
	}
	fclose(f);
	for (int k = 0; k < KEYS; k++)
		if (last[k][0])
			printf("k%d %s\n", k, last[k]);
}

static void check_slots(const char *name, off_t stride)
{
	char rec[SLOT + 1], v[64];
	char p[4096];
	int fd, k2;
	path(p, name);
	if ((fd = open(p, O_RDONLY)) < 0)
		return;
	for (int k = 0; k < KEYS; k++) {
		ssize_t n = pread(fd, rec, SLOT, (off_t)k * stride);
		if (n <= 0)
			break;
		rec[n] = '\0';
		int blank = 1;
		for (ssize_t i = 0; i < n; i++)
			blank &= rec[i] == '\0';
		if (blank)
			continue; /* never written (a hole) */
		if (sscanf(rec, "k%d=%63s", &k2, v) == 2 && k2 == k)
			printf("k%d %s\n", k, v);
		else
			printf("k%d <garbage>\n", k);
	}
	close(fd);
}

static void check_files(int by_size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4096], v[64];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] != 'k' || strchr(e->d_name, '.'))
			continue;
		path(p, e->d_name);
		if (by_size) {
			struct stat st;
			if (stat(p, &st) == 0)
				printf("%s v%lld\n", e->d_name,
				       (long long)st.st_size);
			continue;
		}
		int fd = open(p, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, v, sizeof v - 1);
		if (fd >= 0)
			close(fd);
		v[n > 0 ? n : 0] = '\0';
		printf("%s %s\n", e->d_name, n > 0 ? v : "<empty>");
	}
	if (d)
		closedir(d);
}

int main(int argc, char **argv)
{
	char v[32];

	if (argc < 4) {
		fprintf(stderr, "usage: family DIR FAMILY safe|unsafe|--check\n");
		return 2;
	}
	dir = argv[1];
	family = argv[2];
	if (!strcmp(argv[3], "--check")) {
		if (!strcmp(family, "append") || !strcmp(family, "stdio"))
			check_log();
		else if (!strcmp(family, "overwrite") || !strcmp(family, "odsync") ||
		         !strcmp(family, "dup"))
			check_slots("slots", SLOT);
		else if (!strcmp(family, "mmap"))
			check_slots("mslots", MSLOT);
		else
			check_files(!strcmp(family, "truncate"));
		return 0;
	}
	safe = !strcmp(argv[3], "safe");
	if (safe && (!strcmp(family, "append") || !strcmp(family, "stdio") ||
	             !strcmp(family, "overwrite") || !strcmp(family, "odsync") ||
	             !strcmp(family, "dup"))) {
		/* the one file is created once, and its name made durable */
		close(open_file(!strcmp(family, "append") ||
		                !strcmp(family, "stdio") ? "log" : "slots",
		                O_WRONLY | O_CREAT));
		dir_sync();
		if (!strcmp(family, "append") || !strcmp(family, "stdio"))
			log_recover();
	}
	if (!strcmp(family, "mmap"))
		map_open();
	srand((unsigned)strtoul(getenv("KEEL_TORTURE_SEED"), NULL, 10));
	for (unsigned i = 1; i < 100000; i++) {
		int k = rand() % KEYS;
		int del = 0;
		char key[16], p[4096];
		struct stat st;
		snprintf(key, sizeof key, "k%d", k);
		path(p, key);
		if (!strcmp(family, "fsyncname") && i > 60)
			return 0;
		/* unlink: a present key is deleted, an absent one created (an
		 * O_TRUNC over an existing file could show empty at a crash) */
		if (!strcmp(family, "unlink") || !strcmp(family, "remove"))
			del = stat(p, &st) == 0;
		/* truncate: the value is a size; others: a unique token */
		snprintf(v, sizeof v, "v%u", !strcmp(family, "truncate") ?
		         (unsigned)(rand() % 5000) + 1 : i);
		say(del ? "intent %u %s delete\n" : "intent %u %s %s\n", i, key, v);
		put(i, k, v, del);
		say("ack %u\n", i, key, v);
	}
	return 0;
}
