/*
 * db.c -- opening, closing, reading, snapshots, statistics: the parts of
 * keel.h that are not the commit pipeline (commit.c) or compaction.
 *
 * OPEN:   open or create (temp file + rename + directory sync, so a crash
 *         mid-create leaves no half store) --> writer lock (OFD) --> recovery
 *         (recovery/) --> cut a torn tail --> map.
 * READ:   pin (head, map) under mu --> walk the tree in the map --> the view
 *         keeps the map pinned.
 */
#include <assert.h>
#include <errno.h>
#include <fiu.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "recover.h"
#include "verify.h"

#define OPEN_FLAGS (KEEL_RDONLY | KEEL_NOCREATE | KEEL_SALVAGE | KEEL_NOCOMPACT | \
                    KEEL_PREALLOC_FALLOCATE | KEEL_BATCH_THREADS |               \
                    KEEL_RDONLY_UNSYNCED |                                       \
                    KEEL_UNSAFE_NO_SYNC |                                        \
                    KEEL_UNSAFE_TRUST_HEAD | KEEL_UNSAFE_RETRY_FSYNC |           \
                    KEEL_UNSAFE_CKPT_DROP)
#define INITIAL_SIZE ((uint64_t)256 << 10)

struct keel_snapshot {
	keel_pin pin;    /* first: views from the snapshot hold it           */
	keel_db *db;     /* for keel_snapshot_refresh                        */
	uint64_t gen;    /* db->gen when head and map were copied            */
	keel_head head;
	keel_map *map;
	pend_gen *pend;  /* head's generation of the pending index (P3)      */
};

struct keel_iter {
	keel_snapshot *snap; /* pinned: it holds the map (a per-reader count,
	                      * where the map's own is shared by all threads) */
	keel_map *map;
	merge_cursor cur;    /* the tree overlaid with the pending entries   */
	bool done;
	uint8_t *prefix;
	size_t plen;
};

static pthread_once_t fiu_once = PTHREAD_ONCE_INIT;
static void fiu_setup(void) { fiu_init(0); }

/* ---- creating ------------------------------------------------------------ */

static int write_new_store(keel_db *db, int fd, uint64_t file_id)
{
	uint8_t sb[KEEL_SUPER_SIZE], head[KEEL_HEAD_SIZE];
	keel_super s = {.version = KEEL_FORMAT_VERSION, .block_size = KEEL_BLOCK,
	                .file_id = file_id, .data_start = KEEL_DATA_START,
	                .base_txid = 0, .first_head = KEEL_DATA_START};
	keel_head h = {.region_start = KEEL_DATA_START, .live_bytes = KEEL_HEAD_SIZE,
	               .time_ns = keel_now_ns(), .file_id = file_id,
	               .off = KEEL_DATA_START};
	const keel_io *io = db->io;
	int e;

	keel_super_encode(sb, &s);
	keel_head_encode(head, &h);
	int rc = grow_preallocate(io, fd, 0, INITIAL_SIZE, db->flags);
	if (rc)
		return rc;
	if ((e = keel_io_pwrite_all(io, fd, sb, sizeof(sb), 0)) ||
	    (e = keel_io_pwrite_all(io, fd, head, sizeof(head), KEEL_DATA_START)) ||
	    (e = io->fsync(io->ctx, fd)))
		return keel_err_from_errno(e);
	return KEEL_OK;
}

/* Creates the store at db->path atomically: a crash leaves either nothing
 * or a whole empty store. */
static int create_store(keel_db *db, unsigned mode)
{
	const keel_io *io = db->io;
	char *tmp = NULL;
	uint64_t file_id = 0;
	int rc;

	if (asprintf(&tmp, "%s.creating.%ld", db->path, (long)getpid()) < 0)
		return KEEL_ENOMEM;
	if (getrandom(&file_id, sizeof(file_id), 0) != sizeof(file_id))
		file_id = keel_now_ns() ^ (uint64_t)getpid() << 32;
	int fd = io->open(io->ctx, tmp, KEEL_IO_CREATE | KEEL_IO_EXCL, mode);
	if (fd < 0) {
		rc = keel_err_from_errno(fd);
		goto out_free;
	}
	rc = write_new_store(db, fd, file_id);
	io->close(io->ctx, fd);
	if (rc)
		goto out_unlink;
	int e = io->rename(io->ctx, tmp, db->path);
	if (e == 0)
		e = io->fsync_dir(io->ctx, db->dir);
	if (e) {
		rc = keel_err_from_errno(e);
		goto out_unlink;
	}
	free(tmp);
	return KEEL_OK;

out_unlink:
	io->unlink(io->ctx, tmp);
out_free:
	free(tmp);
	return rc;
}

/* ---- opening --------------------------------------------------------- */

static int open_file(keel_db *db, const keel_options *o)
{
	const keel_io *io = db->io;
	bool rdonly = o->flags & KEEL_RDONLY;
	struct stat st;

	/* A file nobody may write is not written, even by root. */
	if (!rdonly && stat(db->path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_mode & 0222) == 0)
		return KEEL_EACCES;
	int fd = io->open(io->ctx, db->path, rdonly ? KEEL_IO_RDONLY : 0, 0);
	if (fd == -ENOENT) {
		if (o->flags & (KEEL_NOCREATE | KEEL_RDONLY))
			return KEEL_ENOENT;
		int rc = create_store(db, o->file_mode ? o->file_mode : 0644);
		if (rc)
			return rc;
		fd = io->open(io->ctx, db->path, 0, 0);
	}
	if (fd < 0)
		return keel_err_from_errno(fd);
	db->fd = fd;
	return KEEL_OK;
}

static int lock_writer(keel_db *db, const keel_options *o)
{
	if (o->flags & KEEL_RDONLY)
		return KEEL_OK;
	int e = db->io->lock(db->io->ctx, db->fd, 1, o->lock_timeout_ms);
	if (e == -EAGAIN || e == -EACCES)
		return KEEL_EBUSY;
	return keel_err_from_errno(e);
}

/* A writer makes what recovery found durable before anyone is shown it: a
 * killed writer may have left heads that were written and never synced,
 * and this handle's threads (and, through the marker, reader processes)
 * take the recovered head as committed.  The file's name too: a killed
 * writer may have renamed a compaction's file over PATH and died before
 * the directory sync, and a power cut would then put the old file back
 * under every commit acknowledged since.  Then the marker (marker.c). */
static int writer_start(keel_db *db)
{
	if (db->flags & KEEL_RDONLY)
		return KEEL_OK;
	if (!(db->flags & KEEL_UNSAFE_NO_SYNC)) {
		int rc = keel_err_from_errno(db->io->fdatasync(db->io->ctx, db->fd));
		if (!rc)
			rc = keel_err_from_errno(db->io->fsync_dir(db->io->ctx,
			                                           db->dir));
		if (rc)
			return rc;
	}
	return marker_create(db);
}

/* Recovery's flags for a handle opened with keel_options FLAGS: recovery
 * (floor 1) knows no keel_options. */
static unsigned db_recovery_flags(unsigned flags)
{
	return ((flags & KEEL_SALVAGE) ? RECOVERY_SALVAGE : 0) |
	       ((flags & KEEL_UNSAFE_TRUST_HEAD) ? RECOVERY_TRUST_HEAD : 0);
}

static int recover(keel_db *db, const keel_options *o)
{
	recovery_result r;
	/* A writer builds on what the device holds (RECOVERY_READ_DEVICE):
	 * what only the page cache holds past it is a torn tail, and cut. */
	unsigned rflags = db_recovery_flags(db->flags);
	if (!(db->flags & KEEL_RDONLY))
		rflags |= RECOVERY_READ_DEVICE;
	int rc = recovery_find(db->io, db->fd, rflags, UINT64_MAX, &r);
	keel_recovery *rep = &db->recovery;

	/* A reader process stops at the writer's durable marker (marker.c). */
	if (rc == KEEL_OK && (db->flags & KEEL_RDONLY)) {
		uint64_t limit = marker_limit(db, db->fd, r.super.file_id);
		if (r.head.txid > limit) {
			free(r.deltas); /* the span of a head we may not take */
			rc = recovery_find(db->io, db->fd,
			                   db_recovery_flags(db->flags), limit, &r);
		}
	}

	rep->status = r.status;
	rep->offset = r.offset;
	rep->head_offset = r.head.off;
	rep->txid = r.head.txid;
	rep->bytes_read = r.bytes_read;
	snprintf(rep->reason, sizeof(rep->reason), "%s", r.reason);
	if (o->report)
		*o->report = *rep;
	if (rc)
		return rc;
	db->open_deltas = r.deltas;
	db->open_ndeltas = r.ndeltas;
	db->version = r.super.version;
	db->file_id = r.super.file_id;
	db->head = db->tail = r.head;
	db->append_end = r.head.off + KEEL_HEAD_SIZE;
	db->file_size = r.file_size;
	db->hint_txid = r.head.txid;
	if (r.status != KEEL_RECOVERY_OK && !(db->flags & KEEL_RDONLY)) {
		uint64_t end = r.head.off + KEEL_HEAD_SIZE;
		if ((rc = recovery_cut(db->io, db->fd, end)))
			return rc;
		db->file_size = end;
	}
	return KEEL_OK;
}

/* Indexes the DELTA records D[0..n) (found and checked by
 * recovery_pending) into G, reading them from M: each is checked again
 * against the mapping, so what is indexed is what readers will read. */
static int pending_index(keel_map *m, pend_gen *g, const recovery_delta *d,
                         size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t len;
		const uint8_t *rec = map_record(m, d[i].off, KEEL_REC_DELTA, d[i].crc,
		                                &len, NULL);
		if (!rec || !keel_delta_valid(rec + KEEL_REC_HDR, len, d[i].txid,
		                              d[i].off))
			return KEEL_ECORRUPT;
		int rc = pend_add_delta(g, rec + KEEL_REC_HDR, len,
		                        d[i].off + KEEL_REC_HDR, d[i].txid);
		if (rc)
			return rc;
	}
	return KEEL_OK;
}

/* A new generation for HEAD in M, holding D[0..n). */
static int pending_build(keel_map *m, const keel_head *head,
                         const recovery_delta *d, size_t n, pend_gen **out)
{
	pend_gen *g;
	int rc = pend_gen_new(head->root_off, head->root_crc, &g);
	if (rc == KEEL_OK && (rc = pending_index(m, g, d, n))) {
		pend_gen_release(g);
		g = NULL;
	}
	*out = g;
	return rc;
}

/* The generation for the head recovery found, at open (one bounded walk:
 * recovery_pending).  The writer's tail starts from the same one. */
static int open_pending(keel_db *db)
{
	int rc = pending_build(db->map, &db->head, db->open_deltas,
	                       db->open_ndeltas, &db->pend);
	free(db->open_deltas);
	db->open_deltas = NULL;
	if (rc)
		return rc;
	db->tail_pend = db->pend;
	pend_gen_ref(db->tail_pend);
	return KEEL_OK;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* The file PATH names, resolved once, at open: through a symbolic link,
 * compaction must replace the file the link names, not the link, and the
 * durable marker and temporary files belong beside that file.  A missing
 * PATH that is a dangling link is created where the link points.  A path
 * that cannot be resolved otherwise is kept as given, for the open to
 * report why.  NULL when out of memory. */
static char *path_resolve(const char *path)
{
	char *real = realpath(path, NULL);
	if (real || errno != ENOENT)
		return real ? real : strdup(path);
	char *cur = strdup(path);
	for (int hops = 0; cur && hops < 40; hops++) { /* 40: as the kernel */
		char target[PATH_MAX], *next = NULL;
		ssize_t n = readlink(cur, target, sizeof(target) - 1);
		if (n < 0)
			return cur; /* not a link: the store is created here */
		target[n] = '\0';
		char *dir = target[0] == '/' ? NULL : dir_of(cur);
		if (target[0] == '/')
			next = strdup(target);
		else if (!dir || asprintf(&next, "%s/%s", dir, target) < 0)
			next = NULL;
		free(dir);
		free(cur);
		cur = next;
	}
	return cur;
}

int keel_open(const char *path, const keel_options *opt, keel_db **out)
{
	keel_options o = opt ? *opt : (keel_options){0};
	keel_db *db;
	int rc;

	if (!out)
		return KEEL_EINVAL;
	*out = NULL;
	if (!path || !*path || (o.flags & ~OPEN_FLAGS) || o.lock_timeout_ms < -1)
		return KEEL_EINVAL;
	if ((o.flags & KEEL_RDONLY_UNSYNCED) && !(o.flags & KEEL_RDONLY))
		return KEEL_EINVAL; /* a writer's recovery takes them anyway */
	pthread_once(&fiu_once, fiu_setup);
	if (!(db = calloc(1, sizeof(*db))))
		return KEEL_ENOMEM;
	db->io_copy = o.io ? *o.io : *keel_io_posix();
	db->io = &db->io_copy;
	db->flags = o.flags;
	db->grow_step = o.grow_step;
	db->compact_slack = o.compact_slack ? o.compact_slack
	                                    : KEEL_COMPACT_SLACK_DEFAULT;
	db->ckpt_bytes = o.checkpoint_bytes && o.checkpoint_bytes <
	                 KEEL_CHECKPOINT_BYTES_DEFAULT ? o.checkpoint_bytes
	               : KEEL_CHECKPOINT_BYTES_DEFAULT;
	/* A checkpoint turns the whole pending span (at most ckpt_bytes: the
	 * writer checkpoints before a group's region would take it further,
	 * delta.c) from live bytes into dead ones at once; the slack must
	 * hold it twice (docs/engine.md, "The space bound across a
	 * checkpoint"). */
	uint64_t floor = 2 * db->ckpt_bytes;
	if (db->compact_slack < floor)
		db->compact_slack = floor;
	db->fd = -1;
	db->path = path_resolve(path);
	db->dir = db->path ? dir_of(db->path) : NULL;
	if (!db->path || asprintf(&db->marker_path, "%s.durable", db->path) < 0)
		db->marker_path = NULL;
	pthread_mutex_init(&db->mu, NULL);
	pthread_cond_init(&db->published_cv, NULL);
	pthread_cond_init(&db->committer_cv, NULL);
	pthread_cond_init(&db->compactor.cv, NULL);
	pthread_cond_init(&db->grower.cv, NULL);
	if (!db->path || !db->dir || !db->marker_path) {
		rc = KEEL_ENOMEM;
		goto out_free;
	}
	if ((rc = open_file(db, &o)) || (rc = lock_writer(db, &o)) ||
	    (rc = recover(db, &o)))
		goto out_close;
	if ((rc = map_create(db->io, db->fd, db->file_size, &db->map)))
		goto out_close;
	if ((rc = open_pending(db)) || (rc = writer_start(db))) {
		pend_gen_release(db->pend);
		pend_gen_release(db->tail_pend);
		map_release(db->map);
		goto out_close;
	}
	*out = db;
	return KEEL_OK;

out_close:
	free(db->open_deltas);
	marker_close_reader(db); /* a reader's; a writer's failed to exist */
	if (db->fd >= 0)
		db->io->close(db->io->ctx, db->fd);
out_free:
	pthread_mutex_destroy(&db->mu);
	pthread_cond_destroy(&db->published_cv);
	pthread_cond_destroy(&db->committer_cv);
	pthread_cond_destroy(&db->compactor.cv);
	pthread_cond_destroy(&db->grower.cv);
	free(db->path);
	free(db->dir);
	free(db->marker_path);
	free(db);
	return rc;
}

int keel_close(keel_db *db)
{
	if (!db)
		return KEEL_OK;
	db_worker_stop(db, &db->compactor);
	db_worker_stop(db, &db->grower); /* before the groups drain: they may
	                                  * wait for a growth */
	commit_shutdown(db);
	int rc = db->failed;
	if (rc) { /* the failing leader erased its tail; if that did not take */
		pthread_mutex_lock(&db->mu);
		commit_erase_unacked(db);
		pthread_mutex_unlock(&db->mu);
	}
	map_release(db->map);
	pend_gen_release(db->pend);
	pend_gen_release(db->tail_pend);
	if (db->flags & KEEL_RDONLY)
		marker_close_reader(db);
	else
		marker_remove(db, rc != KEEL_OK); /* while the lock is ours */
	db->io->close(db->io->ctx, db->fd); /* also drops the writer lock */
	pthread_mutex_destroy(&db->mu);
	pthread_cond_destroy(&db->published_cv);
	pthread_cond_destroy(&db->committer_cv);
	pthread_cond_destroy(&db->compactor.cv);
	pthread_cond_destroy(&db->grower.cv);
	free(db->path);
	free(db->dir);
	free(db->marker_path);
	free(db);
	return rc;
}

bool db_worker_wake(keel_db *db, db_worker *w, void *(*main)(void *))
{
	if (!w->started) {
		if (pthread_create(&w->thread, NULL, main, db))
			return false;
		w->started = true;
	}
	pthread_cond_signal(&w->cv);
	return true;
}

void db_worker_stop(keel_db *db, db_worker *w)
{
	pthread_mutex_lock(&db->mu);
	db->closing = true;
	bool started = w->started;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&db->mu);
	if (started)
		pthread_join(w->thread, NULL);
}

int keel_recovery_info(keel_db *db, keel_recovery *out)
{
	if (!db || !out)
		return KEEL_EINVAL;
	*out = db->recovery;
	return KEEL_OK;
}

/* Makes HEAD, just accepted in map M, the reader process's state, with its
 * pending generation (a reader's refresh): the current generation grows by
 * the heads after the old head when HEAD's pending span continues it (the
 * same root, the same span start), otherwise a new one is built by the
 * bounded walk back from HEAD.  Damage, or no memory, leaves the handle
 * where it was (marker.c, invariant (4): a reader may fall behind, never
 * ahead).  Caller holds mu. */
static int reader_take_head(keel_db *db, int fd, keel_map *m,
                            const keel_head *head, pend_gen **gen)
{
	recovery_delta *d;
	size_t n;
	keel_head good;
	uint64_t bad, bytes = 0;
	const char *why;
	const keel_head *old = &db->head;
	uint64_t old_span = old->pending_heads ? old->off - old->pending_bytes
	                                       : old->off + KEEL_HEAD_SIZE;
	bool grow = *gen && head->pending_heads &&
	            pend_gen_for(*gen, head->root_off, head->root_crc) &&
	            old->root_off == head->root_off && old->off < head->off &&
	            old_span == head->off - head->pending_bytes;
	int rc = recovery_pending(db->io, fd, head, grow ? old : NULL, &d, &n,
	                          &good, &bad, &why, &bytes);
	if (rc == KEEL_OK && grow) {
		rc = pending_index(m, *gen, d, n);
	} else if (rc == KEEL_OK) {
		pend_gen *g;
		if ((rc = pending_build(m, head, d, n, &g)) == KEEL_OK) {
			pend_gen_release(*gen);
			*gen = g;
		}
	}
	free(d);
	return rc;
}

/* After a compaction the path names a new file: a read-only handle in
 * another process notices by the inode and moves to it. */
static void reader_follow_rename(keel_db *db)
{
	struct stat at_path, ours;
	recovery_result r;
	keel_map *m;
	pend_gen *g = NULL;

	if (stat(db->path, &at_path) || fstat(db->fd, &ours) ||
	    (at_path.st_ino == ours.st_ino && at_path.st_dev == ours.st_dev))
		return;
	int fd = db->io->open(db->io->ctx, db->path, KEEL_IO_RDONLY, 0);
	if (fd < 0)
		return;
	int rc = recovery_find(db->io, fd, db_recovery_flags(db->flags),
	                       UINT64_MAX, &r);
	if (rc == KEEL_OK) {
		uint64_t limit = marker_limit(db, fd, r.super.file_id);
		if (r.head.txid > limit) {
			free(r.deltas);
			rc = recovery_find(db->io, fd, db_recovery_flags(db->flags),
			                   limit, &r);
		}
	}
	if (rc != KEEL_OK || map_create(db->io, fd, r.file_size, &m) != KEEL_OK) {
		if (rc == KEEL_OK)
			free(r.deltas);
		db->io->close(db->io->ctx, fd);
		return; /* keep reading the old file; try again next time */
	}
	rc = pending_build(m, &r.head, r.deltas, r.ndeltas, &g);
	free(r.deltas);
	if (rc != KEEL_OK) {
		map_release(m);
		db->io->close(db->io->ctx, fd);
		return;
	}
	db->io->close(db->io->ctx, db->fd);
	db->fd = fd;
	map_release(db->map);
	db->map = m;
	pend_gen_release(db->pend);
	pend_gen_release(db->tail_pend);
	db->pend = g;
	db->tail_pend = g;
	pend_gen_ref(g);
	db->head = db->tail = r.head;
	db->version = r.super.version;
	db->file_size = r.file_size;
	db->file_id = r.super.file_id;
	atomic_fetch_add_explicit(&db->gen, 1, memory_order_release);
}

/* A read-only handle picks up commits made by the writer process: a cheap
 * peek after the newest known head, a walk when something is there. */
static void refresh_readonly(keel_db *db)
{
	reader_follow_rename(db);
	uint8_t peek[KEEL_REC_HDR];
	uint64_t end = db->head.off + KEEL_HEAD_SIZE, size, stop, n = 0;
	int is_reg;
	const char *why;
	keel_head newest;

	if (keel_io_pread_all(db->io, db->fd, peek, sizeof(peek), end) ||
	    keel_ld32(peek) != KEEL_REC_MAGIC)
		return;
	if (db->io->fstat(db->io->ctx, db->fd, &size, &is_reg))
		return;
	uint64_t limit = marker_limit(db, db->fd, db->file_id);
	if (limit <= db->head.txid)
		return; /* nothing durable past our head yet */
	if (recovery_walk(db->io, db->fd, size, &db->head, limit,
	                  db_recovery_flags(db->flags),
	                  &newest, &stop, &why, &n) != KEEL_OK ||
	    newest.txid == db->head.txid)
		return;
	keel_map *m = db->map;
	if (newest.off + KEEL_HEAD_SIZE > db->map->len &&
	    map_create(db->io, db->fd, size, &m) != KEEL_OK)
		return;
	pend_gen *g = db->pend;
	pend_gen_ref(g);
	if (reader_take_head(db, db->fd, m, &newest, &g) != KEEL_OK) {
		pend_gen_release(g);
		if (m != db->map)
			map_release(m);
		return;
	}
	if (m != db->map) {
		map_release(db->map);
		db->map = m;
		db->file_size = size;
	}
	pend_gen_release(db->pend);
	pend_gen_release(db->tail_pend);
	db->pend = g; /* our reference becomes the handle's */
	db->tail_pend = g;
	pend_gen_ref(g);
	db->head = db->tail = newest;
	atomic_fetch_add_explicit(&db->gen, 1, memory_order_release);
}

/* ---- reading ------------------------------------------------------------- */

static uint64_t db_pin(keel_db *db, keel_head *head, keel_map **map,
                       pend_gen **pend)
{
	pthread_mutex_lock(&db->mu);
	if (db->flags & KEEL_RDONLY)
		refresh_readonly(db);
	*head = db->head;
	*map = db->map;
	map_ref(*map);
	*pend = db->pend;
	pend_gen_ref(*pend);
	uint64_t gen = atomic_load_explicit(&db->gen, memory_order_relaxed);
	pthread_mutex_unlock(&db->mu);
	return gen;
}

/* Looks KEY up in (HEAD, MAP).  On success the view owns one reference to
 * PIN (the map or a snapshot of it), which the caller took for it. */
static int get_in(keel_map *map, const keel_head *head, const pend_gen *pend,
                  const void *key, size_t klen, keel_pin *pin, keel_view *out)
{
	tree_leaf_entry e;
	const uint8_t *data;
	int rc;

	if ((rc = batch_check_key(key, klen)))
		return rc;
	/* The pending index first (D1, D7), then the tree. */
	const pend_ver *v = pend_lookup(pend, key, klen, head->txid);
	if (v && v->kind == PEND_DELETE)
		return KEEL_ENOTFOUND;
	if (v) {
		pend_key k = {.klen = (uint16_t)klen}; /* pend_entry reads klen */
		if ((rc = pend_entry(map, &k, v, &e)))
			return rc;
	} else if ((rc = tree_lookup(map, head->root_off, head->root_crc, key,
	                             klen, &e))) {
		return rc;
	}
	if ((rc = tree_value(map, &e, &data)))
		return rc;
	out->data = data;
	out->len = e.vlen;
	out->rev = e.rev;
	out->pin_ = pin;
	return KEEL_OK;
}

int keel_get(keel_db *db, const void *key, size_t klen, keel_view *out)
{
	keel_head head;
	keel_map *map;

	if (!db || !out)
		return KEEL_EINVAL;
	memset(out, 0, sizeof(*out));
	if (batch_check_key(key, klen))
		return KEEL_EKEY;
	pend_gen *pend;
	db_pin(db, &head, &map, &pend);
	int rc = get_in(map, &head, pend, key, klen, &map->pin, out); /* pin -> view */
	pend_gen_release(pend); /* a view points into the map, never into it */
	if (rc)
		map_release(map);
	return rc;
}

int keel_view_file(const keel_view *v, int *fd, uint64_t *off)
{
	if (!v || !v->pin_ || !fd || !off)
		return KEEL_EINVAL;
	const keel_map *m = ((const keel_pin *)v->pin_)->map;
	const uint8_t *p = v->data;
	if (m->fd < 0 || p < m->base || p > m->base + m->len ||
	    v->len > (size_t)(m->base + m->len - p))
		return KEEL_EINVAL;
	*fd = m->fd;
	*off = (uint64_t)(p - m->base);
	return KEEL_OK;
}

void keel_view_release(keel_view *v)
{
	if (!v || !v->pin_)
		return;
	pin_release(v->pin_);
	memset(v, 0, sizeof(*v));
}

static void snapshot_destroy(keel_pin *p)
{
	keel_snapshot *s = (keel_snapshot *)p;
	map_release(s->map);
	pend_gen_release(s->pend);
	free(s);
}

int keel_snapshot_open(keel_db *db, keel_snapshot **out)
{
	if (!db || !out)
		return KEEL_EINVAL;
	keel_snapshot *s = malloc(sizeof(*s));
	if (!(*out = s))
		return KEEL_ENOMEM;
	atomic_init(&s->pin.refs, 1);
	s->pin.destroy = snapshot_destroy;
	s->db = db;
	s->gen = db_pin(db, &s->head, &s->map, &s->pend);
	s->pin.map = s->map;
	return KEEL_OK;
}

int keel_snapshot_refresh(keel_snapshot **sp)
{
	keel_snapshot *s = sp ? *sp : NULL;
	if (!s)
		return KEEL_EINVAL;
	keel_db *db = s->db;
	/* Nothing new: one load of a line writers touch once per commit. */
	if (!(db->flags & KEEL_RDONLY) &&
	    atomic_load_explicit(&db->gen, memory_order_acquire) == s->gen)
		return KEEL_OK;
	if (atomic_load_explicit(&s->pin.refs, memory_order_acquire) == 1) {
		/* Nobody else holds it: move it forward in place. */
		keel_map *old = s->map;
		pend_gen *old_pend = s->pend;
		s->gen = db_pin(db, &s->head, &s->map, &s->pend);
		s->pin.map = s->map;
		map_release(old);
		pend_gen_release(old_pend);
		return KEEL_OK;
	}
	/* Views still hold this state: leave it to them, take a new one. */
	keel_snapshot *fresh;
	int rc = keel_snapshot_open(db, &fresh);
	if (rc)
		return rc;
	keel_snapshot_close(s);
	*sp = fresh;
	return KEEL_OK;
}

/* The snapshot goes when it is closed and its last view is released. */
void keel_snapshot_close(keel_snapshot *s)
{
	if (s)
		pin_release(&s->pin);
}

uint64_t keel_snapshot_txid(const keel_snapshot *s)
{
	return s ? s->head.txid : 0;
}

int keel_snapshot_get(keel_snapshot *s, const void *key, size_t klen,
                      keel_view *out)
{
	if (!s || !out)
		return KEEL_EINVAL;
	memset(out, 0, sizeof(*out));
	pin_ref(&s->pin);
	int rc = get_in(s->map, &s->head, s->pend, key, klen, &s->pin, out);
	if (rc)
		pin_release(&s->pin);
	return rc;
}

int keel_iter_open(keel_snapshot *s, const void *prefix, size_t plen,
                   const void *start, size_t slen, keel_iter **out)
{
	if (!s || !out || (plen && !prefix) || (slen && !start) ||
	    plen > KEEL_KEY_MAX || slen > KEEL_KEY_MAX)
		return KEEL_EINVAL;
	keel_iter *it = malloc(sizeof(*it)); /* the cursor inits itself */
	if (!it)
		return KEEL_ENOMEM;
	it->snap = NULL;
	it->prefix = NULL;
	it->cur.items = NULL;
	it->cur.view = NULL;
	if (plen && !(it->prefix = malloc(plen))) {
		free(it);
		return KEEL_ENOMEM;
	}
	if (plen)
		memcpy(it->prefix, prefix, plen);
	it->plen = plen;
	/* Seek to the larger of START and PREFIX. */
	const void *seek = NULL;
	size_t seeklen = 0;
	if (plen) {
		seek = prefix;
		seeklen = plen;
	}
	if (slen) {
		int c = memcmp(start, prefix ? prefix : start,
		               slen < plen ? slen : plen);
		if (!plen || c > 0 || (c == 0 && slen >= plen)) {
			seek = start;
			seeklen = slen;
		}
	}
	it->snap = s;
	pin_ref(&s->pin);
	it->map = s->map;
	it->done = false;
	int rc = merge_seek(&it->cur, it->map, &s->head, s->pend, seek, seeklen,
	                    it->prefix, it->plen);
	if (rc) {
		keel_iter_close(it);
		return rc;
	}
	*out = it;
	return KEEL_OK;
}

/* keel_iter_next's answer from entry E, just taken from the cursor. */
static int iter_give(keel_iter *it, const tree_leaf_entry *e,
                     const void **key, size_t *klen, keel_view *value)
{
	const uint8_t *data;
	int rc;

	if (it->plen && (e->klen < it->plen || memcmp(e->key, it->prefix, it->plen))) {
		it->done = true; /* keys are ordered: the prefix range is over */
		return KEEL_ENOTFOUND;
	}
	if (value) {
		if ((rc = tree_value(it->map, e, &data)))
			return rc;
		value->data = data;
		value->len = e->vlen;
		value->rev = e->rev;
		value->pin_ = NULL; /* the iterator holds the map */
	}
	if (key)
		*key = e->key;
	if (klen)
		*klen = e->klen;
	return KEEL_OK;
}

/* keel_iter_next, every case.  Not inlined (nor iter_give_raw): the fast
 * path below would then need their stack frame too. */
static __attribute__((noinline)) int iter_next_merged(keel_iter *it,
                                                      const void **key,
                                                      size_t *klen,
                                                      keel_view *value)
{
	tree_leaf_entry e;

	if (!it)
		return KEEL_EINVAL;
	if (it->done)
		return KEEL_ENOTFOUND;
	int rc = merge_next(&it->cur, &e);
	return rc ? rc : iter_give(it, &e, key, klen, value);
}

/* keel_iter_next for the raw leaf entry RAW the short cut took. */
static __attribute__((noinline)) int iter_give_raw(keel_iter *it,
                                                   const uint8_t *raw,
                                                   const void **key,
                                                   size_t *klen,
                                                   keel_view *value)
{
	tree_leaf_entry e;

	keel_leaf_ent_decode(raw, &e);
	return iter_give(it, &e, key, klen, value);
}

/* The common case open-coded: no pending key, the next entry inside the
 * current leaf (tree_cursor_next_fast), no prefix, its value inline.  It
 * makes no call and keeps nothing in memory, so it needs no stack frame:
 * some 26 instructions an entry fewer than through merge_next and iter_give
 * (100-entry scans, docs/bench.md "Range scans").  Every other case goes
 * through iter_give. */
int keel_iter_next(keel_iter *it, const void **key, size_t *klen,
                   keel_view *value)
{
	const uint8_t *e;

	if (!it || it->done || !it->cur.tree_only ||
	    !(e = tree_cursor_next_fast(&it->cur.tc)))
		return iter_next_merged(it, key, klen, value);
	if (it->plen || !(keel_ld16(e + 2) & KEEL_LEAF_INLINE))
		return iter_give_raw(it, e, key, klen, value);
	uint16_t kl = keel_ld16(e);
	const uint8_t *k = e + KEEL_LEAF_ENTRY;
	if (value) { /* as keel_leaf_ent_decode and iter_give would */
		value->data = k + kl;
		value->len = keel_ld32(e + 4);
		value->rev = keel_ld64(e + 8);
		value->pin_ = NULL;
	}
	if (key)
		*key = k;
	if (klen)
		*klen = kl;
	return KEEL_OK;
}

void keel_iter_close(keel_iter *it)
{
	if (!it)
		return;
	merge_free(&it->cur);
	if (it->snap)
		pin_release(&it->snap->pin);
	free(it->prefix);
	free(it);
}

/* ---- writing (wrappers over commit.c) -------------------------------------- */

static int check_value(const void *val, size_t vlen)
{
	if (!val && vlen)
		return KEEL_EINVAL;
	return vlen > KEEL_VALUE_MAX ? KEEL_ETOOBIG : KEEL_OK;
}

int keel_put(keel_db *db, const void *key, size_t klen, const void *val,
             size_t vlen, uint64_t expect, uint64_t *rev)
{
	static const uint8_t empty[1];
	int rc;

	if (rev)
		*rev = 0;
	if (!db)
		return KEEL_EINVAL;
	if ((rc = batch_check_key(key, klen)) || (rc = check_value(val, vlen)))
		return rc;
	tree_op op = {.key = key, .klen = klen, .val = val ? val : empty,
	              .vlen = vlen, .expect = expect};
	return commit_submit_ops(db, &op, 1, NULL, NULL, NULL, rev, NULL);
}

int keel_del(keel_db *db, const void *key, size_t klen, uint64_t expect,
             uint64_t *txid)
{
	int rc;

	if (txid)
		*txid = 0;
	if (!db)
		return KEEL_EINVAL;
	if ((rc = batch_check_key(key, klen)))
		return rc;
	if (expect == KEEL_REV_ABSENT)
		return KEEL_EINVAL; /* deleting what must not exist means nothing */
	tree_op op = {.key = key, .klen = klen, .val = NULL, .expect = expect};
	return commit_submit_ops(db, &op, 1, NULL, NULL, NULL, txid, NULL);
}

/* Turns the batch's arena offsets into pointers, in a new array. */
static tree_op *batch_resolve(const keel_batch *b)
{
	tree_op *ops = malloc(b->count * sizeof(*ops));
	if (!ops)
		return NULL;
	for (size_t i = 0; i < b->count; i++) {
		ops[i] = b->ops[i];
		ops[i].key = b->arena + (uintptr_t)b->ops[i].key;
		if (b->ops[i].val)
			ops[i].val = b->arena + ((uintptr_t)b->ops[i].val - 1);
	}
	return ops;
}

int keel_commit(keel_db *db, keel_batch *b, uint64_t *txid,
                size_t *failed_index)
{
	if (txid)
		*txid = 0;
	if (!db || !b)
		return KEEL_EINVAL;
	if (b->count == 0) {
		if (db->flags & KEEL_RDONLY)
			return KEEL_EREADONLY;
		return KEEL_OK;
	}
	tree_op *ops = batch_resolve(b);
	if (!ops)
		return KEEL_ENOMEM;
	int rc = commit_submit_ops(db, ops, b->count, NULL, NULL, NULL, txid,
	                           failed_index);
	free(ops);
	return rc;
}

int keel_commit_async(keel_db *db, keel_batch *b, keel_commit_cb cb, void *arg)
{
	if (!db || !b || !cb || b->count == 0)
		return KEEL_EINVAL;
	tree_op *ops = batch_resolve(b);
	if (!ops)
		return KEEL_ENOMEM;
	return commit_submit_ops(db, ops, b->count, ops, cb, arg, NULL, NULL);
}

/* ---- statistics and checking ---------------------------------------------- */

int keel_stat(keel_db *db, keel_stats *out)
{
	if (!db || !out)
		return KEEL_EINVAL;
	pthread_mutex_lock(&db->mu);
	if (db->flags & KEEL_RDONLY)
		refresh_readonly(db);
	out->file_size = db->file_size;
	out->end_offset = db->head.off + KEEL_HEAD_SIZE;
	out->live_bytes = db->head.live_bytes;
	out->keys = db->head.keys;
	out->txid = db->head.txid;
	out->commits = db->n_commits;
	out->syncs = db->n_syncs;
	out->compactions = db->n_compactions;
	out->checkpoints = db->n_checkpoints;
	out->pending_heads = db->head.pending_heads;
	out->pending_bytes = db->head.pending_bytes;
	out->format_version = db->version;
	out->growths = db->n_growths;
	out->growths_inline = db->n_growths_inline;
	out->space_bound = (db->flags & (KEEL_NOCOMPACT | KEEL_RDONLY)) ? 0
	                 : policy_bytes(policy_live(&db->head), POLICY_CAP_Q,
	                                db->compact_slack);
	pthread_mutex_unlock(&db->mu);
	return KEEL_OK;
}

int keel_check(keel_db *db, keel_check_report_fn report, void *arg,
               keel_check_result *out)
{
	keel_check_result local;
	keel_head head;
	keel_map *map;
	pend_gen *pend;

	if (!db)
		return KEEL_EINVAL;
	db_pin(db, &head, &map, &pend);
	pend_gen_release(pend); /* the check reads the file, not the index */
	int rc = verify_tree(map->base, map->len, &head, report, arg,
	                     out ? out : &local);
	map_release(map);
	return rc;
}
