/* verify.c -- the integrity check (what is checked: verify.h). */
#include "verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "crc32c.h"

typedef struct verifier {
	const uint8_t *base;
	size_t len;
	uint64_t limit;            /* references must point below this      */
	keel_check_report_fn report;
	void *arg;
	keel_check_result *out;
	const uint8_t *last_key;   /* the previous leaf key, for ordering   */
	uint16_t last_klen;
	uint64_t live;
	uint64_t *seen;            /* one bit per 8 bytes: within a record
	                              already checked (each is referenced once
	                              in a tree, and none overlap) */
	struct pfin *pend;         /* version 3: the newest pending entry of
	                              each key, in key order */
	size_t npend, pi;          /* entries; the leaf walk's place in them */
} verifier;

/* A pending DELTA entry (version 3), for the merged key count. */
typedef struct pfin {
	const uint8_t *key;
	uint64_t txid;
	uint16_t klen;
	bool del, in_tree;
} pfin;

/* The keys a subtree may hold: [lo, hi), where a NULL end is open.  A
 * branch entry's key is the lower end of its child's range and the next
 * entry's key (or the branch's own upper end) the upper. */
typedef struct key_range {
	const uint8_t *lo, *hi;
	uint16_t lo_len, hi_len;
} key_range;

__attribute__((format(printf, 3, 4)))
static void problem(verifier *v, uint64_t off, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (v->out->problems++ == 0) {
		v->out->first_offset = off;
		snprintf(v->out->first_reason, sizeof(v->out->first_reason), "%s", what);
	}
	if (v->report && v->out->problems <= KEEL_CHECK_REPORT_MAX)
		v->report(v->arg, off, what);
}

/* Does [off, off+len) meet a record already checked?  (With SET: marks it
 * as checked.)  One bit per 8 bytes: records start on 8 bytes and take a
 * multiple of 8, padding included. */
static bool seen(verifier *v, uint64_t off, uint64_t len, bool set)
{
	for (uint64_t g = off / 8; g < (off + len) / 8; g++) {
		uint64_t bit = 1ull << (g % 64);
		if (set)
			v->seen[g / 64] |= bit;
		else if (v->seen[g / 64] & bit)
			return true;
	}
	return false;
}

/* Checks the record at OFF: header, type, CRC against EXPECT.  Returns the
 * payload or NULL (after reporting). */
static const uint8_t *record(verifier *v, uint64_t off, uint8_t type,
                             uint32_t expect, uint32_t *plen, const char *what)
{
	keel_rec_hdr h;

	if (off % 8 || off < KEEL_DATA_START || off + KEEL_REC_HDR > v->len ||
	    off >= v->limit) {
		problem(v, off, "%s reference out of range", what);
		return NULL;
	}
	/* Checked once: in a tree every record has one referrer, and records
	 * never overlap, so a second reference, or one inside another record,
	 * is damage (a crafted file that shares a child between entries would
	 * otherwise cost a walk FANOUT^DEPTH visits, and N nested records N
	 * times their bytes). */
	if (seen(v, off, KEEL_REC_HDR, false)) {
		problem(v, off, "%s referenced a second time, or inside another record",
		        what);
		return NULL;
	}
	seen(v, off, KEEL_REC_HDR, true);
	const uint8_t *rec = v->base + off;
	if (keel_rec_decode(rec, &h) != KEEL_OK || h.type != type) {
		problem(v, off, "%s: bad record header", what);
		return NULL;
	}
	if (h.len > v->len - off - KEEL_REC_HDR || off + KEEL_REC_HDR + h.len > v->limit) {
		problem(v, off, "%s: record runs past its head", what);
		return NULL;
	}
	uint64_t size = keel_rec_size(h.len);
	if (seen(v, off + KEEL_REC_HDR, size - KEEL_REC_HDR, false)) {
		problem(v, off, "%s overlaps another record", what);
		return NULL;
	}
	seen(v, off + KEEL_REC_HDR, size - KEEL_REC_HDR, true);
	uint32_t crc = keel_rec_crc(rec, h.len);
	if (crc != h.crc) {
		problem(v, off, "%s: checksum mismatch", what);
		return NULL;
	}
	if (crc != expect) {
		problem(v, off, "%s: checksum differs from its reference", what);
		return NULL;
	}
	v->out->records++;
	v->out->bytes += keel_rec_size(h.len);
	v->live += keel_rec_size(h.len);
	*plen = h.len;
	return rec + KEEL_REC_HDR;
}

static const uint8_t *entry_key(const uint8_t *p, unsigned i, uint16_t *klen)
{
	const uint8_t *e = keel_node_entry(p, i);
	*klen = keel_ld16(e);
	return e + KEEL_LEAF_ENTRY; /* = KEEL_BRANCH_ENTRY */
}

/* The node's own structure and keys: entries inside it, index, keys
 * strictly ascending and inside R, the first equal to R's lower end (its
 * separator).  False (after reporting) when the node is wrong: its subtree
 * is then not entered. */
static bool node_sound(verifier *v, uint64_t off, const uint8_t *p,
                       uint32_t plen, int level, const key_range *r)
{
	bool leaf = level == 0;
	uint16_t count = keel_ld16(p);
	if (count == 0 || p[2] != level ||
	    keel_node_entries_at(count, keel_node_plen(p)) > plen) {
		problem(v, off, "node header invalid (count %u, level %u)", count, p[2]);
		return false;
	}
	for (unsigned i = 0; i < count; i++)
		if (!keel_node_ent_check(p, plen, leaf, i)) {
			problem(v, off, "entry %u out of bounds", i);
			return false;
		}
	/* every entry lies inside the node (checked above): its index can be */
	if (!keel_node_index_valid(p, plen)) {
		problem(v, off, "node index (shared prefix or key heads) differs from its keys");
		return false;
	}
	const uint8_t *prev = NULL;
	uint16_t prev_len = 0;
	for (unsigned i = 0; i < count; i++) {
		uint16_t klen;
		const uint8_t *key = entry_key(p, i, &klen);
		if (prev && keel_key_cmp(prev, prev_len, key, klen) >= 0) {
			problem(v, off, "entry %u key out of order", i);
			return false;
		}
		if (i == 0 && r->lo && keel_key_cmp(key, klen, r->lo, r->lo_len) != 0) {
			problem(v, off, "first key differs from its parent's separator");
			return false;
		}
		if (r->hi && keel_key_cmp(key, klen, r->hi, r->hi_len) >= 0) {
			problem(v, off, "entry %u key not below the next separator", i);
			return false;
		}
		prev = key;
		prev_len = klen;
	}
	return true;
}

/* Checks the values and keys of a sound leaf. */
static void leaf_entries(verifier *v, uint64_t off, const uint8_t *p)
{
	uint16_t count = keel_ld16(p);
	for (unsigned i = 0; i < count; i++) {
		const uint8_t *e = keel_node_entry(p, i);
		uint16_t klen;
		const uint8_t *key = entry_key(p, i, &klen);
		if (v->last_key && keel_key_cmp(v->last_key, v->last_klen, key, klen) >= 0)
			problem(v, off, "entry %u key out of order", i);
		v->last_key = key;
		v->last_klen = klen;
		v->out->keys++;
		/* the leaf walk is in key order: so is the pending list */
		while (v->pi < v->npend &&
		       keel_key_cmp(v->pend[v->pi].key, v->pend[v->pi].klen, key,
		                    klen) < 0)
			v->pi++;
		if (v->pi < v->npend &&
		    keel_key_cmp(v->pend[v->pi].key, v->pend[v->pi].klen, key,
		                 klen) == 0)
			v->pend[v->pi].in_tree = true;
		keel_leaf_ent le;
		uint32_t vplen;
		keel_leaf_ent_decode(e, &le);
		if (le.rev == 0)
			problem(v, off, "entry %u has revision 0", i);
		if (le.inl) /* covered by the leaf's own crc */
			continue;
		if (le.voff >= off) {
			problem(v, off, "entry %u value points forward", i);
			continue;
		}
		if (record(v, le.voff, KEEL_REC_VALUE, le.vcrc, &vplen, "value") &&
		    vplen != le.vlen)
			problem(v, le.voff, "value length %u, leaf says %u", vplen, le.vlen);
	}
}

/* Verifies the subtree at OFF, whose keys must lie in R.  The work is
 * bounded by the file: each record is read once (the seen bits), and the
 * recursion is as deep as the levels, which fall by one per step. */
static void node(verifier *v, uint64_t off, uint32_t crc, int level,
                 const key_range *r)
{
	uint32_t plen;
	bool leaf = level == 0;
	const uint8_t *p = record(v, off, leaf ? KEEL_REC_LEAF : KEEL_REC_BRANCH,
	                          crc, &plen, leaf ? "leaf" : "branch");

	if (!p || !node_sound(v, off, p, plen, level, r))
		return;
	if (leaf) {
		leaf_entries(v, off, p);
		return;
	}
	uint16_t count = keel_ld16(p);
	for (unsigned i = 0; i < count; i++) {
		const uint8_t *e = keel_node_entry(p, i);
		key_range cr = {.hi = r->hi, .hi_len = r->hi_len};
		cr.lo = entry_key(p, i, &cr.lo_len);
		if (i + 1 < count)
			cr.hi = entry_key(p, i + 1, &cr.hi_len);
		uint64_t coff = keel_ld64(e + 8);
		if (coff >= off) {
			problem(v, off, "entry %u points forward", i);
			continue;
		}
		node(v, coff, keel_ld32(e + 4), level - 1, &cr);
	}
}

static int pfin_cmp(const void *a, const void *b)
{
	const pfin *x = a, *y = b;
	int c = keel_key_cmp(x->key, x->klen, y->key, y->klen);
	if (c)
		return c;
	return x->txid < y->txid ? 1 : x->txid > y->txid ? -1 : 0; /* newest first */
}

/* Adds the entries of the DELTA record of pending head H to V's list,
 * after checking the record and its value references. */
static bool pending_delta(verifier *v, const keel_head *h, size_t *cap)
{
	keel_rec_hdr rh;
	uint64_t off = h->delta_off;
	if (off % 8 || off < KEEL_DATA_START || off + KEEL_REC_HDR > v->len ||
	    off >= h->off) {
		problem(v, h->off, "pending head's DELTA reference out of range");
		return false;
	}
	const uint8_t *rec = v->base + off;
	if (keel_rec_decode(rec, &rh) != KEEL_OK || rh.type != KEEL_REC_DELTA ||
	    rh.len > h->off - off - KEEL_REC_HDR ||
	    keel_rec_crc(rec, rh.len) != rh.crc || rh.crc != h->delta_crc) {
		problem(v, off, "DELTA record: bad header or checksum");
		return false;
	}
	const uint8_t *p = rec + KEEL_REC_HDR;
	if (!keel_delta_valid(p, rh.len, h->txid, off)) {
		problem(v, off, "DELTA record: entries malformed, out of order, "
		        "or with a revision other than its head's txid");
		return false;
	}
	v->out->records++;
	uint32_t count = keel_ld32(p), at = KEEL_DELTA_HDR;
	for (uint32_t i = 0; i < count; i++) {
		keel_delta_ent d;
		uint32_t size = keel_delta_ent_check(p + at, rh.len - at);
		keel_delta_ent_decode(p + at, &d);
		at += size;
		if (!d.del && !d.e.inl) { /* keel_delta_valid: a header below OFF */
			keel_rec_hdr vh;
			const uint8_t *vr = v->base + d.e.voff;
			if (keel_rec_decode(vr, &vh) != KEEL_OK ||
			    vh.type != KEEL_REC_VALUE ||
			    vh.len > off - d.e.voff - KEEL_REC_HDR)
				problem(v, d.e.voff, "value: bad record header");
			else if (keel_rec_crc(vr, vh.len) != vh.crc)
				problem(v, d.e.voff, "value: checksum mismatch");
			else if (vh.crc != d.e.vcrc)
				problem(v, d.e.voff, "value: checksum differs from its "
				        "reference");
			else if (vh.len != d.e.vlen)
				problem(v, d.e.voff, "value length %u, DELTA entry says %u",
				        vh.len, d.e.vlen);
		}
		if (v->npend == *cap) {
			size_t ncap = *cap ? *cap * 2 : 256;
			pfin *np = realloc(v->pend, ncap * sizeof(*np));
			if (!np)
				return false;
			v->pend = np;
			*cap = ncap;
		}
		v->pend[v->npend++] = (pfin){.key = d.e.key, .klen = d.e.klen,
		                             .txid = h->txid, .del = d.del};
	}
	return true;
}

/* Version 3: the pending heads of HEAD and their DELTA records, walked
 * back along prev_head (at most pending_heads of them, inside the span);
 * leaves the newest entry of each key in V's list, in key order. */
static void pending_span(verifier *v, const keel_head *head)
{
	size_t cap = 0;
	keel_head cur = *head;
	if (head->pending_heads == 0)
		return;
	if (!keel_head_pending_sane(head) || head->pending_bytes > head->off) {
		problem(v, head->off, "head claims a pending span past the bounds");
		return;
	}
	uint64_t span = head->off - head->pending_bytes;
	for (uint32_t i = 0; i < head->pending_heads; i++) {
		if (!pending_delta(v, &cur, &cap))
			return;
		if (i + 1 == head->pending_heads) {
			if (cur.region_start != span)
				problem(v, cur.off, "oldest pending head does not start "
				        "the pending span");
			break;
		}
		keel_head prev;
		uint64_t po = cur.prev_head;
		if (po < span || po + KEEL_HEAD_SIZE > cur.off ||
		    keel_head_decode(v->base + po, &prev) != KEEL_OK) {
			problem(v, cur.off, "pending head's predecessor unreadable");
			return;
		}
		prev.off = po;
		if (prev.txid >= cur.txid || prev.file_id != cur.file_id ||
		    prev.root_off != head->root_off ||
		    prev.pending_heads + 1 != cur.pending_heads ||
		    po + KEEL_HEAD_SIZE != cur.region_start) {
			problem(v, po, "pending head does not continue the span");
			return;
		}
		cur = prev;
	}
	qsort(v->pend, v->npend, sizeof(*v->pend), pfin_cmp);
	size_t w = 0;
	for (size_t i = 0; i < v->npend; i++)
		if (w == 0 || keel_key_cmp(v->pend[w - 1].key, v->pend[w - 1].klen,
		                           v->pend[i].key, v->pend[i].klen) != 0)
			v->pend[w++] = v->pend[i];
	v->npend = w;
}

int verify_tree(const uint8_t *base, size_t len, const keel_head *head,
                keel_check_report_fn report, void *arg, keel_check_result *out)
{
	verifier v = {.base = base, .len = len, .limit = head->off,
	              .report = report, .arg = arg, .out = out};

	memset(out, 0, sizeof(*out));
	v.seen = calloc(len / 8 / 64 + 1, sizeof(*v.seen));
	if (!v.seen)
		return KEEL_ENOMEM;
	v.live = KEEL_HEAD_SIZE;
	pending_span(&v, head);
	if (head->root_off) {
		static const key_range all;
		keel_rec_hdr h;
		/* The root's level is whatever its payload says; check the
		 * type/level agreement inside node(). */
		if (head->root_off + KEEL_REC_HDR + KEEL_NODE_HDR <= len &&
		    keel_rec_decode(base + head->root_off, &h) == KEEL_OK)
			node(&v, head->root_off, head->root_crc,
			     base[head->root_off + KEEL_REC_HDR + 2], &all);
		else
			problem(&v, head->root_off, "root: bad record header");
	}
	for (size_t i = 0; i < v.npend; i++) /* D1: the merged state's keys */
		out->keys += !v.pend[i].del - v.pend[i].in_tree;
	v.live += head->pending_bytes; /* D5 */
	if (out->problems == 0 && out->keys != head->keys)
		problem(&v, head->off, "head counts %llu keys, tree has %llu",
		        (unsigned long long)head->keys, (unsigned long long)out->keys);
	if (out->problems == 0 && v.live != head->live_bytes)
		problem(&v, head->off, "head counts %llu live bytes, tree has %llu",
		        (unsigned long long)head->live_bytes, (unsigned long long)v.live);
	if (report && out->problems > KEEL_CHECK_REPORT_MAX) {
		char what[96];
		snprintf(what, sizeof(what), "and %llu more problems not listed",
		         (unsigned long long)(out->problems - KEEL_CHECK_REPORT_MAX));
		report(arg, head->off, what);
	}
	free(v.seen);
	free(v.pend);
	return out->problems ? KEEL_ECORRUPT : KEEL_OK;
}
