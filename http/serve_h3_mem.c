/*
 * serve_h3_mem.c -- what ngtcp2 and nghttp3 hold, counted per shard
 * when KEEL_H3_MEMSTAT is set (serve_h3.h, MEMORY; docs/http.md has
 * the figures).
 */
#include "serve_h3_internal.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- what the libraries hold ------------------------------------------ */

/*
 * With KEEL_H3_MEMSTAT set in the environment, ngtcp2 and nghttp3
 * allocate through these (ngtcp2_mem, nghttp3_mem), so that a shard
 * knows what each holds: the bytes malloc really gave
 * (malloc_usable_size, not what was asked) and the blocks; the sweep
 * prints them when they change (docs/http.md, "Memory"; bench/http/h3.sh,
 * idle).  Without it the libraries use malloc itself: nothing is
 * counted, nothing is paid.  A shard's connections are made and freed
 * on its thread only.
 */
static void *mem_took(struct h3_mem *m, void *p)
{
	if (p) {
		m->live += malloc_usable_size(p);
		m->blocks++;
	}
	return p;
}

static void mem_gives(struct h3_mem *m, void *p)
{
	if (p) {
		m->live -= malloc_usable_size(p);
		m->blocks--;
	}
}

static void *mem_malloc(size_t n, void *arg)
{
	return mem_took(arg, malloc(n));
}

static void mem_free(void *p, void *arg)
{
	mem_gives(arg, p);
	free(p);
}

static void *mem_calloc(size_t k, size_t n, void *arg)
{
	return mem_took(arg, calloc(k, n));
}

static void *mem_realloc(void *p, size_t n, void *arg)
{
	struct h3_mem *m = arg;
	size_t was = p ? malloc_usable_size(p) : 0;
	void *q = realloc(p, n);

	if (q == NULL && n > 0)
		return NULL; /* P is held still, as it was */
	m->live -= was;
	m->blocks -= p != NULL;
	return mem_took(m, q);
}

/* KEEL_H3_MEMSTAT: SH's figures on stderr when they changed.  "ours" is
 * each connection's serve_conn and h3_conn and its streams (their
 * bodies and answers not counted: an idle connection has none). */
void h3_mem_report(struct serve_shard *sh)
{
	struct h3_shard *hs = sh->h3;
	struct h3_conn *hc;
	size_t ours = 0;
	int n = 0, tls = 0, http = 0, streams = 0;

	if (!hs->memstat || hs->quic_mem.live + hs->http_mem.live == hs->memstat_last)
		return;
	hs->memstat_last = hs->quic_mem.live + hs->http_mem.live;
	for (hc = hs->conns; hc; hc = hc->next) {
		struct h3_stream *st;

		n++;
		tls += hc->tls != NULL;
		http += hc->http != NULL;
		ours += malloc_usable_size(hc) + malloc_usable_size(hc->c);
		for (st = hc->streams; st; st = st->next, streams++)
			ours += malloc_usable_size(st);
	}
	fprintf(stderr, "keel-serve: h3 memory, shard %d: %d connections "
	        "(%d with a TLS session, %d with HTTP/3, %d streams); ngtcp2 "
	        "%zu bytes in %zu blocks, nghttp3 %zu bytes in %zu blocks, ours "
	        "%zu bytes\n", sh->id, n, tls, http, streams, hs->quic_mem.live,
	        hs->quic_mem.blocks, hs->http_mem.live, hs->http_mem.blocks, ours);
}

/* HS's counting allocators, and whether the libraries are given them
 * (KEEL_H3_MEMSTAT in the environment); from h3_shard_open. */
void h3_mem_init(struct h3_shard *hs)
{
	hs->quic_alloc = (ngtcp2_mem){&hs->quic_mem, mem_malloc,
	                              mem_free, mem_calloc, mem_realloc};
	hs->http_alloc = (nghttp3_mem){&hs->http_mem, mem_malloc,
	                               mem_free, mem_calloc, mem_realloc};
	hs->memstat = getenv("KEEL_H3_MEMSTAT") != NULL;
}
