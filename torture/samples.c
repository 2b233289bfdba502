/*
 * samples.c -- measurements and percentiles (see samples.h).
 */
#include "samples.h"

#include <math.h>
#include <stdlib.h>

int samples_add(samples *s, uint64_t x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t samples_pct(samples *s, double p)
{
	size_t rank;

	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	rank = (size_t)ceil(p / 100.0 * (double)s->n);
	return s->v[rank ? rank - 1 : 0];
}

void samples_free(samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
