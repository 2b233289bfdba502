/*
 * serve_tls.c -- TLS for keel-serve's connections (serve_tls.h says how it
 * is called; docs/http.md "TLS" says what clients see).
 */
#include "serve_tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#define TLS_RECORD_HANDSHAKE 0x16 /* a TLS record's first byte: handshake */

/* ---- ticket keys: current and previous, rotated by age ----------------- */

/* One ticket key: its name (sent in the clear inside each ticket, to find
 * the key again) and the two secrets that seal the ticket. */
struct ticket_key {
	unsigned char name[16];
	unsigned char aes[32];  /* AES-256-CBC */
	unsigned char hmac[32]; /* HMAC-SHA256 */
};

/* Shared by every context, old and new, and by every shard's thread. */
static struct {
	pthread_mutex_t lock;
	int ready;                /* keys made at least once                 */
	time_t made;              /* when current was made (CLOCK_MONOTONIC) */
	struct ticket_key current, previous;
	/* AES-256-CBC, fetched from the provider once, at the first load:
	 * handing OpenSSL 3 the built-in EVP_aes_256_cbc() instead makes it
	 * look the algorithm up again (names, locks) at every ticket */
	EVP_CIPHER *cipher;
} tickets = {.lock = PTHREAD_MUTEX_INITIALIZER};

static time_t mono_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static int ticket_key_make(struct ticket_key *k)
{
	return RAND_bytes(k->name, sizeof k->name) == 1 &&
	               RAND_bytes(k->aes, sizeof k->aes) == 1 &&
	               RAND_bytes(k->hmac, sizeof k->hmac) == 1
	           ? 0
	           : -1;
}

/* With tickets.lock held: makes the first keys, or retires a current key
 * older than SERVE_TLS_TICKET_ROTATE_S.  -1 when no randomness. */
static int tickets_rotate_locked(void)
{
	time_t now = mono_sec();

	if (tickets.ready && now - tickets.made < SERVE_TLS_TICKET_ROTATE_S)
		return 0;
	if (!tickets.ready) {
		if (ticket_key_make(&tickets.current) < 0)
			return -1;
		/* nothing was ever sealed with this one: a name no ticket has */
		tickets.previous = tickets.current;
		tickets.previous.name[0] ^= 0xff;
	} else {
		struct ticket_key fresh;
		if (ticket_key_make(&fresh) < 0)
			return -1;
		tickets.previous = tickets.current;
		tickets.current = fresh;
	}
	tickets.ready = 1;
	tickets.made = now;
	return 0;
}

static int ticket_mac_init(EVP_MAC_CTX *hctx, unsigned char *key)
{
	OSSL_PARAM params[3];

	params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key,
	                                              32);
	params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	                                             (char *)"SHA256", 0);
	params[2] = OSSL_PARAM_construct_end();
	return EVP_MAC_CTX_set_params(hctx, params) == 1 ? 0 : -1;
}

/*
 * OpenSSL's ticket callback (SSL_CTX_set_tlsext_ticket_key_evp_cb).  ENC:
 * seal a new ticket with the current key; return 1.  Else open one: 1 for
 * the current key, 2 for the previous (accept, and issue a fresh ticket),
 * 0 for an unknown or expired key (a full handshake), -1 on error.
 */
static int ticket_cb(SSL *s, unsigned char name[16], unsigned char *iv,
                     EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
	struct ticket_key k;
	int rc = 1;

	(void)s;
	pthread_mutex_lock(&tickets.lock);
	if (tickets_rotate_locked() < 0) {
		pthread_mutex_unlock(&tickets.lock);
		return -1;
	}
	if (enc) {
		k = tickets.current;
	} else if (memcmp(name, tickets.current.name, 16) == 0) {
		k = tickets.current;
	} else if (memcmp(name, tickets.previous.name, 16) == 0) {
		k = tickets.previous;
		rc = 2;
	} else {
		rc = 0;
	}
	pthread_mutex_unlock(&tickets.lock);
	if (rc == 0)
		return 0;
	if (enc) {
		memcpy(name, k.name, 16);
		if (RAND_bytes(iv, EVP_MAX_IV_LENGTH) != 1 ||
		    EVP_EncryptInit_ex2(cctx, tickets.cipher, k.aes, iv, NULL) != 1)
			rc = -1;
	} else if (EVP_DecryptInit_ex2(cctx, tickets.cipher, k.aes, iv,
	                               NULL) != 1) {
		rc = -1;
	}
	if (rc > 0 && ticket_mac_init(hctx, k.hmac) < 0)
		rc = -1;
	OPENSSL_cleanse(&k, sizeof k);
	return rc;
}

/* ---- contexts ------------------------------------------------------------ */

/* ALPN: h2 when the client offers it (serve_h2.c), else http/1.1; the
 * server's order decides.  A client that offers neither gets no ALPN
 * answer rather than an alert, and HTTP/1.1 if it sends that anyway. */
static int alpn_cb(SSL *s, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char ours[] = "\x02h2\x08http/1.1";

	(void)s;
	(void)arg;
	if (SSL_select_next_proto((unsigned char **)out, outlen, ours,
	                          sizeof ours - 1, in, inlen) ==
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_OK;
	return SSL_TLSEXT_ERR_NOACK;
}

/* OpenSSL's last error as text, after PREFIX, into WHY; clears the queue. */
static int fail(char *why, size_t cap, const char *prefix)
{
	unsigned long e = ERR_peek_last_error();
	char text[256] = "";

	if (e)
		ERR_error_string_n(e, text, sizeof text);
	snprintf(why, cap, "%s%s%s", prefix, e ? ": " : "", text);
	ERR_clear_error();
	return -1;
}

/* A private key others can read is no longer private: refuse it, with the
 * fix.  Returns 0, or -1 with a message. */
static int key_private(const char *key, char *why, size_t cap)
{
	struct stat st;

	if (stat(key, &st) < 0) {
		snprintf(why, cap, "--tls-key %s: %s", key, strerror(errno));
		return -1;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(why, cap, "--tls-key %s is open to group or others (mode "
		         "%04o): the key must be readable by its owner only; run "
		         "'chmod 600 %s'", key, (unsigned)(st.st_mode & 07777), key);
		return -1;
	}
	return 0;
}

/* An expired (or not yet valid) certificate is served, with a warning:
 * refusing would turn a forgotten renewal into an outage. */
static void warn_validity(SSL_CTX *ctx, const char *cert)
{
	X509 *x = SSL_CTX_get0_certificate(ctx);

	if (x == NULL)
		return;
	if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
		fprintf(stderr, "keel-serve: warning: --tls-cert %s has expired; "
		        "clients that check it will refuse to connect\n", cert);
	else if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
		fprintf(stderr, "keel-serve: warning: --tls-cert %s is not valid "
		        "yet\n", cert);
}

/* The settings every context gets (docs/http.md, "TLS"). */
static int ctx_settings(SSL_CTX *ctx)
{
	static const unsigned char sid[] = "keel-serve";

	/* partial writes: a large GET body goes out record by record, and
	 * what was written is dropped from the queue; moving buffer: a
	 * retried write starts at the same bytes but may come through a
	 * rebuilt iovec; release buffers: an idle connection holds no
	 * record buffers (docs/http.md, memory per idle connection) */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	                          SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
	                          SSL_MODE_RELEASE_BUFFERS);
	/* a client that drops the connection without close_notify is the
	 * common case for HTTP (the length says where answers end): an end
	 * of stream, not an error */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF |
	                             SSL_OP_NO_RENEGOTIATION |
	                             SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* tickets only: no server-side session cache to grow with clients */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_timeout(ctx, SERVE_TLS_TICKET_ROTATE_S);
	SSL_CTX_set_num_tickets(ctx, 1);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, NULL);
	/* read ahead: one read(2) takes whatever the socket holds, where
	 * OpenSSL would otherwise read each record's 5-byte header and then
	 * its body apart -- a TLS 1.3 handshake and one request cost ten
	 * reads that way.  Callers read until EAGAIN (serve_tls.h), so bytes
	 * read ahead are never left waiting for an edge. */
	SSL_CTX_set_read_ahead(ctx, 1);
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1) != 1 ||
	    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_cb) != 1)
		return -1;
	return 0;
}

int serve_tls_load(const char *cert, const char *key, SSL_CTX **out,
                   char *why, size_t cap)
{
	char prefix[SERVE_TLS_ERR_MAX];
	SSL_CTX *ctx;

	*out = NULL;
	ERR_clear_error();
	if (key_private(key, why, cap) < 0)
		return -1;
	pthread_mutex_lock(&tickets.lock);
	if (tickets_rotate_locked() < 0) {
		pthread_mutex_unlock(&tickets.lock);
		return fail(why, cap, "no randomness for ticket keys");
	}
	if (tickets.cipher == NULL)
		tickets.cipher = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
	pthread_mutex_unlock(&tickets.lock);
	if (tickets.cipher == NULL) /* kept for the process's life */
		return fail(why, cap, "no AES-256-CBC for session tickets");
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL || ctx_settings(ctx) < 0) {
		SSL_CTX_free(ctx);
		return fail(why, cap, "cannot set up TLS");
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		snprintf(prefix, sizeof prefix, "--tls-cert %s: not a PEM "
		         "certificate (chain) that can be read", cert);
		goto out_free;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		snprintf(prefix, sizeof prefix, "--tls-key %s: not a PEM private "
		         "key that can be read, or not the key of --tls-cert %s",
		         key, cert);
		goto out_free;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(prefix, sizeof prefix, "--tls-key %s is not the key of "
		         "--tls-cert %s", key, cert);
		goto out_free;
	}
	warn_validity(ctx, cert);
	*out = ctx;
	return 0;
out_free:
	SSL_CTX_free(ctx);
	return fail(why, cap, prefix);
}

void serve_tls_ctx_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);
}

void serve_tls_describe(SSL_CTX *ctx, char *buf, size_t cap)
{
	X509 *x = SSL_CTX_get0_certificate(ctx);
	char subject[256] = "?", until[64] = "?";
	BIO *b = BIO_new(BIO_s_mem());
	int n;

	if (x) {
		X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof subject);
		if (b && ASN1_TIME_print(b, X509_get0_notAfter(x)) == 1 &&
		    (n = BIO_read(b, until, sizeof until - 1)) > 0)
			until[n] = 0;
	}
	BIO_free(b);
	snprintf(buf, cap, "%s, valid until %s", subject, until);
}

/* ---- connections ---------------------------------------------------------- */

SSL *serve_tls_new(SSL_CTX *ctx, int fd)
{
	SSL *ssl = SSL_new(ctx);

	if (ssl == NULL)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1) { /* the BIO does not close FD */
		SSL_free(ssl);
		ERR_clear_error();
		return NULL;
	}
	SSL_set_accept_state(ssl);
	return ssl;
}

void serve_tls_free(SSL *ssl)
{
	SSL_free(ssl);
}

/*
 * The first record is waited for in the socket, not in OpenSSL: its first
 * SSL_do_handshake allocates the handshake message buffer (21.8 KB) and,
 * for a record that is not whole, keeps its 17 KB read buffer, so a client
 * that sent five bytes and stalled cost 46 KB until the deadline; waiting
 * here it costs the SSL object alone.  A ClientHello longer than one record
 * is rare; its later records are OpenSSL's to wait for.
 */
int serve_tls_first_record(int fd)
{
	unsigned char h[5];
	size_t len;
	ssize_t n;
	int avail;

	do
		n = recv(fd, h, sizeof h, MSG_PEEK);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno != EAGAIN))
		return -2;
	if (n < 0)
		return -1;
	if (h[0] != TLS_RECORD_HANDSHAKE)
		return 0;
	if (n < (ssize_t)sizeof h)
		goto wait;
	len = (size_t)h[3] << 8 | h[4];
	if (len > SSL3_RT_MAX_ENCRYPTED_LENGTH)
		return 1; /* OpenSSL refuses it with an alert */
	if (ioctl(fd, FIONREAD, &avail) < 0)
		return -2;
	if ((size_t)avail >= sizeof h + len)
		return 1;
wait:
	errno = EAGAIN; /* a new edge comes with each new segment */
	return -1;
}

/* Maps an I/O call's failure to errno: EAGAIN for "try again when the
 * socket is ready" (read or write: both edges are watched), else ERR. */
static void io_errno(SSL *ssl, int ret, int err)
{
	int e = SSL_get_error(ssl, ret);

	errno = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? EAGAIN
	                                                              : err;
	ERR_clear_error(); /* the queue is per thread: leave it empty */
}

int serve_tls_handshake(SSL *ssl)
{
	int ret;

	ERR_clear_error();
	ret = SSL_do_handshake(ssl);
	if (ret == 1)
		return 1;
	io_errno(ssl, ret, EPROTO);
	return errno == EAGAIN ? -1 : -2;
}

ssize_t serve_tls_read(SSL *ssl, void *buf, size_t n)
{
	size_t got = 0;
	int ret, e;

	ERR_clear_error();
	ret = SSL_read_ex(ssl, buf, n, &got);
	if (ret == 1)
		return (ssize_t)got;
	e = SSL_get_error(ssl, ret);
	if (e == SSL_ERROR_ZERO_RETURN) {
		ERR_clear_error();
		return 0;
	}
	io_errno(ssl, ret, ECONNRESET);
	return -1;
}

/*
 * One TLS record carries at most 16 KiB, and each SSL_write is at least one
 * record and one write(2): pieces smaller than a record (an HTTP/2 frame
 * header and the DATA payload after it, a response head and a small body)
 * are gathered into one record first.  The copy costs little beside the
 * encryption, which reads every byte anyway.  A retried write after
 * WANT_WRITE starts with the same bytes, however the caller cuts them now
 * (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
 */
#define TLS_RECORD 16384

ssize_t serve_tls_writev(SSL *ssl, const struct iovec *iov, int cnt)
{
	static __thread unsigned char stage[TLS_RECORD];
	size_t total = 0, skip = 0; /* bytes of iov[i] already sent */
	int i = 0;

	while (i < cnt) {
		const void *buf = (const char *)iov[i].iov_base + skip;
		size_t len = iov[i].iov_len - skip, done = 0;
		int ret;

		if (len == 0) {
			i++;
			skip = 0;
			continue;
		}
		if (len < TLS_RECORD && i + 1 < cnt) {
			/* gather up to one record from here on */
			size_t used = 0, off = skip;
			for (int j = i; j < cnt && used < TLS_RECORD; j++, off = 0) {
				size_t n = iov[j].iov_len - off;
				if (n > TLS_RECORD - used)
					n = TLS_RECORD - used;
				memcpy(stage + used,
				       (const char *)iov[j].iov_base + off, n);
				used += n;
			}
			buf = stage;
			len = used;
		}
		ERR_clear_error();
		ret = SSL_write_ex(ssl, buf, len, &done);
		if (ret != 1) {
			if (total > 0) {
				ERR_clear_error(); /* the next call says why again */
				break;
			}
			io_errno(ssl, ret, EPIPE);
			return -1;
		}
		total += done;
		for (size_t d = done; d > 0;) { /* past DONE bytes */
			size_t left = iov[i].iov_len - skip;
			if (d < left) {
				skip += d;
				d = 0;
			} else {
				d -= left;
				skip = 0;
				i++;
			}
		}
		if (done < len)
			break; /* a partial write: the socket is full */
	}
	return (ssize_t)total;
}

void serve_tls_close_notify(SSL *ssl)
{
	ERR_clear_error();
	if (SSL_is_init_finished(ssl))
		SSL_shutdown(ssl);
	ERR_clear_error();
}
