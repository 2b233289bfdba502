#!/bin/sh
# claims-svg.sh PAGE -- the claims table of PAGE (docs/results/claims.md, as
# tools/claims.sh writes it) as an SVG on stdout: one row per configuration,
# one column per fault, each cell coloured by its verdict:
#   holds                    green
#   broken                   red
#   broken under posix only  orange: a power cut broke it under the strict
#                            posix model while ext4, xfs and btrfs all held
#   unavailable              blue: refuses to start or needs repair
#   set-up                   grey: could not be run here (the reason is the
#                            cell's tooltip and the page's text)
#   not run                  white: a file-system model, when posix held
# Plain awk, no tool to install; tools/claims.sh runs it after each run.
set -u
[ $# -eq 1 ] && [ -f "$1" ] || {
	echo "usage: claims-svg.sh PAGE.md >PAGE.svg" >&2
	exit 2
}
awk -F ' [|] ' '
function esc(s) {
	gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s)
	gsub(/"/, "\\&quot;", s)
	return s
}
function class(v) {
	if (v ~ /^holds/) return "holds"
	if (v ~ /^BROKEN/) return "broken"
	if (v ~ /^UNAVAILABLE/) return "unavailable"
	if (v ~ /^set-up/ || v ~ /^refused/) return "setup"
	return "notrun"
}
# the "torn, under ext4 / xfs / btrfs" cell: "-" or "ext4: V; xfs: V; btrfs: V"
function models(cell, r,   a, b) {
	m[r, "ext4"] = m[r, "xfs"] = m[r, "btrfs"] = "-"
	if (cell !~ /^ext4: /) return
	a = index(cell, "; xfs: "); b = index(cell, "; btrfs: ")
	if (!a || !b) return
	m[r, "ext4"] = substr(cell, 7, a - 7)
	m[r, "xfs"] = substr(cell, a + 7, b - a - 7)
	m[r, "btrfs"] = substr(cell, b + 9)
}
/^[|] configuration [|]/ { intable = 1; next }
intable && /^[|]---/ { next }
intable && !/^[|]/ { intable = 0 }
intable {
	sub(/^[|] /, ""); sub(/ [|]$/, "")
	if (NF < 7) next
	n++
	name[n] = $1
	v[n, 1] = $3; v[n, 2] = $4; v[n, 3] = $5; v[n, 7] = $7
	models($6, n)
	v[n, 4] = m[n, "ext4"]; v[n, 5] = m[n, "xfs"]; v[n, 6] = m[n, "btrfs"]
	held = v[n, 4] ~ /^holds/ && v[n, 5] ~ /^holds/ && v[n, 6] ~ /^holds/
	for (c = 1; c <= 7; c++) {
		k[n, c] = class(v[n, c])
		if ((c == 2 || c == 3) && k[n, c] == "broken" && held)
			k[n, c] = "posix"
	}
}
END {
	split("process kill|power cut, reorder|power cut, torn|torn, ext4|torn, xfs|torn, btrfs|fsync EIO + cut", head, "|")
	split("holds|broken|posix|unavailable|setup|notrun", kinds, "|")
	fill["holds"] = "#6dbb6d"; label["holds"] = "holds"
	fill["broken"] = "#d9534f"; label["broken"] = "broken"
	fill["posix"] = "#f0ad4e"; label["posix"] = "broken under posix only"
	fill["unavailable"] = "#5b8fd9"; label["unavailable"] = "unavailable"
	fill["setup"] = "#b0b0b0"; label["setup"] = "set-up (not run here)"
	fill["notrun"] = "#ffffff"; label["notrun"] = "not run (posix held)"
	lw = 190; cw = 112; ch = 18; top = 56
	w = lw + 7 * cw + 10; h = top + n * ch + 60
	printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", w, h
	printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	printf "<text x=\"4\" y=\"16\" font-size=\"14\">Claims: each configuration under each fault (seed 1)</text>\n"
	for (c = 1; c <= 7; c++)
		printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", lw + (c - 0.5) * cw, top - 8, esc(head[c])
	for (r = 1; r <= n; r++) {
		y = top + (r - 1) * ch
		printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", lw - 6, y + 13, esc(name[r])
		for (c = 1; c <= 7; c++)
			printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#888\"><title>%s: %s</title></rect>\n", lw + (c - 1) * cw, y, cw, ch, fill[k[r, c]], esc(name[r] " / " head[c]), esc(v[r, c])
	}
	y = top + n * ch + 20
	x = 4
	for (i = 1; i <= 6; i++) {
		printf "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#888\"/>", x, y, fill[kinds[i]]
		printf "<text x=\"%d\" y=\"%d\">%s</text>\n", x + 16, y + 10, label[kinds[i]]
		x += 16 + length(label[kinds[i]]) * 6 + 18
	}
	print "</svg>"
}' "$1"
