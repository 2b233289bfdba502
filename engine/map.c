/*
 * map.c -- reference-counted mappings of the data file (see internal.h).
 *
 * Invariant: a keel_map is unmapped exactly once, by the map_release that
 * drops its count to zero; map_ref is only called by someone already holding
 * a reference (or holding db->mu while the db's reference is alive).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crc32c.h"
#include "internal.h"

static void map_destroy(keel_pin *p)
{
	keel_map *m = (keel_map *)p;
	m->io->munmap(m->io->ctx, m->base, m->len);
	munmap((void *)m->verified, 3 * m->verified_len);
	if (m->fd >= 0)
		close(m->fd);
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
	/* the start bits, then the extent bits (twice as many) */
	void *bits = mmap(NULL, 3 * m->verified_len, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (bits == MAP_FAILED) {
		err = -ENOMEM;
		goto out_unmap;
	}
	m->verified = bits;
	m->covered = (_Atomic uint64_t *)((uint8_t *)bits + m->verified_len);
	/* its own descriptor where the mapping is the file's page cache;
	 * none (-1) if the process has none to spare: readers then copy */
	m->fd = io->mmap == keel_io_posix()->mmap ?
	        fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	atomic_init(&m->pin.refs, 1);
	m->pin.destroy = map_destroy;
	m->pin.map = m;
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

/* Does [off, off+size) meet the extent of a verified record?  (With
 * SET: and marks it.)  One bit per 8 bytes: records start on 8 bytes and
 * take a multiple of 8.  Costs a word per 512 bytes, against their CRC. */
static bool covered_any(keel_map *m, uint64_t off, uint64_t size, bool set)
{
	uint64_t first = off / 8, last = (off + size - 1) / 8;
	bool any = false;
	for (uint64_t w = first / 64; w <= last / 64; w++) {
		uint64_t lo = w == first / 64 ? first % 64 : 0,
		         hi = w == last / 64 ? last % 64 : 63;
		uint64_t mask = (hi == 63 ? ~0ull : (1ull << (hi + 1)) - 1) &
		                ~((1ull << lo) - 1);
		if (set)
			atomic_fetch_or_explicit(&m->covered[w], mask,
			                         memory_order_release);
		else if (atomic_load_explicit(&m->covered[w],
		                              memory_order_acquire) & mask)
			any = true;
	}
	return any;
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
		uint64_t size = keel_rec_size(l);
		if (covered_any(m, off, size, false)) {
			/* Another thread verified this very record meanwhile (it
			 * sets the start bit before the extent), or it overlaps
			 * another record: damage. */
			if (!verified_test(m, off))
				return NULL;
		} else {
			if (keel_rec_decode(rec, &h) != KEEL_OK ||
			    keel_rec_crc(rec, l) != h.crc ||
			    (validate && !validate(rec + KEEL_REC_HDR, l, type)))
				return NULL;
			verified_set(m, off);
			covered_any(m, off, size, true);
		}
	}
	*len = l;
	return rec;
}
