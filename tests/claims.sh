#!/bin/sh
# claims.sh BUILD_DIR -- the claims table's separation, briefly: a safe and
# an unsafe configuration of two engine adapters under a power cut.  The
# unsafe ones (SQLite WAL with synchronous=NORMAL, a rename without a
# directory fsync) must be caught; the safe ones (WAL with FULL, the full
# rename recipe) must hold.  Durations adapt: an unsafe run gets up to 20 s
# to show its loss (it stops at the first), a safe one runs 3 s.  Also:
# torture --target's bad input, and the adapters' lists of configurations
# agree with torture's.
set -u
B=${1:-build}
T=$(mktemp -d /tmp/keel-claims-test.XXXXXX)
fails=0
checks=0
trap 'rm -rf "$T"' EXIT
export TMPDIR="$T"
. "$(dirname "$0")/lib.sh"

run() { # NAME WANT_RC PATTERN ARGS...
	name=$1 want=$2 pat=$3
	shift 3
	"$B/torture" --quiet --seed 5 "$@" >"$T/$name.out" 2>&1
	rc=$?
	expect "$name exits $want" "$want" $rc
	[ "$rc" = "$want" ] || tail -c 1500 "$T/$name.out"
	[ -z "$pat" ] || contains "$name says so" "$T/$name.out" "$pat"
}

run sqlite-wal-full 0 "" --target sqlite:wal-full --power-loss --duration 3s
run sqlite-wal-normal 1 "cycle [0-9]+: lost" --target sqlite:wal-normal \
	--power-loss --duration 20s
run files-rename-full 0 "" --target files:rename-full --power-loss \
	--duration 3s
run files-rename-fsync-file 1 "rename +k[0-9]+.tmp -> k[0-9]+ .*directory NOT synced" \
	--target files:rename-fsync-file --power-loss --duration 20s
contains "a violation replays with the adapter's name" \
	"$T/files-rename-fsync-file.out" "replay with .*--target files:rename-fsync-file"

# bad input: an unknown target or configuration lists the valid ones
run unknown-target 2 "sqlite:wal-full" --target nosuch
run unknown-config 2 "lmdb:nosync" --target lmdb:nosuch
run adapter-and-workload 2 "drop --workload" --target files --workload true \
	--cycles 1
"$B/targets/sqlite" "$T" nosuch >"$T/prog.out" 2>&1
expect "an adapter refuses an unknown configuration" 2 $?
for n in $("$B/torture" --list-targets | sed 's/:.*//' | sort -u); do
	a=$("$B/torture" --list-targets | sed -n "s/^$n://p" | sort)
	b=$("$B/targets/$n" --configs | sort)
	expect "$n: torture and the adapter list the same configurations" \
		"$a" "$b"
done
echo "claims.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
