/*
 * http_client.c -- the HTTP writer process of `torture --target http`
 * (see http_client.h).
 */
#include "http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proto.h"
#include "value.h"

/* No answer in this long is a hung server, not a slow disk; the harness
 * normally kills the server long before. */
#define CLIENT_ANSWER_TIMEOUT_S 30
#define CLIENT_RX_MAX 8192 /* an answer's head; keel-serve's are ~200 bytes */
#define CLIENT_PATH_MAX (1 + 3 * VALUE_KEY_MAX)

/* What one request came to. */
enum {
	REQ_ANSWERED = 0, /* a whole answer arrived: see status       */
	REQ_GONE = 1,     /* the connection broke first (server dead)  */
};

typedef struct hthread {
	const writer_plan *plan;
	uint16_t port;     /* keel-serve on 127.0.0.1                   */
	int fd;            /* record pipe                               */
	int sock;          /* keep-alive connection, -1 when none       */
	uint32_t t;        /* thread number                             */
	uint32_t nkeys;    /* keys owned: t, t + T, t + 2T, ...         */
	uint64_t seq;      /* next operation number                     */
	uint64_t rng;      /* workload generator state                  */
	uint8_t *present;  /* per owned key: it exists                  */
	uint64_t *rev;     /* per owned key: its revision (the ETag)     */
	uint8_t *buf;      /* one value                                  */
	char rx[CLIENT_RX_MAX]; /* the answer being read                */
	size_t rx_len;     /* bytes in rx                               */
} hthread;

/* The parts of an answer the client looks at. */
typedef struct answer {
	int status;        /* 201, 204, 412, ...                        */
	uint64_t etag;     /* the ETag's number; 0 when none            */
	int close;         /* Connection: close                         */
} answer;

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* One change per operation: a delete of a present key about one time in
 * five, a put otherwise -- the embedded writer's mix without the batches. */
static void choose(hthread *h, proto_rec *rec)
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
static void key_path(uint32_t k, char out[CLIENT_PATH_MAX])
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
	if (h->sock >= 0)
		close(h->sock);
	h->sock = -1;
	h->rx_len = 0;
}

/* Connects to the server.  0, or -1 when it is not there (killed). */
static int conn_open(hthread *h)
{
	struct sockaddr_in a;
	struct timeval tv = {.tv_sec = CLIENT_ANSWER_TIMEOUT_S};
	int one = 1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(h->port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h->sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->sock < 0)
		return -1;
	h->rx_len = 0;
	/* Nodelay: head and body leave in one writev, nothing to coalesce. */
	setsockopt(h->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(h->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(h->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(h->sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
		conn_close(h);
		return -1;
	}
	return 0;
}

/* Sends the IOV in full.  0, or -1 when the connection broke. */
static int send_all(int sock, struct iovec *iov, int n)
{
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};

	while (m.msg_iovlen) {
		ssize_t w = sendmsg(sock, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		while (m.msg_iovlen && (size_t)w >= m.msg_iov->iov_len) {
			w -= (ssize_t)m.msg_iov->iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen) {
			m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + w;
			m.msg_iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Reads more of the answer into rx.  >0 bytes, 0 at end of file, -1 on an
 * error (errno; EAGAIN after the answer timeout). */
static ssize_t rx_more(hthread *h)
{
	ssize_t n;

	do
		n = recv(h->sock, h->rx + h->rx_len,
		         sizeof(h->rx) - 1 - h->rx_len, 0);
	while (n < 0 && errno == EINTR);
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
static int parse_number(const char *p, size_t len, uint64_t *v)
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
	    parse_number(p + 9, 3, &v) < 0 || (p[12] != ' ' && p[12] != '\r')) {
		*why = "malformed status line";
		return -1;
	}
	a->status = (int)v;
	/* Every line, the last included, ends in CRLF: memmem always finds
	 * one before END + 2. */
	for (p = line_end(p, end) + 2; p < end; p = line_end(p, end) + 2) {
		size_t len = (size_t)(line_end(p, end) - p);
		if (header_is(p, len, "Content-Length", &val, &vlen) &&
		    parse_number(val, vlen, clen) < 0) {
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
		     parse_number(val + 1, vlen - 2, &a->etag) < 0 ||
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

/* Sends the request for C -- a PUT of a fresh value or a DELETE, naming the
 * key's revision (or its absence) -- and reads the answer into A.
 * REQ_ANSWERED, REQ_GONE, or -1 with *WHY. */
static int request(hthread *h, const proto_change *c, answer *a,
                   const char **why)
{
	uint32_t i = c->key / h->plan->opt->threads;
	char path[CLIENT_PATH_MAX], head[256 + CLIENT_PATH_MAX], cond[64];
	struct iovec iov[2];
	int n;

	key_path(c->key, path);
	if (h->present[i])
		snprintf(cond, sizeof(cond), "If-Match: \"%" PRIu64 "\"",
		         h->rev[i]);
	else
		snprintf(cond, sizeof(cond), "If-None-Match: *");
	if (c->len == 0) {
		n = snprintf(head, sizeof(head), "DELETE %s HTTP/1.1\r\n"
		             "Host: 127.0.0.1\r\n%s\r\n\r\n", path, cond);
	} else {
		value_id id = {
			.key = c->key, .thread = h->t, .seq = h->seq,
			.nonce = oracle_nonce(h->plan->model), .len = c->len,
		};
		value_encode(&id, h->buf);
		n = snprintf(head, sizeof(head), "PUT %s HTTP/1.1\r\n"
		             "Host: 127.0.0.1\r\nContent-Length: %u\r\n"
		             "%s\r\n\r\n", path, c->len, cond);
	}
	iov[0].iov_base = head;
	iov[0].iov_len = (size_t)n;
	iov[1].iov_base = h->buf;
	iov[1].iov_len = c->len;
	if (h->sock < 0 && conn_open(h) < 0)
		return REQ_GONE;
	if (send_all(h->sock, iov, c->len ? 2 : 1) < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return REQ_GONE;
		*why = "the request could not be sent within 30 s";
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
	key_path(c->key, path);
	fprintf(stderr, "torture: http thread %u op seq %" PRIu64 ": %s %s "
	        "with %s: answered %d (%s; want %d%s)\n", h->t, h->seq,
	        put ? "PUT" : "DELETE", path, h->present[i] ? "If-Match" :
	        "If-None-Match: *", a->status, what, want,
	        put ? " with an ETag" : "");
	return a->status >= 200 && a->status < 300 ? KEEL_EINVAL :
	                                             status_err(a->status);
}

/* One thread: an operation at a time until the server goes away. */
static void *client_thread(void *arg)
{
	hthread *h = arg;
	int ack_first = (h->plan->opt->unsafe &
	                 TORTURE_UNSAFE_ACK_BEFORE_COMMIT) != 0;

	for (;; h->seq++) {
		proto_rec rec;
		const char *why = NULL;
		answer a;
		int n;

		memset(&rec, 0, sizeof(rec));
		rec.kind = PROTO_INTENT;
		rec.thread = h->t;
		rec.seq = h->seq;
		choose(h, &rec);
		if (proto_send(h->fd, &rec) < 0)
			break;
		if (ack_first) { /* the deliberate bug: say "stored" too soon */
			rec.kind = PROTO_ACK;
			if (proto_send(h->fd, &rec) < 0)
				break;
		}
		n = request(h, &rec.change[0], &a, &why);
		if (n == REQ_GONE) /* no answer: unacknowledged, no DONE */
			break;
		rec.kind = PROTO_DONE;
		if (n < 0) {
			fprintf(stderr, "torture: http thread %u op seq %"
			        PRIu64 ": %s\n", h->t, h->seq, why);
			rec.rc = KEEL_EIO;
		} else {
			rec.rc = judge(h, &rec.change[0], &a, &rec.rev);
		}
		if (proto_send(h->fd, &rec) < 0 || rec.rc != KEEL_OK)
			break;
		h->present[rec.change[0].key / h->plan->opt->threads] =
			rec.change[0].len != 0;
		h->rev[rec.change[0].key / h->plan->opt->threads] = rec.rev;
	}
	conn_close(h);
	return NULL;
}

/* Sets thread T up from the inherited model; -1 when memory ran out. */
static int thread_init(hthread *h, const writer_plan *p, uint16_t port,
                       int fd, uint32_t t)
{
	uint32_t T = p->opt->threads;

	h->plan = p;
	h->port = port;
	h->fd = fd;
	h->sock = -1;
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

void http_client_main(const writer_plan *plan, uint16_t port,
                      uint64_t start_ns, int fd)
{
	uint32_t T = plan->opt->threads;
	hthread *h = calloc(T, sizeof(*h));
	pthread_t *tid = calloc(T, sizeof(*tid));
	proto_rec rec;

	/* The server opened the store; this says how long its start took
	 * (exec, keel_open with recovery, listen). */
	memset(&rec, 0, sizeof(rec));
	rec.kind = PROTO_OPENED;
	rec.ns = start_ns;
	if (proto_send(fd, &rec) < 0 || !h || !tid)
		_exit(3);
	for (uint32_t t = 0; t < T; t++)
		if (thread_init(&h[t], plan, port, fd, t) < 0 ||
		    pthread_create(&tid[t], NULL, client_thread, &h[t]) != 0) {
			fprintf(stderr, "torture: http client: cannot start "
			        "thread %u\n", t);
			_exit(4);
		}
	for (uint32_t t = 0; t < T; t++)
		pthread_join(tid[t], NULL);
	/* Every thread ended: the server went away, or an answer broke the
	 * contract (said on stderr and in a DONE record). */
	_exit(0);
}
