/* verify.c -- the integrity check (what is checked: verify.h). */
#include "verify.h"

#include <stdarg.h>
#include <stdio.h>

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
} verifier;

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
	if (v->report)
		v->report(v->arg, off, what);
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
	const uint8_t *rec = v->base + off;
	if (keel_rec_decode(rec, &h) != KEEL_OK || h.type != type) {
		problem(v, off, "%s: bad record header", what);
		return NULL;
	}
	if (h.len > v->len - off - KEEL_REC_HDR || off + KEEL_REC_HDR + h.len > v->limit) {
		problem(v, off, "%s: record runs past its head", what);
		return NULL;
	}
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

/* Verifies the subtree at OFF; *first receives its first key. */
static void node(verifier *v, uint64_t off, uint32_t crc, int level,
                 const uint8_t **first, uint16_t *first_len)
{
	uint32_t plen;
	bool leaf = level == 0;
	const uint8_t *p = record(v, off, leaf ? KEEL_REC_LEAF : KEEL_REC_BRANCH,
	                          crc, &plen, leaf ? "leaf" : "branch");

	*first = NULL;
	if (!p)
		return;
	uint16_t count = keel_ld16(p);
	if (count == 0 || p[2] != level || keel_node_entries_at(count, keel_node_plen(p)) > plen) {
		problem(v, off, "node header invalid (count %u, level %u)", count, p[2]);
		return;
	}
	for (unsigned i = 0; i < count; i++) {
		if (!keel_node_ent_check(p, plen, leaf, i)) {
			problem(v, off, "entry %u out of bounds", i);
			return;
		}
		const uint8_t *e = keel_node_entry(p, i);
		uint16_t klen = keel_ld16(e);
		const uint8_t *key = e + KEEL_LEAF_ENTRY; /* = KEEL_BRANCH_ENTRY */
		if (i == 0) {
			*first = key;
			*first_len = klen;
		}
		if (!leaf) {
			const uint8_t *cf;
			uint16_t cfl;
			uint64_t coff = keel_ld64(e + 8);
			if (coff >= off) {
				problem(v, off, "entry %u points forward", i);
				continue;
			}
			node(v, coff, keel_ld32(e + 4), level - 1, &cf, &cfl);
			if (cf && keel_key_cmp(cf, cfl, key, klen) != 0)
				problem(v, off, "entry %u key differs from its child's first key", i);
			continue;
		}
		if (v->last_key && keel_key_cmp(v->last_key, v->last_klen, key, klen) >= 0)
			problem(v, off, "entry %u key out of order", i);
		v->last_key = key;
		v->last_klen = klen;
		v->out->keys++;
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
	/* every entry lies inside the node (checked above): its index can be */
	if (!keel_node_index_valid(p, plen))
		problem(v, off, "node index (shared prefix or key heads) differs from its keys");
}

int verify_tree(const uint8_t *base, size_t len, const keel_head *head,
                keel_check_report_fn report, void *arg, keel_check_result *out)
{
	verifier v = {.base = base, .len = len, .limit = head->off,
	              .report = report, .arg = arg, .out = out};

	memset(out, 0, sizeof(*out));
	v.live = KEEL_HEAD_SIZE;
	if (head->root_off) {
		const uint8_t *first;
		uint16_t flen;
		keel_rec_hdr h;
		/* The root's level is whatever its payload says; check the
		 * type/level agreement inside node(). */
		if (head->root_off + KEEL_REC_HDR + KEEL_NODE_HDR <= len &&
		    keel_rec_decode(base + head->root_off, &h) == KEEL_OK)
			node(&v, head->root_off, head->root_crc,
			     base[head->root_off + KEEL_REC_HDR + 2], &first, &flen);
		else
			problem(&v, head->root_off, "root: bad record header");
	}
	if (out->problems == 0 && out->keys != head->keys)
		problem(&v, head->off, "head counts %llu keys, tree has %llu",
		        (unsigned long long)head->keys, (unsigned long long)out->keys);
	if (out->problems == 0 && v.live != head->live_bytes)
		problem(&v, head->off, "head counts %llu live bytes, tree has %llu",
		        (unsigned long long)head->live_bytes, (unsigned long long)v.live);
	return out->problems ? KEEL_ECORRUPT : KEEL_OK;
}
