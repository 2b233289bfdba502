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
 *   our three unidirectional streams are opened (h3_http_start).  Every
 *   datagram is read by ngtcp2, whose stream data goes to nghttp3, whose
 *   callbacks build the requests (on_begin_headers .. on_end_stream).
 *   After each datagram, timer and completion, h3_conn_write sends what
 *   there is.  A failure (ngtcp2's, or one a callback flagged in ccerr)
 *   sends one CONNECTION_CLOSE and ends the connection (h3_conn_fail),
 *   but for a closing record that sends the close again to packets that
 *   still come for it (closing_begin); idle, handshake timeout and
 *   draining end it without one.
 *
 * Callbacks never free the connection (ngtcp2 and nghttp3 are on the
 * stack): they fail with NGTCP2_ERR_CALLBACK_FAILURE, ccerr set, and
 * h3_conn_fail acts after ngtcp2 returns.
 *
 * FILES (serve_h3_internal.h holds what they share)
 *   serve_h3.c          the QUIC connection: accept, address validation
 *                       and Retry, connection IDs, ngtcp2's callbacks,
 *                       timers, h3_conn_write, the UDP socket and its
 *                       read loop, and serve_h3.h's entry points
 *   serve_h3_stream.c   HTTP/3 streams: nghttp3's callbacks, requests,
 *                       answers and bodies, the streams' deadlines
 *   serve_h3_tls.c      the certificate, each connection's GnuTLS
 *                       session, session tickets and 0-RTT's anti-replay
 *   serve_h3_closing.c  the end of a connection (h3_conn_fail), closing
 *                       records, stateless resets, Version Negotiation
 *   serve_h3_send.c     datagrams out: sendmsg along a path, GSO batches
 *   serve_h3_mem.c      KEEL_H3_MEMSTAT's counting allocators
 */
#include "serve_h3_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/udp.h> /* UDP_GRO */

#define H3_UDP_PAYLOAD_MAX 1452 /* what path MTU discovery may reach     */
#define H3_TX_BURST 64    /* datagrams per h3_conn_write before pacing */
#define H3_RCVBUF (4 << 20) /* SO_RCVBUF asked for a shard's UDP socket  */

ngtcp2_tstamp h3_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ngtcp2_tstamp)ts.tv_sec * NGTCP2_SECONDS + (ngtcp2_tstamp)ts.tv_nsec;
}

void h3_random_fill(uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r <= 0)
			continue; /* EINTR only: the pool is ready after boot */
		p += r;
		n -= (size_t)r;
	}
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
void h3_cid_link(struct h3_shard *hs, struct h3_cid *e)
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
	h3_cid_link(hs, e);
	return 0;
}

void h3_cid_unlink(struct h3_shard *hs, struct h3_cid *e)
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
			h3_cid_unlink(hc->c->shard->h3, &hc->cids[i]);
}

/* ---- ngtcp2's callbacks ----------------------------------------------- */

static void on_rand(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	h3_random_fill(dest, len);
}

static int on_new_cid(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
                      size_t len, void *arg)
{
	struct h3_conn *hc = arg;
	struct h3_creds *cr = hc->c->shard->srv->h3;

	(void)conn;
	h3_random_fill(cid->data, len);
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
	return limits_source_take(&srv->hs_sources, *src) == LIMITS_OK;
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
		return h3_fail_http(hc, NGHTTP3_ERR_H3_GENERAL_PROTOCOL_ERROR);
	return h3_http_start(hc);
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
	rc = h3_http_start(hc);
	if (rc != 0)
		return rc;
	if ((id & 0x3) == 0x2 && /* a client's unidirectional stream */
	    h3_control_feed(&hc->control, id, offset, data, len) !=
	    H3_CONTROL_OK)
		return h3_fail_http(hc, NGHTTP3_ERR_H3_SETTINGS_ERROR);
	n = nghttp3_conn_read_stream(hc->http, id, data, len,
	                             (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
	if (n < 0)
		return h3_fail_http(hc, (int)n);
	h3_credit(hc, id, (size_t)n); /* framing; bodies in on_data */
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
	return rc == 0 ? 0 : h3_fail_http(hc, rc);
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
			return h3_fail_http(hc, rc);
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
	return rc == 0 ? 0 : h3_fail_http(hc, rc);
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
	return rc == 0 ? 0 : h3_fail_http(hc, rc);
}

/* CRYPTO data for TLS.  After the handshake the GnuTLS session is gone
 * (h3_tls_release), and a TLS 1.3 client has nothing more to send in QUIC:
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

/* ---- the shard's timers ------------------------------------------------
 * Every connection sits in the shard's binary min-heap on the expiry
 * ngtcp2 gave it after it last ran (due), so h3_timers handles the
 * connections that are due and looks at no other: asking each of them at
 * every turn of the loop left a busy connection 0.39x its rate beside
 * 3,000 idle ones.  A connection's expiry moves only when ngtcp2 runs for
 * it, and every such run -- a datagram read, a timer handled, an answer
 * or a cut stream submitted -- ends in h3_conn_write, which renews it
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
int h3_conn_write(struct h3_conn *hc)
{
	struct serve_shard *sh = hc->c->shard;
	ngtcp2_tstamp ts = h3_now_ns();
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
			h3_fail_http(hc, (int)nv);
			h3_conn_fail(hc, NGTCP2_ERR_CALLBACK_FAILURE);
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
			h3_conn_fail(hc, (int)n);
			return -1;
		}
		if (taken >= 0 &&
		    nghttp3_conn_add_write_offset(hc->http, id, (size_t)taken) != 0) {
			h3_conn_fail(hc, NGTCP2_ERR_CALLBACK_FAILURE);
			return -1;
		}
		if (n == 0)
			break; /* nothing more, or congestion-limited */
		h3_batch_add(sh, &b, &ps.path, (size_t)n);
		sent++;
	}
	h3_batch_send(sh, &b);
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
	h3_random_fill(scid.data, H3_CIDLEN);
	tlen = ngtcp2_crypto_generate_retry_token(
	    token, cr->retry_secret, sizeof cr->retry_secret, hd->version,
	    path->remote.addr, path->remote.addrlen, &scid, &hd->dcid, h3_now_ns());
	if (tlen < 0)
		return;
	n = ngtcp2_crypto_write_retry(buf, sizeof buf, hd->version, &hd->scid,
	                              &scid, &hd->dcid, token, (size_t)tlen);
	if (n > 0)
		h3_send_datagram(sh, path, buf, (size_t)n);
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
		        h3_now_ns()) == 0)
			return 1;
		n = ngtcp2_crypto_write_connection_close(
		    buf, sizeof buf, hd->version, &hd->scid, &hd->dcid,
		    NGTCP2_INVALID_TOKEN, NULL, 0);
		if (n > 0)
			h3_send_datagram(sh, path, buf, (size_t)n);
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
	h3_random_fill(scid.data, H3_CIDLEN);
	ngtcp2_settings_default(&settings);
	settings.initial_ts = h3_now_ns();
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
	if (h3_conn_tls(hc, srv->h3) < 0 || cid_add(hc, &hd.dcid) < 0 ||
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
			h3_cid_unlink(sh->h3, &hc->cids[i]);
	h3_tls_free(hc);
	ngtcp2_conn_del(hc->quic);
out_uncount:
	atomic_fetch_sub(&srv->conns, 1);
	limits_source_give(&srv->hs_sources, src);
	free(hc);
	free(c);
	return NULL;
}

/* HC read datagrams: what it has to send goes, and its requests move. */
static void conn_flush(struct h3_conn *hc)
{
	if (h3_conn_write(hc) == 0)
		serve_conn_progress(hc->c);
}

/*
 * One datagram from REMOTE to LOCAL.  Not QUIC, or not for a connection
 * of ours and not an acceptable Initial: dropped.  *PENDING is the
 * connection that read the datagrams before it and has not written
 * since: it writes first when this one is for another, and this one's
 * connection becomes *PENDING (NULL once closed), so that a run of
 * acknowledgements from one client makes one h3_conn_write, with the
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
		h3_version_negotiate(sh, &path, &vc);
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
		h3_closing_answer(sh, &path, e->closing, len);
		return;
	}
	if (hc == NULL) {
		if (!(pkt[0] & 0x80)) { /* a short header: not ours (now) */
			h3_stateless_reset(sh, &path, vc.dcid, len);
			return;
		}
		hc = conn_accept(sh, &path, pkt, len);
		if (hc == NULL)
			return;
	}
	*pending = NULL;
	rv = ngtcp2_conn_read_pkt(hc->quic, &path, &pi, pkt, len, h3_now_ns());
	if (rv != 0) {
		h3_conn_fail(hc, rv);
		return;
	}
	h3_tls_release(hc); /* not in on_handshake_done: GnuTLS is on the stack */
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
	ngtcp2_tstamp now = h3_now_ns();
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
			h3_conn_fail(hc, rv); /* closes: h3_free */
		else
			h3_conn_write(hc); /* back in the heap, or closed */
	}
	if (hs->nheap > 0 && hs->heap[0]->due < next)
		next = hs->heap[0]->due;
	if (next <= now)
		return 1; /* due again at once (pacing): soon, not busily */
	return (int)((next - now + NGTCP2_MILLISECONDS - 1) / NGTCP2_MILLISECONDS);
}

int h3_shard_open(struct serve_shard *sh, const struct sockaddr_in *addr)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &sh->ufd};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0)
		return -1;
	sh->h3 = calloc(1, sizeof *sh->h3);
	if (sh->h3)
		h3_mem_init(sh->h3); /* KEEL_H3_MEMSTAT */
	/* IP_PKTINFO: which of our addresses a datagram came to, to answer
	 * from it when bound to 0.0.0.0 */
	if (sh->h3 == NULL || h3_replay_window_open(sh) < 0 ||
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
		h3_closing_expire(sh->h3, 0, 1);
		free(sh->h3->heap);
	}
	free(sh->h3); /* its connections were closed (shard_stop) */
	sh->h3 = NULL;
}

void h3_sweep(struct serve_shard *sh)
{
	struct h3_conn *hc, *after;

	if (sh->h3 == NULL)
		return;
	sh->h3->resets = 0;
	h3_closing_expire(sh->h3, sh->now_ms, 0);
	h3_mem_report(sh);
	for (hc = sh->h3->conns; hc; hc = after) {
		after = hc->next; /* HC may close */
		if (h3_conn_limits(hc, sh->now_ms) == 0)
			timer_update(sh->h3, hc); /* (a run h3_conn_write missed) */
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
	h3_tls_free(hc);
	while (hc->streams)
		h3_stream_free(hc, hc->streams);
	for (i = 0; i < H3_CIDS_MAX; i++)
		if (hc->cids[i].used)
			h3_cid_unlink(hs, &hc->cids[i]);
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
