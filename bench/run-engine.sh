#!/bin/sh
# bench/run-engine.sh -- the engine benchmark in one run: build bench-engine,
# measure keel and its peers on this machine's disk, keep the raw JSONL, and
# write the tables and the plot into docs/results/engine.md.
#
#   bench/run-engine.sh [--quick] [--no-doc] [--section NAME]
#                       [bench-engine options ...]
#
#   --quick   a run that fits in about five minutes (bench-engine --quick)
#   --no-doc  measure and print the tables, but leave docs/results/ and
#             bench/results/ alone (the raw lines go to $B/bench-results/)
#   --section NAME
#             a partial run (some engines or workloads) with a section of
#             its own: the tables go to section NAME of docs/results/engine.md
#             and the raw lines to bench/results/NAME.jsonl, no plot is
#             drawn, and the full run's section "engine" stays as it is
#   anything else is passed to bench-engine (see build-bench/bench-engine --help)
#
# Outputs (paths relative to the repository root):
#   bench/results/engine.jsonl        raw measurements, one JSON object a line
#   docs/results/engine.md            the command, the machine, the tables
#                                     (bench/results.sh; a rerun replaces it)
#   docs/results/engine-commits.svg   commits/s against writer threads, one
#                                     line per engine (bench/plot.sh)
#
# Environment: B (build directory, default build-bench), TMPDIR (where the
# stores are created; must be on the disk under test, not tmpfs).
set -eu

cd "$(dirname "$0")/.."
. bench/results.sh
results_begin bench/run-engine.sh "$@"
results_env B TMPDIR
B=${B:-build-bench}
RESULTS=bench/results

write_doc=1
section=engine
# --no-doc and --section are ours; everything else goes to bench-engine
n=$#
while [ "$n" -gt 0 ]; do
	arg=$1
	shift
	n=$((n - 1))
	if [ "$arg" = "--no-doc" ]; then
		write_doc=0
	elif [ "$arg" = "--section" ] && [ "$n" -gt 0 ]; then
		section=$1
		shift
		n=$((n - 1))
		case $section in
		*[!a-z0-9-]*|'') echo "run-engine: --section takes a-z, 0-9 and -" >&2; exit 2 ;;
		esac
	else
		set -- "$@" "$arg"
	fi
done

make B="$B" -j2 "$B/bench-engine" >&2

[ "$write_doc" = 1 ] || RESULTS=$B/bench-results
mkdir -p "$RESULTS"
run_id=$(date -u +%Y%m%dT%H%M%SZ)-$$
jsonl=$RESULTS/$section.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

"$B/bench-engine" --run-id "$run_id" --out "$tmp/run.jsonl" "$@"
cp "$tmp/run.jsonl" "$jsonl"
sh bench/report.sh "$jsonl" > "$tmp/tables.md"
[ "$section" = engine ] && sh bench/plot.sh "$jsonl" > "$tmp/engine-commits.svg"

# What was run on what, then the figures.
{
	echo "It ran \`$B/bench-engine --run-id $run_id --out FILE${*:+ $*}\`;"
	echo "the raw lines are in [\`$jsonl\`](../../$jsonl)."
	echo
	echo "| engine | version | configuration measured |"
	echo "|---|---|---|"
	"$B/bench-engine" --list | awk -F '\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }'
	echo
	pkgs=$(dpkg-query -W -f '${Package} ${Version}\n' liblmdb0 libsqlite3-0 \
		'librocksdb*' 'libleveldb1*' 2>/dev/null | awk 'NF == 2' | paste -sd ';' - |
		sed 's/;/; /g') || pkgs=""
	[ -n "$pkgs" ] && echo "Peer packages: $pkgs." && echo
	cat "$tmp/tables.md"
} > "$tmp/section.md"

if [ "$write_doc" = 0 ]; then
	cat "$tmp/section.md"
	exit 0
fi

[ "$section" = engine ] && results_svg "$tmp/engine-commits.svg" engine-commits.svg \
	"Durable commits per second against writer threads, keel and its peers"
results_write engine "$section" "Engine: keel against LMDB, SQLite, RocksDB and LevelDB" \
	"${TMPDIR:-/tmp}" "$tmp/section.md"
echo "run-engine: wrote $jsonl and docs/results/engine.md (run $run_id)" >&2
