/*
 * exec_target.h -- `torture --target exec --workload CMD --checker CMD`:
 * torture for any dynamically linked program, through the LD_PRELOAD shim
 * (shim/shim.h) and the text protocol of exec_proto.h.  docs/targets.md is
 * the user's manual.
 *
 * ONE CYCLE
 *   1. run CMD (/bin/sh -c, {dir} replaced by the watched directory) in its
 *      own process group under the shim, with KEEL_TORTURE_FD on a pipe;
 *   2. at --kill-every (+- --jitter) SIGKILL the whole group, reap it, drain
 *      the pipe (what the workload said before dying is still there);
 *   3. check that no write bypassed the shim and nothing was refused;
 *   4. cut the power (--power-loss, --enumerate: faultsim_cache_crash under
 *      --device/--sector) or let the machine live on (kills only);
 *   5. run the checker, also under the shim (its recovery's writes can be
 *      undone by the next cut), and judge its "KEY VALUE" lines with the
 *      oracle; with no violation the recovered state is the next start.
 *
 * THE LIVES
 *   A cycle that acknowledged nothing tested nothing.  When more than half
 *   of at least 8 cycles at one period acknowledged nothing, one warning
 *   goes to stderr while the run goes on, and the summary says so.
 *   --kill-every auto starts at the default period and doubles it (up to
 *   TORTURE_KILL_EVERY_AUTO_MAX_NS) whenever 2 of the last 4 cycles at it
 *   acknowledged nothing; it never shortens it.  It decides on the
 *   acknowledgements alone, but they depend on timing: every change is
 *   printed, and the replay line carries the period in force.
 *
 * A SET-UP ERROR AFTER CYCLES THAT PASSED
 *   (the shim refused a call, a write bypassed it, the cache filled up, a
 *   malformed line, ...) still ends the run with exit 2, but the summary
 *   and --json report the cycles before it, then the error: its cycle,
 *   whether the workload or the checker made it, its words and what to
 *   try.  In the first cycle it is a set-up error as before (no summary).
 */
#ifndef TORTURE_EXEC_TARGET_H
#define TORTURE_EXEC_TARGET_H

#include "options.h"

/* Runs the whole torture of O->workload / O->checker; PROG is argv[0] (for
 * the replay line and to find libkeel-shim.so beside it).  Prints its own
 * summary and JSON.  Returns 0 (no violation), 1 (a violation; the
 * directory is kept) or 2 (bad usage or set-up, with a message; after
 * cycles that passed, with the summary of those and the JSON too; the
 * directory is kept). */
int exec_target_main(const torture_options *o, const char *prog);

#endif /* TORTURE_EXEC_TARGET_H */
