/* test_delta.c -- format 3, the delta log (docs/engine.md, "Commits that
 * write what changed"): bytes per commit, checkpoints, the pending index
 * under snapshots, iterators and reader processes, the bounded recovery at
 * the worst point of the checkpoint cycle, hostile pending spans, format 2
 * stores, and the KEEL_UNSAFE_CKPT_DROP positive control. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "crc32c.h"
#include "format.h"
#include "keel.h"
#include "testutil.h"
#include "testdb.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static keel_stats stats(keel_db *db)
{
	keel_stats s;
	assert_int_equal(keel_stat(db, &s), KEEL_OK);
	return s;
}

static void check_clean(keel_db *db)
{
	keel_check_result r;
	int rc = keel_check(db, NULL, NULL, &r);
	if (rc)
		fprintf(stderr, "check: %s at %llu\n", r.first_reason,
		        (unsigned long long)r.first_offset);
	assert_int_equal(rc, KEEL_OK);
}

static void put_str(keel_db *db, const char *k, const char *v)
{
	assert_int_equal(keel_put(db, k, strlen(k), v, strlen(v), KEEL_REV_ANY,
	                          NULL), KEEL_OK);
}

static void a_put_appends_a_delta_record_and_a_head(void **state)
{
	fixture *f = *state;
	char key[16], val[24]; /* 8 and 16 bytes used */
	keel_options o = {.flags = KEEL_NOCOMPACT};
	reopen_with(f, &o);
	for (int i = 0; i < 100; i++) { /* a tree to put into */
		snprintf(key, sizeof(key), "k%07d", i);
		snprintf(val, sizeof(val), "v%015d", i);
		put_str(f->db, key, val);
	}
	keel_stats s0 = stats(f->db);
	assert_int_equal(s0.format_version, 3);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%07d", i);
		snprintf(val, sizeof(val), "w%015d", i);
		put_str(f->db, key, val);
	}
	keel_stats s1 = stats(f->db);
	/* 8-byte key, 16-byte value: a 64-byte DELTA record and a 112-byte head */
	assert_int_equal(s1.end_offset - s0.end_offset, 100 * 176);
	assert_int_equal(s1.checkpoints, 0);
	assert_true(s1.pending_heads >= 100);
	assert_int_equal(s1.keys, 100);
	check_clean(f->db);
	reopen_with(f, &o);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%07d", i);
		snprintf(val, sizeof(val), "w%015d", i);
		check_value(f->db, key, val);
	}
	check_clean(f->db);
}

/* A model of the state: NKEYS keys, each absent or holding a value. */
#define NKEYS 300
typedef struct model {
	char val[NKEYS][80];
	bool present[NKEYS];
} model;

/* One batch that changes a key, then many others (the group's key table
 * grows past its first size), then the first key again: one entry per key
 * in the delta, the last change winning, before and after a reopen. */
static void a_key_changed_twice_in_a_big_batch_is_one_entry(void **state)
{
	fixture *f = *state;
	keel_batch *b;
	char k[16], v[16];
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof k, "k%03d", i);
		snprintf(v, sizeof v, "v1-%03d", i);
		assert_int_equal(keel_batch_put(b, k, strlen(k), v, strlen(v),
		                                KEEL_REV_ANY), KEEL_OK);
	}
	for (int i = 0; i < 100; i += 33) {
		snprintf(k, sizeof k, "k%03d", i);
		snprintf(v, sizeof v, "v2-%03d", i);
		assert_int_equal(keel_batch_put(b, k, strlen(k), v, strlen(v),
		                                KEEL_REV_ANY), KEEL_OK);
	}
	assert_int_equal(keel_commit(f->db, b, NULL, NULL), KEEL_OK);
	keel_batch_free(b);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 100; i++) {
			snprintf(k, sizeof k, "k%03d", i);
			snprintf(v, sizeof v, "v%d-%03d", i % 33 ? 1 : 2, i);
			check_value(f->db, k, v);
		}
		check_clean(f->db);
		reopen(f);
	}
}

/* A prefix iterator over keys that are only in the delta log (pending, not
 * yet in the tree): it shows the keys with the prefix and no other, shorter
 * or longer ones included. */
static void a_prefix_iterator_shows_only_its_pending_keys(void **state)
{
	fixture *f = *state;
	const char *keys[] = {"a", "a1", "b", "b1", "b22", "ba", "c", "c1"};
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t klen;
	keel_view v;
	char seen[64] = "";
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		put_str(f->db, keys[i], keys[i]);
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, "b", 1, NULL, 0, &it), KEEL_OK);
	while (keel_iter_next(it, &k, &klen, &v) == KEEL_OK) {
		strncat(seen, k, klen);
		strcat(seen, " ");
		keel_view_release(&v);
	}
	keel_iter_close(it);
	assert_string_equal(seen, "b b1 b22 ba ");
	assert_int_equal(keel_iter_open(s, "b2", 2, NULL, 0, &it), KEEL_OK);
	seen[0] = '\0';
	while (keel_iter_next(it, &k, &klen, &v) == KEEL_OK) {
		strncat(seen, k, klen);
		strcat(seen, " ");
		keel_view_release(&v);
	}
	keel_iter_close(it);
	assert_string_equal(seen, "b22 ");
	keel_snapshot_close(s);
}

static void model_key(int i, char *key)
{
	snprintf(key, 16, "key%05d", i);
}

static void model_check(keel_db *db, const model *m)
{
	char key[16];
	uint64_t n = 0;
	for (int i = 0; i < NKEYS; i++) {
		model_key(i, key);
		check_value(db, key, m->present[i] ? m->val[i] : NULL);
		n += m->present[i];
	}
	assert_int_equal(stats(db).keys, n);
	/* iteration: the merged state, in order, deletes skipped */
	keel_snapshot *s;
	keel_iter *it;
	const void *k;
	size_t kl;
	keel_view v;
	assert_int_equal(keel_snapshot_open(db, &s), KEEL_OK);
	assert_int_equal(keel_iter_open(s, "key", 3, NULL, 0, &it), KEEL_OK);
	int i = 0;
	while (keel_iter_next(it, &k, &kl, &v) == KEEL_OK) {
		while (i < NKEYS && !m->present[i])
			i++;
		assert_true(i < NKEYS);
		model_key(i, key);
		assert_int_equal(kl, strlen(key));
		assert_memory_equal(k, key, kl);
		assert_int_equal(v.len, strlen(m->val[i]));
		assert_memory_equal(v.data, m->val[i], v.len);
		i++;
	}
	while (i < NKEYS && !m->present[i])
		i++;
	assert_int_equal(i, NKEYS);
	keel_iter_close(it);
	/* a start key inside the range */
	assert_int_equal(keel_iter_open(s, NULL, 0, "key00150", 8, &it), KEEL_OK);
	i = 150;
	while (keel_iter_next(it, &k, &kl, NULL) == KEEL_OK) {
		while (i < NKEYS && !m->present[i])
			i++;
		model_key(i, key);
		assert_memory_equal(k, key, kl);
		i++;
	}
	keel_iter_close(it);
	keel_snapshot_close(s);
	check_clean(db);
}

static void random_ops(keel_db *db, model *m, unsigned *seed, int n)
{
	char key[16];
	for (int j = 0; j < n; j++) {
		int i = (int)(rand_r(seed) % NKEYS);
		model_key(i, key);
		if (m->present[i] && rand_r(seed) % 4 == 0) {
			assert_int_equal(keel_del(db, key, strlen(key), KEEL_REV_ANY, NULL),
			                 KEEL_OK);
			m->present[i] = false;
			continue;
		}
		int len = rand_r(seed) % 3 == 0 ? 70 + rand_r(seed) % 9 /* a record */
		                                : 1 + rand_r(seed) % 20;
		for (int c = 0; c < len; c++)
			m->val[i][c] = (char)('a' + (j + c) % 26);
		m->val[i][len] = '\0';
		put_str(db, key, m->val[i]);
		m->present[i] = true;
	}
}

static void checkpoints_absorb_every_pending_entry(void **state)
{
	fixture *f = *state;
	static model m;
	unsigned seed = 7;
	keel_options o = {.flags = KEEL_NOCOMPACT, .checkpoint_bytes = 8192};
	memset(&m, 0, sizeof(m));
	reopen_with(f, &o);
	for (int round = 0; round < 6; round++) {
		random_ops(f->db, &m, &seed, 400);
		model_check(f->db, &m);
		if (round == 2)
			reopen_with(f, &o);
		if (round == 4)
			assert_int_equal(keel_compact(f->db), KEEL_OK);
	}
	assert_true(stats(f->db).checkpoints >= 10);
	reopen(f);
	model_check(f->db, &m);
}

static void a_snapshot_keeps_its_state_across_a_checkpoint(void **state)
{
	fixture *f = *state;
	keel_options o = {.flags = KEEL_NOCOMPACT, .checkpoint_bytes = 4096};
	reopen_with(f, &o);
	put_str(f->db, "a", "old-a");
	put_str(f->db, "b", "old-b");
	assert_true(stats(f->db).pending_heads > 0);
	keel_snapshot *s;
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	uint64_t c0 = stats(f->db).checkpoints;
	char key[16];
	for (int i = 0; stats(f->db).checkpoints < c0 + 3; i++) {
		snprintf(key, sizeof(key), "n%05d", i);
		put_str(f->db, key, "x");
		put_str(f->db, "a", key);
		if (i == 10)
			assert_int_equal(keel_del(f->db, "b", 1, KEEL_REV_ANY, NULL),
			                 KEEL_OK);
		assert_true(i < 100000);
	}
	keel_view v;
	assert_int_equal(keel_snapshot_get(s, "a", 1, &v), KEEL_OK);
	assert_int_equal(v.len, 5);
	assert_memory_equal(v.data, "old-a", 5);
	keel_view_release(&v);
	assert_int_equal(keel_snapshot_get(s, "b", 1, &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_snapshot_get(s, "n00000", 6, &v), KEEL_ENOTFOUND);
	keel_iter *it;
	int n = 0;
	assert_int_equal(keel_iter_open(s, NULL, 0, NULL, 0, &it), KEEL_OK);
	while (keel_iter_next(it, NULL, NULL, NULL) == KEEL_OK)
		n++;
	keel_iter_close(it);
	assert_int_equal(n, 2);
	keel_snapshot_close(s);
	check_value(f->db, "b", NULL);
	check_clean(f->db);
}

static void a_reader_process_follows_the_writer_across_checkpoints(void **state)
{
	fixture *f = *state;
	keel_options o = {.flags = KEEL_NOCOMPACT, .checkpoint_bytes = 2048};
	reopen_with(f, &o);
	put_str(f->db, "counter", "0");
	keel_db *r;
	keel_options ro = {.flags = KEEL_RDONLY};
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	char val[16], key[16];
	for (int i = 1; i <= 600; i++) {
		snprintf(val, sizeof(val), "%d", i);
		snprintf(key, sizeof(key), "k%03d", i % 50);
		put_str(f->db, "counter", val);
		put_str(f->db, key, val);
		if (i % 7 == 0) {
			check_value(r, "counter", val);
			check_value(r, key, val);
		}
		if (i == 300)
			assert_int_equal(keel_compact(f->db), KEEL_OK);
	}
	assert_true(stats(f->db).checkpoints >= 20);
	check_clean(r);
	keel_close(r);
}

/* The store's newest head, read from the file. */
static size_t newest_head(const unsigned char *img, size_t len, keel_head *h)
{
	size_t best = 0;
	uint64_t txid = 0;
	for (size_t off = KEEL_DATA_START; off + KEEL_HEAD_SIZE <= len; off += 8) {
		keel_head c;
		if (img[off + 4] == KEEL_REC_HEAD &&
		    keel_head_decode(img + off, &c) == KEEL_OK && c.txid >= txid) {
			txid = c.txid;
			best = off;
			*h = c;
		}
	}
	return best;
}

static void a_head_claiming_a_span_past_the_bounds_is_refused(void **state)
{
	fixture *f = *state;
	keel_options o = {.flags = KEEL_NOCOMPACT};
	reopen_with(f, &o);
	for (int i = 0; i < 20; i++)
		put_str(f->db, "k", i % 2 ? "odd" : "even");
	uint64_t txid = stats(f->db).txid;
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	size_t len = 0;
	unsigned char *img = tu_read_file(f->path, &len);
	keel_head h = {0};
	assert_non_null(img);
	size_t off = newest_head(img, len, &h);
	assert_true(off >= KEEL_DATA_START && off + KEEL_HEAD_SIZE <= len);
	assert_int_equal(h.txid, txid);
	assert_true(h.pending_heads >= 20);
	uint8_t *p = img + off + KEEL_REC_HDR;
	uint8_t *pend_bytes = p + 88, *pend_heads = p + 84;
	/* a span of 5 MiB, record CRC fixed: past KEEL_PENDING_BYTES_MAX */
	keel_st64(pend_bytes, (uint64_t)5 << 20);
	keel_rec_encode(img + off, KEEL_REC_HEAD, p, KEEL_HEAD_PAYLOAD);
	assert_int_equal(tu_write_file(f->path, img, len), 0);
	keel_recovery rep;
	keel_options ro = {.flags = KEEL_RDONLY, .report = &rep};
	keel_db *r;
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	assert_int_equal(rep.txid, txid - 1); /* that head is not taken */
	check_value(r, "k", "even");          /* the one before is */
	assert_true(rep.bytes_read < (1u << 20));
	keel_close(r);
	/* more heads than the bound, span in range */
	keel_st64(pend_bytes, h.pending_bytes);
	keel_st32(pend_heads, KEEL_CKPT_HEADS + 1);
	keel_rec_encode(img + off, KEEL_REC_HEAD, p, KEEL_HEAD_PAYLOAD);
	assert_int_equal(tu_write_file(f->path, img, len), 0);
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	assert_int_equal(rep.txid, txid - 1);
	keel_close(r);
	/* a DELTA record flipped behind the newest head: damage */
	keel_st32(pend_heads, h.pending_heads);
	keel_rec_encode(img + off, KEEL_REC_HEAD, p, KEEL_HEAD_PAYLOAD);
	keel_head prev;
	assert_int_equal(keel_head_decode(img + h.prev_head, &prev), KEEL_OK);
	img[prev.delta_off + KEEL_REC_HDR + KEEL_DELTA_HDR + KEEL_LEAF_ENTRY] ^= 1;
	assert_int_equal(tu_write_file(f->path, img, len), 0);
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_ECORRUPT);
	assert_int_equal(rep.status, KEEL_RECOVERY_CORRUPT);
	ro.flags |= KEEL_SALVAGE;
	assert_int_equal(keel_open(f->path, &ro, &r), KEEL_OK);
	assert_true(rep.txid < prev.txid);
	keel_close(r);
	free(img);
	assert_int_equal(keel_open(f->path, NULL, &f->db), KEEL_ECORRUPT);
	f->db = NULL;
	assert_int_equal(keel_open(f->path, &o, &f->db), KEEL_ECORRUPT);
}

/* Writes IMG (LEN bytes, damaged at VICTIM) over the store and frees it:
 * a read-only open must refuse it, recovery naming damage at or before
 * VICTIM. */
static void refused_at_open(fixture *f, unsigned char *img, size_t len,
                            uint64_t victim)
{
	keel_recovery rep;
	keel_options ro = {.flags = KEEL_RDONLY, .report = &rep};
	keel_db *r = NULL;
	assert_int_equal(tu_write_file(f->path, img, len), 0);
	free(img);
	int rc = keel_open(f->path, &ro, &r);
	if (rc == KEEL_OK)
		keel_close(r);
	assert_int_equal(rc, KEEL_ECORRUPT);
	assert_int_equal(rep.status, KEEL_RECOVERY_CORRUPT);
	assert_true(rep.offset <= victim);
}

/* Recovery checks the chained CRC of the regions from the newest hint on;
 * a pending DELTA record older than the hinted head is covered by nothing
 * but its own CRC and the head's delta_crc.  A bit flipped in a value
 * there must make the open refuse the store, never hand out the wrong
 * bytes (tests/mutants/21-delta-crc-unchecked.patch). */
static void damage_in_a_pending_delta_before_the_hint_is_found_at_open(void **state)
{
	fixture *f = *state;
	keel_options o = {.flags = KEEL_NOCOMPACT};
	char key[16], val[24];
	reopen_with(f, &o);
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "k%03d", i);
		snprintf(val, sizeof(val), "value-%05d", i);
		put_str(f->db, key, val);
	}
	uint64_t txid = stats(f->db).txid;
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	size_t len = 0;
	unsigned char *img = tu_read_file(f->path, &len);
	assert_non_null(img);
	keel_head h = {0}, c;
	keel_hint hint = {0}, hh;
	h.off = newest_head(img, len, &h); /* decode leaves off alone */
	assert_true(h.off >= KEEL_DATA_START);
	assert_int_equal(h.txid, txid);
	assert_true(h.pending_heads >= 300); /* no checkpoint among them */
	for (unsigned slot = 0; slot < 2; slot++)
		if (keel_hint_decode(img + KEEL_HINT_OFF(slot), &hh) == KEEL_OK &&
		    hh.txid > hint.txid)
			hint = hh;
	assert_true(hint.txid > 64 && hint.txid < txid); /* 300 commits */
	/* the pending head halfway back to the span's start, whose region
	 * is below the hinted head's */
	uint64_t span = h.off - h.pending_bytes, at = h.off, victim = 0;
	assert_int_equal(keel_head_decode(img + at, &c), KEEL_OK);
	while (c.pending_heads > h.pending_heads / 2 + 1) {
		at = c.prev_head;
		assert_true(at >= span && at < len);
		assert_int_equal(keel_head_decode(img + at, &c), KEEL_OK);
	}
	c.off = at;
	assert_true(c.off < hint.head_off && c.delta_off >= span);
	/* the first entry's first value byte (klen 4: "kNNN") */
	victim = c.delta_off + KEEL_REC_HDR + KEEL_DELTA_HDR + KEEL_LEAF_ENTRY + 4;
	assert_int_equal(img[victim], 'v');
	img[victim] ^= 0x20; /* 'v' -> 'V': still a well-formed entry */
	refused_at_open(f, img, len, victim);
	assert_int_equal(keel_open(f->path, &o, &f->db), KEEL_ECORRUPT);
	f->db = NULL;
}

/* Open checks the chained CRC of the hinted commit's region before it
 * starts from the hint: the pending span's own checks cover its DELTA
 * record but not a VALUE record beside it.  A bit flipped in such a value
 * must make the open refuse the store (later heads follow), not leave it to
 * the read (tests/mutants/18-hint-without-region-check.patch). */
static void damage_in_a_value_of_the_hinted_commit_is_found_at_open(void **state)
{
	fixture *f = *state;
	keel_options o = {.flags = KEEL_NOCOMPACT};
	char key[16], val[201];
	reopen_with(f, &o);
	memset(val, 'x', 200);
	val[200] = 0;
	for (int i = 0; i < 100; i++) { /* 200 bytes: a VALUE record each */
		snprintf(key, sizeof(key), "k%03d", i);
		val[0] = (char)('a' + i % 26);
		put_str(f->db, key, val);
	}
	uint64_t txid = stats(f->db).txid;
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	size_t len = 0;
	unsigned char *img = tu_read_file(f->path, &len);
	assert_non_null(img);
	keel_hint hint = {0}, hh;
	for (unsigned slot = 0; slot < 2; slot++)
		if (keel_hint_decode(img + KEEL_HINT_OFF(slot), &hh) == KEEL_OK &&
		    hh.txid > hint.txid)
			hint = hh;
	assert_true(hint.txid > 1 && hint.txid < txid); /* later heads follow */
	keel_head h;
	assert_int_equal(keel_head_decode(img + hint.head_off, &h), KEEL_OK);
	uint64_t victim = 0;
	for (uint64_t at = h.region_start; at < hint.head_off && !victim;) {
		keel_rec_hdr r;
		assert_int_equal(keel_rec_decode(img + at, &r), KEEL_OK);
		if (r.type == KEEL_REC_VALUE)
			victim = at + KEEL_REC_HDR + r.len / 2;
		at += keel_rec_size(r.len);
	}
	assert_true(victim != 0);
	img[victim] ^= 0x01;
	refused_at_open(f, img, len, victim);
}

/* The worst point of the checkpoint cycle: a writer killed with the
 * pending span just under the bound.  Every acknowledged write is there
 * after the reopen, which reads no more than the bound. */
static void a_store_killed_at_the_worst_point_reopens_within_the_bound(void **state)
{
	fixture *f = *state;
	int ack[2];
	keel_close(f->db);
	f->db = NULL;
	assert_int_equal(pipe(ack), 0);
	pid_t pid = fork();
	if (pid == 0) {
		keel_db *db;
		/* the page cache survives a process kill: no need to sync */
		keel_options o = {.flags = KEEL_NOCOMPACT | KEEL_UNSAFE_NO_SYNC};
		char key[16], val[17];
		if (keel_open(f->path, &o, &db))
			_exit(3);
		for (uint32_t i = 0;; i++) {
			keel_stats s;
			snprintf(key, sizeof(key), "k%07u", i % 10000);
			snprintf(val, sizeof(val), "v%015u", i);
			if (keel_put(db, key, 8, val, 16, KEEL_REV_ANY, NULL) ||
			    keel_stat(db, &s))
				_exit(4);
			if (s.checkpoints == 0 &&
			    s.pending_bytes + 4096 > KEEL_CHECKPOINT_BYTES_DEFAULT) {
				if (write(ack[1], &i, sizeof(i)) != sizeof(i))
					_exit(5);
				pause();
			}
		}
	}
	assert_true(pid > 0);
	close(ack[1]);
	uint32_t last;
	assert_int_equal(read(ack[0], &last, sizeof(last)), sizeof(last));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(ack[0]);
	keel_recovery rep;
	keel_options o = {.report = &rep, .flags = KEEL_NOCOMPACT};
	uint64_t t0 = now_ns();
	assert_int_equal(keel_open(f->path, &o, &f->db), KEEL_OK);
	uint64_t took = now_ns() - t0;
	keel_stats s = stats(f->db);
	fprintf(stderr, "worst point: %llu pending commits, %llu pending bytes; "
	        "open read %llu bytes in %.1f ms\n",
	        (unsigned long long)s.pending_heads,
	        (unsigned long long)s.pending_bytes,
	        (unsigned long long)rep.bytes_read, took / 1e6);
	assert_true(s.pending_heads > 20000);
	/* the hint walk (64 commits or 4 MiB, read in windows of up to 1 MiB)
	 * plus one read of the pending span */
	assert_true(rep.bytes_read <= ((uint64_t)5 << 20) + KEEL_PENDING_BYTES_MAX +
	                                 KEEL_HEAD_SIZE);
	char key[16], val[17];
	for (uint32_t i = last > 10000 ? last - 9999 : 0; i <= last; i++) {
		snprintf(key, sizeof(key), "k%07u", i % 10000);
		snprintf(val, sizeof(val), "v%015u", i);
		check_value(f->db, key, val);
	}
	check_clean(f->db);
	/* the next commit is a checkpoint: nothing lost there either */
	for (int i = 0; stats(f->db).checkpoints == 0; i++) {
		assert_true(i < 100); /* 4096 bytes of 176-byte commits */
		put_str(f->db, "after", i % 2 ? "x" : "y");
	}
	snprintf(key, sizeof(key), "k%07u", last % 10000);
	snprintf(val, sizeof(val), "v%015u", last);
	check_value(f->db, key, val);
	check_clean(f->db);
}

static void format_2_stores_open_and_compaction_converts_them(void **state)
{
	fixture *f = *state;
	keel_options ck = {.checkpoint_bytes = 1, .flags = KEEL_NOCOMPACT};
	reopen_with(f, &ck); /* every commit a checkpoint: a version 2 layout */
	put_str(f->db, "a", "1");
	put_str(f->db, "b", "2");
	assert_int_equal(keel_close(f->db), KEEL_OK);
	f->db = NULL;
	size_t len = 0;
	unsigned char *img = tu_read_file(f->path, &len);
	img[8] = 2;
	uint32_t crc = keel_crc32c(0, img, 60);
	memcpy(img + 60, &crc, 4);
	assert_int_equal(tu_write_file(f->path, img, len), 0);
	free(img);
	keel_options o = {.flags = KEEL_NOCOMPACT};
	reopen_with(f, &o);
	assert_int_equal(stats(f->db).format_version, 2);
	put_str(f->db, "c", "3");
	assert_int_equal(stats(f->db).pending_heads, 0); /* the version 2 way */
	check_clean(f->db);
	assert_int_equal(keel_compact(f->db), KEEL_OK);
	assert_int_equal(stats(f->db).format_version, 3);
	put_str(f->db, "d", "4");
	assert_int_equal(stats(f->db).pending_heads, 1);
	reopen_with(f, &o);
	check_value(f->db, "a", "1");
	check_value(f->db, "c", "3");
	check_value(f->db, "d", "4");
	check_clean(f->db);
}

/* Runs 6,000 puts over 1,000 keys with FLAGS and a small checkpoint
 * bound, reading every key back every 500 puts: how many reads found an
 * older value than the last acknowledged. */
static int stale_reads(fixture *f, unsigned flags)
{
	keel_options o = {.flags = KEEL_NOCOMPACT | flags, .checkpoint_bytes = 16384};
	char key[16], val[16];
	static uint32_t last[1000];
	int stale = 0;
	reopen_with(f, &o);
	for (uint32_t i = 0; i < 6000; i++) {
		snprintf(key, sizeof(key), "k%04u", i % 1000);
		snprintf(val, sizeof(val), "%u", i);
		put_str(f->db, key, val);
		last[i % 1000] = i;
		if (i % 500 != 499)
			continue;
		for (uint32_t k = 0; k < 1000 && k <= i; k++) {
			keel_view v;
			snprintf(key, sizeof(key), "k%04u", k);
			snprintf(val, sizeof(val), "%u", last[k]);
			if (keel_get(f->db, key, strlen(key), &v) != KEEL_OK ||
			    v.len != strlen(val) || memcmp(v.data, val, v.len))
				stale++;
			keel_view_release(&v);
		}
	}
	return stale;
}

static void the_ckpt_drop_control_loses_acknowledged_writes(void **state)
{
	fixture *f = *state;
	assert_int_equal(stale_reads(f, 0), 0);
	assert_true(stats(f->db).checkpoints > 0);
	int stale = stale_reads(f, KEEL_UNSAFE_CKPT_DROP);
	fprintf(stderr, "KEEL_UNSAFE_CKPT_DROP: %d stale reads\n", stale);
	assert_true(stale > 0);
}

/* D7 under threads: writers commit pairs of keys in one batch (a and b
 * with the same counter) while checkpoints come every few commits; a
 * reader refreshing a snapshot must always see both keys of a pair equal,
 * and counters that never go back. */
typedef struct pair_writer {
	keel_db *db;
	int id, n;
} pair_writer;

static void *pair_write(void *arg)
{
	pair_writer *w = arg;
	char ka[16], kb[16], v[16];
	snprintf(ka, sizeof(ka), "a%d", w->id);
	snprintf(kb, sizeof(kb), "b%d", w->id);
	for (int i = 1; i <= w->n; i++) {
		keel_batch *b;
		snprintf(v, sizeof(v), "%08d", i);
		if (keel_batch_new(&b) || keel_batch_put(b, ka, strlen(ka), v, 8,
		                                         KEEL_REV_ANY) ||
		    keel_batch_put(b, kb, strlen(kb), v, 8, KEEL_REV_ANY) ||
		    keel_commit(w->db, b, NULL, NULL))
			return (void *)1;
		keel_batch_free(b);
	}
	return NULL;
}

static void readers_see_whole_batches_while_checkpoints_run(void **state)
{
	fixture *f = *state;
	enum { WRITERS = 4, N = 1500 };
	keel_options o = {.flags = KEEL_NOCOMPACT, .checkpoint_bytes = 4096};
	reopen_with(f, &o);
	pthread_t t[WRITERS];
	pair_writer w[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (pair_writer){.db = f->db, .id = i, .n = N};
		assert_int_equal(pthread_create(&t[i], NULL, pair_write, &w[i]), 0);
	}
	keel_snapshot *s;
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	int last[WRITERS] = {0}, rounds = 0;
	bool done = false;
	while (!done) {
		done = true;
		for (int i = 0; i < WRITERS; i++) {
			char ka[16], kb[16];
			keel_view va, vb;
			snprintf(ka, sizeof(ka), "a%d", i);
			snprintf(kb, sizeof(kb), "b%d", i);
			int ra = keel_snapshot_get(s, ka, strlen(ka), &va);
			int rb = keel_snapshot_get(s, kb, strlen(kb), &vb);
			assert_int_equal(ra, rb);
			if (ra == KEEL_ENOTFOUND) {
				done = false;
				continue;
			}
			assert_int_equal(ra, KEEL_OK);
			assert_memory_equal(va.data, vb.data, 8); /* one batch */
			char num[9];
			memcpy(num, va.data, 8);
			num[8] = '\0';
			int c = atoi(num);
			assert_true(c >= last[i]);                 /* never back */
			last[i] = c;
			done &= c == N;
			keel_view_release(&va);
			keel_view_release(&vb);
		}
		assert_int_equal(keel_snapshot_refresh(&s), KEEL_OK);
		rounds++;
	}
	keel_snapshot_close(s);
	for (int i = 0; i < WRITERS; i++) {
		void *rc;
		pthread_join(t[i], &rc);
		assert_null(rc);
	}
	assert_true(stats(f->db).checkpoints > 10);
	print_message("%d snapshot refreshes, %llu checkpoints\n", rounds,
	              (unsigned long long)stats(f->db).checkpoints);
	check_clean(f->db);
}

/* Iterators over a generation share a sorted view of its keys and sort
 * only the keys added after it (pending.c, struct pend_view): whatever
 * view an iterator gets -- made for an older snapshot, with keys after it,
 * or made again past VIEW_SLACK -- each snapshot iterates exactly its own
 * state, from a start key and within a prefix. */
#define VKEYS 1000
typedef struct vmodel {
	int val[VKEYS]; /* 0: absent */
} vmodel;

static void vkey(int i, char key[16])
{
	snprintf(key, 16, "v%04d", i);
}

static void vcommit(keel_db *db, vmodel *m, int from, int to, int step,
                    int val)
{
	keel_batch *b;
	char key[16], v[16];
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	for (int i = from; i < to; i += step) {
		vkey(i, key);
		snprintf(v, sizeof(v), "%d", val);
		if (val)
			assert_int_equal(keel_batch_put(b, key, 5, v, strlen(v),
			                                KEEL_REV_ANY), KEEL_OK);
		else
			assert_int_equal(keel_batch_del(b, key, 5, KEEL_REV_ANY),
			                 KEEL_OK);
		m->val[i] = val;
		if (keel_batch_count(b) == 50 || i + step >= to) {
			assert_int_equal(keel_commit(db, b, NULL, NULL), KEEL_OK);
			keel_batch_clear(b);
		}
	}
	keel_batch_free(b);
}

/* Iterates S from START within PREFIX and checks it against M. */
static void vcheck(keel_snapshot *s, const vmodel *m, const char *prefix,
                   const char *start)
{
	keel_iter *it;
	const void *k;
	size_t kl;
	keel_view v;
	char key[16], val[16];
	size_t plen = prefix ? strlen(prefix) : 0;
	assert_int_equal(keel_iter_open(s, prefix, plen, start,
	                                start ? strlen(start) : 0, &it), KEEL_OK);
	for (int i = 0; i < VKEYS; i++) {
		vkey(i, key);
		if (!m->val[i] || (start && strcmp(key, start) < 0) ||
		    (plen && strncmp(key, prefix, plen)))
			continue;
		assert_int_equal(keel_iter_next(it, &k, &kl, &v), KEEL_OK);
		assert_int_equal(kl, 5);
		assert_memory_equal(k, key, 5);
		snprintf(val, sizeof(val), "%d", m->val[i]);
		assert_int_equal(v.len, strlen(val));
		assert_memory_equal(v.data, val, v.len);
	}
	assert_int_equal(keel_iter_next(it, &k, &kl, &v), KEEL_ENOTFOUND);
	keel_iter_close(it);
}

static void vcheck_all(keel_snapshot *s, const vmodel *m)
{
	vcheck(s, m, NULL, NULL);
	vcheck(s, m, NULL, "v0500");
	vcheck(s, m, "v03", NULL);
	vcheck(s, m, "v03", "v0355");
	vcheck(s, m, NULL, "v09999"); /* past the last key */
}

static void iterators_share_a_sorted_view_of_the_pending_keys(void **state)
{
	fixture *f = *state;
	keel_options o = {.flags = KEEL_NOCOMPACT};
	reopen_with(f, &o);
	static vmodel m1, m2, m3;
	vcommit(f->db, &m1, 0, VKEYS, 2, 1);        /* 500 even keys */
	keel_snapshot *s1, *s2, *s3;
	assert_int_equal(keel_snapshot_open(f->db, &s1), KEEL_OK);
	vcheck_all(s1, &m1);                         /* makes the view */
	m2 = m1;
	vcommit(f->db, &m2, 1, 200, 2, 2);           /* 100 new keys: kept */
	vcommit(f->db, &m2, 100, 300, 4, 3);         /* overwrites */
	vcommit(f->db, &m2, 400, 420, 2, 0);         /* deletes */
	assert_int_equal(keel_snapshot_open(f->db, &s2), KEEL_OK);
	vcheck_all(s2, &m2);
	vcheck_all(s1, &m1);
	m3 = m2;
	vcommit(f->db, &m3, 201, VKEYS, 2, 4);       /* 400 more: a new view */
	vcommit(f->db, &m3, 0, 100, 1, 0);
	assert_int_equal(keel_snapshot_open(f->db, &s3), KEEL_OK);
	vcheck_all(s3, &m3);
	vcheck_all(s2, &m2);
	vcheck_all(s1, &m1);
	assert_int_equal(stats(f->db).checkpoints, 0); /* all of it pending */
	keel_snapshot_close(s1);
	keel_snapshot_close(s2);
	keel_snapshot_close(s3);
	check_clean(f->db);
}

/* The sorted views under threads: writers add new keys (so views are made
 * again and again) while a reader iterates fresh snapshots; every pass is
 * in strict key order and sees no fewer keys than the one before. */
typedef struct key_writer {
	keel_db *db;
	int id, n;
} key_writer;

static void *key_write(void *arg)
{
	key_writer *w = arg;
	char key[16];
	for (int i = 0; i < w->n; i++) {
		snprintf(key, sizeof(key), "n%05d-%d", i, w->id);
		if (keel_put(w->db, key, strlen(key), "v", 1, KEEL_REV_ANY, NULL))
			return (void *)1;
	}
	return NULL;
}

static void iterators_keep_order_while_keys_are_added(void **state)
{
	fixture *f = *state;
	enum { WRITERS = 2, N = 1500 };
	keel_options o = {.flags = KEEL_NOCOMPACT};
	reopen_with(f, &o);
	pthread_t t[WRITERS];
	key_writer w[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (key_writer){.db = f->db, .id = i, .n = N};
		assert_int_equal(pthread_create(&t[i], NULL, key_write, &w[i]), 0);
	}
	keel_snapshot *s;
	assert_int_equal(keel_snapshot_open(f->db, &s), KEEL_OK);
	size_t last = 0, passes = 0;
	while (last < WRITERS * N) {
		keel_iter *it;
		const void *k;
		size_t kl, n = 0;
		char prev[16] = "";
		assert_int_equal(keel_snapshot_refresh(&s), KEEL_OK);
		assert_int_equal(keel_iter_open(s, "n", 1, NULL, 0, &it), KEEL_OK);
		while (keel_iter_next(it, &k, &kl, NULL) == KEEL_OK) {
			char cur[16];
			assert_true(kl < sizeof(cur));
			memcpy(cur, k, kl);
			cur[kl] = '\0';
			assert_true(strcmp(prev, cur) < 0);
			strcpy(prev, cur);
			n++;
		}
		keel_iter_close(it);
		assert_true(n >= last);
		last = n;
		passes++;
	}
	keel_snapshot_close(s);
	for (int i = 0; i < WRITERS; i++) {
		void *rc;
		pthread_join(t[i], &rc);
		assert_null(rc);
	}
	print_message("%zu passes\n", passes);
	check_clean(f->db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_put_appends_a_delta_record_and_a_head, setup, teardown),
		cmocka_unit_test_setup_teardown(a_key_changed_twice_in_a_big_batch_is_one_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(a_prefix_iterator_shows_only_its_pending_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(checkpoints_absorb_every_pending_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(a_snapshot_keeps_its_state_across_a_checkpoint, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_process_follows_the_writer_across_checkpoints, setup, teardown),
		cmocka_unit_test_setup_teardown(a_head_claiming_a_span_past_the_bounds_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(damage_in_a_pending_delta_before_the_hint_is_found_at_open, setup, teardown),
		cmocka_unit_test_setup_teardown(damage_in_a_value_of_the_hinted_commit_is_found_at_open, setup, teardown),
		cmocka_unit_test_setup_teardown(a_store_killed_at_the_worst_point_reopens_within_the_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(format_2_stores_open_and_compaction_converts_them, setup, teardown),
		cmocka_unit_test_setup_teardown(the_ckpt_drop_control_loses_acknowledged_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(readers_see_whole_batches_while_checkpoints_run, setup, teardown),
		cmocka_unit_test_setup_teardown(iterators_share_a_sorted_view_of_the_pending_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(iterators_keep_order_while_keys_are_added, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
