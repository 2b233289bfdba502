#!/bin/sh
# dpkg_selections.sh DIR [--check | --setup] -- dpkg's own database as a
# workload for torture --target exec: each put sets one package's
# selection with `dpkg --admindir DIR --set-selections` (dpkg writes
# status-new, fsyncs it, renames it over status and syncs the directory
# with fsync(dirfd(opendir(DIR))) -- lib/dpkg/dir.c, dir_sync_path); the
# put is acknowledged once dpkg returned 0.  --setup makes DIR an
# administrative directory with eight installed packages, p0..p7;
# --check prints "PACKAGE SELECTION" per package.
d=$1
case ${2:-} in
--setup)
	mkdir -p "$d/updates" "$d/info" "$d/triggers" || exit 1
	: >"$d/available"
	for k in 0 1 2 3 4 5 6 7; do
		printf 'Package: p%s\nStatus: install ok installed\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n\n' "$k"
	done >"$d/status"
	exit 0 ;;
--check)
	dpkg --admindir "$d" --get-selections | awk '{ print $1, $2 }'
	exit 0 ;;
esac
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
n=0
while [ $n -lt 100000 ]; do
	n=$((n + 1))
	k=p$(( (KEEL_TORTURE_SEED % 8 + n) % 8 ))
	case $(( (KEEL_TORTURE_SEED % 3 + n / 8) % 3 )) in
	0) v=hold ;; 1) v=deinstall ;; *) v=install ;;
	esac
	echo "intent $n $k $v" >&"$fd"
	echo "$k $v" | dpkg --admindir "$d" --set-selections || exit 1
	echo "ack $n" >&"$fd"
done
