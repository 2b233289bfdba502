/* test_fields -- HTTP/2's and HTTP/3's request fields made into a request
 * (http/serve_fields.h): what is kept, what is refused, with which status. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "serve_fields.h"

#define LIST_MAX 16384

static void add(struct serve_fields *f, const char *name, const char *value)
{
	assert_int_equal(fields_add(f, (const uint8_t *)name, strlen(name),
	                            (const uint8_t *)value, strlen(value),
	                            LIST_MAX), 0);
}

static int slice_is(struct http_slice s, const char *want)
{
	return s.p && s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

static void a_request_is_made_of_the_fields_kept(void **state)
{
	struct serve_fields f = {0};
	struct http_request r;

	(void)state;
	add(&f, ":method", "PUT");
	add(&f, ":scheme", "https");
	add(&f, ":authority", "localhost");
	add(&f, ":path", "/k?x=1");
	add(&f, "user-agent", "test"); /* not kept */
	add(&f, "if-match", "\"3\"");
	add(&f, "content-length", "12");
	assert_int_equal(fields_request(&f, &r), 0);
	assert_int_equal(r.method, HTTP_METHOD_PUT);
	assert_true(slice_is(r.path, "/k"));
	assert_true(slice_is(r.query, "x=1"));
	assert_true(slice_is(r.host, "localhost"));
	assert_true(slice_is(r.if_match, "\"3\""));
	assert_null(r.authorization.p);
	assert_int_equal(r.has_length, 1);
	assert_int_equal(r.content_length, 12);
	assert_int_equal(r.keep_alive, 1);
	fields_free(&f);
}

static void a_repeated_single_field_is_400(void **state)
{
	static const char *single[] = {":method", ":path", "authorization",
	                               "if-match", "if-none-match",
	                               "content-length"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof single / sizeof single[0]; i++) {
		struct serve_fields f = {0};
		struct http_request r;

		add(&f, ":method", "GET");
		add(&f, ":path", "/k");
		add(&f, single[i], i < 2 ? "/x" : "\"1\"");
		if (i >= 2)
			add(&f, single[i], "\"1\"");
		assert_int_equal(fields_request(&f, &r), 400);
		fields_free(&f);
	}
}

static void a_missing_or_bad_target_is_400(void **state)
{
	struct serve_fields f = {0};
	struct http_request r;

	(void)state;
	add(&f, ":method", "GET");
	assert_int_equal(fields_request(&f, &r), 400); /* no :path */
	add(&f, ":path", "k");
	assert_int_equal(fields_request(&f, &r), 400); /* not from / */
	fields_free(&f);
	add(&f, ":method", "OPTIONS");
	add(&f, ":path", "*");
	assert_int_equal(fields_request(&f, &r), 0);
	fields_free(&f);
}

static void a_bad_length_or_etag_is_400(void **state)
{
	static const char *lengths[] = {"", "1a", "-1", "12345678901234567890"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
		struct serve_fields f = {0};
		struct http_request r;

		add(&f, ":method", "PUT");
		add(&f, ":path", "/k");
		add(&f, "content-length", lengths[i]);
		assert_int_equal(fields_request(&f, &r), 400);
		fields_free(&f);
	}
	{
		struct serve_fields f = {0};
		struct http_request r;

		add(&f, ":method", "PUT");
		add(&f, ":path", "/k");
		add(&f, "if-match", "no-quotes");
		assert_int_equal(fields_request(&f, &r), 400);
		fields_free(&f);
	}
}

static void a_long_target_is_414_and_a_long_list_431(void **state)
{
	static char big[HTTP_TARGET_MAX + 2];
	struct serve_fields f = {0};
	struct http_request r;
	int i;

	(void)state;
	memset(big, 'a', sizeof big - 1);
	big[0] = '/';
	add(&f, ":method", "GET");
	add(&f, ":path", big);
	assert_int_equal(fields_request(&f, &r), 414);
	fields_free(&f);
	big[HTTP_TARGET_MAX] = '\0'; /* exactly the limit: kept */
	add(&f, ":method", "GET");
	add(&f, ":path", big);
	assert_int_equal(fields_request(&f, &r), 0);
	/* names, values and 32 bytes each, past LIST_MAX */
	for (i = 0; i < 3; i++)
		add(&f, "x-filler", big);
	assert_int_equal(fields_request(&f, &r), 431);
	fields_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_request_is_made_of_the_fields_kept),
		cmocka_unit_test(a_repeated_single_field_is_400),
		cmocka_unit_test(a_missing_or_bad_target_is_400),
		cmocka_unit_test(a_bad_length_or_etag_is_400),
		cmocka_unit_test(a_long_target_is_414_and_a_long_list_431),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
