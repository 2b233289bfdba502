#!/bin/bash
# postgres_stats.sh DIR -- PostgreSQL's statistics file across a clean
# shutdown and a power cut (LazyFS's PostgreSQL bug 1), under torture
# --target exec --user postgres.  The workload starts a server on DIR/pg
# (tests/targets/postgres.sh --init made it), inserts keys with one psql
# per put (acknowledged once psql returned), stops the server cleanly
# (pg_ctl stop -m fast: the shutdown writes pg_stat/pgstat.stat) and waits
# for the kill and the power cut.
#
# postgres_stats.sh DIR --check starts the server on what is left, prints
# "KEY VALUE" for every row and stops it; it exits 1 (a structure
# verdict) when the server's log says "corrupted statistics file" for
# this start, 3 when the server will not start.
set -u
d=$1
mode=${2:-}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$bin/postgres" ] || { echo "postgres_stats.sh: no PostgreSQL server" >&2; exit 2; }
pg=$d/pg
port=5432
opts="-c listen_addresses= -c unix_socket_directories=$d -c port=$port"
log=$d.pg.log

start() {
	if [ -n "${KEEL_TORTURE_FD:-}" ]; then
		eval '"$bin/postgres" -D "$pg" $opts >>"$log" 2>&1 '"$KEEL_TORTURE_FD"'>&- &'
	else
		"$bin/postgres" -D "$pg" $opts >>"$log" 2>&1 &
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

if [ "$mode" = --check ]; then
	[ -d "$pg" ] || exit 0
	before=$(wc -c <"$log" 2>/dev/null || echo 0)
	start || { stop immediate; exit 3; }
	sql -F ' ' -c "SELECT k, v FROM kv ORDER BY k"
	rc=$?
	stop immediate
	if tail -c +$((before + 1)) "$log" | grep -m1 'corrupted statistics file' >&2; then
		exit 1
	fi
	exit $rc
fi

fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
start || exit 1
base=$(( $(date +%s%N) / 1000000 % 100000000 ))
for j in 1 2 3 4 5 6; do
	i=$j
	k=k$((j % 4))
	v=v$base.$j
	echo "intent $i $k $v" >&"$fd"
	sql -c "INSERT INTO kv VALUES ('$k', '$v') ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v" || exit 1
	echo "ack $i" >&"$fd"
done
stop fast || exit 1
sleep 600
