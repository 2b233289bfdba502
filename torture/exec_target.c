/*
 * exec_target.c -- `torture --target exec` (contract in exec_target.h,
 * manual in docs/targets.md).
 */
#include "exec_target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "adapters.h"
#include "exec_explain.h"
#include "exec_proto.h"
#include "faultsim.h"
#include "shim.h"
#include "supervisor.h"
#include "exec_internal.h"


static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}


static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* The first set-up error's words and what to try, kept for the summary
 * of a run that stops on one after cycles that passed (set-up errors end
 * the run, so the first is the one that counts). */
char exec_setup_said[700];
const char *exec_setup_try;

#define TRY_REFUSED "avoid the call (a mode of the program without it), " \
	"name files it never needs after a crash in --volatile, or for a " \
	"full cache or file table a shorter --kill-every or kills alone " \
	"(docs/faults.md, \"The shim: what it sees\" and \"What the kit " \
	"sees\": the refusals of each front end)"
#define TRY_BYPASS "find what writes around libc (a raw system call, " \
	"io_uring, a libc-internal call), or let the supervisor record it " \
	"(--front-end supervisor): docs/faults.md, \"Writes that bypass the " \
	"wrappers\""
#define TRY_OVERFLOW "more room (--cache-mib), or fewer writes between two " \
	"power cuts: a shorter " \
	"--kill-every, or kills alone (no --power-loss, --fail)"

static int setup_verror(const char *hint, const char *fmt, va_list ap)
{
	va_list copy;

	va_copy(copy, ap);
	fprintf(stderr, "torture: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	if (!exec_setup_said[0]) {
		vsnprintf(exec_setup_said, sizeof exec_setup_said, fmt, copy);
		exec_setup_try = hint;
	}
	va_end(copy);
	return 2;
}

int exec_setup_error(const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = setup_verror(NULL, fmt, ap);
	va_end(ap);
	return rc;
}

/* A set-up error that comes with what to try (HINT, one of TRY_*). */
int exec_setup_refusal(const char *hint, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = setup_verror(hint, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- commands ------------------------------------------------------------ */

/* 'text' for /bin/sh, with every ' spelt '\'' */
void exec_shell_quote(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	if (cap < 3)
		return;
	out[n++] = '\'';
	for (; *s && n + 6 < cap; s++) {
		if (*s == '\'') {
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			out[n++] = *s;
		}
	}
	out[n++] = '\'';
	out[n] = '\0';
}

/* CMD with each {dir} replaced by the quoted directory. */
static char *subst_dir(const char *cmd, const char *dir)
{
	char q[2 * PATH_MAX];
	size_t n = 0, ql, cap;
	char *out;

	exec_shell_quote(dir, q, sizeof q);
	ql = strlen(q);
	cap = strlen(cmd) + 1;
	for (const char *p = strstr(cmd, "{dir}"); p; p = strstr(p + 5, "{dir}"))
		cap += ql;
	out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *p = cmd; *p;) {
		if (strncmp(p, "{dir}", 5) == 0) {
			memcpy(out + n, q, ql);
			n += ql;
			p += 5;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return out;
}

/* No power cut and no injected fault in this run: a kill leaves every write
 * in the page cache, so nothing the cache records can be undone and the
 * shim may settle it when it fills (KEEL_SHIM_KILLS_ONLY). */
int exec_kills_only(const xrun *r)
{
	return !(r->o->power_loss || r->o->enumerate || r->faults);
}

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
static pid_t spawn(xrun *r, const char *cmd, int proto_fd, int out_fd,
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

/* SIGKILLs the group of PID and reaps every member (we are a subreaper, so
 * grandchildren come back to us).  *STATUS gets the leader's status unless
 * it was reaped already.  0, or -1 when members outlived REAP_TIMEOUT_NS. */
static int kill_group(pid_t pid, int *status, int reaped)
{
	uint64_t deadline = now_ns() + REAP_TIMEOUT_NS;
	int st;

	kill(-pid, SIGKILL);
	for (;;) {
		pid_t w = waitpid(-pid, &st, WNOHANG);
		if (w == pid && !reaped) {
			*status = st;
			reaped = 1;
		}
		if (w < 0 && errno == ECHILD)
			return 0;
		if (w > 0)
			continue;
		if (now_ns() > deadline)
			return -1;
		kill(-pid, SIGKILL);
		struct timespec nap = { 0, 1000000 };
		nanosleep(&nap, NULL);
	}
}

/* The last lines of the programs' output, for a set-up error. */
static void log_tail(xrun *r)
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

static void log_reset(xrun *r)
{
	if (ftruncate(r->logfd, 0) == 0)
		lseek(r->logfd, 0, SEEK_SET);
}

/* ---- the trace of a cycle ------------------------------------------------ */

#define HIST_CALLS 4096 /* calls the report can name                    */
#define HIST_PROTO 2048 /* protocol lines kept to place the acks among them */

/* Copies the ring's new entries into the history.  FINAL: the programs
 * have ended, so a call still in flight is taken as it stands. */
static void hist_drain(xrun *r, int final)
{
	uint64_t n = __atomic_load_n(&r->ctl->ncalls, __ATOMIC_ACQUIRE);

	if (n < r->hist_drained) /* the ring was reset */
		r->hist_drained = 0;
	if (n - r->hist_drained > SHIM_RING)
		r->hist_drained = n - SHIM_RING;
	for (; r->hist_drained < n; r->hist_drained++) {
		const shim_call *c = &r->ctl->ring[r->hist_drained % SHIM_RING];
		if (__atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) !=
		            r->hist_drained + 1 ||
		    __atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE)) {
			if (!final)
				break;
			if (c->seq != r->hist_drained + 1)
				continue;
		}
		if (c->op == SHIM_OP_PROTOCOL)
			r->hist_proto[r->hist_proto_n++ % HIST_PROTO] = *c;
		else
			r->hist_calls[r->hist_calls_n++ % HIST_CALLS] = *c;
	}
}

/* Writes the ring's new entries to the cycle's trace.  FINAL 0: while the
 * program runs, stopping at the first call still in flight (it may yet
 * return); 1: the programs have ended; 2: they were killed, so a call
 * still in flight is marked as the one the kill interrupted. */
static void trace_drain(xrun *r, int final)
{
	uint64_t n;

	hist_drain(r, final != 0);
	if (!r->trace)
		return;
	n = __atomic_load_n(&r->ctl->ncalls, __ATOMIC_ACQUIRE);
	if (n < r->drained) /* the ring was reset behind our back */
		r->drained = 0;
	if (n - r->drained > SHIM_RING) {
		fprintf(r->trace, "... %" PRIu64 " calls not traced (the ring "
		        "of %d wrapped between two looks)\n",
		        n - SHIM_RING - r->drained, SHIM_RING);
		r->drained = n - SHIM_RING;
	}
	for (; r->drained < n; r->drained++) {
		const shim_call *c = &r->ctl->ring[r->drained % SHIM_RING];
		shim_call copy;
		if (__atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) != r->drained + 1 ||
		    __atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE)) {
			if (!final)
				break;
			if (c->seq != r->drained + 1)
				continue;
		}
		copy = *c;
		explain_trace_line(r->trace, &copy, r->ctl, final == 2);
	}
}

/* A new cycle's trace (FRESH), or a new part of it: SAY. */
static void trace_mark(xrun *r, const char *say, uint64_t cycle, int fresh)
{
	if (!r->trace)
		return;
	if (fresh) {
		r->drained = __atomic_load_n(&r->ctl->ncalls, __ATOMIC_ACQUIRE);
		fflush(r->trace);
		if (ftruncate(fileno(r->trace), 0) == 0)
			rewind(r->trace);
	}
	fprintf(r->trace, "---- cycle %" PRIu64 ": %s\n", cycle, say);
}

/* ---- reading lines ------------------------------------------------------- */

typedef struct liner {
	char buf[LINE_MAX_BYTES + 1];
	size_t have;
	int eof;
} liner;

typedef int (*line_fn)(xrun *r, const char *line, size_t n, char *why,
                       size_t len);

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
static int checker_line(xrun *r, const char *line, size_t n, char *why,
                        size_t len)
{
	return exec_model_observe(r->model, line, n, why, len);
}

static int adopt_line(xrun *r, const char *line, size_t n, char *why,
                      size_t len)
{
	return exec_model_adopt_line(r->model, line, n, why, len);
}

/* ---- the workload ----------------------------------------------------------- */

typedef struct wresult {
	int status;       /* the leader's wait status                        */
	int exited;       /* it ended before its kill                        */
	int lines;        /* protocol lines read                              */
} wresult;

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
static int run_workload(xrun *r, uint64_t cycle, uint64_t seed,
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
	pid = spawn(r, r->workload, p[1], -1, seed, cycle);
	close(p[1]);
	if (pid < 0) {
		exec_guard_stop(r);
		close(p[0]);
		return exec_setup_error("fork: %s", strerror(errno));
	}
	if (exec_guard_start(r) != 0) {
		kill_group(pid, &w->status, 0);
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
		trace_drain(r, 0);
	}
	if (!kill_at && !w->exited && rc == 0) {
		kill_group(pid, &w->status, 0);
		exec_guard_stop(r);
		close(p[0]);
		return exec_setup_error("the workload did not finish in %llu s "
		                   "(--enumerate runs it to its end)",
		                   (unsigned long long)(ENUM_RUN_TIMEOUT_NS /
		                                        1000000000ull));
	}
	if (kill_group(pid, &w->status, w->exited) < 0) {
		exec_guard_stop(r);
		close(p[0]);
		return exec_setup_error("a process of the workload survived SIGKILL "
		                   "for 5 s");
	}
	exec_guard_stop(r);
	trace_drain(r, w->exited ? 1 : 2);
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
static int run_checker(xrun *r, uint64_t cycle, line_fn fn, char *failed,
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
	pid = spawn(r, r->checker, -1, p[1], r->o->seed, cycle);
	close(p[1]);
	if (pid < 0) {
		exec_guard_stop(r);
		close(p[0]);
		return exec_setup_error("fork: %s", strerror(errno));
	}
	if (exec_guard_start(r) != 0) {
		kill_group(pid, &st, 0);
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
	kill_group(pid, &st, reaped);
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

/* ---- between the workload and the checker ------------------------------------ */

static int refused(xrun *r)
{
	if (!__atomic_load_n(&r->ctl->refused, __ATOMIC_ACQUIRE))
		return 0;
	if (strncmp(r->ctl->refusal, GUARD_SAYS, strlen(GUARD_SAYS)) == 0)
		exec_setup_refusal(TRY_REFUSED, "the seccomp guard refused: %s",
		              r->ctl->refusal + strlen(GUARD_SAYS));
	else if (strncmp(r->ctl->refusal, SUPERVISOR_SAYS,
	                 strlen(SUPERVISOR_SAYS)) == 0)
		exec_setup_refusal(TRY_REFUSED, "the supervisor refused: %s",
		              r->ctl->refusal + strlen(SUPERVISOR_SAYS));
	else
		exec_setup_refusal(TRY_REFUSED, "the shim refused: %s",
		              r->ctl->refusal);
	return 1;
}

/* The remembered calls and protocol lines in order, oldest first: the
 * last HIST_CALLS calls, and the protocol lines since the oldest of them
 * (the last HIST_PROTO at most). */
static void ring_snapshot(xrun *r)
{
	uint64_t ci, pi, oldest;

	hist_drain(r, 1);
	ci = r->hist_calls_n > HIST_CALLS ? r->hist_calls_n - HIST_CALLS : 0;
	pi = r->hist_proto_n > HIST_PROTO ? r->hist_proto_n - HIST_PROTO : 0;
	oldest = ci < r->hist_calls_n ? r->hist_calls[ci % HIST_CALLS].seq : 0;
	r->ring_n = 0;
	while (ci < r->hist_calls_n || pi < r->hist_proto_n) {
		const shim_call *c = ci < r->hist_calls_n ?
		                     &r->hist_calls[ci % HIST_CALLS] : NULL;
		const shim_call *p = pi < r->hist_proto_n ?
		                     &r->hist_proto[pi % HIST_PROTO] : NULL;
		if (c && (!p || c->seq < p->seq)) {
			r->ring[r->ring_n++] = *c;
			ci++;
		} else {
			if (p->seq > oldest)
				r->ring[r->ring_n++] = *p;
			pi++;
		}
	}
}

/* ---- replaying the power cut (exec_explain.h) ------------------------------- */

/* Before a power cut that may be the first to fail: a copy of the
 * directory and of the cache, so the cut can be replayed.  Only until the
 * first violation (the run stops there); off with --no-explain. */
static void explain_save(xrun *r)
{
	char why[300];
	int rc;

	if (!r->dropped || r->first[0])
		return;
	explain_dir_free(r->saved);
	faultsim_snapshot_free(r->snap);
	r->saved = NULL;
	r->snap = NULL;
	rc = explain_dir_save(r->dir, EXPLAIN_DIR_CAP, &r->saved, why,
	                      sizeof why);
	if (rc == 0 && faultsim_cache_snapshot(r->cache, &r->snap) < 0)
		snprintf(why, sizeof why, "no memory for the cache's snapshot");
	if (rc == 0 && r->snap) {
		r->explain_off[0] = '\0';
		return;
	}
	snprintf(r->explain_off, sizeof r->explain_off, "%s", why);
	explain_dir_free(r->saved);
	r->saved = NULL;
}

/* A checker line during a replay: only the key asked for matters. */
static int replay_checker_line(xrun *r, const char *line, size_t n,
                               char *why, size_t len)
{
	char *v = NULL;
	int rc;

	(void)why;
	(void)len;
	if (!r->why_key)
		return 0;
	rc = exec_model_line_value(r->model, line, n, r->why_key, &v);
	if (rc == 1 && !r->why_value)
		r->why_value = v;
	else
		free(v);
	return 0;
}

typedef struct replay_ctx {
	xrun *r;
	uint64_t cycle;
} replay_ctx;

/* One replay of the last power cut with PERSIST kept whole: 1 when the
 * violation is there again (the key's value judged without consuming the
 * cycle; without a key, the checker failing), 0 when not, -1. */
static int replay(void *arg, const uint64_t *persist, size_t n)
{
	replay_ctx *x = arg;
	xrun *r = x->r;
	faultsim_crash_options co = {
		.device = (faultsim_device)r->o->device,
		.sector = r->o->sector,
		.seed = r->cut_seed,
	};
	faultsim_explain ex = { persist, n, NULL, 0, 0 };
	faultsim_crash_report rep;
	const uint64_t *old_ino, *new_ino;
	char failed[200];
	size_t nino;
	int rc;

	if (explain_dir_restore(r->saved, r->dir) != 0 ||
	    faultsim_cache_restore(r->cache, r->snap) != 0)
		return -1;
	nino = explain_dir_inodes(r->saved, &old_ino, &new_ino);
	faultsim_cache_remap(r->cache, old_ino, new_ino, nino);
	shim_shared_reset_files(r->ctl);
	if (faultsim_cache_crash_explain(r->cache, &co, &ex, &rep) < 0)
		return -1;
	free(r->why_value);
	r->why_value = NULL;
	rc = run_checker(r, x->cycle, replay_checker_line, failed,
	                 sizeof failed);
	faultsim_cache_writer_died(r->cache);
	if (rc != 0 || r->ctl->refused)
		return -1;
	if (!r->why_key)
		return failed[0] ? 1 : 0;
	if (failed[0])
		return 0; /* another failure, not the loss being explained */
	return exec_model_judge(r->model, r->why_key, r->why_value, NULL) == 1;
}

/* Copies the cycle's trace next to the directory; its path in PATH. */
static void trace_keep(xrun *r, char *path, size_t cap)
{
	char buf[65536];
	size_t n;
	FILE *out;

	path[0] = '\0';
	if (!r->trace)
		return;
	fflush(r->trace);
	snprintf(path, cap, "%s.trace", r->dir);
	out = fopen(path, "w");
	if (!out) {
		path[0] = '\0';
		return;
	}
	rewind(r->trace);
	while ((n = fread(buf, 1, sizeof buf, r->trace)) > 0)
		fwrite(buf, 1, n, out);
	fseek(r->trace, 0, SEEK_END);
	if (fclose(out) != 0)
		path[0] = '\0';
}

/* What the minimisation found (ST, CAUSE[0..NCAUSE)), for a human. */
static void why_words(xrun *r, enum explain_status st, const size_t *cause,
                      size_t ncause, const char *key)
{
	const char *op = NULL;

	if (st == EXPLAIN_NO_REPRO || st == EXPLAIN_ERROR) {
		fprintf(stderr, "    could not reproduce%s: the full trace is "
		        "kept\n", st == EXPLAIN_ERROR ? " (a replay failed)" :
		        " (replayed, the same power cut passed: the violation "
		        "depends on more than the cut)");
		return;
	}
	if (st == EXPLAIN_NOT_DROPS) {
		fprintf(stderr, "    with everything the power cut dropped kept, "
		        "it still fails: not a missing sync (a write lost to a "
		        "failed sync, or the program's own bug)\n");
		return;
	}
	fprintf(stderr, "    %s: %zu operation%s the power cut dropped:\n",
	        st == EXPLAIN_BUDGET ? "out of replays; a cause (maybe not the "
	        "smallest)" : "the smallest cause", ncause,
	        ncause == 1 ? "" : "s");
	if (key)
		exec_model_judge(r->model, key, NULL, &op);
	for (size_t i = 0; i < ncause; i++)
		explain_describe(stderr, &r->dropped[cause[i]], r->ring,
		                 r->ring_n, r->ctl, r->dir, op);
	if (key) {
		fprintf(stderr, "    with %s kept, the acknowledged write of key "
		        "\"%s\"%s%s%s survives\n", ncause == 1 ? "it" : "them",
		        key, op ? " (op " : "", op ? op : "", op ? ")" : "");
	} else {
		fprintf(stderr, "    with %s kept, the checker recovers\n",
		        ncause == 1 ? "it" : "them");
	}
}

/* The first violation: replay the power cut with subsets of what it
 * dropped kept, and name the smallest set whose loss alone fails. */
static void explain_violation(xrun *r, uint64_t cycle, const char *key)
{
	size_t *cause = NULL, ncause = 0;
	size_t n = r->ndropped < EXPLAIN_MAX_DROPPED ? r->ndropped
	                                             : EXPLAIN_MAX_DROPPED;
	replay_ctx x = { r, cycle };
	uint64_t t0 = now_ns();
	enum explain_status st;
	unsigned tests = 0;
	char path[PATH_MAX + 8];

	trace_keep(r, path, sizeof path);
	if (path[0])
		fprintf(stderr, "  the full trace of the cycle: %s\n", path);
	if (!(r->o->power_loss || r->o->enumerate) || !r->dropped)
		return;
	if (!r->saved || !r->snap) {
		fprintf(stderr, "  why: not explained (%s)\n", r->explain_off[0]
		        ? r->explain_off : "nothing saved before the cut");
		return;
	}
	if (r->ndropped > EXPLAIN_MAX_DROPPED) {
		fprintf(stderr, "  why: not explained (the power cut dropped %"
		        PRIu64 " records, more than %d)\n", r->ndropped,
		        EXPLAIN_MAX_DROPPED);
		return;
	}
	if (!(cause = malloc((n ? n : 1) * sizeof *cause))) {
		fprintf(stderr, "  why: not explained (out of memory)\n");
		return;
	}
	r->why_key = key;
	st = explain_minimise(r->dropped, n, replay, &x, EXPLAIN_MAX_TESTS,
	                      cause, &ncause, &tests);
	/* leave the directory as the failing cut left it (and the checker) */
	replay(&x, NULL, 0);
	r->why_key = NULL;
	fprintf(stderr, "  why (%u replays of the power cut over the %zu "
	        "records it dropped, %.2f s):\n", tests, n,
	        (double)(now_ns() - t0) / 1e9);
	why_words(r, st, cause, ncause, key);
	free(cause);
}

/* The machine after the workload died: a power cut, or not.  0 or 2. */
static int after_workload(xrun *r, uint64_t cycle)
{
	char why[PATH_MAX + 300];

	if (refused(r))
		return 2;
	if (shim_check_files(r->ctl, r->dir, why, sizeof why) < 0)
		return exec_setup_refusal(TRY_BYPASS, "bypass: %s%s", why,
		                     r->o->syscall_backstop ? "" :
		                     " (--syscall-backstop records what no "
		                     "wrapper sees)");
	if (exec_tree_judge(r, cycle) != 0)
		return 2;
	/* in a kills-only run the shim settles a full cache and records the
	 * call after all; a kill between the two leaves the flag set with
	 * nothing dropped (the real call comes after its record) */
	if (faultsim_cache_overflowed(r->cache) && !exec_kills_only(r))
		return exec_setup_refusal(TRY_OVERFLOW, "the fault simulator's cache "
		                     "filled up");
	ring_snapshot(r);
	for (unsigned i = 0; r->faults && i < r->o->nfail; i++)
		r->faults_fired += faultsim_faults_fired(r->faults, (int)i);
	if (r->o->power_loss || r->o->enumerate) {
		faultsim_crash_options co = {
			.device = (faultsim_device)r->o->device,
			.sector = r->o->sector,
			.seed = mix(r->o->seed ^ mix(cycle ^ 0x706f776572ull)),
		};
		faultsim_crash_report rep;
		faultsim_explain x = { NULL, 0, r->dropped,
		                       r->dropped ? EXPLAIN_MAX_DROPPED : 0, 0 };
		memset(&rep, 0, sizeof rep);
		explain_save(r);
		r->cut_seed = co.seed;
		trace_mark(r, "the power cut; the checker's calls follow", cycle,
		           0);
		if (faultsim_cache_crash_explain(r->cache, &co, &x, &rep) < 0 ||
		    rep.overflowed)
			return exec_setup_refusal(
			        rep.overflowed ? TRY_OVERFLOW : NULL,
			        "the fault simulator could not cut the power: "
			        "%s", rep.overflowed ? "its cache filled up" :
			        rep.first_error);
		r->power_cuts++;
		r->cut_lost += rep.lost + rep.lost_failed;
		r->cut_torn += rep.torn + rep.garbled;
		r->cut_undone += rep.ns_undone;
		r->ndropped = x.ndropped;
	} else {
		faultsim_cache_evict_lost(r->cache);
		faultsim_cache_forget(r->cache);
	}
	shim_shared_reset_files(r->ctl);
	r->drained = 0; /* the ring starts again with the checker's calls */
	return 0;
}

/* After the checker: its writes stay undoable by the next power cut. */
static void after_checker(xrun *r)
{
	trace_drain(r, 1);
	if (r->o->power_loss || r->o->enumerate) {
		faultsim_cache_writer_died(r->cache);
	} else {
		faultsim_cache_forget(r->cache);
		shim_shared_reset_files(r->ctl);
	}
}

/* ---- explaining a violation --------------------------------------------------- */

static int later_sync(const xrun *r, uint64_t i)
{
	const shim_call *c = &r->ring[i];
	for (uint64_t j = i + 1; j < r->ring_n; j++) {
		const shim_call *d = &r->ring[j];
		if (d->result < 0)
			continue;
		if (d->op == SHIM_OP_SYNC_ALL)
			return 1;
		if ((d->op == SHIM_OP_FSYNC || d->op == SHIM_OP_FDATASYNC ||
		     d->op == SHIM_OP_MSYNC) &&
		    d->file == c->file && c->file >= 0)
			return 1;
	}
	return 0;
}

/* A namespace call: was its directory synced after it? */
static int later_dir_sync(const xrun *r, uint64_t i)
{
	const shim_call *c = &r->ring[i];
	char dir[SHIM_LABEL];
	const char *arrow = strstr(c->path, " -> ");
	const char *name = arrow ? arrow + 4 : c->path, *slash;

	slash = strrchr(name, '/');
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - name) : 0, name);
	for (uint64_t j = i + 1; j < r->ring_n; j++) {
		const shim_call *d = &r->ring[j];
		if (d->result < 0)
			continue;
		if (d->op == SHIM_OP_SYNC_ALL)
			return 1;
		if (d->op != SHIM_OP_DIR_FSYNC)
			continue;
		/* the label of the watched directory itself is its full path */
		if ((!dir[0] && d->path[0] == '/') || strcmp(d->path, dir) == 0)
			return 1;
	}
	return 0;
}

static void show_call(const xrun *r, uint64_t i)
{
	const shim_call *c = &r->ring[i];
	char state[64] = "";

	switch (c->inflight ? 0 : c->op) {
	case 0:
		snprintf(state, sizeof state, "IN FLIGHT at the kill");
		break;
	case SHIM_OP_WRITE: case SHIM_OP_TRUNCATE: case SHIM_OP_ALLOCATE:
	case SHIM_OP_MAP_WRITE:
		snprintf(state, sizeof state, "%s", c->durable ? "synced (O_SYNC)"
		         : later_sync(r, i) ? "synced later" : "NOT synced");
		break;
	case SHIM_OP_CREATE: case SHIM_OP_RENAME: case SHIM_OP_UNLINK:
	case SHIM_OP_LINK:
		snprintf(state, sizeof state, "%s", later_dir_sync(r, i) ?
		         "directory synced later" : "directory NOT synced");
		break;
	default:
		break;
	}
	if (c->op == SHIM_OP_WRITE || c->op == SHIM_OP_ALLOCATE ||
	    c->op == SHIM_OP_MAP_WRITE)
		fprintf(stderr, "    %-16s %-28s off %" PRIu64 " len %" PRIu64
		        " -> %" PRId64 "  %s\n", shim_op_name(c->op), c->path,
		        c->off, c->len, c->result, state);
	else if (c->op == SHIM_OP_TRUNCATE)
		fprintf(stderr, "    %-16s %-28s to %" PRIu64 " -> %" PRId64
		        "  %s\n", shim_op_name(c->op), c->path, c->off,
		        c->result, state);
	else
		fprintf(stderr, "    %-16s %-28s -> %" PRId64 "  %s\n",
		        shim_op_name(c->op), c->path, c->result, state);
}

/* The program's last tracked calls before the crash: on the files whose
 * name contains KEY when there are such, else on every file. */
static void explain_calls(const xrun *r, const char *key)
{
	uint64_t shown = 0, idx[CALLS_SHOWN];
	int by_name = 0;

	/* the workload's protocol lines (in the ring for the trace and the
	 * minimised cause) are not calls: the list shows calls on files */
	for (uint64_t i = 0; key[0] && i < r->ring_n; i++)
		if (r->ring[i].op != SHIM_OP_PROTOCOL &&
		    strstr(r->ring[i].path, key))
			by_name = 1;
	for (uint64_t i = r->ring_n; i-- > 0 && shown < CALLS_SHOWN;)
		if (r->ring[i].op != SHIM_OP_PROTOCOL &&
		    (!by_name || strstr(r->ring[i].path, key)))
			idx[shown++] = i;
	if (!shown)
		return;
	fprintf(stderr, "  the program's last tracked calls%s%s%s before the "
	        "crash (oldest first):\n", by_name ? " on files named for \"" :
	        "", by_name ? key : "", by_name ? "\"" : "");
	while (shown-- > 0)
		show_call(r, idx[shown]);
}

typedef struct vctx {
	xrun *r;
	uint64_t cycle;
	int printed;
} vctx;

static void on_violation(void *arg, int kind, const char *key,
                         const char *what)
{
	vctx *v = arg;
	xrun *r = v->r;
	char line[900];

	if (key[0])
		snprintf(line, sizeof line, "%s: key \"%s\": %s",
		         oracle_kind_name(kind), key, what);
	else
		snprintf(line, sizeof line, "%s: %s", oracle_kind_name(kind),
		         what);
	fprintf(stderr, "torture: cycle %" PRIu64 ": %s\n", v->cycle, line);
	if (!r->first[0]) {
		snprintf(r->first, sizeof r->first, "%s", line);
		r->first_cycle = v->cycle;
		snprintf(r->first_key, sizeof r->first_key, "%s", key);
		explain_calls(r, key);
		explain_violation(r, v->cycle, key[0] ? key : NULL);
	}
	v->printed++;
}

static void structure_violation(xrun *r, uint64_t cycle, const char *what)
{
	fprintf(stderr, "torture: cycle %" PRIu64 ": structure: %s\n", cycle,
	        what);
	r->structure++;
	if (!r->first[0]) {
		snprintf(r->first, sizeof r->first, "structure: %s", what);
		r->first_cycle = cycle;
		explain_calls(r, "");
		explain_violation(r, cycle, NULL);
	}
}

/* The checker exited CHECKER_UNAVAILABLE: the program refuses to start or
 * needs a person to repair it (a stale lock, a paranoid check, a torn log
 * it will not truncate) -- an availability verdict, kept apart from lost
 * data. */
static void availability_violation(xrun *r, uint64_t cycle)
{
	fprintf(stderr, "torture: cycle %" PRIu64 ": availability: the checker "
	        "exited %d after the crash: the program refuses to start or "
	        "needs manual repair\n", cycle, CHECKER_UNAVAILABLE);
	r->unavailable++;
	if (!r->first[0]) {
		snprintf(r->first, sizeof r->first, "availability: the checker "
		         "exited %d after the crash: the program refuses to "
		         "start or needs manual repair", CHECKER_UNAVAILABLE);
		r->first_cycle = cycle;
		explain_calls(r, "");
	}
}

/* ---- one cycle ------------------------------------------------------------------ */

/* Verifies the state the crash left.  0 (pass), 1 (violation), 2. */
static int verify(xrun *r, uint64_t cycle)
{
	char failed[200];
	uint64_t counts[ORACLE_KINDS], n;
	vctx v = { r, cycle, 0 };
	int rc;

	r->cycle_acked = exec_model_acked(r->model);
	exec_model_verify_begin(r->model);
	if ((rc = exec_tree_note(r)) != 0)
		return rc;
	rc = run_checker(r, cycle, checker_line, failed, sizeof failed);
	if (rc)
		return rc;
	if (refused(r))
		return 2;
	if (exec_tree_judge(r, cycle) != 0)
		return 2;
	after_checker(r);
	/* counted before the verdict: a cycle that ends in a structure
	 * failure acknowledged its operations too */
	r->acked += exec_model_acked(r->model);
	r->issued += exec_model_issued(r->model);
	if (failed[0] && r->checker_status == CHECKER_UNAVAILABLE) {
		availability_violation(r, cycle);
		log_tail(r);
		return 1;
	}
	if (failed[0]) {
		char what[400];
		snprintf(what, sizeof what, "%s after the crash: the program "
		         "could not recover its state", failed);
		structure_violation(r, cycle, what);
		log_tail(r);
		return 1;
	}
	n = exec_model_verify_end(r->model, on_violation, &v, counts);
	for (int i = 0; i < ORACLE_KINDS; i++)
		r->violations[i] += counts[i];
	r->verified++;
	return n ? 1 : 0;
}

static uint64_t kill_delay(const xrun *r, uint64_t cycle)
{
	uint64_t base = r->kill_every_ns, span = base * r->o->jitter_pct / 100;
	uint64_t x = mix(r->o->seed ^ mix(cycle ^ 0x6b696c6cull));
	if (!span)
		return base;
	return base - span + x % (2 * span + 1);
}

/* A workload that ended on its own: fine when it exited 0 (the crash
 * comes after its last call).  Otherwise: in the first cycle a set-up
 * error; later the program failing after a crash.  0, 1 or 2. */
static int judge_exit(xrun *r, uint64_t cycle, const wresult *w, int first)
{
	char what[300];

	if (!w->exited || (WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0)) {
		if (first && w->exited && w->lines == 0 &&
		    exec_model_issued(r->model) == 0) {
			log_tail(r);
			return exec_setup_error("the workload exited at once without "
			                   "writing a protocol line (is it writing "
			                   "'intent OP KEY VALUE' lines to the "
			                   "descriptor in $KEEL_TORTURE_FD?)");
		}
		return 0;
	}
	/* under --fail a program may stop at an injected error: that is the
	 * program doing its job, and the crash still comes */
	for (unsigned i = 0; r->faults && i < r->o->nfail; i++)
		if (faultsim_faults_fired(r->faults, (int)i)) {
			r->fault_stops++;
			return 0;
		}
	if (WIFEXITED(w->status))
		snprintf(what, sizeof what, "the workload exited with status "
		         "%d before its kill", WEXITSTATUS(w->status));
	else
		snprintf(what, sizeof what, "the workload died of signal %d "
		         "before its kill", WTERMSIG(w->status));
	if (first || r->issued + exec_model_issued(r->model) == 0 ||
	    (WIFEXITED(w->status) && (WEXITSTATUS(w->status) == 126 ||
	                              WEXITSTATUS(w->status) == 127))) {
		/* before any crash, before it ever spoke, or the shell could
		 * not run it: the command is wrong, not the program */
		log_tail(r);
		return exec_setup_error("%s, %s: check the command", what,
		                   first ? "in the first cycle (before any crash)"
		                         : "before it wrote any protocol line");
	}
	r->writer++;
	fprintf(stderr, "torture: cycle %" PRIu64 ": writer: %s (after a "
	        "crash: the program could not recover)\n", cycle, what);
	if (!r->first[0]) {
		snprintf(r->first, sizeof r->first, "writer: %s", what);
		r->first_cycle = cycle;
	}
	log_tail(r);
	return 1;
}

static void progress(xrun *r, int force)
{
	uint64_t t = now_ns(), el = t - r->start_ns;

	if (r->o->quiet || (!force && t - r->last_progress_ns < 5000000000ull))
		return;
	r->last_progress_ns = t;
	fprintf(stderr, "torture: %.1fs  cycles %" PRIu64 "  kills %" PRIu64
	        "  power cuts %" PRIu64 "  acked %" PRIu64 "  lost %" PRIu64
	        "  %.1f cycles/s\n", (double)el / 1e9, r->cycles, r->kills,
	        r->power_cuts, r->acked, r->violations[ORACLE_LOST],
	        el ? (double)r->cycles * 1e9 / (double)el : 0.0);
}

static int budget_left(const xrun *r)
{
	if (stop_requested)
		return 0;
	if (r->o->cycles && r->cycles >= r->o->cycles)
		return 0;
	if (r->o->duration_ns && now_ns() - r->start_ns >= r->o->duration_ns)
		return 0;
	return 1;
}

static void fresh_faults(xrun *r, uint64_t cycle)
{
	if (!r->faults)
		return;
	faultsim_faults_reset_counts(r->faults);
	faultsim_faults_reseed(r->faults, r->o->enumerate ? r->o->seed :
	                       mix(r->o->seed ^ mix(cycle)));
}

/* A period as the user would type it: "50ms", "1.5s", "12.345ms". */
void exec_period_text(uint64_t ns, char *buf, size_t cap)
{
	if (ns % 1000000000ull == 0)
		snprintf(buf, cap, "%" PRIu64 "s", ns / (uint64_t)1000000000);
	else if (ns % 1000000ull == 0)
		snprintf(buf, cap, "%" PRIu64 "ms", ns / (uint64_t)1000000);
	else
		snprintf(buf, cap, "%.3fms", (double)ns / 1e6);
}

/* More than half of at least DRY_MIN_CYCLES cycles at the period in force
 * acknowledged nothing: the run tests too little. */
int exec_lives_too_short(const xrun *r)
{
	return r->period_cycles >= DRY_MIN_CYCLES &&
	       2 * r->period_dry > r->period_cycles;
}

static int auto_capped(const xrun *r)
{
	return r->kill_every_ns >= TORTURE_KILL_EVERY_AUTO_MAX_NS;
}

/*
 * --kill-every auto: when AUTO_DRY of the last AUTO_WINDOW cycles at the
 * period in force acknowledged nothing, double it (up to
 * TORTURE_KILL_EVERY_AUTO_MAX_NS) and start counting afresh.  It decides
 * on the acknowledgements alone, never on the clock or a random draw: the
 * same acknowledgements give the same periods.  They depend on timing,
 * so each change is printed (a replay can pin the period).
 */
static void lives_auto(xrun *r, uint64_t cycle, int dry)
{
	char was[32], now[32];
	unsigned n = 0, seen;

	r->auto_bits = ((r->auto_bits << 1) | (dry ? 1u : 0u)) &
	               ((1u << AUTO_WINDOW) - 1);
	if (r->auto_seen < AUTO_WINDOW)
		r->auto_seen++;
	for (unsigned b = r->auto_bits; b; b &= b - 1)
		n++;
	if (n < AUTO_DRY || auto_capped(r))
		return;
	seen = r->auto_seen;
	exec_period_text(r->kill_every_ns, was, sizeof was);
	r->kill_every_ns *= 2;
	if (r->kill_every_ns > TORTURE_KILL_EVERY_AUTO_MAX_NS)
		r->kill_every_ns = TORTURE_KILL_EVERY_AUTO_MAX_NS;
	exec_period_text(r->kill_every_ns, now, sizeof now);
	r->doublings++;
	r->auto_bits = r->auto_seen = 0;
	r->period_cycles = r->period_dry = 0;
	fprintf(stderr, "torture: --kill-every auto: %u of the last %u cycles "
	        "at %s acknowledged nothing; lives of %s from cycle %" PRIu64
	        "\n", n, seen, was, now, cycle + 1);
}

/* After each verified cycle of kills: count the cycles that acknowledged
 * nothing, let --kill-every auto lengthen the lives, and say once, while
 * the run goes on, when they are too short to test anything. */
static void lives_observe(xrun *r, uint64_t cycle)
{
	int dry = r->cycle_acked == 0;
	char per[32];

	r->observed++;
	r->dry += (uint64_t)dry;
	r->period_dry += (uint64_t)dry;
	r->period_cycles++;
	if (r->o->kill_every_auto)
		lives_auto(r, cycle, dry);
	if (r->dry_warned || !exec_lives_too_short(r) ||
	    (r->o->kill_every_auto && !auto_capped(r)))
		return;
	r->dry_warned = 1;
	exec_period_text(r->kill_every_ns, per, sizeof per);
	fprintf(stderr, "torture: warning: %" PRIu64 " of %" PRIu64 " cycles "
	        "at %s acknowledged nothing: the lives are too short for this "
	        "program; %s\n", r->period_dry, r->period_cycles, per,
	        r->o->kill_every_auto ? "--kill-every auto is at its cap: the "
	        "program acknowledges too rarely to be tested this way" :
	        "try --kill-every auto or a longer --kill-every");
}

static int run_kills(xrun *r)
{
	int rc = 0;

	for (uint64_t cycle = 1; rc == 0 && budget_left(r); cycle++) {
		wresult w;
		fresh_faults(r, cycle);
		log_reset(r);
		trace_mark(r, "the workload's calls", cycle, 1);
		rc = run_workload(r, cycle, mix(r->o->seed ^ mix(cycle)),
		                  now_ns() + kill_delay(r, cycle), &w);
		if (rc)
			break;
		if (refused(r)) {
			rc = 2;
			break;
		}
		w.lines = (int)exec_model_issued(r->model);
		if ((rc = judge_exit(r, cycle, &w, cycle == 1)) != 0)
			break;
		if ((rc = after_workload(r, cycle)) != 0)
			break;
		rc = verify(r, cycle);
		if (rc == 2) /* a set-up error in the checker: no verdict */
			break;
		r->cycles++;
		if (rc == 0)
			lives_observe(r, cycle);
		progress(r, 0);
	}
	return rc;
}

/* ---- --enumerate ------------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int type,
                    struct FTW *ftw)
{
	(void)st;
	(void)type;
	if (ftw->level == 0)
		return 0;
	return remove(path) == 0 ? 0 : -1;
}

static int empty_dir(const char *dir)
{
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int run_enumerate(xrun *r)
{
	wresult w;
	uint64_t n, rc;

	/* the reference run: to its end, no crash, counting the steps */
	fresh_faults(r, 0);
	faultsim_faults_kill_after(r->faults, 0);
	if ((rc = (uint64_t)run_workload(r, 0, r->o->seed, 0, &w)) != 0)
		return (int)rc;
	if (refused(r))
		return 2;
	w.lines = (int)exec_model_issued(r->model);
	if ((rc = (uint64_t)judge_exit(r, 0, &w, 1)) != 0)
		return (int)rc;
	n = faultsim_faults_steps(r->faults);
	r->steps = n;
	if (refused(r))
		return 2;
	exec_model_free(r->model);
	r->model = NULL;
	if (!r->o->quiet)
		fprintf(stderr, "torture: the workload made %" PRIu64 " "
		        "durability-relevant calls; crashing after each\n", n);
	for (uint64_t s = 1; s <= n && budget_left(r); s++) {
		faultsim_cache_forget(r->cache);
		shim_shared_reset_files(r->ctl);
		if (empty_dir(r->dir) != 0)
			return exec_setup_error("%s: cannot empty it: %s", r->dir,
			                   strerror(errno));
		if (exec_model_new(r->o->keys, mix(r->o->seed), &r->model) < 0)
			return exec_setup_error("out of memory");
		fresh_faults(r, s);
		faultsim_faults_kill_after(r->faults, s);
		log_reset(r);
		if ((rc = (uint64_t)run_workload(r, s, r->o->seed, 0, &w)) != 0)
			return (int)rc;
		if (refused(r))
			return 2;
		if (w.exited && faultsim_faults_steps(r->faults) > s) {
			/* it reached the crash point and killed itself (a
			 * shell above it may report that as status 137) */
			w.exited = 0;
			r->exits--;
			r->kills++;
		}
		if ((rc = (uint64_t)judge_exit(r, s, &w, 0)) != 0)
			return (int)rc;
		if ((rc = (uint64_t)after_workload(r, s)) != 0)
			return (int)rc;
		rc = (uint64_t)verify(r, s);
		if (rc == 2)
			return 2;
		r->cycles++;
		progress(r, 0);
		exec_model_free(r->model);
		r->model = NULL;
		if (rc)
			return (int)rc;
	}
	return 0;
}

/* ---- set-up ------------------------------------------------------------------ */

static int check_options(const torture_options *o)
{
	static const char *const ops[] = { "open:", "pwrite:", "fdatasync:",
		"fsync:", "sync:", "ftruncate:", "fallocate:", "rename:",
		"unlink:", "fsync_dir:" };

	if (!o->workload || !*o->workload)
		return exec_setup_error("--target exec needs --workload CMD (see "
		                   "docs/targets.md)");
	if (!o->checker || !*o->checker)
		return exec_setup_error("--target exec needs --checker CMD (see "
		                   "docs/targets.md)");
	if (o->unsafe || o->compact_every_ns || o->grow_step || o->cache_lives ||
	    o->threads_given || o->checkpoint_bytes)
		return exec_setup_error("--target exec runs your program: --unsafe, "
		                   "--compact-every, --grow-step, --cache-lives, "
		                   "--checkpoint-kib and --threads do not apply");
	for (unsigned i = 0; i < o->nfail; i++) {
		int ok = 0;
		for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++)
			ok |= strncmp(o->fail[i], ops[j], strlen(ops[j])) == 0;
		if (!ok)
			return exec_setup_error("--fail %s: the shim injects faults "
			                   "into open, pwrite (every write call), "
			                   "fdatasync, fsync, sync, ftruncate, "
			                   "fallocate, rename, unlink and fsync_dir "
			                   "only", o->fail[i]);
		if (strstr(o->fail[i], ":crash"))
			return exec_setup_error("--fail %s: crash points need keel's "
			                   "embedded writer; the shim has none",
			                   o->fail[i]);
	}
	return 0;
}

/* --target NAME:CONFIG: the adapter's program beside torture
 * (BINDIR/targets/NAME) as workload and checker, into O (a copy of the
 * caller's options). */
static int adapter_commands(torture_options *o, char *work, char *check,
                            size_t cap)
{
	const torture_adapter *a = o->adapter;
	char exe[PATH_MAX], prog[PATH_MAX + 64], q[2 * PATH_MAX + 140];
	ssize_t n;

	if (o->workload || o->checker)
		return exec_setup_error("--target %s:%s brings its own workload and "
		                   "checker: drop --workload and --checker (or "
		                   "use --target exec)", a->name,
		                   o->adapter_config);
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return exec_setup_error("cannot find this program: %s",
		                   strerror(errno));
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	snprintf(prog, sizeof prog, "%s/targets/%s", exe, a->name);
	if (access(prog, X_OK) != 0)
		return exec_setup_error("%s: %s: the adapter is not built (run make%s%s%s)",
		                   prog, strerror(errno),
		                   a->package ? "; it needs the Debian package "
		                                "installed by: apt-get install -y " : "",
		                   a->package ? a->package : "", "");
	exec_shell_quote(prog, q, sizeof q);
	snprintf(work, cap, "%s {dir} %s", q, o->adapter_config);
	snprintf(check, cap, "%s {dir} %s --check", q, o->adapter_config);
	o->workload = work;
	o->checker = check;
	if (!o->volatile_files)
		o->volatile_files = a->volatile_files;
	return 0;
}

static int find_shim(xrun *r)
{
	char exe[PATH_MAX];
	const char *env = getenv("KEEL_SHIM_LIB");
	ssize_t n;

	if (env && *env) {
		snprintf(r->shim, sizeof r->shim, "%s", env);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n <= 0)
			return exec_setup_error("cannot find this program: %s",
			                   strerror(errno));
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		*slash = '\0';
		snprintf(r->shim, sizeof r->shim, "%.*s/libkeel-shim.so",
		         PATH_MAX - 20, exe);
	}
	if (access(r->shim, R_OK) != 0)
		return exec_setup_error("the shim %s: %s (build it with make, or name "
		                   "it in KEEL_SHIM_LIB)", r->shim,
		                   strerror(errno));
	return 0;
}

/* --syscall-backstop on a kernel without Syscall User Dispatch: said once,
 * and the run goes on as without it (bypasses refused, never a verdict). */
static void backstop_setup(xrun *r)
{
	char why[200];

	if (!r->o->syscall_backstop)
		return;
	if (shim_backstop_probe(why, sizeof why) == 0) {
		r->backstop = 1;
		return;
	}
	fprintf(stderr, "torture: --syscall-backstop is unavailable here (%s; "
	        "it needs Linux 5.11+ on x86-64): writes that bypass the "
	        "shim's wrappers are refused as without it\n", why);
}

static int dir_is_empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int empty = 1;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

/* The watched directory: --dir (made if missing, must be writable; with
 * --enumerate, empty), else a fresh temporary one. */
static int make_dir(xrun *r)
{
	const char *d = r->o->dir;
	char probe[PATH_MAX + 32];
	int fd;

	if (!d) {
		const char *tmp = getenv("TMPDIR");
		snprintf(probe, sizeof probe, "%s/keel-torture.XXXXXX",
		         tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(probe))
			return exec_setup_error("cannot make a temporary directory "
			                   "%s: %s", probe, strerror(errno));
		r->dir_made = 1;
		d = probe;
	} else if (mkdir(d, 0755) != 0 && errno != EEXIST) {
		return exec_setup_error("--dir %s: %s", d, strerror(errno));
	}
	if (!realpath(d, r->dir))
		return exec_setup_error("--dir %s: %s", d, strerror(errno));
	snprintf(probe, sizeof probe, "%s/.keel-torture-probe", r->dir);
	fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return exec_setup_error("--dir %s is not writable: %s", r->dir,
		                   strerror(errno));
	close(fd);
	unlink(probe);
	if (r->o->enumerate && !dir_is_empty(r->dir))
		return exec_setup_error("--dir %s is not empty: --enumerate puts the "
		                   "directory back to empty before each crash "
		                   "point, so it must start empty", r->dir);
	return 0;
}

static int chown_one(const char *path, const struct stat *st, int type,
                     struct FTW *ftw);
static unsigned chown_uid, chown_gid;

static int chown_one(const char *path, const struct stat *st, int type,
                     struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return lchown(path, (uid_t)chown_uid, (gid_t)chown_gid) != 0 ? -1 : 0;
}

/* --user NAME: the programs run as NAME, and the directory is theirs.
 * Only root may give it; the shim's control block lives in the harness's
 * descriptors, which another user may not open, so the supervisor records
 * every program. */
static int user_setup(xrun *r)
{
	struct passwd *pw;

	if (!r->o->user)
		return 0;
	if (geteuid() != 0)
		return exec_setup_error("--user %s: torture must run as root to "
		                        "run the programs as another user",
		                        r->o->user);
	if (r->o->front_end == TORTURE_FRONT_SHIM)
		return exec_setup_error("--user %s: the shim cannot attach to "
		                        "programs of another user; the "
		                        "supervisor records them (leave out "
		                        "--front-end shim)", r->o->user);
	errno = 0;
	if (!(pw = getpwnam(r->o->user)))
		return exec_setup_error("--user %s: %s", r->o->user, errno ?
		                        strerror(errno) : "no such user");
	r->as_user = 1;
	r->uid = (unsigned)pw->pw_uid;
	r->gid = (unsigned)pw->pw_gid;
	chown_uid = r->uid;
	chown_gid = r->gid;
	if (nftw(r->dir, chown_one, 16, FTW_PHYS) != 0)
		return exec_setup_error("--user %s: cannot give it %s: %s",
		                        r->o->user, r->dir, strerror(errno));
	return 0;
}

static int make_shared(xrun *r)
{
	int rc;
	char err[200];

	if ((rc = shim_shared_create(&r->ctl_fd, &r->ctl)) < 0 ||
	    (rc = faultsim_cache_create_fd(r->o->cache_bytes, &r->cache_fd,
	                                   &r->cache)) < 0)
		return exec_setup_error("cannot make the shared memory: %s",
		                   strerror(-rc));
	/* the shim reads the model from the cache it attaches */
	faultsim_cache_set_fs(r->cache, (faultsim_fs)r->o->fs);
	if (r->o->nfail || r->o->enumerate) {
		if ((rc = faultsim_faults_create_fd(r->o->seed, &r->faults_fd,
		                                    &r->faults)) < 0)
			return exec_setup_error("cannot make the fault state: %s",
			                   strerror(-rc));
		for (unsigned i = 0; i < r->o->nfail; i++)
			if (faultsim_faults_add(r->faults, r->o->fail[i], err,
			                        sizeof err) < 0)
				return exec_setup_error("--fail %s: %s (see "
				                   "docs/faults.md)", r->o->fail[i],
				                   err);
	}
	r->ring = calloc(HIST_CALLS + HIST_PROTO, sizeof(shim_call));
	r->hist_calls = calloc(HIST_CALLS, sizeof(shim_call));
	r->hist_proto = calloc(HIST_PROTO, sizeof(shim_call));
	if (!r->ring || !r->hist_calls || !r->hist_proto || exec_model_new(r->o->keys, mix(r->o->seed),
	                               &r->model) < 0)
		return exec_setup_error("out of memory");
	char logname[] = "/tmp/keel-torture-log.XXXXXX";
	r->logfd = mkostemp(logname, O_CLOEXEC);
	if (r->logfd < 0)
		return exec_setup_error("cannot make a log file: %s", strerror(errno));
	unlink(logname);
	char tracename[] = "/tmp/keel-torture-trace.XXXXXX";
	int tfd = mkostemp(tracename, O_CLOEXEC);
	if (tfd >= 0) {
		unlink(tracename);
		r->trace = fdopen(tfd, "w+");
		if (!r->trace)
			close(tfd);
	}
	if ((r->o->power_loss || r->o->enumerate) && !r->o->no_explain &&
	    !(r->dropped = calloc(EXPLAIN_MAX_DROPPED, sizeof *r->dropped)))
		return exec_setup_error("out of memory");
	return 0;
}

/* Before the first cycle the checker reads the directory as it is: its
 * answer is the starting state (empty for a fresh directory). */
/* --setup: the command prepares the directory once, under the shim (so
 * what it creates is tracked like the rest) but with no fault injected;
 * baseline then settles what it left as durable, as after a clean
 * shutdown.  0, or 2 naming the command. */
static int run_setup(xrun *r)
{
	uint64_t deadline = now_ns() + SETUP_TIMEOUT_NS;
	char *cmd;
	pid_t pid;
	int st = 0, reaped = 0;

	if (!r->o->setup)
		return 0;
	r->cycle_now = 0;
	r->stage = "set-up";
	cmd = subst_dir(r->o->setup, r->dir);
	if (!cmd)
		return exec_setup_error("out of memory");
	/* what --setup leaves counts as durable: a program the shim cannot
	 * load runs without it, and nothing records it */
	char why[PATH_MAX + 100];
	r->supervised = r->as_user ||
	                r->o->front_end == TORTURE_FRONT_SUPERVISOR ||
	                (r->o->front_end == TORTURE_FRONT_AUTO &&
	                 sup_wants(cmd, why, sizeof why));
	r->in_setup = 1;
	pid = spawn(r, cmd, -1, -1, r->o->seed, 0);
	r->in_setup = 0;
	free(cmd);
	if (pid < 0)
		return exec_setup_error("fork: %s", strerror(errno));
	while (!reaped && now_ns() < deadline) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			reaped = 1;
		else
			usleep(2000);
	}
	if (kill_group(pid, &st, reaped) < 0)
		return exec_setup_error("a process of --setup survived SIGKILL");
	if (refused(r))
		return 2;
	if (!reaped) {
		log_tail(r);
		return exec_setup_error("--setup '%s' did not finish in %llu s "
		                   "(killed)", r->o->setup, (unsigned long long)
		                   (SETUP_TIMEOUT_NS / 1000000000ull));
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		log_tail(r);
		return exec_setup_error("--setup '%s' failed (%s %d) before the first "
		                   "cycle", r->o->setup, WIFEXITED(st) ?
		                   "exit status" : "signal", WIFEXITED(st) ?
		                   WEXITSTATUS(st) : WTERMSIG(st));
	}
	return 0;
}

static int baseline(xrun *r)
{
	char failed[200];
	int rc = run_setup(r);

	if (rc)
		return rc;
	rc = run_checker(r, 0, adopt_line, failed, sizeof failed);

	if (rc)
		return rc;
	if (refused(r))
		return 2;
	if (failed[0]) {
		log_tail(r);
		return exec_setup_error("%s on the directory before any crash: check "
		                   "the --checker command", failed);
	}
	faultsim_cache_forget(r->cache);
	shim_shared_reset_files(r->ctl);
	return 0;
}

static void teardown(xrun *r, int remove_dir)
{
	if (remove_dir && r->dir_made && r->dir[0]) {
		empty_dir(r->dir);
		rmdir(r->dir);
	}
	exec_model_free(r->model);
	free(r->ring);
	free(r->hist_calls);
	free(r->hist_proto);
	explain_dir_free(r->saved);
	shim_tree_free(r->tree);
	faultsim_snapshot_free(r->snap);
	free(r->dropped);
	free(r->why_value);
	if (r->trace)
		fclose(r->trace);
	free(r->workload);
	free(r->checker);
	if (r->logfd >= 0)
		close(r->logfd);
	faultsim_faults_destroy(r->faults);
	if (r->faults_fd >= 0)
		close(r->faults_fd);
	faultsim_cache_destroy(r->cache);
	if (r->cache_fd >= 0)
		close(r->cache_fd);
	shim_shared_destroy(r->ctl, r->ctl_fd);
}

int exec_target_main(const torture_options *given, const char *prog)
{
	static xrun run;
	static torture_options opts;
	static char work[3 * PATH_MAX], check[3 * PATH_MAX];
	const torture_options *o = &opts;
	xrun *r = &run;
	char replay[12000];
	struct sigaction sa;
	int rc;

	memset(r, 0, sizeof *r);
	exec_setup_said[0] = '\0';
	exec_setup_try = NULL;
	opts = *given;
	r->o = o;
	r->prog = prog;
	r->ctl_fd = r->cache_fd = r->faults_fd = r->logfd = -1;
	if ((opts.adapter &&
	     (rc = adapter_commands(&opts, work, check, sizeof work)) != 0) ||
	    (rc = check_options(o)) != 0 || (rc = find_shim(r)) != 0 ||
	    (rc = make_dir(r)) != 0 || (rc = user_setup(r)) != 0 ||
	    (rc = make_shared(r)) != 0)
		goto out;
	r->kill_every_ns = o->kill_every_ns;
	backstop_setup(r);
	r->workload = subst_dir(o->workload, r->dir);
	r->checker = subst_dir(o->checker, r->dir);
	if (!r->workload || !r->checker) {
		rc = exec_setup_error("out of memory");
		goto out;
	}
	exec_front_choose(r);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (!o->quiet)
		fprintf(stderr, "torture: exec target, seed %" PRIu64 ", dir %s, "
		        "kill every %s%.1f ms +-%u%%%s%s\n", o->seed, r->dir,
		        o->kill_every_auto ? "auto from " : "",
		        (double)o->kill_every_ns / 1e6, o->jitter_pct,
		        o->power_loss ? ", power loss on " : "",
		        o->power_loss ? faultsim_device_name(
		                (faultsim_device)o->device) : "");
	r->start_ns = r->last_progress_ns = now_ns();
	if ((rc = baseline(r)) != 0)
		goto out;
	rc = o->enumerate ? run_enumerate(r) : run_kills(r);
	/* a set-up error in cycle 1 (or the reference run of --enumerate) is
	 * a set-up error as before; after cycles that passed, they count */
	r->stopped = rc == 2 && r->cycles > 0 && exec_setup_said[0];
	if (rc == 0 && exec_total_violations(r))
		rc = 1;
	/* a program that refuses to start lost nothing it said it kept: an
	 * availability verdict of its own (exit 3) unless data was lost too */
	if (rc == 1 && r->unavailable && exec_total_violations(r) == r->unavailable)
		rc = 3;
	if (rc == 0 && r->acked == 0) {
		log_tail(r);
		rc = exec_setup_error("the workload never acknowledged an operation "
		                 "in %" PRIu64 " cycles: nothing was tested (does "
		                 "it write 'ack OP' lines to $KEEL_TORTURE_FD once "
		                 "its writes are durable?%s)", r->cycles,
		                 o->enumerate ? "" : o->kill_every_auto ?
		                 " if it does, --kill-every auto had not yet "
		                 "lengthened the lives enough: give it more "
		                 "--cycles or --duration" : " if it does, its "
		                 "lives are too short: try --kill-every auto or a "
		                 "longer --kill-every");
	}
	if (rc == 2 && !r->stopped)
		goto out;
	progress(r, 1);
	exec_replay_line(r, replay, sizeof replay);
	exec_summary(r, rc, replay);
	fflush(stdout);
	if (o->json && exec_write_json(r, rc, replay) != 0) {
		fprintf(stderr, "torture: --json %s: %s\n", o->json,
		        strerror(errno));
		if (rc == 0)
			rc = 2;
	}
out:
	if (rc == 2 && r->dir_made && r->dir[0])
		fprintf(stderr, "torture: the directory %s is left as it was\n",
		        r->dir);
	teardown(r, rc == 0);
	return rc;
}
