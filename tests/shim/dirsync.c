/*
 * dirsync.c -- a rename-over saver whose directory sync reaches the shim by
 * a path no open() wrapper sees, for tests/shim.sh.  Each value of 8 keys is
 * written to KEY.tmp, fsynced, renamed over KEY, then the directory is
 * synced by METHOD, then acknowledged over $KEEL_TORTURE_FD.  Every method
 * but "none" is correct, so torture --power-loss must pass it (a false alarm
 * is a failure) and catch "none".
 *
 *   open       open(dir, O_DIRECTORY) + fsync: the plain way (control)
 *   opendir    fsync(dirfd(opendir(dir))), as dpkg's dir_sync_path: glibc
 *              opens the directory internally (and, first, closedir(NULL)
 *              must fail with EINVAL, as glibc's does)
 *   fdopendir  fdopendir(open(dir)) + fsync(dirfd()), closedir closing the
 *              descriptor inside glibc (its number is then reused)
 *   dup        fsync of a dup() of an opendir() descriptor
 *   exec       a directory descriptor opened before exec, inherited by the
 *              program after it, fsynced there
 *   scm        a directory descriptor opened by another process and
 *              received over a socket (SCM_RIGHTS, recvmsg)
 *   scmraw     the same, received through syscall(SYS_recvmsg): no wrapper
 *              sees the descriptor arrive
 *   closerange each value's file closed with close_range() instead of
 *              close(), then the directory synced as "opendir" does: the
 *              number comes back from glibc's internal open, and the sync
 *              must be the directory's, not the closed file's
 *   closeraw   the same with syscall(SYS_close, fd) for close()
 *   closealias the same with glibc's exported __close(fd)
 *   dup2alias  each value written and synced through a /dev/null
 *              descriptor (written to once before) that glibc's exported
 *              __dup2() put the file on; the directory then synced as
 *              "opendir" does
 *   freopenfail each value's file dup2()'d onto the descriptor of a stream
 *              (fdopen of /dev/null), then freopen() of that stream on a
 *              path that cannot be opened: glibc closes the number inside
 *              when the open fails; the directory is then synced as
 *              "opendir" does, on the same number
 *   fclose     the same with fclose() of the stream for the failed
 *              freopen(): glibc's fclose closes the number inside
 *   closedir   the directory opened, fdopendir()'d and closed with
 *              closedir() WITHOUT a sync, then the renamed file fsynced
 *              through a read-only fopen(), whose descriptor reuses the
 *              number: a file sync, never a directory's (UNSAFE: must be
 *              caught)
 *   none       no directory sync (UNSAFE: must be caught)
 *
 * "dirsync DIR METHOD --check" is the checker: "KEY VALUE" per file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEYS 8

/* glibc's exported internal names, declared by no header */
extern int __close(int fd);
extern int __dup2(int fd, int to);

static const char *dir, *method;
static int held = -1; /* exec, scm, scmraw: the directory descriptor */

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

/* A directory descriptor opened in a child process and sent over a socket
 * pair; RAW receives it without the recvmsg wrapper. */
static int receive_dir(int raw)
{
	int sv[2], fd = -1;
	char byte = 0, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { 0 };

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int d = open(dir, O_RDONLY | O_DIRECTORY);
		if (d < 0)
			_exit(1);
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl;
		m.msg_controllen = sizeof ctl;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &d, sizeof d);
		_exit(sendmsg(sv[1], &m, 0) == 1 ? 0 : 1);
	}
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl;
	m.msg_controllen = sizeof ctl;
	ssize_t n = raw ? syscall(SYS_recvmsg, sv[0], &m, 0)
	                : recvmsg(sv[0], &m, 0);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (n != 1 || !c || c->cmsg_type != SCM_RIGHTS)
		die("recvmsg");
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	waitpid(pid, NULL, 0);
	close(sv[0]);
	close(sv[1]);
	return fd;
}

static void dir_sync(void)
{
	DIR *d;
	int fd;

	if (!strcmp(method, "open")) {
		fd = open(dir, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || fsync(fd) != 0 || close(fd) != 0)
			die("open+fsync");
	} else if (!strcmp(method, "opendir")) {
		if (!(d = opendir(dir)) || fsync(dirfd(d)) != 0 || closedir(d))
			die("opendir+fsync");
	} else if (!strcmp(method, "fdopendir")) {
		fd = open(dir, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || !(d = fdopendir(fd)) || fsync(dirfd(d)) != 0 ||
		    closedir(d) != 0)
			die("fdopendir+fsync");
	} else if (!strcmp(method, "dup")) {
		if (!(d = opendir(dir)) || (fd = dup(dirfd(d))) < 0 ||
		    closedir(d) != 0 || fsync(fd) != 0 || close(fd) != 0)
			die("dup+fsync");
	} else if (!strcmp(method, "closerange") ||
	           !strcmp(method, "closeraw") ||
	           !strcmp(method, "closealias") ||
	           !strcmp(method, "dup2alias") ||
	           !strcmp(method, "freopenfail") ||
	           !strcmp(method, "fclose")) {
		if (!(d = opendir(dir)) || fsync(dirfd(d)) != 0 || closedir(d))
			die("opendir+fsync");
	} else if (held >= 0) {
		if (fsync(held) != 0)
			die("fsync of a held descriptor");
	} else if (strcmp(method, "none") != 0) {
		fprintf(stderr, "unknown method %s\n", method);
		exit(2);
	}
}

/* Closes the value's file FD as METHOD does.  S (freopenfail, fclose) is a
 * stream on /dev/null opened before the file, so its number is the lower
 * one: the file is dup2'd onto it and glibc then closes that number inside.
 * 0, or -1. */
static int close_file(int fd, FILE *s)
{
	char missing[4096];

	if (!strcmp(method, "closerange"))
		return close_range((unsigned)fd, (unsigned)fd, 0);
	if (!strcmp(method, "closeraw"))
		return (int)syscall(SYS_close, fd);
	if (!strcmp(method, "closealias"))
		return __close(fd);
	if (!s)
		return close(fd);
	if (dup2(fd, fileno(s)) < 0 || close(fd) != 0)
		return -1;
	if (!strcmp(method, "fclose"))
		return fclose(s);
	snprintf(missing, sizeof missing, "%s/missing/x", dir);
	return freopen(missing, "w", s) == NULL ? 0 : -1; /* must fail */
}

static void put(int k, const char *v)
{
	char key[16], p[4096], from[4096];
	size_t n = strlen(v);
	FILE *s = NULL;

	snprintf(key, sizeof key, "k%d", k);
	snprintf(p, sizeof p, "%s/%s", dir, key);
	snprintf(from, sizeof from, "%s/%s.tmp", dir, key);
	if (!strcmp(method, "freopenfail") || !strcmp(method, "fclose")) {
		int null = open("/dev/null", O_WRONLY);
		if (null < 0 || !(s = fdopen(null, "w")))
			die("/dev/null");
	}
	int fd = open(from, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && !strcmp(method, "dup2alias")) {
		/* a descriptor the shim has looked at and let pass */
		int null = open("/dev/null", O_WRONLY);
		if (null < 0 || write(null, "x", 1) != 1 ||
		    __dup2(fd, null) != null || close(fd) != 0)
			die("__dup2");
		fd = null;
	}
	if (fd < 0 || write(fd, v, n) != (ssize_t)n || fsync(fd) != 0 ||
	    close_file(fd, s) != 0)
		die(from);
	if (rename(from, p) != 0)
		die("rename");
	if (!strcmp(method, "closedir")) {
		DIR *d;
		FILE *f;
		fd = open(dir, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || !(d = fdopendir(fd)) || closedir(d) != 0 ||
		    !(f = fopen(p, "r")) || fsync(fileno(f)) != 0 || fclose(f))
			die("closedir, then a file sync");
		return;
	}
	dir_sync();
}

static void check(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4096], v[64];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] != 'k' || strchr(e->d_name, '.'))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
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
		fprintf(stderr, "usage: dirsync DIR METHOD safe|--check\n");
		return 2;
	}
	dir = argv[1];
	method = argv[2];
	if (!strcmp(argv[3], "--check")) {
		check();
		return 0;
	}
	if (!strcmp(method, "opendir")) {
		/* glibc answers closedir(NULL) with EINVAL: so must the shim */
		DIR *volatile none = NULL;
		errno = 0;
		if (closedir(none) != -1 || errno != EINVAL)
			die("closedir(NULL)");
	}
	if (!strcmp(method, "exec")) {
		if (argc == 5) {
			held = atoi(argv[4]); /* the image after exec */
		} else {
			char num[16];
			int fd = open(dir, O_RDONLY | O_DIRECTORY);
			if (fd < 0)
				die("open dir");
			snprintf(num, sizeof num, "%d", fd);
			execl("/proc/self/exe", argv[0], dir, method, argv[3],
			      num, (char *)NULL);
			die("exec");
		}
	} else if (!strcmp(method, "scm") || !strcmp(method, "scmraw")) {
		held = receive_dir(!strcmp(method, "scmraw"));
	}
	srand((unsigned)strtoul(getenv("KEEL_TORTURE_SEED"), NULL, 10));
	for (unsigned i = 1; i < 100000; i++) {
		int k = rand() % KEYS;
		char key[16];
		snprintf(key, sizeof key, "k%d", k);
		snprintf(v, sizeof v, "v%u", i);
		say("intent %u %s %s\n", i, key, v);
		put(k, v);
		say("ack %u\n", i, key, v);
	}
	return 0;
}
