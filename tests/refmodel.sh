#!/bin/sh
# refmodel.sh BUILD_DIR [N] [SEEDS] -- the fault simulator against a
# reference model written apart from it (tests/refmodel/model.py, the rules
# of docs/faults.md; tests/refmodel/driver.c, the simulator's side).  Every
# workload of 1..N operations (default 3: 1,110 workloads) over two files --
# overlapping pwrites, truncates, fsync, fdatasync -- is crashed under the ordered,
# reorder and torn devices with SEEDS seeds each (default 32): every state the
# simulator leaves must be one the rules allow (soundness), and every state
# the rules allow must be left by some seed where there are at most four
# (completeness).  The check is shown to fail first, on a state no rule
# allows planted in the simulator's output.  A few seconds on a tmpfs
# (/dev/shm where there is one).  A longer run: N=4 (11,110 workloads).
# Then names under the file system models (tests/refmodel/names.py, below:
# a sample, every workload with REFMODEL_NAMES=all), and the data check
# through the front ends (tests/refmodel/ops.c under torture --target exec
# --front-end supervisor|shim, below) and names through them (posix and
# btrfs): a sample in about 25 s, more with REFMODEL_FRONT_ENDS=all.
set -u
B=${1:-build}
N=${2:-3}
SEEDS=${3:-32}
fails=0
checks=0
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
T=$(mktemp -d "$base/keel-refmodel.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir "$T/dir"

. "$(dirname "$0")/lib.sh"

# the libraries of a sanitizer build (make asan) need the sanitizers' runtime
SAN=
if nm "$B/libkeel.a" 2>/dev/null | grep -q __asan_; then
	SAN="-fsanitize=address,undefined"
fi
cc -std=gnu11 -O1 -Wall -Wextra -Werror -D_GNU_SOURCE $SAN -Ibase -Iengine \
	-Ifaultsim -o "$T/driver" tests/refmodel/driver.c \
	"$B/libkeel-faultsim.a" "$B/libkeel.a" -lfiu -lpthread -lm \
	>"$T/cc.out" 2>&1
expect "the driver builds" 0 $?
[ -x "$T/driver" ] || { cat "$T/cc.out"; exit 1; }

# under the sanitizers (make asan) the simulator runs several times slower:
# every workload of up to two ops and every 10th of more, the same rules
# (make test runs them all)
if [ -n "$SAN" ]; then
	python3 tests/refmodel/model.py gen "$N" |
		awk 'NF <= 2 || NR % 10 == 0' >"$T/workloads"
else
	python3 tests/refmodel/model.py gen "$N" >"$T/workloads"
fi
t0=$(date +%s)
"$T/driver" "$T/dir" "$SEEDS" <"$T/workloads" >"$T/states"
expect "the simulator crashes every workload" 0 $?

# the check can fail: a synced write turned back into its pre-image
sed '0,/^Wa0 Sa|ordered|0|a=A/s/^\(Wa0 Sa|ordered|0|\)a=A*/\1a=iiiiiiii/' \
	"$T/states" >"$T/planted"
python3 tests/refmodel/model.py check "$SEEDS" <"$T/planted" >"$T/planted.out" 2>&1
expect "a planted state no rule allows is caught" 1 $?
contains "... and named with its workload" "$T/planted.out" \
	"the shortest: workload 'Wa0 Sa', device ordered: soundness"

# ... and under torn, where each sector is judged alone: one sector of a
# synced write back to its pre-image
sed '0,/^Wa0 Sa|torn|0|a=A/s/^\(Wa0 Sa|torn|0|a=\)A/\1i/' \
	"$T/states" >"$T/planted-torn"
python3 tests/refmodel/model.py check "$SEEDS" <"$T/planted-torn" \
	>"$T/planted-torn.out" 2>&1
expect "a planted torn sector no rule allows is caught" 1 $?
contains "... and named" "$T/planted-torn.out" \
	"the shortest: workload 'Wa0 Sa', device torn: soundness"

python3 tests/refmodel/model.py check "$SEEDS" <"$T/states" >"$T/check.out" 2>&1
rc=$?
cat "$T/check.out"
expect "the simulator agrees with the model ($(( $(date +%s) - t0 ))s)" 0 $rc

# ---- the extended alphabet ---------------------------------------------------
# model.py gen-ext: O_SYNC writes, writes through a dup, stores through a
# shared mapping with msync(MS_SYNC) and MS_ASYNC, syncfs, and a failed
# fsync under each profile (ext4, xfs, btrfs, keep), with the first ops
# that meet them.  Bounded: every workload of up to two ops and every 40th
# of three (about 300); REFMODEL_EXT=all: every workload of three (3,969).
if [ "${REFMODEL_EXT:-}" = all ]; then
	python3 tests/refmodel/model.py gen-ext 3 >"$T/ext"
else
	python3 tests/refmodel/model.py gen-ext 3 $([ -n "$SAN" ] && echo 200 || echo 40) >"$T/ext"
fi
t0=$(date +%s)
rcs=
"$T/driver" "$T/dir" "$SEEDS" <"$T/ext" >"$T/ext.states" || rcs=" ext4:$?"
for p in xfs btrfs keep; do
	grep 'E' "$T/ext" | "$T/driver" "$T/dir" "$SEEDS" --profile $p \
		>>"$T/ext.states" || rcs="$rcs $p:$?"
done
expect "the simulator crashes every workload of the extended alphabet" "" "$rcs"
python3 tests/refmodel/model.py check "$SEEDS" <"$T/ext.states" >"$T/ext.out" 2>&1
rc=$?
cat "$T/ext.out"
expect "the simulator agrees with the model on them ($(wc -l <"$T/ext") workloads, $(( $(date +%s) - t0 ))s)" 0 $rc

# it can fail: an O_SYNC write lost (R-osync) ...
sed '0,/^Oa0|reorder|0|a=A/s/^\(Oa0|reorder|0|a=\)A*/\1iiiiiiii/' \
	"$T/ext.states" >"$T/planted-ext"
python3 tests/refmodel/model.py check "$SEEDS" <"$T/planted-ext" \
	>"$T/planted-ext.out" 2>&1
expect "a planted lost O_SYNC write is caught" 1 $?
contains "... and named" "$T/planted-ext.out" \
	"the shortest: workload 'Oa0', device reorder: soundness"
# ... and a write a failed fsync lost under xfs, kept (R-fail)
sed '/^Wa0 Ea|reorder|0|.*|p=xfs$/s/^\(Wa0 Ea|reorder|0|a=\)i*/\1AAAAAAAAiiiiiiii/' \
	"$T/ext.states" >"$T/planted-fail"
python3 tests/refmodel/model.py check "$SEEDS" <"$T/planted-fail" \
	>"$T/planted-fail.out" 2>&1
expect "a planted write kept past a failed fsync is caught" 1 $?
contains "... and named" "$T/planted-fail.out" \
	"the shortest: workload 'Wa0 Ea', device reorder, profile xfs: soundness"

# ---- the sizes' alphabet -------------------------------------------------------
# model.py gen-size: O_APPEND writes (Pf: at the end the program sees, after
# an unsynced truncate or append), fallocate growing the file (Gf), with
# FALLOC_FL_KEEP_SIZE (Hf: nothing), a punched hole (Zf: zeros, clipped at
# the size), a write through dup2 over a descriptor open on the other file
# (Ba1) and through one passed with SCM_RIGHTS (Ra1), with writes,
# truncates, syncs and a failed fsync (Ea, also under xfs, btrfs, keep);
# under ordered, reorder and torn (sizes judged too: R-torn per sector),
# and garbage and payload.  Bounded: every workload of one op, every 5th
# of two, every 300th of three (50; under the sanitizers every 15th and
# every 1500th), garbage and payload on every other one of up to two ops
# with an append or a hole; REFMODEL_EXT=all: every workload of up to
# three (3,031), every device.
python3 tests/refmodel/model.py gen-size 3 >"$T/size.all"
if [ "${REFMODEL_EXT:-}" = all ]; then
	cp "$T/size.all" "$T/size"
	cp "$T/size.all" "$T/size.gp"
else
	k2=5 k3=300
	[ -z "$SAN" ] || k2=15 k3=1500
	awk -v k2=$k2 -v k3=$k3 \
		'NF == 1 || (NF == 2 && NR % k2 == 0) || NR % k3 == 0' \
		"$T/size.all" >"$T/size"
	grep -e P -e Z "$T/size" | awk 'NF <= 2 && NR % 2 == 1' >"$T/size.gp"
fi
t0=$(date +%s)
rcs=
"$T/driver" "$T/dir" "$SEEDS" <"$T/size" >"$T/size.states" || rcs=" ext4:$?"
"$T/driver" "$T/dir" "$SEEDS" --devices garbage,payload <"$T/size.gp" \
	>>"$T/size.states" || rcs="$rcs garbage,payload:$?"
for p in xfs btrfs keep; do
	grep 'E' "$T/size" | "$T/driver" "$T/dir" "$SEEDS" --profile $p \
		>>"$T/size.states" || rcs="$rcs $p:$?"
done
expect "the simulator crashes every workload of the sizes' alphabet" "" "$rcs"
python3 tests/refmodel/model.py check "$SEEDS" <"$T/size.states" >"$T/size.out" 2>&1
rc=$?
cat "$T/size.out"
expect "the simulator agrees with the model on them ($(wc -l <"$T/size") workloads, $(( $(date +%s) - t0 ))s)" 0 $rc

# FALLOC_FL_ZERO_RANGE (Qa, model.py gen-zero: a write of zeros that may
# grow the file): tmpfs refuses it, so with REFMODEL_EXT=all only, in a
# directory of ${TMPDIR:-/tmp} where it works (on a disk each sync is real:
# about a second a workload), every workload of up to two ops holding it
# (32) under every device
if [ "${REFMODEL_EXT:-}" = all ]; then
	Z=$(mktemp -d "${TMPDIR:-/tmp}/keel-refmodel-zero.XXXXXX")
	if : >"$Z/probe" && fallocate -z -l 4096 "$Z/probe" 2>/dev/null; then
		mkdir "$Z/dir"
		python3 tests/refmodel/model.py gen-zero 2 >"$T/zero"
		t0=$(date +%s)
		"$T/driver" "$Z/dir" "$SEEDS" \
			--devices ordered,reorder,torn,garbage,payload \
			<"$T/zero" >"$T/zero.states"
		expect "the simulator crashes every workload of ZERO_RANGE" 0 $?
		python3 tests/refmodel/model.py check "$SEEDS" \
			<"$T/zero.states" >"$T/zero.out" 2>&1
		rc=$?
		cat "$T/zero.out"
		expect "the simulator agrees with the model on them ($(wc -l <"$T/zero") workloads, $(( $(date +%s) - t0 ))s)" 0 $rc
	else
		echo "refmodel.sh: ZERO_RANGE skipped: $Z refuses fallocate -z"
	fi
	rm -rf "$Z"
fi

# it can fail, each state planted beside what the simulator left of its
# workload: an append after an unsynced truncate put where the file ended
# before it (R-append); an append torn with the size grown over its lost
# end (R-torn's size: only a piece that persists moves it); a fallocate
# that cut an append short (R-grow: the bug
# test_a_kept_extension_never_shrinks_the_file pins); a punched hole of two
# sectors torn under payload (R-payload: the bug
# test_payload_keeps_a_short_write_whole_or_not pins); random bytes in a
# synced sector under garbage (R-garbage)
printf 'Ta Pa\nPa\nPa Ta Ga\n' | "$T/driver" "$T/dir" "$SEEDS" >"$T/planted-size.real"
printf 'Ta Za\nWa0 Sa Pb\n' | "$T/driver" "$T/dir" "$SEEDS" \
	--devices payload,garbage >>"$T/planted-size.real"
planted=0
for line in 'Ta Pa|reorder|0|a=iiiiiiiiiiiiiiiiBBBBBBBB|b=iiiiiiiiiiiiiiii' \
	'Pa|torn|0|a=iiiiiiiiiiiiiiiiAAAAAA00|b=iiiiiiiiiiiiiiii' \
	'Pa Ta Ga|reorder|0|a=iiiiiiiiiiiiiiiiAAAA|b=iiiiiiiiiiiiiiii' \
	'Ta Za|payload|0|a=iiiiii0i|b=iiiiiiiiiiiiiiii' \
	'Wa0 Sa Pb|garbage|0|a=?AAAAAAAiiiiiiii|b=iiiiiiiiiiiiiiii'; do
	{ cat "$T/planted-size.real"; printf '%s\n' "$line"; } |
		python3 tests/refmodel/model.py check "$SEEDS" \
		>"$T/planted-size.out" 2>&1
	[ $? -eq 1 ] && grep -q "the shortest: workload '${line%%|*}', device [a-z]*: soundness" \
		"$T/planted-size.out" && planted=$((planted + 1))
done
expect "each planted state of the sizes' alphabet is caught" 5 $planted

# ---- names under the --fs models --------------------------------------------
# names.py's workloads -- creates, renames over a name and not, unlinks,
# links, mkdir, file and directory fsyncs, over a and b in DIR and c in
# DIR/s -- through the driver under each file system model (posix, ext4,
# ext4-writeback, xfs, btrfs), SEEDS seeds per device.  Bounded here:
# every workload of up to two ops and every 20th of three (159 workloads);
# REFMODEL_NAMES=all: all 1,118 of up to three (about five minutes).
python3 tests/refmodel/names.py gen 3 >"$T/names.all"
if [ "${REFMODEL_NAMES:-}" = all ]; then
	cp "$T/names.all" "$T/names"
else
	awk 'NF <= 2 || NR % 20 == 0' "$T/names.all" >"$T/names"
fi
t0=$(date +%s)
rcs=
for fs in posix ext4 ext4-writeback xfs btrfs; do
	"$T/driver" "$T/dir" "$SEEDS" --names $fs <"$T/names" \
		>>"$T/names.states" || rcs="$rcs $fs:$?"
done
expect "the simulator crashes every workload of names" "" "$rcs"
python3 tests/refmodel/names.py check "$SEEDS" <"$T/names.states" \
	>"$T/names.out" 2>&1
rc=$?
cat "$T/names.out"
expect "the simulator agrees with the model of names ($(wc -l <"$T/names") workloads, $(( $(date +%s) - t0 ))s)" 0 $rc

# it can fail: under ext4 a fsynced new file loses its name (r1)
sed '0,/^Cb Fb|ext4|ordered|0|/s/^\(Cb Fb|ext4|ordered|0|a=i|b=\)A/\1-/' \
	"$T/names.states" >"$T/planted-names"
python3 tests/refmodel/names.py check "$SEEDS" <"$T/planted-names" \
	>"$T/planted-names.out" 2>&1
expect "a planted lost name is caught" 1 $?
contains "... and named" "$T/planted-names.out" \
	"the shortest: workload 'Cb Fb', --fs ext4, device ordered: soundness"

# ---- the front ends ---------------------------------------------------------
# The same workloads as a program (tests/refmodel/ops.c) under torture
# --target exec, through the supervisor and through the shim: the calls are
# the program's real system calls, recorded by the front end, and the states
# are those torture's power cuts leave (--power-loss; the workload ends
# before its kill).  A batch of workloads, each on its own two files, is
# crashed at once, SEEDS cuts per device; under ordered model.py judges a
# batch's cut as one.  Bounded here: every 15th workload through the
# supervisor, every 60th (others) through the shim, about 15 s;
# REFMODEL_FRONT_ENDS=all runs every workload through both (several minutes).
cc -std=gnu11 -O1 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$T/ops" \
	tests/refmodel/ops.c >"$T/cc-ops.out" 2>&1
expect "the front ends' workload program builds" 0 $?
front_end() { # front_end FE EVERY FIRST [WORKLOADS TAG]
	fe=$1 src=${4:-$T/workloads} tag=${5:-$1}
	if [ "${REFMODEL_FRONT_ENDS:-}" = all ]; then
		cp "$src" "$T/$tag.list"
	else
		awk -v k="$2" -v f="$3" 'NR % k == f' "$src" >"$T/$tag.list"
	fi
	rm -f "$T/$tag.batch."*
	split -l 200 -d -a 3 "$T/$tag.list" "$T/$tag.batch."
	t0=$(date +%s)
	rcs=
	for list in "$T/$tag.batch."*; do
		batch=${list##*.}
		for dev in ordered reorder torn; do
			TMPDIR=$T "$B/torture" --target exec --quiet --power-loss \
				--front-end "$fe" --device $dev --sector 512 \
				--kill-every 60s --cycles "$SEEDS" --seed 1 \
				--no-explain --workload "$T/ops {dir} $list" \
				--checker "$T/ops {dir} --check $list $dev $batch $T/$tag.states" \
				>"$T/$tag.out" 2>&1 || { rcs="$rcs $?"; cat "$T/$tag.out"; }
		done
	done
	expect "torture crashes them through the $fe ($tag)" "" "$rcs"
	python3 tests/refmodel/model.py check "$SEEDS" <"$T/$tag.states" \
		>"$T/$tag.check" 2>&1
	rc=$?
	cat "$T/$tag.check"
	n=$(wc -l <"$T/$tag.list")
	el=$(( $(date +%s) - t0 ))
	expect "the $fe agrees with the model ($tag: $n workloads, ${el}s)" 0 $rc
}
front_end supervisor 15 1
front_end shim 60 6
# the extended alphabet through them: O_SYNC writes on a write-only
# descriptor of their own, writes through a dup, and (the shim only: the
# supervisor refuses shared writable mappings) stores through a mapping with
# msync(MS_SYNC) and MS_ASYNC; every workload of up to two ops but Y and Ef
# (a syncfs would sync the whole batch; a failed fsync needs --fail), and
# a store again after each kind of flush point (a page made read-only
# again must fault again: the planted mutant 04 leaves it writable, and
# the second store's bytes are found unrecorded).  Bounded: every 4th
# through the shim, every 3rd through the supervisor
python3 tests/refmodel/model.py gen-ext 2 | grep -v -e Y -e E >"$T/ext.fe"
grep -v -e M -e X -e A "$T/ext.fe" >"$T/ext.sup"
every=4
[ "${REFMODEL_FRONT_ENDS:-}" != all ] || every=1
# (and, bounded, a sample of the sizes' alphabet below in the same batch:
# a cut's own cost dominates)
python3 tests/refmodel/model.py gen-size 2 | grep -v E >"$T/size.fe"
{ awk -v k=$every 'NR % k == 1 % k' "$T/ext.fe"
  printf 'Ma Sa Ma\nMa Xa Ma\nMa Wa1 Ma\nMa Aa Ma\n'
  if [ "${REFMODEL_FRONT_ENDS:-}" != all ]; then
	awk 'NR % 8 == 0' "$T/size.fe"
	printf 'Pa Ta Ga\nTa Pa Sa\nBa1 Sb Pa\nRa1 Pa Sa\n'
  fi; } >"$T/ext.fe.sample"
front_end shim 1 0 "$T/ext.fe.sample" shim-ext
front_end supervisor 3 0 "$T/ext.sup" supervisor-ext

# The sizes' alphabet through them (all but Ea, which needs --fail): the
# append through a write-only O_APPEND descriptor, fallocate's three
# modes, dup2 over a descriptor on the other file, and a descriptor passed
# with SCM_RIGHTS to a forked child that writes through it -- its writes
# recorded and judged like any other.  Two ways: the power cut after the
# batch (--power-loss, as above), and --enumerate, a crash after each of
# the batch's calls in turn (ops.c's LOG says which op each workload had
# reached; the one cut short is judged with and without the op it was
# in), batches of 6 as every call of the durable start is a crash point
# too.  Bounded: every 8th workload of up to two ops and a few of three
# through the shim, cut after the batch, under ordered, reorder and torn
# (in the batch of the extended alphabet's, above); three through the
# supervisor under --enumerate, reorder (about 2 s).
# REFMODEL_FRONT_ENDS=all: every workload of up to two ops through both
# front ends, cut after the batch under all five devices, and under
# --enumerate under ordered, reorder and torn (several minutes).
size_front_end() { # size_front_end FE LIST TAG DEVICES [enumerate]
	fe=$1 src=$2 tag=$3
	rm -f "$T/$tag.batch."* "$T/$tag.states"
	split -l $([ -n "${5:-}" ] && echo 6 || echo 200) -d -a 3 "$src" \
		"$T/$tag.batch."
	t0=$(date +%s)
	rcs=
	for list in "$T/$tag.batch."*; do
		batch=${list##*.}
		for dev in $4; do
			if [ -n "${5:-}" ]; then
				how="--enumerate" log=" $T/$tag.log"
			else
				how="--power-loss --kill-every 60s --cycles $SEEDS" log=
			fi
			TMPDIR=$T "$B/torture" --target exec --quiet $how \
				--front-end "$fe" --device $dev --sector 512 \
				--seed 1 --no-explain \
				--workload "$T/ops {dir} $list$log" \
				--checker "$T/ops {dir} --check $list $dev $batch $T/$tag.states$log" \
				>"$T/$tag.out" 2>&1 || { rcs="$rcs $?"; cat "$T/$tag.out"; }
		done
	done
	expect "torture crashes them through the $fe ($tag)" "" "$rcs"
	python3 tests/refmodel/model.py check "$SEEDS" <"$T/$tag.states" \
		>"$T/$tag.check" 2>&1
	rc=$?
	cat "$T/$tag.check"
	n=$(wc -l <"$src")
	el=$(( $(date +%s) - t0 ))
	expect "the $fe agrees with the model ($tag: $n workloads, ${el}s)" 0 $rc
}
if [ "${REFMODEL_FRONT_ENDS:-}" = all ]; then
	all5="ordered reorder torn garbage payload"
	size_front_end shim "$T/size.fe" shim-size "$all5"
	size_front_end supervisor "$T/size.fe" supervisor-size "$all5"
	size_front_end shim "$T/size.fe" shim-enum "ordered reorder torn" enumerate
	size_front_end supervisor "$T/size.fe" supervisor-enum \
		"ordered reorder torn" enumerate
else
	printf 'Ta Pa\nBa1 Sb\nRa1 Za\n' >"$T/size.enum.sample"
	size_front_end supervisor "$T/size.enum.sample" supervisor-enum reorder \
		enumerate
fi
# an enumerated crash's state is judged against both readings of the op
# it was cut in, and no other: a workload cut before its append ("Ta
# [Pa]") left with the append where the truncate put it, but the
# truncate lost and the append kept at the old end, is caught
grep -v '^Ta \[Pa\]|reorder|' "$T/supervisor-enum.states" >"$T/planted-enum"
printf 'Ta [Pa]|reorder|e000:9|a=iiiiiiiiiiiiiiiiBBBBBBBB|b=iiiiiiiiiiiiiiii\n' \
	>>"$T/planted-enum"
python3 tests/refmodel/model.py check "$SEEDS" <"$T/planted-enum" \
	>"$T/planted-enum.out" 2>&1
expect "a planted state of a crash cut short is caught" 1 $?
contains "... and named" "$T/planted-enum.out" \
	"the shortest: workload 'Ta \\[Pa\\]', device reorder: soundness"

# Names through the front ends (ops.c --names: each workload in a directory
# of its own), under posix and btrfs, whose names no prefix over the batch
# decides (under ext4, ext4-writeback and xfs a sync commits every earlier
# name in any directory, so a batch's workloads are not apart).  Bounded:
# every 5th workload of up to two ops through the supervisor, reorder;
# REFMODEL_FRONT_ENDS=all: names.py's sample above through both front ends
# under every device (about ten minutes).
names_front_end() { # names_front_end FE DEVICES
	fe=$1
	if [ "${REFMODEL_FRONT_ENDS:-}" = all ]; then
		cp "$T/names" "$T/$fe.nlist"
	else
		awk 'NF <= 2 && NR % 5 == 0' "$T/names.all" >"$T/$fe.nlist"
	fi
	t0=$(date +%s)
	rcs=
	for fs in posix btrfs; do
		for dev in $2; do
			TMPDIR=$T "$B/torture" --target exec --quiet --power-loss \
				--fs $fs --front-end "$fe" --device $dev \
				--sector 512 --kill-every 60s --cycles "$SEEDS" \
				--seed 1 --no-explain \
				--workload "$T/ops {dir} --names $T/$fe.nlist" \
				--checker "$T/ops {dir} --check-names $T/$fe.nlist $fs $dev 0 $T/$fe.nstates" \
				>"$T/$fe.out" 2>&1 || { rcs="$rcs $?"; cat "$T/$fe.out"; }
		done
	done
	expect "torture crashes names through the $fe" "" "$rcs"
	python3 tests/refmodel/names.py check "$SEEDS" <"$T/$fe.nstates" \
		>"$T/$fe.ncheck" 2>&1
	rc=$?
	cat "$T/$fe.ncheck"
	n=$(wc -l <"$T/$fe.nlist")
	el=$(( $(date +%s) - t0 ))
	expect "the $fe agrees with the model of names ($n workloads, ${el}s)" 0 $rc
}
if [ "${REFMODEL_FRONT_ENDS:-}" = all ]; then
	names_front_end supervisor "ordered reorder torn"
	names_front_end shim "ordered reorder torn"
else
	names_front_end supervisor reorder
fi

# the batch check under ordered can fail: one workload's state in a batch's
# cut made one no prefix explains
sed '0,/|ordered|/s/^\([^|]*|ordered|[^|]*|a=\)[^|]*/\1ZZZZ/' \
	"$T/supervisor.states" >"$T/planted-batch"
python3 tests/refmodel/model.py check "$SEEDS" <"$T/planted-batch" \
	>"$T/planted-batch.out" 2>&1
expect "a planted state in a batch's cut is caught" 1 $?
contains "... and named" "$T/planted-batch.out" \
	"device ordered: soundness: .*a=ZZZZ.*no prefix over the batch"

echo "refmodel.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
