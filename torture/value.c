/*
 * value.c -- key names and self-describing values (layout in value.h).
 */
#include "value.h"

#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "format.h"

#define VALUE_MAGIC 0x4C415654u /* "TVAL" little-endian */

/* splitmix64: cheap, well mixed, and the same on every host. */
static uint64_t mix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t payload_seed(const value_id *id)
{
	uint64_t s = id->nonce;
	s ^= mix64(&s) + id->key;
	s ^= mix64(&s) + ((uint64_t)id->thread << 32 | id->index);
	s ^= mix64(&s) + id->seq;
	return s;
}

/* The filler makes key lengths vary; it depends on K alone. */
static size_t key_filler(uint32_t k)
{
	return (size_t)((k * 7u) % 24u);
}

size_t value_key(uint32_t k, char out[VALUE_KEY_MAX])
{
	int n = snprintf(out, VALUE_KEY_MAX, "t/%08u", k);
	size_t fill = key_filler(k);

	memset(out + n, 'a' + (int)(k % 26u), fill);
	out[n + fill] = '\0';
	return (size_t)n + fill;
}

int value_key_parse(const void *key, size_t klen, uint32_t *k)
{
	const char *p = key;
	char canon[VALUE_KEY_MAX];
	uint32_t v = 0;

	if (klen < 10 || klen >= VALUE_KEY_MAX || p[0] != 't' || p[1] != '/')
		return -1;
	for (int i = 2; i < 10; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10u + (uint32_t)(p[i] - '0');
	}
	if (value_key(v, canon) != klen || memcmp(canon, key, klen) != 0)
		return -1;
	*k = v;
	return 0;
}

/* Payload bytes in 8-byte words from the generator; the tail word is cut. */
static void payload_fill(const value_id *id, uint8_t *p, size_t n)
{
	uint64_t s = payload_seed(id);

	while (n >= 8) {
		keel_st64(p, mix64(&s));
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = mix64(&s);
		memcpy(p, &w, n);
	}
}

void value_encode(const value_id *id, void *buf)
{
	uint8_t *b = buf;

	keel_st32(b + 0, VALUE_MAGIC);
	keel_st32(b + 4, id->key);
	keel_st32(b + 8, id->thread);
	keel_st32(b + 12, id->index);
	keel_st64(b + 16, id->seq);
	keel_st64(b + 24, id->nonce);
	keel_st32(b + 32, id->len);
	payload_fill(id, b + VALUE_HEADER, id->len - VALUE_HEADER);
	keel_st32(b + 36, keel_crc32c(0, b + VALUE_HEADER,
	                              id->len - VALUE_HEADER));
	keel_st32(b + 40, keel_crc32c(0, b, 40));
}

int value_decode(const void *buf, size_t len, value_id *id, const char **why)
{
	const uint8_t *b = buf;
	const char *dummy;

	if (!why)
		why = &dummy;
	if (len < VALUE_HEADER) {
		*why = "shorter than a value header";
		return -1;
	}
	if (keel_ld32(b) != VALUE_MAGIC) {
		*why = "no value magic";
		return -1;
	}
	if (keel_ld32(b + 40) != keel_crc32c(0, b, 40)) {
		*why = "value header checksum mismatch";
		return -1;
	}
	if (keel_ld32(b + 32) != len) {
		*why = "value length differs from its header (torn?)";
		return -1;
	}
	if (keel_ld32(b + 36) != keel_crc32c(0, b + VALUE_HEADER,
	                                     len - VALUE_HEADER)) {
		*why = "payload checksum mismatch";
		return -1;
	}
	id->key = keel_ld32(b + 4);
	id->thread = keel_ld32(b + 8);
	id->index = keel_ld32(b + 12);
	id->seq = keel_ld64(b + 16);
	id->nonce = keel_ld64(b + 24);
	id->len = (uint32_t)len;
	return 0;
}

int value_equal(const value_id *id, const void *buf, size_t len)
{
	uint8_t hdr[VALUE_HEADER], chunk[512];
	const uint8_t *b = buf;
	uint64_t s = payload_seed(id);
	size_t off = VALUE_HEADER;
	value_id head = *id;

	if (len != id->len || len < VALUE_HEADER)
		return -1;
	/* The header is cheap to rebuild in full: encode a header-only copy
	 * and compare all but the payload checksum, which memcmp below of
	 * the payload covers; then the stored pcrc must match the bytes. */
	head.len = VALUE_HEADER;
	value_encode(&head, hdr);
	if (memcmp(hdr, b, 32) != 0 || keel_ld32(b + 32) != id->len)
		return -1;
	while (off < len) {
		size_t n = len - off < sizeof(chunk) ? len - off : sizeof(chunk);
		for (size_t i = 0; i < n; i += 8) {
			uint64_t w = mix64(&s);
			memcpy(chunk + i, &w, n - i < 8 ? n - i : 8);
		}
		if (memcmp(chunk, b + off, n) != 0)
			return -1;
		off += n;
	}
	return keel_ld32(b + 36) == keel_crc32c(0, b + VALUE_HEADER,
	                                         len - VALUE_HEADER) &&
	       keel_ld32(b + 40) == keel_crc32c(0, b, 40) ? 0 : -1;
}
