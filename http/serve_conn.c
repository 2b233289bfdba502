/*
 * serve_conn.c -- a shard's event loop and its connections' I/O.
 *
 * Everything is edge-triggered: a connection is registered once for
 * EPOLLIN | EPOLLOUT | EPOLLRDHUP and read or written until EAGAIN.  When a
 * connection must not read on (a write is waiting for its commit, or
 * SERVE_PIPELINE_MAX answers are queued) it is marked CONN_RX_HELD and no
 * further read is made; conn_service() resumes it once the blocker is gone,
 * since no new edge will come for bytes that are already waiting.
 *
 * CONNECTION STATES (flags in serve.h)
 *   open --request with close / EOF / error answer--> CLOSING
 *   CLOSING --answer with close_after written--> closed at once when the
 *        client asked for it and sent nothing more; otherwise (an error
 *        answer, or bytes waiting) LINGER: write side shut, input drained
 *        and discarded until EOF or SERVE_LINGER_MS, so a refused body
 *        does not turn our answer into a reset
 *   any --conn_close()--> DEAD: fd closed, buffers freed; the struct lives
 *        on while commits still point at it, then goes to the graveyard and
 *        is freed at the end of the loop iteration (an event for it may
 *        still be in the current epoll batch).
 */
#include "serve.h"

#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/tcp.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void update_date(struct serve_shard *sh)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	if (ts.tv_sec == sh->date_sec)
		return;
	sh->date_sec = ts.tv_sec;
	gmtime_r(&ts.tv_sec, &tm);
	strftime(sh->date, sizeof sh->date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* ---- timers: one list per duration, so each is in deadline order ---------- */

static void link_remove(struct serve_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

static struct serve_conn *conn_of(struct serve_link *l)
{
	return (struct serve_conn *)l; /* link is the first member */
}

/* (Re)starts C's timer WHICH now: to the back of that list. */
static void timer_set(struct serve_conn *c, int which)
{
	struct serve_shard *sh = c->shard;
	struct serve_link *head = &sh->timers[which];

	c->armed_ms = sh->now_ms;
	c->timer = (uint8_t)which;
	if (c->link.next == head)
		return; /* already last in it */
	if (c->link.next)
		link_remove(&c->link);
	c->link.prev = head->prev;
	c->link.next = head;
	head->prev->next = &c->link;
	head->prev = &c->link;
}

/* Progress was made: the idle timeout starts again.  A lingering
 * connection keeps its deadline. */
static void touch(struct serve_conn *c)
{
	if (c->timer == SERVE_TIMER_IDLE)
		timer_set(c, SERVE_TIMER_IDLE);
}

/* A whole request was read: whatever timer ran for it is done. */
static void request_done(struct serve_conn *c)
{
	if (c->timer != SERVE_TIMER_LINGER)
		timer_set(c, SERVE_TIMER_IDLE);
}

/* The bytes read so far have been answered: the next request must see
 * every commit published until it is read, so the snapshot goes stale. */
static void snapshot_drop(struct serve_shard *sh)
{
	sh->snap_fresh = 0;
}

/* ---- answers ------------------------------------------------------------------ */

void serve_out_free(struct serve_out *o)
{
	keel_view_release(&o->view);
	free(o->owned);
	free(o);
}

static void rx_free(struct serve_conn *c)
{
	if (c->rx == NULL)
		return;
	limits_budget_give(&c->shard->srv->budget, c->rx->charged);
	free(c->rx->buf);
	free(c->rx);
	c->rx = NULL;
}

static void conn_close(struct serve_conn *c)
{
	struct serve_shard *sh = c->shard;
	struct serve_out *o;

	if (c->flags & CONN_DEAD)
		return;
	c->flags |= CONN_DEAD;
	h2_free(c); /* its streams' answers and views go with it */
	h3_free(c);
	if ((c->flags & (CONN_TLS_HELLO | CONN_TLS_UP)) == CONN_TLS_HELLO)
		limits_source_give(&sh->srv->hs_sources, c->src);
	if (c->ssl) {
		serve_tls_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0) /* an HTTP/3 connection has none of its own */
		close(c->fd);
	c->fd = -1;
	if (sh->last_writer == c) /* calloc may give a new one its address */
		sh->last_writer = NULL;
	rx_free(c);
	while ((o = c->out) != NULL) {
		c->out = o->next;
		serve_out_free(o);
	}
	c->out_tail = NULL;
	c->nout = 0;
	c->queued = 0;
	link_remove(&c->link);
	sh->nconns--;
	atomic_fetch_sub(&sh->srv->conns, 1);
	if (c->inflight == 0) {
		c->grave = sh->graveyard;
		sh->graveyard = c;
	}
}

struct serve_out *serve_out_new(struct serve_conn *c)
{
	struct serve_out *o = malloc(sizeof *o);

	if (o == NULL) {
		/* Not closed here: the caller may be walking c->rx.  With nothing
		 * more read, serve_conn_flush closes it once the queue is empty. */
		c->flags |= CONN_CLOSING;
		return NULL;
	}
	memset(o, 0, offsetof(struct serve_out, head));
	o->file_fd = -1;
	if (c->h2) {
		/* HTTP/2: the answer belongs to the stream being handled */
		if (h2_out_attach(c, o) < 0) {
			free(o);
			return NULL;
		}
		return o;
	}
	if (c->h3) { /* HTTP/3: the same, for the stream being handled */
		if (h3_out_attach(c, o) < 0) {
			free(o);
			return NULL;
		}
		return o;
	}
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out = o;
	c->out_tail = o;
	c->nout++;
	return o;
}

/* Sends IOV[CNT] on a plain socket with FLAGS, as writev(2) would: an
 * answer of up to SEND_GATHER bytes is gathered into one buffer and goes
 * by send(2), whose way through the kernel is the shortest (no file layer
 * as for writev, no iovec to copy in as for sendmsg); a longer one goes by
 * one sendmsg(2). */
#define SEND_GATHER 4096
static ssize_t sock_sendv(int fd, const struct iovec *iov, int cnt, int flags)
{
	char buf[SEND_GATHER];
	size_t len = 0;

	flags |= MSG_NOSIGNAL;
	if (cnt == 1)
		return send(fd, iov[0].iov_base, iov[0].iov_len, flags);
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	if (len <= sizeof buf) {
		len = 0;
		for (int i = 0; i < cnt; i++) {
			memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
			len += iov[i].iov_len;
		}
		return send(fd, buf, len, flags);
	}
	struct msghdr m = { .msg_iov = (struct iovec *)iov,
	                    .msg_iovlen = (size_t)cnt };
	return sendmsg(fd, &m, flags);
}

/* The connection's read and writev: through TLS when it has it.  Both
 * behave as the system calls, EAGAIN included (serve_tls.h).  A plain
 * socket is read with recv(2): the same bytes as read(2), without the file
 * layer's checks on the way. */
static ssize_t conn_read(struct serve_conn *c, void *buf, size_t n)
{
	return c->ssl ? serve_tls_read(c->ssl, buf, n) : recv(c->fd, buf, n, 0);
}

static ssize_t conn_writev(struct serve_conn *c, const struct iovec *iov,
                           int cnt, int flags)
{
	return c->ssl ? serve_tls_writev(c->ssl, iov, cnt)
	              : sock_sendv(c->fd, iov, cnt, flags);
}

ssize_t serve_conn_read(struct serve_conn *c, void *buf, size_t n)
{
	return conn_read(c, buf, n);
}

ssize_t serve_conn_writev(struct serve_conn *c, const struct iovec *iov,
                          int cnt)
{
	return conn_writev(c, iov, cnt, 0);
}

void serve_conn_close(struct serve_conn *c)
{
	conn_close(c);
}

void serve_conn_adopt(struct serve_shard *sh, struct serve_conn *c)
{
	c->shard = sh;
	timer_set(c, SERVE_TIMER_IDLE);
	sh->nconns++;
}

/* Reads and throws away what a refused client still sends.  The raw
 * socket, TLS or not: nothing of it is looked at. */
static void linger_drain(struct serve_conn *c)
{
	for (;;) {
		ssize_t n = read(c->fd, c->shard->scratch, SERVE_SCRATCH);
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		conn_close(c); /* EOF or error: done */
		return;
	}
}

static void start_linger(struct serve_conn *c)
{
	c->flags |= CONN_LINGER | CONN_CLOSING;
	if (c->ssl)
		serve_tls_close_notify(c->ssl);
	shutdown(c->fd, SHUT_WR);
	rx_free(c); /* nothing more is parsed */
	timer_set(c, SERVE_TIMER_LINGER);
	linger_drain(c);
}

/*
 * The answer that ends the connection was written.  After an error the
 * client may still be sending (a refused body): linger.  After a clean
 * "Connection: close" close at once unless bytes are already waiting,
 * which would turn close() into a reset that can destroy the answer.
 */
static void end_connection(struct serve_conn *c, int how)
{
	ssize_t n;

	if (how == SERVE_CLOSE_CLEAN && c->rx == NULL) {
		/* the read of this same pass emptied the socket microseconds
		 * ago (CONN_RX_EMPTY): a byte sent after "Connection: close"
		 * would be the client's fault, as for nginx; one read a closed
		 * connection fewer.  Not after a commit: a sync takes
		 * milliseconds, bytes (a CRLF after the body) may have come,
		 * and close() over unread bytes is a reset that drops the
		 * answer still held by MSG_MORE */
		if (c->flags & CONN_RX_EMPTY) {
			conn_close(c);
			return;
		}
		/* raw even with TLS: only whether bytes wait matters */
		n = read(c->fd, c->shard->scratch, SERVE_SCRATCH);
		if (n == 0 || (n < 0 && errno == EAGAIN)) {
			if (c->ssl)
				serve_tls_close_notify(c->ssl);
			conn_close(c);
			return;
		}
	}
	start_linger(c);
}

void serve_conn_end(struct serve_conn *c, int how)
{
	if (!(c->flags & (CONN_DEAD | CONN_LINGER)))
		end_connection(c, how);
}

void serve_conn_progress(struct serve_conn *c)
{
	touch(c);
}

/* Drops N written bytes from the front of the queue.  Returns the
 * close_after of an answer that ends the connection, once written. */
static int out_advance(struct serve_conn *c, size_t n)
{
	struct serve_out *o;

	while ((o = c->out) != NULL && o->ready) {
		size_t rem = o->head_len + o->body_len - o->sent;
		int close_after = o->close_after;

		if (n < rem) {
			o->sent += n;
			return 0;
		}
		n -= rem;
		c->out = o->next;
		if (c->out == NULL)
			c->out_tail = NULL;
		c->nout--;
		if (o->owned)
			c->queued -= (uint32_t)o->body_len;
		serve_out_free(o);
		if (close_after)
			return close_after;
	}
	return 0;
}

/* Sends what is left of O's body (its head is written) from its file with
 * sendfile(2): the page cache's pages go to the socket by reference.  The
 * bytes sent, or -1 with errno (EAGAIN: the socket is full), or 0 when the
 * kernel cannot (a file system without it): O falls back to its mapped
 * bytes, which are the same (keel_view_file). */
static ssize_t out_sendfile(struct serve_conn *c, struct serve_out *o)
{
	size_t done = o->sent - o->head_len;
	if (!(c->flags & CONN_SF_LOWAT)) {
		/* At most SERVE_SENDFILE_LOWAT bytes sit unsent in the socket;
		 * the rest waits in the file for EPOLLOUT.  Without it the
		 * call queues megabytes at once, which the kernel then sends
		 * from the ACKs' processing -- in the client's context on
		 * loopback: 1 MiB bodies went 40-65 % slower than copying */
		int lowat = SERVE_SENDFILE_LOWAT;
		setsockopt(c->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat,
		           sizeof lowat); /* best effort */
		c->flags |= CONN_SF_LOWAT;
	}
	off_t off = (off_t)(o->file_off + done);
	ssize_t n = sendfile(c->fd, o->file_fd, &off, o->body_len - done);

	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR ||
	                         errno == EPIPE || errno == ECONNRESET)))
		return n;
	o->file_fd = -1; /* EINVAL, ENOSYS, or the file ended: copy */
	return 0;
}

/* Writes every ready answer at the front of the queue, many per writev;
 * a large GET body by sendfile (out_sendfile). */
void serve_conn_flush(struct serve_conn *c)
{
	if (c->h2) {
		if (!(c->flags & (CONN_DEAD | CONN_LINGER)))
			h2_flush(c);
		return;
	}
	if (c->h3) {
		if (!(c->flags & CONN_DEAD))
			h3_flush(c);
		return;
	}
	while (!(c->flags & CONN_DEAD) && c->out && c->out->ready) {
		struct iovec iov[SERVE_IOV_MAX];
		struct serve_out *o = c->out;
		int cnt = 0, how, more = 0;
		ssize_t n;

		if (o->file_fd >= 0 && o->sent >= o->head_len) {
			n = out_sendfile(c, o);
			if (n == 0)
				continue; /* fell back to o->body */
		} else {
			for (; o && o->ready && cnt + 2 <= SERVE_IOV_MAX;
			     o = o->next) {
				size_t s = o->sent;
				if (s < o->head_len) {
					iov[cnt++] = (struct iovec){o->head + s,
					                            o->head_len - s};
					s = 0;
				} else {
					s -= o->head_len;
				}
				/* a body sent from its file ends the gather:
				 * the head waits for it (MSG_MORE) */
				if (o->file_fd >= 0 && o->body_len > s) {
					more = 1;
					break;
				}
				if (o->body_len > s)
					iov[cnt++] = (struct iovec){
						(void *)(o->body + s),
						o->body_len - s};
				if ((more = o->close_after) != 0)
					break;
			}
			/* the answer that ends the connection goes with
			 * MSG_MORE (plain sockets): its last segment waits
			 * for the FIN that close() or shutdown() sends right
			 * after (end_connection; a part the socket does not
			 * take now is sent the same way when it drains) and
			 * carries it -- one segment, and one wake-up of the
			 * client, fewer a connection */
			n = conn_writev(c, iov, cnt, more ? MSG_MORE : 0);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_close(c);
			return; /* EPOLLOUT will bring us back */
		}
		touch(c);
		how = out_advance(c, (size_t)n);
		if (how) {
			end_connection(c, how);
			return;
		}
	}
	/* Nothing left to answer on a connection that reads no more (EOF, out
	 * of memory, shutting down): close it. */
	if (!(c->flags & (CONN_DEAD | CONN_LINGER)) && c->out == NULL &&
	    c->inflight == 0 && (c->flags & (CONN_EOF | CONN_CLOSING)))
		conn_close(c);
}

/* ---- input ------------------------------------------------------------------- */

static int input_blocked(struct serve_conn *c)
{
	if (c->h2) /* streams are independent: commits and answers in
	              flight do not stop it, a full socket does */
		return (c->flags & (CONN_DEAD | CONN_CLOSING | CONN_LINGER)) ||
		       h2_input_blocked(c);
	if (c->h3) /* never held: datagrams are read per shard */
		return (c->flags & (CONN_DEAD | CONN_CLOSING)) != 0;
	return (c->flags & (CONN_DEAD | CONN_CLOSING | CONN_LINGER)) ||
	       c->inflight || c->nout >= SERVE_PIPELINE_MAX ||
	       c->queued >= SERVE_QUEUED_MAX ||
	       atomic_load(&c->shard->srv->stopping);
}

/* Gives C->rx a buffer of CAP bytes (more or fewer), charging the
 * difference to the body budget.  Returns 0; -1 after answering 503 (the
 * budget is spent) or closing the connection (out of memory). */
static int rx_resize(struct serve_conn *c, size_t cap)
{
	struct serve_server *srv = c->shard->srv;
	struct serve_rx *rx = c->rx;
	char *p;

	if (cap > rx->cap &&
	    limits_budget_take(&srv->budget, cap - rx->cap, 0) != LIMITS_OK) {
		serve_error_busy(c, 1);
		return -1;
	}
	p = realloc(rx->buf, cap);
	if (p == NULL) {
		if (cap > rx->cap)
			limits_budget_give(&srv->budget, cap - rx->cap);
		if (cap < rx->cap)
			return 0; /* could not shrink: keep it */
		conn_close(c);
		return -1;
	}
	if (cap > rx->cap) {
		rx->charged += cap - rx->cap;
	} else {
		size_t back = rx->cap - cap;
		if (back > rx->charged)
			back = rx->charged;
		limits_budget_give(&srv->budget, back);
		rx->charged -= back;
	}
	rx->buf = p;
	rx->cap = cap;
	return 0;
}

/* Keeps BUF[0..LEN) in a per-connection buffer, about as large as what
 * arrived.  Returns 0, or -1 after a 503 or closing the connection. */
static int rx_keep(struct serve_conn *c, const char *buf, size_t len)
{
	size_t cap = SERVE_RX_MIN;

	while (cap < len + SERVE_RX_MIN / 2)
		cap *= 2;
	c->rx = calloc(1, sizeof *c->rx);
	if (c->rx == NULL) {
		conn_close(c);
		return -1;
	}
	if (rx_resize(c, cap) < 0) {
		if (!(c->flags & CONN_DEAD)) {
			free(c->rx); /* charged nothing */
			c->rx = NULL;
		}
		return -1;
	}
	memcpy(c->rx->buf, buf, len);
	c->rx->len = len;
	return 0;
}

/*
 * Makes room to read into.  The buffer grows (doubling) only once the
 * bytes that really arrived have filled it, never ahead of them: a client
 * that promises a large body and sends little holds little.  A body of
 * known length never gets more than it needs plus SERVE_RX_MIN.
 */
static int rx_room(struct serve_conn *c)
{
	struct serve_rx *rx = c->rx;
	size_t cap = rx->cap * 2, whole;

	if (rx->cap - rx->len >= SERVE_RX_MIN / 2)
		return 0;
	if (rx->head_len && rx->body_want) {
		whole = rx->head_len + rx->body_want + SERVE_RX_MIN;
		if (cap > whole)
			cap = whole;
	}
	if (cap < rx->len + SERVE_RX_MIN / 2)
		cap = rx->len + SERVE_RX_MIN / 2;
	return rx_resize(c, cap);
}

/* The body of the request at the front of C->rx is not complete yet.  For
 * chunked bodies decode what is there.  Returns 1 when the body is now
 * complete (*BLEN set), 0 to wait for more, -1 after an error answer. */
static int rx_body(struct serve_conn *c, const struct http_request *req,
                   size_t head, size_t *blen)
{
	struct serve_rx *rx = c->rx;
	size_t out, raw;
	ssize_t used;

	if (req->expect_continue && !rx->continue_sent && req->minor == 1) {
		struct serve_out *o = serve_out_new(c);
		if (o == NULL)
			return -1;
		memcpy(o->head, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		o->head_len = 25;
		o->ready = 1;
		rx->continue_sent = 1;
	}
	if (!req->chunked)
		return 0;
	if (rx->head_len != head) {
		rx->head_len = head;
		rx->body_have = 0;
		memset(&rx->ch, 0, sizeof rx->ch);
		rx->ch.limit = c->shard->srv->cfg.max_body;
	}
	raw = head + rx->body_have;
	used = http_chunked_decode(&rx->ch, rx->buf + raw, rx->len - raw, &out);
	if (used < 0) {
		serve_error(c, (int)-used, req->minor, 1);
		return -1;
	}
	memmove(rx->buf + raw + out, rx->buf + raw + (size_t)used,
	        rx->len - raw - (size_t)used);
	rx->len -= (size_t)used - out;
	rx->body_have += out;
	*blen = rx->body_have;
	return rx->ch.done ? 1 : 0;
}

/* With --tokens, checks REQ's token from its head alone, before any of
 * its body is read or held.  Returns 1 after queuing 401 or 403 (closing
 * the connection when a body was announced, or it was asked to close),
 * 0 to go on. */
static int refused(struct serve_conn *c, const struct http_request *req)
{
	const char *challenge = NULL;
	int status = serve_authorize(c->shard->srv, req, &challenge);

	if (status == 0)
		return 0;
	serve_error_auth(c, req, status,
	                 req->chunked || req->content_length || !req->keep_alive,
	                 challenge);
	return 1;
}

/*
 * Answers the complete requests in BUF[0..*LEN).  IN_RX says BUF is
 * C->rx->buf (where incomplete bodies can wait); otherwise it stops at a
 * request whose body is incomplete so the caller can keep it.  Returns the
 * bytes consumed.
 */
static size_t conn_process(struct serve_conn *c, char *buf, size_t *len,
                           int in_rx)
{
	const struct serve_config *cfg = &c->shard->srv->cfg;
	size_t off = 0;

	while (off < *len && !input_blocked(c)) {
		struct http_request req;
		size_t n = *len - off, head, blen = 0;
		int rc = http_parse_request(buf + off, n, &req);

		if (rc == HTTP_PARTIAL)
			break;
		if (rc < 0) {
			serve_error(c, -rc, 1, 1);
			return *len;
		}
		head = (size_t)rc;
		if (refused(c, &req)) {
			/* an announced body is left unread: close after the
			 * answer, as for 413 */
			if (req.chunked || req.content_length || !req.keep_alive)
				return *len;
			off += head;
			request_done(c);
			if (in_rx)
				c->rx->continue_sent = 0;
			continue;
		}
		if (req.method == HTTP_METHOD_PUT && !req.has_length &&
		    !req.chunked) {
			serve_error(c, 411, req.minor, 1);
			return *len;
		}
		if (req.has_length && req.content_length > cfg->max_body) {
			serve_error(c, 413, req.minor, 1); /* body left unread */
			return *len;
		}
		blen = req.has_length ? (size_t)req.content_length : 0;
		if (blen > n - head &&
		    limits_budget_admits(&c->shard->srv->budget, blen,
		                         in_rx ? c->rx->charged : 0) != LIMITS_OK) {
			/* it would not fit now (what this connection holds
			 * already is part of it): say so before it is sent (a
			 * client waiting for 100 Continue sends nothing) */
			serve_error_busy(c, req.minor);
			return *len;
		}
		if (req.chunked || blen > n - head) {
			if (!in_rx || off != 0)
				break; /* the caller keeps it from its start */
			rc = rx_body(c, &req, head, &blen);
			if (rc < 0)
				return *len;
			if (rc == 0) {
				c->rx->head_len = head;
				c->rx->body_want = req.chunked ? 0 : blen;
				break;
			}
		}
		serve_handle(c, &req, buf + off + head, blen);
		off += head + blen;
		request_done(c);
		if (in_rx) {
			c->rx->head_len = 0;
			c->rx->continue_sent = 0;
		}
	}
	return off;
}

/* Answers what C->rx holds, keeping the unconsumed rest at its start. */
static void rx_process(struct serve_conn *c)
{
	struct serve_rx *rx = c->rx;
	size_t used;

	if (!(c->flags & CONN_PROTO_KNOWN))
		return; /* a part of the h2 preface (conn_protocol_plain) */
	used = conn_process(c, rx->buf, &rx->len, 1);

	if (c->flags & CONN_DEAD)
		return;
	rx = c->rx;
	if (rx == NULL)
		return; /* lingering */
	memmove(rx->buf, rx->buf + used, rx->len - used);
	rx->len -= used;
	if (rx->len == 0 && rx->head_len == 0)
		rx_free(c); /* idle again: hold no buffer */
	else if (rx->head_len == 0 && rx->cap > SERVE_RX_MIN &&
	         rx->len < rx->cap / 4)
		rx_resize(c, rx->len * 2 > SERVE_RX_MIN ? rx->len * 2
		                                         : SERVE_RX_MIN);
}

/* A TLS port got something other than a TLS handshake (plain HTTP, most
 * likely): a 400 in clear text, so a person with curl sees why, and the
 * connection ends (lingering, so the request does not turn it into a
 * reset). */
static void tls_refuse_plain(struct serve_conn *c)
{
	c->flags &= (uint16_t)~CONN_TLS; /* it never had an SSL */
	serve_error(c, 400, 1, 1);
}

#define HS_EVICT_SCAN 64 /* half-open handshakes looked at for a victim */

/* Every slot is held and C's source holds less than its share: the
 * oldest half-open handshake of a heavier source on this shard (its head
 * timer list is in arrival order) is closed to make room
 * (limits_source_evict).  1 when one was. */
static int hs_evict(struct serve_conn *c)
{
	struct serve_shard *sh = c->shard;
	struct serve_link *head = &sh->timers[SERVE_TIMER_HEAD];
	struct serve_conn *seen[HS_EVICT_SCAN];
	unsigned buckets[HS_EVICT_SCAN];
	int n = 0;

	for (struct serve_link *l = head->next; l != head && n < HS_EVICT_SCAN;
	     l = l->next) {
		struct serve_conn *o = conn_of(l);
		if ((o->flags & (CONN_TLS_HELLO | CONN_TLS_UP | CONN_DEAD)) ==
		    CONN_TLS_HELLO && o != c) {
			seen[n] = o;
			buckets[n++] = o->src;
		}
	}
	int pick = limits_source_evict(&sh->srv->hs_sources, c->src,
	                               buckets, n);
	if (pick < 0)
		return 0;
	conn_close(seen[pick]); /* gives its slot back */
	return 1;
}

/* A TLS handshake begins on C (its ClientHello is whole): counted against
 * --max-handshakes and its source's share of them
 * (--max-handshakes-per-source; serve_limits.h, SHARES).  1, or 0 after
 * closing C when its source holds its share already (it cannot take the
 * rest from everybody else), or when every slot is held and none by a
 * source heavier than C's (hs_evict: otherwise the oldest of the heaviest
 * makes room, and a crowd of light sources cannot shut a new one out
 * while any of them holds more). */
static int hs_take(struct serve_conn *c)
{
	struct serve_server *srv = c->shard->srv;
	struct sockaddr_storage peer;
	socklen_t len = sizeof peer;
	int rc;

	if (getpeername(c->fd, (struct sockaddr *)&peer, &len) != 0)
		len = 0;
	c->src = (uint16_t)limits_source_of(&srv->hs_sources, &peer, len);
	rc = limits_source_take(&srv->hs_sources, c->src);
	if (rc == LIMITS_FULL && hs_evict(c))
		rc = limits_source_take(&srv->hs_sources, c->src);
	if (rc != LIMITS_OK) {
		conn_close(c);
		return 0;
	}
	return 1;
}

/*
 * Moves a TLS connection's handshake on.  Returns 1 when HTTP may flow
 * (or the connection is plain), 0 to wait for the socket or after the
 * connection was closed or refused.  The deadline is the head timer set
 * at accept: a stalled handshake ends in conn_expire.  Until the client's
 * first record is whole in the socket the connection has no SSL (8 KB)
 * and OpenSSL no buffers (38 KB more once a handshake starts on a part of
 * a record): a client that sends a few bytes and stalls holds its struct
 * alone (serve_tls.c, serve_tls_first_record).
 */
static int conn_tls_ready(struct serve_conn *c)
{
	struct serve_server *srv = c->shard->srv;
	int rc;

	if (!(c->flags & CONN_TLS) || (c->flags & CONN_TLS_UP))
		return 1;
	if (!(c->flags & CONN_TLS_HELLO)) {
		rc = serve_tls_first_record(c->fd);
		if (rc == -1)
			return 0;
		if (rc == -2) {
			conn_close(c);
			return 0;
		}
		if (rc == 0) {
			tls_refuse_plain(c);
			return 0;
		}
		/* an SSL and its handshake cost about 45 KB until the
		 * client's Finished: --max-handshakes bounds what clients
		 * that stop after their ClientHello can make us hold */
		if (!hs_take(c))
			return 0;
		/* the context of now, used for this call only: the SSL takes
		 * its own reference (serve.h, TLS) */
		c->ssl = serve_tls_new(atomic_load(&srv->tls), c->fd);
		c->flags |= CONN_TLS_HELLO; /* counted: conn_close uncounts */
		if (c->ssl == NULL) {
			conn_close(c); /* out of memory */
			return 0;
		}
	}
	rc = serve_tls_handshake(c->ssl);
	if (rc == 1) {
		limits_source_give(&srv->hs_sources, c->src);
		c->flags |= CONN_TLS_UP;
		timer_set(c, SERVE_TIMER_IDLE);
		return 1;
	}
	if (rc == -2)
		conn_close(c); /* a refused version, garbage: OpenSSL sent
		                  the alert */
	return 0;
}

/* A TLS connection's protocol, once its handshake is done: ALPN's choice
 * (h2 or http/1.1; none is HTTP/1.1).  Returns 1 to go on, 0 after the
 * connection was closed (out of memory). */
static int conn_protocol_tls(struct serve_conn *c)
{
	const unsigned char *alpn = NULL;
	unsigned int alen = 0;

	c->flags |= CONN_PROTO_KNOWN;
	SSL_get0_alpn_selected(c->ssl, &alpn, &alen);
	if (alen == 2 && memcmp(alpn, "h2", 2) == 0 && h2_start(c) < 0) {
		conn_close(c);
		return 0;
	}
	return 1;
}

/*
 * A plain connection's protocol, from its first bytes BUF[0..LEN) (read
 * already, so HTTP/1.1 pays no extra system call): the HTTP/2 client
 * preface makes it h2c (prior knowledge) and the bytes go to nghttp2;
 * anything else is HTTP/1.1.  A part of the preface is kept in C->rx
 * (IN_RX: BUF is already there) until the rest comes.  Returns 1 to go on
 * as HTTP/1.1, 0 when the bytes were taken (h2c, or kept) or the
 * connection was closed.
 */
static int conn_protocol_plain(struct serve_conn *c, const char *buf,
                               size_t len, int in_rx)
{
	int preface = h2_preface(buf, len);

	if (preface < 0) {
		c->flags |= CONN_PROTO_KNOWN;
		return 1;
	}
	if (preface == 0) {
		if (!in_rx)
			rx_keep(c, buf, len); /* on failure: 503 or closed */
		return 0;
	}
	c->flags |= CONN_PROTO_KNOWN;
	if (h2_start(c) < 0) {
		conn_close(c);
		return 0;
	}
	h2_feed(c, buf, len);
	rx_free(c); /* the kept part of the preface, fed now */
	return 0;
}

/* Reads until EAGAIN, answering as it goes. */
static void conn_input(struct serve_conn *c)
{
	struct serve_shard *sh = c->shard;
	int first = 1;

	for (;; first = 0) {
		size_t asked;
		ssize_t n;

		if (c->flags & CONN_DEAD)
			return;
		if (c->flags & CONN_LINGER) {
			linger_drain(c);
			return;
		}
		if (!conn_tls_ready(c))
			return;
		if (!(c->flags & CONN_PROTO_KNOWN) && c->ssl &&
		    !conn_protocol_tls(c))
			return;
		if (c->h2) {
			h2_input(c);
			return;
		}
		if (input_blocked(c)) {
			c->flags |= CONN_RX_HELD;
			if (first) /* an edge not read: bytes may wait behind it */
				c->flags &= (uint16_t)~CONN_RX_EMPTY;
			return;
		}
		c->flags &= (uint16_t)~CONN_RX_EMPTY;
		if (c->rx == NULL) {
			asked = SERVE_SCRATCH;
			n = conn_read(c, sh->scratch, asked);
			if (n > 0) {
				size_t len = (size_t)n, used;
				c->received += (uint64_t)n;
				if (!(c->flags & CONN_PROTO_KNOWN) &&
				    !conn_protocol_plain(c, sh->scratch, len, 0))
					continue;
				if ((size_t)n < asked && c->ssl == NULL &&
				    !(c->flags & CONN_PEER_SHUT))
					c->flags |= CONN_RX_EMPTY;
				used = conn_process(c, sh->scratch, &len, 0);
				if (used < len && !(c->flags & (CONN_DEAD | CONN_CLOSING)) &&
				    rx_keep(c, sh->scratch + used, len - used) == 0)
					rx_process(c);
			}
		} else {
			if (rx_room(c) < 0)
				return;
			asked = c->rx->cap - c->rx->len;
			n = conn_read(c, c->rx->buf + c->rx->len, asked);
			if (n > 0) {
				if ((size_t)n < asked && c->ssl == NULL &&
				    !(c->flags & CONN_PEER_SHUT))
					c->flags |= CONN_RX_EMPTY;
				c->rx->len += (size_t)n;
				c->received += (uint64_t)n;
				if (!(c->flags & CONN_PROTO_KNOWN) &&
				    !conn_protocol_plain(c, c->rx->buf, c->rx->len, 1))
					continue;
				rx_process(c);
			}
		}
		if (n > 0) {
			snapshot_drop(sh);
			/* A short read emptied the socket: any later byte brings a new
			 * edge, so the read that would only say EAGAIN is skipped --
			 * one syscall in three for small keep-alive requests.  Not
			 * when the peer shut its side: that edge has been used.  Not
			 * with TLS: a read returns one record at most, and OpenSSL
			 * may hold more that no edge will announce. */
			if ((size_t)n < asked && !(c->flags & CONN_PEER_SHUT) &&
			    c->ssl == NULL &&
			    !input_blocked(c)) {
				c->flags &= (uint16_t)~CONN_RX_HELD;
				return;
			}
			continue;
		}
		if (n == 0) {
			c->flags |= CONN_EOF | CONN_CLOSING;
			if (c->out == NULL && c->inflight == 0)
				conn_close(c);
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			conn_close(c);
		c->flags &= (uint16_t)~CONN_RX_HELD;
		return;
	}
}

/*
 * Puts C on the timer its state calls for.  A request head that is not
 * complete runs against --header-timeout from its first byte, a body
 * against --body-min-rate; a connection that waits for us (a commit,
 * answers the client does not read) or for nothing is on the idle timer.
 * A timer already running for the same state is left alone: a head's
 * deadline does not move while its bytes trickle in.
 */
static void timer_update(struct serve_conn *c)
{
	int want = SERVE_TIMER_IDLE;

	if (c->flags & (CONN_DEAD | CONN_LINGER))
		return;
	if (c->h3)
		return; /* on idle for good: ngtcp2 keeps its timers */
	if ((c->flags & CONN_TLS) && !(c->flags & CONN_TLS_UP))
		return; /* the handshake keeps the head timer from accept */
	if (c->h2)
		want = h2_timer_wanted(c); /* a header block, bodies, or idle */
	else if (c->rx && !input_blocked(c))
		want = c->rx->head_len ? SERVE_TIMER_BODY : SERVE_TIMER_HEAD;
	if (want == c->timer)
		return;
	timer_set(c, want);
	c->mark = c->received;
}

/* After any event: write what is ready, then resume a held reader for as
 * long as answers drain without blocking. */
static void conn_service(struct serve_conn *c)
{
	serve_conn_flush(c);
	while (!(c->flags & CONN_DEAD) && (c->flags & CONN_RX_HELD) &&
	       !input_blocked(c)) {
		c->flags &= (uint16_t)~CONN_RX_HELD;
		if (c->rx) {
			rx_process(c);
			snapshot_drop(c->shard);
		}
		conn_input(c);
		serve_conn_flush(c);
	}
	timer_update(c);
}

/* One pass over C for an event: its input read (READ) and processed, then
 * what it can send sent.  What the pass's read saw says nothing of the
 * next pass (CONN_RX_EMPTY); a dead connection is buried only at the
 * loop's end, so C may be looked at after. */
static void conn_pass(struct serve_conn *c, int read)
{
	if (read)
		conn_input(c);
	if (!(c->flags & CONN_DEAD))
		conn_service(c);
	c->flags &= (uint16_t)~CONN_RX_EMPTY;
}

/* ---- accepting ------------------------------------------------------------------ */

/* Over --max-conns: answer 503 at once and close, holding nothing.  On
 * a TLS port a clear-text answer would be noise to the client: just
 * close. */
static void refuse_busy(int fd, struct serve_shard *sh)
{
	size_t n = serve_busy_response(sh->scratch, SERVE_SCRATCH);
	ssize_t r;

	if (atomic_load(&sh->srv->tls)) {
		close(fd);
		return;
	}

	/* read what already arrived so close() sends FIN, not RST */
	r = read(fd, sh->scratch + n, SERVE_SCRATCH - n);
	(void)r;
	r = write(fd, sh->scratch, n);
	(void)r;
	shutdown(fd, SHUT_WR);
	close(fd);
}

/*
 * Accepts one connection.  The listener is level-triggered: while more
 * wait, the next epoll_wait reports it again, together with whatever else
 * is ready, so accepting interleaves with serving.  Accepting until EAGAIN
 * instead would cost a failed accept4 for every connection that arrives
 * alone (new TLS connections, one at a time: 1.7 accept4 calls each).
 */
static void shard_accept(struct serve_shard *sh)
{
	struct serve_server *srv = sh->srv;
	int tls = atomic_load(&srv->tls) != NULL; /* a TLS port (serve.h) */
	struct epoll_event ev;
	struct serve_conn *c;
	int fd;

	if (sh->lfd < 0)
		return;
	do
		fd = accept4(sh->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (fd < 0 && (errno == EINTR || errno == ECONNABORTED));
	if (fd < 0) {
		if (errno == EAGAIN)
			return;
		/* out of descriptors or memory: the listener would report the
		 * same connection at once, again and again; shard_sweep puts it
		 * back */
		fprintf(stderr, "keel-serve: accept: %s\n", strerror(errno));
		epoll_ctl(sh->epfd, EPOLL_CTL_DEL, sh->lfd, NULL);
		sh->accept_paused = 1;
		return;
	}
	if (atomic_fetch_add(&srv->conns, 1) >= srv->cfg.max_conns) {
		atomic_fetch_sub(&srv->conns, 1);
		refuse_busy(fd, sh);
		return;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		atomic_fetch_sub(&srv->conns, 1);
		refuse_busy(fd, sh);
		return;
	}
	c->shard = sh;
	c->fd = fd;
	if (tls) /* its SSL comes with its first record (conn_tls_ready) */
		c->flags |= CONN_TLS;
	/* a TLS handshake must finish within --header-timeout */
	timer_set(c, (c->flags & CONN_TLS) ? SERVE_TIMER_HEAD : SERVE_TIMER_IDLE);
	sh->nconns++;
	/* --defer-accept: the kernel handed the connection over once its first
	 * bytes came (or its wait ran out): they are read and answered before
	 * the connection is registered, so a request that ends it
	 * ("Connection: close") costs no epoll_ctl at all.  Bytes that come
	 * after the last read are reported by the registration itself (epoll
	 * looks at a descriptor's state when it is added). */
	if (srv->cfg.defer_accept_s > 0 && !tls) {
		conn_pass(c, 1);
		if (c->flags & CONN_DEAD)
			return; /* answered and closed; conn_close buried it */
	}
	/* TCP_NODELAY comes from the listener (serve_main.c) */
	ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	ev.data.ptr = c;
	if (epoll_ctl(sh->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		conn_close(c);
}

/* ---- completions, timeouts, shutdown -------------------------------------- */

void serve_shard_wake(struct serve_shard *sh)
{
	uint64_t one = 1;
	ssize_t r = write(sh->evfd, &one, sizeof one);

	(void)r; /* EAGAIN means the counter is already non-zero: woken */
}

static void shard_completions(struct serve_shard *sh)
{
	struct serve_commit *cm, *next;
	uint64_t v;
	ssize_t r = read(sh->evfd, &v, sizeof v);

	(void)r;
	/* Answering completions resumes the readers they held, and the
	 * commits are others' too: nothing here is a lone writer. */
	sh->lone = 0;
	pthread_mutex_lock(&sh->lock);
	cm = sh->done;
	sh->done = NULL;
	pthread_mutex_unlock(&sh->lock);
	for (; cm; cm = next) {
		struct serve_conn *c = cm->conn;
		next = cm->next;
		serve_commit_finish(sh, cm);
		if (!(c->flags & CONN_DEAD))
			conn_service(c);
	}
}

/* A request's head or body ran out of time: 408, then close. */
static void request_timeout(struct serve_conn *c)
{
	serve_error(c, 408, 1, 1);
	serve_conn_flush(c);
	timer_update(c);
}

/* C's timer is due.  HTTP/2 decides per stream (h2_expire); HTTP/1.1
 * has one request at a time, whose body a cut ends the connection with
 * (serve_limits.h). */
static void conn_expire(struct serve_conn *c)
{
	const struct limits_config *lim = &c->shard->srv->limits;
	struct limits_body body;
	uint8_t cuts = 0; /* one request at a time: its cut is the first */

	if (c->h3) { /* QUIC's own idle timeout decides (h3_timers) */
		timer_set(c, SERVE_TIMER_IDLE);
		return;
	}
	if (c->h2 && c->timer != SERVE_TIMER_LINGER) {
		int next = h2_expire(c, c->timer);
		if (next >= 0)
			timer_set(c, next);
		return;
	}
	switch (c->timer) {
	case SERVE_TIMER_IDLE:
		if (c->inflight)
			timer_set(c, SERVE_TIMER_IDLE); /* waiting for us */
		else
			conn_close(c);
		return;
	case SERVE_TIMER_HEAD:
		if ((c->flags & CONN_TLS) && !(c->flags & CONN_TLS_UP)) {
			conn_close(c); /* a stalled handshake: nothing to say */
			return;
		}
		request_timeout(c);
		return;
	case SERVE_TIMER_BODY:
		/* the window began when the timer was armed; the list's
		 * duration is the window, so never LIMITS_WAIT here */
		body = (struct limits_body){c->armed_ms, c->mark};
		if (limits_body_check(lim, &body, c->received,
		                      c->shard->now_ms) != LIMITS_CUT) {
			timer_set(c, SERVE_TIMER_BODY); /* another window */
			c->mark = body.mark;
			return;
		}
		/* a byte stream cannot skip the rest of a body: 408, close */
		if (limits_cut(&cuts, 0) == LIMITS_CLOSE)
			request_timeout(c);
		return;
	default:
		conn_close(c);
	}
}

/* Expires what is due.  Each list has one duration, so it is in deadline
 * order and the walk stops at the first entry not due yet; an entry that
 * is re-armed goes to the back with a later deadline. */
/*
 * Memory goes back after a burst.  glibc keeps what freed connections held
 * in its arenas, resident (2,000 QUIC handshakes, closed, left the server
 * at 231 MB).  When the server's connections have fallen to a quarter of
 * their peak since the last time, and that peak was at least
 * SERVE_TRIM_MIN, malloc_trim returns the arenas' free pages to the
 * system.  Shard 0 alone asks: the trim is the whole process's.  Its cost
 * (a walk of the arenas' free lists, milliseconds for hundreds of MB) is
 * paid once per burst, on a sweep.
 */
static void memory_give_back(struct serve_shard *sh)
{
	int now = atomic_load(&sh->srv->conns);

	if (sh->id != 0)
		return;
	if (now > sh->conns_peak)
		sh->conns_peak = now;
	if (sh->conns_peak >= SERVE_TRIM_MIN && now <= sh->conns_peak / 4) {
		malloc_trim(0);
		sh->conns_peak = now;
	}
}

static void shard_sweep(struct serve_shard *sh)
{
	int t;

	memory_give_back(sh);

	if (sh->accept_paused && sh->lfd >= 0) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &sh->lfd};
		if (epoll_ctl(sh->epfd, EPOLL_CTL_ADD, sh->lfd, &ev) == 0)
			sh->accept_paused = 0;
	}

	for (t = 0; t < SERVE_TIMERS; t++) {
		struct serve_link *head = &sh->timers[t];
		int64_t limit = sh->now_ms - sh->timer_ms[t];

		while (head->next != head && conn_of(head->next)->armed_ms <= limit) {
			struct serve_conn *c = conn_of(head->next);
			conn_expire(c);
			if (!(c->flags & CONN_DEAD) && head->next == &c->link)
				timer_set(c, t == SERVE_TIMER_LINGER ? t
				                                     : SERVE_TIMER_IDLE);
		}
	}
}

/* Shutting down: no new connections; close every connection that has no
 * answer outstanding; the others close once their answers are written. */
static void shard_stop(struct serve_shard *sh)
{
	int t;

	if (sh->lfd >= 0) {
		epoll_ctl(sh->epfd, EPOLL_CTL_DEL, sh->lfd, NULL);
		close(sh->lfd);
		sh->lfd = -1;
	}
	for (t = 0; t < SERVE_TIMERS; t++) {
		struct serve_link *l, *next;
		for (l = sh->timers[t].next; l != &sh->timers[t]; l = next) {
			struct serve_conn *c = conn_of(l);
			next = l->next;
			if (c->h3) {
				h3_stop(c); /* GOAWAY; closes when drained */
				continue;
			}
			if (c->h2) {
				/* GOAWAY, then its streams drain */
				if (!(c->flags & (CONN_DEAD | CONN_LINGER)))
					h2_stop(c);
				continue;
			}
			c->flags |= CONN_CLOSING;
			if (c->out == NULL && c->inflight == 0)
				conn_close(c);
		}
	}
}

/* Gives up on every connection (answers that will not drain). */
static void shard_close_all(struct serve_shard *sh)
{
	int t;

	for (t = 0; t < SERVE_TIMERS; t++)
		while (sh->timers[t].next != &sh->timers[t])
			conn_close(conn_of(sh->timers[t].next));
}

static void shard_bury(struct serve_shard *sh)
{
	while (sh->graveyard) {
		struct serve_conn *c = sh->graveyard;
		sh->graveyard = c->grave;
		free(c);
	}
}

static void shard_event(struct serve_shard *sh, struct epoll_event *ev)
{
	struct serve_conn *c = ev->data.ptr;

	if (ev->data.ptr == &sh->lfd) {
		shard_accept(sh);
		return;
	}
	if (ev->data.ptr == &sh->evfd) {
		shard_completions(sh);
		return;
	}
	if (ev->data.ptr == &sh->ufd) {
		h3_input(sh);
		return;
	}
	if (c->flags & CONN_DEAD)
		return;
	if (ev->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->flags |= CONN_PEER_SHUT;
	/* TLS reads on any edge: a handshake or a record may have waited for
	 * the socket to take our bytes */
	conn_pass(c, (ev->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ||
	                 c->ssl);
}

/* epoll_wait, after polling for a while when that is likely to pay.  A
 * virtual CPU with nothing to run halts, and waking it again (a request's
 * arrival, a sync's completion on another CPU) costs tens of microseconds
 * where the host does not poll for it; on any machine sleeping costs a
 * context switch.  --busy-poll USEC polls up to USEC always.  auto (the
 * default) polls only where commits have lately taken under
 * SERVE_AUTO_POLL_US from submission to answer (commit_us_avg), for at most
 * that long, and only while this shard has commits in flight or answered
 * one within that time: the completion is near, or the client that just
 * got its answer is about to send the next write.  Each empty poll yields,
 * so the engine's threads on the same CPU run. */
int serve_would_poll(const struct serve_shard *sh)
{
	int spin = sh->srv->cfg.busy_poll_us;
	return spin > 0 || (spin < 0 && sh->commit_us_avg < SERVE_AUTO_POLL_US);
}

static int shard_wait(struct serve_shard *sh, struct epoll_event *evs, int max,
                      int timeout_ms)
{
	int spin = sh->srv->cfg.busy_poll_us;
	if (spin < 0)
		spin = serve_would_poll(sh) &&
		               (sh->pending_commits > 0 ||
		                serve_now_us() - sh->last_done_us < sh->commit_us_avg)
		           ? (int)sh->commit_us_avg
		           : 0;
	if (spin <= 0) /* no poll first: it would cost a system call a sleep */
		return epoll_wait(sh->epfd, evs, max, timeout_ms);
	int n = epoll_wait(sh->epfd, evs, max, 0);
	if (n == 0) {
		int64_t until = serve_now_us() + spin;
		do {
			sched_yield();
			n = epoll_wait(sh->epfd, evs, max, 0);
		} while (n == 0 && serve_now_us() < until);
	}
	return n != 0 ? n : epoll_wait(sh->epfd, evs, max, timeout_ms);
}

void *serve_shard_run(void *arg)
{
	struct serve_shard *sh = arg;
	struct serve_server *srv = sh->srv;
	struct epoll_event evs[256];
	int64_t stop_deadline = 0, next_sweep = 0;

	for (;;) {
		int i, n, stopping = atomic_load(&srv->stopping);
		int wait_ms = stopping ? 50 : 500;

		/* no table pointer is held here (serve.h, TOKENS) */
		atomic_store(&sh->tokens_seen, atomic_load(&srv->tokens_gen));
		if (sh->h3) /* QUIC's timers: retransmissions, deadlines */
			wait_ms = h3_timers(sh, wait_ms);
		n = shard_wait(sh, evs, 256, wait_ms);
		sh->now_ms = now_ms();
		update_date(sh);
		/* one event: no other connection waits on this shard, so a
		 * write may be committed on this thread (serve_req.c) */
		sh->lone = n == 1;
		for (i = 0; i < n; i++)
			shard_event(sh, &evs[i]);
		snapshot_drop(sh);
		if (sh->now_ms >= next_sweep) {
			shard_sweep(sh);
			h2_sweep(sh);
			h3_sweep(sh);
			next_sweep = sh->now_ms + 250;
		}
		if (stopping) {
			if (stop_deadline == 0)
				stop_deadline = sh->now_ms + 10000;
			shard_stop(sh);
			if (sh->now_ms > stop_deadline) {
				/* answers that will not drain: give up on them */
				shard_close_all(sh);
			}
			if (sh->nconns == 0 && sh->pending_commits == 0) {
				shard_bury(sh);
				break;
			}
		}
		shard_bury(sh);
	}
	h3_shard_close(sh);
	if (sh->snap)
		keel_snapshot_close(sh->snap); /* before main's keel_close */
	sh->snap = NULL;
	return NULL;
}

int serve_shard_init(struct serve_shard *sh, struct serve_server *srv, int id,
                     int lfd)
{
	struct epoll_event ev;
	int i;

	memset(sh, 0, offsetof(struct serve_shard, scratch));
	sh->srv = srv;
	sh->id = id;
	sh->lfd = lfd;
	sh->ufd = -1;
	for (i = 0; i < SERVE_TIMERS; i++)
		sh->timers[i].next = sh->timers[i].prev = &sh->timers[i];
	sh->timer_ms[SERVE_TIMER_IDLE] = srv->cfg.idle_timeout_ms;
	sh->timer_ms[SERVE_TIMER_HEAD] = srv->cfg.header_timeout_ms;
	sh->timer_ms[SERVE_TIMER_BODY] = srv->cfg.header_timeout_ms;
	sh->timer_ms[SERVE_TIMER_LINGER] = SERVE_LINGER_MS;
	sh->now_ms = now_ms();
	sh->date_sec = -1;
	update_date(sh);
	pthread_mutex_init(&sh->lock, NULL);
	sh->epfd = epoll_create1(EPOLL_CLOEXEC);
	sh->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sh->epfd < 0 || sh->evfd < 0)
		return -1;
	ev.events = EPOLLIN; /* level-triggered: shard_accept takes one */
	ev.data.ptr = &sh->lfd;
	if (epoll_ctl(sh->epfd, EPOLL_CTL_ADD, lfd, &ev) < 0)
		return -1;
	ev.events = EPOLLIN | EPOLLET;
	ev.data.ptr = &sh->evfd;
	if (epoll_ctl(sh->epfd, EPOLL_CTL_ADD, sh->evfd, &ev) < 0)
		return -1;
	return srv->h3 ? h3_shard_open(sh, &srv->cfg.addr) : 0;
}
