#!/bin/bash
# hostile.sh [BUILD_DIR] [SERVE_BINARY] -- keel-serve's memory under clients
# that try to make it hold memory (docs/http.md, "Memory under hostile
# clients").  Loopback only; each case starts its own server, runs
# `loadgen --hostile` against it and prints the server's VmRSS (from
# /proc/PID/status) before and while the clients hold on.
#
#   bash bench/http/hostile.sh build                       # this tree
#   bash bench/http/hostile.sh build /tmp/old/keel-serve   # another binary
#
# The loadgen of BUILD_DIR is used either way.  Flags a binary does not
# know (an older keel-serve has no --body-budget) are left out for it.
# The figures also go to docs/results/http.md (section "hostile",
# bench/results.sh: with the command, the machine and the commit; a rerun
# replaces it).  CASES picks cases (default: head body list linger),
# HEAD_CONNS the partial heads' connections (default 2000).
set -u
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../../docs/results}
. "$(dirname "$0")/../results.sh"
results_begin "bash $0" "$@"
results_env CASES HEAD_CONNS
B=${1:-build}
SERVE=${2:-$B/keel-serve}
LOADGEN=$B/loadgen
T=$(mktemp -d /tmp/keel-hostile.XXXXXX)
PID=""

cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

knows() { "$SERVE" --help 2>&1 | grep -q -- "$1"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; } # peak RSS
mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k / 1024 }'; }

start() { # start NAME ARGS...
	local name=$1 i
	shift
	"$SERVE" --listen 127.0.0.1:0 --db "$T/$name.keel" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PID=$!
	for i in $(seq 100); do
		PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/$name.out")
		[ -n "$PORT" ] && return 0
		sleep 0.05
	done
	echo "server $name did not start: $(cat "$T/$name.err")"
	exit 1
}
stop() { kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=""; }

# hold NAME SECS LOADGEN_ARGS... -- runs loadgen --hostile in the
# background, waits for READY (at most 60 s), lets the server settle for
# a second, then waits for loadgen (its answer counts go to $T/NAME.json)
# and sets RSS_HOLD to the server's peak RSS (VmHWM) meanwhile.
hold() {
	local name=$1 secs=$2 lg i
	shift 2
	"$LOADGEN" --port "$PORT" --idle-hold "$secs" "$@" >"$T/$name.json" 2>"$T/$name.lg" &
	lg=$!
	for i in $(seq 600); do
		grep -q READY "$T/$name.lg" && break
		sleep 0.1
	done
	sleep 1
	wait "$lg"
	RSS_HOLD=$(hwm_kb "$PID")
}

CASES=${CASES:-head body list linger} # which of the four to run
on() { case " $CASES " in *" $1 "*) return 0 ;; esac; return 1; }

echo "keel-serve: $SERVE"
# row CASE FIGURE: one line of the table the results page gets
row() { echo "| $1 | $2 |" >>"$T/rows.md"; }

# 1. partial heads: N connections send 4 bytes of a head each (in two
# writes: the server's second read is the one that grew its buffer)
N=${HEAD_CONNS:-2000}
if on head; then
start head
before=$(rss_kb "$PID")
hold head 2 --hostile head --conns $N
fig="RSS $(mb "$before") -> $(mb "$RSS_HOLD") ($(( (RSS_HOLD - before) * 1024 / N )) bytes per connection)"
echo "head:     $N connections x 4 bytes of a head: $fig"
row "$N connections that each sent 4 bytes of a head" "$fig"
stop
fi

# 2. bodies: 8 connections promise 16 MiB each and send 12 MiB of it, then
# trickle a byte every 200 ms (below any minimum rate)
if on body; then
extra=""
knows body-budget && extra="--body-budget 32m --header-timeout 2s --body-min-rate 1k"
start body --max-body 16m $extra
before=$(rss_kb "$PID")
hold body 6 --hostile body --conns 8 --value-size $((16 << 20)) --send-bytes $((12 << 20))
fig="RSS $(mb "$before") -> $(mb "$RSS_HOLD"); loadgen: \`$(cat "$T/body.json")\`"
echo "body:     8 connections x 12 MiB of a 16 MiB body ($extra): $fig"
row "8 connections sending 12 MiB of a 16 MiB body, then a byte every 200 ms (\`--max-body 16m${extra:+ $extra}\`)" "$fig"
stop
fi

# 3. listings: 100 keys of 1,024 bytes that each escape to 6 KiB of JSON;
# 4 connections pipeline 500 listings each and never read
if on list; then
start list
key=$(head -c 1024 /dev/zero | tr '\0' 'x' | sed 's/x/%FF/g')
{
	for i in $(seq -w 100); do
		printf 'PUT /%s%s HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nv' "${key:0:$((3 * 1021))}" "$i"
	done
	printf 'GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'
} >"$T/puts"
exec 3<>/dev/tcp/127.0.0.1/$PORT
cat "$T/puts" >&3 &
w=$!
timeout 120 cat <&3 >/dev/null
exec 3<&-
wait $w
before=$(rss_kb "$PID")
hold list 2 --hostile pipeline --conns 4 --pipeline 500 --path '/?limit=1000'
echo "list:     4 connections x 500 unread listings of 100 keys (600 KiB each):" \
	"RSS $(mb "$before") -> $(mb "$RSS_HOLD")"
row "4 connections pipelining 500 listings of 100 1 KiB keys (600 KiB of JSON each), never reading" \
	"RSS $(mb "$before") -> $(mb "$RSS_HOLD")"
stop
fi

# write_page: the rows so far, as a section of docs/results/http.md
write_page() {
	[ -s "$T/rows.md" ] || return 0
	{
		echo "Each case starts \`$SERVE --listen 127.0.0.1:0\` with the flags named and"
		echo "runs \`$LOADGEN --hostile\` against it; RSS is the server's VmRSS before"
		echo "the clients and its peak (VmHWM) while they hold on."
		echo
		echo "| case | keel-serve |"
		echo "|---|---|"
		cat "$T/rows.md"
	} >"$T/section.md"
	results_write http hostile "keel-serve against nginx and Redis" /tmp "$T/section.md" \
		"Memory is what these cases measure: the load on the machine changes how fast the clients get there, not where the server's memory ends."
}

# 4. linger: an idle connection opened first must not hold back the close
# of a connection that got an error (idle timeout 30 s).  The client sees
# EOF at once (the server shuts its write side); the server's descriptor
# is what lingers: counted in /proc/PID/fd.
on linger || { write_page; exit 0; }
start linger --idle-timeout 30
fds() { ls "/proc/$PID/fd" | wc -l; }
exec 4<>/dev/tcp/127.0.0.1/$PORT
sleep 0.2
base=$(fds)
exec 5<>/dev/tcp/127.0.0.1/$PORT
printf 'GARBAGE\r\n\r\n' >&5
s=$(date +%s%N)
timeout 5 cat <&5 >/dev/null
for i in $(seq 400); do
	[ "$(fds)" -le "$base" ] && break
	sleep 0.1
done
el=$(( ($(date +%s%N) - s) / 1000000 ))
exec 4<&- 5<&-
echo "linger:   the server closed a connection it answered 400 after $el ms" \
	"(an older idle connection open; idle timeout 30 s; gave up at 40 s)"
row "an error's linger while an older idle connection is open (\`--idle-timeout 30\`)" \
	"the connection answered 400 closed after $el ms"
stop
write_page
