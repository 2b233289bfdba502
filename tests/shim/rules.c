/*
 * rules.c -- small workloads whose verdict flips when one rule of the fault
 * simulator is broken (tests/sim_rules.sh; docs/faults.md's tables):
 *
 *     rules DIR MODE          (the workload: puts until killed)
 *     rules DIR --check       (its checker: "data V" and "cfg V")
 *
 * DIR/data holds one 32-byte record, "data vNNN" padded, made durable first
 * (an operation of its own); DIR/sub is a durable directory.  Each put
 * acknowledges a new value once MODE's recipe returned:
 *
 *   othersync     data overwritten in place, never synced; DIR/other written
 *                 and fsynced: a file's sync covers that file only (LOST)
 *   othersync-ok  the same, data fdatasynced too (holds)
 *   subdir        cfg written to DIR/sub/cfg.tmp, fsynced, renamed over
 *                 DIR/sub/cfg, then DIR -- the parent -- fsynced: under
 *                 posix a directory's sync covers its own entries (LOST)
 *   subdir-ok     the same with DIR/sub fsynced (holds)
 *   rename-nosync cfg written to DIR/cfg.tmp, never synced, renamed over
 *                 DIR/cfg, DIR fsynced: ext4 flushes the data of a rename
 *                 over a file (r3: holds), xfs and btrfs do not (LOST)
 *   msync-async   data stored through a shared mapping, msync(MS_ASYNC):
 *                 it schedules, it makes nothing durable (LOST)
 *   msync-sync    the same with msync(MS_SYNC) (holds)
 *   map-reflush   stores through one mapping, msync(MS_SYNC) after every
 *                 other put: a page flushed once must be followed again,
 *                 its later stores undoable (LOST)
 *   scm-dup       data's descriptor comes from a forked child over a socket,
 *                 received with syscall(SYS_recvmsg) (no wrapper sees it),
 *                 its bytes written back and synced once (adopted); every
 *                 put writes through a dup() of it, never synced: a copy
 *                 of an adopted descriptor is followed too (LOST)
 *   numbers       data's descriptor closed before each put, its number taken
 *                 by DIR/other (written, fsynced, closed), then data opened
 *                 again on the same number, overwritten and fdatasynced: a
 *                 front end that knows descriptors by number must see the
 *                 number name another file (holds)
 *   scm-closeraw  cfg.tmp's descriptor received the same way each put,
 *                 written and fsynced, closed with a syscall instruction of
 *                 its own (no wrapper sees it), renamed over cfg, and DIR
 *                 opened the same way -- the same number, unseen -- and
 *                 fsynced: the sync is the directory's, not the closed
 *                 file's (holds: a false alarm is the failure)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define REC 32

static const char *dir;
static int proto = -1;

static void die(const char *what)
{
	fprintf(stderr, "rules: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void say(const char *fmt, int i, const char *key, int v)
{
	char line[128];
	int n = key ? snprintf(line, sizeof line, fmt, i, key, v)
	            : snprintf(line, sizeof line, fmt, i);
	if (write(proto, line, (size_t)n) != n)
		die("protocol");
}

static char *at(const char *name)
{
	static char p[2][4096];
	static int k;
	k ^= 1;
	snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
	return p[k];
}

static void sync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) != 0)
		die(path);
	close(fd);
}

static void record(char *rec, const char *key, int v)
{
	memset(rec, ' ', REC);
	int n = snprintf(rec, REC, "%s v%d", key, v);
	rec[n] = ' ';
	rec[REC - 1] = '\n';
}

/* A file holding KEY's record V, written, fsynced and closed. */
static void put_file(const char *path, const char *key, int v, int dosync)
{
	char rec[REC];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	record(rec, key, v);
	if (fd < 0 || write(fd, rec, REC) != REC || (dosync && fsync(fd) != 0))
		die(path);
	close(fd);
}

static int print_rec(const char *path, const char *key)
{
	char rec[REC + 1], k[16], v[REC];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno == ENOENT ? 0 : 1;
	ssize_t n = pread(fd, rec, REC, 0);
	close(fd);
	if (n != REC)
		return 0;
	rec[REC] = '\0';
	if (sscanf(rec, "%15s %31s", k, v) == 2 && strcmp(k, key) == 0)
		printf("%s %s\n", key, v);
	return 0;
}

/* Durable beginnings, each an operation of its own: DIR/sub and data. */
static int setup(void)
{
	struct stat st;
	char rec[REC];

	if (stat(at("sub"), &st) != 0) {
		if (mkdir(at("sub"), 0755) != 0)
			die("mkdir");
		sync_path(dir);
	}
	int fd = open(at("data"), O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		die("open data");
	if (lseek(fd, 0, SEEK_END) != REC) {
		say("intent %d %s v%d\n", 0, "data", 0);
		record(rec, "data", 0);
		if (pwrite(fd, rec, REC, 0) != REC || fsync(fd) != 0)
			die("first write");
		sync_path(dir);
		say("ack %d\n", 0, NULL, 0);
	}
	return fd;
}

/* A system call made with an instruction of its own: no wrapper, not
 * even the shim's syscall(2), sees it. */
static long raw3(long nr, long a, long b, long c)
{
#if defined(__x86_64__)
	long rc;
	__asm__ volatile("syscall"
	                 : "=a"(rc)
	                 : "0"(nr), "D"(a), "S"(b), "d"(c)
	                 : "rcx", "r11", "memory");
	return rc;
#else
	return syscall(nr, a, b, c);
#endif
}

/* A descriptor on PATH opened (O_CREAT) by a forked child and received
 * through SOCK with a raw recvmsg: no wrapper sees it arrive. */
static int received(int sock[2], const char *path, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))], c = 0;
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	                    .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	int fd = -1;

	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int f = open(path, flags, 0644);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &f, sizeof f);
		_exit(f < 0 || sendmsg(sock[1], &m, 0) != 1);
	}
	if (syscall(SYS_recvmsg, sock[0], &m, 0) != 1)
		die("recvmsg");
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(h), sizeof fd);
	waitpid(pid, NULL, 0);
	if (fd < 0)
		die("no descriptor received");
	return fd;
}

int main(int argc, char **argv)
{
	const char *env = getenv("KEEL_TORTURE_FD");
	char rec[REC];

	if (argc < 3) {
		fprintf(stderr, "usage: rules DIR MODE | rules DIR --check\n");
		return 2;
	}
	dir = argv[1];
	const char *mode = argv[2];
	if (strcmp(mode, "--check") == 0)
		return print_rec(at("data"), "data") |
		       print_rec(at("sub/cfg"), "cfg") |
		       print_rec(at("cfg"), "cfg");
	if (!env)
		return 2;
	proto = atoi(env);
	int fd = setup(), sock[2] = { -1, -1 };
	unsigned char *map = NULL;
	if (!strncmp(mode, "msync", 5) || !strcmp(mode, "map-reflush")) {
		map = mmap(NULL, REC, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			die("mmap");
	}
	if (!strncmp(mode, "scm", 3) &&
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sock) != 0)
		die("socketpair");
	if (!strcmp(mode, "scm-dup")) {
		/* adopted at its first write, made durable, then copied */
		int got = received(sock, at("data"), O_RDWR);
		/* the bytes data holds now, written back: no value goes
		 * to the file that no intent named (after a cut that lost
		 * op 0, "v0" would be one) */
		if (pread(got, rec, REC, 0) != REC ||
		    pwrite(got, rec, REC, 0) != REC || fdatasync(got) != 0)
			die("adopted write");
		close(fd);
		if ((fd = dup(got)) < 0)
			die("dup");
		close(got);
	}
	for (int i = 1;; i++) {
		int cfg = !strncmp(mode, "subdir", 6) || !strcmp(mode, "rename-nosync") ||
		          !strcmp(mode, "scm-closeraw");
		say("intent %d %s v%d\n", i, cfg ? "cfg" : "data", i);
		record(rec, "data", i);
		if (!strncmp(mode, "othersync", 9)) {
			if (pwrite(fd, rec, REC, 0) != REC)
				die("pwrite");
			put_file(at("other"), "other", i, 1);
			if (!strcmp(mode, "othersync-ok") && fdatasync(fd) != 0)
				die("fdatasync");
		} else if (!strncmp(mode, "subdir", 6)) {
			put_file(at("sub/cfg.tmp"), "cfg", i, 1);
			if (rename(at("sub/cfg.tmp"), at("sub/cfg")) != 0)
				die("rename");
			sync_path(strcmp(mode, "subdir-ok") ? dir : at("sub"));
		} else if (!strcmp(mode, "rename-nosync")) {
			put_file(at("cfg.tmp"), "cfg", i, 0);
			if (rename(at("cfg.tmp"), at("cfg")) != 0)
				die("rename");
			sync_path(dir);
		} else if (map) {
			memcpy(map, rec, REC);
			int how = !strcmp(mode, "msync-async") ? MS_ASYNC
			        : !strcmp(mode, "msync-sync") || i % 2 ? MS_SYNC : 0;
			if (how && msync(map, REC, how) != 0)
				die("msync");
		} else if (!strcmp(mode, "numbers")) {
			close(fd); /* the lowest free number: other takes it */
			put_file(at("other"), "other", i, 1);
			if ((fd = open(at("data"), O_RDWR)) < 0 ||
			    pwrite(fd, rec, REC, 0) != REC || fdatasync(fd) != 0)
				die("data");
		} else if (!strcmp(mode, "scm-dup")) {
			if (pwrite(fd, rec, REC, 0) != REC)
				die("pwrite");
		} else if (!strcmp(mode, "scm-closeraw")) {
			int got = received(sock, at("cfg.tmp"),
			                   O_WRONLY | O_CREAT | O_TRUNC);
			record(rec, "cfg", i);
			if (pwrite(got, rec, REC, 0) != REC || fsync(got) != 0)
				die("adopted write");
			if (raw3(SYS_close, got, 0, 0) != 0)
				die("raw close");
			if (rename(at("cfg.tmp"), at("cfg")) != 0)
				die("rename");
			/* a raw open takes GOT's number: no wrapper sees it */
			int d = (int)raw3(SYS_openat, AT_FDCWD, (long)dir,
			                  O_RDONLY | O_DIRECTORY);
			if (d != got || fsync(d) != 0)
				die("raw open of the directory");
			close(d);
		} else {
			fprintf(stderr, "rules: unknown mode %s\n", mode);
			return 2;
		}
		say("ack %d\n", i, NULL, 0);
	}
}
