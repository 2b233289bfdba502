/*
 * tree.c -- the copy-on-write B+tree: reading it from a mapping, and building
 * a commit's new nodes.
 *
 * TREE INVARIANTS (checked by recovery/verify.c, asserted by tree_debug_check)
 *  (1) Keys ascend strictly within a node and across the tree.
 *  (2) A branch entry's key is the first key of its child's subtree.
 *  (3) A child's level is its parent's level - 1; leaves are level 0.
 *  (4) A node has at least one entry; the empty tree has root offset 0.
 *  (5) Every reference (child, value) points backwards in the file and carries
 *      the referenced record's CRC, so a head's CRC chain plus these links
 *      cover everything the head can reach.
 *  (6) Within one tree every node and value record is referenced once (a
 *      commit copies the whole path it changes), and no two records of the
 *      file overlap (map.c refuses one that does).
 *
 * READING A FILE NOBODY VOUCHES FOR
 *  A store file is input: it may come from a backup or another machine, and
 *  CRCs prove only that bytes are the ones written, not that a writer was
 *  honest.  So every read does work bounded by the file's size, whatever the
 *  file holds: a descent checks each child against its parent -- its level is
 *  one less and its offset is lower (a child is always written before its
 *  parent) -- so no walk can loop and none goes deeper than TREE_MAX_DEPTH;
 *  a cursor refuses a key that does not follow the previous one strictly
 *  (KEEL_ECORRUPT), so a tree whose branches share a child (a DAG that would
 *  repeat its leaves FANOUT^DEPTH times) fails at the first repeat.
 *
 * BUILDING
 *  A commit group gets one tree_builder.  Ops descend from the root, copying
 *  each clean (on-disk) node on the path into a dirty in-memory node; dirty
 *  nodes are then modified in place.  Nodes split eagerly when their payload
 *  exceeds KEEL_NODE_MAX (1 KiB leaves, 4 KiB branches) and they hold four
 *  entries or more (so a branch
 *  always keeps two children, even with 1 KiB keys), and merge with a
 *  sibling when under a quarter of it.
 *  Values are laid out in the region as ops are applied (so their offsets are
 *  known), nodes after all values, children before parents.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "crc32c.h"
#include "internal.h"

/* ---- reading ---------------------------------------------------------- */

/* The structure check a node passes once, with its CRC, before any read
 * trusts its slots: count, level against type, every entry inside. */
static bool node_valid(const uint8_t *p, uint32_t len, uint8_t type)
{
	if (len < KEEL_NODE_HDR)
		return false;
	uint16_t count = node_count(p);
	bool leaf = type == KEEL_REC_LEAF;
	if (count == 0 || leaf != (node_level(p) == 0) ||
	    keel_node_entries_at(count, keel_node_plen(p)) > len)
		return false;
	for (unsigned i = 0; i < count; i++)
		if (!keel_node_ent_check(p, len, leaf, i))
			return false;
	return keel_node_index_valid(p, len);
}

/* A node's first KiB (all of a leaf, unless its keys are long; a branch's
 * header, prefix and slots) is asked for at once, before the header is
 * read: the cache misses of the header, the search's probes and the entry
 * it lands on then overlap instead of following one another.  1.5x the
 * point reads of a million keys (docs/engine.md); 2 KiB measured the same,
 * 4 KiB slower. */
#define NODE_PREFETCH ((uint64_t)KEEL_REC_HDR + KEEL_LEAF_MAX)
#define CACHE_LINE 64u

/* Asks for the first KiB of the record at OFF (see NODE_PREFETCH); only a
 * hint, so OFF is not checked beyond staying inside the mapping. */
static void node_prefetch(const keel_map *m, uint64_t off)
{
	if (off < KEEL_DATA_START || off >= m->len)
		return;
	uint64_t end = off + NODE_PREFETCH < m->len ? off + NODE_PREFETCH : m->len;
	for (uint64_t at = off & ~(uint64_t)(CACHE_LINE - 1); at < end;
	     at += CACHE_LINE)
		__builtin_prefetch(m->base + at);
}

/* The node record at OFF, verified (once) and validated; its payload, or
 * NULL when it is not a good node with that CRC.  PREFETCH: ask for its
 * bytes first (unless the caller already did). */
static const uint8_t *node_get(keel_map *m, uint64_t off, uint32_t crc,
                               uint32_t *plen, bool prefetch)
{
	if (off < KEEL_DATA_START || off + KEEL_REC_HDR > m->len)
		return NULL;
	if (prefetch)
		node_prefetch(m, off);
	uint8_t type = m->base[off + 4];
	if (type != KEEL_REC_LEAF && type != KEEL_REC_BRANCH)
		return NULL;
	const uint8_t *rec = map_record(m, off, type, crc, plen, node_valid);
	return rec ? rec + KEEL_REC_HDR : NULL;
}

/* The child node of the node PARENT (a payload in M) at OFF: invariants (3)
 * and (5) are checked before it is read, so a crafted file cannot make a
 * walk loop.  Its payload, or NULL. */
static const uint8_t *child_get(keel_map *m, const uint8_t *parent,
                                uint64_t off, uint32_t crc, uint32_t *plen,
                                bool prefetch)
{
	uint64_t parent_off = (uint64_t)(parent - m->base) - KEEL_REC_HDR;
	if (off >= parent_off)
		return NULL;
	const uint8_t *p = node_get(m, off, crc, plen, prefetch);
	return p && node_level(p) + 1 == node_level(parent) ? p : NULL;
}

_Static_assert(KEEL_LEAF_ENTRY == KEEL_BRANCH_ENTRY,
               "a key sits at the same place in leaf and branch entries");

/* Entry I of a node that passed node_valid (so it lies inside the node). */
static const uint8_t *entry_at(const uint8_t *p, unsigned i,
                               const uint8_t **key, uint16_t *klen)
{
	const uint8_t *e = keel_node_entry(p, i);
	*klen = keel_ld16(e);
	*key = e + KEEL_LEAF_ENTRY;
	return e;
}

/* How many of the node's COUNT slots have a head below KH (OR_EQUAL: at
 * most KH).  Heads never decrease from slot to slot (format.h).  Without
 * branches: the probes' outcomes are coin flips no predictor learns, and a
 * conditional move per probe costs less than a mispredicted branch. */
static int heads_below(const uint8_t *slots, int count, uint32_t kh,
                       bool or_equal)
{
	const uint8_t *base = slots;
	uint32_t bound = kh + or_equal; /* head < bound; KH+1 can wrap: */
	if (or_equal && bound == 0)
		return count;           /* every head is <= 0xffffffff */
	for (size_t len = (size_t)count; len > 1;) {
		size_t half = len / 2;
		const uint8_t *mid = base + KEEL_SLOT * half;
		base = keel_slot_head(mid) < bound ? mid : base;
		len -= half;
	}
	return (int)((size_t)(base - slots) / KEEL_SLOT) +
	       (keel_slot_head(base) < bound);
}

/* Index of the last entry with key <= KEY (0 if none) in a valid node;
 * *exact tells whether that entry equals KEY.  The node's prefix settles a
 * key outside it at once; inside, the slots' heads order the entries, and
 * only the slots whose head ties with KEY's have their keys read (a binary
 * search among them: keys that share their first bytes past the prefix can
 * make a long run of ties). */
static int node_search(const uint8_t *p, const uint8_t *key, size_t klen,
                       bool *exact)
{
	int count = node_count(p);
	size_t plen = keel_node_plen(p), n = klen < plen ? klen : plen;
	const uint8_t *prefix = p + KEEL_NODE_HDR, *slots = prefix + plen;
	size_t i = keel_common_prefix(key, n, prefix, n);

	*exact = false;
	if (i < n)
		return key[i] < prefix[i] ? 0 : count - 1; /* below / above all */
	if (klen < plen)
		return 0;                 /* a proper prefix of every key */
	uint32_t kh = keel_key_head(key, klen, plen);
	int hi = heads_below(slots, count, kh, true) - 1; /* last head <= KH */
	if (hi < 0)
		return 0;                 /* below every key */
	if (keel_slot_head(slots + KEEL_SLOT * (unsigned)hi) != kh)
		return hi;                /* no tie: a key below KEY */
	/* Mostly the run is that one slot; otherwise find where it begins. */
	int lo = hi > 0 && keel_slot_head(slots + KEEL_SLOT * (unsigned)(hi - 1)) == kh
	             ? heads_below(slots, hi, kh, false) : hi;
	int ans = lo - 1;
	while (lo <= hi) {            /* the tied run [lo, hi] */
		int mid = (lo + hi) / 2;
		const uint8_t *ek;
		uint16_t eklen;
		entry_at(p, (unsigned)mid, &ek, &eklen);
		int c = keel_key_cmp(ek + plen, eklen - plen, key + plen,
		                     klen - plen);
		if (c == 0) {
			*exact = true;
			return mid;
		}
		if (c < 0) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans < 0 ? 0 : ans;
}

int tree_lookup(keel_map *m, uint64_t root, uint32_t root_crc,
                const void *key, size_t klen, tree_leaf_entry *out)
{
	uint64_t off = root;
	uint32_t crc = root_crc;
	const uint8_t *parent = NULL; /* the node OFF was found in */

	if (root == 0)
		return KEEL_ENOTFOUND;
	for (int depth = 0; depth < TREE_MAX_DEPTH; depth++) {
		uint32_t plen;
		bool exact;
		const uint8_t *p = parent ? child_get(m, parent, off, crc, &plen, true)
		                          : node_get(m, off, crc, &plen, true);
		if (!p)
			return KEEL_ECORRUPT;
		int i = node_search(p, key, klen, &exact);
		if (i < 0)
			return KEEL_ECORRUPT;
		const uint8_t *k;
		uint16_t kl;
		const uint8_t *e = entry_at(p, (unsigned)i, &k, &kl);
		if (node_level(p) == 0) {
			if (!exact)
				return KEEL_ENOTFOUND;
			keel_leaf_ent_decode(e, out);
			return KEEL_OK;
		}
		off = keel_ld64(e + 8);
		crc = keel_ld32(e + 4);
		parent = p;
	}
	return KEEL_ECORRUPT;
}

int tree_value_record(keel_map *m, const tree_leaf_entry *e,
                      const uint8_t **data)
{
	uint32_t len;
	const uint8_t *rec = map_record(m, e->voff, KEEL_REC_VALUE, e->vcrc, &len,
	                                NULL);
	if (!rec || len != e->vlen)
		return KEEL_ECORRUPT;
	*data = rec + KEEL_REC_HDR;
	return KEEL_OK;
}

/* ---- cursors ------------------------------------------------------------ */

/* Asks for the leaf after the one just pushed (the parent's next child),
 * so that its cache misses overlap the reading of this one instead of
 * coming after it: a scan then waits for the first leaf only.  Only a
 * hint: the leaf is checked as usual when the cursor gets there, without
 * asking for its bytes a second time. */
static void prefetch_next_leaf(tree_cursor *c)
{
	int d = c->depth - 2;
	if (c->index[d] + 1 >= c->count[d])
		return;
	const uint8_t *k;
	uint16_t kl;
	const uint8_t *e = entry_at(c->node[d], c->index[d] + 1u, &k, &kl);
	c->prefetched = keel_ld64(e + 8);
	node_prefetch(c->m, c->prefetched);
}

/* Pushes the node at OFF and positions it at the entry for START. */
static int cursor_push(tree_cursor *c, uint64_t off, uint32_t crc,
                       const void *start, size_t slen, bool leftmost)
{
	uint32_t plen;
	bool exact, prefetch = off != c->prefetched;

	if (c->depth >= TREE_MAX_DEPTH)
		return KEEL_ECORRUPT;
	const uint8_t *p = c->depth > 0
	                   ? child_get(c->m, c->node[c->depth - 1], off, crc, &plen,
	                               prefetch)
	                   : node_get(c->m, off, crc, &plen, prefetch);
	if (!p)
		return KEEL_ECORRUPT;
	int i = 0;
	if (!leftmost) {
		i = node_search(p, start, slen, &exact);
		/* In a leaf, an entry below START is skipped. */
		if (node_level(p) == 0 && !exact) {
			const uint8_t *k;
			uint16_t kl;
			entry_at(p, (unsigned)i, &k, &kl);
			if (keel_key_cmp(k, kl, start, slen) < 0)
				i++;
		}
	}
	c->node[c->depth] = p;
	c->index[c->depth] = (uint16_t)i;
	c->count[c->depth] = node_count(p);
	c->depth++;
	if (node_level(p) == 0 && c->depth > 1)
		prefetch_next_leaf(c);
	return KEEL_OK;
}

/* Descends from the top of the stack to a leaf, leftmost or towards START. */
static int cursor_descend(tree_cursor *c, const void *start, size_t slen,
                          bool leftmost)
{
	while (node_level(c->node[c->depth - 1]) > 0) {
		int d = c->depth - 1;
		const uint8_t *k;
		uint16_t kl;
		const uint8_t *e = entry_at(c->node[d], c->index[d], &k, &kl);
		int rc = cursor_push(c, keel_ld64(e + 8), keel_ld32(e + 4), start,
		                     slen, leftmost);
		if (rc)
			return rc;
	}
	return KEEL_OK;
}

int tree_cursor_seek(tree_cursor *c, keel_map *m, uint64_t root,
                     uint32_t root_crc, const void *start, size_t slen)
{
	/* The stacks are written as the cursor descends, before any read:
	 * only the scalars need a value (a scan opens one cursor per call). */
	c->m = m;
	c->depth = 0;
	c->prefetched = 0;
	c->li = c->lend = 0;
	c->done = c->broken = false;
	c->last_key = NULL;
	c->last_klen = 0;
	if (root == 0) {
		c->done = true;
		return KEEL_OK;
	}
	bool leftmost = start == NULL;
	int rc = cursor_push(c, root, root_crc, start, slen, leftmost);
	if (rc == KEEL_OK)
		rc = cursor_descend(c, start, slen, leftmost);
	return rc;
}

/* Hands the leaf's short cut back to the stack: its next entry becomes the
 * leaf's index, and the entry before it -- returned last -- last_key. */
static void cursor_cut_fold(tree_cursor *c)
{
	int d = c->depth - 1;
	const uint8_t *k;
	uint16_t kl;

	if (c->li == 0)
		return; /* not in use */
	entry_at(c->node[d], c->li - 1u, &k, &kl);
	c->index[d] = c->li;
	c->last_key = k;
	c->last_klen = kl;
	c->li = c->lend = 0;
}

/* Moves to the next leaf once this one is finished: climbs until a parent
 * has more, then descends.  KEEL_OK, or KEEL_ENOTFOUND at the end of the
 * tree (the root is finished too), or KEEL_ECORRUPT. */
static int cursor_next_leaf(tree_cursor *c)
{
	do {
		if (c->depth == 1)
			return KEEL_ENOTFOUND;
		c->depth--;
		c->index[c->depth - 1]++;
	} while (c->index[c->depth - 1] >= c->count[c->depth - 1]);
	return cursor_descend(c, NULL, 0, true);
}

int tree_cursor_step(tree_cursor *c, tree_leaf_entry *out)
{
	if (c->broken)
		return KEEL_ECORRUPT;
	if (c->done)
		return KEEL_ENOTFOUND;
	cursor_cut_fold(c);
	int d = c->depth - 1;
	while (c->index[d] >= c->count[d]) {
		int rc = cursor_next_leaf(c);
		if (rc == KEEL_ENOTFOUND) {
			c->done = true;
			return rc;
		}
		if (rc) {
			c->broken = true;
			return rc;
		}
		d = c->depth - 1;
	}
	const uint8_t *k;
	uint16_t kl;
	unsigned i = c->index[d];
	const uint8_t *leaf = c->node[d], *e = entry_at(leaf, i, &k, &kl);
	/* Keys ascend strictly (invariant (1)): a file where they do not (out
	 * of order, or a child shared by several entries) is refused here,
	 * which bounds a walk by the leaf entries the file holds. */
	if (c->last_key && keel_key_cmp(c->last_key, c->last_klen, k, kl) >= 0) {
		c->broken = true;
		return KEEL_ECORRUPT;
	}
	keel_leaf_ent_decode(e, out);
	/* The rest of this leaf goes through the short cut. */
	c->leaf = leaf;
	c->slots = keel_node_slot(leaf, 0);
	c->li = (uint16_t)(i + 1);
	c->lend = c->count[d];
	return KEEL_OK;
}

/* ---- building ------------------------------------------------------------ */

typedef struct tnode tnode;
typedef struct tref {
	uint64_t off;  /* on-disk node, when clean                         */
	uint32_t crc;
	tnode *dirty;  /* in-memory copy, when on the path of this commit  */
} tref;

typedef struct tent {
	const uint8_t *key;
	uint16_t klen;
	union {
		struct {
			uint64_t voff, rev;
			uint32_t vlen, vcrc;
			const uint8_t *inl; /* inline value bytes, or NULL */
		} leaf;
		tref child;
	} u;
} tent;

struct tnode {
	uint8_t level;
	uint32_t count, cap;
	uint32_t size; /* payload bytes this node would take on disk */
	tent *ents;
};

/* A piece of the region: bytes in the builder's buffer, or a caller's
 * large value written straight from its memory. */
typedef struct segment {
	const uint8_t *ext; /* NULL: buf[at, at+len) */
	size_t at, len;
} segment;

typedef struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	uint8_t data[];
} arena_chunk;

#define BIG_VALUE (64u * 1024) /* values at least this big are not copied */

struct tree_builder {
	keel_map *m;
	tref root;
	uint64_t txid, region_start, pos; /* pos: next value's offset      */
	uint64_t keys;
	int64_t live_delta;
	uint32_t base_chain;
	uint64_t base_live;
	bool changed;
	arena_chunk *arena;
	uint8_t *buf;
	size_t buf_len, buf_cap;
	segment *segs;
	size_t nsegs, segs_cap;
	struct iovec *iov;
};

static void *arena_alloc(tree_builder *b, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	arena_chunk *c = b->arena;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = b->arena;
		c->used = 0;
		c->cap = cap;
		b->arena = c;
	}
	void *p = c->data + c->used;
	c->used += n;
	return p;
}

/* Bytes entry T takes in a node of LEVEL, its slot included. */
static uint32_t ent_size(uint8_t level, const tent *t)
{
	return level ? keel_slot_ent_size(false, t->klen, false, 0)
	             : keel_slot_ent_size(true, t->klen, t->u.leaf.inl != NULL,
	                                  t->u.leaf.vlen);
}

/* Bytes of the VALUE record a leaf entry owns (0 for an inline value). */
static int64_t value_rec_size(const tent *t)
{
	return t->u.leaf.inl ? 0 : (int64_t)keel_rec_size(t->u.leaf.vlen);
}

static tnode *tnode_new(tree_builder *b, uint8_t level, uint32_t cap)
{
	tnode *n = arena_alloc(b, sizeof(*n));
	if (!n)
		return NULL;
	n->level = level;
	n->count = 0;
	n->cap = cap < 8 ? 8 : cap;
	n->size = KEEL_NODE_HDR;
	n->ents = arena_alloc(b, n->cap * sizeof(tent));
	return n->ents ? n : NULL;
}

static int tnode_reserve(tree_builder *b, tnode *n, uint32_t want)
{
	if (want <= n->cap)
		return KEEL_OK;
	uint32_t cap = n->cap * 2 > want ? n->cap * 2 : want;
	tent *e = arena_alloc(b, cap * sizeof(tent));
	if (!e)
		return KEEL_ENOMEM;
	memcpy(e, n->ents, n->count * sizeof(tent));
	n->ents = e;
	n->cap = cap;
	return KEEL_OK;
}

static int tnode_insert(tree_builder *b, tnode *n, uint32_t at, const tent *e)
{
	int rc = tnode_reserve(b, n, n->count + 1);
	if (rc)
		return rc;
	memmove(&n->ents[at + 1], &n->ents[at], (n->count - at) * sizeof(tent));
	n->ents[at] = *e;
	n->count++;
	n->size += ent_size(n->level, e);
	return KEEL_OK;
}

static void tnode_remove(tnode *n, uint32_t at)
{
	n->size -= ent_size(n->level, &n->ents[at]);
	memmove(&n->ents[at], &n->ents[at + 1], (n->count - at - 1) * sizeof(tent));
	n->count--;
}

/* Makes REF dirty: decodes its on-disk node into memory (copy on write).
 * LEVEL is the level the node must have (a child's is its parent's - 1), or
 * -1 for the root: so a crafted file cannot send a write around a loop. */
static int cow(tree_builder *b, tref *ref, int level, tnode **out)
{
	uint32_t plen;

	if (ref->dirty) {
		*out = ref->dirty;
		return KEEL_OK;
	}
	if (ref->off == 0) { /* the empty tree: its root becomes a new leaf */
		*out = ref->dirty = tnode_new(b, 0, 8);
		return *out ? KEEL_OK : KEEL_ENOMEM;
	}
	const uint8_t *p = node_get(b->m, ref->off, ref->crc, &plen, true);
	if (!p || (level >= 0 ? node_level(p) != level
	                      : node_level(p) >= TREE_MAX_DEPTH))
		return KEEL_ECORRUPT;
	uint16_t count = node_count(p);
	tnode *n = tnode_new(b, node_level(p), count + 4u);
	if (!n)
		return KEEL_ENOMEM;
	for (unsigned i = 0; i < count; i++) {
		tent *t = &n->ents[i];
		const uint8_t *e = entry_at(p, i, &t->key, &t->klen);
		if (n->level == 0) {
			keel_leaf_ent le;
			keel_leaf_ent_decode(e, &le);
			t->u.leaf.vlen = le.vlen;
			t->u.leaf.voff = le.voff;
			t->u.leaf.rev = le.rev;
			t->u.leaf.vcrc = le.vcrc;
			t->u.leaf.inl = le.inl;
		} else {
			t->u.child.crc = keel_ld32(e + 4);
			t->u.child.off = keel_ld64(e + 8);
			t->u.child.dirty = NULL;
		}
		n->size += ent_size(n->level, t);
	}
	n->count = count;
	b->live_delta -= (int64_t)keel_rec_size(plen);
	ref->dirty = n;
	*out = n;
	return KEEL_OK;
}

/* Index of the last entry <= KEY in dirty node N (0 if none). */
static uint32_t tnode_search(const tnode *n, const uint8_t *key, size_t klen,
                             bool *exact)
{
	int lo = 0, hi = (int)n->count - 1, ans = 0;
	*exact = false;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		int c = keel_key_cmp(n->ents[mid].key, n->ents[mid].klen, key, klen);
		if (c == 0) {
			*exact = true;
			return (uint32_t)mid;
		}
		if (c < 0) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return (uint32_t)ans;
}

/* Current revision of KEY in the builder's tree; 0 when absent. */
static int builder_rev(tree_builder *b, const uint8_t *key, size_t klen,
                       uint64_t *rev)
{
	tref r = b->root;
	*rev = 0;
	if (!r.dirty && r.off == 0)
		return KEEL_OK;
	for (int depth = 0; depth < TREE_MAX_DEPTH; depth++) {
		bool exact;
		if (r.dirty) {
			tnode *n = r.dirty;
			uint32_t i = tnode_search(n, key, klen, &exact);
			if (n->level == 0) {
				if (exact)
					*rev = n->ents[i].u.leaf.rev;
				return KEEL_OK;
			}
			r = n->ents[i].u.child;
			continue;
		}
		tree_leaf_entry e;
		int rc = tree_lookup(b->m, r.off, r.crc, key, klen, &e);
		if (rc == KEEL_OK)
			*rev = e.rev;
		return rc == KEEL_ENOTFOUND ? KEEL_OK : rc;
	}
	return KEEL_ECORRUPT;
}

/* Splits N in two by bytes; the right half is returned. */
/* Splits N in two by bytes and returns the right part.  Normally in half;
 * when the node grew at its right end (keys arriving in order, as in a bulk
 * load) the left part keeps all but the last two entries, so ordered
 * inserts leave full nodes behind instead of half-empty ones.  With four
 * entries or more, each part keeps at least two. */
static tnode *tnode_split(tree_builder *b, tnode *n, bool appended)
{
	uint32_t target = n->size / 2, acc = KEEL_NODE_HDR, k = 0;
	if (appended)
		target = n->size - ent_size(n->level, &n->ents[n->count - 1]) -
		         ent_size(n->level, &n->ents[n->count - 2]);
	while (k < n->count - 1 && acc < target)
		acc += ent_size(n->level, &n->ents[k++]);
	if (n->count >= 4)
		k = k < 2 ? 2 : k > n->count - 2 ? n->count - 2 : k;
	if (k == 0)
		k = 1;
	tnode *r = tnode_new(b, n->level, n->count - k + 4);
	if (!r)
		return NULL;
	for (uint32_t i = k; i < n->count; i++) {
		r->ents[i - k] = n->ents[i];
		r->size += ent_size(n->level, &n->ents[i]);
	}
	r->count = n->count - k;
	n->count = k;
	n->size -= r->size - KEEL_NODE_HDR;
	return r;
}

typedef struct new_value {
	uint64_t voff, rev;
	uint32_t vlen, vcrc;
	const uint8_t *inl; /* the value's bytes when inline, else NULL */
} new_value;

static int node_put(tree_builder *b, tref *ref, int level, const uint8_t *key,
                    size_t klen, const new_value *v, tnode **split)
{
	tnode *n;
	bool exact;
	int rc = cow(b, ref, level, &n);

	*split = NULL;
	if (rc)
		return rc;
	uint32_t i = tnode_search(n, key, klen, &exact);
	bool appended = false; /* did the node grow at its right end? */
	if (n->level == 0) {
		tent e = {.key = key, .klen = (uint16_t)klen};
		e.u.leaf.voff = v->voff;
		e.u.leaf.rev = v->rev;
		e.u.leaf.vlen = v->vlen;
		e.u.leaf.vcrc = v->vcrc;
		e.u.leaf.inl = v->inl;
		if (exact) {
			b->live_delta -= value_rec_size(&n->ents[i]);
			e.key = n->ents[i].key; /* same bytes; keep the older copy */
			n->size -= ent_size(0, &n->ents[i]);
			n->ents[i] = e;
			n->size += ent_size(0, &e);
		} else {
			uint32_t at = i;
			if (n->count > 0 &&
			    keel_key_cmp(n->ents[i].key, n->ents[i].klen, key, klen) < 0)
				at = i + 1;
			if ((rc = tnode_insert(b, n, at, &e)))
				return rc;
			appended = at == n->count - 1;
			b->keys++;
		}
	} else {
		tnode *child_split;
		rc = node_put(b, &n->ents[i].u.child, n->level - 1, key, klen, v,
		              &child_split);
		if (rc)
			return rc;
		tnode *c = n->ents[i].u.child.dirty;
		n->size -= n->ents[i].klen;
		n->ents[i].key = c->ents[0].key;
		n->ents[i].klen = c->ents[0].klen;
		n->size += n->ents[i].klen;
		if (child_split) {
			tent e = {.key = child_split->ents[0].key,
			          .klen = child_split->ents[0].klen};
			e.u.child.dirty = child_split;
			if ((rc = tnode_insert(b, n, i + 1, &e)))
				return rc;
			appended = i + 1 == n->count - 1;
		}
	}
	/* Four entries at least, so both halves keep two: with keys of up to
	 * 1 KiB a branch must never end up with a single child. */
	if (n->size > KEEL_NODE_MAX(n->level) && n->count >= 4) {
		*split = tnode_split(b, n, appended);
		if (!*split)
			return KEEL_ENOMEM;
	}
	return KEEL_OK;
}

/* Merges child I of N with a neighbour when it has shrunk below a quarter. */
static int maybe_merge(tree_builder *b, tnode *n, uint32_t i)
{
	tnode *c = n->ents[i].u.child.dirty;
	if (c->size >= KEEL_NODE_MAX(c->level) / 4 || n->count < 2)
		return KEEL_OK;
	uint32_t l = i + 1 < n->count ? i : i - 1; /* merge entries l and l+1 */
	tnode *left, *right;
	int rc = cow(b, &n->ents[l].u.child, n->level - 1, &left);
	if (rc || (rc = cow(b, &n->ents[l + 1].u.child, n->level - 1, &right)))
		return rc;
	if ((rc = tnode_reserve(b, left, left->count + right->count)))
		return rc;
	memcpy(&left->ents[left->count], right->ents, right->count * sizeof(tent));
	left->count += right->count;
	left->size += right->size - KEEL_NODE_HDR;
	if (left->size <= KEEL_NODE_MAX(left->level) || left->count < 4) {
		tnode_remove(n, l + 1);
		return KEEL_OK;
	}
	tnode *r = tnode_split(b, left, false); /* too big together: share */
	if (!r)
		return KEEL_ENOMEM;
	tent *e = &n->ents[l + 1];
	n->size -= e->klen;
	e->key = r->ents[0].key;
	e->klen = r->ents[0].klen;
	n->size += e->klen;
	e->u.child.dirty = r;
	return KEEL_OK;
}

static int node_del(tree_builder *b, tref *ref, int level, const uint8_t *key,
                    size_t klen, bool *empty)
{
	tnode *n;
	bool exact;
	int rc = cow(b, ref, level, &n);

	if (rc)
		return rc;
	uint32_t i = tnode_search(n, key, klen, &exact);
	if (n->level == 0) {
		if (!exact)
			return KEEL_ENOTFOUND; /* tree_apply checked: a bug */
		b->live_delta -= value_rec_size(&n->ents[i]);
		tnode_remove(n, i);
		b->keys--;
	} else {
		bool child_empty;
		rc = node_del(b, &n->ents[i].u.child, n->level - 1, key, klen,
		              &child_empty);
		if (rc)
			return rc;
		if (child_empty) {
			tnode_remove(n, i);
		} else {
			tnode *c = n->ents[i].u.child.dirty;
			n->size -= n->ents[i].klen;
			n->ents[i].key = c->ents[0].key;
			n->ents[i].klen = c->ents[0].klen;
			n->size += n->ents[i].klen;
			if ((rc = maybe_merge(b, n, i)))
				return rc;
		}
	}
	*empty = n->count == 0;
	return KEEL_OK;
}

int tree_builder_new(keel_map *m, const keel_head *base, uint64_t txid,
                     uint64_t region_start, tree_builder **out)
{
	tree_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return KEEL_ENOMEM;
	b->m = m;
	b->root.off = base->root_off;
	b->root.crc = base->root_crc;
	b->txid = txid;
	b->region_start = b->pos = region_start;
	b->keys = base->keys;
	b->base_live = base->live_bytes;
	b->base_chain = base->chain_crc;
	*out = b;
	return KEEL_OK;
}

bool tree_builder_empty(const tree_builder *b)
{
	return !b->changed;
}

static int buf_append(tree_builder *b, const void *p, size_t len)
{
	if (b->buf_cap - b->buf_len < len) {
		size_t cap = b->buf_cap ? b->buf_cap : 16384;
		while (cap - b->buf_len < len)
			cap *= 2;
		uint8_t *nb = realloc(b->buf, cap);
		if (!nb)
			return KEEL_ENOMEM;
		b->buf = nb;
		b->buf_cap = cap;
	}
	if (p)
		memcpy(b->buf + b->buf_len, p, len);
	else
		memset(b->buf + b->buf_len, 0, len);
	b->buf_len += len;
	return KEEL_OK;
}

/* Adds LEN bytes to the region: copied into buf, or by reference. */
static int seg_add(tree_builder *b, const uint8_t *p, size_t len, bool ext)
{
	if (len == 0)
		return KEEL_OK;
	if (b->nsegs == b->segs_cap) {
		size_t cap = b->segs_cap ? b->segs_cap * 2 : 16;
		segment *s = realloc(b->segs, cap * sizeof(*s));
		if (!s)
			return KEEL_ENOMEM;
		b->segs = s;
		b->segs_cap = cap;
	}
	segment *last = b->nsegs ? &b->segs[b->nsegs - 1] : NULL;
	if (!ext) {
		size_t at = b->buf_len;
		int rc = buf_append(b, p, len);
		if (rc)
			return rc;
		if (last && !last->ext && last->at + last->len == at) {
			last->len += len; /* grow the current run of buf bytes */
			return KEEL_OK;
		}
		b->segs[b->nsegs++] = (segment){.ext = NULL, .at = at, .len = len};
		return KEEL_OK;
	}
	b->segs[b->nsegs++] = (segment){.ext = p, .at = 0, .len = len};
	return KEEL_OK;
}

/* Places a put's value: inline in its leaf when small (the bytes are
 * copied when the leaf is serialized, so OP's memory must last until then,
 * as it must for a big value written straight from it), otherwise as a VALUE
 * record appended to the region. */
static int value_add(tree_builder *b, const tree_op *op, new_value *v)
{
	uint8_t hdr[KEEL_REC_HDR];
	static const uint8_t zeros[8];
	int rc;

	v->vlen = (uint32_t)op->vlen;
	v->rev = op->rev ? op->rev : b->txid;
	if (op->voff) { /* a pending entry's record, referenced where it is */
		v->inl = NULL;
		v->voff = op->voff;
		v->vcrc = op->vcrc;
		b->live_delta += (int64_t)keel_rec_size(op->vlen);
		return KEEL_OK;
	}
	if (op->vlen <= KEEL_INLINE_MAX) {
		v->inl = op->vlen ? op->val : zeros;
		v->voff = 0;
		v->vcrc = 0;
		return KEEL_OK;
	}
	v->inl = NULL;
	keel_rec_encode(hdr, KEEL_REC_VALUE, op->val, (uint32_t)op->vlen);
	v->voff = b->pos;
	v->vcrc = keel_ld32(hdr + 12);
	uint64_t size = keel_rec_size(op->vlen);
	if ((rc = seg_add(b, hdr, sizeof(hdr), false)) ||
	    (rc = seg_add(b, op->val, op->vlen, op->vlen >= BIG_VALUE)) ||
	    (rc = seg_add(b, zeros, size - KEEL_REC_HDR - op->vlen, false)))
		return rc;
	b->pos += size;
	b->live_delta += (int64_t)size;
	return KEEL_OK;
}

/* The revision KEY has after ops[0..i) of this batch, when one of them
 * touched it.  Small batches scan backwards; big ones use a hash of keys so a
 * batch of a million puts is checked in linear time. */
typedef struct overlay {
	uint32_t *slots; /* op index + 1, 0 = empty */
	size_t mask;
} overlay;

static bool overlay_find(overlay *o, const tree_op *ops, size_t i,
                         uint64_t txid, uint64_t *rev)
{
	const tree_op *op = &ops[i];
	if (!o->slots) {
		for (size_t j = i; j-- > 0;)
			if (ops[j].klen == op->klen &&
			    memcmp(ops[j].key, op->key, op->klen) == 0) {
				*rev = ops[j].val ? txid : 0;
				return true;
			}
		return false;
	}
	size_t h = keel_crc32c(0, op->key, op->klen) & o->mask;
	for (; o->slots[h]; h = (h + 1) & o->mask) {
		const tree_op *prev = &ops[o->slots[h] - 1];
		if (prev->klen == op->klen &&
		    memcmp(prev->key, op->key, op->klen) == 0) {
			*rev = prev->val ? txid : 0;
			o->slots[h] = (uint32_t)i + 1;
			return true;
		}
	}
	o->slots[h] = (uint32_t)i + 1;
	return false;
}

/* Phase 1 of tree_apply: every expectation, before anything changes. */
static int batch_check(tree_builder *b, const tree_op *ops, size_t n,
                       size_t *failed)
{
	overlay o = {0};
	int rc = KEEL_OK;

	if (n > 16) {
		size_t cap = 64;
		while (cap < 2 * n)
			cap <<= 1;
		o.slots = calloc(cap, sizeof(*o.slots));
		if (!o.slots)
			return KEEL_ENOMEM;
		o.mask = cap - 1;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t rev;
		if (ops[i].uncond)
			continue;
		if (!overlay_find(&o, ops, i, b->txid, &rev) &&
		    (rc = builder_rev(b, ops[i].key, ops[i].klen, &rev)))
			break;
		if (ops[i].expect == KEEL_REV_ANY)
			rc = (!ops[i].val && rev == 0) ? KEEL_ENOTFOUND : KEEL_OK;
		else if (ops[i].expect != rev)
			rc = KEEL_ECONFLICT;
		if (rc) {
			if (failed)
				*failed = i;
			break;
		}
	}
	free(o.slots);
	return rc;
}

int tree_apply(tree_builder *b, const tree_op *ops, size_t n, size_t *failed)
{
	int rc = batch_check(b, ops, n, failed);

	if (rc)
		return rc;
	/* Phase 2: apply; nothing can conflict any more. */
	for (size_t i = 0; i < n; i++) {
		const tree_op *op = &ops[i];
		if (op->val) {
			new_value v;
			tnode *split;
			if ((rc = value_add(b, op, &v)) ||
			    (rc = node_put(b, &b->root, -1, op->key, op->klen, &v,
			                        &split)))
				goto out_broken;
			if (split) {
				tnode *old = b->root.dirty;
				tnode *root = tnode_new(b, old->level + 1, 4);
				if (!root) {
					rc = KEEL_ENOMEM;
					goto out_broken;
				}
				tent l = {.key = old->ents[0].key, .klen = old->ents[0].klen};
				tent r = {.key = split->ents[0].key, .klen = split->ents[0].klen};
				l.u.child.dirty = old;
				r.u.child.dirty = split;
				tnode_insert(b, root, 0, &l);
				tnode_insert(b, root, 1, &r);
				b->root = (tref){.dirty = root};
			}
		} else {
			bool empty;
			uint64_t rev = 1;
			if (op->uncond &&
			    (rc = builder_rev(b, op->key, op->klen, &rev)))
				goto out_broken;
			if (rev == 0)
				continue; /* uncond: already absent */
			if ((rc = node_del(b, &b->root, -1, op->key, op->klen,
			                   &empty)))
				goto out_broken;
			if (empty)
				b->root = (tref){0};
			/* A root branch with one child is replaced by the child. */
			while (b->root.dirty && b->root.dirty->level > 0 &&
			       b->root.dirty->count == 1)
				b->root = b->root.dirty->ents[0].u.child;
		}
		b->changed = true;
	}
	return KEEL_OK;

out_broken:
	/* A failure here (no memory, a damaged node) leaves the builder half
	 * modified; the caller fails the whole group. */
	if (failed)
		*failed = 0;
	return rc;
}

/* Writes dirty node REF (children first) to the region; fills off/crc. */
static int node_serialize(tree_builder *b, tref *ref, uint64_t *pos)
{
	tnode *n = ref->dirty;
	int rc;

	if (!n)
		return KEEL_OK;
	if (n->level > 0)
		for (uint32_t i = 0; i < n->count; i++)
			if ((rc = node_serialize(b, &n->ents[i].u.child, pos)))
				return rc;
	const tent *first = &n->ents[0], *last = &n->ents[n->count - 1];
	uint32_t plen = keel_common_prefix(first->key, first->klen, last->key,
	                                   last->klen);
	uint32_t len = n->size + plen; /* n->size leaves the prefix out */
	size_t at = b->buf_len;
	uint64_t rsize = keel_rec_size(len);
	if ((rc = seg_add(b, NULL, rsize, false)))
		return rc;
	uint8_t *rec = b->buf + at, *p = rec + KEEL_REC_HDR;
	uint32_t eo = keel_node_begin(p, n->level, (uint16_t)n->count, first->key,
	                              first->klen, last->key, last->klen);
	for (uint32_t i = 0; i < n->count; i++) {
		const tent *t = &n->ents[i];
		uint8_t *e = p + eo;
		keel_node_set_slot(p, i, eo, t->key, t->klen);
		if (n->level == 0) {
			keel_leaf_ent le = {.key = t->key, .klen = t->klen,
			                    .inl = t->u.leaf.inl, .vlen = t->u.leaf.vlen,
			                    .voff = t->u.leaf.voff, .vcrc = t->u.leaf.vcrc,
			                    .rev = t->u.leaf.rev};
			eo += keel_leaf_ent_encode(e, &le);
		} else {
			eo += keel_branch_ent_encode(e, t->key, t->klen,
			                             t->u.child.crc, t->u.child.off);
		}
	}
	assert(eo == len);
	keel_rec_encode(rec, n->level ? KEEL_REC_BRANCH : KEEL_REC_LEAF, p, len);
	ref->off = *pos;
	ref->crc = keel_ld32(rec + 12);
	ref->dirty = NULL;
	*pos += rsize;
	b->live_delta += (int64_t)rsize;
	return KEEL_OK;
}

int tree_serialize(tree_builder *b, keel_head *head, tree_region *out)
{
	uint64_t pos = b->pos;
	int rc = node_serialize(b, &b->root, &pos);
	if (rc)
		return rc;
	free(b->iov);
	b->iov = malloc((b->nsegs + 1) * sizeof(*b->iov));
	if (!b->iov)
		return KEEL_ENOMEM;
	uint32_t crc = b->base_chain;
	for (size_t i = 0; i < b->nsegs; i++) {
		const segment *s = &b->segs[i];
		const uint8_t *p = s->ext ? s->ext : b->buf + s->at;
		b->iov[i].iov_base = (void *)p;
		b->iov[i].iov_len = s->len;
		crc = keel_crc32c(crc, p, s->len);
	}
	out->iov = b->iov;
	out->iovcnt = b->nsegs;
	out->len = pos - b->region_start;
	out->crc = crc;
	head->txid = b->txid;
	head->region_start = b->region_start;
	head->root_off = b->root.off;
	head->root_crc = b->root.crc;
	head->chain_crc = crc;
	head->keys = b->keys;
	head->live_bytes = (uint64_t)((int64_t)b->base_live + b->live_delta);
	head->off = pos;
	return KEEL_OK;
}

void tree_builder_free(tree_builder *b)
{
	if (!b)
		return;
	while (b->arena) {
		arena_chunk *next = b->arena->next;
		free(b->arena);
		b->arena = next;
	}
	free(b->buf);
	free(b->segs);
	free(b->iov);
	free(b);
}
