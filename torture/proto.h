/*
 * proto.h -- what the writer process tells the harness, over a pipe.
 *
 * Every record is one fixed-size struct written with ONE write(2) call; it is
 * smaller than PIPE_BUF, so records from concurrent writer threads never
 * interleave, and the pipe keeps their order: if record A is read before
 * record B, A's write() returned before B's began.  Data written before the
 * writer is SIGKILLed stays readable in the pipe, so the harness drains it
 * after the kill and misses nothing the writer managed to say.
 *
 * The per-operation sequence (thread T, operation SEQ):
 *   INTENT  before the commit starts: which keys change, and how
 *   ACK     only with --unsafe ack-before-commit: sent before the commit
 *   DONE    after the commit returned: rc, and the commit's txid when rc == 0
 *           (rc == 0 is the acknowledgement in the normal, safe mode)
 * Once per writer process: OPENED after keel_open returned (rc, time taken).
 * From --readers processes: SEEN, a value a reader was shown (thread and
 * seq of the operation that wrote it, change[0].key, rev), or rc != 0 when
 * a read failed or returned bytes that are not a torture value.
 */
#ifndef TORTURE_PROTO_H
#define TORTURE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_BATCH_MAX 8u /* most changes in one operation */

enum proto_kind {
	PROTO_OPENED = 1,
	PROTO_INTENT = 2,
	PROTO_ACK = 3,
	PROTO_DONE = 4,
	PROTO_SEEN = 5,
	PROTO_VIEWS = 6, /* --snapshots: COUNT more held views checked     */
};

typedef struct proto_change {
	uint32_t key; /* key number                                 */
	uint32_t len; /* value length for a put; 0 means a delete   */
} proto_change;

typedef struct proto_rec {
	uint32_t kind;   /* enum proto_kind                                 */
	uint32_t thread; /* writer thread (0 for OPENED)                    */
	uint64_t seq;    /* the thread's operation number (INTENT/ACK/DONE) */
	int32_t rc;      /* DONE, OPENED: keel_err returned                 */
	uint32_t count;  /* INTENT: changes used in change[]; OPENED: the
	                    keel_recovery_status of the open              */
	uint64_t rev;    /* DONE: the commit's txid; OPENED: txid recovered */
	uint64_t ns;     /* OPENED: nanoseconds keel_open took              */
	proto_change change[PROTO_BATCH_MAX]; /* INTENT: the changes, in order */
} proto_rec;

_Static_assert(sizeof(proto_rec) <= 512, "a record must be one atomic write");

/* Writes REC to FD in one call (retrying EINTR).  0, or -1 when the harness
 * is gone (the writer then stops). */
int proto_send(int fd, const proto_rec *rec);

/* Buffers a pipe's bytes and hands out whole records. */
typedef struct proto_reader {
	unsigned char buf[64 * sizeof(proto_rec)];
	size_t have; /* bytes in buf */
	size_t used; /* bytes already handed out */
} proto_reader;

/* Reads what FD has (non-blocking or after poll): >0 bytes read, 0 at end of
 * file, -1 when nothing was ready (EAGAIN) or on error (errno says). */
long proto_read(proto_reader *r, int fd);

/* Copies the next whole record into *REC: 1, or 0 when none is complete. */
int proto_next(proto_reader *r, proto_rec *rec);

/* Bytes of a partial record left over (nonzero after end of file means the
 * writer was killed mid-write, which one write() call never allows). */
size_t proto_pending(const proto_reader *r);

#endif /* TORTURE_PROTO_H */
