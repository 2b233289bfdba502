#!/bin/sh
# sqlite3.sh -- the adapter of torture --target sqlite3:CONFIG
# (docs/claims.md): the sqlite3 command-line shell, one process per put, as
# a shell script stores a setting; the put is acknowledged once the shell
# returned 0.
#
#   sqlite3 DIR CONFIG           the workload ($KEEL_TORTURE_FD)
#   sqlite3 DIR CONFIG --check   "KEY VALUE" for each row
#   sqlite3 --version | --configs
#
# CONFIG  defaults  the shell's own settings (rollback journal, DELETE
#                   mode, synchronous=FULL)
#         extra     PRAGMA synchronous=EXTRA (the journal's directory is
#                   synced too)
if [ "$1" = --configs ]; then
	printf '%s\n' defaults extra
	exit 0
fi
if [ "$1" = --version ]; then
	sqlite3 --version | cut -d' ' -f1
	exit 0
fi
d=$1 config=$2 mode=${3:-}
case $config in
defaults) pragma="" ;;
extra) pragma="PRAGMA synchronous=EXTRA;" ;;
*) echo "sqlite3.sh: unknown configuration '$config'" >&2; exit 2 ;;
esac
db=$d/kv.db
if [ "$mode" = --check ]; then
	[ -f "$db" ] || exit 0
	sqlite3 "$db" "SELECT k || ' ' || v FROM kv;" 2>/dev/null && exit 0
	# a database the shell cannot read is a structure violation
	sqlite3 "$db" "SELECT count(*) FROM sqlite_master;" >/dev/null 2>&1 ||
		exit 1
	exit 0
fi
fd=${KEEL_TORTURE_FD:?run me under torture --target sqlite3}
sqlite3 "$db" "$pragma CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT);" ||
	exit 1
n=0
while [ $n -lt 100000 ]; do
	n=$((n + 1))
	k=k$(( (KEEL_TORTURE_SEED % 8 + n) % 8 ))
	v=v$n.$$
	echo "intent $n $k $v" >&"$fd"
	sqlite3 "$db" "$pragma INSERT OR REPLACE INTO kv VALUES ('$k', '$v');" ||
		exit 1
	echo "ack $n" >&"$fd"
done
