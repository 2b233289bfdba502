#!/bin/sh
# bench/growth.sh [BUILD_DIR] [LOAD_MIB] [COMMITS] [ROUNDS] -- single
# commits' latency while a large store's file grows (build/growth-latency,
# bench/growth_latency.c): a store loaded to LOAD_MIB MiB (default 300),
# then COMMITS synced 16-byte puts (default 20000), with compaction off and
# with the automatic policy on (--compact: the commits run beside a
# compaction), the two alternating over ROUNDS rounds (default 2).
#
#   bench/growth.sh                      # about a minute on an idle disk
#   bench/growth.sh build 100 5000 2     # a short look
#
# Prints a markdown table, a row per run, and writes it to
# docs/results/growth.md (bench/results.sh: with the command, the machine
# and the commit; a rerun replaces it).  The stores go to TMPDIR (default
# /tmp), which must be on the disk under test.
set -eu
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../docs/results}
. "$(dirname "$0")/results.sh"
results_begin "$0" "$@"
results_env TMPDIR
B=${1:-build}
LOAD=${2:-300}
COMMITS=${3:-20000}
ROUNDS=${4:-2}
[ -x "$B/growth-latency" ] || { echo "bench/growth.sh: no $B/growth-latency (make first)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/keel-growth.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM

# row JSON-LINE -- one table row from growth-latency's line
row() {
	echo "$1" | awk '
	function get(k,    i, s) {
		i = index($0, "\"" k "\":"); if (!i) return "-"
		s = substr($0, i + length(k) + 3); sub(/[,}].*/, "", s); return s
	}
	{ printf "| %s | %s | %s | %s ms | %s ms | %s ms | %s ms | %s | %s (%s) | %s | %s -> %s |\n",
	    get("compact") == "true" ? "on (--compact)" : "off", r, get("commits_per_s"),
	    get("p50_ms"), get("p99_ms"), get("p999_ms"), get("max_ms"), get("over_10ms"),
	    get("growths"), get("growths_inline"), get("compactions"),
	    get("file_mib_before"), get("file_mib_after") }' r="$2"
}

{
	echo "$COMMITS synced 16-byte puts over 10,000 keys after a load of $LOAD MiB of 64 KiB"
	echo "values; the file grows by an eighth (up to 64 MiB of zeros) each time it must."
	echo "\`growths (inline)\`: growths in all, and those a commit made itself rather than"
	echo "the grower thread."
	echo
	echo "| compaction | round | commits/s | p50 | p99 | p99.9 | longest | over 10 ms | growths (inline) | compactions | file MiB |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	for r in $(seq "$ROUNDS"); do
		for mode in "" --compact; do
			rm -rf "$T/d" && mkdir "$T/d"
			# shellcheck disable=SC2086 # mode is a flag or nothing
			line=$("$B/growth-latency" --dir "$T/d" --load-mib "$LOAD" \
				--commits "$COMMITS" $mode)
			row "$line" "$r"
		done
	done
} >"$T/section.md"
cat "$T/section.md"
results_write growth growth "Engine: commit latency while the file grows" \
	"${TMPDIR:-/tmp}" "$T/section.md"
