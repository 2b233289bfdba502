/*
 * serve_limits.c -- request limits for every protocol (serve_limits.h is
 * the manual; docs/http.md "Limits" what clients see).
 */
#include "serve_limits.h"

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
