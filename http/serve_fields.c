/*
 * serve_fields.c -- HTTP/2's and HTTP/3's request fields made into a
 * struct http_request (serve_fields.h is the manual).
 */
#include "serve_fields.h"

#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	enum serve_field f;
} fields_wanted[] = {
	{":method", SERVE_FIELD_METHOD},
	{":path", SERVE_FIELD_PATH},
	{":authority", SERVE_FIELD_AUTHORITY},
	{"authorization", SERVE_FIELD_AUTHORIZATION},
	{"if-match", SERVE_FIELD_IF_MATCH},
	{"if-none-match", SERVE_FIELD_IF_NONE_MATCH},
	{"content-length", SERVE_FIELD_CONTENT_LENGTH},
};

/* Keeps VALUE as field W of F.  Returns 0, or -1 when out of memory. */
static int fields_keep(struct serve_fields *f, enum serve_field w,
                       const uint8_t *value, size_t vlen)
{
	if (f->have[w]++)
		return 0; /* a repeat: refused later, the first is enough */
	if (f->len + vlen > f->cap) {
		size_t cap = f->cap ? f->cap : 256;
		char *p;

		while (cap < f->len + vlen)
			cap *= 2;
		p = realloc(f->buf, cap);
		if (p == NULL)
			return -1;
		f->buf = p;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, value, vlen);
	/* uint16_t holds them: the list stops at LIST_MAX (16 KiB here) */
	f->off[w] = (uint16_t)f->len;
	f->n[w] = (uint16_t)vlen;
	f->len += vlen;
	return 0;
}

int fields_add(struct serve_fields *f, const uint8_t *name, size_t nlen,
               const uint8_t *value, size_t vlen, size_t list_max)
{
	size_t i;

	if (f->refuse)
		return 0;
	f->list += nlen + vlen + 32;
	if (f->list > list_max || f->list > UINT16_MAX) {
		f->refuse = 431;
		return 0;
	}
	/* whitespace at either end of a value, which HTTP/2 and HTTP/3
	 * forbid (RFC 9113 8.2.1, RFC 9114 4.2): the field is not taken, on
	 * both alike -- nghttp3 drops it before we see it, and nghttp2's own
	 * check (a stream reset) is off so that we drop it here too */
	if (vlen > 0 && (value[0] == ' ' || value[0] == '\t' ||
	                 value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
		return 0;
	for (i = 0; i < sizeof fields_wanted / sizeof fields_wanted[0]; i++) {
		if (nlen != strlen(fields_wanted[i].name) ||
		    memcmp(name, fields_wanted[i].name, nlen) != 0)
			continue;
		if (fields_wanted[i].f == SERVE_FIELD_PATH && vlen > HTTP_TARGET_MAX) {
			f->refuse = 414;
			return 0;
		}
		return fields_keep(f, fields_wanted[i].f, value, vlen);
	}
	return 0;
}

static struct http_slice fields_get(const struct serve_fields *f,
                                    enum serve_field w)
{
	struct http_slice s = {NULL, 0};

	if (f->have[w]) {
		s.p = f->buf + f->off[w];
		s.n = f->n[w];
	}
	return s;
}

/* Content-Length's digits into R (the protocol's library checks that it
 * agrees with the DATA that comes).  Returns 0, or 400. */
static int fields_content_length(struct http_request *r, struct http_slice cl)
{
	size_t i;

	if (cl.n == 0 || cl.n > 19)
		return 400;
	for (i = 0; i < cl.n; i++) {
		if (cl.p[i] < '0' || cl.p[i] > '9')
			return 400;
		r->content_length = r->content_length * 10 +
		                    (uint64_t)(cl.p[i] - '0');
	}
	r->has_length = 1;
	return 0;
}

int fields_request(const struct serve_fields *f, struct http_request *r)
{
	struct http_slice path = fields_get(f, SERVE_FIELD_PATH);
	const char *q;

	memset(r, 0, sizeof *r);
	if (f->refuse)
		return f->refuse;
	/* single fields, and the pseudo-fields (the libraries check those
	 * too, but this is where the request is made) */
	if (f->have[SERVE_FIELD_IF_MATCH] > 1 ||
	    f->have[SERVE_FIELD_IF_NONE_MATCH] > 1 ||
	    f->have[SERVE_FIELD_AUTHORIZATION] > 1 ||
	    f->have[SERVE_FIELD_CONTENT_LENGTH] > 1 ||
	    f->have[SERVE_FIELD_METHOD] != 1 || f->have[SERVE_FIELD_PATH] != 1 ||
	    path.n == 0)
		return 400;
	r->method_name = fields_get(f, SERVE_FIELD_METHOD);
	r->method = http_method_of(r->method_name.p, r->method_name.n);
	r->target = path;
	q = memchr(path.p, '?', path.n);
	r->path.p = path.p;
	r->path.n = q ? (size_t)(q - path.p) : path.n;
	if (q) {
		r->query.p = q + 1;
		r->query.n = path.n - r->path.n - 1;
	}
	if (r->path.p[0] != '/' &&
	    !(r->path.n == 1 && r->path.p[0] == '*' &&
	      r->method == HTTP_METHOD_OPTIONS))
		return 400;
	r->minor = 1;
	r->keep_alive = 1;
	r->host = fields_get(f, SERVE_FIELD_AUTHORITY);
	r->if_match = fields_get(f, SERVE_FIELD_IF_MATCH);
	r->if_none_match = fields_get(f, SERVE_FIELD_IF_NONE_MATCH);
	r->authorization = fields_get(f, SERVE_FIELD_AUTHORIZATION);
	if ((r->if_match.p &&
	     http_etag_match(r->if_match.p, r->if_match.n, 0, 0) < 0) ||
	    (r->if_none_match.p &&
	     http_etag_match(r->if_none_match.p, r->if_none_match.n, 0, 1) < 0))
		return 400;
	if (f->have[SERVE_FIELD_CONTENT_LENGTH])
		return fields_content_length(r,
		                             fields_get(f, SERVE_FIELD_CONTENT_LENGTH));
	return 0;
}

void fields_free(struct serve_fields *f)
{
	free(f->buf);
	memset(f, 0, sizeof *f);
}
