/*
 * oracle.h -- decides whether a recovered store is one the writer could have
 * left behind.  Two-sided: nothing acknowledged may be missing, and nothing
 * may be present that the writer's program order and the commit order rule
 * out.  docs/torture.md explains the reasoning; this is the contract.
 *
 * MODEL
 *   Key K belongs to writer thread K % threads (value.h), and a thread issues
 *   operation SEQ+1 only after operation SEQ returned, so the changes to a
 *   thread's keys happen in its program order.  An operation is one put, one
 *   delete or a batch of up to PROTO_BATCH_MAX changes to distinct keys.  The
 *   oracle keeps, per key, the state verified at the end of the last cycle
 *   (the START state) and, per thread, the operations issued this cycle.
 *
 * CALLING SEQUENCE (one cycle)
 *     oracle_record(o, &rec)      for every record the writer sent
 *     oracle_verify_begin(o, T)   T = the recovered head's txid
 *     oracle_observe(o, ...)      for every key/value the store holds
 *     n = oracle_verify_end(o, report, arg)
 *   When n == 0 the recovered state becomes the next cycle's start state.
 *
 * WHAT IS A VIOLATION (checked by oracle_observe and oracle_verify_end)
 *   PHANTOM  a key or value that was never written: not a torture key, a
 *            value that does not decode (torn, garbage), a value of another
 *            run, key or thread, an operation that was never issued, a
 *            change that operation did not make, a length that differs, a
 *            byte that differs, or a value of an operation that an earlier
 *            cycle proved lost (resurrected).
 *   LOST     a key shows a state older than the last acknowledged operation
 *            that touched it (or than the state verified last cycle), or a
 *            thread's recovered prefix lacks an operation whose value a
 *            reader process was shown (SEEN: readers see only what is
 *            durable, so nothing they saw may be rolled back).
 *   HOLE     a thread's recovered keys are not the state after any prefix of
 *            its operations (a later operation is visible while an earlier
 *            one is not, or a batch applied in part).
 *   ORDER    revisions contradict the commit order: a revision above the
 *            recovered head, a revision that differs from the txid the
 *            commit returned, two changes of one batch with different
 *            revisions, revisions that do not grow along a thread's program
 *            order, or an operation that began after another one returned
 *            yet holds a smaller txid.
 */
#ifndef TORTURE_ORACLE_H
#define TORTURE_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "value.h"

typedef struct oracle oracle;

enum oracle_kind {
	ORACLE_LOST = 0,
	ORACLE_PHANTOM = 1,
	ORACLE_HOLE = 2,
	ORACLE_ORDER = 3,
	ORACLE_KINDS = 4,
};

/* Words for a kind: "lost", "phantom", "hole", "order". */
const char *oracle_kind_name(int kind);

/* Called once per violation with a one-line description (no newline). */
typedef void (*oracle_report_fn)(void *arg, int kind, const char *what);

/* A key's verified state, as the writer needs it for its expectations. */
typedef struct oracle_key_state {
	int present;   /* 1 when the key exists                           */
	uint64_t rev;  /* its revision when present                        */
	value_id id;   /* what its value is when present                   */
} oracle_key_state;

/* KEYS >= THREADS >= 1; NONCE marks this run's values.  0 or -1 (ENOMEM). */
int oracle_new(uint32_t keys, uint32_t threads, uint64_t nonce,
               oracle **out);
void oracle_free(oracle *o);

uint32_t oracle_keys(const oracle *o);
uint32_t oracle_threads(const oracle *o);
uint64_t oracle_nonce(const oracle *o);

/* The start state of key K (valid until the next oracle_verify_end). */
const oracle_key_state *oracle_key(const oracle *o, uint32_t k);

/* The sequence number the thread's next operation must carry: operation
 * numbers are never reused, so a value from an operation that was lost can
 * never be mistaken for a later one. */
uint64_t oracle_next_seq(const oracle *o, uint32_t thread);

/*
 * Adopts an entry of an existing store as start state (before any cycle,
 * for --dir on a store from an earlier run).  0, or -1 with *WHY when the
 * entry is not something torture could have written for this key space.
 */
int oracle_adopt(oracle *o, const void *key, size_t klen, const void *val,
                 size_t vlen, uint64_t rev, const char **why);

/* Feeds one writer record.  0, or -1 with *WHY when the record breaks the
 * protocol (out of order, unknown thread or key): a harness bug. */
int oracle_record(oracle *o, const proto_rec *rec, const char **why);

/* Operations acknowledged / issued since the last oracle_verify_end. */
uint64_t oracle_acked(const oracle *o);
uint64_t oracle_issued(const oracle *o);

/* Starts checking a recovered store whose head has txid HEAD_TXID. */
void oracle_verify_begin(oracle *o, uint64_t head_txid);

/* One entry of the recovered store, in any order.  Value checks happen here
 * (the bytes need not outlive the call); violations are reported through
 * oracle_verify_end. */
void oracle_observe(oracle *o, const void *key, size_t klen, const void *val,
                    size_t vlen, uint64_t rev);

/* Finishes the check, reports every violation (up to a bounded number of
 * lines; the count returned is exact per kind in COUNTS when not NULL), and
 * returns how many there were.  With none, the recovered state becomes the
 * start state of the next cycle. */
uint64_t oracle_verify_end(oracle *o, oracle_report_fn report, void *arg,
                           uint64_t counts[ORACLE_KINDS]);

#endif /* TORTURE_ORACLE_H */
