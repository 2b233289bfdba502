/*
 * serve_limits.c -- request limits for every protocol (serve_limits.h is
 * the manual; docs/http.md "Limits" what clients see).
 */
#include "serve_limits.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

void limits_body_begin(struct limits_body *b, uint64_t bytes, int64_t now_ms)
{
	b->since_ms = now_ms;
	b->mark = bytes;
}

/*
 * The window is --header-timeout long and must bring rate x window bytes,
 * judged against the window's length even when the check comes a little
 * late (a timer sweep, a busy shard, a stream that began in the middle of
 * its connection's window): a late check only gives the client more time,
 * never less.
 */
int limits_body_check(const struct limits_config *cfg, struct limits_body *b,
                      uint64_t bytes, int64_t now_ms)
{
	uint64_t got = bytes - b->mark;

	if (now_ms - b->since_ms < cfg->header_timeout_ms)
		return LIMITS_WAIT;
	if (got == 0 ||
	    got * 1000 < cfg->body_min_rate * (uint64_t)cfg->header_timeout_ms)
		return LIMITS_CUT;
	limits_body_begin(b, bytes, now_ms);
	return LIMITS_OK;
}

int limits_head_due(const struct limits_config *cfg, int64_t since_ms,
                    int64_t now_ms)
{
	return now_ms - since_ms >= cfg->header_timeout_ms;
}

int limits_cut(uint8_t *cuts, int streams)
{
	if (*cuts < UINT8_MAX)
		(*cuts)++;
	if (!streams || *cuts >= LIMITS_CUTS_MAX)
		return LIMITS_CLOSE;
	return LIMITS_CUT;
}

int limits_budget_take(struct limits_budget *b, size_t n, int force)
{
	uint64_t was = atomic_fetch_add(&b->held, (uint64_t)n);

	if (force || was + n <= b->cap)
		return LIMITS_OK;
	atomic_fetch_sub(&b->held, (uint64_t)n);
	return LIMITS_BUSY;
}

void limits_budget_give(struct limits_budget *b, size_t n)
{
	atomic_fetch_sub(&b->held, (uint64_t)n);
}

int limits_budget_admits(struct limits_budget *b, uint64_t announced,
                         size_t own)
{
	uint64_t held = atomic_load(&b->held);

	held = held > own ? held - own : 0;
	return held + announced > b->cap ? LIMITS_BUSY : LIMITS_OK;
}

/* ---- a connection's bucket of costly frames -------------------------------- */

void limits_bucket_fill(struct limits_bucket *b, int64_t now_ms)
{
	b->tokens = LIMITS_CALM_BURST;
	b->ms = now_ms;
}

int limits_bucket_take(struct limits_bucket *b, int64_t now_ms)
{
	if (now_ms > b->ms) {
		b->tokens += (double)(now_ms - b->ms) * LIMITS_CALM_RATE / 1000.0;
		if (b->tokens > LIMITS_CALM_BURST)
			b->tokens = LIMITS_CALM_BURST;
		b->ms = now_ms;
	}
	if (b->tokens < 1)
		return LIMITS_CLOSE;
	b->tokens -= 1;
	return LIMITS_OK;
}

/* ---- shares by source ---------------------------------------------------- */

/* A keyed mix of the prefix (the murmur3 finalizer over prefix ^ key, with
 * the key again before it): enough that buckets cannot be predicted. */
static uint64_t source_hash(uint64_t key, uint64_t prefix, uint64_t family)
{
	uint64_t x = (prefix ^ key) + family * 0x9e3779b97f4a7c15ull;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull ^ key;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

unsigned limits_source_of(const struct limits_sources *s, const void *addr,
                          size_t len)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	                                    0xff, 0xff };
	const struct sockaddr *sa = addr;
	uint64_t prefix = 0;
	uint32_t v4;

	if (len >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET) {
		memcpy(&v4, &((const struct sockaddr_in *)addr)->sin_addr, 4);
		prefix = ntohl(v4) >> 8; /* the /24 */
		return (unsigned)(source_hash(s->key, prefix, 4) &
		                  (LIMITS_SOURCES - 1));
	}
	if (len >= sizeof(struct sockaddr_in6) && sa->sa_family == AF_INET6) {
		const uint8_t *a = ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
		if (memcmp(a, mapped, sizeof mapped) == 0) {
			prefix = ((uint64_t)a[12] << 16) | ((uint64_t)a[13] << 8) |
			         a[14];
			return (unsigned)(source_hash(s->key, prefix, 4) &
			                  (LIMITS_SOURCES - 1));
		}
		for (int i = 0; i < 8; i++) /* the /64 */
			prefix = prefix << 8 | a[i];
		return (unsigned)(source_hash(s->key, prefix, 6) &
		                  (LIMITS_SOURCES - 1));
	}
	return 0;
}

/* One more on *H unless it holds CAP: 1, or 0 (nothing counted). */
static int count_below(_Atomic uint32_t *h, uint32_t cap)
{
	uint32_t was = atomic_load(h);

	do {
		if (was >= cap)
			return 0;
	} while (!atomic_compare_exchange_weak(h, &was, was + 1));
	return 1;
}

int limits_source_take(struct limits_sources *s, unsigned bucket)
{
	_Atomic uint32_t *h = &s->held[bucket & (LIMITS_SOURCES - 1)];

	if (!count_below(h, s->share))
		return LIMITS_BUSY;
	if (!count_below(&s->total, s->cap)) {
		atomic_fetch_sub(h, 1);
		return LIMITS_FULL;
	}
	return LIMITS_OK;
}

int limits_source_evict(const struct limits_sources *s, unsigned arriving,
                        const unsigned *victims, int n)
{
	uint32_t mine = atomic_load(&s->held[arriving & (LIMITS_SOURCES - 1)]);
	uint32_t most = mine;
	int pick = -1;

	for (int i = 0; i < n; i++) {
		uint32_t h = atomic_load(&s->held[victims[i] &
		                                  (LIMITS_SOURCES - 1)]);
		if (h > most) { /* strictly: the oldest of the heaviest */
			most = h;
			pick = i;
		}
	}
	return pick;
}

void limits_source_give(struct limits_sources *s, unsigned bucket)
{
	atomic_fetch_sub(&s->total, 1);
	atomic_fetch_sub(&s->held[bucket & (LIMITS_SOURCES - 1)], 1);
}
