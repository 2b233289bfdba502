#!/bin/sh
# claims_servers.sh BUILD_DIR [NAME:CONFIG...] -- the servers people run,
# in the claims table: each configuration (default: all below; NAME:CONFIG
# arguments run only those rows, e.g. zookeeper:forcesync zookeeper:nosync,
# and the section written holds only them: give RESULTS_DIR=DIR to keep
# docs/results/claims.md's full table) as
# `torture --target exec` with its workload in tests/targets/, under a
# process kill; a power cut (posix model, reorder and torn); the torn power
# cut again under the ext4, xfs and btrfs models; and failed syncs
# (--fail sync:EIO, ext4's profile) followed by a power cut.  Bounded: a
# run ends at its first violation, after the row's few cycles (lives of a
# few seconds: each put is a client process, each check starts the server
# on what the crash left) or after SERVERS_DURATION (default 30s),
# whichever comes first; the whole script takes about 25 minutes on two
# cores.  PostgreSQL and MariaDB will not run as root: --user postgres and
# --user mysql (torture must run as root).
#
# It writes the section "servers" of docs/results/claims.md (the table of
# tools/claims.sh, one row per configuration; bench/results.sh: the
# command, the date, the commit; RESULTS_DIR=DIR: elsewhere) and prints the
# table.  A cell is "holds (N cycles)", "BROKEN cycle N: first violation",
# "UNAVAILABLE cycle N" (the server would not start on what was left),
# "refused: reason" (torture gave no verdict, in its words: a program it
# cannot record, or a workload that never acknowledged a put) or
# "not run: reason".  docs/claims.md, "Servers", holds the promises and
# reads the verdicts.
set -u
B=${1:-build}
[ $# -eq 0 ] || shift
D=${SERVERS_DURATION:-30s}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
cd "$top" || exit 2
. bench/results.sh
results_begin tools/claims_servers.sh "$B" "$@"
results_env SERVERS_DURATION
[ -x "$B/torture" ] || { echo "claims_servers.sh: no $B/torture (make first)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/keel-servers.XXXXXX")
trap 'rm -rf "$T"' EXIT
# --user postgres / mysql reach their run directories through it, and
# write their server logs beside them
chmod 755 "$T"
mkdir "$T/tmp" && chmod 1777 "$T/tmp"
export TMPDIR="$T/tmp"
t0=$(date +%s)

# Tokyo Cabinet's workload runs the findings' own program
cc -O2 -o "$T/tokyo_kv" targets/findings/tokyo-commit/kv.c -ltokyocabinet \
	2>"$T/cc.err" || echo "claims_servers.sh: tokyo kv did not build: $(head -n 1 "$T/cc.err")" >&2
chmod 755 "$T/tokyo_kv" 2>/dev/null

field() { sed -n "s/.*\"$2\": \"\{0,1\}\([^\",]*\).*/\1/p" "$1"; }
md() { tr '|' '/' | tr -s ' ' | sed 's/`/'"'"'/g'; }

# The versions, as the programs print them
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
v_pg=$("$pgbin/postgres" --version 2>/dev/null | sed -n 's/^postgres (PostgreSQL) \([0-9.]*\).*/PostgreSQL \1/p')
v_my=$(mariadbd --version 2>/dev/null | sed -n 's/.*Ver \([0-9.]*\)-MariaDB.*/MariaDB \1/p')
v_etcd=$(etcd --version 2>/dev/null | sed -n 's/^etcd Version: /etcd /p')
v_zk=$(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null | sed 's/-.*//; s/^/ZooKeeper /')
v_redis=$(redis-server --version 2>/dev/null | sed -n 's/.*v=\([0-9.]*\).*/Redis \1/p')
v_hg=$(hg --version 2>/dev/null | sed -n 's/.*(version \([0-9.]*\)).*/Mercurial \1/p')
v_cdb=$(dpkg-query -W -f '${Version}' tinycdb 2>/dev/null | sed 's/+.*//; s/-.*//; s/^/tinycdb /')
v_rrd=$(rrdtool --version 2>/dev/null | sed -n '1s/^RRDtool \([0-9.]*\).*/RRDtool \1/p')
v_tc=$(dpkg-query -W -f '${Version}' libtokyocabinet9 2>/dev/null | sed 's/-.*//; s/^/Tokyo Cabinet /')

# verdict NAME FAULT TORTURE-ARGS... -> the cell
verdict() {
	t=$1 f=$2
	shift 2
	j="$T/$(echo "$t.$f" | tr ':' '_').json"
	s0=$(date +%s)
	timeout 300 nice "$B/torture" --target exec --quiet --seed 1 \
		--duration "$D" --json "$j" "$@" >"$j.out" 2>&1
	rc=$?
	echo "$t $f: rc $rc, $(( $(date +%s) - s0 )) s" >>"$T/times"
	if [ $rc = 124 ]; then
		echo "not run: the run passed its 300 s bound"
		return
	fi
	if [ $rc = 2 ] || [ ! -s "$j" ]; then
		m=$(grep -m1 'torture: ' "$j.out" | sed 's/^torture: //; s/^the supervisor refused: //')
		[ -n "$m" ] || m=$(grep -v '^ *$' "$j.out" | tail -n 1)
		echo "refused: $(echo "$m" | md | cut -c1-220)"
		return
	fi
	c=$(field "$j" cycles)
	case $(field "$j" result) in
	unavailable)
		echo "UNAVAILABLE cycle $c: the server would not start on what was left"
		echo "$t $f: $(field "$j" reproducer)" >>"$T/repro" ;;
	pass)
		extra=""
		[ "$(field "$j" faults_fired)" = 0 ] || [ -z "$(field "$j" faults_fired)" ] ||
			extra=", $(field "$j" fault_stops) stopped on the error of $(field "$j" faults_fired) injected"
		echo "holds ($c cycles$extra)" ;;
	*)
		echo "BROKEN cycle $c: $(sed -n 's/.*"first_violation": "\(.*\)", "reproducer".*/\1/p' "$j" | sed 's/\\"//g' | md | cut -c1-110)"
		echo "$t $f: $(field "$j" reproducer)" >>"$T/repro" ;;
	esac
}

# row NAME VERSION CYCLES -- ARGS...: ARGS are torture's (the exec target's
# --setup/--workload/--checker, --user, --kill-every, --front-end)
row() {
	name=$1 ver=$2 cyc=$3
	shift 4
	selected "$name" || return 0
	echo "claims_servers.sh: $name ($(( $(date +%s) - t0 )) s in)" >&2
	k=$(verdict "$name" kill --cycles "$cyc" "$@")
	case $k in
	refused:*)
		# a program torture cannot record is refused under every fault
		# alike: the other columns are not run
		n="not run: refused under the process kill"
		echo "| $name | $ver | $k | $n | $n | $n | $n |" >>"$T/table"
		return ;;
	esac
	r=$(verdict "$name" reorder --cycles "$cyc" --power-loss --device reorder "$@")
	o=$(verdict "$name" torn --cycles "$cyc" --power-loss --device torn "$@")
	fs=""
	for m in ext4 xfs btrfs; do
		mv=$(verdict "$name" "torn-$m" --cycles "$cyc" --power-loss --device torn --fs "$m" "$@")
		fs="$fs${fs:+; }$m: $mv"
	done
	e=$(verdict "$name" eio --cycles "$cyc" --power-loss --fail "$eio_spec" --fs ext4 "$@")
	echo "| $name | $ver | $k | $r | $o | $fs | $e |" >>"$T/table"
}

# the failed syncs of the last column; a row may set its own (etcd below)
eio_spec=sync:EIO:p=0.05

# notrun NAME VERSION REASON
notrun() {
	selected "$1" || return 0
	n="not run: $3"
	echo "| $1 | $2 | $n | $n | $n | $n | $n |" >>"$T/table"
}

# selected NAME: named on the command line, or none named
only="$*"
selected() {
	[ -z "$only" ] && return 0
	case " $only " in *" $1 "*) return 0 ;; esac
	return 1
}
: >"$T/table"
: >"$T/repro"
: >"$T/times"

P="bash tests/targets/postgres.sh"
M="bash tests/targets/mariadb.sh"
E="bash tests/targets/etcd.sh"
R="bash tests/targets/redis_acl.sh"

have() { command -v "$1" >/dev/null 2>&1; }

if [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1 && [ -x "$pgbin/postgres" ]; then
	for c in default async nofsync; do
		a=; [ $c = default ] || a=$c
		row "postgres:$c" "$v_pg" 3 -- --user postgres --kill-every 3s \
			--setup "$P {dir} --init" --workload "$P {dir}${a:+ $a}" \
			--checker "$P {dir} --check"
	done
else
	for c in default async nofsync; do
		notrun "postgres:$c" "${v_pg:-?}" "needs root, the postgres user and Debian's postgresql"
	done
fi

if [ "$(id -u)" = 0 ] && id mysql >/dev/null 2>&1 && have mariadbd; then
	for c in noaio trx2 trx0 default aio-trx2 aio-trx0; do
		a=; [ $c = default ] || a=$c
		row "mariadb:$c" "$v_my" 3 -- --user mysql --kill-every 3s \
			--setup "$M {dir} --init" --workload "$M {dir}${a:+ $a}" \
			--checker "$M {dir} --check"
	done
else
	for c in noaio trx2 trx0 default aio-trx2 aio-trx0; do
		notrun "mariadb:$c" "${v_my:-?}" "needs root, the mysql user and Debian's mariadb-server"
	done
fi

if have etcd && have curl && have jq; then
	# etcd stops at its first failed sync, and makes 13 (strace) from its
	# start to its first put's answer: at p=0.05 half the lives stop
	# before any put (in one run all 3 did: a refusal, nothing tested); at
	# p=0.01 nine in ten acknowledge puts first
	eio_spec=sync:EIO:p=0.01
	row "etcd:default" "$v_etcd" 3 -- --kill-every 4s \
		--setup "$E {dir} --init" --workload "$E {dir}" --checker "$E {dir} --check"
	row "etcd:unsafe-no-fsync" "$v_etcd" 3 -- --kill-every 4s \
		--setup "$E {dir} --init" --workload "$E {dir} --unsafe-no-fsync" \
		--checker "$E {dir} --check"
	eio_spec=sync:EIO:p=0.05
else
	notrun "etcd:default" "${v_etcd:-?}" "needs etcd-server, curl and jq"
	notrun "etcd:unsafe-no-fsync" "${v_etcd:-?}" "needs etcd-server, curl and jq"
fi

# ZooKeeper's workload drives the JVM server with the kit's own client
# (tests/targets/zk_kv.c); the JVM gets the shim, with which these rows were
# first run (before 0ec4db0 the supervisor failed the JVM's writes through
# its write-only log descriptor with EBADF; since, it gives the same
# verdict under the posix model)
Z=tests/targets/zookeeper.sh
ZK=$B/shim-tests/zk_kv
if have java && [ -f /usr/share/java/zookeeper.jar ] && [ -x "$ZK" ]; then
	for c in forcesync nosync; do
		row "zookeeper:$c" "$v_zk" 3 -- --front-end shim --kill-every 8s \
			--setup "sh $Z {dir} $ZK --init" --workload "sh $Z {dir} $ZK $c" \
			--checker "sh $Z {dir} $ZK --check"
	done
else
	if [ ! -f /usr/share/java/zookeeper.jar ]; then
		why="Debian's zookeeper is not installed (apt-get install zookeeper)"
	elif ! have java; then
		why="needs java (Debian's zookeeper depends on it)"
	else
		why="no client: $ZK is not built (make)"
	fi
	notrun "zookeeper:forcesync" "${v_zk:-?}" "$why"
	notrun "zookeeper:nosync" "${v_zk:-?}" "$why"
fi

if have redis-server && have redis-cli; then
	row "redis:acl-save" "$v_redis" 6 -- --kill-every 1s \
		--setup "$R {dir} --init" --workload "$R {dir}" --checker "$R {dir} --check"
	row "redis:config-rewrite" "$v_redis" 6 -- --kill-every 1s \
		--setup "$R {dir} --init" --workload "$R {dir} config" --checker "$R {dir} --check"
else
	notrun "redis:acl-save" "${v_redis:-?}" "needs redis-server and redis-cli"
	notrun "redis:config-rewrite" "${v_redis:-?}" "needs redis-server and redis-cli"
fi

H="sh tests/targets/hg.sh"
if have hg; then
	row "hg:commit" "$v_hg" 6 -- --kill-every 2s \
		--setup "$H {dir} --init" --workload "$H {dir}" --checker "$H {dir} --check"
else
	notrun "hg:commit" "?" "needs Debian's mercurial"
fi

C="sh tests/targets/cdb.sh"
if have cdb; then
	row "tinycdb:rebuild" "$v_cdb" 6 -- --kill-every 1s \
		--setup "$C {dir} --init" --workload "$C {dir}" --checker "$C {dir} --check"
else
	notrun "tinycdb:rebuild" "?" "Debian's tinycdb is not installed (apt-get install tinycdb)"
fi

# rrdtool and Tokyo Cabinet store through shared mappings, which only the
# shim follows
Q="sh tests/targets/rrdtool.sh"
if have rrdtool; then
	row "rrdtool:update" "$v_rrd" 6 -- --front-end shim --kill-every 1s \
		--setup "$Q {dir} --init" --workload "$Q {dir}" --checker "$Q {dir} --check"
else
	notrun "rrdtool:update" "?" "Debian's rrdtool is not installed (apt-get install rrdtool)"
fi

K="sh tests/targets/tokyo.sh"
if [ -x "$T/tokyo_kv" ]; then
	row "tokyocabinet:hdbotsync" "$v_tc" 15 -- --front-end shim --kill-every 1s \
		--setup "$K {dir} $T/tokyo_kv --init" --workload "$K {dir} $T/tokyo_kv" \
		--checker "$K {dir} $T/tokyo_kv --check"
else
	notrun "tokyocabinet:hdbotsync" "${v_tc:-?}" "the findings' kv.c did not build (needs cc and libtokyocabinet-dev)"
fi

{
	echo "The servers people run, each configuration with its workload in"
	echo "tests/targets/ as \`torture --target exec --seed 1\` (a put is one"
	echo "client call, acknowledged once the server answered; the checker"
	echo "starts the server on what the crash left and reads every key back)."
	echo "A run ends at its first violation, after the row's cycles (3 for"
	echo "PostgreSQL, MariaDB and etcd, whose lives are 3-4 s, and ZooKeeper (8 s); 6 for the"
	echo "others; 15 for Tokyo Cabinet) or after $D, whichever comes first:"
	echo "a \"holds\" here rests on a few cycles, not on the 200 of the engine"
	echo "table above. The ext4 / xfs / btrfs cell is the torn power cut under"
	echo "each file system's model (--fs); the last column is"
	echo "\`--fail sync:EIO:p=0.05 --fs ext4\` with a power cut (etcd: p=0.01, as it"
	echo "stops at its first failed sync and makes 13 before its first put's answer)."
	echo "\"refused\": torture"
	echo "gave no verdict (its words follow); what each configuration"
	echo "promises and what each verdict means: [docs/claims.md](../claims.md),"
	echo "\"Servers\"."
	echo
	echo "| configuration | version | process kill | power cut, reorder | power cut, torn | torn, under ext4 / xfs / btrfs | fsync EIO (ext4) + power cut |"
	echo "|---|---|---|---|---|---|---|"
	cat "$T/table"
	echo
	echo "Each broken or unavailable run's command, up to the cycle that broke"
	echo "(from its --json; \`{dir}\` as torture takes it):"
	echo
	sed "s|$T/tokyo_kv|TOKYO_KV|g; s/^/    /" "$T/repro"
	echo
	echo "(TOKYO_KV: targets/findings/tokyo-commit/kv.c built with \`cc kv.c -ltokyocabinet\`.)"
	echo
	echo "Wall time per run, seconds:"
	echo
	sed 's/^/    /' "$T/times"
} >"$T/section.md"

cat "$T/table"
results_write claims servers "Claims: the verdicts" "$T" "$T/section.md" \
	"The machine (2 CPUs) was shared with other builds and tests while this ran; the verdicts are not noisy, the wall times are."
echo "claims_servers.sh: $(( $(date +%s) - t0 )) s"
