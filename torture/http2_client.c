/*
 * http2_client.c -- the HTTP/2 writers of `torture --target http --http2`:
 * one thread per connection, each carrying up to HTTP2_STREAMS writers
 * (http_writer.h), every writer with its own stream in flight at once.
 *
 * Each stream is tracked on its own: a writer's operation is acknowledged
 * when its stream has closed cleanly after a final (2xx) HEADERS frame and
 * END_STREAM -- the whole response arrived.  A connection that breaks (the
 * server was SIGKILLed) ends every writer on it without a DONE for its
 * stream in flight: unacknowledged, allowed to survive or vanish.
 *
 * What the server sends is parsed by nghttp2 out of a bounded buffer; a
 * response body over CLIENT_BODY_MAX, a stream reset, a frame nghttp2
 * rejects or no progress within HTTP_CONN_TIMEOUT_S is a broken answer
 * (DONE with KEEL_EIO for every stream in flight), never a hang.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "http_writer.h"

/* keel-serve answers a write with no body; a little is tolerated. */
#define CLIENT_BODY_MAX 65536

/* One writer's stream. */
typedef struct h2slot {
	hthread *h;        /* the writer                                 */
	int active;        /* the writer goes on (not stopped)           */
	int32_t stream;    /* its stream in flight; 0 when none          */
	proto_rec rec;     /* the operation on it                        */
	answer a;          /* what arrived of its answer                 */
	int ended;         /* END_STREAM arrived after a final HEADERS   */
	int closed;        /* nghttp2 closed the stream                  */
	uint32_t code;     /* the close's error code                     */
	const char *why;   /* a broken answer, said in its DONE          */
	uint64_t body;     /* response body bytes seen                   */
	size_t sent;       /* request body bytes given to nghttp2        */
} h2slot;

typedef struct h2conn {
	http_conn conn;        /* the connection                         */
	nghttp2_session *s;    /* nghttp2's client session on it          */
	h2slot slot[HTTP2_STREAMS];
	uint32_t n;            /* slots in use                           */
} h2conn;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static ssize_t send_cb(nghttp2_session *s, const uint8_t *data, size_t len,
                       int flags, void *user)
{
	h2conn *c = user;
	struct iovec iov = {.iov_base = (void *)data, .iov_len = len};

	(void)s;
	(void)flags;
	return http_conn_sendv(&c->conn, &iov, 1) < 0 ?
	       NGHTTP2_ERR_CALLBACK_FAILURE : (ssize_t)len;
}

static h2slot *slot_of(nghttp2_session *s, int32_t stream)
{
	return nghttp2_session_get_stream_user_data(s, stream);
}

/* :status and ETag of a response's HEADERS; anything else is ignored. */
static int header_cb(nghttp2_session *s, const nghttp2_frame *f,
                     const uint8_t *name, size_t nlen, const uint8_t *val,
                     size_t vlen, uint8_t flags, void *user)
{
	h2slot *sl = slot_of(s, f->hd.stream_id);
	uint64_t v;

	(void)flags;
	(void)user;
	if (!sl || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (nlen == 7 && !memcmp(name, ":status", 7)) {
		if (http_writer_number((const char *)val, vlen, &v) < 0 ||
		    vlen != 3)
			sl->why = "malformed :status";
		sl->a.status = (int)v;
		sl->a.etag = 0; /* a 1xx's fields are not the answer's */
	} else if (nlen == 4 && !memcmp(name, "etag", 4)) {
		if (vlen < 3 || val[0] != '"' || val[vlen - 1] != '"' ||
		    http_writer_number((const char *)val + 1, vlen - 2,
		                       &sl->a.etag) < 0 || !sl->a.etag)
			sl->why = "malformed ETag (want \"<revision>\")";
	}
	return 0;
}

static int frame_cb(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
	h2slot *sl = f->hd.stream_id ? slot_of(s, f->hd.stream_id) : NULL;

	(void)user;
	if (sl && (f->hd.type == NGHTTP2_HEADERS ||
	           f->hd.type == NGHTTP2_DATA) &&
	    (f->hd.flags & NGHTTP2_FLAG_END_STREAM) && sl->a.status >= 200)
		sl->ended = 1;
	return 0;
}

static int data_cb(nghttp2_session *s, uint8_t flags, int32_t stream,
                   const uint8_t *data, size_t len, void *user)
{
	h2slot *sl = slot_of(s, stream);

	(void)flags;
	(void)data;
	(void)user;
	if (sl && (sl->body += len) > CLIENT_BODY_MAX)
		sl->why = "answer body over 64 KiB";
	return 0;
}

static int close_cb(nghttp2_session *s, int32_t stream, uint32_t code,
                    void *user)
{
	h2slot *sl = slot_of(s, stream);

	(void)user;
	if (sl && sl->stream == stream) {
		sl->closed = 1;
		sl->code = code;
	}
	return 0;
}

/* The request body: the writer's value, in the pieces nghttp2 asks for. */
static ssize_t body_cb(nghttp2_session *s, int32_t stream, uint8_t *buf,
                       size_t len, uint32_t *flags, nghttp2_data_source *src,
                       void *user)
{
	h2slot *sl = src->ptr;
	size_t left = sl->rec.change[0].len - sl->sent;

	(void)s;
	(void)stream;
	(void)user;
	if (len > left)
		len = left;
	memcpy(buf, sl->h->buf + sl->sent, len);
	sl->sent += len;
	if (sl->sent == sl->rec.change[0].len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)len;
}

#define NV(n, v, vl) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), \
                      NGHTTP2_NV_FLAG_NONE}

/* Starts the slot's next operation: INTENT, then the request on a new
 * stream.  0, or -1 when the writer cannot go on (pipe gone, nghttp2
 * refused). */
static int start_op(h2conn *c, h2slot *sl)
{
	hthread *h = sl->h;
	const proto_change *ch = &sl->rec.change[0];
	uint32_t i;
	char path[HTTP_WRITER_PATH_MAX], cond[32], clen[16];
	nghttp2_data_provider body = {.source.ptr = sl,
	                              .read_callback = body_cb};
	int32_t id;

	if (http_writer_begin(h, &sl->rec) < 0)
		return -1;
	i = ch->key / h->plan->opt->threads;
	http_writer_key_path(ch->key, path);
	if (h->present[i])
		snprintf(cond, sizeof(cond), "\"%" PRIu64 "\"", h->rev[i]);
	else
		snprintf(cond, sizeof(cond), "*");
	snprintf(clen, sizeof(clen), "%u", ch->len);
	nghttp2_nv nv[] = {
		NV(":method", ch->len ? "PUT" : "DELETE", ch->len ? 3 : 6),
		NV(":scheme", h->tls ? "https" : "http", h->tls ? 5 : 4),
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
	sl->body = sl->sent = 0;
	id = nghttp2_submit_request(c->s, NULL, nv, ch->len ? 6 : 5,
	                            ch->len ? &body : NULL, sl);
	if (id < 0) {
		fprintf(stderr, "torture: http thread %u: nghttp2 refused a "
		        "request: %s\n", h->t, nghttp2_strerror(id));
		return -1;
	}
	sl->stream = id;
	return 0;
}

/* The slot's stream closed: its DONE, and its next operation. */
static void finish_op(h2conn *c, h2slot *sl)
{
	int ok = sl->ended && sl->code == NGHTTP2_NO_ERROR && !sl->why;
	char why[64];

	if (!ok && !sl->why) {
		snprintf(why, sizeof(why), "stream closed without a whole "
		         "answer (error code %u)", sl->code);
		sl->why = why;
	}
	sl->stream = 0;
	if (http_writer_finish(sl->h, &sl->rec, ok ? REQ_ANSWERED : -1,
	                       &sl->a, sl->why) < 0 || start_op(c, sl) < 0)
		sl->active = 0;
}

/* Every stream in flight gets a DONE with WHY (a broken connection that
 * is not a dead server), and every writer stops. */
static void fail_all(h2conn *c, const char *why)
{
	for (uint32_t i = 0; i < c->n; i++) {
		h2slot *sl = &c->slot[i];
		if (sl->active && sl->stream)
			http_writer_finish(sl->h, &sl->rec, -1, &sl->a, why);
		sl->active = 0;
	}
}

static int any_active(const h2conn *c)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->slot[i].active)
			return 1;
	return 0;
}

static nghttp2_session *new_session(h2conn *c)
{
	nghttp2_session_callbacks *cb;
	nghttp2_session *s = NULL;
	nghttp2_settings_entry set[] = {
		{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
		{NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 16384},
	};

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return NULL;
	nghttp2_session_callbacks_set_send_callback(cb, send_cb);
	nghttp2_session_callbacks_set_on_header_callback(cb, header_cb);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, frame_cb);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, data_cb);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, close_cb);
	if (nghttp2_session_client_new(&s, cb, c) != 0)
		s = NULL;
	nghttp2_session_callbacks_del(cb);
	if (s && nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, set, 2) != 0) {
		nghttp2_session_del(s);
		s = NULL;
	}
	return s;
}

/* Reads and feeds what arrived; finishes the streams that closed.  0; 1
 * when the connection broke (server dead); -1 with *WHY when what came is
 * broken. */
static int receive(h2conn *c, const char **why)
{
	uint8_t buf[16384];
	ssize_t n = http_conn_recv(&c->conn, buf, sizeof(buf));

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return *why = "no answer within 30 s", -1;
	if (n < 0 && errno == EPROTO)
		return *why = "a TLS record torture cannot accept", -1;
	if (n <= 0)
		return 1;
	n = nghttp2_session_mem_recv(c->s, buf, (size_t)n);
	if (n < 0) {
		*why = nghttp2_strerror((int)n);
		return -1;
	}
	for (uint32_t i = 0; i < c->n; i++)
		if (c->slot[i].active && c->slot[i].stream &&
		    c->slot[i].closed)
			finish_op(c, &c->slot[i]);
	return 0;
}

/* The connection's life: streams until it breaks or every writer stops. */
static void run(h2conn *c)
{
	uint64_t last = now_ms();
	const char *why = NULL;
	int rc = 0;

	for (uint32_t i = 0; i < c->n; i++)
		if (start_op(c, &c->slot[i]) < 0)
			c->slot[i].active = 0;
	while (any_active(c)) {
		struct pollfd p = {.fd = c->conn.sock, .events = POLLIN};
		int done_before = 0, done_after = 0;
		if (nghttp2_session_send(c->s) != 0) {
			rc = 1; /* could not write: the server is gone */
			break;
		}
		if (!nghttp2_session_want_read(c->s)) {
			rc = -1; /* GOAWAY and nothing left in flight */
			why = "the session ended (GOAWAY sent or received)";
			break;
		}
		if (now_ms() - last > HTTP_CONN_TIMEOUT_S * 1000u) {
			rc = -1;
			why = "no answer within 30 s";
			break;
		}
		/* TLS may hold decrypted bytes the socket no longer shows. */
		if (!(c->conn.ssl && SSL_pending(c->conn.ssl)) &&
		    poll(&p, 1, 1000) == 0)
			continue;
		for (uint32_t i = 0; i < c->n; i++)
			done_before += (int)c->slot[i].h->seq;
		if ((rc = receive(c, &why)) != 0)
			break;
		for (uint32_t i = 0; i < c->n; i++)
			done_after += (int)c->slot[i].h->seq;
		if (done_after != done_before)
			last = now_ms();
	}
	if (rc < 0) {
		fprintf(stderr, "torture: http/2 connection of thread %u: %s\n",
		        c->slot[0].h->t, why);
		fail_all(c, why);
	}
	/* rc 1: the server died; what is in flight stays unacknowledged. */
}

void *http2_connection_thread(void *arg)
{
	http2_group *g = arg;
	h2conn c;
	const char *why = NULL;
	char alpn[16];
	int rc;

	memset(&c, 0, sizeof(c));
	c.n = g->n;
	for (uint32_t i = 0; i < g->n; i++) {
		c.slot[i].h = &g->w[i];
		c.slot[i].active = 1;
	}
	rc = http_conn_open(&c.conn, g->w[0].port, g->w[0].tls, &why);
	if (rc == -1)
		return NULL; /* the server is gone already */
	if (rc == -2 || (c.conn.ssl &&
	                 strcmp(http_conn_alpn(&c.conn, alpn, sizeof(alpn)),
	                        "h2") != 0)) {
		/* The harness's probe saw this server's kind speak h2 with
		 * the pinned certificate: this is the server misbehaving. */
		fprintf(stderr, "torture: http/2 connection of thread %u: %s\n",
		        g->w[0].t, why ? why : "the server did not choose h2");
		_exit(5);
	}
	if (!(c.s = new_session(&c))) {
		fprintf(stderr, "torture: http/2: cannot make a session\n");
		goto out_close;
	}
	run(&c);
	nghttp2_session_del(c.s);
out_close:
	http_conn_close(&c.conn);
	return NULL;
}
