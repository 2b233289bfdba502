/*
 * mapped.c -- writes through a shared mapping.  A program that stores into
 * a MAP_SHARED page makes no system call the recorder could wrap, so the
 * recorder (the shim) keeps such pages read-only and records a page at
 * the first store that faults on it: the record's pre-image is the page's
 * bytes then, its new bytes are not known yet (it is UNSEALED).  At the
 * next flush point the recorder stops further stores to the page and
 * SEALS the record: its new bytes become what the file holds then.  The
 * calling sequence is in faultsim.h; invariant (8) in cache_internal.h.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"

int faultsim_cache_map_lock(faultsim_cache *c, faultsim_ticket *t)
{
	pthread_mutex_lock(&c->lock);
	t->cache = c;
	t->rec = SCAN_NONE;
	return 0;
}

void faultsim_cache_map_unlock(faultsim_ticket *t)
{
	faultsim_cache *c = t->cache;
	if (!c)
		return;
	t->cache = NULL;
	pthread_mutex_unlock(&c->lock);
}

/* Reads LEN bytes at OFF into BUF; returns how many the file had (a short
 * count at its end), or a negative errno. */
static int64_t read_upto(int fd, unsigned char *buf, uint64_t len,
                         uint64_t off)
{
	uint64_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	return (int64_t)done;
}

int faultsim_cache_map_record(faultsim_ticket *t, int file, int fd,
                              uint64_t off, uint64_t len, uint32_t owner,
                              uint32_t tag)
{
	faultsim_cache *c = t->cache;
	struct stat st;
	uint64_t pos, size;

	if (!c || !faultsim_file_at(c, file))
		return -EBADF;
	if (fstat(fd, &st) != 0)
		return -errno;
	size = (uint64_t)st.st_size;
	if (off >= size)
		return 0; /* a store there never reaches the file (SIGBUS) */
	if (len > size - off)
		len = size - off; /* the tail of the last page is not the file's */
	fs_rec *r = faultsim_rec_reserve(c, REC_WRITE, 2 * len, &pos);
	if (!r)
		return -ENOBUFS;
	r->file = file;
	r->off = off;
	r->len = len;
	r->old_size = size;
	r->pre_len = len;
	r->pad = REC_F_MAPPED;
	r->plen[0] = owner;
	r->plen[1] = tag;
	int64_t n = read_upto(fd, rec_pre(r), len, off);
	if (n < 0)
		return (int)n;
	if ((uint64_t)n < len)
		return -EIO; /* the size just read says otherwise */
	/* until sealed, the new bytes read as unchanged: a reader that meets
	 * an unsealed record (none should) sees no bytes nobody wrote */
	memcpy(rec_new(r), rec_pre(r), len);
	faultsim_rec_publish(c, r, pos);
	t->seq = r->seq; /* the shim's ring names it (a cause's call site) */
	/* no real call is in flight: the stores come after the lock is gone */
	__atomic_store_n(&c->inflight, SCAN_NONE, __ATOMIC_RELEASE);
	return 1;
}

/* The first unsealed record of FILE (any file when < 0) by OWNER (0: by
 * anyone) at or after FROM, or SCAN_NONE. */
static uint64_t find_unsealed(faultsim_cache *c, int file, uint32_t owner,
                              uint64_t from)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	for (uint64_t pos = from; pos < win_tail(w); pos += rec_at(c, pos)->size) {
		fs_rec *r = rec_at(c, pos);
		if (rec_unsealed(r) && rec_state(r) != ST_VOID &&
		    (file < 0 || r->file == file) &&
		    (!owner || r->plen[0] == owner))
			return pos;
	}
	return SCAN_NONE;
}

/* The record of sequence number SEQ (a compaction moves records). */
static fs_rec *find_seq(faultsim_cache *c, uint64_t seq)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	for (uint64_t pos = win_start(w); pos < win_tail(w);
	     pos += rec_at(c, pos)->size)
		if (rec_at(c, pos)->seq == seq)
			return rec_at(c, pos);
	return NULL;
}

static void set_sealed(fs_rec *r)
{
	__atomic_store_n(&r->pad, REC_F_MAPPED | REC_F_SEALED, __ATOMIC_RELEASE);
}

/*
 * Seals the record at POS from FD: its new bytes are the file's now, and it
 * is narrowed to the bytes that changed, so that it reaches a crash as one
 * pwrite of them would (a torn or garbled sector never touches bytes the
 * stores left alone).  Narrowing moves its start, which a record cannot do
 * in place (2): the narrow copy is published as a new record, then the old
 * one is voided.  A kill between the two leaves both, with the same bytes.
 * A page whose bytes did not change becomes VOID.
 */
static int seal_one(faultsim_cache *c, uint64_t pos, int fd)
{
	fs_rec *r = rec_at(c, pos), *q;
	uint64_t lo = 0, hi, qpos, seq = r->seq;
	int64_t n = read_upto(fd, rec_new(r), r->len, r->off);

	if (n < 0)
		return (int)n;
	hi = (uint64_t)n; /* less than len: cut by a truncate made elsewhere */
	while (lo < hi && rec_pre(r)[lo] == rec_new(r)[lo])
		lo++;
	while (hi > lo && rec_pre(r)[hi - 1] == rec_new(r)[hi - 1])
		hi--;
	if (lo == hi) {
		rec_set_state(r, ST_VOID);
	} else if (lo > 0 || hi < r->len) {
		q = faultsim_rec_reserve(c, REC_WRITE, 2 * (hi - lo), &qpos);
		if (!q)
			return -ENOBUFS;
		r = find_seq(c, seq); /* the reserve may have compacted */
		if (!r)
			return -EIO;
		q->file = r->file;
		q->off = r->off + lo;
		q->len = q->pre_len = hi - lo;
		q->old_size = r->old_size;
		q->plen[0] = r->plen[0];
		q->plen[1] = r->plen[1];
		q->pad = REC_F_MAPPED | REC_F_SEALED;
		memcpy(rec_pre(q), rec_pre(r) + lo, hi - lo);
		memcpy(rec_new(q), rec_new(r) + lo, hi - lo);
		faultsim_rec_publish(c, q, qpos);
		__atomic_store_n(&c->inflight, SCAN_NONE, __ATOMIC_RELEASE);
		rec_set_state(r, ST_VOID);
	}
	set_sealed(r);
	return 0;
}

int faultsim_cache_map_seal(faultsim_ticket *t, int file, int fd,
                            uint32_t owner, faultsim_map_stop stop, void *arg)
{
	faultsim_cache *c = t->cache;
	uint64_t pos;
	int n = 0, rc;

	if (!c || !faultsim_file_at(c, file))
		return -EBADF;
	/* sealing may append and compact: look again from the start each time */
	while ((pos = find_unsealed(c, file, owner,
	                            faultsim_file_scan_from(c, file))) != SCAN_NONE) {
		fs_rec *r = rec_at(c, pos);
		if (stop)
			stop(arg, r->off, r->len, r->plen[1]);
		if ((rc = seal_one(c, pos, fd)) < 0)
			return rc;
		n++;
	}
	return n;
}

/*
 * No writer alive: every unsealed record is sealed from its file as the
 * dead writer left it (the page cache holds its stores; a power cut now
 * decides their fate like any other unsynced write's).  A record whose
 * file cannot be opened, or that cannot be sealed, is voided: its bytes
 * are the file's own either way.
 */
void faultsim_map_settle(faultsim_cache *c)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE), pos;

	while ((pos = find_unsealed(c, -1, 0, win_start(w))) != SCAN_NONE) {
		fs_rec *r = rec_at(c, pos);
		uint64_t seq = r->seq;
		int fd = faultsim_file_open(c, r->file);
		int failed = fd < 0 || seal_one(c, pos, fd) < 0;
		if (fd >= 0)
			close(fd);
		if (failed) {
			if (!(r = find_seq(c, seq)))
				break; /* cannot happen: an unsynced record is kept */
			rec_set_state(r, ST_VOID);
			set_sealed(r);
		}
		w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	}
}
