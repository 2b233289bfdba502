#!/bin/bash
# h3.sh [BUILD_DIR] -- keel-serve over HTTP/3 against keel-serve over
# HTTP/2+TLS, the same server process (one shard: --threads 1, TCP and UDP
# on one port), same machine, same run.  No Debian 12 server speaks
# HTTP/3, so HTTP/2 over TLS is the yardstick (issue 30).  Each part is
# one keep-alive connection with K streams at a time:
#
#   get64  GET of a 64-byte document, $GET_K at a time
#   get1m  GET of a 1 MiB document, one at a time
#   put16  durable PUT of 16 bytes, $PUT_K at a time
#   conn   new connections: $CONN_K at a time, each a full handshake and
#          one GET of the 64-byte document, then closed.  1-RTT
#          handshakes against h2 (h2load resumes nothing).  HTTP/3:
#          loadgen --http3 --close --conns K (one process, a new
#          connection as each answer comes); HTTP/2: h2load -c K -n K
#          (each client one request on its own connection), run
#          $CONN_N/$CONN_K times.  The HTTP/2 rate is over the wall time
#          of the whole part (h2load's start-up per K is in it); per
#          CPU-s is the figure to compare.
#   conn   also, over HTTP/3 through build/h3-client ($CONN_K processes,
#          each its share of $CONN_N one after another): h3c, full 1-RTT
#          handshakes, and h3r, resumed ones with the GET in 0-RTT (the
#          same with --session --early: each connection resumes the ticket
#          the one before it got; a first, untimed connection per process
#          makes its session file).  Resumed against 1-RTT is h3r/h3c: the
#          same client both ways.
#   idle   once, after the rounds: $IDLE idle connections of each
#          protocol held at once, each against a fresh keel-serve
#          (--max-conns 2*IDLE+1000, --idle-timeout 600s): HTTP/3 through
#          h3-client -I $IDLE (a handshake and one GET of the 64-byte
#          document each, then idle), HTTP/2+TLS through
#          bench/http/h2idle.py (TLS, preface and SETTINGS, no request).
#          The server's VmRSS before and 2 s after all are open, per
#          connection; for HTTP/3 also what ngtcp2 and nghttp3 hold per
#          connection (live bytes through their counting allocators, the
#          server's KEEL_H3_MEMSTAT line) and ours.  While they are
#          held, the get64 part's load on one more connection: what idle
#          connections cost a busy one (with get64: against its rounds).
#
# HTTP/3 through loadgen --http3 (bench/http/loadgen_h3.c, closed loop:
# --conns 1 --pipeline K; $H3_WARMUP s of warmup, then $H3_SECS s
# measured), HTTP/2 through h2load (-c 1 -m K -n N: $GET_N, $BIG_N,
# $PUT_N requests; nghttp2-client, make deps-bench).  Per run: answers/s,
# the server's CPU time (utime + stime of all its threads, /proc/PID/stat,
# before and after) and so answers per server CPU-second (for loadgen:
# all its answers, warmup included, as the CPU time includes it).
# Server on CPU $SERVER_CPU, client on CPU $LOAD_CPU (taskset); each round
# runs both protocols, the order alternating.  Prints one line per run and
# a Markdown table of the means, which goes to docs/results/http.md
# (bench/results.sh; a rerun replaces it).
#
#   ROUNDS=3 bash bench/http/h3.sh build
set -u
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../../docs/results}
. "$(dirname "$0")/../results.sh"
results_begin "bash $0" "$@"
results_env ROUNDS GET_N GET_K BIG_N PUT_N PUT_K CONN_N CONN_K H3_SECS H3_WARMUP IDLE TESTS SERVER_CPU LOAD_CPU
B=${1:-build}
ROUNDS=${ROUNDS:-3}
GET_N=${GET_N:-50000}
GET_K=${GET_K:-10}
BIG_N=${BIG_N:-200}
PUT_N=${PUT_N:-20000}
PUT_K=${PUT_K:-64}
CONN_N=${CONN_N:-1000}
CONN_K=${CONN_K:-4}
H3_SECS=${H3_SECS:-2}
H3_WARMUP=${H3_WARMUP:-0.5}
IDLE=${IDLE:-2000}
TESTS=${TESTS:-get64 get1m put16 conn idle}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
DIR=${DIR:-$(mktemp -d /var/tmp/keel-bench-h3.XXXXXX)}
SERVE=$B/keel-serve
LOADGEN=$B/loadgen
H3=$B/h3-client
SPID=""

cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT
for tool in h2load openssl curl taskset; do
	command -v $tool >/dev/null || { echo "h3.sh needs $tool (make deps-bench)"; exit 1; }
done
[ -x "$SERVE" ] && [ -x "$LOADGEN" ] && [ -x "$H3" ] || { echo "no $SERVE, $LOADGEN or $H3 (make all)"; exit 1; }
head -c 64 /dev/urandom | base64 | head -c 64 >"$DIR/doc"
head -c 1048576 /dev/urandom >"$DIR/big"
head -c 16 /dev/urandom | base64 | head -c 16 >"$DIR/v16" # h2load's PUT body
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>/dev/null || exit 1
chmod 600 "$DIR/key.pem"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
want() { case " $TESTS " in *" $1 "*) return 0 ;; esac; return 1; }

# start [ARGS...]: one keel-serve with TLS (so HTTP/3 too) on PORT, ARGS
# added, the documents in
start() {
	local i
	rm -f "$DIR/s.keel"
	taskset -c "$SERVER_CPU" "$SERVE" --db "$DIR/s.keel" --listen 127.0.0.1:0 \
		--tls-cert "$DIR/cert.pem" --tls-key "$DIR/key.pem" "$@" >"$DIR/s.out" 2>&1 &
	SPID=$!
	for i in $(seq 200); do
		PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$DIR/s.out")
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { cat "$DIR/s.out"; exit 1; }
	curl -s -k -o /dev/null -X PUT --data-binary @"$DIR/doc" "https://127.0.0.1:$PORT/doc"
	curl -s -k -o /dev/null -X PUT --data-binary @"$DIR/big" "https://127.0.0.1:$PORT/big"
}

stop() { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=""; }

# jnum TEXT FIELD -- the first number FIELD has in loadgen's JSON TEXT
jnum() { grep -o "\"$2\":[0-9.]*" <<<"$1" | head -n 1 | cut -d: -f2; }

# measure PART PROTO N COMMAND... -- runs COMMAND on $LOAD_CPU; its rate
# (loadgen's answers_per_s, conns's "R/s" or h2load's "req/s") and the
# server's CPU time for it into $DIR/results as "PART PROTO rate
# per-cpu-s".  N: the answers h2load must have had, all 2xx; loadgen's
# run is timed (N unused): all its answers must be 2xx, with no error.
measure() {
	local part=$1 proto=$2 n=$3 t0 t1 out rate ok secs cpu_rate
	shift 3
	t0=$(cpu_ticks "$SPID")
	if [ "$part" = conn ] && [ "$proto" != h3 ]; then # conns pins its clients
		out=$("$@" 2>&1)
	else
		out=$(taskset -c "$LOAD_CPU" "$@" 2>&1)
	fi
	t1=$(cpu_ticks "$SPID")
	if [ "$proto" = h3 ]; then
		rate=$(jnum "$out" answers_per_s)
		rate=${rate%.*}
		n=$(jnum "$out" answers)
		# per CPU-s over the whole run: the warmup's answers too
		ok=$(jnum "$out" answers_total)
		[ "$(jnum "$out" 2xx)" = "$n" ] && [ "$(jnum "$out" errors)" = 0 ] &&
			[ "${n:-0}" -gt 0 ] || n=""
	elif [ "$part" = conn ]; then
		rate=$(sed -n 's/.*: \([0-9]*\)\/s$/\1/p' <<<"$out")
		if [ "$proto" = h3r ]; then
			sed -n 's/^/h3r: /; /resumed,/p' <<<"$out"
			sed -n 's/^\([0-9]*\) resumed, \([0-9]*\) early.*/\1 \2/p' \
				<<<"$out" >>"$DIR/resumed"
		fi
		ok=$(sed -n 's/.*answered, \([0-9]*\) 2xx.*/\1/p' <<<"$out")
	else
		rate=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
		ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' <<<"$out")
	fi
	secs=$(awk -v a="$t0" -v b="$t1" -v t="$TICK" 'BEGIN { print (b - a) / t }')
	cpu_rate=$(awk -v n="${ok:-0}" -v s="$secs" \
		'BEGIN { if (s > 0) printf "%.0f", n / s; else print 0 }')
	if [ "$proto" = h3 ]; then
		echo "$part $proto: ${rate:-?}/s, ${n:-not all} 2xx (${ok:-?} with the warmup's), server CPU ${secs}s, $cpu_rate per CPU-s"
		[ -n "$n" ] || { echo "$out" | tail -3; return; }
	else
		echo "$part $proto: ${rate:-?}/s, ${ok:-?} of $n 2xx, server CPU ${secs}s, $cpu_rate per CPU-s"
		[ "${ok:-0}" = "$n" ] || { echo "$out" | tail -3; return; }
	fi
	echo "$part $proto ${rate:-0} $cpu_rate" >>"$DIR/results"
}

# conns PROTO -- $CONN_N new connections (h2, or h3c/h3r through
# h3-client), $CONN_K at a time, one GET each; prints "N connections, A
# answered, S 2xx in T s: R/s" like h3-client
conns() {
	local per=$((CONN_N / CONN_K)) t0 i
	t0=$(date +%s%N)
	if [ "$1" = h3c ]; then
		for i in $(seq "$CONN_K"); do
			taskset -c "$LOAD_CPU" "$H3" "$PORT" GET /doc -N "$per" &
		done
		wait
	elif [ "$1" = h3r ]; then
		for i in $(seq "$CONN_K"); do
			taskset -c "$LOAD_CPU" "$H3" "$PORT" GET /doc -N "$per" \
				--session "$DIR/session.$i" --early &
		done
		wait
	else
		for i in $(seq "$per"); do
			taskset -c "$LOAD_CPU" h2load -t 1 -c "$CONN_K" -m 1 -n "$CONN_K" \
				"https://127.0.0.1:$PORT/doc" | sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1 2xx/p'
		done
	fi | awk -v n=$((per * CONN_K)) -v t0="$t0" '
		/connections,/ { a += $3; s += $5 }
		/^[0-9]+ 2xx$/ { a += $1; s += $1 }
		/resumed,/ { res += $1; early += $3; sess = 1 }
		END {
			"date +%s%N" | getline t1; t = (t1 - t0) / 1e9
			r = t > 0 ? a / t : 0
			if (sess)
				printf "%d resumed, %d early data accepted\n", res, early
			printf "%d connections, %d answered, %d 2xx in %.3f s: %.0f/s\n",
				n, a, s, t, r
		}'
}

# sessions -- one untimed connection per h3r client process, which saves
# the session file that process resumes first
sessions() {
	local i
	for i in $(seq "$CONN_K"); do
		rm -f "$DIR/session.$i"
		"$H3" "$PORT" GET /doc --session "$DIR/session.$i" >/dev/null 2>&1 ||
			echo "h3r: no session for client $i"
	done
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# idle PROTO -- $IDLE idle connections of PROTO held at once against a
# fresh server: its VmRSS growth per connection into $DIR/results as
# "idle PROTO KB" (HTTP/3: then ngtcp2's, nghttp3's and our live KB per
# connection, from the server's last KEEL_H3_MEMSTAT line)
idle() {
	local proto=$1 before after line mem per
	KEEL_H3_MEMSTAT=1 start --max-conns $((2 * IDLE + 1000)) --idle-timeout 600s
	sleep 1
	before=$(rss_kb "$SPID")
	if [ "$proto" = h3 ]; then
		coproc IDLER { taskset -c "$LOAD_CPU" "$H3" "$PORT" GET /doc \
			-I "$IDLE" -k 600000 2>&1; }
	else
		coproc IDLER { taskset -c "$LOAD_CPU" python3 "$(dirname "$0")/h2idle.py" \
			"$PORT" "$DIR/cert.pem" "$IDLE" /doc 2>&1; }
	fi
	read -r line <&"${IDLER[0]}"
	sleep 2 # settled; the sweep (every 250 ms) has printed the figures
	after=$(rss_kb "$SPID")
	mem=$(grep 'h3 memory' "$DIR/s.out" | tail -n 1)
	# the get64 part's load on one more connection while they are held:
	# what idle connections cost a busy one (as "beside PROTO RATE")
	local busy
	if [ "$proto" = h3 ]; then
		busy=$(jnum "$(taskset -c "$LOAD_CPU" "$LOADGEN" --http3 --port "$PORT" \
			--conns 1 --pipeline "$GET_K" --duration "$H3_SECS" \
			--warmup "$H3_WARMUP" --path /doc 2>/dev/null)" answers_per_s)
	else
		busy=$(taskset -c "$LOAD_CPU" h2load -t 1 -c 1 -m "$GET_K" -n "$GET_N" \
			"https://127.0.0.1:$PORT/doc" 2>/dev/null |
			sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
	fi
	echo "idle $proto: beside them a GET 64 B connection got ${busy:-?}/s"
	echo "beside $proto ${busy:-0}" >>"$DIR/results"
	kill "$IDLER_PID" 2>/dev/null
	wait "$IDLER_PID" 2>/dev/null
	stop
	per=$(awk -v a="$before" -v b="$after" -v n="$IDLE" 'BEGIN { printf "%.1f", (b - a) / n }')
	echo "idle $proto: $line, RSS $before -> $after KB, $per KB a connection"
	[ "$line" = "open $IDLE" ] || return
	if [ "$proto" = h3 ]; then
		echo "  $mem"
		per="$per $(sed -n 's/.*: \([0-9]*\) connections .*ngtcp2 \([0-9]*\) bytes.*nghttp3 \([0-9]*\) bytes.*ours \([0-9]*\) bytes.*/\1 \2 \3 \4/p' <<<"$mem" |
			awk '{ printf "%.1f %.1f %.1f", $2 / $1 / 1024, $3 / $1 / 1024, $4 / $1 / 1024 }')"
	fi
	echo "idle $proto $per" >>"$DIR/results"
}

# part PART PROTO -- one part over one protocol
part() {
	local url="https://127.0.0.1:$PORT"
	local lg="$LOADGEN --http3 --port $PORT --duration $H3_SECS --warmup $H3_WARMUP --label $1"
	case "$1 $2" in
	"get64 h3") measure get64 h3 0 $lg --conns 1 --pipeline "$GET_K" --path /doc ;;
	"get64 h2") measure get64 h2 "$GET_N" h2load -t 1 -c 1 -m "$GET_K" -n "$GET_N" "$url/doc" ;;
	"get1m h3") measure get1m h3 0 $lg --conns 1 --pipeline 1 --path /big ;;
	"get1m h2") measure get1m h2 "$BIG_N" h2load -t 1 -c 1 -m 1 -n "$BIG_N" "$url/big" ;;
	"conn h3") measure conn h3 0 $lg --conns "$CONN_K" --close --path /doc ;;
	"conn h3c") measure conn h3c $((CONN_N / CONN_K * CONN_K)) conns h3c ;;
	"conn h3r") sessions; measure conn h3r $((CONN_N / CONN_K * CONN_K)) conns h3r ;;
	"conn h2") measure conn h2 $((CONN_N / CONN_K * CONN_K)) conns h2 ;;
	"put16 h3") measure put16 h3 0 $lg --conns 1 --pipeline "$PUT_K" --put-ratio 1 \
		--value-size 16 ;;
	"put16 h2") measure put16 h2 "$PUT_N" h2load -t 1 -c 1 -m "$PUT_K" -n "$PUT_N" \
		-d "$DIR/v16" -H ':method: PUT' "$url/p" ;;
	esac
}

echo "keel-serve HTTP/3 vs HTTP/2+TLS ($TESTS), one connection each," \
	"$ROUNDS rounds, server CPU $SERVER_CPU, client CPU $LOAD_CPU"
: >"$DIR/results"
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then order="h3 h2"; else order="h2 h3"; fi
	start
	for t in $TESTS; do
		want "$t" || continue
		# conn: HTTP/3 resumed beside the 1-RTT run, in the same round
		protos=$order
		[ "$t" = conn ] && protos="$order h3c h3r"
		for p in $protos; do part "$t" "$p"; done
	done
	stop
done
if want idle; then
	idle h3
	idle h2
fi

{
	if [ -n "$(echo " $TESTS " | sed 's/ idle / /g' | tr -d ' ')" ]; then
		echo
		echo "| part | HTTP/3 /s | h2+TLS /s | ratio | HTTP/3 per CPU-s | h2+TLS per CPU-s | ratio |"
		echo "|---|---|---|---|---|---|---|"
	fi
	for t in $TESTS; do
		case $t in
		idle) continue ;;
		get64) label="GET 64 B, $GET_K streams at a time" ;;
		get1m) label="GET 1 MiB, 1 stream at a time" ;;
		put16) label="durable PUT 16 B, $PUT_K streams at a time" ;;
		conn) label="new connections (1-RTT, one GET 64 B each), $CONN_K at a time" ;;
		esac
		awk -v t="$t" -v label="$label" '
			$1 == t { n[$2]++; r[$2] += $3; c[$2] += $4 }
			END {
				if (!n["h3"] || !n["h2"]) exit
				r3 = r["h3"] / n["h3"]; r2 = r["h2"] / n["h2"]
				c3 = c["h3"] / n["h3"]; c2 = c["h2"] / n["h2"]
				printf "| %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx |\n",
					label, r3, r2, (r2 ? r3 / r2 : 0), c3, c2, (c2 ? c3 / c2 : 0)
			}' "$DIR/results"
	done
	if want conn; then
		echo
		echo "| new connections over HTTP/3 | 1-RTT /s | resumed, GET in 0-RTT /s | ratio | 1-RTT per CPU-s | resumed per CPU-s | ratio |"
		echo "|---|---|---|---|---|---|---|"
		awk -v label="$((CONN_N / CONN_K * CONN_K)) connections, $CONN_K at a time, one GET 64 B each" '
			$1 == "conn" { n[$2]++; r[$2] += $3; c[$2] += $4 }
			END {
				if (!n["h3c"] || !n["h3r"]) exit
				r1 = r["h3c"] / n["h3c"]; rr = r["h3r"] / n["h3r"]
				c1 = c["h3c"] / n["h3c"]; cr = c["h3r"] / n["h3r"]
				printf "| %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx |\n",
					label, r1, rr, (r1 ? rr / r1 : 0), c1, cr, (c1 ? cr / c1 : 0)
			}' "$DIR/results"
	fi
	want idle && awk -v n="$IDLE" '
		$1 == "idle" { kb[$2] = $3; if ($2 == "h3") { q = $4; h = $5; o = $6 } }
		END {
			if (!("h3" in kb) || !("h2" in kb)) exit
			print ""
			print "| idle connections, " n " held at once | HTTP/3 KB each | h2+TLS KB each | ratio | HTTP/3 live KB each: ngtcp2, nghttp3, ours |"
			print "|---|---|---|---|---|"
			printf "| server VmRSS growth / %d | %.1f | %.1f | %.2fx | %s, %s, %s |\n",
				n, kb["h3"], kb["h2"], (kb["h2"] ? kb["h3"] / kb["h2"] : 0), q, h, o
		}' "$DIR/results"
	want idle && want get64 && awk -v n="$IDLE" -v k="$GET_K" '
		$1 == "get64" { a[$2] += $3; an[$2]++ }
		$1 == "beside" { b[$2] = $3 }
		END {
			if (!an["h3"] || !an["h2"] || !("h3" in b) || !("h2" in b)) exit
			a3 = a["h3"] / an["h3"]; a2 = a["h2"] / an["h2"]
			print ""
			print "| GET 64 B, " k " streams at a time, one connection | HTTP/3 /s | h2+TLS /s |"
			print "|---|---|---|"
			printf "| alone (the rounds above) | %.0f | %.0f |\n", a3, a2
			printf "| beside %d idle connections | %.0f | %.0f |\n", n, b["h3"], b["h2"]
			printf "| beside / alone | %.2fx | %.2fx |\n", (a3 ? b["h3"] / a3 : 0),
				(a2 ? b["h2"] / a2 : 0)
		}' "$DIR/results"
} | tee "$DIR/table.md"
{
	echo "Means over $ROUNDS round(s); one keel-serve (--threads 1, TLS, so HTTP/3 on the"
	echo "same port) pinned to CPU $SERVER_CPU; the clients, build/loadgen --http3 --conns 1"
	echo "--pipeline K ($H3_WARMUP s warmup, $H3_SECS s measured) and h2load"
	echo "($(h2load --version 2>/dev/null | head -n 1)) -c 1 -m K -n N (GET 64 B: $GET_N, GET 1 MiB:"
	echo "$BIG_N, PUT: $PUT_N requests), to CPU $LOAD_CPU; per CPU-s: answers per second of the"
	echo "server's CPU time (utime + stime); parts: $TESTS."
	want conn && echo "New connections: loadgen --http3 --close --conns $CONN_K (a new connection as each" \
		"answer comes) against h2load -c $CONN_K -n $CONN_K run $((CONN_N / CONN_K)) times (the rate over the" \
		"part's wall time, h2load's start-ups included), full handshakes both. Resumed against" \
		"1-RTT over HTTP/3: build/h3-client -N, $CONN_K processes, h3c with full handshakes and" \
		"h3r with --session --early, each connection resuming the ticket the one before got, its" \
		"GET in 0-RTT (h3-client counts the resumed connections and the early data taken)."
	want idle && echo "Idle connections: a fresh keel-serve for each protocol; HTTP/3" \
		"through h3-client -I (a handshake and one GET each, then idle), HTTP/2+TLS through" \
		"bench/http/h2idle.py (TLS, preface and SETTINGS, no request); VmRSS 2 s after all are" \
		"open; live KB: what ngtcp2 and nghttp3 hold through their counting allocators" \
		"(KEEL_H3_MEMSTAT), touched or not, and our own structures. Beside them, while they" \
		"are held, the get64 part's load on one more connection, against its rounds alone."
	[ -s "$DIR/resumed" ] && awk -v n=$((CONN_N / CONN_K * CONN_K)) '
		{ r += $1; e += $2; k++ }
		END {
			printf "Resumed: %d of %d connections; early data taken on %d " \
				"(GnuTLS refuses it on a ticket made before its anti-replay " \
				"window last moved).\n", r, n * k, e
		}' "$DIR/resumed"
	cat "$DIR/table.md"
} >"$DIR/section.md"
results_write http h3 "keel-serve against nginx and Redis" "$DIR" "$DIR/section.md"
