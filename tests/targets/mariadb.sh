#!/bin/bash
# mariadb.sh DIR [CONFIG] -- MariaDB (Debian's mariadb-server, InnoDB)
# under torture --target exec --user mysql (mariadbd will not run as root):
# the workload starts a server on DIR/db, listening only on a socket in DIR,
# and puts keys with one client process per put (INSERT ... ON DUPLICATE KEY
# UPDATE, autocommit), acknowledging each put once the client returned.
#
#   CONFIG  default  MariaDB's defaults: innodb_flush_log_at_trx_commit=1
#                    (a commit is answered once its redo log is flushed),
#                    innodb_use_native_aio=1 (io_uring where the kernel has
#                    it, else Linux AIO: neither passes a call the kit can
#                    record, so the run is refused, naming the switch below)
#           noaio    innodb_use_native_aio=0: InnoDB's own I/O threads write
#                    with pwrite (through O_DIRECT, its default flush method)
#           trx2     noaio and innodb_flush_log_at_trx_commit=2: the redo log
#                    is written at each commit and flushed once a second;
#                    documented to lose up to a second of commits when the
#                    operating system crashes
#           trx0     noaio and innodb_flush_log_at_trx_commit=0: the redo log
#                    is written and flushed once a second, not at commit;
#                    documented to lose up to a second of commits when
#                    mariadbd crashes
#           aio-trx2, aio-trx0
#                    trx2 and trx0 with native AIO left on (refused, as
#                    default is)
#
# mariadb.sh DIR --init (torture's --setup) makes the data directory and
# the table.  mariadb.sh DIR --check starts the server on what the crash
# left (InnoDB's own crash recovery), prints "KEY VALUE" for every row and
# stops it; exit 3 when the server will not start (availability).
set -u
d=$1
mode=${2:-default}
command -v mariadbd >/dev/null 2>&1 ||
	{ echo "mariadb.sh: no MariaDB server" >&2; exit 2; }
db=$d/db
sock=$d/sock
# small: a redo log of 8 MiB and a buffer pool of 16 MiB start in half a
# second; --no-defaults keeps /etc/mysql's settings out
opts="--no-defaults --datadir=$db --socket=$sock --skip-networking
      --pid-file=$d/pid --log-error=$d.mariadb.log --innodb-log-file-size=8M
      --innodb-buffer-pool-size=16M --skip-log-bin"
case $mode in
default|--init) ;;
--check) opts="$opts --innodb-use-native-aio=0" ;;
noaio) opts="$opts --innodb-use-native-aio=0" ;;
trx2) opts="$opts --innodb-use-native-aio=0 --innodb-flush-log-at-trx-commit=2" ;;
trx0) opts="$opts --innodb-use-native-aio=0 --innodb-flush-log-at-trx-commit=0" ;;
aio-trx2) opts="$opts --innodb-flush-log-at-trx-commit=2" ;;
aio-trx0) opts="$opts --innodb-flush-log-at-trx-commit=0" ;;
*) echo "mariadb.sh: unknown configuration '$mode'" >&2; exit 2 ;;
esac

# the server runs in torture's process group (a kill at the end of a life
# reaches it), with the protocol descriptor closed
start() {
	if [ -n "${KEEL_TORTURE_FD:-}" ]; then
		eval 'mariadbd $opts >/dev/null 2>&1 '"$KEEL_TORTURE_FD"'>&- &'
	else
		mariadbd $opts >/dev/null 2>&1 &
	fi
	pid=$!
	for _ in $(seq 600); do
		sql -e "SELECT 1" >/dev/null 2>&1 && return 0
		kill -0 $pid 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
stop() {
	mariadb-admin --no-defaults -S "$sock" -u root shutdown >/dev/null 2>&1
	wait $pid 2>/dev/null
}
sql() { mariadb --no-defaults -S "$sock" -u root -N -B "$@"; }

if [ "$mode" = --init ]; then
	mariadb-install-db --no-defaults --datadir="$db" --skip-test-db \
		--auth-root-authentication-method=normal \
		--innodb-log-file-size=8M >"$d.install.log" 2>&1 || exit 1
	opts="$opts --innodb-use-native-aio=0"
	start || exit 1
	sql -e "CREATE DATABASE t; CREATE TABLE t.kv (k VARCHAR(64) PRIMARY KEY,
	        v VARCHAR(64) NOT NULL) ENGINE=InnoDB" || exit 1
	stop
	exit 0
fi

if [ "$mode" = --check ]; then
	[ -d "$db" ] || exit 0
	start || { kill -9 $pid 2>/dev/null; exit 3; }
	sql -e "SELECT k, v FROM t.kv ORDER BY k" | tr '\t' ' '
	rc=${PIPESTATUS[0]}
	stop
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
	sql -e "INSERT INTO t.kv VALUES ('$k', '$v') ON DUPLICATE KEY UPDATE v = VALUES(v)" || exit 1
	echo "ack $i" >&"$fd"
done
