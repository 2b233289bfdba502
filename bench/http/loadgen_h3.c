/*
 * loadgen_h3.c -- loadgen --http3: the closed-loop load over QUIC v1 and
 * HTTP/3 (ngtcp2 0.12, GnuTLS, nghttp3 0.8) through torture/quic_conn.h,
 * the client side our other HTTP/3 clients share.
 *
 * One thread, one epoll set over --conns non-blocking UDP sockets, each a
 * QUIC connection to 127.0.0.1:--port (the server's certificate is not
 * checked: a benchmark's server has a throwaway one).  Once a handshake
 * is done the connection keeps --pipeline requests in flight, each on a
 * stream of its own, a new one as each answer ends; each connection's
 * ngtcp2 timer (loss detection, ACK delay, idle) is run when it expires.
 * The GET/PUT mix, the keys and the If-Match chain are loadgen's
 * (loadgen.c).  --close: one request per connection, which is then closed
 * (CONNECTION_CLOSE, H3_NO_ERROR) and made again, so each answer costs a
 * full 1-RTT handshake; its latency counts from the connection's start.
 *
 * A connection that fails -- nothing listens on the port (ICMP refused),
 * the handshake fails or takes more than H3_HANDSHAKE_MS, the server
 * closes the connection, or nothing comes for H3_STALL_MS while requests
 * are in flight -- counts its requests in flight (at least one) as
 * errors, says why on stderr (the first H3_SAY_MAX times) and is made
 * again after H3_REOPEN_MS, so a dead server costs the run no more than
 * its --duration.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loadgen.h"
#include "quic_conn.h"

#define H3_HANDSHAKE_MS 10000 /* a handshake this slow failed          */
#define H3_STALL_MS 10000     /* requests in flight, nothing came: dead */
#define H3_REOPEN_MS 100      /* after a failure: no spinning on it     */
#define H3_SAY_MAX 5          /* failures told on stderr                */
#define H3_ETAG 64            /* an ETag we keep for If-Match           */
#define H3_DUE_MAX 1024       /* --rate: requests due, not yet sent     */

struct h3_conn;

/* One request: a stream of its own until ngtcp2 closes it. */
struct h3_req {
	struct h3_conn *conn; /* whose stream                             */
	struct h3_req *next;  /* the connection's free list               */
	uint64_t t0;          /* when its latency counts from             */
	int status;           /* :status; 0 until the head came           */
	int put;              /* a PUT of /lg-<conn>                      */
	int ended;            /* its answer was whole                     */
	char if_match[H3_ETAG]; /* what it sent (nghttp3 may point here)  */
	char etag[H3_ETAG];   /* what its answer said                     */
};

struct h3_conn {
	quic_conn q;          /* the QUIC connection (fd -1: none)        */
	int id;               /* its number: its PUT key is /lg-<id>      */
	int ready;            /* handshake done, HTTP/3 bound             */
	int done;             /* --close: its one answer came             */
	const char *failed;   /* why it failed (set in a callback)        */
	int inflight;         /* requests sent, answers not whole         */
	int put_inflight;     /* --if-match: a PUT waits for its answer   */
	int sent;             /* requests sent on this connection         */
	uint64_t opened;      /* when it was made                         */
	uint64_t last_rx;     /* the latest datagram from the server      */
	uint64_t reopen_at;   /* closed after a failure: made again then  */
	char put_path[32];    /* "/lg-<id>"                               */
	char etag[H3_ETAG];   /* the latest 2xx PUT's ETag (If-Match)     */
	struct h3_req *reqs;  /* 2 x --pipeline slots                     */
	struct h3_req *free;  /* those not on a stream                    */
	/* --rate: when each request handed to it was meant to go (a ring) */
	uint64_t due_at[H3_DUE_MAX];
	unsigned due_head, due;
};

static const struct loadgen_opts *O;
static const char *value; /* every PUT's body */
static int epfd, said;
static char errtext[160]; /* the reason a callback gives */

/* ---- failures ------------------------------------------------------------- */

static void say(const struct h3_conn *c, const char *why)
{
	if (said < H3_SAY_MAX)
		fprintf(stderr, "loadgen: HTTP/3 connection %d to 127.0.0.1:%d: %s\n",
		        c->id, O->port, why);
	else if (said == H3_SAY_MAX)
		fprintf(stderr, "loadgen: more HTTP/3 connections failed (counted"
		                " in \"errors\")\n");
	said++;
}

/* Why the server closed C: its CONNECTION_CLOSE's code and reason. */
static const char *closed_why(struct h3_conn *c)
{
	ngtcp2_connection_close_error e;

	ngtcp2_conn_get_connection_close_error(c->q.quic, &e);
	snprintf(errtext, sizeof errtext, "the server closed the connection "
	         "(%s error 0x%llx%s%.*s)",
	         e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION
	             ? "HTTP/3" : "QUIC",
	         (unsigned long long)e.error_code, e.reasonlen ? ": " : "",
	         (int)e.reasonlen, e.reason ? (const char *)e.reason : "");
	return errtext;
}

/* Why ngtcp2's RV (or, with RV 0, errno) ended C. */
static const char *error_why(struct h3_conn *c, int rv)
{
	const char *what;

	if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING)
		return closed_why(c);
	if (rv == 0 && errno == ECONNREFUSED)
		return "refused (nothing listens on that UDP port)";
	what = rv ? ngtcp2_strerror(rv) : strerror(errno);
	if (rv && strcmp(what, "(unknown)") == 0) /* quic_conn_write's */
		what = nghttp3_strerror(rv);      /* nghttp3 code     */
	snprintf(errtext, sizeof errtext, "%s: %s",
	         c->ready ? "connection failed" : "handshake failed", what);
	return errtext;
}

/* ---- requests --------------------------------------------------------------- */

static void req_free(struct h3_req *r)
{
	struct h3_conn *c = r->conn;

	r->next = c->free;
	c->free = r;
}

static nghttp3_ssize on_read_body(nghttp3_conn *h, int64_t id,
                                  nghttp3_vec *vec, size_t cnt,
                                  uint32_t *pflags, void *arg, void *sarg)
{
	(void)h, (void)id, (void)cnt, (void)arg, (void)sarg;
	vec[0].base = (uint8_t *)value;
	vec[0].len = O->value_size;
	*pflags |= NGHTTP3_DATA_FLAG_EOF;
	return 1;
}

#define NV(n, v, vl) \
	((nghttp3_nv){(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), \
	              NGHTTP3_NV_FLAG_NONE})

/* Sends one request on a new stream.  Returns 1 when it went, 0 when it
 * must wait (the server's stream limit, no free slot), -1 on an error. */
static int request_send(struct h3_conn *c, uint64_t t0)
{
	static const nghttp3_data_reader body = {on_read_body};
	struct h3_req *r = c->free;
	nghttp3_nv nv[5];
	size_t n = 4;
	int64_t id;
	int rv;

	if (r == NULL)
		return 0;
	rv = ngtcp2_conn_open_bidi_stream(c->q.quic, &id, NULL);
	if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED)
		return 0;
	if (rv != 0)
		return -1;
	c->free = r->next;
	r->put = O->put_ratio > 0 && loadgen_random() < O->put_ratio;
	r->t0 = O->close_each ? c->opened : t0;
	r->status = 0;
	r->ended = 0;
	r->etag[0] = 0;
	r->if_match[0] = 0;
	nv[0] = NV(":method", r->put ? "PUT" : "GET", 3);
	nv[1] = NV(":scheme", "https", 5);
	nv[2] = NV(":authority", "localhost", 9);
	nv[3] = r->put ? NV(":path", c->put_path, strlen(c->put_path))
	               : NV(":path", O->path, strlen(O->path));
	if (r->put && O->if_match && c->etag[0]) {
		memcpy(r->if_match, c->etag, sizeof r->if_match);
		nv[n++] = NV("if-match", r->if_match, strlen(r->if_match));
	}
	if (nghttp3_conn_submit_request(c->q.http, id, nv, n,
	                                r->put ? &body : NULL, r) != 0)
		return -1;
	c->put_inflight = r->put && O->if_match;
	c->inflight++;
	c->sent++;
	return 1;
}

/* Keeps --pipeline requests in flight (--close: one, once); with --rate,
 * sends those due, up to --pipeline at once, each timed from when it was
 * due (a late send counts against the server, as over TCP). */
static int requests_top_up(struct h3_conn *c, uint64_t now)
{
	int want = O->close_each ? 1 : O->pipeline, rv;

	while (c->ready && !c->put_inflight && c->inflight < want &&
	       !(O->close_each && c->sent) && (O->rate <= 0 || c->due)) {
		rv = request_send(c, O->rate > 0 ? c->due_at[c->due_head %
		                                             H3_DUE_MAX]
		                                 : now);
		if (rv <= 0)
			return rv;
		if (O->rate > 0) {
			c->due_head++;
			c->due--;
		}
	}
	return 0;
}

/* --rate: hands every request whose time has come to a connection, round
 * robin, with the time it was meant to go out.  *SEQ counts them from T0;
 * returns when the next one is due. */
static uint64_t schedule(struct h3_conn *cs, uint64_t t0, uint64_t now,
                         uint64_t *seq)
{
	double gap = 1e9 / O->rate;

	for (;;) {
		uint64_t at = t0 + (uint64_t)((double)*seq * gap);
		struct h3_conn *c = &cs[*seq % (uint64_t)O->conns];

		if (at > now)
			return at;
		if (c->due < H3_DUE_MAX)
			c->due_at[(c->due_head + c->due++) % H3_DUE_MAX] = at;
		else
			loadgen_dropped();
		(*seq)++;
	}
}

static int on_header(nghttp3_conn *h, int64_t id, int32_t token,
                     nghttp3_rcbuf *name, nghttp3_rcbuf *val, uint8_t flags,
                     void *arg, void *sarg)
{
	nghttp3_vec v = nghttp3_rcbuf_get_buf(val);
	struct h3_req *r = sarg;

	(void)h, (void)id, (void)name, (void)flags, (void)arg;
	if (r == NULL)
		return 0;
	if (token == NGHTTP3_QPACK_TOKEN__STATUS && v.len == 3)
		r->status = (v.base[0] - '0') * 100 + (v.base[1] - '0') * 10 +
		            (v.base[2] - '0');
	else if (token == NGHTTP3_QPACK_TOKEN_ETAG && v.len < sizeof r->etag) {
		memcpy(r->etag, v.base, v.len);
		r->etag[v.len] = 0;
	}
	return 0;
}

/* The answer is whole: it counts now, and the next request may go. */
static int on_end_stream(nghttp3_conn *h, int64_t id, void *arg, void *sarg)
{
	struct h3_conn *c = arg;
	struct h3_req *r = sarg;

	(void)h, (void)id;
	if (r == NULL || r->ended)
		return 0;
	r->ended = 1;
	if (r->status / 100 == 1)
		r->status = 0; /* no final head: counted as "other" */
	loadgen_answer(r->t0, r->status);
	if (r->put) {
		/* chain from this PUT's tag; after a 412 start a new chain */
		c->put_inflight = 0;
		if (r->status / 100 == 2)
			memcpy(c->etag, r->etag, sizeof c->etag);
		else
			c->etag[0] = 0;
	}
	c->inflight--;
	c->done = O->close_each;
	return 0;
}

/* The stream is gone: its slot is free; an answer that never ended is
 * a lost request (the server reset the stream). */
static int on_stream_close(nghttp3_conn *h, int64_t id, uint64_t code,
                           void *arg, void *sarg)
{
	struct h3_conn *c = arg;
	struct h3_req *r = sarg;

	(void)h, (void)id, (void)code;
	if (r == NULL)
		return 0;
	if (!r->ended) {
		loadgen_error(1);
		if (r->put)
			c->put_inflight = 0, c->etag[0] = 0;
		c->inflight--;
		c->done = O->close_each;
	}
	req_free(r);
	return 0;
}

/* nghttp3 is done with N bytes of a body (or of a frame it held back):
 * the server may send as much more. */
static int on_consumed(nghttp3_conn *h, int64_t id, size_t n, void *arg,
                       void *sarg)
{
	struct h3_conn *c = arg;

	(void)h, (void)sarg;
	quic_conn_credit(&c->q, id, n);
	return 0;
}

static int on_body(nghttp3_conn *h, int64_t id, const uint8_t *data,
                   size_t len, void *arg, void *sarg)
{
	(void)data; /* the body is not kept: its arrival is what counts */
	return on_consumed(h, id, len, arg, sarg);
}

/* ---- QUIC callbacks --------------------------------------------------------- */

static int on_handshake(ngtcp2_conn *q, void *arg)
{
	static const nghttp3_callbacks cb = {
		.stream_close = on_stream_close,
		.recv_data = on_body,
		.deferred_consume = on_consumed,
		.recv_header = on_header,
		.end_stream = on_end_stream,
	};
	struct h3_conn *c = arg;

	(void)q;
	if (quic_conn_http_start(&c->q, &cb, c) < 0) {
		c->failed = "cannot start HTTP/3 on the connection";
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	c->ready = 1;
	return 0;
}

static int on_stream_data(ngtcp2_conn *q, uint32_t flags, int64_t id,
                          uint64_t off, const uint8_t *data, size_t len,
                          void *arg, void *sarg)
{
	struct h3_conn *c = arg;
	int rv;

	(void)q, (void)off, (void)sarg;
	rv = quic_conn_stream_data(&c->q, id, data, len,
	                           (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
	if (rv < 0) {
		snprintf(errtext, sizeof errtext, "HTTP/3 error: %s",
		         nghttp3_strerror(rv));
		c->failed = errtext;
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	return 0;
}

static int on_acked(ngtcp2_conn *q, int64_t id, uint64_t off, uint64_t len,
                    void *arg, void *sarg)
{
	struct h3_conn *c = arg;

	(void)q, (void)off, (void)sarg;
	return quic_conn_acked(&c->q, id, len) < 0 ? NGTCP2_ERR_CALLBACK_FAILURE
	                                           : 0;
}

static int on_quic_stream_close(ngtcp2_conn *q, uint32_t flags, int64_t id,
                                uint64_t code, void *arg, void *sarg)
{
	struct h3_conn *c = arg;

	(void)q, (void)sarg;
	if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
		code = NGHTTP3_H3_NO_ERROR;
	if (c->q.http) /* a stream nghttp3 never knew is no error */
		(void)nghttp3_conn_close_stream(c->q.http, id, code);
	return 0;
}

static int on_stream_reset(ngtcp2_conn *q, int64_t id, uint64_t size,
                           uint64_t code, void *arg, void *sarg)
{
	struct h3_conn *c = arg;

	(void)q, (void)size, (void)code, (void)sarg;
	if (c->q.http)
		nghttp3_conn_shutdown_stream_read(c->q.http, id);
	return 0;
}

static int on_max_stream_data(ngtcp2_conn *q, int64_t id, uint64_t max,
                              void *arg, void *sarg)
{
	struct h3_conn *c = arg;

	(void)q, (void)max, (void)sarg;
	if (c->q.http)
		nghttp3_conn_unblock_stream(c->q.http, id);
	return 0;
}

/* ---- connections ------------------------------------------------------------ */

/* Makes C's QUIC connection and sends its first Initial.  Returns 0, or
 * -1 when not even a socket could be made (fatal: say so). */
static int conn_open(struct h3_conn *c, uint64_t now)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	ngtcp2_callbacks cb;
	int i, rv;

	quic_conn_callbacks(&cb);
	cb.handshake_completed = on_handshake;
	cb.recv_stream_data = on_stream_data;
	cb.acked_stream_data_offset = on_acked;
	cb.stream_close = on_quic_stream_close;
	cb.stream_reset = on_stream_reset;
	cb.extend_max_stream_data = on_max_stream_data;
	memset(&c->q, 0, sizeof c->q);
	c->q.fd = -1;
	c->ready = c->done = c->inflight = c->put_inflight = c->sent = 0;
	c->failed = NULL;
	c->etag[0] = 0;
	c->opened = c->last_rx = now;
	c->reopen_at = 0;
	c->free = NULL;
	for (i = 2 * O->pipeline - 1; i >= 0; i--) {
		c->reqs[i].conn = c;
		req_free(&c->reqs[i]);
	}
	if (quic_conn_open(&c->q, (uint16_t)O->port, NULL, &cb, NULL, c) < 0) {
		fprintf(stderr, "loadgen: HTTP/3 connection %d: cannot make it: %s\n",
		        c->id, strerror(errno));
		return -1;
	}
	/* quic_conn.c's socket blocks; one thread serves them all */
	if (fcntl(c->q.fd, F_SETFL, fcntl(c->q.fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, c->q.fd, &ev) < 0) {
		perror("loadgen: HTTP/3 socket");
		return -1;
	}
	if (quic_conn_write(&c->q, &rv) < 0)
		c->failed = error_why(c, rv);
	return 0;
}

/* Ends C's connection: a CONNECTION_CLOSE with H3_NO_ERROR first when
 * POLITE (so the server frees it now, not at its idle timeout). */
static void conn_end(struct h3_conn *c, int polite)
{
	ngtcp2_connection_close_error e;
	uint8_t buf[QUIC_CONN_PKT];
	ngtcp2_ssize n;

	if (polite && c->q.quic) {
		ngtcp2_connection_close_error_set_application_error(
		    &e, NGHTTP3_H3_NO_ERROR, NULL, 0);
		n = ngtcp2_conn_write_connection_close(c->q.quic, NULL, NULL, buf,
		                                       sizeof buf, &e,
		                                       loadgen_now());
		if (n > 0)
			(void)send(c->q.fd, buf, (size_t)n, 0);
	}
	/* the callbacks of nghttp3_conn_del must not count lost streams */
	c->inflight = 0;
	if (c->q.fd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, c->q.fd, NULL);
	quic_conn_close(&c->q);
	c->ready = 0;
}

/* C failed (WHY): its requests in flight are lost; it is made again
 * after H3_REOPEN_MS. */
static void conn_fail(struct h3_conn *c, const char *why, uint64_t now)
{
	say(c, why);
	loadgen_error(c->inflight ? (uint64_t)c->inflight : 1);
	conn_end(c, c->q.quic && !ngtcp2_conn_is_in_draining_period(c->q.quic));
	c->reopen_at = now + H3_REOPEN_MS * 1000000ull;
}

/* Every datagram waiting on C's socket, into ngtcp2. */
static void conn_read(struct h3_conn *c)
{
	uint8_t buf[65536];
	ngtcp2_path path = {
		{(ngtcp2_sockaddr *)&c->q.local, sizeof c->q.local},
		{(ngtcp2_sockaddr *)&c->q.remote, sizeof c->q.remote}, NULL};
	ngtcp2_pkt_info pi = {0};

	while (!c->failed) {
		ssize_t n = recv(c->q.fd, buf, sizeof buf, MSG_DONTWAIT);
		int rv;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			c->failed = error_why(c, 0);
			return;
		}
		c->last_rx = loadgen_now();
		rv = ngtcp2_conn_read_pkt(c->q.quic, &path, &pi, buf, (size_t)n,
		                          c->last_rx);
		if (rv != 0 && !c->failed)
			c->failed = error_why(c, rv);
	}
}

/* C's timers, its requests and its sending, after a read or a timeout.
 * Returns -1 when a connection could not be made again (fatal). */
static int conn_service(struct h3_conn *c, uint64_t now)
{
	int rv;

	if (c->q.quic == NULL) { /* failed: made again in due time */
		if (now < c->reopen_at)
			return 0;
		loadgen_reconnect();
		return conn_open(c, now);
	}
	if (!c->failed && ngtcp2_conn_get_expiry(c->q.quic) <= now &&
	    (rv = ngtcp2_conn_handle_expiry(c->q.quic, now)) != 0)
		c->failed = rv == NGTCP2_ERR_IDLE_CLOSE
		                ? "idle timeout (nothing from the server)"
		                : error_why(c, rv);
	if (!c->failed && !c->ready &&
	    now - c->opened > H3_HANDSHAKE_MS * 1000000ull)
		c->failed = "no handshake within 10 s";
	if (!c->failed && c->inflight &&
	    now - c->last_rx > H3_STALL_MS * 1000000ull)
		c->failed = "no answer for 10 s";
	if (!c->failed && requests_top_up(c, now) < 0)
		c->failed = "cannot send a request";
	if (!c->failed && quic_conn_write(&c->q, &rv) < 0)
		c->failed = error_why(c, rv);
	if (c->failed) {
		conn_fail(c, c->failed, now);
	} else if (c->done) { /* --close: its answer came: a new one */
		conn_end(c, 1);
		loadgen_reconnect();
		return conn_open(c, now);
	}
	return 0;
}

/* ---- the run ----------------------------------------------------------------- */

/* At the end: connections without a handshake and requests unanswered
 * for more than a second (a server that stopped answering) are said on
 * stderr; younger ones are a run cut short (--close makes new ones all
 * the time). */
static void say_unfinished(const struct h3_conn *cs, uint64_t now)
{
	const uint64_t second = 1000000000ull;
	int i, no_handshake = 0, stuck = 0;

	for (i = 0; i < O->conns; i++) {
		if (cs[i].q.quic && !cs[i].ready && now - cs[i].opened > second)
			no_handshake++;
		if (cs[i].inflight && now - cs[i].last_rx > second)
			stuck += cs[i].inflight;
	}
	if (no_handshake)
		fprintf(stderr, "loadgen: at the end %d of %d HTTP/3 connections "
		        "had no finished handshake (does a server speak HTTP/3 "
		        "on UDP 127.0.0.1:%d?)\n", no_handshake, O->conns, O->port);
	if (stuck)
		fprintf(stderr, "loadgen: at the end %d requests had had no answer "
		        "for more than 1 s (the server stopped answering?)\n", stuck);
}

/* How long to wait for the next timer of any connection, at most 100 ms. */
static struct timespec next_wait(struct h3_conn *cs, uint64_t now)
{
	uint64_t due = now + 100000000ull, t;
	int i;

	for (i = 0; i < O->conns; i++) {
		t = cs[i].q.quic ? ngtcp2_conn_get_expiry(cs[i].q.quic)
		                 : cs[i].reopen_at;
		if (t < due)
			due = t;
	}
	t = due > now ? due - now : 0;
	return (struct timespec){(time_t)(t / 1000000000ull),
	                         (long)(t % 1000000000ull)};
}

static int run_loop(struct h3_conn *cs)
{
	struct epoll_event evs[512];
	uint64_t now = loadgen_now(), t0 = now, seq = 0, due = UINT64_MAX;
	int i, n;

	for (;;) {
		struct timespec wait = next_wait(cs, now);

		/* --rate: wake exactly when the next request is due (a gap of
		 * a second or more at --rate 1 and below: tv_nsec stays under
		 * a second) */
		uint64_t left = due > now ? due - now : 0;
		if (due != UINT64_MAX &&
		    (uint64_t)wait.tv_sec * 1000000000ull + (uint64_t)wait.tv_nsec >
		        left)
			wait = (struct timespec){(time_t)(left / 1000000000u),
			                         (long)(left % 1000000000u)};
		n = epoll_pwait2(epfd, evs, 512, &wait, NULL);
		for (i = 0; i < n; i++)
			conn_read(evs[i].data.ptr);
		now = loadgen_now();
		if (loadgen_window(now))
			return 0;
		if (O->rate > 0)
			due = schedule(cs, t0, now, &seq);
		/* all of them: the timers are theirs to check, and a read may
		 * have ended answers that free a stream for the next request */
		for (i = 0; i < O->conns; i++)
			if (conn_service(&cs[i], now) < 0)
				return -1;
	}
}

int loadgen_h3_run(const struct loadgen_opts *o, const char *body)
{
	struct h3_conn *cs = calloc((size_t)o->conns, sizeof *cs);
	uint64_t now = loadgen_now();
	int i, rc = 1;

	O = o;
	value = body;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (cs == NULL || epfd < 0) {
		perror("loadgen");
		goto out;
	}
	for (i = 0; i < o->conns; i++) {
		cs[i].id = i;
		cs[i].q.fd = -1;
		snprintf(cs[i].put_path, sizeof cs[i].put_path, "/lg-%d", i);
		cs[i].reqs = calloc(2 * (size_t)o->pipeline, sizeof *cs[i].reqs);
		if (cs[i].reqs == NULL || conn_open(&cs[i], now) < 0)
			goto out_close;
	}
	loadgen_window_start(now);
	if (run_loop(cs) == 0)
		rc = 0;
	say_unfinished(cs, loadgen_now());
out_close:
	for (i = 0; i < o->conns; i++) {
		if (cs[i].reqs && cs[i].q.quic)
			conn_end(&cs[i], 1);
		free(cs[i].reqs);
	}
out:
	free(cs);
	if (epfd >= 0)
		close(epfd);
	return rc;
}
