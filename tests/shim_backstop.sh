#!/bin/sh
# shim_backstop.sh BUILD_DIR -- the shim's system-call backstop
# (torture --syscall-backstop, shim/shim_backstop.c) end to end: writes no
# wrapper sees are recorded and judged like any other (a safe workload
# passes --power-loss, the same without its sync is caught), and without
# the backstop the same workloads are still refused as bypasses (exit 2),
# never given a verdict.  Bounded: about a minute.  On a kernel without
# Syscall User Dispatch (before Linux 5.11, not x86-64) only the refusals
# are checked.
set -u
B=${1:-build}
TORTURE=$B/torture
L=$B/shim-tests/stdout_log
M=$B/shim-tests/misbehave
S=tests/targets/saver.bash
T=$(mktemp -d /tmp/keel-shim-backstop.XXXXXX)
fails=0
checks=0
trap 'rm -rf "$T"' EXIT
mkdir "$T/tmp"
export TMPDIR="$T/tmp"

. "$(dirname "$0")/lib.sh"

# run NAME WANT_RC PATTERN ARGS...: torture must exit WANT_RC and print
# PATTERN (a regular expression; "" for none).
run() {
	name=$1 want=$2 pat=$3
	shift 3
	t0=$(date +%s)
	# (the shim's own backstop: a shell would get the supervisor by
	# itself, --front-end auto)
	patient "$T/$name.out" "$TORTURE" --target exec --quiet \
		--front-end shim "$@"
	rc=$?
	expect "$name exits $want ($(( $(date +%s) - t0 ))s)" "$want" $rc
	[ "$rc" = "$want" ] || tail -c 1500 "$T/$name.out"
	[ -z "$pat" ] || contains "$name says so" "$T/$name.out" "$pat"
}

# Its timed runs go two at a time: beside and settle (tests/lib.sh).

BYPASS="bypass: .*without going through the shim.*--syscall-backstop"

# ---- without the backstop: refused, as before -------------------------------
run "saver-no-backstop" 2 "$BYPASS" --power-loss --kill-every 300ms \
	--duration 3s --seed 41 --workload "bash $S {dir}" \
	--checker "bash $S {dir} --check"
for how in stdio syscall asm; do
	run "stdout-$how-no-backstop" 2 "$BYPASS" --power-loss \
		--kill-every 300ms --duration 3s --seed 42 \
		--workload "$L {dir} $how >>{dir}/log" \
		--checker "$L {dir} --check"
done

# where prctl(PR_SET_SYSCALL_USER_DISPATCH) fails (an old kernel; here
# strace makes every prctl fail): said once, and refused as without it
if command -v strace >/dev/null 2>&1; then
	t0=$(date +%s)
	# (LeakSanitizer stops the world with ptrace, which strace holds: off
	# for this one run of a sanitized build)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -qq -o /dev/null -e trace=prctl -e inject=prctl:error=EINVAL \
		"$TORTURE" --target exec --quiet --front-end shim \
		--syscall-backstop --power-loss \
		--kill-every 300ms --duration 3s --seed 41 \
		--workload "bash $S {dir}" --checker "bash $S {dir} --check" \
		>"$T/unavailable.out" 2>&1
	expect "unavailable exits 2 ($(( $(date +%s) - t0 ))s)" 2 $?
	contains "unavailable says so" "$T/unavailable.out" \
		"--syscall-backstop is unavailable here \(prctl"
	contains "unavailable is refused as a bypass" "$T/unavailable.out" \
		"bypass: .*without going through the shim"
fi

if "$TORTURE" --target exec --syscall-backstop --quiet --cycles 1 \
	--workload true --checker true 2>&1 | grep -q unavailable; then
	echo "shim_backstop.sh: no Syscall User Dispatch here: the backstop" \
	     "itself is not tested"
	echo "shim_backstop.sh: $checks checks, $fails failed"
	[ $fails -eq 0 ]
	exit
fi

# the same from a real program: a Python saver running a command per put
# with its log as the command's standard output (subprocess.run); lives of
# 1.5 s: beside a busy CPU the interpreter's start alone took over 300 ms,
# and a life that acknowledges nothing tests nothing
python_subprocess() {
if command -v python3 >/dev/null 2>&1; then
	PY="python3 tests/shim/subprocess_saver.py"
	run "python-subprocess" 0 "" --power-loss --kill-every 1500ms \
		--duration 6s --seed 44 --workload "$PY {dir}" \
		--checker "$PY {dir} --check"
	run "python-subprocess-unsafe" 1 "cycle [0-9]+: lost: key" \
		--power-loss --kill-every 1500ms --duration 15s --seed 45 \
		--workload "$PY {dir} unsafe" --checker "$PY {dir} --check"
else
	echo "skip python-subprocess: no python3"
fi
}
# (the longest here: it starts first)
beside python-subprocess python_subprocess

# ---- the shell saver: bash's printf builtin writes through glibc's
# internal write; with the backstop the safe saver passes and the one
# without its directory sync loses the renamed file
savers() {
run "saver-safe" 0 "" --syscall-backstop --power-loss --kill-every 300ms \
	--duration 3s --seed 43 --workload "bash $S {dir}" \
	--checker "bash $S {dir} --check"
run "saver-no-dir-sync" 1 "cycle [0-9]+: lost: key \"cfg\"" \
	--syscall-backstop --power-loss --kill-every 300ms --duration 10s \
	--seed 43 --workload "bash $S {dir} nodirsync" \
	--checker "bash $S {dir} --check"
# cp(1) copies with copy_file_range, which writes without a write call: the
# backstop makes it a read and a recorded write (and answers its FICLONE
# ioctl EOPNOTSUPP)
run "saver-cp" 0 "" --syscall-backstop --power-loss --kill-every 300ms \
	--duration 3s --seed 46 --workload "bash $S {dir} cp" \
	--checker "bash $S {dir} --check"
contains "saver-no-dir-sync names the rename" "$T/saver-no-dir-sync.out" \
	"rename +cfg.tmp -> cfg .*directory NOT synced"
contains "saver-no-dir-sync replays with the flag" \
	"$T/saver-no-dir-sync.out" "replay with .*--syscall-backstop"
}
beside savers savers

# ---- a program writing its redirected stdout: stdio, syscall(SYS_write),
# its own syscall instruction, from a thread, a forked child, a
# posix_spawn'ed or vfork'ed program, with every signal blocked and SIGSYS
# ignored -- all recorded (or the run would be refused as a bypass), under
# a 1 ms timer signal where it can have one
for how in stdio syscall asm thread fork spawn vfork masks close-range; do
	beside "stdout-$how" run "stdout-$how" 0 "" --syscall-backstop --power-loss \
		--kill-every 300ms --duration 2s --seed 44 \
		--workload "$L {dir} $how >>{dir}/log" \
		--checker "$L {dir} --check"
done
# stdout redirected by the program itself: freopen's open, dup3 and close
# are glibc's own; the freopen wrapper follows the file it opened, so
# without the backstop its stdio writes are a bypass (refused, never a
# verdict), and with it they are recorded; tracked, its unsynced lines are
# lost
beside stdout-freopen-no-backstop run "stdout-freopen-no-backstop" 2 "bypass: .*log" --power-loss \
	--kill-every 300ms --duration 2s --seed 44 \
	--workload "$L {dir} freopen" --checker "$L {dir} --check"
for how in freopen freopen-over; do
	beside "stdout-$how" run "stdout-$how" 0 "" --syscall-backstop --power-loss \
		--kill-every 300ms --duration 2s --seed 44 \
		--workload "$L {dir} $how" --checker "$L {dir} --check"
done
# the number freopen reused names the log, not the file dup2 put there
# before (glibc's dup3 onto it is seen only by the backstop): written with
# the exported write, the log's lines are modelled without the backstop --
# the safe saver passes, and its unsynced lines are lost (taken for writes
# of DIR/side, a cut would leave them all in place)
freopen_write() {
run "stdout-freopen-write" 0 "" --power-loss --kill-every 300ms \
	--duration 2s --seed 44 --workload "$L {dir} freopen-write" \
	--checker "$L {dir} --check"
run "stdout-freopen-write-unsafe" 1 "cycle [0-9]+: lost: key" \
	--power-loss --kill-every 300ms --duration 10s --seed 45 \
	--workload "$L {dir} freopen-write unsafe" --checker "$L {dir} --check"
}
beside stdout-freopen-write freopen_write
# glibc closing or replacing the log's descriptor where no wrapper sees,
# and a child changing the parent's tables: the safe saver passes, the one
# without fdatasync is caught (tests/shim/stdout_log.c)
#   daemon         glibc's own dup2s put /dev/null on the daemon's standard
#                  output, the log's number: the noise it writes there is
#                  not the log's (taken for it, the model's log outgrew the
#                  file: a false "bypass" refusal)
#   fopen-freopen  freopen of a stream the shim made of its own (fopen for
#                  writing of a watched file): glibc's freopen crashes on a
#                  fopencookie stream, so the shim gives the same stream the
#                  new descriptor (the program died of SIGSEGV at set-up)
#   vfork-dup2     a vfork child (CPython's subprocess) runs in the parent's
#                  memory: its dup2 of the log onto its standard output and
#                  its close_range change no table of the parent's (the
#                  parent's noise on its own standard output was taken for a
#                  write of the log: "bypass")
glibc_own() { # glibc_own HOW
	run "stdout-$1" 0 "" --power-loss --kill-every 300ms --duration 2s \
		--seed 44 --workload "$L {dir} $1" --checker "$L {dir} --check"
	run "stdout-$1-unsafe" 1 "cycle [0-9]+: lost: key" --power-loss \
		--kill-every 300ms --duration 10s --seed 45 \
		--workload "$L {dir} $1 unsafe" --checker "$L {dir} --check"
}
for how in daemon fopen-freopen vfork-dup2; do
	beside "stdout-$how" glibc_own "$how"
done
beside stdout-freopen-unsafe run "stdout-freopen-unsafe" 1 "cycle [0-9]+: lost: key" --syscall-backstop \
	--power-loss --kill-every 300ms --duration 10s --seed 45 \
	--workload "$L {dir} freopen unsafe" --checker "$L {dir} --check"
# recorded as writes, not merely let through: unsynced, they are lost
for how in stdio asm; do
	beside "stdout-$how-unsafe" run "stdout-$how-unsafe" 1 "cycle [0-9]+: lost: key" \
		--syscall-backstop --power-loss --kill-every 300ms \
		--duration 10s --seed 45 \
		--workload "$L {dir} $how unsafe >>{dir}/log" \
		--checker "$L {dir} --check"
done
settle
contains "stdout-stdio-unsafe lists the write" "$T/stdout-stdio-unsafe.out" \
	"write +log +off [0-9]+ len [0-9]+ .*NOT synced"

# ---- what stays refused with the backstop on -----------------------------------
beside raw-pwrite-recorded run "raw-pwrite-recorded" 0 "" --syscall-backstop --power-loss \
	--kill-every 2s --cycles 2 --seed 1 \
	--workload "$M {dir} raw-append" --checker "$M {dir} --check"
run "io-uring-refused" 2 "refused: io_uring_setup" --syscall-backstop \
	--kill-every 2s --cycles 2 --workload "$M {dir} io-uring" \
	--checker "$M {dir} --check"
# io_uring_setup from a syscall instruction of the program's own: only the
# backstop sees it, and refuses it
run "io-uring-asm-refused" 2 "refused: io_uring_setup" --syscall-backstop \
	--kill-every 2s --cycles 2 --workload "$L {dir} io-uring >>{dir}/log" \
	--checker "$L {dir} --check"
printf 'int main(void){return 0;}\n' >"$T/static.c"
if cc -static -o "$T/static" "$T/static.c" 2>/dev/null; then
	run "static-refused" 2 "refused: exec .*static: a statically linked" \
		--syscall-backstop --cycles 1 --kill-every 10s \
		--workload "$T/static" --checker true
fi
run "flag-needs-exec" 2 "--syscall-backstop, --front-end.* are for --target exec" \
	--target embedded --syscall-backstop
settle

echo "shim_backstop.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
