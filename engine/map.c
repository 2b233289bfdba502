/*
 * map.c -- reference-counted mappings of the data file (see internal.h).
 *
 * Invariant: a keel_map is unmapped exactly once, by the map_release that
 * drops its count to zero; map_ref is only called by someone already holding
 * a reference (or holding db->mu while the db's reference is alive).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "crc32c.h"
#include "internal.h"

static void map_destroy(keel_pin *p)
{
	keel_map *m = (keel_map *)p;
	m->io->munmap(m->io->ctx, m->base, m->len);
	munmap((void *)m->verified, m->verified_len);
	free(m);
}

int map_create(const keel_io *io, int fd, size_t len, keel_map **out)
{
	keel_map *m = calloc(1, sizeof(*m));
	int err = 0;

	if (!m)
		return KEEL_ENOMEM;
	m->io = io;
	m->len = len;
	m->base = io->mmap(io->ctx, fd, len, &err);
	if (!m->base)
		goto out_free;
	m->verified_len = (len / 128 + 8) & ~(size_t)7;
	void *bits = mmap(NULL, m->verified_len, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (bits == MAP_FAILED) {
		err = -ENOMEM;
		goto out_unmap;
	}
	m->verified = bits;
	atomic_init(&m->pin.refs, 1);
	m->pin.destroy = map_destroy;
	*out = m;
	return KEEL_OK;

out_unmap:
	io->munmap(io->ctx, m->base, len);
out_free:
	free(m);
	return keel_err_from_errno(err);
}

void map_ref(keel_map *m)
{
	pin_ref(&m->pin);
}

void map_release(keel_map *m)
{
	if (m)
		pin_release(&m->pin);
}

static bool verified_test(keel_map *m, uint64_t off)
{
	uint64_t bit = off / 16;
	return atomic_load_explicit(&m->verified[bit / 64],
	                            memory_order_acquire) & (1ull << (bit % 64));
}

static void verified_set(keel_map *m, uint64_t off)
{
	uint64_t bit = off / 16;
	atomic_fetch_or_explicit(&m->verified[bit / 64], 1ull << (bit % 64),
	                         memory_order_release);
}

const uint8_t *map_record(keel_map *m, uint64_t off, uint8_t type,
                          uint32_t expect_crc, uint32_t *len,
                          map_validate_fn validate)
{
	if (off % 8 != 0 || off < KEEL_DATA_START || off + KEEL_REC_HDR > m->len)
		return NULL;
	const uint8_t *rec = m->base + off;
	uint32_t l = keel_ld32(rec + 8);
	if (rec[4] != type || keel_ld32(rec + 12) != expect_crc ||
	    l > m->len - off - KEEL_REC_HDR)
		return NULL;
	if (!verified_test(m, off)) {
		keel_rec_hdr h;
		if (keel_rec_decode(rec, &h) != KEEL_OK ||
		    keel_rec_crc(rec, l) != h.crc ||
		    (validate && !validate(rec + KEEL_REC_HDR, l, type)))
			return NULL;
		verified_set(m, off);
	}
	*len = l;
	return rec;
}
