/*
 * report.h -- what a torture run tells its user: the progress line while it
 * runs, the summary at the end, and the same summary as JSON (--json).
 *
 * Progress goes to stderr: on a terminal one line rewritten in place every
 * quarter second; otherwise a plain line every five seconds.  The summary
 * goes to stdout.
 */
#ifndef TORTURE_REPORT_H
#define TORTURE_REPORT_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "options.h"
#include "oracle.h"
#include "samples.h"

typedef struct report {
	uint64_t cycles;        /* kill/recover/verify cycles finished       */
	uint64_t kills;         /* writers ended by our SIGKILL              */
	uint64_t acked;         /* operations acknowledged (puts, deletes and
	                           batches; a batch counts once)             */
	uint64_t acked_changes; /* changes inside acknowledged operations    */
	uint64_t issued;        /* operations begun                          */
	uint64_t verified;      /* keys checked after recovery, all cycles   */
	uint64_t violations[ORACLE_KINDS]; /* lost, phantom, hole, order     */
	uint64_t structure;     /* keel_check problems, failed opens or reads */
	uint64_t tails_cut;     /* writer opens whose recovery cut a torn tail */
	uint64_t writer;        /* writer errors: failed commits, crashes    */
	/* the fault simulator (faults.h) */
	uint64_t power_cuts;    /* faultsim_cache_crash calls                */
	uint64_t cut_lost;      /* unsynced records a cut dropped            */
	uint64_t cut_torn;      /* writes a cut tore or filled with garbage  */
	uint64_t cut_undone;    /* creates/renames/unlinks a cut undid       */
	uint64_t faults_fired;  /* --fail faults injected                    */
	uint64_t failed_commits;/* commits that reported an injected fault   */
	uint64_t failed_opens;  /* writer opens that did                     */
	uint64_t compact_kills; /* kills that left PATH.compact behind       */
	uint64_t cuts_deferred; /* --mixed: cuts put off (faults.c, cut_now) */
	uint64_t reader_seen;   /* --readers: values readers reported      */
	uint64_t early_kills;   /* --early-kills: writers that died right
	                           after a successful open                 */
	uint64_t rot_checks;    /* --bit-rot: damaged copies read          */
	uint64_t sync_crashes;  /* --crash-on-failed-sync: writers that died
	                           at a failed sync                       */
	uint64_t rot_errors;    /* those that answered with an error       */
	uint64_t rot_hinted;    /* those damaged in a hinted commit's region,
	                           which the open must refuse             */
	uint64_t rot_pending;   /* those damaged in a pending DELTA record
	                           (format 3), which the open must refuse */
	uint64_t view_checks;   /* --snapshots: held views checked         */
	uint64_t device_views;  /* verifies of a copy holding the device's
	                           bytes (a failed sync's pages still cached) */
	uint64_t enum_steps;    /* --enumerate: I/O steps of the workload    */
	samples recovery_ns;    /* first open after each crash (read-only)   */
	samples writer_open_ns; /* each writer's open (recovery that writes) */
	samples sync_before;    /* fdatasync latency before the run          */
	samples sync_after;     /* and after it                              */
	uint64_t start_ns;      /* monotonic clock at the first cycle        */
	uint64_t elapsed_ns;    /* run time so far                           */
	char dir[PATH_MAX];     /* the store's directory                     */
	int dir_kept;           /* the directory stays after the run         */
	char first[600];        /* the first violation, in words             */
	uint64_t first_cycle;   /* the cycle it was found in                 */
	int interrupted;        /* stopped early by SIGINT or SIGTERM        */
	int no_verdict;         /* nothing acknowledged: exit 2, not a PASS   */
	/* progress line state */
	int tty;                /* stderr is a terminal                      */
	uint64_t last_progress_ns;
} report;

/* Total violations of every kind, structure and writer errors included. */
uint64_t report_violations(const report *r);

/* Prints a violation line to stderr ("torture: cycle N: KIND: WHAT") and
 * keeps the first one's words for the summary.  Counting is the caller's. */
void report_violation(report *r, const char *kind, const char *what);

/* Prints the progress line if it is due (or FORCE). */
void report_progress(report *r, const torture_options *o, uint64_t now_ns,
                     int force);

/* Prints the summary; PROG and the options make the reproducer line. */
void report_summary(report *r, const torture_options *o, const char *prog,
                    FILE *out);

/* Writes the summary as one JSON object to PATH.  0, or -1 with errno. */
int report_json(report *r, const torture_options *o, const char *path);

void report_free(report *r);

#endif /* TORTURE_REPORT_H */
