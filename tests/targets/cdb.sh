#!/bin/sh
# cdb.sh DIR -- tinycdb (Debian's tinycdb, the cdb program) under torture
# --target exec: a constant database DIR/kv.cdb that each put rebuilds, as
# cdb(1) is used -- the current records dumped (cdb -dm), the key's record
# replaced, and the whole fed to cdb -c -m, which builds DIR/kv.cdb.tmp and
# renames it into place ("temporary database is created, and after it is
# complete, it gets atomically renamed to permanent place", cdb(1)); the
# put is acknowledged once cdb -c returned 0.
#
# cdb.sh DIR --init (torture's --setup) makes the empty database.
# cdb.sh DIR --check prints "KEY VALUE" for each record; exit 1 when cdb
# cannot read the database (corrupt).
#
# A kill during cdb -c leaves DIR/kv.cdb.tmp, which the next cdb -c refuses
# (it opens it O_EXCL): a life removes it first, as its user would.
set -u
d=$1
mode=${2:-}
db=$d/kv.cdb

if [ "$mode" = --init ]; then
	cdb -c -m "$db" </dev/null || exit 1
	exit 0
fi

if [ "$mode" = --check ]; then
	[ -e "$db" ] || exit 0
	cdb -dm "$db" >"$d.dump" 2>"$d.err" ||
		{ echo "cdb.sh: cdb -dm failed: $(cat "$d.err")" >&2; exit 1; }
	grep -v '^$' "$d.dump"
	exit 0
fi

fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
rm -f "$db.tmp"
n=0
while [ $n -lt 100000 ]; do
	n=$((n + 1))
	k=k$((n % 8))
	v=v$n.$$
	echo "intent $n $k $v" >&"$fd"
	{ cdb -dm "$db" | grep -v "^$k " | grep -v '^$'; echo "$k $v"; } >"$d.in" || exit 1
	cdb -c -m "$db" "$d.in" || exit 1
	echo "ack $n" >&"$fd"
done
