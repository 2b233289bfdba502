#!/bin/sh
# torture.sh BUILD_DIR -- the torture program end to end: a 5-second run that
# must pass, the positive control that must fail (exit 1, store kept), bad
# input that must exit 2 and touch nothing, and continuing a kept store.
# Bounded: about 10 seconds.
set -u
B=${1:-build}
TORTURE=$B/torture
T=$(mktemp -d /tmp/keel-torture-test.XXXXXX)
fails=0
checks=0
trap 'rm -rf "$T"' EXIT

. "$(dirname "$0")/lib.sh"

# ---- a 5-second run passes, reports, and removes its temporary store --------
# (on a loaded machine, which does less a second, for longer: lib.sh)
mkdir "$T/tmp"
for d in $(long_enough_durations 5); do
	TMPDIR=$T/tmp "$TORTURE" --kill-every 50ms --duration ${d}s --quiet \
		--json "$T/pass.json" >"$T/pass.out" 2>&1
	rc=$?
	{ [ $rc = 0 ] || no_verdict "$T/pass.json"; } &&
		! reached "$T/pass.json" cycles=20 acked_writes=100 || break
done
expect "${d}-second run exits 0" 0 $rc
contains "summary says PASS" "$T/pass.out" '^torture: PASS'
contains "summary has fdatasync samples" "$T/pass.out" 'fdatasync after +p50'
contains "json says pass" "$T/pass.json" '"result": "pass"'
cycles=$(json_num "$T/pass.json" cycles)
acked=$(json_num "$T/pass.json" acked_writes)
[ "${cycles:-0}" -ge 20 ] && ok "ran $cycles cycles" || bad "only ${cycles:-0} cycles"
[ "${acked:-0}" -ge 100 ] && ok "acked $acked writes" || bad "only ${acked:-0} acked"
expect "json lost 0" 0 "$(json_num "$T/pass.json" lost)"
expect "json structure errors 0" 0 "$(json_num "$T/pass.json" structure_errors)"
expect "temporary store removed" "" "$(ls -A "$T/tmp")"
for f in cycles kills acked_writes keys_verified lost phantom holes order \
	structure_errors cycles_per_second recovery_ms seed dir; do
	contains "json has $f" "$T/pass.json" "^  \"$f\": "
done
contains "json has recovery p50/p99" "$T/pass.json" \
	'"recovery_ms": \{"p50": [0-9.]+, "p99": [0-9.]+'

# ---- progress lines when stderr is not a terminal ---------------------------
TMPDIR=$T/tmp "$TORTURE" --cycles 3 >"$T/progress.out" 2>"$T/progress.err"
expect "3-cycle run exits 0" 0 $?
contains "start line names seed and store" "$T/progress.err" \
	'^torture: seed [0-9]+, store .*torture.keel'
contains "plain progress line" "$T/progress.err" \
	'^torture: [0-9.]+s  cycles [0-9]+/3  kills [0-9]+  acked [0-9]+  verified [0-9]+  lost 0'

# ---- a run that acknowledged nothing earns no PASS ---------------------------
# every writer kills itself right after its open: nothing is answered and
# no fault is met, so the run tested nothing (exit 2, not 0; a short
# --kill-every is no way to make this: a loaded machine runs the writer
# long past its kill time)
TMPDIR=$T/tmp "$TORTURE" --kill-every 50ms --duration 1s --quiet \
	--early-kills 100 --json "$T/dry.json" >"$T/dry.out" 2>&1
expect "a run that acknowledged nothing exits 2" 2 $?
contains "summary says NO VERDICT" "$T/dry.out" '^torture: NO VERDICT'
contains "it says why" "$T/dry.out" 'no verdict +nothing was acknowledged in [1-9][0-9]* cycles and no writer met an injected fault'
contains "json says no-verdict" "$T/dry.json" '"result": "no-verdict"'
expect "its temporary store removed" "" "$(ls -A "$T/tmp")"
# every writer's open meets a failed sync: nothing is answered, but the
# faults' handling was tested -- a PASS that says it is about that alone
TMPDIR=$T/tmp "$TORTURE" --kill-every 50ms --duration 1s --quiet \
	--fail fdatasync:EIO:p=1 >"$T/faulted.out" 2>&1
expect "a run whose every writer met a fault exits 0" 0 $?
contains "it says what its PASS is about" "$T/faulted.out" \
	'acknowledged nothing +every writer met an injected fault before its first answer \([1-9][0-9]* failed opens.*not about durability'

# ---- the positive control must be caught ----------------------------------
TMPDIR=$T/tmp "$TORTURE" --kill-every 50ms --duration 10s --quiet --seed 1 \
	--unsafe ack-before-commit --json "$T/fail.json" >"$T/fail.out" 2>&1
expect "ack-before-commit exits 1" 1 $?
contains "summary says FAIL" "$T/fail.out" '^torture: FAIL'
contains "first violation is a lost write" "$T/fail.out" \
	'first violation +cycle [0-9]+: lost: key'
contains "reproducer names the seed" "$T/fail.out" \
	'reproduce with .*torture .*--seed 1 .*--unsafe ack-before-commit'
contains "json says fail" "$T/fail.json" '"result": "fail"'
kept=$(sed -n 's/^ *"dir": "\(.*\)",$/\1/p' "$T/fail.json")
[ -n "$kept" ] && [ -s "$kept/torture.keel" ] && ok "failed store kept" ||
	bad "failed store not kept ($kept)"

# ---- bad input: exit 2, a message naming the problem, nothing touched -------
mkdir "$T/empty" "$T/foreign" "$T/notkeel"
echo "my notes" >"$T/foreign/notes.txt"
echo "not a store" >"$T/notkeel/torture.keel"
bad_input() { # bad_input NAME PATTERN ARGS...
	name=$1 pattern=$2
	shift 2
	TMPDIR=$T/empty "$TORTURE" "$@" >"$T/bad.out" 2>&1
	expect "$name exits 2" 2 $?
	contains "$name names the problem" "$T/bad.out" "$pattern"
}
bad_input "duration with an unknown unit" "--kill-every 50x:.*unit" --kill-every 50x
bad_input "duration in minutes spelt min" "--duration 5min" --duration 5min
bad_input "malformed duration" "--duration 3x" --duration 3x
bad_input "zero duration" "--kill-every 0ms" --kill-every 0ms
bad_input "negative duration" "--duration -1s" --duration -1s
bad_input "zero threads" "--threads 0" --threads 0
bad_input "negative keys" "--keys -5" --keys -5
bad_input "zero cycles" "--cycles 0" --cycles 0
bad_input "unknown flag" "unknown argument '--frobnicate'" --frobnicate
bad_input "missing value" "--seed needs" --seed
bad_input "fewer keys than threads" "--keys 2 is fewer" --keys 2 --threads 4
bad_input "values below the header" "--value-size 8-100.*at least 44" \
	--value-size 8-100
bad_input "values beyond the engine" "--value-size 64-3000000000.*engine" \
	--value-size 64-3000000000
bad_input "unknown unsafe mode" "unknown unsafe mode" --unsafe fast
bad_input "unwritable dir" "--dir /proc/keel-torture" \
	--dir /proc/keel-torture --cycles 1
bad_input "dir with foreign files" "holds 'notes.txt'" --dir "$T/foreign"
bad_input "dir with a non-store" "not a keel store" --dir "$T/notkeel"
bad_input "unwritable json" "--json /nonexistent/x.json" \
	--json /nonexistent/x.json
expect "nothing made in TMPDIR" "" "$(ls -A "$T/empty")"
expect "foreign dir untouched" "notes.txt" "$(ls -A "$T/foreign")"
expect "non-store untouched" "not a store" "$(cat "$T/notkeel/torture.keel")"

# ---- --dir: a store kept by one run is continued by the next ------------------
"$TORTURE" --dir "$T/keep" --cycles 5 --quiet >"$T/keep1.out" 2>&1
expect "run on a new --dir exits 0" 0 $?
[ -s "$T/keep/torture.keel" ] && ok "--dir store stays" || bad "--dir store gone"
"$TORTURE" --dir "$T/keep" --cycles 5 --quiet >"$T/keep2.out" 2>&1
expect "continuing a kept store exits 0" 0 $?
# A bare number is seconds, as for every keel tool.
"$TORTURE" --duration 1 --kill-every 0.05 --quiet --json "$T/bare.json" \
	>"$T/bare.out" 2>&1
expect "a bare --duration 1 runs" 0 $?
contains "bare numbers are seconds" "$T/bare.json" \
	'"reproducer": "--kill-every 50ms .*--duration 1s '
"$TORTURE" --help >"$T/help.out" 2>&1
expect "--help exits 0" 0 $?
contains "--help lists --kill-every" "$T/help.out" '--kill-every DUR'

echo "torture.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
