/*
 * serve_h2.c -- HTTP/2 connections through nghttp2 (serve_h2.h says how
 * it is called and what it bounds; docs/http.md "HTTP/2" what clients see).
 *
 * A STREAM'S LIFE
 *   on_begin_headers: an h2_stream is made (or the stream is refused when
 *   H2_STREAMS_HELD are held).  on_header: the fields serve_req.c reads
 *   are kept in the stream's small buffer.  The header block's end
 *   (stream_headers_done): the request is checked as the HTTP/1.1 parser
 *   would, and tokens are checked before any body is held; a refusal is
 *   answered at once and the body that may follow is dropped.  DATA: the
 *   body grows, charged to --body-budget.  END_STREAM (stream_request):
 *   serve_handle() answers, or starts a commit whose completion makes the
 *   answer ready later (h2_flush submits it).  on_stream_close: the
 *   stream is freed, unless its answer still waits for a commit.
 *
 * Callbacks never close the connection (nghttp2 is on the stack): they
 * set flags, and h2_input / h2_flush act on them after nghttp2 returns.
 */
#include "serve.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <nghttp2/nghttp2.h>

static const char h2_preface_text[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

struct h2_stream {
	struct h2_stream *prev, *next; /* the connection's streams           */
	int32_t id;
	uint8_t answered;   /* serve_handle ran, or a refusal was queued    */
	uint8_t submitted;  /* its response went to nghttp2                 */
	uint8_t closed;     /* nghttp2 closed it (kept for a commit)        */
	uint8_t req_done;   /* END_STREAM seen                              */
	uint8_t headers_done; /* its header block was whole                 */
	struct serve_fields fields; /* the request's, as they came       */
	struct http_request req;  /* slices of fields, once headers are done */
	char *body;         /* the request body so far                      */
	size_t blen, bcap;
	size_t charged;     /* of bcap, charged to --body-budget            */
	struct serve_out *out; /* the answer; freed with the stream         */
	size_t wire_off;    /* body bytes put into DATA frames              */
	uint64_t dropped;   /* body bytes dropped after an early answer     */
	uint64_t received;  /* body bytes received (the rate's count)       */
	struct limits_body rate; /* --body-min-rate's window (serve_limits.h) */
};

/* A block of nghttp2's in pages of its own (H2_PAGED_MIN and up). */
struct h2_paged {
	void *p;        /* the mapping; NULL when the slot is free          */
	size_t len;     /* its length, whole pages                          */
	uint8_t frames; /* the frame buffer: its pages are dropped when the
	                   connection is idle                               */
};

#define H2_PAGED_SLOTS 6 /* the frame buffer's chunks (nghttp2 keeps
                            one, chains up to five for a large frame),
                            and one for a large header value          */

struct h2_conn {
	nghttp2_session *session;
	struct h2_paged paged[H2_PAGED_SLOTS]; /* nghttp2's large blocks */
	uint8_t making;             /* inside nghttp2_session_server_new3   */
	uint8_t frames_dirty;       /* frames were built since the frame
	                               buffer's pages were last dropped     */
	uint8_t idle_listed;        /* on the shard's idle list             */
	struct h2_conn *idle_prev, *idle_next; /* the shard's idle list     */
	int64_t idle_listed_ms;     /* when it was put on that list         */
	int64_t idle_ms;            /* when it last went idle               */
	struct h2_stream *streams;  /* every stream held                   */
	struct h2_stream *current;  /* the stream serve_handle answers     */
	int nstreams;               /* entries in streams                  */
	int waiting;                /* answers waiting for a commit        */
	char *wbuf;                 /* output not yet written; allocated
	                               while streams are open or bytes wait */
	size_t wlen, woff;          /* bytes in wbuf, bytes written of it  */
	uint8_t blocked;            /* a callback found wbuf full          */
	uint8_t io_error;           /* the socket failed in a callback     */
	uint8_t ending;             /* GOAWAY decided: read nothing more   */
	uint8_t stopping;           /* SIGTERM's GOAWAY submitted          */
	uint8_t calm;               /* a defence tripped (ENHANCE_YOUR_CALM) */
	uint8_t continuations;      /* CONTINUATION frames in this block   */
	size_t block_bytes;         /* decoded bytes of this header block  */
	uint8_t protocol_error;     /* a callback found a PROTOCOL_ERROR   */
	uint8_t head_open;          /* a header block began, not yet whole */
	uint8_t paused;             /* reading paused (output full): the
	                               bodies' windows begin again after   */
	uint8_t cuts;               /* bodies cut for their rate (limits_cut) */
	int64_t head_since_ms;      /* when the open header block began    */
	int32_t last_id;            /* the highest stream a HEADERS named  */
	uint32_t updates_earned;    /* WINDOW_UPDATEs our DATA frames call
	                               for, not drawn on the bucket        */
	int32_t reset_ids[H2_RESET_MEMORY]; /* streams we reset lately     */
	uint8_t reset_next;         /* the slot of reset_ids to fill next  */
	struct limits_bucket bucket; /* the control-frame bucket            */
};

/* ---- nghttp2's memory ------------------------------------------------------ */

/*
 * nghttp2 allocates about 25 KB for each session (1.52, measured): 16 KB
 * of it the buffer it builds outgoing frames in (one frame's header and
 * payload), kept for the session's life.  From the heap that buffer lands
 * in memory that other connections' TLS handshakes touched and freed, and
 * is resident in full while the connection idles.  Blocks from
 * H2_PAGED_MIN up get pages of their own instead: only the pages written
 * are resident, a freed block goes back to the system at once, and once
 * the connection has been idle a while (h2_sweep) the frame buffer's pages
 * are dropped: it holds nothing between frames, and a dropped page comes
 * back zeroed when the next frame is built.  The frame buffer is told apart as
 * the block of H2_FRAMEBUF_MIN or more made with the session (it must hold
 * a whole frame of 16 KB); nothing else of that size is made then.
 * Smaller blocks come from malloc as before (the session's other 9 KB is
 * written as it is made, so pages of its own would save nothing).
 */
#define H2_PAGED_MIN 8192
#define H2_FRAMEBUF_MIN 16384

static struct h2_paged *paged_slot(struct h2_conn *h, const void *p)
{
	for (int i = 0; i < H2_PAGED_SLOTS; i++)
		if (h->paged[i].p == p)
			return &h->paged[i];
	return NULL;
}

static void *h2_mem_malloc(size_t n, void *arg)
{
	struct h2_conn *h = arg;
	struct h2_paged *slot;
	size_t len;
	void *p;

	if (n < H2_PAGED_MIN || (slot = paged_slot(h, NULL)) == NULL)
		return malloc(n);
	len = (n + 4095) & ~(size_t)4095;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	         -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	*slot = (struct h2_paged){p, len, h->making && n >= H2_FRAMEBUF_MIN};
	return p;
}

static void h2_mem_free(void *p, void *arg)
{
	struct h2_paged *slot;

	if (p == NULL)
		return;
	if ((slot = paged_slot(arg, p)) == NULL) {
		free(p);
		return;
	}
	munmap(slot->p, slot->len);
	slot->p = NULL;
}

static void *h2_mem_calloc(size_t nmemb, size_t size, void *arg)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	if (nmemb * size < H2_PAGED_MIN)
		return calloc(nmemb, size);
	p = h2_mem_malloc(nmemb * size, arg);
	if (p && paged_slot(arg, p) == NULL)
		memset(p, 0, nmemb * size); /* no slot left: from malloc */
	return p;
}

static void *h2_mem_realloc(void *p, size_t n, void *arg)
{
	struct h2_paged *slot = p ? paged_slot(arg, p) : NULL;
	void *q;

	/* a block from malloc stays there, whatever it grows to */
	if (slot == NULL && (p != NULL || n < H2_PAGED_MIN))
		return realloc(p, n);
	q = h2_mem_malloc(n, arg);
	if (q && p) {
		memcpy(q, p, slot->len < n ? slot->len : n);
		h2_mem_free(p, arg);
	}
	return q;
}

/*
 * Dropping the pages at once each time a connection goes idle would cost a
 * madvise and a page fault for every burst of requests (3x the CPU per
 * request of h2load's GETs on this machine's virtual CPUs): connections go
 * on the shard's idle list instead, oldest first, and h2_sweep drops the
 * pages of those still idle H2_IDLE_PAGES_MS later.
 */
static void idle_unlink(struct serve_shard *sh, struct h2_conn *h)
{
	if (!h->idle_listed)
		return;
	if (h->idle_prev)
		h->idle_prev->idle_next = h->idle_next;
	else
		sh->h2_idle_first = h->idle_next;
	if (h->idle_next)
		h->idle_next->idle_prev = h->idle_prev;
	else
		sh->h2_idle_last = h->idle_prev;
	h->idle_prev = h->idle_next = NULL;
	h->idle_listed = 0;
}

static void idle_append(struct serve_shard *sh, struct h2_conn *h,
                        int64_t since_ms)
{
	h->idle_prev = sh->h2_idle_last;
	h->idle_next = NULL;
	if (sh->h2_idle_last)
		sh->h2_idle_last->idle_next = h;
	else
		sh->h2_idle_first = h;
	sh->h2_idle_last = h;
	h->idle_listed = 1;
	h->idle_listed_ms = since_ms;
}

/* C went idle (no stream, nothing to write). */
static void h2_went_idle(struct serve_conn *c)
{
	struct h2_conn *h = c->h2;

	h->idle_ms = c->shard->now_ms;
	if (h->frames_dirty && !h->idle_listed)
		idle_append(c->shard, h, h->idle_ms);
}

/* Is H idle now, with nothing queued or being built? */
static int h2_is_idle(struct h2_conn *h)
{
	return h->wlen == 0 && h->nstreams == 0 &&
	       !nghttp2_session_want_write(h->session);
}

void h2_sweep(struct serve_shard *sh)
{
	struct h2_conn *h;

	while ((h = sh->h2_idle_first) != NULL &&
	       sh->now_ms - h->idle_listed_ms >= H2_IDLE_PAGES_MS) {
		idle_unlink(sh, h);
		if (!h->frames_dirty || !h2_is_idle(h))
			continue; /* busy: listed again when it goes idle */
		if (sh->now_ms - h->idle_ms < H2_IDLE_PAGES_MS) {
			idle_append(sh, h, h->idle_ms); /* idle again since */
			continue;
		}
		for (int i = 0; i < H2_PAGED_SLOTS; i++)
			if (h->paged[i].p && h->paged[i].frames)
				madvise(h->paged[i].p, h->paged[i].len,
				        MADV_DONTNEED);
		h->frames_dirty = 0;
	}
}

/* ---- small helpers ----------------------------------------------------- */

static struct h2_stream *stream_of(struct serve_conn *c, int32_t id)
{
	return nghttp2_session_get_stream_user_data(c->h2->session, id);
}

static void stream_body_free(struct serve_conn *c, struct h2_stream *st)
{
	limits_budget_give(&c->shard->srv->budget, st->charged);
	st->charged = 0;
	free(st->body);
	st->body = NULL;
	st->blen = st->bcap = 0;
}

static void stream_free(struct serve_conn *c, struct h2_stream *st)
{
	struct h2_conn *h = c->h2;

	if (st->prev)
		st->prev->next = st->next;
	else
		h->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	h->nstreams--;
	if (st->out && !st->out->ready)
		h->waiting--;
	stream_body_free(c, st);
	if (st->out) {
		if (st->out->owned)
			c->queued -= (uint32_t)st->out->body_len;
		serve_out_free(st->out); /* releases a GET's view */
	}
	fields_free(&st->fields);
	free(st);
}

/* A defence tripped: GOAWAY(ENHANCE_YOUR_CALM) goes out once nghttp2
 * returns, and nothing more is read. */
static int calm_down(struct serve_conn *c)
{
	c->h2->calm = 1;
	return NGHTTP2_ERR_CALLBACK_FAILURE;
}

/* A frame broke RFC 9113 in a way nghttp2 lets pass: GOAWAY(PROTOCOL_ERROR)
 * once nghttp2 returns. */
static int protocol_error(struct serve_conn *c)
{
	c->h2->protocol_error = 1;
	return NGHTTP2_ERR_CALLBACK_FAILURE;
}

/* Was stream ID reset by us lately (so a HEADERS on it may have crossed
 * our RST_STREAM: trailers the client sent before it saw it)? */
static int reset_lately(const struct h2_conn *h, int32_t id)
{
	for (int i = 0; i < H2_RESET_MEMORY; i++)
		if (h->reset_ids[i] == id)
			return 1;
	return 0;
}

/* One control frame drawn from the bucket.  Returns 0, or -1 when the
 * bucket is empty. */
static int bucket_take(struct serve_conn *c)
{
	return limits_bucket_take(&c->h2->bucket, c->shard->now_ms) ==
	       LIMITS_OK ? 0 : -1;
}

/* ---- output: one buffer, written as it fills and after each send ------- */

/* Writes what wbuf holds.  Returns 0 (all or part written, or EAGAIN) or
 * -1 when the socket failed. */
static int wbuf_write(struct serve_conn *c)
{
	struct h2_conn *h = c->h2;
	struct iovec iov;
	ssize_t n;

	while (h->woff < h->wlen) {
		iov.iov_base = h->wbuf + h->woff;
		iov.iov_len = h->wlen - h->woff;
		n = serve_conn_writev(c, &iov, 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			h->io_error = 1;
			return -1;
		}
		h->woff += (size_t)n;
		/* for a stream; what a connection without streams writes
		 * (PING and SETTINGS ACKs) is no progress: PINGs alone must
		 * not keep an idle connection open */
		if (h->nstreams > 0)
			serve_conn_progress(c);
	}
	h->woff = h->wlen = 0;
	return 0;
}

/* Room for N more bytes in wbuf, writing it out if need be.  Returns 1,
 * or 0 when the socket cannot take enough now. */
static int wbuf_room(struct serve_conn *c, size_t n)
{
	struct h2_conn *h = c->h2;

	if (h->wbuf == NULL && (h->wbuf = malloc(H2_WBUF)) == NULL)
		return 0; /* out of memory: the send fails, the connection ends */
	if (h->wlen + n <= H2_WBUF)
		return 1;
	if (wbuf_write(c) < 0)
		return 0;
	if (h->woff) { /* keep the unwritten bytes at the front */
		memmove(h->wbuf, h->wbuf + h->woff, h->wlen - h->woff);
		h->wlen -= h->woff;
		h->woff = 0;
	}
	return h->wlen + n <= H2_WBUF;
}

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t len,
                       int flags, void *arg)
{
	struct serve_conn *c = arg;
	struct h2_conn *h = c->h2;

	(void)s;
	(void)flags;
	h->frames_dirty = 1;
	if (len > H2_WBUF)
		return NGHTTP2_ERR_CALLBACK_FAILURE; /* no frame of ours is */
	if (!wbuf_room(c, len)) {
		h->blocked = 1;
		return h->io_error || h->wbuf == NULL ? NGHTTP2_ERR_CALLBACK_FAILURE
		                                      : NGHTTP2_ERR_WOULDBLOCK;
	}
	memcpy(h->wbuf + h->wlen, data, len);
	h->wlen += len;
	return (ssize_t)len;
}

/*
 * A DATA frame of a large body, sent from the mapping: what wbuf holds,
 * the frame header, then the body bytes in one writev.  What the socket
 * does not take is copied into wbuf (room for it was made first), so the
 * frame is complete as nghttp2 requires and the view may go with the
 * stream.
 */
static int on_send_data(nghttp2_session *s, nghttp2_frame *frame,
                        const uint8_t *framehd, size_t length,
                        nghttp2_data_source *source, void *arg)
{
	struct serve_conn *c = arg;
	struct h2_conn *h = c->h2;
	struct h2_stream *st = source->ptr;
	const char *data = st->out->body + st->wire_off;
	struct iovec iov[2];
	size_t head, done;
	ssize_t n;

	(void)s;
	h->frames_dirty = 1; /* FRAMEHD was built in the frame buffer */
	if (frame->data.padlen)
		return NGHTTP2_ERR_CALLBACK_FAILURE; /* never asked for */
	if (!wbuf_room(c, 9 + length)) {
		h->blocked = 1;
		return h->io_error || h->wbuf == NULL ? NGHTTP2_ERR_CALLBACK_FAILURE
		                                      : NGHTTP2_ERR_WOULDBLOCK;
	}
	memcpy(h->wbuf + h->wlen, framehd, 9);
	h->wlen += 9;
	head = h->wlen - h->woff;
	iov[0] = (struct iovec){h->wbuf + h->woff, head};
	iov[1] = (struct iovec){(void *)data, length};
	do
		n = serve_conn_writev(c, iov, 2);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN) {
		h->io_error = 1;
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	done = n < 0 ? 0 : (size_t)n;
	if (done > 0)
		serve_conn_progress(c);
	if (done >= head) {
		h->woff = h->wlen = 0;
		done -= head;
	} else {
		h->woff += done;
		done = 0;
	}
	if (done < length) {
		memcpy(h->wbuf + h->wlen, data + done, length - done);
		h->wlen += length - done;
	}
	st->wire_off += length;
	return 0;
}

/* nghttp2 asks for the next DATA frame's bytes of ST's answer. */
static ssize_t on_data_read(nghttp2_session *s, int32_t id, uint8_t *buf,
                            size_t length, uint32_t *flags,
                            nghttp2_data_source *source, void *arg)
{
	struct h2_conn *h = ((struct serve_conn *)arg)->h2;
	struct h2_stream *st = source->ptr;
	struct serve_out *o = st->out;
	size_t left = o->body_len - o->sent;
	size_t n = left < length ? left : length;

	(void)s;
	(void)id;
	/* the client may credit this frame on its stream and on the
	 * connection: two WINDOW_UPDATEs that do not draw on the bucket */
	if (h->updates_earned < H2_UPDATES_EARNED_MAX)
		h->updates_earned += 2;
	if (n >= H2_NOCOPY_MIN) {
		/* header and payload in one TLS record of 16 KiB, when
		 * nothing waits before them (serve_tls_writev) */
		if (n > 16384 - 9)
			n = 16384 - 9;
		*flags |= NGHTTP2_DATA_FLAG_NO_COPY; /* on_send_data writes it */
	} else {
		memcpy(buf, o->body + o->sent, n);
		st->wire_off += n;
	}
	o->sent += n;
	if (o->sent == o->body_len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* ---- answers --------------------------------------------------------- */

/*
 * Submits ST's answer.  Its head is HTTP/1.1 text made by serve_req.c
 * (bounded, our own): the status from the first line, then each "Name:
 * value" line as a field, the name lowercased in place, Connection left
 * out (RFC 9113 section 8.2.2).
 */
static void stream_submit(struct serve_conn *c, struct h2_stream *st)
{
	struct serve_out *o = st->out;
	nghttp2_data_provider prd = {.source.ptr = st, .read_callback = on_data_read};
	nghttp2_nv nv[16];
	char *p = o->head, *end = o->head + o->head_len;
	int n = 0, rc;

	st->submitted = 1;
	nv[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)p + 9, 7, 3,
	                       NGHTTP2_NV_FLAG_NONE};
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
			nv[n++] = (nghttp2_nv){(uint8_t *)p, (uint8_t *)colon + 2,
			                       (size_t)(colon - p),
			                       (size_t)(eol - colon - 2),
			                       NGHTTP2_NV_FLAG_NONE};
		p = eol + 1;
	}
	rc = nghttp2_submit_response(c->h2->session, st->id, nv, (size_t)n,
	                             o->body_len ? &prd : NULL);
	if (rc != 0 && st->closed == 0)
		nghttp2_submit_rst_stream(c->h2->session, NGHTTP2_FLAG_NONE, st->id,
		                          NGHTTP2_INTERNAL_ERROR);
}

int h2_out_attach(struct serve_conn *c, struct serve_out *o)
{
	struct h2_stream *st = c->h2->current;

	if (st == NULL || st->out)
		return -1;
	st->out = o;
	return 0;
}

/* Answers ST now with a refusal (STATUS, with tokens' CHALLENGE when
 * given) and drops any body still to come. */
static void stream_refuse(struct serve_conn *c, struct h2_stream *st,
                          int status, const char *challenge)
{
	struct h2_conn *h = c->h2;

	h->current = st;
	if (challenge)
		serve_error_auth(c, &st->req, status, 0, challenge);
	else if (status == 503)
		serve_error_busy(c, 1);
	else
		serve_error(c, status, 1, 0);
	h->current = NULL;
	st->answered = 1;
	stream_body_free(c, st);
	if (st->out)
		stream_submit(c, st);
	else
		nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id,
		                          NGHTTP2_INTERNAL_ERROR);
}

/* ---- requests ------------------------------------------------------------ */

/* The header block of ST's request is complete: refuse it now when it is
 * wrong, too large or not allowed (before any body is held). */
static void stream_headers_done(struct serve_conn *c, struct h2_stream *st)
{
	struct serve_server *srv = c->shard->srv;
	const char *challenge = NULL;
	int status = fields_request(&st->fields, &st->req);

	st->headers_done = 1;
	limits_body_begin(&st->rate, 0, c->shard->now_ms);
	if (status == 0 && st->req.has_length &&
	    st->req.content_length > srv->cfg.max_body)
		status = 413;
	if (status) {
		stream_refuse(c, st, status, NULL);
		return;
	}
	status = serve_authorize(srv, &st->req, &challenge);
	if (status) {
		stream_refuse(c, st, status, challenge);
		return;
	}
	/* a body that would not fit now is told so before it is sent, as
	 * over HTTP/1.1 */
	if (st->req.has_length && st->req.content_length > 0 &&
	    limits_budget_admits(&srv->budget, st->req.content_length, 0) !=
	        LIMITS_OK)
		stream_refuse(c, st, 503, NULL);
}

/* END_STREAM: ST's request is whole.  serve_req.c answers it (or starts
 * its commit). */
static void stream_request(struct serve_conn *c, struct h2_stream *st)
{
	struct h2_conn *h = c->h2;

	st->req_done = 1;
	if (st->answered)
		return;
	if (c->queued >= SERVE_QUEUED_MAX && st->req.path.n == 1 &&
	    st->req.path.p[0] == '/' && (st->req.method == HTTP_METHOD_GET ||
	                                 st->req.method == HTTP_METHOD_HEAD)) {
		/* listings the client has not read fill SERVE_QUEUED_MAX: one
		 * more waits its turn.  (Pausing reads, as HTTP/1.1 does,
		 * would also stop the WINDOW_UPDATEs that let them drain.) */
		stream_refuse(c, st, 503, NULL);
		return;
	}
	st->answered = 1;
	h->current = st;
	serve_handle(c, &st->req, st->body ? st->body : "", st->blen);
	h->current = NULL;
	stream_body_free(c, st); /* a PUT's batch holds its own copy */
	serve_conn_progress(c);
	if (st->out == NULL)
		nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id,
		                          NGHTTP2_INTERNAL_ERROR);
	else if (st->out->ready)
		stream_submit(c, st);
	else
		h->waiting++; /* its commit answers it (h2_flush) */
}

/* ---- nghttp2's receiving callbacks ---------------------------------- */

/*
 * A HEADERS frame on stream ID: a new stream must be numbered above every
 * stream the client opened (RFC 9113 5.1.1), which nghttp2 lets pass (it
 * ignores such a block, for fear of trailers that crossed a RST_STREAM).
 * Those are told apart here: a stream nghttp2 still has (trailers), or
 * one we reset lately, is fine; any other lower stream is a connection
 * error.  Returns 0, or -1 for PROTOCOL_ERROR.
 */
static int headers_id_check(struct serve_conn *c, nghttp2_session *s,
                            int32_t id)
{
	struct h2_conn *h = c->h2;

	if (id > h->last_id) {
		h->last_id = id;
		return 0;
	}
	if (!(id & 1) || nghttp2_session_find_stream(s, id) != NULL)
		return 0; /* even: nghttp2's error; else trailers */
	return reset_lately(h, id) ? 0 : -1;
}

static int on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd,
                          void *arg)
{
	struct serve_conn *c = arg;
	struct h2_conn *h = c->h2;
	int control = 0;

	if (hd->type != NGHTTP2_CONTINUATION)
		h->head_open = 0; /* a block ends before any other frame */
	switch (hd->type) {
	case NGHTTP2_HEADERS:
		if (headers_id_check(c, s, hd->stream_id) < 0)
			return protocol_error(c);
		h->continuations = 0;
		h->block_bytes = 0;
		/* --header-timeout runs from here until the block is whole
		 * (on_frame_recv), whatever other frames come meanwhile */
		h->head_open = 1;
		h->head_since_ms = c->shard->now_ms;
		break;
	case NGHTTP2_CONTINUATION:
		if (++h->continuations > H2_MAX_CONTINUATIONS)
			return calm_down(c);
		break;
	case NGHTTP2_WINDOW_UPDATE:
		/* the ones our DATA called for are free; the rest cost work
		 * for nothing, like a PING */
		if (h->updates_earned > 0)
			h->updates_earned--;
		else
			control = 1;
		break;
	case NGHTTP2_SETTINGS:
	case NGHTTP2_PING:
		control = !(hd->flags & NGHTTP2_FLAG_ACK);
		break;
	case NGHTTP2_PRIORITY:
	case NGHTTP2_RST_STREAM:
		control = 1;
		break;
	case NGHTTP2_DATA:
		control = hd->length == 0 &&
		          !(hd->flags & NGHTTP2_FLAG_END_STREAM);
		break;
	}
	if (control && bucket_take(c) < 0)
		return calm_down(c);
	return 0;
}

/* A frame nghttp2 refused (a stream over SETTINGS_MAX_CONCURRENT_STREAMS,
 * a frame on a closed stream...): each costs a RST_STREAM or more, so
 * each draws on the bucket. */
static int on_invalid_frame(nghttp2_session *s, const nghttp2_frame *frame,
                            int lib_error, void *arg)
{
	struct serve_conn *c = arg;

	(void)s;
	(void)lib_error;
	if (frame->hd.type == NGHTTP2_HEADERS)
		c->h2->head_open = 0; /* the block was read, and refused */
	return bucket_take(c) < 0 ? calm_down(c) : 0;
}

/* A frame went out: RST_STREAMs (ours, and nghttp2's refusals) are
 * remembered for headers_id_check. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *frame,
                         void *arg)
{
	struct h2_conn *h = ((struct serve_conn *)arg)->h2;

	(void)s;
	if (frame->hd.type == NGHTTP2_RST_STREAM) {
		h->reset_ids[h->reset_next] = frame->hd.stream_id;
		h->reset_next = (uint8_t)((h->reset_next + 1) % H2_RESET_MEMORY);
	}
	return 0;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame,
                            void *arg)
{
	struct serve_conn *c = arg;
	struct h2_conn *h = c->h2;
	struct h2_stream *st;

	if (frame->hd.type != NGHTTP2_HEADERS ||
	    frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if (h->nstreams >= H2_STREAMS_HELD || h->stopping ||
	    (st = calloc(1, sizeof *st)) == NULL) {
		if (bucket_take(c) < 0) /* a refusal costs a frame too */
			return calm_down(c);
		nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
		                          NGHTTP2_REFUSED_STREAM);
		return 0; /* no user data: its frames are ignored */
	}
	st->id = frame->hd.stream_id;
	st->next = h->streams;
	if (h->streams)
		h->streams->prev = st;
	h->streams = st;
	h->nstreams++;
	nghttp2_session_set_stream_user_data(s, st->id, st);
	return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame,
                     const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *arg)
{
	struct serve_conn *c = arg;
	struct h2_conn *h = c->h2;
	struct h2_stream *st;

	(void)flags;
	h->block_bytes += namelen + valuelen + 32;
	if (h->block_bytes > H2_HEADER_BOMB)
		return calm_down(c); /* far past what SETTINGS announced */
	st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
	if (st == NULL || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0; /* a refused stream, or trailers: nothing kept */
	if (fields_add(&st->fields, name, namelen, value, valuelen,
	               H2_HEADER_LIST_MAX) < 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	return 0;
}

/* A chunk of ST's body: kept, charged to --body-budget, growing by
 * doubling as bytes really arrive (never ahead of them beyond the
 * announced length). */
static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id,
                         const uint8_t *data, size_t len, void *arg)
{
	struct serve_conn *c = arg;
	struct serve_server *srv = c->shard->srv;
	struct h2_stream *st = stream_of(c, id);
	size_t cap;
	char *p;

	(void)s;
	(void)flags;
	if (st == NULL)
		return 0;
	st->received += len;
	if (st->answered) {
		/* refused: the rest is dropped (flow control is still
		 * credited), up to a bound, then the client is asked to stop
		 * (RFC 9113 8.1; not at once: curl 7.88 takes RST_STREAM
		 * NO_ERROR after an answer for a failure) */
		st->dropped += len;
		if (st->dropped > H2_DROP_MAX && st->dropped - len <= H2_DROP_MAX)
			nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id,
			                          NGHTTP2_NO_ERROR);
		return 0;
	}
	if (st->blen + len > srv->cfg.max_body) {
		stream_refuse(c, st, 413, NULL);
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
			stream_refuse(c, st, 503, NULL);
			return 0;
		}
		p = realloc(st->body, cap);
		if (p == NULL) {
			limits_budget_give(&srv->budget, cap - st->bcap);
			stream_refuse(c, st, 503, NULL);
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

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame,
                         void *arg)
{
	struct serve_conn *c = arg;
	struct h2_stream *st;

	if (frame->hd.type == NGHTTP2_HEADERS)
		c->h2->head_open = 0; /* the block is whole */
	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
	if (st == NULL)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS &&
	    frame->headers.cat == NGHTTP2_HCAT_REQUEST)
		stream_headers_done(c, st);
	if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
		stream_request(c, st);
	return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code,
                           void *arg)
{
	struct serve_conn *c = arg;
	struct h2_stream *st = stream_of(c, id);

	(void)code;
	if (st == NULL)
		return 0;
	nghttp2_session_set_stream_user_data(s, id, NULL);
	if (st->out && !st->out->ready) {
		st->closed = 1; /* its commit will still answer: freed then */
		return 0;
	}
	stream_free(c, st);
	return 0;
}

/* ---- sessions ----------------------------------------------------------- */

static pthread_once_t h2_once = PTHREAD_ONCE_INIT;
static nghttp2_session_callbacks *h2_callbacks; /* shared, read-only */
static nghttp2_option *h2_options;

static void h2_setup(void)
{
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return;
	if (nghttp2_option_new(&opt) != 0) {
		nghttp2_session_callbacks_del(cb);
		return;
	}
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_send_data_callback(cb, on_send_data);
	nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb,
	                                                        on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
	                                                          on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(
	    cb, on_invalid_frame);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb,
	                                                       on_stream_close);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
	nghttp2_option_set_max_continuations(opt, H2_MAX_CONTINUATIONS);
	nghttp2_option_set_max_outbound_ack(opt, H2_MAX_OUTBOUND_ACK);
	nghttp2_option_set_max_settings(opt, 32);
	/* above our bucket, so that ours always answers first, with
	 * ENHANCE_YOUR_CALM (nghttp2's says INTERNAL_ERROR): its bucket
	 * refills a whole second's tokens at once, ours as time passes, so
	 * with the same numbers it could run dry first (serve_h2.h,
	 * H2_NGHTTP2_RESET_BURST) */
	nghttp2_option_set_stream_reset_rate_limit(opt, H2_NGHTTP2_RESET_BURST,
	                                           H2_NGHTTP2_RESET_RATE);
	nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
	nghttp2_option_set_no_closed_streams(opt, 1);
	/* whitespace around a field value: the field is dropped by
	 * serve_fields.c, as nghttp3 drops it over HTTP/3, instead of
	 * nghttp2's stream reset */
	nghttp2_option_set_no_rfc9113_leading_and_trailing_ws_validation(opt, 1);
	h2_callbacks = cb;
	h2_options = opt;
}

int h2_start(struct serve_conn *c)
{
	static const nghttp2_settings_entry settings[] = {
		{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_MAX_STREAMS},
		{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
		{NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_HEADER_LIST_MAX},
		{NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
	};
	struct h2_conn *h;

	pthread_once(&h2_once, h2_setup);
	if (h2_callbacks == NULL)
		return -1;
	h = calloc(1, sizeof *h);
	if (h == NULL)
		return -1;
	nghttp2_mem mem = {h, h2_mem_malloc, h2_mem_free, h2_mem_calloc,
	                   h2_mem_realloc};
	h->making = 1;
	if (nghttp2_session_server_new3(&h->session, h2_callbacks, c,
	                                h2_options, &mem) != 0)
		goto out_free;
	h->making = 0;
	limits_bucket_fill(&h->bucket, c->shard->now_ms);
	c->h2 = h;
	if (nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, settings,
	                            sizeof settings / sizeof settings[0]) != 0 ||
	    nghttp2_session_set_local_window_size(h->session, NGHTTP2_FLAG_NONE,
	                                          0, H2_CONN_WINDOW) != 0) {
		h2_free(c);
		return -1;
	}
	return 0;
out_free:
	free(h);
	return -1;
}

void h2_free(struct serve_conn *c)
{
	struct h2_conn *h = c->h2;

	if (h == NULL)
		return;
	idle_unlink(c->shard, h);
	/* the session first: it calls nothing back while freeing */
	nghttp2_session_del(h->session);
	h->session = NULL;
	while (h->streams)
		stream_free(c, h->streams);
	free(h->wbuf);
	free(h);
	c->h2 = NULL;
}

/* Ends the session: GOAWAY with CODE (once), and nothing more is read. */
static void h2_end(struct serve_conn *c, uint32_t code)
{
	struct h2_conn *h = c->h2;
	struct h2_stream *st;

	if (h->ending)
		return;
	h->ending = 1;
	nghttp2_session_terminate_session(h->session, code);
	/* nothing more is read: no body being received can complete, so
	 * the budget they hold is given back now, not at close */
	for (st = h->streams; st; st = st->next)
		if (!st->req_done)
			stream_body_free(c, st);
}

/* The GOAWAY code for nghttp2_session_mem_recv's error RV: our defences
 * and nghttp2's flood limits are ENHANCE_YOUR_CALM. */
static uint32_t recv_error_code(struct serve_conn *c, ssize_t rv)
{
	if (c->h2->protocol_error)
		return NGHTTP2_PROTOCOL_ERROR;
	if (c->h2->calm || rv == NGHTTP2_ERR_FLOODED ||
	    rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS)
		return NGHTTP2_ENHANCE_YOUR_CALM;
	if (rv == NGHTTP2_ERR_NOMEM || rv == NGHTTP2_ERR_CALLBACK_FAILURE)
		return NGHTTP2_INTERNAL_ERROR;
	return NGHTTP2_PROTOCOL_ERROR;
}

int h2_input_blocked(const struct serve_conn *c)
{
	const struct h2_conn *h = c->h2;

	return h->ending || h->wlen > h->woff;
}

void h2_feed(struct serve_conn *c, const char *buf, size_t len)
{
	ssize_t rv;

	/* the requests read now see every answer sent before */
	c->shard->snap_fresh = 0;
	rv = nghttp2_session_mem_recv(c->h2->session, (const uint8_t *)buf, len);
	if (rv < 0)
		h2_end(c, recv_error_code(c, rv));
	h2_flush(c);
}

void h2_input(struct serve_conn *c)
{
	struct serve_shard *sh = c->shard;

	for (;;) {
		ssize_t n;

		if (c->flags & (CONN_DEAD | CONN_LINGER))
			return;
		if (h2_input_blocked(c) || (c->flags & CONN_CLOSING)) {
			c->flags |= CONN_RX_HELD;
			return;
		}
		n = serve_conn_read(c, sh->scratch, SERVE_SCRATCH);
		if (n > 0) {
			c->received += (uint64_t)n;
			h2_feed(c, sh->scratch, (size_t)n);
			continue;
		}
		if (n == 0) {
			/* the client is gone: nothing can be answered */
			c->flags |= CONN_EOF;
			serve_conn_close(c);
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			serve_conn_close(c);
		else
			c->flags &= (uint16_t)~CONN_RX_HELD;
		return;
	}
}

/* Submits the answers whose commit finished; frees the streams the
 * client reset meanwhile. */
static void answers_ready(struct serve_conn *c)
{
	struct h2_conn *h = c->h2;
	struct h2_stream *st, *next;

	for (st = h->streams; st && h->waiting > 0; st = next) {
		next = st->next;
		if (st->out == NULL || st->submitted || !st->out->ready)
			continue;
		h->waiting--;
		if (st->closed)
			stream_free(c, st);
		else
			stream_submit(c, st);
	}
}

void h2_flush(struct serve_conn *c)
{
	struct h2_conn *h = c->h2;

	if ((c->flags & CONN_CLOSING) && !h->ending)
		h2_end(c, NGHTTP2_INTERNAL_ERROR); /* out of memory */
	for (;;) {
		int rv;

		answers_ready(c);
		h->blocked = 0;
		rv = nghttp2_session_send(h->session);
		if (rv != 0 || h->io_error || wbuf_write(c) < 0) {
			serve_conn_close(c);
			return;
		}
		if (!h->blocked || h->wlen)
			break; /* all sent, or the socket is full */
	}
	if (h->wlen == 0 && h->nstreams == 0) {
		/* idle: an h2 connection holds no output buffer then, and no
		 * pages of nghttp2's frame buffer */
		free(h->wbuf);
		h->wbuf = NULL;
		h2_went_idle(c);
	}
	if (h->wlen || nghttp2_session_want_write(h->session))
		return;
	if (h->ending || !nghttp2_session_want_read(h->session))
		serve_conn_end(c, SERVE_CLOSE_ERROR); /* GOAWAY went out */
	else if (h->stopping && h->nstreams == 0 && c->inflight == 0)
		serve_conn_end(c, SERVE_CLOSE_CLEAN);
}

/* ---- limits (serve_limits.h): header deadline, body rates, idle ---------- */

/* Is ST's request body still coming, and wanted? */
static int stream_receiving(const struct h2_stream *st)
{
	return st->headers_done && !st->req_done && !st->answered &&
	       !st->closed;
}

int h2_timer_wanted(struct serve_conn *c)
{
	struct h2_conn *h = c->h2;
	struct h2_stream *st;
	int bodies = 0;

	if (h->ending)
		return SERVE_TIMER_IDLE; /* GOAWAY waits to be written */
	if (h2_input_blocked(c)) {
		/* not read: its bodies' time is not theirs (serve_limits.h) */
		h->paused = 1;
		return SERVE_TIMER_IDLE;
	}
	for (st = h->streams; st; st = st->next) {
		if (!stream_receiving(st))
			continue;
		if (h->paused)
			limits_body_begin(&st->rate, st->received, c->shard->now_ms);
		bodies = 1;
	}
	h->paused = 0;
	if (h->head_open)
		return SERVE_TIMER_HEAD;
	return bodies ? SERVE_TIMER_BODY : SERVE_TIMER_IDLE;
}

/*
 * Judges every body being received whose window is over: a slow one is
 * cut (RST_STREAM(CANCEL), its budget given back at once), and after
 * LIMITS_CUTS_MAX cuts the connection ends (GOAWAY(ENHANCE_YOUR_CALM)).
 */
static void bodies_check(struct serve_conn *c)
{
	struct h2_conn *h = c->h2;
	const struct limits_config *lim = &c->shard->srv->limits;
	struct h2_stream *st;

	for (st = h->streams; st && !h->ending; st = st->next) {
		if (!stream_receiving(st) ||
		    limits_body_check(lim, &st->rate, st->received,
		                      c->shard->now_ms) != LIMITS_CUT)
			continue;
		st->answered = 1; /* what still comes is dropped */
		stream_body_free(c, st);
		nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id,
		                          NGHTTP2_CANCEL);
		if (limits_cut(&h->cuts, 1) == LIMITS_CLOSE)
			h2_end(c, NGHTTP2_ENHANCE_YOUR_CALM);
	}
}

int h2_expire(struct serve_conn *c, int timer)
{
	struct h2_conn *h = c->h2;

	switch (timer) {
	case SERVE_TIMER_HEAD:
		/* a header block that never ends holds the connection's
		 * HPACK state: nothing else can be read */
		if (h->head_open && limits_head_due(&c->shard->srv->limits,
		                                    h->head_since_ms,
		                                    c->shard->now_ms))
			h2_end(c, NGHTTP2_ENHANCE_YOUR_CALM);
		break;
	case SERVE_TIMER_BODY:
		bodies_check(c);
		break;
	default:
		if (c->inflight)
			return SERVE_TIMER_IDLE; /* it waits for us */
		if (h->ending) { /* its GOAWAY could not be written */
			serve_conn_close(c);
			return -1;
		}
		h2_end(c, NGHTTP2_NO_ERROR); /* idle: say so, then close */
	}
	h2_flush(c);
	if (c->flags & (CONN_DEAD | CONN_LINGER))
		return -1;
	return h2_timer_wanted(c);
}

void h2_stop(struct serve_conn *c)
{
	struct h2_conn *h = c->h2;

	if (!h->stopping) {
		h->stopping = 1;
		nghttp2_submit_goaway(h->session, NGHTTP2_FLAG_NONE,
		                      nghttp2_session_get_last_proc_stream_id(
		                          h->session),
		                      NGHTTP2_NO_ERROR, NULL, 0);
	}
	h2_flush(c);
}

int h2_preface(const char *p, size_t n)
{
	size_t want = sizeof h2_preface_text - 1;

	if (memcmp(p, h2_preface_text, n < want ? n : want) != 0)
		return -1;
	return n >= want;
}
