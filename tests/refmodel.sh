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

python3 tests/refmodel/model.py gen "$N" >"$T/workloads"
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

echo "refmodel.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
