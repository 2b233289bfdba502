#!/bin/sh
# shim-overhead.sh [BUILD_DIR] [N] -- what each front end (libkeel-shim.so,
# and the seccomp supervisor) costs a program, and how fast torture
# --target exec power-cuts a SQLite workload under each.
#
#   1. 100 N getppid() calls (what any untracked system call costs), N x
#      (pwrite 4 KiB + fdatasync), N x (1-byte write to a pipe + its read:
#      a write the supervisor is sent and lets through), and N SQLite inserts (one transaction
#      each, synchronous=EXTRA), each timed inside the program, plain, under
#      the shim (torture --target exec --power-loss, one cycle that ends on
#      its own), under the shim with --syscall-backstop and under the
#      supervisor (--front-end supervisor), ROUNDS rounds
#      (default 3, odd) alternating; the median of each, and microseconds
#      per operation.
#      The floor under the supervisor beside them: bench/notify_rtt.c, a
#      call sent to a seccomp listener that answers it at once.
#   2. torture --target exec --power-loss --kill-every 50ms for 20 s on a
#      SQLite workload (synchronous=EXTRA, which passes): cycles per second
#      under the shim and under the supervisor, and their ratio.
# Needs libsqlite3-dev (make deps-bench).  Prints the figures and writes
# them to docs/results/shim.md (bench/results.sh: with the command, the
# machine and the commit; a rerun replaces its section, one for tmpfs and one
# for any other file system).  TMPDIR picks the file system (TMPDIR=/dev/shm:
# the shim's CPU cost alone).
set -eu
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../docs/results}
. "$(dirname "$0")/results.sh"
results_begin "$0" "$@"
results_env TMPDIR ROUNDS
B=${1:-build}
N=${2:-300}
T=$(mktemp -d "${TMPDIR:-/tmp}/keel-shim-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
cc -O2 -Wall -Wextra -Werror -o "$B/shim-bench" bench/shim_bench.c -lsqlite3
S=$B/shim-bench

ROUNDS=${ROUNDS:-3}
case $ROUNDS in *[!0-9]* | '' | *[02468]) echo "ROUNDS must be odd" >&2; exit 2 ;; esac
median() { sort -n | sed -n "$((ROUNDS / 2 + 1))p"; }

plain() { # plain MODE -> seconds
	rm -rf "$T/d" && mkdir "$T/d"
	"$S" "$1" "$T/d" "$n" "$T/t" && cat "$T/t"
}

shimmed() { # shimmed MODE [FLAG] -> seconds
	rm -rf "$T/d"
	"$B/torture" --target exec --quiet --power-loss --kill-every 10m \
		--cycles 1 --dir "$T/d" ${2:-} --workload "$S $1 {dir} $n $T/t" \
		--checker 'echo bench done' >"$T/log" 2>&1 ||
		{ cat "$T/log"; exit 1; }
	cat "$T/t"
}

us() { echo "scale=2; $1 * 1000000 / $n" | bc; } # us SECONDS -> per op

{
	echo "| workload | operations | plain ops/s | under the shim ops/s | overhead | us/op plain | us/op shim | us/op shim + --syscall-backstop | us/op supervisor |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$T/table.md"
for mode in syscalls fsync unwatched sqlite; do
	n=$N
	[ $mode = syscalls ] && n=$((N * 100))
	: >"$T/p"; : >"$T/s"; : >"$T/b"; : >"$T/v"
	for round in $(seq "$ROUNDS"); do
		plain $mode >>"$T/p"
		shimmed $mode >>"$T/s"
		shimmed $mode --syscall-backstop >>"$T/b"
		shimmed $mode "--front-end supervisor" >>"$T/v"
	done
	p=$(median <"$T/p")
	s=$(median <"$T/s")
	b=$(median <"$T/b")
	v=$(median <"$T/v")
	echo "$mode: $n ops  plain $p s ($(echo "$n / $p" | bc) ops/s)  shim $s s ($(echo "$n / $s" | bc) ops/s)  overhead $(echo "scale=1; ($s - $p) * 100 / $p" | bc) %  (rounds: plain $(tr '\n' ' ' <"$T/p")shim $(tr '\n' ' ' <"$T/s"))"
	echo "$mode: us per op  plain $(us $p)  shim $(us $s)  shim+backstop $(us $b)  supervisor $(us $v)  (backstop rounds: $(tr '\n' ' ' <"$T/b")supervisor rounds: $(tr '\n' ' ' <"$T/v"))"
	echo "| $mode | $n | $(echo "$n / $p" | bc) | $(echo "$n / $s" | bc) | $(echo "scale=1; ($s - $p) * 100 / $p" | bc) % | $(us $p) | $(us $s) | $(us $b) | $(us $v) |" >>"$T/table.md"
done

cps() { sed -n 's/.*"cycles_per_second": \([0-9.]*\).*/\1/p' "$1"; }
for front in shim supervisor; do
	"$B/torture" --target exec --quiet --power-loss --kill-every 50ms \
		--duration 20s --seed 1 --json "$T/run-$front.json" \
		--front-end $front \
		--workload "$S sqlite-kv {dir} EXTRA" \
		--checker "$S sqlite-kv-check {dir} EXTRA" >"$T/log" 2>&1 ||
		{ cat "$T/log"; exit 1; }
	sed -n "s/.*\"cycles\": \([0-9]*\).*\"acked_writes\": \([0-9]*\).*\"cycles_per_second\": \([0-9.]*\).*/sqlite power-loss under the $front: \1 cycles, \2 acknowledged, \3 cycles\/s at --kill-every 50ms/p" "$T/run-$front.json" |
		tee -a "$T/powerloss"
done
echo "supervisor/shim: $(echo "scale=2; $(cps "$T/run-supervisor.json") / $(cps "$T/run-shim.json")" | bc)x" |
	tee -a "$T/powerloss"
# programs only the supervisor sees: the Go saver (tests/go/saver.go, full
# recipe) and etcd (tests/targets/etcd.sh, lives of 4 s)
if command -v go >/dev/null 2>&1; then
	GOCACHE="$(cd "$B" && pwd)/go-cache" GOPATH="$T/gopath" GO111MODULE=off \
		CGO_ENABLED=0 go build -o "$T/saver" tests/go/saver.go
	"$B/torture" --target exec --quiet --power-loss --kill-every 50ms \
		--duration 20s --seed 1 --json "$T/run-go.json" \
		--workload "$T/saver {dir} full" \
		--checker "$T/saver {dir} --check" >"$T/log" 2>&1 ||
		{ cat "$T/log"; exit 1; }
	echo "Go saver (full recipe) power-loss under the supervisor: $(cps "$T/run-go.json") cycles/s at --kill-every 50ms" |
		tee -a "$T/powerloss"
fi
if command -v etcd >/dev/null 2>&1 && command -v jq >/dev/null 2>&1; then
	E=tests/targets/etcd.sh
	"$B/torture" --target exec --quiet --power-loss --kill-every 4s \
		--duration 30s --seed 1 --json "$T/run-etcd.json" \
		--setup "bash $E {dir} --init" --workload "bash $E {dir}" \
		--checker "bash $E {dir} --check" >"$T/log" 2>&1 ||
		{ cat "$T/log"; exit 1; }
	echo "etcd power-loss under the supervisor: $(cps "$T/run-etcd.json") cycles/s at --kill-every 4s ($(sed -n 's/.*"acked_writes": \([0-9]*\).*/\1/p' "$T/run-etcd.json") puts acknowledged)" |
		tee -a "$T/powerloss"
fi
# the floor under the supervisor: a notified call answered at once
cc -O2 -Wall -Wextra -Werror -o "$B/notify-rtt" bench/notify_rtt.c
: >"$T/rtt"
for round in $(seq "$ROUNDS"); do "$B/notify-rtt" 20000 >>"$T/rtt"; done
rtt=$(cut -d ' ' -f 1 "$T/rtt" | median)
rtta=$(cut -d ' ' -f 2 "$T/rtt" | median)
# and with the caller and the listener on one CPU: no wake-up crosses CPUs
# (no inter-processor interrupt, which a VM pays dearly), so what is left
# is the two context switches themselves
rttp=
if command -v taskset >/dev/null 2>&1; then
	: >"$T/rttp"
	for round in $(seq "$ROUNDS"); do
		taskset -c 0 "$B/notify-rtt" 20000 >>"$T/rttp"
	done
	rttp=$(cut -d ' ' -f 1 "$T/rttp" | median)
fi
echo "notified call answered at once: $rtt us (synchronous wake-up), $rtta us (without), ${rttp:-not measured} us on one CPU" |
	tee "$T/floor"
{
	echo "Each figure is the median of $ROUNDS rounds (plain, shim, shim with the backstop and"
	echo "the supervisor alternating), timed inside the program (bench/shim_bench.c): getppid() for"
	echo "\`syscalls\`, pwrite 4 KiB + fdatasync for \`fsync\`, one SQLite insert per"
	echo "transaction (synchronous=EXTRA) for \`sqlite\`, a 1-byte write to a pipe and"
	echo "its read for \`unwatched\` (a write the supervisor is sent and lets through)."
	echo
	cat "$T/table.md"
	echo
	echo "The floor under the supervisor (bench/notify_rtt.c, median of $ROUNDS runs of 20,000):"
	echo "a call sent to a seccomp listener that answers it at once, with no work, costs"
	echo "$rtt us with the synchronous wake-up the supervisor asks for ($rtta us without;"
	echo "${rttp:-not measured} us with both pinned to one CPU, so no wake-up crosses CPUs);"
	echo "a write+fdatasync pair pays it twice before anything is recorded: against the"
	echo "plain pair's figure above, that floor alone decides how near the supervisor can come."
	echo
	echo "torture --target exec --power-loss --kill-every 50ms --duration 20s --seed 1 on a"
	echo "SQLite workload (synchronous=EXTRA):"
	echo
	sed 's/^/- /' "$T/powerloss"
} >"$T/section.md"
# one section per kind of file system: tmpfs (the shim's CPU cost alone)
# and a disk's (what a synced write costs there besides)
section=shim-overhead
[ "$(stat -f -c %T "${TMPDIR:-/tmp}")" = tmpfs ] || section=shim-overhead-disk
results_write shim "$section" "The shim's cost" "${TMPDIR:-/tmp}" "$T/section.md"
