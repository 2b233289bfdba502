/*
 * probe_hist.h -- a log-linear latency histogram.
 *
 * Values (nanoseconds, any uint64_t) fall into buckets: values below 32 each
 * have their own bucket; above that every power of two [2^e, 2^(e+1)) is cut
 * into 32 equal sub-buckets.  A percentile is therefore reported with a
 * relative error of at most 1/32 (about 3 %), always rounded UP to the top of
 * its bucket (so "p99 = X" means at least 99 % of the samples were <= X), and
 * never above the largest value recorded.  The minimum, maximum, count and
 * sum are exact.  The whole histogram is a fixed 15 KiB struct: no
 * allocation, cheap to reset once a second.
 *
 * Calling sequence:
 *   struct probe_hist h;
 *   probe_hist_reset(&h);
 *   probe_hist_record(&h, ns);           ... for each sample
 *   probe_hist_percentile(&h, 99.0);     ... any time
 *   probe_hist_merge(&total, &h);        ... to fold a second into the run
 *
 * No function here can fail.
 */
#ifndef KEEL_PROBE_HIST_H
#define KEEL_PROBE_HIST_H

#include <stdint.h>

#define PROBE_HIST_SUB_BITS 5
#define PROBE_HIST_SUB (1u << PROBE_HIST_SUB_BITS)
/* exact buckets for 0..31, then 32 sub-buckets for each exponent 5..63 */
#define PROBE_HIST_BUCKETS ((64 - PROBE_HIST_SUB_BITS + 1) * PROBE_HIST_SUB)

struct probe_hist {
	uint64_t count;                       /* samples recorded */
	uint64_t sum;                         /* their sum (saturating) */
	uint64_t min;                         /* smallest sample (UINT64_MAX if none) */
	uint64_t max;                         /* largest sample (0 if none) */
	uint64_t bucket[PROBE_HIST_BUCKETS];  /* samples per bucket */
};

/* Empty the histogram. */
void probe_hist_reset(struct probe_hist *h);

/* Add one sample. */
void probe_hist_record(struct probe_hist *h, uint64_t value);

/* Add every sample of src to dst. */
void probe_hist_merge(struct probe_hist *dst, const struct probe_hist *src);

/* The bucket a value falls in, and the smallest and largest value of a
 * bucket (exposed for the tests). */
unsigned probe_hist_index(uint64_t value);
uint64_t probe_hist_bucket_low(unsigned index);
uint64_t probe_hist_bucket_high(unsigned index);

/* The q-th percentile (0 < q <= 100): the top of the bucket holding the
 * sample of rank ceil(q/100 * count), clamped to [min, max].  0 when empty. */
uint64_t probe_hist_percentile(const struct probe_hist *h, double q);

/* Mean of the samples (exact up to the sum saturating); 0 when empty. */
double probe_hist_mean(const struct probe_hist *h);

#endif
