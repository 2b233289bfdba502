/*
 * serve_h3_stream.c -- keel-serve's HTTP/3 request streams (serve_h3.c
 * says where they sit in a connection's life).  nghttp3's callbacks
 * build each request (on_begin_headers .. on_end_stream), serve_handle()
 * answers it (or its commit does, later: h3_flush), and the answer goes
 * back to nghttp3 (stream_submit), a GET's body by reference into the
 * view until the client acknowledged it (on_acked).  A request body is
 * charged to --body-budget and QUIC's windows are credited as it is
 * taken (h3_credit).  Also the streams' deadlines, from the sweep
 * (h3_conn_limits).  serve_h3.c hands it the streams' data from ngtcp2
 * (on_stream_data) and sends what nghttp3 has (h3_conn_write).
 */
#include "serve_h3_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- streams ------------------------------------------------------------ */

static void stream_body_free(struct serve_conn *c, struct h3_stream *st)
{
	limits_budget_give(&c->shard->srv->budget, st->charged);
	st->charged = 0;
	free(st->body);
	st->body = NULL;
	st->blen = st->bcap = 0;
}

void h3_stream_free(struct h3_conn *hc, struct h3_stream *st)
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
int h3_fail_http(struct h3_conn *hc, int liberr)
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
void h3_credit(struct h3_conn *hc, int64_t id, size_t n)
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
		return h3_fail_http(hc, NGHTTP3_ERR_NOMEM);
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
		return h3_fail_http(arg, NGHTTP3_ERR_NOMEM);
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
	h3_credit(hc, id, len);
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
	h3_credit(arg, id, consumed);
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
	h3_stream_free(hc, st);
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
int h3_http_start(struct h3_conn *hc)
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
		return h3_fail_http(hc, rc);
	nghttp3_conn_set_max_client_streams_bidi(hc->http, H3_MAX_STREAMS);
	if (ngtcp2_conn_open_uni_stream(hc->quic, &ctrl, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(hc->quic, &qenc, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(hc->quic, &qdec, NULL) != 0)
		return h3_fail_http(hc, NGHTTP3_ERR_H3_STREAM_CREATION_ERROR);
	rc = nghttp3_conn_bind_control_stream(hc->http, ctrl);
	if (rc == 0)
		rc = nghttp3_conn_bind_qpack_streams(hc->http, qenc, qdec);
	return rc == 0 ? 0 : h3_fail_http(hc, rc);
}

/* ---- from the shard's sweep and completions ---------------------------- */

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
int h3_conn_limits(struct h3_conn *hc, int64_t now_ms)
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
		h3_conn_fail(hc, NGTCP2_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return cut ? h3_conn_write(hc) : 0;
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
			h3_stream_free(hc, st);
		else
			stream_submit(hc, st);
	}
	if (h3_conn_write(hc) < 0)
		return;
	if (hc->stopping && waiting == 0) {
		ngtcp2_connection_close_error_set_application_error(
		    &hc->ccerr, NGHTTP3_H3_NO_ERROR, NULL, 0);
		hc->ccerr_set = 1;
		h3_conn_fail(hc, NGTCP2_ERR_CALLBACK_FAILURE);
	}
}
