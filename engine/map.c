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
	m->verified_len = (len / 64 + 8) & ~(size_t)7;
	void *bits = mmap(NULL, m->verified_len, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (bits == MAP_FAILED) {
		err = -ENOMEM;
		goto out_unmap;
	}
	m->verified = bits;
	atomic_init(&m->refs, 1);
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
	atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void map_release(keel_map *m)
{
	if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1)
		return;
	m->io->munmap(m->io->ctx, m->base, m->len);
	munmap((void *)m->verified, m->verified_len);
	free(m);
}

static bool verified_test(keel_map *m, uint64_t off)
{
	uint64_t bit = off / 8;
	return atomic_load_explicit(&m->verified[bit / 64],
	                            memory_order_acquire) & (1ull << (bit % 64));
}

static void verified_set(keel_map *m, uint64_t off)
{
	uint64_t bit = off / 8;
	atomic_fetch_or_explicit(&m->verified[bit / 64], 1ull << (bit % 64),
	                         memory_order_release);
}

const uint8_t *map_record(keel_map *m, uint64_t off, uint8_t type,
                          uint32_t expect_crc, uint32_t *len)
{
	keel_rec_hdr h;

	if (off % 8 != 0 || off < KEEL_DATA_START || off + KEEL_REC_HDR > m->len)
		return NULL;
	const uint8_t *rec = m->base + off;
	if (keel_rec_decode(rec, &h) != KEEL_OK || h.type != type ||
	    h.crc != expect_crc || h.len > m->len - off - KEEL_REC_HDR)
		return NULL;
	if (!verified_test(m, off)) {
		if (keel_rec_crc(rec, h.len) != h.crc)
			return NULL;
		verified_set(m, off);
	}
	*len = h.len;
	return rec;
}
