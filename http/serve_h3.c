/*
 * serve_h3.c -- HTTP/3 over QUIC through ngtcp2, GnuTLS and nghttp3
 * (serve_h3.h says how it is called and what it bounds; docs/http.md
 * "HTTP/3" what clients see).
 *
 * A CONNECTION'S LIFE
 *   An Initial packet for an unknown Destination Connection ID that
 *   ngtcp2_accept takes makes a connection (conn_accept): a serve_conn, an
 *   ngtcp2 server connection, a GnuTLS session (ALPN "h3" only) and the
 *   connection IDs it answers to in the shard's table.  Once the
 *   handshake is done (or the first stream data comes) nghttp3 starts and
 *   our three unidirectional streams are opened (http_start).  Every
 *   datagram is read by ngtcp2, whose stream data goes to nghttp3, whose
 *   callbacks build the requests (on_begin_headers .. on_end_stream).
 *   After each datagram, timer and completion, conn_write sends what
 *   there is.  A failure (ngtcp2's, or one a callback flagged in ccerr)
 *   sends one CONNECTION_CLOSE and ends the connection (conn_fail),
 *   but for a closing record that sends the close again to packets that
 *   still come for it (closing_begin); idle, handshake timeout and
 *   draining end it without one.
 *
 * Callbacks never free the connection (ngtcp2 and nghttp3 are on the
 * stack): they fail with NGTCP2_ERR_CALLBACK_FAILURE, ccerr set, and
 * conn_fail acts after ngtcp2 returns.
 */
#include "serve.h"
#include "h3_control.h"

#include <errno.h>
#include <stdatomic.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/udp.h> /* UDP_SEGMENT, UDP_GRO */

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#define H3_BUCKETS 1024   /* the shard's connection-ID table (power of 2) */
#define H3_PKT_MAX 1500   /* one datagram we send                        */
#define H3_UDP_PAYLOAD_MAX 1452 /* what path MTU discovery may reach     */
#define H3_TX_BURST 64    /* datagrams per conn_write before pacing       */
/* datagrams one sendmsg carries (UDP_SEGMENT): 40 of H3_PKT_MAX stay
 * under the 65507 bytes of one UDP send and the kernel's 64 segments */
#define H3_GSO_SEGS 40
#define H3_RCVBUF (4 << 20) /* SO_RCVBUF asked for a shard's UDP socket  */
#define H3_RESETS_MAX 64  /* stateless resets a shard sends per sweep     */
#define H3_TICKET_KEY_LEN 64 /* GnuTLS's session ticket master key size  */
#define H3_REPLAY_SLOTS 16384 /* ClientHellos the anti-replay store holds */
#define H3_REPLAY_PROBE 16    /* slots one binder may take               */
/* seconds an early ClientHello is held past GnuTLS's expiry for it:
 * that is in whole seconds from a truncated clock, and must not end
 * before the ticket-age check (within the window) refuses a replay */
#define H3_REPLAY_SLACK_S 2
#define H3_CLOSING_MAX 4096 /* connections a shard holds closing          */
/* the least closing period: 3 PTO are a few ms on a LAN, under the
 * sweep's own 250 ms, and a reordered or delayed packet deserves the
 * close as much as a prompt one */
#define H3_CLOSING_MIN_MS 1000
/* TLS 1.3 only, without the middlebox compatibility mode QUIC forbids */
#define H3_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE"

/* The certificate and key in force, or one a SIGHUP replaced: held by
 * the server while in force, and by each GnuTLS session made with it
 * (GnuTLS keeps a pointer, no count), so it is freed by whichever lets go
 * last.  The server lets go only once every shard is past the swap
 * (serve_main.c, retired_sweep): none can then be between loading the
 * pointer and counting itself in. */
struct h3_cert {
	gnutls_certificate_credentials_t cred;
	atomic_int refs;
};

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

/* One ClientHello that brought early data: its PSK binder (the first
 * 32 bytes) and when it may be forgotten (0: a free slot). */
struct h3_replay_slot {
	int64_t forget_at;  /* time(2) seconds                              */
	uint8_t binder[32];
};

/* The anti-replay store (RFC 8446 8.2) of the whole server: shards are
 * threads, and a replay may come from another source port, so to
 * another shard.  Open addressing, H3_REPLAY_PROBE slots per binder. */
struct h3_replay {
	pthread_mutex_t lock;     /* every shard's handshakes add to it  */
	uint32_t seed;            /* the slots' hash key, from getrandom */
	struct h3_replay_slot slot[H3_REPLAY_SLOTS];
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
	nghttp3_conn *http;             /* from http_start on               */
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

/*
 * A connection we closed with a CONNECTION_CLOSE, in its closing period
 * (RFC 9000 10.2.1): the datagram that carried the close, sent again
 * to packets that still come for its connection IDs, until UNTIL_MS
 * (3 PTO, 1 s at least: then the sweep frees it, and such a packet gets
 * a stateless reset).  Its own copy of the IDs, in the shard's table.
 */
struct h3_closing {
	struct h3_closing *next;        /* the shard's                      */
	int64_t until_ms;               /* the closing period's end         */
	uint32_t packets;               /* packets that came for it since   */
	uint16_t len;                   /* of the datagram                  */
	struct h3_cid cids[H3_CIDS_MAX];
	uint8_t pkt[];                  /* the CONNECTION_CLOSE datagram    */
};

struct h3_shard {
	int resets;                     /* stateless resets since the sweep */
	int handshaking;                /* connections not past handshake   */
	int no_gso;                     /* the kernel refused UDP_SEGMENT   */
	/* GnuTLS's 0-RTT recording window: one a shard, as GnuTLS moves it
	 * unlocked; the store behind it is the server's (replay_add) */
	gnutls_anti_replay_t anti_replay;
	uint8_t tx[H3_GSO_SEGS * H3_PKT_MAX]; /* conn_write's datagrams    */
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

static ngtcp2_tstamp now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ngtcp2_tstamp)ts.tv_sec * NGTCP2_SECONDS + (ngtcp2_tstamp)ts.tv_nsec;
}

static void random_fill(uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r <= 0)
			continue; /* EINTR only: the pool is ready after boot */
		p += r;
		n -= (size_t)r;
	}
}

/* ---- session tickets and anti-replay ----------------------------------- */

/*
 * CR's session ticket key and anti-replay store.  One key for the whole
 * server, from getrandom at start, never written anywhere: a ticket
 * opens only in the process that issued it (a restart makes every
 * client's ticket useless, and it falls back to a full handshake).
 * GnuTLS derives the key that seals tickets from it and rotates that by
 * itself (TOTP-like, per ticket lifetime); the master key is not
 * rotated.  Since the key dies with the process, so do the transport
 * parameters a client remembered with its ticket for 0-RTT (RFC 9000
 * 7.4.1): ours are constants of serve_h3.h, the same for every
 * connection of a process, so early data never meets lower limits than
 * the ticket's holder was told.  The store is allocated untouched (its
 * pages become resident as early ClientHellos fill them).  0 or -1.
 */
static int tickets_init(struct h3_creds *cr)
{
	random_fill(cr->ticket_key, sizeof cr->ticket_key);
	cr->ticket.data = cr->ticket_key;
	cr->ticket.size = sizeof cr->ticket_key;
	cr->replay = calloc(1, sizeof *cr->replay);
	if (cr->replay == NULL)
		return -1;
	random_fill((uint8_t *)&cr->replay->seed, sizeof cr->replay->seed);
	pthread_mutex_init(&cr->replay->lock, NULL);
	return 0;
}

/*
 * GnuTLS's anti-replay add function (gnutls_anti_replay_set_add_function):
 * KEY is 12 bytes of the shard's recording window start, then the
 * ClientHello's PSK binder.  Only the binder is compared (the windows of
 * shards differ; a binder is a MAC over the ClientHello, so one per
 * ClientHello).  Returns 0 when it is new and remembered until
 * EXPIRES (plus H3_REPLAY_SLACK_S), GNUTLS_E_DB_ENTRY_EXISTS for a
 * replay, GNUTLS_E_DB_ERROR when it cannot be remembered (its slots are
 * full): either error makes GnuTLS refuse the early data, and the
 * connection goes on as a 1-RTT one.
 */
static int replay_add(void *ptr, time_t expires, const gnutls_datum_t *key,
                      const gnutls_datum_t *data)
{
	struct h3_replay *rp = ptr;
	struct h3_replay_slot *free_slot = NULL, *e;
	uint8_t binder[32] = {0};
	int64_t now = (int64_t)time(NULL);
	uint32_t h = rp->seed;
	int i, rc = 0;

	(void)data;
	if (key->size <= 12)
		return GNUTLS_E_DB_ERROR;
	memcpy(binder, key->data + 12,
	       key->size - 12 < sizeof binder ? key->size - 12 : sizeof binder);
	for (i = 0; i < (int)sizeof binder; i++)
		h = (h ^ binder[i]) * 16777619u; /* FNV-1a, keyed by the seed */
	pthread_mutex_lock(&rp->lock);
	for (i = 0; i < H3_REPLAY_PROBE; i++) {
		e = &rp->slot[(h + (uint32_t)i) & (H3_REPLAY_SLOTS - 1)];
		if (e->forget_at <= now) {
			if (free_slot == NULL)
				free_slot = e;
		} else if (memcmp(e->binder, binder, sizeof binder) == 0) {
			rc = GNUTLS_E_DB_ENTRY_EXISTS;
			goto out_unlock;
		}
	}
	if (free_slot == NULL) {
		rc = GNUTLS_E_DB_ERROR;
		goto out_unlock;
	}
	free_slot->forget_at = (int64_t)expires + H3_REPLAY_SLACK_S;
	memcpy(free_slot->binder, binder, sizeof binder);
out_unlock:
	pthread_mutex_unlock(&rp->lock);
	return rc;
}

/* ---- what the libraries hold ------------------------------------------ */

/*
 * With KEEL_H3_MEMSTAT set in the environment, ngtcp2 and nghttp3
 * allocate through these (ngtcp2_mem, nghttp3_mem), so that a shard
 * knows what each holds: the bytes malloc really gave
 * (malloc_usable_size, not what was asked) and the blocks; the sweep
 * prints them when they change (docs/http.md, "Memory"; bench/http/h3.sh,
 * idle).  Without it the libraries use malloc itself: nothing is
 * counted, nothing is paid.  A shard's connections are made and freed
 * on its thread only.
 */
static void *mem_took(struct h3_mem *m, void *p)
{
	if (p) {
		m->live += malloc_usable_size(p);
		m->blocks++;
	}
	return p;
}

static void mem_gives(struct h3_mem *m, void *p)
{
	if (p) {
		m->live -= malloc_usable_size(p);
		m->blocks--;
	}
}

static void *mem_malloc(size_t n, void *arg)
{
	return mem_took(arg, malloc(n));
}

static void mem_free(void *p, void *arg)
{
	mem_gives(arg, p);
	free(p);
}

static void *mem_calloc(size_t k, size_t n, void *arg)
{
	return mem_took(arg, calloc(k, n));
}

static void *mem_realloc(void *p, size_t n, void *arg)
{
	struct h3_mem *m = arg;
	size_t was = p ? malloc_usable_size(p) : 0;
	void *q = realloc(p, n);

	if (q == NULL && n > 0)
		return NULL; /* P is held still, as it was */
	m->live -= was;
	m->blocks -= p != NULL;
	return mem_took(m, q);
}

/* KEEL_H3_MEMSTAT: SH's figures on stderr when they changed.  "ours" is
 * each connection's serve_conn and h3_conn and its streams (their
 * bodies and answers not counted: an idle connection has none). */
static void mem_report(struct serve_shard *sh)
{
	struct h3_shard *hs = sh->h3;
	struct h3_conn *hc;
	size_t ours = 0;
	int n = 0, tls = 0, http = 0, streams = 0;

	if (!hs->memstat || hs->quic_mem.live + hs->http_mem.live == hs->memstat_last)
		return;
	hs->memstat_last = hs->quic_mem.live + hs->http_mem.live;
	for (hc = hs->conns; hc; hc = hc->next) {
		struct h3_stream *st;

		n++;
		tls += hc->tls != NULL;
		http += hc->http != NULL;
		ours += malloc_usable_size(hc) + malloc_usable_size(hc->c);
		for (st = hc->streams; st; st = st->next, streams++)
			ours += malloc_usable_size(st);
	}
	fprintf(stderr, "keel-serve: h3 memory, shard %d: %d connections "
	        "(%d with a TLS session, %d with HTTP/3, %d streams); ngtcp2 "
	        "%zu bytes in %zu blocks, nghttp3 %zu bytes in %zu blocks, ours "
	        "%zu bytes\n", sh->id, n, tls, http, streams, hs->quic_mem.live,
	        hs->quic_mem.blocks, hs->http_mem.live, hs->http_mem.blocks, ours);
}

/* ---- credentials ------------------------------------------------------ */

/* CERT and KEY (PEM) into a new h3_cert, counted once (the caller's).
 * Returns it, or NULL with a message in WHY. */
static struct h3_cert *cert_load(const char *cert, const char *key, char *why,
                                 size_t cap)
{
	struct h3_cert *ct = calloc(1, sizeof *ct);
	int rc;

	if (ct == NULL) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	rc = gnutls_certificate_allocate_credentials(&ct->cred);
	if (rc == 0)
		rc = gnutls_certificate_set_x509_key_file(ct->cred, cert, key,
		                                          GNUTLS_X509_FMT_PEM);
	if (rc < 0) {
		snprintf(why, cap, "%s, %s: %s", cert, key, gnutls_strerror(rc));
		if (ct->cred)
			gnutls_certificate_free_credentials(ct->cred);
		free(ct);
		return NULL;
	}
	atomic_init(&ct->refs, 1);
	return ct;
}

static struct h3_cert *cert_get(struct h3_cert *ct)
{
	atomic_fetch_add(&ct->refs, 1);
	return ct;
}

void h3_cert_put(struct h3_cert *ct)
{
	if (ct && atomic_fetch_sub(&ct->refs, 1) == 1) {
		gnutls_certificate_free_credentials(ct->cred);
		free(ct);
	}
}

struct h3_cert *h3_cert_reload(struct h3_creds *cr, const char *cert,
                               const char *key, char *why, size_t cap)
{
	struct h3_cert *ct = cert_load(cert, key, why, cap);

	return ct ? atomic_exchange(&cr->cert, ct) : NULL;
}

int h3_creds_load(const char *cert, const char *key, struct h3_creds **out,
                  char *why, size_t cap)
{
	struct h3_creds *cr = calloc(1, sizeof *cr);
	struct h3_cert *ct;
	int rc;

	if (cr == NULL) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	ct = cert_load(cert, key, why, cap);
	if (ct == NULL)
		goto out_free;
	atomic_init(&cr->cert, ct);
	rc = gnutls_priority_init(&cr->prio, H3_PRIORITY, NULL);
	if (rc < 0) {
		snprintf(why, cap, "TLS priorities: %s", gnutls_strerror(rc));
		goto out_free;
	}
	random_fill(cr->secret, sizeof cr->secret);
	random_fill(cr->retry_secret, sizeof cr->retry_secret);
	if (tickets_init(cr) < 0) {
		snprintf(why, cap, "out of memory");
		gnutls_priority_deinit(cr->prio);
		goto out_free;
	}
	*out = cr;
	return 0;
out_free:
	h3_cert_put(atomic_load(&cr->cert));
	free(cr);
	return -1;
}

void h3_creds_free(struct h3_creds *cr)
{
	if (cr == NULL)
		return;
	pthread_mutex_destroy(&cr->replay->lock);
	free(cr->replay);
	explicit_bzero(cr->ticket_key, sizeof cr->ticket_key);
	gnutls_priority_deinit(cr->prio);
	h3_cert_put(atomic_load(&cr->cert));
	free(cr);
}

/* ---- the connection-ID table ------------------------------------------ */

static unsigned cid_hash(const uint8_t *p, size_t n)
{
	unsigned h = 2166136261u; /* FNV-1a: our IDs are random anyway */

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h & (H3_BUCKETS - 1);
}

/* The table's entry for the connection ID P of N bytes, or NULL. */
static struct h3_cid *cid_find(struct h3_shard *hs, const uint8_t *p,
                               size_t n)
{
	struct h3_cid *e;

	for (e = hs->buckets[cid_hash(p, n)]; e; e = e->next)
		if (e->len == n && memcmp(e->data, p, n) == 0)
			return e;
	return NULL;
}

/* E (its ID filled in) goes in HS's table. */
static void cid_link(struct h3_shard *hs, struct h3_cid *e)
{
	unsigned b = cid_hash(e->data, e->len);

	e->used = 1;
	e->next = hs->buckets[b];
	hs->buckets[b] = e;
}

/* HC answers to CID from now on.  Returns 0, or -1 when it has
 * H3_CIDS_MAX already. */
static int cid_add(struct h3_conn *hc, const ngtcp2_cid *cid)
{
	struct h3_shard *hs = hc->c->shard->h3;
	struct h3_cid *e = NULL;
	int i;

	for (i = 0; i < H3_CIDS_MAX && e == NULL; i++)
		if (!hc->cids[i].used)
			e = &hc->cids[i];
	if (e == NULL || cid->datalen > NGTCP2_MAX_CIDLEN)
		return -1;
	e->conn = hc;
	e->closing = NULL;
	e->len = (uint8_t)cid->datalen;
	memcpy(e->data, cid->data, cid->datalen);
	cid_link(hs, e);
	return 0;
}

static void cid_unlink(struct h3_shard *hs, struct h3_cid *e)
{
	struct h3_cid **pp = &hs->buckets[cid_hash(e->data, e->len)];

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	e->used = 0;
}

static void cid_remove(struct h3_conn *hc, const ngtcp2_cid *cid)
{
	int i;

	for (i = 0; i < H3_CIDS_MAX; i++)
		if (hc->cids[i].used && hc->cids[i].len == cid->datalen &&
		    memcmp(hc->cids[i].data, cid->data, cid->datalen) == 0)
			cid_unlink(hc->c->shard->h3, &hc->cids[i]);
}

/* ---- streams ------------------------------------------------------------ */

static void stream_body_free(struct serve_conn *c, struct h3_stream *st)
{
	limits_budget_give(&c->shard->srv->budget, st->charged);
	st->charged = 0;
	free(st->body);
	st->body = NULL;
	st->blen = st->bcap = 0;
}

static void stream_free(struct h3_conn *hc, struct h3_stream *st)
{
	struct serve_conn *c = hc->c;

	if (st->prev)
		st->prev->next = st->next;
	else
		hc->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	hc->nstreams--;
	if (hc->current == st)
		hc->current = NULL;
	stream_body_free(c, st);
	if (st->out) {
		if (st->out->owned)
			c->queued -= (uint32_t)st->out->body_len;
		serve_out_free(st->out); /* releases a GET's view */
	}
	fields_free(&st->fields);
	free(st);
}

/* A callback failed for a reason of HTTP/3's (nghttp3's error LIBERR):
 * the connection ends with the matching application error. */
static int fail_http(struct h3_conn *hc, int liberr)
{
	if (!hc->ccerr_set) {
		ngtcp2_connection_close_error_set_application_error(
		    &hc->ccerr, nghttp3_err_infer_quic_app_error_code(liberr), NULL,
		    0);
		hc->ccerr_set = 1;
	}
	return NGTCP2_ERR_CALLBACK_FAILURE;
}

/* The body (after an answer, or none at all) bytes of stream ID are
 * taken: QUIC may let that many more come. */
static void credit(struct h3_conn *hc, int64_t id, size_t n)
{
	ngtcp2_conn_extend_max_stream_offset(hc->quic, id, n);
	ngtcp2_conn_extend_max_offset(hc->quic, n);
}

/*
 * Hands ST's answer to nghttp3: the status from its first line, then
 * each "Name: value" line as a field, the name lowercased in place,
 * Connection left out (RFC 9114 4.2).  The body is the answer's own
 * bytes, a GET's in the mapping (on_read_data).
 */
static nghttp3_ssize on_read_data(nghttp3_conn *conn, int64_t id,
                                  nghttp3_vec *vec, size_t veccnt,
                                  uint32_t *pflags, void *arg, void *sarg)
{
	struct h3_stream *st = sarg;

	(void)conn;
	(void)id;
	(void)arg;
	*pflags |= NGHTTP3_DATA_FLAG_EOF;
	if (st == NULL || st->out == NULL || veccnt == 0)
		return 0;
	vec[0].base = (uint8_t *)st->out->body;
	vec[0].len = st->out->body_len;
	return 1;
}

static void stream_submit(struct h3_conn *hc, struct h3_stream *st)
{
	static const nghttp3_data_reader reader = {on_read_data};
	struct serve_out *o = st->out;
	char *p = o->head, *end = o->head + o->head_len;
	nghttp3_nv nv[16];
	int n = 0, rc;

	st->submitted = 1;
	nv[n++] = (nghttp3_nv){(uint8_t *)":status", (uint8_t *)p + 9, 7, 3,
	                       NGHTTP3_NV_FLAG_NONE};
	p = memchr(p, '\n', (size_t)(end - p));
	while (p && ++p < end && *p != '\r' && n < 16) {
		char *colon = memchr(p, ':', (size_t)(end - p));
		char *eol = memchr(p, '\r', (size_t)(end - p));
		char *q;

		if (colon == NULL || eol == NULL || colon > eol)
			break;
		for (q = p; q < colon; q++)
			if (*q >= 'A' && *q <= 'Z')
				*q = (char)(*q + 32);
		if (!(colon - p == 10 && memcmp(p, "connection", 10) == 0))
			nv[n++] = (nghttp3_nv){(uint8_t *)p, (uint8_t *)colon + 2,
			                       (size_t)(colon - p),
			                       (size_t)(eol - colon - 2),
			                       NGHTTP3_NV_FLAG_NONE};
		p = eol + 1;
	}
	rc = nghttp3_conn_submit_response(hc->http, st->id, nv, (size_t)n,
	                                  o->body_len ? &reader : NULL);
	if (rc != 0)
		ngtcp2_conn_shutdown_stream(hc->quic, st->id,
		                            NGHTTP3_H3_INTERNAL_ERROR);
}

int h3_out_attach(struct serve_conn *c, struct serve_out *o)
{
	struct h3_stream *st = c->h3->current;

	if (st == NULL || st->out)
		return -1;
	st->out = o;
	return 0;
}

/* Answers ST now with a refusal (STATUS, with tokens' CHALLENGE when
 * given); a body still to come is refused with STOP_SENDING. */
static void stream_refuse(struct h3_conn *hc, struct h3_stream *st,
                          int status, const char *challenge)
{
	struct serve_conn *c = hc->c;

	hc->current = st;
	if (challenge)
		serve_error_auth(c, &st->req, status, 0, challenge);
	else if (status == 503)
		serve_error_busy(c, 1);
	else
		serve_error(c, status, 1, 0);
	hc->current = NULL;
	st->answered = 1;
	stream_body_free(c, st);
	if (!st->req_done)
		ngtcp2_conn_shutdown_stream_read(hc->quic, st->id,
		                                 NGHTTP3_H3_NO_ERROR);
	if (st->out)
		stream_submit(hc, st);
	else
		ngtcp2_conn_shutdown_stream(hc->quic, st->id,
		                            NGHTTP3_H3_INTERNAL_ERROR);
}

/* ---- requests ------------------------------------------------------------ */

/* ST's header section is whole: refuse it now when it is wrong, too
 * large, not allowed or too early (before any body is held). */
static void stream_headers_done(struct h3_conn *hc, struct h3_stream *st)
{
	struct serve_server *srv = hc->c->shard->srv;
	const char *challenge = NULL;
	int status = fields_request(&st->fields, &st->req);

	st->headers_done = 1;
	limits_body_begin(&st->rate, 0, hc->c->shard->now_ms);
	if (status == 0 && st->req.has_length &&
	    st->req.content_length > srv->cfg.max_body)
		status = 413;
	/* early data may be a replay: before the handshake completed only
	 * a safe method may act on it (RFC 8470).  A replayed flight never
	 * completes a handshake (the client's key share is not the
	 * attacker's), so all it carries is judged here, and the body of a
	 * refused request is dropped, never committed (stream_refuse) */
	if (status == 0 && !ngtcp2_conn_get_handshake_completed(hc->quic) &&
	    st->req.method != HTTP_METHOD_GET && st->req.method != HTTP_METHOD_HEAD)
		status = 425;
	if (status == 0)
		status = serve_authorize(srv, &st->req, &challenge);
	if (status == 0 && st->req.has_length && st->req.content_length > 0 &&
	    limits_budget_admits(&srv->budget, st->req.content_length, 0) !=
	        LIMITS_OK)
		status = 503;
	if (status)
		stream_refuse(hc, st, status, challenge);
}

/* ST's request is whole.  serve_req.c answers it (or starts its commit,
 * whose completion makes the answer ready: h3_flush). */
static void stream_request(struct h3_conn *hc, struct h3_stream *st)
{
	struct serve_conn *c = hc->c;

	st->req_done = 1;
	if (st->answered)
		return;
	if (c->queued >= SERVE_QUEUED_MAX && st->req.path.n == 1 &&
	    st->req.path.p[0] == '/') {
		stream_refuse(hc, st, 503, NULL); /* listings not yet read */
		return;
	}
	st->answered = 1;
	hc->current = st;
	serve_handle(c, &st->req, st->body ? st->body : "", st->blen);
	hc->current = NULL;
	stream_body_free(c, st); /* a PUT's batch holds its own copy */
	serve_conn_progress(c);
	if (st->out == NULL)
		ngtcp2_conn_shutdown_stream(hc->quic, st->id,
		                            NGHTTP3_H3_INTERNAL_ERROR);
	else if (st->out->ready)
		stream_submit(hc, st);
}

/* ---- nghttp3's callbacks -------------------------------------------------- */

static int on_begin_headers(nghttp3_conn *conn, int64_t id, void *arg,
                            void *sarg)
{
	struct h3_conn *hc = arg;
	struct h3_stream *st;

	(void)sarg;
	if (hc->nstreams >= H3_STREAMS_HELD) {
		ngtcp2_conn_shutdown_stream(hc->quic, id,
		                            NGHTTP3_H3_REQUEST_REJECTED);
		return 0;
	}
	st = calloc(1, sizeof *st);
	if (st == NULL)
		return fail_http(hc, NGHTTP3_ERR_NOMEM);
	st->id = id;
	st->since_ms = hc->c->shard->now_ms;
	st->next = hc->streams;
	if (hc->streams)
		hc->streams->prev = st;
	hc->streams = st;
	hc->nstreams++;
	nghttp3_conn_set_stream_user_data(conn, id, st);
	return 0;
}

static int on_header(nghttp3_conn *conn, int64_t id, int32_t token,
                     nghttp3_rcbuf *name, nghttp3_rcbuf *value,
                     uint8_t flags, void *arg, void *sarg)
{
	struct h3_stream *st = sarg;
	nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
	nghttp3_vec v = nghttp3_rcbuf_get_buf(value);

	(void)conn;
	(void)id;
	(void)token;
	(void)flags;
	if (st == NULL)
		return 0;
	if (fields_add(&st->fields, n.base, n.len, v.base, v.len,
	               H3_HEADER_LIST_MAX) < 0)
		return fail_http(arg, NGHTTP3_ERR_NOMEM);
	return 0;
}

static int on_end_headers(nghttp3_conn *conn, int64_t id, int fin, void *arg,
                          void *sarg)
{
	(void)conn;
	(void)id;
	(void)fin; /* on_end_stream follows */
	if (sarg)
		stream_headers_done(arg, sarg);
	return 0;
}

/* A chunk of ST's body: kept, charged to --body-budget, growing by
 * doubling as bytes really arrive; QUIC's windows are credited as it is
 * taken, so the client's bytes in flight stay bounded by them. */
static int on_data(nghttp3_conn *conn, int64_t id, const uint8_t *data,
                   size_t len, void *arg, void *sarg)
{
	struct h3_conn *hc = arg;
	struct serve_server *srv = hc->c->shard->srv;
	struct h3_stream *st = sarg;
	size_t cap;
	char *p;

	(void)conn;
	credit(hc, id, len);
	if (st)
		st->received += len;
	if (st == NULL || st->answered)
		return 0; /* refused: dropped */
	if (st->blen + len > srv->cfg.max_body) {
		stream_refuse(hc, st, 413, NULL);
		return 0;
	}
	if (st->blen + len > st->bcap) {
		cap = st->bcap ? st->bcap * 2 : SERVE_RX_MIN;
		while (cap < st->blen + len)
			cap *= 2;
		if (st->req.has_length && cap > st->req.content_length &&
		    st->req.content_length >= st->blen + len)
			cap = (size_t)st->req.content_length;
		if (limits_budget_take(&srv->budget, cap - st->bcap, 0) != LIMITS_OK) {
			stream_refuse(hc, st, 503, NULL);
			return 0;
		}
		p = realloc(st->body, cap);
		if (p == NULL) {
			limits_budget_give(&srv->budget, cap - st->bcap);
			stream_refuse(hc, st, 503, NULL);
			return 0;
		}
		st->charged += cap - st->bcap;
		st->body = p;
		st->bcap = cap;
	}
	memcpy(st->body + st->blen, data, len);
	st->blen += len;
	return 0;
}

static int on_deferred_consume(nghttp3_conn *conn, int64_t id,
                               size_t consumed, void *arg, void *sarg)
{
	(void)conn;
	(void)sarg;
	credit(arg, id, consumed);
	return 0;
}

static int on_end_stream(nghttp3_conn *conn, int64_t id, void *arg,
                         void *sarg)
{
	(void)conn;
	(void)id;
	if (sarg)
		stream_request(arg, sarg);
	return 0;
}

/* The client acknowledged LEN more bytes of ST's body: once it has them
 * all the mapping's pin is let go (QUIC kept them by reference). */
static int on_acked(nghttp3_conn *conn, int64_t id, uint64_t len, void *arg,
                    void *sarg)
{
	struct h3_stream *st = sarg;

	(void)conn;
	(void)id;
	(void)arg;
	if (st == NULL || st->out == NULL)
		return 0;
	st->acked += len;
	if (st->acked >= st->out->body_len && st->out->view.pin_)
		keel_view_release(&st->out->view);
	return 0;
}

static int on_stream_close(nghttp3_conn *conn, int64_t id, uint64_t code,
                           void *arg, void *sarg)
{
	struct h3_conn *hc = arg;
	struct h3_stream *st = sarg;

	(void)code;
	if (st == NULL)
		return 0;
	nghttp3_conn_set_stream_user_data(conn, id, NULL);
	if (st->out && !st->out->ready) {
		st->closed = 1; /* its commit will still answer: freed then */
		return 0;
	}
	stream_free(hc, st);
	return 0;
}

static int on_stop_sending(nghttp3_conn *conn, int64_t id, uint64_t code,
                           void *arg, void *sarg)
{
	struct h3_conn *hc = arg;

	(void)conn;
	(void)sarg;
	ngtcp2_conn_shutdown_stream_read(hc->quic, id, code);
	return 0;
}

static int on_reset_stream(nghttp3_conn *conn, int64_t id, uint64_t code,
                           void *arg, void *sarg)
{
	struct h3_conn *hc = arg;

	(void)conn;
	(void)sarg;
	ngtcp2_conn_shutdown_stream_write(hc->quic, id, code);
	return 0;
}

static const nghttp3_callbacks http_callbacks = {
	.acked_stream_data = on_acked,
	.stream_close = on_stream_close,
	.recv_data = on_data,
	.deferred_consume = on_deferred_consume,
	.begin_headers = on_begin_headers,
	.recv_header = on_header,
	.end_headers = on_end_headers,
	.stop_sending = on_stop_sending,
	.end_stream = on_end_stream,
	.reset_stream = on_reset_stream,
};

/* HTTP/3 begins: nghttp3's server side and our control and QPACK
 * streams.  Returns 0, or an ngtcp2 error for the callback to return. */
static int http_start(struct h3_conn *hc)
{
	nghttp3_settings settings;
	int64_t ctrl, qenc, qdec;
	int rc;

	if (hc->http)
		return 0;
	nghttp3_settings_default(&settings);
	settings.max_field_section_size = H3_HEADER_LIST_MAX;
	/* no QPACK dynamic table either way (memory per connection): our
	 * answers' fields are few and short, the decoder's is 0 already */
	settings.qpack_encoder_max_dtable_capacity = 0;
	settings.qpack_max_dtable_capacity = 0;
	settings.qpack_blocked_streams = 0;
	rc = nghttp3_conn_server_new(&hc->http, &http_callbacks, &settings,
	                             hc->c->shard->h3->memstat
	                                 ? &hc->c->shard->h3->http_alloc
	                                 : NULL,
	                             hc);
	if (rc != 0)
		return fail_http(hc, rc);
	nghttp3_conn_set_max_client_streams_bidi(hc->http, H3_MAX_STREAMS);
	if (ngtcp2_conn_open_uni_stream(hc->quic, &ctrl, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(hc->quic, &qenc, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(hc->quic, &qdec, NULL) != 0)
		return fail_http(hc, NGHTTP3_ERR_H3_STREAM_CREATION_ERROR);
	rc = nghttp3_conn_bind_control_stream(hc->http, ctrl);
	if (rc == 0)
		rc = nghttp3_conn_bind_qpack_streams(hc->http, qenc, qdec);
	return rc == 0 ? 0 : fail_http(hc, rc);
}

/* ---- ngtcp2's callbacks ----------------------------------------------- */

static void on_rand(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	random_fill(dest, len);
}

static int on_new_cid(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
                      size_t len, void *arg)
{
	struct h3_conn *hc = arg;
	struct h3_creds *cr = hc->c->shard->srv->h3;

	(void)conn;
	random_fill(cid->data, len);
	cid->datalen = len;
	if (ngtcp2_crypto_generate_stateless_reset_token(
	        token, cr->secret, sizeof cr->secret, cid) != 0 ||
	    cid_add(hc, cid) < 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

static int on_remove_cid(ngtcp2_conn *conn, const ngtcp2_cid *cid, void *arg)
{
	(void)conn;
	cid_remove(arg, cid);
	return 0;
}

/* HC is no longer one of its shard's handshakes (Retry's budget). */
static void handshake_over(struct h3_conn *hc)
{
	struct serve_server *srv = hc->c->shard->srv;

	if (hc->handshaking) {
		hc->c->shard->h3->handshaking--;
		atomic_fetch_sub(&srv->handshakes, 1);
		limits_source_give(&srv->hs_sources, hc->src);
	}
	hc->handshaking = 0;
}

/* A QUIC handshake from PATH may begin: counted as a TLS handshake over
 * TCP is (serve_conn.c), against --max-handshakes and its source's share
 * of them (serve_limits.h, SHARES) -- a source proven by Retry still holds
 * no more than its share, whatever --max-conns allows.  1 with *SRC its
 * bucket, or 0 (nothing counted: the Initial is dropped, and the client
 * tries again later). */
static int handshake_take(struct serve_server *srv, const ngtcp2_path *path,
                          uint16_t *src)
{
	*src = (uint16_t)limits_source_of(&srv->hs_sources, path->remote.addr,
	                                  path->remote.addrlen);
	if (limits_source_take(&srv->hs_sources, *src,
	                       (uint32_t)srv->cfg.max_handshakes_per_source) !=
	    LIMITS_OK)
		return 0;
	if (atomic_fetch_add(&srv->handshakes, 1) >= srv->cfg.max_handshakes) {
		atomic_fetch_sub(&srv->handshakes, 1);
		limits_source_give(&srv->hs_sources, *src);
		return 0;
	}
	return 1;
}

/* The handshake is done: only "h3" may have been agreed on. */
static int on_handshake_done(ngtcp2_conn *conn, void *arg)
{
	struct h3_conn *hc = arg;
	gnutls_datum_t alpn;

	(void)conn;
	handshake_over(hc);
	if (gnutls_alpn_get_selected_protocol(hc->tls, &alpn) != 0 ||
	    alpn.size != 2 || memcmp(alpn.data, "h3", 2) != 0)
		return fail_http(hc, NGHTTP3_ERR_H3_GENERAL_PROTOCOL_ERROR);
	return http_start(hc);
}

static int on_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t id,
                          uint64_t offset, const uint8_t *data, size_t len,
                          void *arg, void *sarg)
{
	struct h3_conn *hc = arg;
	nghttp3_ssize n;
	int rc;

	(void)conn;
	(void)sarg;
	rc = http_start(hc);
	if (rc != 0)
		return rc;
	if ((id & 0x3) == 0x2 && /* a client's unidirectional stream */
	    h3_control_feed(&hc->control, id, offset, data, len) !=
	    H3_CONTROL_OK)
		return fail_http(hc, NGHTTP3_ERR_H3_SETTINGS_ERROR);
	n = nghttp3_conn_read_stream(hc->http, id, data, len,
	                             (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
	if (n < 0)
		return fail_http(hc, (int)n);
	credit(hc, id, (size_t)n); /* framing; bodies in on_data */
	return 0;
}

static int on_acked_offset(ngtcp2_conn *conn, int64_t id, uint64_t offset,
                           uint64_t len, void *arg, void *sarg)
{
	struct h3_conn *hc = arg;
	int rc;

	(void)conn;
	(void)offset;
	(void)sarg;
	if (hc->http == NULL)
		return 0;
	rc = nghttp3_conn_add_ack_offset(hc->http, id, len);
	return rc == 0 ? 0 : fail_http(hc, rc);
}

static int on_quic_stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t id,
                                uint64_t code, void *arg, void *sarg)
{
	struct h3_conn *hc = arg;
	int rc;

	(void)sarg;
	if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
		code = NGHTTP3_H3_NO_ERROR;
	if (hc->http) {
		rc = nghttp3_conn_close_stream(hc->http, id, code);
		if (rc != 0 && rc != NGHTTP3_ERR_STREAM_NOT_FOUND)
			return fail_http(hc, rc);
	}
	if (!(id & 0x3)) /* a client's request stream: another may open */
		ngtcp2_conn_extend_max_streams_bidi(conn, 1);
	return 0;
}

/* The client reset its side of stream ID, or asked us to stop ours:
 * nghttp3 stops reading it (what was taken is credited already). */
static int on_read_shut(struct h3_conn *hc, int64_t id)
{
	int rc;

	if (hc->http == NULL)
		return 0;
	rc = nghttp3_conn_shutdown_stream_read(hc->http, id);
	return rc == 0 ? 0 : fail_http(hc, rc);
}

/* A stream the client resets, or whose answer it asks us to stop, draws
 * on the connection's bucket, as over HTTP/2 (serve_limits.h): requests
 * opened and reset at once ("rapid reset") cost work and never an answer.
 * Empty: CONNECTION_CLOSE(H3_EXCESSIVE_LOAD). */
static int calm_take(struct h3_conn *hc)
{
	if (limits_bucket_take(&hc->calm, hc->c->shard->now_ms) == LIMITS_OK)
		return 0;
	if (!hc->ccerr_set) {
		ngtcp2_connection_close_error_set_application_error(
		    &hc->ccerr, NGHTTP3_H3_EXCESSIVE_LOAD, NULL, 0);
		hc->ccerr_set = 1;
	}
	return NGTCP2_ERR_CALLBACK_FAILURE;
}

static int on_quic_reset(ngtcp2_conn *conn, int64_t id, uint64_t final_size,
                         uint64_t code, void *arg, void *sarg)
{
	(void)conn;
	(void)final_size;
	(void)code;
	(void)sarg;
	if (calm_take(arg) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return on_read_shut(arg, id);
}

static int on_quic_stop(ngtcp2_conn *conn, int64_t id, uint64_t code,
                        void *arg, void *sarg)
{
	(void)conn;
	(void)code;
	(void)sarg;
	if (calm_take(arg) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return on_read_shut(arg, id);
}

static int on_max_streams(ngtcp2_conn *conn, uint64_t max, void *arg)
{
	struct h3_conn *hc = arg;

	(void)conn;
	if (hc->http)
		nghttp3_conn_set_max_client_streams_bidi(hc->http, max);
	return 0;
}

static int on_max_stream_data(ngtcp2_conn *conn, int64_t id, uint64_t max,
                              void *arg, void *sarg)
{
	struct h3_conn *hc = arg;
	int rc;

	(void)conn;
	(void)max;
	(void)sarg;
	if (hc->http == NULL)
		return 0;
	rc = nghttp3_conn_unblock_stream(hc->http, id);
	return rc == 0 ? 0 : fail_http(hc, rc);
}

/* CRYPTO data for TLS.  After the handshake the GnuTLS session is gone
 * (tls_release), and a TLS 1.3 client has nothing more to send in QUIC:
 * no KeyUpdate (RFC 9001 6), no certificate, for none is asked. */
static int on_crypto_data(ngtcp2_conn *conn, ngtcp2_crypto_level level,
                          uint64_t offset, const uint8_t *data, size_t len,
                          void *arg)
{
	struct h3_conn *hc = arg;

	if (hc->tls == NULL) {
		ngtcp2_connection_close_error_set_transport_error(
		    &hc->ccerr, NGTCP2_PROTOCOL_VIOLATION, NULL, 0);
		hc->ccerr_set = 1;
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	return ngtcp2_crypto_recv_crypto_data_cb(conn, level, offset, data, len,
	                                         arg);
}

static const ngtcp2_callbacks quic_callbacks = {
	.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
	.recv_crypto_data = on_crypto_data,
	.handshake_completed = on_handshake_done,
	.encrypt = ngtcp2_crypto_encrypt_cb,
	.decrypt = ngtcp2_crypto_decrypt_cb,
	.hp_mask = ngtcp2_crypto_hp_mask_cb,
	.recv_stream_data = on_stream_data,
	.acked_stream_data_offset = on_acked_offset,
	.stream_close = on_quic_stream_close,
	.rand = on_rand,
	.get_new_connection_id = on_new_cid,
	.remove_connection_id = on_remove_cid,
	.update_key = ngtcp2_crypto_update_key_cb,
	.stream_reset = on_quic_reset,
	.extend_max_remote_streams_bidi = on_max_streams,
	.extend_max_stream_data = on_max_stream_data,
	.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
	.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
	.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
	.stream_stop_sending = on_quic_stop,
	.version_negotiation = ngtcp2_crypto_version_negotiation_cb,
};

/* ---- sending ------------------------------------------------------------ */

/* Control data for one send: IP_PKTINFO and UDP_SEGMENT. */
union h3_cmsgs {
	char buf[CMSG_SPACE(sizeof(struct in_pktinfo)) + CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};

/* MH addressed along PATH: to its remote, from its local address (the
 * socket may be bound to 0.0.0.0) through an IP_PKTINFO in CB. */
static void msg_path(struct msghdr *mh, union h3_cmsgs *cb,
                     const ngtcp2_path *path)
{
	struct in_pktinfo pi = {0};
	struct cmsghdr *cm;

	memset(cb, 0, sizeof *cb);
	mh->msg_name = path->remote.addr;
	mh->msg_namelen = path->remote.addrlen;
	mh->msg_control = cb->buf;
	mh->msg_controllen = sizeof cb->buf; /* for CMSG_FIRSTHDR */
	if (!path->local.addr || path->local.addr->sa_family != AF_INET) {
		mh->msg_controllen = 0;
		return;
	}
	cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_PKTINFO;
	cm->cmsg_len = CMSG_LEN(sizeof pi);
	pi.ipi_spec_dst = ((struct sockaddr_in *)path->local.addr)->sin_addr;
	memcpy(CMSG_DATA(cm), &pi, sizeof pi);
	mh->msg_controllen = CMSG_SPACE(sizeof pi);
}

static ssize_t msg_send(int fd, const struct msghdr *mh)
{
	ssize_t r;

	do
		r = sendmsg(fd, mh, 0);
	while (r < 0 && errno == EINTR);
	return r;
}

/* Sends one datagram of LEN bytes along PATH.  A full socket buffer
 * drops it: QUIC takes it for lost and sends again. */
static void send_datagram(struct serve_shard *sh, const ngtcp2_path *path,
                          const uint8_t *buf, size_t len)
{
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh = {0};
	union h3_cmsgs cb;

	msg_path(&mh, &cb, path);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	msg_send(sh->ufd, &mh);
}

/*
 * Sends LEN bytes of datagrams along PATH, each SEG bytes but the last:
 * one sendmsg whose UDP_SEGMENT has the kernel cut them (GSO), so that
 * the stack is walked once per batch rather than per datagram.  A
 * kernel or device that refuses it (EIO: no checksum offload; EINVAL)
 * gets them one a call, from now on for this socket.
 */
static void send_datagrams(struct serve_shard *sh, const ngtcp2_path *path,
                           const uint8_t *buf, size_t len, size_t seg)
{
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh = {0};
	union h3_cmsgs cb;
	struct cmsghdr *cm;
	uint16_t gso = (uint16_t)seg;
	size_t off, ctl;

	if (len <= seg || sh->h3->no_gso)
		goto one_by_one;
	msg_path(&mh, &cb, path);
	ctl = mh.msg_controllen;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_controllen = ctl + CMSG_SPACE(sizeof gso);
	cm = (struct cmsghdr *)(cb.buf + ctl); /* after IP_PKTINFO, if any */
	cm->cmsg_level = IPPROTO_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof gso);
	memcpy(CMSG_DATA(cm), &gso, sizeof gso);
	if (msg_send(sh->ufd, &mh) >= 0 || (errno != EIO && errno != EINVAL))
		return;
	sh->h3->no_gso = 1;
one_by_one:
	for (off = 0; off < len; off += seg)
		send_datagram(sh, path, buf + off, len - off < seg ? len - off : seg);
}

/* ---- the closing period ------------------------------------------------ */

/*
 * HC was just closed with the CONNECTION_CLOSE datagram PKT of LEN
 * bytes: its connection IDs go to a closing record that answers for
 * them for 3 PTO (RFC 9000 10.2.1: "at least three times the current
 * PTO"), H3_CLOSING_MIN_MS at least, so that a client whose copy of the
 * close was lost learns of it rather than taking a stateless reset.
 * Without memory, or with H3_CLOSING_MAX closing already, there is none
 * (a stateless reset then, as for any ID we do not know).
 */
static void closing_begin(struct h3_conn *hc, const uint8_t *pkt, size_t len)
{
	struct serve_shard *sh = hc->c->shard;
	struct h3_shard *hs = sh->h3;
	ngtcp2_duration pto = ngtcp2_conn_get_pto(hc->quic);
	struct h3_closing *cl;
	int i, n = 0;

	if (hs->nclosing >= H3_CLOSING_MAX || len > UINT16_MAX)
		return;
	cl = calloc(1, sizeof *cl + len);
	if (cl == NULL)
		return;
	cl->until_ms = (int64_t)((3 * pto + NGTCP2_MILLISECONDS - 1) /
	                         NGTCP2_MILLISECONDS);
	if (cl->until_ms < H3_CLOSING_MIN_MS)
		cl->until_ms = H3_CLOSING_MIN_MS;
	cl->until_ms += sh->now_ms;
	cl->len = (uint16_t)len;
	memcpy(cl->pkt, pkt, len);
	for (i = 0; i < H3_CIDS_MAX; i++) {
		struct h3_cid *e = &hc->cids[i];

		if (!e->used)
			continue;
		cid_unlink(hs, e);
		cl->cids[n] = *e;
		cl->cids[n].conn = NULL;
		cl->cids[n].closing = cl;
		cid_link(hs, &cl->cids[n++]);
	}
	cl->next = hs->closing;
	hs->closing = cl;
	hs->nclosing++;
}

/* A packet of LEN bytes from PATH for CL's connection: its close again,
 * to the 1st, 2nd, 4th, 8th... such packet (the rate limit RFC 9000
 * 10.2.1 asks for), and only when it is at most 3 times what came (the
 * client's address may be unproven: RFC 9000 8). */
static void closing_answer(struct serve_shard *sh, const ngtcp2_path *path,
                           struct h3_closing *cl, size_t len)
{
	uint32_t k = ++cl->packets;

	if ((k & (k - 1)) == 0 && cl->len <= 3 * len)
		send_datagram(sh, path, cl->pkt, cl->len);
}

/* Frees HS's closing records whose period is over at NOW_MS; all of
 * them when ALL (the shard closes). */
static void closing_expire(struct h3_shard *hs, int64_t now_ms, int all)
{
	struct h3_closing **pp = &hs->closing, *cl;
	int i;

	while ((cl = *pp) != NULL) {
		if (!all && cl->until_ms > now_ms) {
			pp = &cl->next;
			continue;
		}
		*pp = cl->next;
		for (i = 0; i < H3_CIDS_MAX; i++)
			if (cl->cids[i].used)
				cid_unlink(hs, &cl->cids[i]);
		hs->nclosing--;
		free(cl);
	}
}

/* The connection ends: one CONNECTION_CLOSE unless SILENT (idle,
 * draining, a handshake that never finished), then its state goes, but
 * for its closing period's (closing_begin). */
static void conn_fail(struct h3_conn *hc, int rv)
{
	struct serve_conn *c = hc->c;
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	uint8_t buf[H3_PKT_MAX];
	ngtcp2_ssize n;

	if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_DROP_CONN ||
	    rv == NGTCP2_ERR_IDLE_CLOSE || rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT ||
	    ngtcp2_conn_is_in_closing_period(hc->quic) ||
	    ngtcp2_conn_is_in_draining_period(hc->quic))
		goto out_close;
	if (!hc->ccerr_set && rv == NGTCP2_ERR_CRYPTO)
		ngtcp2_connection_close_error_set_transport_error_tls_alert(
		    &hc->ccerr, ngtcp2_conn_get_tls_alert(hc->quic), NULL, 0);
	else if (!hc->ccerr_set)
		ngtcp2_connection_close_error_set_transport_error_liberr(
		    &hc->ccerr, rv, NULL, 0);
	ngtcp2_path_storage_zero(&ps);
	n = ngtcp2_conn_write_connection_close(hc->quic, &ps.path, &pi, buf,
	                                       sizeof buf, &hc->ccerr, now_ns());
	if (n > 0) {
		send_datagram(c->shard, &ps.path, buf, (size_t)n);
		closing_begin(hc, buf, (size_t)n);
	}
out_close:
	serve_conn_close(c); /* h3_free */
}

/* nghttp3's next stream data, and whether the connection may take any
 * now.  Returns the vectors filled (0: none), or an nghttp3 error. */
static nghttp3_ssize http_pending(struct h3_conn *hc, int64_t *id, int *fin,
                                  nghttp3_vec *vec, size_t cnt)
{
	*id = -1;
	*fin = 0;
	if (hc->http == NULL || ngtcp2_conn_get_max_data_left(hc->quic) == 0)
		return 0;
	return nghttp3_conn_writev_stream(hc->http, id, fin, vec, cnt);
}

/* One connection's datagrams in the shard's tx buffer, on their way to
 * one send_datagrams: LEN bytes so far, N datagrams of SEG bytes along
 * PS (the last of a batch may be shorter; a longer one, such as a path
 * MTU probe, starts a batch of its own). */
struct h3_batch {
	ngtcp2_path_storage ps;
	size_t len, seg;
	int n;
};

/* Sends B's datagrams and empties it. */
static void batch_send(struct serve_shard *sh, struct h3_batch *b)
{
	if (b->len > 0)
		send_datagrams(sh, &b->ps.path, sh->h3->tx, b->len, b->seg);
	b->len = 0;
	b->n = 0;
}

/* Adds the datagram of N bytes that ngtcp2 wrote at the end of B (in
 * the shard's tx buffer) along PATH, sending what must go first or what
 * cannot grow. */
static void batch_add(struct serve_shard *sh, struct h3_batch *b,
                      const ngtcp2_path *path, size_t n)
{
	uint8_t *tx = sh->h3->tx;
	int cap = sh->h3->no_gso ? 1 : H3_GSO_SEGS;

	if (b->n > 0 && (n > b->seg || !ngtcp2_path_eq(path, &b->ps.path))) {
		size_t at = b->len;

		batch_send(sh, b);
		memmove(tx, tx + at, n);
	}
	if (b->n == 0) {
		ngtcp2_path_copy(&b->ps.path, path);
		b->seg = n;
	}
	b->len += n;
	b->n++;
	if (n < b->seg || b->n >= cap)
		batch_send(sh, b);
}

/* ---- the shard's timers ------------------------------------------------
 * Every connection sits in the shard's binary min-heap on the expiry
 * ngtcp2 gave it after it last ran (due), so h3_timers handles the
 * connections that are due and looks at no other: asking each of them at
 * every turn of the loop left a busy connection 0.39x its rate beside
 * 3,000 idle ones.  A connection's expiry moves only when ngtcp2 runs for
 * it, and every such run -- a datagram read, a timer handled, an answer
 * or a cut stream submitted -- ends in conn_write, which renews it
 * (timer_update); h3_sweep renews every one again each 250 ms. */
static void heap_put(struct h3_shard *hs, struct h3_conn *hc, int i)
{
	hs->heap[i] = hc;
	hc->heap_at = i;
}

static void heap_up(struct h3_shard *hs, int i)
{
	struct h3_conn *hc = hs->heap[i];
	while (i > 0 && hs->heap[(i - 1) / 2]->due > hc->due) {
		heap_put(hs, hs->heap[(i - 1) / 2], i);
		i = (i - 1) / 2;
	}
	heap_put(hs, hc, i);
}

static void heap_down(struct h3_shard *hs, int i)
{
	struct h3_conn *hc = hs->heap[i];
	for (;;) {
		int l = 2 * i + 1, m = i;
		ngtcp2_tstamp least = hc->due;
		if (l < hs->nheap && hs->heap[l]->due < least)
			m = l, least = hs->heap[l]->due;
		if (l + 1 < hs->nheap && hs->heap[l + 1]->due < least)
			m = l + 1;
		if (m == i)
			break;
		heap_put(hs, hs->heap[m], i);
		i = m;
	}
	heap_put(hs, hc, i);
}

/* Makes room in HS's heap for one more.  0, or -1 (out of memory). */
static int heap_reserve(struct h3_shard *hs)
{
	if (hs->nheap < hs->capheap)
		return 0;
	int cap = hs->capheap ? 2 * hs->capheap : 64;
	struct h3_conn **h = realloc(hs->heap, (size_t)cap * sizeof *h);
	if (h == NULL)
		return -1;
	hs->heap = h;
	hs->capheap = cap;
	return 0;
}

/* Takes HC out of the heap (a no-op when it is out). */
static void timer_remove(struct h3_shard *hs, struct h3_conn *hc)
{
	int i = hc->heap_at;
	if (i < 0)
		return;
	hc->heap_at = -1;
	struct h3_conn *last = hs->heap[--hs->nheap];
	if (last == hc)
		return;
	heap_put(hs, last, i);
	heap_up(hs, i);
	heap_down(hs, last->heap_at);
}

/* HC's expiry as ngtcp2 has it now, in the heap (put back if h3_timers
 * took it out: the room is there, the heap never shrinks). */
static void timer_update(struct h3_shard *hs, struct h3_conn *hc)
{
	hc->due = ngtcp2_conn_get_expiry(hc->quic);
	if (hc->heap_at < 0) {
		if (heap_reserve(hs) < 0)
			abort(); /* unreachable: the room was reserved at accept */
		heap_put(hs, hc, hs->nheap++);
	}
	heap_up(hs, hc->heap_at);
	heap_down(hs, hc->heap_at);
}

/* Sends what ngtcp2 and nghttp3 have, up to H3_TX_BURST datagrams (the
 * rest when ngtcp2's pacing timer says, h3_timers), batched for GSO.
 * Returns 0, or -1 when the connection was closed. */
static int conn_write(struct h3_conn *hc)
{
	struct serve_shard *sh = hc->c->shard;
	ngtcp2_tstamp ts = now_ns();
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	struct h3_batch b = {.len = 0};
	/* the largest datagram ngtcp2 may write: a path MTU probe's size */
	size_t max = ngtcp2_conn_get_max_tx_udp_payload_size(hc->quic);
	int sent = 0;

	if (max > H3_PKT_MAX)
		max = H3_PKT_MAX;
	ngtcp2_path_storage_zero(&ps);
	ngtcp2_path_storage_zero(&b.ps);
	while (sent < H3_TX_BURST) {
		nghttp3_vec vec[16];
		int64_t id;
		int fin;
		nghttp3_ssize nv = http_pending(hc, &id, &fin, vec, 16);
		ngtcp2_ssize n, taken = -1;
		uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;

		if (nv < 0) {
			fail_http(hc, (int)nv);
			conn_fail(hc, NGTCP2_ERR_CALLBACK_FAILURE);
			return -1;
		}
		if (fin)
			flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
		n = ngtcp2_conn_writev_stream(hc->quic, &ps.path, &pi,
		                              sh->h3->tx + b.len, max, &taken,
		                              flags, id, (const ngtcp2_vec *)vec,
		                              (size_t)nv, ts);
		if (n < 0) {
			if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
				nghttp3_conn_block_stream(hc->http, id);
				continue;
			}
			if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
				nghttp3_conn_shutdown_stream_write(hc->http, id);
				continue;
			}
			if (n == NGTCP2_ERR_WRITE_MORE) {
				nghttp3_conn_add_write_offset(hc->http, id, (size_t)taken);
				continue;
			}
			conn_fail(hc, (int)n);
			return -1;
		}
		if (taken >= 0 &&
		    nghttp3_conn_add_write_offset(hc->http, id, (size_t)taken) != 0) {
			conn_fail(hc, NGTCP2_ERR_CALLBACK_FAILURE);
			return -1;
		}
		if (n == 0)
			break; /* nothing more, or congestion-limited */
		batch_add(sh, &b, &ps.path, (size_t)n);
		sent++;
	}
	batch_send(sh, &b);
	/* no pacing before the handshake is done: ngtcp2 0.12 paces from
	 * the first datagram at its guess of a 333 ms RTT, which held the
	 * server's second handshake datagram back ~25 ms; the flight is
	 * bounded by the initial window and the 3x anti-amplification
	 * limit, a burst RFC 9002 7.7 allows */
	if (ngtcp2_conn_get_handshake_completed(hc->quic))
		ngtcp2_conn_update_pkt_tx_time(hc->quic, ts);
	timer_update(sh->h3, hc);
	return 0;
}

/* ---- connections -------------------------------------------------------- */

static ngtcp2_conn *ref_get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct h3_conn *)ref->user_data)->quic;
}

/* Frees HC's GnuTLS session, if any, and lets go of its certificate. */
static void tls_free(struct h3_conn *hc)
{
	if (hc->tls)
		gnutls_deinit(hc->tls);
	hc->tls = NULL;
	h3_cert_put(hc->cert);
	hc->cert = NULL;
}

/* HC's GnuTLS session: the certificate, TLS 1.3, ALPN "h3" only,
 * session tickets with the server's key (sent by tls_release, not by
 * GnuTLS), early data unless --no-0rtt (QUIC lifts TLS's size limit,
 * RFC 9001 4.6.1; the shard's anti-replay window checks it), and
 * ngtcp2's QUIC hooks.  Returns 0 or -1. */
static int conn_tls(struct h3_conn *hc, struct h3_creds *cr)
{
	struct serve_shard *sh = hc->c->shard;
	gnutls_datum_t alpn = {(unsigned char *)"h3", 2};
	int early = !sh->srv->cfg.h3_no_0rtt;

	if (gnutls_init(&hc->tls, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA |
	                              GNUTLS_NO_AUTO_SEND_TICKET |
	                              (early ? GNUTLS_ENABLE_EARLY_DATA : 0)) != 0) {
		hc->tls = NULL;
		return -1;
	}
	hc->cert = cert_get(atomic_load(&cr->cert)); /* tls_free lets go */
	if (gnutls_priority_set(hc->tls, cr->prio) != 0 ||
	    gnutls_session_ticket_enable_server(hc->tls, &cr->ticket) != 0 ||
	    ngtcp2_crypto_gnutls_configure_server_session(hc->tls) != 0 ||
	    gnutls_credentials_set(hc->tls, GNUTLS_CRD_CERTIFICATE,
	                           hc->cert->cred) != 0 ||
	    gnutls_alpn_set_protocols(hc->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0)
		return -1;
	if (early) {
		gnutls_anti_replay_enable(hc->tls, sh->h3->anti_replay);
		if (gnutls_record_set_max_early_data_size(hc->tls, 0xffffffffu) != 0)
			return -1;
	}
	hc->ref.get_conn = ref_get_conn;
	hc->ref.user_data = hc;
	gnutls_session_set_ptr(hc->tls, &hc->ref);
	ngtcp2_conn_set_tls_native_handle(hc->quic, hc->tls);
	return 0;
}

/* Our transport parameters: the bounds of serve_h3.h.  ODCID is the
 * DCID of the client's first Initial; RETRY_SCID the one our Retry gave
 * it, or NULL when there was none (RFC 9000 7.3). */
static void conn_params(struct serve_server *srv, const ngtcp2_cid *odcid,
                        const ngtcp2_cid *retry_scid, const ngtcp2_cid *scid,
                        ngtcp2_transport_params *p)
{
	ngtcp2_transport_params_default(p);
	p->initial_max_streams_bidi = H3_MAX_STREAMS;
	p->initial_max_streams_uni = 3; /* the client's control and QPACK */
	p->initial_max_stream_data_bidi_local = H3_STREAM_WINDOW;
	p->initial_max_stream_data_bidi_remote = H3_STREAM_WINDOW;
	p->initial_max_stream_data_uni = H3_STREAM_WINDOW;
	p->initial_max_data = H3_CONN_WINDOW;
	p->max_idle_timeout = (ngtcp2_duration)srv->cfg.idle_timeout_ms *
	                      NGTCP2_MILLISECONDS;
	p->original_dcid = *odcid;
	if (retry_scid) {
		p->retry_scid = *retry_scid;
		p->retry_scid_present = 1;
	}
	p->stateless_reset_token_present =
	    ngtcp2_crypto_generate_stateless_reset_token(
	        p->stateless_reset_token, srv->h3->secret,
	        sizeof srv->h3->secret, scid) == 0;
}

/* Connections in their handshake a shard takes before it asks new ones
 * for a Retry: H3_HANDSHAKES_MAX, or a quarter of --max-conns. */
static int handshake_budget(const struct serve_server *srv)
{
	int n = srv->cfg.max_conns / 4;

	return n < 1 ? 1 : n > H3_HANDSHAKES_MAX ? H3_HANDSHAKES_MAX : n;
}

/* Answers the Initial HD from PATH with a Retry whose token (sealed
 * with the process's retry secret) binds the client's address, the
 * Retry's SCID and the DCID the client chose, for H3_RETRY_TOKEN_S. */
static void send_retry(struct serve_shard *sh, const ngtcp2_path *path,
                       const ngtcp2_pkt_hd *hd)
{
	struct h3_creds *cr = sh->srv->h3;
	uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN], buf[H3_PKT_MAX];
	ngtcp2_ssize tlen, n;
	ngtcp2_cid scid;

	scid.datalen = H3_CIDLEN;
	random_fill(scid.data, H3_CIDLEN);
	tlen = ngtcp2_crypto_generate_retry_token(
	    token, cr->retry_secret, sizeof cr->retry_secret, hd->version,
	    path->remote.addr, path->remote.addrlen, &scid, &hd->dcid, now_ns());
	if (tlen < 0)
		return;
	n = ngtcp2_crypto_write_retry(buf, sizeof buf, hd->version, &hd->scid,
	                              &scid, &hd->dcid, token, (size_t)tlen);
	if (n > 0)
		send_datagram(sh, path, buf, (size_t)n);
}

/*
 * Address validation (RFC 9000 8.1) of the Initial HD from PATH.  A
 * Retry token of ours that checks out: returns 1, *ODCID the DCID of
 * the client's first Initial (the address is proven).  A Retry token
 * that does not (forged, stale, another address): an INVALID_TOKEN
 * close, which costs us no state, and -1.  No token (or one of another
 * kind, which we never issue): a Retry and -1 when the shard's
 * handshakes are past their budget or --h3-retry always, else 0 and
 * *ODCID the packet's DCID.  Neither reply is larger than the Initial,
 * so neither amplifies a spoofed source.
 */
static int initial_validate(struct serve_shard *sh, const ngtcp2_path *path,
                            const ngtcp2_pkt_hd *hd, ngtcp2_cid *odcid)
{
	struct serve_server *srv = sh->srv;
	struct h3_creds *cr = srv->h3;
	uint8_t buf[H3_PKT_MAX];
	ngtcp2_ssize n;

	*odcid = hd->dcid;
	if (hd->token.len > 0 &&
	    hd->token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
		if (ngtcp2_crypto_verify_retry_token(
		        odcid, hd->token.base, hd->token.len, cr->retry_secret,
		        sizeof cr->retry_secret, hd->version, path->remote.addr,
		        path->remote.addrlen, &hd->dcid, H3_RETRY_TOKEN_S * NGTCP2_SECONDS,
		        now_ns()) == 0)
			return 1;
		n = ngtcp2_crypto_write_connection_close(
		    buf, sizeof buf, hd->version, &hd->scid, &hd->dcid,
		    NGTCP2_INVALID_TOKEN, NULL, 0);
		if (n > 0)
			send_datagram(sh, path, buf, (size_t)n);
		return -1;
	}
	if (srv->cfg.h3_retry_always ||
	    sh->h3->handshaking >= handshake_budget(srv)) {
		send_retry(sh, path, hd);
		return -1;
	}
	return 0;
}

/* A new connection from the Initial packet PKT, when ngtcp2_accept takes
 * it, its address is proven or need not be (initial_validate) and
 * --max-conns allows.  Returns it, or NULL (the packet is then dropped,
 * or answered with a Retry). */
static struct h3_conn *conn_accept(struct serve_shard *sh,
                                   const ngtcp2_path *path,
                                   const uint8_t *pkt, size_t len)
{
	struct serve_server *srv = sh->srv;
	ngtcp2_transport_params params;
	ngtcp2_settings settings;
	struct serve_conn *c = NULL;
	struct h3_conn *hc = NULL;
	ngtcp2_pkt_hd hd;
	ngtcp2_cid scid, odcid;
	uint16_t src;
	int validated;

	if (ngtcp2_accept(&hd, pkt, len) != 0 || atomic_load(&srv->stopping))
		return NULL;
	validated = initial_validate(sh, path, &hd, &odcid);
	if (validated < 0 || !handshake_take(srv, path, &src))
		return NULL;
	if (atomic_fetch_add(&srv->conns, 1) >= srv->cfg.max_conns)
		goto out_uncount;
	c = calloc(1, sizeof *c);
	hc = calloc(1, sizeof *hc);
	if (c == NULL || hc == NULL)
		goto out_uncount;
	c->fd = -1;
	c->h3 = hc;
	hc->c = c;
	c->shard = sh;
	scid.datalen = H3_CIDLEN;
	random_fill(scid.data, H3_CIDLEN);
	ngtcp2_settings_default(&settings);
	settings.initial_ts = now_ns();
	settings.handshake_timeout = (ngtcp2_duration)srv->cfg.header_timeout_ms *
	                             NGTCP2_MILLISECONDS;
	/* 1200 bytes until path MTU discovery (RFC 9000 14.3) has proven
	 * more, up to ngtcp2's 1452: IPv4 in a 1500-byte Ethernet MTU */
	settings.max_tx_udp_payload_size = H3_UDP_PAYLOAD_MAX;
	if (validated) /* the 3x anti-amplification limit is lifted */
		settings.token = hd.token;
	conn_params(srv, &odcid, validated ? &hd.dcid : NULL, &scid, &params);
	if (ngtcp2_conn_server_new(&hc->quic, &hd.scid, &scid, path, hd.version,
	                           &quic_callbacks, &settings, &params,
	                           sh->h3->memstat ? &sh->h3->quic_alloc : NULL,
	                           hc) != 0)
		goto out_uncount;
	if (conn_tls(hc, srv->h3) < 0 || cid_add(hc, &hd.dcid) < 0 ||
	    cid_add(hc, &scid) < 0 || heap_reserve(sh->h3) < 0)
		goto out_free;
	hc->heap_at = -1;
	timer_update(sh->h3, hc);
	hc->next = sh->h3->conns;
	if (hc->next)
		hc->next->prev = hc;
	sh->h3->conns = hc;
	limits_bucket_fill(&hc->calm, sh->now_ms);
	h3_control_init(&hc->control);
	hc->handshaking = 1; /* handshake_take counted it */
	hc->src = src;
	sh->h3->handshaking++;
	serve_conn_adopt(sh, c);
	return hc;
out_free:
	for (int i = 0; i < H3_CIDS_MAX; i++)
		if (hc->cids[i].used)
			cid_unlink(sh->h3, &hc->cids[i]);
	tls_free(hc);
	ngtcp2_conn_del(hc->quic);
out_uncount:
	atomic_fetch_sub(&srv->conns, 1);
	atomic_fetch_sub(&srv->handshakes, 1);
	limits_source_give(&srv->hs_sources, src);
	free(hc);
	free(c);
	return NULL;
}

/*
 * A short-header packet of PKTLEN bytes for DCID, which no connection of
 * ours has: a stateless reset (RFC 9000 10.3), with the token that DCID
 * was given if it was ours (the same secret and HKDF), so that a client
 * whose connection we forgot (a restart, a lost close) stops at once.
 * Smaller than the packet, never for one under 22 bytes (so no two
 * endpoints can bounce resets forever), and at most H3_RESETS_MAX a
 * sweep per shard (no amplification source for a spoofed flood).
 */
static void stateless_reset(struct serve_shard *sh, const ngtcp2_path *path,
                            const uint8_t *dcid, size_t pktlen)
{
	uint8_t buf[64], rnd[64], token[NGTCP2_STATELESS_RESET_TOKENLEN];
	struct h3_creds *cr = sh->srv->h3;
	size_t len = pktlen <= 43 ? pktlen - 1 : 42;
	ngtcp2_cid cid;
	ngtcp2_ssize n;

	if (pktlen < 22 || sh->h3->resets >= H3_RESETS_MAX)
		return;
	sh->h3->resets++;
	ngtcp2_cid_init(&cid, dcid, H3_CIDLEN);
	if (ngtcp2_crypto_generate_stateless_reset_token(token, cr->secret,
	                                                 sizeof cr->secret,
	                                                 &cid) != 0)
		return;
	random_fill(rnd, len - sizeof token);
	n = ngtcp2_pkt_write_stateless_reset(buf, len, token, rnd,
	                                     len - sizeof token);
	if (n > 0)
		send_datagram(sh, path, buf, (size_t)n);
}

/*
 * A long-header packet in a version we do not speak, of 1200 bytes or
 * more (a client's first Initial is; ngtcp2_pkt_decode_version_cid
 * checks): a Version Negotiation packet listing v1 (RFC 9000 6,
 * 17.2.1), the client's connection IDs swapped.  At most 7 + 2 x 255 + 4
 * bytes, under half the packet, so no amplification; counted with the
 * stateless resets (H3_RESETS_MAX a sweep per shard).
 */
static void version_negotiate(struct serve_shard *sh, const ngtcp2_path *path,
                              const ngtcp2_version_cid *vc)
{
	static const uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
	uint8_t buf[7 + 2 * 255 + sizeof versions], unused;
	ngtcp2_ssize n;

	if (sh->h3->resets >= H3_RESETS_MAX)
		return;
	sh->h3->resets++;
	random_fill(&unused, 1);
	n = ngtcp2_pkt_write_version_negotiation(
	    buf, sizeof buf, unused, vc->scid, vc->scidlen, vc->dcid, vc->dcidlen,
	    versions, sizeof versions / sizeof versions[0]);
	if (n > 0)
		send_datagram(sh, path, buf, (size_t)n);
}

/* HC's handshake is over: one session ticket goes out (GnuTLS seals it
 * and hands it to ngtcp2, which copies it into the CRYPTO stream: about
 * 4 KB it keeps to the end, serve_h3.h MEMORY), then the GnuTLS session
 * (about 9 KB, and what it kept of the handshake) goes.  QUIC's keys are ngtcp2's, key updates derive
 * from them, and a later resumption needs only the ticket, which the
 * client holds.  A ticket that cannot be made costs the client its next
 * resumption, not this connection. */
static void tls_release(struct h3_conn *hc)
{
	if (hc->tls == NULL || !ngtcp2_conn_get_handshake_completed(hc->quic))
		return;
	(void)gnutls_session_ticket_send(hc->tls, 1, 0);
	ngtcp2_conn_set_tls_native_handle(hc->quic, NULL);
	tls_free(hc);
}

/* HC read datagrams: what it has to send goes, and its requests move. */
static void conn_flush(struct h3_conn *hc)
{
	if (conn_write(hc) == 0)
		serve_conn_progress(hc->c);
}

/*
 * One datagram from REMOTE to LOCAL.  Not QUIC, or not for a connection
 * of ours and not an acceptable Initial: dropped.  *PENDING is the
 * connection that read the datagrams before it and has not written
 * since: it writes first when this one is for another, and this one's
 * connection becomes *PENDING (NULL once closed), so that a run of
 * acknowledgements from one client makes one conn_write, with the
 * whole window they opened in few sends.
 */
static void datagram(struct serve_shard *sh, struct sockaddr_in *local,
                     struct sockaddr_in *remote, const uint8_t *pkt,
                     size_t len, struct h3_conn **pending)
{
	ngtcp2_path path = {
		{(ngtcp2_sockaddr *)local, sizeof *local},
		{(ngtcp2_sockaddr *)remote, sizeof *remote},
		NULL,
	};
	ngtcp2_pkt_info pi = {0};
	ngtcp2_version_cid vc;
	struct h3_conn *hc;
	struct h3_cid *e;
	int rv;

	/* ngtcp2 asserts on an empty datagram rather than refusing it */
	if (len == 0)
		return;
	rv = ngtcp2_pkt_decode_version_cid(&vc, pkt, len, H3_CIDLEN);
	if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
		version_negotiate(sh, &path, &vc);
		return;
	}
	if (rv != 0)
		return; /* not QUIC, or cut short */
	e = cid_find(sh->h3, vc.dcid, vc.dcidlen);
	hc = e ? e->conn : NULL;
	if (*pending && *pending != hc) {
		conn_flush(*pending);
		*pending = NULL;
	}
	if (e && e->closing) {
		closing_answer(sh, &path, e->closing, len);
		return;
	}
	if (hc == NULL) {
		if (!(pkt[0] & 0x80)) { /* a short header: not ours (now) */
			stateless_reset(sh, &path, vc.dcid, len);
			return;
		}
		hc = conn_accept(sh, &path, pkt, len);
		if (hc == NULL)
			return;
	}
	*pending = NULL;
	rv = ngtcp2_conn_read_pkt(hc->quic, &path, &pi, pkt, len, now_ns());
	if (rv != 0) {
		conn_fail(hc, rv);
		return;
	}
	tls_release(hc); /* not in on_handshake_done: GnuTLS is on the stack */
	*pending = hc;
}

void h3_input(struct serve_shard *sh)
{
	struct h3_conn *pending = NULL;
	int i;

	for (i = 0; i < H3_RX_BATCH; i++) {
		union {
			char buf[CMSG_SPACE(sizeof(struct in_pktinfo)) +
			         CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} cbuf;
		struct sockaddr_in remote, local = sh->srv->cfg.addr;
		struct iovec iov = {sh->scratch, SERVE_SCRATCH};
		struct msghdr mh = {0};
		struct cmsghdr *cm;
		ssize_t n, off;
		int seg = 0;

		mh.msg_name = &remote;
		mh.msg_namelen = sizeof remote;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof cbuf.buf;
		n = recvmsg(sh->ufd, &mh, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break; /* EAGAIN: the socket is level-triggered */
		if (mh.msg_namelen != sizeof remote || remote.sin_family != AF_INET)
			continue;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;
				memcpy(&pi, CMSG_DATA(cm), sizeof pi);
				local.sin_addr = pi.ipi_addr;
			} else if (cm->cmsg_level == IPPROTO_UDP &&
			           cm->cmsg_type == UDP_GRO) {
				memcpy(&seg, CMSG_DATA(cm), sizeof seg);
			}
		if (seg <= 0 || seg > n)
			seg = (int)n; /* one datagram, not a GRO train */
		/* a GRO train: datagrams of SEG bytes (the last may be
		 * shorter) that the kernel joined, one flow's, in order */
		off = 0;
		do {
			datagram(sh, &local, &remote,
			         (const uint8_t *)sh->scratch + off,
			         (size_t)(n - off < seg ? n - off : seg), &pending);
			off += seg;
		} while (off < n);
	}
	if (pending)
		conn_flush(pending);
}

int h3_timers(struct serve_shard *sh, int limit)
{
	struct h3_shard *hs = sh->h3;
	ngtcp2_tstamp now = now_ns();
	ngtcp2_tstamp next = now + (ngtcp2_tstamp)limit * NGTCP2_MILLISECONDS;
	struct h3_conn *hc, *due = NULL, **tail = &due;

	/* those due now, out of the heap first: each is handled once here
	 * even when its expiry stays due (pacing with nothing it may send) */
	while (hs->nheap > 0 && hs->heap[0]->due <= now) {
		hc = hs->heap[0];
		timer_remove(hs, hc);
		hc->due_next = NULL;
		*tail = hc;
		tail = &hc->due_next;
	}
	while ((hc = due) != NULL) {
		due = hc->due_next;
		int rv = ngtcp2_conn_handle_expiry(hc->quic, now);
		if (rv != 0)
			conn_fail(hc, rv); /* closes: h3_free */
		else
			conn_write(hc); /* back in the heap, or closed */
	}
	if (hs->nheap > 0 && hs->heap[0]->due < next)
		next = hs->heap[0]->due;
	if (next <= now)
		return 1; /* due again at once (pacing): soon, not busily */
	return (int)((next - now + NGTCP2_MILLISECONDS - 1) / NGTCP2_MILLISECONDS);
}

/* SH's GnuTLS anti-replay context (its default 10 s window), adding to
 * the server's store.  0, or -1 with errno. */
static int replay_window_open(struct serve_shard *sh)
{
	if (gnutls_anti_replay_init(&sh->h3->anti_replay) < 0) {
		sh->h3->anti_replay = NULL;
		errno = ENOMEM;
		return -1;
	}
	gnutls_anti_replay_set_add_function(sh->h3->anti_replay, replay_add);
	gnutls_anti_replay_set_ptr(sh->h3->anti_replay, sh->srv->h3->replay);
	return 0;
}

int h3_shard_open(struct serve_shard *sh, const struct sockaddr_in *addr)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &sh->ufd};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0)
		return -1;
	sh->h3 = calloc(1, sizeof *sh->h3);
	if (sh->h3) {
		sh->h3->quic_alloc = (ngtcp2_mem){&sh->h3->quic_mem, mem_malloc,
		                                  mem_free, mem_calloc, mem_realloc};
		sh->h3->http_alloc = (nghttp3_mem){&sh->h3->http_mem, mem_malloc,
		                                   mem_free, mem_calloc, mem_realloc};
		sh->h3->memstat = getenv("KEEL_H3_MEMSTAT") != NULL;
	}
	/* IP_PKTINFO: which of our addresses a datagram came to, to answer
	 * from it when bound to 0.0.0.0 */
	if (sh->h3 == NULL || replay_window_open(sh) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) < 0 ||
	    bind(fd, (const struct sockaddr *)addr, sizeof *addr) < 0)
		goto out_close;
	/* UDP_GRO: a flow's datagrams may come joined (h3_input splits
	 * them); a kernel without it hands them one by one, as before */
	(void)setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof one);
	/* room for many clients' bursts (request bodies) between two
	 * reads: a datagram the full buffer drops costs its sender a loss
	 * and a smaller window; net.core.rmem_max caps it (best effort) */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){H3_RCVBUF},
	                 sizeof(int));
	sh->ufd = fd;
	/* level-triggered: h3_input reads a batch, then lets others run */
	if (epoll_ctl(sh->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		sh->ufd = -1;
		goto out_close;
	}
	return 0;
out_close:
	{
		int e = errno;
		close(fd);
		if (sh->h3 && sh->h3->anti_replay)
			gnutls_anti_replay_deinit(sh->h3->anti_replay);
		free(sh->h3);
		sh->h3 = NULL;
		errno = e;
	}
	return -1;
}

void h3_shard_close(struct serve_shard *sh)
{
	if (sh->ufd >= 0) {
		epoll_ctl(sh->epfd, EPOLL_CTL_DEL, sh->ufd, NULL);
		close(sh->ufd);
		sh->ufd = -1;
	}
	if (sh->h3 && sh->h3->anti_replay)
		gnutls_anti_replay_deinit(sh->h3->anti_replay);
	if (sh->h3) {
		closing_expire(sh->h3, 0, 1);
		free(sh->h3->heap);
	}
	free(sh->h3); /* its connections were closed (shard_stop) */
	sh->h3 = NULL;
}

/* ST broke a limit (its header section or its body too slow): reset
 * both ways, its budget given back.  Returns LIMITS_CLOSE when HC has
 * done it too often (serve_limits.h, limits_cut). */
static int stream_cut(struct h3_conn *hc, struct h3_stream *st)
{
	st->answered = 1;
	stream_body_free(hc->c, st);
	ngtcp2_conn_shutdown_stream(hc->quic, st->id, NGHTTP3_H3_REQUEST_CANCELLED);
	return limits_cut(&hc->cuts, 1);
}

/* HC's streams against --header-timeout and --body-min-rate, as HTTP/2's
 * (serve_limits.h).  Returns -1 when the connection was closed. */
static int conn_limits(struct h3_conn *hc, int64_t now_ms)
{
	const struct limits_config *lim = &hc->c->shard->srv->limits;
	struct h3_stream *st;
	int cut = 0, verdict = LIMITS_OK;

	for (st = hc->streams; st && verdict != LIMITS_CLOSE; st = st->next) {
		if (st->answered || st->closed || st->req_done)
			continue;
		if (!st->headers_done ? limits_head_due(lim, st->since_ms, now_ms)
		                      : limits_body_check(lim, &st->rate, st->received,
		                                          now_ms) == LIMITS_CUT) {
			verdict = stream_cut(hc, st);
			cut = 1;
		}
	}
	if (verdict == LIMITS_CLOSE) {
		ngtcp2_connection_close_error_set_application_error(
		    &hc->ccerr, NGHTTP3_H3_EXCESSIVE_LOAD, NULL, 0);
		hc->ccerr_set = 1;
		conn_fail(hc, NGTCP2_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return cut ? conn_write(hc) : 0;
}

void h3_sweep(struct serve_shard *sh)
{
	struct h3_conn *hc, *after;

	if (sh->h3 == NULL)
		return;
	sh->h3->resets = 0;
	closing_expire(sh->h3, sh->now_ms, 0);
	mem_report(sh);
	for (hc = sh->h3->conns; hc; hc = after) {
		after = hc->next; /* HC may close */
		if (conn_limits(hc, sh->now_ms) == 0)
			timer_update(sh->h3, hc); /* (a run conn_write missed) */
	}
}

void h3_flush(struct serve_conn *c)
{
	struct h3_conn *hc = c->h3;
	struct h3_stream *st, *after;
	int waiting = 0;

	for (st = hc->streams; st; st = after) {
		after = st->next;
		if (st->out == NULL || st->submitted)
			continue;
		if (!st->out->ready) {
			waiting++;
			continue;
		}
		if (st->closed) /* the client went away: nobody to tell */
			stream_free(hc, st);
		else
			stream_submit(hc, st);
	}
	if (conn_write(hc) < 0)
		return;
	if (hc->stopping && waiting == 0) {
		ngtcp2_connection_close_error_set_application_error(
		    &hc->ccerr, NGHTTP3_H3_NO_ERROR, NULL, 0);
		hc->ccerr_set = 1;
		conn_fail(hc, NGTCP2_ERR_CALLBACK_FAILURE);
	}
}

void h3_stop(struct serve_conn *c)
{
	if (c->flags & CONN_DEAD)
		return;
	c->h3->stopping = 1;
	h3_flush(c);
}

void h3_free(struct serve_conn *c)
{
	struct h3_conn *hc = c->h3;
	struct h3_shard *hs;
	int i;

	if (hc == NULL)
		return;
	hs = c->shard->h3;
	handshake_over(hc);
	if (hc->http)
		nghttp3_conn_del(hc->http);
	hc->http = NULL;
	ngtcp2_conn_del(hc->quic);
	tls_free(hc);
	while (hc->streams)
		stream_free(hc, hc->streams);
	for (i = 0; i < H3_CIDS_MAX; i++)
		if (hc->cids[i].used)
			cid_unlink(hs, &hc->cids[i]);
	timer_remove(hs, hc);
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		hs->conns = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	free(hc);
	c->h3 = NULL;
}
