/*
 * grow.c -- growing the data file.  Floor 2, beside commit.c and compact.c.
 *
 * The file is preallocated past the newest head (zeros written, or
 * fallocate under KEEL_PREALLOC_FALLOCATE), so that a commit writes into
 * space that is allocated and inside the file's size, and its fdatasync
 * has data to write back and no metadata.  A growth is a step -- an eighth
 * of the file, at most ZERO_STEP_MAX of zeros -- followed by an fsync that
 * makes the new size and its blocks durable.
 *
 * AHEAD OF NEED (the grower).  When a leader has appended and less than
 * half a step is left past the tail, it asks the grower thread for the
 * next step (grow_ahead_maybe).  The grower writes the zeros on a file
 * descriptor of its own, in GROW_HUGE pieces with a sync after each, then
 * fsyncs, maps the new size and publishes it (file_size, map) under mu.
 * Commits go on meanwhile below the old size.  Only a leader that needs
 * space past the size grows the file itself (inline, and its commit then
 * fsyncs): when the step is small (under GROW_AHEAD_MIN: a store under
 * 8 MiB), or when the grower failed.  It first waits for a growth in
 * flight.
 *
 *     append --> [room < step/2] --> grow_wanted --> grower: zeros piece by
 *     piece, a sync each --> fsync --> map --> publish size and map
 *
 * WHY ITS OWN DESCRIPTOR.  Linux reports a writeback error once to each
 * open file description (errseq).  An fsync by another thread on the
 * commits' descriptor could take the report that a leader's fdatasync must
 * see, and a commit would be acknowledged over pages that were lost.  On
 * its own descriptor the grower takes only its own copy of the report.
 *
 * WHY IN PIECES.  A commit's fdatasync writes back every dirty page of the
 * file, the grower's zeros too.  A sync after each piece leaves a
 * concurrent commit at most one piece to write back, where the commit that
 * grew the file used to write and sync up to 64 MiB itself: 130 ms, against
 * 0.18 ms for other commits (docs/engine.md).
 *
 * INVARIANTS
 *  (1) db->file_size covers only space that is allocated, and durable once
 *      the commit that first uses it is: the grower fsyncs before it
 *      publishes; an inline growth is followed by its commit's fsync.
 *      Commits write only below db->file_size.
 *  (2) One growth at a time (db->growing).  The grower may run beside a
 *      compaction, which can put a new file behind the path and db->fd at
 *      any time: it grows the file it opened (checked by the superblock's
 *      file_id to be the store's at the start), maps it through its own
 *      descriptor, and publishes only if db->file_id is still that file's;
 *      otherwise its work is dropped.  (An inline growth runs under
 *      building, and a compaction's switch waits for it like for any
 *      leader.)
 *  (3) A failed growth ahead is not fail-stop: nothing committed depends on
 *      the space.  The grower does not try that size again; the next
 *      growth is the leader's, which fails the store if the device does.
 */
#include <assert.h>
#include <stdlib.h>

#include "internal.h"

#define ZERO_STEP_MAX ((uint64_t)64 << 20)
/* Steps below this are left to the commit that needs them: zeroing 1 MiB
 * inline costs a few milliseconds once, where the grower's extra syncs beside
 * a small store's commits measured about 3% of one writer's commit rate
 * (docs/engine.md). */
#define GROW_AHEAD_MIN ((uint64_t)1 << 20)

/* An eighth of the file, 256 KiB to 1 GiB: few growth syncs on big stores,
 * little unused space on small ones. */
uint64_t grow_default_step(uint64_t size)
{
	uint64_t step = size / 8;
	step = step < ((uint64_t)256 << 10) ? (uint64_t)256 << 10 : step;
	return step > ((uint64_t)1 << 30) ? (uint64_t)1 << 30 : step;
}

/* Allocates [from, to) of FD.  By default the space is written with zeros:
 * on ext4 and xfs a write into fallocate'd (unwritten) space makes the next
 * fdatasync also commit the extent conversion, which cost 40% of the sync
 * rate on this project's machines (docs/engine.md).  KEEL_PREALLOC_FALLOCATE
 * asks for fallocate instead (cheaper to grow, dearer to sync).
 *
 * GROW_HUGE: past 2 MiB the file grows to 2 MiB boundaries, and the grower
 * syncs a piece at a time (the top of this file). */
#define GROW_HUGE ((uint64_t)2 << 20)
/* The zeros go in writes of GROW_ZERO_WRITE, not in 2 MiB ones.  The page
 * cache sizes a folio by the write that creates it, and the region past the
 * tail is where every commit writes and syncs: in 2 MiB folios, a 100 MiB
 * store made 5,400-5,500 commits/s with one writer and a p99.9 of 6.9 ms;
 * in 64 KiB ones, 6,300-7,800 and 1.7-2.1 ms (4 KiB to 256 KiB measured
 * alike; build/growth-latency, docs/engine.md).  The price: the part of the
 * tree appended since the last compaction is not mapped with huge pages
 * (compaction still writes 2 MiB pieces, compact.c), about 9% of a point
 * read's speed on a store that was loaded and never compacted. */
#define GROW_ZERO_WRITE ((size_t)64 << 10)

uint64_t grow_size(uint64_t need, uint64_t step)
{
	uint64_t size = (need + step + KEEL_BLOCK - 1) & ~(uint64_t)(KEEL_BLOCK - 1);
	return size > GROW_HUGE ? (size + GROW_HUGE - 1) & ~(GROW_HUGE - 1) : size;
}

int grow_preallocate(const keel_io *io, int fd, uint64_t from, uint64_t to,
                   unsigned flags)
{
	if (to <= from)
		return KEEL_OK;
	if (flags & KEEL_PREALLOC_FALLOCATE)
		return keel_err_from_errno(io->fallocate(io->ctx, fd, from, to - from));
	size_t blen = to - from < GROW_ZERO_WRITE ? (size_t)(to - from)
	                                          : GROW_ZERO_WRITE;
	uint8_t *zeros = calloc(1, blen);
	if (!zeros)
		return KEEL_ENOMEM;
	int e = 0;
	for (uint64_t at = from; at < to && !e;) {
		/* on GROW_ZERO_WRITE boundaries: no folio larger than that */
		uint64_t end = (at / GROW_ZERO_WRITE + 1) * GROW_ZERO_WRITE;
		end = end < to ? end : to;
		e = keel_io_pwrite_all(io, fd, zeros, (size_t)(end - at), at);
		at = end;
	}
	free(zeros);
	return keel_err_from_errno(e);
}

/* With the automatic policy on (and the default step), growth stops at the
 * policy's bound, max(2.5 x live, live + slack) (POLICY_CAP_Q): compaction
 * starts at
 * POLICY_COMPACT_Q and holds writers at POLICY_HOLD_Q (internal.h), so the
 * file's own slack never takes it past the bound (docs/engine.md).  Where
 * the cap would leave less than GROW_MIN_SLACK past NEED -- the part in
 * use is already at the bound: a store too small for the hold, or one whose
 * compactions fail -- the growth is left alone: a cap there bounds nothing
 * and would cost a growth, and its sync, every few commits.  Past 2 MiB the
 * cap keeps to 2 MiB boundaries where it can (huge pages). */
#define GROW_MIN_SLACK ((uint64_t)64 << 10)

uint64_t grow_cap(uint64_t need, uint64_t size, uint64_t live, uint64_t slack)
{
	uint64_t cap = policy_bytes(live, POLICY_CAP_Q, slack);
	uint64_t floor = need + GROW_MIN_SLACK;
	cap &= cap >= GROW_HUGE && (cap & ~(GROW_HUGE - 1)) >= floor
	           ? ~(GROW_HUGE - 1) : ~(uint64_t)(KEEL_BLOCK - 1);
	if (cap < floor)
		return size;
	return size < cap ? size : cap;
}


/* The step the next growth of DB takes (caller holds mu or is the only
 * leader). */
static uint64_t next_step(const keel_db *db)
{
	uint64_t step = db->grow_step ? db->grow_step
	                              : grow_default_step(db->file_size);
	if (!(db->flags & KEEL_PREALLOC_FALLOCATE) && step > ZERO_STEP_MAX)
		step = ZERO_STEP_MAX; /* writing zeros: keep each growth short */
	return step;
}

/* The size a growth for NEED takes the file to: a step past NEED, capped
 * while the automatic policy runs with the default step (grow_cap). */
static uint64_t target_size(const keel_db *db, uint64_t need, uint64_t live)
{
	uint64_t size = grow_size(need, next_step(db));
	if (!db->grow_step && !(db->flags & KEEL_NOCOMPACT))
		size = grow_cap(need, size, live, db->compact_slack);
	assert(size >= need);
	return size;
}

/* Publishes a growth to SIZE mapped by M.  Caller holds mu. */
static void publish_size(keel_db *db, uint64_t size, keel_map *m, bool inline_)
{
	map_release(db->map); /* readers of the old map keep it alive */
	db->map = m;
	/* atomic: grow_ensure's first look is without mu */
	__atomic_store_n(&db->file_size, size, __ATOMIC_RELEASE);
	db->n_growths++;
	db->n_growths_inline += inline_;
	atomic_fetch_add_explicit(&db->gen, 1, memory_order_release);
}

int grow_ensure(keel_db *db, uint64_t need, uint64_t live, bool *grew)
{
	/* Almost every commit fits: no lock for that.  Only growth changes the
	 * size while a leader builds (a compaction's switch waits for it), and
	 * only upwards, so a stale size merely takes the locked path. */
	if (need <= __atomic_load_n(&db->file_size, __ATOMIC_ACQUIRE))
		return KEEL_OK;
	pthread_mutex_lock(&db->mu);
	/* (2): a growth in flight (or asked for) may well cover NEED */
	while ((db->growing || db->grow_wanted) && need > db->file_size)
		pthread_cond_wait(&db->published_cv, &db->mu);
	if (need <= db->file_size) {
		pthread_mutex_unlock(&db->mu);
		return KEEL_OK;
	}
	uint64_t from = db->file_size, size = target_size(db, need, live);
	db->growing = true;
	pthread_mutex_unlock(&db->mu);

	keel_map *m = NULL;
	int rc = grow_preallocate(db->io, db->fd, from, size, db->flags);
	if (rc == KEEL_OK)
		rc = map_create(db->io, db->fd, size, &m);

	pthread_mutex_lock(&db->mu);
	if (rc == KEEL_OK)
		publish_size(db, size, m, true);
	db->growing = false;
	pthread_cond_broadcast(&db->published_cv);
	pthread_mutex_unlock(&db->mu);
	*grew = rc == KEEL_OK;
	return rc;
}

/* Is the file behind DB's path the one behind db->fd?  FD: the grower's
 * own descriptor; FILE_ID: db->file_id. */
static int same_file(const keel_io *io, int fd, uint64_t file_id)
{
	uint8_t buf[KEEL_SUPER_SIZE];
	keel_super s;
	int e = keel_io_pread_all(io, fd, buf, sizeof(buf), 0);
	if (e)
		return keel_err_from_errno(e);
	if (keel_super_decode(buf, &s) != KEEL_OK || s.file_id != file_id)
		return KEEL_ECORRUPT; /* renamed under us: grow nothing */
	return KEEL_OK;
}

static bool closing(keel_db *db)
{
	pthread_mutex_lock(&db->mu);
	bool c = db->closing;
	pthread_mutex_unlock(&db->mu);
	return c;
}

/* Grows [FROM, TO) on a descriptor of its own; maps the result into *M. */
static int grow_ahead(keel_db *db, uint64_t from, uint64_t to,
                      uint64_t file_id, keel_map **m)
{
	const keel_io *io = db->io;
	bool sync = !(db->flags & KEEL_UNSAFE_NO_SYNC);
	int fd = io->open(io->ctx, db->path, 0, 0), rc;
	if (fd < 0)
		return keel_err_from_errno(fd);
	rc = same_file(io, fd, file_id);
	if (db->flags & KEEL_PREALLOC_FALLOCATE) {
		if (rc == KEEL_OK)
			rc = grow_preallocate(io, fd, from, to, db->flags);
	} else {
		for (uint64_t at = from; rc == KEEL_OK && at < to;) {
			uint64_t end = (at / GROW_HUGE + 1) * GROW_HUGE;
			end = end < to ? end : to;
			rc = grow_preallocate(io, fd, at, end, db->flags);
			if (rc == KEEL_OK && sync && end < to) /* the last: fsync */
				rc = keel_err_from_errno(io->fdatasync(io->ctx, fd));
			if (rc == KEEL_OK && closing(db))
				rc = KEEL_EINVAL; /* the rest would only delay close */
			at = end;
		}
	}
	if (rc == KEEL_OK && sync)
		rc = keel_err_from_errno(io->fsync(io->ctx, fd));
	/* Through our own descriptor: a compaction may have replaced db->fd
	 * (2).  The mapping outlives the descriptor. */
	if (rc == KEEL_OK)
		rc = map_create(io, fd, to, m);
	io->close(io->ctx, fd);
	return rc;
}

/* The size to grow the file to ahead of need, or 0 when none is due: room
 * enough past the tail, a small step, the cap reached (compaction's turn),
 * or a growth ahead that failed at this size.  Caller holds mu. */
static uint64_t ahead_target(const keel_db *db)
{
	if ((db->flags & KEEL_RDONLY) || db->failed || db->closing ||
	    db->file_size == db->grow_failed_size)
		return 0;
	uint64_t end = db->tail.off + KEEL_HEAD_SIZE;
	uint64_t step = next_step(db);
	if (step < GROW_AHEAD_MIN)
		return 0; /* small: the commit grows it (top of this file) */
	if (db->file_size > end && db->file_size - end > step / 2)
		return 0; /* room enough */
	uint64_t to = target_size(db, end, policy_live(&db->tail));
	return to > db->file_size ? to : 0;
}

static void *grower_main(void *arg)
{
	keel_db *db = arg;

	commit_thread_sched(db);
	pthread_mutex_lock(&db->mu);
	while (!db->closing) {
		if (!db->grow_wanted) {
			pthread_cond_wait(&db->grower.cv, &db->mu);
			continue;
		}
		/* Asked for before a compaction or an inline growth ran, it
		 * may be due no more: decided again, on the state now. */
		uint64_t from = db->file_size, to = ahead_target(db);
		if (db->growing || to == 0) {
			db->grow_wanted = false; /* (2); a leader asks again */
			pthread_cond_broadcast(&db->published_cv);
			continue;
		}
		db->growing = true;
		db->grow_wanted = false;
		uint64_t file_id = db->file_id;
		pthread_mutex_unlock(&db->mu);

		keel_map *m = NULL;
		int rc = grow_ahead(db, from, to, file_id, &m);

		pthread_mutex_lock(&db->mu);
		bool same = db->file_id == file_id && db->file_size == from;
		if (rc == KEEL_OK && same)
			publish_size(db, to, m, false);
		else if (m)
			map_release(m); /* (2): a compaction replaced the file */
		if (rc != KEEL_OK && same)
			db->grow_failed_size = from; /* (3) */
		db->growing = false;
		pthread_cond_broadcast(&db->published_cv);
	}
	db->grow_wanted = false;
	pthread_cond_broadcast(&db->published_cv);
	pthread_mutex_unlock(&db->mu);
	return NULL;
}

void grow_ahead_maybe(keel_db *db)
{
	if (db->growing || db->grow_wanted || ahead_target(db) == 0)
		return;
	/* Without a grower, leaders grow the file themselves.  The flag is set
	 * under mu, before the woken thread can look. */
	if (db_worker_wake(db, &db->grower, grower_main))
		db->grow_wanted = true;
}
