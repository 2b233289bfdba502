#!/bin/sh
# rrdtool.sh DIR -- RRDtool (Debian's rrdtool) under torture --target exec:
# a round-robin database DIR/kv.rrd (one GAUGE data source, a step of one
# second) that each put updates with rrdtool update, one process per put,
# as a collector's cron job does; the put (key "last", its value the
# number the update stored) is acknowledged once rrdtool update returned 0.
# Each update's time stamp is one second after the last the file holds.
#
# rrdtool.sh DIR --init (torture's --setup) makes the database.
# rrdtool.sh DIR --check prints "last VALUE" from rrdtool lastupdate (the
# last value stored); exit 1 when rrdtool cannot read the file (corrupt).
set -u
d=$1
mode=${2:-}
db=$d/kv.rrd

last() { rrdtool lastupdate "$db" | sed -n 's/^\([0-9]*\): *\([^ ]*\).*/\1 \2/p'; }

if [ "$mode" = --init ]; then
	rrdtool create "$db" --start 1000000000 --step 1 \
		DS:v:GAUGE:10:U:U RRA:LAST:0.5:1:100 || exit 1
	exit 0
fi

if [ "$mode" = --check ]; then
	[ -e "$db" ] || exit 0
	l=$(last) || exit 1
	rrdtool lastupdate "$db" >/dev/null 2>"$d.err" ||
		{ echo "rrdtool.sh: $(cat "$d.err")" >&2; exit 1; }
	v=${l#* }
	case $v in ''|U|nan|NaN) ;; *) echo "last v$v" ;; esac
	exit 0
fi

fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
l=$(last)
t=${l%% *}
[ -n "$t" ] || exit 1
n=0
while [ $n -lt 100000 ]; do
	n=$((n + 1))
	t=$((t + 1))
	v=$(printf "%d%06d" $$ $n)
	echo "intent $n last v$v" >&"$fd"
	rrdtool update "$db" "$t:$v" || exit 1
	echo "ack $n" >&"$fd"
done
