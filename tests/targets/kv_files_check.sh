#!/bin/sh
# kv_files_check.sh DIR -- the checker of kv_files.sh: one "KEY VALUE" line
# per key file (an empty file shows as the value "<empty>").
for f in "$1"/k*; do
	case $f in *.tmp|*'/k*') continue ;; esac
	v=$(cat "$f")
	echo "${f##*/} ${v:-<empty>}"
done
