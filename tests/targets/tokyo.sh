#!/bin/sh
# tokyo.sh DIR KV -- Tokyo Cabinet's hash database (Debian's
# libtokyocabinet9) with HDBOTSYNC ("every transaction synchronizes",
# tchdb.h) under torture --target exec.  KV is targets/findings/tokyo-commit/
# kv.c built (cc kv.c -ltokyocabinet): each put is one kv process that opens
# DIR/casket.tch (writer, HDBOTSYNC), puts key k in a transaction and
# commits; the put is acknowledged once tchdbtrancommit returned true.
#
# tokyo.sh DIR KV --init (torture's --setup) creates the database with a
# first value, "init" (the creation itself never syncs the directory, a gap
# of its own; docs/findings.md).  tokyo.sh DIR KV --check prints "k VALUE"
# (nothing for "init"); exit 1 when the database will not open.
set -u
d=$1
kv=$2
mode=${3:-}
db=$d/casket.tch

if [ "$mode" = --init ]; then
	"$kv" "$db" put init >/dev/null || exit 1
	exit 0
fi

if [ "$mode" = --check ]; then
	[ -e "$db" ] || exit 0
	v=$("$kv" "$db" get) || exit 1
	case $v in init|'(none)') ;; *) echo "k $v" ;; esac
	exit 0
fi

fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
n=0
while [ $n -lt 100000 ]; do
	n=$((n + 1))
	v=v$n.$$
	echo "intent $n k $v" >&"$fd"
	"$kv" "$db" put "$v" >/dev/null || exit 1
	echo "ack $n" >&"$fd"
done
