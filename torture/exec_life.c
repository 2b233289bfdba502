/*
 * exec_life.c -- one life of a program under `torture --target exec`
 * (exec_internal.h): started under its front end in a process group of
 * its own, its output read line by line (the workload's protocol, the
 * checker's answers), killed at its deadline or when it ends, and every
 * member of its group reaped.
 */
#include "exec_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- starting and reaping a program ------------------------------------------ */

static void child_env(xrun *r, int proto_fd, uint64_t seed, uint64_t cycle)
{
	char buf[PATH_MAX + 64], *old = getenv("LD_PRELOAD");
	pid_t parent = getppid();

	/* under the supervisor the shim stays out: one front end records */
	if (r->supervised)
		snprintf(buf, sizeof buf, "%s", old ? old : "");
	else if (old && *old)
		snprintf(buf, sizeof buf, "%s:%s", r->shim, old);
	else
		snprintf(buf, sizeof buf, "%s", r->shim);
	if (buf[0])
		setenv("LD_PRELOAD", buf, 1);
	else
		unsetenv("LD_PRELOAD");
	setenv("KEEL_SHIM_DIR", r->dir, 1);
	setenv("KEEL_TORTURE_DIR", r->dir, 1);
	snprintf(buf, sizeof buf, "/proc/%d/fd/%d", (int)parent, r->ctl_fd);
	setenv("KEEL_SHIM_CTL", buf, 1);
	snprintf(buf, sizeof buf, "/proc/%d/fd/%d", (int)parent, r->cache_fd);
	setenv("KEEL_SHIM_CACHE", buf, 1);
	/* faults are injected into the workload only: the checker's recovery
	 * failing on an injected error would say nothing about what the
	 * workload's failed sync left behind (and would blame the store) */
	if (r->faults && proto_fd >= 0) {
		snprintf(buf, sizeof buf, "/proc/%d/fd/%d", (int)parent,
		         r->faults_fd);
		setenv("KEEL_SHIM_FAULTS", buf, 1);
	} else {
		unsetenv("KEEL_SHIM_FAULTS");
	}
	if (r->o->volatile_files)
		setenv("KEEL_SHIM_VOLATILE", r->o->volatile_files, 1);
	else
		unsetenv("KEEL_SHIM_VOLATILE");
	/* what --setup leaves counts as durable: nothing it records is ever
	 * undone, so a full cache is settled, never a refusal */
	setenv("KEEL_SHIM_KILLS_ONLY", exec_kills_only(r) || r->in_setup ? "1"
	                                                                 : "0", 1);
	setenv("KEEL_SHIM_BACKSTOP", r->backstop ? "1" : "0", 1);
	setenv("KEEL_SHIM_PROFILE",
	       faultsim_profile_name((faultsim_profile)r->o->profile), 1);
	/* below 2^63: a shell's $(( )) is signed 64-bit arithmetic */
	snprintf(buf, sizeof buf, "%" PRIu64, seed & INT64_MAX);
	setenv("KEEL_TORTURE_SEED", buf, 1);
	snprintf(buf, sizeof buf, "%" PRIu64, cycle);
	setenv("KEEL_TORTURE_CYCLE", buf, 1);
	setenv("KEEL_SHIM_ROLE", proto_fd >= 0 ? "workload" : "checker", 1);
	unsetenv("KEEL_SHIM_ROLE_PID");
	unsetenv("KEEL_SHIM_ROLE_LEVEL");
	unsetenv("KEEL_SHIM_ROLE_BASE");
	if (proto_fd >= 0) {
		snprintf(buf, sizeof buf, "%d", proto_fd);
		setenv("KEEL_TORTURE_FD", buf, 1);
	} else {
		unsetenv("KEEL_TORTURE_FD");
	}
}

/*
 * Starts CMD under the shim in a process group of its own.  PROTO_FD (the
 * pipe's write end, or -1) is handed down; OUT_FD (or -1: the log) becomes
 * stdout.  Returns the pid, or -1.
 */
pid_t exec_spawn(xrun *r, const char *cmd, int proto_fd, int out_fd,
                 uint64_t seed, uint64_t cycle)
{
	pid_t pid = fork();

	if (pid > 0) {
		/* both sides set the group, so that a kill right after the
		 * fork already reaches it (else kill(-pid) finds no group and
		 * the child would run on unkilled) */
		setpgid(pid, pid);
		return pid;
	}
	if (pid < 0)
		return pid;
	setpgid(0, 0);
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull >= 0)
		dup2(devnull, 0);
	dup2(out_fd >= 0 ? out_fd : r->logfd, 1);
	dup2(r->logfd, 2);
	if (proto_fd >= 0)
		fcntl(proto_fd, F_SETFD, 0);
	child_env(r, proto_fd, seed, cycle);
	if (r->as_user && (initgroups(r->o->user, (gid_t)r->gid) != 0 ||
	                   setgid((gid_t)r->gid) != 0 ||
	                   setuid((uid_t)r->uid) != 0)) {
		dprintf(2, "torture: --user %s: %s\n", r->o->user,
		        strerror(errno));
		_exit(126);
	}
	if (r->guard)
		sup_guard_child(r->guard); /* the parent learns how it went */
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	_exit(127);
}

/* The children of this process (a subreaper: a descendant that left the
 * workload's group -- a daemon's setsid(), PostgreSQL's backends -- is
 * ours once its parent dies), into OUT, at most N: their count.  From
 * each thread's /proc children list, or, where the kernel has none, from
 * every process's parent in /proc. */
static size_t own_children(pid_t *out, size_t n)
{
	char path[300], buf[4096];
	size_t k = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int lists = 0;

	while (d && (e = readdir(d)) != NULL && k < n) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/children",
		         e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		lists = 1;
		ssize_t got = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[got > 0 ? got : 0] = '\0';
		for (char *t = strtok(buf, " \n"); t && k < n;
		     t = strtok(NULL, " \n"))
			out[k++] = (pid_t)atoi(t);
	}
	if (d)
		closedir(d);
	if (lists || !(d = opendir("/proc")))
		return k;
	while ((e = readdir(d)) != NULL && k < n) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t got = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[got > 0 ? got : 0] = '\0';
		char *rp = strrchr(buf, ')'); /* the name may hold anything */
		int ppid;
		if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 &&
		    ppid == getpid())
			out[k++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return k;
}

/* SIGKILLs the group of PID and reaps every member (we are a subreaper, so
 * grandchildren come back to us), then every descendant that left the
 * group: a power cut or a kill stops the whole program, and one of its
 * processes still running would meet the next life or the checker (a
 * PostgreSQL backend holding the old server's shared memory: the next
 * postmaster refuses to start).  *STATUS gets the leader's status unless
 * it was reaped already.  0, or -1 when any outlived REAP_TIMEOUT_NS. */
int exec_kill_group(pid_t pid, int *status, int reaped)
{
	uint64_t deadline = now_ns() + REAP_TIMEOUT_NS;
	struct timespec nap = { 0, 1000000 };
	pid_t kids[256];
	int st;

	kill(-pid, SIGKILL);
	for (;;) {
		pid_t w = waitpid(-pid, &st, WNOHANG);
		if (w == pid && !reaped) {
			*status = st;
			reaped = 1;
		}
		if (w < 0 && errno == ECHILD)
			break;
		if (w > 0)
			continue;
		if (now_ns() > deadline)
			return -1;
		kill(-pid, SIGKILL);
		nanosleep(&nap, NULL);
	}
	/* the group is gone: whatever is still our child left it (the
	 * checker and the next life are started only after this) */
	for (;;) {
		while (waitpid(-1, &st, WNOHANG) > 0)
			;
		size_t k = own_children(kids, sizeof kids / sizeof kids[0]);
		if (k == 0)
			return 0;
		if (now_ns() > deadline)
			return -1;
		for (size_t i = 0; i < k; i++) {
			kill(-kids[i], SIGKILL); /* it may lead a group */
			kill(kids[i], SIGKILL);
		}
		nanosleep(&nap, NULL);
	}
}

/* The last lines of the programs' output, for a set-up error. */
void exec_log_tail(xrun *r)
{
	char buf[1200];
	off_t end = lseek(r->logfd, 0, SEEK_END);
	off_t from = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = pread(r->logfd, buf, sizeof(buf) - 1, from);

	if (n <= 0)
		return;
	buf[n] = '\0';
	fprintf(stderr, "torture: the program's last output:\n%s%s", buf,
	        buf[n - 1] == '\n' ? "" : "\n");
}

void exec_log_reset(xrun *r)
{
	if (ftruncate(r->logfd, 0) == 0)
		lseek(r->logfd, 0, SEEK_SET);
}

/* ---- reading lines ------------------------------------------------------- */

typedef struct liner {
	char buf[LINE_MAX_BYTES + 1];
	size_t have;
	int eof;
} liner;

/* Reads what FD has and hands every whole line to FN.  0, or -1 with WHY
 * (a line FN refused, or one too long). */
static int lines_read(xrun *r, int fd, liner *l, line_fn fn, char *why,
                      size_t whylen)
{
	for (;;) {
		ssize_t n = read(fd, l->buf + l->have, LINE_MAX_BYTES - l->have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 0; /* EAGAIN */
		if (n == 0) {
			l->eof = 1;
			if (l->have) {
				snprintf(why, whylen, "a protocol line without "
				         "its newline at the end of the output");
				return -1;
			}
			return 0;
		}
		l->have += (size_t)n;
		char *start = l->buf, *nl;
		while ((nl = memchr(start, '\n', l->have - (size_t)(start - l->buf)))) {
			*nl = '\0';
			if (fn(r, start, (size_t)(nl - start), why, whylen) < 0)
				return -1;
			start = nl + 1;
		}
		l->have -= (size_t)(start - l->buf);
		memmove(l->buf, start, l->have);
		if (l->have == LINE_MAX_BYTES) {
			snprintf(why, whylen, "a line longer than %d bytes",
			         LINE_MAX_BYTES);
			return -1;
		}
	}
}

static int proto_line(xrun *r, const char *line, size_t n, char *why,
                      size_t len)
{
	if (memchr(line, '\0', n)) {
		snprintf(why, len, "a protocol line with a NUL byte ('%.80s...')",
		         line);
		return -1;
	}
	return exec_model_line(r->model, line, why, len);
}

/* A checker line may carry any bytes (exec_proto.h): its value is what the
 * checker found. */
int exec_checker_line(xrun *r, const char *line, size_t n, char *why,
                      size_t len)
{
	return exec_model_observe(r->model, line, n, why, len);
}

int exec_adopt_line(xrun *r, const char *line, size_t n, char *why,
                    size_t len)
{
	return exec_model_adopt_line(r->model, line, n, why, len);
}

/* ---- the workload ----------------------------------------------------------- */

static int count_line(xrun *r, const char *line, size_t n, char *why,
                      size_t len)
{
	return proto_line(r, line, n, why, len);
}

/*
 * Runs the workload until KILL_AT (monotonic ns; 0: until it exits, at most
 * ENUM_RUN_TIMEOUT_NS), then kills its group and drains the pipe.  0, or 2
 * after a set-up message.
 */
int exec_run_workload(xrun *r, uint64_t cycle, uint64_t seed,
                      uint64_t kill_at, wresult *w)
{
	int p[2], rc = 0;
	char why[600];
	liner l;
	pid_t pid;
	uint64_t entered = now_ns();
	uint64_t until = kill_at ? kill_at : entered + ENUM_RUN_TIMEOUT_NS;

	memset(w, 0, sizeof(*w));
	r->cycle_now = cycle;
	r->stage = "workload";
	l.have = 0;
	l.eof = 0;
	if (pipe2(p, O_CLOEXEC) != 0)
		return exec_setup_error("pipe: %s", strerror(errno));
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	exec_model_new_process(r->model);
	if (exec_tree_note(r) != 0) {
		close(p[0]);
		close(p[1]);
		return 2;
	}
	if (exec_guard_prepare(r, r->sup_workload, p[1]) != 0) {
		close(p[0]);
		close(p[1]);
		return 2;
	}
	pid = exec_spawn(r, r->workload, p[1], -1, seed, cycle);
	close(p[1]);
	if (pid < 0) {
		exec_guard_stop(r);
		close(p[0]);
		return exec_setup_error("fork: %s", strerror(errno));
	}
	if (exec_guard_start(r) != 0) {
		exec_kill_group(pid, &w->status, 0);
		exec_guard_stop(r);
		close(p[0]);
		return 2;
	}
	/* the life is the program's: the note of the directory and the
	 * guard's set-up before it are not taken out of it (on a loaded
	 * machine they can take a good part of a 50 ms life) */
	until += now_ns() - entered;
	why[0] = '\0';
	for (;;) {
		uint64_t t = now_ns();
		struct pollfd pf = { p[0], POLLIN, 0 };
		int ms = t >= until ? 0 : (int)((until - t) / 1000000u) + 1;
		int st;

		if (!w->exited && waitpid(pid, &st, WNOHANG) == pid) {
			w->exited = 1;
			w->status = st;
		}
		if (w->exited && l.eof)
			break;
		if (t >= until)
			break;
		if (l.eof)
			pf.fd = -1;
		if (poll(&pf, 1, ms > 2 ? 2 : ms) > 0 &&
		    lines_read(r, p[0], &l, count_line, why, sizeof why) < 0) {
			rc = 2;
			break;
		}
		exec_trace_drain(r, 0);
	}
	if (!kill_at && !w->exited && rc == 0) {
		exec_kill_group(pid, &w->status, 0);
		exec_guard_stop(r);
		close(p[0]);
		return exec_setup_error("the workload did not finish in %llu s "
		                   "(--enumerate runs it to its end)",
		                   (unsigned long long)(ENUM_RUN_TIMEOUT_NS /
		                                        1000000000ull));
	}
	if (exec_kill_group(pid, &w->status, w->exited) < 0) {
		exec_guard_stop(r);
		close(p[0]);
		return exec_setup_error("a process of the workload survived SIGKILL "
		                   "for 5 s");
	}
	exec_guard_stop(r);
	exec_trace_drain(r, w->exited ? 1 : 2);
	if (!w->exited)
		r->kills++;
	else
		r->exits++;
	/* drain: every writer of the pipe is dead, so end of file comes */
	while (rc == 0 && !l.eof) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		if (poll(&pf, 1, 5000) <= 0) {
			rc = exec_setup_error("the protocol pipe stayed open after the "
			                 "workload's process group was killed (a "
			                 "process left the group?)");
			break;
		}
		if (lines_read(r, p[0], &l, count_line, why, sizeof why) < 0)
			rc = 2;
	}
	close(p[0]);
	if (rc == 2 && why[0])
		exec_setup_error("workload: %s", why);
	return rc;
}

/* ---- the checker ---------------------------------------------------------- */

/* Runs the checker under the shim; its stdout lines go to FN.  *FAILED gets
 * a description when it did not exit 0.  0, or 2 after a set-up message. */
int exec_run_checker(xrun *r, uint64_t cycle, line_fn fn, char *failed,
                     size_t failed_len)
{
	int p[2], st = 0, reaped = 0, rc = 0;
	char why[600] = "";
	liner l = { .have = 0, .eof = 0 };
	uint64_t deadline = now_ns() + CHECKER_TIMEOUT_NS;
	pid_t pid;

	failed[0] = '\0';
	r->cycle_now = cycle;
	r->stage = "checker";
	if (pipe2(p, O_CLOEXEC) != 0)
		return exec_setup_error("pipe: %s", strerror(errno));
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	if (exec_guard_prepare(r, r->sup_checker, -1) != 0) {
		close(p[0]);
		close(p[1]);
		return 2;
	}
	pid = exec_spawn(r, r->checker, -1, p[1], r->o->seed, cycle);
	close(p[1]);
	if (pid < 0) {
		exec_guard_stop(r);
		close(p[0]);
		return exec_setup_error("fork: %s", strerror(errno));
	}
	if (exec_guard_start(r) != 0) {
		exec_kill_group(pid, &st, 0);
		exec_guard_stop(r);
		close(p[0]);
		return 2;
	}
	while (!(reaped && l.eof)) {
		struct pollfd pf = { l.eof ? -1 : p[0], POLLIN, 0 };
		if (!reaped && waitpid(pid, &st, WNOHANG) == pid)
			reaped = 1;
		if (now_ns() > deadline) {
			snprintf(failed, failed_len, "the checker did not finish "
			         "in 60 s (killed)");
			break;
		}
		if (poll(&pf, 1, 1) > 0 &&
		    lines_read(r, p[0], &l, fn, why, sizeof why) < 0) {
			rc = exec_setup_error("checker: %s", why);
			break;
		}
	}
	exec_kill_group(pid, &st, reaped);
	exec_guard_stop(r);
	close(p[0]);
	r->checker_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (rc == 0 && !failed[0] && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		if (WIFEXITED(st))
			snprintf(failed, failed_len, "the checker exited with "
			         "status %d", WEXITSTATUS(st));
		else
			snprintf(failed, failed_len, "the checker was killed by "
			         "signal %d", WTERMSIG(st));
	}
	return rc;
}
