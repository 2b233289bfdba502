/*
 * exec_internal.h -- what the files of `torture --target exec` share
 * (exec_target.h is the contract): the run's state and the helpers more
 * than one of them calls.  exec_target.c runs the cycles, exec_summary.c
 * reports them.
 */
#ifndef KEEL_EXEC_INTERNAL_H
#define KEEL_EXEC_INTERNAL_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "exec_explain.h"
#include "exec_proto.h"
#include "faultsim.h"
#include "options.h"
#include "oracle.h"
#include "shim.h"
#include "supervisor.h"
#include "adapters.h"

/* What to try after a set-up error that names nothing better. */
#define TRY_OTHER "fix what the message names and run again; the " \
	"cycles before it stand"

#define CHECKER_TIMEOUT_NS (60ull * 1000000000ull)
#define SETUP_TIMEOUT_NS (600ull * 1000000000ull)
#define CHECKER_UNAVAILABLE 3 /* checker exit status: the program will not start */
#define REAP_TIMEOUT_NS (5ull * 1000000000ull)
#define ENUM_RUN_TIMEOUT_NS (60ull * 1000000000ull)
#define LINE_MAX_BYTES 4096
#define CALLS_SHOWN 20
/* Lives too short: after this many cycles at one period, more than half
 * of them acknowledging nothing earns one warning and a summary line. */
#define DRY_MIN_CYCLES 8
/* --kill-every auto doubles the period when this many of the last
 * AUTO_WINDOW cycles at it acknowledged nothing (so fewer than 3 of 4
 * acknowledged something). */
#define AUTO_WINDOW 4
#define AUTO_DRY 2

typedef struct xrun {
	const torture_options *o;
	const char *prog;
	char dir[PATH_MAX];      /* the watched directory (resolved)        */
	int dir_made;            /* we made it: removed after a pass        */
	char shim[PATH_MAX];     /* libkeel-shim.so                         */
	char *workload, *checker;/* commands with {dir} replaced            */
	shim_shared *ctl;
	int ctl_fd;
	faultsim_cache *cache;
	int cache_fd;
	faultsim_faults *faults; /* NULL without --fail / --enumerate       */
	int faults_fd;
	exec_model *model;
	int logfd;               /* the programs' stdout/stderr (unlinked)  */
	int backstop;            /* --syscall-backstop, and the kernel has it */
	shim_call *ring;         /* the calls as they were at the crash      */
	uint64_t ring_n;
	/* counts */
	uint64_t cycles, kills, exits, power_cuts, cut_lost, cut_torn,
	         cut_undone, acked, issued, verified, faults_fired, steps,
	         fault_stops;            /* workloads that exited on a fault */
	uint64_t violations[ORACLE_KINDS], structure, writer;
	uint64_t unavailable;    /* availability: the program refused to start */
	int checker_status;      /* the last checker's exit status, -1: signal */
	uint64_t start_ns, last_progress_ns;
	char first[900];
	uint64_t first_cycle;
	char first_key[EXEC_TOKEN_MAX + 1];
	/* where a set-up error would come from */
	uint64_t cycle_now;      /* the cycle under way (0: before the first) */
	const char *stage;       /* "workload" or "checker": which ran last   */
	/* the lives (--kill-every, --kill-every auto) */
	uint64_t kill_every_ns;  /* the period in force                      */
	uint64_t doublings;      /* times --kill-every auto lengthened it     */
	uint64_t dry;            /* cycles that acknowledged nothing          */
	uint64_t period_cycles, period_dry; /* the same at the period in force */
	unsigned auto_seen, auto_bits; /* the last AUTO_WINDOW cycles at it,
	                                  bit set: acknowledged nothing   */
	int dry_warned;          /* the too-short warning was printed         */
	uint64_t cycle_acked;    /* operations the last cycle acknowledged    */
	uint64_t observed;       /* cycles counted for dry                    */
	int stopped;             /* a set-up error after cycles that passed:
	                            they are summarised, exit 2 all the same */
	/* explaining the first violation (exec_explain.h) */
	explain_dir *saved;      /* the directory before the last power cut  */
	faultsim_snapshot *snap; /* the cache before it                       */
	faultsim_dropped *dropped; /* what it dropped (EXPLAIN_MAX_DROPPED)   */
	uint64_t ndropped;
	uint64_t cut_seed;       /* its seed                                  */
	char explain_off[320];   /* why there is nothing to replay ("": fine) */
	const char *why_key;     /* the key a replay's checker is asked for   */
	char *why_value;         /* its value in that replay (NULL: absent)   */
	FILE *trace;             /* this cycle's calls, one a line (tmpfile)  */
	uint64_t drained;        /* ring entries written to it                */
	/* The harness's own history of the shim's ring, calls and protocol
	 * lines apart: a workload that writes two protocol lines per call
	 * would otherwise push its calls out of the shim's ring before the
	 * report names them.  Circular; *_n counts every entry added. */
	shim_call *hist_calls, *hist_proto;
	uint64_t hist_calls_n, hist_proto_n, hist_drained;
	/* the soundness floor (shim.h, shim_tree_check): the watched
	 * directory before the life under way; NULL in a kills-only run,
	 * where nothing recorded is ever undone */
	shim_tree *tree;
	sup_guard *guard;        /* the seccomp guard of the program starting */
	int guard_warned;        /* it could not be installed: said once      */
	/* the front end of each program (supervisor.h): 1 = the supervisor
	 * records its calls, 0 = the shim does (and the guard stands by) */
	int sup_workload, sup_checker;
	int supervised;          /* the program starting now                  */
	char front_why[2][PATH_MAX + 100]; /* why the supervisor, per program */
	sup_record rec;          /* what the supervisor records into           */
	uint64_t sup_calls;      /* calls the supervisor answered             */
	int as_user;             /* --user: the programs run as UID, GID      */
	int in_setup;            /* --setup's program is starting            */
	unsigned uid, gid;
} xrun;

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The seccomp guard's and the supervisor's refusals are told apart from
 * the shim's by their start. */
#define GUARD_SAYS "guard: "
#define SUPERVISOR_SAYS "supervisor: "
#define TRY_UNSEEN "run it where the kit sees its calls (a dynamically " \
	"linked build, without io_uring), or name the file in --volatile " \
	"if the program never needs it after a crash: docs/faults.md, " \
	"\"What the kit sees\""

/* exec_target.c */
int exec_setup_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a set-up error that comes with what to try (HINT, one of TRY_*) */
int exec_setup_refusal(const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int exec_kills_only(const xrun *r);
extern char exec_setup_said[700];  /* the set-up error's words ("": none) */
extern const char *exec_setup_try; /* what to try about it, or NULL      */
void exec_shell_quote(const char *s, char *out, size_t cap);
void exec_period_text(uint64_t ns, char *buf, size_t cap);
int exec_lives_too_short(const xrun *r);

/* exec_summary.c: the reproducer, the summary, the JSON */
void exec_replay_line(const xrun *r, char *buf, size_t cap);
uint64_t exec_total_violations(const xrun *r);
void exec_summary(const xrun *r, int rc, const char *replay);
int exec_write_json(const xrun *r, int rc, const char *replay);

/* exec_front.c: the front ends and the soundness floor */
void exec_front_choose(xrun *r);
int exec_guard_prepare(xrun *r, int supervised, int proto_fd);
int exec_guard_start(xrun *r);
void exec_guard_stop(xrun *r);
int exec_tree_note(xrun *r);
int exec_tree_judge(xrun *r, uint64_t cycle);

#endif /* KEEL_EXEC_INTERNAL_H */
