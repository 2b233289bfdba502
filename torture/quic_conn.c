/*
 * quic_conn.c -- one QUIC client connection to 127.0.0.1 (see
 * quic_conn.h).
 */
#include "quic_conn.h"

#include <errno.h>
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

/* The TLS session: TLS 1.3, ALPN h3; with CERT, trusting it alone for
 * 127.0.0.1. */
static int tls_open(quic_conn *c, const char *cert)
{
	gnutls_datum_t alpn = {(unsigned char *)"h3", 2};

	if (gnutls_certificate_allocate_credentials(&c->cred) != 0 ||
	    (cert && gnutls_certificate_set_x509_trust_file(
	                     c->cred, cert, GNUTLS_X509_FMT_PEM) <= 0) ||
	    gnutls_init(&c->tls, GNUTLS_CLIENT |
	                         GNUTLS_NO_END_OF_EARLY_DATA) != 0)
		return -1;
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

int quic_conn_open(quic_conn *c, uint16_t port, const char *cert,
                   const ngtcp2_callbacks *cb, const ngtcp2_vec *token,
                   void *user)
{
	ngtcp2_path path;
	ngtcp2_settings settings;
	ngtcp2_transport_params params;
	ngtcp2_cid dcid = {.datalen = 16}, scid = {.datalen = 16};
	socklen_t alen = sizeof(c->local);

	c->remote.sin_family = AF_INET;
	c->remote.sin_port = htons(port);
	c->remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
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
	if (tls_open(c, cert) < 0 ||
	    ngtcp2_conn_client_new(&c->quic, &dcid, &scid, &path,
	                           NGTCP2_PROTO_VER_V1, cb, &settings,
	                           &params, NULL, user) != 0)
		return -1;
	ngtcp2_conn_set_tls_native_handle(c->quic, c->tls);
	return 0;
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
