/*
 * probe_svg.h -- an SVG plot of a run, for a browser.
 *
 * Two panels over the run's time axis:
 *   top     latency p50, p99, p99.9 and max per second, log scale (us), with
 *           every recorded stall marked (orange over 100 ms, red over 1 s);
 *   bottom  writes per second (left axis) and MB/s (right axis).
 * Seconds without a completed write leave a gap in the latency lines and a
 * zero in the throughput line, so a stall is visible as a hole.
 *
 * The output is a standalone, well-formed SVG 1.1 document; every text taken
 * from the run (title, device model) is XML-escaped.
 *
 * Calling sequence: fill a probe_svg_input, call probe_svg_write(f, &in).
 * It returns PROBE_OK, or PROBE_EIO if the stream reports an error.
 */
#ifndef KEEL_PROBE_SVG_H
#define KEEL_PROBE_SVG_H

#include <stdio.h>
#include "probe.h"

struct probe_svg_input {
	const char *title;                   /* first heading line */
	const char *subtitle;                /* second line (device), may be NULL */
	size_t write_size;                   /* bytes per write, for MB/s */
	const struct probe_second *seconds;  /* the run, one per second */
	size_t nseconds;
	const struct probe_stall *stalls;    /* stalls to mark, may be NULL */
	size_t nstalls;
};

int probe_svg_write(FILE *f, const struct probe_svg_input *in);

/* Write s with &, <, >, " and ' escaped, and control bytes dropped. */
void probe_svg_escape(FILE *f, const char *s);

#endif
