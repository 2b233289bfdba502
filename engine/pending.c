/*
 * pending.c -- the pending index: the DELTA entries (format version 3) that
 * are not yet in the tree, in memory (docs/engine.md, "The pending index").
 *
 * One GENERATION per checkpointed root.  A generation is a hash table of
 * keys, each with a list of versions, newest first, every version tagged
 * with the txid of the head whose DELTA record holds it.  One thread at a
 * time adds to a generation (the commit leader while it builds, under the
 * pipeline's `building`; in a reader process, whoever refreshes under the
 * handle's mu); any number of threads read it without a lock:
 *
 *  (P1) A version or key is written whole before it is published, by a
 *       release store of the pointer that makes it reachable (a key's
 *       `newest`, a bucket, the list of every key); readers load those
 *       pointers with acquire.  Nothing reachable is ever changed or freed
 *       while the generation lives.
 *  (P2) A reader takes a version only when its txid is at most its
 *       snapshot's (D7): entries the leader added for a group still
 *       syncing, or one that failed, are invisible to every snapshot,
 *       since snapshots hold only published heads.
 *  (P3) A generation belongs to one root.  A checkpoint starts a new one;
 *       snapshots pin the generation they read (a reference count), and it
 *       is freed when the last lets go.
 *
 * Versions hold file offsets, not bytes: an inline value is at VOFF in the
 * DELTA record, resolved against the reader's mapping (which covers every
 * head it may read, and so the records below them); keys are copied, so
 * lookups and sorting never touch the mapping.  Memory is bounded by D3:
 * at most KEEL_PENDING_BYTES_MAX bytes of DELTA records are indexed.
 */
#include <stdlib.h>

#include "crc32c.h"
#include "internal.h"

#define PEND_BUCKETS ((size_t)1 << 14)
#define PEND_CHUNK ((size_t)64 << 10)

typedef struct pend_chunk {
	struct pend_chunk *next;
	size_t used, cap;
	uint8_t data[];
} pend_chunk;

struct pend_gen {
	atomic_long refs;
	uint64_t root_off;     /* the tree this generation overlays          */
	uint32_t root_crc;
	_Atomic(pend_key *) *buckets;
	_Atomic(pend_key *) all; /* every key, newest first                 */
	atomic_size_t nkeys;
	uint64_t last_txid;    /* the newest txid added (writer side)        */
	pend_chunk *arena;     /* the writer's memory; freed with the gen    */
};

static void *pend_alloc(pend_gen *g, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	pend_chunk *c = g->arena;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > PEND_CHUNK ? n : PEND_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = g->arena;
		c->used = 0;
		c->cap = cap;
		g->arena = c;
	}
	void *p = c->data + c->used;
	c->used += n;
	return p;
}

int pend_gen_new(uint64_t root_off, uint32_t root_crc, pend_gen **out)
{
	pend_gen *g = calloc(1, sizeof(*g));
	if (!g)
		return KEEL_ENOMEM;
	g->buckets = calloc(PEND_BUCKETS, sizeof(*g->buckets));
	if (!g->buckets) {
		free(g);
		return KEEL_ENOMEM;
	}
	atomic_init(&g->refs, 1);
	g->root_off = root_off;
	g->root_crc = root_crc;
	*out = g;
	return KEEL_OK;
}

void pend_gen_ref(pend_gen *g)
{
	if (g)
		atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}

void pend_gen_release(pend_gen *g)
{
	if (!g || atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) != 1)
		return;
	while (g->arena) {
		pend_chunk *next = g->arena->next;
		free(g->arena);
		g->arena = next;
	}
	free(g->buckets);
	free(g);
}

bool pend_gen_empty(const pend_gen *g)
{
	return !g || atomic_load_explicit(&g->nkeys, memory_order_acquire) == 0;
}

bool pend_gen_for(const pend_gen *g, uint64_t root_off, uint32_t root_crc)
{
	return g && g->root_off == root_off && g->root_crc == root_crc;
}

uint64_t pend_gen_last_txid(const pend_gen *g)
{
	return g ? g->last_txid : 0;
}

static uint32_t key_hash(const uint8_t *key, size_t klen)
{
	return keel_crc32c(0x9e3779b9u, key, klen);
}

static pend_key *find_key(const pend_gen *g, const uint8_t *key, size_t klen,
                          uint32_t h)
{
	pend_key *k = atomic_load_explicit(&g->buckets[h % PEND_BUCKETS],
	                                   memory_order_acquire);
	for (; k; k = k->next)
		if (k->hash == h && k->klen == klen && memcmp(k->key, key, klen) == 0)
			return k;
	return NULL;
}

const pend_ver *pend_visible(const pend_key *k, uint64_t txid)
{
	const pend_ver *v = atomic_load_explicit(&k->newest, memory_order_acquire);
	while (v && v->txid > txid) /* P2: newer than the snapshot */
		v = v->older;
	return v;
}

const pend_ver *pend_lookup(const pend_gen *g, const void *key, size_t klen,
                            uint64_t txid)
{
	if (pend_gen_empty(g))
		return NULL;
	pend_key *k = find_key(g, key, klen, key_hash(key, klen));
	return k ? pend_visible(k, txid) : NULL;
}

int pend_add(pend_gen *g, const uint8_t *key, uint16_t klen, uint64_t txid,
             uint8_t kind, uint64_t voff, uint32_t vlen, uint32_t vcrc)
{
	uint32_t h = key_hash(key, klen);
	pend_key *k = find_key(g, key, klen, h);
	pend_ver *v = pend_alloc(g, sizeof(*v));
	if (!v)
		return KEEL_ENOMEM;
	*v = (pend_ver){.txid = txid, .voff = voff, .vlen = vlen, .vcrc = vcrc,
	                .kind = kind};
	if (txid > g->last_txid)
		g->last_txid = txid;
	if (k) {
		v->older = atomic_load_explicit(&k->newest, memory_order_relaxed);
		atomic_store_explicit(&k->newest, v, memory_order_release); /* P1 */
		return KEEL_OK;
	}
	k = pend_alloc(g, sizeof(*k) + klen);
	if (!k)
		return KEEL_ENOMEM;
	k->hash = h;
	k->klen = klen;
	memcpy(k->key, key, klen);
	atomic_init(&k->newest, v);
	_Atomic(pend_key *) *b = &g->buckets[h % PEND_BUCKETS];
	k->next = atomic_load_explicit(b, memory_order_relaxed);
	k->all = atomic_load_explicit(&g->all, memory_order_relaxed);
	atomic_store_explicit(b, k, memory_order_release); /* P1 */
	atomic_store_explicit(&g->all, k, memory_order_release);
	atomic_fetch_add_explicit(&g->nkeys, 1, memory_order_release);
	return KEEL_OK;
}

int pend_add_delta(pend_gen *g, const uint8_t *p, uint32_t len,
                   uint64_t payload_off, uint64_t txid)
{
	uint32_t count = keel_ld32(p), at = KEEL_DELTA_HDR;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t size = keel_delta_ent_check(p + at, len - at);
		if (!size)
			return KEEL_ECORRUPT;
		keel_delta_ent d;
		keel_delta_ent_decode(p + at, &d);
		uint8_t kind = d.del ? PEND_DELETE : d.e.inl ? PEND_INLINE : PEND_REF;
		uint64_t voff = kind == PEND_INLINE ? payload_off + at + d.inl_at
		              : kind == PEND_REF ? d.e.voff : 0;
		int rc = pend_add(g, d.e.key, d.e.klen, txid, kind, voff, d.e.vlen,
		                  d.e.vcrc);
		if (rc)
			return rc;
		at += size;
	}
	return KEEL_OK;
}

int pend_entry(keel_map *m, const pend_key *k, const pend_ver *v,
               tree_leaf_entry *out)
{
	*out = (tree_leaf_entry){.key = k->key, .klen = k->klen, .vlen = v->vlen,
	                         .rev = v->txid};
	if (v->kind == PEND_REF) {
		out->voff = v->voff;
		out->vcrc = v->vcrc;
		return KEEL_OK;
	}
	/* The DELTA record was checked when it was indexed; its bytes lie
	 * below a head this mapping covers. */
	if (v->voff > m->len || v->vlen > m->len - v->voff)
		return KEEL_ECORRUPT;
	out->inl = m->base + v->voff;
	return KEEL_OK;
}

static int item_cmp(const void *a, const void *b)
{
	const pend_item *x = a, *y = b;
	return keel_key_cmp(x->k->key, x->k->klen, y->k->key, y->k->klen);
}

int pend_collect(const pend_gen *g, uint64_t txid, const void *lo, size_t lolen,
                 const void *prefix, size_t plen, pend_item **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (pend_gen_empty(g))
		return KEEL_OK;
	size_t cap = atomic_load_explicit(&g->nkeys, memory_order_acquire) + 1;
	pend_item *items = malloc(cap * sizeof(*items));
	if (!items)
		return KEEL_ENOMEM;
	size_t count = 0;
	for (const pend_key *k = atomic_load_explicit(&g->all, memory_order_acquire);
	     k && count < cap; k = k->all) {
		const pend_ver *v = pend_visible(k, txid);
		if (!v || (lo && keel_key_cmp(k->key, k->klen, lo, lolen) < 0) ||
		    (plen && (k->klen < plen || memcmp(k->key, prefix, plen))))
			continue;
		items[count++] = (pend_item){.k = k, .v = v};
	}
	qsort(items, count, sizeof(*items), item_cmp);
	*out = items;
	*n = count;
	return KEEL_OK;
}

/* ---- the merged view: the tree overlaid with the pending entries ---- */

int merge_seek(merge_cursor *c, keel_map *m, const keel_head *h,
               const pend_gen *g, const void *start, size_t slen,
               const void *prefix, size_t plen)
{
	c->m = m;
	c->items = NULL;
	c->n = c->i = 0;
	c->have_tree = false;
	c->tree_rc = KEEL_OK;
	int rc = pend_collect(g, h->txid, start, slen, prefix, plen, &c->items,
	                      &c->n);
	if (rc)
		return rc;
	return tree_cursor_seek(&c->tc, m, h->root_off, h->root_crc, start, slen);
}

int merge_next(merge_cursor *c, tree_leaf_entry *out)
{
	/* Nothing pending left (a scan of a checkpointed store, or past the
	 * last pending key): the tree's entry goes straight to OUT, not
	 * through c->te, whose copy was a fifth of a scan's time
	 * (docs/bench.md). */
	if (c->i >= c->n && !c->have_tree) {
		if (c->tree_rc != KEEL_OK)
			return c->tree_rc;
		return c->tree_rc = tree_cursor_next(&c->tc, out);
	}
	for (;;) {
		if (!c->have_tree && c->tree_rc == KEEL_OK) {
			c->tree_rc = tree_cursor_next(&c->tc, &c->te);
			c->have_tree = c->tree_rc == KEEL_OK;
		}
		if (c->tree_rc != KEEL_OK && c->tree_rc != KEEL_ENOTFOUND)
			return c->tree_rc;
		bool have_pend = c->i < c->n;
		if (!c->have_tree && !have_pend)
			return KEEL_ENOTFOUND;
		int cmp = !have_pend ? -1 : !c->have_tree ? 1
		        : keel_key_cmp(c->te.key, c->te.klen, c->items[c->i].k->key,
		                       c->items[c->i].k->klen);
		if (cmp < 0) {
			*out = c->te;
			c->have_tree = false;
			return KEEL_OK;
		}
		if (cmp == 0)
			c->have_tree = false; /* the pending version replaces it */
		const pend_item *it = &c->items[c->i++];
		if (it->v->kind == PEND_DELETE)
			continue;
		return pend_entry(c->m, it->k, it->v, out);
	}
}

void merge_free(merge_cursor *c)
{
	free(c->items);
	c->items = NULL;
}
