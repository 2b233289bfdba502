/* testcraft.h -- commits written by hand, for the cmocka suites that forge
 * stores (test_format, test_hostile; include after cmocka.h and keel.h,
 * with format.h and crc32c.h).
 *
 * A craft appends records after the store's newest head, then a head for
 * them that continues the chain, so recovery accepts it like any other:
 * every CRC is right, and only what the records say (a tree's shape, a
 * pending head's claims) is not what a writer makes. */
#ifndef KEEL_TESTCRAFT_H
#define KEEL_TESTCRAFT_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct craft {
	keel_head head;       /* the store's newest head                    */
	uint64_t pos;         /* where the new region starts                */
	uint8_t *reg;         /* the region's bytes                         */
	size_t rlen, rcap;
} craft;

/* The newest head of the store at PATH (as recovery finds it), with its
 * offset in h->off. */
static inline void craft_newest_head(const char *path, keel_head *h)
{
	keel_db *db;
	keel_recovery r;
	keel_options o = {.flags = KEEL_RDONLY};
	uint8_t hb[KEEL_HEAD_SIZE];

	assert_int_equal(keel_open(path, &o, &db), KEEL_OK);
	assert_int_equal(keel_recovery_info(db, &r), KEEL_OK);
	assert_int_equal(keel_close(db), KEEL_OK);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, hb, sizeof(hb), (off_t)r.head_offset),
	                 (ssize_t)sizeof(hb));
	close(fd);
	assert_int_equal(keel_head_decode(hb, h), KEEL_OK);
	h->off = r.head_offset;
}

static inline void craft_begin(craft *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	craft_newest_head(path, &c->head);
	c->pos = c->head.off + KEEL_HEAD_SIZE;
}

/* The offset the next record will have. */
static inline uint64_t craft_next(const craft *c)
{
	return c->pos + c->rlen;
}

/* Appends a record of TYPE; returns its offset, its crc in *CRC. */
static inline uint64_t craft_record(craft *c, uint8_t type, const uint8_t *payload,
                             uint32_t len, uint32_t *crc)
{
	uint64_t size = keel_rec_size(len), off = craft_next(c);
	if (c->rlen + size > c->rcap) {
		c->rcap = (c->rlen + size) * 2;
		c->reg = realloc(c->reg, c->rcap);
		assert_non_null(c->reg);
	}
	uint8_t *rec = c->reg + c->rlen;
	memset(rec, 0, size);
	keel_rec_encode(rec, type, payload, len);
	memcpy(rec + KEEL_REC_HDR, payload, len);
	*crc = keel_ld32(rec + 12);
	c->rlen += size;
	return off;
}

/* Writes the region and a head naming ROOT; frees the craft. */
static inline void craft_commit(craft *c, const char *path, uint64_t root,
                         uint32_t root_crc, uint64_t keys)
{
	keel_head h = {.txid = c->head.txid + 1, .prev_head = c->head.off,
	               .region_start = c->pos, .root_off = root,
	               .root_crc = root_crc,
	               .chain_crc = keel_crc32c(c->head.chain_crc, c->reg, c->rlen),
	               .keys = keys, .live_bytes = c->rlen + KEEL_HEAD_SIZE,
	               .file_id = c->head.file_id};
	uint8_t hb[KEEL_HEAD_SIZE];
	keel_head_encode(hb, &h);
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, c->reg, c->rlen, (off_t)c->pos), (ssize_t)c->rlen);
	assert_int_equal(pwrite(fd, hb, sizeof(hb), (off_t)(c->pos + c->rlen)),
	                 (ssize_t)sizeof(hb));
	close(fd);
	free(c->reg);
}

#endif /* KEEL_TESTCRAFT_H */
