/*
 * http_writer.h -- what the HTTP/1.1 client (http_client.c), the HTTP/2
 * client (http2_client.c) and the HTTP/3 client (http3_client.c) of `torture --target http` share: one writer's
 * state and the steps of an operation.
 *
 * A writer is what the embedded target calls a thread: writer t owns the
 * keys K % threads == t and has one operation at a time in flight, so the
 * record pipe sees INTENT, then DONE (or nothing, when the server died),
 * per writer in order.  Over HTTP/1.1 each writer is a thread with its own
 * connection; over HTTP/2 up to HTTP2_STREAMS writers share a connection,
 * one stream each, all in flight at once; over HTTP/3 (http3_client.c) up
 * to HTTP3_STREAMS writers share a QUIC connection the same way.
 */
#ifndef TORTURE_HTTP_WRITER_H
#define TORTURE_HTTP_WRITER_H

#include <stdint.h>

#include <openssl/ssl.h>

#include "http_conn.h"
#include "proto.h"
#include "value.h"
#include "writer.h"

#define HTTP_WRITER_PATH_MAX (1 + 3 * VALUE_KEY_MAX)
#define CLIENT_RX_MAX 8192 /* an answer's head; keel-serve's are ~200 bytes */

/* What one request came to. */
enum {
	REQ_ANSWERED = 0, /* a whole answer arrived: see status       */
	REQ_GONE = 1,     /* the connection broke first (server dead)  */
};

typedef struct hthread {
	const writer_plan *plan;
	uint16_t port;     /* keel-serve on 127.0.0.1                   */
	SSL_CTX *tls;      /* --http-tls: the client context; else NULL */
	int fd;            /* record pipe                               */
	http_conn conn;    /* keep-alive connection (HTTP/1.1 only)     */
	uint32_t t;        /* writer number                             */
	uint32_t nkeys;    /* keys owned: t, t + T, t + 2T, ...         */
	uint64_t seq;      /* next operation number                     */
	uint64_t rng;      /* workload generator state                  */
	uint8_t *present;  /* per owned key: it exists                  */
	uint64_t *rev;     /* per owned key: its revision (the ETag)     */
	uint8_t *buf;      /* one value                                  */
	char rx[CLIENT_RX_MAX]; /* the answer being read (HTTP/1.1)     */
	size_t rx_len;     /* bytes in rx                               */
} hthread;

/* The parts of an answer the client looks at. */
typedef struct answer {
	int status;        /* 201, 204, 412, ...                        */
	uint64_t etag;     /* the ETag's number; 0 when none            */
	int close;         /* Connection: close (HTTP/1.1)              */
} answer;

/* Picks writer H's next change into REC (count 1, key, len; len 0 is a
 * delete). */
void http_writer_choose(hthread *h, proto_rec *rec);

/* "/" and key K, every byte outside the unreserved set escaped. */
void http_writer_key_path(uint32_t k, char out[HTTP_WRITER_PATH_MAX]);

/* A decimal number of LEN bytes, nothing else, at most 18 digits.  0, or
 * -1. */
int http_writer_number(const char *p, size_t len, uint64_t *v);

/* Sends REC's INTENT (and, under --unsafe ack-before-commit, the early
 * ACK); for a put, encodes the value into H->buf.  0, or -1 when the
 * record pipe is gone. */
int http_writer_begin(hthread *h, proto_rec *rec);

/*
 * Ends REC after the request's outcome: N is REQ_ANSWERED with A, or -1
 * with WHY (a broken answer).  Sends DONE and, when the answer is the 2xx
 * the contract promises, updates the writer's view of the key.  0: the
 * writer goes on; -1: it stops (a violation was reported, or the pipe is
 * gone).
 */
int http_writer_finish(hthread *h, proto_rec *rec, int n, const answer *a,
                       const char *why);

/* Writers per HTTP/2 connection, each with its stream in flight. */
#define HTTP2_STREAMS 4

/* One HTTP/2 connection's thread (http2_client.c): ARG is an
 * http2_group.  Runs its writers until the connection breaks or every
 * writer stopped. */
typedef struct http2_group {
	hthread *w;  /* its writers                 */
	uint32_t n;  /* how many: 1..HTTP2_STREAMS  */
} http2_group;
void *http2_connection_thread(void *arg);

/* Writers per HTTP/3 (QUIC) connection, each with its stream in flight. */
#define HTTP3_STREAMS 4

/* One QUIC connection's thread (http3_client.c): ARG is an http3_group.
 * Runs its writers until the connection breaks or every writer stopped;
 * a server gone already (or killed in the handshake) ends it quietly, a
 * handshake that fails otherwise ends the process (exit status 5: the
 * probe saw this server's kind finish one). */
typedef struct http3_group {
	hthread *w;        /* its writers                            */
	uint32_t n;        /* how many: 1..HTTP3_STREAMS             */
	const char *cert;  /* the certificate to trust (PEM file)    */
} http3_group;
void *http3_connection_thread(void *arg);

/* The first cycle's check that keel-serve on 127.0.0.1:PORT speaks
 * HTTP/3: a QUIC handshake within 5 s against CERT alone, ALPN h3.  0,
 * or -1 with *WHY. */
int http3_probe(uint16_t port, const char *cert, const char **why);

#endif /* TORTURE_HTTP_WRITER_H */
