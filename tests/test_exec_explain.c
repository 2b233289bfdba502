/*
 * test_exec_explain.c -- the minimisation behind torture's "why": a cause
 * among thousands of dropped records is found within the replay budget,
 * and a violation the replays cannot reproduce is never explained.  The
 * replays are simulated: the test function decides from the kept seqs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec_explain.h"

#define FILES 1000 /* each: a write, a create of NAME.tmp, a rename */
#define DIRS 20

/* A cut like git's: FILES new files in DIRS directories, each written to
 * NAME.tmp and renamed to NAME, nothing synced.  Data records first in
 * record order, then the namespace records newest first, as the crash
 * lists them.  Record seqs: 3i+1 create, 3i+2 write, 3i+3 rename. */
static faultsim_dropped *git_like_cut(size_t *n)
{
	faultsim_dropped *d = calloc(3 * FILES, sizeof *d);
	size_t k = 0;

	assert_non_null(d);
	for (int i = 0; i < FILES; i++, k++) {
		d[k].seq = 3 * (uint64_t)i + 2;
		d[k].kind = FAULTSIM_KIND_WRITE;
		d[k].fate = FAULTSIM_FATE_LOST;
		d[k].len = 100;
		snprintf(d[k].path, sizeof d[k].path, "/w/d%02d/f%04d",
		         i % DIRS, i);
	}
	for (int i = FILES - 1; i >= 0; i--) {
		d[k].seq = 3 * (uint64_t)i + 3;
		d[k].kind = FAULTSIM_KIND_RENAME;
		d[k].fate = FAULTSIM_FATE_UNDONE;
		snprintf(d[k].path, sizeof d[k].path, "/w/d%02d/f%04d.tmp",
		         i % DIRS, i);
		snprintf(d[k].path_b, sizeof d[k].path_b, "/w/d%02d/f%04d",
		         i % DIRS, i);
		k++;
		d[k].seq = 3 * (uint64_t)i + 1;
		d[k].kind = FAULTSIM_KIND_CREATE;
		d[k].fate = FAULTSIM_FATE_UNDONE;
		snprintf(d[k].path, sizeof d[k].path, "/w/d%02d/f%04d.tmp",
		         i % DIRS, i);
		k++;
	}
	*n = k;
	return d;
}

typedef struct oracle {
	uint64_t need[2]; /* the violation shows when all of these are dropped */
	int nneed;
	int never;        /* the violation never shows again (no repro)      */
	unsigned calls;
} oracle;

static int kept(const uint64_t *persist, size_t n, uint64_t seq)
{
	for (size_t i = 0; i < n; i++)
		if (persist[i] == seq)
			return 1;
	return 0;
}

static int replay(void *arg, const uint64_t *persist, size_t n)
{
	oracle *o = arg;

	o->calls++;
	if (o->never)
		return 0;
	for (int i = 0; i < o->nneed; i++)
		if (kept(persist, n, o->need[i]))
			return 0;
	return 1;
}

static size_t find(const faultsim_dropped *d, size_t n, uint64_t seq)
{
	for (size_t i = 0; i < n; i++)
		if (d[i].seq == seq)
			return i;
	fail_msg("seq %llu not in the cut", (unsigned long long)seq);
	return 0;
}

/* One rename among 3,000 records (more than the 1,024 a minimisation
 * used to take): named alone, in a few dozen replays. */
static void one_rename_among_thousands(void **state)
{
	size_t n, cause[3 * FILES], ncause;
	faultsim_dropped *d = git_like_cut(&n);
	oracle o = { { 3 * 737 + 3 }, 1, 0, 0 };
	unsigned tests;

	(void)state;
	assert_true(n > 1024);
	assert_int_equal(explain_minimise(d, n, replay, &o, EXPLAIN_MAX_TESTS,
	                                  cause, &ncause, &tests),
	                 EXPLAIN_FOUND);
	assert_int_equal(ncause, 1);
	assert_int_equal(cause[0], find(d, n, 3 * 737 + 3));
	assert_int_equal(d[cause[0]].kind, FAULTSIM_KIND_RENAME);
	assert_int_equal(tests, o.calls);
	assert_true(tests <= 40);
	free(d);
}

/* A cause of two records of one file, a write and its rename, far apart in
 * the crash's list (data first, namespace after): ddmin over the records
 * splits them and runs out of its 100 replays; by groups it does not. */
static void write_and_rename_of_one_file(void **state)
{
	size_t n, cause[3 * FILES], ncause;
	faultsim_dropped *d = git_like_cut(&n);
	oracle o = { { 3 * 411 + 2, 3 * 411 + 3 }, 2, 0, 0 };
	unsigned tests;

	(void)state;
	assert_int_equal(explain_minimise(d, n, replay, &o, EXPLAIN_MAX_TESTS,
	                                  cause, &ncause, &tests),
	                 EXPLAIN_FOUND);
	assert_int_equal(ncause, 2);
	assert_int_equal(cause[0], find(d, n, 3 * 411 + 2)); /* record order */
	assert_int_equal(cause[1], find(d, n, 3 * 411 + 3));
	assert_true(tests <= EXPLAIN_MAX_TESTS);
	free(d);
}

/* The full cut replayed passes: "could not reproduce", no cause. */
static void no_repro_invents_nothing(void **state)
{
	size_t n, cause[3 * FILES], ncause = 99;
	faultsim_dropped *d = git_like_cut(&n);
	oracle o = { { 0 }, 0, 1, 0 };
	unsigned tests;

	(void)state;
	assert_int_equal(explain_minimise(d, n, replay, &o, EXPLAIN_MAX_TESTS,
	                                  cause, &ncause, &tests),
	                 EXPLAIN_NO_REPRO);
	assert_int_equal(ncause, 0);
	assert_int_equal(tests, 1);
	free(d);
}

/* A budget too small: a cause that still fails, said to be maybe not the
 * smallest. */
static void budget_keeps_a_failing_set(void **state)
{
	size_t n, cause[3 * FILES], ncause;
	faultsim_dropped *d = git_like_cut(&n);
	oracle o = { { 3 * 5 + 3 }, 1, 0, 0 };
	unsigned tests;

	(void)state;
	assert_int_equal(explain_minimise(d, n, replay, &o, 6, cause, &ncause,
	                                  &tests),
	                 EXPLAIN_BUDGET);
	assert_int_equal(tests, 6);
	assert_true(ncause >= 1);
	int has = 0;
	for (size_t i = 0; i < ncause; i++)
		has |= d[cause[i]].seq == 3 * 5 + 3;
	assert_true(has);
	free(d);
}

/* The ring is circular: a slot before another may hold a later call.
 * Where an acknowledgement fell is said by the calls' numbers. */
static void ack_order_by_call_number(void **state)
{
	shim_call ring[3];
	faultsim_dropped d;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	(void)state;
	memset(ring, 0, sizeof ring);
	memset(&d, 0, sizeof d);
	/* slot 0: the ack, call #30 (the ring wrapped); slot 1: the write,
	 * call #20, record 5; slot 2: an older call, #10 */
	ring[0].seq = 30;
	ring[0].op = SHIM_OP_PROTOCOL;
	snprintf(ring[0].path, sizeof ring[0].path, "ack 7");
	ring[1].seq = 20;
	ring[1].op = SHIM_OP_WRITE;
	ring[1].rec = 5;
	ring[1].file = 0;
	ring[1].len = 4;
	snprintf(ring[1].path, sizeof ring[1].path, "k");
	ring[2].seq = 10;
	ring[2].op = SHIM_OP_OPEN;
	snprintf(ring[2].path, sizeof ring[2].path, "k");
	d.seq = 5;
	d.kind = FAULTSIM_KIND_WRITE;
	d.fate = FAULTSIM_FATE_LOST;
	d.len = 4;
	snprintf(d.path, sizeof d.path, "/d/k");
	out = open_memstream(&text, &len);
	assert_non_null(out);
	explain_describe(out, &d, ring, 3, NULL, "/d", "7");
	fclose(out);
	assert_non_null(strstr(text, "op 7 was acknowledged after it (#30)"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_rename_among_thousands),
		cmocka_unit_test(write_and_rename_of_one_file),
		cmocka_unit_test(no_repro_invents_nothing),
		cmocka_unit_test(budget_keeps_a_failing_set),
		cmocka_unit_test(ack_order_by_call_number),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
