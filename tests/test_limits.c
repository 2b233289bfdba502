/* test_limits -- the request limits every protocol of keel-serve keeps
 * (http/serve_limits.h): each decision once, without sockets or clocks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "serve_limits.h"
#include "h3_control.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* --header-timeout 1s, --body-min-rate 1k: a window must bring 1024 bytes */
static const struct limits_config cfg = {1000, 1024};

static void a_window_is_not_judged_before_it_ends(void **state)
{
	struct limits_body b;

	(void)state;
	limits_body_begin(&b, 0, 5000);
	assert_int_equal(limits_body_check(&cfg, &b, 0, 5999), LIMITS_WAIT);
	assert_int_equal(limits_body_check(&cfg, &b, 0, 5000), LIMITS_WAIT);
}

static void a_window_that_keeps_the_rate_begins_the_next(void **state)
{
	struct limits_body b;

	(void)state;
	limits_body_begin(&b, 100, 0); /* 100 bytes before the body (a head) */
	assert_int_equal(limits_body_check(&cfg, &b, 100 + 1024, 1000), LIMITS_OK);
	/* the next window counts from here: 1124 bytes, at 1000 ms */
	assert_int_equal(limits_body_check(&cfg, &b, 1124 + 1024, 1999),
	                 LIMITS_WAIT);
	assert_int_equal(limits_body_check(&cfg, &b, 1124 + 1023, 2000),
	                 LIMITS_CUT);
}

static void a_slow_window_is_cut(void **state)
{
	struct limits_body b;

	(void)state;
	limits_body_begin(&b, 0, 0);
	assert_int_equal(limits_body_check(&cfg, &b, 1023, 1000), LIMITS_CUT);
	assert_int_equal(limits_body_check(&cfg, &b, 0, 1000), LIMITS_CUT);
}

static void a_late_check_asks_for_one_window_only(void **state)
{
	struct limits_body b;

	(void)state;
	/* a stream that began in the middle of its connection's window is
	 * judged at the next sweep: more time, the same bytes */
	limits_body_begin(&b, 0, 0);
	assert_int_equal(limits_body_check(&cfg, &b, 1024, 1900), LIMITS_OK);
}

static void without_a_rate_any_byte_will_do(void **state)
{
	const struct limits_config any = {1000, 0};
	struct limits_body b;

	(void)state;
	limits_body_begin(&b, 0, 0);
	assert_int_equal(limits_body_check(&any, &b, 1, 1000), LIMITS_OK);
	assert_int_equal(limits_body_check(&any, &b, 1, 2000), LIMITS_CUT);
}

static void a_head_is_due_at_the_header_timeout(void **state)
{
	(void)state;
	assert_int_equal(limits_head_due(&cfg, 3000, 3999), 0);
	assert_int_equal(limits_head_due(&cfg, 3000, 4000), 1);
}

static void a_byte_stream_closes_at_the_first_cut(void **state)
{
	uint8_t cuts = 0;

	(void)state;
	assert_int_equal(limits_cut(&cuts, 0), LIMITS_CLOSE);
}

static void streams_close_at_the_last_allowed_cut(void **state)
{
	uint8_t cuts = 0;
	int i;

	(void)state;
	for (i = 1; i < LIMITS_CUTS_MAX; i++)
		assert_int_equal(limits_cut(&cuts, 1), LIMITS_CUT);
	assert_int_equal(limits_cut(&cuts, 1), LIMITS_CLOSE);
	cuts = UINT8_MAX; /* the count does not wrap back to "fine" */
	assert_int_equal(limits_cut(&cuts, 1), LIMITS_CLOSE);
	assert_int_equal(cuts, UINT8_MAX);
}

static void the_budget_refuses_what_would_pass_it(void **state)
{
	struct limits_budget b = {.cap = 1000};

	(void)state;
	assert_int_equal(limits_budget_take(&b, 600, 0), LIMITS_OK);
	assert_int_equal(limits_budget_take(&b, 401, 0), LIMITS_BUSY);
	assert_int_equal(atomic_load(&b.held), 600); /* nothing charged */
	assert_int_equal(limits_budget_take(&b, 400, 0), LIMITS_OK);
	assert_int_equal(limits_budget_take(&b, 10, 1), LIMITS_OK); /* forced */
	limits_budget_give(&b, 1010);
	assert_int_equal(atomic_load(&b.held), 0);
}

static void an_announced_body_counts_what_its_request_holds(void **state)
{
	struct limits_budget b = {.cap = 1000};

	(void)state;
	assert_int_equal(limits_budget_take(&b, 700, 0), LIMITS_OK);
	assert_int_equal(limits_budget_admits(&b, 301, 0), LIMITS_BUSY);
	assert_int_equal(limits_budget_admits(&b, 300, 0), LIMITS_OK);
	/* 200 of the 700 are this request's own buffer */
	assert_int_equal(limits_budget_admits(&b, 500, 200), LIMITS_OK);
	assert_int_equal(limits_budget_admits(&b, 501, 200), LIMITS_BUSY);
	assert_int_equal(limits_budget_admits(&b, 1000, 900), LIMITS_OK);
}

static struct sockaddr_in v4(const char *a)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, a, &sa.sin_addr), 1);
	return sa;
}

static struct sockaddr_in6 v6(const char *a)
{
	struct sockaddr_in6 sa;
	memset(&sa, 0, sizeof sa);
	sa.sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, a, &sa.sin6_addr), 1);
	return sa;
}

static unsigned src4(struct limits_sources *s, const char *a)
{
	struct sockaddr_in sa = v4(a);
	return limits_source_of(s, &sa, sizeof sa);
}

static unsigned src6(struct limits_sources *s, const char *a)
{
	struct sockaddr_in6 sa = v6(a);
	return limits_source_of(s, &sa, sizeof sa);
}

/* A source is an IPv4 /24 or an IPv6 /64; an IPv4-mapped address is its
 * IPv4 source; other /24s land elsewhere (all but a few of 256, under any
 * key); a short or unknown address falls in bucket 0. */
static void a_source_is_a_slash_24_or_a_slash_64(void **state)
{
	static struct limits_sources s;
	(void)state;
	for (uint64_t key = 1; key < 4; key++) {
		s.key = key * 0x1234567890abcdefull;
		unsigned a = src4(&s, "192.0.2.1");
		assert_int_equal(src4(&s, "192.0.2.254"), a);
		assert_int_equal(src6(&s, "::ffff:192.0.2.77"), a);
		assert_int_equal(src6(&s, "2001:db8:1:2::1"),
		                 src6(&s, "2001:db8:1:2:ffff::9"));
		int apart = 0;
		char b[32];
		for (int i = 0; i < 256; i++) {
			snprintf(b, sizeof b, "192.0.%d.1", i);
			apart += src4(&s, b) != a;
		}
		assert_true(apart >= 250);
		assert_true(src6(&s, "2001:db8:1:3::1") !=
		            src6(&s, "2001:db8:1:2::1"));
		assert_true(a < LIMITS_SOURCES);
		struct sockaddr_in sa = v4("192.0.2.1");
		assert_int_equal(limits_source_of(&s, &sa, 2), 0);
	}
}

/* A bucket holds at most its share and all of them the cap; what is given
 * back can be taken again; other buckets are untouched. */
static void a_source_holds_at_most_its_share(void **state)
{
	static struct limits_sources s;
	(void)state;
	s.cap = 5;
	s.share = 3;
	for (int i = 0; i < 3; i++)
		assert_int_equal(limits_source_take(&s, 7), LIMITS_OK);
	assert_int_equal(limits_source_take(&s, 7), LIMITS_BUSY);
	assert_int_equal(limits_source_take(&s, 8), LIMITS_OK);
	limits_source_give(&s, 7);
	assert_int_equal(limits_source_take(&s, 7), LIMITS_OK);
	assert_int_equal(limits_source_take(&s, 7), LIMITS_BUSY);
	assert_int_equal(atomic_load(&s.held[7]), 3);
	assert_int_equal(atomic_load(&s.held[8]), 1);
	/* the whole: 4 held, one more fits, then no bucket gets one, and a
	 * refusal there takes nothing from the bucket's share */
	assert_int_equal(limits_source_take(&s, 9), LIMITS_OK);
	assert_int_equal(atomic_load(&s.total), 5);
	assert_int_equal(limits_source_take(&s, 10), LIMITS_FULL);
	assert_int_equal(atomic_load(&s.held[10]), 0);
	limits_source_give(&s, 9);
	assert_int_equal(limits_source_take(&s, 10), LIMITS_OK);
}

/* At the cap, a newcomer takes the slot of the oldest of the heaviest
 * source, and never of a source no heavier than its own. */
static void a_newcomer_turns_out_the_heaviest_source_only(void **state)
{
	static struct limits_sources s;
	(void)state;
	s.cap = 6;
	s.share = 3;
	/* oldest first: 7, 8, 7, 9, 8, 7 -- 7 holds 3, 8 two, 9 one */
	unsigned held[] = { 7, 8, 7, 9, 8, 7 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(limits_source_take(&s, held[i]), LIMITS_OK);
	assert_int_equal(limits_source_take(&s, 10), LIMITS_FULL);
	/* a new source: the oldest of 7's */
	assert_int_equal(limits_source_evict(&s, 10, held, 6), 0);
	/* one of 8's own: the heavier 7 still */
	assert_int_equal(limits_source_evict(&s, 8, held, 6), 0);
	/* 7 itself is at its share: BUSY, never FULL; and nothing is
	 * heavier than it */
	assert_int_equal(limits_source_take(&s, 7), LIMITS_BUSY);
	assert_int_equal(limits_source_evict(&s, 7, held, 6), -1);
	/* only the lighter 9 and 8 in view: 8's oldest for 10 */
	assert_int_equal(limits_source_evict(&s, 10, held + 3, 2), 1);
	/* sources as light as the newcomer: refused */
	unsigned nines[] = { 9 };
	limits_source_give(&s, 7);
	limits_source_give(&s, 7);
	limits_source_give(&s, 7);
	limits_source_give(&s, 8);
	assert_int_equal(limits_source_take(&s, 10), LIMITS_OK);
	assert_int_equal(limits_source_evict(&s, 10, nines, 1), -1);
	assert_int_equal(limits_source_evict(&s, 11, nines, 1), 0);
}

/* The client's control stream: type 0x00, then SETTINGS (0x04, length,
 * pairs of identifier and value). */
static const uint8_t settings_ok[] = { 0x00, 0x04, 0x07, 0x01, 0x00,
                                       0x06, 0x44, 0x00, 0x07, 0x00 };
static const uint8_t settings_dup[] = { 0x00, 0x04, 0x06, 0x01, 0x00,
                                        0x07, 0x00, 0x01, 0x05 };

/* A SETTINGS frame that repeats an identifier is found, whole or fed a
 * byte at a time; one that does not passes; other streams (a QPACK
 * stream, type 0x02; a request's bytes) are not looked at, and the
 * control stream may come second. */
static void a_repeated_setting_is_found(void **state)
{
	struct h3_control c;
	uint8_t dup[sizeof settings_dup];
	(void)state;
	memcpy(dup, settings_dup, sizeof dup);
	dup[2] = (uint8_t)(sizeof dup - 3);
	h3_control_init(&c);
	assert_int_equal(h3_control_feed(&c, 2, 0, settings_ok,
	                                 sizeof settings_ok), H3_CONTROL_OK);
	assert_true(c.done);
	h3_control_init(&c);
	assert_int_equal(h3_control_feed(&c, 6, 0, (const uint8_t *)"\x02", 1),
	                 H3_CONTROL_OK); /* QPACK encoder stream: not it */
	assert_int_equal(c.id, -1);
	int got = H3_CONTROL_OK;
	for (size_t i = 0; i < sizeof dup && got == H3_CONTROL_OK; i++)
		got = h3_control_feed(&c, 10, i, dup + i, 1);
	assert_int_equal(got, H3_CONTROL_DUPLICATE);
	assert_int_equal(c.id, 10);
	/* once judged, nothing more is looked at */
	assert_int_equal(h3_control_feed(&c, 10, sizeof dup, dup, sizeof dup),
	                 H3_CONTROL_OK);
}

/* Bounded: a SETTINGS frame longer than H3_CONTROL_MAX is left to nghttp3
 * (given up, never read past the buffer), as is a control stream that
 * does not open with SETTINGS. */
static void a_long_or_odd_control_stream_is_left_alone(void **state)
{
	static uint8_t big[H3_CONTROL_MAX + 64];
	struct h3_control c;
	(void)state;
	big[0] = 0x00;
	big[1] = 0x04;
	big[2] = 0x40 | ((sizeof big - 4) >> 8); /* a 2-byte length */
	big[3] = (uint8_t)(sizeof big - 4);
	for (size_t i = 4; i + 1 < sizeof big; i += 2) {
		big[i] = 0x21; /* every pair the same identifier ... */
		big[i + 1] = 0x00;
	}
	h3_control_init(&c);
	assert_int_equal(h3_control_feed(&c, 2, 0, big, sizeof big),
	                 H3_CONTROL_OK); /* ... but past what is judged */
	assert_true(c.done);
	h3_control_init(&c);
	assert_int_equal(h3_control_feed(&c, 2, 0,
	                                 (const uint8_t *)"\x00\x07\x01\x00", 4),
	                 H3_CONTROL_OK); /* GOAWAY first: nghttp3's to refuse */
	assert_true(c.done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_window_is_not_judged_before_it_ends),
		cmocka_unit_test(a_window_that_keeps_the_rate_begins_the_next),
		cmocka_unit_test(a_slow_window_is_cut),
		cmocka_unit_test(a_late_check_asks_for_one_window_only),
		cmocka_unit_test(without_a_rate_any_byte_will_do),
		cmocka_unit_test(a_head_is_due_at_the_header_timeout),
		cmocka_unit_test(a_byte_stream_closes_at_the_first_cut),
		cmocka_unit_test(streams_close_at_the_last_allowed_cut),
		cmocka_unit_test(the_budget_refuses_what_would_pass_it),
		cmocka_unit_test(an_announced_body_counts_what_its_request_holds),
		cmocka_unit_test(a_source_is_a_slash_24_or_a_slash_64),
		cmocka_unit_test(a_source_holds_at_most_its_share),
		cmocka_unit_test(a_newcomer_turns_out_the_heaviest_source_only),
		cmocka_unit_test(a_repeated_setting_is_found),
		cmocka_unit_test(a_long_or_odd_control_stream_is_left_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
