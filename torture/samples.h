/*
 * samples.h -- a growing list of measurements (nanoseconds) and its
 * percentiles, for recovery times and fdatasync latencies.
 */
#ifndef TORTURE_SAMPLES_H
#define TORTURE_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

typedef struct samples {
	uint64_t *v;   /* the values, in arrival order until a percentile sorts */
	size_t n, cap;
} samples;

/* Appends X; -1 when memory ran out (the sample is dropped). */
int samples_add(samples *s, uint64_t x);

/* The P-th percentile (0..100, nearest rank); 0 when empty.  Sorts. */
uint64_t samples_pct(samples *s, double p);

void samples_free(samples *s);

#endif /* TORTURE_SAMPLES_H */
