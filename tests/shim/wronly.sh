#!/bin/sh
# wronly.sh DIR [unsafe] -- a saver that overwrites DIR/data in place
# through a write-only descriptor (dd conv=notrunc: O_WRONLY, no O_TRUNC;
# Java's FileOutputStream opens the same way), then syncs it (unsafe: it
# does not).  The supervisor must read the bytes an overwrite replaces
# (the pre-image) through a descriptor of its own: through the program's,
# the write failed with EBADF (ZooKeeper's transaction log).
#
# wronly.sh DIR --init writes the first value (torture's --setup);
# wronly.sh DIR --check prints it.
set -u
d=$1
sync=fsync
case ${2:-} in
--init) printf 'data v%08d\n' 0 >"$d/data"; exit 0 ;;
--check) cat "$d/data"; exit 0 ;;
unsafe) sync=notrunc ;;
esac
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
i=0
while :; do
	i=$((i + 1))
	v=$(printf 'v%08d' $i)
	echo "intent $i data $v" >&"$fd"
	printf 'data %s\n' "$v" |
		dd of="$d/data" conv=notrunc,$sync status=none || exit 1
	echo "ack $i" >&"$fd"
done
