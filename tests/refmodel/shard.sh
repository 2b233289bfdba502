#!/bin/sh
# shard.sh BUILD_DIR I/N OUT [OPS] [SEEDS] -- the reference model's long
# run, one shard of it: the simulator (driver.c) crashes the workloads
# whose line number is I modulo N of each list -- the data alphabet of up
# to OPS ops (default 4: 11,110 workloads), the extended alphabet, the
# sizes' alphabet and the names of up to OPS, 3 at most (3,969; 3,031,
# also under garbage and payload; those with a failed fsync under each
# profile; and 1,118 under each --fs model) -- with SEEDS seeds
# (default 32),
# and leaves their states in OUT.data and OUT.names.  The check is per
# workload, so the shards' states, put together, are judged as the whole
# would be:
#
#   cat OUT*.data  | python3 tests/refmodel/model.py check SEEDS
#   cat OUT*.names | python3 tests/refmodel/names.py check SEEDS
#
# Any machine can run any shard (a Slurm job array: SLURM_ARRAY_TASK_ID
# as I; tests/slurm.sh runs a small one).  Run from the source tree.
# Exit 0, 1 when the driver failed, 2 on bad arguments.
set -u
B=${1:?usage: shard.sh BUILD_DIR I/N OUT [OPS] [SEEDS]}
shard=${2:?usage: shard.sh BUILD_DIR I/N OUT [OPS] [SEEDS]}
out=${3:?usage: shard.sh BUILD_DIR I/N OUT [OPS] [SEEDS]}
ops=${4:-4}
seeds=${5:-32}
i=${shard%/*} n=${shard#*/}
case "$i/$n/$ops/$seeds" in
*[!0-9/]*|/*|*//*) echo "shard.sh: want I/N, OPS and SEEDS as numbers" >&2
		   exit 2 ;;
esac
[ "$n" -ge 1 ] && [ "$i" -lt "$n" ] && [ "$ops" -ge 1 ] && [ "$ops" -le 5 ] ||
	{ echo "shard.sh: want 0 <= I < N and 1 <= OPS <= 5" >&2; exit 2; }
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
T=$(mktemp -d "$base/keel-refmodel-shard.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
mkdir "$T/dir"
SAN=
nm "$B/libkeel.a" 2>/dev/null | grep -q __asan_ && SAN="-fsanitize=address,undefined"
cc -std=gnu11 -O1 -Wall -Wextra -Werror -D_GNU_SOURCE $SAN -Ibase -Iengine \
	-Ifaultsim -o "$T/driver" tests/refmodel/driver.c \
	"$B/libkeel-faultsim.a" "$B/libkeel.a" -lfiu -lpthread -lm || exit 1
mine() { awk -v i="$i" -v n="$n" '(NR - 1) % n == i'; }
python3 tests/refmodel/model.py gen "$ops" | mine >"$T/data"
deep=$ops
[ "$deep" -le 3 ] || deep=3
python3 tests/refmodel/model.py gen-ext $deep | mine >"$T/ext"
python3 tests/refmodel/model.py gen-size $deep | mine >"$T/size"
python3 tests/refmodel/names.py gen $deep | mine >"$T/names"
: >"$out.data"
: >"$out.names"
"$T/driver" "$T/dir" "$seeds" <"$T/data" >>"$out.data" || exit 1
"$T/driver" "$T/dir" "$seeds" <"$T/ext" >>"$out.data" || exit 1
"$T/driver" "$T/dir" "$seeds" <"$T/size" >>"$out.data" || exit 1
"$T/driver" "$T/dir" "$seeds" --devices garbage,payload <"$T/size" \
	>>"$out.data" || exit 1
for p in xfs btrfs keep; do
	cat "$T/ext" "$T/size" | grep 'E' |
		"$T/driver" "$T/dir" "$seeds" --profile $p >>"$out.data" || exit 1
done
for fs in posix ext4 ext4-writeback xfs btrfs; do
	"$T/driver" "$T/dir" "$seeds" --names $fs <"$T/names" >>"$out.names" ||
		exit 1
done
echo "shard.sh: shard $i/$n: $(wc -l <"$T/data") + $(wc -l <"$T/ext") +" \
	"$(wc -l <"$T/size") data" \
	"workloads, $(wc -l <"$T/names") of names; $(wc -l <"$out.data") +" \
	"$(wc -l <"$out.names") states"
