/*
 * loadgen.h -- what loadgen.c (options, the measured window, the counts
 * and the JSON report) shares with its HTTP/3 half, loadgen_h3.c.
 *
 * CALLING SEQUENCE (a protocol's run loop)
 *   loadgen_window_start(now)      once, when the first connection opens
 *   loop: loadgen_window(now)      starts measuring after --warmup; true
 *                                  once --duration is measured: stop
 *         loadgen_answer(t0, st)   each whole answer
 *         loadgen_error(n)         requests lost (a connection failed)
 *         loadgen_reconnect()      each connection opened again
 * Then loadgen.c prints the JSON object.  One thread: nothing is locked.
 */
#ifndef BENCH_LOADGEN_H
#define BENCH_LOADGEN_H

#include <stddef.h>
#include <stdint.h>

/* The command line (loadgen --help; docs/bench.md). */
struct loadgen_opts {
	const char *host, *path, *label, *hostile;
	int port, conns, pipeline, close_each, if_match, http3;
	double duration, warmup, put_ratio, rate, idle_hold;
	size_t value_size, send_bytes;
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t loadgen_now(void);

/* A number in [0, 1) from loadgen's fixed-seed generator (the GET/PUT
 * mix is the same from run to run). */
double loadgen_random(void);

/* Sets the warmup's and the measured window's ends from NOW. */
void loadgen_window_start(uint64_t now);

/* Starts measuring once the warmup is over; returns 1 when the measured
 * window has ended, else 0. */
int loadgen_window(uint64_t now);

/* One whole answer with STATUS to a request whose latency counts from
 * T0 (loadgen_now's clock); counted in the histogram and the status
 * classes while measuring, in answers_total always. */
void loadgen_answer(uint64_t t0, int status);

/* N requests lost with their connection (counted while measuring). */
void loadgen_error(uint64_t n);

/* --rate: a request due while its connection already had H3_DUE_MAX (or
 * RING) waiting was not sent ("dropped" in the JSON, while measuring). */
void loadgen_dropped(void);

/* A connection opened again ("reconnects" in the JSON). */
void loadgen_reconnect(void);

/* --http3: runs the load over QUIC (loadgen_h3.c) with O's flags and
 * VALUE (O->value_size bytes, every PUT's body) until the window ends.
 * Returns 0, or 1 when it could not run at all (a socket could not be
 * made) or no answer came (why: on stderr). */
int loadgen_h3_run(const struct loadgen_opts *o, const char *value);

#endif /* BENCH_LOADGEN_H */
