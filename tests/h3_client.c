/*
 * h3_client.c -- the smallest HTTP/3 client that tests/h3.sh needs: one
 * request over one fresh QUIC v1 connection (ngtcp2 0.12, GnuTLS,
 * nghttp3 0.8), to 127.0.0.1.
 *
 *   h3-client PORT METHOD PATH [-H 'name: value']... [-d BODY | -s]
 *             [-k MS] [-b] [-n N -c K | -R N | -N N | -I N] [-i MS [-j N]]
 *             [-x] [-F] [-S repeat|distinct]
 *             [--session FILE [--early [--replay]]]
 *
 * Prints the answer as "status N", then one "name: value" line per field,
 * a blank line, and the body; exits 0 when a whole answer came, 1 when
 * the connection failed or the server reset the stream (its code on
 * stderr), 2 on bad arguments, 3 when nothing came within
 * H3C_DEADLINE_MS.  The server's certificate is not checked (the tests
 * make their own); -F says which it was, "h3-client: certificate HEX" on
 * stderr (its SHA-256, lower-case hex, as openssl x509 -fingerprint has
 * it without the colons).  -s stalls: the request's fields go out, its body
 * never comes (the server's --body-min-rate must cut it).  -k MS keeps
 * the connection open, idle, for MS after the answer (memory figures).
 * A Retry from the server is followed (ngtcp2 does it) and said on
 * stderr ("followed a Retry"); -b sends a forged Retry token in the
 * first Initial, and a server that closes the connection for it makes
 * "the server closed the connection" on stderr.  -i MS sends the first
 * Initial and waits for the server's first datagram (so the server has
 * made the connection; a Retry is followed first), says "half open",
 * then stays silent for MS and exits 0: a handshake the server holds half
 * done (its Retry budget, its share of --max-handshakes); 3 when nothing
 * came within H3C_DEADLINE_MS.  KEEL_SOURCE=ADDR sends from that local
 * address (torture/quic_conn.h).
 *
 * -i MS -j N (tests/h3.sh's QUIC burst, bench/http/fairness.sh): N such
 * handshakes from one process, each on its own socket, their first
 * Initials sent together; each follows its Retry and sends its Initial
 * again when ngtcp2's timer says it was lost.  Once every one has
 * heard from the server or H3C_DEADLINE_MS has passed, says "half open
 * K of N" (K: those the server made a connection for), stays silent for
 * MS and exits 0 (3 when K is 0).
 *
 * -S repeat|distinct (tests/h3.sh): our own control stream instead of
 * nghttp3's, its SETTINGS frame written byte by byte, sent before the
 * request: with "repeat" it names one identifier twice
 * (QPACK_BLOCKED_STREAMS, 0x07), which RFC 9114 7.2.4.1 makes a
 * connection error of type H3_SETTINGS_ERROR (0x109): the server's close
 * is said on stderr as for -R, exit status 1.  "distinct" names two
 * identifiers once each, with the same values: the request is answered.
 *
 * -n N -c K (a quick check by hand; bench/http/h3.sh measures with
 * loadgen --http3): N requests over the one connection, K at
 * a time (new streams as answers end), nothing printed of the answers;
 * one line at the end, "N requests, A answered, S 2xx in T s: R/s",
 * timed from the handshake's end to the last answer.  The 10 s deadline
 * then counts from the latest answer.
 *
 * -R N: rapid reset, N requests one after another, each stream reset
 * (H3_REQUEST_CANCELLED) as soon as its HEADERS went out; the same line at
 * the end as -n.  A server that closes the connection for it is said on
 * stderr with its error code ("the server closed the connection (error
 * 0x107) after K requests": H3_EXCESSIVE_LOAD), exit status 1.
 *
 * -N N (bench/http/h3.sh's resumed figures, new connections): N
 * connections one after another, each a handshake and one request, closed with H3_NO_ERROR
 * once its answer is whole; one line at the end, "N connections, A
 * answered, S 2xx in T s: R/s", timed from the first connection's start
 * to the last one's close.  Each connection has its own 10 s deadline.
 * Without --session each is a full 1-RTT handshake; with it each resumes
 * the session the one before it got (the first, FILE's, if there is
 * one), and a second line says "R resumed, E early data accepted".
 *
 * --session FILE: resume the session saved in FILE (when FILE exists;
 * torture/quic_conn.h has its layout), and save the session this
 * connection gets to FILE: the client waits for the server's session
 * ticket as for the answer (none within H3C_DEADLINE_MS: exit status 3,
 * "no session ticket" on stderr).  Says "resumed" on stderr when the server
 * took the ticket.  A FILE that is not a saved session is refused
 * ("h3-client: FILE: not a saved session ..."), exit status 2.  --early
 * sends the request as early data (0-RTT) with the resumed session, and
 * says on stderr "early data accepted", or "early data rejected" when
 * the server refused it (the request then goes again once the handshake
 * is done, as 1-RTT data).
 *
 * --replay (with --early) does what anyone who saw the first flight can:
 * once the answer came it closes the connection, sends its first flight
 * again from another socket, then a 30-byte datagram for no connection,
 * whose stateless reset the server sends after whatever the replay drew
 * (serve_h3.c handles a socket's datagrams in order and writes a
 * connection's before it answers another's).  Says on stderr
 * "replay: N long-header packets" (the server made a connection for it)
 * and "replay: no 1-RTT packet" or "replay: a 1-RTT packet" (only early
 * data the server took can draw one before a handshake that never
 * completes).  Exit status 3 when the reset does not come.
 *
 * -I N (bench/http/h3.sh, idle): N connections held at once, made one
 * after another, each with its one request answered (nothing printed of
 * it); then "open N" and every one stays connected, idle, for -k MS
 * (acknowledgements and timers still served), then each is closed with
 * H3_NO_ERROR.  Exits 0 when all N were answered 2xx.
 *
 * -x (tests/h3.sh, the closing period): once the answer is whole, a
 * SETTINGS frame on a new request stream, which HTTP/3 forbids there
 * (RFC 9114 7.2.4: H3_FRAME_UNEXPECTED, a connection error), makes the
 * server close the connection; its CONNECTION_CLOSE datagram is kept.
 * Then a short-header packet for the connection, as a client that
 * missed the close would send one: "close again" when the same datagram
 * comes back, "reply N" for another, "no reply" within 2 s.  Then such a
 * packet every 250 ms, up to 10 s, until one is answered with something
 * else than the close: "then a stateless reset" (a short header that is
 * not the close: the closing period is over) or "no stateless reset".
 * Exits 0 when both came.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "quic_conn.h"

#define H3C_DEADLINE_MS 10000
#define H3C_FIELDS_MAX 16
#define H3C_FLIGHT_MAX 4   /* datagrams of a first flight --replay keeps */
#define H3C_PROBE_LEN 30   /* --replay's probe: its reset is 29 bytes,
                              shorter than any 1-RTT packet of the server
                              (1 + 16 DCID + 4 + 16 tag at least) */

struct client {
	quic_conn q; /* the connection (torture/quic_conn.h) */
	nghttp3_nv req[H3C_FIELDS_MAX];
	size_t nreq;
	const char *body;
	size_t blen;
	int stall;            /* -s: the body never comes               */
	int hold_ms;          /* -k: stay connected this long after it  */
	int bad_token;        /* -b: a forged Retry token in the Initial */
	int bench_n, bench_c; /* -n, -c: requests, at a time (0: one)    */
	int rapid;            /* -R: each request reset once sent        */
	int sent, answered, ok; /* bench: submitted, ended, 2xx           */
	ngtcp2_tstamp t0, t1; /* bench: the handshake's end, last answer */
	int retried;          /* Retries followed                        */
	const char *session_path; /* --session: resume from, save to      */
	quic_session sess;    /* the session resumed (sess.tls.data: one) */
	int early;            /* --early: the request as 0-RTT data      */
	int resumed;          /* the handshake resumed sess              */
	int early_rejected;   /* early data offered, the server refused  */
	int replay;           /* --replay: send the first flight again   */
	uint8_t flight[H3C_FLIGHT_MAX][QUIC_CONN_PKT]; /* --replay's copy  */
	size_t flight_len[H3C_FLIGHT_MAX];
	int flight_n;
	int64_t stream;
	int started, done, failed;
	const uint8_t *ctrl_raw;  /* -S: our control stream's bytes       */
	size_t ctrl_len, ctrl_off; /* ... how many, how many sent          */
	int64_t ctrl_id;          /* ... its stream (-1: not open yet)     */
};

/* ---- HTTP/3 ---------------------------------------------------------- */

static int on_header(nghttp3_conn *h, int64_t id, int32_t token,
                     nghttp3_rcbuf *name, nghttp3_rcbuf *value, uint8_t flags,
                     void *arg, void *sarg)
{
	nghttp3_vec n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);

	(void)h, (void)id, (void)token, (void)flags, (void)sarg;
	if (((struct client *)arg)->bench_n) {
		if (n.len == 7 && memcmp(n.base, ":status", 7) == 0 && v.len &&
		    v.base[0] == '2')
			((struct client *)arg)->ok++;
		return 0;
	}
	if (n.len == 7 && memcmp(n.base, ":status", 7) == 0)
		printf("status %.*s\n", (int)v.len, v.base);
	else
		printf("%.*s: %.*s\n", (int)n.len, n.base, (int)v.len, v.base);
	return 0;
}

static int on_end_headers(nghttp3_conn *h, int64_t id, int fin, void *arg,
                          void *sarg)
{
	(void)h, (void)id, (void)fin, (void)sarg;
	if (((struct client *)arg)->bench_n == 0)
		printf("\n");
	return 0;
}

static int on_data(nghttp3_conn *h, int64_t id, const uint8_t *data,
                   size_t len, void *arg, void *sarg)
{
	struct client *cl = arg;

	(void)h, (void)sarg;
	if (cl->bench_n == 0)
		fwrite(data, 1, len, stdout);
	quic_conn_credit(&cl->q, id, len);
	return 0;
}

static int on_consume(nghttp3_conn *h, int64_t id, size_t n, void *arg,
                      void *sarg)
{
	struct client *cl = arg;

	(void)h, (void)sarg;
	quic_conn_credit(&cl->q, id, n);
	return 0;
}

static int on_end_stream(nghttp3_conn *h, int64_t id, void *arg, void *sarg)
{
	struct client *cl = arg;

	(void)h, (void)id, (void)sarg;
	if (cl->bench_n == 0) {
		cl->done = 1;
		return 0;
	}
	cl->answered++;
	cl->t1 = quic_conn_now();
	cl->done = cl->answered >= cl->bench_n;
	return 0;
}

static int on_reset(nghttp3_conn *h, int64_t id, uint64_t code, void *arg,
                    void *sarg)
{
	(void)h, (void)id, (void)sarg;
	fprintf(stderr, "h3-client: stream reset, code 0x%llx\n",
	        (unsigned long long)code);
	((struct client *)arg)->failed = 1;
	return 0;
}

static nghttp3_ssize on_read_body(nghttp3_conn *h, int64_t id,
                                  nghttp3_vec *vec, size_t cnt,
                                  uint32_t *pflags, void *arg, void *sarg)
{
	struct client *cl = arg;

	(void)h, (void)id, (void)cnt, (void)sarg;
	if (cl->stall)
		return NGHTTP3_ERR_WOULDBLOCK;
	*pflags |= NGHTTP3_DATA_FLAG_EOF;
	vec[0].base = (uint8_t *)cl->body;
	vec[0].len = cl->blen;
	return 1;
}

static int client_write(struct client *cl);

/* Submits requests on new streams while fewer than -c are in flight
 * and -n are not all sent, as far as the server's stream limit lets.
 * Returns 0 or -1. */
static int requests_top_up(struct client *cl)
{
	static const nghttp3_data_reader reader = {on_read_body};
	int want = cl->bench_n ? cl->bench_n : 1, at_once = cl->bench_c;
	int64_t id;
	int rv;

	if (at_once < 1)
		at_once = 1;
	while (cl->sent < want && cl->sent - cl->answered < at_once) {
		rv = ngtcp2_conn_open_bidi_stream(cl->q.quic, &id, NULL);
		if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED)
			return 0; /* more when the server raises the limit */
		if (rv != 0 ||
		    nghttp3_conn_submit_request(cl->q.http, id, cl->req, cl->nreq,
		                                cl->body || cl->stall ? &reader
		                                                      : NULL,
		                                NULL) != 0)
			return -1;
		if (cl->sent++ == 0)
			cl->stream = id;
		if (cl->rapid) {
			/* its HEADERS go out, then the stream is reset at
			 * once: "rapid reset" (it counts as ended) */
			if (client_write(cl) < 0)
				return -1;
			nghttp3_conn_shutdown_stream_write(cl->q.http, id);
			if (ngtcp2_conn_shutdown_stream(
			        cl->q.quic, id, NGHTTP3_H3_REQUEST_CANCELLED) != 0)
				return -1;
			cl->answered++;
			cl->t1 = quic_conn_now();
			cl->done = cl->answered >= cl->bench_n;
		}
	}
	return 0;
}

/* -S: nghttp3 with its QPACK streams but no control stream; ours is
 * opened first (stream 2) and client_write sends CL->ctrl_raw on it
 * before what nghttp3 has.  0 or -1. */
static int http_start_raw(struct client *cl, const nghttp3_callbacks *cb)
{
	nghttp3_settings settings;
	int64_t qenc, qdec;

	nghttp3_settings_default(&settings);
	if (nghttp3_conn_client_new(&cl->q.http, cb, &settings, NULL, cl) != 0 ||
	    ngtcp2_conn_open_uni_stream(cl->q.quic, &cl->ctrl_id, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(cl->q.quic, &qenc, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(cl->q.quic, &qdec, NULL) != 0 ||
	    nghttp3_conn_bind_qpack_streams(cl->q.http, qenc, qdec) != 0)
		return -1;
	return 0;
}

/* The handshake is done: our control and QPACK streams, then the
 * request on the first bidirectional stream (-n: the first -c). */
static int request_start(struct client *cl)
{
	static const nghttp3_callbacks cb = {
		.recv_data = on_data,
		.deferred_consume = on_consume,
		.recv_header = on_header,
		.end_headers = on_end_headers,
		.end_stream = on_end_stream,
		.reset_stream = on_reset,
	};

	if (cl->started)
		return 0;
	cl->started = 1;
	if ((cl->ctrl_raw ? http_start_raw(cl, &cb)
	                  : quic_conn_http_start(&cl->q, &cb, cl)) < 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	cl->t0 = quic_conn_now();
	return requests_top_up(cl) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

/* ---- QUIC ------------------------------------------------------------ */

/* The handshake is done.  Early data the server refused is forgotten
 * (ngtcp2 drops the streams; nghttp3 goes with them) and the request
 * starts again, now as 1-RTT data. */
static int on_handshake(ngtcp2_conn *q, void *arg)
{
	struct client *cl = arg;

	cl->resumed = quic_conn_resumed(&cl->q);
	if (cl->q.early && !quic_conn_early_accepted(&cl->q)) {
		cl->early_rejected = 1;
		if (ngtcp2_conn_early_data_rejected(q) != 0)
			return NGTCP2_ERR_CALLBACK_FAILURE;
		nghttp3_conn_del(cl->q.http);
		cl->q.http = NULL;
		cl->started = cl->sent = cl->answered = cl->ok = cl->done = 0;
	}
	return request_start(cl);
}

static int on_stream_data(ngtcp2_conn *q, uint32_t flags, int64_t id,
                          uint64_t off, const uint8_t *data, size_t len,
                          void *arg, void *sarg)
{
	struct client *cl = arg;

	(void)q, (void)off, (void)sarg;
	return quic_conn_stream_data(&cl->q, id, data, len,
	                             (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0) < 0
	           ? NGTCP2_ERR_CALLBACK_FAILURE
	           : 0;
}

static int on_acked(ngtcp2_conn *q, int64_t id, uint64_t off, uint64_t len,
                    void *arg, void *sarg)
{
	struct client *cl = arg;

	(void)q, (void)off, (void)sarg;
	return quic_conn_acked(&cl->q, id, len) < 0 ? NGTCP2_ERR_CALLBACK_FAILURE
	                                            : 0;
}

static int on_stream_close(ngtcp2_conn *q, uint32_t flags, int64_t id,
                           uint64_t code, void *arg, void *sarg)
{
	struct client *cl = arg;

	(void)q, (void)sarg;
	if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
		code = NGHTTP3_H3_NO_ERROR;
	if (cl->q.http)
		nghttp3_conn_close_stream(cl->q.http, id, code);
	return 0;
}

static int on_stream_reset(ngtcp2_conn *q, int64_t id, uint64_t size,
                           uint64_t code, void *arg, void *sarg)
{
	struct client *cl = arg;

	(void)q, (void)size, (void)sarg;
	if ((id == cl->stream || cl->bench_n) && !cl->done && !cl->rapid) {
		fprintf(stderr, "h3-client: stream reset, code 0x%llx\n",
		        (unsigned long long)code);
		cl->failed = 1;
	}
	if (cl->q.http)
		nghttp3_conn_shutdown_stream_read(cl->q.http, id);
	return 0;
}

static int on_max_stream_data(ngtcp2_conn *q, int64_t id, uint64_t max,
                              void *arg, void *sarg)
{
	struct client *cl = arg;

	(void)q, (void)max, (void)sarg;
	if (cl->q.http)
		nghttp3_conn_unblock_stream(cl->q.http, id);
	return 0;
}

/* The server asked us to prove our address: ngtcp2 sends the Initial
 * again with its token; we count it for the tests. */
static int on_retry(ngtcp2_conn *conn, const ngtcp2_pkt_hd *hd, void *arg)
{
	struct client *cl = arg;

	cl->retried++;
	return ngtcp2_crypto_recv_retry_cb(conn, hd, arg);
}

/* The socket, the QUIC connection and its TLS session (the server's
 * certificate not checked).  Returns 0 or -1. */
static int client_open(struct client *cl, int port)
{
	static uint8_t forged[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
	ngtcp2_vec token = {forged, sizeof forged};
	ngtcp2_callbacks cb;

	quic_conn_callbacks(&cb);
	cb.handshake_completed = on_handshake;
	cb.recv_stream_data = on_stream_data;
	cb.acked_stream_data_offset = on_acked;
	cb.stream_close = on_stream_close;
	cb.recv_retry = on_retry;
	cb.stream_reset = on_stream_reset;
	cb.extend_max_stream_data = on_max_stream_data;
	if (cl->bad_token) { /* the Retry magic, then what no key sealed */
		quic_conn_random(forged, sizeof forged);
		forged[0] = NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY;
	}
	if (cl->sess.tls.data == NULL)
		return quic_conn_open(&cl->q, (uint16_t)port, NULL, &cb,
		                      cl->bad_token ? &token : NULL, cl);
	if (quic_conn_open_resumed(&cl->q, (uint16_t)port, NULL, &cb, &cl->sess,
	                           cl->early, cl) < 0)
		return -1;
	/* 0-RTT: the request goes with the first Initial */
	return cl->q.early && request_start(cl) != 0 ? -1 : 0;
}

/* -S: what is left of CL->ctrl_raw on our control stream, in packets
 * of its own (so that the server reads it before the request).  0 or
 * -1. */
static int control_write(struct client *cl)
{
	uint8_t buf[QUIC_CONN_PKT];
	ngtcp2_pkt_info pi;
	ngtcp2_ssize n, taken;

	while (cl->ctrl_off < cl->ctrl_len) {
		ngtcp2_vec v = {(uint8_t *)cl->ctrl_raw + cl->ctrl_off,
		                cl->ctrl_len - cl->ctrl_off};

		taken = -1;
		n = ngtcp2_conn_writev_stream(cl->q.quic, NULL, &pi, buf,
		                              sizeof buf, &taken,
		                              NGTCP2_WRITE_STREAM_FLAG_NONE,
		                              cl->ctrl_id, &v, 1, quic_conn_now());
		if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED || n == 0)
			return 0; /* later, when there is room */
		if (n < 0 || send(cl->q.fd, buf, (size_t)n, 0) < 0)
			return -1;
		if (taken > 0)
			cl->ctrl_off += (size_t)taken;
	}
	return 0;
}

/* Sends what there is.  Returns 0 or -1. */
static int client_write(struct client *cl)
{
	int rv;

	if (cl->ctrl_raw && cl->ctrl_id >= 0 && control_write(cl) < 0)
		return -1;
	return quic_conn_write(&cl->q, &rv);
}

/* --replay: the first write (the first flight) goes through a socket
 * pair, is kept in cl->flight, then goes out on the real socket.
 * Returns 0 or -1. */
static int client_write_recorded(struct client *cl)
{
	uint8_t buf[QUIC_CONN_PKT + 1];
	int sp[2], real = cl->q.fd, rc;
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	cl->q.fd = sp[0];
	rc = client_write(cl);
	cl->q.fd = real;
	while (rc == 0 && (n = recv(sp[1], buf, sizeof buf, MSG_DONTWAIT)) > 0) {
		if (cl->flight_n == H3C_FLIGHT_MAX || n > QUIC_CONN_PKT ||
		    send(real, buf, (size_t)n, 0) < 0) {
			rc = -1;
			break;
		}
		memcpy(cl->flight[cl->flight_n], buf, (size_t)n);
		cl->flight_len[cl->flight_n++] = (size_t)n;
	}
	close(sp[0]);
	close(sp[1]);
	return rc;
}

/* A QUIC variable-length integer at P[*AT] of LEFT bytes into *V.
 * 0, or -1 when it runs past the end. */
static int varint(const uint8_t *p, size_t left, size_t *at, uint64_t *v)
{
	size_t n, i;

	if (*at >= left)
		return -1;
	n = (size_t)1 << (p[*at] >> 6);
	if (*at + n > left)
		return -1;
	*v = p[*at] & 0x3f;
	for (i = 1; i < n; i++)
		*v = *v << 8 | p[*at + i];
	*at += n;
	return 0;
}

/* Walks the coalesced packets of datagram D of N bytes (RFC 9000 12.2:
 * long headers carry their length; a short header runs to the end),
 * adding the long-header ones to *LONGS.  Returns 1 when a short-header
 * (1-RTT) packet is among them. */
static int datagram_has_1rtt(const uint8_t *d, size_t n, int *longs)
{
	size_t off = 0, at;
	uint64_t len;

	while (off < n) {
		const uint8_t *p = d + off;
		size_t left = n - off;

		if (!(p[0] & 0x80))
			return 1;
		(*longs)++;
		at = 5; /* first byte, version */
		if (at >= left)
			return 0;
		at += 1 + (size_t)p[at]; /* DCID */
		if (at >= left)
			return 0;
		at += 1 + (size_t)p[at]; /* SCID */
		if ((p[0] & 0x30) == 0 && /* an Initial: its token */
		    (varint(p, left, &at, &len) < 0 || (at += len) > left))
			return 0;
		if (varint(p, left, &at, &len) < 0)
			return 0;
		off += at + len;
	}
	return 0;
}

/* --replay (the head of this file says what and why).  0 once the
 * reset came, 3 when it did not within H3C_DEADLINE_MS, 1 when the
 * socket failed. */
static int replay_run(struct client *cl, int port)
{
	struct sockaddr_in to = {.sin_family = AF_INET};
	uint8_t probe[H3C_PROBE_LEN], buf[65536];
	ngtcp2_tstamp deadline = quic_conn_now() + H3C_DEADLINE_MS * NGTCP2_MILLISECONDS;
	int fd, i, longs = 0, rtt1 = 0, rc = 3;

	to.sin_port = htons((uint16_t)port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof to) < 0)
		goto out_close;
	quic_conn_random(probe, sizeof probe);
	probe[0] = (uint8_t)(0x40 | (probe[0] & 0x3f)); /* a short header */
	for (i = 0; i < cl->flight_n; i++)
		if (send(fd, cl->flight[i], cl->flight_len[i], 0) < 0)
			goto out_close;
	if (send(fd, probe, sizeof probe, 0) < 0)
		goto out_close;
	while (rc == 3 && quic_conn_now() < deadline) {
		struct pollfd pfd = {fd, POLLIN, 0};
		ssize_t n;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = recv(fd, buf, sizeof buf, 0);
		if (n < 0)
			break;
		if (n == H3C_PROBE_LEN - 1 && !(buf[0] & 0x80))
			rc = 0; /* the reset: all the replay drew came before */
		else if (datagram_has_1rtt(buf, (size_t)n, &longs))
			rtt1 = 1;
	}
	fprintf(stderr, "h3-client: replay: %d long-header packets, %s\n", longs,
	        rtt1 ? "a 1-RTT packet (the replayed early data was taken)"
	             : "no 1-RTT packet");
	if (rc == 3)
		fprintf(stderr, "h3-client: replay: no stateless reset for the "
		        "probe within %d ms\n", H3C_DEADLINE_MS);
	close(fd);
	return rc;
out_close:
	if (fd >= 0)
		close(fd);
	return 1;
}

/* -F: the server's certificate's SHA-256 on stderr. */
static void cert_print(quic_conn *q)
{
	const gnutls_datum_t *der;
	unsigned int n = 0;
	unsigned char fp[32];
	size_t len = sizeof fp;

	der = q->tls ? gnutls_certificate_get_peers(q->tls, &n) : NULL;
	if (der == NULL || n == 0 ||
	    gnutls_fingerprint(GNUTLS_DIG_SHA256, &der[0], fp, &len) < 0) {
		fprintf(stderr, "h3-client: no certificate\n");
		return;
	}
	fprintf(stderr, "h3-client: certificate ");
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, "%02x", fp[i]);
	fprintf(stderr, "\n");
}

/* The answer is whole, and the session ticket came if one is to be
 * saved (the server sends it as the handshake ends, but nothing orders
 * it before the answer). */
static int client_finished(const struct client *cl)
{
	return cl->done && (cl->session_path == NULL || cl->q.ticket);
}

/* Reads, writes and runs the timers until the answer is whole. */
static int client_run(struct client *cl)
{
	ngtcp2_tstamp deadline = quic_conn_now() + H3C_DEADLINE_MS * NGTCP2_MILLISECONDS;
	ngtcp2_tstamp hold = 0;
	uint8_t buf[65536];

	int seen = 0;

	while (!cl->failed && (!client_finished(cl) || hold == 0 ||
	                       quic_conn_now() < hold)) {
		ngtcp2_tstamp now = quic_conn_now(), due = ngtcp2_conn_get_expiry(cl->q.quic);
		struct pollfd pfd = {cl->q.fd, POLLIN, 0};
		int wait_ms;

		if (cl->answered != seen) { /* -n: progress moves the deadline */
			seen = cl->answered;
			deadline = now + H3C_DEADLINE_MS * NGTCP2_MILLISECONDS;
		}
		if (cl->bench_n && cl->q.http && !cl->done &&
		    requests_top_up(cl) < 0)
			return 1;

		if (client_finished(cl) && hold == 0) { /* all came: idle on */
			hold = now + (ngtcp2_tstamp)cl->hold_ms * NGTCP2_MILLISECONDS;
			deadline = hold;
			fflush(stdout);
			continue;
		}
		if (now >= deadline)
			return client_finished(cl) ? 0 : 3;
		if (due > deadline)
			due = deadline;
		wait_ms = due > now ? (int)((due - now) / NGTCP2_MILLISECONDS) + 1 : 0;
		if (poll(&pfd, 1, wait_ms) > 0) {
			ngtcp2_path path = {
				{(ngtcp2_sockaddr *)&cl->q.local, sizeof cl->q.local},
				{(ngtcp2_sockaddr *)&cl->q.remote, sizeof cl->q.remote}, NULL};
			ngtcp2_pkt_info pi = {0};
			ssize_t n = recv(cl->q.fd, buf, sizeof buf, 0);
			int rv = n > 0 ? ngtcp2_conn_read_pkt(cl->q.quic, &path, &pi, buf,
			                                      (size_t)n, quic_conn_now()) : 0;
			if (rv == NGTCP2_ERR_DRAINING) {
				ngtcp2_connection_close_error ce;
				ngtcp2_conn_get_connection_close_error(cl->q.quic, &ce);
				fprintf(stderr, "h3-client: the server closed the "
				        "connection (error 0x%llx) after %d requests\n",
				        (unsigned long long)ce.error_code, cl->sent);
			}
			if (rv != 0)
				return 1;
		} else if (ngtcp2_conn_handle_expiry(cl->q.quic, quic_conn_now()) != 0) {
			return 1;
		}
		if (client_write(cl) < 0)
			return 1;
	}
	return cl->failed ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: h3-client PORT METHOD PATH [-H 'name: value']... "
	                "[-d BODY | -s] [-k MS] [-b] [-n N -c K | -R N | -N N | -I N] "
	                "[-i MS [-j N]] [-x] [-F] [-S repeat|distinct] "
	                "[--session FILE [--early [--replay]]]\n");
	return 2;
}

/* Ends CL: a CONNECTION_CLOSE with H3_NO_ERROR when CLOSE (so that the
 * server frees the connection now, not at its idle timeout), then its
 * state. */
static void client_free(struct client *cl, int close_it)
{
	ngtcp2_connection_close_error ccerr;
	ngtcp2_path_storage ps;
	uint8_t buf[QUIC_CONN_PKT];
	ngtcp2_ssize n;

	if (close_it && cl->q.quic) {
		ngtcp2_connection_close_error_set_application_error(
		    &ccerr, NGHTTP3_H3_NO_ERROR, NULL, 0);
		ngtcp2_path_storage_zero(&ps);
		n = ngtcp2_conn_write_connection_close(cl->q.quic, &ps.path, NULL,
		                                       buf, sizeof buf, &ccerr,
		                                       quic_conn_now());
		if (n > 0)
			send(cl->q.fd, buf, (size_t)n, 0);
	}
	quic_conn_close(&cl->q);
}

/* Passes the session CL got to *SESS (freeing the one there), for the
 * next connection and for --session's file.  0, or -1 when none came. */
static int session_take(struct client *cl, quic_session *sess)
{
	quic_session got;

	if (!cl->q.ticket || quic_conn_session_get(&cl->q, &got) < 0)
		return -1;
	quic_session_free(sess);
	*sess = got;
	return 0;
}

/* Saves SESS to PATH.  0, or 1 with the reason on stderr. */
static int session_save(const quic_session *sess, const char *path)
{
	char why[256];

	if (quic_session_save(sess, path, why, sizeof why) == 0)
		return 0;
	fprintf(stderr, "h3-client: cannot save the session: %s\n", why);
	return 1;
}

/* -N: CONNS connections one after another, each with TMPL's one request
 * (TMPL->bench_n is 1: nothing printed, 2xx counted), each resuming the
 * session the one before got when TMPL->session_path is set (TMPL->sess,
 * taken over here, for the first).  Returns 0 when every one got its
 * whole answer, else 1. */
static int conns_run(struct client *tmpl, int port, int conns)
{
	static struct client cl;
	ngtcp2_tstamp t0 = quic_conn_now();
	quic_session sess = tmpl->sess;
	int i, rc = 0, answered = 0, ok = 0, resumed = 0, early = 0;
	double secs;

	memset(&tmpl->sess, 0, sizeof tmpl->sess);
	for (i = 0; i < conns; i++) {
		int r;

		cl = *tmpl;
		cl.sess = sess; /* borrowed: conn_open copies it into GnuTLS */
		memset(&cl.q, 0, sizeof cl.q);
		cl.q.fd = -1;
		r = client_open(&cl, port) < 0 || client_write(&cl) < 0
		        ? 1 : client_run(&cl);
		answered += cl.answered;
		ok += cl.ok;
		resumed += cl.resumed;
		early += cl.q.early && !cl.early_rejected;
		if (r == 0 && cl.session_path && session_take(&cl, &sess) < 0)
			r = 1;
		client_free(&cl, r == 0);
		if (r) {
			fprintf(stderr, "h3-client: connection %d failed\n", i + 1);
			rc = 1;
			break;
		}
	}
	secs = (double)(quic_conn_now() - t0) / NGTCP2_SECONDS;
	printf("%d connections, %d answered, %d 2xx in %.3f s: %.0f/s\n", conns,
	       answered, ok, secs, secs > 0 ? answered / secs : 0.0);
	if (tmpl->session_path) {
		printf("%d resumed, %d early data accepted\n", resumed, early);
		if (rc == 0)
			rc = session_save(&sess, tmpl->session_path);
	}
	quic_session_free(&sess);
	return rc;
}

/* -I: one pass over the held connections CL[0..N): reads what came
 * (PFD says), runs the timers that are due, sends.  A connection that
 * fails is closed and left out from then on (fd -1). */
static void idle_serve(struct client *cl, struct pollfd *pfd, int n)
{
	uint8_t buf[65536];
	int i;

	for (i = 0; i < n; i++) {
		quic_conn *q = &cl[i].q;
		ngtcp2_path path = {
			{(ngtcp2_sockaddr *)&q->local, sizeof q->local},
			{(ngtcp2_sockaddr *)&q->remote, sizeof q->remote}, NULL};
		ngtcp2_pkt_info pi = {0};
		ssize_t got;
		int rv = 0;

		if (q->fd < 0)
			continue;
		while (pfd[i].revents &&
		       (got = recv(q->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0 && rv == 0)
			rv = ngtcp2_conn_read_pkt(q->quic, &path, &pi, buf, (size_t)got,
			                          quic_conn_now());
		if (rv == 0 && ngtcp2_conn_get_expiry(q->quic) <= quic_conn_now())
			rv = ngtcp2_conn_handle_expiry(q->quic, quic_conn_now());
		if (rv != 0 || client_write(&cl[i]) < 0) {
			fprintf(stderr, "h3-client: held connection %d failed\n", i + 1);
			quic_conn_close(q);
			pfd[i].fd = -1;
		}
	}
}

/* -I: N connections with TMPL's request, held for TMPL->hold_ms.
 * Returns 0 when all were answered 2xx, else 1. */
static int idle_run(const struct client *tmpl, int port, int n)
{
	struct client *cl = calloc((size_t)n, sizeof *cl);
	struct pollfd *pfd = calloc((size_t)n, sizeof *pfd);
	ngtcp2_tstamp until;
	struct rlimit rl;
	int i, held = 0, ok = 0;

	if (cl == NULL || pfd == NULL)
		goto out;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max; /* one socket a connection */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (i = 0; i < n; i++, held++) {
		cl[i] = *tmpl;
		cl[i].hold_ms = 0;
		memset(&cl[i].q, 0, sizeof cl[i].q);
		cl[i].q.fd = -1;
		if (client_open(&cl[i], port) < 0 || client_write(&cl[i]) < 0 ||
		    client_run(&cl[i]) != 0) {
			fprintf(stderr, "h3-client: connection %d failed\n", i + 1);
			quic_conn_close(&cl[i].q);
			break;
		}
		ok += cl[i].ok;
		pfd[i] = (struct pollfd){cl[i].q.fd, POLLIN, 0};
	}
	printf("open %d\n", held);
	fflush(stdout);
	until = quic_conn_now() + (ngtcp2_tstamp)tmpl->hold_ms * NGTCP2_MILLISECONDS;
	while (held == n && quic_conn_now() < until) {
		ngtcp2_tstamp due = until, now;

		for (i = 0; i < n; i++)
			if (pfd[i].fd >= 0 && ngtcp2_conn_get_expiry(cl[i].q.quic) < due)
				due = ngtcp2_conn_get_expiry(cl[i].q.quic);
		now = quic_conn_now();
		poll(pfd, (nfds_t)n,
		     due > now ? (int)((due - now) / NGTCP2_MILLISECONDS) + 1 : 0);
		idle_serve(cl, pfd, n);
	}
	for (i = 0; i < held; i++)
		client_free(&cl[i], pfd[i].fd >= 0);
out:
	free(cl);
	free(pfd);
	return held == n && ok == n ? 0 : 1;
}

/* -x: waits up to MS for a datagram on CL's socket, into BUF.  Returns
 * its length, or 0 when none came. */
static size_t wait_datagram(struct client *cl, uint8_t *buf, size_t cap,
                            int ms)
{
	struct pollfd pfd = {cl->q.fd, POLLIN, 0};
	ssize_t n;

	if (poll(&pfd, 1, ms) <= 0)
		return 0;
	n = recv(cl->q.fd, buf, cap, MSG_DONTWAIT);
	return n > 0 ? (size_t)n : 0;
}

/* -x: sends a 1200-byte short-header packet for CL's connection (its
 * current destination ID, the rest random). */
static void send_late_packet(struct client *cl)
{
	const ngtcp2_cid *dcid = ngtcp2_conn_get_dcid(cl->q.quic);
	uint8_t p[1200];

	quic_conn_random(p, sizeof p);
	p[0] = (uint8_t)(0x40 | (p[0] & 0x3f));
	memcpy(p + 1, dcid->data, dcid->datalen);
	send(cl->q.fd, p, sizeof p, 0);
}

/* -x: the server closes the connection for a frame HTTP/3 forbids; then
 * it must answer a late packet with the same close, and later ones,
 * once its closing period is over, with a stateless reset.  Returns 0
 * when both were seen. */
static int closing_check(struct client *cl)
{
	static const uint8_t settings[] = {0x04, 0x00}; /* SETTINGS, empty */
	ngtcp2_vec vec = {(uint8_t *)settings, sizeof settings};
	ngtcp2_path path = {
		{(ngtcp2_sockaddr *)&cl->q.local, sizeof cl->q.local},
		{(ngtcp2_sockaddr *)&cl->q.remote, sizeof cl->q.remote}, NULL};
	static uint8_t buf[65536], closed[65536];
	size_t len, closed_len = 0;
	ngtcp2_pkt_info pi = {0};
	ngtcp2_ssize n, taken;
	int64_t id;
	int i, again, reset = 0;

	if (ngtcp2_conn_open_bidi_stream(cl->q.quic, &id, NULL) != 0) {
		printf("no stream for the SETTINGS frame\n");
		return 1;
	}
	/* The packet written may hold only what the connection had to send
	 * first (acknowledgements: taken < 0), or none may be written yet
	 * (pacing, the congestion window): each packet is sent, and the
	 * writing goes on, with timers and what comes in served, until one
	 * carries the frame -- on a busy machine above all. */
	for (i = 0, taken = -1; taken < 0; ) {
		n = ngtcp2_conn_writev_stream(cl->q.quic, NULL, &pi, buf,
		                              QUIC_CONN_PKT, &taken,
		                              NGTCP2_WRITE_STREAM_FLAG_FIN, id,
		                              &vec, 1, quic_conn_now());
		if (n < 0 || (n > 0 && send(cl->q.fd, buf, (size_t)n, 0) < 0) ||
		    (n == 0 && ++i > H3C_DEADLINE_MS / 10)) {
			printf("the SETTINGS frame not sent (%zd)\n", (ssize_t)n);
			return 1;
		}
		if (n > 0)
			continue;
		len = wait_datagram(cl, buf, sizeof buf, 10);
		if (len)
			(void)ngtcp2_conn_read_pkt(cl->q.quic, &path, &pi, buf,
			                           len, quic_conn_now());
		(void)ngtcp2_conn_handle_expiry(cl->q.quic, quic_conn_now());
	}
	while (closed_len == 0) { /* what came before the close is read */
		len = wait_datagram(cl, buf, sizeof buf, H3C_DEADLINE_MS);
		if (len == 0) {
			printf("no close\n");
			return 1;
		}
		if (ngtcp2_conn_read_pkt(cl->q.quic, &path, &pi, buf, len,
		                         quic_conn_now()) == NGTCP2_ERR_DRAINING) {
			memcpy(closed, buf, len);
			closed_len = len;
		}
	}
	send_late_packet(cl);
	len = wait_datagram(cl, buf, sizeof buf, 2000);
	again = len == closed_len && memcmp(buf, closed, len) == 0;
	if (again)
		printf("close again\n");
	else if (len)
		printf("reply %zu\n", len);
	else
		printf("no reply\n");
	for (i = 0; i < 40 && !reset; i++) {
		send_late_packet(cl);
		len = wait_datagram(cl, buf, sizeof buf, 250);
		reset = len > 0 && !(buf[0] & 0x80) &&
		        !(len == closed_len && memcmp(buf, closed, len) == 0);
	}
	printf(reset ? "then a stateless reset\n" : "no stateless reset\n");
	return again && reset ? 0 : 1;
}

static void field(struct client *cl, const char *n, size_t nl, const char *v,
                  size_t vl)
{
	cl->req[cl->nreq++] = (nghttp3_nv){(uint8_t *)n, (uint8_t *)v, nl, vl,
	                                   NGHTTP3_NV_FLAG_NONE};
}

/* -i: waits for the server's first datagram that is not a Retry (a
 * Retry is read, and the Initial sent again with its token: the server
 * has then made the connection for a proven address).  0, or 3 when
 * nothing came within H3C_DEADLINE_MS. */
static int initial_only(struct client *cl)
{
	ngtcp2_tstamp deadline = quic_conn_now() + H3C_DEADLINE_MS * NGTCP2_MILLISECONDS;
	uint8_t buf[65536];

	for (;;) {
		ngtcp2_tstamp now = quic_conn_now();
		struct pollfd pfd = {cl->q.fd, POLLIN, 0};
		if (now >= deadline ||
		    poll(&pfd, 1, (int)((deadline - now) / NGTCP2_MILLISECONDS) + 1) <= 0)
			return 3;
		ssize_t n = recv(cl->q.fd, buf, sizeof buf, 0);
		if (n <= 0)
			return 3;
		/* a long header (0x80) of QUIC v1 whose type bits say Retry */
		if ((buf[0] & 0xb0) != 0xb0)
			return 0;
		ngtcp2_path path = {
			{(ngtcp2_sockaddr *)&cl->q.local, sizeof cl->q.local},
			{(ngtcp2_sockaddr *)&cl->q.remote, sizeof cl->q.remote}, NULL};
		ngtcp2_pkt_info pi = {0};
		if (ngtcp2_conn_read_pkt(cl->q.quic, &path, &pi, buf, (size_t)n,
		                         quic_conn_now()) != 0 ||
		    client_write(cl) < 0)
			return 3;
		fprintf(stderr, "h3-client: followed a Retry\n");
	}
}

/* -i MS -j N (the head of this file says what): 0, or 3 when the
 * server made no connection, 1 when a socket could not be made. */
static int initial_burst(const struct client *tmpl, int port, int n, int ms)
{
	struct client *cl = calloc((size_t)n, sizeof *cl);
	struct pollfd *pfd = calloc((size_t)n, sizeof *pfd);
	ngtcp2_tstamp deadline = quic_conn_now() + H3C_DEADLINE_MS * NGTCP2_MILLISECONDS;
	uint8_t buf[65536];
	struct rlimit rl;
	int i, opened = 0, waiting, made = 0, rc = 1;

	if (cl == NULL || pfd == NULL)
		goto out;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max; /* one socket a connection */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (i = 0; i < n; i++, opened++) {
		cl[i] = *tmpl;
		memset(&cl[i].q, 0, sizeof cl[i].q);
		cl[i].q.fd = -1;
		if (client_open(&cl[i], port) < 0 || client_write(&cl[i]) < 0) {
			fprintf(stderr, "h3-client: connection %d: cannot start\n",
			        i + 1);
			quic_conn_close(&cl[i].q);
			goto out;
		}
		pfd[i] = (struct pollfd){cl[i].q.fd, POLLIN, 0};
	}
	waiting = n;
	while (waiting > 0) {
		ngtcp2_tstamp now = quic_conn_now(), due = deadline;

		if (now >= deadline)
			break;
		for (i = 0; i < n; i++) /* the Initials' timers (lost ones) */
			if (pfd[i].fd >= 0 && ngtcp2_conn_get_expiry(cl[i].q.quic) < due)
				due = ngtcp2_conn_get_expiry(cl[i].q.quic);
		if (poll(pfd, (nfds_t)n,
		         due > now ? (int)((due - now) / NGTCP2_MILLISECONDS) + 1
		                   : 0) < 0)
			break;
		for (i = 0; i < n; i++) {
			ngtcp2_path path = {
				{(ngtcp2_sockaddr *)&cl[i].q.local, sizeof cl[i].q.local},
				{(ngtcp2_sockaddr *)&cl[i].q.remote, sizeof cl[i].q.remote},
				NULL};
			ngtcp2_pkt_info pi = {0};
			ssize_t got;

			if (pfd[i].fd < 0)
				continue;
			if (!pfd[i].revents) { /* sent again when a timer says */
				if (ngtcp2_conn_get_expiry(cl[i].q.quic) <= quic_conn_now() &&
				    (ngtcp2_conn_handle_expiry(cl[i].q.quic,
				                               quic_conn_now()) != 0 ||
				     client_write(&cl[i]) != 0)) {
					pfd[i].fd = -1;
					waiting--;
				}
				continue;
			}
			got = recv(cl[i].q.fd, buf, sizeof buf, MSG_DONTWAIT);
			if (got <= 0)
				continue;
			if ((buf[0] & 0xb0) != 0xb0) { /* not a Retry: made */
				made++;
			} else if (ngtcp2_conn_read_pkt(cl[i].q.quic, &path, &pi, buf,
			                                (size_t)got,
			                                quic_conn_now()) == 0 &&
			           client_write(&cl[i]) == 0) {
				continue; /* the Initial again, with the token */
			}
			pfd[i].fd = -1; /* made, or failed: not heard again */
			waiting--;
		}
	}
	printf("half open %d of %d\n", made, n);
	fflush(stdout);
	poll(NULL, 0, ms);
	rc = made > 0 ? 0 : 3;
out:
	for (i = 0; i < opened; i++)
		quic_conn_close(&cl[i].q);
	free(cl);
	free(pfd);
	return rc;
}

int main(int argc, char **argv)
{
	static struct client cl;
	static char lower[H3C_FIELDS_MAX][64];
	int i, rc, initial_only_ms = 0, conns = 0, idle = 0, close_check = 0;
	int print_cert = 0, burst = 0;
	static const uint8_t settings_repeat[] = {
		0x00,       /* a control stream */
		0x04, 0x04, /* SETTINGS, 4 bytes */
		0x07, 0x00, /* QPACK_BLOCKED_STREAMS 0 */
		0x07, 0x00  /* QPACK_BLOCKED_STREAMS 0, again */
	};
	static const uint8_t settings_distinct[] = {
		0x00, 0x04, 0x04,
		0x01, 0x00, /* QPACK_MAX_TABLE_CAPACITY 0 */
		0x07, 0x00  /* QPACK_BLOCKED_STREAMS 0 */
	};

	if (argc < 4 || atoi(argv[1]) <= 0)
		return usage();
	field(&cl, ":method", 7, argv[2], strlen(argv[2]));
	field(&cl, ":scheme", 7, "https", 5);
	field(&cl, ":authority", 10, "localhost", 9);
	field(&cl, ":path", 5, argv[3], strlen(argv[3]));
	for (i = 4; i < argc; i++) {
		if (strcmp(argv[i], "-s") == 0) {
			cl.stall = 1;
		} else if (strcmp(argv[i], "-x") == 0) {
			close_check = 1;
		} else if (strcmp(argv[i], "-F") == 0) {
			print_cert = 1;
		} else if (strcmp(argv[i], "-b") == 0) {
			cl.bad_token = 1;
		} else if (strcmp(argv[i], "-i") == 0 && i + 1 < argc) {
			initial_only_ms = atoi(argv[++i]);
		} else if (strcmp(argv[i], "-j") == 0 && i + 1 < argc) {
			burst = atoi(argv[++i]);
			if (burst < 1)
				return usage();
		} else if (strcmp(argv[i], "-S") == 0 && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "repeat") == 0)
				cl.ctrl_raw = settings_repeat;
			else if (strcmp(argv[i], "distinct") == 0)
				cl.ctrl_raw = settings_distinct;
			else
				return usage();
			cl.ctrl_len = sizeof settings_repeat;
		} else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			cl.bench_n = atoi(argv[++i]);
			if (cl.bench_n < 1)
				return usage();
		} else if (strcmp(argv[i], "-R") == 0 && i + 1 < argc) {
			cl.bench_n = atoi(argv[++i]);
			cl.bench_c = 1;
			cl.rapid = 1;
			if (cl.bench_n < 1)
				return usage();
		} else if (strcmp(argv[i], "-N") == 0 && i + 1 < argc) {
			conns = atoi(argv[++i]);
			if (conns < 1)
				return usage();
		} else if (strcmp(argv[i], "--session") == 0 && i + 1 < argc) {
			cl.session_path = argv[++i];
		} else if (strcmp(argv[i], "--early") == 0) {
			cl.early = 1;
		} else if (strcmp(argv[i], "--replay") == 0) {
			cl.replay = 1;
		} else if (strcmp(argv[i], "-I") == 0 && i + 1 < argc) {
			idle = atoi(argv[++i]);
			if (idle < 1)
				return usage();
		} else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			cl.bench_c = atoi(argv[++i]);
		} else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) {
			cl.hold_ms = atoi(argv[++i]);
		} else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
			cl.body = argv[++i];
			cl.blen = strlen(cl.body);
		} else if (strcmp(argv[i], "-H") == 0 && i + 1 < argc &&
		           cl.nreq < H3C_FIELDS_MAX) {
			const char *h = argv[++i], *colon = strchr(h, ':');
			size_t n = colon ? (size_t)(colon - h) : 0, k;
			if (n == 0 || n >= sizeof lower[0])
				return usage();
			for (k = 0; k < n; k++) /* HTTP/3 field names are lower case */
				lower[cl.nreq][k] = (char)(h[k] >= 'A' && h[k] <= 'Z'
				                               ? h[k] + 32 : h[k]);
			colon++;
			while (*colon == ' ')
				colon++;
			field(&cl, lower[cl.nreq], n, colon, strlen(colon));
		} else {
			return usage();
		}
	}
	if ((cl.early && cl.session_path == NULL) ||
	    (cl.session_path && (initial_only_ms || cl.bad_token)) ||
	    (cl.replay && (!cl.early || conns || cl.bench_n)))
		return usage();
	if (close_check &&
	    (idle || conns || cl.bench_n || initial_only_ms || cl.session_path))
		return usage();
	cl.ctrl_id = -1;
	if (cl.ctrl_raw && (close_check || idle || conns || cl.bench_n ||
	                    initial_only_ms || cl.early))
		return usage();
	if (burst) {
		if (initial_only_ms <= 0 || idle || conns || cl.bench_n ||
		    cl.session_path || close_check)
			return usage();
		return initial_burst(&cl, atoi(argv[1]), burst, initial_only_ms);
	}
	if (idle) {
		if (conns || cl.bench_n || initial_only_ms || cl.bad_token ||
		    cl.session_path)
			return usage();
		cl.bench_n = 1;
		return idle_run(&cl, atoi(argv[1]), idle);
	}
	if (cl.session_path) {
		char why[256];

		if (quic_session_load(&cl.sess, cl.session_path, why,
		                      sizeof why) < 0) {
			fprintf(stderr, "h3-client: %s: %s\n", cl.session_path, why);
			return 2;
		}
	}
	if (conns) {
		if (cl.bench_n || initial_only_ms || cl.hold_ms || cl.bad_token)
			return usage();
		cl.bench_n = 1;
		return conns_run(&cl, atoi(argv[1]), conns);
	}
	if (client_open(&cl, atoi(argv[1])) < 0 ||
	    (cl.replay ? client_write_recorded(&cl) : client_write(&cl)) < 0) {
		fprintf(stderr, "h3-client: cannot start the connection%s\n",
		            cl.sess.tls.data ? " (the saved TLS session does "
		                               "not load)" : "");
		return 1;
	}
	if (initial_only_ms > 0) {
		if (initial_only(&cl) != 0)
			return 3;
		printf("half open\n");
		fflush(stdout);
		poll(NULL, 0, initial_only_ms);
		return 0;
	}
	rc = client_run(&cl);
	if (rc == 0 && close_check)
		rc = closing_check(&cl);
	fflush(stdout);
	if (cl.retried)
		fprintf(stderr, "h3-client: followed a Retry\n");
	if (cl.resumed)
		fprintf(stderr, "h3-client: resumed\n");
	if (print_cert)
		cert_print(&cl.q);
	if (cl.q.early)
		fprintf(stderr, "h3-client: early data %s\n",
		        cl.early_rejected ? "rejected, the request sent again "
		                            "after the handshake"
		                          : "accepted");
	if (rc == 0 && cl.session_path && session_take(&cl, &cl.sess) == 0)
		rc = session_save(&cl.sess, cl.session_path);
	quic_session_free(&cl.sess);
	if (cl.bench_n) {
		double secs = (double)(cl.t1 - cl.t0) / NGTCP2_SECONDS;
		printf("%d requests, %d answered, %d 2xx in %.3f s: %.0f/s\n",
		       cl.bench_n, cl.answered, cl.ok, secs,
		       secs > 0 ? cl.answered / secs : 0.0);
	}
	if (rc == 3 && cl.done)
		fprintf(stderr, "h3-client: the answer came, but no session "
		        "ticket within %d ms\n", H3C_DEADLINE_MS);
	else if (rc == 3)
		fprintf(stderr, "h3-client: no whole answer within %d ms\n",
		        H3C_DEADLINE_MS);
	else if (rc)
		fprintf(stderr, "h3-client: the connection failed\n");
	if (rc == 0 && cl.replay) {
		client_free(&cl, 1); /* the server forgets it: the replay is new */
		rc = replay_run(&cl, atoi(argv[1]));
	}
	quic_conn_close(&cl.q);
	return rc;
}
