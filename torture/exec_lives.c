/*
 * exec_lives.c -- how long the workload lives in `torture --target exec`
 * (exec_internal.h): each life's delay to its kill (--kill-every,
 * --jitter), the lives that acknowledged nothing, the warning when they
 * are too short, and --kill-every auto, which lengthens them.
 */
#include "exec_internal.h"

#include <inttypes.h>
#include <stdio.h>

/* ---- the lives ---------------------------------------------------------------- */

/* The delay from a cycle's start to its kill: the period in force, give
 * or take --jitter percent, drawn from the seed and the cycle. */
uint64_t exec_kill_delay(const xrun *r, uint64_t cycle)
{
	uint64_t base = r->kill_every_ns, span = base * r->o->jitter_pct / 100;
	uint64_t x = mix(r->o->seed ^ mix(cycle ^ 0x6b696c6cull));
	if (!span)
		return base;
	return base - span + x % (2 * span + 1);
}

/* A period as the user would type it: "50ms", "1.5s", "12.345ms". */
void exec_period_text(uint64_t ns, char *buf, size_t cap)
{
	if (ns % 1000000000ull == 0)
		snprintf(buf, cap, "%" PRIu64 "s", ns / (uint64_t)1000000000);
	else if (ns % 1000000ull == 0)
		snprintf(buf, cap, "%" PRIu64 "ms", ns / (uint64_t)1000000);
	else
		snprintf(buf, cap, "%.3fms", (double)ns / 1e6);
}

/* More than half of at least DRY_MIN_CYCLES cycles at the period in force
 * acknowledged nothing: the run tests too little. */
int exec_lives_too_short(const xrun *r)
{
	return r->period_cycles >= DRY_MIN_CYCLES &&
	       2 * r->period_dry > r->period_cycles;
}

static int auto_capped(const xrun *r)
{
	return r->kill_every_ns >= TORTURE_KILL_EVERY_AUTO_MAX_NS;
}

/*
 * --kill-every auto: when AUTO_DRY of the last AUTO_WINDOW cycles at the
 * period in force acknowledged nothing, double it (up to
 * TORTURE_KILL_EVERY_AUTO_MAX_NS) and start counting afresh.  It decides
 * on the acknowledgements alone, never on the clock or a random draw: the
 * same acknowledgements give the same periods.  They depend on timing,
 * so each change is printed (a replay can pin the period).
 */
static void lives_auto(xrun *r, uint64_t cycle, int dry)
{
	char was[32], now[32];
	unsigned n = 0, seen;

	r->auto_bits = ((r->auto_bits << 1) | (dry ? 1u : 0u)) &
	               ((1u << AUTO_WINDOW) - 1);
	if (r->auto_seen < AUTO_WINDOW)
		r->auto_seen++;
	for (unsigned b = r->auto_bits; b; b &= b - 1)
		n++;
	if (n < AUTO_DRY || auto_capped(r))
		return;
	seen = r->auto_seen;
	exec_period_text(r->kill_every_ns, was, sizeof was);
	r->kill_every_ns *= 2;
	if (r->kill_every_ns > TORTURE_KILL_EVERY_AUTO_MAX_NS)
		r->kill_every_ns = TORTURE_KILL_EVERY_AUTO_MAX_NS;
	exec_period_text(r->kill_every_ns, now, sizeof now);
	r->doublings++;
	r->auto_bits = r->auto_seen = 0;
	r->period_cycles = r->period_dry = 0;
	fprintf(stderr, "torture: --kill-every auto: %u of the last %u cycles "
	        "at %s acknowledged nothing; lives of %s from cycle %" PRIu64
	        "\n", n, seen, was, now, cycle + 1);
}

/* After each verified cycle of kills: count the cycles that acknowledged
 * nothing, let --kill-every auto lengthen the lives, and say once, while
 * the run goes on, when they are too short to test anything. */
void exec_lives_observe(xrun *r, uint64_t cycle)
{
	int dry = r->cycle_acked == 0;
	char per[32];

	r->observed++;
	r->dry += (uint64_t)dry;
	r->period_dry += (uint64_t)dry;
	r->period_cycles++;
	if (r->o->kill_every_auto)
		lives_auto(r, cycle, dry);
	if (r->dry_warned || !exec_lives_too_short(r) ||
	    (r->o->kill_every_auto && !auto_capped(r)))
		return;
	r->dry_warned = 1;
	exec_period_text(r->kill_every_ns, per, sizeof per);
	fprintf(stderr, "torture: warning: %" PRIu64 " of %" PRIu64 " cycles "
	        "at %s acknowledged nothing: the lives are too short for this "
	        "program; %s\n", r->period_dry, r->period_cycles, per,
	        r->o->kill_every_auto ? "--kill-every auto is at its cap: the "
	        "program acknowledges too rarely to be tested this way" :
	        "try --kill-every auto or a longer --kill-every");
}
