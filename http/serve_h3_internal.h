/*
 * serve_h3_internal.h -- what the files of keel-serve's HTTP/3 share
 * (serve_h3.c lists them and says what each holds): the connection, its
 * streams, the shard's and the server's HTTP/3 state, and the functions
 * one file calls in another.  The rest of http/ sees serve_h3.h only.
 * Every function here is documented at its definition; the lines below
 * say what it is for.
 */
#ifndef SERVE_H3_INTERNAL_H
#define SERVE_H3_INTERNAL_H

#include "serve.h"
#include "h3_control.h"

#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#define H3_BUCKETS 1024   /* the shard's connection-ID table (power of 2) */
#define H3_PKT_MAX 1500   /* one datagram we send                        */
/* datagrams one sendmsg carries (UDP_SEGMENT): 40 of H3_PKT_MAX stay
 * under the 65507 bytes of one UDP send and the kernel's 64 segments */
#define H3_GSO_SEGS 40
#define H3_TICKET_KEY_LEN 64 /* GnuTLS's session ticket master key size  */

struct h3_creds {
	struct h3_cert *_Atomic cert; /* the one new handshakes take        */
	gnutls_priority_t prio;
	uint8_t secret[32]; /* stateless reset tokens (HKDF of the CID) */
	uint8_t retry_secret[32]; /* Retry tokens' key, this process only */
	uint8_t ticket_key[H3_TICKET_KEY_LEN]; /* session tickets' master
	                       key: every shard's, this process only        */
	gnutls_datum_t ticket; /* ticket_key as GnuTLS takes it            */
	struct h3_replay *replay; /* ClientHellos with early data, lately  */
};

/* One connection ID a connection answers to, in a bucket chain: a
 * live connection's, or one in its closing period's. */
struct h3_cid {
	struct h3_cid *next;
	struct h3_conn *conn;       /* the connection, or NULL: closing   */
	struct h3_closing *closing; /* the closed connection, or NULL     */
	uint8_t used;
	uint8_t len;
	uint8_t data[NGTCP2_MAX_CIDLEN];
};

struct h3_stream {
	struct h3_stream *prev, *next; /* the connection's streams           */
	int64_t id;
	uint8_t answered;   /* serve_handle ran, or a refusal was queued    */
	uint8_t submitted;  /* its response went to nghttp3                 */
	uint8_t closed;     /* nghttp3 closed it (kept for a commit)        */
	uint8_t req_done;   /* the request's end was seen                   */
	uint8_t headers_done; /* its header section was whole               */
	int64_t since_ms;   /* when its header section began                */
	uint64_t received;  /* body bytes received (the rate's count)       */
	struct limits_body rate; /* --body-min-rate's window (serve_limits.h) */
	struct serve_fields fields; /* the request's, as they came       */
	struct http_request req;  /* slices of fields, once headers are done */
	char *body;         /* the request body so far                      */
	size_t blen, bcap;
	size_t charged;     /* of bcap, charged to --body-budget            */
	struct serve_out *out; /* the answer; freed with the stream         */
	uint64_t acked;     /* body bytes the client acknowledged           */
};

struct h3_conn {
	struct h3_conn *prev, *next;    /* the shard's connections          */
	struct h3_conn *due_next;       /* h3_timers' list of those due     */
	ngtcp2_tstamp due;              /* ngtcp2's expiry after its last run */
	int heap_at;                    /* index in h3_shard.heap; -1: out  */
	struct serve_conn *c;
	ngtcp2_conn *quic;
	nghttp3_conn *http;             /* from h3_http_start on               */
	gnutls_session_t tls;
	struct h3_cert *cert;           /* what tls was made with (counted) */
	ngtcp2_crypto_conn_ref ref;     /* GnuTLS's way back to quic        */
	ngtcp2_connection_close_error ccerr; /* set by a failing callback   */
	uint8_t ccerr_set;
	uint8_t stopping;               /* SIGTERM: closes once drained     */
	uint8_t cuts;                   /* streams cut for a limit          */
	struct h3_control control;      /* the client's control stream,
	                                   checked (h3_control.h)          */
	struct limits_bucket calm;      /* streams the client reset
	                                   (serve_limits.h: rapid reset)   */
	uint8_t handshaking;            /* counted in h3_shard.handshaking,
	                                   and in the server's --max-handshakes
	                                   and its source's share of them  */
	uint16_t src;                   /* that source's bucket             */
	struct h3_stream *streams;      /* every stream held                */
	struct h3_stream *current;      /* the stream serve_handle answers  */
	int nstreams;
	struct h3_cid cids[H3_CIDS_MAX];
};

/* Bytes and blocks one library holds (mem_malloc and the others). */
struct h3_mem {
	size_t live;    /* bytes held now, as malloc_usable_size counts  */
	size_t blocks;  /* blocks held now                               */
};

struct h3_shard {
	int resets;                     /* stateless resets since the sweep */
	int handshaking;                /* connections not past handshake   */
	int no_gso;                     /* the kernel refused UDP_SEGMENT   */
	/* GnuTLS's 0-RTT recording window: one a shard, as GnuTLS moves it
	 * unlocked; the store behind it is the server's (replay_add) */
	gnutls_anti_replay_t anti_replay;
	uint8_t tx[H3_GSO_SEGS * H3_PKT_MAX]; /* h3_conn_write's datagrams    */
	struct h3_conn *conns;
	/* every connection, a binary min-heap on due (timer_update) */
	struct h3_conn **heap;
	int nheap, capheap;
	struct h3_closing *closing;     /* connections in closing periods   */
	int nclosing;
	struct h3_cid *buckets[H3_BUCKETS];
	struct h3_mem quic_mem, http_mem; /* what ngtcp2, nghttp3 hold
	                                   (KEEL_H3_MEMSTAT only)          */
	ngtcp2_mem quic_alloc;          /* counts into quic_mem             */
	nghttp3_mem http_alloc;         /* counts into http_mem             */
	int memstat;                    /* KEEL_H3_MEMSTAT: print figures   */
	size_t memstat_last;            /* the live bytes last printed      */
};

/* One connection's datagrams in the shard's tx buffer, on their way to
 * one send_datagrams: LEN bytes so far, N datagrams of SEG bytes along
 * PS (the last of a batch may be shorter; a longer one, such as a path
 * MTU probe, starts a batch of its own). */
struct h3_batch {
	ngtcp2_path_storage ps;
	size_t len, seg;
	int n;
};

/* ---- serve_h3.c: the connection ------------------------------------------ */

ngtcp2_tstamp h3_now_ns(void);             /* CLOCK_MONOTONIC, ngtcp2's ns */
void h3_random_fill(uint8_t *p, size_t n); /* from getrandom               */
/* E (its ID filled in) into HS's connection-ID table, or out of it. */
void h3_cid_link(struct h3_shard *hs, struct h3_cid *e);
void h3_cid_unlink(struct h3_shard *hs, struct h3_cid *e);
/* Sends what ngtcp2 and nghttp3 have.  0, or -1: HC was closed. */
int h3_conn_write(struct h3_conn *hc);

/* ---- serve_h3_stream.c: HTTP/3 streams ----------------------------------- */

int h3_http_start(struct h3_conn *hc);   /* nghttp3 begins, once        */
/* A callback's failure for nghttp3's error LIBERR: sets HC's close. */
int h3_fail_http(struct h3_conn *hc, int liberr);
/* N bytes of stream ID taken: QUIC's windows grow by them. */
void h3_credit(struct h3_conn *hc, int64_t id, size_t n);
void h3_stream_free(struct h3_conn *hc, struct h3_stream *st);
/* HC's streams against their deadlines.  -1: HC was closed. */
int h3_conn_limits(struct h3_conn *hc, int64_t now_ms);

/* ---- serve_h3_tls.c: TLS, session tickets, 0-RTT ------------------------- */

int h3_replay_window_open(struct serve_shard *sh); /* h3_shard_open's   */
int h3_conn_tls(struct h3_conn *hc, struct h3_creds *cr); /* at accept  */
void h3_tls_release(struct h3_conn *hc); /* handshake over: ticket sent */
void h3_tls_free(struct h3_conn *hc);

/* ---- serve_h3_closing.c: closing records, stateless answers -------------- */

/* HC ends (a CONNECTION_CLOSE unless silent; its closing record). */
void h3_conn_fail(struct h3_conn *hc, int rv);
void h3_closing_answer(struct serve_shard *sh, const ngtcp2_path *path,
                       struct h3_closing *cl, size_t len);
void h3_closing_expire(struct h3_shard *hs, int64_t now_ms, int all);
void h3_stateless_reset(struct serve_shard *sh, const ngtcp2_path *path,
                        const uint8_t *dcid, size_t pktlen);
void h3_version_negotiate(struct serve_shard *sh, const ngtcp2_path *path,
                          const ngtcp2_version_cid *vc);

/* ---- serve_h3_send.c: datagrams out -------------------------------------- */

void h3_send_datagram(struct serve_shard *sh, const ngtcp2_path *path,
                      const uint8_t *buf, size_t len);
void h3_batch_add(struct serve_shard *sh, struct h3_batch *b,
                  const ngtcp2_path *path, size_t n);
void h3_batch_send(struct serve_shard *sh, struct h3_batch *b);

/* ---- serve_h3_mem.c: KEEL_H3_MEMSTAT ------------------------------------- */

void h3_mem_init(struct h3_shard *hs);     /* the counting allocators   */
void h3_mem_report(struct serve_shard *sh); /* from the sweep           */

#endif /* SERVE_H3_INTERNAL_H */
