/* test_format.c -- encoders and decoders of the on-disk structures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "format.h"
#include "keel.h"

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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
