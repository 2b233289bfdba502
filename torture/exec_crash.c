/*
 * exec_crash.c -- the crash at the end of a workload's life in `torture
 * --target exec` (exec_internal.h): the power cut applied to what the
 * fault simulator's cache holds (or a kill alone), and, for the first
 * violation, the replays of that cut that name the smallest set of
 * dropped writes whose loss alone fails (exec_explain.h).
 */
#include "exec_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	rc = exec_run_checker(r, x->cycle, replay_checker_line, failed,
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
void exec_explain_violation(xrun *r, uint64_t cycle, const char *key)
{
	size_t *cause = NULL, ncause = 0;
	size_t n = r->ndropped < EXPLAIN_MAX_DROPPED ? r->ndropped
	                                             : EXPLAIN_MAX_DROPPED;
	replay_ctx x = { r, cycle };
	uint64_t t0 = now_ns();
	enum explain_status st;
	unsigned tests = 0;
	char path[PATH_MAX + 8];

	exec_trace_keep(r, path, sizeof path);
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

/* ---- the crash --------------------------------------------------------------- */

/* The machine after the workload died: a power cut, or not.  0 or 2. */
int exec_after_workload(xrun *r, uint64_t cycle)
{
	char why[PATH_MAX + 300];

	if (exec_refused(r))
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
	exec_ring_snapshot(r);
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
		exec_trace_mark(r, "the power cut; the checker's calls follow",
		                cycle, 0);
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
void exec_after_checker(xrun *r)
{
	exec_trace_drain(r, 1);
	if (r->o->power_loss || r->o->enumerate) {
		faultsim_cache_writer_died(r->cache);
	} else {
		faultsim_cache_forget(r->cache);
		shim_shared_reset_files(r->ctl);
	}
}
