#!/bin/bash
# postgres_fpw.sh DIR [--init|--check] -- tests/targets/postgres.sh with
# full_page_writes = off (LazyFS's PostgreSQL "vcc" case: a data page torn
# by a crash during a checkpoint has no full-page image in the WAL to
# repair it).  --init runs postgres.sh's and turns full_page_writes off in
# postgresql.conf; the workload runs postgres.sh's beside a loop that asks
# for a CHECKPOINT every half second (so the data files are written while
# the lives last); --check is postgres.sh's.
set -u
d=$1
mode=${2:-}
here=$(dirname "$0")
case $mode in
--init)
	bash "$here/postgres.sh" "$d" --init || exit 1
	echo "full_page_writes = off" >>"$d/pg/postgresql.conf"
	exit 0 ;;
--check)
	exec bash "$here/postgres.sh" "$d" --check ;;
esac
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
eval '(while sleep 0.5; do
	psql -X -q -h "$d" -p 5432 -d postgres -c CHECKPOINT >/dev/null 2>&1
done) '"$fd"'>&- &'
exec bash "$here/postgres.sh" "$d"
