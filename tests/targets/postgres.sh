#!/bin/bash
# postgres.sh DIR [CONFIG] -- PostgreSQL (Debian's postgresql-15) under
# torture --target exec --user postgres (it will not run as root): the
# workload starts a server on DIR/pg, listening only on a socket in DIR,
# and puts keys with one psql process per put (INSERT ... ON CONFLICT DO
# UPDATE, autocommit), acknowledging each put once psql returned.
#
#   CONFIG  default  synchronous_commit=on, fsync=on: a put is answered
#                    once its WAL record is flushed
#           async    synchronous_commit=off: PostgreSQL documents that the
#                    last transactions may be lost at a crash
#           nofsync  fsync=off: documented to risk data loss and corruption
#
# postgres.sh DIR --init (torture's --setup) runs initdb and makes the
# table.  postgres.sh DIR --check starts the server on what the crash left
# (its own crash recovery), prints "KEY VALUE" for every row and stops it;
# exit 3 when the server will not start (availability).
set -u
d=$1
mode=${2:-default}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$bin/postgres" ] || { echo "postgres.sh: no PostgreSQL server" >&2; exit 2; }
pg=$d/pg
port=5432
opts="-c listen_addresses= -c unix_socket_directories=$d -c port=$port"
case $mode in
default|--init|--check) ;;
async) opts="$opts -c synchronous_commit=off" ;;
nofsync) opts="$opts -c fsync=off" ;;
*) echo "postgres.sh: unknown configuration '$mode'" >&2; exit 2 ;;
esac

# the server runs in torture's process group (pg_ctl would start it in a
# session of its own, which the kill at the end of a life would miss), with
# the protocol descriptor closed
start() {
	if [ -n "${KEEL_TORTURE_FD:-}" ]; then
		eval '"$bin/postgres" -D "$pg" $opts >>"$d.pg.log" 2>&1 '"$KEEL_TORTURE_FD"'>&- &'
	else
		"$bin/postgres" -D "$pg" $opts >>"$d.pg.log" 2>&1 &
	fi
	for _ in $(seq 600); do
		"$bin/pg_isready" -q -h "$d" -p $port && return 0
		kill -0 $! 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
stop() { "$bin/pg_ctl" -D "$pg" -m "$1" -w -t 60 stop >/dev/null 2>&1; }
sql() { psql -X -q -A -t -h "$d" -p $port -d postgres -v ON_ERROR_STOP=1 "$@"; }

if [ "$mode" = --init ]; then
	"$bin/initdb" -D "$pg" -A trust -N >/dev/null || exit 1
	start || exit 1
	sql -c "CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL)" || exit 1
	stop fast
	exit $?
fi

if [ "$mode" = --check ]; then
	[ -d "$pg" ] || exit 0
	start || {
		echo "postgres.sh: the server did not start; its log ends:" >&2
		tail -n 5 "$d.pg.log" >&2
		stop immediate
		exit 3
	}
	sql -F ' ' -c "SELECT k, v FROM kv ORDER BY k"
	rc=$?
	stop immediate
	exit $rc
fi

fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
start || exit 1
i=0
while [ $i -lt 100000 ]; do
	i=$((i + 1))
	k=k$((i % 8))
	v=v$i
	echo "intent $i $k $v" >&"$fd"
	sql -c "INSERT INTO kv VALUES ('$k', '$v') ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v" || exit 1
	echo "ack $i" >&"$fd"
done
