/*
 * shim_common.c -- what the shim (in the program) and the harness both
 * need to agree on (shim.h, "both sides"): the keys of this life's tables
 * and the volatile-name patterns.  Built into libkeel-shim.so and torture.
 * Nothing here allocates or takes a lock: the shim calls it from inside
 * wrappers, a SIGSEGV handler included.
 */

#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

uint64_t shim_seen_key(uint64_t dev, uint64_t ino)
{
	return mix64(ino ^ mix64(dev + 0x9e3779b97f4a7c15ull)) | 1;
}

uint64_t shim_name_hash(const char *rel, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)rel[i];
		h *= 0x100000001b3ull;
	}
	return mix64(h) | 1;
}

int shim_volatile_match(const char *pats, const char *abs)
{
	const char *base = strrchr(abs, '/');
	char pat[256];

	if (!pats)
		return 0;
	base = base ? base + 1 : abs;
	for (const char *p = pats; *p;) {
		size_t n = strcspn(p, ":");
		if (n && n < sizeof pat) {
			memcpy(pat, p, n);
			pat[n] = '\0';
			if (fnmatch(pat, base, 0) == 0)
				return 1;
		}
		p += n + (p[n] == ':');
	}
	return 0;
}

/* Open addressing, linear probing; a slot is claimed by a compare-and-swap
 * of its key, so processes and threads enter keys at the same time safely.
 * Slots are never freed within a life. */
shim_seen *shim_seen_slot(shim_shared *s, uint64_t key)
{
	for (uint32_t i = 0; i < SHIM_SEEN; i++) {
		shim_seen *e = &s->seen[(key + i) % SHIM_SEEN];
		uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);

		if (k == key)
			return e;
		if (k == 0) {
			uint64_t zero = 0;
			if (__atomic_compare_exchange_n(&e->key, &zero, key, 0,
			                                __ATOMIC_ACQ_REL,
			                                __ATOMIC_ACQUIRE) ||
			    zero == key)
				return e;
		}
	}
	__atomic_store_n(&s->seen_full, 1, __ATOMIC_RELEASE);
	return NULL;
}

void shim_name_enter(shim_shared *s, const char *rel, size_t n)
{
	uint64_t key = shim_name_hash(rel, n);

	for (uint32_t i = 0; i < SHIM_NAMES; i++) {
		uint64_t *e = &s->names[(key + i) % SHIM_NAMES];
		uint64_t k = __atomic_load_n(e, __ATOMIC_ACQUIRE), zero = 0;

		if (k == key)
			return;
		if (k == 0 &&
		    (__atomic_compare_exchange_n(e, &zero, key, 0,
		                                 __ATOMIC_ACQ_REL,
		                                 __ATOMIC_ACQUIRE) ||
		     zero == key))
			return;
	}
	__atomic_store_n(&s->names_full, 1, __ATOMIC_RELEASE);
}

uint64_t shim_now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

uint64_t shim_mtime_ns(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
	       (uint64_t)st->st_mtim.tv_nsec;
}

void shim_seen_stamp(shim_seen *e, uint64_t ns)
{
	uint64_t old = __atomic_load_n(&e->last_ns, __ATOMIC_ACQUIRE);

	while (old < ns &&
	       !__atomic_compare_exchange_n(&e->last_ns, &old, ns, 0,
	                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

void shim_seen_created(shim_shared *s, const struct stat *st)
{
	shim_seen *e = shim_seen_slot(s, shim_seen_key((uint64_t)st->st_dev,
	                                               (uint64_t)st->st_ino));

	if (!e)
		return;
	__atomic_store_n(&e->unseen, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e->mapped, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e->first_mtime, UINT64_MAX, __ATOMIC_RELEASE);
	__atomic_store_n(&e->last_ns, shim_now_ns(), __ATOMIC_RELEASE);
}

/* ---- direct I/O --------------------------------------------------------- */

/* The memory and offset alignment FD's file asks of direct I/O (statx's
 * STATX_DIOALIGN; 512 each where the kernel does not say). */
static void dio_align(int fd, unsigned *mem, unsigned *off)
{
	struct statx sx;

	*mem = *off = 512;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
	    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_mem_align &&
	    sx.stx_dio_offset_align) {
		*mem = sx.stx_dio_mem_align;
		*off = sx.stx_dio_offset_align;
	}
}

int shim_dio_check(int fd, int fl, const struct iovec *iov, int cnt)
{
	unsigned mem, off;

	if (fl < 0)
		fl = fcntl(fd, F_GETFL);
	if (fl < 0 || !(fl & O_DIRECT))
		return 0;
	dio_align(fd, &mem, &off);
	for (int i = 0; i < cnt; i++)
		if ((uintptr_t)iov[i].iov_base % mem || iov[i].iov_len % mem)
			return -EINVAL;
	return 1;
}

size_t shim_short_len(int fd, size_t len)
{
	unsigned mem, off;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || !(fl & O_DIRECT))
		return len / 2;
	dio_align(fd, &mem, &off);
	size_t half = len / 2 / off * off;
	return half ? half : len;
}
