/*
 * compact.c -- online compaction: the live tree is rewritten into a new file
 * which then replaces the old one, while readers and writers go on.
 *
 *   1. pin a snapshot S0 (writers go on committing to the old file)
 *   2. bulk-load S0's keys, in order, into PATH.compact: values copied
 *      verbatim, leaves and branches packed bottom-up, a first head
 *   3. stop the commit pipeline (writers queue, nobody is acknowledged)
 *   4. catch up: the difference between S0 and the newest head, found by
 *      merging the two trees in key order, is committed into the new file
 *   5. one fsync of the new file, lock it, rename it over PATH, fsync the
 *      directory
 *   6. switch the handle to the new file and map; restart the pipeline
 *
 * CRASH INVARIANTS
 *  (1) Until the rename is durable, PATH is the old file, complete.
 *  (2) The new file is synced before the rename, so once PATH names it, it
 *      is complete: its superblock says where its first head is, and that
 *      head is trusted without reading its region (format.h).
 *  (3) No commit is acknowledged between step 3 and the end of step 5, so no
 *      acknowledged write lives only in the file that loses.
 *  (4) A failure after the rename (the directory sync) leaves it unknown
 *      which file a crash would keep: the handle fails (fail-stop).
 *  (5) Views and snapshots of the old file keep its mapping; it is unmapped
 *      when the last of them is released.  The old bytes never change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "crc32c.h"
#include "internal.h"

/* The new file is written in pieces that end on 2 MiB boundaries, so the
 * page cache holds it in 2 MiB folios that the mapping can use as huge pages
 * (io_posix.c), as the zero-filled growth of a live file does (db.c). */
#define COMPACT_BUF ((size_t)2 << 20)
#define FILL(level) (KEEL_NODE_MAX(level) * 3 / 4) /* pack nodes this full */
#define AUTO_MIN_END ((uint64_t)512 << 10)

/* ---- a sequential writer for the new file ---------------------------------- */
typedef struct seqw {
	const keel_io *io;
	int fd;
	uint8_t *buf;
	size_t used;
	uint64_t pos;  /* file offset of the next byte appended  */
	uint64_t flushed;
	uint32_t crc;  /* running CRC over every byte appended     */
	int err;
} seqw;

static void seqw_flush(seqw *w)
{
	if (w->err || w->used == 0)
		return;
	int e = keel_io_pwrite_all(w->io, w->fd, w->buf, w->used, w->flushed);
	if (e)
		w->err = keel_err_from_errno(e);
	w->flushed += w->used;
	w->used = 0;
}

static void seqw_append(seqw *w, const void *p, size_t len)
{
	const uint8_t *b = p;
	w->crc = keel_crc32c(w->crc, p, len);
	w->pos += len;
	while (len > 0 && !w->err) {
		/* this piece ends at the next 2 MiB boundary of the file */
		size_t room = COMPACT_BUF - (size_t)(w->flushed % COMPACT_BUF) - w->used;
		size_t n = room < len ? room : len;
		memcpy(w->buf + w->used, b, n);
		w->used += n;
		b += n;
		len -= n;
		if (n == room)
			seqw_flush(w);
	}
}

/* ---- bulk loading a tree bottom-up ---------------------------------------- */
typedef struct pentry {
	const uint8_t *key;
	const uint8_t *inl; /* leaf: the inline value, or NULL */
	uint16_t klen;
	uint32_t vlen, crc;
	uint64_t off, rev;
} pentry;

/* Bytes entry E takes in a node of LEVEL, its slot included. */
static uint32_t pentry_size(int level, const pentry *e)
{
	return keel_slot_ent_size(level == 0, e->klen, e->inl != NULL, e->vlen);
}

typedef struct plevel {
	pentry *e;
	size_t count, cap;
	uint32_t size;    /* payload bytes of the pending node */
	uint64_t flushed; /* nodes written at this level        */
} plevel;

typedef struct loader {
	seqw *w;
	plevel lv[TREE_MAX_DEPTH];
	int top;          /* highest level with anything        */
	uint64_t keys, live;
	uint64_t root_off;
	uint32_t root_crc;
	uint8_t *node;    /* scratch for encoding one node      */
} loader;

static int level_push(loader *l, int level, const pentry *e)
{
	plevel *p = &l->lv[level];
	if (p->count == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		pentry *ne = realloc(p->e, cap * sizeof(*ne));
		if (!ne)
			return KEEL_ENOMEM;
		p->e = ne;
		p->cap = cap;
	}
	if (p->count == 0)
		p->size = KEEL_NODE_HDR;
	p->e[p->count++] = *e;
	p->size += pentry_size(level, e);
	if (level > l->top)
		l->top = level;
	return KEEL_OK;
}

static int loader_add(loader *l, int level, const pentry *e);

/* Writes the pending node of LEVEL and hands its reference upwards. */
static int level_flush(loader *l, int level, bool root)
{
	plevel *p = &l->lv[level];
	uint8_t *rec = l->node, *pl = rec + KEEL_REC_HDR;
	const pentry *first = &p->e[0], *last = &p->e[p->count - 1];
	uint32_t eo = keel_node_begin(pl, (uint8_t)level, (uint16_t)p->count,
	                              first->key, first->klen, last->key,
	                              last->klen);

	for (size_t i = 0; i < p->count; i++) {
		const pentry *e = &p->e[i];
		uint8_t *d = pl + eo;
		keel_node_set_slot(pl, (unsigned)i, eo, e->key, e->klen);
		if (level == 0) {
			keel_leaf_ent le = {.key = e->key, .klen = e->klen,
			                    .inl = e->inl, .vlen = e->vlen,
			                    .voff = e->off, .vcrc = e->crc, .rev = e->rev};
			eo += keel_leaf_ent_encode(d, &le);
		} else {
			eo += keel_branch_ent_encode(d, e->key, e->klen, e->crc, e->off);
		}
	}
	uint64_t size = keel_rec_size(eo);
	memset(pl + eo, 0, size - KEEL_REC_HDR - eo);
	keel_rec_encode(rec, level ? KEEL_REC_BRANCH : KEEL_REC_LEAF, pl, eo);
	pentry up = {.key = p->e[0].key, .klen = p->e[0].klen,
	             .crc = keel_ld32(rec + 12), .off = l->w->pos};
	seqw_append(l->w, rec, size);
	l->live += size;
	p->count = 0;
	p->flushed++;
	if (root) {
		l->root_off = up.off;
		l->root_crc = up.crc;
		return KEEL_OK;
	}
	return loader_add(l, level + 1, &up);
}

static int loader_add(loader *l, int level, const pentry *e)
{
	plevel *p = &l->lv[level];
	uint32_t add = pentry_size(level, e);
	if (p->count >= 2 && p->size + add > FILL(level)) { /* >= 2: fanout */
		if (level + 1 >= TREE_MAX_DEPTH)
			return KEEL_ETOOBIG;
		int rc = level_flush(l, level, false);
		if (rc)
			return rc;
	}
	return level_push(l, level, e);
}

/* Flushes every level; the last node standing is the root. */
static int loader_finish(loader *l)
{
	for (int level = 0; level <= l->top; level++) {
		plevel *p = &l->lv[level];
		if (p->count == 0)
			continue;
		bool root = level == l->top && p->flushed == 0;
		int rc = level_flush(l, level, root);
		if (rc)
			return rc;
	}
	return l->w->err;
}

static void loader_free(loader *l)
{
	for (int i = 0; i < TREE_MAX_DEPTH; i++)
		free(l->lv[i].e);
	free(l->node);
}

/* Copies every key of the state at S0 (its tree in M overlaid with its
 * pending entries P0, D6), in order, into the new file. */
static int bulk_load(keel_map *m, const keel_head *s0, const pend_gen *p0,
                     seqw *w, loader *l)
{
	merge_cursor cur;
	tree_leaf_entry e;
	const uint8_t *data;
	int rc = merge_seek(&cur, m, s0, p0, NULL, 0, NULL, 0);

	while (rc == KEEL_OK && (rc = merge_next(&cur, &e)) == KEEL_OK) {
		if ((rc = tree_value(m, &e, &data)))
			break;
		pentry pe = {.key = e.key, .klen = e.klen, .vlen = e.vlen,
		             .rev = e.rev};
		if (e.vlen <= KEEL_INLINE_MAX) { /* the writers' rule */
			pe.inl = data;
		} else if (e.inl) {
			/* Inlined by another writer's rule: give it a record. */
			uint8_t hdr[KEEL_REC_HDR];
			static const uint8_t zeros[8];
			uint64_t size = keel_rec_size(e.vlen);
			keel_rec_encode(hdr, KEEL_REC_VALUE, data, e.vlen);
			pe.crc = keel_ld32(hdr + 12);
			pe.off = w->pos;
			seqw_append(w, hdr, sizeof(hdr));
			seqw_append(w, data, e.vlen);
			seqw_append(w, zeros, size - KEEL_REC_HDR - e.vlen);
			l->live += size;
		} else {
			/* The record is position-independent: copy it whole. */
			uint64_t size = keel_rec_size(e.vlen);
			pe.crc = e.vcrc;
			pe.off = w->pos;
			seqw_append(w, data - KEEL_REC_HDR, size);
			l->live += size;
		}
		l->keys++;
		rc = loader_add(l, 0, &pe);
	}
	merge_free(&cur);
	if (rc == KEEL_ENOTFOUND)
		rc = KEEL_OK;
	return rc ? rc : loader_finish(l);
}

/* ---- the new file ---------------------------------------------------------- */
typedef struct newfile {
	char *tmp;
	int fd;
	uint64_t file_id;
	keel_head head;   /* its newest head */
	uint64_t size;
	keel_map *map;
} newfile;

/* Gives the new file FD the identity of the store's file: its owner and
 * group where this process may set them (root, or a group it is in: EPERM
 * is ignored and the new file stays this process's), then its mode, set
 * exactly (no umask).  Ownership and mode are metadata, not bytes a crash
 * could lose: they are set on the descriptor, outside the I/O seam, before
 * the file is synced and renamed. */
static int newfile_identity(const keel_db *db, int fd)
{
	struct stat st;
	if (fstat(db->fd, &st))
		return keel_err_from_errno(-errno);
	if (fchown(fd, st.st_uid, st.st_gid) && errno != EPERM)
		return keel_err_from_errno(-errno);
	if (fchmod(fd, st.st_mode & 07777))
		return keel_err_from_errno(-errno);
	return KEEL_OK;
}

/* Steps 1-2: the new file with S0's tree and its first head. */
static int newfile_build(keel_db *db, keel_map *m, const keel_head *s0,
                         const pend_gen *p0, newfile *nf)
{
	const keel_io *io = db->io;
	seqw w = {.io = io, .pos = KEEL_DATA_START, .flushed = KEEL_DATA_START};
	loader l = {.w = &w};
	uint8_t sb[KEEL_SUPER_SIZE], hb[KEEL_HEAD_SIZE];
	int rc;

	if (getrandom(&nf->file_id, sizeof(nf->file_id), 0) != sizeof(nf->file_id))
		nf->file_id = keel_now_ns();
	io->unlink(io->ctx, nf->tmp); /* a leftover of a crashed compaction */
	/* Readable by this process alone until it has the store's identity. */
	nf->fd = io->open(io->ctx, nf->tmp, KEEL_IO_CREATE | KEEL_IO_EXCL, 0600);
	if (nf->fd < 0)
		return keel_err_from_errno(nf->fd);
	if ((rc = newfile_identity(db, nf->fd)))
		return rc;
	w.fd = nf->fd;
	w.buf = malloc(COMPACT_BUF);
	l.node = malloc(KEEL_REC_HDR + KEEL_BRANCH_MAX + 4096);
	rc = (w.buf && l.node) ? bulk_load(m, s0, p0, &w, &l) : KEEL_ENOMEM;
	if (rc == KEEL_OK) {
		keel_head *h = &nf->head;
		*h = (keel_head){.txid = s0->txid, .region_start = KEEL_DATA_START,
		                 .root_off = l.root_off, .root_crc = l.root_crc,
		                 .chain_crc = w.crc, .keys = l.keys,
		                 .live_bytes = l.live + KEEL_HEAD_SIZE,
		                 .time_ns = keel_now_ns(), .file_id = nf->file_id,
		                 .off = w.pos};
		keel_head_encode(hb, h);
		seqw_append(&w, hb, sizeof(hb));
		seqw_flush(&w);
		rc = w.err;
	}
	if (rc == KEEL_OK) {
		keel_super s = {.version = KEEL_FORMAT_VERSION, .block_size = KEEL_BLOCK,
		                .file_id = nf->file_id, .data_start = KEEL_DATA_START,
		                .base_txid = s0->txid, .first_head = nf->head.off};
		keel_super_encode(sb, &s);
		nf->size = grow_size(w.pos, grow_default_step(w.pos));
		int e = keel_io_pwrite_all(io, nf->fd, sb, sizeof(sb), 0);
		rc = keel_err_from_errno(e);
		if (rc == KEEL_OK)
			rc = grow_preallocate(io, nf->fd, w.pos, nf->size, db->flags);
	}
	if (rc == KEEL_OK)
		rc = map_create(io, nf->fd, nf->size, &nf->map);
	free(w.buf);
	loader_free(&l);
	return rc;
}

/* Adds to OPS what changed between the states at A and B (trees in M
 * overlaid with their generations PA and PB: D6). */
static int diff_states(keel_map *m, const keel_head *a, const pend_gen *pa,
                       const keel_head *b, const pend_gen *pb, tree_op **ops,
                       size_t *n)
{
	merge_cursor ca = {0}, cb = {0};
	tree_leaf_entry ea, eb;
	size_t cap = 0;
	int rc, ra, rb;

	*n = 0;
	*ops = NULL;
	if ((rc = merge_seek(&ca, m, a, pa, NULL, 0, NULL, 0)) ||
	    (rc = merge_seek(&cb, m, b, pb, NULL, 0, NULL, 0)))
		goto out_free;
	ra = merge_next(&ca, &ea);
	rb = merge_next(&cb, &eb);
	while (ra == KEEL_OK || rb == KEEL_OK) {
		int c;
		if (ra != KEEL_OK)
			c = 1;
		else if (rb != KEEL_OK)
			c = -1;
		else
			c = keel_key_cmp(ea.key, ea.klen, eb.key, eb.klen);
		if (c == 0 && ea.voff == eb.voff && ea.rev == eb.rev) {
			ra = merge_next(&ca, &ea);
			rb = merge_next(&cb, &eb);
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			tree_op *no = realloc(*ops, cap * sizeof(*no));
			if (!no) {
				rc = KEEL_ENOMEM;
				goto out_free;
			}
			*ops = no;
		}
		tree_op *op = &(*ops)[(*n)++];
		if (c < 0) { /* gone in B */
			*op = (tree_op){.key = ea.key, .klen = ea.klen, .expect = KEEL_REV_ANY};
			ra = merge_next(&ca, &ea);
			continue;
		}
		const uint8_t *data;
		if ((rc = tree_value(m, &eb, &data)))
			goto out_free;
		*op = (tree_op){.key = eb.key, .klen = eb.klen, .val = data,
		                .vlen = eb.vlen, .expect = KEEL_REV_ANY, .rev = eb.rev};
		if (c == 0)
			ra = merge_next(&ca, &ea);
		rb = merge_next(&cb, &eb);
	}
	if ((ra != KEEL_OK && ra != KEEL_ENOTFOUND) ||
	    (rb != KEEL_OK && rb != KEEL_ENOTFOUND))
		rc = KEEL_ECORRUPT;
out_free:
	merge_free(&ca);
	merge_free(&cb);
	return rc;
}

/* Makes the new file and its map cover NEED bytes.  Called after the
 * catch-up is serialized: nothing reads the map it replaces any more. */
static int newfile_grow(keel_db *db, newfile *nf, uint64_t need)
{
	uint64_t size = grow_size(need, grow_default_step(need));
	keel_map *m;
	int rc = grow_preallocate(db->io, nf->fd, nf->size, size, db->flags);
	if (rc)
		return rc;
	rc = map_create(db->io, nf->fd, size, &m);
	if (rc)
		return rc;
	map_release(nf->map);
	nf->map = m;
	nf->size = size;
	return KEEL_OK;
}

/* Step 4: commits what changed since S0 into the new file. */
static int newfile_catch_up(keel_db *db, keel_map *m, const keel_head *s0,
                            const pend_gen *p0, const keel_head *now,
                            const pend_gen *pnow, newfile *nf)
{
	tree_op *ops = NULL;
	size_t n = 0;
	tree_builder *b = NULL;
	tree_region region;
	keel_head head = {0};
	uint8_t hb[KEEL_HEAD_SIZE];

	if (now->txid == s0->txid)
		return KEEL_OK;
	int rc = diff_states(m, s0, p0, now, pnow, &ops, &n);
	if (rc == KEEL_OK)
		rc = tree_builder_new(nf->map, &nf->head, now->txid,
		                      nf->head.off + KEEL_HEAD_SIZE, &b);
	if (rc == KEEL_OK && n > 0)
		rc = tree_apply(b, ops, n, NULL);
	if (rc == KEEL_OK)
		rc = tree_serialize(b, &head, &region);
	if (rc == KEEL_OK && head.off + KEEL_HEAD_SIZE > nf->size)
		rc = newfile_grow(db, nf, head.off + KEEL_HEAD_SIZE);
	if (rc == KEEL_OK) {
		head.prev_head = nf->head.off;
		head.file_id = nf->file_id;
		head.time_ns = keel_now_ns();
		keel_head_encode(hb, &head);
		rc = commit_write_region(db->io, nf->fd, &region, hb,
		                         head.region_start);
		if (rc == KEEL_OK)
			nf->head = head;
	}
	tree_builder_free(b);
	free(ops);
	return rc;
}

/* Steps 3-6, with the pipeline stopped.  Caller holds mu. */
static int switch_files(keel_db *db, keel_map *m, const keel_head *s0,
                        const pend_gen *p0, newfile *nf)
{
	const keel_io *io = db->io;
	int rc;

	/* No new group starts while the groups in flight finish: under a
	 * steady stream the pipeline would otherwise never be empty. */
	db->draining = true;
	while (db->building || db->leaders > 0)
		pthread_cond_wait(&db->published_cv, &db->mu);
	db->draining = false;
	if (db->failed) {
		commit_wake_front(db); /* the queued writers learn of it */
		return db->failed;
	}
	db->building = true; /* (3): writers queue, nobody is acknowledged */
	keel_head now = db->head;
	keel_map *cur = db->map;
	map_ref(cur);
	pend_gen *pnow = db->pend;
	pend_gen_ref(pnow);
	pend_gen *fresh = NULL; /* the new file's head has nothing pending */
	pthread_mutex_unlock(&db->mu);

	(void)m;
	rc = newfile_catch_up(db, cur, s0, p0, &now, pnow, nf);
	map_release(cur);
	pend_gen_release(pnow);
	if (rc == KEEL_OK)
		rc = pend_gen_new(nf->head.root_off, nf->head.root_crc, &fresh);
	int e = 0;
	if (rc == KEEL_OK && (e = io->fsync(io->ctx, nf->fd)) == 0 &&
	    (e = io->lock(io->ctx, nf->fd, 1, 0)) == 0)
		e = io->rename(io->ctx, nf->tmp, db->path);
	if (rc == KEEL_OK && e)
		rc = keel_err_from_errno(e);
	bool renamed = rc == KEEL_OK;
	if (renamed && (e = io->fsync_dir(io->ctx, db->dir)))
		rc = keel_err_from_errno(e);

	pthread_mutex_lock(&db->mu);
	if (renamed && rc) {
		db->failed = rc == KEEL_ENOSPC ? KEEL_ENOSPC : KEEL_EIO; /* (4) */
	} else if (rc == KEEL_OK) {
		io->close(io->ctx, db->fd); /* (5): the mapping outlives the fd */
		db->fd = nf->fd;
		nf->fd = -1;
		map_release(db->map);
		db->map = nf->map;
		nf->map = NULL;
		db->head = db->tail = nf->head;
		pend_gen_release(db->pend);
		pend_gen_release(db->tail_pend);
		db->pend = db->tail_pend = fresh;
		pend_gen_ref(fresh);
		fresh = NULL;
		db->version = KEEL_FORMAT_VERSION; /* compaction writes version 3 */
		db->append_end = nf->head.off + KEEL_HEAD_SIZE;
		atomic_fetch_add_explicit(&db->gen, 1, memory_order_release);
		db->file_id = nf->file_id;
		marker_publish(db); /* before any commit to the new file */
		db->file_size = nf->size;
		db->hint_txid = nf->head.txid;
		db->hint_bytes = 0;
		db->n_compactions++;
	}
	pend_gen_release(fresh);
	db->building = false;
	pthread_cond_broadcast(&db->published_cv);
	commit_wake_front(db);
	return rc;
}

int keel_compact(keel_db *db)
{
	newfile nf = {.fd = -1};
	keel_head s0;
	keel_map *m;
	int rc;

	if (!db)
		return KEEL_EINVAL;
	if (db->flags & KEEL_RDONLY)
		return KEEL_EREADONLY;
	pthread_mutex_lock(&db->mu);
	while (db->compacting && !db->failed) /* one at a time: wait our turn */
		pthread_cond_wait(&db->published_cv, &db->mu);
	if (db->failed) {
		rc = db->failed;
		commit_wake_front(db); /* held async groups learn of the failure */
		pthread_mutex_unlock(&db->mu);
		return rc;
	}
	db->compacting = true;
	s0 = db->head; /* (1) */
	m = db->map;
	map_ref(m);
	pend_gen *p0 = db->pend;
	pend_gen_ref(p0);
	pthread_mutex_unlock(&db->mu);

	if (asprintf(&nf.tmp, "%s.compact", db->path) < 0) {
		rc = KEEL_ENOMEM;
		goto out_release;
	}
	rc = newfile_build(db, m, &s0, p0, &nf);
	/* The bulk of the new file is made durable here, while writers go on
	 * committing: the sync in switch_files, with the pipeline stopped,
	 * then has only the catch-up left to write back. */
	if (rc == KEEL_OK)
		rc = keel_err_from_errno(db->io->fsync(db->io->ctx, nf.fd));
	pthread_mutex_lock(&db->mu);
	if (rc == KEEL_OK)
		rc = switch_files(db, m, &s0, p0, &nf);
	pthread_mutex_unlock(&db->mu);

out_release:
	map_release(m);
	pend_gen_release(p0);
	map_release(nf.map);
	/* A failed compaction removes its file while it still holds
	 * `compacting`: the next one (the automatic policy's or a caller's)
	 * creates the same name, and must not lose it to this unlink. */
	if (nf.fd >= 0) {
		db->io->close(db->io->ctx, nf.fd);
		db->io->unlink(db->io->ctx, nf.tmp);
	}
	free(nf.tmp);
	pthread_mutex_lock(&db->mu);
	db->compacting = false;
	pthread_cond_broadcast(&db->published_cv); /* held sync writers */
	commit_wake_front(db);                     /* held async groups */
	pthread_mutex_unlock(&db->mu);
	return rc;
}

/* ---- the automatic policy ------------------------------------------------ */

static void *compactor_main(void *arg)
{
	keel_db *db = arg;

	commit_thread_sched(db);
	pthread_mutex_lock(&db->mu);
	while (!db->closing) {
		if (!db->compact_wanted) {
			pthread_cond_wait(&db->compactor.cv, &db->mu);
			continue;
		}
		db->compact_wanted = false;
		pthread_mutex_unlock(&db->mu);
		int rc = keel_compact(db); /* a failure leaves the store as it was */
		pthread_mutex_lock(&db->mu);
		/* After a failure (a full disk, an unwritable directory) the next
		 * try waits until the store has grown by its live bytes again:
		 * retried at every publish, a failing compaction rebuilt the whole
		 * live tree per commit, and held writers back each time. */
		uint64_t end = db->head.off + KEEL_HEAD_SIZE, live = policy_live(&db->head);
		db->compact_retry_end = rc == KEEL_OK ? 0
		                      : end + (live > AUTO_MIN_END ? live : AUTO_MIN_END);
	}
	pthread_mutex_unlock(&db->mu);
	return NULL;
}

void compact_maybe_schedule(keel_db *db)
{
	uint64_t end = db->head.off + KEEL_HEAD_SIZE;
	if ((db->flags & (KEEL_NOCOMPACT | KEEL_RDONLY)) || db->compacting ||
	    db->compact_wanted || db->closing || end < AUTO_MIN_END ||
	    end < policy_bytes(policy_live(&db->head), POLICY_COMPACT_Q,
	                        db->compact_slack) ||
	    end < db->compact_retry_end)
		return;
	/* the wanted flag is set under mu, before the woken thread can look */
	if (db_worker_wake(db, &db->compactor, compactor_main))
		db->compact_wanted = true;
}
