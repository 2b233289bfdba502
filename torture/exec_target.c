/*
 * exec_target.c -- `torture --target exec` (contract in exec_target.h,
 * manual in docs/targets.md): the driver.  It sets the run up, runs the
 * cycles -- a life of the workload (exec_life.c) cut at its kill
 * (exec_lives.c), the crash (exec_crash.c), the checker's verdict
 * (exec_violation.c) -- or each crash point of --enumerate, and ends the
 * run with its summary (exec_summary.c).
 */
#include "exec_target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
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
	rc = exec_run_checker(r, cycle, exec_checker_line, failed,
	                      sizeof failed);
	if (rc)
		return rc;
	if (exec_refused(r))
		return 2;
	if (exec_tree_judge(r, cycle) != 0)
		return 2;
	exec_after_checker(r);
	/* counted before the verdict: a cycle that ends in a structure
	 * failure acknowledged its operations too */
	r->acked += exec_model_acked(r->model);
	r->issued += exec_model_issued(r->model);
	if (failed[0] && r->checker_status == CHECKER_UNAVAILABLE) {
		exec_availability_violation(r, cycle);
		exec_log_tail(r);
		return 1;
	}
	if (failed[0]) {
		char what[400];
		snprintf(what, sizeof what, "%s after the crash: the program "
		         "could not recover its state", failed);
		exec_structure_violation(r, cycle, what);
		exec_log_tail(r);
		return 1;
	}
	n = exec_model_verify_end(r->model, exec_on_violation, &v, counts);
	for (int i = 0; i < ORACLE_KINDS; i++)
		r->violations[i] += counts[i];
	r->verified++;
	return n ? 1 : 0;
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
			exec_log_tail(r);
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
		exec_log_tail(r);
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
	exec_log_tail(r);
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

static int run_kills(xrun *r)
{
	int rc = 0;

	for (uint64_t cycle = 1; rc == 0 && budget_left(r); cycle++) {
		wresult w;
		fresh_faults(r, cycle);
		exec_log_reset(r);
		exec_trace_mark(r, "the workload's calls", cycle, 1);
		rc = exec_run_workload(r, cycle, mix(r->o->seed ^ mix(cycle)),
		                       now_ns() + exec_kill_delay(r, cycle), &w);
		if (rc)
			break;
		if (exec_refused(r)) {
			rc = 2;
			break;
		}
		w.lines = (int)exec_model_issued(r->model);
		if ((rc = judge_exit(r, cycle, &w, cycle == 1)) != 0)
			break;
		if ((rc = exec_after_workload(r, cycle)) != 0)
			break;
		rc = verify(r, cycle);
		if (rc == 2) /* a set-up error in the checker: no verdict */
			break;
		r->cycles++;
		if (rc == 0)
			exec_lives_observe(r, cycle);
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
	if ((rc = (uint64_t)exec_run_workload(r, 0, r->o->seed, 0, &w)) != 0)
		return (int)rc;
	if (exec_refused(r))
		return 2;
	w.lines = (int)exec_model_issued(r->model);
	if ((rc = (uint64_t)judge_exit(r, 0, &w, 1)) != 0)
		return (int)rc;
	n = faultsim_faults_steps(r->faults);
	r->steps = n;
	if (exec_refused(r))
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
		exec_log_reset(r);
		if ((rc = (uint64_t)exec_run_workload(r, s, r->o->seed, 0,
		                                       &w)) != 0)
			return (int)rc;
		if (exec_refused(r))
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
		if ((rc = (uint64_t)exec_after_workload(r, s)) != 0)
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
	pid = exec_spawn(r, cmd, -1, -1, r->o->seed, 0);
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
	if (exec_kill_group(pid, &st, reaped) < 0)
		return exec_setup_error("a process of --setup survived SIGKILL");
	if (exec_refused(r))
		return 2;
	if (!reaped) {
		exec_log_tail(r);
		return exec_setup_error("--setup '%s' did not finish in %llu s "
		                   "(killed)", r->o->setup, (unsigned long long)
		                   (SETUP_TIMEOUT_NS / 1000000000ull));
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		exec_log_tail(r);
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
	rc = exec_run_checker(r, 0, exec_adopt_line, failed, sizeof failed);

	if (rc)
		return rc;
	if (exec_refused(r))
		return 2;
	if (failed[0]) {
		exec_log_tail(r);
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
		exec_log_tail(r);
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
