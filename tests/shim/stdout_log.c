/*
 * stdout_log.c -- a workload whose log is its standard output, redirected
 * by the workload command to a file below the watched directory:
 *
 *     stdout_log DIR HOW [unsafe] >>DIR/log      (the workload)
 *     stdout_log DIR --check                     (its checker)
 *
 * The log's name is made durable first (the shell created it).  Each put appends "KEY VALUE\n" to standard output, fdatasyncs it (not
 * with "unsafe"), then acknowledges it.  HOW is the way the line is
 * written; none but "syscall" goes through a function the shim exports, so
 * only the syscall backstop (--syscall-backstop) sees them:
 *
 *   stdio    printf + fflush (glibc's internal write)
 *   syscall  syscall(SYS_write, 1, ...)
 *   asm      a syscall instruction of its own
 *   thread   stdio, from a new thread per put
 *   fork     stdio, from a forked child per put
 *   spawn    stdio, from a posix_spawn'ed copy of this program per put
 *   vfork    the same through vfork + execv
 *   freopen  stdio, after freopen(DIR/log, "a", stdout) -- glibc's own
 *            open, dup3 and close; run without the shell's redirection
 *   freopen-over  the same, with standard output first made a dup2 of a
 *            descriptor opened on DIR/side: the number freopen closes and
 *            reuses was followed, and must name the log afterwards
 *   freopen-write  freopen-over, then each line written with write(1, ...)
 *            (the exported wrapper): no backstop needed, and a write taken
 *            for one of DIR/side would leave the log's lines out of the
 *            model
 *   masks    stdio, with every signal blocked and SIGSYS ignored first
 *            (the backstop must keep its SIGSYS, and say the program's)
 *   close-range  stdio, after appending a byte to DIR/side on a descriptor
 *            that close_range() then closes, and writing to /dev/null on
 *            the same number: no write of /dev/null may be taken for one
 *            of DIR/side
 *   io-uring io_uring_setup from a syscall instruction of its own, after
 *            the first put (the backstop must refuse it)
 *   daemon   standard output made a dup2 of a descriptor opened on DIR/log
 *            (run without the shell's redirection); each line written with
 *            write(1, ...) and fdatasynced, then a child calls daemon(),
 *            whose glibc-internal dup2s put /dev/null on 0, 1 and 2, and
 *            writes a line of noise to its standard output: no write of
 *            /dev/null may be taken for one of DIR/log
 *   fopen-freopen  a stream fopen()ed on DIR/side for appending (a
 *            stream the shim makes of its own), then freopen()ed on
 *            DIR/log: each line fputs + fflush + fdatasync(fileno()) on it
 *            (glibc's freopen cannot reopen such a stream: the shim does)
 *   vfork-dup2  each line written with write() on a descriptor opened on
 *            DIR/log and fdatasynced; then a vfork child (as CPython's
 *            subprocess makes) dup2s that descriptor onto its standard
 *            output, close_range()s 3 and up and execs true; the parent
 *            then writes a line of noise to its own standard output.  The
 *            child runs in the parent's memory: its dup2 and close_range
 *            must not change the parent's tables (taken for the parent's,
 *            the noise was a write of DIR/log)
 *
 * stdio, asm, thread and fork run under a 1 ms interval timer whose handler
 * counts: system calls interrupted and restarted, and handlers returning
 * through glibc's restorer, all the time.  The checker prints the newest
 * complete value of each key in DIR/log.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEYS 8
#define PUTS 100000

extern char **environ;

static const char *self;
static const char *how;
static volatile sig_atomic_t ticks;

static void on_tick(int sig)
{
	(void)sig;
	ticks++;
}

static long asm_syscall3(long nr, long a, const void *b, size_t c)
{
	long r;
	__asm__ volatile("syscall"
	                 : "=a"(r)
	                 : "a"(nr), "D"(a), "S"(b), "d"(c)
	                 : "rcx", "r11", "memory");
	return r;
}

static int put_stdio(const char *line)
{
	return printf("%s", line) < 0 || fflush(stdout) != 0 ? -1 : 0;
}

static void *thread_put(void *line)
{
	return (void *)(long)put_stdio(line);
}

static int wait_child(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static const char *watched_dir;

/* The path of NAME in the watched directory, in BUF (4096 bytes). */
static const char *in_dir(char *buf, const char *name)
{
	snprintf(buf, 4096, "%s/%s", watched_dir, name);
	return buf;
}

/* NAME in the watched directory, opened for appending: a descriptor, or
 * -1. */
static int open_append(const char *name)
{
	char path[4096];
	return open(in_dir(path, name), O_WRONLY | O_CREAT | O_APPEND, 0644);
}

/* Standard output made NAME in the watched directory, for appending: the
 * number 1 a dup2 of a descriptor the shim saw opened.  0, or -1. */
static int stdout_on(const char *name)
{
	int fd = open_append(name);
	return fd < 0 || dup2(fd, 1) != 1 || close(fd) != 0 ? -1 : 0;
}
static int unsafe; /* no fdatasync after a put */

/* DIR/side appended to on descriptor N, close_range(N, N), N reused. */
static int close_range_reuse(void)
{
	int fd = open_append("side"), again;

	if (fd < 0 || write(fd, "x", 1) != 1)
		return -1;
	if (close_range((unsigned)fd, (unsigned)fd, 0) != 0)
		return -1;
	again = open("/dev/null", O_WRONLY);
	if (again != fd || write(again, "0123456789", 10) != 10)
		return -1;
	return close(again);
}

/* A child daemon()s; the daemon writes noise on its standard output,
 * /dev/null by then, and says so over a pipe. */
static int daemon_noise(void)
{
	int p[2];
	char c = 'n';

	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		if (daemon(1, 0) != 0)
			_exit(1);
		c = write(1, "noise noise noise\n", 18) == 18 ? 'y' : 'n';
		_exit(write(p[1], &c, 1) == 1 ? 0 : 1);
	}
	close(p[1]);
	int rc = wait_child(pid); /* daemon's parent: gone at once */
	while (read(p[0], &c, 1) < 0 && errno == EINTR)
		;
	close(p[0]);
	return rc == 0 && c == 'y' ? 0 : -1;
}

static int log_fd = -1;        /* vfork-dup2: DIR/log */
static FILE *log_stream;       /* fopen-freopen: DIR/log */
static int put_syncs;          /* put() syncs its line: main does not */

static int vfork_dup2(void)
{
	pid_t pid = vfork();
	if (pid == 0) {
		if (dup2(log_fd, 1) != 1 || close_range(3, ~0U, 0) != 0)
			_exit(126);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || wait_child(pid) != 0)
		return -1;
	return write(1, "noise\n", 6) == 6 ? 0 : -1;
}

static int put(const char *line)
{
	size_t n = strlen(line);
	char *argv[] = { (char *)self, (char *)"-", (char *)"put",
	                 (char *)line, NULL };
	pthread_t t;
	void *rc;
	pid_t pid;

	if (!strcmp(how, "freopen-write"))
		return write(1, line, n) == (ssize_t)n ? 0 : -1;
	if (!strcmp(how, "fopen-freopen"))
		return fputs(line, log_stream) < 0 || fflush(log_stream) ||
		       (!unsafe && fdatasync(fileno(log_stream)) != 0) ? -1 : 0;
	if (!strcmp(how, "vfork-dup2"))
		return write(log_fd, line, n) != (ssize_t)n ||
		       (!unsafe && fdatasync(log_fd) != 0) || vfork_dup2() ? -1
		                                                         : 0;
	if (!strcmp(how, "daemon"))
		return write(1, line, n) != (ssize_t)n ||
		       (!unsafe && fdatasync(1) != 0) || daemon_noise() ? -1 : 0;
	if (!strcmp(how, "stdio") || !strncmp(how, "freopen", 7) ||
	    !strcmp(how, "masks"))
		return put_stdio(line);
	if (!strcmp(how, "close-range"))
		return close_range_reuse() ? -1 : put_stdio(line);
	if (!strcmp(how, "syscall"))
		return syscall(SYS_write, 1, line, n) == (long)n ? 0 : -1;
	if (!strcmp(how, "asm"))
		return asm_syscall3(SYS_write, 1, line, n) == (long)n ? 0 : -1;
	if (!strcmp(how, "io-uring")) {
		char params[120] = { 0 };
		asm_syscall3(SYS_io_uring_setup, 4, params, 0);
		return put_stdio(line);
	}
	if (!strcmp(how, "thread"))
		return pthread_create(&t, NULL, thread_put, (void *)line) ||
		       pthread_join(t, &rc) || rc ? -1 : 0;
	if (!strcmp(how, "fork")) {
		if ((pid = fork()) == 0)
			_exit(put_stdio(line) ? 1 : 0);
		return pid < 0 ? -1 : wait_child(pid);
	}
	if (!strcmp(how, "spawn"))
		return posix_spawn(&pid, self, NULL, NULL, argv, environ) ? -1
		       : wait_child(pid);
	if (!strcmp(how, "vfork")) {
		if ((pid = vfork()) == 0) {
			execv(self, argv);
			_exit(127);
		}
		return pid < 0 ? -1 : wait_child(pid);
	}
	return -1;
}

static int check(const char *dir)
{
	char path[4096], line[256], vals[KEYS][64] = { { 0 } };
	FILE *f;
	int k;

	snprintf(path, sizeof path, "%s/log", dir);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof line, f)) {
		char val[64];
		size_t n = strlen(line);
		if (n == 0 || line[n - 1] != '\n' ||
		    sscanf(line, "k%d %63s", &k, val) != 2 || k < 0 ||
		    k >= KEYS)
			break; /* a torn tail: nothing after it was acknowledged */
		strcpy(vals[k], val);
	}
	fclose(f);
	for (k = 0; k < KEYS; k++)
		if (vals[k][0])
			printf("k%d %s\n", k, vals[k]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *env = getenv("KEEL_TORTURE_FD");
	struct sigaction sa;
	char line[64];
	int tfd;

	if (argc == 4 && !strcmp(argv[2], "put"))
		return put_stdio(argv[3]) ? 1 : 0;
	if (argc < 3)
		return 2;
	if (!strcmp(argv[2], "--check"))
		return check(argv[1]);
	if (!env)
		return 2;
	self = argv[0];
	watched_dir = argv[1];
	how = argv[2];
	unsafe = argc > 3 && !strcmp(argv[3], "unsafe");
	tfd = atoi(env);
	if (!strcmp(how, "masks")) {
		sigset_t all;
		struct sigaction was;
		sigfillset(&all);
		if (sigprocmask(SIG_BLOCK, &all, NULL) ||
		    signal(SIGSYS, SIG_IGN) == SIG_ERR ||
		    sigaction(SIGSYS, NULL, &was) || was.sa_handler != SIG_IGN)
			return 1;
	}
	char side[4096], logp[4096];
	in_dir(side, "side");
	in_dir(logp, "log");
	if ((!strcmp(how, "freopen-over") || !strcmp(how, "freopen-write")) &&
	    stdout_on("side") != 0)
		return 1;
	if (!strcmp(how, "daemon") && stdout_on("log") != 0)
		return 1;
	if (!strcmp(how, "vfork-dup2") && (log_fd = open_append("log")) < 0)
		return 1;
	if (!strcmp(how, "fopen-freopen")) {
		FILE *f = fopen(side, "a");
		if (!f || fputs("side\n", f) < 0 ||
		    (log_stream = freopen(logp, "a", f)) != f)
			return 1;
	}
	if (!strncmp(how, "freopen", 7) && !freopen(logp, "a", stdout))
		return 1;
	/* these put()s sync their own lines */
	put_syncs = !strcmp(how, "daemon") || !strcmp(how, "vfork-dup2") ||
	            !strcmp(how, "fopen-freopen");
	/* the shell created the log: its name must survive a cut too */
	int dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || fsync(dfd) != 0 || close(dfd) != 0)
		return 1;
	if (strcmp(how, "spawn") && strcmp(how, "vfork") &&
	    strcmp(how, "syscall")) {
		struct itimerval tick = { { 0, 1000 }, { 0, 1000 } };
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_tick;
		sa.sa_flags = SA_RESTART;
		sigfillset(&sa.sa_mask);
		if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL,
		                                               &tick, NULL))
			return 1;
	}
	for (int i = 1; i <= PUTS; i++) {
		snprintf(line, sizeof line, "k%d v%d\n", i % KEYS, i);
		dprintf(tfd, "intent %d k%d v%d\n", i, i % KEYS, i);
		if (put(line) || (!unsafe && !put_syncs && fdatasync(1) != 0))
			return 1;
		dprintf(tfd, "ack %d\n", i);
	}
	return 0;
}
