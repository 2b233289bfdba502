/* test_format.c -- encoders and decoders of the on-disk structures, and
 * the shapes of the tree a writer leaves in them. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <unistd.h>

#include "crc32c.h"
#include "format.h"
#include "keel.h"
#include "testcraft.h"
#include "testutil.h"

static void superblock_round_trips_and_rejects_damage(void **state)
{
	uint8_t buf[KEEL_SUPER_SIZE];
	keel_super s = {.version = KEEL_FORMAT_VERSION, .block_size = KEEL_BLOCK, .file_id = 42,
	                .data_start = KEEL_DATA_START, .base_txid = 5,
	                .first_head = KEEL_DATA_START + 64}, d;
	(void)state;
	keel_super_encode(buf, &s);
	assert_memory_equal(buf, "KEELSTOR", 8);
	assert_int_equal(keel_super_decode(buf, &d), KEEL_OK);
	assert_int_equal(d.version, KEEL_FORMAT_VERSION);
	assert_int_equal(d.block_size, KEEL_BLOCK);
	assert_int_equal(d.data_start, KEEL_DATA_START);
	assert_int_equal(d.file_id, 42);
	assert_int_equal(d.base_txid, 5);
	assert_int_equal(d.first_head, KEEL_DATA_START + 64);
	buf[30] ^= 1;
	assert_int_equal(keel_super_decode(buf, &d), KEEL_ECORRUPT);
	buf[30] ^= 1;
	buf[0] = 'X';
	assert_int_equal(keel_super_decode(buf, &d), KEEL_ENOTKEEL);
	s.version = KEEL_FORMAT_VERSION + 1; /* newer */
	keel_super_encode(buf, &s);
	assert_int_equal(keel_super_decode(buf, &d), KEEL_EVERSION);
	s.version = 1; /* the pre-release layout */
	keel_super_encode(buf, &s);
	assert_int_equal(keel_super_decode(buf, &d), KEEL_EVERSION);
	s.version = 0;
	keel_super_encode(buf, &s);
	assert_int_equal(keel_super_decode(buf, &d), KEEL_ECORRUPT);
}

static void head_round_trips_and_every_bit_flip_is_caught(void **state)
{
	uint8_t buf[KEEL_HEAD_SIZE];
	keel_head h = {.txid = 7, .prev_head = 12288, .region_start = 12400,
	               .root_off = 13000, .root_crc = 0xdeadbeef, .chain_crc = 5,
	               .keys = 3, .live_bytes = 999, .time_ns = 1, .file_id = 9}, d;
	(void)state;
	keel_head_encode(buf, &h);
	assert_int_equal(keel_head_decode(buf, &d), KEEL_OK);
	/* every stored field comes back (the informative ones too: a field
	 * the encoder forgets is a format that no longer matches format.h) */
	assert_int_equal(d.txid, 7);
	assert_int_equal(d.prev_head, 12288);
	assert_int_equal(d.region_start, 12400);
	assert_int_equal(d.root_off, 13000);
	assert_int_equal(d.root_crc, 0xdeadbeef);
	assert_int_equal(d.chain_crc, 5);
	assert_int_equal(d.keys, 3);
	assert_int_equal(d.live_bytes, 999);
	assert_int_equal(d.time_ns, 1);
	assert_int_equal(d.file_id, 9);
	for (unsigned bit = 0; bit < KEEL_HEAD_SIZE * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_not_equal(keel_head_decode(buf, &d), KEEL_OK);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

static void hint_round_trips(void **state)
{
	uint8_t buf[KEEL_HINT_SIZE];
	keel_hint h = {.txid = 99, .head_off = 123456}, d;
	(void)state;
	keel_hint_encode(buf, &h);
	assert_int_equal(keel_hint_decode(buf, &d), KEEL_OK);
	assert_int_equal(d.head_off, 123456);
	buf[20] ^= 4;
	assert_int_equal(keel_hint_decode(buf, &d), KEEL_ECORRUPT);
}

static void record_header_checks_magic_and_type(void **state)
{
	uint8_t rec[KEEL_REC_HDR + 5];
	keel_rec_hdr h;
	(void)state;
	memcpy(rec + KEEL_REC_HDR, "hello", 5);
	keel_rec_encode(rec, KEEL_REC_VALUE, rec + KEEL_REC_HDR, 5);
	assert_int_equal(keel_rec_decode(rec, &h), KEEL_OK);
	assert_int_equal(h.len, 5);
	assert_int_equal(keel_rec_crc(rec, 5), h.crc);
	rec[KEEL_REC_HDR + 2] ^= 1;
	assert_int_not_equal(keel_rec_crc(rec, 5), h.crc);
	rec[4] = 9;
	assert_int_equal(keel_rec_decode(rec, &h), KEEL_ECORRUPT);
	assert_int_equal(keel_rec_size(5), 24);
	assert_int_equal(keel_rec_size(0), 16);
}


static int sign(int x) { return (x > 0) - (x < 0); }

/* The word-at-a-time compare must order exactly as memcmp-then-length. */
static void key_order_matches_bytewise_order_at_every_length(void **state)
{
	uint8_t a[40], b[40];
	(void)state;
	srand(3);
	for (int round = 0; round < 20000; round++) {
		size_t alen = (size_t)rand() % 40, blen = (size_t)rand() % 40;
		for (size_t i = 0; i < 40; i++)
			a[i] = b[i] = (uint8_t)(rand() % 3 ? 'k' : 0xff);
		if (rand() % 2 && alen)
			a[(size_t)rand() % alen] ^= (uint8_t)(1u << (rand() % 8));
		size_t n = alen < blen ? alen : blen;
		int want = memcmp(a, b, n);
		if (want == 0)
			want = alen < blen ? -1 : alen > blen;
		assert_int_equal(sign(keel_key_cmp(a, alen, b, blen)), sign(want));
	}
	assert_true(keel_key_cmp((const uint8_t *)"ab", 2, (const uint8_t *)"abc", 3) < 0);
	assert_true(keel_key_cmp((const uint8_t *)"\x80", 1, (const uint8_t *)"\x7f", 1) > 0);
}

/* The pending span's bounds, at their edges: a delta record can start
 * anywhere in this head's region but never at the head itself. */
static void pending_span_bounds_hold_at_their_edges(void **state)
{
	(void)state;
	uint64_t off = KEEL_DATA_START + 8 * 4096;
	keel_head h = {.region_start = off - 4096, .off = off,
	               .delta_off = off - 8, .delta_crc = 1,
	               .pending_heads = 1, .pending_bytes = 4096};
	assert_true(keel_head_pending_sane(&h));
	h.delta_off = off; /* the head's own offset */
	assert_false(keel_head_pending_sane(&h));
	h.delta_off = h.region_start; /* the region's first byte */
	assert_true(keel_head_pending_sane(&h));
	h.delta_off = h.region_start - 8;
	assert_false(keel_head_pending_sane(&h));
	h.delta_off = off - 8;
	h.pending_bytes = off - KEEL_DATA_START; /* the whole data area */
	assert_true(keel_head_pending_sane(&h));
	h.pending_bytes++;
	assert_false(keel_head_pending_sane(&h));
}

/* A delta entry's value reference, at the edges of the data area: the
 * first data byte holds a record, and a reference below it does not. */
static void delta_value_references_hold_at_the_data_start(void **state)
{
	(void)state;
	uint8_t rec[KEEL_DELTA_HDR + 64] = {0};
	keel_leaf_ent e = {.key = (const uint8_t *)"k", .klen = 1, .vlen = 100,
	                   .vcrc = 7, .voff = KEEL_DATA_START, .rev = 3};
	uint32_t n = keel_delta_ent_encode(rec + KEEL_DELTA_HDR, &e, false);
	keel_st32(rec, 1);
	uint64_t below = KEEL_DATA_START + 4096;
	assert_true(keel_delta_valid(rec, KEEL_DELTA_HDR + n, 3, below));
	e.voff = KEEL_DATA_START - 8;
	keel_delta_ent_encode(rec + KEEL_DELTA_HDR, &e, false);
	assert_false(keel_delta_valid(rec, KEEL_DELTA_HDR + n, 3, below));
	e.voff = below - KEEL_REC_HDR; /* a header's room below the delta */
	keel_delta_ent_encode(rec + KEEL_DELTA_HDR, &e, false);
	assert_true(keel_delta_valid(rec, KEEL_DELTA_HDR + n, 3, below));
	e.voff = below - KEEL_REC_HDR + 8;
	keel_delta_ent_encode(rec + KEEL_DELTA_HDR, &e, false);
	assert_false(keel_delta_valid(rec, KEEL_DELTA_HDR + n, 3, below));
}

/* A delta lists its keys in strictly increasing order: a key twice is a
 * damaged (or forged) record, not two changes. */
static void a_delta_with_a_key_twice_is_invalid(void **state)
{
	(void)state;
	uint8_t rec[KEEL_DELTA_HDR + 128] = {0};
	keel_leaf_ent a = {.key = (const uint8_t *)"a", .klen = 1, .rev = 3},
	              b = {.key = (const uint8_t *)"b", .klen = 1, .rev = 3};
	uint32_t n1 = keel_delta_ent_encode(rec + KEEL_DELTA_HDR, &a, true);
	uint32_t n2 = keel_delta_ent_encode(rec + KEEL_DELTA_HDR + n1, &b, true);
	keel_st32(rec, 2);
	uint64_t below = KEEL_DATA_START + 4096;
	assert_true(keel_delta_valid(rec, KEEL_DELTA_HDR + n1 + n2, 3, below));
	keel_delta_ent_encode(rec + KEEL_DELTA_HDR + n1, &a, true);
	assert_false(keel_delta_valid(rec, KEEL_DELTA_HDR + n1 + n2, 3, below));
	keel_delta_ent_encode(rec + KEEL_DELTA_HDR, &b, true); /* b, then a */
	assert_false(keel_delta_valid(rec, KEEL_DELTA_HDR + n1 + n2, 3, below));
}

/* ---- trees written by hand ------------------------------------------------
 * Forged commits (testcraft.h): every CRC is right; only the tree's shape is
 * not what a writer makes. */

/* A fresh store in a new directory holding "k" in its tree; *DIR and the
 * returned path are the caller's to free (tu_rmdir, free). */
static char *forge_store(char **dir)
{
	keel_options o = {.checkpoint_bytes = 1}; /* the key in the tree */
	keel_db *db;
	*dir = tu_mkdtemp();
	char *path = tu_path(*dir, "db");
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(keel_put(db, "k", 1, "v", 1, KEEL_REV_ANY, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
	return path;
}

/* A node of LEVEL over the N one-letter keys of KEYS: a leaf's values are
 * "v" inline; a branch's entry I points at (COFF[I], CCRC[I]).  Returns its
 * payload length. */
static uint32_t forge_node(uint8_t *p, int level, const char *keys,
                           const uint64_t *coff, const uint32_t *ccrc)
{
	uint16_t n = (uint16_t)strlen(keys);
	const uint8_t *k = (const uint8_t *)keys;
	uint32_t eo = keel_node_begin(p, (uint8_t)level, n, k, 1, k + n - 1, 1);
	for (unsigned i = 0; i < n; i++) {
		keel_node_set_slot(p, i, eo, k + i, 1);
		if (level) {
			eo += keel_branch_ent_encode(p + eo, k + i, 1, ccrc[i], coff[i]);
		} else {
			keel_leaf_ent le = {.key = k + i, .klen = 1, .rev = 1,
			                    .inl = (const uint8_t *)"v", .vlen = 1};
			eo += keel_leaf_ent_encode(p + eo, &le);
		}
	}
	return eo;
}

/* A root branch over the leaf "ab" and the node the caller gives for "m":
 * deleting "b" leaves the first leaf under a quarter full, and a checkpoint
 * merges it with its sibling, the only read of "m"'s node there is. */
static void forge_sibling(const char *path, uint64_t moff, uint32_t mcrc)
{
	static craft f;
	uint8_t p[512];
	uint64_t coff[2];
	uint32_t ccrc[2], crc;

	craft_begin(&f, path);
	coff[0] = craft_record(&f, KEEL_REC_LEAF, p, forge_node(p, 0, "ab", NULL, NULL),
	                       &ccrc[0]);
	coff[1] = moff;
	ccrc[1] = mcrc;
	uint64_t root = craft_record(&f, KEEL_REC_BRANCH, p,
	                             forge_node(p, 1, "am", coff, ccrc), &crc);
	craft_commit(&f, path, root, crc, 4);
}

/* Deleting "b" from a store forged by forge_sibling: the merge must refuse
 * the sibling, and nothing changes. */
static void delete_meets_a_bad_sibling(const char *path)
{
	keel_options o = {.checkpoint_bytes = 1};
	keel_view v;
	keel_db *db;
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "b", 1, &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_del(db, "b", 1, KEEL_REV_ANY, NULL), KEEL_ECORRUPT);
	assert_int_equal(keel_close(db), KEEL_OK);
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "b", 1, &v), KEEL_OK);
	keel_view_release(&v);
	assert_int_equal(keel_close(db), KEEL_OK);
}

/* A write copies the siblings it merges with; the child-before-parent and
 * level rules hold for them as for the nodes on a key's path (tree.c). */
static void a_merge_refuses_a_sibling_of_the_wrong_level(void **state)
{
	(void)state;
	static craft f;
	uint8_t p[512];
	uint64_t leaf;
	uint32_t lcrc, crc;
	char *dir, *path = forge_store(&dir);

	/* "m": a branch of level 1 (over a leaf "mn") where a leaf belongs */
	craft_begin(&f, path);
	leaf = craft_record(&f, KEEL_REC_LEAF, p, forge_node(p, 0, "mn", NULL, NULL),
	                    &lcrc);
	uint64_t m = craft_record(&f, KEEL_REC_BRANCH, p,
	                          forge_node(p, 1, "m", &leaf, &lcrc), &crc);
	craft_commit(&f, path, 0, 0, 0);
	forge_sibling(path, m, crc);
	delete_meets_a_bad_sibling(path);
	tu_rmdir(dir);
	free(path);
}

static void a_merge_refuses_a_sibling_past_the_file(void **state)
{
	(void)state;
	char *dir, *path = forge_store(&dir);

	forge_sibling(path, (uint64_t)1 << 40, 0);
	delete_meets_a_bad_sibling(path);
	tu_rmdir(dir);
	free(path);
}

/* The type of the newest head's root record. */
static uint8_t root_type(const char *path)
{
	keel_head h;
	uint8_t hdr[KEEL_REC_HDR];
	craft_newest_head(path, &h);
	if (!h.root_off)
		return 0;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, hdr, sizeof(hdr), (off_t)h.root_off),
	                 (ssize_t)sizeof(hdr));
	close(fd);
	return hdr[4];
}

/* A leaf splits as soon as it holds four entries and more than
 * KEEL_LEAF_MAX bytes (format.h): three 400-byte keys stay one leaf, the
 * fourth makes two under a branch. */
static void a_leaf_of_four_entries_over_its_bound_splits(void **state)
{
	(void)state;
	keel_options o = {.checkpoint_bytes = 1};
	char key[400], *dir = tu_mkdtemp(), *path = tu_path(dir, "db");
	keel_db *db;

	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	memset(key, 'k', sizeof(key));
	for (int i = 0; i < 4; i++) {
		key[sizeof(key) - 1] = (char)('0' + i);
		assert_int_equal(keel_put(db, key, sizeof(key), "v", 1, KEEL_REV_ANY,
		                          NULL), KEEL_OK);
		assert_int_equal(keel_close(db), KEEL_OK);
		assert_int_equal(root_type(path), i < 3 ? KEEL_REC_LEAF : KEEL_REC_BRANCH);
		assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	}
	assert_int_equal(keel_check(db, NULL, NULL, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
	tu_rmdir(dir);
	free(path);
}

/* A leaf of two 1000-byte keys is never merged (it is far over a quarter
 * full); deleting both empties it, and it leaves its parent, which then has
 * one child and gives way to it. */
static void deleting_a_leaf_of_big_keys_removes_it(void **state)
{
	(void)state;
	keel_options o = {.checkpoint_bytes = 1};
	char key[4][1000], *dir = tu_mkdtemp(), *path = tu_path(dir, "db");
	keel_batch *b;
	keel_db *db;
	keel_check_result cr;

	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(keel_batch_new(&b), KEEL_OK);
	for (int i = 0; i < 4; i++) {
		memset(key[i], 'a' + i, sizeof(key[i]));
		assert_int_equal(keel_batch_put(b, key[i], sizeof(key[i]), "v", 1,
		                                KEEL_REV_ANY), KEEL_OK);
	}
	assert_int_equal(keel_commit(db, b, NULL, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
	assert_int_equal(root_type(path), KEEL_REC_BRANCH); /* leaves ab, cd */
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	keel_batch_clear(b);
	for (int i = 0; i < 2; i++)
		assert_int_equal(keel_batch_del(b, key[i], sizeof(key[i]),
		                                KEEL_REV_ANY), KEEL_OK);
	assert_int_equal(keel_commit(db, b, NULL, NULL), KEEL_OK);
	keel_batch_free(b);
	assert_int_equal(keel_close(db), KEEL_OK);
	assert_int_equal(root_type(path), KEEL_REC_LEAF);
	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(keel_check(db, NULL, NULL, &cr), KEEL_OK);
	assert_int_equal(cr.keys, 2);
	for (int i = 0; i < 4; i++) {
		keel_view v;
		assert_int_equal(keel_get(db, key[i], sizeof(key[i]), &v),
		                 i < 2 ? KEEL_ENOTFOUND : KEEL_OK);
		if (i >= 2)
			keel_view_release(&v);
	}
	assert_int_equal(keel_close(db), KEEL_OK);
	tu_rmdir(dir);
	free(path);
}

/* A writer inlines values of up to KEEL_INLINE_MAX bytes, but a reader
 * takes an inline value of any length that fits in its leaf (format.h):
 * another writer's store may hold longer ones.  Compaction, which keeps
 * the rule of this writer, gives such a value a record of its own, and the
 * value reads back the same. */
static void a_value_another_writer_inlined_survives_compaction(void **state)
{
	(void)state;
	static craft f;
	uint8_t p[512], val[200];
	uint32_t crc;
	keel_view v;
	keel_db *db;
	char *dir, *path = forge_store(&dir);

	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = (uint8_t)(i * 7 + 1);
	craft_begin(&f, path);
	const uint8_t *k = (const uint8_t *)"kx";
	uint32_t eo = keel_node_begin(p, 0, 2, k, 1, k + 1, 1);
	keel_leaf_ent le = {.key = k, .klen = 1, .rev = 1,
	                    .inl = (const uint8_t *)"v", .vlen = 1};
	keel_node_set_slot(p, 0, eo, k, 1);
	eo += keel_leaf_ent_encode(p + eo, &le);
	le = (keel_leaf_ent){.key = k + 1, .klen = 1, .rev = 1, .inl = val,
	                     .vlen = sizeof(val)};
	keel_node_set_slot(p, 1, eo, k + 1, 1);
	eo += keel_leaf_ent_encode(p + eo, &le);
	uint64_t root = craft_record(&f, KEEL_REC_LEAF, p, eo, &crc);
	craft_commit(&f, path, root, crc, 2);

	assert_int_equal(keel_open(path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_compact(db), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
	assert_int_equal(keel_open(path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "x", 1, &v), KEEL_OK);
	assert_int_equal(v.len, sizeof(val));
	assert_memory_equal(v.data, val, sizeof(val));
	keel_view_release(&v);
	assert_int_equal(keel_check(db, NULL, NULL, NULL), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
	tu_rmdir(dir);
	free(path);
}

/* The format bounds each entry by its node's end, not by where the slots
 * end: a node whose one entry lies inside its own slots, its payload ending
 * exactly where entries would begin, is still a node.  Built here: 217
 * slots (offset 770, head 515) over a 4-byte prefix; the entry at 770 reads
 * its key length (515) from a slot's head and its 515-byte key from the
 * slots after it, which repeat the prefix every 6 bytes.  A lookup of a key
 * it does not hold answers ENOTFOUND, as for any leaf. */
static void a_leaf_whose_entry_lies_in_its_slots_is_read(void **state)
{
	(void)state;
	static craft f;
	static const uint8_t slot[6] = {2, 3, 3, 2, 0, 0}; /* 770 LE, 515 LE */
	uint8_t p[1314];
	uint32_t crc;
	keel_view v;
	keel_db *db;
	char *dir, *path = forge_store(&dir);

	memset(p, 0, 8);
	keel_st16(p, 217);             /* count; level 0 */
	keel_st16(p + 4, 4);           /* the prefix: 2 3 3 2 */
	memcpy(p + 8, slot, 4);
	for (unsigned i = 0; i < 217; i++)
		memcpy(p + 12 + 6 * i, slot, 6);
	assert_int_equal(keel_node_entries_at(217, 4), sizeof(p));
	assert_int_equal(keel_node_ent_check(p, sizeof(p), true, 0), 543);
	assert_true(keel_node_index_valid(p, sizeof(p)));
	craft_begin(&f, path);
	uint64_t root = craft_record(&f, KEEL_REC_LEAF, p, sizeof(p), &crc);
	craft_commit(&f, path, root, crc, 1);

	assert_int_equal(keel_open(path, NULL, &db), KEEL_OK);
	assert_int_equal(keel_get(db, "z", 1, &v), KEEL_ENOTFOUND);
	assert_int_equal(keel_get(db, "\x02\x03\x03\x02", 4, &v), KEEL_ENOTFOUND);
	assert_int_equal(keel_close(db), KEEL_OK);
	tu_rmdir(dir);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(superblock_round_trips_and_rejects_damage),
		cmocka_unit_test(head_round_trips_and_every_bit_flip_is_caught),
		cmocka_unit_test(hint_round_trips),
		cmocka_unit_test(pending_span_bounds_hold_at_their_edges),
		cmocka_unit_test(delta_value_references_hold_at_the_data_start),
		cmocka_unit_test(a_delta_with_a_key_twice_is_invalid),
		cmocka_unit_test(record_header_checks_magic_and_type),
		cmocka_unit_test(key_order_matches_bytewise_order_at_every_length),
		cmocka_unit_test(a_merge_refuses_a_sibling_of_the_wrong_level),
		cmocka_unit_test(a_merge_refuses_a_sibling_past_the_file),
		cmocka_unit_test(a_leaf_of_four_entries_over_its_bound_splits),
		cmocka_unit_test(deleting_a_leaf_of_big_keys_removes_it),
		cmocka_unit_test(a_value_another_writer_inlined_survives_compaction),
		cmocka_unit_test(a_leaf_whose_entry_lies_in_its_slots_is_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
