#!/bin/sh
# zookeeper.sh DIR CLIENT [CONFIG...] -- ZooKeeper (Debian's zookeeper
# 3.8.0, a Java program) under torture --target exec: the workload starts a
# standalone server with dataDir=DIR in the life's process group and puts
# znodes /k0 ... /k7 with CLIENT (tests/targets/zk_kv.c, built as
# BUILD/shim-tests/zk_kv: ZooKeeper's wire protocol, one session for all
# puts), which acknowledges each put once the server answered it.  The
# server answers a write after its transaction log is flushed and, with
# forceSync=yes, fdatasynced.
#
#   CONFIG  forcesync  forceSync=yes (the default): the log is fdatasynced
#                      before a write is answered
#           nosync     forceSync=no: "ZooKeeper will not require updates to
#                      be synced to the media" (Administrator's Guide)
#           roll       snapCount=10: the server starts a new log file and
#                      writes a snapshot every 5 to 10 transactions (its
#                      default is 100,000), so a crash often falls while a
#                      new log file is being made
#           big        each value padded to about 3 KB: a transaction spans
#                      several 512-byte sectors
#
# zookeeper.sh DIR CLIENT --init (torture's --setup) starts the server once
# on the empty DIR, which makes DIR/version-2 and its first snapshot
# (snapshot.0), and stops it.  --init fresh leaves DIR empty (its server
# runs on a scratch directory beside it): the first life's server makes
# them, under the faults.
#
# zookeeper.sh DIR CLIENT --check starts the server on what is left (it
# loads the newest valid snapshot and replays the logs after it), prints
# "KEY VALUE" for every znode and stops it; it exits 3 when the server will
# not start (a refusal to start is an availability verdict,
# docs/targets.md): the reason is in DIR.zk.log.
#
# The server's configuration (DIR.zoo.cfg), log (DIR.zk.log) and class
# archive (DIR.jsa) lie beside DIR.  The client port is derived from DIR and lies below the kernel's
# ephemeral range, so runs side by side do not meet; the server listens on
# 127.0.0.1 only, with its admin server (Jetty, port 8080) off.  Java gets
# the supervisor (torture --front-end auto: the JVM's own threads).
set -u
d=$1
client=$2
shift 2
mode=
sync=yes
snap=
pad=0
for a in "$@"; do
	case $a in
	--init|--check) mode=$a ;;
	fresh) [ "$mode" = --init ] && mode=--init-fresh ;;
	forcesync) sync=yes ;;
	nosync) sync=no ;;
	roll) snap=10 ;;
	big) pad=3000 ;;
	*) echo "zookeeper.sh: unknown configuration '$a'" >&2; exit 2 ;;
	esac
done
[ -x "$client" ] || { echo "zookeeper.sh: no client $client (make first)" >&2; exit 2; }
jar=/usr/share/java/zookeeper.jar
[ -f "$jar" ] || { echo "zookeeper.sh: no $jar (apt-get install zookeeper)" >&2; exit 2; }

h=$(printf '%s' "$d" | cksum | cut -d' ' -f1)
# below the kernel's ephemeral range, which the connections of tests run
# beside this one take from: a port there may be in use when this starts
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
span=$(( ${low:-32768} - 10002 ))
[ "$span" -gt 1000 ] || span=20000
port=$((10000 + h % span))

# Debian's zkEnv.sh puts /etc/zookeeper/conf (log4j.properties, unused:
# 3.8 logs through SLF4J) and zookeeper.jar on the class path; the jar's
# manifest names the rest (zookeeper-jute, netty, slf4j-api, ... in
# /usr/share/java).  slf4j-simple sends the server's warnings to stderr.
cp=$jar
[ -f /usr/share/java/slf4j-simple.jar ] && cp=$cp:/usr/share/java/slf4j-simple.jar
cfg=$d.zoo.cfg
{
	echo "tickTime=2000"
	echo "dataDir=$d"
	echo "clientPort=$port"
	echo "clientPortAddress=127.0.0.1"
	echo "admin.enableServer=false"
	echo "forceSync=$sync"
	echo "preAllocSize=1024"
	[ -z "$snap" ] || echo "snapCount=$snap"
} >"$cfg"

# the server runs in torture's process group, with the protocol descriptor
# closed; it is up once a session is granted (it accepts connections
# before it has loaded its data)
#
# --init also has the JVM write the classes it loaded to DIR.jsa when it
# exits (a class-data-sharing archive, JDK 13 and later), which every later
# start maps: a start takes about a third of the time (12 s without it,
# under 5 s with it, on two CPUs shared at a load of 7), and a life of a few
# seconds is spent on puts, not on loading classes
start() {
	jsa=-XX:SharedArchiveFile=$d.jsa
	[ -f "$d.jsa" ] || jsa=-Xshare:auto
	[ "${1:-}" != archive ] || jsa=-XX:ArchiveClassesAtExit=$d.jsa
	set -- java -XX:-UsePerfData -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
		"$jsa" -Xms32m -Xmx256m \
		-Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
		-cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$cfg"
	if [ -n "${KEEL_TORTURE_FD:-}" ]; then
		eval '"$@" >>"$d.zk.log" 2>&1 '"$KEEL_TORTURE_FD"'>&- &'
	else
		"$@" >>"$d.zk.log" 2>&1 &
	fi
	zk_pid=$!
	say "${mode:-workload}: started the server (pid $zk_pid)"
	for _ in $(seq 1200); do
		if "$client" "$port" --ping 2>/dev/null; then
			say "${mode:-workload}: the server answers"
			return 0
		fi
		kill -0 "$zk_pid" 2>/dev/null || { say "the server exited"; return 1; }
		sleep 0.05
	done
	say "${mode:-workload}: the server did not answer in time"
	return 1
}
# a line in the server's log, with the time: what the script did
say() { echo "zookeeper.sh $(date +%T.%N | cut -c1-12) $*" >>"$d.zk.log"; }
stop() {
	kill -"$1" "$zk_pid" 2>/dev/null
	wait "$zk_pid" 2>/dev/null
}

case $mode in
--init-fresh)
	# the archive from a server on a scratch directory: DIR stays empty
	real=$d
	d=$d.scratch
	mkdir -p "$d"
	sed "s|^dataDir=.*|dataDir=$d|" "$cfg" >"$cfg.scratch"
	cfg=$cfg.scratch
	start archive || { stop 9; exit 1; }
	stop TERM
	mv "$d.jsa" "$real.jsa" && rm -rf "$d" "$cfg" "$d.zk.log"
	exit 0 ;;
--init)
	start archive || { stop 9; exit 1; }
	stop TERM
	exit 0 ;;
--check)
	[ -d "$d/version-2" ] || exit 0
	start || { stop 9; exit 3; }
	"$client" "$port" --check 2>>"$d.zk.log"
	rc=$?
	stop 9
	exit $rc ;;
esac

: "${KEEL_TORTURE_FD:?run me under torture --target exec}"
start || exit 1
"$client" "$port" --workload 100000 "$pad" 2>>"$d.zk.log"
rc=$?
say "workload: the client exited with status $rc"
exit $rc
