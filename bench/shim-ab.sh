#!/bin/sh
# shim-ab.sh OLD_BUILD NEW_BUILD [ROUNDS] -- what a change to the shim costs,
# as an A/B of two build directories (two checkouts' build/), rounds
# alternating so that a drifting machine moves both alike:
#
#   1. N x (pwrite 4 KiB + fdatasync), timed inside the program, on tmpfs
#      (TMPDIR, default /dev/shm: the shim's CPU cost alone), under each
#      build's torture --target exec and shim; the same program for both.
#   2. power-loss cycles per second (--device torn, 15 s, seed 1) of the
#      sqlite:wal-full and lmdb:default adapters under each build; under
#      NEW also with --syscall-backstop, and lmdb:writemap (writes through
#      a shared mapping, which an older shim refused).
#
# Prints one markdown table: medians, and NEW/OLD, and writes it to
# docs/results/shim.md (bench/results.sh: with the command, the machine and
# the commit; a rerun replaces its section).  Needs libsqlite3-dev and
# liblmdb-dev (make deps-bench).
set -eu
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../docs/results}
. "$(dirname "$0")/results.sh"
results_begin "$0" "$@"
results_env N DURATION TMPDIR
OLD=${1:?usage: shim-ab.sh OLD_BUILD NEW_BUILD [ROUNDS]}
NEW=${2:?usage: shim-ab.sh OLD_BUILD NEW_BUILD [ROUNDS]}
R=${3:-3}
N=${N:-2000}
D=${DURATION:-15s}
T=$(mktemp -d "${TMPDIR:-/dev/shm}/keel-shim-ab.XXXXXX")
trap 'rm -rf "$T"' EXIT
S=$T/shim-bench
cc -O2 -Wall -Wextra -Werror -o "$S" bench/shim_bench.c -lsqlite3

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

fsync_us() { # fsync_us BUILD -> microseconds per write+fdatasync
	rm -rf "$T/d"
	"$1/torture" --target exec --quiet --power-loss --kill-every 10m \
		--cycles 1 --dir "$T/d" --workload "$S fsync {dir} $N $T/t" \
		--checker 'echo bench done' >"$T/log" 2>&1 ||
		{ cat "$T/log"; exit 1; }
	echo "scale=2; $(cat "$T/t") * 1000000 / $N" | bc
}

cycles() { # cycles BUILD TARGET [FLAG] -> power-loss cycles per second
	"$1/torture" --target "$2" --quiet --power-loss --device torn \
		--duration "$D" --seed 1 ${3:-} --json "$T/run.json" \
		>"$T/log" 2>&1 || { cat "$T/log"; exit 1; }
	sed -n 's/.*"cycles_per_second": \([0-9.]*\).*/\1/p' "$T/run.json"
}

for i in $(seq "$R"); do
	fsync_us "$OLD" >>"$T/f.old"
	fsync_us "$NEW" >>"$T/f.new"
	cycles "$OLD" sqlite:wal-full >>"$T/s.old"
	cycles "$NEW" sqlite:wal-full >>"$T/s.new"
	cycles "$NEW" sqlite:wal-full --syscall-backstop >>"$T/s.bs"
	cycles "$OLD" lmdb:default >>"$T/l.old"
	cycles "$NEW" lmdb:default >>"$T/l.new"
	cycles "$NEW" lmdb:default --syscall-backstop >>"$T/l.bs"
	cycles "$NEW" lmdb:writemap >>"$T/w.new"
done

row() { # row LABEL OLDFILE NEWFILE
	o=$(median <"$2")
	n=$(median <"$3")
	echo "| $1 | $o | $n | $(echo "scale=2; $n / $o" | bc) | $(tr '\n' ' ' <"$2")/ $(tr '\n' ' ' <"$3")|"
}

{
	echo "| figure | old | new | new/old | rounds (old / new) |"
	echo "|---|---|---|---|---|"
	row "write+fdatasync on tmpfs, us per pair under the shim" "$T/f.old" "$T/f.new"
	row "sqlite:wal-full, power-loss cycles/s" "$T/s.old" "$T/s.new"
	row "sqlite:wal-full, new with --syscall-backstop" "$T/s.old" "$T/s.bs"
	row "lmdb:default, power-loss cycles/s" "$T/l.old" "$T/l.new"
	row "lmdb:default, new with --syscall-backstop" "$T/l.old" "$T/l.bs"
	row "lmdb:writemap (shared mapping) against lmdb:default" "$T/l.old" "$T/w.new"
	echo
	echo "$R rounds, N=$N, power-loss runs of $D, $(nproc) cores, $(uname -r), TMPDIR=${TMPDIR:-/dev/shm}"
} | tee "$T/section.md"
results_write shim shim-ab "The shim's cost" "${TMPDIR:-/dev/shm}" "$T/section.md" \
	"OLD is \`$OLD\`, NEW is \`$NEW\`.  The machine was shared with other builds and tests while this ran: read NEW/OLD, measured in alternating rounds, rather than the absolute figures."
