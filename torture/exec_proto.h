/*
 * exec_proto.h -- the text protocol a program under `torture --target exec`
 * speaks (docs/targets.md), and its translation into the oracle's model.
 *
 * THE WORKLOAD writes, on the descriptor whose number is in
 * KEEL_TORTURE_FD, one line per write(2) call:
 *     intent OP KEY VALUE      before it puts VALUE under KEY
 *     intent OP KEY delete     before it deletes KEY
 *     ack OP                   once its API said operation OP is durable
 * OP, KEY and VALUE are tokens of 1..255 printable bytes without spaces;
 * VALUE is the value or any token that names it (a hash), compared as a
 * string.  A KEY or VALUE of other bytes is written "hex:" and its hex, or
 * as a JSON string; each is compared by the bytes it stands for.  OP names one operation of this workload process; each OP is
 * used by one intent.
 * THE CHECKER prints the recovered state on stdout, one "KEY VALUE" line per
 * key present, and exits 0.  Its VALUE is the rest of the line: a token,
 * hex:HEX, a JSON string, or raw bytes (spaces, NULs) as it found them.
 *
 * THE MODEL.  The oracle (oracle.h) is reused as it is: every distinct KEY
 * becomes a key number, and each key its own "thread", so the operations on
 * one key are in the order their intents arrived and unrelated keys are
 * independent (no claim of ordering across keys is made).  An operation's
 * value is encoded as the self-describing value of (key, thread, seq), so
 * the oracle's lost / phantom checks apply unchanged: every acknowledged
 * operation's value, or a later intended one, must be present; a value never
 * intended for the key, or one an earlier cycle proved lost, is a phantom.
 */
#ifndef TORTURE_EXEC_PROTO_H
#define TORTURE_EXEC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "oracle.h"

#define EXEC_TOKEN_MAX 255 /* longest OP, KEY or VALUE */

typedef struct exec_model exec_model;

/* MAX_KEYS distinct keys at most (--keys).  0, or -1 (no memory). */
int exec_model_new(uint32_t max_keys, uint64_t nonce, exec_model **out);
void exec_model_free(exec_model *m);

/* Before the first cycle: KEY holds VALUE in the starting state (the
 * checker's output on the directory as it was).  0, or -1 with WHY. */
int exec_model_adopt(exec_model *m, const char *key, const char *value,
                     char *why, size_t whylen);

/* One workload line, without its newline.  0, or -1 with WHY (malformed,
 * an unknown or repeated OP, too many keys): a set-up error. */
int exec_model_line(exec_model *m, const char *line, char *why,
                    size_t whylen);

/* Operations acknowledged / issued this cycle; in the whole run. */
uint64_t exec_model_acked(const exec_model *m);
uint64_t exec_model_issued(const exec_model *m);

/* Verification of one cycle: begin, one checker line each (0, or -1 with
 * WHY when the line is not "KEY VALUE"), end.  A KEY the workload never
 * named is a phantom.  verify_end returns the number of violations, calls
 * REPORT for each (words that name the key, what was acknowledged and what
 * was found) and, with none, makes the recovered state the next start. */
void exec_model_verify_begin(exec_model *m);
int exec_model_observe(exec_model *m, const char *line, size_t len,
                       char *why, size_t whylen);
/* A checker line of the starting state, as exec_model_observe parses it,
 * handed to exec_model_adopt.  0 (also for an empty line), or -1 with WHY. */
int exec_model_adopt_line(exec_model *m, const char *line, size_t len,
                          char *why, size_t whylen);
typedef void (*exec_report_fn)(void *arg, int kind, const char *key,
                               const char *what);
uint64_t exec_model_verify_end(exec_model *m, exec_report_fn report,
                               void *arg, uint64_t counts[ORACLE_KINDS]);

/*
 * Judging a replayed crash without touching the model (torture's
 * explanation of a violation, between verify_begin and verify_end, while
 * the cycle's operations are still held).  exec_model_line_value: when
 * checker line LINE names KEY (its canonical spelling, as a report names
 * it), 1 and *VALUE (malloc'd, canonical); 0 when it names another key or
 * is empty; -1 malformed.  exec_model_judge: 1 when KEY holding VALUE
 * (NULL: absent) would be a lost or phantom value -- neither the newest
 * acknowledged operation's value nor a later intended one (with no
 * acknowledgement this cycle: the verified start value or one intended
 * this cycle) --, 0 when it would pass, -1 when KEY is unknown.  *OP (may
 * be NULL) gets the newest acknowledged operation's name, or NULL.
 */
int exec_model_line_value(const exec_model *m, const char *line, size_t len,
                          const char *key, char **value);
int exec_model_judge(const exec_model *m, const char *key, const char *value,
                     const char **op);

/* A new workload process starts: its OP names start afresh. */
void exec_model_new_process(exec_model *m);

#endif /* TORTURE_EXEC_PROTO_H */
