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
 *
 * Iterators need the keys in order: they share a sorted VIEW of the
 * generation's keys (struct pend_view, made by the first iterator that
 * needs one, under a lock of the views' own) and sort only the keys added
 * after it, which P1 makes a prefix of the list of every key.  Until
 * 2026-12-02 each iterator sorted every pending key when it opened.
 */
#include <pthread.h>
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

/* The generation's keys in key order, shared by the iterators that open on
 * it (merge_seek): every key reachable from UPTO, the head of the list of
 * every key when the view was made.  Keys are only ever added, at the
 * head of that list, so an iterator sorts just those added since; a view
 * is made again once they pass VIEW_SLACK.  Immutable once made; freed
 * with its last reference (the generation's, the cursors'). */
typedef struct pend_vkey {
	uint64_t head;         /* the key's first 8 bytes, big-endian, zero
	                          padded: a seek compares these in the array
	                          and reads a key only on a tie              */
	const pend_key *k;
} pend_vkey;

struct pend_view {
	atomic_long refs;
	const pend_key *upto;
	size_t n;
	pend_vkey keys[];
};

/* The newest view, behind a lock of its own: a reader that makes one
 * writes nothing of the generation itself (P1). */
typedef struct pend_views {
	pthread_mutex_t mu;
	pend_view *newest;     /* the generation's reference, or NULL        */
} pend_views;

struct pend_gen {
	atomic_long refs;
	pend_views *views;     /* the sorted views of its keys (merge_seek) */
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
	g->views = calloc(1, sizeof(*g->views));
	if (!g->buckets || !g->views) {
		free(g->buckets);
		free(g->views);
		free(g);
		return KEEL_ENOMEM;
	}
	pthread_mutex_init(&g->views->mu, NULL);
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

void pend_view_release(pend_view *v)
{
	if (v && atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1)
		free(v);
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
	pend_view_release(g->views->newest);
	pthread_mutex_destroy(&g->views->mu);
	free(g->views);
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

static bool key_in(const pend_key *k, const void *lo, size_t lolen,
                   const void *prefix, size_t plen)
{
	return !(lo && keel_key_cmp(k->key, k->klen, lo, lolen) < 0) &&
	       !(plen && (k->klen < plen || memcmp(k->key, prefix, plen)));
}

/* The keys of the list from HEAD up to (not including) UPTO that have a
 * version visible at TXID and lie in the range, sorted; *OUT malloc'd. */
static int collect(const pend_key *head, const pend_key *upto, uint64_t txid,
                   const void *lo, size_t lolen, const void *prefix,
                   size_t plen, pend_item **out, size_t *n)
{
	size_t cap = 0, count = 0;
	for (const pend_key *k = head; k != upto; k = k->all)
		cap++;
	*out = NULL;
	*n = 0;
	if (cap == 0)
		return KEEL_OK;
	pend_item *items = malloc(cap * sizeof(*items));
	if (!items)
		return KEEL_ENOMEM;
	for (const pend_key *k = head; k != upto; k = k->all) {
		const pend_ver *v = pend_visible(k, txid);
		if (v && key_in(k, lo, lolen, prefix, plen))
			items[count++] = (pend_item){.k = k, .v = v};
	}
	qsort(items, count, sizeof(*items), item_cmp);
	*out = items;
	*n = count;
	return KEEL_OK;
}

int pend_collect(const pend_gen *g, uint64_t txid, const void *lo, size_t lolen,
                 const void *prefix, size_t plen, pend_item **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (pend_gen_empty(g))
		return KEEL_OK;
	return collect(atomic_load_explicit(&g->all, memory_order_acquire), NULL,
	               txid, lo, lolen, prefix, plen, out, n);
}

/* ---- sorted views (struct pend_view) ---- */

/* Keys added since the newest view past which the next iterator makes a
 * new one: a view costs a sort of every key, an iterator with a stale one
 * a sort of the keys after it. */
#define VIEW_SLACK(n) (64 + (n) / 8)

static uint64_t key_head8(const uint8_t *key, size_t klen)
{
	uint8_t b[8] = {0};
	memcpy(b, key, klen < 8 ? klen : 8);
	uint64_t h;
	memcpy(&h, b, 8);
	return __builtin_bswap64(h); /* little-endian hosts (format.h) */
}

/* Orders as keel_key_cmp: heads that differ differ where the keys do (or
 * where the shorter one, padded with zeros, ends -- and is smaller). */
static int vkey_cmp(const pend_vkey *x, uint64_t head, const uint8_t *key,
                    size_t klen)
{
	if (x->head != head)
		return x->head < head ? -1 : 1;
	return keel_key_cmp(x->k->key, x->k->klen, key, klen);
}

static int vkey_sort_cmp(const void *a, const void *b)
{
	const pend_vkey *y = b;
	return vkey_cmp(a, y->head, y->k->key, y->k->klen);
}

static int view_make(const pend_key *head, pend_view **out)
{
	size_t n = 0;
	for (const pend_key *k = head; k; k = k->all)
		n++;
	pend_view *v = malloc(sizeof(*v) + n * sizeof(v->keys[0]));
	if (!v)
		return KEEL_ENOMEM;
	atomic_init(&v->refs, 1);
	v->upto = head;
	v->n = 0;
	for (const pend_key *k = head; k; k = k->all)
		v->keys[v->n++] = (pend_vkey){.head = key_head8(k->key, k->klen),
		                              .k = k};
	qsort(v->keys, v->n, sizeof(v->keys[0]), vkey_sort_cmp);
	*out = v;
	return KEEL_OK;
}

/* A reference to a view of G that covers all but a few of its keys, made
 * if need be, and *HEAD, a head of the list of every key at least as new
 * as the view's UPTO (so the keys from *HEAD to UPTO are those the view
 * lacks). */
static int view_get(const pend_gen *g, pend_view **out, const pend_key **head)
{
	pend_views *vs = g->views;
	int rc = KEEL_OK;
	pthread_mutex_lock(&vs->mu);
	pend_view *v = vs->newest;
	/* loaded after the view was made: UPTO is on its list */
	const pend_key *h = atomic_load_explicit(&g->all, memory_order_acquire);
	size_t newer = 0;
	if (v)
		for (const pend_key *k = h; k != v->upto; k = k->all)
			if (++newer > VIEW_SLACK(v->n))
				break;
	if (!v || newer > VIEW_SLACK(v->n)) {
		pend_view *fresh;
		if ((rc = view_make(h, &fresh)) == KEEL_OK) {
			pend_view_release(v);
			vs->newest = v = fresh;
		}
	}
	if (rc == KEEL_OK)
		atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&vs->mu);
	*out = rc == KEEL_OK ? v : NULL;
	*head = h;
	return rc;
}

/* ---- the merged view: the tree overlaid with the pending entries ---- */

int merge_seek(merge_cursor *c, keel_map *m, const keel_head *h,
               const pend_gen *g, const void *start, size_t slen,
               const void *prefix, size_t plen)
{
	c->m = m;
	c->view = NULL;
	c->vi = 0;
	c->have_vp = false;
	c->items = NULL;
	c->n = c->i = 0;
	c->txid = h->txid;
	c->prefix = prefix;
	c->plen = plen;
	c->have_tree = false;
	c->tree_rc = KEEL_OK;
	if (!pend_gen_empty(g)) {
		/* The generation's shared view, from the first key at or after
		 * START, and the few keys added since it was made, sorted here
		 * (docs/engine.md, "The pending index"). */
		const pend_key *head;
		int rc = view_get(g, &c->view, &head);
		if (rc == KEEL_OK)
			rc = collect(head, c->view->upto, h->txid, start, slen,
			             prefix, plen, &c->items, &c->n);
		if (rc)
			return rc;
		size_t lo = 0, hi = c->view->n;
		uint64_t head8 = start ? key_head8(start, slen) : 0;
		while (start && lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (vkey_cmp(&c->view->keys[mid], head8, start, slen) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		c->vi = lo;
	}
	c->tree_only = c->view == NULL && c->n == 0;
	return tree_cursor_seek(&c->tc, m, h->root_off, h->root_crc, start, slen);
}

/* The next pending item in key order, not taken yet; NULL at the end.  The
 * view's keys without a version visible to the cursor, or outside its
 * prefix, are passed over here. */
static const pend_item *pend_peek(merge_cursor *c)
{
	for (; !c->have_vp && c->view && c->vi < c->view->n; c->vi++) {
		const pend_key *k = c->view->keys[c->vi].k;
		const pend_ver *v = pend_visible(k, c->txid);
		if (v && key_in(k, NULL, 0, c->prefix, c->plen)) {
			c->vp = (pend_item){.k = k, .v = v};
			c->have_vp = true;
			break;
		}
	}
	const pend_item *x = c->i < c->n ? &c->items[c->i] : NULL;
	if (!c->have_vp || (x && keel_key_cmp(x->k->key, x->k->klen,
	                                      c->vp.k->key, c->vp.k->klen) < 0))
		return x;
	return &c->vp;
}

static void pend_take(merge_cursor *c, const pend_item *it)
{
	if (it == &c->vp) {
		c->have_vp = false;
		c->vi++;
	} else {
		c->i++;
	}
}

/* Takes the pending item P and gives its entry, or KEEL_ENOTFOUND for a
 * delete (the caller goes on). */
static int pend_give(merge_cursor *c, const pend_item *p, tree_leaf_entry *out)
{
	pend_item it = *p;
	pend_take(c, p);
	if (it.v->kind == PEND_DELETE)
		return KEEL_ENOTFOUND;
	return pend_entry(c->m, it.k, it.v, out);
}

static int item_key_cmp(const tree_leaf_entry *e, const pend_item *p)
{
	return keel_key_cmp(e->key, e->klen, p->k->key, p->k->klen);
}

/* The tree's entries are read straight into OUT and go out from there when
 * they come first (nearly always: pending keys are few next to the
 * tree's); only one that a pending key precedes is kept in c->te.  Going
 * through c->te every time was a fifth of a scan's time (range scans,
 * docs/results/engine.md): its wide loads stalled on the narrow stores. */
int merge_next_pending(merge_cursor *c, tree_leaf_entry *out)
{
	for (;;) {
		if (c->tree_rc != KEEL_OK && c->tree_rc != KEEL_ENOTFOUND)
			return c->tree_rc; /* damage: from then on */
		const pend_item *p = pend_peek(c);
		int rc;
		if (c->have_tree) {
			int cmp = p ? item_key_cmp(&c->te, p) : -1;
			if (cmp < 0) {
				*out = c->te;
				c->have_tree = false;
				return KEEL_OK;
			}
			if (cmp == 0) /* the pending version replaces it */
				c->have_tree = false;
		} else if (c->tree_rc == KEEL_OK) {
			c->tree_rc = tree_cursor_next(&c->tc, out);
			if (c->tree_rc != KEEL_OK && c->tree_rc != KEEL_ENOTFOUND)
				return c->tree_rc;
			if (c->tree_rc == KEEL_OK) {
				int cmp = p ? item_key_cmp(out, p) : -1;
				if (cmp < 0)
					return KEEL_OK;
				if (cmp > 0) { /* the pending key first */
					c->te = *out;
					c->have_tree = true;
				}
			}
		}
		if (!p)
			return KEEL_ENOTFOUND; /* the tree ended too */
		if ((rc = pend_give(c, p, out)) != KEEL_ENOTFOUND)
			return rc;
	}
}

void merge_free(merge_cursor *c)
{
	free(c->items);
	c->items = NULL;
	pend_view_release(c->view);
	c->view = NULL;
}
