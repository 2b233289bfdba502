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
# replaces it).  CASES picks cases (default: head body list linger
# tls-half quic-half lockout rapid-h3), HEAD_CONNS the partial heads'
# connections (default 2000), HALF the half-open handshakes of tls-half
# and quic-half (default 1000).
#
# The cases of docs/http.md "Handshakes" (fairness under one hostile
# source; keel-serve with --tls-cert, --threads 1, default limits unless
# named), with BUILD_DIR's h3-client and tests/tls_client.py:
#   tls-half   memory per half-open TLS handshake: HALF ClientHellos that
#              never go on (tls_client.py half), caps raised past HALF
#   quic-half  memory per QUIC handshake held half done past Retry (HALF
#              from one process, h3-client -i -j; --h3-retry always, caps
#              raised), and what is resident once they are dropped at the
#              handshake deadline (3 s): does memory go back?
#   lockout    a second source's share of service while one source
#              (127.0.0.2) holds handshakes: 1,100 TLS ClientHellos
#              (tls_client.py halfcount), then 1,100 QUIC handshakes past
#              Retry (h3-client -j), each held while 10 HTTPS clients
#              (curl) and 10 HTTP/3 clients (h3-client) of 127.0.1.1 ask
#              once each; with the default share of --max-handshakes
#              (1000: 125 a source) and, as before the shares, with
#              --max-handshakes-per-source 1000
#   rapid-h3   time to cut an HTTP/3 rapid-reset attacker (h3-client -R:
#              request+reset pairs back to back) until the server closes
#              its connection with H3_EXCESSIVE_LOAD, 3 runs
set -u
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../../docs/results}
. "$(dirname "$0")/../results.sh"
results_begin "bash $0" "$@"
results_env CASES HEAD_CONNS
B=${1:-build}
SERVE=${2:-$B/keel-serve}
LOADGEN=$B/loadgen
H3=$B/h3-client
TLSC=$(dirname "$0")/../../tests/tls_client.py
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

CASES=${CASES:-head body list linger tls-half quic-half lockout rapid-h3} # which to run
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
		echo "The handshake cases (\`$SERVE\` with \`--tls-cert\` and \`--threads 1\`,"
		echo "default limits unless named) hold handshakes half done with"
		echo "\`tests/tls_client.py half|halfcount\` and \`$H3 -i -j\` from 127.0.0.2;"
		echo "RSS there is VmRSS while they are held (per handshake: the growth over"
		echo "the handshakes made). The other source is 127.0.1.1: 10 HTTPS GETs"
		echo "(curl, 10 s each) and 10 HTTP/3 GETs (\`$H3\`, 10 s each) at once,"
		echo "counted when answered (404, the key is not there). Rapid reset:"
		echo "\`$H3 -R 1000000\`, pairs sent until the close, timed from the"
		echo "handshake's end."
		echo
		echo "| case | keel-serve |"
		echo "|---|---|"
		cat "$T/rows.md"
	} >"$T/section.md"
	results_write http hostile "keel-serve against nginx and Redis" /tmp "$T/section.md" \
		"Memory and counts are what these cases measure: the load on the machine changes how fast the clients get there, not where the server's memory ends or who is served; the rapid-reset times are milliseconds of a loaded machine."
}

# ---- handshakes: one hostile source (the head of this file says what) ----
HALF=${HALF:-1000}
tls_cases=""
for c in tls-half quic-half lockout rapid-h3; do on $c && tls_cases=1; done
if [ -n "$tls_cases" ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -days 1 -subj /CN=localhost \
		-addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
		-keyout "$T/k.key" -out "$T/c.crt" 2>"$T/gen" ||
		{ echo "openssl cannot make a certificate: $(cat "$T/gen")"; exit 1; }
	chmod 600 "$T/k.key"
fi
TLS="--tls-cert $T/c.crt --tls-key $T/k.key --threads 1"
# held NAME CMD... -- runs CMD in the background with its stdin a fifo
# held open (the clients hold on until it ends); sets HELD (the pid)
held() {
	local name=$1
	shift
	mkfifo "$T/$name.hold"
	"$@" <"$T/$name.hold" >"$T/$name.out" 2>&1 &
	HELD=$!
	exec 6>"$T/$name.hold"
}
release() { exec 6>&-; wait "$HELD"; }
waitline() { # waitline FILE PATTERN -- up to 60 s
	local i
	for i in $(seq 600); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

if on tls-half; then
start tlshalf $TLS --header-timeout 60s --max-handshakes $((HALF * 2)) \
	--max-handshakes-per-source $((HALF * 2)) --max-conns $((HALF * 4))
before=$(rss_kb "$PID")
held tlshalf python3 "$TLSC" half "$PORT" "$T/c.crt" "$HALF"
waitline "$T/tlshalf.out" '^open' || echo "tls-half: $(cat "$T/tlshalf.out")"
sleep 1
now=$(rss_kb "$PID")
release
per=$(( (now - before) * 1024 / HALF ))
echo "tls-half: $HALF half-open TLS handshakes: RSS $(mb "$before") -> $(mb "$now"), $per bytes each"
row "$HALF TLS handshakes held half done (a ClientHello each, never finished; \`--max-handshakes $((HALF * 2))\`)" \
	"RSS $(mb "$before") -> $(mb "$now"): $(( per / 1024 )) KB a handshake"
stop
fi

if on quic-half; then
start quichalf $TLS --h3-retry always --header-timeout 3s \
	--max-handshakes $((HALF * 2)) --max-handshakes-per-source $((HALF * 2)) \
	--max-conns $((HALF * 4))
before=$(rss_kb "$PID")
KEEL_SOURCE=127.0.0.2 "$H3" "$PORT" GET /k -i 1000 -j "$HALF" >"$T/quichalf.out" 2>&1 &
hc=$!
waitline "$T/quichalf.out" '^half open' || echo "quic-half: $(cat "$T/quichalf.out")"
now=$(rss_kb "$PID")
made=$(sed -n 's/^half open \([0-9]*\) of.*/\1/p' "$T/quichalf.out")
wait "$hc"
# dropped at the deadline (3 s from their start); the trim comes at a
# sweep once the connections fell to a quarter of their peak.  The RSS
# once it is below the peak and has not moved for 2 s (30 s at most)
after=$now same=0
for i in $(seq 60); do
	sleep 0.5
	r=$(rss_kb "$PID")
	if [ "$r" = "$after" ] && [ "$r" -lt "$now" ]; then same=$((same + 1)); else same=0; fi
	after=$r
	[ "$same" -ge 4 ] && break
done
per=$(( (now - before) * 1024 / ${made:-1} ))
echo "quic-half: $made of $HALF QUIC handshakes half done: RSS $(mb "$before") -> $(mb "$now"), $per bytes each; dropped: $(mb "$after")"
row "$HALF QUIC handshakes from one source held half done past Retry (\`--h3-retry always --max-handshakes $((HALF * 2))\`; $made made), then dropped at \`--header-timeout 3s\`" \
	"RSS $(mb "$before") -> $(mb "$now"): $(( per / 1024 )) KB a handshake; once dropped, $(mb "$after")"
stop
fi

if on lockout; then
# lockout_run SHARE_ARGS... -- the two attacks on one server each; sets
# TLS_FIG and QUIC_FIG
others() { # others -- 10 HTTPS and 10 HTTP/3 clients of 127.0.1.1, at once; sets OK_TLS OK_H3
	local i p pids=""
	for i in $(seq 10); do
		curl -s -m 10 -o /dev/null -w '%{http_code}\n' --interface 127.0.1.1 -k \
			--resolve "localhost:$PORT:127.0.0.1" "https://localhost:$PORT/k" \
			>"$T/other.tls.$i" 2>/dev/null &
		pids="$pids $!"
		KEEL_SOURCE=127.0.1.1 "$H3" "$PORT" GET /k >"$T/other.h3.$i" 2>/dev/null &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	OK_TLS=$(cat "$T"/other.tls.* | grep -c '^404$')
	OK_H3=$(head -q -n 1 "$T"/other.h3.* | grep -c '^status 404$')
	rm -f "$T"/other.*
}
lockout_run() {
	local name=$1
	shift
	start "$name" $TLS --h3-retry always --header-timeout 60s "$@"
	held "$name.tls" env KEEL_SOURCE=127.0.0.2 python3 "$TLSC" halfcount "$PORT" "$T/c.crt" 1100
	waitline "$T/$name.tls.out" '^flight' || echo "$name: $(cat "$T/$name.tls.out")"
	others
	TLS_FIG="attacker: $(cat "$T/$name.tls.out"); the other source: HTTPS $OK_TLS of 10, HTTP/3 $OK_H3 of 10"
	release
	KEEL_SOURCE=127.0.0.2 "$H3" "$PORT" GET /k -i 60000 -j 1100 >"$T/$name.quic.out" 2>&1 &
	hc=$!
	waitline "$T/$name.quic.out" '^half open' || echo "$name: $(cat "$T/$name.quic.out")"
	others
	QUIC_FIG="attacker: $(head -n 1 "$T/$name.quic.out"); the other source: HTTPS $OK_TLS of 10, HTTP/3 $OK_H3 of 10"
	kill "$hc" 2>/dev/null
	wait "$hc" 2>/dev/null
	stop
}
lockout_run lock-share
echo "lockout, TLS attacker, share 125 of 1000: $TLS_FIG"
echo "lockout, QUIC attacker, share 125 of 1000: $QUIC_FIG"
row "one source holds 1,100 TLS ClientHellos it never finishes; another source's clients ask (default \`--max-handshakes 1000\`, share 125)" "$TLS_FIG"
row "one source holds 1,100 QUIC handshakes past Retry; another source's clients ask (default share 125)" "$QUIC_FIG"
lockout_run lock-whole --max-handshakes-per-source 1000
echo "lockout, TLS attacker, share of the whole: $TLS_FIG"
echo "lockout, QUIC attacker, share of the whole: $QUIC_FIG"
row "the same TLS attack, before the shares (\`--max-handshakes-per-source 1000\`)" "$TLS_FIG"
row "the same QUIC attack, before the shares (\`--max-handshakes-per-source 1000\`)" "$QUIC_FIG"
fi

if on rapid-h3; then
start rapid $TLS
figs=""
for r in 1 2 3; do
	s=$(date +%s%N)
	"$H3" "$PORT" GET /k -R 1000000 >"$T/rapid.out" 2>"$T/rapid.err"
	el=$(( ($(date +%s%N) - s) / 1000000 ))
	n=$(sed -n 's/.*error 0x107) after \([0-9]*\) requests.*/\1/p' "$T/rapid.err")
	t=$(sed -n 's/.* in \([0-9.]*\) s:.*/\1/p' "$T/rapid.out")
	echo "rapid-h3: run $r: cut after ${n:-?} pairs, ${t:-?} s after the handshake ($el ms in all)"
	figs="$figs${figs:+; }${n:-not cut} pairs, $(awk -v t="${t:-0}" 'BEGIN { printf "%.0f", t * 1000 }') ms"
done
row "HTTP/3 rapid reset: request+reset pairs back to back on one connection until the server closes it (H3_EXCESSIVE_LOAD; 3 runs: pairs sent, time from the handshake's end)" "$figs"
stop
fi

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
