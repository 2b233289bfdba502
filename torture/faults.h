/*
 * faults.h -- torture on the fault simulator (faultsim/faultsim.h): the
 * writer's I/O goes through faultsim's volatile-cache backend, and after
 * each writer dies the harness either cuts the power (--power-loss,
 * --enumerate) or lets the machine live on (the page cache survives, only
 * what a failed sync dropped is gone).
 *
 * CALLING SEQUENCE
 *     options_parse(&o, ...);
 *     faults_setup(&o);               // before anything is created or forked
 *     ... fork a writer, SIGKILL it (or it kills itself), waitpid ...
 *     faults_after_writer(o.faults, cycle, &r);   // the power cut, or not
 *     ... verify ...
 *     faults_free(o.faults);
 *
 * Without --power-loss, --enumerate or --fail nothing is set up: the writer
 * uses the POSIX backend and faults_after_writer is never called.
 */
#ifndef TORTURE_FAULTS_H
#define TORTURE_FAULTS_H

#include <stdint.h>

#include "options.h"
#include "report.h"

typedef struct torture_faults torture_faults;

/*
 * faults_setup - when O asks for the simulator, create the shared cache and
 * fault state, add every --fail spec and point O->io at the backend;
 * O->faults gets the handle (NULL when nothing was asked for).  0, or -1
 * after a message naming the problem (a malformed --fail spec, no memory):
 * exit 2, nothing on disk was touched.
 */
int faults_setup(torture_options *o);

/*
 * faults_after_writer - the writer of cycle CYCLE is dead (reaped); OPENED
 * says it reported a successful keel_open.  With power loss (every kill, or
 * under --mixed the kills drawn for it): faultsim_cache_crash under
 * --device/--sector, seeded from the run's seed and the cycle, counted
 * into R.  Under --mixed without --fail, the other kills leave every record
 * (dirty pages stay undoable by a later cut); a cut drawn for a writer that
 * did not report OPENED after such a kill is deferred (see faults.c).
 * Otherwise, without a cut: the pages a
 * failed sync dropped are evicted (the next reader sees what the disk
 * holds) and the rest is taken as written back; under --cache-lives, after
 * every other writer, the rest is written back and the LOST pages stay
 * readable (faults_device_view).  Then the next writer
 * gets fresh fault state (call counts from zero, so nth=N is the Nth call
 * of each writer; p= decisions seeded per cycle from --seed, the same for
 * every run under --enumerate).  0, or -1 after a message: the simulator could not
 * do its job (its cache filled up, a file could not be rewritten) -- a
 * set-up error, never a finding.
 */
int faults_after_writer(torture_faults *f, uint64_t cycle, int opened,
                        report *r);

/*
 * faults_device_view - the verify reads what the device holds, as the next
 * writer's recovery does, not what only the page cache holds: when the
 * cache still has pages a failed sync LOST for the file at PATH (under
 * --cache-lives), COPY is made with the device's bytes and 1 is returned
 * (verify COPY); 0 when the file holds what the device holds (verify
 * PATH); -1 after a message (a set-up error).  F may be NULL (0).
 */
int faults_device_view(torture_faults *f, const char *path,
                       const char *copy);

/* --enumerate: the next writer kills itself right after its Nth I/O step
 * (0 = never); the steps the last writer made; everything recorded taken
 * as durable (after the reference run). */
void faults_kill_after(torture_faults *f, uint64_t n);
uint64_t faults_steps(const torture_faults *f);
void faults_forget(torture_faults *f);

/* True when an injected error is what a failure the engine reported
 * (keel_err RC) can stand for: KEEL_EIO, KEEL_ENOSPC, and the codes the
 * other injectable errnos map to.  Only meaningful with --fail. */
int faults_expected_error(int rc);

void faults_free(torture_faults *f);

#endif /* TORTURE_FAULTS_H */
