/*
 * internal.h -- what the engine's modules share and nobody else sees.
 *
 *   map.c     reference-counted read-only mappings of the data file
 *   tree.c    B+tree lookups and cursors over a mapping; the copy-on-write
 *             builder a commit group modifies and then serializes
 *   batch.c   keel_batch
 *   commit.c  the group-commit pipeline
 *   db.c      open, close, reads, snapshots, stats
 *   compact.c online compaction
 *   grow.c    growing the data file, ahead of need
 *   marker.c  the durable marker a reader process stops at
 */
#ifndef KEEL_INTERNAL_H
#define KEEL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "format.h"
#include "io.h"
#include "keel.h"

/* The format's key limit (floor 0) is the API's. */
_Static_assert(KEEL_FORMAT_KEY_MAX == KEEL_KEY_MAX, "one key limit");

/* ---- the automatic compaction policy's space bounds ------------------------
 * Each threshold is the larger of a share of the live bytes and the live
 * bytes plus a share of the slack (keel_options.compact_slack): compaction
 * is due when the part of the file in use reaches POLICY_COMPACT_Q
 * (compact.c), new writes wait for a lagging compaction past POLICY_HOLD_Q
 * (commit.c; only past POLICY_HOLD_MIN_END), and the file's growth stops at
 * POLICY_CAP_Q (grow.c), so the file with its preallocated slack stays
 * within max(2.5 x live, live + slack).  Q counts quarters of the live
 * bytes (8: twice live); the slack's share is (Q - 4) / 6 of it (8: two
 * thirds, 9: five sixths, 10: all), so both forms put the three thresholds
 * at the same places relative to the dead bytes the bound allows. */
#define POLICY_COMPACT_Q 8u
#define POLICY_HOLD_Q 9u
#define POLICY_CAP_Q 10u
#define POLICY_HOLD_MIN_END ((uint64_t)1 << 20)
_Static_assert(POLICY_COMPACT_Q < POLICY_HOLD_Q && POLICY_HOLD_Q < POLICY_CAP_Q,
               "compaction is due before writers wait, and they wait before "
               "the file reaches its bound");
_Static_assert(POLICY_COMPACT_Q > 4, "the slack's share must be positive");

/* The policy's threshold Q for LIVE bytes and SLACK: max(Q/4 x LIVE,
 * LIVE + SLACK x (Q-4)/6), UINT64_MAX where that overflows. */
static inline uint64_t policy_bytes(uint64_t live, unsigned q, uint64_t slack)
{
	uint64_t share = live / 4 > UINT64_MAX / q ? UINT64_MAX : live / 4 * q;
	uint64_t extra = (uint64_t)((unsigned __int128)slack * (q - 4) / 6);
	uint64_t floor = extra > UINT64_MAX - live ? UINT64_MAX : live + extra;
	return share > floor ? share : floor;
}

/* The live bytes the policy bounds: those of the head's checkpointed tree
 * (and the head), without its pending span.  A checkpoint turns the whole
 * span from live into dead bytes at once, so a bound on the live bytes
 * with the span in them would fall at every checkpoint, below a file that
 * was within it; the span is carried by the slack instead (at least twice
 * the checkpoint bound, db.c), as the compaction carries dead bytes. */
static inline uint64_t policy_live(const keel_head *h)
{
	return h->live_bytes - h->pending_bytes;
}

/* ---- mappings (map.c) ------------------------------------------------------
 * A keel_map is one read-only MAP_SHARED mapping of a data file.  The db holds
 * one reference to its current map; every snapshot, view, iterator and commit
 * leader holds another.  Growth or compaction installs a new map and drops the
 * db's reference to the old one, which is unmapped when its last holder lets
 * go.  Because the file is append-only, bytes under a map never change while
 * it is mapped (compaction writes a new file), so a view can never see its
 * bytes change.
 */
/* A reference count with a destructor: what a view holds on to.  A view
 * from keel_get pins the map it read; a view from a snapshot pins the
 * snapshot (whose count lives on the reading thread's cache line, not on
 * the map shared by every reader). */
typedef struct keel_pin {
	atomic_long refs;
	void (*destroy)(struct keel_pin *p);
	struct keel_map *map; /* the mapping a view holding the pin reads */
} keel_pin;

static inline void pin_ref(keel_pin *p)
{
	atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
}

static inline void pin_release(keel_pin *p)
{
	if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
		p->destroy(p);
}

typedef struct keel_map {
	keel_pin pin;       /* first: a view may hold the map as a keel_pin */
	const keel_io *io;
	uint8_t *base;      /* mapping of [0, len)                          */
	size_t len;
	/* One bit per 16 bytes of file (a record is at least 16 bytes, so at
	 * most one starts in each): set once the record starting there passed
	 * its CRC check and, for a node, its structure check, so hot reads
	 * verify a node or value only once.  Anonymous memory, so untouched
	 * parts cost nothing. */
	_Atomic uint64_t *verified;
	/* One bit per 8 bytes, set over the whole extent of each verified
	 * record: records never overlap, so a record whose extent meets a
	 * verified one is refused -- a crafted file cannot make N nested
	 * records cost N times their bytes of CRC. */
	_Atomic uint64_t *covered;
	size_t verified_len; /* bytes of 'verified'; 'covered' has twice that */
	/* A descriptor of the mapped file of its own (a dup, closed with the
	 * map), or -1: made only where the mapping is the kernel's page
	 * cache of the file (the POSIX backend), so pread or sendfile of
	 * [off, off+len) gives the bytes at base + off -- keel_view_file. */
	int fd;
} keel_map;

int map_create(const keel_io *io, int fd, size_t len, keel_map **out);
void map_ref(keel_map *m);
void map_release(keel_map *m);

/* Returns the record at OFF after checking it lies inside the map, has
 * TYPE and the CRC the referrer recorded (EXPECT_CRC, the Merkle link), and
 * -- once per map -- that the CRC matches its bytes and VALIDATE (may be
 * NULL) accepts its payload.  NULL when invalid. */
typedef bool (*map_validate_fn)(const uint8_t *payload, uint32_t len,
                                uint8_t type);
const uint8_t *map_record(keel_map *m, uint64_t off, uint8_t type,
                          uint32_t expect_crc, uint32_t *len,
                          map_validate_fn validate);

/* ---- reading the tree (tree.c) --------------------------------------------- */
typedef keel_leaf_ent tree_leaf_entry; /* inl: inline value, or NULL */

/* Finds KEY below ROOT in map M.  KEEL_OK with *out, KEEL_ENOTFOUND or
 * KEEL_ECORRUPT. */
int tree_lookup(keel_map *m, uint64_t root, uint32_t root_crc,
                const void *key, size_t klen, tree_leaf_entry *out);

/* tree_value for a value in its own VALUE record (tree.c). */
int tree_value_record(keel_map *m, const tree_leaf_entry *e,
                      const uint8_t **data);
/* Resolves a leaf entry to the value's bytes: inline in its (checked) leaf,
 * or its own VALUE record, CRC-checked.  KEEL_OK or KEEL_ECORRUPT.  Inline:
 * a scan asks for every entry's value, and most are inline. */
static inline int tree_value(keel_map *m, const tree_leaf_entry *e,
                             const uint8_t **data)
{
	if (e->inl) {
		*data = e->inl;
		return KEEL_OK;
	}
	return tree_value_record(m, e, data);
}

#define TREE_MAX_DEPTH 48
/* The stack holds the path from the root to the current leaf.  Beside it,
 * the leaf being read has a short cut of its own (leaf, slots, li, lend):
 * tree_cursor_next takes the leaf's next entry from it without a call, and
 * leaves everything else -- the first entry of each leaf, stepping to the
 * next leaf, the end, damage -- to tree_cursor_step. */
typedef struct tree_cursor {
	const uint8_t *leaf;              /* short cut: the leaf's payload    */
	const uint8_t *slots;             /* its slots                        */
	uint16_t li, lend;                /* its next entry and its count;
	                                     li == lend: take the slow path   */
	int depth;                        /* levels on the stack            */
	keel_map *m;
	uint64_t prefetched;              /* the leaf asked for ahead, or 0   */
	const uint8_t *node[TREE_MAX_DEPTH]; /* node payloads, root first   */
	uint16_t index[TREE_MAX_DEPTH];   /* the leaf's: stale while the
	                                     short cut is in use             */
	uint16_t count[TREE_MAX_DEPTH];
	const uint8_t *last_key;          /* the key returned last, in the map;
	                                     stale while the short cut is in use */
	uint16_t last_klen;
	bool done;
	bool broken;                      /* found damage: KEEL_ECORRUPT on   */
} tree_cursor;

/* Positions C before the first key >= START (or the first key at all). */
int tree_cursor_seek(tree_cursor *c, keel_map *m, uint64_t root,
                     uint32_t root_crc, const void *start, size_t slen);
/* tree_cursor_next's slow path (tree.c). */
int tree_cursor_step(tree_cursor *c, tree_leaf_entry *out);

/* The short cut alone: the next entry of the current leaf (its raw bytes,
 * which passed node_valid), taken; or NULL, taking nothing, when
 * tree_cursor_step must decide.  An entry inside the leaf whose previous
 * entry was just returned only needs its slot's head to be above that
 * entry's -- heads are the key's first four bytes past the node's prefix,
 * checked against the key when the node was first read (node_valid), so a
 * higher head means a higher key.  A tie, and the first entry of every leaf
 * (compared with the previous leaf's last key), take the slow path. */
static inline const uint8_t *tree_cursor_next_fast(tree_cursor *c)
{
	unsigned i = c->li;
	if (i >= c->lend)
		return NULL;
	const uint8_t *s = c->slots + KEEL_SLOT * i;
	if (keel_slot_head(s) <= keel_slot_head(s - KEEL_SLOT))
		return NULL;
	c->li = (uint16_t)(i + 1);
	return c->leaf + keel_ld16(s);
}

/* KEEL_OK with the next leaf entry, KEEL_ENOTFOUND at the end, or
 * KEEL_ECORRUPT (from then on) when a node fails its checks or a key does
 * not follow the previous one strictly.  Inline, as the inner loop of
 * every scan. */
static inline int tree_cursor_next(tree_cursor *c, tree_leaf_entry *out)
{
	const uint8_t *e = tree_cursor_next_fast(c);
	if (!e)
		return tree_cursor_step(c, out);
	keel_leaf_ent_decode(e, out);
	return KEEL_OK;
}

/* Decoders for node payloads (tree.c). */
static inline uint16_t node_count(const uint8_t *p) { return keel_ld16(p); }
static inline uint8_t node_level(const uint8_t *p) { return p[2]; }

/* ---- the pending index (pending.c) -----------------------------------------
 * Version 3's DELTA entries not yet in the tree, per checkpointed root (a
 * generation); invariants P1-P3 at the top of pending.c. */
enum { PEND_INLINE = 1, PEND_REF = 2, PEND_DELETE = 3 };
typedef struct pend_ver {
	struct pend_ver *older; /* the key's previous version, or NULL       */
	uint64_t txid;          /* the head whose DELTA record holds it       */
	uint64_t voff;          /* INLINE: the value bytes' file offset;
	                           REF: the VALUE record; DELETE: 0           */
	uint32_t vlen, vcrc;
	uint8_t kind;           /* PEND_INLINE, PEND_REF, PEND_DELETE         */
} pend_ver;
typedef struct pend_key {
	struct pend_key *next;  /* the bucket's next key                      */
	struct pend_key *all;   /* the next key of the generation's list      */
	_Atomic(pend_ver *) newest;
	uint32_t hash;
	uint16_t klen;
	uint8_t key[];
} pend_key;
typedef struct pend_gen pend_gen;
typedef struct pend_item {
	const pend_key *k;
	const pend_ver *v;      /* its newest version visible to the reader   */
} pend_item;

int pend_gen_new(uint64_t root_off, uint32_t root_crc, pend_gen **out);
void pend_gen_ref(pend_gen *g);
void pend_gen_release(pend_gen *g);  /* NULL: nothing */
bool pend_gen_empty(const pend_gen *g);
/* Does G overlay the tree at ROOT? */
bool pend_gen_for(const pend_gen *g, uint64_t root_off, uint32_t root_crc);
uint64_t pend_gen_last_txid(const pend_gen *g);
/* The newest version of KEY with txid at most TXID, or NULL. */
const pend_ver *pend_lookup(const pend_gen *g, const void *key, size_t klen,
                            uint64_t txid);
const pend_ver *pend_visible(const pend_key *k, uint64_t txid);
/* Adds one version (the single writer, P1).  KEEL_OK or KEEL_ENOMEM. */
int pend_add(pend_gen *g, const uint8_t *key, uint16_t klen, uint64_t txid,
             uint8_t kind, uint64_t voff, uint32_t vlen, uint32_t vcrc);
/* Adds every entry of the DELTA payload P (LEN bytes, checked with
 * keel_delta_valid) found at file offset PAYLOAD_OFF, for head TXID. */
int pend_add_delta(pend_gen *g, const uint8_t *p, uint32_t len,
                   uint64_t payload_off, uint64_t txid);
/* A version as a leaf entry of map M (an inline value resolved into M). */
int pend_entry(keel_map *m, const pend_key *k, const pend_ver *v,
               tree_leaf_entry *out);
/* The keys with a version visible at TXID, at or after LO (may be NULL)
 * and starting with PREFIX (PLEN 0: any), sorted; *OUT is malloc'd. */
int pend_collect(const pend_gen *g, uint64_t txid, const void *lo, size_t lolen,
                 const void *prefix, size_t plen, pend_item **out, size_t *n);

/* The state at a head (D1): its tree overlaid with its generation, in key
 * order, deletes applied. */
typedef struct pend_view pend_view; /* a generation's keys, sorted   */
void pend_view_release(pend_view *v); /* NULL: nothing                */
typedef struct merge_cursor {
	tree_cursor tc;
	keel_map *m;
	pend_view *view;        /* the generation's sorted keys (a reference)*/
	size_t vi;              /* the view's next key                       */
	pend_item vp;           /* the view's next visible key, when have_vp */
	bool have_vp;
	pend_item *items;       /* keys added after the view, sorted         */
	size_t n, i;
	uint64_t txid;          /* the state's head: what is visible (P2)    */
	const void *prefix;     /* the caller's, kept while the cursor lives */
	size_t plen;
	tree_leaf_entry te;     /* the tree's next entry, when have_tree     */
	bool have_tree;
	bool tree_only;         /* no pending key at all: the tree's entries
	                           go out as they are                        */
	int tree_rc;
} merge_cursor;
int merge_seek(merge_cursor *c, keel_map *m, const keel_head *h,
               const pend_gen *g, const void *start, size_t slen,
               const void *prefix, size_t plen);
/* merge_next with pending keys to merge (pending.c). */
int merge_next_pending(merge_cursor *c, tree_leaf_entry *out);
/* The next entry of the state in key order: KEEL_OK, KEEL_ENOTFOUND at the
 * end, or KEEL_ECORRUPT from then on.  Inline: without pending keys (a
 * checkpointed state, the common case for a reader) an entry costs no call
 * at all. */
static inline int merge_next(merge_cursor *c, tree_leaf_entry *out)
{
	if (c->tree_only)
		return tree_cursor_next(&c->tc, out);
	return merge_next_pending(c, out);
}
void merge_free(merge_cursor *c);

/* ---- building a commit (tree.c) --------------------------------------------
 * A tree_builder turns a sequence of puts and deletes into dirty in-memory
 * nodes (copied on write from the mapping), then serializes values, nodes
 * and nothing else into the bytes of one commit region.
 */
typedef struct tree_builder tree_builder;

/* What one op changes; filled by tree_apply. */
typedef struct tree_op {
	const uint8_t *key;
	size_t klen;
	const uint8_t *val; /* NULL for a delete */
	size_t vlen;
	uint64_t expect;
	uint64_t rev;       /* 0: the commit's txid; compaction keeps the old */
	/* A checkpoint applies pending entries (docs/engine.md, D2): */
	uint64_t voff;      /* non-zero: the value is the VALUE record here,
	                       referenced where it is, not copied (VAL unused) */
	uint32_t vcrc;      /* that record's crc                              */
	bool uncond;        /* no expectation checked; deleting a missing key
	                       is a no-op                                     */
} tree_op;

int tree_builder_new(keel_map *m, const keel_head *base, uint64_t txid,
                     uint64_t region_start, tree_builder **out);
/* Applies OPS[0..n) atomically: every expectation is checked first against
 * the state including earlier ops; on KEEL_ECONFLICT (or KEEL_ENOTFOUND for
 * deleting a missing key) nothing is applied and *failed names the op. */
int tree_apply(tree_builder *b, const tree_op *ops, size_t n, size_t *failed);
/* Lays out the region: appends iovecs of (value headers, value bytes,
 * node records) starting at region_start, and fills the new head's root,
 * keys and live_bytes.  Returns the region's length. */
typedef struct tree_region {
	struct iovec *iov;
	size_t iovcnt;
	uint64_t len;       /* bytes in the region                          */
	uint32_t crc;       /* CRC32C over the region, seeded by base chain */
} tree_region;
int tree_serialize(tree_builder *b, keel_head *head, tree_region *out);
bool tree_builder_empty(const tree_builder *b);
void tree_builder_free(tree_builder *b);

/* ---- building a version 3 group (delta.c) ----------------------------------
 * What a group changed, as a DELTA record, or past a bound a checkpoint
 * (invariants D1-D5 at the top of delta.c). */
typedef struct dgroup dgroup;
/* A group on top of BASE (the tail), whose generation is G, in map M.
 * CKPT_BYTES: the writer's pending-bytes bound (D3). */
int dgroup_new(keel_map *m, const keel_head *base, const pend_gen *g,
               uint64_t ckpt_bytes, unsigned flags, dgroup **out);
/* As tree_apply: a batch whose expectation fails changes nothing. */
int dgroup_apply(dgroup *d, const tree_op *ops, size_t n, size_t *failed);
bool dgroup_empty(const dgroup *d);
/* Lays out the region and fills HEAD (all but prev_head, file_id,
 * time_ns); *CHECKPOINT tells which way. */
int dgroup_finish(dgroup *d, keel_head *head, tree_region *out,
                  bool *checkpoint);
/* Adds a DELTA group's entries to G, tagged with HEAD's txid (D7). */
int dgroup_index(dgroup *d, pend_gen *g, const keel_head *head);
void dgroup_free(dgroup *d);

/* ---- batches (batch.c) -------------------------------------------------- */
struct keel_batch {
	tree_op *ops;
	size_t count, cap;
	uint8_t *arena; /* copies of keys and values, ops point into it   */
	size_t used, arena_cap;
	uint64_t bytes; /* sum of key and value lengths                    */
};
int batch_check_key(const void *key, size_t klen);

/* ---- the database handle (db.c, commit.c) ------------------------------ */
typedef struct commit_writer commit_writer;

/* A background thread of a handle (the compactor, the grower), started when
 * first needed: it waits on CV under mu for work, and returns once the
 * handle is closing (db.c). */
typedef struct db_worker {
	pthread_t thread;
	bool started;
	pthread_cond_t cv;
} db_worker;

struct keel_db {
	char *path;        /* data file                                      */
	char *dir;         /* its directory (for fsync_dir)                  */
	const keel_io *io;
	keel_io io_copy;   /* the table, copied so the caller's may go away  */
	int fd;
	unsigned flags;
	uint64_t file_id;
	uint64_t grow_step;
	uint64_t compact_slack; /* keel_options.compact_slack, default applied,
	                         * and for version 3 at least twice the
	                         * pending span a checkpoint frees at once */
	uint32_t version;     /* the data file's format version (2 or 3)     */
	uint64_t ckpt_bytes;  /* pending bytes that make the next group a
	                         checkpoint (D3; keel_options.checkpoint_bytes) */
	/* The durable marker (marker.c): the writer's mapping, read-write, set
	 * at open; a reader process's, read-only, (re)mapped under mu. */
	char *marker_path;    /* PATH.durable                                */
	_Atomic uint64_t *marker;
	dev_t marker_dev;
	ino_t marker_ino;

	pthread_mutex_t mu;   /* guards everything below                     */
	keel_map *map;        /* current mapping (db's reference)            */
	keel_head head;       /* newest published (durable) head             */
	pend_gen *pend;       /* head's generation of the pending index      */
	_Atomic uint64_t gen; /* bumped whenever head or map change: a
	                         snapshot refresh compares it without the lock */
	uint64_t file_size;   /* allocated size of the data file; growth
	                         stores it atomically, for grow_ensure's
	                         look without mu (grow.c)                  */
	int failed;           /* sticky error: KEEL_EIO/KEEL_ENOSPC, 0 if ok */
	bool closing;

	/* commit pipeline (commit.c) */
	commit_writer *queue_head, *queue_tail; /* waiting writers, FIFO      */
	bool building;        /* a leader is building/appending a group      */
	uint64_t topup_left;  /* the building leader's predecessor published
	                         and it waits for this many more writers:
	                         the one that arrives last wakes it; 0 when
	                         not topping up (commit.c)                  */
	bool draining;        /* a compaction waits to switch files: no new
	                         group starts until it has (compact.c)       */
	int leaders;          /* leaders not yet finished (close waits)      */
	uint64_t inflight;    /* writers submitted and not yet answered      */
	uint64_t inflight_peak; /* most in flight since the last group began */
	uint64_t sync_ns_avg; /* moving average of a sync's duration         */
	keel_head tail;       /* state after the newest APPENDED group       */
	pend_gen *tail_pend;  /* tail's generation (the building leader's)   */
	uint64_t append_end;  /* end of the newest append ATTEMPTED: what a
	                       * failed handle erases (commit_erase_unacked)
	                       * reaches this far; written by the building
	                       * leader */
	uint64_t appended_seq, published_seq;
	pthread_cond_t published_cv;
	/* Two threads lead groups of async writers, so one can build the next
	 * group while the other syncs. */
	pthread_t committer[2];
	int committers;       /* started                                      */
	pthread_cond_t committer_cv;
	uint64_t hint_txid, hint_bytes; /* last hint written; bytes since   */
	bool compacting;      /* keel_compact running (one at a time)         */
	db_worker compactor;  /* background thread of the automatic policy    */
	bool compact_wanted;
	uint64_t compact_retry_end; /* after a failed automatic compaction, the
	                             * next waits for the used part to get here */

	/* growth (grow.c) */
	bool growing;         /* a growth (ahead or inline) is in progress    */
	bool grow_wanted;     /* the grower is asked for a growth ahead       */
	uint64_t grow_failed_size; /* a growth ahead failed at this size      */
	db_worker grower;
	uint64_t n_growths, n_growths_inline;

	keel_recovery recovery;
	struct recovery_delta *open_deltas; /* recovery's, until indexed at open */
	size_t open_ndeltas;
	uint64_t n_commits, n_syncs, n_compactions, n_checkpoints;
};

/* Submits OPS[0..n) (pointers resolved).  CB NULL: waits and returns the
 * result.  Otherwise returns at once; OWNED (may be NULL) is freed when done. */
int commit_submit_ops(keel_db *db, const tree_op *ops, size_t n,
                      tree_op *owned, keel_commit_cb cb, void *arg,
                      uint64_t *txid, size_t *failed_index);
void commit_shutdown(keel_db *db);
/* After a failure: zeros from the newest durable head to db->append_end
 * (commit.c, invariant (4)).  Caller holds mu; db->failed is set. */
void commit_erase_unacked(keel_db *db);
/* Writes a serialized region and then its head record, starting at AT.
 * Returns 0 or a keel error (a short write is KEEL_EIO). */
int commit_write_region(const keel_io *io, int fd, const tree_region *r,
                        const uint8_t head[KEEL_HEAD_SIZE], uint64_t at);
/* Are new groups held back for a lagging compaction?  Caller holds mu. */
bool commit_writes_held(const keel_db *db);
/* Signals whoever should lead the next group (after building ends). */
void commit_wake_front(keel_db *db);
/* The automatic compaction policy: called after a publish, with mu held. */
void compact_maybe_schedule(keel_db *db);
/* Starts W's thread running MAIN(db) if it is not running yet, then
 * signals W->cv.  False when the thread cannot be started (the caller goes
 * without it).  Caller holds mu. */
bool db_worker_wake(keel_db *db, db_worker *w, void *(*main)(void *));
/* At close: marks the handle closing, wakes W and joins its thread (a
 * worker in the middle of its job finishes or abandons it first). */
void db_worker_stop(keel_db *db, db_worker *w);
/* Called first by each engine thread: applies KEEL_BATCH_THREADS. */
void commit_thread_sched(const keel_db *db);
/* Maps KEEL errors from negative errnos. */
int keel_err_from_errno(int neg_errno);
uint64_t keel_now_ns(void);

/* ---- growth (grow.c) ---- */

/* Makes [0, need) of the file allocated, waiting for a growth in flight or
 * growing the file itself; called by the leader without mu.  LIVE: the live
 * bytes of the head being written (the automatic policy's cap, grow_cap).
 * Sets *grew when this call grew the file (the commit must fsync, not
 * fdatasync). */
int grow_ensure(keel_db *db, uint64_t need, uint64_t live, bool *grew);
/* Asks the grower for the next step when the room past the tail is under
 * half a step.  Called by a leader after its append, with mu held. */
void grow_ahead_maybe(keel_db *db);
/* SIZE, lowered where it would take the file past the policy's bound for
 * LIVE bytes and SLACK (POLICY_CAP_Q), unless that would leave less than
 * 64 KiB past NEED. */
uint64_t grow_cap(uint64_t need, uint64_t size, uint64_t live, uint64_t slack);
/* Allocates [from, to) of FD: zeros written, or fallocate when FLAGS has
 * KEEL_PREALLOC_FALLOCATE. */
int grow_preallocate(const keel_io *io, int fd, uint64_t from, uint64_t to,
                     unsigned flags);
/* How much to preallocate beyond what a file of SIZE bytes needs. */
uint64_t grow_default_step(uint64_t size);
/* The size a file holding NEED bytes grows to: NEED plus a step, in whole
 * blocks, and past 2 MiB in whole 2 MiB pieces (huge pages: grow.c). */
uint64_t grow_size(uint64_t need, uint64_t step);

/* ---- the durable marker (marker.c) ------------------------------------------
 * PATH.durable names the newest head whose sync has returned, for reader
 * processes (invariants at the top of marker.c). */
/* Writer, at open after the recovered head is durable: makes the marker, or
 * removes a stale one.  KEEL_OK, or an error that fails the open. */
int marker_create(keel_db *db);
/* Writer: db->head (and db->file_id) just became durable.  Caller holds mu. */
void marker_publish(keel_db *db);
/* Writer, at close while it still holds the lock: unmaps the marker, and
 * removes it unless KEEP (a failed writer: heads past it never became
 * durable, and readers must stay at it). */
void marker_remove(keel_db *db, int keep);
/* Reader process: the newest txid it may accept in the data file FILE_ID,
 * open as FD; UINT64_MAX for no limit, 0 to stay where it is.  Caller holds
 * mu (or has the handle to itself, at open). */
uint64_t marker_limit(keel_db *db, int fd, uint64_t file_id);
void marker_close_reader(keel_db *db);

#endif /* KEEL_INTERNAL_H */
