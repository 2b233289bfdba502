#!/bin/bash
# torture_long.sh BUILD_DIR [OUT_DIR] -- long runs of every torture mode, and
# the positive controls, with a table of what each run did.
#
# Not part of `make test` (it takes the better part of an hour): this is the
# evidence behind docs/results/torture.md.  Every mode runs
# for DUR (default 5m, any duration torture accepts) with its own seed, PAR of
# them at once (default 2); every control runs for up to CTRL_DUR (default
# 10s) and must fail (exit 1) with a violation.  ONLY (an extended regular
# expression) picks modes by name; KILL replaces the 50ms kill period of the
# modes that use it (on a loaded machine a writer's open takes a good part of
# 50 ms, and the runs then acknowledge few writes).  Each run's JSON and output
# stay in OUT_DIR (default a fresh $TMPDIR/keel-torture-long.XXXXXX); the
# table goes to OUT_DIR/table.md, standard output and the "long-runs" section
# of docs/results/torture.md (bench/results.sh: with the command, the machine
# and the commit; a rerun replaces it).  Exit 0 only when every mode passed
# and every control was caught.
#
#   DUR=10m PAR=3 bash tests/torture_long.sh build /tmp/long
set -u
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../docs/results}
. "$(dirname "$0")/../bench/results.sh"
results_begin "bash $0" "$@"
results_env DUR CTRL_DUR ONLY KILL PAR SEED TMPDIR
B=${1:-build}
OUT=${2:-$(mktemp -d "${TMPDIR:-/tmp}/keel-torture-long.XXXXXX")}
DUR=${DUR:-5m}
CTRL_DUR=${CTRL_DUR:-10s}
ONLY=${ONLY:-.}
KILL=${KILL:-50ms}
PAR=${PAR:-2}
SEED=${SEED:-$(date +%s)}
TORTURE=$B/torture
[ -x "$TORTURE" ] || { echo "torture_long.sh: no $TORTURE (make first)" >&2; exit 2; }
case $PAR in '' | *[!0-9]* | 0) echo "torture_long.sh: PAR must be a count" >&2; exit 2 ;; esac
mkdir -p "$OUT" || exit 2

. "$(dirname "$0")/lib.sh"

# name|must (pass, fail, or loop: pass, run after run)|flags.  The modes of issue 20, item 3: kills,
# power loss in every device model, fsync failures under each profile,
# --cache-lives, --enumerate, --compact-every, --grow-step, --target http;
# and the ones added since (mixed schedules with readers, bit rot, inline
# values with the largest checkpoint bound).
MODES='kills|pass|--kill-every 50ms
power-ordered|pass|--kill-every 50ms --power-loss --device ordered
power-reorder|pass|--kill-every 50ms --power-loss --device reorder
power-torn|pass|--kill-every 50ms --power-loss --device torn
power-torn-4k|pass|--kill-every 50ms --power-loss --device torn --sector 4096
power-garbage-4k|pass|--kill-every 50ms --power-loss --device garbage --sector 4096
power-payload|pass|--kill-every 50ms --power-loss --device payload
fsync-ext4|pass|--kill-every 50ms --fail fdatasync:EIO:p=0.05 --fsync-profile ext4
fsync-xfs|pass|--kill-every 50ms --fail fdatasync:EIO:p=0.05 --fsync-profile xfs --power-loss
fsync-btrfs|pass|--kill-every 50ms --fail fdatasync:EIO:p=0.05 --fsync-profile btrfs
cache-lives|pass|--kill-every 50ms --fail fdatasync:EIO:p=0.05 --fsync-profile ext4 --cache-lives
crash-on-failed-sync|pass|--kill-every 50ms --fail fdatasync:EIO:p=0.05 --cache-lives --crash-on-failed-sync
enospc|pass|--kill-every 50ms --fail pwrite:ENOSPC:p=0.02
enumerate-reorder|loop|--enumerate --device reorder
enumerate-torn-4k|loop|--enumerate --device torn --sector 4096
compact-every|pass|--kill-every 50ms --compact-every 20ms --power-loss --device reorder
grow-step|pass|--kill-every 50ms --grow-step 1 --power-loss
mixed-readers|pass|--kill-every 50ms --mixed 50 --readers 2 --snapshots
bit-rot|pass|--kill-every 200ms --bit-rot --readers 1
inline-ckpt4m|pass|--kill-every 300ms --value-size 44-64 --checkpoint-kib 4096 --power-loss --device reorder
target-http|pass|--target http --kill-every 200ms
target-http-h2-tls|pass|--target http --http-tls --http2 --kill-every 200ms
ctl-ack-before-commit|fail|--kill-every 50ms --unsafe ack-before-commit
ctl-no-sync|fail|--kill-every 50ms --unsafe no-sync --power-loss
ctl-trust-head|fail|--kill-every 50ms --unsafe trust-head --power-loss --device reorder
ctl-retry-fsync|fail|--kill-every 50ms --unsafe retry-fsync --fail fdatasync:EIO --fsync-profile ext4
ctl-ckpt-drop|fail|--kill-every 50ms --unsafe ckpt-drop'
MODES=$(echo "$MODES" | grep -E "^($ONLY)[^|]*\|" | sed "/|pass|/s/--kill-every 50ms/--kill-every $KILL/")
[ -n "$MODES" ] || { echo "torture_long.sh: ONLY matches no mode" >&2; exit 2; }

secs() { # secs DUR: torture's durations in whole seconds (s, m, h or bare)
	case $1 in
	*h) echo $((${1%h} * 3600)) ;; *m) echo $((${1%m} * 60)) ;;
	*ms) echo $(((${1%ms} + 999) / 1000)) ;; *s) echo "${1%s}" ;;
	*) echo "$1" ;;
	esac
}

# run NAME MUST SEED FLAGS: one torture run; writes NAME.json, NAME.out,
# NAME.rc.  MUST "loop" (--enumerate, whose runs end by themselves): one run
# after another, a new seed each, until DUR is spent; NAME.json then sums them.
run() {
	r_name=$1 r_must=$2 r_seed=$3
	shift 3
	if [ "$r_must" = loop ]; then
		r_end=$(($(date +%s) + $(secs "$DUR")))
		r_k=0 r_rc=0
		while [ "$(date +%s)" -lt $r_end ] && [ $r_rc = 0 ]; do
			r_k=$((r_k + 1))
			# shellcheck disable=SC2086 # FLAGS are words
			"$TORTURE" --quiet --duration "$DUR" --seed $((r_seed * 1000 + r_k)) \
				--json "$OUT/$r_name.$r_k.json" $* >>"$OUT/$r_name.out" 2>&1
			r_rc=$?
		done
		for f in elapsed_s cycles acked_writes power_cuts crash_states faults_fired lost phantom holes order structure_errors; do
			printf '  "%s": %s,\n' $f "$(for j in "$OUT/$r_name".*.json; do json_num "$j" $f; done | awk '{s += $1} END {print s + 0}')"
		done >"$OUT/$r_name.json"
		printf '  "seed": %s,\n  "runs": %s,\n' $((r_seed * 1000 + 1)) $r_k >>"$OUT/$r_name.json"
		echo $r_rc >"$OUT/$r_name.rc"
		return
	fi
	if [ "$r_must" = fail ]; then r_dur=$CTRL_DUR; else r_dur=$DUR; fi
	# shellcheck disable=SC2086 # FLAGS are words
	"$TORTURE" --quiet --duration "$r_dur" --seed "$r_seed" \
		--json "$OUT/$r_name.json" $* >"$OUT/$r_name.out" 2>&1
	echo $? >"$OUT/$r_name.rc"
}

start=$(date -u '+%Y-%m-%d %H:%M UTC')
n=0
running=0
echo "$MODES" | {
	while IFS='|' read -r name must flags; do
		n=$((n + 1))
		run "$name" "$must" $((SEED + n)) $flags &
		running=$((running + 1))
		if [ $running -ge "$PAR" ]; then
			wait -n
			running=$((running - 1))
		fi
	done
	wait
}

fails=0
{
	echo "Long torture runs, $start, $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo '?'), DUR=$DUR (controls up to $CTRL_DUR), PAR=$PAR, KILL=$KILL, load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	echo
	echo "| mode | must | result | s | cycles | acknowledged | power cuts | crash states | faults | violations | seed |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|"
} >"$OUT/table.md"
echo "$MODES" | while IFS='|' read -r name must flags; do
	j=$OUT/$name.json
	rc=$(cat "$OUT/$name.rc" 2>/dev/null || echo none)
	v="lost $(json_num "$j" lost) phantom $(json_num "$j" phantom) hole $(json_num "$j" holes) order $(json_num "$j" order) structure $(json_num "$j" structure_errors)"
	if [ "$must" != fail ] && [ "$rc" = 0 ]; then res=pass
	elif [ "$must" = fail ] && [ "$rc" = 1 ]; then res=caught
	else res="WRONG (exit $rc)"; fi
	echo "| \`$name\` | $must | $res | $(json_num "$j" elapsed_s) | $(json_num "$j" cycles) | $(json_num "$j" acked_writes) | $(json_num "$j" power_cuts) | $(json_num "$j" crash_states) | $(json_num "$j" faults_fired) | $v | $(json_num "$j" seed) |"
done >>"$OUT/table.md"
cat "$OUT/table.md"
{
	echo "Every mode runs for DUR=$DUR with its own seed, $PAR at once, and must pass"
	echo "(\`loop\`: --enumerate, run after run until DUR is spent); every control (\`ctl-\`)"
	echo "runs for up to $CTRL_DUR with a deliberately unsafe writer and must be caught."
	echo "Kill period of the modes that pass: $KILL.  The flags of each mode are in"
	echo "\`tests/torture_long.sh\`."
	echo
	sed '1,2d' "$OUT/table.md"
} >"$OUT/section.md"
results_write torture long-runs "torture: cycles a second, by fault model" \
	"${TMPDIR:-/tmp}" "$OUT/section.md" \
	"The machine was shared with other builds and tests while this ran: the counts say what each run did, not how fast this kit is."
grep -q 'WRONG' "$OUT/table.md" && fails=1
echo "runs, JSON and output: $OUT"
exit $fails
