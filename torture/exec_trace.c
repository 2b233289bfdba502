/*
 * exec_trace.c -- what `torture --target exec` keeps of the calls the
 * front end records (exec_internal.h): the cycle's trace, one call a line,
 * copied next to the directory as DIR.trace when a violation comes; and
 * the harness's own history of the shim's ring, from which the report
 * names the calls before the crash.
 */
#include "exec_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

/* ---- the trace of a cycle ------------------------------------------------ */

/* Copies the ring's new entries into the history.  FINAL: the programs
 * have ended, so a call still in flight is taken as it stands. */
static void hist_drain(xrun *r, int final)
{
	uint64_t n = __atomic_load_n(&r->ctl->ncalls, __ATOMIC_ACQUIRE);

	if (n < r->hist_drained) /* the ring was reset */
		r->hist_drained = 0;
	if (n - r->hist_drained > SHIM_RING)
		r->hist_drained = n - SHIM_RING;
	for (; r->hist_drained < n; r->hist_drained++) {
		const shim_call *c = &r->ctl->ring[r->hist_drained % SHIM_RING];
		if (__atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) !=
		            r->hist_drained + 1 ||
		    __atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE)) {
			if (!final)
				break;
			if (c->seq != r->hist_drained + 1)
				continue;
		}
		if (c->op == SHIM_OP_PROTOCOL)
			r->hist_proto[r->hist_proto_n++ % HIST_PROTO] = *c;
		else
			r->hist_calls[r->hist_calls_n++ % HIST_CALLS] = *c;
	}
}

/* Writes the ring's new entries to the cycle's trace.  FINAL 0: while the
 * program runs, stopping at the first call still in flight (it may yet
 * return); 1: the programs have ended; 2: they were killed, so a call
 * still in flight is marked as the one the kill interrupted. */
void exec_trace_drain(xrun *r, int final)
{
	uint64_t n;

	hist_drain(r, final != 0);
	if (!r->trace)
		return;
	n = __atomic_load_n(&r->ctl->ncalls, __ATOMIC_ACQUIRE);
	if (n < r->drained) /* the ring was reset behind our back */
		r->drained = 0;
	if (n - r->drained > SHIM_RING) {
		fprintf(r->trace, "... %" PRIu64 " calls not traced (the ring "
		        "of %d wrapped between two looks)\n",
		        n - SHIM_RING - r->drained, SHIM_RING);
		r->drained = n - SHIM_RING;
	}
	for (; r->drained < n; r->drained++) {
		const shim_call *c = &r->ctl->ring[r->drained % SHIM_RING];
		shim_call copy;
		if (__atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) != r->drained + 1 ||
		    __atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE)) {
			if (!final)
				break;
			if (c->seq != r->drained + 1)
				continue;
		}
		copy = *c;
		explain_trace_line(r->trace, &copy, r->ctl, final == 2);
	}
}

/* A new cycle's trace (FRESH), or a new part of it: SAY. */
void exec_trace_mark(xrun *r, const char *say, uint64_t cycle, int fresh)
{
	if (!r->trace)
		return;
	if (fresh) {
		r->drained = __atomic_load_n(&r->ctl->ncalls, __ATOMIC_ACQUIRE);
		fflush(r->trace);
		if (ftruncate(fileno(r->trace), 0) == 0)
			rewind(r->trace);
	}
	fprintf(r->trace, "---- cycle %" PRIu64 ": %s\n", cycle, say);
}

/* ---- the calls before the crash ---------------------------------------------- */

/* The remembered calls and protocol lines in order, oldest first: the
 * last HIST_CALLS calls, and the protocol lines since the oldest of them
 * (the last HIST_PROTO at most). */
void exec_ring_snapshot(xrun *r)
{
	uint64_t ci, pi, oldest;

	hist_drain(r, 1);
	ci = r->hist_calls_n > HIST_CALLS ? r->hist_calls_n - HIST_CALLS : 0;
	pi = r->hist_proto_n > HIST_PROTO ? r->hist_proto_n - HIST_PROTO : 0;
	oldest = ci < r->hist_calls_n ? r->hist_calls[ci % HIST_CALLS].seq : 0;
	r->ring_n = 0;
	while (ci < r->hist_calls_n || pi < r->hist_proto_n) {
		const shim_call *c = ci < r->hist_calls_n ?
		                     &r->hist_calls[ci % HIST_CALLS] : NULL;
		const shim_call *p = pi < r->hist_proto_n ?
		                     &r->hist_proto[pi % HIST_PROTO] : NULL;
		if (c && (!p || c->seq < p->seq)) {
			r->ring[r->ring_n++] = *c;
			ci++;
		} else {
			if (p->seq > oldest)
				r->ring[r->ring_n++] = *p;
			pi++;
		}
	}
}

/* Copies the cycle's trace next to the directory; its path in PATH. */
void exec_trace_keep(xrun *r, char *path, size_t cap)
{
	char buf[65536];
	size_t n;
	FILE *out;

	path[0] = '\0';
	if (!r->trace)
		return;
	fflush(r->trace);
	snprintf(path, cap, "%s.trace", r->dir);
	out = fopen(path, "w");
	if (!out) {
		path[0] = '\0';
		return;
	}
	rewind(r->trace);
	while ((n = fread(buf, 1, sizeof buf, r->trace)) > 0)
		fwrite(buf, 1, n, out);
	fseek(r->trace, 0, SEEK_END);
	if (fclose(out) != 0)
		path[0] = '\0';
}
