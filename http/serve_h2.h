/*
 * serve_h2.h -- HTTP/2 for keel-serve's connections, through nghttp2
 * (docs/http.md "HTTP/2").  nghttp2 does the framing, HPACK, flow control
 * and the protocol's state machine; this module feeds it a connection's
 * bytes, turns each complete request into a struct http_request for
 * serve_handle() (serve_req.c, the same code as HTTP/1.1) and turns the
 * answer that queues into a response on the request's stream.
 *
 * WHEN
 *   h2 over TLS when ALPN picked "h2" (serve_tls.c offers h2, then
 *   http/1.1); h2c on a plain port when a connection opens with the
 *   client preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", prior knowledge).
 *   Anything else stays HTTP/1.1 (serve_conn.c, conn_protocol_tls and
 *   conn_protocol_plain).
 *
 * CALLING SEQUENCE (all on the connection's shard)
 *   h2_start(c) once the protocol is known; h2_input(c) in place of the
 *   HTTP/1.1 reader; h2_flush(c) in place of serve_conn_flush's writer
 *   (it also sends answers whose commit finished); h2_stop(c) on SIGTERM
 *   (GOAWAY, then the streams in flight drain); h2_input_blocked(c) says
 *   whether reading must pause; h2_free(c) from conn_close.
 *
 * ANSWERS
 *   While serve_handle runs for a stream, serve_out_new() hands its
 *   answer to h2_out_attach() instead of the HTTP/1.1 queue.  The answer's
 *   head is the one serve_req.c builds for HTTP/1.1; h2_submit turns its
 *   lines into header fields (lowercased, without Connection).  An answer
 *   waiting for its commit (a durable PUT) holds only its own stream:
 *   other streams are read and answered meanwhile.  A stream the client
 *   resets while its commit is in flight stays held until the commit
 *   answers, then goes.
 *
 * GET BODIES
 *   A body of H2_NOCOPY_MIN bytes or more goes out with
 *   NGHTTP2_DATA_FLAG_NO_COPY: each DATA frame is written from the
 *   mapping (writev, or SSL_write) after the frame header.  What the
 *   socket does not take at once is copied into the connection's output
 *   buffer (one frame at most), so the view can be released when the
 *   stream closes.  Smaller bodies are copied into nghttp2's frame.
 *
 * LIMITS AND DEFENCES (the values below; docs/http.md lists them)
 *   SETTINGS_MAX_CONCURRENT_STREAMS H2_MAX_STREAMS, and at most
 *   H2_STREAMS_HELD streams held (open or waiting for a commit): more are
 *   refused with RST_STREAM(REFUSED_STREAM).  Receive windows
 *   H2_STREAM_WINDOW per stream, H2_CONN_WINDOW per connection.  A
 *   request body counts against --max-body (413) and --body-budget
 *   (503), as over HTTP/1.1.  A header list over H2_HEADER_LIST_MAX is
 *   answered 431.  The body of a request refused early (413, 401...)
 *   is dropped as it comes, up to H2_DROP_MAX, then RST_STREAM(NO_ERROR)
 *   asks the client to stop.  A header block that decodes to more than
 *   H2_HEADER_BOMB (an HPACK bomb) ends the connection with
 *   GOAWAY(ENHANCE_YOUR_CALM).  Frames that cost work without being
 *   requests (SETTINGS, PING, PRIORITY, RST_STREAM, empty DATA, frames
 *   nghttp2 refuses, streams refused) draw on a token bucket of
 *   H2_CALM_BURST refilled at H2_CALM_RATE a second; an empty bucket is
 *   GOAWAY(ENHANCE_YOUR_CALM); WINDOW_UPDATEs draw on it too, beyond
 *   the two each DATA frame we sent calls for.  nghttp2's own limits are
 *   set too: CONTINUATION frames per header block (H2_MAX_CONTINUATIONS),
 *   SETTINGS entries per frame, queued ACKs (H2_MAX_OUTBOUND_ACK), and its
 *   stream reset rate limit (above ours: H2_NGHTTP2_RESET_BURST).  The
 *   limits HTTP/1.1 has are serve_limits.h's, per stream: a header block
 *   not whole within --header-timeout is GOAWAY(ENHANCE_YOUR_CALM); a
 *   body slower than --body-min-rate is RST_STREAM(CANCEL), its budget
 *   given back, and the LIMITS_CUTS_MAX-th such stream of a connection is
 *   GOAWAY(ENHANCE_YOUR_CALM); an idle connection is sent GOAWAY(NO_ERROR)
 *   before it closes.  A HEADERS on a stream id below one already used is
 *   GOAWAY(PROTOCOL_ERROR) (RFC 9113 5.1.1), unless the stream is open
 *   (trailers) or one of the last H2_RESET_MEMORY we reset (trailers that
 *   crossed our RST_STREAM).  Output: nghttp2's queue holds frames for
 *   answers already made, and reading pauses while the output buffer
 *   (H2_WBUF) cannot be written.  Listings not yet sent are bounded by
 *   SERVE_QUEUED_MAX as over HTTP/1.1, but a listing past it is answered
 *   503 instead of pausing reads (which would also hold back the
 *   client's WINDOW_UPDATEs, the only thing that lets them drain).
 */
#ifndef SERVE_H2_H
#define SERVE_H2_H

#include <stddef.h>
#include <stdint.h>
#include "serve_limits.h"

#define H2_MAX_STREAMS 100          /* SETTINGS_MAX_CONCURRENT_STREAMS      */
#define H2_STREAMS_HELD 200         /* open plus reset-while-committing     */
#define H2_STREAM_WINDOW (256 * 1024) /* SETTINGS_INITIAL_WINDOW_SIZE       */
#define H2_CONN_WINDOW (1024 * 1024)  /* the connection's receive window    */
#define H2_HEADER_LIST_MAX 16384    /* SETTINGS_MAX_HEADER_LIST_SIZE; 431   */
#define H2_HEADER_BOMB (64 * 1024)  /* decoded bytes in one header block
                                       before GOAWAY                        */
#define H2_MAX_CONTINUATIONS 8      /* CONTINUATION frames per block        */
#define H2_MAX_OUTBOUND_ACK 100     /* SETTINGS/PING ACKs queued            */
#define H2_CALM_BURST LIMITS_CALM_BURST /* control frames before the rate
                                       counts (serve_limits.h)              */
#define H2_CALM_RATE LIMITS_CALM_RATE /* control frames a second after that */
#define H2_NOCOPY_MIN 4096          /* DATA from the mapping from this size  */
#define H2_WBUF (32 * 1024)         /* a connection's output buffer         */
#define H2_IDLE_PAGES_MS 500        /* idle this long: the frame buffer's
                                       pages are dropped (h2_sweep)        */
#define H2_DROP_MAX (16u << 20)     /* body bytes dropped after a refusal
                                       before RST_STREAM(NO_ERROR)          */
#define H2_NGHTTP2_RESET_BURST 1000 /* nghttp2's own RST_STREAM bucket: */
#define H2_NGHTTP2_RESET_RATE 100   /* above ours (H2_CALM_*), so ours, with
                                       ENHANCE_YOUR_CALM, always fires first
                                       (burst - rate >= H2_CALM_BURST)      */
#define H2_UPDATES_EARNED_MAX 1024  /* WINDOW_UPDATEs owed for our DATA
                                       frames, at most                      */
#define H2_RESET_MEMORY 16          /* streams we reset lately, on which a
                                       HEADERS (crossed trailers) is not a
                                       connection error                     */

struct serve_conn;
struct serve_out;

/* Makes C an HTTP/2 connection (server session, our SETTINGS queued).
 * Returns 0, or -1 when out of memory (the caller closes C). */
int h2_start(struct serve_conn *c);
/* Reads C until EAGAIN (or until reading must pause), feeding nghttp2
 * and answering complete requests. */
void h2_input(struct serve_conn *c);
/* Feeds BUF[0..LEN), bytes read from C, to nghttp2, then h2_flush (the
 * first bytes of an h2c connection, read before it was known to be one;
 * C may be closed after it). */
void h2_feed(struct serve_conn *c, const char *buf, size_t len);
/* Submits answers that became ready, writes what nghttp2 has to send,
 * and ends C when its session is over. */
void h2_flush(struct serve_conn *c);
/* Must C stop reading (output cannot drain, GOAWAY decided)? */
int h2_input_blocked(const struct serve_conn *c);
/* The timer C must be on (enum serve_timer): HEAD while a header block
 * is open, BODY while request bodies are coming, else IDLE (also while
 * reading is paused: the bodies' windows begin again after it). */
int h2_timer_wanted(struct serve_conn *c);
/* C's timer TIMER is due: HEAD: a header block past --header-timeout ends
 * the connection (GOAWAY(ENHANCE_YOUR_CALM)); BODY: bodies slower than
 * --body-min-rate are reset (RST_STREAM(CANCEL)), the connection ends at
 * LIMITS_CUTS_MAX of them (GOAWAY(ENHANCE_YOUR_CALM)); IDLE: GOAWAY(NO_ERROR)
 * and close, unless a commit is in flight.  Returns the timer C goes on
 * next, or -1 when it is closed or closing (serve_limits.h). */
int h2_expire(struct serve_conn *c, int timer);
/* From the shard's sweep: drops the frame-buffer pages of the HTTP/2
 * connections of SH idle for H2_IDLE_PAGES_MS. */
struct serve_shard;
void h2_sweep(struct serve_shard *sh);
/* SIGTERM: GOAWAY once, then C closes when its streams are done. */
void h2_stop(struct serve_conn *c);
/* Takes O as the answer to the stream being handled.  Returns 0, or -1
 * when no stream is being handled (O is then the caller's to free). */
int h2_out_attach(struct serve_conn *c, struct serve_out *o);
/* Frees C's session, streams and their answers (conn_close). */
void h2_free(struct serve_conn *c);
/* Is P[0..N) the client preface?  1 when it is all there, 0 when P is a
 * shorter prefix of it (wait for more), -1 when it is not the preface. */
int h2_preface(const char *p, size_t n);

#endif /* SERVE_H2_H */
