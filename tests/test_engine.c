/* test_engine.c -- the public API: round trips, order, revisions, batches,
 * views, group commit, bad input, several processes.  Compaction:
 * test_compact.c; growth and sync counting: test_grow.c. */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "crc32c.h"
#include "format.h"
#include "io.h"
#include "keel.h"
#include "testutil.h"
#include "testdb.h"

static void put_get_delete_round_trip(void **state)
{
	fixture *f = *state;
	uint64_t rev;
	assert_int_equal(keel_put(f->db, "a", 1, "one", 3, KEEL_REV_ANY, &rev), KEEL_OK);
	assert_true(rev >= 1);
	assert_int_equal(keel_put(f->db, "b", 1, "", 0, KEEL_REV_ANY, NULL), KEEL_OK);
	check_value(f->db, "a", "one");
	check_value(f->db, "b", "");
	assert_int_equal(keel_del(f->db, "a", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	check_value(f->db, "a", NULL);
	assert_int_equal(keel_del(f->db, "a", 1, KEEL_REV_ANY, NULL), KEEL_ENOTFOUND);
	reopen(f);
	check_value(f->db, "a", NULL);
	check_value(f->db, "b", "");
	keel_stats st;
	assert_int_equal(keel_stat(f->db, &st), KEEL_OK);
	assert_int_equal(st.keys, 1);
}

static void keys_of_any_bytes_and_length_limits(void **state)
{
	fixture *f = *state;
	uint8_t key[KEEL_KEY_MAX + 1];
	keel_view v;
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 37); /* includes NUL bytes */
	assert_int_equal(keel_put(f->db, key, KEEL_KEY_MAX, "x", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_put(f->db, key, 1, "y", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_put(f->db, key, KEEL_KEY_MAX + 1, "x", 1, KEEL_REV_ANY, NULL), KEEL_EKEY);
	assert_int_equal(keel_put(f->db, key, 0, "x", 1, KEEL_REV_ANY, NULL), KEEL_EKEY);
	assert_int_equal(keel_put(f->db, NULL, 3, "x", 1, KEEL_REV_ANY, NULL), KEEL_EKEY);
	assert_int_equal(keel_get(f->db, key, KEEL_KEY_MAX + 1, &v), KEEL_EKEY);
	/* a delete checks its key as a put does (and changes nothing) */
	assert_int_equal(keel_del(f->db, key, KEEL_KEY_MAX + 1, KEEL_REV_ANY, NULL), KEEL_EKEY);
	assert_int_equal(keel_del(f->db, key, 0, KEEL_REV_ANY, NULL), KEEL_EKEY);
	assert_int_equal(keel_del(f->db, NULL, 3, KEEL_REV_ANY, NULL), KEEL_EKEY);
	assert_int_equal(keel_put(f->db, "k", 1, NULL, 5, KEEL_REV_ANY, NULL), KEEL_EINVAL);
	assert_int_equal(keel_put(f->db, "k", 1, "x", KEEL_VALUE_MAX + 1, KEEL_REV_ANY, NULL), KEEL_ETOOBIG);
	assert_int_equal(keel_put(NULL, "k", 1, "x", 1, KEEL_REV_ANY, NULL), KEEL_EINVAL);
	assert_int_equal(keel_get(f->db, "k", 1, NULL), KEEL_EINVAL);
	assert_int_equal(keel_get(f->db, key, KEEL_KEY_MAX, &v), KEEL_OK);
	assert_memory_equal(v.data, "x", 1);
	keel_view_release(&v);
	keel_stats st;
	keel_stat(f->db, &st);
	assert_int_equal(st.keys, 2); /* the failed calls changed nothing */
}


static void a_refreshed_snapshot_moves_forward_and_old_views_stay(void **state)
{
	fixture *f = *state;
	keel_snapshot *s;
	keel_view old, now;
	assert_int_equal(keel_put(f->db, "k", 1, "one", 3, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	uint64_t t1 = keel_snapshot_txid(s);
	assert_int_equal(keel_snapshot_refresh(&s), KEEL_OK); /* nothing new */
	assert_int_equal(keel_snapshot_txid(s), t1);
	assert_int_equal(keel_snapshot_get(s, "k", 1, &old), KEEL_OK);
	assert_int_equal(keel_put(f->db, "k", 1, "two", 3, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_snapshot_get(s, "k", 1, &now), KEEL_OK);
	assert_memory_equal(now.data, "one", 3); /* a snapshot does not move */
	keel_view_release(&now);
	assert_int_equal(keel_snapshot_refresh(&s), KEEL_OK); /* a view is held */
	assert_true(keel_snapshot_txid(s) > t1);
	assert_int_equal(keel_snapshot_get(s, "k", 1, &now), KEEL_OK);
	assert_memory_equal(now.data, "two", 3);
	assert_memory_equal(old.data, "one", 3);
	keel_view_release(&old);
	keel_view_release(&now);
	assert_int_equal(keel_put(f->db, "k", 1, "three", 5, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_compact(f->db), KEEL_OK);
	assert_int_equal(keel_snapshot_refresh(&s), KEEL_OK); /* in place */
	assert_int_equal(keel_snapshot_get(s, "k", 1, &now), KEEL_OK);
	assert_memory_equal(now.data, "three", 5);
	keel_snapshot_close(s); /* the view outlives its snapshot */
	assert_memory_equal(now.data, "three", 5);
	keel_view_release(&now);
	assert_int_equal(keel_snapshot_refresh(NULL), KEEL_EINVAL);
}

static void large_value_round_trips(void **state)
{
	fixture *f = *state;
	size_t len = 24u << 20; /* bigger than the first preallocation */
	uint8_t *big = malloc(len);
	keel_view v;
	for (size_t i = 0; i < len; i++)
		big[i] = (uint8_t)(i * 2654435761u >> 13);
	assert_int_equal(keel_put(f->db, "big", 3, big, len, KEEL_REV_ANY, NULL), KEEL_OK);
	reopen(f);
	assert_int_equal(keel_get(f->db, "big", 3, &v), KEEL_OK);
	assert_int_equal(v.len, len);
	assert_memory_equal(v.data, big, len);
	keel_view_release(&v);
	free(big);
}

/* VALUE records the newest tree owns, from keel check: the tree here is one
 * leaf, so every record past the first is a value's own. */
static uint64_t value_records(keel_db *db)
{
	keel_check_result r;
	assert_int_equal(keel_check(db, NULL, NULL, &r), KEEL_OK);
	assert_int_equal(r.problems, 0); /* includes live bytes == the head's */
	return r.records - 1;
}

static void small_values_live_in_their_leaf_and_big_ones_in_records(void **state)
{
	fixture *f = *state;
	static const size_t lens[] = {0, 1, 16, 63, KEEL_INLINE_MAX};
	char key[8], val[200];
	memset(val, 'v', sizeof(val));
	/* every commit a checkpoint: the tree holds every value (format 3
	 * keeps small ones in DELTA records until then: test_delta.c) */
	keel_options ck = {.checkpoint_bytes = 1};
	reopen_with(f, &ck);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		val[0] = (char)('a' + i);
		assert_int_equal(keel_put(f->db, key, strlen(key), val, lens[i],
		                          KEEL_REV_ANY, NULL), KEEL_OK);
	}
	assert_int_equal(value_records(f->db), 0);
	/* one byte over the limit: a record of its own */
	assert_int_equal(keel_put(f->db, "big", 3, val, KEEL_INLINE_MAX + 1,
	                          KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(value_records(f->db), 1);
	/* record -> inline -> record again, and a delete of each kind */
	assert_int_equal(keel_put(f->db, "big", 3, "tiny", 4, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(value_records(f->db), 0);
	assert_int_equal(keel_put(f->db, "k0", 2, val, 150, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(value_records(f->db), 1);
	assert_int_equal(keel_del(f->db, "k0", 2, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_del(f->db, "k1", 2, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(value_records(f->db), 0);
	assert_int_equal(keel_put(f->db, "k9", 2, val, 100, KEEL_REV_ANY, NULL), KEEL_OK);

	for (int round = 0; round < 3; round++) {
		keel_view v;
		check_value(f->db, "k0", NULL);
		check_value(f->db, "k1", NULL);
		check_value(f->db, "big", "tiny");
		for (size_t i = 2; i < sizeof(lens) / sizeof(lens[0]); i++) {
			snprintf(key, sizeof(key), "k%zu", i);
			assert_int_equal(keel_get(f->db, key, strlen(key), &v), KEEL_OK);
			assert_int_equal(v.len, lens[i]);
			assert_int_equal(((const char *)v.data)[0], 'a' + (int)i);
			keel_view_release(&v);
		}
		assert_int_equal(keel_get(f->db, "k9", 2, &v), KEEL_OK);
		assert_int_equal(v.len, 100);
		keel_view_release(&v);
		assert_int_equal(value_records(f->db), 1);
		if (round == 0)
			reopen_with(f, &ck);
		else if (round == 1)
			assert_int_equal(keel_compact(f->db), KEEL_OK);
	}
}

static void revisions_and_conflicts(void **state)
{
	fixture *f = *state;
	uint64_t r1, r2;
	assert_int_equal(keel_put(f->db, "k", 1, "1", 1, KEEL_REV_ABSENT, &r1), KEEL_OK);
	assert_int_equal(keel_put(f->db, "k", 1, "2", 1, KEEL_REV_ABSENT, NULL), KEEL_ECONFLICT);
	assert_int_equal(keel_put(f->db, "k", 1, "2", 1, r1 + 100, NULL), KEEL_ECONFLICT);
	assert_int_equal(keel_put(f->db, "k", 1, "2", 1, r1, &r2), KEEL_OK);
	assert_true(r2 > r1);
	assert_int_equal(keel_put(f->db, "k", 1, "3", 1, r1, NULL), KEEL_ECONFLICT);
	assert_int_equal(keel_del(f->db, "k", 1, r1, NULL), KEEL_ECONFLICT);
	assert_int_equal(keel_del(f->db, "k", 1, KEEL_REV_ABSENT, NULL), KEEL_EINVAL);
	check_value(f->db, "k", "2");
	keel_view v;
	assert_int_equal(keel_get(f->db, "k", 1, &v), KEEL_OK);
	assert_int_equal(v.rev, r2);
	keel_view_release(&v);
	assert_int_equal(keel_del(f->db, "k", 1, r2, NULL), KEEL_OK);
	check_value(f->db, "k", NULL);

	/* a batch that lost a race is retried against the revision found now */
	keel_batch *b;
	size_t failed = 99;
	uint64_t r3, r4;
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	assert_int_equal(keel_batch_put(b, "a", 1, "x", 1, KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_batch_put(b, "k", 1, "4", 1, KEEL_REV_ABSENT), KEEL_OK);
	assert_int_equal(keel_put(f->db, "k", 1, "other", 5, KEEL_REV_ANY, &r3), KEEL_OK);
	assert_int_equal(keel_commit(f->db, b, NULL, &failed), KEEL_ECONFLICT);
	assert_int_equal(failed, 1);
	assert_int_equal(keel_batch_set_expect(b, 1, r3), KEEL_OK);
	assert_int_equal(keel_commit(f->db, b, &r4, NULL), KEEL_OK);
	assert_true(r4 > r3);
	check_value(f->db, "k", "4");
	check_value(f->db, "a", "x");
	assert_int_equal(keel_batch_set_expect(b, 2, KEEL_REV_ANY), KEEL_EINVAL);
	assert_int_equal(keel_batch_set_expect(NULL, 0, KEEL_REV_ANY), KEEL_EINVAL);
	assert_int_equal(keel_batch_del(b, "a", 1, KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_batch_set_expect(b, 2, KEEL_REV_ABSENT), KEEL_EINVAL);
	keel_batch_free(b);
}

static void batches_are_all_or_nothing_across_a_reopen(void **state)
{
	fixture *f = *state;
	keel_batch *b;
	uint64_t txid;
	size_t failed = 99;
	assert_int_equal(keel_put(f->db, "exists", 6, "e", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	assert_int_equal(keel_batch_put(b, "x", 1, "1", 1, KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_batch_put(b, "y", 1, "2", 1, KEEL_REV_ABSENT), KEEL_OK);
	assert_int_equal(keel_batch_del(b, "exists", 6, KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_batch_put(b, "exists", 6, "again", 5, KEEL_REV_ABSENT), KEEL_OK);
	assert_int_equal(keel_batch_put(b, "x", 1, "3", 1, KEEL_REV_ABSENT), KEEL_OK); /* x was put above */
	assert_int_equal(keel_commit(f->db, b, &txid, &failed), KEEL_ECONFLICT);
	assert_int_equal(failed, 4);
	reopen(f);
	check_value(f->db, "x", NULL);
	check_value(f->db, "y", NULL);
	check_value(f->db, "exists", "e");
	/* The same batch without its last change commits whole. */
	keel_batch_clear(b);
	assert_int_equal(keel_batch_put(b, "x", 1, "1", 1, KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_batch_put(b, "y", 1, "2", 1, KEEL_REV_ABSENT), KEEL_OK);
	assert_int_equal(keel_batch_del(b, "exists", 6, KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_batch_put(b, "exists", 6, "again", 5, KEEL_REV_ABSENT), KEEL_OK);
	assert_int_equal(keel_commit(f->db, b, &txid, NULL), KEEL_OK);
	assert_true(txid > 0);
	reopen(f);
	check_value(f->db, "x", "1");
	check_value(f->db, "y", "2");
	check_value(f->db, "exists", "again");
	keel_batch_clear(b);
	assert_int_equal(keel_commit(f->db, b, &txid, NULL), KEEL_OK); /* empty */
	keel_batch_free(b);
}

static void key_of(char *buf, size_t n, unsigned i)
{
	snprintf(buf, n, "k%09u", i);
}

static void million_keys_scan_in_order_and_by_prefix(void **state)
{
	fixture *f = *state;
	const unsigned total = 1000000, per_batch = 20000;
	keel_batch *b;
	char key[32];
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	/* Insert in a scrambled order so splits happen everywhere. */
	for (unsigned start = 0; start < total; start += per_batch) {
		keel_batch_clear(b);
		for (unsigned i = start; i < start + per_batch; i++) {
			unsigned k = (unsigned)(((uint64_t)i * 7919) % total);
			key_of(key, sizeof(key), k);
			assert_int_equal(keel_batch_put(b, key, 10, key, 4, KEEL_REV_ANY), KEEL_OK);
		}
		assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
	}
	keel_batch_free(b);
	reopen(f);
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t kl;
	keel_view v;
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	unsigned n = 0;
	while (keel_iter_next(it, &k, &kl, &v) == KEEL_OK) {
		key_of(key, sizeof(key), n);
		assert_int_equal(kl, 10);
		assert_memory_equal(k, key, 10);
		assert_memory_equal(v.data, key, 4);
		n++;
	}
	assert_int_equal(n, total);
	keel_iter_close(it);
	/* Prefix "k00012" holds k000120000 .. k000129999. */
	assert_int_equal(keel_iter_open(s, "k00012", 6, NULL, 0, &it), KEEL_OK);
	n = 0;
	while (keel_iter_next(it, &k, &kl, NULL) == KEEL_OK) {
		key_of(key, sizeof(key), 120000 + n);
		assert_memory_equal(k, key, 10);
		n++;
	}
	assert_int_equal(n, 10000);
	keel_iter_close(it);
	/* Prefix plus a start key inside it. */
	assert_int_equal(keel_iter_open(s, "k00012", 6, "k000125000", 10, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), KEEL_OK);
	assert_memory_equal(k, "k000125000", 10);
	keel_iter_close(it);
	/* A prefix that matches nothing. */
	assert_int_equal(keel_iter_open(s, "z", 1, NULL, 0, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, &k, &kl, NULL), KEEL_ENOTFOUND);
	keel_iter_close(it);
	keel_snapshot_close(s);
	keel_check_result cr;
	assert_int_equal(keel_check(f->db, NULL, NULL, &cr), KEEL_OK);
	assert_int_equal(cr.keys, total);
}


/* ---- scans: where a cursor starts, steps to the next leaf and ends ---------
 * Key I of these sets: in "plain" order the keys of a leaf differ in the
 * four bytes its slots keep past the leaf's prefix (their heads), so the
 * cursor steps on heads alone; in "tied" order runs of ten keys share
 * those bytes ("ab" + "same" + I: a leaf spanning two runs has the prefix
 * "a"), so it must compare whole keys inside a leaf as well. */
static int scan_key(char *buf, unsigned i, bool tied)
{
	if (tied)
		return snprintf(buf, 32, "%c%csame%06u", 'a' + i / 260 % 26,
		                'a' + i / 10 % 26, i);
	return snprintf(buf, 32, "k%09u", i);
}

/* The value of key I written with TAG: "v" + I + TAG, and for every fifth
 * key TAG again up to 100 bytes, past what a leaf holds inline.  Its
 * length. */
static int scan_val(char *buf, unsigned i, char tag)
{
	int n = snprintf(buf, 128, "v%u%c", i, tag);
	if (i % 5)
		return n;
	memset(buf + n, tag, (size_t)(100 - n));
	return 100;
}

/* Puts keys [FROM, TO) of the set, with scan_val's values, in commits of
 * PER keys. */
static void scan_fill(keel_db *db, unsigned from, unsigned to, bool tied,
                      char tag, unsigned per)
{
	keel_batch *b;
	char key[32], val[128];
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	for (unsigned i = from; i < to; i++) {
		int kl = scan_key(key, i, tied);
		int vl = scan_val(val, i, tag);
		assert_int_equal(keel_batch_put(b, key, (size_t)kl, val, (size_t)vl,
		                                KEEL_REV_ANY), KEEL_OK);
		if (keel_batch_count(b) == per || i + 1 == to) {
			assert_int_equal(keel_commit(db, b, NULL, NULL), KEEL_OK);
			keel_batch_clear(b);
		}
	}
	keel_batch_free(b);
}

/* Reads up to MAX entries of IT (opened on S) and checks they are keys
 * FIRST, FIRST+1, ... of the set (every STEP-th, STEP 1 or 2) with TAG's
 * values, each with the revision a point read of S gives.  Returns the
 * entries read; *RC gets the iterator's last answer. */
static unsigned scan_expect(keel_snapshot *s, keel_iter *it, unsigned first,
                            unsigned step, unsigned max, bool tied, char tag,
                            int *rc)
{
	char key[32], val[128];
	const void *k;
	size_t kl;
	keel_view v, got;
	unsigned n = 0;

	while (n < max && (*rc = keel_iter_next(it, &k, &kl, &v)) == KEEL_OK) {
		unsigned i = first + n * step;
		int want = scan_key(key, i, tied);
		assert_int_equal(kl, want);
		assert_memory_equal(k, key, kl);
		int vl = scan_val(val, i, tag);
		assert_int_equal(v.len, vl);
		assert_memory_equal(v.data, val, v.len);
		assert_int_equal(keel_snapshot_get(s, key, kl, &got), KEEL_OK);
		assert_int_equal(v.rev, got.rev);
		keel_view_release(&got);
		n++;
	}
	return n;
}

/* Scans of 100 from every kind of start: a key, just after a key (inside
 * its leaf), before the first, past the last; and to the end, which stays
 * the end. */
static void scans_from(keel_snapshot *s, unsigned total, bool tied)
{
	char key[40];
	keel_iter *it;
	int rc;

	for (unsigned i = 0; i < total; i += 7) {
		size_t kl = (size_t)scan_key(key, i, tied);
		unsigned want = total - i < 100 ? total - i : 100;
		assert_int_equal(keel_iter_open(s, NULL, 0, key, kl, &it), KEEL_OK);
		assert_int_equal(scan_expect(s, it, i, 1, 100, tied, 'a', &rc), want);
		keel_iter_close(it);
		/* KEY(i) + "\0" lies between KEY(i) and KEY(i + 1) */
		key[kl] = '\0';
		assert_int_equal(keel_iter_open(s, NULL, 0, key, kl + 1, &it), KEEL_OK);
		want = total - i - 1 < 100 ? total - i - 1 : 100;
		assert_int_equal(scan_expect(s, it, i + 1, 1, 100, tied, 'a', &rc), want);
		keel_iter_close(it);
	}
	assert_int_equal(keel_iter_open(s, NULL, 0, "a", 1, &it), KEEL_OK);
	assert_int_equal(scan_expect(s, it, 0, 1, total + 1, tied, 'a', &rc), total);
	assert_int_equal(rc, KEEL_ENOTFOUND);
	assert_int_equal(keel_iter_next(it, NULL, NULL, NULL), KEEL_ENOTFOUND);
	keel_iter_close(it);
	assert_int_equal(keel_iter_open(s, NULL, 0, "z", 1, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, NULL, NULL, NULL), KEEL_ENOTFOUND);
	keel_iter_close(it);
	/* an empty range: a prefix between two keys */
	size_t kl = (size_t)scan_key(key, total / 2, tied);
	key[kl] = '\0';
	assert_int_equal(keel_iter_open(s, key, kl + 1, NULL, 0, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, NULL, NULL, NULL), KEEL_ENOTFOUND);
	keel_iter_close(it);
}

static void scans_start_anywhere_and_end_cleanly(void **state)
{
	fixture *f = *state;
	keel_options o = {.checkpoint_bytes = 1}; /* all in the tree */
	keel_snapshot *s;
	keel_iter *it;
	const unsigned total = 3000;

	reopen_with(f, &o);
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, NULL, NULL, NULL), KEEL_ENOTFOUND);
	assert_int_equal(keel_iter_next(it, NULL, NULL, NULL), KEEL_ENOTFOUND);
	keel_iter_close(it);
	assert_int_equal(keel_iter_open(s, NULL, 0, "k", 1, &it), KEEL_OK);
	assert_int_equal(keel_iter_next(it, NULL, NULL, NULL), KEEL_ENOTFOUND);
	keel_iter_close(it);
	keel_snapshot_close(s);
	for (int tied = 0; tied < 2; tied++) {
		if (tied) /* the second set in a compacted file */
			assert_int_equal(keel_compact(f->db), KEEL_OK);
		scan_fill(f->db, 0, total, tied, 'a', 500);
		assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
		scans_from(s, total, tied);
		keel_snapshot_close(s);
		/* the same keys deleted: the next set starts from nothing */
		keel_batch *b;
		char key[32];
		assert_int_equal(keel_batch_new(&b), KEEL_OK);
		for (unsigned i = 0; i < total; i++)
			assert_int_equal(keel_batch_del(b, key, (size_t)scan_key(key, i, tied),
			                                KEEL_REV_ANY), KEEL_OK);
		assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
		keel_batch_free(b);
	}
}

/* An iterator reads the state it was opened on, while checkpoints replace
 * every leaf and a compaction moves the store to a new file. */
static void a_scan_keeps_its_state_across_checkpoints_and_a_compaction(void **state)
{
	fixture *f = *state;
	keel_options o = {.checkpoint_bytes = 1};
	keel_snapshot *s;
	keel_iter *it;
	keel_batch *b;
	char key[32];
	const unsigned total = 2000;
	int rc;

	reopen_with(f, &o);
	scan_fill(f->db, 0, total, false, 'a', 400);
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	assert_int_equal(scan_expect(s, it, 0, 1, 1000, false, 'a', &rc), 1000);
	/* every other key deleted, the rest overwritten, then compacted */
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	for (unsigned i = 0; i < total; i += 2)
		assert_int_equal(keel_batch_del(b, key, (size_t)scan_key(key, i, false),
		                                KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
	keel_batch_free(b);
	scan_fill(f->db, 0, total / 2, false, 'b', 400);
	assert_int_equal(keel_compact(f->db), KEEL_OK);
	scan_fill(f->db, 0, total / 2, false, 'c', 400);
	assert_int_equal(scan_expect(s, it, 1000, 1, total, false, 'a', &rc), total - 1000);
	assert_int_equal(rc, KEEL_ENOTFOUND);
	keel_iter_close(it);
	/* the state now: keys below total/2 'c', then the odd keys 'a' */
	assert_int_equal(keel_snapshot_refresh(&s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	assert_int_equal(scan_expect(s, it, 0, 1, total / 2, false, 'c', &rc), total / 2);
	assert_int_equal(scan_expect(s, it, total / 2 + 1, 2, total, false, 'a', &rc),
	                 total / 4);
	assert_int_equal(rc, KEEL_ENOTFOUND);
	keel_iter_close(it);
	keel_snapshot_close(s);
}

/* Readers scanning their own snapshots while a writer checkpoints and
 * compacts: each scan sees all the keys, in order, every value of one
 * generation of writes.  (A reader counts what went wrong: cmocka's
 * assertions belong to the main thread.) */
typedef struct scan_reader {
	keel_db *db;
	unsigned total, scans;
	unsigned bad;     /* scans that went wrong */
} scan_reader;

/* One scan of S: 0 when it held keys 0 .. TOTAL-1 of one generation. */
static int scan_whole(keel_snapshot *s, unsigned total)
{
	keel_iter *it;
	const void *k;
	size_t kl;
	keel_view v;
	char key[32], tag = 0;
	unsigned i = 0;
	int rc = KEEL_OK, bad = 0;

	if (keel_iter_open(s, NULL, 0, NULL, 0, &it) != KEEL_OK)
		return 1;
	while (!bad && (rc = keel_iter_next(it, &k, &kl, &v)) == KEEL_OK) {
		char last = ((const char *)v.data)[v.len - 1];
		if (i == 0)
			tag = last;
		bad = kl != (size_t)scan_key(key, i, false) ||
		      memcmp(k, key, kl) != 0 || last != tag;
		i++;
	}
	keel_iter_close(it);
	return bad || rc != KEEL_ENOTFOUND || i != total;
}

static void *scan_reader_main(void *arg)
{
	scan_reader *r = arg;
	keel_snapshot *s;

	if (keel_snapshot_open(r->db, &s) != KEEL_OK) {
		r->bad = r->scans;
		return NULL;
	}
	for (unsigned n = 0; n < r->scans; n++)
		if (keel_snapshot_refresh(&s) != KEEL_OK || scan_whole(s, r->total))
			r->bad++;
	keel_snapshot_close(s);
	return NULL;
}

static void concurrent_scans_each_see_one_whole_state(void **state)
{
	fixture *f = *state;
	keel_options o = {.checkpoint_bytes = 1};
	scan_reader r[2];
	pthread_t t[2];

	reopen_with(f, &o);
	scan_fill(f->db, 0, 1500, false, 'a', 1500);
	for (int i = 0; i < 2; i++) {
		r[i] = (scan_reader){.db = f->db, .total = 1500, .scans = 30};
		assert_int_equal(pthread_create(&t[i], NULL, scan_reader_main, &r[i]), 0);
	}
	for (char tag = 'b'; tag <= 'z'; tag++) {
		scan_fill(f->db, 0, 1500, false, tag, 1500);
		if (tag == 'm')
			assert_int_equal(keel_compact(f->db), KEEL_OK);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(r[i].bad, 0);
	}
}

/* With 1 KiB keys a node holds few entries: the tree must stay shallow
 * (a branch always keeps two children) and valid through deletes. */
static void maximal_keys_keep_the_tree_valid(void **state)
{
	fixture *f = *state;
	static uint8_t key[KEEL_KEY_MAX];
	keel_batch *b;
	keel_check_result cr;
	keel_batch_new(&b);
	for (int i = 0; i < 3000; i++) {
		memset(key, 'k', sizeof(key));
		snprintf((char *)key + 1000, 24, "%08d", (i * 7919) % 3000);
		keel_batch_put(b, key, sizeof(key), key + 1000, 8, KEEL_REV_ANY);
		if (i % 500 == 499) {
			assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
			keel_batch_clear(b);
		}
	}
	assert_int_equal(keel_check(f->db, NULL, NULL, &cr), KEEL_OK);
	assert_int_equal(cr.keys, 3000);
	for (int i = 0; i < 3000; i += 2) {
		memset(key, 'k', sizeof(key));
		snprintf((char *)key + 1000, 24, "%08d", i);
		assert_int_equal(keel_del(f->db, key, sizeof(key), KEEL_REV_ANY, NULL), KEEL_OK);
	}
	assert_int_equal(keel_check(f->db, NULL, NULL, &cr), KEEL_OK);
	assert_int_equal(cr.keys, 1500);
	assert_int_equal(keel_compact(f->db), KEEL_OK);
	reopen(f);
	assert_int_equal(keel_check(f->db, NULL, NULL, &cr), KEEL_OK);
	assert_int_equal(cr.keys, 1500);
	keel_batch_free(b);
}

/* Keys from a three-letter alphabet with a zero byte: long shared prefixes,
 * keys that are prefixes of others, and keys whose zero-padded heads tie
 * ("ab", "ab\0", "ab\0\0"), so every branch of the node search runs. */
typedef struct tkey {
	uint8_t b[12];
	size_t len;
} tkey;

static int tkey_cmp(const void *a, const void *b)
{
	const tkey *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->b, y->b, n);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void tkey_random(tkey *k, uint64_t *seed)
{
	static const uint8_t alphabet[3] = {0, 'a', 'b'};
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	k->len = 1 + (*seed >> 33) % sizeof(k->b);
	for (size_t i = 0; i < k->len; i++) {
		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		k->b[i] = alphabet[(*seed >> 40) % 3];
	}
}

static void check_search(keel_db *db, const tkey *keys, size_t n)
{
	uint64_t seed = 99;
	keel_view v;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(keel_get(db, keys[i].b, keys[i].len, &v), KEEL_OK);
		assert_int_equal(v.len, keys[i].len);
		assert_memory_equal(v.data, keys[i].b, v.len); /* value = key */
		keel_view_release(&v);
	}
	for (int i = 0; i < 5000; i++) { /* absent keys */
		tkey k;
		tkey_random(&k, &seed);
		bool present = bsearch(&k, keys, n, sizeof(k), tkey_cmp) != NULL;
		int rc = keel_get(db, k.b, k.len, &v);
		assert_int_equal(rc, present ? KEEL_OK : KEEL_ENOTFOUND);
		if (rc == KEEL_OK)
			keel_view_release(&v);
	}
	/* ordered iteration from every tenth key's prefix and start */
	keel_snapshot *s;
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	for (size_t i = 0; i < n; i += 10) {
		keel_iter *it;
		const void *key;
		size_t klen, j = i;
		assert_int_equal(keel_iter_open(s, keys[i].b, keys[i].len > 2 ? 2 : 1,
		                                keys[i].b, keys[i].len, &it), KEEL_OK);
		while (keel_iter_next(it, &key, &klen, NULL) == KEEL_OK) {
			assert_true(j < n);
			assert_int_equal(klen, keys[j].len);
			assert_memory_equal(key, keys[j].b, klen);
			j++;
		}
		/* it stopped where the prefix ends */
		size_t pl = keys[i].len > 2 ? 2 : 1;
		assert_true(j == n || keys[j].len < pl || memcmp(keys[j].b, keys[i].b, pl));
		keel_iter_close(it);
	}
	keel_snapshot_close(s);
}

static void keys_sharing_prefixes_are_found_exactly_and_in_order(void **state)
{
	fixture *f = *state;
	size_t n = 0, cap = 6000;
	tkey *keys = calloc(cap, sizeof(*keys));
	uint64_t seed = 7;
	keel_batch *b;
	keel_batch_new(&b);
	for (size_t i = 0; i < cap; i++) {
		tkey_random(&keys[i], &seed);
		keel_batch_put(b, keys[i].b, keys[i].len, keys[i].b, keys[i].len, KEEL_REV_ANY);
		if (i % 700 == 699 || i + 1 == cap) {
			assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
			keel_batch_clear(b);
		}
	}
	keel_batch_free(b);
	qsort(keys, cap, sizeof(*keys), tkey_cmp);
	for (size_t i = 0; i < cap; i++) /* drop duplicates */
		if (n == 0 || tkey_cmp(&keys[n - 1], &keys[i]) != 0)
			keys[n++] = keys[i];
	assert_true(n > 2000);
	check_search(f->db, keys, n);
	assert_int_equal(keel_compact(f->db), KEEL_OK); /* the bulk loader's nodes */
	check_search(f->db, keys, n);
	reopen(f);
	check_search(f->db, keys, n);
	keel_check_result cr;
	assert_int_equal(keel_check(f->db, NULL, NULL, &cr), KEEL_OK);
	assert_int_equal(cr.keys, n);
	free(keys);
}

/* A delete of a contiguous range empties whole leaves (and branches) while
 * their siblings stay: the empty children are removed from their parents.
 * Every commit a checkpoint, so the tree itself takes the deletes. */
static void deleting_a_range_removes_the_emptied_children(void **state)
{
	fixture *f = *state;
	keel_options ck = {.checkpoint_bytes = 1};
	char key[32];
	keel_batch *b;
	reopen_with(f, &ck);
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	for (unsigned i = 0; i < 5000; i++) {
		key_of(key, sizeof(key), i);
		keel_batch_put(b, key, 10, "v", 1, KEEL_REV_ANY);
	}
	assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
	keel_batch_clear(b);
	for (unsigned i = 1000; i < 3000; i++) {
		key_of(key, sizeof(key), i);
		keel_batch_del(b, key, 10, KEEL_REV_ANY);
	}
	assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
	keel_batch_free(b);
	for (int pass = 0; pass < 2; pass++) {
		keel_check_result cr;
		assert_int_equal(keel_check(f->db, NULL, NULL, &cr), KEEL_OK);
		assert_int_equal(cr.keys, 3000);
		for (unsigned i = 0; i < 5000; i += 7) {
			keel_view v;
			key_of(key, sizeof(key), i);
			assert_int_equal(keel_get(f->db, key, 10, &v),
			                 i >= 1000 && i < 3000 ? KEEL_ENOTFOUND : KEEL_OK);
			if (i < 1000 || i >= 3000)
				keel_view_release(&v);
		}
		reopen_with(f, &ck);
	}
}

static void deleting_everything_leaves_an_empty_valid_tree(void **state)
{
	fixture *f = *state;
	char key[32];
	keel_batch *b;
	keel_batch_new(&b);
	for (unsigned i = 0; i < 5000; i++) {
		key_of(key, sizeof(key), i);
		keel_batch_put(b, key, 10, "v", 1, KEEL_REV_ANY);
	}
	assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
	for (unsigned round = 0; round < 5; round++) {
		keel_batch_clear(b);
		for (unsigned i = round; i < 5000; i += 5) {
			key_of(key, sizeof(key), i);
			keel_batch_del(b, key, 10, KEEL_REV_ANY);
		}
		assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
		keel_check_result cr;
		assert_int_equal(keel_check(f->db, NULL, NULL, &cr), KEEL_OK);
		assert_int_equal(cr.keys, 5000 - 1000 * (round + 1));
	}
	keel_batch_free(b);
	keel_stats st;
	keel_stat(f->db, &st);
	assert_int_equal(st.keys, 0);
	reopen(f);
	check_value(f->db, "k000000001", NULL);
}

static void a_view_stays_valid_while_100_mib_are_written_behind_it(void **state)
{
	fixture *f = *state;
	keel_view v;
	size_t chunk = 4u << 20;
	uint8_t *big = malloc(chunk);
	memset(big, 0xab, chunk);
	assert_int_equal(keel_put(f->db, "held", 4, "original bytes", 14, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_get(f->db, "held", 4, &v), KEEL_OK);
	const void *where = v.data;
	for (int i = 0; i < 25; i++) {
		char key[32];
		snprintf(key, sizeof(key), "fill%d", i);
		assert_int_equal(keel_put(f->db, key, strlen(key), big, chunk, KEEL_REV_ANY, NULL), KEEL_OK);
		if (i == 10) /* overwrite the held key too */
			assert_int_equal(keel_put(f->db, "held", 4, "new", 3, KEEL_REV_ANY, NULL), KEEL_OK);
	}
	keel_stats st;
	keel_stat(f->db, &st);
	assert_true(st.end_offset > (100u << 20));
	assert_ptr_equal(v.data, where);
	assert_int_equal(v.len, 14);
	assert_memory_equal(v.data, "original bytes", 14);
	keel_view_release(&v);
	keel_view_release(&v); /* twice is harmless */
	check_value(f->db, "held", "new");
	free(big);
}

/* ---- counting through the I/O seam ---------------------------------------- */

/* (One sync per commit, counted per descriptor: tests/test_grow.c.) */

static atomic_ulong n_fdatasync, n_fsync, n_pread_bytes;

static int count_fdatasync(void *ctx, int fd)
{
	atomic_fetch_add(&n_fdatasync, 1);
	return keel_io_posix()->fdatasync(ctx, fd);
}
static int count_fsync(void *ctx, int fd)
{
	atomic_fetch_add(&n_fsync, 1);
	return keel_io_posix()->fsync(ctx, fd);
}
static ssize_t count_pread(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = keel_io_posix()->pread(ctx, fd, buf, len, off);
	if (n > 0)
		atomic_fetch_add(&n_pread_bytes, (unsigned long)n);
	return n;
}

static keel_io counting_io(void)
{
	keel_io io = *keel_io_posix();
	io.fdatasync = count_fdatasync;
	io.fsync = count_fsync;
	io.pread = count_pread;
	return io;
}

/* Open reads the same bounded amount from a 256 MiB store as a 1 MiB one. */
static void recovery_reads_are_bounded_by_the_hint_not_the_file(void **state)
{
	fixture *f = *state;
	keel_io io = counting_io();
	keel_options o = {.io = &io};
	keel_recovery r;
	o.report = &r;
	unsigned long small_read, big_read;
	for (int i = 0; i < 20; i++)
		assert_int_equal(keel_put(f->db, "k", 1, "v", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(f->db), KEEL_OK);
	atomic_store(&n_pread_bytes, 0);
	assert_int_equal(keel_open(f->path, &o, &f->db), KEEL_OK);
	small_read = atomic_load(&n_pread_bytes);
	size_t chunk = 1u << 20;
	uint8_t *big = calloc(1, chunk);
	for (int i = 0; i < 256; i++) {
		char key[32];
		snprintf(key, sizeof(key), "big%d", i);
		assert_int_equal(keel_put(f->db, key, strlen(key), big, chunk, KEEL_REV_ANY, NULL), KEEL_OK);
	}
	for (int i = 0; i < 200; i++) /* small commits after the big ones */
		assert_int_equal(keel_put(f->db, "k", 1, "v", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	free(big);
	keel_stats st;
	keel_stat(f->db, &st);
	assert_true(st.end_offset > (256u << 20));
	assert_int_equal(keel_close(f->db), KEEL_OK);
	atomic_store(&n_pread_bytes, 0);
	assert_int_equal(keel_open(f->path, &o, &f->db), KEEL_OK);
	big_read = atomic_load(&n_pread_bytes);
	assert_int_equal(r.status, KEEL_RECOVERY_OK);
	/* The bound: a hint is at most 64 commits or 4 MiB behind, and reads
	 * go in 1 MiB buffers. */
	const unsigned long bound = 16ul << 20;
	assert_true(small_read <= bound);
	assert_true(big_read <= bound);
	assert_true(r.bytes_read <= bound);
	print_message("recovery read %lu bytes (1 MiB store), %lu bytes (256 MiB store)\n",
	              small_read, big_read);
}

/* ---- group commit --------------------------------------------------------- */

typedef struct thread_arg {
	keel_db *db;
	int id, n;
	int conflicts;
} thread_arg;

static void *writer_thread(void *p)
{
	thread_arg *a = p;
	for (int i = 0; i < a->n; i++) {
		char key[32], val[32];
		snprintf(key, sizeof(key), "t%d-%d", a->id, i);
		snprintf(val, sizeof(val), "v%d", i);
		if (keel_put(a->db, key, strlen(key), val, strlen(val), KEEL_REV_ABSENT, NULL))
			abort();
		/* every thread also races on one shared key, must-be-absent */
		if (keel_put(a->db, "shared", 6, val, strlen(val), KEEL_REV_ABSENT, NULL) ==
		    KEEL_ECONFLICT)
			a->conflicts++;
	}
	return NULL;
}

static void threads_share_syncs_and_conflicts_fail_alone(void **state)
{
	fixture *f = *state;
	keel_io io = counting_io();
	keel_options o = {.io = &io};
	enum { T = 16, N = 60 };
	pthread_t th[T];
	thread_arg args[T];
	reopen_with(f, &o);
	atomic_store(&n_fdatasync, 0);
	atomic_store(&n_fsync, 0);
	for (int i = 0; i < T; i++) {
		args[i] = (thread_arg){.db = f->db, .id = i, .n = N};
		pthread_create(&th[i], NULL, writer_thread, &args[i]);
	}
	int conflicts = 0;
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		conflicts += args[i].conflicts;
	}
	unsigned long syncs = atomic_load(&n_fdatasync) + atomic_load(&n_fsync);
	keel_stats st;
	keel_stat(f->db, &st);
	/* 2*T*N submissions, exactly one "shared" put succeeded. */
	assert_int_equal(conflicts, T * N - 1);
	assert_int_equal(st.commits, T * N + 1);
	assert_true(syncs < st.commits);
	print_message("%d threads: %lu commits in %lu syncs\n", T,
	              (unsigned long)st.commits, syncs);
	reopen(f);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < N; i++) {
			char key[32], val[32];
			snprintf(key, sizeof(key), "t%d-%d", t, i);
			snprintf(val, sizeof(val), "v%d", i);
			check_value(f->db, key, val);
		}
	keel_check_result cr;
	assert_int_equal(keel_check(f->db, NULL, NULL, &cr), KEEL_OK);
	assert_int_equal(cr.keys, T * N + 1);
}

static void async_commits_complete_durably_and_in_order(void **state)
{
	fixture *f = *state;
	async_state s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	keel_batch *b[64];
	for (int i = 0; i < 64; i++) {
		char key[32];
		snprintf(key, sizeof(key), "async%d", i);
		keel_batch_new(&b[i]);
		keel_batch_put(b[i], key, strlen(key), key, strlen(key), KEEL_REV_ABSENT);
		assert_int_equal(keel_commit_async(f->db, b[i], on_commit, &s), KEEL_OK);
	}
	async_wait(&s, 64);
	assert_int_equal(s.ok, 64);
	for (int i = 1; i < 64; i++)
		assert_true(s.txid[i] >= s.txid[i - 1]);
	for (int i = 0; i < 64; i++)
		keel_batch_free(b[i]);
	reopen(f);
	check_value(f->db, "async63", "async63");
	assert_int_equal(keel_commit_async(f->db, NULL, on_commit, &s), KEEL_EINVAL);
}

/* Threads of this process whose scheduling policy (field 41 of
 * /proc/self/task/TID/stat) is SCHED_BATCH (3). */
static int batch_threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], buf[1024];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* the thread ended meanwhile */
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = 0;
		char *p = strrchr(buf, ')'); /* the name may hold spaces */
		assert_non_null(p);
		int field = 2; /* ")" ends field 2 */
		for (p++; *p && field < 41; p++)
			if (*p == ' ')
				field++;
		if (field == 41 && atoi(p) == SCHED_BATCH)
			n++;
	}
	closedir(d);
	return n;
}

static void commit_one_async(keel_db *db)
{
	keel_batch *b;
	async_state *s = commit_async_key(db, "k", &b);
	async_wait(s, 1);
	assert_int_equal(s->ok, 1);
	keel_batch_free(b);
	free(s);
}

/* KEEL_BATCH_THREADS puts the engine's committer threads (started by the
 * first async commit) under SCHED_BATCH, and only them: the caller's thread
 * keeps its policy, and without the flag no thread is moved. */
static void batch_threads_flag_sets_the_engines_threads_only(void **state)
{
	fixture *f = *state;
	keel_options o = {.flags = KEEL_BATCH_THREADS};

	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
	commit_one_async(f->db); /* the fixture's store: no flag */
	assert_int_equal(batch_threads_now(), 0);
	reopen_with(f, &o);
	commit_one_async(f->db);
	assert_true(batch_threads_now() >= 1);
	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	assert_int_equal(batch_threads_now(), 0); /* they went with the handle */
}

/* ---- bad input ------------------------------------------------------------ */

static void assert_file_unchanged(const char *path, const unsigned char *before,
                                  size_t len)
{
	size_t n;
	unsigned char *now = tu_read_file(path, &n);
	assert_non_null(now);
	assert_int_equal(n, len);
	assert_memory_equal(now, before, len);
	free(now);
}

static void bad_paths_and_foreign_files_are_refused_untouched(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_options ro = {.flags = KEEL_RDONLY}, nc = {.flags = KEEL_NOCREATE};
	char *p = tu_path(f->dir, "other");

	assert_int_equal(keel_open(NULL, NULL, &db), KEEL_EINVAL);
	assert_int_equal(keel_open(f->path, NULL, NULL), KEEL_EINVAL);
	assert_int_equal(keel_open("", NULL, &db), KEEL_EINVAL);
	assert_int_equal(keel_open(f->dir, NULL, &db), KEEL_EISDIR);
	assert_int_equal(keel_open(f->dir, &ro, &db), KEEL_EISDIR);
	assert_int_equal(keel_open(p, &nc, &db), KEEL_ENOENT);
	assert_int_equal(keel_open(p, &ro, &db), KEEL_ENOENT);
	assert_int_equal(access(p, F_OK), -1); /* nothing was created */
	keel_options bad = {.flags = 0x80000000u};
	assert_int_equal(keel_open(p, &bad, &db), KEEL_EINVAL);

	/* zero-length file */
	assert_int_equal(tu_write_file(p, "", 0), 0);
	assert_int_equal(keel_open(p, NULL, &db), KEEL_ENOTKEEL);
	assert_file_unchanged(p, (const unsigned char *)"", 0);
	/* a text file, and one that is long enough to look like a store */
	static char text[20000];
	memset(text, 'x', sizeof(text));
	assert_int_equal(tu_write_file(p, text, sizeof(text)), 0);
	assert_int_equal(keel_open(p, NULL, &db), KEEL_ENOTKEEL);
	assert_file_unchanged(p, (const unsigned char *)text, sizeof(text));

	/* a store from a newer format version (version 1, the pre-release layout, is refused the same way: test_format.c) */
	size_t len = 0;
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	unsigned char *img = tu_read_file(f->path, &len);
	assert_non_null(img);
	img[8] = 4; /* a newer version (this build reads 2 and 3), then fix the superblock CRC */
	uint32_t crc = keel_crc32c(0, img, 60);
	memcpy(img + 60, &crc, 4);
	assert_int_equal(tu_write_file(p, img, len), 0);
	assert_int_equal(keel_open(p, NULL, &db), KEEL_EVERSION);
	assert_file_unchanged(p, img, len);
	free(img);

	/* a read-only file opened for writing; read-only open still works */
	img = tu_read_file(f->path, &len);
	assert_int_equal(chmod(f->path, 0444), 0);
	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_EACCES);
	assert_int_equal(keel_open(f->path, &ro, &db), KEEL_OK);
	assert_int_equal(keel_put(db, "k", 1, "v", 1, KEEL_REV_ANY, NULL), KEEL_EREADONLY);
	keel_close(db);
	assert_file_unchanged(f->path, img, len);
	free(img);
	chmod(f->path, 0644);
	assert_int_equal(keel_open(f->path, NULL, &f->db), KEEL_OK);
	free(p);
}

static void a_second_writer_handle_is_refused_while_the_first_holds_the_lock(void **state)
{
	fixture *f = *state;
	keel_db *db2;
	keel_options o = {.lock_timeout_ms = 0};
	assert_int_equal(keel_open(f->path, &o, &db2), KEEL_EBUSY);
	o.lock_timeout_ms = 50;
	assert_int_equal(keel_open(f->path, &o, &db2), KEEL_EBUSY);
	o.lock_timeout_ms = -2; /* -1 is "forever"; below it means nothing */
	assert_int_equal(keel_open(f->path, &o, &db2), KEEL_EINVAL);
	o.lock_timeout_ms = -1; /* forever: the lock is free, so at once */
	reopen_with(f, &o);
}


/* ---- several processes ------------------------------------------------------ */

/* Every wait on a child or a pipe is bounded: a child that dies or hangs
 * fails the test with a message naming what was awaited, never blocks it.
 * The bounds are for hangs, not speed (the machine may be busy). */
#define CHILD_WAIT_MS 60000

/* One byte from FD (whose write ends this process has closed), within
 * CHILD_WAIT_MS; on failure the child PID is killed and reaped. */
static char child_read(int fd, pid_t pid, const char *what)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c = 0;
	int n = poll(&p, 1, CHILD_WAIT_MS);
	ssize_t got = n > 0 ? read(fd, &c, 1) : -1;
	if (got == 1)
		return c;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("waiting for the child process: %s: %s", what,
	         n == 0 ? "no answer in 60 s" :
	         got == 0 ? "it ended without answering" : strerror(errno));
	return 0;
}

/* Reaps PID within CHILD_WAIT_MS (then kills it and fails); its status. */
static int child_reap(pid_t pid, const char *what)
{
	int status = 0;
	for (int ms = 0; ms < CHILD_WAIT_MS; ms += 5) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			fail_msg("waitpid for the child (%s): %s", what,
			         strerror(errno));
		usleep(5000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("the child process did not end in 60 s: %s", what);
	return -1;
}

static void a_reader_process_sees_new_commits_without_reopening(void **state)
{
	fixture *f = *state;
	int go[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(keel_put(f->db, "counter", 7, "0", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	pid_t pid = fork();
	if (pid == 0) {
		keel_db *r;
		keel_options o = {.flags = KEEL_RDONLY};
		char c;
		if (keel_open(f->path, &o, &r))
			_exit(3);
		if (write(go[1], "r", 1) != 1)
			_exit(4);
		/* Wait (bounded) until the writer's last value shows. */
		for (int i = 0; i < 2000; i++) {
			keel_view v;
			if (keel_get(r, "counter", 7, &v) == KEEL_OK) {
				c = v.len ? ((const char *)v.data)[0] : 0;
				keel_view_release(&v);
				if (c == '9')
					_exit(keel_get(r, "after-compact", 13, &v) == KEEL_OK ? 0 : 5);
			}
			usleep(5000);
		}
		_exit(1);
	}
	assert_true(pid > 0);
	close(go[1]); /* a child that dies without writing ends the read */
	child_read(go[0], pid, "the reader process opened the store");
	for (char d = '1'; d <= '8'; d++)
		assert_int_equal(keel_put(f->db, "counter", 7, &d, 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_compact(f->db), KEEL_OK); /* the reader follows */
	assert_int_equal(keel_put(f->db, "after-compact", 13, "y", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_put(f->db, "counter", 7, "9", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	int status = child_reap(pid, "the reader saw the last value");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(go[0]);
}

/* A sync that waits while `sync_held` is set (bounded), and says when it
 * is waiting: the commit's region and head are written, not yet durable. */
static atomic_bool sync_held, sync_waiting;

static int held_fdatasync(void *ctx, int fd)
{
	atomic_store(&sync_waiting, true);
	for (int i = 0; i < 1000 && atomic_load(&sync_held); i++)
		usleep(10000); /* 10 s at most */
	atomic_store(&sync_waiting, false);
	return keel_io_posix()->fdatasync(ctx, fd);
}

static keel_io held_io;
static keel_options held_options = {.io = &held_io, .flags = KEEL_NOCOMPACT};

static void *put_k2(void *arg)
{
	keel_db *db = arg;
	return (void *)(intptr_t)keel_put(db, "k2", 2, "b", 1, KEEL_REV_ANY, NULL);
}

/* Asks the reader process PID whether "k2" shows; 'y' or 'n'. */
static char reader_sees_k2(int ask, int answer, pid_t pid)
{
	assert_int_equal(write(ask, "?", 1), 1);
	return child_read(answer, pid, "the reader's answer: does k2 show?");
}

static void wait_for_sync_waiting(void)
{
	for (int i = 0; i < 1000 && !atomic_load(&sync_waiting); i++)
		usleep(10000);
	assert_true(atomic_load(&sync_waiting));
}

/* A reader process sees a commit only once its sync has returned: the
 * writer's head is in the file (the page cache) while the sync is held, and
 * the reader, which reads that file, must not take it (engine/marker.c). */
static void a_reader_process_sees_only_durable_commits(void **state)
{
	fixture *f = *state;
	keel_io io = *keel_io_posix();
	io.fdatasync = held_fdatasync;
	keel_options o = {.io = &io, .flags = KEEL_NOCOMPACT};
	int ask[2], answer[2];
	reopen_with(f, &o);
	assert_int_equal(keel_put(f->db, "k1", 2, "a", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(pipe(ask), 0);
	assert_int_equal(pipe(answer), 0);
	pid_t pid = fork();
	if (pid == 0) {
		keel_db *r;
		keel_options ro = {.flags = KEEL_RDONLY};
		keel_view v;
		char c;
		close(ask[1]); /* so the read ends if the test's process does */
		close(answer[0]);
		if (keel_open(f->path, &ro, &r) || keel_get(r, "k1", 2, &v))
			_exit(3);
		keel_view_release(&v);
		while (read(ask[0], &c, 1) == 1 && c == '?') {
			int rc = keel_get(r, "k2", 2, &v);
			if (rc == KEEL_OK)
				keel_view_release(&v);
			if (write(answer[1], rc == KEEL_OK ? "y" : "n", 1) != 1)
				_exit(4);
		}
		_exit(keel_close(r) == KEEL_OK ? 0 : 5);
	}
	assert_true(pid > 0);
	close(ask[0]);
	close(answer[1]); /* a child that dies ends the read */
	assert_int_equal(reader_sees_k2(ask[1], answer[0], pid), 'n');
	atomic_store(&sync_held, true);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, put_k2, f->db), 0);
	wait_for_sync_waiting();
	/* written, not durable: the reader reads past the head it knew
	 * (twice: the second look must not differ) */
	assert_int_equal(reader_sees_k2(ask[1], answer[0], pid), 'n');
	assert_int_equal(reader_sees_k2(ask[1], answer[0], pid), 'n');
	atomic_store(&sync_held, false);
	void *rc;
	assert_int_equal(pthread_join(t, &rc), 0);
	assert_int_equal((int)(intptr_t)rc, KEEL_OK);
	assert_int_equal(reader_sees_k2(ask[1], answer[0], pid), 'y'); /* durable */
	assert_int_equal(write(ask[1], "q", 1), 1);
	int status = child_reap(pid, "the reader closed the store");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(ask[1]);
	close(answer[0]);
}

/* A reader that moves to the file a compaction renamed in honours the
 * marker there as it does in the old one: a head the writer appended to the
 * new file but has not synced yet is not shown (marker.c, (3)). */
static void a_reader_moving_to_a_compacted_file_sees_only_durable_commits(void **state)
{
	fixture *f = *state;
	keel_io io = *keel_io_posix();
	io.fdatasync = held_fdatasync;
	keel_options o = {.io = &io, .flags = KEEL_NOCOMPACT};
	keel_options ro = {.flags = KEEL_RDONLY};
	keel_db *r;
	keel_view v;
	reopen_with(f, &o);
	assert_int_equal(keel_put(f->db, "k1", 2, "a", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	assert_int_equal(keel_get(r, "k1", 2, &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_compact(f->db), KEEL_OK);
	atomic_store(&sync_held, true);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, put_k2, f->db), 0);
	wait_for_sync_waiting();
	/* k2 is in the new file, unsynced: the reader moves there, to k1 */
	assert_int_equal(keel_get(r, "k2", 2, &v), KEEL_ENOTFOUND);
	assert_int_equal(keel_get(r, "k1", 2, &v), KEEL_OK);
	keel_view_release(&v);
	atomic_store(&sync_held, false);
	void *rc;
	assert_int_equal(pthread_join(t, &rc), 0);
	assert_int_equal((int)(intptr_t)rc, KEEL_OK);
	assert_int_equal(keel_get(r, "k2", 2, &v), KEEL_OK); /* durable */
	keel_view_release(&v);
	assert_int_equal(keel_close(r), KEEL_OK);
}

static void *open_writer(void *arg)
{
	keel_db *w;
	return (void *)(intptr_t)keel_open(arg, &held_options, &w);
}

/* Forks a writer process whose sync is held (held_fdatasync): inside the
 * commit of "k2" (its open done first), or, when IN_OPEN, inside the first
 * sync of its open.  Returns once it waits there (said over GO; STAY's
 * write end, kept open here, is its lifeline).  Its pid. */
static pid_t writer_held_in_sync(fixture *f, int go[2], int stay[2],
                                 int in_open)
{
	char c;
	pid_t pid = fork();
	if (pid == 0) {
		keel_db *w = NULL;
		pthread_t t;
		if (!in_open && keel_open(f->path, &held_options, &w))
			_exit(3);
		atomic_store(&sync_held, true);
		if (in_open ? pthread_create(&t, NULL, open_writer, f->path)
		            : pthread_create(&t, NULL, put_k2, w))
			_exit(4);
		for (int i = 0; i < 1000 && !atomic_load(&sync_waiting); i++)
			usleep(10000);
		if (!atomic_load(&sync_waiting) || write(go[1], "w", 1) != 1)
			_exit(5);
		close(stay[1]);
		(void)read(stay[0], &c, 1); /* killed in the sync; or the test
		                             * failed and its process ended */
		_exit(6);
	}
	assert_true(pid > 0);
	close(go[1]); /* a child that dies without writing ends the read */
	close(stay[0]);
	c = child_read(go[0], pid, "the writer process is inside a sync");
	(void)c;
	return pid;
}

/* A writer killed inside a commit's sync leaves its head in the file (the
 * page cache) and a marker that stops before it.  Nobody synced that head,
 * so a power cut can still take it: readers -- one open before the kill and
 * one opened after it -- must not show it, with the writer alive or dead.
 * The next writer's open syncs it and replaces the marker; from then on the
 * readers show it, and the writer removes its marker at close. */
static void a_killed_writers_marker_still_binds_readers(void **state)
{
	fixture *f = *state;
	keel_options ro = {.flags = KEEL_RDONLY};
	keel_db *r;
	int go[2], stay[2];
	char *marker = NULL;
	assert_true(asprintf(&marker, "%s.durable", f->path) > 0);
	assert_int_equal(keel_put(f->db, "k1", 2, "a", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(access(marker, F_OK), 0); /* a writer keeps one */
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	assert_int_equal(access(marker, F_OK), -1); /* and removes it */
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(stay), 0);
	pid_t pid = writer_held_in_sync(f, go, stay, 0);
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	check_value(r, "k1", "a");
	check_value(r, "k2", NULL); /* written, not durable, writer alive */
	kill(pid, SIGKILL);
	child_reap(pid, "the writer process, killed");
	assert_int_equal(access(marker, F_OK), 0); /* left behind */
	check_value(r, "k2", NULL); /* no writer, and still not durable */
	keel_db *r2;
	assert_int_equal(keel_open(f->path, &ro, &r2), KEEL_OK);
	check_value(r2, "k1", "a");
	check_value(r2, "k2", NULL); /* a reader opened after the kill too */
	assert_int_equal(keel_open(f->path, NULL, &f->db), KEEL_OK);
	check_value(f->db, "k2", "b"); /* synced by the writer's open */
	check_value(r, "k2", "b");
	check_value(r2, "k2", "b");
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	assert_int_equal(access(marker, F_OK), -1); /* a clean close */
	check_value(r2, "k2", "b");
	assert_int_equal(keel_close(r2), KEEL_OK);
	assert_int_equal(keel_close(r), KEEL_OK);
	close(go[0]);
	close(stay[1]);
	free(marker);
}

static void a_killed_writer_process_releases_the_lock(void **state)
{
	fixture *f = *state;
	int go[2];
	keel_db *db;
	keel_options o = {.lock_timeout_ms = 0};
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();
	if (pid == 0) {
		if (keel_open(f->path, NULL, &db) || write(go[1], "w", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	assert_true(pid > 0);
	close(go[1]); /* a child that dies without writing ends the read */
	child_read(go[0], pid, "the writer process opened the store");
	assert_int_equal(keel_open(f->path, &o, &db), KEEL_EBUSY);
	kill(pid, SIGKILL);
	child_reap(pid, "the writer process, killed");
	o.lock_timeout_ms = 2000;
	assert_int_equal(keel_open(f->path, &o, &f->db), KEEL_OK);
	close(go[0]);
}

/* An open that may wait takes the lock once its holder lets go, not only
 * when it is free at the first try.  The holder keeps it a moment after
 * it is told to let go, so the waiter almost always finds it held first
 * (on a very busy machine it may not, and the test then proves less, never
 * fails wrongly); the wait bound is for hangs, not speed. */
static void a_waiting_open_gets_the_lock_when_its_holder_lets_go(void **state)
{
	fixture *f = *state;
	int go[2], release[2];
	keel_db *db;
	keel_options o = {.lock_timeout_ms = 0};
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(release), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(release[1]);
		if (keel_open(f->path, NULL, &db) || write(go[1], "w", 1) != 1)
			_exit(3);
		if (read(release[0], &c, 1) != 1)
			_exit(4);
		usleep(300 * 1000);
		_exit(keel_close(db) == KEEL_OK ? 0 : 5);
	}
	assert_true(pid > 0);
	close(go[1]);
	close(release[0]);
	child_read(go[0], pid, "the writer process opened the store");
	assert_int_equal(keel_open(f->path, &o, &db), KEEL_EBUSY);
	assert_int_equal(write(release[1], "r", 1), 1);
	o.lock_timeout_ms = CHILD_WAIT_MS;
	assert_int_equal(keel_open(f->path, &o, &f->db), KEEL_OK);
	assert_int_equal(child_reap(pid, "the writer process, which let go"), 0);
	close(go[0]);
	close(release[1]);
}

/* A read-only handle follows the writer past the end of the mapping it
 * opened with: the file grows (several times over) and every value the
 * writer committed since is read through the handle's new mapping. */
static void a_reader_follows_the_file_as_it_grows(void **state)
{
	fixture *f = *state;
	keel_options ro = {.flags = KEEL_RDONLY};
	keel_stats at_open, now;
	keel_db *r;
	static char big[512 * 1024];
	memset(big, 'b', sizeof(big));
	assert_int_equal(keel_put(f->db, "first", 5, "x", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	assert_int_equal(keel_stat(f->db, &at_open), KEEL_OK);
	int n = 0;
	do {
		char k[16];
		snprintf(k, sizeof(k), "big%03d", n++);
		assert_int_equal(keel_put(f->db, k, strlen(k), big, sizeof(big),
		                          KEEL_REV_ANY, NULL), KEEL_OK);
		assert_int_equal(keel_stat(f->db, &now), KEEL_OK);
	} while (now.end_offset <= at_open.file_size + sizeof(big) && n < 1000);
	assert_true(now.end_offset > at_open.file_size); /* past the old end */
	for (int i = 0; i < n; i++) {
		char k[16];
		keel_view v;
		snprintf(k, sizeof(k), "big%03d", i);
		assert_int_equal(keel_get(r, k, strlen(k), &v), KEEL_OK);
		assert_int_equal(v.len, sizeof(big));
		assert_memory_equal(v.data, big, 64);
		keel_view_release(&v);
	}
	assert_int_equal(keel_close(r), KEEL_OK);
}

/* The next writer's open makes what recovery found durable before it
 * publishes its marker (db.c, writer_start): the head a killed writer left
 * unsynced may still be taken by a power cut, so while that open is inside
 * its sync a reader process must not show it.  (With the marker published
 * first, readers act on a head a cut then takes away.) */
static void a_recovering_writers_marker_waits_for_its_sync(void **state)
{
	fixture *f = *state;
	keel_options ro = {.flags = KEEL_RDONLY};
	keel_db *r;
	int go[2], stay[2], go2[2], stay2[2];
	assert_int_equal(keel_put(f->db, "k1", 2, "a", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	/* a writer killed inside k2's sync: k2 written, never synced */
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(stay), 0);
	pid_t pid = writer_held_in_sync(f, go, stay, 0);
	kill(pid, SIGKILL);
	child_reap(pid, "the first writer process, killed");
	/* the next writer, held inside its open's first sync */
	assert_int_equal(pipe(go2), 0);
	assert_int_equal(pipe(stay2), 0);
	pid = writer_held_in_sync(f, go2, stay2, 1);
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	check_value(r, "k1", "a");
	check_value(r, "k2", NULL); /* recovered, not yet synced */
	kill(pid, SIGKILL);
	child_reap(pid, "the recovering writer process, killed");
	check_value(r, "k2", NULL);
	/* a writer whose open completes syncs it: now it shows */
	assert_int_equal(keel_open(f->path, NULL, &f->db), KEEL_OK);
	check_value(f->db, "k2", "b");
	check_value(r, "k2", "b");
	assert_int_equal(keel_close(r), KEEL_OK);
	close(go[0]);
	close(stay[1]);
	close(go2[0]);
	close(stay2[1]);
}

/* The durable marker as docs/format.md lays it out: magic, an even
 * sequence, the data file, and the newest synced head's txid and offset. */
static void the_durable_marker_names_the_newest_synced_head(void **state)
{
	fixture *f = *state;
	uint8_t page[4096];
	uint64_t seq, txid, head_off;
	keel_stats st;
	char *marker = NULL;
	assert_int_equal(keel_put(f->db, "k", 1, "v", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_put(f->db, "k", 1, "w", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_stat(f->db, &st), KEEL_OK);
	assert_true(asprintf(&marker, "%s.durable", f->path) > 0);
	FILE *fp = fopen(marker, "rb");
	assert_non_null(fp);
	assert_int_equal(fread(page, 1, sizeof(page), fp), sizeof(page));
	fclose(fp);
	assert_memory_equal(page, "KEELDURA", 8);
	memcpy(&seq, page + 8, 8);
	memcpy(&txid, page + 24, 8);
	memcpy(&head_off, page + 32, 8);
	assert_int_equal(seq % 2, 0);
	assert_int_equal(txid, st.txid);
	assert_int_equal(head_off, st.end_offset - KEEL_HEAD_SIZE);
	for (size_t i = 40; i < sizeof(page); i++)
		assert_int_equal(page[i], 0);
	free(marker);
}

/* The out-parameters of a write that fails say "nothing committed", and an
 * iterator may start at a key of the longest length. */
static void failed_writes_report_no_txid_and_long_start_keys_work(void **state)
{
	fixture *f = *state;
	uint8_t key[KEEL_KEY_MAX];
	uint64_t txid = 77;
	keel_batch *b;
	keel_snapshot *s;
	keel_iter *it;
	memset(key, 'k', sizeof(key));
	assert_int_equal(keel_del(f->db, key, 0, KEEL_REV_ANY, &txid), KEEL_EKEY);
	assert_int_equal(txid, 0);
	txid = 77;
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	assert_int_equal(keel_commit(NULL, b, &txid, NULL), KEEL_EINVAL);
	assert_int_equal(txid, 0);
	keel_batch_free(b);
	assert_int_equal(keel_put(f->db, key, sizeof(key), "v", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, NULL, 0, key, sizeof(key), &it), KEEL_OK);
	keel_iter_close(it);
	assert_int_equal(keel_iter_open(s, NULL, 0, key, sizeof(key) + 1, &it), KEEL_EINVAL);
	keel_snapshot_close(s);
}

/* A marker file cut short (damaged or forged: the writer makes it whole
 * and renames it in) is not a marker: a reader trusts no head of the data
 * file (marker.c, (4)), and never reads the mapping past the file's end --
 * an empty file above all, where such a read is SIGBUS. */
static void a_reader_trusts_nothing_past_a_marker_cut_short(void **state)
{
	fixture *f = *state;
	keel_options ro = {.flags = KEEL_RDONLY};
	keel_db *r;
	keel_view v;
	char *marker = NULL;
	assert_int_equal(keel_put(f->db, "k", 1, "v", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	assert_true(asprintf(&marker, "%s.durable", f->path) > 0);
	for (int len = 0; len <= 100; len += 100) {
		FILE *fp = fopen(marker, "wb");
		assert_non_null(fp);
		for (int i = 0; i < len; i++)
			fputc(0, fp);
		fclose(fp);
		assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
		assert_int_equal(keel_get(r, "k", 1, &v), KEEL_ENOTFOUND);
		assert_int_equal(keel_close(r), KEEL_OK);
	}
	unlink(marker); /* the marker gone: the last commit is shown */
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	assert_int_equal(keel_get(r, "k", 1, &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_close(r), KEEL_OK);
	free(marker);
}

/* Does this process map a file whose path contains NAME? */
static bool mapped_here(const char *name)
{
	char line[4096];
	bool found = false;
	FILE *fp = fopen("/proc/self/maps", "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp))
		found |= strstr(line, name) != NULL;
	fclose(fp);
	return found;
}

/* The writer's marker is a mapping of its own; a closed handle leaves
 * none behind (a process that opens and closes stores for days must not
 * collect them). */
static void a_closed_writer_leaves_no_marker_mapped(void **state)
{
	fixture *f = *state;
	char *marker = NULL;
	assert_true(asprintf(&marker, "%s.durable", f->path) > 0);
	assert_int_equal(keel_put(f->db, "k", 1, "v", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_true(mapped_here(marker));
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	assert_false(mapped_here(marker));
	free(marker);
}

/* A writer that cannot make its marker (here: a file size limit below the
 * marker's 4 KiB, so its write comes up short) keeps none and opens all
 * the same (marker.c, (2)); it never uses a marker it did not make.  In a
 * child process, which alone has the limit. */
static void a_writer_that_cannot_make_its_marker_keeps_none(void **state)
{
	fixture *f = *state;
	char *marker = NULL;
	assert_true(asprintf(&marker, "%s.durable", f->path) > 0);
	assert_int_equal(keel_put(f->db, "k", 1, "v", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {.rlim_cur = 1024, .rlim_max = 1024};
		keel_options o = {.flags = KEEL_NOCOMPACT};
		keel_db *db;
		keel_view v;
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			_exit(10);
		if (keel_open(f->path, &o, &db) != KEEL_OK)
			_exit(11);
		if (access(marker, F_OK) == 0)
			_exit(12);
		if (keel_get(db, "k", 1, &v) != KEEL_OK)
			_exit(13);
		keel_view_release(&v);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	free(marker);
}

static void strerror_names_every_code(void **state)
{
	(void)state;
	for (int e = 0; e >= -16; e--) {
		assert_non_null(keel_strerror(e));
		assert_string_not_equal(keel_strerror(e), "unknown error");
	}
	assert_string_equal(keel_strerror(-999), "unknown error");
}

/* ---- an allocation that fails in the middle of a checkpoint ---------------
 * realloc is replaced in this program (not under a sanitizer, which has its
 * own): armed in one thread, it fails the Nth call there.  A checkpoint
 * that cannot grow its region buffer must fail as a whole: a parent node
 * written over a child that was not would name the child's old place. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define REALLOC_FAILS 1
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_malloc(size_t n);
static __thread long realloc_countdown; /* 0: off; N: the Nth call fails */
static __thread long realloc_calls;     /* calls seen while armed        */

/* This program's code, keel's included (it is linked in): only its own
 * calls fail, never those of libc or libfiu (which may hold a lock of
 * theirs while they allocate). */
extern char __executable_start[], etext[];

/* Whether this call, made from RA, is the one to fail. */
static int alloc_fails(const void *ra)
{
	if (realloc_countdown <= 0 || (const char *)ra < __executable_start ||
	    (const char *)ra >= etext)
		return 0;
	realloc_calls++;
	if (--realloc_countdown)
		return 0;
	errno = ENOMEM;
	return 1;
}

void *realloc(void *p, size_t n)
{
	return alloc_fails(__builtin_return_address(0)) ? NULL
	                                                : __libc_realloc(p, n);
}

/* malloc too, in the second test: the same count */
static __thread int malloc_armed;

void *malloc(size_t n)
{
	return malloc_armed && alloc_fails(__builtin_return_address(0))
	       ? NULL : __libc_malloc(n);
}
#endif

/* A store of 2,000 keys in a tree of several levels; then one batch that
 * rewrites every key with a longer value, committed with a checkpoint, its
 * Nth realloc failing.  Whatever N, the commit either fails and the store
 * keeps the old values, or succeeds and holds every new one, and keel check
 * finds nothing wrong. */
static void a_failed_allocation_in_a_checkpoint_loses_nothing(void **state)
{
	(void)state;
#ifndef REALLOC_FAILS
	skip(); /* the sanitizers own realloc */
#else
	keel_options o = {.checkpoint_bytes = 1}; /* every commit builds the tree */
	char k[16], v[64];
	long n, total = 0, failed = 0;

	for (n = 1;; n++) {
		char *dir = tu_mkdtemp(), *path = tu_path(dir, "db");
		keel_db *db;
		keel_batch *b;
		assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
		assert_int_equal(keel_batch_new(&b), KEEL_OK);
		for (int i = 0; i < 2000; i++) {
			snprintf(k, sizeof(k), "key%05d", i);
			assert_int_equal(keel_batch_put(b, k, strlen(k), "old", 3,
			                                KEEL_REV_ANY), KEEL_OK);
		}
		assert_int_equal(keel_commit(db, b, NULL, NULL), KEEL_OK);
		keel_batch_free(b);
		assert_int_equal(keel_batch_new(&b), KEEL_OK);
		for (int i = 0; i < 2000; i++) {
			snprintf(k, sizeof(k), "key%05d", i);
			snprintf(v, sizeof(v), "new value of key %05d, longer", i);
			assert_int_equal(keel_batch_put(b, k, strlen(k), v, strlen(v),
			                                KEEL_REV_ANY), KEEL_OK);
		}
		realloc_calls = 0;
		realloc_countdown = n;
		int rc = keel_commit(db, b, NULL, NULL);
		long calls = realloc_calls;
		int fired = realloc_countdown == 0;
		realloc_countdown = 0;
		keel_batch_free(b);
		if (!fired)
			total = calls; /* fewer than N calls: the sweep is done */
		else if (rc != KEEL_OK)
			failed++;
		assert_true(rc == KEEL_OK || rc == KEEL_ENOMEM);
		keel_close(db); /* a failed handle's close may report it */
		assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
		keel_check_result cr;
		assert_int_equal(keel_check(db, NULL, NULL, &cr), KEEL_OK);
		assert_int_equal(cr.problems, 0);
		for (int i = 0; i < 2000; i++) {
			snprintf(k, sizeof(k), "key%05d", i);
			snprintf(v, sizeof(v), "new value of key %05d, longer", i);
			check_value(db, k, rc == KEEL_OK ? v : "old");
		}
		assert_int_equal(keel_close(db), KEEL_OK);
		tu_rmdir(dir);
		free(path);
		if (!fired)
			break;
	}
	/* the sweep reached the checkpoint's buffers: some failures were seen
	 * and refused */
	assert_true(total >= 3);
	assert_true(failed >= 1);
#endif
}

/* Commits left as deltas (no checkpoint, the writer killed), then an open
 * that replays them
 * into the pending index with its Nth allocation failing: the open fails
 * with KEEL_ENOMEM and nothing changes, or it succeeds and every commit is
 * there.  An index missing a delta would serve the tree's older values. */
static void a_failed_allocation_while_opening_loses_nothing(void **state)
{
	(void)state;
#ifndef REALLOC_FAILS
	skip(); /* the sanitizers own malloc */
#else
	char *dir = tu_mkdtemp(), *path = tu_path(dir, "db");
	keel_options o = {.checkpoint_bytes = 1u << 30}; /* deltas only */
	char k[16], v[32];
	keel_db *db;
	long n, total = 0, failed = 0;

	/* a writer that dies without closing: a clean close would fold
	 * the deltas into a checkpoint */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (keel_open(path, &o, &db) != KEEL_OK)
			_exit(1);
		for (int i = 0; i < 200; i++) { /* a commit each: 200 deltas */
			snprintf(k, sizeof(k), "key%03d", i % 50);
			snprintf(v, sizeof(v), "value %d", i);
			if (keel_put(db, k, strlen(k), v, strlen(v), KEEL_REV_ANY,
			             NULL) != KEEL_OK)
				_exit(1);
		}
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (n = 1;; n++) {
		realloc_calls = 0;
		realloc_countdown = n;
		malloc_armed = 1;
		int rc = keel_open(path, &o, &db);
		malloc_armed = 0;
		int fired = realloc_countdown == 0;
		long calls = realloc_calls;
		realloc_countdown = 0;
		assert_true(rc == KEEL_OK || rc == KEEL_ENOMEM);
		if (rc == KEEL_OK) {
			for (int i = 150; i < 200; i++) { /* each key's last value */
				snprintf(k, sizeof(k), "key%03d", i % 50);
				snprintf(v, sizeof(v), "value %d", i);
				check_value(db, k, v);
			}
			assert_int_equal(keel_close(db), KEEL_OK);
		} else {
			failed++;
		}
		if (!fired) {
			total = calls;
			break;
		}
	}
	/* the sweep reached keel's allocations of the open (the handle,
	 * the index, its arena), and each failure was refused */
	assert_true(total >= 3);
	assert_int_equal(failed, total);
	tu_rmdir(dir);
	free(path);
#endif
}

int main(void)
{
	held_io = *keel_io_posix();
	held_io.fdatasync = held_fdatasync;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(put_get_delete_round_trip, setup, teardown),
		cmocka_unit_test(a_failed_allocation_in_a_checkpoint_loses_nothing),
		cmocka_unit_test(a_failed_allocation_while_opening_loses_nothing),
		cmocka_unit_test_setup_teardown(keys_of_any_bytes_and_length_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(a_refreshed_snapshot_moves_forward_and_old_views_stay, setup, teardown),
		cmocka_unit_test_setup_teardown(large_value_round_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(small_values_live_in_their_leaf_and_big_ones_in_records, setup, teardown),
		cmocka_unit_test_setup_teardown(revisions_and_conflicts, setup, teardown),
		cmocka_unit_test_setup_teardown(batches_are_all_or_nothing_across_a_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(million_keys_scan_in_order_and_by_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(scans_start_anywhere_and_end_cleanly, setup, teardown),
		cmocka_unit_test_setup_teardown(a_scan_keeps_its_state_across_checkpoints_and_a_compaction, setup, teardown),
		cmocka_unit_test_setup_teardown(concurrent_scans_each_see_one_whole_state, setup, teardown),
		cmocka_unit_test_setup_teardown(maximal_keys_keep_the_tree_valid, setup, teardown),
		cmocka_unit_test_setup_teardown(keys_sharing_prefixes_are_found_exactly_and_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(deleting_everything_leaves_an_empty_valid_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(deleting_a_range_removes_the_emptied_children, setup, teardown),
		cmocka_unit_test_setup_teardown(a_view_stays_valid_while_100_mib_are_written_behind_it, setup, teardown),
		cmocka_unit_test_setup_teardown(recovery_reads_are_bounded_by_the_hint_not_the_file, setup, teardown),
		cmocka_unit_test_setup_teardown(threads_share_syncs_and_conflicts_fail_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(async_commits_complete_durably_and_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_threads_flag_sets_the_engines_threads_only, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_paths_and_foreign_files_are_refused_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(a_second_writer_handle_is_refused_while_the_first_holds_the_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_process_sees_new_commits_without_reopening, setup, teardown),
		cmocka_unit_test_setup_teardown(a_killed_writer_process_releases_the_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(a_waiting_open_gets_the_lock_when_its_holder_lets_go, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_follows_the_file_as_it_grows, setup, teardown),
		cmocka_unit_test_setup_teardown(the_durable_marker_names_the_newest_synced_head, setup, teardown),
		cmocka_unit_test_setup_teardown(failed_writes_report_no_txid_and_long_start_keys_work, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_trusts_nothing_past_a_marker_cut_short, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_process_sees_only_durable_commits, setup, teardown),
		cmocka_unit_test_setup_teardown(a_killed_writers_marker_still_binds_readers, setup, teardown),
		cmocka_unit_test_setup_teardown(a_recovering_writers_marker_waits_for_its_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_moving_to_a_compacted_file_sees_only_durable_commits, setup, teardown),
		cmocka_unit_test_setup_teardown(a_closed_writer_leaves_no_marker_mapped, setup, teardown),
		cmocka_unit_test_setup_teardown(a_writer_that_cannot_make_its_marker_keeps_none, setup, teardown),
		cmocka_unit_test(strerror_names_every_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
