/*
 * run.h -- the torture loop: set the store up, then kill, recover and verify
 * until the time or cycle budget is spent or a violation is found.
 *
 * ONE CYCLE
 *   1. fork a writer (writer.h) on the verified store; it reports every
 *      intent and acknowledgement through a pipe while the harness reads;
 *   2. SIGKILL it after --kill-every (+- --jitter), reap it, and drain the
 *      pipe: what the writer wrote before dying is still there;
 *      on the fault simulator (faults.h) the power is then cut, or the
 *      pages a failed sync dropped are evicted;
 *   3. open the store READ-ONLY (so the file stays exactly as the crash left
 *      it: the crash image is what a failed run keeps), iterate a snapshot
 *      into the oracle, run keel_check, close;
 *   4. the oracle decides (oracle.h); with no violation the recovered state
 *      is the next cycle's start, and the next writer's read-write open runs
 *      recovery for real (cutting a torn tail), timed on its side.
 *   The harness never holds the store open while a writer runs: the engine
 *   allows one writer process.
 *   --enumerate runs its own loop (run_enumerate): one fixed workload per
 *   I/O step, each crashing right after that step.
 */
#ifndef TORTURE_RUN_H
#define TORTURE_RUN_H

#include "options.h"
#include "report.h"

/* Exit codes. */
#define RUN_PASS 0
#define RUN_FAIL 1
#define RUN_SETUP 2

/* Runs the whole torture; fills R (the caller prints it).  Returns RUN_PASS,
 * RUN_FAIL (a violation; the directory is kept) or RUN_SETUP (the message is
 * printed; nothing was left behind that the run created). */
int run_torture(const torture_options *o, report *r);

/* Asks a running torture to stop after the current cycle (signal-safe). */
void run_request_stop(void);

#endif /* TORTURE_RUN_H */
