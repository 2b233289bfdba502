/* probe_hist.c -- the log-linear histogram; see probe_hist.h. */
#include "probe_hist.h"

#include <math.h>
#include <string.h>

void probe_hist_reset(struct probe_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/* Bucket = (exponent group, sub-bucket).  Group 0 holds 0..31 exactly; group
 * g >= 1 holds [2^(g+4), 2^(g+5)) in 32 slices of width 2^(g-1). */
unsigned probe_hist_index(uint64_t value)
{
	unsigned e, shift;

	if (value < PROBE_HIST_SUB)
		return (unsigned)value;
	e = 63u - (unsigned)__builtin_clzll(value); /* floor(log2 value) >= 5 */
	shift = e - PROBE_HIST_SUB_BITS;
	return (shift + 1) * PROBE_HIST_SUB +
	       (unsigned)((value >> shift) - PROBE_HIST_SUB);
}

uint64_t probe_hist_bucket_low(unsigned index)
{
	unsigned group = index / PROBE_HIST_SUB, sub = index % PROBE_HIST_SUB;

	if (group == 0)
		return index;
	return (uint64_t)(PROBE_HIST_SUB + sub) << (group - 1);
}

uint64_t probe_hist_bucket_high(unsigned index)
{
	unsigned group = index / PROBE_HIST_SUB;

	if (group == 0)
		return index;
	/* low + width - 1; for the very last bucket this is UINT64_MAX */
	return probe_hist_bucket_low(index) + ((1ull << (group - 1)) - 1);
}

void probe_hist_record(struct probe_hist *h, uint64_t value)
{
	h->bucket[probe_hist_index(value)]++;
	h->count++;
	h->sum = (h->sum + value < h->sum) ? UINT64_MAX : h->sum + value;
	if (value < h->min)
		h->min = value;
	if (value > h->max)
		h->max = value;
}

void probe_hist_merge(struct probe_hist *dst, const struct probe_hist *src)
{
	unsigned i;

	if (src->count == 0)
		return;
	for (i = 0; i < PROBE_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
	dst->count += src->count;
	dst->sum = (dst->sum + src->sum < dst->sum) ? UINT64_MAX
						    : dst->sum + src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t probe_hist_percentile(const struct probe_hist *h, double q)
{
	uint64_t rank, seen = 0, v;
	unsigned i;

	if (h->count == 0)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 100)
		return h->max;
	/* rank of the sample, 1-based; ceil so that p100 is the max and a
	 * single sample is every percentile */
	rank = (uint64_t)ceil(q / 100.0 * (double)h->count);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < PROBE_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	if (i == PROBE_HIST_BUCKETS)
		return h->max;
	v = probe_hist_bucket_high(i);
	if (v > h->max)
		v = h->max;
	if (v < h->min)
		v = h->min;
	return v;
}

double probe_hist_mean(const struct probe_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}
