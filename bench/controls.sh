#!/bin/sh
# bench/controls.sh [BUILD [SEEDS [SAFE]]] -- the torture harness's positive
# controls over many seeds, written to docs/results/torture.md (section
# "controls", bench/results.sh).
#
# Each control (docs/torture.md, "Why it holds") plants a known durability
# bug; it runs on seeds 1..SEEDS (default 100) with `--kill-every 50ms
# --duration DUR --quiet --seed S`, and every run must exit 1 (caught).  The
# same flags without `--unsafe` then run on seeds 1..SAFE (default 20), and
# every one must exit 0.  The table gives how many were caught, the slowest
# catch (seconds into the run and its cycle, from --json) and the safe runs
# that passed.  A control with a run not caught, or a safe run that failed,
# makes the script exit 1 (after the page is written).
#
#   bench/controls.sh build              # DUR=10s: about 20 minutes
#   DUR=3s bench/controls.sh build 20 2  # a short look, under two minutes
#
# Environment: DUR (each run's --duration, default 10s), TMPDIR.
set -u

cd "$(dirname "$0")/.."
. bench/results.sh
results_begin "$0" "$@"
results_env DUR TMPDIR
B=${1:-build}
SEEDS=${2:-100}
SAFE=${3:-20}
DUR=${DUR:-10s}
T=$(mktemp -d "${TMPDIR:-/tmp}/keel-controls.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM

# NAME|UNSAFE FLAGS|THE OTHER FLAGS|what is wrong
CONTROLS='ack-before-commit|--unsafe ack-before-commit||the writer acknowledges, then commits
no-sync|--unsafe no-sync|--power-loss|commits skip their sync
trust-head|--unsafe trust-head|--power-loss --device reorder|recovery trusts the newest head without checking its region
retry-fsync|--unsafe retry-fsync|--fail fdatasync:EIO --fsync-profile ext4|after a failed sync the engine retries and acknowledges
ckpt-drop|--unsafe ckpt-drop||a checkpoint leaves out the key of the oldest pending change'

json_num() { sed -n "s/.*\"$2\": *\\([0-9.]*\\).*/\\1/p" "$1" | head -n 1; }

# one RC_WANTED SEED FLAGS... -- one run; prints "ok SECONDS CYCLES" or "bad"
one() {
	o_want=$1 o_seed=$2
	shift 2
	rm -f "$T/run.json"
	"$B/torture" --kill-every 50ms --duration "$DUR" --quiet --seed "$o_seed" \
		--json "$T/run.json" "$@" >"$T/run.out" 2>&1
	o_rc=$?
	if [ "$o_rc" != "$o_want" ]; then
		echo "controls: seed $o_seed, $*: exit $o_rc, wanted $o_want" >&2
		tail -n 3 "$T/run.out" >&2
		echo bad
		return
	fi
	echo "ok $(json_num "$T/run.json" elapsed_s) $(json_num "$T/run.json" cycles)"
}

{
	echo "Each control: \`$B/torture --kill-every 50ms --duration $DUR --quiet --seed S FLAGS\`"
	echo "for S in 1..$SEEDS, each run must exit 1; then FLAGS without \`--unsafe\` for"
	echo "S in 1..$SAFE, each must exit 0.  \`slowest catch\`: seconds into the run and"
	echo "the cycle, of the run that took longest to be caught."
	echo
	echo "| control | what is wrong | caught | slowest catch | safe runs, same flags |"
	echo "|---|---|---|---|---|"
} >"$T/section.md"
echo "$CONTROLS" | while IFS='|' read -r name unsafe flags what; do
	caught=0 slow=0 slow_cycle=-
	for s in $(seq 1 "$SEEDS"); do
		# shellcheck disable=SC2086 # FLAGS are words
		set -- $(one 1 "$s" $unsafe $flags)
		[ "$1" = ok ] || continue
		caught=$((caught + 1))
		if awk -v a="$2" -v b="$slow" 'BEGIN { exit !(a + 0 > b + 0) }'; then
			slow=$2 slow_cycle=$3
		fi
	done
	passed=0
	for s in $(seq 1 "$SAFE"); do
		# shellcheck disable=SC2086
		set -- $(one 0 "$s" $flags)
		[ "$1" = ok ] && passed=$((passed + 1))
	done
	echo "| \`$unsafe${flags:+ $flags}\` | $what | **$caught/$SEEDS** | $slow s (cycle $slow_cycle) | $passed/$SAFE pass |" >>"$T/section.md"
	[ "$caught" = "$SEEDS" ] && [ "$passed" = "$SAFE" ] || echo "$name" >>"$T/failed"
done
cat "$T/section.md"
results_write torture controls "torture: cycles a second, by fault model" \
	"${TMPDIR:-/tmp}" "$T/section.md"
if [ -s "$T/failed" ]; then
	echo "controls: not all caught, or a safe run failed: $(cat "$T/failed")" >&2
	exit 1
fi
