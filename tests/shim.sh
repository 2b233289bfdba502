#!/bin/sh
# shim.sh BUILD_DIR -- libkeel-shim.so and torture --target exec end to end:
# every family of wrapped calls recorded and crashed correctly (a safe
# workload passes --power-loss, the same workload without its sync is
# caught), writes that bypass the shim and calls it cannot model reported
# as set-up errors (exit 2), bad input answered with exit 2 and a message,
# and the examples of docs/targets.md run as documented.  Bounded: about a
# minute.
set -u
B=${1:-build}
TORTURE=$B/torture
F=$B/shim-tests/family
M=$B/shim-tests/misbehave
T=$(mktemp -d /tmp/keel-shim-test.XXXXXX)
fails=0
checks=0
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
mkdir "$T/tmp"
export TMPDIR="$T/tmp"

. "$(dirname "$0")/lib.sh"

# run NAME WANT_RC PATTERN ARGS...: torture must exit WANT_RC and print
# PATTERN (a regular expression; "" for none).
run() {
	name=$1 want=$2 pat=$3
	shift 3
	t0=$(date +%s)
	case $pat in
	*"never acknowledged"*|*"lives are too short"*)
		"$TORTURE" --target exec --quiet "$@" >"$T/$name.out" 2>&1 ;;
	*) patient "$T/$name.out" "$TORTURE" --target exec --quiet "$@" ;;
	esac
	rc=$?
	expect "$name exits $want ($(( $(date +%s) - t0 ))s)" "$want" $rc
	[ "$rc" = "$want" ] || tail -c 1500 "$T/$name.out"
	[ -z "$pat" ] || contains "$name says so" "$T/$name.out" "$pat"
}

# Its timed runs go two at a time: beside and settle (tests/lib.sh).

# ---- each family: the safe workload passes, the unsafe one is caught --------
family() { # family FAM
	run "$1-safe" 0 "" --power-loss --kill-every 200ms --duration 2s \
		--seed 11 \
		--workload "$F {dir} $1 safe" --checker "$F {dir} $1 --check"
	run "$1-unsafe" 1 "cycle [0-9]+: (lost|phantom)" --power-loss \
		--duration 10s --seed 11 \
		--workload "$F {dir} $1 unsafe" --checker "$F {dir} $1 --check"
}
for fam in append overwrite truncate rename unlink remove odsync stdio dup mmap; do
	beside "$fam" family "$fam"
done
settle
# the calls a loss lists say what each truncate asked for: the size of
# the truncate named as its cause (from the simulator's records) is the
# size of one listed (from the shim's)
cause=$(sed -n 's/^ *ftruncate(\(k[0-9]*\), \([0-9]*\)) -- lost$/\1 \2/p' \
	"$T/truncate-unsafe.out" | head -1)
if [ -n "$cause" ]; then
	contains "truncate-unsafe lists its cause's size ($cause)" \
		"$T/truncate-unsafe.out" "^ +truncate +${cause% *} +to ${cause#* } -> "
else
	ok "truncate-unsafe lists its cause's size (no truncate named)"
fi
# ---- descriptors no open() wrapper saw: a correct saver is not a loss -------
# (dpkg syncs its directory with fsync(dirfd(opendir(...))); a descriptor
# can also arrive by fdopendir+closedir, dup, exec, or SCM_RIGHTS)
D=$B/shim-tests/dirsync
# (a descriptor the shim saw opened is not looked at again at each sync:
# closerange, closeraw, closealias, freopenfail, fclose and closedir close one where no close()
# wrapper sees and reuse its number from an internal open, so a sync
# credited to the old file or directory shows as a false alarm or a missed
# loss)
for how in open opendir fdopendir dup exec scm scmraw closerange closeraw \
	closealias dup2alias freopenfail fclose; do
	beside "dirsync-$how" run "dirsync-$how" 0 "" --power-loss \
		--kill-every 200ms --duration 2s \
		--seed 11 --workload "$D {dir} $how safe" \
		--checker "$D {dir} $how --check"
done
for how in none closedir; do
	beside "dirsync-$how" run "dirsync-$how" 1 "cycle [0-9]+: lost" \
		--power-loss --duration 10s \
		--seed 11 --workload "$D {dir} $how safe" \
		--checker "$D {dir} $how --check"
done
settle

# ---- git: a process per call, a file per object, under kills -------------
# (hundreds of files over a run; a commit is durable in the page cache)
if command -v git >/dev/null 2>&1; then
	beside git-kills run "git-kills" 0 "acknowledged +[1-9]" --target git:defaults \
		--kill-every 2s --duration 8s --seed 5
else
	echo "skip git-kills: no git"
fi

# dpkg's database: a correct saver whose directory sync goes through glibc's
# opendir (dir_sync_path), and a file per update: no false alarm, no file
# limit (an earlier shim refused it at 256 files)
if command -v dpkg >/dev/null 2>&1; then
	P=tests/targets/dpkg_selections.sh
	beside dpkg-selections run "dpkg-selections" 0 "acknowledged +[1-9]" --power-loss \
		--kill-every 1s --duration 6s --seed 1 --setup "sh $P {dir} --setup" \
		--workload "sh $P {dir}" --checker "sh $P {dir} --check"
else
	echo "skip dpkg-selections: no dpkg"
fi
settle

# KEEL_TORTURE_SEED fits a shell's signed 64-bit arithmetic (bash wraps a
# larger number to a negative one): 8 cycles, 8 seeds
run "seed-arith" 0 "" --kill-every 100ms --cycles 8 --seed 3 \
	--workload 'bash -c "n=\$((KEEL_TORTURE_SEED % 1000)); [ \$n -ge 0 ] || exit 9; echo intent 1 k v1 >&\$KEEL_TORTURE_FD; echo ack 1 >&\$KEEL_TORTURE_FD; sleep 1"' \
	--checker 'echo k v1'

# a cycle that ends in a structure failure still counts what it acknowledged
run "structure-counts" 1 "acknowledged +1 of 1 operations" --kill-every 200ms \
	--cycles 3 --seed 3 \
	--workload 'bash -c "echo intent 1 k v1 >&\$KEEL_TORTURE_FD; echo ack 1 >&\$KEEL_TORTURE_FD; sleep 5"' \
	--checker 'sh -c "[ -f {dir}/seen ] && exit 1; touch {dir}/seen; echo k v1"'

# a checker that exits 3 says the program will not start: availability,
# exit 3, kept apart from lost data
run "availability" 3 "UNAVAILABLE -- .*|unavailable 1" --kill-every 200ms \
	--cycles 3 --seed 3 \
	--workload 'bash -c "echo intent 1 k v1 >&\$KEEL_TORTURE_FD; echo ack 1 >&\$KEEL_TORTURE_FD; sleep 5"' \
	--checker 'sh -c "[ -f {dir}/seen ] && exit 3; touch {dir}/seen; echo k v1"'

# --setup prepares the directory once; what it leaves is durable (the
# workload refuses to run without it, and no power cut takes it away,
# though the setup never synced it); a failing setup names itself
run "setup" 0 "" --power-loss --kill-every 200ms --duration 3s --seed 5 \
	--setup 'echo ok > {dir}/ready' \
	--workload 'sh -c "[ -f {dir}/ready ] || exit 7; exec sh tests/targets/kv_files.sh {dir}"' \
	--checker 'sh tests/targets/kv_files_check.sh {dir}'
run "setup-fails" 2 "--setup 'exit 4' failed \\(exit status 4\\)" --cycles 1 \
	--setup 'exit 4' --workload true --checker true

# the explanation: the last calls, which were synced, and a replay command
contains "a violation names the calls" "$T/rename-unsafe.out" \
	"rename +k[0-9].tmp -> k[0-9] .*directory NOT synced"
contains "a violation prints its replay" "$T/rename-unsafe.out" \
	"replay with .*--target exec .*--seed 11 --cycles [0-9]+ --power-loss"
# kills alone (no power cut) never lose what the page cache holds
run "rename-unsafe-kills-only" 0 "" --kill-every 1s --duration 3s \
	--seed 12 \
	--workload "$F {dir} rename unsafe" --checker "$F {dir} rename --check"
run "mmap-unsafe-kills-only" 0 "" --kill-every 200ms --duration 3s \
	--seed 12 \
	--workload "$F {dir} mmap unsafe" --checker "$F {dir} mmap --check"
contains "a violation names the stores through a mapping" \
	"$T/mmap-unsafe.out" "mapped write +mslots +off [0-9]+ len [0-9]+ .*NOT synced"
# stores through a mapping are pages written like any other: every device
# model that keeps untouched bytes whole (garbage garbles an in-flight
# slot in place, as for overwrite)
for dev in ordered reorder torn payload; do
	for seed in 16 17; do
		beside "mmap-$dev-$seed" run "mmap-$dev-$seed" 0 "" \
			--power-loss --device $dev \
			--kill-every 150ms --duration 2s --seed $seed \
			--workload "$F {dir} mmap safe" \
			--checker "$F {dir} mmap --check"
	done
done
# four threads storing into the same pages, one's msync meeting another's
# stores half made: no deadlock, no false alarm (without the cache's lock
# around a fault, seed 19 crashed the writer)
for seed in 18 19; do
	beside "mapthreads-$seed" run "mapthreads-$seed" 0 "" \
		--power-loss --device reorder \
		--kill-every 150ms --duration 4s --seed $seed \
		--workload "$B/shim-tests/mapthreads {dir}" \
		--checker "$B/shim-tests/mapthreads {dir} --check"
done
# every device model, and --enumerate
for dev in ordered reorder garbage; do
	beside "append-$dev" run "append-$dev" 0 "" --power-loss --device $dev \
		--kill-every 200ms \
		--duration 2s \
		--seed 13 --workload "$F {dir} append safe" \
		--checker "$F {dir} append --check"
done
settle
# a garbled last record from one crash must not swallow the next writer's
# first acknowledged record (the recipe cuts the log back first): short
# lives make the unsynced record in flight at a kill common, and the wide
# jitter keeps lives long enough to acknowledge beside a busy disk (at a
# fixed 20 ms, a busy disk let no writer acknowledge anything); without
# the cut, seeds 2 and 4 of 1-6 lost an acknowledged record within 2 s
run "append-garbage-short-lives" 0 "" --power-loss --device garbage \
	--kill-every 60ms --jitter 90 --duration 4s --seed 4 \
	--workload "$F {dir} append safe" --checker "$F {dir} append --check"
run "rename-enumerate" 1 "cycle [0-9]+: lost" --enumerate --seed 14 \
	--workload "$B/shim-tests/kv_files {dir} --no-dir-sync --ops 6" \
	--checker "$B/shim-tests/kv_files {dir} --check"
run "rename-enumerate-safe" 0 "" --enumerate --seed 14 \
	--workload "$B/shim-tests/kv_files {dir} --ops 6" \
	--checker "$B/shim-tests/kv_files {dir} --check"
# --fail: a workload that stops at a failed fdatasync passes
run "fail-fdatasync" 0 "" --fail fdatasync:EIO:p=0.2 --fsync-profile ext4 \
	--kill-every 200ms --duration 2s --seed 15 \
	--workload "$F {dir} append safe" --checker "$F {dir} append --check"

# ---- keel itself through the shim: its POSIX backend passes, no-sync is
# caught (the .durable marker is shared memory, never synced: --volatile)
# (allow_user_segv_handler: the shim installs one for mapped writes)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:allow_user_segv_handler=1"
K=$B/shim-tests/keel_kv
beside keel-power-loss run "keel-power-loss" 0 "" --power-loss \
	--kill-every 500ms --duration 8s \
	--seed 31 --volatile '*.durable*' \
	--workload "$K {dir}" --checker "$K {dir} --check"
keel_caught() {
# caught either way: an acknowledged key lost, or (a power cut tearing the
# never-synced header of a new store) a store that no longer opens
run "keel-no-sync-caught" 1 "cycle [0-9]+: (lost: key|structure)" --power-loss \
	--kill-every 200ms --duration 10s --seed 31 --volatile '*.durable*' \
	--workload "$K {dir} --no-sync" --checker "$K {dir} --check"
contains "keel-no-sync names its unsynced writes" \
	"$T/keel-no-sync-caught.out" "write +kv.keel[a-z.]* +off [0-9]+ len [0-9]+ .*NOT synced"
# without --volatile the marker's stores through its mapping are recorded
run "keel-marker-mapped" 0 "" --kill-every 1s --cycles 2 \
	--workload "$K {dir}" --checker "$K {dir} --check"
}
beside keel-caught keel_caught
settle

# ---- bypasses and what the shim refuses: exit 2, never a verdict ------------
# Kill intervals here are long: on a loaded machine (or under ASan) a program
# may need a second to start and reach the call the check is about, and a
# refusal or an exit ends the cycle at once whatever the interval.
bypasses() {
run "control" 0 "" --power-loss --kill-every 2s --cycles 2 --seed 1 \
	--workload "$M {dir} plain" --checker "$M {dir} --check"
for m in raw-append raw-overwrite; do
	run "bypass-$m" 2 "bypass: .*data.*without going through the shim" \
		--power-loss --kill-every 2s --cycles 2 --seed 1 \
		--workload "$M {dir} $m" --checker "$M {dir} --check"
done
# a new file under a name the shim recorded, written unseen: the refusal
# says what it found and that there was no file before
run "bypass-raw-create" 2 "unrecorded change in cycle 1 \(workload\): new was changed \(3 bytes, was 0\), but no recorded call wrote it" \
	--power-loss --kill-every 2s --cycles 2 --seed 1 \
	--workload "$M {dir} raw-create" --checker "$M {dir} --check"
}
beside bypasses bypasses
refusals() {
run "refuse-mremap" 2 "refused: mremap of a writable shared mapping of data" \
	--kill-every 2s --cycles 2 --workload "$M {dir} mremap" \
	--checker "$M {dir} --check"
run "refuse-many-maps" 2 "refused: mmap\(MAP_SHARED\) of data: more than 1024 shared mappings" \
	--kill-every 2s --cycles 2 --workload "$M {dir} many-maps" \
	--checker "$M {dir} --check"
# more files changed in one life than the shim's table holds: refused,
# the shim going on past the full table (the workload ends the life itself)
run "refuse-many-files" 2 "more than 8192 files or 16384 names changed in one life" \
	--power-loss --kill-every 30s --cycles 1 \
	--workload "$M {dir} many-files" --checker "$M {dir} --check"
run "refuse-tmpfile" 2 "refused: open\([^,]*, O_TMPFILE\)" \
	--kill-every 2s --cycles 2 --workload "$M {dir} tmpfile" \
	--checker "$M {dir} --check"
run "refuse-io-uring" 2 "refused: io_uring_setup" \
	--kill-every 2s --cycles 2 --workload "$M {dir} io-uring" \
	--checker "$M {dir} --check"
# MAP_SYNC off DAX: the kernel's EOPNOTSUPP passed on (the program falls
# back to plain writes), never a refusal; refused before
run "mapsync-passes" 0 "" --kill-every 2s --cycles 2 --power-loss \
	--workload "$M {dir} mapsync" --checker "$M {dir} --check"
# a shared mapping made writable by mprotect: its stores are granted and
# recorded like those of one mapped writable
run "mprotect-passes" 0 "" --kill-every 2s --cycles 2 --power-loss \
	--workload "$M {dir} mprotect" --checker "$M {dir} --check"
}
beside refusals refusals
settle
# a refusal in cycle 1 is a set-up error as before: no summary (the
# mremap one's: the refuse-mmap.out this read was never written, so the
# check could not fail)
if grep -q "stopped in" "$T/refuse-mremap.out"; then
	bad "a refusal in cycle 1 prints no summary"
else
	ok "a refusal in cycle 1 prints no summary"
fi
# a refusal after cycles that passed keeps them: the summary counts the
# three cycles and their acknowledged writes, then names the refusal, its
# cycle and who made it (the good starts exit at once: no timing involved)
run "refuse-late" 2 "stopped in +cycle 4, by the workload: the shim refused: open" \
	--kill-every 5s --cycles 10 --seed 1 --json "$T/refuse-late.json" \
	--workload "$M {dir} refuse-after 3" --checker "$M {dir} --check"
contains "refuse-late counts the cycles that passed" "$T/refuse-late.out" \
	"^torture: STOPPED -- 3 cycles passed"
contains "refuse-late counts their acknowledged writes" "$T/refuse-late.out" \
	"acknowledged +3 of 3 operations"
contains "refuse-late says what to try" "$T/refuse-late.out" "^  try +avoid"
contains "refuse-late's JSON keeps both" "$T/refuse-late.json" \
	'"result": "setup-error".*"cycles": 3,.*"acked_writes": 3,.*"refusal": "the shim refused: open.*"refusal_cycle": 4, "refusal_by": "workload"'
run "refuse-late-checker" 2 "stopped in +cycle 3, by the checker: the shim refused: open" \
	--kill-every 1s --cycles 10 --seed 1 \
	--workload "$M {dir} plain" --checker "$M {dir} --check refuse-after 3"
contains "refuse-late-checker counts the cycles that passed" \
	"$T/refuse-late-checker.out" "^torture: STOPPED -- 2 cycles passed"

printf 'int main(void){return 0;}\n' >"$T/static.c"
if cc -static -o "$T/static" "$T/static.c" 2>/dev/null; then
	# (the shim's own refusal: --front-end auto gives a static program
	# the supervisor, tests/shim_sound.sh)
	run "refuse-static" 2 "refused: exec .*static: a statically linked" \
		--front-end shim --cycles 1 --kill-every 10s \
		--workload "$T/static" --checker true
	# from a shell whose standard input is closed: the shim's look at
	# the program gets descriptor 0
	run "refuse-static-no-stdin" 2 "refused: exec .*static: a statically linked" \
		--front-end shim --cycles 1 --kill-every 10s \
		--workload "exec 0<&-; exec $T/static" --checker true
fi

# ---- bad input: exit 2 with a message, no verdict ----------------------------
run "no-workload" 2 "needs --workload" --checker true
run "no-checker" 2 "needs --checker" --workload true
run "workload-without-target" 2 "not given" --target embedded --workload true
run "exits-at-once" 2 "exited at once without writing a protocol line" \
	--cycles 2 --kill-every 10s --workload true --checker true
run "missing-command" 2 "in the first cycle" --cycles 2 --kill-every 10s \
	--workload "$T/no-such-program" --checker true
# ---- lives too short, and --kill-every auto ----------------------------------
# a program that acknowledges only 300 ms after its start: at 50 ms lives
# the run says so while it runs (once), then ends as a run that never
# acknowledged; --kill-every auto doubles the lives until cycles acknowledge
# (at 400 ms on an idle machine; later on a busy one, so only "over 300 ms"
# is checked, and --cycles 12 leaves room for two more doublings)
SLOW="sleep 0.3; exec $B/shim-tests/kv_files {dir}"
run "slow-start-50ms" 2 "^torture: warning: [0-9]+ of [0-9]+ cycles at 50ms acknowledged nothing: the lives are too short" \
	--kill-every 50ms --cycles 10 --seed 5 \
	--workload "$SLOW" --checker "$B/shim-tests/kv_files {dir} --check"
expect "slow-start-50ms warns once" 1 \
	"$(grep -c "lives are too short for" "$T/slow-start-50ms.out")"
run "slow-start-auto" 0 "kill every +[0-9.]+m?s .*--kill-every auto, from 50ms" \
	--kill-every auto --cycles 12 --seed 5 --json "$T/slow-start-auto.json" \
	--workload "$SLOW" --checker "$B/shim-tests/kv_files {dir} --check"
v=$(sed -n 's/.*"kill_every_ms": \([0-9]*\).*/\1/p' "$T/slow-start-auto.json")
[ "${v:-0}" -gt 300 ] && ok "slow-start-auto lengthened the lives ($v ms)" ||
	bad "slow-start-auto lengthened the lives: kill_every_ms [$v]"
v=$(sed -n 's/.*"acked_writes": \([0-9]*\).*/\1/p' "$T/slow-start-auto.json")
[ "${v:-0}" -gt 0 ] && ok "slow-start-auto acknowledged $v writes" ||
	bad "slow-start-auto acknowledged writes: [$v]"
contains "slow-start-auto prints each new period" "$T/slow-start-auto.out" \
	"^torture: --kill-every auto: 2 of the last 2 cycles at 50ms acknowledged nothing; lives of 100ms from cycle 3"
# the replay line carries the period in force, never "auto"
run "auto-replay" 1 "replay with .*--kill-every [0-9]+\.[0-9]+ms --jitter" \
	--power-loss --kill-every auto --duration 10s --seed 11 \
	--workload "$F {dir} rename unsafe" --checker "$F {dir} rename --check"
run "auto-embedded" 2 "--kill-every auto .*for --target exec" \
	--target embedded --kill-every auto
run "auto-enumerate" 2 "--kill-every auto .*without --enumerate" \
	--enumerate --kill-every auto --workload true --checker true

run "never-acks" 2 "never acknowledged" --cycles 2 --kill-every 20ms \
	--workload 'while :; do echo "intent 1 k v" >&$KEEL_TORTURE_FD; sleep 1; done' \
	--checker true
run "malformed-line" 2 "malformed protocol line 'hello'" --cycles 2 \
	--workload 'echo hello >&$KEEL_TORTURE_FD; sleep 5' --checker true
run "checker-fails" 2 "checker exited with status 1 .*before any crash" \
	--cycles 2 --workload true --checker false
run "checker-garbage" 2 "malformed checker line 'lonely'" --cycles 2 \
	--workload true --checker 'echo lonely'
touch "$T/file"
run "dir-not-writable" 2 "--dir $T/file/d" --cycles 1 --dir "$T/file/d" \
	--workload true --checker true
run "bad-fail-op" 2 "the shim injects faults" --fail pread:EIO:p=0.1 \
	--workload true --checker true
run "unsafe-refused" 2 "do not apply" --unsafe no-sync \
	--workload true --checker true

# ---- a violation explained: the call, the missing step, the call site -------
# (tests/shim/why.c: each saver leaves out one step; the report must name the
# call whose loss alone loses the acknowledged write, and its line)
W=$B/shim-tests/why
site() { echo "$1 \\(why\\.c:$(grep -n "SITE:$2 " tests/shim/why.c | cut -d: -f1)\\)"; }
why() { # why MODE: run MODE, keep the report in $T/why-MODE.out
	run "why-$1" 1 "cycle [0-9]+: lost" --power-loss --duration 10s \
		--seed 11 --workload "$W {dir} $1" --checker "$W {dir} $1 --check"
	sed -n '/^  why (/,/^torture: FAIL/p' "$T/why-$1.out" >"$T/why-$1.why"
}
why_each() {
why rename
contains "why-rename names the rename" "$T/why-rename.why" \
	"rename\\(cfg\\.tmp, cfg\\) -- undone"
contains "why-rename names the missing directory sync" "$T/why-rename.why" \
	"its directory \\(the watched directory\\) was never fsynced after it"
contains "why-rename names the call site" "$T/why-rename.why" \
	"from $(site save_config rename)"
contains "why-rename: only the rename" "$T/why-rename.why" \
	"the smallest cause: 1 operation"
why append
contains "why-append names the write" "$T/why-append.why" \
	"write\\(log, offset [0-9]+, length [0-9]+\\) -- (lost|torn|garbled)"
contains "why-append names the missing sync" "$T/why-append.why" \
	"never synced: no fsync/fdatasync of log followed it"
contains "why-append names the call site" "$T/why-append.why" \
	"from $(site append_record append)"
why truncsave
contains "why-truncsave names the truncate or the write" "$T/why-truncsave.why" \
	"(ftruncate\\(cfg, 0\\)|write\\(cfg, offset 0, length [0-9]+\\)) -- "
contains "why-truncsave names the missing sync" "$T/why-truncsave.why" \
	"never synced: no fsync/fdatasync of cfg followed it"
contains "why-truncsave names the call site" "$T/why-truncsave.why" \
	"from ($(site save_truncate truncate)|$(site save_truncate pwrite))"
}
# a cause among more than a thousand dropped records (1,000 unsynced files of
# noise, as git leaves): the grouped search still names the one rename
why_crowd() {
run "why-crowd" 1 "cycle [0-9]+: lost" --power-loss --kill-every 1s \
	--duration 20s --seed 11 --workload "$W {dir} crowd" \
	--checker "$W {dir} crowd --check"
sed -n '/^  why (/,/^torture: FAIL/p' "$T/why-crowd.out" >"$T/why-crowd.why"
contains "why-crowd: over a thousand records dropped" "$T/why-crowd.why" \
	"over the [0-9]{4,} records it dropped"
contains "why-crowd names the rename alone" "$T/why-crowd.why" \
	"the smallest cause: 1 operation"
contains "why-crowd: the rename" "$T/why-crowd.why" \
	"rename\\(cfg\\.tmp, cfg\\) -- undone"
}
why_trace() {
# the full trace: every call, who made it, and the one the kill interrupted
# (a loop of writes and fdatasyncs: the kill lands in one nearly always; a
# few seeds make it certain enough)
for seed in 1 2 3 4; do
	"$TORTURE" --target exec --quiet --power-loss --kill-every 300ms \
		--duration 10s --seed $seed --workload "$W {dir} bigwrite" \
		--checker "$W {dir} bigwrite --check" >"$T/why-big.out" 2>&1
	tr=$(sed -n 's/^  the full trace of the cycle: //p' "$T/why-big.out")
	[ -n "$tr" ] && grep -q "IN FLIGHT at the kill" "$tr" && break
done
if [ -n "$tr" ] && [ -f "$tr" ]; then ok "why-trace: $tr exists"; else
	bad "why-trace: no trace file named"; tail -c 1500 "$T/why-big.out"; fi
contains "why-trace marks the call in flight at the kill" "${tr:-/dev/null}" \
	" (write|fdatasync) +big .*-> IN FLIGHT at the kill"
contains "why-trace names the workload's calls" "${tr:-/dev/null}" \
	"pid [0-9]+ +workload +write +key off 0 len [0-9]+ -> [0-9]+"
# a violation the replays cannot reproduce is said so, never explained (a
# checker that loses everything on its second run only: the first cycle's;
# kills 2 s apart, so that cycle has acknowledged something even where the
# disk is slow to sync -- at 50 ms a busy machine left it with nothing, and
# an empty answer then loses nothing)
F=$B/shim-tests/family
run "why-norepro" 1 "could not reproduce .*: the full trace is kept" \
	--power-loss --kill-every 2s --duration 10s --seed 11 \
	--workload "$F {dir} rename safe" --checker "n=\$(cat $T/why-n 2>/dev/null \
	|| echo 0); n=\$((n + 1)); echo \$n >$T/why-n; [ \$n -eq 2 ] || \
	$F {dir} rename --check"
if grep -q "the smallest cause" "$T/why-norepro.out"; then
	bad "why-norepro invents a cause"; else ok "why-norepro: no cause"; fi
# --no-explain: no replay, the trace all the same (with the checker's calls)
run "why-off" 1 "cycle [0-9]+: lost" --power-loss --duration 10s --seed 11 \
	--no-explain --workload "$W {dir} rename" \
	--checker "echo x >{dir}/marker; $W {dir} rename --check"
if grep -q "^  why (" "$T/why-off.out"; then bad "why-off still explains"; else
	ok "why-off: --no-explain replays nothing"; fi
tr=$(sed -n 's/^  the full trace of the cycle: //p' "$T/why-off.out")
contains "why-off: the trace names the checker's calls" "${tr:-/dev/null}" \
	"pid [0-9]+ +checker +write +marker off 0 len 2"
}
# the crowd (18 s, most of it its explanation's replays) beside the rest
beside why-crowd why_crowd
beside why-rest eval "why_each; why_trace"
settle

# ---- the examples of docs/targets.md, as documented ------------------------
E=docs/targets
doc_c() {
run "doc-c-pass" 0 "" --power-loss --kill-every 200ms --duration 3s \
	--seed 21 \
	--workload "$B/shim-tests/kv_files {dir}" \
	--checker "$B/shim-tests/kv_files {dir} --check"
run "doc-c-caught" 1 "lost: key" --power-loss --duration 10s --seed 21 \
	--workload "$B/shim-tests/kv_files {dir} --no-dir-sync" \
	--checker "$B/shim-tests/kv_files {dir} --check"
}
beside doc-c doc_c
doc_sh() {
run "doc-sh-pass" 0 "" --power-loss --kill-every 300ms --duration 3s \
	--seed 22 --workload "sh tests/targets/kv_files.sh {dir}" \
	--checker "sh tests/targets/kv_files_check.sh {dir}"
run "doc-sh-caught" 1 "lost: key" --power-loss --kill-every 300ms \
	--duration 20s --seed 22 \
	--workload "sh tests/targets/kv_files.sh {dir} nodirsync" \
	--checker "sh tests/targets/kv_files_check.sh {dir}"
}
beside doc-sh doc_sh
settle

echo "shim.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
