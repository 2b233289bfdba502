/*
 * commit.c -- the group-commit pipeline.
 *
 * Writers from any thread enqueue a commit_writer.  The writer at the front of
 * the queue, when no group is being built, becomes the LEADER: it takes the
 * whole queue as one group and applies every batch to a copy-on-write builder
 * (a batch whose expectation fails is rejected alone); when the previous
 * group has published it takes everything queued meanwhile, appends the
 * region and a head with pwrite, then lets the next leader start building on
 * top of that while it syncs.  Groups publish strictly in order.  Async
 * writers (keel_commit_async) are led by the committer threads when no caller
 * is.  While a compaction waits to switch files (draining), no group starts.
 *
 *     enqueue --> [front & !building & !draining] --> take the queue, apply
 *     --> wait for the previous group's publish --> take the queue again
 *     (top up) --> append --> next leader may start --> ONE fdatasync -->
 *     publish head --> wake group
 *
 * CRASH INVARIANTS
 *  (1) A head is written after its region, in the same append; one sync makes
 *      both durable.  Recovery accepts a head only if the region's CRC chain
 *      checks out, so the device may persist them in any order.
 *  (2) A head is published (visible to readers, acknowledged to writers) only
 *      after its sync returned success.
 *  (3) A group appends only after the previous group published (its sync
 *      returned), and publishes in that order; so a head written behind
 *      another head proves the earlier one was durable (recovery relies on
 *      this to tell damage from a torn tail), and each sync also covers every
 *      earlier region.  While it waits, the next leader absorbs writers.
 *  (4) Fail-stop: after any failed write or sync, db->failed is set before
 *      anyone is told, every group not yet published fails with it, and no
 *      later commit is attempted: a failed fsync is never retried, because on
 *      Linux the failed pages may have been marked clean and a retry would
 *      report success for data that is gone.  The one later write is the
 *      erasure of the failed groups (commit_erase_unacked), by the leader
 *      that failed, before any writer hears of it: those clean pages still
 *      read back, and the next open must not take the failed groups from
 *      them.
 *  (5) A hint (format.h) names only a head whose sync has returned.
 *  (6) Version 3 (delta.c, pending.c): a DELTA group's entries enter the
 *      pending index only after its append returned, tagged with its txid,
 *      and are read only by snapshots at or past that txid, which exist
 *      only once it publishes (D7).  Once indexed, the group publishes or
 *      the handle fails: a txid is never reused beside indexed entries.
 *      A checkpoint's new generation is allocated before anything is
 *      written, and becomes the tail's at the append, the head's at the
 *      publish.
 */
#include <assert.h>
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct commit_writer {
	commit_writer *next;
	const tree_op *ops;
	size_t n;
	tree_op *owned_ops;   /* async: resolved ops to free when done      */
	keel_commit_cb cb;    /* non-NULL: async                             */
	void *arg;
	atomic_uint wstate;   /* sync: WS_* bits, its wait (writer_wait)     */
	int rc;
	uint64_t txid;
	size_t failed;
};

#define GROUP_MAX_WRITERS 4096 /* a leader stops absorbing beyond this */
#define HINT_EVERY_COMMITS 64
#define HINT_EVERY_BYTES ((uint64_t)4 << 20)

uint64_t keel_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int keel_err_from_errno(int e)
{
	switch (-e) {
	case 0: return KEEL_OK;
	case ENOSPC:
	case EDQUOT:
	case EFBIG: return KEEL_ENOSPC;
	case EACCES:
	case EPERM: return KEEL_EACCES;
	case EROFS: return KEEL_EREADONLY;
	case ENOENT: return KEEL_ENOENT;
	case EISDIR: return KEEL_EISDIR;
	case ENOMEM: return KEEL_ENOMEM;
	case EAGAIN: return KEEL_EBUSY;
	default: return KEEL_EIO;
	}
}

/* How a synchronous writer waits: on a futex word of its own, not on a
 * condition variable of db->mu.  A group's writers are woken after it
 * publishes, some 55 at once at 64 writers; each had to take db->mu again
 * on its way out of pthread_cond_wait, behind the leader waking the rest
 * and the next leader absorbing: about one context switch a commit more
 * than now (docs/decisions.md).  Now a writer told its result returns without
 * db->mu, and one not asleep yet costs its waker no system call.
 *
 *   WS_LEAD   it may lead: check again under db->mu (commit_wake_front)
 *   WS_DONE   its result is in rc, txid and failed, set before (release);
 *             from then on the writer may return at any moment, so its
 *             waker touches nothing of it after the store
 *   WS_ASLEEP it sleeps, or is about to, in FUTEX_WAIT: wake it */
enum { WS_LEAD = 1u, WS_DONE = 2u, WS_ASLEEP = 4u };

static void writer_wake(commit_writer *w, unsigned why)
{
	unsigned old = why == WS_DONE
	             ? atomic_exchange_explicit(&w->wstate, WS_DONE,
	                                        memory_order_acq_rel)
	             : atomic_fetch_or_explicit(&w->wstate, why,
	                                        memory_order_acq_rel);
	/* The word may be gone by now (WS_DONE): a FUTEX_WAKE only names an
	 * address, and a waiter that a stale one reaches checks its word and
	 * sleeps again. */
	if (old & WS_ASLEEP)
		syscall(SYS_futex, &w->wstate, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Sleeps until W is told WS_LEAD or WS_DONE; returns the bits, and clears
 * WS_LEAD for the next wait.  Called without db->mu. */
static unsigned writer_wait(commit_writer *w)
{
	unsigned s = atomic_load_explicit(&w->wstate, memory_order_acquire);
	while (!(s & (WS_LEAD | WS_DONE))) {
		if (!(s & WS_ASLEEP)) {
			if (!atomic_compare_exchange_weak_explicit(
			        &w->wstate, &s, s | WS_ASLEEP,
			        memory_order_acq_rel, memory_order_acquire))
				continue;
			s |= WS_ASLEEP;
		}
		syscall(SYS_futex, &w->wstate, FUTEX_WAIT_PRIVATE, s, NULL, NULL, 0);
		s = atomic_load_explicit(&w->wstate, memory_order_acquire);
	}
	if (s & WS_DONE)
		return s;
	return atomic_fetch_and_explicit(&w->wstate, ~(WS_LEAD | WS_ASLEEP),
	                                 memory_order_acq_rel);
}

/* Signals whoever should lead next: the front writer, or the committer
 * thread when the front is async.  Caller holds mu. */
void commit_wake_front(keel_db *db)
{
	commit_writer *w = db->queue_head;
	if (!w || db->building || db->draining)
		return;
	if (w->cb)
		pthread_cond_signal(&db->committer_cv);
	else
		writer_wake(w, WS_LEAD);
}

/* Tells every writer of GROUP its result.  GROUP_RC, when set, overrides a
 * writer's own result.  Caller holds mu, which is let go while the writers
 * are woken and async callbacks run: the next leader may absorb and build
 * meanwhile (this group has published or failed already). */
static void group_finish(keel_db *db, commit_writer *group, int group_rc,
                         uint64_t txid)
{
	for (commit_writer *w = group; w; w = w->next) {
		db->inflight--;
		if (group_rc)
			w->rc = group_rc;
		if (w->rc == KEEL_OK)
			w->txid = txid;
	}
	pthread_mutex_unlock(&db->mu);
	while (group) {
		commit_writer *w = group;
		group = w->next; /* before W may be gone */
		if (!w->cb) {
			writer_wake(w, WS_DONE);
			continue;
		}
		w->cb(w->arg, w->rc, w->txid, w->failed);
		free(w->owned_ops);
		free(w);
	}
	pthread_mutex_lock(&db->mu);
}

int commit_write_region(const keel_io *io, int fd, const tree_region *r,
                        const uint8_t head[KEEL_HEAD_SIZE], uint64_t at)
{
	for (size_t i = 0; i < r->iovcnt; i++) {
		int e = keel_io_pwrite_all(io, fd, r->iov[i].iov_base,
		                           r->iov[i].iov_len, at);
		if (e)
			return keel_err_from_errno(e);
		at += r->iov[i].iov_len;
	}
	return keel_err_from_errno(keel_io_pwrite_all(io, fd, head,
	                                              KEEL_HEAD_SIZE, at));
}

static int group_sync(keel_db *db, bool grew)
{
	if (db->flags & KEEL_UNSAFE_NO_SYNC)
		return KEEL_OK;
	int e = grew ? db->io->fsync(db->io->ctx, db->fd)
	             : db->io->fdatasync(db->io->ctx, db->fd);
	if (e && (db->flags & KEEL_UNSAFE_RETRY_FSYNC)) /* the classic bug */
		e = db->io->fdatasync(db->io->ctx, db->fd);
	return keel_err_from_errno(e);
}

/* Zeros over everything appended past the newest durable head, by whoever
 * failed the handle (and again at close if that did not take).  Linux marks
 * the pages of a failed write-back clean and keeps them readable; without
 * this the next open -- which errseq tells nothing -- would take the failed
 * groups from them, append behind them and sync, and once those pages go
 * (eviction, a power cut) the disk would show a hole behind acknowledged
 * commits (tests/test_faultsim_engine.c).  With zeros there the next open
 * ends at the durable head.  Best effort: a device that refuses this too
 * leaves nothing more to do.  Waits until no group is being built: with
 * db->failed set none appends any more.  Caller holds mu, db->failed set. */
void commit_erase_unacked(keel_db *db)
{
	pthread_cond_broadcast(&db->published_cv); /* a builder waiting on us */
	while (db->building)
		pthread_cond_wait(&db->published_cv, &db->mu);
	uint64_t at = db->head.off + KEEL_HEAD_SIZE, end = db->append_end;
	if (end <= at || (db->flags & KEEL_RDONLY))
		return;
	pthread_mutex_unlock(&db->mu);
	/* zeros, whatever the growth flags say: fallocate would erase nothing */
	int rc = grow_preallocate(db->io, db->fd, at, end, 0);
	pthread_mutex_lock(&db->mu);
	if (rc == KEEL_OK)
		db->append_end = at; /* erased */
}

/* Writes a hint for HEAD if one is due.  Caller holds mu; HEAD is durable. */
static void hint_maybe_write(keel_db *db, const keel_head *head)
{
	db->hint_bytes += head->off + KEEL_HEAD_SIZE - head->region_start;
	if (head->txid - db->hint_txid < HINT_EVERY_COMMITS &&
	    db->hint_bytes < HINT_EVERY_BYTES)
		return;
	uint8_t buf[KEEL_HINT_SIZE];
	keel_hint h = {.txid = head->txid, .head_off = head->off};
	keel_hint_encode(buf, &h);
	/* Not synced: the next commit's sync carries it.  A failure here costs
	 * only recovery time, never data, so it is not fail-stop. */
	if (keel_io_pwrite_all(db->io, db->fd, buf, sizeof(buf),
	                       KEEL_HINT_OFF(head->txid % 2)) == 0) {
		db->hint_txid = head->txid;
		db->hint_bytes = 0;
	}
}

/* A group's builder: a version 2 store's tree builder, or a version 3
 * store's DELTA group (delta.c). */
typedef struct group_build {
	tree_builder *tree;
	dgroup *delta;
} group_build;

/* Applies each writer's batch from W on; a batch whose expectation fails is
 * rejected alone, any other failure fails the group. */
static int group_apply(group_build *b, commit_writer *w)
{
	for (; w; w = w->next) {
		int rc = b->delta ? dgroup_apply(b->delta, w->ops, w->n, &w->failed)
		                  : tree_apply(b->tree, w->ops, w->n, &w->failed);
		if (rc == KEEL_ECONFLICT || rc == KEEL_ENOTFOUND)
			w->rc = rc;
		else if (rc)
			return rc;
	}
	return KEEL_OK;
}

/* Takes the whole queue into the group; returns the writers taken. */
static commit_writer *absorb_queue(keel_db *db, commit_writer **last,
                                   uint64_t *size)
{
	commit_writer *more = db->queue_head;
	db->queue_head = db->queue_tail = NULL;
	(*last)->next = more;
	while ((*last)->next) {
		*last = (*last)->next;
		(*size)++;
	}
	return more;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits until the previous group has published, then takes every writer
 * queued meanwhile into the group: this is what makes groups grow with
 * load.  Then, if several writers have been committing at once lately
 * (WANT, the recent peak of writers in flight), it tops the group up -- it
 * takes writers as they arrive until that many are in the group, or half a
 * sync time has passed (at most 1 ms; a quarter gave 8-10% fewer commits/s
 * at 16 writers, bench/run-engine.sh): the writers the previous group just
 * woke are about to commit again, and without the wait they would form a
 * group of their own and pay a sync of their own.
 *
 * Writers that queue before the publish are taken all at once when it
 * comes, not one by one as they arrive: waking the leader for each arrival
 * cost a context switch per commit where writers trickle in (a server's
 * requests), with nothing gained on two cores (docs/decisions.md).  Only
 * while topping up does an arrival wake the leader, and only the one that
 * completes the group (db->topup_left): a wake for each, at 64 writers, had
 * the leader sleep and wake again for every writer or two (docs/results/
 * engine.md); those that arrive before the deadline wait in the queue until
 * the last.  SIZE counts the group's writers.  Called and
 * returns with mu held. */
static int group_absorb(keel_db *db, group_build *b, uint64_t seq,
                        uint64_t want, commit_writer **last, uint64_t *size)
{
	int rc = KEEL_OK;
	uint64_t deadline = 0;
	for (;;) {
		bool published = db->published_seq == seq - 1;
		if (db->failed)
			break;
		if (published && db->queue_head && *size < GROUP_MAX_WRITERS) {
			commit_writer *more = absorb_queue(db, last, size);
			pthread_mutex_unlock(&db->mu);
			if (rc == KEEL_OK)
				rc = group_apply(b, more);
			pthread_mutex_lock(&db->mu);
			continue;
		}
		if (published && !deadline) {
			if (want <= 1 || *size >= want)
				break;
			uint64_t wait = db->sync_ns_avg / 2;
			deadline = mono_ns() + (wait < 1000000 ? wait : 1000000);
		}
		if (deadline && (*size >= want || mono_ns() >= deadline))
			break;
		if (!deadline) {
			pthread_cond_wait(&db->published_cv, &db->mu);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t left = deadline - mono_ns();
		if ((int64_t)left <= 0)
			break;
		uint64_t ns = (uint64_t)ts.tv_nsec + left;
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		db->topup_left = want - *size; /* the queue is empty here */
		pthread_cond_timedwait(&db->published_cv, &db->mu, &ts);
	}
	db->topup_left = 0;
	return rc;
}

/* Lays out the region and the head after everything is applied.  A
 * version 3 checkpoint also gets its new, empty generation here, before
 * anything is written. */
static int group_finish_build(keel_db *db, group_build *b,
                              const keel_head *base, tree_region *region,
                              keel_head *head, pend_gen **new_gen)
{
	bool checkpoint = false;
	int rc = b->delta ? dgroup_finish(b->delta, head, region, &checkpoint)
	                  : tree_serialize(b->tree, head, region);
	if (rc == KEEL_OK && checkpoint)
		rc = pend_gen_new(head->root_off, head->root_crc, new_gen);
	if (rc)
		return rc;
	head->prev_head = base->off;
	head->file_id = db->file_id;
	head->time_ns = keel_now_ns();
	return KEEL_OK;
}

/* Leads one group.  Called and returns with mu held; the queue is non-empty
 * and no group is building. */
static void lead_group(keel_db *db)
{
	commit_writer *group = db->queue_head, *last = db->queue_tail;
	keel_head base = db->tail, head = {0};
	group_build b = {0};
	tree_region region = {0};
	uint8_t head_buf[KEEL_HEAD_SIZE];
	uint64_t size = 0;
	bool grew = false, empty = true, indexed = false;
	pend_gen *gen = db->tail_pend, *new_gen = NULL;
	int rc;

	for (commit_writer *w = group; w; w = w->next)
		size++;
	uint64_t want = db->inflight_peak; /* recent concurrency */
	if (want > GROUP_MAX_WRITERS)
		want = GROUP_MAX_WRITERS; /* more would never be waited for */
	db->inflight_peak = db->inflight;
	db->queue_head = db->queue_tail = NULL;
	db->building = true;
	db->leaders++;
	uint64_t seq = ++db->appended_seq;
	keel_map *map = db->map;
	map_ref(map);
	pend_gen_ref(gen);
	bool v3 = db->version >= 3;
	rc = db->failed;
	pthread_mutex_unlock(&db->mu);

	if (rc == KEEL_OK && v3)
		rc = dgroup_new(map, &base, gen, db->ckpt_bytes, db->flags, &b.delta);
	else if (rc == KEEL_OK)
		rc = tree_builder_new(map, &base, base.txid + 1,
		                      base.off + KEEL_HEAD_SIZE, &b.tree);
	if (rc == KEEL_OK)
		rc = group_apply(&b, group);
	pthread_mutex_lock(&db->mu);
	int arc = group_absorb(db, &b, seq, want, &last, &size);
	if (rc == KEEL_OK)
		rc = arc;
	if (db->failed) /* (3)(4): never append behind a failed group, and say
	                 * why: its failure, not what building on it ran into */
		rc = db->failed;
	pthread_mutex_unlock(&db->mu);
	if (rc == KEEL_OK)
		empty = b.delta ? dgroup_empty(b.delta) : tree_builder_empty(b.tree);
	if (rc == KEEL_OK && !empty)
		rc = group_finish_build(db, &b, &base, &region, &head, &new_gen);
	if (rc == KEEL_OK && !empty) {
		/* what recovery will demand of this head (format.h) */
		assert(keel_head_pending_sane(&head));
		keel_head_encode(head_buf, &head);
		rc = grow_ensure(db, head.off + KEEL_HEAD_SIZE,
		                 policy_live(&head), &grew);
		if (rc == KEEL_OK) {
			db->append_end = head.off + KEEL_HEAD_SIZE; /* building */
			rc = commit_write_region(db->io, db->fd, &region, head_buf,
			                         head.region_start);
		}
		/* (6) a DELTA group's entries go into the index once the group
		 * is appended, tagged with its txid: invisible until it
		 * publishes (D7), and the next leader builds on them.  From
		 * here the group either publishes or fails the handle. */
		if (rc == KEEL_OK && head.delta_off) {
			indexed = true;
			rc = dgroup_index(b.delta, gen, &head);
		}
	}
	tree_builder_free(b.tree);
	dgroup_free(b.delta);
	map_release(map);

	pthread_mutex_lock(&db->mu);
	if (rc == KEEL_OK && !empty) {
		db->tail = head;
		if (new_gen) { /* a checkpoint: later groups build on its tree */
			pend_gen_release(db->tail_pend);
			db->tail_pend = new_gen;
			pend_gen_ref(new_gen);
		}
		grow_ahead_maybe(db); /* so no later commit writes the zeros */
	}
	bool failed_here = false;
	if (rc == KEEL_EIO || rc == KEEL_ENOSPC || (indexed && rc)) {
		db->failed = rc; /* (4): a failed append is fail-stop; (6) */
		failed_here = true;
	}
	db->building = false;
	if (db->failed) /* one that failed the handle may wait for this */
		pthread_cond_broadcast(&db->published_cv);
	commit_wake_front(db); /* the next group builds while this one syncs */
	while (db->published_seq != seq - 1)
		pthread_cond_wait(&db->published_cv, &db->mu);
	if (rc == KEEL_OK && !empty && db->failed)
		rc = db->failed; /* (3)(4): an earlier group failed */
	if (rc == KEEL_OK && !empty) {
		pthread_mutex_unlock(&db->mu);
		uint64_t t0 = mono_ns();
		rc = group_sync(db, grew);
		uint64_t took = mono_ns() - t0;
		pthread_mutex_lock(&db->mu);
		db->sync_ns_avg = (db->sync_ns_avg * 7 + took) / 8;
		if (rc) {
			db->failed = rc;
			failed_here = true;
		} else {
			db->head = head; /* (2): publish */
			pend_gen *pub = new_gen ? new_gen : gen;
			if (db->pend != pub) {
				pend_gen_release(db->pend);
				db->pend = pub;
				pend_gen_ref(pub);
			}
			marker_publish(db); /* for reader processes */
			atomic_fetch_add_explicit(&db->gen, 1, memory_order_release);
			db->n_syncs++;
			db->n_checkpoints += new_gen != NULL;
			hint_maybe_write(db, &head);
			compact_maybe_schedule(db);
		}
	}
	pend_gen_release(gen);
	pend_gen_release(new_gen);
	if (rc == KEEL_OK && !empty)
		for (commit_writer *w = group; w; w = w->next)
			db->n_commits += w->rc == KEEL_OK;
	if (failed_here)
		commit_erase_unacked(db); /* (4), before anyone hears of it */
	db->published_seq = seq;
	pthread_cond_broadcast(&db->published_cv);
	group_finish(db, group, rc, head.txid);
	db->leaders--;
	/* Whoever should lead next may have gone to sleep while writes were
	 * held (commit_writes_held); a failure just now lifts the hold, and
	 * nothing else would wake it. */
	commit_wake_front(db);
	pthread_cond_broadcast(&db->published_cv); /* for commit_shutdown */
}

/* Compaction is due or running and the file's used part is over
 * max(2.25 x live, live + 5/6 of the slack) (POLICY_HOLD_Q): with the
 * file's preallocated space on top, capped at max(2.5 x live, live +
 * slack) (grow_cap), this keeps the file within that bound even against a
 * writer that appends faster than compaction copies (an unsynced one). */
static bool compact_lagging(const keel_db *db)
{
	uint64_t end = db->tail.off + KEEL_HEAD_SIZE;
	return end > POLICY_HOLD_MIN_END &&
	       end > policy_bytes(policy_live(&db->tail), POLICY_HOLD_Q,
	                          db->compact_slack);
}

/* Backpressure: while compaction is due or running and lagging, new groups
 * wait for it -- a synchronous writer before it enqueues, asynchronous ones
 * in the queue (submission still returns at once; the callback comes after
 * the compaction).  Caller holds mu. */
bool commit_writes_held(const keel_db *db)
{
	return (db->compacting || db->compact_wanted) && !db->failed &&
	       !db->closing && compact_lagging(db);
}

static void enqueue(keel_db *db, commit_writer *w)
{
	if (db->queue_tail)
		db->queue_tail->next = w;
	else
		db->queue_head = w;
	db->queue_tail = w;
}

void commit_thread_sched(const keel_db *db)
{
	if (!(db->flags & KEEL_BATCH_THREADS))
		return;
	/* Best effort: without it the thread runs as an ordinary one. */
	struct sched_param sp = {.sched_priority = 0};
	(void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
}

static void *committer_main(void *arg)
{
	keel_db *db = arg;

	commit_thread_sched(db);

	pthread_mutex_lock(&db->mu);
	for (;;) {
		commit_writer *w = db->queue_head;
		if (w && w->cb && !db->building && !db->draining &&
		    !commit_writes_held(db)) {
			lead_group(db);
			continue;
		}
		if (db->closing && !db->queue_head)
			break;
		pthread_cond_wait(&db->committer_cv, &db->mu);
	}
	pthread_mutex_unlock(&db->mu);
	return NULL;
}

/* Submits OPS[0..n).  Sync (cb NULL): waits, returns the result.  Async:
 * takes ownership of the writer allocated here and returns at once. */
int commit_submit_ops(keel_db *db, const tree_op *ops, size_t n,
                      tree_op *owned, keel_commit_cb cb, void *arg,
                      uint64_t *txid, size_t *failed_index)
{
	commit_writer local = {0}, *w = &local;
	int rc;

	if (db->flags & KEEL_RDONLY) {
		free(owned);
		return KEEL_EREADONLY;
	}
	if (cb) {
		w = calloc(1, sizeof(*w));
		if (!w) {
			free(owned);
			return KEEL_ENOMEM;
		}
	} else {
		atomic_init(&w->wstate, 0);
	}
	w->ops = ops;
	w->n = n;
	w->owned_ops = owned;
	w->cb = cb;
	w->arg = arg;

	pthread_mutex_lock(&db->mu);
	if (db->failed || db->closing) {
		rc = db->failed ? db->failed : KEEL_EINVAL;
		pthread_mutex_unlock(&db->mu);
		goto out_reject;
	}
	while (cb && db->committers < 2) {
		if (pthread_create(&db->committer[db->committers], NULL,
		                   committer_main, db)) {
			if (db->committers > 0)
				break; /* one is enough to make progress */
			pthread_mutex_unlock(&db->mu);
			rc = KEEL_ENOMEM;
			goto out_reject;
		}
		db->committers++;
	}
	/* Backpressure (commit_writes_held): a synchronous writer waits here;
	 * an async one is queued and waits there, never blocking its caller. */
	while (!cb && commit_writes_held(db))
		pthread_cond_wait(&db->published_cv, &db->mu);
	/* Wake-ups only when the queue turns non-empty: whoever takes from it
	 * (a building leader absorbing, a committer or writer about to lead)
	 * takes all of it, and never sleeps while it is non-empty, so one wake
	 * per batch of submissions is enough.  A wake per submission cost a
	 * context switch per commit when the server shares one CPU. */
	bool was_empty = db->queue_head == NULL;
	enqueue(db, w);
	db->inflight++;
	if (db->inflight > db->inflight_peak)
		db->inflight_peak = db->inflight;
	if (db->topup_left && --db->topup_left == 0)
		pthread_cond_broadcast(&db->published_cv); /* the group is full */
	if (cb) {
		if (was_empty)
			commit_wake_front(db);
		pthread_mutex_unlock(&db->mu);
		return KEEL_OK;
	}
	for (;;) {
		if (db->queue_head == w && !db->building && !db->draining) {
			lead_group(db); /* its own group: W is done */
			pthread_mutex_unlock(&db->mu);
			break;
		}
		pthread_mutex_unlock(&db->mu);
		/* A wake to lead between the check above and this wait stays
		 * in the word: it is not lost. */
		if (writer_wait(w) & WS_DONE)
			break;
		pthread_mutex_lock(&db->mu);
	}
	if (txid)
		*txid = w->rc == KEEL_OK ? w->txid : 0;
	if (failed_index && w->rc == KEEL_ECONFLICT)
		*failed_index = w->failed;
	if (failed_index && w->rc == KEEL_ENOTFOUND)
		*failed_index = w->failed;
	return w->rc;

out_reject:
	if (cb)
		free(w);
	free(owned);
	return rc;
}

int keel_compacting(keel_db *db)
{
	if (!db)
		return 0;
	pthread_mutex_lock(&db->mu);
	int busy = db->compacting || db->compact_wanted;
	pthread_mutex_unlock(&db->mu);
	return busy;
}

void commit_shutdown(keel_db *db)
{
	pthread_mutex_lock(&db->mu);
	db->closing = true;
	commit_wake_front(db); /* async groups held back go now */
	while (db->queue_head || db->building || db->leaders > 0)
		pthread_cond_wait(&db->published_cv, &db->mu);
	int started = db->committers;
	pthread_cond_broadcast(&db->committer_cv);
	pthread_mutex_unlock(&db->mu);
	for (int i = 0; i < started; i++)
		pthread_join(db->committer[i], NULL);
}
