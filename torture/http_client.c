/*
 * http_client.c -- the HTTP writer process of `torture --target http`
 * (see http_client.h).
 */
#include "http_client.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

#include "http_writer.h"
#include "proto.h"
#include "value.h"

#define CLIENT_PATH_MAX HTTP_WRITER_PATH_MAX

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* One change per operation: a delete of a present key about one time in
 * five, a put otherwise -- the embedded writer's mix without the batches. */
void http_writer_choose(hthread *h, proto_rec *rec)
{
	const torture_options *o = h->plan->opt;
	uint32_t span = o->value_max - o->value_min + 1;
	uint32_t i = (uint32_t)(rnd(&h->rng) % h->nkeys);

	rec->count = 1;
	rec->change[0].key = h->t + i * o->threads;
	rec->change[0].len = h->present[i] && rnd(&h->rng) % 5 == 0 ? 0 :
	                     o->value_min + (uint32_t)(rnd(&h->rng) % span);
}

/* "/" and the key, every byte outside the unreserved set escaped: the key
 * holds a '/', which must reach the server as part of the key. */
void http_writer_key_path(uint32_t k, char out[HTTP_WRITER_PATH_MAX])
{
	static const char hex[] = "0123456789ABCDEF";
	char key[VALUE_KEY_MAX];
	size_t klen = value_key(k, key), n = 0;

	out[n++] = '/';
	for (size_t i = 0; i < klen; i++) {
		unsigned char b = (unsigned char)key[i];
		if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
		    (b >= '0' && b <= '9') || b == '-' || b == '.' ||
		    b == '_' || b == '~') {
			out[n++] = (char)b;
		} else {
			out[n++] = '%';
			out[n++] = hex[b >> 4];
			out[n++] = hex[b & 15];
		}
	}
	out[n] = '\0';
}

static void conn_close(hthread *h)
{
	http_conn_close(&h->conn);
	h->rx_len = 0;
}

/* Reads more of the answer into rx.  >0 bytes, 0 at end of file, -1 on an
 * error (errno; EAGAIN after the answer timeout). */
static ssize_t rx_more(hthread *h)
{
	ssize_t n;

	n = http_conn_recv(&h->conn, h->rx + h->rx_len,
	                   sizeof(h->rx) - 1 - h->rx_len);
	if (n > 0) {
		h->rx_len += (size_t)n;
		h->rx[h->rx_len] = '\0';
	}
	return n;
}

/* Case-insensitive: does the header line at P (LEN bytes) have NAME? Then
 * *VAL is its value with the blanks around it skipped. */
static int header_is(const char *p, size_t len, const char *name,
                     const char **val, size_t *vlen)
{
	size_t n = strlen(name);

	if (len <= n || p[n] != ':' || strncasecmp(p, name, n) != 0)
		return 0;
	p += n + 1;
	len -= n + 1;
	while (len && (*p == ' ' || *p == '\t'))
		p++, len--;
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	*val = p;
	*vlen = len;
	return 1;
}

/* A decimal number of LEN bytes, nothing else.  0, or -1. */
int http_writer_number(const char *p, size_t len, uint64_t *v)
{
	*v = 0;
	if (len == 0 || len > 18)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		*v = *v * 10 + (uint64_t)(p[i] - '0');
	}
	return 0;
}

/* The CRLF ending the line at P; the head ends at END + 2. */
static const char *line_end(const char *p, const char *end)
{
	return memmem(p, (size_t)(end + 2 - p), "\r\n", 2);
}

/* Parses the head in rx[0..HEAD) (it ends with an empty line) into A and
 * *CLEN, the body length.  0, or -1 with *WHY. */
static int parse_head(const hthread *h, size_t head, answer *a,
                      uint64_t *clen, const char **why)
{
	const char *p = h->rx, *end = h->rx + head - 2, *val;
	size_t vlen;
	uint64_t v;

	memset(a, 0, sizeof(*a));
	*clen = 0;
	if (head < 14 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
	    http_writer_number(p + 9, 3, &v) < 0 || (p[12] != ' ' && p[12] != '\r')) {
		*why = "malformed status line";
		return -1;
	}
	a->status = (int)v;
	/* Every line, the last included, ends in CRLF: memmem always finds
	 * one before END + 2. */
	for (p = line_end(p, end) + 2; p < end; p = line_end(p, end) + 2) {
		size_t len = (size_t)(line_end(p, end) - p);
		if (header_is(p, len, "Content-Length", &val, &vlen) &&
		    http_writer_number(val, vlen, clen) < 0) {
			*why = "malformed Content-Length";
			return -1;
		}
		if (header_is(p, len, "Transfer-Encoding", &val, &vlen)) {
			*why = "Transfer-Encoding on an answer to a write";
			return -1;
		}
		if (header_is(p, len, "Connection", &val, &vlen) &&
		    vlen == 5 && strncasecmp(val, "close", 5) == 0)
			a->close = 1;
		if (header_is(p, len, "ETag", &val, &vlen) &&
		    (vlen < 3 || val[0] != '"' || val[vlen - 1] != '"' ||
		     http_writer_number(val + 1, vlen - 2, &a->etag) < 0 ||
		     a->etag == 0)) {
			*why = "malformed ETag (want \"<revision>\")";
			return -1;
		}
	}
	return 0;
}

/* Reads until rx holds a whole head; returns its length, 0 when the
 * connection broke first, -1 with *WHY on a timeout or an oversized head. */
static ssize_t read_head(hthread *h, const char **why)
{
	char *end;

	while (!(end = memmem(h->rx, h->rx_len, "\r\n\r\n", 4))) {
		ssize_t n;
		if (h->rx_len >= sizeof(h->rx) - 1) {
			*why = "answer head over 8 KiB";
			return -1;
		}
		n = rx_more(h);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			*why = "no answer within 30 s";
			return -1;
		}
		if (n < 0 && errno == EPROTO) {
			*why = "a TLS record torture cannot accept";
			return -1;
		}
		if (n <= 0)
			return 0;
	}
	return end + 4 - h->rx;
}

/* Reads and drops the body: CLEN bytes after the head.  0, -1 (broke). */
static int skip_body(hthread *h, size_t head, uint64_t clen, const char **why)
{
	uint64_t have = h->rx_len - head;

	while (have < clen) {
		h->rx_len = 0; /* the body is not needed: read over it */
		ssize_t n = rx_more(h);
		if (n <= 0)
			return -1;
		have += (uint64_t)n;
	}
	if (have > clen) { /* one request at a time: nothing may follow */
		*why = "bytes after the answer";
		return -1;
	}
	h->rx_len = 0;
	return 0;
}

/* Reads one final answer into A (1xx answers are skipped).  REQ_ANSWERED,
 * REQ_GONE, or -1 with *WHY when the answer is broken. */
static int read_answer(hthread *h, answer *a, const char **why)
{
	for (;;) {
		ssize_t head = read_head(h, why);
		uint64_t clen;

		if (head <= 0)
			return head < 0 ? -1 : REQ_GONE;
		if (parse_head(h, (size_t)head, a, &clen, why) < 0)
			return -1;
		if (a->status >= 200) {
			if (skip_body(h, (size_t)head, clen, why) < 0)
				return *why ? -1 : REQ_GONE;
			return REQ_ANSWERED;
		}
		h->rx_len -= (size_t)head; /* 100 Continue: the answer follows */
		memmove(h->rx, h->rx + head, h->rx_len + 1);
	}
}

/* Sends the request for C -- a PUT of the value in h->buf or a DELETE,
 * naming the key's revision (or its absence) -- and reads the answer into
 * A.  REQ_ANSWERED, REQ_GONE, or -1 with *WHY. */
static int request(hthread *h, const proto_change *c, answer *a,
                   const char **why)
{
	uint32_t i = c->key / h->plan->opt->threads;
	char path[CLIENT_PATH_MAX], head[256 + CLIENT_PATH_MAX], cond[64];
	struct iovec iov[2];
	int n;

	http_writer_key_path(c->key, path);
	if (h->present[i])
		snprintf(cond, sizeof(cond), "If-Match: \"%" PRIu64 "\"",
		         h->rev[i]);
	else
		snprintf(cond, sizeof(cond), "If-None-Match: *");
	if (c->len == 0)
		n = snprintf(head, sizeof(head), "DELETE %s HTTP/1.1\r\n"
		             "Host: 127.0.0.1\r\n%s\r\n\r\n", path, cond);
	else
		n = snprintf(head, sizeof(head), "PUT %s HTTP/1.1\r\n"
		             "Host: 127.0.0.1\r\nContent-Length: %u\r\n"
		             "%s\r\n\r\n", path, c->len, cond);
	iov[0].iov_base = head;
	iov[0].iov_len = (size_t)n;
	iov[1].iov_base = h->buf;
	iov[1].iov_len = c->len;
	if (h->conn.sock < 0) {
		h->rx_len = 0;
		n = http_conn_open(&h->conn, h->port, h->tls, why);
		if (n == -2)
			return -1;
		if (n < 0)
			return REQ_GONE;
	}
	if (http_conn_sendv(&h->conn, iov, c->len ? 2 : 1) < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EPROTO)
			return REQ_GONE;
		*why = errno == EPROTO ? "TLS failed while sending" :
		       "the request could not be sent within 30 s";
		return -1;
	}
	n = read_answer(h, a, why);
	if (n != REQ_ANSWERED || a->close)
		conn_close(h);
	return n;
}

/* An answer's status as a keel_err, for the DONE record. */
static int status_err(int status)
{
	switch (status) {
	case 404: return KEEL_ENOTFOUND;
	case 412: return KEEL_ECONFLICT;
	case 413: return KEEL_ETOOBIG;
	case 507: return KEEL_ENOSPC;
	default: return status >= 500 ? KEEL_EIO : KEEL_EINVAL;
	}
}

/* Judges the answer to C: KEEL_OK and *TXID for exactly the 2xx the
 * contract promises (201 + ETag for a create, 204 + ETag for an update,
 * 204 for a delete); anything else is said on stderr and turned into a
 * keel_err. */
static int judge(const hthread *h, const proto_change *c, const answer *a,
                 uint64_t *txid)
{
	uint32_t i = c->key / h->plan->opt->threads;
	int put = c->len != 0;
	int want = put && !h->present[i] ? 201 : 204;
	const char *what = a->status != want ? "unexpected status" :
	                   put && !a->etag ? "no ETag" : NULL;
	char path[CLIENT_PATH_MAX];

	*txid = a->etag; /* a DELETE's 204 carries none: txid unknown (0) */
	if (!what)
		return KEEL_OK;
	http_writer_key_path(c->key, path);
	fprintf(stderr, "torture: http thread %u op seq %" PRIu64 ": %s %s "
	        "with %s: answered %d (%s; want %d%s)\n", h->t, h->seq,
	        put ? "PUT" : "DELETE", path, h->present[i] ? "If-Match" :
	        "If-None-Match: *", a->status, what, want,
	        put ? " with an ETag" : "");
	return a->status >= 200 && a->status < 300 ? KEEL_EINVAL :
	                                             status_err(a->status);
}

int http_writer_begin(hthread *h, proto_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->kind = PROTO_INTENT;
	rec->thread = h->t;
	rec->seq = h->seq;
	http_writer_choose(h, rec);
	if (rec->change[0].len) {
		value_id id = {
			.key = rec->change[0].key, .thread = h->t,
			.seq = h->seq, .nonce = oracle_nonce(h->plan->model),
			.len = rec->change[0].len,
		};
		value_encode(&id, h->buf);
	}
	if (proto_send(h->fd, rec) < 0)
		return -1;
	if (h->plan->opt->unsafe & TORTURE_UNSAFE_ACK_BEFORE_COMMIT) {
		/* the deliberate bug: say "stored" too soon */
		rec->kind = PROTO_ACK;
		if (proto_send(h->fd, rec) < 0)
			return -1;
	}
	return 0;
}

int http_writer_finish(hthread *h, proto_rec *rec, int n, const answer *a,
                       const char *why)
{
	uint32_t i = rec->change[0].key / h->plan->opt->threads;

	rec->kind = PROTO_DONE;
	if (n < 0) {
		fprintf(stderr, "torture: http thread %u op seq %" PRIu64
		        ": %s\n", h->t, h->seq, why);
		rec->rc = KEEL_EIO;
	} else {
		rec->rc = judge(h, &rec->change[0], a, &rec->rev);
	}
	if (proto_send(h->fd, rec) < 0 || rec->rc != KEEL_OK)
		return -1;
	h->present[i] = rec->change[0].len != 0;
	h->rev[i] = rec->rev;
	h->seq++;
	return 0;
}

/* One thread: an operation at a time until the server goes away. */
static void *client_thread(void *arg)
{
	hthread *h = arg;

	for (;;) {
		proto_rec rec;
		const char *why = NULL;
		answer a;
		int n;

		if (http_writer_begin(h, &rec) < 0)
			break;
		n = request(h, &rec.change[0], &a, &why);
		if (n == REQ_GONE) /* no answer: unacknowledged, no DONE */
			break;
		if (http_writer_finish(h, &rec, n, &a, why) < 0)
			break;
	}
	conn_close(h);
	return NULL;
}

/* Sets writer T up from the inherited model; -1 when memory ran out. */
static int thread_init(hthread *h, const writer_plan *p, uint16_t port,
                       SSL_CTX *tls, int fd, uint32_t t)
{
	uint32_t T = p->opt->threads;

	h->plan = p;
	h->port = port;
	h->tls = tls;
	h->fd = fd;
	h->conn.sock = -1;
	h->conn.ssl = NULL;
	h->t = t;
	h->nkeys = (p->opt->keys - t + T - 1) / T;
	h->seq = oracle_next_seq(p->model, t);
	h->rng = p->seed ^ ((uint64_t)t << 48);
	rnd(&h->rng);
	h->present = calloc(h->nkeys, 1);
	h->rev = calloc(h->nkeys, sizeof(*h->rev));
	h->buf = malloc(p->opt->value_max);
	if (!h->present || !h->rev || !h->buf)
		return -1;
	for (uint32_t i = 0; i < h->nkeys; i++) {
		const oracle_key_state *s = oracle_key(p->model, t + i * T);
		h->present[i] = (uint8_t)s->present;
		h->rev[i] = s->rev;
	}
	return 0;
}

void http_client_main(const writer_plan *plan, uint16_t port, SSL_CTX *tls,
                      const char *cert, uint64_t start_ns, int fd)
{
	uint32_t T = plan->opt->threads, h2 = plan->opt->http2;
	uint32_t h3 = plan->opt->http3;
	/* HTTP/1.1: a thread per writer; HTTP/2 and HTTP/3: one per
	 * connection, each carrying up to HTTP2_STREAMS (HTTP3_STREAMS)
	 * writers' streams at once. */
	uint32_t nthreads = h2 ? (T + HTTP2_STREAMS - 1) / HTTP2_STREAMS :
	                    h3 ? (T + HTTP3_STREAMS - 1) / HTTP3_STREAMS : T;
	hthread *h = calloc(T, sizeof(*h));
	http2_group *g = calloc(nthreads, sizeof(*g));
	http3_group *g3 = calloc(nthreads, sizeof(*g3));
	pthread_t *tid = calloc(nthreads, sizeof(*tid));
	proto_rec rec;

	/* OpenSSL writes with write(2): a dead server must break the
	 * connection (EPIPE), not end this process. */
	signal(SIGPIPE, SIG_IGN);
	/* The server opened the store; this says how long its start took
	 * (exec, keel_open with recovery, listen). */
	memset(&rec, 0, sizeof(rec));
	rec.kind = PROTO_OPENED;
	rec.ns = start_ns;
	if (proto_send(fd, &rec) < 0 || !h || !g || !g3 || !tid)
		_exit(3);
	for (uint32_t t = 0; t < T; t++)
		if (thread_init(&h[t], plan, port, tls, fd, t) < 0) {
			fprintf(stderr, "torture: http client: out of memory\n");
			_exit(4);
		}
	for (uint32_t i = 0; i < nthreads; i++) {
		int rc;
		if (h2) {
			g[i].w = &h[i * HTTP2_STREAMS];
			g[i].n = T - i * HTTP2_STREAMS < HTTP2_STREAMS ?
			         T - i * HTTP2_STREAMS : HTTP2_STREAMS;
			rc = pthread_create(&tid[i], NULL,
			                    http2_connection_thread, &g[i]);
		} else if (h3) {
			g3[i].w = &h[i * HTTP3_STREAMS];
			g3[i].n = T - i * HTTP3_STREAMS < HTTP3_STREAMS ?
			          T - i * HTTP3_STREAMS : HTTP3_STREAMS;
			g3[i].cert = cert;
			rc = pthread_create(&tid[i], NULL,
			                    http3_connection_thread, &g3[i]);
		} else {
			rc = pthread_create(&tid[i], NULL, client_thread,
			                    &h[i]);
		}
		if (rc != 0) {
			fprintf(stderr, "torture: http client: cannot start "
			        "thread %u\n", i);
			_exit(4);
		}
	}
	for (uint32_t i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	/* Every thread ended: the server went away, or an answer broke the
	 * contract (said on stderr and in a DONE record). */
	_exit(0);
}
