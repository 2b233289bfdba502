/*
 * test_exec_proto.c -- the workload protocol of torture --target exec and
 * its translation into the oracle: lines parsed or refused, and the verdict
 * on crafted checker outputs across cycles.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec_proto.h"

static char why[400];

static exec_model *make(void)
{
	exec_model *m = NULL;
	assert_int_equal(exec_model_new(16, 7, &m), 0);
	return m;
}

static void line(exec_model *m, const char *l)
{
	if (exec_model_line(m, l, why, sizeof why) != 0)
		fail_msg("line '%s' refused: %s", l, why);
}

/* Runs one verification over the checker lines (NULL-terminated). */
static uint64_t check(exec_model *m, uint64_t counts[ORACLE_KINDS], ...)
{
	va_list ap;
	const char *l;

	exec_model_verify_begin(m);
	va_start(ap, counts);
	while ((l = va_arg(ap, const char *)))
		assert_int_equal(exec_model_observe(m, l, strlen(l), why, sizeof why), 0);
	va_end(ap);
	return exec_model_verify_end(m, NULL, NULL, counts);
}

static void malformed_lines_are_refused(void **state)
{
	exec_model *m = make();
	(void)state;
	assert_int_equal(exec_model_line(m, "intent 1 k", why, sizeof why), -1);
	assert_int_equal(exec_model_line(m, "put 1 k v", why, sizeof why), -1);
	assert_int_equal(exec_model_line(m, "ack 9", why, sizeof why), -1);
	line(m, "intent 1 k v");
	assert_int_equal(exec_model_line(m, "intent 1 k w", why, sizeof why), -1);
	assert_int_equal(exec_model_line(m, "intent 2 k v extra", why,
	                                 sizeof why), -1);
	exec_model_verify_begin(m);
	assert_int_equal(exec_model_observe(m, "k", 1, why, sizeof why), -1);
	exec_model_free(m);
}

static void acknowledged_value_missing_is_lost(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	line(m, "intent 1 a v1");
	line(m, "ack 1");
	assert_int_equal(check(m, c, NULL), 1);
	assert_int_equal(c[ORACLE_LOST], 1);
	exec_model_free(m);
}

static void unacknowledged_may_vanish_or_stay(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	line(m, "intent 1 a v1");
	line(m, "ack 1");
	line(m, "intent 2 a v2");
	assert_int_equal(check(m, c, "a v1", NULL), 0);
	/* next cycle: same OP names, a value of the earlier cycle survives */
	line(m, "intent 1 a v9");
	assert_int_equal(check(m, c, "a v1", NULL), 0);
	line(m, "intent 1 a v9");
	assert_int_equal(check(m, c, "a v9", NULL), 0);
	exec_model_free(m);
}

static void start_value_of_a_later_op_survives_next_cycle(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	/* cycle 1: two ops on b; the newest is verified */
	line(m, "intent 2 b v2");
	line(m, "ack 2");
	line(m, "intent 10 b v10");
	assert_int_equal(check(m, c, "b v10", NULL), 0);
	/* cycle 2: op 2 again on b, killed before its write showed */
	line(m, "intent 2 b v2");
	assert_int_equal(check(m, c, "b v10", NULL), 0);
	exec_model_free(m);
}

static void never_intended_is_phantom(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	line(m, "intent 1 a v1");
	assert_int_equal(check(m, c, "a torn", NULL), 1);
	assert_int_equal(c[ORACLE_PHANTOM], 1);
	exec_model_free(m);
	m = make();
	line(m, "intent 1 a v1");
	assert_int_equal(check(m, c, "zz v1", NULL), 1);
	assert_int_equal(c[ORACLE_PHANTOM], 1);
	exec_model_free(m);
}

static void lost_value_may_not_come_back(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	line(m, "intent 1 a v1");
	line(m, "ack 1");
	line(m, "intent 2 a v2");
	assert_int_equal(check(m, c, "a v1", NULL), 0); /* v2 proved lost */
	assert_int_equal(check(m, c, "a v2", NULL), 1);
	assert_int_equal(c[ORACLE_PHANTOM], 1);
	exec_model_free(m);
}

static void delete_and_older_ack(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	line(m, "intent 1 a v1");
	line(m, "intent 2 a delete");
	line(m, "ack 1"); /* an older op acknowledged after a newer intent */
	assert_int_equal(check(m, c, NULL), 0);            /* deleted */
	line(m, "intent 1 a v1");
	line(m, "intent 2 a v3");
	line(m, "ack 1");
	assert_int_equal(check(m, c, "a v1", NULL), 0);
	exec_model_free(m);
}

static void adopted_start_is_kept(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	assert_int_equal(exec_model_adopt(m, "a", "old", why, sizeof why), 0);
	assert_int_equal(check(m, c, "a old", NULL), 0);
	assert_int_equal(check(m, c, NULL), 1); /* it vanished */
	exec_model_free(m);
}

/* Checker output of any bytes: the escaped spellings of a value are the
 * value; raw bytes (spaces, a NUL) are a value found, never a refusal. */
static void any_bytes_compare_by_what_they_stand_for(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	static const char nul_line[] = "b v\0x";
	(void)state;
	line(m, "intent 1 a hex:7631");     /* "v1" */
	line(m, "ack 1");
	line(m, "intent 2 b \"w\\u00202\""); /* "w 2": a space */
	line(m, "ack 2");
	assert_int_equal(check(m, c, "a v1", "b hex:772032", NULL), 0);
	line(m, "intent 3 a v3");
	line(m, "ack 3");
	assert_int_equal(check(m, c, "a \"v3\"", "b \"w 2\"", NULL), 0);
	/* a NUL inside the value: a value never written, a durability
	 * verdict (b's acknowledged "w 2" is missing) */
	exec_model_verify_begin(m);
	assert_int_equal(exec_model_observe(m, "a v3", 4, why, sizeof why), 0);
	assert_int_equal(exec_model_observe(m, nul_line, sizeof nul_line - 1,
	                                    why, sizeof why), 0);
	assert_int_equal(exec_model_verify_end(m, NULL, NULL, c), 1);
	assert_int_equal(c[ORACLE_LOST] + c[ORACLE_PHANTOM], 1);
	/* malformed escapes in a workload line are refused */
	assert_int_equal(exec_model_line(m, "intent 9 a hex:7", why, sizeof why),
	                 -1);
	assert_int_equal(exec_model_line(m, "intent 9 a \"\\q\"", why,
	                                 sizeof why), -1);
	exec_model_free(m);
}

static char said[600];

static void remember_report(void *arg, int kind, const char *key,
                            const char *what)
{
	(void)arg;
	(void)kind;
	snprintf(said, sizeof said, "%s: %s", key, what);
}

/* "KEY " with nothing after the space is an empty value found: a
 * durability verdict (never intended), not a malformed line. */
static void key_with_empty_value_is_judged(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	line(m, "intent 1 a v1");
	line(m, "ack 1");
	exec_model_verify_begin(m);
	assert_int_equal(exec_model_observe(m, "a ", 2, why, sizeof why), 0);
	assert_int_equal(exec_model_verify_end(m, NULL, NULL, c), 1);
	assert_int_equal(c[ORACLE_LOST] + c[ORACLE_PHANTOM], 1);
	/* spaces alone after the key: the same */
	exec_model_verify_begin(m);
	assert_int_equal(exec_model_observe(m, "a   ", 4, why, sizeof why), 0);
	assert_int_equal(exec_model_verify_end(m, NULL, NULL, c), 1);
	exec_model_free(m);
}

/* A value cut short is named for what it is. */
static void torn_value_is_named_a_prefix(void **state)
{
	exec_model *m = make();
	uint64_t c[ORACLE_KINDS];
	(void)state;
	line(m, "intent 1 a abcdef");
	line(m, "ack 1");
	exec_model_verify_begin(m);
	assert_int_equal(exec_model_observe(m, "a abc", 5, why, sizeof why), 0);
	assert_int_equal(exec_model_verify_end(m, remember_report, NULL, c), 1);
	assert_non_null(strstr(said, "a torn value: the first 3 of its 6 bytes"));
	exec_model_free(m);
}

/* A replay's verdict comes from the cycle's operations without using them
 * up: the same judgement any number of times, then the real verification. */
static void judge_does_not_consume_the_cycle(void **state)
{
	exec_model *m = make();
	uint64_t counts[ORACLE_KINDS];
	const char *op;
	char *v;
	(void)state;
	line(m, "intent 1 k v1");
	line(m, "ack 1");
	line(m, "intent 2 k v2");
	line(m, "ack 2");
	line(m, "intent 3 k v3"); /* never acknowledged */
	exec_model_verify_begin(m);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(exec_model_judge(m, "k", NULL, &op), 1);
		assert_string_equal(op, "2");
		assert_int_equal(exec_model_judge(m, "k", "v1", NULL), 1);
		assert_int_equal(exec_model_judge(m, "k", "v2", NULL), 0);
		assert_int_equal(exec_model_judge(m, "k", "v3", NULL), 0);
		assert_int_equal(exec_model_judge(m, "k", "zz", NULL), 1);
		assert_int_equal(exec_model_judge(m, "nokey", "v1", NULL), -1);
	}
	assert_int_equal(exec_model_line_value(m, "k v2", 4, "k", &v), 1);
	assert_string_equal(v, "v2");
	free(v);
	assert_int_equal(exec_model_line_value(m, "j v2", 4, "k", &v), 0);
	assert_null(v);
	assert_int_equal(exec_model_observe(m, "k v1", 4, why, sizeof why), 0);
	assert_int_equal(exec_model_verify_end(m, NULL, NULL, counts), 1);
	assert_int_equal(counts[ORACLE_LOST], 1);
	exec_model_free(m);
	/* nothing acknowledged this cycle: the verified start or an intent */
	m = make();
	assert_int_equal(exec_model_adopt(m, "k", "s0", why, sizeof why), 0);
	line(m, "intent 1 k v1");
	exec_model_verify_begin(m);
	assert_int_equal(exec_model_judge(m, "k", "s0", &op), 0);
	assert_null(op);
	assert_int_equal(exec_model_judge(m, "k", "v1", NULL), 0);
	assert_int_equal(exec_model_judge(m, "k", NULL, NULL), 1);
	assert_int_equal(exec_model_judge(m, "k", "zz", NULL), 1);
	exec_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(malformed_lines_are_refused),
		cmocka_unit_test(acknowledged_value_missing_is_lost),
		cmocka_unit_test(unacknowledged_may_vanish_or_stay),
		cmocka_unit_test(start_value_of_a_later_op_survives_next_cycle),
		cmocka_unit_test(never_intended_is_phantom),
		cmocka_unit_test(lost_value_may_not_come_back),
		cmocka_unit_test(delete_and_older_ack),
		cmocka_unit_test(adopted_start_is_kept),
		cmocka_unit_test(any_bytes_compare_by_what_they_stand_for),
		cmocka_unit_test(key_with_empty_value_is_judged),
		cmocka_unit_test(torn_value_is_named_a_prefix),
		cmocka_unit_test(judge_does_not_consume_the_cycle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
