#!/bin/sh
# shim_sound.sh BUILD_DIR -- the soundness floor: never a verdict on writes
# the kit did not see.  After every life of a run with power cuts or faults,
# every change below the watched directory must be explained by a recorded
# call (shim.h, shim_tree_check), io_uring and Linux AIO are refused by the
# seccomp guard wherever they are set up (supervisor/supervisor.h), and a
# run that acknowledged writes while recording none is refused.  Each case
# below PASSed before the floor (tests/shim/unseen.c, tests/go/saver.go);
# the controls show the floor refuses nothing the kit did see.  Bounded:
# about a minute and a half.
set -u
B=${1:-build}
TORTURE=$B/torture
U=$B/shim-tests/unseen
T=$(mktemp -d /tmp/keel-shim-sound.XXXXXX)
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
	patient "$T/$name.out" "$TORTURE" --target exec --quiet "$@"
	rc=$?
	expect "$name exits $want ($(( $(date +%s) - t0 ))s)" "$want" $rc
	[ "$rc" = "$want" ] || tail -c 1500 "$T/$name.out"
	[ -z "$pat" ] || contains "$name says so" "$T/$name.out" "$pat"
}

# not_zero NAME: the run's summary shows bytes recorded
not_zero() {
	n=$(sed -n 's/^  tracked calls  *\([0-9]*\) bytes.*/\1/p' "$T/$1.out")
	if [ "${n:-0}" -gt 0 ]; then ok "$1 recorded $n bytes"; else
		bad "$1 recorded no bytes"; fi
}

UNSEEN="unrecorded change in cycle [0-9]+ \(workload\): data was changed"

# ---- the controls: what the kit sees is judged, not refused ----------------
run "safe" 0 "" --front-end shim --power-loss --kill-every 200ms --duration 3s --seed 1 \
	--workload "$U {dir} safe" --checker "$U {dir} --check"
run "unsafe" 1 "cycle [0-9]+: (lost|phantom): key \"data\"" --power-loss \
	--kill-every 200ms --duration 10s --seed 2 \
	--workload "$U {dir} unsafe" --checker "$U {dir} --check"
# a descriptor received with a raw recvmsg is adopted at its first write
# through a wrapper: seen, and its loss judged
run "scm" 1 "cycle [0-9]+: (lost|phantom): key \"data\"" --power-loss \
	--kill-every 200ms --duration 10s --seed 3 \
	--workload "$U {dir} scm" --checker "$U {dir} --check"
# the same received with the recvmsg wrapper into the number of a
# descriptor the shim saw opened on another file and not closed (a raw
# close): the receipt names DIR/data anew, and its loss is judged
run "scm-reuse" 1 "cycle [0-9]+: (lost|phantom): key \"data\"" \
	--front-end shim --power-loss --kill-every 200ms --duration 10s \
	--seed 23 --setup "$U {dir} init" --workload "$U {dir} scm-reuse" \
	--checker "$U {dir} --check"

# ---- writes no wrapper saw: refused, never a verdict ----------------------
# (the record is made durable by --setup, so no life records a write of
# its own and the shim's sample of the newest write has nothing to compare:
# before the floor each of these PASSed)
for how in syscall asm scm-raw; do
	run "$how" 2 "$UNSEEN" --power-loss --kill-every 200ms --duration 3s \
		--seed 4 --setup "$U {dir} init" \
		--workload "$U {dir} $how" --checker "$U {dir} --check"
done
# an unseen write followed by a recorded one on the same file: the
# recorded one's later mtime must not hide the first
run "mixed" 2 "data was changed (between two changes|before the first change) the kit recorded" \
	--front-end shim --power-loss --kill-every 200ms --duration 3s \
	--seed 4 --setup "$U {dir} init" \
	--workload "$U {dir} mixed" --checker "$U {dir} --check"
# ... and no false refusal: a file this life never wrote, renamed; symbolic
# links made; times set on a file with futimens -- under both front ends
for fe in shim supervisor; do
	for how in rename symlink touch; do
		run "$how-$fe" 0 "" --front-end $fe --power-loss \
			--kill-every 200ms --duration 3s --seed 19 \
			--setup "$U {dir} init" \
			--workload "$U {dir} $how" --checker "$U {dir} --check"
	done
done
# the same under --fail: the floor holds whatever the fault model
run "syscall-fail" 2 "$UNSEEN" --fail fdatasync:EIO:p=0.5 \
	--kill-every 200ms --duration 3s --seed 5 --setup "$U {dir} init" \
	--workload "$U {dir} syscall" --checker "$U {dir} --check"
# kills alone undo nothing recorded: no record is needed, and none asked
run "syscall-kills-only" 0 "" --kill-every 200ms --duration 2s --seed 6 \
	--setup "$U {dir} init" \
	--workload "$U {dir} syscall" --checker "$U {dir} --check"

# ---- io_uring: beside the shim the seccomp guard refuses it, naming the
# call site; the supervisor makes it (supervisor/uring.c) and judges it ------
UR=$B/shim-tests/unseen-uring
URING="seccomp guard refused: io_uring_setup: .*--front-end supervisor.*, by pid [0-9]+ \(unseen-uring\) at [^ ]*liburing[^ ]*\+0x[0-9a-f]+"
# (two groups side by side, lib.sh's beside: most of each is waiting)
uring_guard_and_holds() {
	run "uring" 2 "$URING" --front-end shim \
		--power-loss --kill-every 200ms --duration 3s --seed 7 \
		--setup "$UR {dir} init" \
		--workload "$UR {dir} uring" --checker "$UR {dir} --check"
	# in a child of the workload too (the filter is inherited)
	run "uring-child" 2 "seccomp guard refused: io_uring_setup" \
		--front-end shim --power-loss --kill-every 200ms --duration 3s \
		--seed 8 --setup "$UR {dir} init" \
		--workload "sh -c '$UR {dir} uring; exit 0'" \
		--checker "$UR {dir} --check"
	# a program linked with liburing goes to the supervisor by itself,
	# which makes its ring: a write and an fsync submitted (a thread of
	# its own waiting for each completion, as MariaDB's) hold ...
	run "uring-sync" 0 "front end +workload: supervisor.*linked with liburing" \
		--power-loss --kill-every 200ms --duration 3s --seed 7 \
		--setup "$UR {dir} init" \
		--workload "$UR {dir} uring-sync" --checker "$UR {dir} --check"
	not_zero "uring-sync"
	# ... as a write linked to its fsync in one submission does ...
	run "uring-link" 0 "bytes written through the supervisor" \
		--power-loss --kill-every 200ms --duration 3s --seed 9 \
		--setup "$UR {dir} init" \
		--workload "$UR {dir} uring-link" --checker "$UR {dir} --check"
	not_zero "uring-link"
	# ... at every crash point of the submissions too ...
	run "uring-link-enumerate" 0 "crash states +[1-9][0-9]* of" \
		--enumerate --power-loss \
		--workload "$UR {dir} uring-link 3" --checker "$UR {dir} --check"
}
uring_losses_and_refusals() {
	# ... and without their syncs they lose (before: refused, judged
	# nothing; before that: PASS on writes never seen)
	for how in uring uring-nosync; do
		run "$how-supervisor" 1 "cycle [0-9]+: lost: key \"data\"" \
			--power-loss --kill-every 200ms --duration 10s --seed 7 \
			--setup "$UR {dir} init" \
			--workload "$UR {dir} $how" --checker "$UR {dir} --check"
	done
	# garbage in the ring (a tail a billion entries ahead, indices out
	# of range, to_submit 2^32-1): bounded, answered as Linux answers
	# (the same program passes its own checks on the kernel's ring,
	# below), and the puts after it hold
	run "uring-hostile" 0 "bytes written through the supervisor" \
		--power-loss --kill-every 200ms --duration 3s --seed 11 \
		--setup "$UR {dir} init" \
		--workload "$UR {dir} uring-hostile" --checker "$UR {dir} --check"
	mkdir "$T/kernel-ring"
	"$UR" "$T/kernel-ring" init
	for how in uring-hostile uring-link uring-sync; do
		KEEL_TORTURE_FD=1 "$UR" "$T/kernel-ring" $how 3 >/dev/null \
			2>"$T/kernel-ring.err"
		rc=$?
		if grep -q "io_uring_queue_init failed" "$T/kernel-ring.err"; then
			echo "shim_sound.sh: this kernel has no io_uring: $how not" \
			     "compared with it"
		else
			expect "$how on the kernel's own ring" 0 $rc
		fi
	done
	# a write to a pipe through the ring (the acknowledgements) is made
	# when it need not wait, and the protocol reads it
	run "uring-pipe" 0 "bytes written through the supervisor" \
		--power-loss --kill-every 200ms --duration 3s --seed 12 \
		--setup "$UR {dir} init" \
		--workload "$UR {dir} uring-pipe" --checker "$UR {dir} --check"
	not_zero "uring-pipe"
	# what the supervisor does not make is refused: an operation it has
	# no model for, by name ...
	run "uring-open" 2 "refused: io_uring OPENAT \(opcode 18\): not modelled" \
		--power-loss --kill-every 200ms --duration 3s --seed 7 \
		--setup "$UR {dir} init" \
		--workload "$UR {dir} uring-open" --checker "$UR {dir} --check"
	# ... and a kernel thread polling the ring (SQPOLL), which takes
	# submissions with no call at all
	run "uring-sqpoll" 2 "refused: io_uring_setup with flags 0x2 \(SQPOLL" \
		--power-loss --kill-every 200ms --duration 3s --seed 7 \
		--setup "$UR {dir} init" \
		--workload "$UR {dir} uring-sqpoll" --checker "$UR {dir} --check"
}
if grep -q io_uring_queue_init "$UR" 2>/dev/null; then
	beside uring-a uring_guard_and_holds
	beside uring-b uring_losses_and_refusals
	settle
else
	echo "shim_sound.sh: built without liburing: the io_uring cases" \
	     "are not tested (apt-get install liburing-dev)"
fi

# ---- the supervisor sees what no wrapper sees, and judges it ---------------
# (the same writes the shim refused above, recorded and found lost; the
# safe recipe passes with its bytes recorded)
SUP="front end +workload: supervisor"
run "supervisor-safe" 0 "bytes written through the supervisor" \
	--front-end supervisor --power-loss --kill-every 200ms --duration 3s \
	--seed 12 --workload "$U {dir} safe" --checker "$U {dir} --check"
not_zero "supervisor-safe"
for how in syscall asm scm-raw mixed; do
	run "supervisor-$how" 1 "cycle [0-9]+: (lost|phantom): key \"data\"" \
		--front-end supervisor --power-loss --kill-every 200ms \
		--duration 10s --seed 13 --setup "$U {dir} init" \
		--workload "$U {dir} $how" --checker "$U {dir} --check"
done
# a static C program: chosen for the supervisor by itself
S=$B/shim-tests/unseen-static
run "static-safe" 0 "$SUP.*statically linked" --power-loss \
	--kill-every 200ms --duration 3s --seed 14 \
	--workload "$S {dir} safe" --checker "$S {dir} --check"
not_zero "static-safe"
run "static-unsafe" 1 "cycle [0-9]+: (lost|phantom): key \"data\"" --power-loss \
	--kill-every 200ms --duration 10s --seed 15 \
	--workload "$S {dir} unsafe" --checker "$S {dir} --check"
# under the shim alone it is refused, as before
run "static-shim" 2 "statically linked program cannot load the shim" \
	--front-end shim --power-loss --kill-every 200ms --duration 3s \
	--seed 16 --workload "$S {dir} safe" --checker "$S {dir} --check"
# a kill in every life with the faults of --fail: the recipe stops at a
# failed fdatasync and passes; without its sync it loses
run "supervisor-fail" 0 "" --front-end supervisor \
	--fail fdatasync:EIO:p=0.2 --fsync-profile ext4 --kill-every 200ms \
	--duration 3s --seed 17 \
	--workload "$U {dir} safe" --checker "$U {dir} --check"
# a write-only descriptor (tests/shim/wronly.sh: dd conv=notrunc): the
# overwrite's pre-image is read through a descriptor of the supervisor's
# own; before, the write failed with EBADF and the run was a refusal
WO="sh $(pwd)/tests/shim/wronly.sh"
run "supervisor-write-only" 0 "bytes written through the supervisor" \
	--front-end supervisor --power-loss --kill-every 300ms --duration 3s \
	--seed 19 --setup "$WO {dir} --init" --workload "$WO {dir}" \
	--checker "$WO {dir} --check"
not_zero "supervisor-write-only"
run "supervisor-write-only-unsafe" 1 "cycle [0-9]+: lost: key \"data\"" \
	--front-end supervisor --power-loss --kill-every 300ms --duration 10s \
	--seed 19 --setup "$WO {dir} --init" --workload "$WO {dir} unsafe" \
	--checker "$WO {dir} --check"
open_faults() {
	# an open for writing of a file that exists (dd's O_WRONLY|O_CREAT) is a
	# crash point and meets --fail's open faults under either front end: the
	# supervisor let it pass unseen before, and injected none
	for fe in shim supervisor; do
		run "open-fault-$fe" 0 "faults injected +[1-9][0-9]* \(workloads that stopped on one: [1-9]" \
			--front-end $fe --fail open:EIO:p=0.3 --kill-every 300ms \
			--duration 3s --seed 26 --setup "$WO {dir} --init" \
			--workload "$WO {dir}" --checker "$WO {dir} --check"
	done
}
setsid_kills() {
	# a process that left the workload's group (setsid, as PostgreSQL's
	# backends do) is killed with it: before, it outlived the kill and met the
	# checker (tests/shim/daemon.sh fails while it runs)
	DS="sh $(pwd)/tests/shim/daemon.sh"
	for fe in shim supervisor; do
		run "setsid-$fe" 0 "bytes written through the $fe" \
			--front-end $fe --kill-every 300ms --duration 3s --seed 27 \
			--setup "$DS {dir} --init" --workload "$DS {dir}" \
			--checker "$DS {dir} --check"
		not_zero "setsid-$fe"
	done
}
beside open-fault open_faults
beside setsid setsid_kills
settle
# a copy into the watched file (copy_file_range) under injected short
# writes: the program sees the short counts and loops, and the recipe holds
export UNSEEN_SHORTS="$T/copy-shorts"
run "supervisor-copy-short" 0 "bytes written through the supervisor" \
	--front-end supervisor --fail pwrite:short:p=0.5 --power-loss \
	--kill-every 300ms --duration 3s --seed 21 --setup "$U {dir} init" \
	--workload "$U {dir} copy" --checker "$U {dir} --check"
unset UNSEEN_SHORTS
if [ -e "$T/copy-shorts" ]; then ok "supervisor-copy-short: the program saw a short count"
else bad "supervisor-copy-short: no short count reached the program"; fi
# 8 fallocate calls a put under ulimit -n 256: the supervisor keeps no
# descriptor of a call past its answer
printf '#!/bin/sh\nulimit -n 256 || exit 2\nexec "%s" "$@"\n' \
	"$TORTURE" >"$T/lowfd"
chmod +x "$T/lowfd"
keep_torture=$TORTURE
TORTURE=$T/lowfd
run "supervisor-fallocate-many" 0 "bytes written through the supervisor" \
	--front-end supervisor --power-loss --kill-every 300ms --duration 3s \
	--seed 22 --setup "$U {dir} init" --workload "$U {dir} fallocate" \
	--checker "$U {dir} --check"
# a record written a byte a call: the supervisor copies one-byte buffers
run "supervisor-bytewise" 0 "bytes written through the supervisor" \
	--front-end supervisor --power-loss --kill-every 300ms --duration 3s \
	--seed 25 --setup "$U {dir} init" --workload "$U {dir} bytewise" \
	--checker "$U {dir} --check"
# and the shim's truncate(path), which opens the file to truncate it
run "shim-truncate-many" 0 "bytes written through the shim" \
	--front-end shim --power-loss --kill-every 300ms --duration 3s \
	--seed 24 --setup "$U {dir} init" --workload "$U {dir} truncate" \
	--checker "$U {dir} --check"
TORTURE=$keep_torture
# --enumerate's crash point stops the whole workload: a shell's child that
# reaches it is not the only process to die (tests/shim/childsync.sh: the
# shell acknowledged after the killed child's syncfs, a false loss)
CS="sh $(pwd)/tests/shim/childsync.sh"
for fe in shim supervisor; do
	run "enumerate-child-sync-$fe" 0 "" --front-end $fe --enumerate \
		--power-loss --workload "$CS {dir}" --checker "$CS {dir} --check"
	run "enumerate-child-nosync-$fe" 1 "lost: key \"k\"" --front-end $fe \
		--enumerate --power-loss --workload "$CS {dir} unsafe" \
		--checker "$CS {dir} --check"
done
run "supervisor-enumerate" 1 "lost" --front-end supervisor --enumerate \
	--seed 18 --setup "$U {dir} init" \
	--workload "$U {dir} unsafe 5" --checker "$U {dir} --check"

# ---- direct I/O (O_DIRECT) is modelled, not refused ------------------------
# a direct write waits in the device's volatile cache until a flush, like a
# buffered one: with fdatasync (or O_DSYNC) it holds, its bytes recorded;
# without a sync a power cut loses it.  Refused before, under both front
# ends.  (A file system that refuses O_DIRECT -- tmpfs before Linux 6.6 --
# cannot show it.)
if dd if=/dev/zero of="$T/dio" bs=4096 count=1 oflag=direct 2>/dev/null; then
	for fe in shim supervisor; do
		for how in direct direct-dsync; do
			run "$how-$fe" 0 "" --front-end $fe --power-loss \
				--kill-every 200ms --duration 3s --seed 21 \
				--workload "$U {dir} $how" \
				--checker "$U {dir} --check"
			not_zero "$how-$fe"
		done
		run "direct-unsafe-$fe" 1 "cycle [0-9]+: (lost|phantom): key \"data\"" \
			--front-end $fe --power-loss --kill-every 200ms \
			--duration 10s --seed 22 \
			--workload "$U {dir} direct-unsafe" \
			--checker "$U {dir} --check"
	done
else
	echo "shim_sound.sh: the file system of $T refuses O_DIRECT: the" \
	     "direct-I/O cases are not tested"
fi

# ---- a full cache names the limit and the flag that raises it --------------
# (--cache-mib 1: a workload that never syncs fills a MiB of records within
# a life; --setup's writes are never counted: it may fill what it likes)
for fe in shim supervisor; do
	run "cache-full-$fe" 2 "cache is full: more unsynced bytes than its records hold.*--cache-mib" \
		--front-end $fe --power-loss --kill-every 2s --duration 4s \
		--seed 20 --cache-mib 1 --setup "$U {dir} init" \
		--workload "$U {dir} unsafe" --checker "$U {dir} --check"
done

# ---- a run that acknowledged writes while recording none ------------------
# (bash writes its value outside the watched directory: the checker reads
# it from there; nothing below the directory ever changes)
OUT=$T/elsewhere
ELSE="i=0; while [ \$i -lt 100000 ]; do i=\$((i+1)); echo \"intent \$i k v\$i\" >&\$KEEL_TORTURE_FD; echo v\$i > $OUT; echo \"ack \$i\" >&\$KEEL_TORTURE_FD; done"
run "acked-unrecorded" 2 "acknowledged [0-9]+ operations by cycle [0-9]+, but the kit recorded no change" \
	--power-loss --kill-every 200ms --duration 3s --seed 9 \
	--workload "bash -c '$ELSE'" \
	--checker "bash -c 'if [ -s $OUT ]; then echo k \$(cat $OUT); fi'"

# ---- a Go saver: its own system calls, seen by no wrapper -----------------
# built with cgo (dynamically linked: the shim loads and sees nothing) and
# without (static: the shim cannot load).  The supervisor is chosen for
# both: the full recipe passes with its bytes recorded, the two without a
# sync lose under --fs posix power cuts; under the shim alone each is
# refused, never passed.
if command -v go >/dev/null 2>&1; then
	G=$T/go
	mkdir -p "$G"
	export GOCACHE="$(cd "$B" && pwd)/go-cache" GOPATH="$G/path" \
		GO111MODULE=off GOFLAGS=
	CGO_ENABLED=1 go build -ldflags=-linkmode=external -o "$G/saver-cgo" \
		tests/go/saver.go >"$T/go-build.out" 2>&1 &&
	CGO_ENABLED=0 go build -o "$G/saver-static" tests/go/saver.go \
		>>"$T/go-build.out" 2>&1
	expect "go savers build" 0 $?
	for b in cgo static; do
		run "go-$b-full" 0 "$SUP.*Go program" --power-loss \
			--kill-every 300ms --duration 3s --seed 10 \
			--workload "$G/saver-$b {dir} full" \
			--checker "$G/saver-$b {dir} --check"
		not_zero "go-$b-full"
		for how in nodirsync nofsync; do
			run "go-$b-$how" 1 "cycle [0-9]+: lost: key \"cfg\"" \
				--power-loss --kill-every 300ms --duration 20s \
				--seed 11 --workload "$G/saver-$b {dir} $how" \
				--checker "$G/saver-$b {dir} --check"
		done
	done
	run "go-cgo-shim" 2 "unrecorded change in cycle 1 \(workload\): file cfg" \
		--front-end shim --power-loss --kill-every 300ms --duration 3s \
		--seed 10 --workload "$G/saver-cgo {dir} nofsync" \
		--checker "$G/saver-cgo {dir} --check"
	run "go-static-shim" 2 "statically linked program cannot load the shim" \
		--front-end shim --power-loss --kill-every 300ms --duration 3s \
		--seed 11 --workload "$G/saver-static {dir} nofsync" \
		--checker "$G/saver-static {dir} --check"
else
	echo "shim_sound.sh: no Go toolchain: the Go savers are not tested" \
	     "(apt-get install golang-go)"
fi

# ---- static binaries of other languages and libcs -------------------------
# a Rust saver with its C runtime linked in (Debian's rustc,
# -C target-feature=+crt-static) and the C saver built against musl
# (musl-gcc -static): neither can load the shim; the supervisor is chosen
# and judges them -- the full recipes hold, the ones without syncs lose
if command -v rustc >/dev/null 2>&1; then
	mkdir -p "$T/rust"
	rustc -O -C target-feature=+crt-static -o "$T/rust/saver" \
		tests/rust/saver.rs >"$T/rust-build.out" 2>&1
	expect "rust saver builds" 0 $?
	RS=$T/rust/saver
	run "rust-full" 0 "$SUP.*statically linked" --power-loss \
		--kill-every 300ms --duration 3s --seed 23 \
		--workload "$RS {dir} full" --checker "$RS {dir} --check"
	not_zero "rust-full"
	for how in nodirsync nofsync; do
		run "rust-$how" 1 "cycle [0-9]+: lost: key \"cfg\"" \
			--power-loss --kill-every 300ms --duration 20s \
			--seed 24 --workload "$RS {dir} $how" \
			--checker "$RS {dir} --check"
	done
else
	echo "shim_sound.sh: no rustc: the Rust saver is not tested" \
	     "(apt-get install rustc)"
fi
if command -v musl-gcc >/dev/null 2>&1; then
	musl-gcc -static -O2 -o "$T/unseen-musl" tests/shim/unseen.c \
		>"$T/musl-build.out" 2>&1
	expect "musl saver builds" 0 $?
	MU=$T/unseen-musl
	run "musl-safe" 0 "$SUP.*statically linked" --power-loss \
		--kill-every 200ms --duration 3s --seed 25 \
		--workload "$MU {dir} safe" --checker "$MU {dir} --check"
	not_zero "musl-safe"
	run "musl-unsafe" 1 "cycle [0-9]+: (lost|phantom): key \"data\"" \
		--power-loss --kill-every 200ms --duration 10s --seed 26 \
		--workload "$MU {dir} unsafe" --checker "$MU {dir} --check"
else
	echo "shim_sound.sh: no musl-gcc: the musl saver is not tested" \
	     "(apt-get install musl-tools)"
fi

echo "shim_sound.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
