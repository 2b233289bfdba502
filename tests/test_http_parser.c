/*
 * test_http_parser.c -- the HTTP request parser (http/http_parse.h).
 *
 * Every input is placed flush against a PROT_NONE page, so a read one byte
 * past the caller's length faults instead of passing by luck.  Valid
 * requests are also fed as every one of their prefixes: each must answer
 * "partial" (or the same error), never a wrong success.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "http_parse.h"

static char *guard_base; /* two data pages, then a PROT_NONE page */
static size_t guard_data;

static int setup(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);

	(void)state;
	guard_data = (size_t)pg * 4; /* room for a head over 8 KiB + slack */
	guard_base = mmap(NULL, guard_data + (size_t)pg, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard_base == MAP_FAILED)
		return -1;
	return mprotect(guard_base + guard_data, (size_t)pg, PROT_NONE);
}

static int teardown(void **state)
{
	(void)state;
	munmap(guard_base, guard_data + (size_t)sysconf(_SC_PAGESIZE));
	return 0;
}

/* Copies S[0..N) so that its last byte is the last readable byte. */
static char *guarded(const char *s, size_t n)
{
	char *p;

	assert_true(n <= guard_data);
	p = guard_base + guard_data - n;
	memcpy(p, s, n);
	return p;
}

static int parse(const char *s, size_t n, struct http_request *req)
{
	return http_parse_request(guarded(s, n), n, req);
}

static int parse_str(const char *s, struct http_request *req)
{
	return parse(s, strlen(s), req);
}

/* Every strict prefix of S must be partial (or the final error WANT). */
static void prefixes_are_partial(const char *s, int want_err)
{
	struct http_request req;
	size_t k, n = strlen(s);

	for (k = 0; k < n; k++) {
		int rc = parse(s, k, &req);
		if (rc != HTTP_PARTIAL && !(want_err && rc == want_err))
			fail_msg("prefix %zu of %zu gave %d", k, n, rc);
	}
}

static int slice_is(struct http_slice s, const char *want)
{
	return s.p && s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

static void simple_get_is_parsed(void **state)
{
	const char *r = "GET /abc?prefix=a HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_request req;

	(void)state;
	assert_int_equal(parse_str(r, &req), (int)strlen(r));
	assert_int_equal(req.method, HTTP_METHOD_GET);
	assert_true(slice_is(req.path, "/abc"));
	assert_true(slice_is(req.query, "prefix=a"));
	assert_true(slice_is(req.host, "x"));
	assert_int_equal(req.minor, 1);
	assert_true(req.keep_alive);
	assert_false(req.has_length);
	prefixes_are_partial(r, 0);
}

static void put_with_length_and_conditions(void **state)
{
	const char *r = "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
	                "If-Match: \"7\"\r\nIf-None-Match: *\r\n"
	                "Expect: 100-continue\r\n\r\nhello";
	struct http_request req;

	(void)state;
	assert_int_equal(parse_str(r, &req), (int)strlen(r) - 5);
	assert_int_equal(req.method, HTTP_METHOD_PUT);
	assert_true(req.has_length);
	assert_int_equal(req.content_length, 5);
	assert_true(req.expect_continue);
	assert_true(slice_is(req.if_match, "\"7\""));
	assert_true(slice_is(req.if_none_match, "*"));
}

static void http10_closes_unless_keep_alive(void **state)
{
	struct http_request req;

	(void)state;
	assert_true(parse_str("GET / HTTP/1.0\r\n\r\n", &req) > 0);
	assert_false(req.keep_alive);
	assert_true(parse_str("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
	                      &req) > 0);
	assert_true(req.keep_alive);
	assert_true(parse_str("GET / HTTP/1.1\r\nHost: a\r\n"
	                      "Connection: foo, close\r\n\r\n", &req) > 0);
	assert_false(req.keep_alive);
}

static void bare_lf_and_leading_empty_lines(void **state)
{
	const char *r = "\r\n\nGET /x HTTP/1.1\nHost: a\n\n";
	struct http_request req;

	(void)state;
	assert_int_equal(parse_str(r, &req), (int)strlen(r));
	assert_true(slice_is(req.path, "/x"));
	prefixes_are_partial(r, 0);
}

static void pipelined_requests_parse_one_at_a_time(void **state)
{
	const char *r = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
	                "GET /b HTTP/1.1\r\nHost: a\r\n\r\n";
	struct http_request req;
	int n;

	(void)state;
	n = parse_str(r, &req);
	assert_int_equal(n, (int)strlen(r) / 2);
	assert_true(slice_is(req.path, "/a"));
	assert_int_equal(parse(r + n, strlen(r) - (size_t)n, &req), n);
	assert_true(slice_is(req.path, "/b"));
}

static void malformed_heads_answer_400(void **state)
{
	static const char *bad[] = {
		"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
		" GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
		"GET / HTTX/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/11\r\nHost: a\r\n\r\n",
		"GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET x HTTP/1.1\r\nHost: a\r\n\r\n",
		"G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n: empty\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
		"Content-Length: 2\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: "
		"123456789012345678901\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		"PUT / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nIf-Match: 5\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"5\" \"6\"\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nIf-Match: \"1\"\r\n"
		"If-Match: \"2\"\r\n\r\n",
		"\r\rGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GETTINGTHISMETHODNAMEWAYTOOLONGFORANYONE / HTTP/1.1\r\n\r\n",
	};
	struct http_request req;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = parse_str(bad[i], &req);
		if (rc != -400)
			fail_msg("case %zu gave %d, want -400: %s", i, rc, bad[i]);
	}
}

static void content_length_repeated_same_value_is_fine(void **state)
{
	struct http_request req;

	(void)state;
	assert_true(parse_str("PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 3"
	                      "\r\ncontent-length: 3\r\n\r\n", &req) > 0);
	assert_int_equal(req.content_length, 3);
}

static void versions_and_codings(void **state)
{
	struct http_request req;

	(void)state;
	assert_int_equal(parse_str("GET / HTTP/2.0\r\n\r\n", &req), -505);
	assert_int_equal(parse_str("GET / HTTP/1.2\r\n\r\n", &req), -505);
	assert_int_equal(parse_str("PUT / HTTP/1.1\r\nHost: a\r\n"
	                           "Transfer-Encoding: gzip, chunked\r\n\r\n",
	                           &req), -501);
	assert_true(parse_str("PUT / HTTP/1.1\r\nHost: a\r\n"
	                      "Transfer-Encoding: Chunked\r\n\r\n", &req) > 0);
	assert_true(req.chunked);
	assert_int_equal(parse_str("PUT / HTTP/1.1\r\nHost: a\r\n"
	                           "Expect: 200-ok\r\n\r\n", &req), -417);
}

static void unknown_methods_come_back_as_other(void **state)
{
	struct http_request req;

	(void)state;
	assert_true(parse_str("PATCH /k HTTP/1.1\r\nHost: a\r\n\r\n", &req) > 0);
	assert_int_equal(req.method, HTTP_METHOD_OTHER);
	assert_true(slice_is(req.method_name, "PATCH"));
	assert_true(parse_str("get /k HTTP/1.1\r\nHost: a\r\n\r\n", &req) > 0);
	assert_int_equal(req.method, HTTP_METHOD_OTHER);
}

static void long_target_answers_414_before_the_line_ends(void **state)
{
	char r[HTTP_TARGET_MAX + 64];
	struct http_request req;

	(void)state;
	memcpy(r, "GET /", 5);
	memset(r + 5, 'a', sizeof r - 5);
	assert_int_equal(parse(r, sizeof r, &req), -414);
	/* exactly the limit is fine */
	memcpy(r + 4 + HTTP_TARGET_MAX, " HTTP/1.1\r\nHost: a\r\n\r\n", 22);
	assert_true(parse(r, 4 + HTTP_TARGET_MAX + 22, &req) > 0);
	assert_int_equal(req.target.n, HTTP_TARGET_MAX);
}

static void head_over_8k_answers_431(void **state)
{
	static char r[HTTP_HEAD_MAX + 256];
	struct http_request req;
	size_t n;

	(void)state;
	n = (size_t)sprintf(r, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
	memset(r + n, 'v', HTTP_HEAD_MAX - n);
	n = HTTP_HEAD_MAX;
	assert_int_equal(parse(r, n, &req), -431); /* incomplete, at limit */
	assert_int_equal(parse(r, n - 1, &req), HTTP_PARTIAL);
	memcpy(r + n, "\r\n\r\n", 4);
	assert_int_equal(parse(r, n + 4, &req), -431); /* complete, too long */
	/* a head of exactly HTTP_HEAD_MAX bytes is accepted */
	memcpy(r + n - 4, "\r\n\r\n", 4);
	assert_int_equal(parse(r, n, &req), (int)HTTP_HEAD_MAX);
	/* endless empty lines are bounded too */
	memset(r, '\n', sizeof r);
	assert_int_equal(parse(r, sizeof r, &req), -431);
}

static void absolute_form_is_reduced_to_its_path(void **state)
{
	struct http_request req;

	(void)state;
	assert_true(parse_str("GET http://h:1/k?x=1 HTTP/1.1\r\nHost: h\r\n\r\n",
	                      &req) > 0);
	assert_true(slice_is(req.path, "/k"));
	assert_true(slice_is(req.query, "x=1"));
	assert_true(parse_str("PUT HTTPS://h/a/b HTTP/1.1\r\nHost: h\r\n"
	                      "Content-Length: 0\r\n\r\n", &req) > 0);
	assert_true(slice_is(req.path, "/a/b"));
	assert_null(req.query.p);
}

/* RFC 9110 section 4.2.3: an empty path in an http(s) URI is "/". */
static void absolute_form_without_a_path_is_the_root(void **state)
{
	struct http_request req;

	(void)state;
	assert_true(parse_str("GET http://h HTTP/1.1\r\nHost: h\r\n\r\n",
	                      &req) > 0);
	assert_true(slice_is(req.path, "/"));
	assert_null(req.query.p);
	assert_true(parse_str("GET http://h:8080?prefix=a&limit=2 HTTP/1.1\r\n"
	                      "Host: h\r\n\r\n", &req) > 0);
	assert_true(slice_is(req.path, "/"));
	assert_true(slice_is(req.query, "prefix=a&limit=2"));
	/* no host, or a scheme that is not http(s): 400 */
	assert_int_equal(parse_str("GET http:///k HTTP/1.1\r\nHost: h\r\n\r\n",
	                           &req), -400);
	assert_int_equal(parse_str("GET http:// HTTP/1.1\r\nHost: h\r\n\r\n",
	                           &req), -400);
	assert_int_equal(parse_str("GET ftp://h/k HTTP/1.1\r\nHost: h\r\n\r\n",
	                           &req), -400);
	assert_int_equal(parse_str("GET h:80 HTTP/1.1\r\nHost: h\r\n\r\n",
	                           &req), -400);
}

/* RFC 9112 section 3.2.4: asterisk-form, for OPTIONS only. */
static void options_asterisk_is_accepted(void **state)
{
	const char *r = "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n";
	struct http_request req;

	(void)state;
	assert_int_equal(parse_str(r, &req), (int)strlen(r));
	assert_int_equal(req.method, HTTP_METHOD_OPTIONS);
	assert_true(slice_is(req.path, "*"));
	assert_null(req.query.p);
	prefixes_are_partial(r, 0);
	assert_int_equal(parse_str("GET * HTTP/1.1\r\nHost: h\r\n\r\n", &req),
	                 -400);
	assert_int_equal(parse_str("OPTIONS *x HTTP/1.1\r\nHost: h\r\n\r\n",
	                           &req), -400);
}

/* Numbers are read by value: leading zeros are valid, 2^64 is not. */
static void content_length_with_leading_zeros(void **state)
{
	struct http_request req;

	(void)state;
	assert_true(parse_str("PUT /k HTTP/1.1\r\nHost: h\r\nContent-Length: "
	                      "0000000000000000000000005\r\n\r\n", &req) > 0);
	assert_int_equal(req.content_length, 5);
	assert_true(parse_str("PUT /k HTTP/1.1\r\nHost: h\r\nContent-Length: "
	                      "18446744073709551615\r\n\r\n", &req) > 0);
	assert_true(req.content_length == UINT64_MAX);
	assert_int_equal(parse_str("PUT /k HTTP/1.1\r\nHost: h\r\nContent-Length: "
	                           "18446744073709551616\r\n\r\n", &req), -400);
}

static void etag_lists_match_revisions(void **state)
{
	(void)state;
#define M(s, rev, weak) http_etag_match(guarded(s, strlen(s)), strlen(s), rev, weak)
	assert_int_equal(M("\"5\"", 5, 0), 1);
	assert_int_equal(M("\"5\"", 6, 0), 0);
	assert_int_equal(M("\"4\", \"5\"", 5, 0), 1);
	assert_int_equal(M(" , \"4\" ,\t\"50\" ,", 50, 0), 1);
	assert_int_equal(M("W/\"5\"", 5, 0), 0);
	assert_int_equal(M("W/\"5\"", 5, 1), 1);
	assert_int_equal(M("*", 3, 0), 1);
	assert_int_equal(M("*", 0, 0), 0);
	assert_int_equal(M("\"05\"", 5, 0), 0);
	assert_int_equal(M("\"abc\"", 5, 0), 0);
	assert_int_equal(M("\"18446744073709551615\"", 5, 0), 0);
	assert_int_equal(M("5", 5, 0), -400);
	assert_int_equal(M("\"5", 5, 0), -400);
	assert_int_equal(M("W/", 5, 0), -400);
	assert_int_equal(M("W", 5, 0), -400);
	assert_int_equal(M("", 5, 0), -400);
	assert_int_equal(M(" , ", 5, 0), -400);
	assert_int_equal(M("\"5\"x", 5, 0), -400);
	assert_int_equal(M("**", 5, 0), -400);
#undef M
}

/* Decodes S through the chunked decoder, feeding STEP bytes at a time the
 * way a server does: decoded bytes stay at the front, undecoded ones are
 * moved after them.  Returns the decoder's error or the bytes consumed. */
static ssize_t chunk_feed(const char *s, size_t step, uint64_t limit,
                          char *body, size_t *blen)
{
	static char buf[4096];
	struct http_chunked c = {.limit = limit};
	size_t have = 0, dec = 0, fed = 0, n = strlen(s), used_total = 0;

	while (!c.done) {
		size_t take = n - fed < step ? n - fed : step, out;
		ssize_t used;
		char *p;

		if (take == 0)
			return 0; /* ran out: partial */
		memcpy(buf + have, s + fed, take);
		fed += take;
		have += take;
		/* decode buf[dec..have) against the guard page */
		p = guarded(buf + dec, have - dec);
		used = http_chunked_decode(&c, p, have - dec, &out);
		if (used < 0)
			return used;
		memcpy(buf + dec, p, out);
		memcpy(buf + dec + out, p + used, have - dec - (size_t)used);
		used_total += (size_t)used;
		have = dec + out + (have - dec - (size_t)used);
		dec += out;
	}
	memcpy(body, buf, dec);
	*blen = dec;
	return (ssize_t)(used_total);
}

static void chunked_bodies_decode_in_place(void **state)
{
	const char *s = "5;ext=1\r\nhello\r\nA\r\n, world!!!\r\n0\r\n"
	                "Trailer: x\r\n\r\nGET";
	char body[64];
	size_t blen, step;

	(void)state;
	for (step = 1; step <= strlen(s); step++) {
		ssize_t used = chunk_feed(s, step, 0, body, &blen);
		assert_int_equal(used, (ssize_t)strlen(s) - 3);
		assert_int_equal(blen, 15);
		assert_memory_equal(body, "hello, world!!!", 15);
	}
	assert_int_equal(chunk_feed("3\nabc\n0\n\n", 1, 0, body, &blen), 9);
	assert_int_equal(blen, 3);
}

static void chunked_errors(void **state)
{
	char body[64];
	size_t blen;

	(void)state;
	assert_int_equal(chunk_feed("x\r\n", 1, 0, body, &blen), -400);
	assert_int_equal(chunk_feed("\r\n", 1, 0, body, &blen), -400);
	assert_int_equal(chunk_feed("3\r\nabcX\r\n", 2, 0, body, &blen), -400);
	assert_int_equal(chunk_feed("3\rX", 1, 0, body, &blen), -400);
	assert_int_equal(chunk_feed("11111111111111111\r\n", 4, 0, body, &blen),
	                 -400); /* 17 significant digits: over 64 bits */
	assert_int_equal(chunk_feed("10000000000000000\r\n", 1, 0, body, &blen),
	                 -400); /* exactly 2^64 */
	assert_int_equal(chunk_feed("ffffffffffffffff\r\n", 4, 1 << 30, body,
	                            &blen),
	                 -413);
	assert_int_equal(chunk_feed("8\r\n12345678\r\n8\r\n", 3, 10, body,
	                            &blen), -413);
	assert_int_equal(chunk_feed("3\r\nabc\r\n0\r\n\r\n", 3, 3, body, &blen),
	                 13);
}

/* RFC 9112 section 7.1: chunk-size = 1*HEXDIG; its value counts, not
 * how many digits spell it. */
static void chunk_sizes_with_leading_zeros(void **state)
{
	static const char *s = "0000000000000000003\r\nabc\r\n"
	                       "000000000000000000000000000000000000000000\r\n\r\n";
	char body[64];
	size_t blen, step;

	(void)state;
	for (step = 1; step <= strlen(s); step++) {
		assert_int_equal(chunk_feed(s, step, 0, body, &blen),
		                 (ssize_t)strlen(s));
		assert_int_equal(blen, 3);
		assert_memory_equal(body, "abc", 3);
	}
	/* the largest size is accepted by value (and refused by the limit) */
	assert_int_equal(chunk_feed("00ffffffffffffffff\r\n", 5, 1 << 20, body,
	                            &blen), -413);
}

static void chunked_size_line_is_bounded(void **state)
{
	static char s[HTTP_HEAD_MAX + 16];
	char body[8];
	size_t blen;

	(void)state;
	memset(s, 0, sizeof s);
	s[0] = '1';
	s[1] = ';';
	memset(s + 2, 'e', HTTP_HEAD_MAX + 8);
	assert_int_equal(chunk_feed(s, 4096, 0, body, &blen), -431);
}

static void percent_decoding(void **state)
{
	char out[16];

	(void)state;
#define D(s, cap, plus) http_pct_decode(guarded(s, strlen(s)), strlen(s), out, cap, plus)
	assert_int_equal(D("a%2Fb%20c", 16, 0), 5);
	assert_memory_equal(out, "a/b c", 5);
	assert_int_equal(D("a+b", 16, 1), 3);
	assert_memory_equal(out, "a b", 3);
	assert_int_equal(D("a+b", 16, 0), 3);
	assert_memory_equal(out, "a+b", 3);
	assert_int_equal(D("%00", 16, 0), 1);
	assert_int_equal(out[0], 0);
	assert_int_equal(D("%4", 16, 0), -400);
	assert_int_equal(D("%", 16, 0), -400);
	assert_int_equal(D("%zz", 16, 0), -400);
	assert_int_equal(D("abcd", 3, 0), -414);
	assert_int_equal(D("abc", 3, 0), 3);
#undef D
}

static void query_parameters(void **state)
{
	const char *q = "prefix=a%2F&after=&limit=10&flag";
	struct http_slice v;

	(void)state;
	assert_int_equal(http_query_param(q, strlen(q), "prefix", &v), 1);
	assert_true(slice_is(v, "a%2F"));
	assert_int_equal(http_query_param(q, strlen(q), "after", &v), 1);
	assert_int_equal(v.n, 0);
	assert_int_equal(http_query_param(q, strlen(q), "limit", &v), 1);
	assert_true(slice_is(v, "10"));
	assert_int_equal(http_query_param(q, strlen(q), "flag", &v), 1);
	assert_int_equal(v.n, 0);
	assert_int_equal(http_query_param(q, strlen(q), "lim", &v), 0);
	assert_int_equal(http_query_param(NULL, 0, "lim", &v), 0);
}

static void authorization_is_captured_once(void **state)
{
	const char *r = "GET /k HTTP/1.1\r\nHost: x\r\n"
	                "authorization:   Bearer abc.DEF-1~_+/==  \r\n\r\n";
	struct http_request req;

	(void)state;
	assert_int_equal(parse_str(r, &req), (int)strlen(r));
	assert_true(slice_is(req.authorization, "Bearer abc.DEF-1~_+/=="));
	prefixes_are_partial(r, 0);
	assert_true(parse_str("GET /k HTTP/1.1\r\nHost: x\r\n\r\n", &req) > 0);
	assert_null(req.authorization.p);
	/* two credentials: which one counts would be ambiguous */
	assert_int_equal(parse_str("GET /k HTTP/1.1\r\nHost: x\r\n"
	                           "Authorization: Bearer a\r\n"
	                           "Authorization: Bearer a\r\n\r\n", &req),
	                 -400);
}

/* Runs http_bearer_token on S flush against the guard page. */
static int bearer(const char *s, struct http_slice *tok)
{
	struct http_slice auth = {guarded(s, strlen(s)), strlen(s)};
	return http_bearer_token(&auth, tok);
}

static void bearer_token_syntax(void **state)
{
	static const char *refused[] = {
		"", "Bearer", "Bearer ", "Bearer  ", "Basic dXNlcg==", "Bearerabc",
		"Bearer\tabc", "Bearer a b", "Bearer =abc", "Bearer ab=c",
		"Bearer a\"b", "Bearer a,b", "Bearer a%20b", "Bearer abc=x",
		"Bearers abc",
	};
	struct http_slice tok, absent = {NULL, 0};
	size_t i;

	(void)state;
	assert_int_equal(bearer("Bearer abc", &tok), 1);
	assert_true(slice_is(tok, "abc"));
	assert_int_equal(bearer("bEARER    x-y.z_~+/9==", &tok), 1);
	assert_true(slice_is(tok, "x-y.z_~+/9=="));
	assert_int_equal(bearer("BEARER Z", &tok), 1);
	assert_true(slice_is(tok, "Z"));
	assert_int_equal(http_bearer_token(&absent, &tok), 0);
	for (i = 0; i < sizeof refused / sizeof refused[0]; i++)
		if (bearer(refused[i], &tok) != 0)
			fail_msg("accepted \"%s\"", refused[i]);
}

static void reasons(void **state)
{
	(void)state;
	assert_string_equal(http_reason(431), "Request Header Fields Too Large");
	assert_string_equal(http_reason(401), "Unauthorized");
	assert_string_equal(http_reason(403), "Forbidden");
	assert_string_equal(http_reason(299), "Unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(simple_get_is_parsed),
		cmocka_unit_test(put_with_length_and_conditions),
		cmocka_unit_test(http10_closes_unless_keep_alive),
		cmocka_unit_test(bare_lf_and_leading_empty_lines),
		cmocka_unit_test(pipelined_requests_parse_one_at_a_time),
		cmocka_unit_test(malformed_heads_answer_400),
		cmocka_unit_test(authorization_is_captured_once),
		cmocka_unit_test(bearer_token_syntax),
		cmocka_unit_test(content_length_repeated_same_value_is_fine),
		cmocka_unit_test(versions_and_codings),
		cmocka_unit_test(unknown_methods_come_back_as_other),
		cmocka_unit_test(long_target_answers_414_before_the_line_ends),
		cmocka_unit_test(head_over_8k_answers_431),
		cmocka_unit_test(absolute_form_is_reduced_to_its_path),
		cmocka_unit_test(absolute_form_without_a_path_is_the_root),
		cmocka_unit_test(options_asterisk_is_accepted),
		cmocka_unit_test(content_length_with_leading_zeros),
		cmocka_unit_test(etag_lists_match_revisions),
		cmocka_unit_test(chunked_bodies_decode_in_place),
		cmocka_unit_test(chunked_errors),
		cmocka_unit_test(chunk_sizes_with_leading_zeros),
		cmocka_unit_test(chunked_size_line_is_bounded),
		cmocka_unit_test(percent_decoding),
		cmocka_unit_test(query_parameters),
		cmocka_unit_test(reasons),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
