#!/bin/sh
# sim_rules.sh BUILD_DIR -- the fault simulator's rules end to end: for each
# rule of docs/faults.md that only unit tests held, a small workload
# (tests/shim/rules.c) whose verdict flips when the rule is broken, next to
# a control that differs only in doing the right thing.  Each "lost" case
# below PASSed under a simulator bug planted once to try the suite (a sync
# of one file settling every file; a directory sync under posix settling
# every directory; msync(MS_ASYNC) taken as durable; a mapped page's later
# stores unrecorded after its first flush; a dup of an adopted descriptor
# unfollowed; xfs taking a rename over a file as flushing its data; the
# xfs failed-sync profile keeping the data), scm-closeraw was a false
# alarm under another (an adopted descriptor not looked at again at its
# sync), and numbers a refused run under a third (the supervisor knowing a
# descriptor by its number alone).  Bounded: about a minute and a half.
set -u
B=${1:-build}
TORTURE=$B/torture
R=$B/shim-tests/rules
T=$(mktemp -d /tmp/keel-sim-rules.XXXXXX)
fails=0
checks=0
trap 'rm -rf "$T"' EXIT
mkdir "$T/tmp"
export TMPDIR="$T/tmp"

. "$(dirname "$0")/lib.sh"

# SIM_RULES_FAILFAST=1 (tests/mutants/sim.sh): stop at the first failure
failfast() { [ "${SIM_RULES_FAILFAST:-0}" = 0 ] || [ $fails -eq 0 ] || exit 1; }

LOST="cycle [0-9]+: lost: key \"(data|cfg)\""

# rule NAME WANT MODE ARGS...: torture --target exec over rules.c's MODE
# must exit WANT (1: with a lost key), under power cuts
rule() {
	name=$1 want=$2 mode=$3
	shift 3
	t0=$(date +%s)
	"$TORTURE" --target exec --quiet --power-loss --kill-every 200ms \
		--no-explain "$@" --workload "$R {dir} $mode" \
		--checker "$R {dir} --check" >"$T/$name.out" 2>&1
	rc=$?
	expect "$name exits $want ($(( $(date +%s) - t0 ))s)" "$want" $rc
	if [ "$rc" != "$want" ]; then
		tail -c 1500 "$T/$name.out"
	elif [ "$want" = 1 ]; then
		contains "$name loses a key" "$T/$name.out" "${LOSS:-$LOST}"
	fi
	rm -rf "$T"/tmp/keel-torture.*
	failfast
}

# a pass runs 3 s of lives; a loss stops at the first, within 10 s
for fe in shim supervisor; do
	# a file's sync covers that file (faults.md: "What a sync makes durable")
	rule "othersync-$fe" 1 othersync --front-end $fe --duration 10s --seed 1
	rule "othersync-ok-$fe" 0 othersync-ok --front-end $fe --duration 3s --seed 1
	# posix: a directory's sync covers its own entries only
	rule "subdir-$fe" 1 subdir --front-end $fe --fs posix --duration 10s --seed 2
	rule "subdir-ok-$fe" 0 subdir-ok --front-end $fe --fs posix --duration 3s --seed 2
	# a copy of an adopted descriptor is followed; an adopted one is looked
	# at again when it is synced (its number reused by opendir)
	# (its first violation may read as a phantom: once under make asan,
	# cycle 2 found "v4688", not named in that life; not explained yet)
	LOSS="cycle [0-9]+: (lost|phantom): key \"data\""
	rule "scm-dup-$fe" 1 scm-dup --front-end $fe --duration 10s --seed 3
	LOSS=
	rule "scm-closeraw-$fe" 0 scm-closeraw --front-end $fe --duration 3s --seed 3
	# a number closed and taken by another file between two writes to
	# data: the supervisor's table of descriptors (fds.c) sees the change
	rule "numbers-$fe" 0 numbers --front-end $fe --duration 3s --seed 7
done

# sync(2) settles every file and directory (faults.md): a shell saver whose
# only sync is coreutils' sync, after a rename, holds under both front ends
SYNC_W='i=0; while :; do i=$((i+1)); echo "intent $i k v$i" >&$KEEL_TORTURE_FD; echo v$i > {dir}/data.tmp; mv {dir}/data.tmp {dir}/data; sync; echo "ack $i" >&$KEEL_TORTURE_FD; done'
SYNC_C='sh -c "v=\$(cat {dir}/data 2>/dev/null); [ -z \"\$v\" ] || echo k \$v"'
for fe in shim supervisor; do
	"$TORTURE" --target exec --quiet --power-loss --kill-every 200ms \
		--no-explain --front-end $fe --fs posix --duration 3s --seed 9 \
		--workload "$SYNC_W" --checker "$SYNC_C" >"$T/sync-all-$fe.out" 2>&1
	rc=$?
	expect "sync-all-$fe exits 0" 0 $rc
	[ $rc = 0 ] || tail -c 1500 "$T/sync-all-$fe.out"
	rm -rf "$T"/tmp/keel-torture.*
	failfast
done

# btrfs's failed-sync profile writes a failed sync's pages back to what the
# device holds at once: a change the record explains, which neither front
# end's check may take for an unseen write (both refused every such run)
for fe in shim supervisor; do
	rule "btrfs-eio-$fe" 0 othersync-ok --front-end $fe --fs btrfs \
		--fail sync:EIO:p=0.2 --duration 3s --seed 8
	contains "btrfs-eio-$fe injected faults" "$T/btrfs-eio-$fe.out" \
		"faults injected +[1-9]"
done

# shared mappings (the shim alone follows them): MS_ASYNC makes nothing
# durable; a page flushed once is followed again
rule msync-async 1 msync-async --front-end shim --duration 10s --seed 4
rule msync-sync 0 msync-sync --front-end shim --duration 3s --seed 4
rule map-reflush 1 map-reflush --front-end shim --duration 10s --seed 5

# r3: ext4 flushes the data of a rename over a file; xfs and btrfs do not
rule rename-nosync-ext4 0 rename-nosync --fs ext4 --duration 3s --seed 6
rule rename-nosync-xfs 1 rename-nosync --fs xfs --duration 10s --seed 6
rule rename-nosync-btrfs 1 rename-nosync --fs btrfs --duration 10s --seed 6

# the xfs failed-sync profile: the pages are marked clean and the data
# lost, so a writer that retries fdatasync and carries on loses writes
# (the engine's --unsafe retry-fsync); the same faults with the engine's
# own handling pass
for s in 1 2; do
	"$TORTURE" --quiet --kill-every 50ms --duration 10s --seed $s \
		--fail fdatasync:EIO --fsync-profile xfs --unsafe retry-fsync \
		>"$T/xfs-eio-$s.out" 2>&1
	expect "xfs-eio-retry-$s caught (exit 1)" 1 $?
	failfast
done
"$TORTURE" --quiet --kill-every 50ms --duration 3s --seed 1 \
	--fail fdatasync:EIO --fsync-profile xfs >"$T/xfs-eio-ok.out" 2>&1
expect "xfs-eio-ok passes" 0 $?

echo "sim_rules.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
