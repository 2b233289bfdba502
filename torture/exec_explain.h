/*
 * exec_explain.h -- why a power cut lost an acknowledged write, for
 * `torture --target exec` (docs/targets.md, "Reading a violation").
 *
 * CALLING SEQUENCE (exec_target.c)
 *   before each power cut:  explain_dir_save(dir, cap, &saved, ...)
 *                           faultsim_cache_snapshot(cache, &snap)
 *                           faultsim_cache_crash_explain(..., &x, ...)
 *                           -- x.dropped: what the cut dropped
 *   on the first violation: explain_minimise(dropped, n, test, arg, ...)
 *     where TEST restores the directory (explain_dir_restore) and the
 *     cache (faultsim_cache_restore + faultsim_cache_remap), crashes with
 *     the seqs it is given kept whole, runs the checker and judges the key
 *     without consuming the cycle (exec_model_judge);
 *   then explain_describe() for each record of the cause.
 *
 * The minimisation is hierarchical delta debugging over the records the
 * cut dropped: Zeller's ddmin over their groups (by directory, by file,
 * then a file's namespace operations apart from its data), then over the
 * records left (every subset when there are 4 or fewer), bounded in
 * tests; it never
 * invents a cause: when the full crash does not reproduce the violation,
 * or keeping every dropped record does not remove it, it says so.
 */
#ifndef TORTURE_EXEC_EXPLAIN_H
#define TORTURE_EXEC_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "faultsim.h"
#include "shim.h"

#define EXPLAIN_DIR_CAP (256ull << 20) /* bytes of the directory copied     */
#define EXPLAIN_MAX_TESTS 100          /* replays one explanation may make */
#define EXPLAIN_MAX_DROPPED 16384      /* dropped records considered       */

/* ---- a copy of the watched directory ---------------------------------- */

typedef struct explain_dir explain_dir;

/* Copies DIR (regular files, directories, symbolic links; hard links kept
 * as links) into a new temporary directory.  0 and *OUT; 1 when DIR holds
 * more than CAP bytes (nothing kept, WHY says so); -1 with WHY. */
int explain_dir_save(const char *dir, uint64_t cap, explain_dir **out,
                     char *why, size_t whylen);
/* Empties DIR and puts the copy back.  The files are new inodes:
 * OLD_INO/NEW_INO (explain_dir_inodes) map the saved ones to them.
 * 0, or -1 with errno. */
int explain_dir_restore(explain_dir *d, const char *dir);
size_t explain_dir_inodes(const explain_dir *d, const uint64_t **old_ino,
                          const uint64_t **new_ino);
uint64_t explain_dir_bytes(const explain_dir *d);
/* Removes the copy.  NULL: no-op. */
void explain_dir_free(explain_dir *d);

/* ---- the minimisation ----------------------------------------------------- */

/* One replay: the crash with every dropped record whose seq is in
 * PERSIST[0..N) kept whole.  1: the violation is there; 0: it is not;
 * -1: the replay could not be made (the minimisation stops). */
typedef int (*explain_test_fn)(void *arg, const uint64_t *persist, size_t n);

enum explain_status {
	EXPLAIN_FOUND = 0,        /* CAUSE is a 1-minimal set                  */
	EXPLAIN_NO_REPRO = 1,     /* the full crash replayed passed            */
	EXPLAIN_NOT_DROPS = 2,    /* keeping every dropped record still fails  */
	EXPLAIN_BUDGET = 3,       /* out of tests: CAUSE still fails, may not
	                             be minimal                               */
	EXPLAIN_ERROR = 4,        /* a replay could not be made                */
};

/* Minimises the N records of DROPPED (seqs) to a smallest set whose loss
 * alone still fails.  CAUSE gets indexes into DROPPED (N entries of room),
 * *NCAUSE their count, *TESTS the replays made (at most MAX_TESTS). */
enum explain_status explain_minimise(const faultsim_dropped *dropped,
                                     size_t n, explain_test_fn test,
                                     void *arg, unsigned max_tests,
                                     size_t *cause, size_t *ncause,
                                     unsigned *tests);

/* ---- words ---------------------------------------------------------------- */

/* One record of the cause, for a human: the call that made it (found in
 * RING[0..NRING) by its seq), the arguments that matter, where it stands
 * against the syncs, the missing step, and the call site (addr2line on the
 * module the shim noted in CTL).  DIR: the watched directory (paths are
 * said relative to it).  ACKED_OP (or NULL): the operation whose loss is
 * explained; where its "ack" line fell among the calls is said when the
 * workload wrote it with write(2).  Written to OUT, indented. */
void explain_describe(FILE *out, const faultsim_dropped *d,
                      const shim_call *ring, uint64_t nring,
                      const shim_shared *ctl, const char *dir,
                      const char *acked_op);

/* One trace line for call C (ring index I): what the trace file holds. */
void explain_trace_line(FILE *out, const shim_call *c, const shim_shared *ctl,
                        int killed);

#endif /* TORTURE_EXEC_EXPLAIN_H */
