/* test_recovery.c -- torn tails at every byte, bit flips everywhere, damaged
 * hints, damage behind a durable head, salvage; crafted tails and forged
 * heads at the edges of the walk and of the search for a later head; reads
 * that fail. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "crc32c.h"
#include "format.h"
#include "keel.h"
#include "recover.h"
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

/* ---- crafted tails, forged heads, failing reads -----------------------------
 * The store's bytes with something appended or rewritten, every CRC valid
 * where the case says so: the boundaries of the walk, of the search for a
 * later head and of the damage report. */

/* The store's bytes [0, len), then zeros up to TOTAL. */
static unsigned char *img_dup(const fixture *f, size_t total)
{
	unsigned char *img = calloc(1, total > f->len ? total : f->len);
	assert_non_null(img);
	memcpy(img, f->img, f->len);
	return img;
}

/* Both hints zeroed: the walk starts at the first head. */
static void drop_hints(unsigned char *img)
{
	memset(img + KEEL_HINT_OFF(0), 0, KEEL_HINT_SIZE);
	memset(img + KEEL_HINT_OFF(1), 0, KEEL_HINT_SIZE);
}

static keel_head head_at(const unsigned char *img, uint64_t off)
{
	keel_head h;
	assert_int_equal(keel_head_decode(img + off, &h), KEEL_OK);
	h.off = off;
	return h;
}

/* The head of txid TXID, found back along prev_head from the newest. */
static keel_head head_of_txid(const fixture *f, const unsigned char *img,
                              uint64_t txid)
{
	keel_head h = head_at(img, f->last_head);
	while (h.txid > txid)
		h = head_at(img, h.prev_head);
	assert_int_equal(h.txid, txid);
	return h;
}

/* A head that continues AFTER with an empty region at AT (its right chain
 * CRC is AFTER's). */
static void put_head_after(unsigned char *img, uint64_t at,
                           const keel_head *after, uint64_t txid,
                           uint32_t chain_crc)
{
	keel_head h = {.txid = txid, .prev_head = after->off,
	               .region_start = after->off + KEEL_HEAD_SIZE,
	               .root_off = after->root_off, .root_crc = after->root_crc,
	               .chain_crc = chain_crc, .file_id = after->file_id};
	keel_head_encode(img + at, &h);
}

/* Opens the copy read-only with FLAGS added, closes it; the open's result. */
static int open_copy(fixture *f, unsigned flags, keel_recovery *r)
{
	keel_db *db;
	keel_options o = {.flags = KEEL_RDONLY | flags, .report = r};
	int rc = keel_open(f->copy, &o, &db);
	if (rc == KEEL_OK)
		keel_close(db);
	return rc;
}

/* A copy trimmed to its newest head, damage in the commit before it: the
 * head that proves the damage durable is the file's last 112 bytes, and
 * the search for it reaches them. */
static void a_later_head_ending_the_file_proves_damage(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	unsigned char *img = img_dup(f, f->len);
	keel_head last = head_at(img, f->last_head);
	img[last.prev_head - 20] ^= 0x40;
	drop_hints(img);
	write_copy(f, img, f->len, f->len);
	assert_int_equal(open_copy(f, 0, &r), KEEL_ECORRUPT);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	assert_non_null(strstr(r.reason, "later head"));
	free(img);
}

/* The search for a later head stops at a zero 4 KiB block (the written
 * data's end); a block that is zero but for one byte is not one.  Damage
 * in the newest commit, then such a block, then a head that names the
 * damaged commit's head: damage behind a durable head, not a torn tail. */
static void a_block_with_one_nonzero_byte_does_not_end_the_search(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	keel_head last = head_at(f->img, f->last_head);
	uint64_t z = (f->len + KEEL_BLOCK - 1) / KEEL_BLOCK * KEEL_BLOCK;
	uint64_t later = z + KEEL_BLOCK + 64;
	size_t total = later + KEEL_HEAD_SIZE;
	unsigned char *img = img_dup(f, total);
	img[f->last_region + KEEL_REC_HDR + 2] ^= 0x01;
	img[z + 8] = 0x01;
	put_head_after(img, later, &last, last.txid + 1, last.chain_crc);
	drop_hints(img);
	write_copy(f, img, total, total);
	assert_int_equal(open_copy(f, 0, &r), KEEL_ECORRUPT);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	/* the control: with the block all zeros the search ends there */
	img[z + 8] = 0;
	write_copy(f, img, total, total);
	assert_int_equal(open_copy(f, 0, &r), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_TRUNCATED);
	assert_int_equal(r.txid, f->txid - 1);
	free(img);
}

/* A head right after the newest (an empty region) whose chain CRC is
 * wrong, and a later head that names it: the later head proves the failed
 * commit durable, though the head it names sits at the very start of the
 * span the search for it begins with. */
static void a_later_head_naming_the_failed_head_itself_proves_damage(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	size_t total = f->len + 2 * KEEL_HEAD_SIZE + KEEL_BLOCK;
	unsigned char *img = img_dup(f, total);
	keel_head last = head_at(img, f->last_head);
	put_head_after(img, f->len, &last, last.txid + 1, last.chain_crc ^ 1);
	keel_head failed = head_at(img, f->len);
	put_head_after(img, f->len + KEEL_HEAD_SIZE, &failed, last.txid + 2,
	               failed.chain_crc);
	drop_hints(img);
	write_copy(f, img, total, total);
	assert_int_equal(open_copy(f, 0, &r), KEEL_ECORRUPT);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	assert_int_equal(r.offset, f->len);
	/* the control: without the later head, a torn tail */
	memset(img + f->len + KEEL_HEAD_SIZE, 0, KEEL_HEAD_SIZE);
	write_copy(f, img, total, total);
	assert_int_equal(open_copy(f, 0, &r), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_TRUNCATED);
	assert_int_equal(r.txid, f->txid);
	free(img);
}

/* A head whose own CRC is valid but whose chain CRC does not match its
 * region, where every record of the region passes its own CRC, and a later
 * head after it: the damage is reported at that head, not at a record. */
static void a_wrong_chain_crc_over_sound_records_is_reported_at_the_head(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	size_t total = f->len + KEEL_HEAD_SIZE + KEEL_BLOCK;
	unsigned char *img = img_dup(f, total);
	keel_head last = head_at(img, f->last_head);
	last.chain_crc ^= 1;
	keel_head_encode(img + last.off, &last);
	put_head_after(img, f->len, &last, last.txid + 1, last.chain_crc);
	drop_hints(img);
	write_copy(f, img, total, total);
	assert_int_equal(open_copy(f, 0, &r), KEEL_ECORRUPT);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	assert_int_equal(r.offset, f->last_head);
	assert_non_null(strstr(r.reason, "region checksum mismatch"));
	free(img);
}

/* Bytes after the newest head that are not zeros are a torn tail, even
 * when only the ninth is set. */
static void a_stray_byte_after_the_newest_head_is_a_torn_tail(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	size_t total = f->len + KEEL_BLOCK;
	unsigned char *img = img_dup(f, total);
	img[f->len + 8] = 0x01;
	write_copy(f, img, total, total);
	assert_int_equal(open_copy(f, 0, &r), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_TRUNCATED);
	assert_int_equal(r.txid, f->txid);
	assert_int_equal(r.offset, f->len);
	free(img);
}

/* A record whose header has an unknown flag ends the walk, even when a
 * head after it continues the chain over its bytes. */
static void a_record_with_an_unknown_flag_ends_the_walk(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	uint8_t rec[KEEL_REC_HDR + 8];
	size_t total = f->len + sizeof(rec) + KEEL_HEAD_SIZE + KEEL_BLOCK;
	unsigned char *img = img_dup(f, total);
	keel_head last = head_at(img, f->last_head);
	keel_rec_encode(rec, KEEL_REC_VALUE, (const uint8_t *)"12345678", 8);
	memcpy(rec + KEEL_REC_HDR, "12345678", 8);
	rec[5] = 0x01; /* flags: every bit must be 0 */
	memcpy(img + f->len, rec, sizeof(rec));
	keel_head h = {.txid = last.txid + 1, .prev_head = last.off,
	               .region_start = f->len, .root_off = last.root_off,
	               .root_crc = last.root_crc,
	               .chain_crc = keel_crc32c(last.chain_crc, rec, sizeof(rec)),
	               .file_id = last.file_id};
	keel_head_encode(img + f->len + sizeof(rec), &h);
	write_copy(f, img, total, total);
	assert_int_equal(open_copy(f, 0, &r), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_TRUNCATED);
	assert_int_equal(r.txid, f->txid);
	assert_non_null(strstr(r.reason, "bad record header"));
	/* the control: with the flag clear the head is taken */
	rec[5] = 0;
	memcpy(img + f->len, rec, sizeof(rec));
	h.chain_crc = keel_crc32c(last.chain_crc, rec, sizeof(rec));
	keel_head_encode(img + f->len + sizeof(rec), &h);
	write_copy(f, img, total, total);
	assert_int_equal(open_copy(f, 0, &r), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_OK);
	assert_int_equal(r.txid, f->txid + 1);
	free(img);
}

/* A hint at txid 1 (the first commit) is a hint like any other: open
 * starts from it and reads the first head only as that head's predecessor,
 * never against the superblock, so a first head the first-head start would
 * refuse (its region_start rewritten, its CRC valid) does not stop it. */
static void a_hint_at_the_first_commit_is_used(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	unsigned char *img = img_dup(f, f->len);
	keel_head first = head_at(img, KEEL_DATA_START), one = head_of_txid(f, img, 1);
	first.region_start += 8;
	keel_head_encode(img + KEEL_DATA_START, &first);
	drop_hints(img);
	keel_hint hint = {.txid = 1, .head_off = one.off};
	keel_hint_encode(img + KEEL_HINT_OFF(0), &hint);
	write_copy(f, img, f->len, f->len + KEEL_BLOCK);
	assert_int_equal(open_copy(f, 0, &r), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_OK);
	assert_int_equal(r.txid, f->txid);
	/* the control: without the hint the first head is refused */
	drop_hints(img);
	write_copy(f, img, f->len, f->len + KEEL_BLOCK);
	assert_int_equal(open_copy(f, 0, &r), KEEL_ECORRUPT);
	free(img);
}

/* Damage in the first pending commit's DELTA record, where the head before
 * the pending span is damaged too and no pending head before the damage
 * checks out: salvage has nothing to settle on and refuses. */
static void salvage_refuses_when_no_head_before_the_damage_checks_out(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	unsigned char *img = img_dup(f, f->len);
	keel_head last = head_at(img, f->last_head);
	assert_true(last.pending_heads > 2);
	uint64_t span = last.off - last.pending_bytes;
	keel_head h = last;
	while (h.prev_head != span - KEEL_HEAD_SIZE)
		h = head_at(img, h.prev_head);
	/* the walk from the newest hint reads neither */
	keel_hint hint = {0}, hs;
	for (unsigned slot = 0; slot < 2; slot++)
		if (keel_hint_decode(img + KEEL_HINT_OFF(slot), &hs) == KEEL_OK &&
		    hs.txid > hint.txid)
			hint = hs;
	assert_true(hint.txid > h.txid + 1);
	assert_true(h.delta_off != 0);
	img[h.delta_off + KEEL_REC_HDR + 1] ^= 0x01;
	img[span - KEEL_HEAD_SIZE + KEEL_REC_HDR + 1] ^= 0x01;
	write_copy(f, img, f->len, f->len + KEEL_BLOCK);
	assert_int_equal(open_copy(f, KEEL_SALVAGE, &r), KEEL_ECORRUPT);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	assert_int_equal(r.offset, h.delta_off);
	/* the control: with the head before the span intact, salvage opens
	 * there */
	img[span - KEEL_HEAD_SIZE + KEEL_REC_HDR + 1] ^= 0x01;
	write_copy(f, img, f->len, f->len + KEEL_BLOCK);
	assert_int_equal(open_copy(f, KEEL_SALVAGE, &r), KEEL_OK);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	assert_int_equal(r.head_offset, span - KEEL_HEAD_SIZE);
	free(img);
}

/* An I/O backend over keel_io_posix that fails chosen calls with -EIO, as
 * a failing disk (or the libfiu points of docs/faults.md) would. */
typedef struct faulty {
	uint64_t off;    /* with LEN: fail a read of exactly LEN bytes at OFF  */
	size_t len;      /* 0: no such read fails                              */
	size_t over;     /* fail every read longer than this; 0: none          */
	bool fstat;      /* fail fstat                                         */
	unsigned failed; /* calls failed so far                                */
} faulty;

static ssize_t faulty_pread(void *ctx, int fd, void *buf, size_t len,
                            uint64_t off)
{
	faulty *x = ctx;
	if ((x->len && len == x->len && off == x->off) || (x->over && len > x->over)) {
		x->failed++;
		return -EIO;
	}
	return keel_io_posix()->pread(keel_io_posix()->ctx, fd, buf, len, off);
}

static int faulty_fstat(void *ctx, int fd, uint64_t *size, int *is_reg)
{
	faulty *x = ctx;
	if (x->fstat) {
		x->failed++;
		return -EIO;
	}
	return keel_io_posix()->fstat(keel_io_posix()->ctx, fd, size, is_reg);
}

/* recovery_find on PATH through a backend failing as X says. */
static int find_with_faults(const char *path, faulty *x, recovery_result *out)
{
	keel_io io = *keel_io_posix();
	io.ctx = x;
	io.pread = faulty_pread;
	io.fstat = faulty_fstat;
	io.pread_device = NULL;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	int rc = recovery_find(&io, fd, 0, UINT64_MAX, out);
	close(fd);
	free(out->deltas);
	out->deltas = NULL;
	return rc;
}

/* Damage behind a durable head, and the read of the head that proves it
 * fails: an I/O error, never a torn tail to cut nor a verdict of damage. */
static void a_failed_read_in_the_search_for_a_later_head_is_an_error(void **state)
{
	fixture *f = *state;
	recovery_result res;
	unsigned char *img = img_dup(f, f->len);
	keel_head last = head_at(img, f->last_head);
	img[last.prev_head - 20] ^= 0x40;
	drop_hints(img);
	write_copy(f, img, f->len, f->len + KEEL_BLOCK);
	faulty x = {.off = last.prev_head, .len = KEEL_HEAD_SIZE};
	assert_int_equal(find_with_faults(f->copy, &x, &res), KEEL_EIO);
	assert_true(x.failed > 0);
	x = (faulty){0}; /* the control */
	assert_int_equal(find_with_faults(f->copy, &x, &res), KEEL_ECORRUPT);
	assert_int_equal(res.status, KEEL_RECOVERY_CORRUPT);
	free(img);
}

/* A failing fstat, or a failing read in the walk: KEEL_EIO, never a clean
 * end at the first head. */
static void failed_reads_during_the_walk_are_errors(void **state)
{
	fixture *f = *state;
	recovery_result res;
	unsigned char *img = img_dup(f, f->len);
	drop_hints(img);
	write_copy(f, img, f->len, f->len + KEEL_BLOCK);
	faulty x = {.over = KEEL_HEAD_SIZE};
	assert_int_equal(find_with_faults(f->copy, &x, &res), KEEL_EIO);
	assert_true(x.failed > 0);
	x = (faulty){.fstat = true};
	assert_int_equal(find_with_faults(f->copy, &x, &res), KEEL_EIO);
	assert_int_equal(x.failed, 1);
	x = (faulty){0}; /* the control */
	assert_int_equal(find_with_faults(f->copy, &x, &res), KEEL_OK);
	assert_int_equal(res.status, KEEL_RECOVERY_OK);
	assert_int_equal(res.head.txid, f->txid);
	free(img);
}

/* A store at PATH of N commits, each a checkpoint (no pending span, so
 * recovery's later checks see only the tree); its bytes, its stats in *ST. */
static unsigned char *make_checkpoints(const char *path, int n, keel_stats *st)
{
	keel_db *db;
	keel_options o = {.checkpoint_bytes = 1};
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	for (int i = 0; i < n; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i % 4);
		assert_int_equal(keel_put(db, k, strlen(k), &i, sizeof(i), KEEL_REV_ANY,
		                          NULL), KEEL_OK);
	}
	keel_stat(db, st);
	assert_int_equal(keel_close(db), KEEL_OK);
	size_t len = 0;
	unsigned char *img = tu_read_file(path, &len);
	assert_non_null(img);
	assert_true(len >= st->end_offset);
	return img;
}

/* Under KEEL_UNSAFE_TRUST_HEAD (the positive control) a walk stopped by a
 * bad record header takes every later head that claims to follow, the one
 * ending the file included.  A store of checkpoints (no pending span, so
 * no later check sees the damage). */
static void the_trust_head_control_takes_a_head_ending_the_file(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	keel_stats st;
	unsigned char *img = make_checkpoints(f->copy, 3, &st);
	keel_head last = head_at(img, st.end_offset - KEEL_HEAD_SIZE);
	keel_head prev = head_at(img, last.prev_head);
	assert_int_equal(last.pending_heads, 0);
	assert_true(prev.region_start < prev.off);
	img[prev.region_start] ^= 0x01; /* the magic of its first record */
	write_copy(f, img, st.end_offset, st.end_offset);
	assert_int_equal(open_copy(f, KEEL_UNSAFE_TRUST_HEAD, &r), KEEL_OK);
	assert_int_equal(r.txid, st.txid);
	assert_int_equal(r.status, KEEL_RECOVERY_OK);
	/* the control: without it the walk stops there, and the heads after
	 * prove the damage durable */
	assert_int_equal(open_copy(f, 0, &r), KEEL_ECORRUPT);
	assert_int_equal(r.status, KEEL_RECOVERY_CORRUPT);
	free(img);
}

/* Of two valid hints open starts from the newer, whichever slot holds it,
 * and reads nothing before that hint's own commit: damage between the two
 * hinted heads is not looked at (recover.h, invariant 2). */
static void the_newer_of_two_valid_hints_is_the_start(void **state)
{
	fixture *f = *state;
	keel_recovery r;
	keel_stats st;
	unsigned char *img = make_checkpoints(f->copy, 20, &st);
	keel_head h = head_at(img, st.end_offset - KEEL_HEAD_SIZE), newer = h,
	          damaged = h;
	assert_int_equal(h.txid, 20);
	while (h.txid > 5) {
		h = head_at(img, h.prev_head);
		if (h.txid == 15)
			newer = h;
		if (h.txid == 10)
			damaged = h;
	}
	keel_head older = h;
	assert_true(damaged.region_start + KEEL_REC_HDR < damaged.off);
	img[damaged.region_start + KEEL_REC_HDR + 2] ^= 0x01;
	keel_hint a = {.txid = older.txid, .head_off = older.off},
	          b = {.txid = newer.txid, .head_off = newer.off};
	for (int order = 0; order < 2; order++) {
		keel_hint_encode(img + KEEL_HINT_OFF(0), order ? &b : &a);
		keel_hint_encode(img + KEEL_HINT_OFF(1), order ? &a : &b);
		write_copy(f, img, st.end_offset, st.end_offset + KEEL_BLOCK);
		assert_int_equal(open_copy(f, 0, &r), KEEL_OK);
		assert_int_equal(r.status, KEEL_RECOVERY_OK);
		assert_int_equal(r.txid, 20);
	}
	/* the control: from the older hint alone the walk meets the damage */
	keel_hint_encode(img + KEEL_HINT_OFF(0), &a);
	memset(img + KEEL_HINT_OFF(1), 0, KEEL_HINT_SIZE);
	write_copy(f, img, st.end_offset, st.end_offset + KEEL_BLOCK);
	assert_int_equal(open_copy(f, 0, &r), KEEL_ECORRUPT);
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
		cmocka_unit_test_setup_teardown(a_later_head_ending_the_file_proves_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(a_block_with_one_nonzero_byte_does_not_end_the_search, setup, teardown),
		cmocka_unit_test_setup_teardown(a_later_head_naming_the_failed_head_itself_proves_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(a_wrong_chain_crc_over_sound_records_is_reported_at_the_head, setup, teardown),
		cmocka_unit_test_setup_teardown(a_stray_byte_after_the_newest_head_is_a_torn_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(a_record_with_an_unknown_flag_ends_the_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(a_hint_at_the_first_commit_is_used, setup, teardown),
		cmocka_unit_test_setup_teardown(salvage_refuses_when_no_head_before_the_damage_checks_out, setup, teardown),
		cmocka_unit_test_setup_teardown(a_failed_read_in_the_search_for_a_later_head_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(failed_reads_during_the_walk_are_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(the_trust_head_control_takes_a_head_ending_the_file, setup, teardown),
		cmocka_unit_test_setup_teardown(the_newer_of_two_valid_hints_is_the_start, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
