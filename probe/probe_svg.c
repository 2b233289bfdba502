/* probe_svg.c -- the SVG plot; see probe_svg.h. */
#include "probe_svg.h"

#include <math.h>
#include <string.h>

/* Geometry, in SVG user units. */
#define W 960.0
#define LEFT 80.0
#define RIGHT 80.0
#define LAT_TOP 70.0
#define LAT_H 300.0
#define OPS_TOP 430.0
#define OPS_H 160.0
#define H 640.0

void probe_svg_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 forbids most control characters */
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

/* The time axis: run seconds -> x, in a unit that reads well. */
struct xaxis {
	double span;     /* seconds covered */
	double unit;     /* seconds per displayed unit */
	const char *name;
};

static double x_of(const struct xaxis *xa, double t)
{
	return LEFT + (W - LEFT - RIGHT) * (xa->span > 0 ? t / xa->span : 0);
}

/* Latency (us) -> y on the log axis [lo, hi] decades. */
static double y_lat(double us, double lo, double hi)
{
	double l = log10(us > 0 ? us : 1e-3);

	if (l < lo)
		l = lo;
	if (l > hi)
		l = hi;
	return LAT_TOP + LAT_H * (1 - (l - lo) / (hi - lo));
}

static void latency_axes(FILE *f, double lo, double hi)
{
	static const char *const unit[] = { "ns", "us", "ms", "s" };
	int d;

	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		"fill=\"none\" stroke=\"#888\"/>\n", LEFT, LAT_TOP,
		W - LEFT - RIGHT, LAT_H);
	for (d = (int)lo; d <= (int)hi; d++) {
		double y = y_lat(pow(10, d), lo, hi);
		int e = d + 3; /* decades above 1 ns */
		int u = e / 3 < 3 ? e / 3 : 3;
		double v = pow(10, e - 3 * u);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#ddd\"/>\n", LEFT, y, W - RIGHT, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">"
			"%.0f %s</text>\n", LEFT - 6, y + 4, v, unit[u]);
	}
	fprintf(f, "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" "
		"text-anchor=\"middle\">latency (write + sync)</text>\n",
		LAT_TOP + LAT_H / 2, LAT_TOP + LAT_H / 2);
}

/* One latency series as a path with gaps where a second had no write. */
static void latency_path(FILE *f, const struct probe_svg_input *in,
			 const struct xaxis *xa, int which, double lo, double hi,
			 const char *color, const char *dash)
{
	int pen_down = 0;
	size_t i;

	fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s%s%s d=\"",
		color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
		dash ? "\"" : "");
	for (i = 0; i < in->nseconds; i++) {
		const struct probe_second *s = &in->seconds[i];
		uint64_t v = which == 0 ? s->p50_ns : which == 1 ? s->p99_ns :
			     which == 2 ? s->p999_ns : s->max_ns;

		if (s->ops == 0) {
			pen_down = 0;
			continue;
		}
		fprintf(f, "%s%.1f %.1f ", pen_down ? "L" : "M",
			x_of(xa, s->t_s + s->len_s / 2), y_lat((double)v / 1e3, lo, hi));
		pen_down = 1;
	}
	fputs("M0 0\"/>\n", f);
}

/* Dots as well as lines when the run is short enough for a dot to matter
 * (a one-second run has no line to draw). */
static void latency_dots(FILE *f, const struct probe_svg_input *in,
			 const struct xaxis *xa, double lo, double hi)
{
	size_t i;

	if (in->nseconds > 120)
		return;
	for (i = 0; i < in->nseconds; i++) {
		const struct probe_second *s = &in->seconds[i];
		double x = x_of(xa, s->t_s + s->len_s / 2);

		if (s->ops == 0)
			continue;
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#1f77b4\"/>"
			"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#d62728\"/>\n",
			x, y_lat((double)s->p50_ns / 1e3, lo, hi),
			x, y_lat((double)s->p999_ns / 1e3, lo, hi));
	}
}

static void stall_marks(FILE *f, const struct probe_svg_input *in,
			const struct xaxis *xa)
{
	size_t i;

	for (i = 0; i < in->nstalls; i++) {
		const struct probe_stall *s = &in->stalls[i];
		int big = s->latency_ns >= PROBE_LONG_STALL_NS;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"%s\" stroke-width=\"%d\"><title>stall %.1f ms at "
			"%.3f s</title></line>\n", x_of(xa, s->t_s), LAT_TOP + LAT_H,
			x_of(xa, s->t_s), LAT_TOP + LAT_H - (big ? 24 : 12),
			big ? "#d62728" : "#ff7f0e", big ? 2 : 1,
			(double)s->latency_ns / 1e6, s->t_s);
	}
}

/* A "nice" axis maximum at or above v: 1, 2 or 5 times a power of ten. */
static double nice_ceil(double v)
{
	double p, m;

	if (v <= 0)
		return 1;
	p = pow(10, floor(log10(v)));
	m = v / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void throughput_panel(FILE *f, const struct probe_svg_input *in,
			     const struct xaxis *xa)
{
	double top = 0, y, ops;
	size_t i;
	int k;

	for (i = 0; i < in->nseconds; i++) {
		const struct probe_second *s = &in->seconds[i];

		ops = s->len_s > 0.05 ? (double)s->ops / s->len_s : (double)s->ops;
		if (ops > top)
			top = ops;
	}
	top = nice_ceil(top);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		"fill=\"none\" stroke=\"#888\"/>\n", LEFT, OPS_TOP,
		W - LEFT - RIGHT, OPS_H);
	for (k = 0; k <= 4; k++) {
		y = OPS_TOP + OPS_H * (1 - k / 4.0);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"end\">%.0f</text>\n<text x=\"%.1f\" y=\"%.1f\">"
			"%.2f</text>\n", LEFT, y, W - RIGHT, y, LEFT - 6, y + 4,
			top * k / 4, W - RIGHT + 6, y + 4,
			top * k / 4 * (double)in->write_size / 1e6);
	}
	fprintf(f, "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" "
		"text-anchor=\"middle\">writes/s</text>\n<text x=\"%.1f\" y=\"%.1f\" "
		"transform=\"rotate(90 %.1f %.1f)\" text-anchor=\"middle\">MB/s"
		"</text>\n", OPS_TOP + OPS_H / 2, OPS_TOP + OPS_H / 2, W - 20,
		OPS_TOP + OPS_H / 2, W - 20, OPS_TOP + OPS_H / 2);
	fputs("<path fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"1.5\" d=\"", f);
	for (i = 0; i < in->nseconds; i++) {
		const struct probe_second *s = &in->seconds[i];

		ops = s->len_s > 0.05 ? (double)s->ops / s->len_s : (double)s->ops;
		fprintf(f, "%s%.1f %.1f ", i ? "L" : "M",
			x_of(xa, s->t_s + s->len_s / 2),
			OPS_TOP + OPS_H * (1 - ops / top));
	}
	fputs("M0 0\"/>\n", f);
}

static void time_axis(FILE *f, const struct xaxis *xa)
{
	double step = nice_ceil(xa->span / xa->unit / 8), t;

	for (t = 0; t <= xa->span / xa->unit + 1e-9; t += step) {
		double x = x_of(xa, t * xa->unit);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#eee\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"middle\">%g</text>\n", x, LAT_TOP, x,
			OPS_TOP + OPS_H, x, OPS_TOP + OPS_H + 18, t);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time "
		"(%s)</text>\n", LEFT + (W - LEFT - RIGHT) / 2,
		OPS_TOP + OPS_H + 38, xa->name);
}

static void legend(FILE *f)
{
	static const char *const name[] = { "p50", "p99", "p99.9", "max" };
	static const char *const color[] = { "#1f77b4", "#ff7f0e", "#d62728", "#7f7f7f" };
	int i;

	for (i = 0; i < 4; i++)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"%s\" stroke-width=\"3\"/><text x=\"%.1f\" "
			"y=\"%.1f\">%s</text>\n", LEFT + 10 + i * 90.0, LAT_TOP - 12,
			LEFT + 30 + i * 90.0, LAT_TOP - 12, color[i],
			LEFT + 35 + i * 90.0, LAT_TOP - 8, name[i]);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">stall marks: orange &gt; 100 ms, "
		"red &gt; 1 s</text>\n", LEFT + 380, LAT_TOP - 8);
}

int probe_svg_write(FILE *f, const struct probe_svg_input *in)
{
	struct xaxis xa = { 1, 1, "s" };
	double lo = 9, hi = -9, l;
	size_t i;

	for (i = 0; i < in->nseconds; i++) {
		const struct probe_second *s = &in->seconds[i];

		if (s->t_s + s->len_s > xa.span)
			xa.span = s->t_s + s->len_s;
		if (s->ops == 0)
			continue;
		l = log10((double)(s->p50_ns ? s->p50_ns : 1) / 1e3);
		lo = l < lo ? l : lo;
		l = log10((double)(s->max_ns ? s->max_ns : 1) / 1e3);
		hi = l > hi ? l : hi;
	}
	lo = lo > hi ? 0 : floor(lo);
	hi = ceil(hi) > lo ? ceil(hi) : lo + 1;
	if (xa.span > 7200)
		xa.unit = 3600, xa.name = "h";
	else if (xa.span > 600)
		xa.unit = 60, xa.name = "min";
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%.1f\" y=\"22\" font-size=\"16\">", W, H, W, H, LEFT);
	probe_svg_escape(f, in->title);
	fprintf(f, "</text>\n<text x=\"%.1f\" y=\"40\" fill=\"#555\">", LEFT);
	probe_svg_escape(f, in->subtitle);
	fputs("</text>\n", f);
	legend(f);
	latency_axes(f, lo, hi);
	time_axis(f, &xa);
	latency_path(f, in, &xa, 3, lo, hi, "#7f7f7f", "4 3");
	latency_path(f, in, &xa, 2, lo, hi, "#d62728", NULL);
	latency_path(f, in, &xa, 1, lo, hi, "#ff7f0e", NULL);
	latency_path(f, in, &xa, 0, lo, hi, "#1f77b4", NULL);
	latency_dots(f, in, &xa, lo, hi);
	stall_marks(f, in, &xa);
	throughput_panel(f, in, &xa);
	fputs("</svg>\n", f);
	return ferror(f) ? PROBE_EIO : PROBE_OK;
}
