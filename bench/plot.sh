#!/bin/sh
# bench/plot.sh -- one SVG from bench-engine's JSONL: durable commits per
# second against writer threads, one line per engine, one panel per value
# size, logarithmic axis (the engines differ by orders of magnitude).
#
#   bench/plot.sh RESULTS.jsonl > commits.svg
#
# Medians over the rounds of the newest run in the file, as in report.sh.
# Plain awk writing SVG by hand: no plotting tool needed to regenerate it.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 RESULTS.jsonl" >&2; exit 2; }
[ -r "$1" ] || { echo "$0: cannot read $1" >&2; exit 1; }

awk "$(cat "$(dirname "$0")/stats.awk")"'
function log10(x) { return log(x) / log(10) }
function floor_(x) { return x == int(x) || x >= 0 ? int(x) : int(x) - 1 }
function ceil_(x) { return x == int(x) ? x : floor_(x) + 1 }
# pixel position of a value on the y axis / of the i-th thread count
function ypix(v) { return top + ph - (log10(v) - ylo) / (yhi - ylo) * ph }
function xpix(panel, i) { return left + panel * (pw + gap) + (nt == 1 ? pw / 2 : pad + (i - 1) * (pw - 2 * pad) / (nt - 1)) }
function human(v) {
	if (v >= 1000000) return sprintf("%gM", v / 1000000)
	if (v >= 1000) return sprintf("%gk", v / 1000)
	return sprintf("%g", v)
}

{ lines[NR] = $0; run = jget($0, "run") }
END {
	nengines = split("keel lmdb sqlite rocksdb leveldb plain plain-ring plain-falloc", order, " ")
	split("#d62728 #1f77b4 #2ca02c #ff7f0e #9467bd #555555 #999999 #8c564b", color, " ")
	split("none none none none none 6,4 2,3 8,3,2,3", dash, " ")
	for (i = 1; i <= NR; i++) {
		l = lines[i]
		if (jget(l, "run") != run || jget(l, "workload") != "commit") continue
		e = jget(l, "engine"); t = jget(l, "threads"); v = jget(l, "value_size")
		g = e SUBSEP t SUBSEP v
		cnt[g]++; val[g, cnt[g]] = jget(l, "ops_per_s")
		tl[t] = 1; vl[v] = 1; have[e] = 1
	}
	nt = 0; for (t in tl) tlist[++nt] = t + 0
	nv = 0; for (v in vl) vlist[++nv] = v + 0
	isort(tlist, nt); isort(vlist, nv)
	lo = ""; hi = ""
	for (k = 1; k <= nengines; k++) for (a = 1; a <= nv; a++) for (b = 1; b <= nt; b++) {
		m = median(order[k] SUBSEP tlist[b] SUBSEP vlist[a])
		if (m == "" || m <= 0) continue
		if (lo == "" || m < lo) lo = m
		if (hi == "" || m > hi) hi = m
	}
	if (lo == "") { lo = 1; hi = 10 }
	ylo = floor_(log10(lo)); yhi = ceil_(log10(hi)); if (yhi == ylo) yhi++

	left = 70; top = 50; pw = 360; ph = 300; gap = 70; pad = 24
	W = left + nv * pw + (nv - 1) * gap + 150; H = top + ph + 60
	printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H
	printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	printf "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Durable commits per second (median of rounds, log scale), run %s</text>\n", left, run
	for (a = 1; a <= nv; a++) {
		p = a - 1; x0 = left + p * (pw + gap)
		printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\">%d-byte values</text>\n", x0 + pw / 2, top - 10, vlist[a]
		# decade grid and labels
		for (d = ylo; d <= yhi; d++) for (f = 1; f <= 5; f += (f == 1 ? 1 : 3)) {
			yv = f * 10 ^ d
			if (log10(yv) > yhi + 1e-9) continue
			y = ypix(yv)
			printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>\n", x0, y, x0 + pw, y, f == 1 ? "#bbbbbb" : "#eeeeee"
			printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">%s</text>\n", x0 - 6, y + 4, human(yv)
		}
		printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", x0, top, pw, ph
		for (b = 1; b <= nt; b++)
			printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", xpix(p, b), top + ph + 18, tlist[b]
		printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#444\">writer threads</text>\n", x0 + pw / 2, top + ph + 38
		for (k = nengines; k >= 1; k--) {
			e = order[k]
			if (!(e in have)) continue
			pts = ""
			for (b = 1; b <= nt; b++) {
				m = median(e SUBSEP tlist[b] SUBSEP vlist[a])
				if (m == "" || m <= 0) continue
				pts = pts sprintf("%.1f,%.1f ", xpix(p, b), ypix(m))
				printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s %d writers %d B: %.0f/s</title></circle>\n", xpix(p, b), ypix(m), color[k], e, tlist[b], vlist[a], m
			}
			if (pts != "")
				printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s/>\n", pts, color[k], e == "keel" ? 3 : 1.5, dash[k] == "none" ? "" : " stroke-dasharray=\"" dash[k] "\""
		}
	}
	# legend
	lx = left + nv * pw + (nv - 1) * gap + 20; ly = top + 10
	for (k = 1; k <= nengines; k++) {
		e = order[k]
		if (!(e in have)) continue
		printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%s\"%s/>\n", lx, ly, lx + 24, ly, color[k], e == "keel" ? 3 : 1.5, dash[k] == "none" ? "" : " stroke-dasharray=\"" dash[k] "\""
		printf "<text x=\"%d\" y=\"%d\">%s</text>\n", lx + 30, ly + 4, e
		ly += 20
	}
	print "</svg>"
}
' "$1"
