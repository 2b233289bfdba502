/*
 * delta.c -- building a commit group of a version 3 store: a DELTA record
 * of what the group changed, or a checkpoint (docs/engine.md, "the delta
 * log").  Floor 2, beside tree.c (which it uses for checkpoints) and
 * commit.c (which calls it).
 *
 *   dgroup_new --> dgroup_apply per batch (expectations against the state:
 *   the group's own writes, then the pending index, then the tree) -->
 *   dgroup_finish: DELTA record + head, or, past a bound, a checkpoint:
 *   the tree rebuilt copy-on-write from the newest pending entry of every
 *   key and the group's writes --> the leader indexes a DELTA group's
 *   entries (dgroup_index) before it writes, tagged with the txid (D7).
 *
 * INVARIANTS (numbered as in docs/engine.md)
 *  (D1) The state at a head is its tree overlaid with its pending entries,
 *       oldest first; a group's expectations are checked against exactly
 *       that state (dgroup_state_rev), and the head's KEYS counts it.
 *  (D2) A checkpoint applies the newest pending version of every key (a
 *       delete removes it), values by reference where they are; the head
 *       that installs it has nothing pending.  KEEL_UNSAFE_CKPT_DROP breaks
 *       this on purpose (a positive control).
 *  (D3) No head passes KEEL_CKPT_HEADS pending heads or the writer's
 *       checkpoint bound in pending bytes, and no DELTA record is over
 *       KEEL_DELTA_MAX: such a group is written as a checkpoint.
 *  (D4) Everything a group writes is in its region, covered by its head's
 *       chain CRC; nothing is written in place.
 *  (D5) Value references and delta_off point below the head.
 */
#include <assert.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "crc32c.h"
#include "internal.h"

/* A key the group touched, or looked at. */
typedef struct dentry {
	const uint8_t *key;
	const uint8_t *val;  /* NULL: deleted (when written)                  */
	uint64_t before;     /* its revision before the group; 0: absent      */
	uint64_t voff;       /* layout: its VALUE record, when not inline     */
	uint32_t vlen, vcrc;
	uint16_t klen;
	bool written;        /* an op of the group wrote it                   */
} dentry;

typedef struct dundo {
	size_t idx;
	dentry old;
} dundo;

struct dgroup {
	keel_map *m;
	keel_head base;      /* the state the group builds on (db->tail)     */
	const pend_gen *g;   /* base's generation                            */
	uint64_t txid, ckpt_bytes;
	unsigned flags;
	dentry *ents;
	size_t n, cap;
	uint32_t *slots;     /* open addressing: entry index + 1, 0 empty    */
	size_t mask;
	dundo *undo;
	size_t nundo, undo_cap;
	/* the layout */
	size_t *order;       /* written entries, in key order                */
	size_t nwritten;
	uint8_t *vhdrs;      /* VALUE record headers, 16 bytes each          */
	uint8_t *delta;      /* the DELTA record, padded                     */
	uint64_t delta_size;
	struct iovec *iov;
	tree_builder *tb;
	tree_op *ckops;
	pend_item *items;
};

static const uint8_t zeros[8];

int dgroup_new(keel_map *m, const keel_head *base, const pend_gen *g,
               uint64_t ckpt_bytes, unsigned flags, dgroup **out)
{
	dgroup *d = calloc(1, sizeof(*d));
	if (!d)
		return KEEL_ENOMEM;
	d->m = m;
	d->base = *base;
	d->g = g;
	d->txid = base->txid + 1;
	d->ckpt_bytes = ckpt_bytes;
	d->flags = flags;
	*out = d;
	return KEEL_OK;
}

void dgroup_free(dgroup *d)
{
	if (!d)
		return;
	tree_builder_free(d->tb);
	free(d->ents);
	free(d->slots);
	free(d->undo);
	free(d->order);
	free(d->vhdrs);
	free(d->delta);
	free(d->iov);
	free(d->ckops);
	free(d->items);
	free(d);
}

/* KEY's revision in the state at the base (D1): 0 when absent. */
static int dgroup_state_rev(dgroup *d, const uint8_t *key, size_t klen,
                            uint64_t *rev)
{
	const pend_ver *v = pend_lookup(d->g, key, klen, d->base.txid);
	if (v) {
		*rev = v->kind == PEND_DELETE ? 0 : v->txid;
		return KEEL_OK;
	}
	tree_leaf_entry e;
	int rc = tree_lookup(d->m, d->base.root_off, d->base.root_crc, key, klen,
	                     &e);
	*rev = rc == KEEL_OK ? e.rev : 0;
	return rc == KEEL_ENOTFOUND ? KEEL_OK : rc;
}

static int slots_grow(dgroup *d)
{
	size_t cap = d->slots ? (d->mask + 1) * 2 : 64;
	uint32_t *s = calloc(cap, sizeof(*s));
	if (!s)
		return KEEL_ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		size_t h = keel_crc32c(0, d->ents[i].key, d->ents[i].klen) & (cap - 1);
		while (s[h])
			h = (h + 1) & (cap - 1);
		s[h] = (uint32_t)i + 1;
	}
	free(d->slots);
	d->slots = s;
	d->mask = cap - 1;
	return KEEL_OK;
}

/* The entry of KEY, made (with its revision before the group) if new. */
static int dgroup_entry(dgroup *d, const uint8_t *key, size_t klen, size_t *idx)
{
	int rc;
	if ((!d->slots || (d->n + 1) * 2 > d->mask + 1) && (rc = slots_grow(d)))
		return rc;
	size_t h = keel_crc32c(0, key, klen) & d->mask;
	for (; d->slots[h]; h = (h + 1) & d->mask) {
		dentry *e = &d->ents[d->slots[h] - 1];
		if (e->klen == klen && memcmp(e->key, key, klen) == 0) {
			*idx = d->slots[h] - 1;
			return KEEL_OK;
		}
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		dentry *ne = realloc(d->ents, cap * sizeof(*ne));
		if (!ne)
			return KEEL_ENOMEM;
		d->ents = ne;
		d->cap = cap;
	}
	uint64_t before;
	if ((rc = dgroup_state_rev(d, key, klen, &before)))
		return rc;
	d->ents[d->n] = (dentry){.key = key, .klen = (uint16_t)klen,
	                         .before = before};
	d->slots[h] = (uint32_t)d->n + 1;
	*idx = d->n++;
	return KEEL_OK;
}

static int undo_push(dgroup *d, size_t idx)
{
	if (d->nundo == d->undo_cap) {
		size_t cap = d->undo_cap ? d->undo_cap * 2 : 16;
		dundo *nu = realloc(d->undo, cap * sizeof(*nu));
		if (!nu)
			return KEEL_ENOMEM;
		d->undo = nu;
		d->undo_cap = cap;
	}
	d->undo[d->nundo++] = (dundo){.idx = idx, .old = d->ents[idx]};
	return KEEL_OK;
}

int dgroup_apply(dgroup *d, const tree_op *ops, size_t n, size_t *failed)
{
	int rc = KEEL_OK;
	size_t i;
	d->nundo = 0;
	for (i = 0; i < n; i++) {
		const tree_op *op = &ops[i];
		size_t idx;
		if ((rc = dgroup_entry(d, op->key, op->klen, &idx)))
			break;
		dentry *e = &d->ents[idx];
		uint64_t cur = e->written ? (e->val ? d->txid : 0) : e->before;
		if (op->expect == KEEL_REV_ANY)
			rc = (!op->val && cur == 0) ? KEEL_ENOTFOUND : KEEL_OK;
		else if (op->expect != cur)
			rc = KEEL_ECONFLICT;
		if (rc || (rc = undo_push(d, idx)))
			break;
		e = &d->ents[idx];
		e->written = true;
		e->val = op->val;
		e->vlen = (uint32_t)op->vlen;
	}
	if (rc) { /* the batch is applied whole or not at all */
		while (d->nundo > 0) {
			d->nundo--;
			d->ents[d->undo[d->nundo].idx] = d->undo[d->nundo].old;
		}
		if (failed)
			*failed = i < n ? i : 0;
	}
	return rc;
}

static int order_cmp(const void *a, const void *b, void *arg)
{
	const dgroup *d = arg;
	const dentry *x = &d->ents[*(const size_t *)a];
	const dentry *y = &d->ents[*(const size_t *)b];
	return keel_key_cmp(x->key, x->klen, y->key, y->klen);
}

bool dgroup_empty(const dgroup *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->ents[i].written)
			return false;
	return true;
}

static bool dentry_inline(const dentry *e)
{
	return e->val && e->vlen <= KEEL_INLINE_MAX;
}

/* The keys of the state after the group (D1). */
static uint64_t dgroup_keys(const dgroup *d)
{
	uint64_t keys = d->base.keys;
	for (size_t i = 0; i < d->nwritten; i++) {
		const dentry *e = &d->ents[d->order[i]];
		keys += (e->val != NULL) - (e->before != 0);
	}
	return keys;
}

/* The DELTA way: VALUE records for the values not inlined, then the
 * DELTA record; the head keeps the base's root. */
static int layout_delta(dgroup *d, uint64_t delta_payload, keel_head *head,
                        tree_region *out)
{
	uint64_t pos = d->base.off + KEEL_HEAD_SIZE, start = pos;
	size_t iovcnt = 0, nvals = 0;
	d->vhdrs = malloc(d->nwritten * KEEL_REC_HDR + 1);
	d->iov = malloc((3 * d->nwritten + 1) * sizeof(*d->iov));
	d->delta_size = keel_rec_size(delta_payload);
	d->delta = calloc(1, d->delta_size);
	if (!d->vhdrs || !d->iov || !d->delta)
		return KEEL_ENOMEM;
	for (size_t i = 0; i < d->nwritten; i++) {
		dentry *e = &d->ents[d->order[i]];
		if (!e->val || dentry_inline(e))
			continue;
		uint8_t *hdr = d->vhdrs + KEEL_REC_HDR * nvals++;
		uint64_t size = keel_rec_size(e->vlen);
		keel_rec_encode(hdr, KEEL_REC_VALUE, e->val, e->vlen);
		e->voff = pos;
		e->vcrc = keel_ld32(hdr + 12);
		d->iov[iovcnt++] = (struct iovec){hdr, KEEL_REC_HDR};
		d->iov[iovcnt++] = (struct iovec){(void *)e->val, e->vlen};
		if (size - KEEL_REC_HDR - e->vlen)
			d->iov[iovcnt++] = (struct iovec){(void *)zeros,
			                                  size - KEEL_REC_HDR - e->vlen};
		pos += size;
	}
	uint8_t *p = d->delta + KEEL_REC_HDR;
	keel_st32(p, (uint32_t)d->nwritten);
	uint32_t at = KEEL_DELTA_HDR;
	for (size_t i = 0; i < d->nwritten; i++) {
		const dentry *e = &d->ents[d->order[i]];
		keel_leaf_ent le = {.key = e->key, .klen = e->klen, .vlen = e->vlen,
		                    .rev = d->txid, .voff = e->voff, .vcrc = e->vcrc};
		if (dentry_inline(e))
			le.inl = e->vlen ? e->val : zeros;
		at += keel_delta_ent_encode(p + at, &le, e->val == NULL);
	}
	assert(at == delta_payload);
	keel_rec_encode(d->delta, KEEL_REC_DELTA, p, (uint32_t)delta_payload);
	d->iov[iovcnt++] = (struct iovec){d->delta, d->delta_size};
	uint64_t delta_off = pos;
	pos += d->delta_size;

	uint32_t crc = d->base.chain_crc;
	for (size_t i = 0; i < iovcnt; i++)
		crc = keel_crc32c(crc, d->iov[i].iov_base, d->iov[i].iov_len);
	const keel_head *b = &d->base;
	uint64_t span_start = b->pending_heads ? b->off - b->pending_bytes : start;
	*head = (keel_head){.txid = d->txid, .region_start = start,
	                    .root_off = b->root_off, .root_crc = b->root_crc,
	                    .chain_crc = crc, .keys = dgroup_keys(d),
	                    .delta_off = delta_off,
	                    .delta_crc = keel_ld32(d->delta + 12),
	                    .pending_heads = b->pending_heads + 1,
	                    .pending_bytes = pos - span_start, .off = pos};
	/* D5: the tree's bytes, the whole pending span, this head */
	head->live_bytes = b->live_bytes - b->pending_bytes + head->pending_bytes;
	out->iov = d->iov;
	out->iovcnt = iovcnt;
	out->len = pos - start;
	out->crc = crc;
	return KEEL_OK;
}

/* The pending item whose oldest version is the oldest of all: what
 * KEEL_UNSAFE_CKPT_DROP leaves out. */
static size_t oldest_item(const pend_item *items, size_t n)
{
	size_t best = 0;
	uint64_t best_txid = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		const pend_ver *v = items[i].v;
		while (v->older)
			v = v->older;
		if (v->txid < best_txid) {
			best_txid = v->txid;
			best = i;
		}
	}
	return best;
}

/* The checkpoint way (D2): the tree of the base, with the newest pending
 * version of every key and then the group's writes applied. */
static int layout_checkpoint(dgroup *d, keel_head *head, tree_region *out)
{
	static const uint8_t ref_marker[1];
	size_t nitems = 0, n = 0;
	int rc = pend_collect(d->g, d->base.txid, NULL, 0, NULL, 0, &d->items,
	                      &nitems);
	if (rc)
		return rc;
	size_t drop = (d->flags & KEEL_UNSAFE_CKPT_DROP) && nitems
	            ? oldest_item(d->items, nitems) : SIZE_MAX;
	d->ckops = malloc((nitems + d->nwritten + 1) * sizeof(*d->ckops));
	if (!d->ckops)
		return KEEL_ENOMEM;
	for (size_t i = 0; i < nitems; i++) {
		const pend_ver *v = d->items[i].v;
		tree_leaf_entry e;
		if (i == drop)
			continue; /* the positive control's deliberate bug */
		if ((rc = pend_entry(d->m, d->items[i].k, v, &e)))
			return rc;
		tree_op *op = &d->ckops[n++];
		*op = (tree_op){.key = e.key, .klen = e.klen, .uncond = true,
		                .rev = v->txid, .vlen = e.vlen};
		if (v->kind == PEND_INLINE)
			op->val = e.inl;
		else if (v->kind == PEND_REF) {
			op->val = ref_marker; /* not NULL: a put */
			op->voff = e.voff;
			op->vcrc = e.vcrc;
		}
	}
	for (size_t i = 0; i < d->nwritten; i++) {
		const dentry *e = &d->ents[d->order[i]];
		d->ckops[n++] = (tree_op){.key = e->key, .klen = e->klen,
		                          .val = e->val, .vlen = e->vlen,
		                          .uncond = true};
	}
	keel_head tree_base = d->base;
	tree_base.live_bytes = d->base.live_bytes - d->base.pending_bytes;
	if ((rc = tree_builder_new(d->m, &tree_base, d->txid,
	                           d->base.off + KEEL_HEAD_SIZE, &d->tb)) ||
	    (rc = tree_apply(d->tb, d->ckops, n, NULL)) ||
	    (rc = tree_serialize(d->tb, head, out)))
		return rc;
	head->keys = dgroup_keys(d);
	head->delta_off = 0;
	head->delta_crc = 0;
	head->pending_heads = 0;
	head->pending_bytes = 0;
	return KEEL_OK;
}

int dgroup_finish(dgroup *d, keel_head *head, tree_region *out,
                  bool *checkpoint)
{
	d->order = malloc((d->n + 1) * sizeof(*d->order));
	if (!d->order)
		return KEEL_ENOMEM;
	d->nwritten = 0;
	uint64_t payload = KEEL_DELTA_HDR, values = 0;
	for (size_t i = 0; i < d->n; i++) {
		const dentry *e = &d->ents[i];
		if (!e->written)
			continue;
		d->order[d->nwritten++] = i;
		payload += keel_delta_ent_size(e->klen, !e->val, dentry_inline(e),
		                               e->vlen);
		if (e->val && !dentry_inline(e))
			values += keel_rec_size(e->vlen);
	}
	qsort_r(d->order, d->nwritten, sizeof(*d->order), order_cmp, d);
	/* D3: the bounds that make a group a checkpoint */
	const keel_head *b = &d->base;
	uint64_t region = values + keel_rec_size(payload);
	uint64_t pending = (b->pending_heads ? b->pending_bytes + KEEL_HEAD_SIZE
	                                     : 0) + region;
	*checkpoint = keel_rec_size(payload) > KEEL_DELTA_MAX ||
	              b->pending_heads + 1 > KEEL_CKPT_HEADS ||
	              pending > d->ckpt_bytes;
	int rc = *checkpoint ? layout_checkpoint(d, head, out)
	                     : layout_delta(d, payload, head, out);
	if (rc)
		return rc;
	/* D3, D5 and the head rules of format.h, on what is about to be
	 * written */
	assert(*checkpoint ? head->pending_heads == 0 && head->delta_off == 0
	                   : head->pending_heads == b->pending_heads + 1 &&
	                     head->pending_bytes == pending &&
	                     head->pending_bytes <= d->ckpt_bytes &&
	                     head->delta_off < head->off &&
	                     head->root_off == b->root_off);
	assert(head->pending_heads <= KEEL_CKPT_HEADS);
	assert(head->txid == b->txid + 1 && head->region_start == b->off +
	       KEEL_HEAD_SIZE && head->off >= head->region_start);
	return KEEL_OK;
}

int dgroup_index(dgroup *d, pend_gen *g, const keel_head *head)
{
	/* D7: versions go in in txid order, each group's after the last */
	assert(head->delta_off && pend_gen_last_txid(g) < head->txid);
	assert(pend_gen_for(g, head->root_off, head->root_crc));
	const uint8_t *p = d->delta + KEEL_REC_HDR;
	return pend_add_delta(g, p, keel_ld32(d->delta + 8),
	                      head->delta_off + KEEL_REC_HDR, head->txid);
}
