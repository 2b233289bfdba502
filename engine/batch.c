/* batch.c -- keel_batch: a list of puts and deletes that commit together.
 * Keys and values are copied into one arena; ops hold offsets into it until
 * the batch is committed, when they are turned into pointers. */
#include <stdlib.h>

#include "internal.h"

#define BATCH_BYTES_MAX ((uint64_t)4 << 30) /* one commit region, at most */

int batch_check_key(const void *key, size_t klen)
{
	if (!key || klen == 0 || klen > KEEL_KEY_MAX)
		return KEEL_EKEY;
	return KEEL_OK;
}

int keel_batch_new(keel_batch **out)
{
	if (!out)
		return KEEL_EINVAL;
	*out = calloc(1, sizeof(**out));
	return *out ? KEEL_OK : KEEL_ENOMEM;
}

/* Copies LEN bytes into the arena; returns the offset via *at. */
static int arena_copy(keel_batch *b, const void *p, size_t len, size_t *at)
{
	if (b->arena_cap - b->used < len) {
		size_t cap = b->arena_cap ? b->arena_cap : 4096;
		while (cap - b->used < len)
			cap *= 2;
		uint8_t *na = realloc(b->arena, cap);
		if (!na)
			return KEEL_ENOMEM;
		b->arena = na;
		b->arena_cap = cap;
	}
	if (len)
		memcpy(b->arena + b->used, p, len);
	*at = b->used;
	b->used += len;
	return KEEL_OK;
}

static int batch_add(keel_batch *b, const void *key, size_t klen,
                     const void *val, size_t vlen, bool is_put, uint64_t expect)
{
	size_t kat, vat = 0;
	int rc;

	if (!b || (is_put && !val && vlen > 0))
		return KEEL_EINVAL;
	if ((rc = batch_check_key(key, klen)))
		return rc;
	if (vlen > KEEL_VALUE_MAX || b->bytes + klen + vlen > BATCH_BYTES_MAX)
		return KEEL_ETOOBIG;
	if (b->count == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8;
		tree_op *ops = realloc(b->ops, cap * sizeof(*ops));
		if (!ops)
			return KEEL_ENOMEM;
		b->ops = ops;
		b->cap = cap;
	}
	if ((rc = arena_copy(b, key, klen, &kat)) ||
	    (is_put && (rc = arena_copy(b, val, vlen, &vat))))
		return rc;
	/* Offsets now, pointers at commit time: the arena may still move. */
	b->ops[b->count++] = (tree_op){
		.key = (const uint8_t *)(uintptr_t)kat,
		.klen = klen,
		.val = is_put ? (const uint8_t *)(uintptr_t)(vat + 1) : NULL,
		.vlen = vlen,
		.expect = expect,
	};
	b->bytes += klen + vlen;
	return KEEL_OK;
}

int keel_batch_put(keel_batch *b, const void *key, size_t klen,
                   const void *val, size_t vlen, uint64_t expect)
{
	return batch_add(b, key, klen, val, vlen, true, expect);
}

int keel_batch_del(keel_batch *b, const void *key, size_t klen,
                   uint64_t expect)
{
	return batch_add(b, key, klen, NULL, 0, false, expect);
}

void keel_batch_clear(keel_batch *b)
{
	if (!b)
		return;
	b->count = 0;
	b->used = 0;
	b->bytes = 0;
}

void keel_batch_free(keel_batch *b)
{
	if (!b)
		return;
	free(b->ops);
	free(b->arena);
	free(b);
}

int keel_batch_set_expect(keel_batch *b, size_t i, uint64_t expect)
{
	if (!b || i >= b->count || (!b->ops[i].val && expect == KEEL_REV_ABSENT))
		return KEEL_EINVAL;
	b->ops[i].expect = expect;
	return KEEL_OK;
}

size_t keel_batch_count(const keel_batch *b)
{
	return b ? b->count : 0;
}
