/*
 * serve_tls.h -- keel-serve's TLS (--tls-cert, --tls-key; docs/http.md
 * "TLS"), through OpenSSL 3.
 *
 * CALLING SEQUENCE
 *   serve_tls_load(cert, key, &ctx, why, cap) at startup and on each
 *   SIGHUP: a context for new connections, or a message and nothing.
 *   Per connection: serve_tls_first_record() until the client's first
 *   handshake record is whole in the socket, then serve_tls_new(ctx, fd),
 *   serve_tls_handshake() until it
 *   returns 1, then serve_tls_read() / serve_tls_writev() in place of
 *   read() / writev(); serve_tls_close_notify() before a clean close and
 *   serve_tls_free() with the connection.  serve_tls_ctx_free() drops the
 *   caller's reference to a context (connections hold their own).
 *
 * NON-BLOCKING I/O
 *   Every call here returns at once.  OpenSSL's "want read" and "want
 *   write" both come back as -1 with errno EAGAIN: the connection is
 *   registered for both edges (serve_conn.c), so whichever the record
 *   layer waits for brings the caller back.  serve_tls_read() may hold
 *   decrypted bytes it has not returned (a record larger than the
 *   caller's buffer): callers read until EAGAIN, never stopping at a
 *   short read, because no epoll edge comes for bytes already inside
 *   OpenSSL.
 *
 * TICKETS
 *   Sessions resume through stateless tickets (TLS 1.3 and 1.2) sealed
 *   with a process-wide pair of keys, current and previous.  The current
 *   key is replaced every SERVE_TLS_TICKET_ROTATE_S; a ticket sealed with
 *   the previous one is still accepted (and replaced by a fresh one), so
 *   a ticket lives at most two periods.  The keys are kept in memory only
 *   and outlive SIGHUP's new context, so a reload does not cost clients
 *   their sessions; a restart does.
 */
#ifndef SERVE_TLS_H
#define SERVE_TLS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <openssl/ssl.h>

#define SERVE_TLS_TICKET_ROTATE_S (12 * 3600) /* a ticket key's term     */
#define SERVE_TLS_ERR_MAX 512                 /* a message from load     */

/* Builds a server context from CERT (PEM: the certificate, then any
 * chain) and KEY (PEM), which must match, with TLS 1.2 as the floor, ALPN
 * h2 then http/1.1 and the shared ticket keys.  KEY must be readable by its owner
 * alone.  An expired certificate is loaded with a warning on stderr.
 * Returns 0 with *OUT set, or -1 with a message in WHY (CAP bytes). */
int serve_tls_load(const char *cert, const char *key, SSL_CTX **out,
                   char *why, size_t cap);
/* Drops the caller's reference to CTX (NULL is fine). */
void serve_tls_ctx_free(SSL_CTX *ctx);
/* The certificate's subject and expiry, for a log line, into BUF. */
void serve_tls_describe(SSL_CTX *ctx, char *buf, size_t cap);

/* A server-side connection on FD with CTX (which it references);
 * NULL when out of memory. */
SSL *serve_tls_new(SSL_CTX *ctx, int fd);
void serve_tls_free(SSL *ssl);
/* Peeks at FD's first record: 1 when a TLS handshake record (0x16) is
 * whole in the socket (nothing of it read yet), 0 when the first byte is
 * something else (plain HTTP, say), -1 with errno EAGAIN until the record
 * is whole, or -2 at EOF or an error.  Until then the handshake is not
 * started, so OpenSSL holds no buffer for it. */
int serve_tls_first_record(int fd);
/* Drives the handshake: 1 when done, -1 with errno EAGAIN to wait for
 * the socket, -2 when it failed (a refused version, garbage). */
int serve_tls_handshake(SSL *ssl);
/* As read(2): bytes, 0 at the client's end of stream, -1 with errno
 * EAGAIN or ECONNRESET. */
ssize_t serve_tls_read(SSL *ssl, void *buf, size_t n);
/* As writev(2), one record (or more) per entry, from the caller's memory
 * without a copy: bytes written, or -1 with errno EAGAIN or EPIPE.  After
 * a short count or EAGAIN the next call must begin with the same unwritten
 * bytes (OpenSSL's retry rule); serve_conn.c's queue guarantees that. */
ssize_t serve_tls_writev(SSL *ssl, const struct iovec *iov, int cnt);
/* Sends close_notify, if the connection is in a state to (best effort,
 * never blocks). */
void serve_tls_close_notify(SSL *ssl);

#endif /* SERVE_TLS_H */
