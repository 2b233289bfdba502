/* format.c -- encoders and decoders for the structures in format.h.  This is
 * the only code that knows byte offsets; everything else uses the decoded
 * structs. */
#include "format.h"

#include "crc32c.h"
#include "keel_err.h"

void keel_super_encode(uint8_t out[KEEL_SUPER_SIZE], const keel_super *s)
{
	memset(out, 0, KEEL_SUPER_SIZE);
	memcpy(out, KEEL_SUPER_MAGIC, 8);
	keel_st32(out + 8, s->version);
	keel_st32(out + 12, s->flags);
	keel_st32(out + 16, s->block_size);
	keel_st64(out + 24, s->file_id);
	keel_st64(out + 32, s->data_start);
	keel_st64(out + 40, s->base_txid);
	keel_st64(out + 48, s->first_head);
	keel_st32(out + 60, keel_crc32c(0, out, 60));
}

int keel_super_decode(const uint8_t in[KEEL_SUPER_SIZE], keel_super *s)
{
	if (memcmp(in, KEEL_SUPER_MAGIC, 8) != 0)
		return KEEL_ENOTKEEL;
	if (keel_ld32(in + 60) != keel_crc32c(0, in, 60))
		return KEEL_ECORRUPT;
	s->version = keel_ld32(in + 8);
	s->flags = keel_ld32(in + 12);
	s->block_size = keel_ld32(in + 16);
	s->file_id = keel_ld64(in + 24);
	s->data_start = keel_ld64(in + 32);
	s->base_txid = keel_ld64(in + 40);
	s->first_head = keel_ld64(in + 48);
	if (s->version != 0 && s->version != KEEL_FORMAT_VERSION &&
	    s->version != KEEL_FORMAT_VERSION_V2)
		return KEEL_EVERSION;
	if (s->version == 0 || s->block_size != KEEL_BLOCK ||
	    s->data_start != KEEL_DATA_START || s->first_head < KEEL_DATA_START ||
	    s->first_head % 8 != 0)
		return KEEL_ECORRUPT;
	return KEEL_OK;
}

void keel_hint_encode(uint8_t out[KEEL_HINT_SIZE], const keel_hint *h)
{
	memset(out, 0, KEEL_HINT_SIZE);
	memcpy(out, KEEL_HINT_MAGIC, 8);
	keel_st64(out + 8, h->txid);
	keel_st64(out + 16, h->head_off);
	keel_st32(out + 28, keel_crc32c(0, out, 28));
}

int keel_hint_decode(const uint8_t in[KEEL_HINT_SIZE], keel_hint *h)
{
	if (memcmp(in, KEEL_HINT_MAGIC, 8) != 0 ||
	    keel_ld32(in + 28) != keel_crc32c(0, in, 28))
		return KEEL_ECORRUPT;
	h->txid = keel_ld64(in + 8);
	h->head_off = keel_ld64(in + 16);
	return KEEL_OK;
}

void keel_rec_encode(uint8_t hdr[KEEL_REC_HDR], uint8_t type,
                     const void *payload, uint32_t len)
{
	keel_st32(hdr, KEEL_REC_MAGIC);
	hdr[4] = type;
	hdr[5] = 0;
	keel_st16(hdr + 6, 0);
	keel_st32(hdr + 8, len);
	uint32_t crc = keel_crc32c(0, hdr, 12);
	keel_st32(hdr + 12, keel_crc32c(crc, payload, len));
}

int keel_rec_decode(const uint8_t hdr[KEEL_REC_HDR], keel_rec_hdr *out)
{
	out->magic = keel_ld32(hdr);
	out->type = hdr[4];
	out->flags = hdr[5];
	out->len = keel_ld32(hdr + 8);
	out->crc = keel_ld32(hdr + 12);
	if (out->magic != KEEL_REC_MAGIC || out->type < KEEL_REC_VALUE ||
	    out->type > KEEL_REC_DELTA || out->flags != 0)
		return KEEL_ECORRUPT;
	return KEEL_OK;
}

uint32_t keel_rec_crc(const uint8_t *rec, uint32_t len)
{
	return keel_crc32c(keel_crc32c(0, rec, 12), rec + KEEL_REC_HDR, len);
}

void keel_head_encode(uint8_t out[KEEL_HEAD_SIZE], const keel_head *h)
{
	uint8_t *p = out + KEEL_REC_HDR;

	memset(out, 0, KEEL_HEAD_SIZE);
	keel_st64(p + 0, h->txid);
	keel_st64(p + 8, h->prev_head);
	keel_st64(p + 16, h->region_start);
	keel_st64(p + 24, h->root_off);
	keel_st32(p + 32, h->root_crc);
	keel_st32(p + 36, h->chain_crc);
	keel_st64(p + 40, h->keys);
	keel_st64(p + 48, h->live_bytes);
	keel_st64(p + 56, h->time_ns);
	keel_st64(p + 64, h->file_id);
	keel_st64(p + 72, h->delta_off);
	keel_st32(p + 80, h->delta_crc);
	keel_st32(p + 84, h->pending_heads);
	keel_st64(p + 88, h->pending_bytes);
	keel_rec_encode(out, KEEL_REC_HEAD, p, KEEL_HEAD_PAYLOAD);
}

int keel_head_decode(const uint8_t in[KEEL_HEAD_SIZE], keel_head *h)
{
	keel_rec_hdr rh;
	const uint8_t *p = in + KEEL_REC_HDR;

	if (keel_rec_decode(in, &rh) != KEEL_OK || rh.type != KEEL_REC_HEAD ||
	    rh.len != KEEL_HEAD_PAYLOAD || keel_rec_crc(in, rh.len) != rh.crc)
		return KEEL_ECORRUPT;
	h->txid = keel_ld64(p + 0);
	h->prev_head = keel_ld64(p + 8);
	h->region_start = keel_ld64(p + 16);
	h->root_off = keel_ld64(p + 24);
	h->root_crc = keel_ld32(p + 32);
	h->chain_crc = keel_ld32(p + 36);
	h->keys = keel_ld64(p + 40);
	h->live_bytes = keel_ld64(p + 48);
	h->time_ns = keel_ld64(p + 56);
	h->file_id = keel_ld64(p + 64);
	h->delta_off = keel_ld64(p + 72);
	h->delta_crc = keel_ld32(p + 80);
	h->pending_heads = keel_ld32(p + 84);
	h->pending_bytes = keel_ld64(p + 88);
	return KEEL_OK;
}

bool keel_head_pending_sane(const keel_head *h)
{
	if (h->pending_heads > KEEL_CKPT_HEADS ||
	    h->pending_bytes > KEEL_PENDING_BYTES_MAX ||
	    (h->pending_heads == 0) != (h->pending_bytes == 0))
		return false;
	if (h->delta_off == 0)
		return h->delta_crc == 0 && h->pending_heads == 0;
	/* the span holds at least this head's region, and lies in the data */
	return h->delta_off % 8 == 0 && h->delta_off >= h->region_start &&
	       h->delta_off < h->off && h->pending_heads >= 1 &&
	       h->pending_bytes >= h->off - h->region_start &&
	       h->pending_bytes <= h->off - KEEL_DATA_START;
}

bool keel_delta_valid(const uint8_t *p, uint32_t len, uint64_t txid,
                      uint64_t below)
{
	if (len < KEEL_DELTA_HDR || keel_ld32(p + 4) != 0)
		return false;
	uint32_t count = keel_ld32(p), at = KEEL_DELTA_HDR;
	const uint8_t *prev = NULL;
	uint16_t prev_len = 0;
	if (count == 0 || count > len / KEEL_LEAF_ENTRY)
		return false;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t size = keel_delta_ent_check(p + at, len - at);
		if (!size)
			return false;
		keel_delta_ent d;
		keel_delta_ent_decode(p + at, &d);
		if (d.e.rev != txid ||
		    (prev && keel_key_cmp(prev, prev_len, d.e.key, d.e.klen) >= 0))
			return false;
		if (!d.del && !d.e.inl &&
		    (d.e.voff % 8 || d.e.voff < KEEL_DATA_START ||
		     d.e.voff >= below || below - d.e.voff < KEEL_REC_HDR))
			return false;
		prev = d.e.key;
		prev_len = d.e.klen;
		at += size;
	}
	return at == len;
}

bool keel_node_index_valid(const uint8_t *p, uint32_t len)
{
	uint16_t count = keel_ld16(p), plen = keel_node_plen(p);
	if (p[3] != 0 || keel_ld16(p + 6) != 0 || plen > KEEL_FORMAT_KEY_MAX ||
	    keel_node_entries_at(count, plen) > len)
		return false;
	const uint8_t *prefix = p + KEEL_NODE_HDR;
	for (unsigned i = 0; i < count; i++) {
		const uint8_t *s = keel_node_slot(p, i);
		const uint8_t *e = p + keel_ld16(s);
		uint16_t klen = keel_ld16(e);
		const uint8_t *key = e + KEEL_LEAF_ENTRY; /* = KEEL_BRANCH_ENTRY */
		if (klen < plen || memcmp(key, prefix, plen) != 0 ||
		    keel_slot_head(s) != keel_key_head(key, klen, plen))
			return false;
	}
	return true;
}
