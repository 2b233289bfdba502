#!/bin/sh
# kv_files.sh DIR [nodirsync] -- a workload for torture --target exec: a
# key-value store with one file per key, each put written to a temporary
# file, fsynced, renamed over the key's file, and the directory fsynced.
# With "nodirsync" the directory fsync is left out (the classic bug).
d=$1
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
i=0
while [ $i -lt 1000 ]; do
	i=$((i + 1))
	k=k$((i % 8))
	v=v$i
	echo "intent $i $k $v" >&"$fd"
	printf '%s' "$v" > "$d/$k.tmp"
	sync "$d/$k.tmp"             # fsync the new file
	mv "$d/$k.tmp" "$d/$k"       # rename over the old one
	[ "$2" = nodirsync ] || sync "$d"   # fsync the directory
	echo "ack $i" >&"$fd"
done
