/* test_duration -- the one duration rule every tool follows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "duration.h"

static uint64_t parsed(const char *s)
{
	uint64_t ns = 12345;

	assert_int_equal(duration_parse(s, &ns), 0);
	return ns;
}

static void refused(const char *s)
{
	uint64_t ns = 12345;

	if (duration_parse(s, &ns) == 0)
		fail_msg("\"%s\" was accepted as %llu ns", s, (unsigned long long)ns);
	assert_int_equal(ns, 12345); /* left alone */
}

static void a_bare_number_is_seconds(void **state)
{
	(void)state;
	assert_int_equal(parsed("10"), 10000000000ull);
	assert_int_equal(parsed("1.5"), 1500000000ull);
	assert_int_equal(parsed("0.001"), 1000000ull);
}

static void every_unit_scales(void **state)
{
	(void)state;
	assert_int_equal(parsed("7ns"), 7);
	assert_int_equal(parsed("250us"), 250000);
	assert_int_equal(parsed("50ms"), 50000000);
	assert_int_equal(parsed("30s"), 30000000000ull);
	assert_int_equal(parsed("5m"), 300000000000ull);
	assert_int_equal(parsed("2h"), 7200000000000ull);
	assert_int_equal(parsed("1.5s"), 1500000000ull);
	assert_int_equal(parsed("0.25m"), 15000000000ull);
	assert_int_equal(parsed("1.000000001s"), 1000000001ull);
}

static void malformed_zero_and_huge_are_refused(void **state)
{
	(void)state;
	refused("");
	refused("0");
	refused("0ms");
	refused("-1");
	refused("+1");
	refused(" 1");
	refused("1 s");
	refused("1e3");
	refused("10x");
	refused("5min");
	refused("1.");
	refused(".5");
	refused("ms");
	refused("99999999999999999999");
	refused("10000000000h");
	assert_int_equal(duration_parse(NULL, &(uint64_t){0}), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_bare_number_is_seconds),
		cmocka_unit_test(every_unit_scales),
		cmocka_unit_test(malformed_zero_and_huge_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
