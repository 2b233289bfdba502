/*
 * quic_conn.h -- what our two HTTP/3 clients share: the torture writers
 * (torture/http3_client.c) and the test client (tests/h3_client.c).  One
 * QUIC v1 client connection to 127.0.0.1 through ngtcp2 0.12 with GnuTLS
 * (TLS 1.3, ALPN h3); the HTTP/3 on it (nghttp3) is the caller's.
 *
 * CALLING SEQUENCE
 *   quic_conn_callbacks(&cb)   the crypto, random and connection-ID
 *                              callbacks; the caller adds its stream ones
 *   quic_conn_open(c, ...)     the socket, the TLS session, the connection
 *   loop: quic_conn_write(c), then poll c->fd until ngtcp2's expiry, read
 *         with ngtcp2_conn_read_pkt / ngtcp2_conn_handle_expiry
 *   quic_conn_close(c)         frees what was made, also after a failed open
 *
 * RESUMPTION AND 0-RTT
 *   quic_session_load(&s, FILE)      a session saved before (or none yet)
 *   quic_conn_open_resumed(c, ..., &s, early, user)
 *                              as quic_conn_open, offering the session's
 *                              ticket; with EARLY, 0-RTT keys come with
 *                              the first Initial and requests opened
 *                              before the handshake go as early data
 *   on the handshake's end: quic_conn_resumed(c), quic_conn_early_accepted(c)
 *                              (not accepted: ngtcp2_conn_early_data_rejected
 *                              and send the requests again)
 *   once c->ticket: quic_conn_session_get(c, &s), quic_session_save(&s, FILE)
 *   quic_session_free(&s)
 *
 * ngtcp2 calls the callbacks with the USER given to quic_conn_open; once
 * the caller has bound HTTP/3 it sets c->http, and quic_conn_write then
 * sends what nghttp3 has to send as well.
 */
#ifndef TORTURE_QUIC_CONN_H
#define TORTURE_QUIC_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#define QUIC_CONN_PKT 1500 /* one datagram we send */
#define QUIC_CONN_RCVBUF (4 << 20) /* SO_RCVBUF asked for the UDP socket */

typedef struct quic_conn {
	int fd;                           /* connected UDP socket; -1: none */
	struct sockaddr_in local, remote; /* the path                       */
	ngtcp2_conn *quic;                /* the QUIC connection            */
	nghttp3_conn *http;               /* the caller's HTTP/3 on it      */
	gnutls_session_t tls;             /* its TLS 1.3 session            */
	gnutls_certificate_credentials_t cred; /* what it trusts            */
	ngtcp2_crypto_conn_ref ref;       /* how the crypto finds quic      */
	int ticket;                       /* a session ticket came          */
	int early;                        /* early data was offered         */
} quic_conn;

/* File layout of a saved session (quic_session_save), all integers
 * big-endian:
 *   offset  size  meaning
 *   0       8     "KEELH3S1"
 *   8       4     T, the TLS session's length (1..QUIC_SESSION_TLS_MAX)
 *   12      T     the TLS session (GnuTLS's packed form, with the ticket)
 *   12+T    4     P, the transport parameters' length (1..QUIC_SESSION_TP_MAX)
 *   16+T    P     the server's transport parameters (RFC 9000 18.2)
 * and nothing after. */
#define QUIC_SESSION_MAGIC "KEELH3S1"
#define QUIC_SESSION_TLS_MAX 16384
#define QUIC_SESSION_TP_MAX 1024

/* What a client keeps to resume a connection later: the TLS session
 * with the server's ticket, and the server's transport parameters (RFC
 * 9000 7.4.1: 0-RTT keeps to the limits the server gave before). */
typedef struct quic_session {
	gnutls_datum_t tls;  /* gnutls_session_get_data2's; NULL data: none */
	uint8_t tp[QUIC_SESSION_TP_MAX]; /* the server's transport
	                        parameters, encoded as it sent them          */
	size_t tplen;        /* of tp                                       */
} quic_session;

/* CLOCK_MONOTONIC in ngtcp2's nanoseconds. */
ngtcp2_tstamp quic_conn_now(void);

/* N bytes from getrandom(2). */
void quic_conn_random(uint8_t *p, size_t n);

/* Fills *CB with every callback a client needs that is not about streams
 * or the handshake's end (ngtcp2's crypto helpers, random, new IDs). */
void quic_conn_callbacks(ngtcp2_callbacks *cb);

/*
 * Connects to 127.0.0.1:PORT (a blocking socket: read it after poll, or
 * with MSG_DONTWAIT) and makes the client
 * connection: ngtcp2 calls CB with USER.  CERT: a PEM file, the only
 * certificate trusted, checked for IP 127.0.0.1; NULL: the server's
 * certificate is not checked (SNI "localhost").  TOKEN: sent in the first
 * Initial, or NULL.  With KEEL_SOURCE set in the environment (an IPv4
 * address of this host) the socket sends from it: a loopback test's second
 * source.  0, or -1 (quic_conn_close frees what was made).
 */
int quic_conn_open(quic_conn *c, uint16_t port, const char *cert,
                   const ngtcp2_callbacks *cb, const ngtcp2_vec *token,
                   void *user);

/* Sends all there is to send.  0; -1 with *RV 0 and errno when the socket
 * failed (ECONNREFUSED: nothing listens any more); -1 with *RV ngtcp2's or
 * nghttp3's error code. */
int quic_conn_write(quic_conn *c, int *rv);

/* Once the handshake is done: makes c->http, the client's HTTP/3 (nghttp3
 * with CB and USER, default settings), and opens and binds its control and
 * QPACK streams.  0, or -1 (quic_conn_close frees what was made). */
int quic_conn_http_start(quic_conn *c, const nghttp3_callbacks *cb,
                         void *user);

/* The glue every client's callbacks share.  quic_conn_stream_data: the
 * stream data ngtcp2 received (FIN: its end) to HTTP/3, and what nghttp3
 * took credited to QUIC's flow control; 0, or nghttp3's negative error
 * (nothing is read before c->http is made: 0).  quic_conn_credit: N
 * bytes of stream ID consumed (a body read, or one nghttp3 let go of).
 * quic_conn_acked: LEN more bytes of stream ID acknowledged, to nghttp3;
 * 0 or -1. */
int quic_conn_stream_data(quic_conn *c, int64_t id, const uint8_t *data,
                          size_t len, int fin);
void quic_conn_credit(quic_conn *c, int64_t id, uint64_t n);
int quic_conn_acked(quic_conn *c, int64_t id, uint64_t len);

/* As quic_conn_open, resuming S (its ticket offered; S is not kept).
 * EARLY: 0-RTT, c->early set; S's transport parameters bound the early
 * streams, which the caller may open (and start HTTP/3 on) right after
 * this returns.  0, or -1 (the TLS session in S does not load, or as
 * quic_conn_open). */
int quic_conn_open_resumed(quic_conn *c, uint16_t port, const char *cert,
                           const ngtcp2_callbacks *cb, const quic_session *s,
                           int early, void *user);

/* After the handshake: 1 when it resumed a session, else 0. */
int quic_conn_resumed(quic_conn *c);

/* After the handshake: 1 when the server took our early data, else 0. */
int quic_conn_early_accepted(quic_conn *c);

/* Once c->ticket: fills *S (quic_session_free frees it) with the
 * session to resume and the server's transport parameters.  0 or -1. */
int quic_conn_session_get(quic_conn *c, quic_session *s);

/* Writes S to PATH (layout above; through a temporary file and a
 * rename).  0, or -1 with the reason in WHY. */
int quic_session_save(const quic_session *s, const char *path, char *why,
                      size_t cap);

/* Reads the session saved at PATH into *S.  1 when one was read, 0 when
 * PATH does not exist (*S empty), -1 with the reason in WHY when it is
 * not a session file (wrong magic, lengths, trailing bytes, transport
 * parameters that do not decode) or cannot be read. */
int quic_session_load(quic_session *s, const char *path, char *why,
                      size_t cap);

/* Frees what S holds; S is empty after. */
void quic_session_free(quic_session *s);

/* Frees the connection, the TLS session, the socket, and c->http. */
void quic_conn_close(quic_conn *c);

#endif /* TORTURE_QUIC_CONN_H */
