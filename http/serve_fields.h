/*
 * serve_fields.h -- a request's header fields as HTTP/2 and HTTP/3 hand
 * them over, one decoded field at a time (nghttp2's and nghttp3's header
 * callbacks), made into the struct http_request that serve_req.c answers,
 * with the checks the HTTP/1.1 parser (http_parse.h) makes on its own
 * text.  Written once for both protocols.
 *
 * CALLING SEQUENCE (one request stream)
 *   struct serve_fields f = {0};
 *   fields_add(&f, name, nlen, value, vlen, list_max)   per field
 *   status = fields_request(&f, &req)                   headers are whole
 *       0: REQ is filled, its slices point into F (kept until fields_free)
 *       else the status to refuse with (400, 414, 431)
 *   fields_free(&f)                                     with the stream
 *
 * Only the fields serve_req.c reads are kept (SERVE_FIELD_*), each once:
 * a repeat is counted and refused by fields_request (400) for those that
 * must be single.  Every field counts against LIST_MAX as its name, value
 * and 32 bytes (RFC 9113 6.5.2, RFC 9114 4.2.2); past it the request is
 * refused with 431, and a :path longer than HTTP_TARGET_MAX with 414,
 * without keeping more.  A field whose value begins or ends with a space
 * or a tab, which both protocols forbid (RFC 9113 8.2.1, RFC 9114 4.2), is
 * not taken, on both alike: nghttp3 drops it before its callback, and
 * nghttp2's own check (a stream reset) is turned off so that it is dropped
 * here.  HTTP/1.1's parser drops such whitespace, not the field, as its
 * grammar says.
 */
#ifndef SERVE_FIELDS_H
#define SERVE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "http_parse.h"

/* The fields kept, as offsets into buf. */
enum serve_field {
	SERVE_FIELD_METHOD = 0,
	SERVE_FIELD_PATH,
	SERVE_FIELD_AUTHORITY,
	SERVE_FIELD_AUTHORIZATION,
	SERVE_FIELD_IF_MATCH,
	SERVE_FIELD_IF_NONE_MATCH,
	SERVE_FIELD_CONTENT_LENGTH,
	SERVE_FIELD_COUNT
};

struct serve_fields {
	int refuse;         /* a status decided while reading: 414, 431     */
	size_t list;        /* field bytes so far, as LIST_MAX counts them  */
	char *buf;          /* kept values, one after the other             */
	size_t len, cap;
	uint16_t off[SERVE_FIELD_COUNT], n[SERVE_FIELD_COUNT]; /* slices    */
	uint8_t have[SERVE_FIELD_COUNT]; /* times each field was seen       */
};

/* One field of F's request.  Returns 0, or -1 when out of memory (the
 * caller fails the stream or the connection). */
int fields_add(struct serve_fields *f, const uint8_t *name, size_t nlen,
               const uint8_t *value, size_t vlen, size_t list_max);
/* F's header section is whole: fills R (its slices in F).  Returns 0, or
 * the status to refuse the request with. */
int fields_request(const struct serve_fields *f, struct http_request *r);
/* Frees what F kept (R's slices with it); F may be used again. */
void fields_free(struct serve_fields *f);

#endif /* SERVE_FIELDS_H */
