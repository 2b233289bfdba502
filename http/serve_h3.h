/*
 * serve_h3.h -- keel-serve's HTTP/3 (RFC 9114) over QUIC v1 (RFC 9000):
 * QUIC through ngtcp2 with TLS 1.3 from GnuTLS (ngtcp2_crypto_gnutls),
 * HTTP/3 framing and QPACK through nghttp3.  docs/http.md "HTTP/3" says
 * what clients see.
 *
 * WHERE IT RUNS
 *   With --tls-cert/--tls-key (and without --no-http3) every shard also
 *   has a UDP socket bound to the TCP port (SO_REUSEPORT, so the kernel
 *   keeps a client's datagrams on one shard), on the shard's epoll.  A
 *   QUIC connection is a struct serve_conn with c->h3 and no socket of
 *   its own (fd -1): it is counted against --max-conns, sits on the idle
 *   timer list only so that shutdown and conn_close treat it as any other
 *   connection, and its real timers are ngtcp2's (h3_timers).
 *
 * A REQUEST'S PATH
 *   Datagram -> h3_input: the Destination Connection ID finds the
 *   connection in the shard's table (an Initial that ngtcp2_accept likes
 *   makes a new one; anything else unknown is dropped) -> ngtcp2 ->
 *   stream data to nghttp3 -> on_end_stream: serve_handle(), as HTTP/2
 *   does it, with h3_out_attach taking the answer for the stream.  A PUT
 *   or DELETE's answer waits for its commit's completion (serve.h, WHAT A
 *   PUT'S ANSWER MEANS); h3_flush submits it once ready.  A GET's body
 *   is handed to nghttp3 as a pointer into the keel_view: QUIC keeps
 *   unacknowledged stream data by reference, so the view is released
 *   when the client has acknowledged the whole body (on_acked), or with
 *   the stream.
 *
 * BOUNDS
 *   Connections: --max-conns (with TCP).  Per connection: H3_MAX_STREAMS
 *   bidirectional streams at a time, H3_STREAMS_HELD including those
 *   kept for a commit; H3_STREAM_WINDOW and H3_CONN_WINDOW bytes in
 *   flight (request bodies are credited back only as they are buffered,
 *   charged to --body-budget); header fields past H3_HEADER_LIST_MAX get
 *   431.  Deadlines: the handshake must finish within --header-timeout,
 *   and --idle-timeout is QUIC's max_idle_timeout; a request's header
 *   section and body keep --header-timeout and --body-min-rate per
 *   stream, as over HTTP/2 (h3_sweep, serve_limits.h).
 *
 * MEMORY
 *   A connection's GnuTLS session is freed once the handshake is over
 *   and its session ticket sent (QUIC's keys are ngtcp2's; CRYPTO data
 *   after it is a protocol violation), and QPACK's dynamic tables are
 *   off both ways.  The ticket costs about 4 KB a connection that
 *   ngtcp2 allocates for it and keeps to the end.  With KEEL_H3_MEMSTAT
 *   in the environment ngtcp2 and nghttp3 allocate through counting
 *   allocators and each shard prints what they hold.  docs/http.md
 *   "HTTP/3" has the figures, and why they stay above an HTTP/2
 *   connection's.
 *
 * SESSION TICKETS AND 0-RTT
 *   Each connection gets one session ticket as its handshake completes
 *   (h3_tls_release), sealed with one key for the whole server, made from
 *   getrandom at start and never written: a ticket resumes only in the
 *   process that issued it (GnuTLS rotates the key it derives from that
 *   one by itself; the master key is not rotated).  A resumed handshake
 *   may bring early data (0-RTT, RFC 9001 4.6) unless --no-0rtt; the
 *   transport parameters a client remembered with its ticket (RFC 9000
 *   7.4.1) are those of that same process, the H3_* constants below, so
 *   never higher than the ones in force.  GnuTLS's anti-replay (RFC 8446
 *   8.2) is on: a ClientHello whose early data was taken is remembered
 *   for its 10 s window (plus H3_REPLAY_SLACK_S) in one store for all
 *   shards, and the same again gets no early data; nor does a ticket
 *   made before the window last moved (GnuTLS's rule), nor any when the
 *   store's slots for it are full.  Whatever is let through: a request
 *   other than GET or HEAD whose header section is whole before the
 *   handshake completed is answered 425 Too Early (RFC 8470) and its
 *   body dropped, so that a replayed PUT or DELETE never commits.  A
 *   replayed flight never completes a handshake, so all of its requests
 *   meet that rule.
 *
 * ADDRESS VALIDATION (RFC 9000 8.1)
 *   Until a client's address is proven ngtcp2 sends at most three times
 *   the bytes it received from it (the anti-amplification limit is
 *   ngtcp2's own).  A shard with H3_HANDSHAKES_MAX connections (or a
 *   quarter of --max-conns, if fewer) still in their handshake, as under
 *   a flood of Initials from spoofed sources, answers new Initials with a
 *   Retry instead of a connection: no state, a token sealed with a key of
 *   this process that binds the client's address and first DCID for
 *   H3_RETRY_TOKEN_S seconds (--h3-retry always: every Initial).  An
 *   Initial that brings a valid token makes a connection whose transport
 *   parameters carry the original DCID and the Retry's SCID; a bad token
 *   gets a stateless INVALID_TOKEN close.
 *
 * UNKNOWN PACKETS
 *   A datagram that is not QUIC is dropped; a long-header packet of 1200
 *   bytes or more in another version than v1 gets a Version Negotiation
 *   packet listing v1 (h3_version_negotiate, counted with the stateless
 *   resets); an unknown long-header packet makes a connection only when
 *   ngtcp2_accept takes it as an Initial; an unknown short-header packet
 *   gets a stateless reset (h3_stateless_reset: smaller than it,
 *   H3_RESETS_MAX a sweep per shard).
 *
 * CLOSING (RFC 9000 10.2.1)
 *   A connection the server closes with a CONNECTION_CLOSE (an error, a
 *   limit, SIGTERM) keeps, for 3 PTO and at least 1 s, a closing record:
 *   its connection IDs and that datagram, sent again to packets that
 *   still come for it (to the 1st, 2nd, 4th, 8th... and never more than
 *   3 times their bytes), not a stateless reset; everything else of it
 *   is freed at once.  Idle and handshake timeouts close silently, and a
 *   connection the client closed drains silently (RFC 9000 10.1, 10.2.2).
 *   At SIGTERM the process ends once its connections are closed, and
 *   the closing records with it.
 *
 * SENDING
 *   A connection writes once per batch of datagrams read (h3_input: a
 *   run of acknowledgements from one client opens its window once, not
 *   per datagram), after a timer, and after a completion.  Its datagrams
 *   go in batches of up to 40 of one size along one path in one sendmsg
 *   with UDP_SEGMENT (GSO: the kernel cuts them), one datagram a call on
 *   a socket whose kernel refused it (EIO, EINVAL).  Datagrams are 1200
 *   bytes until ngtcp2's path MTU discovery proves 1452 (IPv4 in a
 *   1500-byte MTU); a 1 MiB answer takes about 30 sendmsg calls, not 900.
 *   The socket has UDP_GRO: datagrams of one flow the kernel joined
 *   come in one recvmsg, and h3_input cuts them apart again.
 *   Pacing starts once the handshake is done (ngtcp2 0.12 would pace
 *   the first flight at its 333 ms RTT guess: ~23 ms a new connection).
 *
 * HANDSHAKES are counted with TLS over TCP against --max-handshakes and
 * each source's share of them (serve_limits.h, SHARES), from the Initial
 * that makes a connection until its handshake is done or it is dropped;
 * a stream the client resets or stops draws on the connection's bucket
 * (serve_limits.h; rapid reset: H3_EXCESSIVE_LOAD); the client's control
 * stream is checked where nghttp3 does not (h3_control.h).  SIGHUP
 * reloads the certificate for new handshakes (h3_cert_reload).
 */
#ifndef SERVE_H3_H
#define SERVE_H3_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define H3_MAX_STREAMS 100            /* initial_max_streams_bidi          */
#define H3_STREAMS_HELD 200           /* open plus kept for a commit       */
#define H3_STREAM_WINDOW (256 * 1024) /* initial_max_stream_data_*         */
#define H3_CONN_WINDOW (1024 * 1024)  /* initial_max_data                  */
#define H3_HEADER_LIST_MAX 16384      /* field bytes of one request: 431   */
#define H3_CIDLEN 16                  /* our connection IDs' length        */
#define H3_CIDS_MAX 16                /* connection IDs one connection has */
#define H3_RX_BATCH 64                /* datagrams read per readiness edge */
#define H3_HANDSHAKES_MAX 64          /* a shard's handshakes before Retry */
#define H3_RETRY_TOKEN_S 10           /* a Retry token's life, seconds     */

struct serve_server;
struct serve_shard;
struct serve_conn;
struct serve_out;
struct h3_creds;

/* Loads CERT and KEY (PEM) for QUIC's TLS.  Returns 0 and *OUT, or -1
 * with a message in WHY. */
int h3_creds_load(const char *cert, const char *key, struct h3_creds **out,
                  char *why, size_t cap);
void h3_creds_free(struct h3_creds *cr);

/* SIGHUP: loads CERT and KEY (PEM) again for new QUIC handshakes.
 * Returns the certificate it replaced, for the caller to h3_cert_put once
 * every shard is past the swap (handshakes already under way keep theirs
 * and let go of it themselves), or NULL with a message in WHY and the one
 * in force kept. */
struct h3_cert;
struct h3_cert *h3_cert_reload(struct h3_creds *cr, const char *cert,
                               const char *key, char *why, size_t cap);
void h3_cert_put(struct h3_cert *ct);

/* Opens SH's UDP socket at ADDR (the TCP listener's, port resolved) and
 * puts it on SH's epoll (data.ptr = &sh->ufd).  Returns 0, or -1 with
 * errno. */
int h3_shard_open(struct serve_shard *sh, const struct sockaddr_in *addr);
/* The UDP socket is readable: reads up to H3_RX_BATCH datagrams. */
void h3_input(struct serve_shard *sh);
/* Runs the QUIC timers that are due (retransmission, idle, handshake
 * deadline).  Returns the milliseconds until the next one, at most
 * LIMIT. */
int h3_timers(struct serve_shard *sh, int limit);
/* From the shard's sweep: each request stream whose header section is
 * past --header-timeout, or whose body is slower than --body-min-rate,
 * is reset (H3_REQUEST_CANCELLED) and its budget given back; the
 * LIMITS_CUTS_MAX-th on a connection closes it (H3_EXCESSIVE_LOAD). */
void h3_sweep(struct serve_shard *sh);
/* Closes SH's socket; its connections must be closed already. */
void h3_shard_close(struct serve_shard *sh);

/* Takes O as the answer to the stream being handled.  Returns 0, or -1
 * when none is (O is then the caller's to free). */
int h3_out_attach(struct serve_conn *c, struct serve_out *o);
/* Submits answers whose commits completed, then sends what QUIC has. */
void h3_flush(struct serve_conn *c);
/* SIGTERM: GOAWAY once; C closes when no stream waits for a commit. */
void h3_stop(struct serve_conn *c);
/* Frees C's QUIC state, streams and their answers (conn_close). */
void h3_free(struct serve_conn *c);

#endif /* SERVE_H3_H */
