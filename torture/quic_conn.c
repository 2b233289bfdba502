/*
 * quic_conn.c -- one QUIC client connection to 127.0.0.1 (see
 * quic_conn.h).
 */
#include "quic_conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <ngtcp2/ngtcp2_crypto_gnutls.h>


ngtcp2_tstamp quic_conn_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ngtcp2_tstamp)ts.tv_sec * NGTCP2_SECONDS +
	       (ngtcp2_tstamp)ts.tv_nsec;
}

void quic_conn_random(uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
		}
	}
}

static void on_rand(uint8_t *p, size_t n, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	quic_conn_random(p, n);
}

static int on_new_cid(ngtcp2_conn *q, ngtcp2_cid *cid, uint8_t *token,
                      size_t len, void *arg)
{
	(void)q, (void)arg;
	quic_conn_random(cid->data, len);
	cid->datalen = len;
	quic_conn_random(token, NGTCP2_STATELESS_RESET_TOKENLEN);
	return 0;
}

void quic_conn_callbacks(ngtcp2_callbacks *cb)
{
	memset(cb, 0, sizeof(*cb));
	cb->client_initial = ngtcp2_crypto_client_initial_cb;
	cb->recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
	cb->encrypt = ngtcp2_crypto_encrypt_cb;
	cb->decrypt = ngtcp2_crypto_decrypt_cb;
	cb->hp_mask = ngtcp2_crypto_hp_mask_cb;
	cb->recv_retry = ngtcp2_crypto_recv_retry_cb;
	cb->rand = on_rand;
	cb->get_new_connection_id = on_new_cid;
	cb->update_key = ngtcp2_crypto_update_key_cb;
	cb->delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
	cb->delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
	cb->get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
	cb->version_negotiation = ngtcp2_crypto_version_negotiation_cb;
}

static ngtcp2_conn *ref_get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((quic_conn *)ref->user_data)->quic;
}

/* GnuTLS took a NewSessionTicket: the session can be saved now. */
static int on_ticket(gnutls_session_t tls, unsigned type, unsigned when,
                     unsigned incoming, const gnutls_datum_t *msg)
{
	ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(tls);

	(void)type, (void)when, (void)incoming, (void)msg;
	((quic_conn *)ref->user_data)->ticket = 1;
	return 0;
}

/* The TLS session: TLS 1.3, ALPN h3; with CERT, trusting it alone for
 * 127.0.0.1; resuming S when given, offering early data when EARLY. */
static int tls_open(quic_conn *c, const char *cert, const quic_session *s,
                    int early)
{
	gnutls_datum_t alpn = {(unsigned char *)"h3", 2};

	if (gnutls_certificate_allocate_credentials(&c->cred) != 0 ||
	    (cert && gnutls_certificate_set_x509_trust_file(
	                     c->cred, cert, GNUTLS_X509_FMT_PEM) <= 0) ||
	    gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA |
	                         (early ? GNUTLS_ENABLE_EARLY_DATA : 0)) != 0)
		return -1;
	if (s && gnutls_session_set_data(c->tls, s->tls.data, s->tls.size) != 0)
		return -1;
	gnutls_handshake_set_hook_function(c->tls,
	                                   GNUTLS_HANDSHAKE_NEW_SESSION_TICKET,
	                                   GNUTLS_HOOK_POST, on_ticket);
	if (gnutls_priority_set_direct(c->tls, "NORMAL:-VERS-ALL:+VERS-TLS1.3:"
	                               "%DISABLE_TLS13_COMPAT_MODE", NULL) != 0 ||
	    ngtcp2_crypto_gnutls_configure_client_session(c->tls) != 0 ||
	    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE,
	                           c->cred) != 0 ||
	    gnutls_alpn_set_protocols(c->tls, &alpn, 1, 0) != 0)
		return -1;
	if (cert) /* SNI carries no IP address: the check names it */
		gnutls_session_set_verify_cert(c->tls, "127.0.0.1", 0);
	else
		gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, "localhost", 9);
	c->ref.get_conn = ref_get_conn;
	c->ref.user_data = c;
	gnutls_session_set_ptr(c->tls, &c->ref);
	return 0;
}

/* quic_conn_open, and quic_conn_open_resumed when S is not NULL. */
static int conn_open(quic_conn *c, uint16_t port, const char *cert,
                     const ngtcp2_callbacks *cb, const ngtcp2_vec *token,
                     const quic_session *s, int early, void *user)
{
	ngtcp2_transport_params early_params;
	ngtcp2_path path;
	ngtcp2_settings settings;
	ngtcp2_transport_params params;
	ngtcp2_cid dcid = {.datalen = 16}, scid = {.datalen = 16};
	socklen_t alen = sizeof(c->local);

	c->remote.sin_family = AF_INET;
	c->remote.sin_port = htons(port);
	c->remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* room for a server's bursts, as browsers give their QUIC sockets:
	 * with the default 208 KiB a 1 MiB GET on loopback lost thousands
	 * of datagrams a second to a full buffer (UdpRcvbufErrors) and the
	 * connection crawled; net.core.rmem_max caps it (best effort) */
	if (c->fd >= 0)
		(void)setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF,
		                 &(int){QUIC_CONN_RCVBUF}, sizeof(int));
	/* KEEL_SOURCE: the local address to send from (quic_conn.h) */
	const char *src = getenv("KEEL_SOURCE");
	if (c->fd >= 0 && src) {
		struct sockaddr_in from = {.sin_family = AF_INET};
		if (inet_pton(AF_INET, src, &from.sin_addr) != 1 ||
		    bind(c->fd, (struct sockaddr *)&from, sizeof from) < 0)
			return -1;
	}
	if (c->fd < 0 ||
	    connect(c->fd, (struct sockaddr *)&c->remote, sizeof(c->remote)) < 0 ||
	    getsockname(c->fd, (struct sockaddr *)&c->local, &alen) < 0)
		return -1;
	path = (ngtcp2_path){
		{(ngtcp2_sockaddr *)&c->local, sizeof(c->local)},
		{(ngtcp2_sockaddr *)&c->remote, sizeof(c->remote)}, NULL};
	quic_conn_random(dcid.data, dcid.datalen);
	quic_conn_random(scid.data, scid.datalen);
	ngtcp2_settings_default(&settings);
	settings.initial_ts = quic_conn_now();
	if (token)
		settings.token = *token;
	ngtcp2_transport_params_default(&params);
	params.initial_max_streams_uni = 3;
	params.initial_max_stream_data_bidi_local = 1 << 20;
	params.initial_max_stream_data_uni = 1 << 20;
	params.initial_max_data = 4 << 20;
	params.max_idle_timeout = 30 * NGTCP2_SECONDS;
	if (early && ngtcp2_decode_transport_params(
	                 &early_params,
	                 NGTCP2_TRANSPORT_PARAMS_TYPE_ENCRYPTED_EXTENSIONS,
	                 s->tp, s->tplen) != 0)
		return -1;
	if (tls_open(c, cert, s, early) < 0 ||
	    ngtcp2_conn_client_new(&c->quic, &dcid, &scid, &path,
	                           NGTCP2_PROTO_VER_V1, cb, &settings,
	                           &params, NULL, user) != 0)
		return -1;
	ngtcp2_conn_set_tls_native_handle(c->quic, c->tls);
	if (early) { /* the limits the server gave last time bound 0-RTT */
		ngtcp2_conn_set_early_remote_transport_params(c->quic,
		                                              &early_params);
		c->early = 1;
	}
	return 0;
}

int quic_conn_open(quic_conn *c, uint16_t port, const char *cert,
                   const ngtcp2_callbacks *cb, const ngtcp2_vec *token,
                   void *user)
{
	return conn_open(c, port, cert, cb, token, NULL, 0, user);
}

int quic_conn_open_resumed(quic_conn *c, uint16_t port, const char *cert,
                           const ngtcp2_callbacks *cb, const quic_session *s,
                           int early, void *user)
{
	return conn_open(c, port, cert, cb, NULL, s, early, user);
}

int quic_conn_resumed(quic_conn *c)
{
	return c->tls && gnutls_session_is_resumed(c->tls) ? 1 : 0;
}

int quic_conn_early_accepted(quic_conn *c)
{
	return c->tls && c->early &&
	       (gnutls_session_get_flags(c->tls) & GNUTLS_SFLAGS_EARLY_DATA);
}

/* One packet's worth of what nghttp3 and ngtcp2 have: >0 bytes in BUF,
 * 0 when nothing is left, or ngtcp2's (nghttp3's) error code. */
static ngtcp2_ssize write_packet(quic_conn *c, uint8_t *buf, size_t cap,
                                 ngtcp2_tstamp ts)
{
	for (;;) {
		nghttp3_vec vec[16];
		int64_t id = -1;
		int fin = 0;
		nghttp3_ssize nv = 0;
		ngtcp2_ssize n, taken = -1;
		ngtcp2_pkt_info pi;
		uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;

		if (c->http && ngtcp2_conn_get_max_data_left(c->quic))
			nv = nghttp3_conn_writev_stream(c->http, &id, &fin,
			                                vec, 16);
		if (nv < 0)
			return nv;
		if (fin)
			flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
		n = ngtcp2_conn_writev_stream(c->quic, NULL, &pi, buf, cap,
		                              &taken, flags, id,
		                              (const ngtcp2_vec *)vec,
		                              (size_t)nv, ts);
		if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
			nghttp3_conn_block_stream(c->http, id);
			continue;
		}
		if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
			nghttp3_conn_shutdown_stream_write(c->http, id);
			continue;
		}
		if (taken >= 0)
			nghttp3_conn_add_write_offset(c->http, id, (size_t)taken);
		if (n != NGTCP2_ERR_WRITE_MORE)
			return n;
	}
}

int quic_conn_write(quic_conn *c, int *rv)
{
	uint8_t buf[QUIC_CONN_PKT];
	ngtcp2_tstamp ts = quic_conn_now();
	ngtcp2_ssize n;

	*rv = 0;
	while ((n = write_packet(c, buf, sizeof(buf), ts)) > 0)
		if (send(c->fd, buf, (size_t)n, 0) < 0 && errno != EAGAIN)
			return -1;
	if (n < 0) {
		*rv = (int)n;
		return -1;
	}
	/* not before the handshake is done: ngtcp2 0.12 paces from the
	 * first Initial at its guess of a 333 ms RTT, which held our
	 * Finished back ~20 ms (serve_h3.c conn_write does the same) */
	if (ngtcp2_conn_get_handshake_completed(c->quic))
		ngtcp2_conn_update_pkt_tx_time(c->quic, ts);
	return 0;
}

int quic_conn_http_start(quic_conn *c, const nghttp3_callbacks *cb,
                         void *user)
{
	nghttp3_settings settings;
	int64_t ctrl, qenc, qdec;

	nghttp3_settings_default(&settings);
	if (nghttp3_conn_client_new(&c->http, cb, &settings, NULL, user) != 0 ||
	    ngtcp2_conn_open_uni_stream(c->quic, &ctrl, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(c->quic, &qenc, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(c->quic, &qdec, NULL) != 0 ||
	    nghttp3_conn_bind_control_stream(c->http, ctrl) != 0 ||
	    nghttp3_conn_bind_qpack_streams(c->http, qenc, qdec) != 0)
		return -1;
	return 0;
}

int quic_conn_stream_data(quic_conn *c, int64_t id, const uint8_t *data,
                          size_t len, int fin)
{
	nghttp3_ssize n;

	if (c->http == NULL)
		return 0;
	n = nghttp3_conn_read_stream(c->http, id, data, len, fin);
	if (n < 0)
		return (int)n;
	quic_conn_credit(c, id, (uint64_t)n);
	return 0;
}

void quic_conn_credit(quic_conn *c, int64_t id, uint64_t n)
{
	ngtcp2_conn_extend_max_stream_offset(c->quic, id, n);
	ngtcp2_conn_extend_max_offset(c->quic, n);
}

int quic_conn_acked(quic_conn *c, int64_t id, uint64_t len)
{
	return c->http && nghttp3_conn_add_ack_offset(c->http, id, len) != 0 ?
	       -1 : 0;
}

void quic_conn_close(quic_conn *c)
{
	if (c->http)
		nghttp3_conn_del(c->http);
	if (c->quic)
		ngtcp2_conn_del(c->quic);
	if (c->tls)
		gnutls_deinit(c->tls);
	if (c->cred)
		gnutls_certificate_free_credentials(c->cred);
	if (c->fd >= 0)
		close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* ---- saved sessions --------------------------------------------------- */

int quic_conn_session_get(quic_conn *c, quic_session *s)
{
	const ngtcp2_transport_params *tp;
	ngtcp2_ssize n;

	memset(s, 0, sizeof(*s));
	tp = ngtcp2_conn_get_remote_transport_params(c->quic);
	if (!c->ticket || tp == NULL)
		return -1;
	n = ngtcp2_encode_transport_params(
	    s->tp, sizeof(s->tp),
	    NGTCP2_TRANSPORT_PARAMS_TYPE_ENCRYPTED_EXTENSIONS, tp);
	if (n <= 0 || gnutls_session_get_data2(c->tls, &s->tls) != 0) {
		memset(s, 0, sizeof(*s));
		return -1;
	}
	s->tplen = (size_t)n;
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

int quic_session_save(const quic_session *s, const char *path, char *why,
                      size_t cap)
{
	uint8_t head[12], len[4];
	char tmp[4096];
	FILE *f;
	int ok;

	if (s->tls.data == NULL || s->tls.size > QUIC_SESSION_TLS_MAX) {
		snprintf(why, cap, "no session to save");
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (f == NULL) {
		snprintf(why, cap, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	memcpy(head, QUIC_SESSION_MAGIC, 8);
	put32(head + 8, s->tls.size);
	put32(len, (uint32_t)s->tplen);
	ok = fwrite(head, 1, sizeof(head), f) == sizeof(head) &&
	     fwrite(s->tls.data, 1, s->tls.size, f) == s->tls.size &&
	     fwrite(len, 1, sizeof(len), f) == sizeof(len) &&
	     fwrite(s->tp, 1, s->tplen, f) == s->tplen;
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
		snprintf(why, cap, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Checks the N bytes of a session file in BUF and fills *S from them.
 * 0, or -1 with the reason in WHY. */
static int session_parse(quic_session *s, const uint8_t *buf, size_t n,
                         char *why, size_t cap)
{
	ngtcp2_transport_params tp;
	size_t t, p;

	if (n < 12 || memcmp(buf, QUIC_SESSION_MAGIC, 8) != 0) {
		snprintf(why, cap, "not a saved session (no %s at its start)",
		         QUIC_SESSION_MAGIC);
		return -1;
	}
	t = get32(buf + 8);
	if (t == 0 || t > QUIC_SESSION_TLS_MAX || n < 16 + t) {
		snprintf(why, cap, "a TLS session of %zu bytes in %zu", t, n);
		return -1;
	}
	p = get32(buf + 12 + t);
	if (p == 0 || p > QUIC_SESSION_TP_MAX || n != 16 + t + p) {
		snprintf(why, cap, "transport parameters of %zu bytes where "
		         "%zu are left", p, n - 16 - t);
		return -1;
	}
	if (ngtcp2_decode_transport_params(
	        &tp, NGTCP2_TRANSPORT_PARAMS_TYPE_ENCRYPTED_EXTENSIONS,
	        buf + 16 + t, p) != 0) {
		snprintf(why, cap, "its transport parameters do not decode");
		return -1;
	}
	s->tls.data = gnutls_malloc(t);
	if (s->tls.data == NULL) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	memcpy(s->tls.data, buf + 12, t);
	s->tls.size = (unsigned)t;
	memcpy(s->tp, buf + 16 + t, p);
	s->tplen = p;
	return 0;
}

int quic_session_load(quic_session *s, const char *path, char *why,
                      size_t cap)
{
	enum { FILE_MAX = 16 + QUIC_SESSION_TLS_MAX + QUIC_SESSION_TP_MAX };
	uint8_t *buf;
	size_t n;
	FILE *f;
	int rc;

	memset(s, 0, sizeof(*s));
	f = fopen(path, "rb");
	if (f == NULL && errno == ENOENT)
		return 0;
	if (f == NULL) {
		snprintf(why, cap, "%s", strerror(errno));
		return -1;
	}
	buf = malloc(FILE_MAX + 1);
	if (buf == NULL) {
		fclose(f);
		snprintf(why, cap, "out of memory");
		return -1;
	}
	n = fread(buf, 1, FILE_MAX + 1, f); /* one more: a longer file is bad */
	rc = ferror(f) ? -1 : session_parse(s, buf, n, why, cap);
	if (ferror(f))
		snprintf(why, cap, "cannot read it");
	fclose(f);
	free(buf);
	return rc < 0 ? -1 : 1;
}

void quic_session_free(quic_session *s)
{
	gnutls_free(s->tls.data);
	memset(s, 0, sizeof(*s));
}
