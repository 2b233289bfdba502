/*
 * loadgen.c -- an HTTP/1.1 (and, with --http3, HTTP/3) load generator
 * for keel-serve and its peers.
 *
 *   loadgen --port P [--host 127.0.0.1] [--conns 64] [--duration 5]
 *           [--pipeline 1] [--close] [--path /doc] [--put-ratio 0.0]
 *           [--value-size 16] [--if-match] [--rate R] [--warmup 1]
 *           [--label NAME] [--http3]
 *
 * One thread, one epoll set, N connections.  Closed loop by default: each
 * connection keeps --pipeline requests outstanding.  With --rate R the
 * requests are scheduled at fixed times (R per second over all
 * connections) and each latency is measured from the time the request was
 * MEANT to be sent, so a stalled server shows up in the tail instead of
 * slowing the client down (coordinated omission).  PUTs go to one key per
 * connection (/lg-<n>); with --if-match each PUT names the ETag the previous
 * answer gave, the way a careful client chains its updates, so a PUT waits
 * for the one before it.  --close sends "Connection: close" and reconnects
 * for every request.
 *
 * --http3 runs the same closed loop over QUIC (loadgen_h3.c): each of the
 * --conns connections keeps --pipeline requests in flight, each on its
 * own stream; --close makes a new connection (a full handshake) for every
 * request; --rate R as over TCP, at most --pipeline due requests in
 * flight on a connection.  The JSON is the same, "proto" says which.
 *
 * Output: one JSON object on stdout (answers, answers/s, status classes,
 * latency p50/p99/p99.9/max in microseconds from a log-linear histogram
 * with 1/32 relative resolution).
 *
 * --hostile MODE plays a client that costs a server memory (tests/http.sh
 * measures keel-serve's RSS meanwhile; docs/http.md): --conns connections
 * each do MODE, READY goes to stderr, they hold for --idle-hold seconds,
 * then what the server answered is counted.
 *   head      send the first 4 bytes of a request head a byte at a time
 *             (so the server reads four times), then nothing
 *   body      send a PUT head promising --value-size bytes and
 *             --send-bytes of the body at once, then one byte every 200 ms
 *   pipeline  pipeline --pipeline requests for --path and never read
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loadgen.h"

/* ---- log-linear histogram ------------------------------------------------- */

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS (64 * HIST_SUB)

struct hist {
	uint64_t n[HIST_BUCKETS];
	uint64_t count, max, sum;
};

static unsigned hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < 2 * HIST_SUB)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - HIST_SUB_BITS;
	return (shift + 1) * HIST_SUB + (unsigned)((v >> shift) - HIST_SUB);
}

/* The middle of bucket I's range. */
static uint64_t hist_value(unsigned i)
{
	unsigned shift, m;

	if (i < 2 * HIST_SUB)
		return i;
	shift = i / HIST_SUB - 1;
	m = i % HIST_SUB;
	return ((uint64_t)(HIST_SUB + m) << shift) + ((1ull << shift) >> 1);
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->n[hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

static uint64_t hist_pct(const struct hist *h, double p)
{
	uint64_t want = (uint64_t)(p / 100.0 * (double)h->count + 0.5), seen = 0;
	unsigned i;

	if (want == 0)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->n[i];
		if (seen >= want)
			return hist_value(i) > h->max ? h->max : hist_value(i);
	}
	return h->max;
}

/* ---- options and state ----------------------------------------------------- */

#define RING 1024 /* requests a connection may have scheduled or in flight */

struct conn {
	int fd, id, connected;
	int inflight;         /* sent, not answered                       */
	int put_inflight;     /* a chained PUT is waiting for its answer  */
	uint64_t sent_at[RING]; /* per outstanding request: time it counts from */
	uint8_t is_put[RING];
	unsigned head, tail;  /* ring of outstanding requests             */
	unsigned due;         /* rate mode: scheduled, not sent yet       */
	uint64_t due_at[RING];
	unsigned due_head;
	char etag[32];        /* last PUT's ETag, for If-Match chaining   */
	char last_etag[32];   /* ETag of the answer being parsed          */
	char in[16384];       /* response bytes not parsed yet            */
	size_t in_len;
	uint64_t body_left;   /* bytes of a body still to skip            */
	int in_body;          /* skipping a body                          */
	int body_status;      /* its answer's status                      */
	int body_close;       /* its answer closes the connection         */
	char *out;            /* request bytes not written yet            */
	size_t out_len, out_cap;
};

static struct loadgen_opts O = {
	.host = "127.0.0.1", .path = "/doc", .conns = 64, .pipeline = 1,
	.duration = 5, .warmup = 1, .value_size = 16,
};
static struct hist H;
static uint64_t answers, answers_total, status_class[6], errors, reconnects,
	dropped;
static int measuring, epfd;
/* the warmup's end (then: when measuring began), the window's end, and
 * when the run saw it had ended */
static uint64_t t_measure, t_end, t_stop;
static struct sockaddr_in addr;
static char *value;
static unsigned rng = 12345;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return (double)(rng >> 8) / (double)(1u << 24);
}

uint64_t loadgen_now(void)
{
	return now_ns();
}

double loadgen_random(void)
{
	return rnd();
}

void loadgen_window_start(uint64_t now)
{
	t_measure = now + (uint64_t)(O.warmup * 1e9);
	t_end = t_measure + (uint64_t)(O.duration * 1e9);
}

int loadgen_window(uint64_t now)
{
	if (!measuring && now >= t_measure) {
		measuring = 1;
		t_measure = now;
	}
	if (now < t_end)
		return 0;
	if (t_stop == 0)
		t_stop = now;
	return 1;
}

void loadgen_answer(uint64_t t0, int status)
{
	answers_total++;
	if (!measuring)
		return;
	hist_add(&H, loadgen_now() - t0);
	answers++;
	status_class[status / 100 < 6 ? status / 100 : 0]++;
}

void loadgen_error(uint64_t n)
{
	if (measuring)
		errors += n;
}

void loadgen_dropped(void)
{
	if (measuring)
		dropped++;
}

void loadgen_reconnect(void)
{
	reconnects++;
}

static void out_put(struct conn *c, const char *s, size_t n)
{
	if (c->out_len + n > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap * 2 : 4096;
		while (cap < c->out_len + n)
			cap *= 2;
		c->out = realloc(c->out, cap);
		if (c->out == NULL) {
			perror("loadgen: realloc");
			exit(1);
		}
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, s, n);
	c->out_len += n;
}

static int conn_open(struct conn *c)
{
	struct epoll_event ev;
	int one = 1;

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0 &&
	    errno != EINPROGRESS) {
		close(c->fd);
		return -1;
	}
	c->connected = 0;
	c->in_len = 0;
	c->in_body = 0;
	ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
	ev.data.ptr = c;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Requests in flight on a closed connection are lost: count them. */
static void conn_reset(struct conn *c, int failed)
{
	close(c->fd);
	if (failed && measuring)
		errors += (uint64_t)c->inflight + (c->inflight == 0);
	c->inflight = 0;
	c->put_inflight = 0;
	c->head = c->tail = 0;
	c->out_len = 0;
	reconnects++;
	if (conn_open(c) < 0) {
		perror("loadgen: reconnect");
		exit(1);
	}
}

/* Appends one request; T0 is the time its latency counts from. */
static void send_one(struct conn *c, uint64_t t0)
{
	char head[512];
	int n, put = O.put_ratio > 0 && rnd() < O.put_ratio;
	const char *cl = O.close_each ? "Connection: close\r\n" : "";

	if (put) {
		char im[64] = "";
		if (O.if_match && c->etag[0])
			snprintf(im, sizeof im, "If-Match: %s\r\n", c->etag);
		n = snprintf(head, sizeof head,
		             "PUT /lg-%d HTTP/1.1\r\nHost: %s\r\nContent-Length: %zu"
		             "\r\n%s%s\r\n", c->id, O.host, O.value_size, im, cl);
		out_put(c, head, (size_t)n);
		out_put(c, value, O.value_size);
		if (O.if_match)
			c->put_inflight = 1;
	} else {
		n = snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n",
		             O.path, O.host, cl);
		out_put(c, head, (size_t)n);
	}
	c->sent_at[c->tail % RING] = t0;
	c->is_put[c->tail % RING] = (uint8_t)put;
	c->tail++;
	c->inflight++;
}

static int can_send(const struct conn *c)
{
	if (!c->connected || c->put_inflight)
		return 0;
	if (O.close_each)
		return c->inflight == 0;
	return c->inflight < O.pipeline;
}

static void conn_flush(struct conn *c)
{
	size_t off = 0;

	while (off < c->out_len) {
		ssize_t n = write(c->fd, c->out + off, c->out_len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_reset(c, 1);
			break;
		}
		off += (size_t)n;
	}
	if (off && off < c->out_len)
		memmove(c->out, c->out + off, c->out_len - off);
	c->out_len -= off < c->out_len ? off : c->out_len;
}

/* Sends what this connection may send now. */
static void conn_fill(struct conn *c, uint64_t now)
{
	while (can_send(c)) {
		if (O.rate > 0) {
			if (c->due == 0)
				break;
			send_one(c, c->due_at[c->due_head % RING]);
			c->due_head++;
			c->due--;
		} else {
			send_one(c, now);
		}
	}
	conn_flush(c);
}

/* Case-insensitive search for header NAME in the head H[0..n). */
static const char *header(const char *h, size_t n, const char *name)
{
	size_t nl = strlen(name), i;

	for (i = 0; i + nl + 2 < n; i++)
		if (h[i] == '\n' && strncasecmp(h + i + 1, name, nl) == 0)
			return h + i + 1 + nl;
	return NULL;
}

/* One answer finished. */
static void answered(struct conn *c, int status, int closing)
{
	unsigned slot = c->head % RING;

	if (status == 100)
		return; /* interim: the final answer follows */
	if (c->inflight == 0)
		return;
	loadgen_answer(c->sent_at[slot], status);
	if (c->is_put[slot]) {
		/* chain from this PUT's tag; after a 412 start a new chain */
		c->put_inflight = 0;
		if (status / 100 == 2)
			memcpy(c->etag, c->last_etag, sizeof c->etag);
		else
			c->etag[0] = 0;
	}
	c->head++;
	c->inflight--;
	if (closing)
		conn_reset(c, 0);
}

/* Parses every complete answer in c->in.  Returns 0, -2 after a
 * reconnect (the server closed), -1 on garbage. */
static int conn_parse(struct conn *c)
{
	size_t off = 0;

	for (;;) {
		const char *end, *v, *h = c->in + off;
		size_t avail = c->in_len - off, hl;
		int status, closing, nobody;
		uint64_t cl = 0;

		if (c->in_body) {
			uint64_t take = avail < c->body_left ? avail : c->body_left;
			off += take;
			c->body_left -= take;
			if (c->body_left)
				break;
			c->in_body = 0;
			answered(c, c->body_status, c->body_close);
			if (c->body_close)
				return -2;
			continue;
		}
		end = memmem(h, avail, "\r\n\r\n", 4);
		if (end == NULL) {
			if (avail >= sizeof c->in - 1)
				return -1;
			break;
		}
		hl = (size_t)(end - h) + 4;
		if (avail < 12 || memcmp(h, "HTTP/1.", 7) != 0)
			return -1;
		status = atoi(h + 9);
		if ((v = header(h, hl, "content-length:")) != NULL)
			cl = strtoull(v, NULL, 10);
		closing = (v = header(h, hl, "connection:")) != NULL &&
		          strncasecmp(v + strspn(v, " "), "close", 5) == 0;
		c->last_etag[0] = 0;
		if ((v = header(h, hl, "etag:")) != NULL) {
			size_t k = 0;
			v += strspn(v, " ");
			while (k + 1 < sizeof c->last_etag && v[k] != '\r')
				c->last_etag[k] = v[k], k++;
			c->last_etag[k] = 0;
		}
		nobody = status == 204 || status == 304 || status / 100 == 1;
		off += hl;
		if (!nobody && cl > 0) {
			/* the answer counts when its last byte is in */
			c->in_body = 1;
			c->body_left = cl;
			c->body_status = status;
			c->body_close = closing;
			continue;
		}
		answered(c, status, closing);
		if (closing)
			return -2;
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
	return 0;
}

static void conn_read(struct conn *c)
{
	for (;;) {
		ssize_t n = read(c->fd, c->in + c->in_len, sizeof c->in - c->in_len);
		if (n > 0) {
			c->in_len += (size_t)n;
			int rc = conn_parse(c);
			if (rc == -2)
				return; /* reconnected */
			if (rc < 0) {
				conn_reset(c, 1);
				return;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		conn_reset(c, 1); /* EOF or error with answers missing */
		return;
	}
}

static void usage(FILE *f)
{
	fputs("usage: loadgen --port P [--host 127.0.0.1] [--conns 64]"
	      " [--duration 5] [--warmup 1]\n"
	      "               [--pipeline 1] [--close] [--path /doc]"
	      " [--put-ratio 0] [--value-size 16]\n"
	      "               [--if-match] [--rate R] [--label NAME]\n"
	      "       loadgen --http3 --port P [the flags above, --host aside;"
	      " --rate not with --close]\n"
	      "  the same load over QUIC (HTTP/3) to 127.0.0.1: --pipeline K"
	      " streams\n"
	      "  in flight per connection; --close: a new connection per"
	      " request\n"
	      "       loadgen --port P --conns N --idle-hold SECS [--path /doc]\n"
	      "  opens N connections, prints READY on stderr, holds them idle,\n"
	      "  then sends one GET on each and counts the 2xx answers.\n"
	      "       loadgen --port P --conns N --hostile head|body|pipeline"
	      " --idle-hold SECS\n"
	      "               [--value-size B --send-bytes B] [--pipeline K"
	      " --path /x]\n"
	      "  a client that costs the server memory (see the comment at the"
	      " top)\n"
	      "Prints one JSON object: answers/s and latency p50/p99/p99.9/max"
	      " (us).\n", f);
}

static void parse_opts(int argc, char **argv)
{
	static const struct option lo[] = {
		{"host", 1, NULL, 'H'},      {"port", 1, NULL, 'p'},
		{"conns", 1, NULL, 'c'},     {"duration", 1, NULL, 'd'},
		{"warmup", 1, NULL, 'w'},    {"pipeline", 1, NULL, 'P'},
		{"close", 0, NULL, 'C'},     {"path", 1, NULL, 'u'},
		{"put-ratio", 1, NULL, 'r'}, {"value-size", 1, NULL, 's'},
		{"if-match", 0, NULL, 'm'},  {"rate", 1, NULL, 'R'},
		{"label", 1, NULL, 'l'},     {"help", 0, NULL, 'h'},
		{"idle-hold", 1, NULL, 'I'},
		{"hostile", 1, NULL, 'X'},   {"send-bytes", 1, NULL, 'S'},
		{"http3", 0, NULL, '3'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'H': O.host = optarg; break;
		case 'p': O.port = atoi(optarg); break;
		case 'c': O.conns = atoi(optarg); break;
		case 'd': O.duration = atof(optarg); break;
		case 'w': O.warmup = atof(optarg); break;
		case 'P': O.pipeline = atoi(optarg); break;
		case 'C': O.close_each = 1; break;
		case 'u': O.path = optarg; break;
		case 'r': O.put_ratio = atof(optarg); break;
		case 's': O.value_size = (size_t)atol(optarg); break;
		case 'm': O.if_match = 1; break;
		case 'R': O.rate = atof(optarg); break;
		case 'l': O.label = optarg; break;
		case 'I': O.idle_hold = atof(optarg); break;
		case 'X': O.hostile = optarg; break;
		case 'S': O.send_bytes = (size_t)atol(optarg); break;
		case '3': O.http3 = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (O.hostile && strcmp(O.hostile, "head") != 0 &&
	    strcmp(O.hostile, "body") != 0 && strcmp(O.hostile, "pipeline") != 0) {
		fprintf(stderr, "loadgen: --hostile '%s': expected head, body or "
		                "pipeline\n", O.hostile);
		exit(2);
	}
	if (O.http3 && (O.hostile || O.idle_hold > 0 ||
	                strcmp(O.host, "127.0.0.1") != 0 ||
	                (O.rate > 0 && O.close_each))) {
		fprintf(stderr, "loadgen: --http3 runs to 127.0.0.1 only (no "
		                "--idle-hold, --hostile, --host; --rate without "
		                "--close)\n");
		exit(2);
	}
	if (O.port <= 0 || O.conns < 1 || O.pipeline < 1 ||
	    (O.pipeline > RING / 2 && !O.hostile) || O.duration <= 0 ||
	    optind != argc) {
		usage(stderr);
		exit(2);
	}
}

/* Rate mode: hands every request whose time has come to a connection,
 * round robin, as "due" with the time it was meant to go out. */
static void schedule(struct conn *cs, uint64_t t0, uint64_t now,
                     uint64_t *seq)
{
	double gap = 1e9 / O.rate;

	for (;;) {
		uint64_t at = t0 + (uint64_t)((double)*seq * gap);
		struct conn *c = &cs[*seq % (uint64_t)O.conns];
		if (at > now)
			return;
		if (c->due < RING)
			c->due_at[(c->due_head + c->due++) % RING] = at;
		else if (measuring)
			dropped++;
		(*seq)++;
		conn_fill(c, now);
	}
}

static void event(struct conn *c, uint32_t evs, uint64_t now)
{
	if (!c->connected) {
		int err = 0;
		socklen_t len = sizeof err;
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err || (evs & (EPOLLERR | EPOLLHUP))) {
			if (measuring)
				errors++;
			usleep(1000); /* refused: do not spin */
			conn_reset(c, 0);
			return;
		}
		c->connected = 1;
	}
	if (evs & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_read(c);
	conn_fill(c, now);
}

static void report(double secs)
{
	printf("{\"label\":\"%s\",\"conns\":%d,\"pipeline\":%d,\"close\":%s,"
	       "\"path\":\"%s\",\"put_ratio\":%g,\"value_size\":%zu,"
	       "\"if_match\":%s,\"rate\":%g,\"duration_s\":%.3f,"
	       "\"answers\":%llu,\"answers_total\":%llu,\"answers_per_s\":%.1f,"
	       "\"status\":{\"1xx\":%llu,\"2xx\":%llu,\"3xx\":%llu,\"4xx\":%llu,"
	       "\"5xx\":%llu,\"other\":%llu},\"errors\":%llu,\"dropped\":%llu,"
	       "\"reconnects\":%llu,\"latency_us\":{\"p50\":%.1f,\"p99\":%.1f,"
	       "\"p999\":%.1f,\"max\":%.1f,\"mean\":%.1f},\"proto\":\"%s\"}\n",
	       O.label ? O.label : "", O.conns, O.pipeline,
	       O.close_each ? "true" : "false", O.path, O.put_ratio,
	       O.value_size, O.if_match ? "true" : "false", O.rate, secs,
	       (unsigned long long)answers, (unsigned long long)answers_total,
	       (double)answers / secs,
	       (unsigned long long)status_class[1],
	       (unsigned long long)status_class[2],
	       (unsigned long long)status_class[3],
	       (unsigned long long)status_class[4],
	       (unsigned long long)status_class[5],
	       (unsigned long long)status_class[0], (unsigned long long)errors,
	       (unsigned long long)dropped, (unsigned long long)reconnects,
	       hist_pct(&H, 50) / 1e3, hist_pct(&H, 99) / 1e3,
	       hist_pct(&H, 99.9) / 1e3, H.max / 1e3,
	       H.count ? (double)H.sum / (double)H.count / 1e3 : 0.0,
	       O.http3 ? "h3" : "http/1.1");
}

/*
 * --idle-hold: the memory test.  Opens --conns connections (500 connecting
 * at a time, so a listen backlog never overflows), says READY on stderr,
 * keeps them idle for the hold time while the caller measures the server,
 * then sends one GET on every connection and counts the answers.
 */
static int idle_main(struct conn *cs)
{
	struct epoll_event evs[512];
	int i, n, opened = 0, settled = 0, good = 0;
	uint64_t deadline = now_ns() + 60ull * 1000000000ull;

	while ((opened < O.conns || settled < opened) && now_ns() < deadline) {
		while (opened < O.conns && opened - settled < 500) {
			cs[opened].id = opened;
			if (conn_open(&cs[opened]) < 0) {
				perror("loadgen: connect");
				return 1;
			}
			opened++;
		}
		n = epoll_wait(epfd, evs, 512, 100);
		for (i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			int err = 0;
			socklen_t len = sizeof err;
			if (c->connected)
				continue;
			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
			c->connected = err ? -1 : 1;
			good += !err;
			settled++;
		}
	}
	fprintf(stderr, "READY %d\n", good);
	fflush(stderr);
	usleep((useconds_t)(O.idle_hold * 1e6));
	measuring = 1;
	for (i = 0; i < opened; i++) {
		if (cs[i].connected == 1) {
			send_one(&cs[i], now_ns());
			conn_flush(&cs[i]);
		}
	}
	deadline = now_ns() + 30ull * 1000000000ull;
	while (answers < (uint64_t)good && now_ns() < deadline) {
		n = epoll_wait(epfd, evs, 512, 100);
		for (i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				conn_read(c);
			conn_flush(c);
		}
	}
	printf("{\"label\":\"%s\",\"idle_conns\":%d,\"connected\":%d,"
	       "\"answered\":%llu,\"answered_2xx\":%llu,\"errors\":%llu,"
	       "\"latency_us\":{\"p50\":%.1f,\"max\":%.1f}}\n",
	       O.label ? O.label : "", O.conns, good,
	       (unsigned long long)answers, (unsigned long long)status_class[2],
	       (unsigned long long)errors, hist_pct(&H, 50) / 1e3, H.max / 1e3);
	for (i = 0; i < opened; i++) {
		close(cs[i].fd);
		free(cs[i].out);
	}
	free(cs);
	free(value);
	return 0;
}

/* ---- --hostile ------------------------------------------------------------- */

/* Writes P[0..N) on the non-blocking FD for at most SECS.  Returns the
 * bytes written (fewer when the server stopped reading), -1 on an error. */
static ssize_t send_for(int fd, const char *p, size_t n, double secs)
{
	uint64_t until = now_ns() + (uint64_t)(secs * 1e9);
	size_t done = 0;

	while (done < n && now_ns() < until) {
		ssize_t w = send(fd, p + done, n - done, MSG_NOSIGNAL);
		if (w > 0) {
			done += (size_t)w;
		} else if (w < 0 && errno == EAGAIN) {
			usleep(1000);
		} else if (w < 0 && errno != EINTR) {
			return done ? (ssize_t)done : -1;
		}
	}
	return (ssize_t)done;
}

/* The status of the first answer waiting on FD (0: none), and whether the
 * server closed its side after it. */
static int answer_status(int fd, int *closed)
{
	char buf[4096];
	ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
	int status = 0, i;

	*closed = n == 0;
	if (n > 12 && memcmp(buf, "HTTP/1.1 ", 9) == 0)
		status = atoi(buf + 9);
	for (i = 0; n > 0 && i < 1000; i++) /* read on to see the FIN */
		n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN))
		*closed = 1;
	return status;
}

static int hostile_main(void)
{
	int *fds = calloc((size_t)O.conns, sizeof *fds);
	char head[512], *req = NULL;
	size_t reqlen = 0;
	uint64_t sent = 0, end;
	int i, k, connected = 0, closed = 0, st408 = 0, st503 = 0, other = 0;
	int mode = O.hostile[0]; /* h, b or p */

	if (fds == NULL)
		return 1;
	if (mode == 'p') {
		int hl = snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n",
		                 O.path);
		reqlen = (size_t)hl * (size_t)O.pipeline;
		req = malloc(reqlen);
		for (i = 0; req && i < O.pipeline; i++)
			memcpy(req + (size_t)i * (size_t)hl, head, (size_t)hl);
	} else if (mode == 'b') {
		int hl = snprintf(head, sizeof head, "PUT /hostile HTTP/1.1\r\nHost: a"
		                 "\r\nContent-Length: %zu\r\n\r\n", O.value_size);
		reqlen = (size_t)hl + O.send_bytes;
		req = malloc(reqlen);
		if (req) {
			memcpy(req, head, (size_t)hl);
			memset(req + hl, 'b', O.send_bytes);
		}
	} else {
		req = strdup("G"); /* "ET " follows once all are connected */
		reqlen = 1;
	}
	if (req == NULL)
		return 1;
	for (i = 0; i < O.conns; i++) {
		ssize_t w;
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&addr,
		                          sizeof addr) < 0) {
			perror("loadgen: connect");
			return 1;
		}
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
		connected++;
		w = send_for(fds[i], req, reqlen, 10);
		if (w > 0)
			sent += (uint64_t)w;
	}
	for (k = 1; mode == 'h' && k < 4; k++) {
		usleep(100000);
		for (i = 0; i < O.conns; i++)
			if (send_for(fds[i], "GET " + k, 1, 1) == 1)
				sent++;
	}
	fprintf(stderr, "READY %d\n", connected);
	fflush(stderr);
	end = now_ns() + (uint64_t)(O.idle_hold * 1e9);
	while (now_ns() < end) {
		usleep(200000);
		for (i = 0; i < O.conns; i++) {
			int gone = 0, status = 0;
			if (fds[i] < 0 || mode == 'p')
				continue;
			/* an answer ends this client: count it, and the close */
			status = answer_status(fds[i], &gone);
			if (status == 0 && !gone && mode == 'b' &&
			    send(fds[i], "b", 1, MSG_NOSIGNAL) < 0 && errno != EAGAIN)
				gone = 1;
			if (status == 0 && !gone)
				continue;
			st408 += status == 408;
			st503 += status == 503;
			other += status != 0 && status != 408 && status != 503;
			if (!gone) /* the FIN may follow the answer: wait for it */
				for (k = 0; k < 50 && !gone; k++) {
					usleep(20000);
					answer_status(fds[i], &gone);
				}
			closed += gone;
			close(fds[i]);
			fds[i] = -1;
		}
	}
	for (i = 0; i < O.conns; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	printf("{\"label\":\"%s\",\"hostile\":\"%s\",\"conns\":%d,"
	       "\"connected\":%d,\"bytes_sent\":%llu,\"closed_by_server\":%d,"
	       "\"status\":{\"408\":%d,\"503\":%d,\"other\":%d}}\n",
	       O.label ? O.label : "", O.hostile, O.conns, connected,
	       (unsigned long long)sent, closed, st408, st503, other);
	free(req);
	free(fds);
	return 0;
}

/* The HTTP/1.1 run: --conns connections, closed loop or --rate, until
 * the measured window ends. */
static void tcp_main(struct conn *cs)
{
	struct epoll_event evs[512];
	uint64_t t0, seq = 0, now;
	int i;

	for (i = 0; i < O.conns; i++) {
		cs[i].id = i;
		if (conn_open(&cs[i]) < 0) {
			perror("loadgen: connect");
			exit(1);
		}
	}
	t0 = now_ns();
	loadgen_window_start(t0);
	for (;;) {
		struct timespec wait = {0, 100000000};
		int n;

		if (O.rate > 0) {
			/* sleep exactly until the next request is due: a coarse tick
			 * would add up to its length to every latency */
			uint64_t next = t0 + (uint64_t)((double)seq * 1e9 / O.rate);
			now = now_ns();
			wait.tv_nsec = next > now ? (long)(next - now) : 0;
			if (wait.tv_nsec > 100000000)
				wait.tv_nsec = 100000000;
		}
		n = epoll_pwait2(epfd, evs, 512, &wait, NULL);

		now = now_ns();
		if (loadgen_window(now))
			break;
		for (i = 0; i < n; i++)
			event(evs[i].data.ptr, evs[i].events, now);
		if (O.rate > 0)
			schedule(cs, t0, now, &seq);
	}
	for (i = 0; i < O.conns; i++) {
		close(cs[i].fd);
		free(cs[i].out);
	}
}

int main(int argc, char **argv)
{
	struct conn *cs;
	int i, rc = 0;

	parse_opts(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	value = malloc(O.value_size + 1);
	cs = calloc((size_t)O.conns, sizeof *cs);
	if (value == NULL || cs == NULL) {
		perror("loadgen");
		return 1;
	}
	memset(value, 'v', O.value_size);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)O.port);
	if (inet_pton(AF_INET, O.host, &addr.sin_addr) != 1) {
		fprintf(stderr, "loadgen: --host must be an IPv4 address\n");
		return 2;
	}
	epfd = epoll_create1(0);
	if (O.hostile) {
		i = hostile_main();
		fflush(stdout);
		free(cs);
		free(value);
		close(epfd);
		return i;
	}
	if (O.idle_hold > 0)
		return idle_main(cs);
	if (O.http3)
		rc = loadgen_h3_run(&O, value);
	else
		tcp_main(cs);
	if (O.http3 && rc == 0 && answers_total == 0) {
		fprintf(stderr, "loadgen: no answer over HTTP/3\n");
		rc = 1;
	}
	report(t_stop > t_measure ? (double)(t_stop - t_measure) / 1e9 : 1e-9);
	free(cs);
	free(value);
	close(epfd);
	return rc;
}
