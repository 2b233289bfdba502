#!/bin/sh
# bench/device-bytes.sh [SECONDS [ROUNDS]] -- bytes the block device writes
# per durable commit, keel against its peers, on a device of the run's own,
# written to docs/results/engine.md (section "device-bytes",
# bench/results.sh).
#
# The shared disk's counters move with everyone's work, so this makes an
# ext4 on a loop device backed by a 1 GiB file (needs root: losetup, mkfs,
# mount), runs the commit workload there with 1 and 16 writers and 16-byte
# values, SECONDS (default 3) per measurement and ROUNDS (default 2) rounds:
#
#   build-bench/bench-engine --engine keel,sqlite,leveldb,rocksdb,lmdb,plain-ring \
#       --workload commit --threads 1,16 --value-sizes 16 --seconds S \
#       --rounds R --dir MOUNT/b
#
# and puts bench/report.sh's tables in the page; the figure to read is
# "Device bytes per commit" (dev_bytes_per_op in the JSONL).  Nothing else
# writes to the loop device, and what ext4 sends it is what it would send a
# disk.  The loop device, its mount and the image are removed at the end.
#
# Environment: B (build directory for bench-engine, default build-bench),
# IMG_DIR (where the 1 GiB image goes, default /var/tmp).
set -eu

cd "$(dirname "$0")/.."
. bench/results.sh
results_begin "$0" "$@"
results_env B IMG_DIR
B=${B:-build-bench}
SECS=${1:-3}
ROUNDS=${2:-2}
[ "$(id -u)" = 0 ] || { echo "device-bytes: needs root (losetup, mount)" >&2; exit 2; }

make B="$B" -j2 "$B/bench-engine" >&2

T=$(mktemp -d "${IMG_DIR:-/var/tmp}/keel-device-bytes.XXXXXX")
LOOP=""
cleanup() {
	mountpoint -q "$T/mnt" 2>/dev/null && umount "$T/mnt"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

truncate -s 1G "$T/img"
LOOP=$(losetup -f --show "$T/img")
mkfs.ext4 -q "$LOOP"
mkdir "$T/mnt"
mount "$LOOP" "$T/mnt"
mkdir "$T/mnt/b"

run_id=$(date -u +%Y%m%dT%H%M%SZ)-$$
"$B/bench-engine" --engine keel,sqlite,leveldb,rocksdb,lmdb,plain-ring \
	--workload commit --threads 1,16 --value-sizes 16 --seconds "$SECS" \
	--rounds "$ROUNDS" --dir "$T/mnt/b" --run-id "$run_id" --out "$T/run.jsonl"

{
	echo "It ran \`$B/bench-engine --engine keel,sqlite,leveldb,rocksdb,lmdb,plain-ring"
	echo "--workload commit --threads 1,16 --value-sizes 16 --seconds $SECS --rounds $ROUNDS"
	echo "--dir MOUNT/b\` on an ext4 of its own: a loop device ($LOOP) backed by a 1 GiB"
	echo "file, made for the run.  Nothing else wrote to that device, so its"
	echo "\"Device bytes per commit\" table is the one to read here; the commit rates"
	echo "are those of a loop device over a file on the shared disk."
	echo
	sh bench/report.sh "$T/run.jsonl"
} >"$T/section.md"
cat "$T/section.md"
results_write engine device-bytes "Engine: keel against LMDB, SQLite, RocksDB and LevelDB" \
	"$T/mnt/b" "$T/section.md"
