/* test_crc32c.c -- the checksum everything rests on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

static void check_value_matches_the_standard(void **state)
{
	(void)state;
	assert_int_equal(keel_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(keel_crc32c_sw(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(keel_crc32c(0, "", 0), 0);
}

static void hardware_and_table_agree_at_every_length_and_alignment(void **state)
{
	uint8_t buf[600];
	(void)state;
	srand(7);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len + off <= sizeof(buf); len += 7)
			assert_int_equal(keel_crc32c(0, buf + off, len),
			                 keel_crc32c_sw(0, buf + off, len));
}

static void extending_equals_one_pass(void **state)
{
	const char *a = "the quick brown fox ", *b = "jumps over the lazy dog";
	char both[64];
	(void)state;
	snprintf(both, sizeof(both), "%s%s", a, b);
	assert_int_equal(keel_crc32c(keel_crc32c(0, a, strlen(a)), b, strlen(b)),
	                 keel_crc32c(0, both, strlen(both)));
}

static void a_single_bit_flip_changes_the_crc(void **state)
{
	uint8_t buf[256] = {0};
	(void)state;
	uint32_t base = keel_crc32c(0, buf, sizeof(buf));
	for (size_t bit = 0; bit < sizeof(buf) * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_not_equal(keel_crc32c(0, buf, sizeof(buf)), base);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_value_matches_the_standard),
		cmocka_unit_test(hardware_and_table_agree_at_every_length_and_alignment),
		cmocka_unit_test(extending_equals_one_pass),
		cmocka_unit_test(a_single_bit_flip_changes_the_crc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
