#!/bin/sh
# bench/faultsim-cost.sh [BUILD [ROUNDS [SECONDS]]] -- what the fault
# simulator and the libfiu points cost when no fault is enabled, written to
# docs/results/shim.md (section "faultsim-cost", bench/results.sh).
#
# Builds BUILD/faultsim-cost from bench/faultsim_cost.c (its header says what
# it measures) against BUILD's libraries, then runs it with 1 writer thread
# and with 4 (group commit), ROUNDS rounds (default 5) of SECONDS seconds
# (default 2) each, alternating the POSIX backend and the simulator's.  The
# table is its summary lines; the raw JSON lines stay in BUILD/faultsim-cost.jsonl.
#
# Environment: TMPDIR (where the stores go; default /var/tmp: a disk, since a
# sync on tmpfs costs nothing and the simulator's share would look larger).
set -eu

cd "$(dirname "$0")/.."
. bench/results.sh
results_begin "$0" "$@"
results_env TMPDIR
B=${1:-build}
ROUNDS=${2:-5}
SECONDS_EACH=${3:-2}
DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/keel-faultsim-cost.XXXXXX")
trap 'rm -rf "$DIR"' EXIT INT TERM

make B="$B" -j2 "$B/libkeel.a" "$B/libkeel-faultsim.a" >&2
cc -std=gnu11 -O2 -D_GNU_SOURCE -DFIU_ENABLE=1 -Ibase -Iengine -Irecovery \
	-Ifaultsim bench/faultsim_cost.c "$B/libkeel-faultsim.a" "$B/libkeel.a" \
	-lfiu -lpthread -o "$B/faultsim-cost"

: >"$B/faultsim-cost.jsonl"
{
	echo "\`$B/faultsim-cost --dir DIR --rounds $ROUNDS --seconds $SECONDS_EACH --threads N\`:"
	echo "durable commits through the POSIX backend against the same through the"
	echo "simulator's (cache recording on, no fault), rounds alternating; one"
	echo "\`fiu_fail\` check with no point enabled; the CPU per 4 KiB write where no"
	echo "sync hides it.  Raw lines: \`$B/faultsim-cost.jsonl\`."
	echo
	echo "| threads | figure |"
	echo "|---:|---|"
	for n in 1 4; do
		"$B/faultsim-cost" --dir "$DIR" --rounds "$ROUNDS" \
			--seconds "$SECONDS_EACH" --threads "$n" \
			>>"$B/faultsim-cost.jsonl" 2>"$DIR/summary"
		sed "s/^/| $n | /; s/\$/ |/" "$DIR/summary"
	done
} >"$DIR/section.md"
cat "$DIR/section.md"
results_write shim faultsim-cost "The shim's cost" "$DIR" "$DIR/section.md"
