/*
 * http3_client.c -- the HTTP/3 writers of `torture --target http --http3`:
 * one thread per QUIC connection (ngtcp2 0.12 with GnuTLS, nghttp3 0.8),
 * each carrying up to HTTP3_STREAMS writers (http_writer.h), every writer
 * with its own bidirectional stream in flight at once.
 *
 * A writer's operation is acknowledged when the whole answer arrived: a
 * final (2xx) HEADERS and the end of its stream.  Its next operation
 * starts only once QUIC closed the stream -- the request body nghttp3
 * sends from the writer's buffer stays there until the server acked it,
 * so the buffer is not reused before.
 *
 * A dead server (SIGKILLed) shows on loopback as ECONNREFUSED on the
 * connected UDP socket (the kernel's port-unreachable answer to the next
 * packet: a retransmission, or the PING a quiet connection sends every
 * H3_PING_MS): the thread ends with what is in flight unacknowledged.
 * Anything else that ends the connection -- the server closing it, a
 * stream reset, a frame nghttp3 rejects, no progress within
 * HTTP_CONN_TIMEOUT_S -- is a broken answer (DONE with KEEL_EIO for every
 * stream in flight), never a hang.
 *
 * The server's certificate is the one torture made (http_conn.h), trusted
 * alone and checked for IP 127.0.0.1.  The socket, the TLS session and the
 * send loop are quic_conn.c's, shared with tests/h3_client.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_writer.h"
#include "quic_conn.h"

#define H3_BODY_MAX 65536   /* keel-serve answers a write with no body */
#define H3_PROBE_MS 5000    /* the set-up probe's handshake deadline   */
#define H3_PING_MS 50       /* a quiet connection's PING (dead server?) */

/* One writer's stream. */
typedef struct h3slot {
	hthread *h;        /* the writer                                  */
	int active;        /* the writer goes on (not stopped)            */
	int64_t stream;    /* its stream in flight; -1 when none          */
	proto_rec rec;     /* the operation on it                         */
	answer a;          /* what arrived of its answer                  */
	int ended;         /* the stream ended after a final HEADERS      */
	int reported;      /* its DONE was sent                           */
	int closed;        /* QUIC closed the stream                      */
	uint64_t code;     /* the close's application error code          */
	const char *why;   /* a broken answer, said in its DONE           */
	uint64_t body;     /* answer body bytes seen                      */
} h3slot;

typedef struct h3conn {
	quic_conn q;                      /* the connection (quic_conn.h) */
	int ready;                        /* handshake done, HTTP/3 bound */
	int dead;                         /* ECONNREFUSED: server gone   */
	const char *broken;               /* why the connection broke    */
	h3slot slot[HTTP3_STREAMS];
	uint32_t n;                       /* slots in use                */
} h3conn;

/* ---- HTTP/3 callbacks: SARG is the stream's slot ---------------------- */

/* :status and ETag of the answer; anything else is ignored. */
static int on_header(nghttp3_conn *hc, int64_t id, int32_t token,
                     nghttp3_rcbuf *name, nghttp3_rcbuf *value, uint8_t flags,
                     void *arg, void *sarg)
{
	h3slot *sl = sarg;
	nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
	nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
	uint64_t num;

	(void)hc, (void)id, (void)token, (void)flags, (void)arg;
	if (!sl)
		return 0;
	if (n.len == 7 && !memcmp(n.base, ":status", 7)) {
		if (v.len != 3 || http_writer_number((const char *)v.base,
		                                     v.len, &num) < 0)
			sl->why = "malformed :status";
		else
			sl->a.status = (int)num;
		sl->a.etag = 0; /* a 1xx's fields are not the answer's */
	} else if (n.len == 4 && !memcmp(n.base, "etag", 4)) {
		if (v.len < 3 || v.base[0] != '"' || v.base[v.len - 1] != '"' ||
		    http_writer_number((const char *)v.base + 1, v.len - 2,
		                       &sl->a.etag) < 0 || !sl->a.etag)
			sl->why = "malformed ETag (want \"<revision>\")";
	}
	return 0;
}

static int on_data(nghttp3_conn *hc, int64_t id, const uint8_t *data,
                   size_t len, void *arg, void *sarg)
{
	h3conn *c = arg;
	h3slot *sl = sarg;

	(void)hc, (void)data;
	if (sl && (sl->body += len) > H3_BODY_MAX)
		sl->why = "answer body over 64 KiB";
	quic_conn_credit(&c->q, id, len);
	return 0;
}

static int on_consume(nghttp3_conn *hc, int64_t id, size_t n, void *arg,
                      void *sarg)
{
	h3conn *c = arg;

	(void)hc, (void)sarg;
	quic_conn_credit(&c->q, id, n);
	return 0;
}

static int on_end_stream(nghttp3_conn *hc, int64_t id, void *arg, void *sarg)
{
	h3slot *sl = sarg;

	(void)hc, (void)id, (void)arg;
	if (sl && sl->a.status >= 200)
		sl->ended = 1;
	return 0;
}

/* nghttp3 asks for a reset: the answer broke HTTP/3's rules. */
static int on_reset(nghttp3_conn *hc, int64_t id, uint64_t code, void *arg,
                    void *sarg)
{
	h3conn *c = arg;
	h3slot *sl = sarg;

	(void)hc;
	if (sl)
		sl->why = "the answer broke HTTP/3 (stream reset)";
	ngtcp2_conn_shutdown_stream(c->q.quic, id, code);
	return 0;
}

static int on_close(nghttp3_conn *hc, int64_t id, uint64_t code, void *arg,
                    void *sarg)
{
	h3slot *sl = sarg;

	(void)hc, (void)arg;
	if (sl && sl->stream == id) {
		sl->closed = 1;
		sl->code = code;
	}
	return 0;
}

/* The request body: the writer's value, whole, in one piece. */
static nghttp3_ssize on_read_body(nghttp3_conn *hc, int64_t id,
                                  nghttp3_vec *vec, size_t cnt,
                                  uint32_t *pflags, void *arg, void *sarg)
{
	h3slot *sl = sarg;

	(void)hc, (void)id, (void)cnt, (void)arg;
	vec[0].base = sl->h->buf;
	vec[0].len = sl->rec.change[0].len;
	*pflags |= NGHTTP3_DATA_FLAG_EOF;
	return 1;
}

/* The handshake is done: our control and QPACK streams. */
static int http_bind(h3conn *c)
{
	static const nghttp3_callbacks cb = {
		.stream_close = on_close,
		.recv_data = on_data,
		.deferred_consume = on_consume,
		.recv_header = on_header,
		.end_stream = on_end_stream,
		.reset_stream = on_reset,
	};

	if (quic_conn_http_start(&c->q, &cb, c) < 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	c->ready = 1;
	return 0;
}

/* ---- QUIC callbacks: ARG is the connection --------------------------- */

static int on_handshake(ngtcp2_conn *q, void *arg)
{
	(void)q;
	return http_bind(arg);
}

static int on_stream_data(ngtcp2_conn *q, uint32_t flags, int64_t id,
                          uint64_t off, const uint8_t *data, size_t len,
                          void *arg, void *sarg)
{
	h3conn *c = arg;
	int rv;

	(void)q, (void)off, (void)sarg;
	rv = quic_conn_stream_data(&c->q, id, data, len,
	                           (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
	if (rv < 0) {
		c->broken = nghttp3_strerror(rv);
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	return 0;
}

static int on_acked(ngtcp2_conn *q, int64_t id, uint64_t off, uint64_t len,
                    void *arg, void *sarg)
{
	h3conn *c = arg;

	(void)q, (void)off, (void)sarg;
	return quic_conn_acked(&c->q, id, len) < 0 ? NGTCP2_ERR_CALLBACK_FAILURE
	                                           : 0;
}

static int on_stream_close(ngtcp2_conn *q, uint32_t flags, int64_t id,
                           uint64_t code, void *arg, void *sarg)
{
	h3conn *c = arg;

	(void)q, (void)sarg;
	if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
		code = NGHTTP3_H3_NO_ERROR;
	if (c->q.http &&
	    nghttp3_conn_close_stream(c->q.http, id, code) == NGHTTP3_ERR_CALLBACK_FAILURE)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

/* The server reset a stream: its answer will not come. */
static int on_stream_reset(ngtcp2_conn *q, int64_t id, uint64_t size,
                           uint64_t code, void *arg, void *sarg)
{
	h3conn *c = arg;
	h3slot *sl = sarg;

	(void)q, (void)size, (void)code;
	if (sl && sl->stream == id && !sl->ended)
		sl->why = "the server reset the stream";
	if (c->q.http)
		nghttp3_conn_shutdown_stream_read(c->q.http, id);
	return 0;
}

static int on_max_stream_data(ngtcp2_conn *q, int64_t id, uint64_t max,
                              void *arg, void *sarg)
{
	h3conn *c = arg;

	(void)q, (void)max, (void)sarg;
	if (c->q.http)
		nghttp3_conn_unblock_stream(c->q.http, id);
	return 0;
}

/* ---- the connection --------------------------------------------------- */

/* The connection to 127.0.0.1:PORT, trusting CERT alone.  0, or -1
 * (conn_close frees what was made). */
static int conn_open(h3conn *c, uint16_t port, const char *cert)
{
	ngtcp2_callbacks cb;

	quic_conn_callbacks(&cb);
	cb.handshake_completed = on_handshake;
	cb.recv_stream_data = on_stream_data;
	cb.acked_stream_data_offset = on_acked;
	cb.stream_close = on_stream_close;
	cb.stream_reset = on_stream_reset;
	cb.extend_max_stream_data = on_max_stream_data;
	if (quic_conn_open(&c->q, port, cert, &cb, NULL, c) < 0)
		return -1;
	/* A request whose every packet the server acked, then died, leaves
	 * QUIC nothing to send and nothing to time out but the idle timer:
	 * a PING after each quiet H3_PING_MS draws the kernel's
	 * port-unreachable, so the dead server is seen at once. */
	ngtcp2_conn_set_keep_alive_timeout(c->q.quic,
	                                   H3_PING_MS * NGTCP2_MILLISECONDS);
	return 0;
}

static void conn_close(h3conn *c)
{
	quic_conn_close(&c->q);
}

/* A socket error: ECONNREFUSED is the dead server; else broken. */
static int socket_failed(h3conn *c)
{
	if (errno == ECONNREFUSED)
		c->dead = 1;
	else
		c->broken = "the UDP socket failed";
	return -1;
}

/* What ngtcp2 said when it refused a packet or a timer. */
static int quic_failed(h3conn *c, int rv)
{
	if (!c->broken)
		c->broken = rv == NGTCP2_ERR_DRAINING ?
		            "the server closed the connection" :
		            rv == NGTCP2_ERR_IDLE_CLOSE ?
		            "no answer within 30 s" : ngtcp2_strerror(rv);
	return -1;
}

/* Sends all there is to send.  0, or -1 (c->dead or c->broken). */
static int conn_write(h3conn *c)
{
	int rv;

	if (quic_conn_write(&c->q, &rv) == 0)
		return 0;
	return rv ? quic_failed(c, rv) : socket_failed(c);
}

/* Reads every datagram there is, runs the timers when due.  0, or -1
 * (c->dead or c->broken). */
static int conn_read(h3conn *c)
{
	uint8_t buf[65536];
	ngtcp2_path path = {
		{(ngtcp2_sockaddr *)&c->q.local, sizeof(c->q.local)},
		{(ngtcp2_sockaddr *)&c->q.remote, sizeof(c->q.remote)}, NULL};
	int rv;

	for (;;) {
		ngtcp2_pkt_info pi = {0};
		ssize_t n = recv(c->q.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0)
			return socket_failed(c);
		rv = ngtcp2_conn_read_pkt(c->q.quic, &path, &pi, buf, (size_t)n,
		                          quic_conn_now());
		if (rv != 0)
			return quic_failed(c, rv);
	}
	if (ngtcp2_conn_get_expiry(c->q.quic) <= quic_conn_now() &&
	    (rv = ngtcp2_conn_handle_expiry(c->q.quic, quic_conn_now())) != 0)
		return quic_failed(c, rv);
	return 0;
}

/* Waits for a datagram or the next timer, at most 1 s. */
static void conn_wait(h3conn *c)
{
	struct pollfd p = {.fd = c->q.fd, .events = POLLIN};
	ngtcp2_tstamp now = quic_conn_now(), due = ngtcp2_conn_get_expiry(c->q.quic);
	int ms = 1000;

	if (due <= now)
		return;
	if (due - now < 1000 * NGTCP2_MILLISECONDS)
		ms = (int)((due - now) / NGTCP2_MILLISECONDS) + 1;
	poll(&p, 1, ms);
}

/* ---- the writers on it ------------------------------------------------ */

#define NV(n, v, vl) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), \
                      NGHTTP3_NV_FLAG_NONE}

/* Starts the slot's next operation: INTENT, then the request on a new
 * stream.  0 (also when the server's stream limit makes it wait), or -1
 * when the writer cannot go on. */
static int start_op(h3conn *c, h3slot *sl)
{
	static const nghttp3_data_reader body = {on_read_body};
	hthread *h = sl->h;
	const proto_change *ch = &sl->rec.change[0];
	char path[HTTP_WRITER_PATH_MAX], cond[32], clen[16];
	uint32_t i;
	int64_t id;
	int rv;

	if (!sl->reported) /* an operation chosen, its stream not yet open */
		goto open;
	if (http_writer_begin(h, &sl->rec) < 0)
		return -1;
	sl->reported = 0;
open:
	if ((rv = ngtcp2_conn_open_bidi_stream(c->q.quic, &id, sl)) ==
	    NGTCP2_ERR_STREAM_ID_BLOCKED)
		return 0; /* again when the server allows more streams */
	i = ch->key / h->plan->opt->threads;
	http_writer_key_path(ch->key, path);
	if (h->present[i])
		snprintf(cond, sizeof(cond), "\"%" PRIu64 "\"", h->rev[i]);
	else
		snprintf(cond, sizeof(cond), "*");
	snprintf(clen, sizeof(clen), "%u", ch->len);
	nghttp3_nv nv[] = {
		NV(":method", ch->len ? "PUT" : "DELETE", ch->len ? 3 : 6),
		NV(":scheme", "https", 5),
		NV(":authority", "127.0.0.1", 9),
		NV(":path", path, strlen(path)),
		NV("if-match", cond, strlen(cond)),
		NV("content-length", clen, strlen(clen)),
	};
	if (!h->present[i]) { /* If-None-Match: * instead */
		nv[4].name = (uint8_t *)"if-none-match";
		nv[4].namelen = 13;
	}
	memset(&sl->a, 0, sizeof(sl->a));
	sl->ended = sl->closed = 0;
	sl->code = 0;
	sl->why = NULL;
	sl->body = 0;
	if (rv != 0 || nghttp3_conn_submit_request(c->q.http, id, nv,
	                                           ch->len ? 6 : 5,
	                                           ch->len ? &body : NULL,
	                                           sl) != 0) {
		fprintf(stderr, "torture: http thread %u: cannot start an "
		        "HTTP/3 request\n", h->t);
		return -1;
	}
	sl->stream = id;
	return 0;
}

/* The slot's DONE: once its answer is whole, or when its stream closed
 * without one. */
static void report(h3slot *sl)
{
	int ok = sl->ended && !sl->why;
	char closed[80];

	snprintf(closed, sizeof(closed), "stream closed without a whole "
	         "answer (error code 0x%" PRIx64 ")", sl->code);
	sl->reported = 1;
	if (http_writer_finish(sl->h, &sl->rec, ok ? REQ_ANSWERED : -1,
	                       &sl->a, sl->why ? sl->why : closed) < 0)
		sl->active = 0;
}

/* Moves every slot on: DONE for whole answers, the next operation on
 * closed streams.  Returns how many DONEs were sent (progress). */
static int advance(h3conn *c)
{
	int done = 0;

	for (uint32_t i = 0; i < c->n; i++) {
		h3slot *sl = &c->slot[i];
		if (!sl->active)
			continue;
		if (sl->stream >= 0 && !sl->reported &&
		    (sl->ended || sl->closed || sl->why)) {
			report(sl);
			done++;
		}
		if (sl->active && sl->stream >= 0 && sl->closed)
			sl->stream = -1;
		if (sl->active && sl->stream < 0 && start_op(c, sl) < 0)
			sl->active = 0;
	}
	return done;
}

/* Every stream in flight gets a DONE with WHY (a broken connection that
 * is not a dead server), and every writer stops. */
static void fail_all(h3conn *c, const char *why)
{
	for (uint32_t i = 0; i < c->n; i++) {
		h3slot *sl = &c->slot[i];
		if (sl->active && sl->stream >= 0 && !sl->reported)
			http_writer_finish(sl->h, &sl->rec, -1, &sl->a, why);
		sl->active = 0;
	}
}

static int any_active(const h3conn *c)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->slot[i].active)
			return 1;
	return 0;
}

/* The connection's life once the handshake is done. */
static void run(h3conn *c)
{
	ngtcp2_tstamp last = quic_conn_now();

	while (any_active(c)) {
		if (advance(c))
			last = quic_conn_now();
		if (!any_active(c) || conn_write(c) < 0)
			break;
		if (quic_conn_now() - last > HTTP_CONN_TIMEOUT_S * NGTCP2_SECONDS) {
			c->broken = "no answer within 30 s";
			break;
		}
		conn_wait(c);
		if (conn_read(c) < 0)
			break;
	}
	if (!c->dead && c->broken) {
		fprintf(stderr, "torture: http/3 connection of thread %u: %s\n",
		        c->slot[0].h->t, c->broken);
		fail_all(c, c->broken);
	}
	/* Dead: what is in flight stays unacknowledged. */
}

/* Runs the handshake until HTTP/3 is bound or DEADLINE.  0, or -1
 * (c->dead, c->broken, or neither: the deadline). */
static int handshake(h3conn *c, ngtcp2_tstamp deadline)
{
	while (!c->ready) {
		if (conn_write(c) < 0)
			return -1;
		if (quic_conn_now() >= deadline)
			return -1;
		conn_wait(c);
		if (conn_read(c) < 0)
			return -1;
	}
	return 0;
}

void *http3_connection_thread(void *arg)
{
	http3_group *g = arg;
	h3conn c;
	ngtcp2_tstamp deadline = quic_conn_now() +
	                         HTTP_CONN_TIMEOUT_S * NGTCP2_SECONDS;

	memset(&c, 0, sizeof(c));
	c.q.fd = -1;
	c.n = g->n;
	for (uint32_t i = 0; i < g->n; i++) {
		c.slot[i].h = &g->w[i];
		c.slot[i].active = 1;
		c.slot[i].stream = -1;
		c.slot[i].reported = 1;
	}
	if (conn_open(&c, g->w[0].port, g->cert) < 0) {
		fprintf(stderr, "torture: http/3: cannot make a connection\n");
		goto out_close;
	}
	if (handshake(&c, deadline) < 0) {
		if (c.dead)
			goto out_close; /* the server is gone already */
		/* The harness's probe saw this server's kind finish the
		 * handshake with the pinned certificate: this is the server
		 * misbehaving. */
		fprintf(stderr, "torture: http/3 connection of thread %u: %s\n",
		        g->w[0].t, c.broken ? c.broken :
		        "no handshake within 30 s");
		_exit(5);
	}
	run(&c);
out_close:
	conn_close(&c);
	return NULL;
}

int http3_probe(uint16_t port, const char *cert, const char **why)
{
	h3conn c;
	gnutls_datum_t alpn;
	int rc = -1;

	memset(&c, 0, sizeof(c));
	c.q.fd = -1;
	if (conn_open(&c, port, cert) < 0) {
		*why = "cannot make a QUIC connection";
		goto out_close;
	}
	if (handshake(&c, quic_conn_now() + H3_PROBE_MS * NGTCP2_MILLISECONDS) < 0) {
		*why = c.dead ? "nothing answers QUIC on its UDP port: it "
		                "does not speak HTTP/3" :
		       c.broken ? "the QUIC handshake failed (its certificate "
		                  "is not the one torture made?)" :
		       "no QUIC handshake within 5 s: it does not speak HTTP/3";
		goto out_close;
	}
	if (gnutls_alpn_get_selected_protocol(c.q.tls, &alpn) != 0 ||
	    alpn.size != 2 || memcmp(alpn.data, "h3", 2) != 0) {
		*why = "it did not choose h3 by ALPN: it does not speak HTTP/3";
		goto out_close;
	}
	rc = 0;
out_close:
	conn_close(&c);
	return rc;
}
