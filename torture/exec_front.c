/*
 * exec_front.c -- who records a program's calls in `torture --target exec`
 * (exec_internal.h): the front end chosen for each command, the seccomp
 * guard or the supervisor around each program started, and the soundness
 * floor around each life (shim.h, shim_tree_check).
 */
#include "exec_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the seccomp guard and the soundness floor ------------------------------ */

static void guard_refusal(void *arg, const char *what)
{
	char line[SHIM_REFUSAL];

	snprintf(line, sizeof line, "%s%s", ((xrun *)arg)->supervised ?
	         SUPERVISOR_SAYS : GUARD_SAYS, what);
	shim_shared_refuse(((xrun *)arg)->ctl, line);
}

/* Before a program under test is forked: its guard, and under the
 * supervisor its recorder (supervisor.h).  0, or 2 after a set-up error
 * (a supervised program must not run unrecorded). */
int exec_guard_prepare(xrun *r, int supervised, int proto_fd)
{
	int rc;

	r->guard = NULL;
	r->supervised = supervised;
	r->rec = (sup_record){
		.cache = r->cache,
		.faults = proto_fd >= 0 ? r->faults : NULL,
		.profile = (faultsim_profile)r->o->profile,
		.kills_only = exec_kills_only(r),
		.dir = r->dir,
		.volatile_pats = r->o->volatile_files,
		.ctl = r->ctl,
		.role = proto_fd >= 0 ? SHIM_ROLE_WORKLOAD : SHIM_ROLE_CHECKER,
		.proto_fd = proto_fd,
	};
	rc = sup_guard_prepare(&r->guard, supervised ? &r->rec : NULL);
	if (rc < 0) {
		r->guard = NULL;
		if (supervised)
			return exec_setup_error("the supervisor: %s", strerror(-rc));
	}
	return 0;
}

/* After the fork: serve the guard.  Without the recorder a guard that
 * cannot be had is said once; a supervised program cannot be judged
 * without it (2). */
int exec_guard_start(xrun *r)
{
	char why[300];

	if (!r->guard)
		return 0;
	if (sup_guard_start(r->guard, guard_refusal, r, why, sizeof why) == 0)
		return 0;
	if (r->supervised)
		return exec_setup_error("%s: the supervisor cannot record the "
		                   "program's calls (it needs Linux 5.9+ and "
		                   "seccomp; try --front-end shim for a "
		                   "dynamically linked program)", why);
	if (!r->guard_warned) {
		r->guard_warned = 1;
		fprintf(stderr, "torture: warning: %s; io_uring and Linux AIO "
		        "are caught only by the check after each life\n", why);
	}
	return 0;
}

/* After the program's group was reaped. */
void exec_guard_stop(xrun *r)
{
	r->sup_calls += sup_guard_calls(r->guard);
	sup_guard_stop(r->guard);
	r->guard = NULL;
}

/* Which front end records each program (--front-end; auto: the
 * supervisor for a program the shim cannot see). */
void exec_front_choose(xrun *r)
{
	int f = r->o->front_end;

	r->front_why[0][0] = r->front_why[1][0] = '\0';
	if (r->as_user) {
		snprintf(r->front_why[0], sizeof r->front_why[0], "--user %s",
		         r->o->user);
		f = TORTURE_FRONT_SUPERVISOR;
	}
	r->sup_workload = f == TORTURE_FRONT_SUPERVISOR ||
	                  (f == TORTURE_FRONT_AUTO &&
	                   sup_wants(r->workload, r->front_why[0],
	                             sizeof r->front_why[0]));
	r->sup_checker = f == TORTURE_FRONT_SUPERVISOR ||
	                 (f == TORTURE_FRONT_AUTO &&
	                  sup_wants(r->checker, r->front_why[1],
	                            sizeof r->front_why[1]));
	if (r->o->quiet)
		return;
	if (r->sup_workload)
		fprintf(stderr, "torture: the supervisor records the workload%s%s%s\n",
		        r->front_why[0][0] ? " (" : "", r->front_why[0],
		        r->front_why[0][0] ? ")" : "");
	if (r->sup_checker)
		fprintf(stderr, "torture: the supervisor records the checker%s%s%s\n",
		        r->front_why[1][0] ? " (" : "", r->front_why[1],
		        r->front_why[1][0] ? ")" : "");
}

/* A life begins: note the directory, clear the life's tables.  0 or 2. */
int exec_tree_note(xrun *r)
{
	char why[PATH_MAX + 100];

	shim_tree_free(r->tree);
	r->tree = NULL;
	if (exec_kills_only(r))
		return 0;
	r->tree = shim_tree_scan(r->dir, r->o->volatile_files, why, sizeof why);
	if (!r->tree)
		return exec_setup_error("%s", why);
	shim_shared_new_life(r->ctl);
	return 0;
}

/* A life ended (its programs reaped, before any crash): every change
 * below the directory must be one the kit recorded.  0 or 2. */
int exec_tree_judge(xrun *r, uint64_t cycle)
{
	char why[PATH_MAX + 400];

	if (!r->tree)
		return 0;
	if (shim_tree_check(r->ctl, r->tree, r->dir, r->o->volatile_files, why,
	                    sizeof why) < 0)
		return exec_setup_refusal(TRY_UNSEEN, "unrecorded change in cycle %"
		                     PRIu64 " (%s): %s", cycle, r->stage, why);
	/* a run that acknowledged writes must have recorded some: else
	 * its writes all went where the kit does not look */
	if (r->acked + exec_model_acked(r->model) > 0 &&
	    __atomic_load_n(&r->ctl->changes, __ATOMIC_ACQUIRE) == 0)
		return exec_setup_refusal(TRY_UNSEEN, "the workload acknowledged %"
		                     PRIu64 " operations by cycle %" PRIu64
		                     ", but the kit recorded no change below %s: "
		                     "what it wrote, it wrote where the kit does "
		                     "not see (a program's own system calls, as Go "
		                     "makes them; io_uring; another directory)",
		                     r->acked + exec_model_acked(r->model), cycle,
		                     r->dir);
	return 0;
}

