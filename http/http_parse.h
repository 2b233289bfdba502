/*
 * http_parse.h -- an allocation-free HTTP/1.0 and HTTP/1.1 request parser
 * (RFC 9112), the only code in keel-serve that reads bytes a client chose.
 *
 * WHAT IT IS
 *   http_parse_request() reads one request head (request line and header
 *   fields up to the empty line) from the caller's buffer.  It never
 *   allocates, never writes to the buffer, and never reads a byte at or past
 *   BUF + LEN.  Every pointer it hands back points into BUF, so the result
 *   is valid only while BUF is unchanged.
 *
 * CALLING SEQUENCE
 *     struct http_request req;
 *     int n = http_parse_request(buf, len, &req);
 *     if (n == HTTP_PARTIAL)  read more, call again with the longer buffer;
 *     else if (n < 0)         answer with status -n, then close;
 *     else                    the head is buf[0..n); the body (req.content_length
 *                             bytes, or chunked: see http_chunked_decode)
 *                             follows at buf + n.
 *
 * WHAT IS CHECKED (the status a failure answers with)
 *   400  malformed request line or header field, bare CR, control bytes,
 *        obs-fold (a line starting with a space), whitespace before a colon,
 *        a bad or conflicting Content-Length, Content-Length together with
 *        Transfer-Encoding (a request-smuggling vector), HTTP/1.1 without
 *        exactly one Host, a malformed If-Match / If-None-Match list, a
 *        repeated If-Match / If-None-Match / Expect / Transfer-Encoding /
 *        Authorization.
 *   414  a request target longer than HTTP_TARGET_MAX.
 *   417  an Expect other than 100-continue.
 *   431  a head longer than HTTP_HEAD_MAX (counted from the first byte).
 *   501  a Transfer-Encoding other than exactly "chunked".
 *   505  an HTTP version other than 1.0 and 1.1.
 *   A method the parser does not know is NOT an error here: it comes back as
 *   HTTP_METHOD_OTHER so the server can answer 405 with Allow.
 *   Up to HTTP_HEAD_MAX bytes of empty lines before a request line are
 *   skipped (RFC 9112 section 2.2) and counted in the consumed length.
 *   Bare LF line endings are accepted (RFC 9112 section 2.2 allows it).
 *   Targets: origin-form, absolute-form (http:// or https://, reduced to
 *   its path and query) and, for OPTIONS only, asterisk-form; anything
 *   else is 400.
 */
#ifndef HTTP_PARSE_H
#define HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_HEAD_MAX 8192u   /* request line + headers; longer answers 431  */
#define HTTP_TARGET_MAX 4096u /* raw (still percent-encoded) target; 414     */
#define HTTP_KEY_MAX 1024u    /* a decoded key; longer answers 414 (keel.h)  */

#define HTTP_PARTIAL 0 /* http_parse_request: the head is not complete yet */

enum http_method {
	HTTP_METHOD_OTHER = 0, /* a valid token the parser does not know */
	HTTP_METHOD_GET,
	HTTP_METHOD_HEAD,
	HTTP_METHOD_PUT,
	HTTP_METHOD_DELETE,
	HTTP_METHOD_POST,
	HTTP_METHOD_OPTIONS,
};

/* A header value kept as a slice of the caller's buffer, OWS trimmed. */
struct http_slice {
	const char *p; /* NULL when the header was absent */
	size_t n;      /* length in bytes                 */
};

struct http_request {
	enum http_method method;
	struct http_slice method_name; /* the method token as sent           */
	struct http_slice target;      /* the whole request target           */
	struct http_slice path;        /* target up to '?', starts with '/';
	                                  "*" for OPTIONS *; for an absolute
	                                  target with no path, a constant
	                                  "/" (the one slice outside BUF)   */
	struct http_slice query;       /* after '?' (p NULL if no '?')       */
	int minor;                     /* 0 for HTTP/1.0, 1 for HTTP/1.1     */
	int keep_alive;                /* 1 unless the connection must close */
	int has_length;                /* a Content-Length was given         */
	int chunked;                   /* Transfer-Encoding: chunked         */
	int expect_continue;           /* Expect: 100-continue               */
	uint64_t content_length;       /* valid when has_length              */
	struct http_slice host;        /* Host value                         */
	struct http_slice if_match;      /* raw list, checked by the parser  */
	struct http_slice if_none_match; /* raw list, checked by the parser  */
	struct http_slice authorization; /* raw value, checked by
	                                    http_bearer_token; p NULL when
	                                    absent                          */
};

/*
 * http_parse_request - parse one request head from BUF[0..LEN).
 * Returns the head's length in bytes (> 0) with *REQ filled in,
 * HTTP_PARTIAL when more bytes are needed (*REQ is then unspecified), or a
 * negative HTTP status (-400, -414, -417, -431, -501, -505) for a request
 * that must be refused; the connection should then be closed after the
 * answer because the framing of what follows is unknown.
 * Errors are reported as soon as they are certain, even from a partial
 * head: an over-long target answers 414 before its line ends.
 */
int http_parse_request(const char *buf, size_t len, struct http_request *req);

/* The method named by the N bytes at S (case-sensitive, RFC 9110 9.1);
 * HTTP_METHOD_OTHER for any other.  HTTP/2's :method comes through here
 * too (serve_h2.c). */
enum http_method http_method_of(const char *s, size_t n);

/*
 * Entity tags.  keel's tags are decimal revisions in quotes: "17".  A weak
 * tag W/"17" is accepted in lists.  http_etag_match - does the list
 * (a If-Match / If-None-Match value) match revision REV?  "*" matches any
 * existing key (REV != 0); REV == 0 (absent key) matches nothing.  With
 * WEAK_OK == 0 (If-Match uses strong comparison) a weak tag never matches.
 * Returns 1 for a match, 0 for none, -400 for a malformed list.
 */
int http_etag_match(const char *list, size_t len, uint64_t rev, int weak_ok);

/* Is LIST exactly "*"?  Returns 1 or 0. */
int http_etag_is_any(const char *list, size_t len);

/*
 * Chunked transfer coding (RFC 9112 section 7.1), decoded in place.
 * Start with a zeroed struct http_chunked.  Each call decodes what it can
 * of P[0..N): the body bytes found are moved to P[0..*OUT), and the number
 * of input bytes consumed (>= *OUT) is returned.  Bytes after the consumed
 * ones were not looked at; keep them and call again with more appended.
 * When the last chunk and the trailer section have been read, C->done is set
 * and the return value counts up to the end of the trailer, so what follows
 * is the next pipelined request.  Chunk extensions and trailer fields are
 * skipped.  Returns -400 for a malformed coding, -413 when the decoded body
 * would exceed C->limit (when non-zero), or -431 for a chunk-size line or
 * trailer section longer than HTTP_HEAD_MAX.
 */
struct http_chunked {
	uint64_t limit;     /* refuse bodies longer than this (0 = no limit)  */
	uint64_t total;     /* body bytes decoded so far                      */
	uint64_t remaining; /* bytes left in the current chunk's data         */
	uint32_t line;      /* bytes of the current size line or trailer      */
	uint8_t state;      /* private                                        */
	uint8_t digits;     /* 1 once the current chunk size has a digit      */
	uint8_t done;       /* 1 once the whole body and trailer were read    */
};
ssize_t http_chunked_decode(struct http_chunked *c, char *p, size_t n,
                            size_t *out);

/*
 * http_pct_decode - percent-decode IN[0..N) into OUT (capacity CAP).
 * PLUS_SPACE turns '+' into ' ' (query strings).  Returns the decoded
 * length, -400 for a bad %XX escape, or -414 when it does not fit in CAP.
 */
ssize_t http_pct_decode(const char *in, size_t n, char *out, size_t cap,
                        int plus_space);

/*
 * http_query_param - find NAME in the query string Q[0..QN) (a=1&b=2).
 * Returns 1 and the raw, still encoded value in *VAL, or 0 if absent.
 */
int http_query_param(const char *q, size_t qn, const char *name,
                     struct http_slice *val);

/*
 * Bearer credentials (RFC 6750 section 2.1).  http_bearer_token - is AUTH
 * (an Authorization value) "Bearer" (any case), one or more spaces and a
 * token68?  Returns 1 with the token in *TOKEN (a slice of AUTH), or 0 for
 * an absent value, another scheme or a malformed token.
 */
int http_bearer_token(const struct http_slice *auth, struct http_slice *token);

/* Is S[0..N) a token68 (RFC 9110 section 11.2: letters, digits,
 * -._~+/ then optional trailing '=')?  Returns 1 or 0. */
int http_token68_valid(const char *s, size_t n);

/* The reason phrase for STATUS ("Not Found"); "Unknown" if not known. */
const char *http_reason(int status);

#endif /* HTTP_PARSE_H */
