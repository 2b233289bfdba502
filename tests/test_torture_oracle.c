/*
 * test_torture_oracle.c -- the torture oracle judged on crafted recovered
 * states: every kind of violation must be flagged, and every legal state
 * (unacknowledged writes gone or kept, deletes, batches whole) must pass.
 *
 * The model: 8 keys, 2 threads (thread 0 owns keys 0 2 4 6, thread 1 owns
 * 1 3 5 7).  Records are fed as the writer would send them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "oracle.h"
#include "value.h"

#define NONCE 42u

static oracle *make(void)
{
	oracle *o = NULL;
	assert_int_equal(oracle_new(8, 2, NONCE, &o), 0);
	return o;
}

/* INTENT for thread T, op SEQ: N changes given as (key, len) pairs; len 0
 * is a delete. */
static void intent(oracle *o, uint32_t t, uint64_t seq, int n, ...)
{
	proto_rec r;
	const char *why = NULL;
	va_list ap;

	memset(&r, 0, sizeof(r));
	r.kind = PROTO_INTENT;
	r.thread = t;
	r.seq = seq;
	r.count = (uint32_t)n;
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		r.change[i].key = va_arg(ap, uint32_t);
		r.change[i].len = va_arg(ap, uint32_t);
	}
	va_end(ap);
	assert_int_equal(oracle_record(o, &r, &why), 0);
}

/* DONE with rc 0: the acknowledgement, with the commit's txid. */
static void done(oracle *o, uint32_t t, uint64_t seq, uint64_t txid)
{
	proto_rec r;
	const char *why = NULL;

	memset(&r, 0, sizeof(r));
	r.kind = PROTO_DONE;
	r.thread = t;
	r.seq = seq;
	r.rev = txid;
	assert_int_equal(oracle_record(o, &r, &why), 0);
}

/* The store shows key K holding the value thread T's op SEQ put (change
 * INDEX, LEN bytes) at revision REV. */
static void shows(oracle *o, uint32_t k, uint32_t t, uint64_t seq,
                  uint32_t index, uint32_t len, uint64_t rev)
{
	value_id id = {.key = k, .thread = t, .index = index, .seq = seq,
	               .nonce = NONCE, .len = len};
	char key[VALUE_KEY_MAX];
	size_t klen = value_key(k, key);
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	value_encode(&id, buf);
	oracle_observe(o, key, klen, buf, len, rev);
	free(buf);
}

/* Ends the verification; returns the count of KIND (or all, KIND < 0). */
static uint64_t verdict(oracle *o, int kind)
{
	uint64_t counts[ORACLE_KINDS], total;

	total = oracle_verify_end(o, NULL, NULL, counts);
	return kind < 0 ? total : counts[kind];
}

/* SEEN from a reader process: key K showed thread T's op SEQ.  Returns
 * oracle_record's answer. */
static int seen(oracle *o, uint32_t t, uint64_t seq, uint32_t k)
{
	proto_rec r;
	const char *why = NULL;

	memset(&r, 0, sizeof(r));
	r.kind = PROTO_SEEN;
	r.thread = t;
	r.seq = seq;
	r.change[0].key = k;
	return oracle_record(o, &r, &why);
}

/* ---- legal states pass ---------------------------------------------------- */

static void unacked_write_may_be_lost(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 1);
	intent(o, 0, 2, 1, 2u, 100u); /* killed before it returned */
	oracle_verify_begin(o, 1);
	shows(o, 0, 0, 1, 0, 100, 1);
	assert_int_equal(verdict(o, -1), 0);
	oracle_free(o);
}

static void unacked_write_may_survive(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 1);
	intent(o, 0, 2, 1, 2u, 100u);
	oracle_verify_begin(o, 2);
	shows(o, 0, 0, 1, 0, 100, 1);
	shows(o, 2, 0, 2, 0, 100, 2);
	assert_int_equal(verdict(o, -1), 0);
	oracle_free(o);
}

static void state_carries_over_cycles(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 1, 1, 1, 3u, 64u);
	done(o, 1, 1, 1);
	oracle_verify_begin(o, 1);
	shows(o, 3, 1, 1, 0, 64, 1);
	assert_int_equal(verdict(o, -1), 0);
	assert_int_equal(oracle_next_seq(o, 1), 2);
	assert_true(oracle_key(o, 3)->present);
	assert_int_equal(oracle_key(o, 3)->rev, 1);
	/* Cycle 2: a delete, acknowledged. */
	intent(o, 1, 2, 1, 3u, 0u);
	done(o, 1, 2, 2);
	oracle_verify_begin(o, 2);
	assert_int_equal(verdict(o, -1), 0);
	assert_false(oracle_key(o, 3)->present);
	oracle_free(o);
}

static void whole_batch_passes(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 3, 0u, 80u, 2u, 90u, 4u, 100u);
	oracle_verify_begin(o, 1);
	shows(o, 0, 0, 1, 0, 80, 1);
	shows(o, 2, 0, 1, 1, 90, 1);
	shows(o, 4, 0, 1, 2, 100, 1);
	assert_int_equal(verdict(o, -1), 0);
	oracle_free(o);
}

/* ---- lost acknowledged writes --------------------------------------------- */

static void lost_acked_write_is_flagged(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 1);
	oracle_verify_begin(o, 1); /* the store shows nothing */
	assert_int_equal(verdict(o, ORACLE_LOST), 1);
	oracle_free(o);
}

static void older_value_is_a_lost_write(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 1);
	oracle_verify_begin(o, 1);
	shows(o, 0, 0, 1, 0, 100, 1);
	assert_int_equal(verdict(o, -1), 0);
	intent(o, 0, 2, 1, 0u, 120u);
	done(o, 0, 2, 2);
	oracle_verify_begin(o, 2);
	shows(o, 0, 0, 1, 0, 100, 1); /* the old value: op 2 is lost */
	assert_int_equal(verdict(o, ORACLE_LOST), 1);
	oracle_free(o);
}

static void lost_acked_delete_is_flagged(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 1);
	oracle_verify_begin(o, 1);
	shows(o, 0, 0, 1, 0, 100, 1);
	assert_int_equal(verdict(o, -1), 0);
	intent(o, 0, 2, 1, 0u, 0u);
	done(o, 0, 2, 2);
	oracle_verify_begin(o, 2);
	shows(o, 0, 0, 1, 0, 100, 1); /* the deleted key is back */
	assert_int_equal(verdict(o, ORACLE_LOST), 1);
	oracle_free(o);
}

static void ack_before_commit_counts_as_acked(void **state)
{
	oracle *o = make();
	proto_rec r;
	const char *why;
	(void)state;
	intent(o, 1, 1, 1, 1u, 64u);
	memset(&r, 0, sizeof(r));
	r.kind = PROTO_ACK;
	r.thread = 1;
	r.seq = 1;
	assert_int_equal(oracle_record(o, &r, &why), 0);
	assert_int_equal(oracle_acked(o), 1);
	oracle_verify_begin(o, 0);
	assert_int_equal(verdict(o, ORACLE_LOST), 1);
	oracle_free(o);
}

/* ---- phantoms ------------------------------------------------------------- */

static void never_issued_value_is_phantom(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	oracle_verify_begin(o, 1);
	shows(o, 2, 0, 5, 0, 100, 1); /* op 5 was never issued */
	assert_int_equal(verdict(o, ORACLE_PHANTOM), 1);
	oracle_free(o);
}

static void unknown_key_is_phantom(void **state)
{
	oracle *o = make();
	uint8_t v[64] = {0};
	char key[VALUE_KEY_MAX];
	size_t klen = value_key(9, key); /* a torture key beyond --keys 8 */
	(void)state;
	oracle_verify_begin(o, 1);
	oracle_observe(o, "stray", 5, v, sizeof(v), 1);
	oracle_observe(o, key, klen, v, sizeof(v), 1);
	assert_int_equal(verdict(o, ORACLE_PHANTOM), 2);
	oracle_free(o);
}

static void torn_value_is_phantom(void **state)
{
	oracle *o = make();
	value_id id = {.key = 0, .thread = 0, .seq = 1, .nonce = NONCE,
	               .len = 200};
	uint8_t buf[200];
	char key[VALUE_KEY_MAX];
	size_t klen = value_key(0, key);
	(void)state;
	intent(o, 0, 1, 1, 0u, 200u);
	value_encode(&id, buf);
	buf[150] ^= 1; /* one bit of the payload */
	oracle_verify_begin(o, 1);
	oracle_observe(o, key, klen, buf, sizeof(buf), 1);
	assert_int_equal(verdict(o, ORACLE_PHANTOM), 1);
	oracle_free(o);
}

static void short_value_is_phantom(void **state)
{
	oracle *o = make();
	value_id id = {.key = 0, .thread = 0, .seq = 1, .nonce = NONCE,
	               .len = 200};
	uint8_t buf[200];
	char key[VALUE_KEY_MAX];
	size_t klen = value_key(0, key);
	(void)state;
	intent(o, 0, 1, 1, 0u, 200u);
	value_encode(&id, buf);
	oracle_verify_begin(o, 1);
	oracle_observe(o, key, klen, buf, 100, 1); /* cut in half */
	assert_int_equal(verdict(o, ORACLE_PHANTOM), 1);
	oracle_free(o);
}

static void value_under_wrong_key_is_phantom(void **state)
{
	oracle *o = make();
	value_id id = {.key = 2, .thread = 0, .seq = 1, .nonce = NONCE,
	               .len = 100};
	uint8_t buf[100];
	char key[VALUE_KEY_MAX];
	size_t klen = value_key(4, key);
	(void)state;
	intent(o, 0, 1, 2, 2u, 100u, 4u, 100u);
	value_encode(&id, buf);
	oracle_verify_begin(o, 1);
	oracle_observe(o, key, klen, buf, sizeof(buf), 1); /* key 4 */
	assert_int_equal(verdict(o, ORACLE_PHANTOM), 1);
	oracle_free(o);
}

static void value_of_another_run_is_phantom(void **state)
{
	oracle *o = make();
	value_id id = {.key = 0, .thread = 0, .seq = 1, .nonce = NONCE + 1,
	               .len = 100};
	uint8_t buf[100];
	char key[VALUE_KEY_MAX];
	size_t klen = value_key(0, key);
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	value_encode(&id, buf);
	oracle_verify_begin(o, 1);
	oracle_observe(o, key, klen, buf, sizeof(buf), 1);
	assert_int_equal(verdict(o, ORACLE_PHANTOM), 1);
	oracle_free(o);
}

static void resurrected_lost_write_is_phantom(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u); /* never acknowledged ... */
	oracle_verify_begin(o, 0);
	assert_int_equal(verdict(o, -1), 0); /* ... and verified gone */
	oracle_verify_begin(o, 1);
	shows(o, 0, 0, 1, 0, 100, 1); /* a later cycle finds it */
	assert_int_equal(verdict(o, ORACLE_PHANTOM), 1);
	oracle_free(o);
}

/* ---- holes in the commit order --------------------------------------------- */

/* Operations in flight together (a writer that pipelines commits, or one
 * whose DONE never came): a later one visible while an earlier one is not
 * is a hole, even though neither was acknowledged. */
static void later_op_without_earlier_is_hole(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	intent(o, 0, 2, 1, 2u, 100u);
	oracle_verify_begin(o, 2);
	shows(o, 2, 0, 2, 0, 100, 2); /* op 2 is there, op 1 is not */
	assert_int_equal(verdict(o, ORACLE_HOLE), 1);
	oracle_free(o);
}

static void partial_batch_is_hole(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 1, 1, 3, 1u, 64u, 3u, 64u, 5u, 64u);
	oracle_verify_begin(o, 1);
	shows(o, 1, 1, 1, 0, 64, 1);
	shows(o, 5, 1, 1, 2, 64, 1); /* key 3 of the batch is missing */
	assert_int_equal(verdict(o, ORACLE_HOLE), 1);
	oracle_free(o);
}

/* Thread 1's acknowledged commit (txid 2) is gone while thread 0's later
 * commit (txid 3) survived: a hole in the global commit order, reported
 * as the acknowledged write it loses. */
static void cross_thread_hole_is_flagged(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 1, 1, 1, 1u, 64u);
	done(o, 1, 1, 2);
	intent(o, 0, 1, 1, 0u, 64u);
	done(o, 0, 1, 3);
	oracle_verify_begin(o, 3);
	shows(o, 0, 0, 1, 0, 64, 3);
	assert_int_equal(verdict(o, ORACLE_LOST), 1);
	oracle_free(o);
}

/* ---- revisions against the commit order ------------------------------------ */

static void revision_differing_from_txid_is_flagged(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 3);
	oracle_verify_begin(o, 4);
	shows(o, 0, 0, 1, 0, 100, 4);
	assert_int_equal(verdict(o, ORACLE_ORDER), 1);
	oracle_free(o);
}

static void revision_above_head_is_flagged(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	oracle_verify_begin(o, 4);
	shows(o, 0, 0, 1, 0, 100, 5);
	assert_int_equal(verdict(o, ORACLE_ORDER), 1);
	oracle_free(o);
}

static void batch_with_two_revisions_is_flagged(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 2, 0u, 100u, 2u, 100u);
	oracle_verify_begin(o, 4);
	shows(o, 0, 0, 1, 0, 100, 3);
	shows(o, 2, 0, 1, 1, 100, 4);
	assert_int_equal(verdict(o, ORACLE_ORDER), 1);
	oracle_free(o);
}

static void txid_going_back_in_program_order_is_flagged(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 5);
	intent(o, 0, 2, 1, 2u, 100u);
	done(o, 0, 2, 4);
	oracle_verify_begin(o, 5);
	shows(o, 0, 0, 1, 0, 100, 5);
	shows(o, 2, 0, 2, 0, 100, 4);
	/* Flagged twice: along the thread, and in real time. */
	assert_int_equal(verdict(o, ORACLE_ORDER), 2);
	oracle_free(o);
}

/* Thread 0's commit returned txid 5 before thread 1 even began; thread 1
 * then cannot get txid 3. */
static void txid_against_real_time_is_flagged(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 5);
	intent(o, 1, 1, 1, 1u, 100u);
	done(o, 1, 1, 3);
	oracle_verify_begin(o, 5);
	shows(o, 0, 0, 1, 0, 100, 5);
	shows(o, 1, 1, 1, 0, 100, 3);
	assert_int_equal(verdict(o, ORACLE_ORDER), 1);
	oracle_free(o);
}

static void overlapping_commits_may_share_order(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u); /* both in flight at once */
	intent(o, 1, 1, 1, 1u, 100u);
	done(o, 0, 1, 5);
	done(o, 1, 1, 4);
	oracle_verify_begin(o, 5);
	shows(o, 0, 0, 1, 0, 100, 5);
	shows(o, 1, 1, 1, 0, 100, 4);
	assert_int_equal(verdict(o, -1), 0);
	oracle_free(o);
}

/* ---- protocol, adoption, values -------------------------------------------- */

/* A reader was shown op 2 (not acknowledged: its writer died in the
 * commit).  Readers see only durable commits, so recovery must keep it. */
static void what_a_reader_saw_may_not_be_rolled_back(void **state)
{
	oracle *o = make();
	(void)state;
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 1);
	intent(o, 0, 2, 1, 2u, 100u);
	assert_int_equal(seen(o, 0, 2, 2), 0);
	oracle_verify_begin(o, 1);
	shows(o, 0, 0, 1, 0, 100, 1);
	assert_int_equal(verdict(o, ORACLE_LOST), 1);
	oracle_free(o);
	/* the same, kept: fine */
	o = make();
	intent(o, 0, 1, 1, 0u, 100u);
	done(o, 0, 1, 1);
	intent(o, 0, 2, 1, 2u, 100u);
	assert_int_equal(seen(o, 0, 2, 2), 0);
	oracle_verify_begin(o, 2);
	shows(o, 0, 0, 1, 0, 100, 1);
	shows(o, 2, 0, 2, 0, 100, 2);
	assert_int_equal(verdict(o, -1), 0);
	/* next cycle: a value from the start state may be seen; an
	 * operation never issued, or one that did not put that key, not */
	assert_int_equal(seen(o, 0, 2, 2), 0);
	assert_int_equal(seen(o, 0, 3, 4), -1);
	intent(o, 0, 3, 1, 4u, 0u + 100u);
	assert_int_equal(seen(o, 0, 3, 6), -1);
	oracle_free(o);
}

static void records_out_of_protocol_are_refused(void **state)
{
	oracle *o = make();
	proto_rec r;
	const char *why = NULL;
	(void)state;
	memset(&r, 0, sizeof(r));
	r.kind = PROTO_INTENT;
	r.thread = 0;
	r.seq = 2; /* expected 1 */
	r.count = 1;
	assert_int_equal(oracle_record(o, &r, &why), -1);
	r.seq = 1;
	r.change[0].key = 1; /* owned by thread 1 */
	r.change[0].len = 64;
	assert_int_equal(oracle_record(o, &r, &why), -1);
	r.kind = PROTO_DONE;
	r.change[0].key = 0;
	assert_int_equal(oracle_record(o, &r, &why), -1); /* not in flight */
	oracle_free(o);
}

static void adopted_store_is_the_start(void **state)
{
	oracle *o = make();
	value_id id = {.key = 6, .thread = 2, .seq = 9, .nonce = 7, .len = 50};
	uint8_t buf[50];
	char key[VALUE_KEY_MAX];
	size_t klen = value_key(6, key);
	const char *why = NULL;
	(void)state;
	value_encode(&id, buf);
	assert_int_equal(oracle_adopt(o, key, klen, buf, 50, 3, &why), 0);
	assert_int_equal(oracle_adopt(o, "x", 1, buf, 50, 3, &why), -1);
	oracle_verify_begin(o, 3);
	oracle_observe(o, key, klen, buf, 50, 3);
	assert_int_equal(verdict(o, -1), 0);
	oracle_verify_begin(o, 3); /* and its loss is noticed */
	assert_int_equal(verdict(o, ORACLE_LOST), 1);
	oracle_free(o);
}

static void values_round_trip_and_reject_damage(void **state)
{
	value_id id = {.key = 12, .thread = 3, .index = 2, .seq = 77,
	               .nonce = 5, .len = 301}, back;
	uint8_t buf[301];
	char key[VALUE_KEY_MAX];
	uint32_t k;
	(void)state;
	value_encode(&id, buf);
	assert_int_equal(value_decode(buf, sizeof(buf), &back, NULL), 0);
	assert_int_equal(back.seq, 77);
	assert_int_equal(back.index, 2);
	assert_int_equal(value_equal(&id, buf, sizeof(buf)), 0);
	id.seq = 78;
	assert_int_equal(value_equal(&id, buf, sizeof(buf)), -1);
	buf[300] ^= 0x80;
	assert_int_equal(value_decode(buf, sizeof(buf), &back, NULL), -1);
	for (uint32_t i = 0; i < 100; i++) {
		size_t n = value_key(i, key);
		assert_int_equal(value_key_parse(key, n, &k), 0);
		assert_int_equal(k, i);
		assert_int_equal(value_key_parse(key, n - (i % 2) - 1, &k), -1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unacked_write_may_be_lost),
		cmocka_unit_test(unacked_write_may_survive),
		cmocka_unit_test(state_carries_over_cycles),
		cmocka_unit_test(whole_batch_passes),
		cmocka_unit_test(lost_acked_write_is_flagged),
		cmocka_unit_test(older_value_is_a_lost_write),
		cmocka_unit_test(lost_acked_delete_is_flagged),
		cmocka_unit_test(ack_before_commit_counts_as_acked),
		cmocka_unit_test(never_issued_value_is_phantom),
		cmocka_unit_test(unknown_key_is_phantom),
		cmocka_unit_test(torn_value_is_phantom),
		cmocka_unit_test(short_value_is_phantom),
		cmocka_unit_test(value_under_wrong_key_is_phantom),
		cmocka_unit_test(value_of_another_run_is_phantom),
		cmocka_unit_test(resurrected_lost_write_is_phantom),
		cmocka_unit_test(later_op_without_earlier_is_hole),
		cmocka_unit_test(partial_batch_is_hole),
		cmocka_unit_test(cross_thread_hole_is_flagged),
		cmocka_unit_test(revision_differing_from_txid_is_flagged),
		cmocka_unit_test(revision_above_head_is_flagged),
		cmocka_unit_test(batch_with_two_revisions_is_flagged),
		cmocka_unit_test(txid_going_back_in_program_order_is_flagged),
		cmocka_unit_test(txid_against_real_time_is_flagged),
		cmocka_unit_test(overlapping_commits_may_share_order),
		cmocka_unit_test(what_a_reader_saw_may_not_be_rolled_back),
		cmocka_unit_test(records_out_of_protocol_are_refused),
		cmocka_unit_test(adopted_store_is_the_start),
		cmocka_unit_test(values_round_trip_and_reject_damage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
