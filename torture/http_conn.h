/*
 * http_conn.h -- one client connection to keel-serve on 127.0.0.1 for
 * `torture --target http`: plain TCP, or TLS 1.3 with the server's
 * certificate pinned (--http-tls).
 *
 * CALLING SEQUENCE
 *   In the harness, before the first server starts (--http-tls only):
 *     http_conn_make_cert(store)    a throwaway self-signed certificate and
 *                                   key beside the store, key mode 0600
 *     http_conn_tls_context(h2)     the client context that trusts that one
 *                                   certificate and nothing else
 *   In the client process (inherited across fork) or the harness's probe:
 *     http_conn_open, http_conn_sendv / http_conn_recv, http_conn_close.
 *
 * A connection that breaks (the server was SIGKILLed, even half-way through
 * the handshake or a TLS record) reads as end of file or ECONNRESET/EPIPE;
 * one the server answers with something TLS cannot accept -- a wrong
 * certificate, a broken record -- is EPROTO, which the callers count as a
 * broken answer rather than a dead server.  Every read and write gives up
 * after HTTP_CONN_TIMEOUT_S (EAGAIN).
 */
#ifndef TORTURE_HTTP_CONN_H
#define TORTURE_HTTP_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <openssl/ssl.h>

/* No byte in this long is a hung server, not a slow disk; the harness
 * normally kills the server long before. */
#define HTTP_CONN_TIMEOUT_S 30

typedef struct http_conn {
	int sock;  /* the TCP connection; -1 when closed        */
	SSL *ssl;  /* the TLS session on it; NULL for plain TCP */
} http_conn;

/* Writes STORE.tls-cert.pem and STORE.tls-key.pem (mode 0600), replacing
 * any from an earlier run: a P-256 key and a self-signed certificate for
 * IP 127.0.0.1, valid for 30 days.  Keeps the certificate for
 * http_conn_tls_context.  The paths are returned in CERT and KEY (CAP
 * bytes each).  0, or -1 after a message on stderr. */
int http_conn_make_cert(const char *store, char *cert, char *key, size_t cap);

/* A client context: TLS 1.3 only, trusting only the certificate made by
 * http_conn_make_cert, the peer checked for IP 127.0.0.1, and ALPN offering
 * "h2" when H2, else "http/1.1".  NULL after a message on stderr. */
SSL_CTX *http_conn_tls_context(int h2);

/*
 * Connects to 127.0.0.1:PORT; with CTX, runs the TLS handshake and checks
 * the peer's certificate is the pinned one.  0; -1 with errno when the
 * server is not there or the connection broke (handshake included); -2
 * with *WHY when the handshake finished against something torture must
 * not trust (a wrong certificate).
 */
int http_conn_open(http_conn *c, uint16_t port, SSL_CTX *ctx,
                   const char **why);

/* The protocol ALPN chose ("h2", "http/1.1"), or "" when none or no TLS. */
const char *http_conn_alpn(const http_conn *c, char *buf, size_t cap);

/* Sends the N buffers of IOV in full.  0, or -1 with errno (EAGAIN: the
 * timeout; EPROTO: TLS failed; else the connection broke). */
int http_conn_sendv(http_conn *c, struct iovec *iov, int n);

/* Reads up to CAP bytes.  >0, 0 at end of file, -1 with errno as for
 * http_conn_sendv. */
ssize_t http_conn_recv(http_conn *c, void *buf, size_t cap);

/* Closes C (no TLS close_notify: the server may be dead). */
void http_conn_close(http_conn *c);

#endif /* TORTURE_HTTP_CONN_H */
