/*
 * writer.h -- the process torture kills: it embeds the engine, opens the
 * store and runs --threads writer threads until SIGKILL arrives.
 *
 * Each thread owns the keys K with K % threads == its number and issues one
 * operation at a time: a put, a delete, or (about one in ten) a batch of
 * 2..8 changes to distinct keys committed with keel_commit.  Every put names
 * the revision it expects (the thread knows its keys exactly), so a conflict
 * is an engine bug.  Before each commit the thread sends an INTENT record,
 * after it a DONE record with the txid (proto.h); with --unsafe
 * ack-before-commit it sends an ACK before committing instead of relying on
 * DONE.  After an error a thread stops: the handle is FAILED anyway.
 * With --compact-every the main thread calls keel_compact every period
 * (exit status 6 when one fails other than for an injected fault); with
 * --enumerate the one thread stops after TORTURE_ENUMERATE_OPS operations
 * and the writer closes the store and exits 0.  Exit statuses: 3 the open
 * failed, 4 no memory for a thread, 0 or 5 every thread stopped.
 *
 * The process is forked from the harness (no exec), so it inherits the
 * oracle's start state and sequence numbers: it starts exactly where the
 * verified store is.
 */
#ifndef TORTURE_WRITER_H
#define TORTURE_WRITER_H

#include <stdint.h>
#include <sys/types.h>

#include "keel.h"
#include "oracle.h"
#include "options.h"

typedef struct writer_plan {
	const torture_options *opt; /* flags (threads, sizes, unsafe, io)    */
	const oracle *model;        /* start states and next sequence numbers */
	const char *path;           /* the store file                         */
	uint64_t seed;              /* this cycle's workload seed             */
	int early_kill;             /* --early-kills: die right after OPENED  */
} writer_plan;

/*
 * The ONE place a writer opens the store: the fault simulator's backend
 * and engine flags (opt->io, opt->engine_flags) enter here.  The store must
 * exist (the harness creates it).  Returns a keel_err.
 */
int writer_open_store(const torture_options *opt, const char *path,
                      keel_db **out);

/* Forks the writer.  Returns 0 with *PID and *FD (the read end of its
 * record pipe, non-blocking, close-on-exec), or -1 with errno. */
int writer_spawn(const writer_plan *plan, pid_t *pid, int *fd);

#endif /* TORTURE_WRITER_H */
