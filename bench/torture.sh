#!/bin/sh
# bench/torture.sh [BUILD_DIR] [DURATION] -- the torture harness's own
# figures: how many kill/recover/verify cycles a second it gets through, and
# what each fault model costs, on the embedded engine at the defaults
# (--kill-every 50ms --jitter 20 --threads 4 --keys 1000 --value-size
# 64-4096), each configuration for DURATION (default 30s) with a fixed seed,
# then --enumerate once (every crash state of its fixed workload: seconds),
# then keel-serve under --target http over HTTP/1.1, TLS, h2c and h2.  The plain-kill run comes first and each other row
# is also given as a ratio to it: the machines this runs on are shared, and
# a ratio measured minutes apart says more than a rate.
#
#   bench/torture.sh                 # about 5.5 minutes
#   bench/torture.sh build 10s       # about two minutes
#
# Prints a markdown table and writes it to docs/results/torture.md
# (bench/results.sh: with the command, the machine and the commit; a rerun
# replaces it).  The stores go to TMPDIR (default /tmp).  Exit 1 if a run
# found a violation (its row says so; the table is written all the same).
set -u
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../docs/results}
. "$(dirname "$0")/results.sh"
results_begin "$0" "$@"
results_env TMPDIR
B=${1:-build}
D=${2:-30s}
[ -x "$B/torture" ] || { echo "bench/torture.sh: no $B/torture (make first)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/keel-torture-figures.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
failed=0

# field NAME -- a number of the last run's summary ($T/run.json)
field() { sed -n "s/^ *\"$1\": \([0-9.]*\),*$/\1/p" "$T/run.json"; }
# pct NAME -- "p50 / p99" of one of the summary's latency objects, in ms
pct() {
	sed -n "s/^ *\"$1\": {\"p50\": \([0-9.]*\), \"p99\": \([0-9.]*\).*/\1 \/ \2 ms/p" "$T/run.json"
}

# run SEED FLAGS... -- one torture run, one table row
run() {
	seed=$1
	shift
	# --enumerate ends when every crash state is checked, not at a time
	case " $* " in *" --enumerate "*) dur= ;; *) dur="--duration $D" ;; esac
	# shellcheck disable=SC2086 # dur is a flag and its value, or nothing
	"$B/torture" --quiet $dur --seed "$seed" --dir "$T/store" \
		--json "$T/run.json" "$@" >"$T/out" 2>&1
	rc=$?
	rm -rf "$T/store"
	if [ ! -s "$T/run.json" ]; then
		echo "| \`${*:-(plain kills)}\` | - | - | - | - | - | - | did not run: $(head -n 1 "$T/out") |"
		failed=1
		return
	fi
	result=PASS
	[ $rc -eq 0 ] || { result="**FAIL** (exit $rc)"; failed=1; }
	cps=$(field cycles_per_second)
	[ -n "${base:-}" ] || base=$cps
	ratio=$(awk -v a="$cps" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')
	what="$(field cycles) cycles"
	if [ -z "$dur" ]; then
		cps="$cps crash states/s"
		ratio=-
		what="$(field crash_states) of $(field enum_steps) I/O steps' crash states"
	fi
	echo "| \`${*:-(plain kills)}\` | $cps | $ratio | $(field acked_per_second) | $(pct recovery_ms) | $(pct writer_open_ms) | $(field power_cuts) | $result, $what, seed $seed |"
	rm -f "$T/run.json"
}

{
	echo "Each run: \`$B/torture --duration $D --seed SEED FLAGS\` at the defaults (writers killed"
	echo "every 50 ms +-20 %, 4 threads, 1,000 keys, 64-4096-byte values).  \`vs plain\` is the"
	echo "row's cycles per second over the plain-kill run's."
	echo
	echo "| flags | cycles/s | vs plain | acknowledged ops/s | verify open p50 / p99 | writer open p50 / p99 | power cuts | result |"
	echo "|---|---:|---:|---:|---|---|---:|---|"
	run 101
	run 102 --power-loss
	run 103 --power-loss --device reorder
	run 104 --power-loss --device garbage --sector 4096
	run 105 --power-loss --compact-every 20ms
	run 106 --fail fdatasync:EIO:p=0.05
	run 107 --enumerate
	run 111 --target http --threads 8
	run 112 --target http --threads 8 --http-tls
	run 113 --target http --threads 8 --http2
	run 114 --target http --threads 8 --http-tls --http2
	run 115 --target http --threads 8 --http3
	echo
	echo "With \`--fail\`, writers stop at their first failed sync, so cycles are shorter and"
	echo "more of them fit; \`--enumerate\` runs a fixed workload once per I/O step and"
	echo "checks every crash state, so its rate is crash states a second.  \`--target http\`"
	echo "kills keel-serve instead of an embedded writer (8 client threads; over TLS 1.3"
	echo "with \`--http-tls\`, HTTP/2 with \`--http2\`, HTTP/3 with \`--http3\`): a cycle"
	echo "includes the server's start."
} >"$T/section.md"
cat "$T/section.md"
results_write torture torture "torture: cycles a second, by fault model" \
	"${TMPDIR:-/tmp}" "$T/section.md"
exit $failed
