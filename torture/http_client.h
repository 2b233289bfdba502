/*
 * http_client.h -- the writer of `torture --target http`: a process of
 * --threads client threads that change the store through keel-serve.
 *
 * It is the embedded writer (writer.h) with the engine replaced by HTTP/1.1
 * (over TLS 1.3 with --http-tls; HTTP/2 with --http2 and HTTP/3 with
 * --http3, see below):
 * thread t owns the keys K % threads == t, issues one request at a time on
 * its own keep-alive connection, and reports over the same record pipe
 * (proto.h): INTENT before the request is sent, DONE after the answer
 * arrived.  A 2xx answer is the acknowledgement and its ETag the commit's
 * txid.  Every request names its predecessor: If-None-Match: * when the key
 * is absent, If-Match: "<rev>" when it is present, so an answer that is not
 * a 2xx means the server lost or invented a write (or failed) -- sent as DONE
 * with a keel_err, which the harness counts as a violation.
 *
 *   PUT    /<key>  body = a self-describing value (value.h)   201 or 204
 *   DELETE /<key>                                              204
 *
 * There are no batches: HTTP has no multi-key commit.  A connection that
 * breaks without an answer (the server was SIGKILLed) ends the thread
 * without a DONE: the request is unacknowledged, which the oracle allows to
 * survive or vanish.  The process exits once every thread has ended.
 */
#ifndef TORTURE_HTTP_CLIENT_H
#define TORTURE_HTTP_CLIENT_H

#include <stdint.h>

#include <openssl/ssl.h>

#include "writer.h"

/* The client process's whole life; never returns.  PORT: keel-serve on
 * 127.0.0.1; TLS: the client context for --http-tls (http_conn.h), else
 * NULL; with --http2 the writers speak HTTP/2 (h2 by ALPN over TLS, h2c
 * by prior knowledge without), HTTP2_STREAMS of them sharing each
 * connection (http_writer.h); with --http3 HTTP/3 over QUIC to the same
 * port, HTTP3_STREAMS of them per connection, trusting CERT (the PEM file
 * http_conn_make_cert wrote; else unused); START_NS: how long the server
 * took to start (sent as the OPENED record's time); FD: the record pipe's
 * write end. */
void http_client_main(const writer_plan *plan, uint16_t port, SSL_CTX *tls,
                      const char *cert, uint64_t start_ns, int fd)
	__attribute__((noreturn));

#endif /* TORTURE_HTTP_CLIENT_H */
