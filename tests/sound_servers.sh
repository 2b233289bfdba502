#!/bin/sh
# sound_servers.sh BUILD_DIR -- servers people run, judged through the
# front end that sees them: etcd (a Go program, Debian's etcd-server),
# PostgreSQL (as user postgres, --user) and MariaDB (as user mysql) under
# power cuts, and a small workload as user nobody whose calls must be
# checked as its own.  With its defaults every acknowledged put survives, its bytes
# recorded by the supervisor; with --unsafe-no-fsync (etcd's own flag that
# skips the WAL's fsyncs) a power cut loses acknowledged puts -- before the
# supervisor both PASSed, 0 bytes seen.  Bounded: about a minute (the servers
# side by side); each
# server skipped (saying so) where it is missing.
set -u
B=${1:-build}
TORTURE=$B/torture
E=tests/targets/etcd.sh
T=$(mktemp -d /tmp/keel-servers.XXXXXX)
fails=0
checks=0
trap 'rm -rf "$T"' EXIT
mkdir "$T/tmp"
# as /tmp is: the postgres user (--user) reaches its directory through it,
# and writes its server log beside it
chmod 755 "$T"
chmod 1777 "$T/tmp"
export TMPDIR="$T/tmp"

. "$(dirname "$0")/lib.sh"

have_etcd=1
for tool in etcd curl jq; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "sound_servers.sh: no $tool (apt-get install etcd-server" \
		     "curl jq): etcd is not tested"
		have_etcd=0
	fi
done

run() {
	name=$1 want=$2 pat=$3
	shift 3
	t0=$(date +%s)
	patient "$T/$name.out" "$TORTURE" --target exec --quiet "$@"
	rc=$?
	case "|$want|" in
	*"|$rc|"*) ok "$name exits $rc ($(( $(date +%s) - t0 ))s)" ;;
	*) bad "$name exits $want ($(( $(date +%s) - t0 ))s): got $rc"
	   tail -c 2000 "$T/$name.out" ;;
	esac
	[ -z "$pat" ] || contains "$name says so" "$T/$name.out" "$pat"
}

# (the servers side by side, two at a time, lib.sh's beside: most of each
# run is a server starting or a life waiting for its kill)
etcd_cases() {
	if [ $have_etcd = 1 ]; then
		# lives of 4 s: etcd starts in about one, and each put is a curl process
		run "etcd-defaults" 0 "front end +workload: supervisor" --power-loss \
			--kill-every 4s --cycles 3 --seed 1 \
			--setup "bash $E {dir} --init" --workload "bash $E {dir}" \
			--checker "bash $E {dir} --check"
		n=$(sed -n 's/^  tracked calls  *\([0-9]*\) bytes.*/\1/p' "$T/etcd-defaults.out")
		if [ "${n:-0}" -gt 0 ]; then ok "etcd-defaults recorded $n bytes"; else
			bad "etcd-defaults recorded no bytes"; fi
		# the loss needs a put whose WAL entry was not yet written back when the
		# power went: a few cycles, each ending at the first loss
		# (or etcd will not start on what the cut left of its WAL: unavailable, 3)
		run "etcd-unsafe-no-fsync" "1|3" "cycle [0-9]+: (lost: key|availability)" \
			--power-loss \
			--kill-every 4s --cycles 8 --seed 1 --no-explain \
			--setup "bash $E {dir} --init" \
			--workload "bash $E {dir} --unsafe-no-fsync" \
			--checker "bash $E {dir} --check"
	fi
}

user_cases() {
	# ---- --user: the calls the harness makes for a program are checked as its ---
	# own (supervisor/creds.c): a create in a directory the program made
	# read-only is refused it, as the kernel refuses it (before, the harness
	# made it as root and the checker found it).  Lives of 2 s: each put is a
	# few processes, each seen by the supervisor; lives of 300 ms acknowledged
	# nothing in 4 cycles beside a busy CPU (make asan)
	if id nobody >/dev/null 2>&1; then
		run "user-perms" 0 "front end +workload: supervisor.*--user nobody" \
			--user nobody --power-loss --kill-every 2s --cycles 3 \
			--seed 4 --workload "sh $(pwd)/tests/shim/perms.sh {dir}" \
			--checker "sh $(pwd)/tests/shim/perms.sh {dir} --check"
	fi
}

postgres_cases() {
	# ---- PostgreSQL, which will not run as root: --user postgres ---------------
	# (initdb in --setup; every put is a psql process; the server runs in the
	# life's process group; its defaults keep every acknowledged commit, and
	# fsync=off loses them -- documented to risk it)
	P=tests/targets/postgres.sh
	if [ "$(id -u)" != 0 ] || ! id postgres >/dev/null 2>&1 ||
	   ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
		echo "sound_servers.sh: PostgreSQL is not tested (it needs root, the" \
		     "postgres user and apt-get install postgresql)"
	else
		run "postgres-default" 0 "front end +workload: supervisor.*--user postgres" \
			--user postgres --power-loss --kill-every 3s --cycles 3 --seed 2 \
			--setup "bash $P {dir} --init" --workload "bash $P {dir}" \
			--checker "bash $P {dir} --check"
		run "postgres-nofsync" "1|3" "cycle [0-9]+: (lost: key|phantom|structure|availability)" \
			--user postgres --power-loss --kill-every 3s --cycles 8 --seed 2 \
			--no-explain --setup "bash $P {dir} --init" \
			--workload "bash $P {dir} nofsync" --checker "bash $P {dir} --check"
	fi
}

mariadb_cases() {
	# ---- MariaDB (InnoDB), which will not run as root either: --user mysql -----
	# its defaults submit InnoDB's I/O through io_uring, which the supervisor
	# makes itself (supervisor/uring.c): every acknowledged commit survives,
	# and innodb_flush_log_at_trx_commit=2 on the same ring loses at a power
	# cut; with innodb_use_native_aio=0 its data and redo log
	# go through pwrite on O_DIRECT and every acknowledged commit survives;
	# innodb_flush_log_at_trx_commit=2 (documented to lose up to a second of
	# commits when the system crashes) loses them.  Before the supervisor
	# modelled O_DIRECT and passed MAP_SYNC's EOPNOTSUPP on, every one of these
	# was a refusal.
	M=tests/targets/mariadb.sh
	if [ "$(id -u)" != 0 ] || ! id mysql >/dev/null 2>&1 ||
	   ! command -v mariadbd >/dev/null 2>&1; then
		echo "sound_servers.sh: MariaDB is not tested (it needs root, the" \
		     "mysql user and apt-get install mariadb-server)"
	else
		# its defaults: InnoDB's pages through io_uring, which the supervisor
		# makes itself (before: refused, nothing judged); and the same ring
		# with innodb_flush_log_at_trx_commit=2 loses at a power cut
		run "mariadb-default" 0 "bytes written through the supervisor" \
			--user mysql --power-loss --kill-every 3s --cycles 3 --seed 3 \
			--setup "bash $M {dir} --init" --workload "bash $M {dir}" \
			--checker "bash $M {dir} --check"
		md=$(sed -n "s/^  workload .*mariadb.sh '\(.*\)'$/\1/p" "$T/mariadb-default.out")
		if [ -n "$md" ] && grep -q "Using io_uring" "$md.mariadb.log" 2>/dev/null; then
			ok "mariadb-default: InnoDB used io_uring"
		else
			bad "mariadb-default: InnoDB did not say 'Using io_uring' (the ring was not tested)"
		fi
		n=$(sed -n 's/^  tracked calls  *\([0-9]*\) bytes.*/\1/p' "$T/mariadb-default.out")
		if [ "${n:-0}" -gt 0 ]; then ok "mariadb-default recorded $n bytes"; else
			bad "mariadb-default recorded no bytes"; fi
		run "mariadb-aio-trx2" "1|3" "cycle [0-9]+: (lost: key|phantom|structure|availability)" \
			--user mysql --power-loss --kill-every 3s --cycles 8 --seed 3 \
			--no-explain --setup "bash $M {dir} --init" \
			--workload "bash $M {dir} aio-trx2" --checker "bash $M {dir} --check"
		run "mariadb-noaio" 0 "front end +workload: supervisor.*--user mysql" \
			--user mysql --power-loss --kill-every 3s --cycles 3 --seed 3 \
			--setup "bash $M {dir} --init" --workload "bash $M {dir} noaio" \
			--checker "bash $M {dir} --check"
		n=$(sed -n 's/^  tracked calls  *\([0-9]*\) bytes.*/\1/p' "$T/mariadb-noaio.out")
		if [ "${n:-0}" -gt 0 ]; then ok "mariadb-noaio recorded $n bytes"; else
			bad "mariadb-noaio recorded no bytes"; fi
		run "mariadb-trx2" "1|3" "cycle [0-9]+: (lost: key|phantom|structure|availability)" \
			--user mysql --power-loss --kill-every 3s --cycles 8 --seed 3 \
			--no-explain --setup "bash $M {dir} --init" \
			--workload "bash $M {dir} trx2" --checker "bash $M {dir} --check"
	fi
}
beside mariadb mariadb_cases
beside etcd etcd_cases
beside postgres postgres_cases
beside user user_cases
settle

echo "sound_servers.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
