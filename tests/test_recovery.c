/* test_recovery.c -- torn tails at every byte, bit flips everywhere, damaged
 * hints, damage behind a durable head, salvage. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "format.h"
#include "keel.h"
#include "testutil.h"

typedef struct fixture {
	char *dir, *path, *copy;
	unsigned char *img; /* the store's bytes up to its end offset */
	size_t len;         /* end offset of the newest head          */
	uint64_t last_head, last_region, txid;
} fixture;

#define KEYS 40

/* Value of KEY at VERSION: self-describing, so a wrong value is visible. */
static int value_of(char *buf, size_t n, int key, int version)
{
	return snprintf(buf, n, "key%02d:v%04d:%0*d", key, version, 20 + key % 7, key);
}

/* Writes KEYS keys over several commits, then one last commit that changes
 * key 0 and adds "last"; remembers where that commit lies. */
static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	keel_db *db;
	char k[16], v[64];
	keel_stats st;

	f->dir = tu_mkdtemp();
	f->path = tu_path(f->dir, "db");
	f->copy = tu_path(f->dir, "copy");
	assert_int_equal(keel_open(f->path, NULL, &db), KEEL_OK);
	for (int version = 1; version <= 3; version++)
		for (int i = 0; i < KEYS; i++) {
			snprintf(k, sizeof(k), "key%02d", i);
			int n = value_of(v, sizeof(v), i, version);
			assert_int_equal(keel_put(db, k, strlen(k), v, (size_t)n, KEEL_REV_ANY, NULL), KEEL_OK);
		}
	keel_stat(db, &st);
	f->last_region = st.end_offset;
	keel_batch *b;
	keel_batch_new(&b);
	int n = value_of(v, sizeof(v), 0, 4);
	keel_batch_put(b, "key00", 5, v, (size_t)n, KEEL_REV_ANY);
	keel_batch_put(b, "last", 4, "the last commit", 15, KEEL_REV_ABSENT);
	assert_int_equal(keel_commit(db, b, NULL, NULL), KEEL_OK);
	keel_batch_free(b);
	keel_stat(db, &st);
	f->last_head = st.end_offset - KEEL_HEAD_SIZE;
	f->txid = st.txid;
	assert_int_equal(keel_close(db), KEEL_OK);
	size_t full;
	unsigned char *img = tu_read_file(f->path, &full);
	assert_non_null(img);
	f->len = st.end_offset;
	f->img = img;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	tu_rmdir(f->dir);
	free(f->path);
	free(f->copy);
	free(f->img);
	free(f);
	return 0;
}

/* Writes IMG[0, len) to the copy, then zeros (as preallocated space) up to
 * TOTAL, or nothing more when TOTAL == len. */
static void write_copy(fixture *f, const unsigned char *img, size_t len, size_t total)
{
	assert_int_equal(tu_write_file(f->copy, img, len), 0);
	if (total > len)
		assert_int_equal(truncate(f->copy, (off_t)total), 0);
}

/* The state after the last commit (LAST) or the one before it. */
static void assert_state(keel_db *db, bool last)
{
	char k[16], v[64];
	keel_view view;
	for (int i = 0; i < KEYS; i++) {
		snprintf(k, sizeof(k), "key%02d", i);
		int n = value_of(v, sizeof(v), i, (i == 0 && last) ? 4 : 3);
		assert_int_equal(keel_get(db, k, strlen(k), &view), KEEL_OK);
		assert_int_equal(view.len, (size_t)n);
		assert_memory_equal(view.data, v, (size_t)n);
		keel_view_release(&view);
	}
	int rc = keel_get(db, "last", 4, &view);
	assert_int_equal(rc, last ? KEEL_OK : KEEL_ENOTFOUND);
	keel_view_release(&view);
	keel_check_result cr;
	assert_int_equal(keel_check(db, NULL, NULL, &cr), KEEL_OK);
}

static void open_and_expect(fixture *f, bool last, bool expect_cut)
{
	keel_db *db;
	keel_recovery r;
	keel_options o = {.report = &r};
	assert_int_equal(keel_open(f->copy, &o, &db), KEEL_OK);
	assert_int_equal(r.txid, last ? f->txid : f->txid - 1);
	assert_int_equal(r.status, expect_cut ? KEEL_RECOVERY_TRUNCATED : KEEL_RECOVERY_OK);
	assert_state(db, last);
	/* The store takes new commits after the cut, and keeps them. */
	assert_int_equal(keel_put(db, "after", 5, "x", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
	assert_int_equal(keel_open(f->copy, &o, &db), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_OK);
	assert_state(db, last);
	keel_close(db);
}

/* A file that ends exactly at its newest head (a copy trimmed to the bytes
 * in use, a file system that dropped the preallocation): the head is found
 * whole, nothing is cut, and with zeros after it the same. */
static void a_file_ending_at_its_newest_head_keeps_it(void **state)
{
	fixture *f = *state;
	write_copy(f, f->img, f->len, f->len);
	open_and_expect(f, true, false);
	write_copy(f, f->img, f->len, f->len + 4096);
	open_and_expect(f, true, false);
}

/* The crash points: the last commit cut at every byte of its region and
 * head; the rest of the file zeros, absent, or garbage. */
static void last_commit_torn_at_every_byte_recovers_the_previous_head(void **state)
{
	fixture *f = *state;
	size_t end = f->len, total = end + 65536;
	unsigned char *garbage = malloc(total);
	srand(1);
	for (size_t cut = f->last_region; cut <= end; cut++) {
		bool whole = cut == end;
		bool torn = !whole && cut > f->last_region;
		/* When every byte lost is a zero (reserved head fields), the
		 * zero-filled copy is the same file as the whole one. */
		bool same = true;
		for (size_t i = cut; i < end; i++)
			same = same && f->img[i] == 0;
		write_copy(f, f->img, cut, total);       /* zeros after */
		open_and_expect(f, same, torn && !same);
		write_copy(f, f->img, cut, cut);         /* file ends there */
		open_and_expect(f, whole, torn);
		if (whole)
			continue;
		/* garbage where the rest of the commit would have been */
		memcpy(garbage, f->img, cut);
		for (size_t i = cut; i < end; i++)
			garbage[i] = (unsigned char)rand();
		write_copy(f, garbage, end, total);
		keel_db *db;
		keel_recovery r;
		keel_options o = {.report = &r};
		assert_int_equal(keel_open(f->copy, &o, &db), KEEL_OK);
		assert_int_equal(r.txid, f->txid - 1);
		assert_int_equal(r.status, KEEL_RECOVERY_TRUNCATED);
		assert_int_equal(r.offset, f->last_region);
		assert_state(db, false);
		keel_close(db);
	}
	free(garbage);
}

/* A torn tail with zeros after the whole commit is a clean end; one cut
 * inside the region leaves "a commit without a head", reported and cut. */
static void a_cut_inside_the_region_is_reported_as_truncated(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_recovery r;
	keel_options o = {.report = &r};
	write_copy(f, f->img, f->last_head + 8, f->len + 4096);
	assert_int_equal(keel_open(f->copy, &o, &db), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_TRUNCATED);
	assert_int_equal(r.offset, f->last_region);
	assert_true(strlen(r.reason) > 0);
	keel_close(db);
}

static bool value_was_written(const keel_view *v, int key)
{
	char want[64];
	for (int version = 1; version <= 4; version++) {
		int n = value_of(want, sizeof(want), key, version);
		if (v->len == (size_t)n && memcmp(v->data, want, (size_t)n) == 0)
			return true;
	}
	return false;
}

/* Flips one bit at many places.  Either open or check reports it, or the
 * bit was in bytes nothing reachable depends on -- and in every case a
 * read returns a value that was really written, or an error. */
static void single_bit_flips_are_reported_or_harmless(void **state)
{
	fixture *f = *state;
	unsigned char *img = malloc(f->len);
	unsigned flips = 0, reported = 0;
	for (size_t pos = 0; pos < f->len; pos += 11) {
		if (pos >= KEEL_SUPER_SIZE && pos < KEEL_DATA_START)
			pos = KEEL_DATA_START; /* zeros and hints: see the hint test */
		memcpy(img, f->img, f->len);
		img[pos] ^= (unsigned char)(1u << (pos % 8));
		write_copy(f, img, f->len, f->len + 4096);
		flips++;
		keel_db *db;
		keel_recovery r;
		keel_options o = {.flags = KEEL_RDONLY, .report = &r};
		int rc = keel_open(f->copy, &o, &db);
		if (rc) {
			assert_true(rc == KEEL_ECORRUPT || rc == KEEL_ENOTKEEL);
			reported++;
			continue;
		}
		keel_check_result cr;
		bool found = r.status != KEEL_RECOVERY_OK ||
		             keel_check(db, NULL, NULL, &cr) != KEEL_OK;
		reported += found;
		/* Damage in the newest commit must be seen. */
		if (pos >= f->last_region)
			assert_true(found);
		for (int i = 0; i < KEYS; i++) {
			char k[16];
			keel_view v;
			snprintf(k, sizeof(k), "key%02d", i);
			rc = keel_get(db, k, strlen(k), &v);
			if (rc == KEEL_OK) {
				assert_true(value_was_written(&v, i));
				keel_view_release(&v);
			} else {
				assert_true(found); /* an error only when damage was seen */
			}
		}
		keel_close(db);
	}
	print_message("%u bit flips, %u reported, the rest in unreachable bytes\n",
	              flips, reported);
	assert_true(reported > flips / 4);
	free(img);
}

static void damaged_hints_fall_back_to_a_scan(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_recovery r;
	keel_options o = {.report = &r};
	unsigned char *img = malloc(f->len);
	memcpy(img, f->img, f->len);
	memset(img + KEEL_HINT_OFF(0), 0x5a, KEEL_HINT_SIZE);
	memset(img + KEEL_HINT_OFF(1), 0xa5, KEEL_HINT_SIZE);
	write_copy(f, img, f->len, f->len + 4096);
	assert_int_equal(keel_open(f->copy, &o, &db), KEEL_OK);
	assert_int_equal(r.txid, f->txid);
	assert_state(db, true);
	keel_close(db);
	free(img);
}

/* Damage to a commit that had a valid head after it is not a torn tail:
 * open refuses, naming the offset; salvage opens at the head before it. */
static void damage_behind_a_durable_head_refuses_unless_salvaged(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_recovery r;
	keel_options o = {.report = &r};
	unsigned char *img = malloc(f->len);
	memcpy(img, f->img, f->len);
	/* The previous commit's region ends at last_region - 112 (its head);
	 * damage a byte inside that region. */
	uint64_t prev_head = f->last_region - KEEL_HEAD_SIZE;
	uint64_t victim = prev_head - 20;
	img[victim] ^= 0x40;
	/* Hints may point at the last commit; drop them so the walk starts
	 * before the damage. */
	memset(img + KEEL_HINT_OFF(0), 0, KEEL_HINT_SIZE);
	memset(img + KEEL_HINT_OFF(1), 0, KEEL_HINT_SIZE);
	write_copy(f, img, f->len, f->len + 4096);
	assert_int_equal(keel_open(f->copy, &o, &db), KEEL_ECORRUPT);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	assert_true(r.offset <= prev_head);
	assert_true(strstr(r.reason, "later head") != NULL);
	/* reported at the record that holds the flipped byte, not at the
	 * head whose region check failed */
	assert_true(r.offset <= victim);
	assert_int_equal(keel_ld32(img + r.offset), KEEL_REC_MAGIC);
	assert_true(r.offset + KEEL_REC_HDR + keel_ld32(img + r.offset + 8) > victim);
	assert_true(strstr(r.reason, "record fails its checksum") != NULL);
	o.flags = KEEL_SALVAGE | KEEL_RDONLY;
	assert_int_equal(keel_open(f->copy, &o, &db), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	assert_true(r.txid < f->txid - 1);
	keel_close(db);
	free(img);
}

/* A flipped bit in a record's length, in a commit with later durable heads,
 * sends the walk past those heads; it stops in the zeros beyond the last
 * commit, where no head follows.  Damage all the same: the search for a
 * later head starts at the failed commit's region, not where the walk
 * stopped, and the open refuses, never cuts durable commits as a torn
 * tail. */
static void a_damaged_record_length_behind_a_durable_head_refuses(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_recovery r;
	keel_options o = {.report = &r};
	keel_head last, prev;
	unsigned char *img = malloc(f->len + 4096);
	memcpy(img, f->img, f->len);
	memset(img + f->len, 0, 4096);
	assert_int_equal(keel_head_decode(img + f->last_head, &last), KEEL_OK);
	assert_int_equal(keel_head_decode(img + last.prev_head, &prev), KEEL_OK);
	/* the first record of the commit before the last */
	uint64_t rec = prev.region_start;
	assert_int_equal(keel_ld32(img + rec), KEEL_REC_MAGIC);
	uint32_t len = keel_ld32(img + rec + 8), bad_len = 0;
	for (unsigned bit = 0; bit < 32 && !bad_len; bit++) {
		uint32_t l = len ^ (1u << bit);
		uint64_t end = rec + keel_rec_size(l);
		if (end > f->len && end + KEEL_REC_HDR <= f->len + 4096)
			bad_len = l; /* lands in the zeros past the last head */
	}
	assert_true(bad_len != 0);
	keel_st32(img + rec + 8, bad_len);
	memset(img + KEEL_HINT_OFF(0), 0, KEEL_HINT_SIZE);
	memset(img + KEEL_HINT_OFF(1), 0, KEEL_HINT_SIZE);
	write_copy(f, img, f->len + 4096, f->len + 4096);
	int rc = keel_open(f->copy, &o, &db);
	if (rc == KEEL_OK) {
		fprintf(stderr, "opened at txid %llu of %llu: %s\n",
		        (unsigned long long)r.txid, (unsigned long long)f->txid,
		        r.reason);
		keel_close(db);
	}
	assert_int_equal(rc, KEEL_ECORRUPT);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	assert_true(strstr(r.reason, "later head") != NULL);
	o.flags = KEEL_SALVAGE | KEEL_RDONLY;
	assert_int_equal(keel_open(f->copy, &o, &db), KEEL_OK);
	assert_true(r.txid < f->txid - 1);
	keel_close(db);
	free(img);
}

/* Open starts from the newest hint and reads only the commits after it, so
 * the hinted commit's own region is the one older region open still
 * checks: a head's CRCs say nothing of the bytes before it.  Damage there
 * must keep open from settling on that head (it falls back to a scan and
 * finds the damage: a refusal when later heads follow, a torn tail cut
 * otherwise), never open as if nothing were wrong. */
static void damage_in_the_hinted_commit_is_found_at_open(void **state)
{
	fixture *f = *state;
	keel_db *db;
	keel_recovery r;
	keel_options o = {.report = &r, .flags = KEEL_RDONLY};
	keel_hint hint = {0}, h;
	keel_head head;
	unsigned char *img = malloc(f->len);
	memcpy(img, f->img, f->len);
	for (unsigned slot = 0; slot < 2; slot++)
		if (keel_hint_decode(img + KEEL_HINT_OFF(slot), &h) == KEEL_OK &&
		    h.txid > hint.txid)
			hint = h;
	assert_true(hint.txid > 1); /* 121 commits: a hint was written */
	assert_true(hint.head_off + KEEL_HEAD_SIZE <= f->len);
	assert_int_equal(keel_head_decode(img + hint.head_off, &head), KEEL_OK);
	assert_int_equal(head.txid, hint.txid);
	assert_true(head.region_start < hint.head_off);
	uint64_t victim = head.region_start + (hint.head_off - head.region_start) / 2;
	img[victim] ^= 0x10;
	write_copy(f, img, f->len, f->len + 4096);
	int rc = keel_open(f->copy, &o, &db);
	if (hint.txid < f->txid) { /* later heads follow the damage */
		assert_int_equal(rc, KEEL_ECORRUPT);
		assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
		assert_true(r.offset <= victim);
	} else { /* the hinted commit is the newest: a torn tail */
		assert_int_equal(rc, KEEL_OK);
		assert_int_equal(r.status, KEEL_RECOVERY_TRUNCATED);
		assert_true(r.txid < hint.txid);
		keel_close(db);
	}
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_file_ending_at_its_newest_head_keeps_it, setup, teardown),
		cmocka_unit_test_setup_teardown(last_commit_torn_at_every_byte_recovers_the_previous_head, setup, teardown),
		cmocka_unit_test_setup_teardown(a_cut_inside_the_region_is_reported_as_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(single_bit_flips_are_reported_or_harmless, setup, teardown),
		cmocka_unit_test_setup_teardown(damaged_hints_fall_back_to_a_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(damage_behind_a_durable_head_refuses_unless_salvaged, setup, teardown),
		cmocka_unit_test_setup_teardown(damage_in_the_hinted_commit_is_found_at_open, setup, teardown),
		cmocka_unit_test_setup_teardown(a_damaged_record_length_behind_a_durable_head_refuses, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
