#!/bin/bash
# saver.bash DIR [nodirsync|cp] -- a workload for torture --target exec: the
# shell saver every configuration tool writes,
#     printf '%s' "$v" > cfg.tmp && sync cfg.tmp && mv cfg.tmp cfg && sync .
# in bash, whose printf builtin writes to its redirected stdout through
# glibc's internal write: no exported function the shim wraps.  Only the
# syscall backstop (--syscall-backstop) sees that write; without it the run
# is refused as a bypass.  With "nodirsync" the directory sync is left out;
# with "cp" the value is written to cfg.new and copied to cfg.tmp by cp(1),
# which copies with copy_file_range (after trying a FICLONE ioctl).
# saver.bash DIR --check prints the recovered state: "cfg VALUE".
d=$1
if [ "$2" = --check ]; then
	[ -e "$d/cfg" ] || exit 0
	v=$(cat "$d/cfg")
	echo "cfg ${v:-<empty>}"
	exit 0
fi
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
i=0
while [ $i -lt 1000 ]; do
	i=$((i + 1))
	v=v$i
	echo "intent $i cfg $v" >&"$fd"
	if [ "$2" = cp ]; then
		printf '%s' "$v" > "$d/cfg.new" && cp "$d/cfg.new" "$d/cfg.tmp"
	else
		printf '%s' "$v" > "$d/cfg.tmp"
	fi &&
		sync "$d/cfg.tmp" &&
		mv "$d/cfg.tmp" "$d/cfg" &&
		{ [ "$2" = nodirsync ] || sync "$d"; } || exit 1
	echo "ack $i" >&"$fd"
done
