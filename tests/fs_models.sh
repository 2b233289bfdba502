#!/bin/sh
# fs_models.sh BUILD_DIR -- torture --fs: the file system model reaches the
# LD_PRELOAD shim and the embedded writer.  tests/shim/family.c's fsyncname
# workload fsyncs each file after renaming it and never its directory: it
# passes where a file's fsync makes its name durable (ext4, xfs, btrfs) and
# is caught under posix; without that fsync ext4 catches it too.  Bad input
# is answered with exit 2 and a message.  Bounded: about half a minute.
set -u
B=${1:-build}
TORTURE=$B/torture
F=$B/shim-tests/family
T=$(mktemp -d /tmp/keel-fs-models.XXXXXX)
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
	patient "$T/$name.out" "$TORTURE" --quiet "$@"
	rc=$?
	expect "$name exits $want" "$want" $rc
	[ "$rc" = "$want" ] || tail -c 1500 "$T/$name.out"
	[ -z "$pat" ] || contains "$name says so" "$T/$name.out" "$pat"
}

fam() { # fam SAFETY: the fsyncname workload and its checker
	echo "--workload" "$F {dir} fsyncname $1" \
		"--checker" "$F {dir} fsyncname --check"
}

for fs in ext4 xfs btrfs; do
	run "fsyncname-$fs" 0 "file system model +$fs" --target exec \
		--power-loss --fs $fs --kill-every 30ms --jitter 90 \
		--duration 2s --seed 11 \
		--workload "$F {dir} fsyncname safe" \
		--checker "$F {dir} fsyncname --check"
done
run "fsyncname-posix" 1 "cycle [0-9]+: lost" --target exec --power-loss \
	--fs posix --kill-every 30ms --jitter 90 --duration 10s --seed 11 \
	--workload "$F {dir} fsyncname safe" \
	--checker "$F {dir} fsyncname --check"
contains "posix names the unsynced directory" "$T/fsyncname-posix.out" \
	"rename +k[0-9].tmp -> k[0-9] .*directory NOT synced"
# the default is posix: the same verdict without --fs
run "fsyncname-default" 1 "cycle [0-9]+: lost" --target exec --power-loss \
	--kill-every 30ms --jitter 90 --duration 10s --seed 11 \
	--workload "$F {dir} fsyncname safe" \
	--checker "$F {dir} fsyncname --check"
run "fsyncname-unsafe-ext4" 1 "cycle [0-9]+: lost" --target exec \
	--power-loss --fs ext4 --kill-every 30ms --jitter 90 --duration 10s \
	--seed 11 --workload "$F {dir} fsyncname unsafe" \
	--checker "$F {dir} fsyncname --check"
contains "the replay carries --fs" "$T/fsyncname-unsafe-ext4.out" \
	"replay with .*--power-loss .*--fs ext4"

# the embedded writer: keel syncs its directory, so every model passes
run "embedded-xfs" 0 "file system model +xfs" --power-loss --fs xfs \
	--kill-every 50ms --duration 2s --seed 12

# bad input
run "unknown-fs" 2 "unknown file system model \(known: posix, ext4, ext4-writeback, xfs, btrfs\)" \
	--fs zfs
run "fs-without-cut" 2 "--fs says what a power cut keeps.*needs --power-loss" \
	--fs ext4 --duration 1s

echo "fs_models.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
