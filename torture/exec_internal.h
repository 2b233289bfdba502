/*
 * exec_internal.h -- what the files of `torture --target exec` share
 * (exec_target.h is the contract): the run's state and the helpers more
 * than one of them calls.  exec_target.c runs the cycles; each part of a
 * cycle has a file of its own: exec_life.c (a program's life),
 * exec_lives.c (how long the workload lives), exec_trace.c (the calls
 * recorded), exec_crash.c (the power cut and its replays),
 * exec_violation.c (a violation's report), exec_refusal.c (set-up errors
 * and refusals), exec_front.c (who records the calls); exec_summary.c
 * reports the run.
 */
#ifndef KEEL_EXEC_INTERNAL_H
#define KEEL_EXEC_INTERNAL_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
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
/* The harness's history of the shim's ring (xrun.hist_calls, hist_proto). */
#define HIST_CALLS 4096 /* calls the report can name                    */
#define HIST_PROTO 2048 /* protocol lines kept to place the acks among them */

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

/* A 64-bit mixer: the seeds of each cycle's kill, power cut and faults,
 * drawn from --seed and the cycle. */
static inline uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* The seccomp guard's and the supervisor's refusals are told apart from
 * the shim's by their start. */
#define GUARD_SAYS "guard: "
#define SUPERVISOR_SAYS "supervisor: "
#define TRY_UNSEEN "run it where the kit sees its calls (a dynamically " \
	"linked build, without io_uring), or name the file in --volatile " \
	"if the program never needs it after a crash: docs/faults.md, " \
	"\"What the kit sees\""
#define TRY_BYPASS "find what writes around libc (a raw system call, " \
	"io_uring, a libc-internal call), or let the supervisor record it " \
	"(--front-end supervisor): docs/faults.md, \"Writes that bypass the " \
	"wrappers\""
#define TRY_OVERFLOW "more room (--cache-mib), or fewer writes between two " \
	"power cuts: a shorter " \
	"--kill-every, or kills alone (no --power-loss, --fail)"

/* A program's output, line by line: FN gets each whole line; 0, or -1
 * with WHY (LEN bytes) saying what is wrong with it. */
typedef int (*line_fn)(xrun *r, const char *line, size_t n, char *why,
                       size_t len);

/* How a workload's life ended (exec_run_workload). */
typedef struct wresult {
	int status;       /* the leader's wait status                        */
	int exited;       /* it ended before its kill                        */
	int lines;        /* protocol lines read                              */
} wresult;

/* A cycle's violations as the checker's answers are judged
 * (exec_on_violation's argument). */
typedef struct vctx {
	xrun *r;
	uint64_t cycle;
	int printed;
} vctx;

/* exec_target.c: the driver */
int exec_kills_only(const xrun *r);
void exec_shell_quote(const char *s, char *out, size_t cap);

/* exec_refusal.c: set-up errors and refusals */
int exec_setup_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a set-up error that comes with what to try (HINT, one of TRY_*) */
int exec_setup_refusal(const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
extern char exec_setup_said[700];  /* the set-up error's words ("": none) */
extern const char *exec_setup_try; /* what to try about it, or NULL      */
int exec_refused(xrun *r);

/* exec_life.c: a program's life */
pid_t exec_spawn(xrun *r, const char *cmd, int proto_fd, int out_fd,
                 uint64_t seed, uint64_t cycle);
int exec_kill_group(pid_t pid, int *status, int reaped);
void exec_log_tail(xrun *r);
void exec_log_reset(xrun *r);
int exec_checker_line(xrun *r, const char *line, size_t n, char *why,
                      size_t len);
int exec_adopt_line(xrun *r, const char *line, size_t n, char *why,
                    size_t len);
int exec_run_workload(xrun *r, uint64_t cycle, uint64_t seed,
                      uint64_t kill_at, wresult *w);
int exec_run_checker(xrun *r, uint64_t cycle, line_fn fn, char *failed,
                     size_t failed_len);

/* exec_lives.c: how long the workload lives */
uint64_t exec_kill_delay(const xrun *r, uint64_t cycle);
void exec_period_text(uint64_t ns, char *buf, size_t cap);
int exec_lives_too_short(const xrun *r);
void exec_lives_observe(xrun *r, uint64_t cycle);

/* exec_trace.c: the calls recorded */
void exec_trace_drain(xrun *r, int final);
void exec_trace_mark(xrun *r, const char *say, uint64_t cycle, int fresh);
void exec_trace_keep(xrun *r, char *path, size_t cap);
void exec_ring_snapshot(xrun *r);

/* exec_crash.c: the power cut and its replays */
int exec_after_workload(xrun *r, uint64_t cycle);
void exec_after_checker(xrun *r);
void exec_explain_violation(xrun *r, uint64_t cycle, const char *key);

/* exec_violation.c: a violation's report */
void exec_on_violation(void *arg, int kind, const char *key,
                       const char *what);
void exec_structure_violation(xrun *r, uint64_t cycle, const char *what);
void exec_availability_violation(xrun *r, uint64_t cycle);

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
