/*
 * http_conn.c -- plain or TLS connections to keel-serve (see http_conn.h).
 */
#include "http_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static X509 *pinned; /* the certificate http_conn_make_cert made */

/* The certificate: self-signed, subject and SAN 127.0.0.1. */
static X509 *self_signed(EVP_PKEY *key)
{
	X509 *x = X509_new();
	X509_NAME *name;
	X509V3_CTX v3;
	X509_EXTENSION *san = NULL;

	if (!x || !X509_set_version(x, X509_VERSION_3) ||
	    !ASN1_INTEGER_set(X509_get_serialNumber(x), 1) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 30L * 86400) ||
	    !X509_set_pubkey(x, key))
		goto out_free;
	name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	                                (const unsigned char *)"127.0.0.1",
	                                -1, -1, 0) ||
	    !X509_set_issuer_name(x, name))
		goto out_free;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	san = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name,
	                          "IP:127.0.0.1");
	if (!san || !X509_add_ext(x, san, -1) ||
	    !X509_sign(x, key, EVP_sha256()))
		goto out_free;
	X509_EXTENSION_free(san);
	return x;
out_free:
	X509_EXTENSION_free(san);
	X509_free(x);
	return NULL;
}

/* Writes the key to PATH, created 0600 (keel-serve refuses a key open to
 * others).  0, or -1 with errno. */
static int write_key(const char *path, EVP_PKEY *key)
{
	FILE *f;
	int fd, ok;

	if (unlink(path) < 0 && errno != ENOENT)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (!(f = fdopen(fd, "w"))) {
		close(fd);
		return -1;
	}
	ok = PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	if (fclose(f) != 0 || !ok)
		return errno = ok ? errno : EIO, -1;
	return 0;
}

static int write_cert(const char *path, X509 *x)
{
	FILE *f = fopen(path, "we");
	int ok;

	if (!f)
		return -1;
	ok = PEM_write_X509(f, x);
	if (fclose(f) != 0 || !ok)
		return errno = ok ? errno : EIO, -1;
	return 0;
}

int http_conn_make_cert(const char *store, char *cert, char *key, size_t cap)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	const char *what = "cannot make a key";

	if ((size_t)snprintf(cert, cap, "%s.tls-cert.pem", store) >= cap ||
	    (size_t)snprintf(key, cap, "%s.tls-key.pem", store) >= cap) {
		what = "path too long";
		goto out_fail;
	}
	if (!k)
		goto out_fail;
	X509_free(pinned);
	if (!(pinned = self_signed(k))) {
		what = "cannot make a certificate";
		goto out_fail;
	}
	if (write_key(key, k) < 0 || write_cert(cert, pinned) < 0) {
		fprintf(stderr, "torture: --http-tls: cannot write %s/%s: %s\n",
		        key, cert, strerror(errno));
		EVP_PKEY_free(k);
		return -1;
	}
	EVP_PKEY_free(k);
	return 0;
out_fail:
	fprintf(stderr, "torture: --http-tls: %s: %s\n", what,
	        ERR_reason_error_string(ERR_get_error()) ?
	        ERR_reason_error_string(ERR_get_error()) : "?");
	EVP_PKEY_free(k);
	return -1;
}

SSL_CTX *http_conn_tls_context(int h2)
{
	static const unsigned char alpn_h2[] = "\x02h2";
	static const unsigned char alpn_h1[] = "\x08http/1.1";
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	X509_STORE *trust;

	if (!ctx || !pinned)
		goto out_fail;
	trust = SSL_CTX_get_cert_store(ctx);
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !X509_STORE_add_cert(trust, pinned) ||
	    SSL_CTX_set_alpn_protos(ctx, h2 ? alpn_h2 : alpn_h1,
	                            h2 ? sizeof(alpn_h2) - 1 :
	                                 sizeof(alpn_h1) - 1) != 0 ||
	    !X509_VERIFY_PARAM_set1_ip_asc(SSL_CTX_get0_param(ctx),
	                                   "127.0.0.1"))
		goto out_fail;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* A killed server's connection ends without close_notify: that is
	 * end of file here, the same as for plain TCP. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	return ctx;
out_fail:
	fprintf(stderr, "torture: --http-tls: cannot make the client's TLS "
	        "context\n");
	SSL_CTX_free(ctx);
	return NULL;
}

/* Maps a failed SSL call's result to errno: the connection broke, the
 * timeout ran out (EAGAIN), or TLS itself failed (EPROTO). */
static void tls_errno(SSL *ssl, int r)
{
	int e = errno;

	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_ZERO_RETURN:
		errno = 0;
		break;
	case SSL_ERROR_SYSCALL:
		errno = e ? e : ECONNRESET;
		break;
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		break;
	default:
		errno = EPROTO;
	}
	ERR_clear_error();
}

void http_conn_close(http_conn *c)
{
	SSL_free(c->ssl);
	c->ssl = NULL;
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
}

/* The handshake.  0, -1 (errno: broke), -2 (*WHY). */
static int handshake(http_conn *c, SSL_CTX *ctx, const char **why)
{
	X509 *peer;
	int r, same;

	if (!(c->ssl = SSL_new(ctx)) || !SSL_set_fd(c->ssl, c->sock))
		return errno = ENOMEM, -1;
	errno = 0;
	ERR_clear_error();
	r = SSL_connect(c->ssl);
	if (r != 1) {
		long v = SSL_get_verify_result(c->ssl);
		tls_errno(c->ssl, r);
		if (v != X509_V_OK) {
			*why = X509_verify_cert_error_string(v);
			return -2;
		}
		/* Most often the server died half-way through; a server that
		 * refuses the handshake outright is found by the harness's
		 * probe in the first cycle. */
		if (errno == 0 || errno == EPROTO)
			errno = ECONNRESET;
		return -1;
	}
	peer = SSL_get1_peer_certificate(c->ssl);
	same = peer && X509_cmp(peer, pinned) == 0;
	X509_free(peer);
	if (!same) {
		*why = "the server's certificate is not the one torture made";
		return -2;
	}
	return 0;
}

int http_conn_open(http_conn *c, uint16_t port, SSL_CTX *ctx,
                   const char **why)
{
	struct sockaddr_in a;
	struct timeval tv = {.tv_sec = HTTP_CONN_TIMEOUT_S};
	int one = 1, rc;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->ssl = NULL;
	c->sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0)
		return -1;
	/* Nodelay: head and body leave at once, nothing to coalesce. */
	setsockopt(c->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(c->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(c->sock, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto out_close;
	if (!ctx)
		return 0;
	rc = handshake(c, ctx, why);
	if (rc == 0)
		return 0;
	if (rc == -2) {
		http_conn_close(c);
		return -2;
	}
out_close:
	rc = errno;
	http_conn_close(c);
	errno = rc;
	return -1;
}

const char *http_conn_alpn(const http_conn *c, char *buf, size_t cap)
{
	const unsigned char *p = NULL;
	unsigned len = 0;

	buf[0] = '\0';
	if (c->ssl)
		SSL_get0_alpn_selected(c->ssl, &p, &len);
	if (p && len < cap) {
		memcpy(buf, p, len);
		buf[len] = '\0';
	}
	return buf;
}

/* Plain TCP: sendmsg until all is out. */
static int send_plain(int sock, struct iovec *iov, int n)
{
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};

	while (m.msg_iovlen) {
		ssize_t w = sendmsg(sock, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w == 0 ? (errno = EPIPE, -1) : -1;
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

int http_conn_sendv(http_conn *c, struct iovec *iov, int n)
{
	if (!c->ssl)
		return send_plain(c->sock, iov, n);
	for (int i = 0; i < n; i++) {
		size_t done = 0;
		while (done < iov[i].iov_len) {
			size_t w = 0;
			int r;
			errno = 0;
			r = SSL_write_ex(c->ssl, (char *)iov[i].iov_base + done,
			                 iov[i].iov_len - done, &w);
			if (r <= 0) {
				tls_errno(c->ssl, r);
				if (errno == EINTR)
					continue;
				if (errno == 0)
					errno = EPIPE;
				return -1;
			}
			done += w;
		}
	}
	return 0;
}

ssize_t http_conn_recv(http_conn *c, void *buf, size_t cap)
{
	ssize_t n;

	if (!c->ssl) {
		do
			n = recv(c->sock, buf, cap, 0);
		while (n < 0 && errno == EINTR);
		return n;
	}
	for (;;) {
		size_t got = 0;
		int r;
		errno = 0;
		r = SSL_read_ex(c->ssl, buf, cap, &got);
		if (r > 0)
			return (ssize_t)got;
		tls_errno(c->ssl, r);
		if (errno == EINTR)
			continue;
		return errno == 0 ? 0 : -1;
	}
}
