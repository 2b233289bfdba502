/*
 * serve_limits.h -- the limits every request must keep, written once for
 * every protocol keel-serve speaks: HTTP/1.1 (serve_conn.c), HTTP/2
 * (serve_h2.c), and a stream-based HTTP/3 the same way as HTTP/2.
 * docs/http.md "Limits" is the table of what a client sees on each.
 *
 * The protocols keep the transport: sockets, timer lists, framing, and how
 * a decision shows on the wire (408 and close, RST_STREAM, GOAWAY, 503).
 * This module keeps the numbers and makes the decisions:
 *
 *   HEADER DEADLINE  a request head (HTTP/1.1) or a header block (HTTP/2:
 *                    HEADERS until END_HEADERS) must be whole within
 *                    --header-timeout of its first byte (limits_head_due).
 *   BODY RATE        each body being received (a connection's, or a
 *                    stream's) has a struct limits_body: windows of
 *                    --header-timeout, each of which must bring
 *                    --body-min-rate x window bytes and at least one byte.
 *   CUTS             a body cut for its rate: does the connection go too
 *                    (limits_cut)?  A byte stream (HTTP/1.1) cannot skip
 *                    the rest of a body, so it closes at once; a connection
 *                    of streams closes after LIMITS_CUTS_MAX cuts (a client
 *                    that keeps doing it is not merely on a slow link).
 *   BUDGET           every request body held, over all connections and
 *                    shards, against --body-budget (limits_budget_*): a
 *                    body announced by its length is refused at once when
 *                    it would not fit now, one that grows past it as it
 *                    does (503 on either protocol).
 *   SHARES           a count held server-wide against a cap (TLS handshakes
 *                    in progress: --max-handshakes) is shared by source:
 *                    each source -- an IPv4 /24, an IPv6 /64 -- holds at
 *                    most its share (--max-handshakes-per-source), so one
 *                    source that fills the count with handshakes it never
 *                    finishes cannot shut every other client out
 *                    (limits_source_*); and when many sources together
 *                    fill it, a newcomer takes the slot of the oldest
 *                    handshake of a heavier source (limits_source_evict)
 *                    instead of being refused.  Sources are hashed into
 *                    LIMITS_SOURCES buckets under a key drawn at start: an
 *                    attacker cannot aim at a victim's bucket, and two
 *                    sources that meet in one (1 in 4096) share a share.
 *
 * CALLING SEQUENCE (one body; on the connection's shard, the budget on any
 * thread)
 *   limits_body_begin(&b, bytes, now)   a body's bytes may come from now;
 *                                       BYTES counts what arrived so far
 *   ... bytes arrive; the caller counts them ...
 *   limits_body_check(cfg, &b, bytes, now), at or after a window's end:
 *       LIMITS_WAIT   its window is not over yet: ask again later
 *       LIMITS_OK     it kept the rate: a new window began
 *       LIMITS_CUT    too slow: the caller drops the body, gives its budget
 *                     back, then asks limits_cut whether the connection goes
 *
 * Nothing here allocates, locks or reads a clock: the caller passes the
 * time (the shard's now_ms), so every decision is tested without sockets
 * (tests/test_limits.c).
 */
#ifndef SERVE_LIMITS_H
#define SERVE_LIMITS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define LIMITS_CUTS_MAX 4 /* bodies cut for their rate before a connection
                             of streams is closed too                   */

/* The decisions (return values of the functions below) */
enum limits_verdict {
	LIMITS_OK = 0,  /* within the limit                                 */
	LIMITS_WAIT,    /* not decided yet: ask again later                 */
	LIMITS_CUT,     /* cut this body (408 / RST_STREAM); its budget back */
	LIMITS_CLOSE,   /* close the connection (408 + close / GOAWAY)      */
	LIMITS_BUSY,    /* the body budget is spent: answer 503             */
	LIMITS_FULL     /* all hold the cap, this source less than its share:
	                   one of a heavier source may make room            */
};

/* The flags that set the limits (docs/http.md, the options table). */
struct limits_config {
	int header_timeout_ms;  /* --header-timeout: a head or header block,
	                           and the window of --body-min-rate       */
	uint64_t body_min_rate; /* --body-min-rate, bytes a second; 0: any
	                           byte in a window will do               */
};

/* One body's progress. */
struct limits_body {
	int64_t since_ms; /* when its current window began                 */
	uint64_t mark;    /* the caller's byte count at that moment        */
};

/* Every request body held, server-wide. */
struct limits_budget {
	_Atomic uint64_t held; /* bytes charged now                         */
	uint64_t cap;          /* --body-budget                             */
};

/* A body's first window begins at NOW_MS, with BYTES counted so far
 * (also after reading it paused: the time it was not read is not its). */
void limits_body_begin(struct limits_body *b, uint64_t bytes, int64_t now_ms);
/* Judges B's window at NOW_MS, BYTES counted by now: LIMITS_WAIT before
 * the window (--header-timeout) is over, LIMITS_OK when it brought
 * --body-min-rate x window bytes and at least one (a new window begins),
 * else LIMITS_CUT. */
int limits_body_check(const struct limits_config *cfg, struct limits_body *b,
                      uint64_t bytes, int64_t now_ms);
/* Is a head or header block that began at SINCE_MS past --header-timeout
 * at NOW_MS?  1 or 0. */
int limits_head_due(const struct limits_config *cfg, int64_t since_ms,
                    int64_t now_ms);
/* A body of a connection was cut; *CUTS counts them (start at 0).
 * STREAMS: the protocol can drop one stream's body and go on (HTTP/2,
 * HTTP/3).  Returns LIMITS_CUT (only the body goes) or LIMITS_CLOSE (the
 * connection goes too: always without streams, else at the
 * LIMITS_CUTS_MAX-th cut). */
int limits_cut(uint8_t *cuts, int streams);

/* Charges N bytes to B.  Returns LIMITS_OK, or LIMITS_BUSY (nothing
 * charged) when it would pass the cap; FORCE charges anyway (bytes that
 * were charged elsewhere a moment ago and move, e.g. into a commit). */
int limits_budget_take(struct limits_budget *b, size_t n, int force);
/* Gives N bytes charged by limits_budget_take back. */
void limits_budget_give(struct limits_budget *b, size_t n);
/* Could a body announced as ANNOUNCED bytes be held now, OWN bytes of the
 * budget being held already by the same request's connection or stream
 * (they are part of it)?  LIMITS_OK or LIMITS_BUSY.  Checked from the
 * head, so that a client is told before it sends the body. */
int limits_budget_admits(struct limits_budget *b, uint64_t announced,
                         size_t own);

/* A connection's bucket of frames that cost work without being requests
 * (HTTP/2: SETTINGS, PING, PRIORITY, RST_STREAM...; HTTP/2 and HTTP/3: a
 * stream the client resets, "rapid reset"): LIMITS_CALM_BURST of them,
 * refilled at LIMITS_CALM_RATE a second.  Empty: the connection is closed
 * (GOAWAY(ENHANCE_YOUR_CALM); CONNECTION_CLOSE(H3_EXCESSIVE_LOAD)). */
#define LIMITS_CALM_BURST 200
#define LIMITS_CALM_RATE 50

struct limits_bucket {
	double tokens; /* frames it allows now                              */
	int64_t ms;    /* when it was last refilled                         */
};

/* A full bucket at NOW_MS. */
void limits_bucket_fill(struct limits_bucket *b, int64_t now_ms);
/* One frame at NOW_MS: LIMITS_OK, or LIMITS_CLOSE when the bucket is
 * empty (nothing taken). */
int limits_bucket_take(struct limits_bucket *b, int64_t now_ms);

#define LIMITS_SOURCES 4096 /* buckets of sources (a power of two) */

/* A count held server-wide against a cap, shared by source. */
struct limits_sources {
	uint64_t key;                          /* drawn at start: the hash's */
	uint32_t cap;                          /* the whole                  */
	uint32_t share;                        /* one bucket's at most       */
	_Atomic uint32_t total;                /* what all hold now          */
	_Atomic uint32_t held[LIMITS_SOURCES]; /* what each bucket holds now */
};

/* The bucket of the peer at ADDR (a struct sockaddr of LEN bytes): its
 * IPv4 /24 or IPv6 /64 (an IPv4-mapped IPv6 address counts as IPv4),
 * hashed under S's key; anything else falls in bucket 0. */
unsigned limits_source_of(const struct limits_sources *s, const void *addr,
                          size_t len);
/* Counts one more for BUCKET: LIMITS_OK; LIMITS_BUSY (nothing counted)
 * when it holds its share already; LIMITS_FULL (nothing counted) when all
 * hold the cap and it holds less than its share. */
int limits_source_take(struct limits_sources *s, unsigned bucket);
/* Near a full cap, the one to go: of what the caller holds, the oldest of
 * the heaviest source (VICTIMS[0..N), oldest first, each a bucket) may make
 * room for a newcomer of bucket ARRIVING when its source holds more than
 * the newcomer's does -- an arrival never turns out a source no heavier
 * than its own, so a source under its share is refused only when every
 * slot is held by sources as light as it.  The index in VICTIMS of the
 * one to close, or -1 (refuse the newcomer). */
int limits_source_evict(const struct limits_sources *s, unsigned arriving,
                        const unsigned *victims, int n);
/* Gives back one counted by limits_source_take. */
void limits_source_give(struct limits_sources *s, unsigned bucket);

#endif /* SERVE_LIMITS_H */
