#!/bin/bash
# h2.sh [BUILD_DIR] -- keel-serve against nginx over HTTP/2 with h2load:
# GET of a 64-byte document, 64 connections x 10 streams each, over
# h2+TLS (ALPN h2, the same certificate for both, made here with openssl
# req) and over h2c (prior knowledge), same machine, same run.  Prints one
# line per run and a Markdown table of the means (docs/results/http.md
# holds the last one: bench/results.sh, with the command, the machine and
# the commit; a rerun replaces it).
#
#   ROUNDS=3 DUR=5 bash bench/http/h2.sh build-http
#
# Server on CPU $SERVER_CPU, h2load on CPU $LOAD_CPU (taskset; one h2load
# thread).  Each round runs both servers, the order alternating.  Per run:
# answers/s (h2load's req/s for the -D window after --warm-up-time), the
# server's CPU time (utime + stime of all its threads, /proc/PID/stat) and
# so answers per CPU-second.  keel-serve runs --threads 1; nginx one
# process (master_process off, worker_processes 1, access_log off,
# open_file_cache, http2_max_requests unlimited), serving the same bytes as
# a static file, with sendfile off: over h2c, nginx 1.22 sends each 64-byte
# DATA frame with its own sendfile and answered 1.5x more per CPU-second
# without it (NGINX_SENDFILE=on to compare).  Needs nginx with http_v2 (Debian's nginx-light has it)
# and h2load (nghttp2-client): make deps-bench.
#
# TESTS picks the parts (default all):
#   get64  the GET above, over h2+TLS and h2c
#   get1m  GET of a 1 MiB document over h2+TLS, $BIG_CONNS connections x 1
#          stream
#   tls    new TLS connections (openssl s_time -new: full handshakes) and
#          resumed ones (-reuse: TLS 1.3 tickets), each a GET of the 64-byte
#          document: connections per second and per server CPU-second
#   put    keel-serve alone: durable PUTs of 16 bytes, 64 connections, over
#          h2+TLS against HTTP/1.1 over TLS (h2load --h1), same run
#   idle   once per server: $IDLE idle h2+TLS connections held
#          (bench/http/h2idle.py: preface and SETTINGS, then nothing), the
#          server's resident memory before and after, then one GET on each:
#          memory per connection, and how many were answered
set -u
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../../docs/results}
. "$(dirname "$0")/../results.sh"
results_begin "bash $0" "$@"
results_env ROUNDS DUR CONNS STREAMS BIG_CONNS TESTS IDLE SERVER_CPU LOAD_CPU
B=${1:-build}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
CONNS=${CONNS:-64}
STREAMS=${STREAMS:-10}
BIG_CONNS=${BIG_CONNS:-8}
TESTS=${TESTS:-get64 get1m tls put idle}
IDLE=${IDLE:-10000}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
DIR=${DIR:-$(mktemp -d /var/tmp/keel-bench-h2.XXXXXX)}
SERVE=$B/keel-serve
PIDS=""

cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.2
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$DIR"
}
trap cleanup EXIT
for tool in nginx h2load openssl curl; do
	command -v $tool >/dev/null || { echo "h2.sh needs $tool (make deps-bench)"; exit 1; }
done
nginx -V 2>&1 | grep -q http_v2_module || { echo "this nginx has no http_v2"; exit 1; }
[ -x "$SERVE" ] || { echo "no $SERVE"; exit 1; }
mkdir -p "$DIR/www"
head -c 64 /dev/urandom | base64 | head -c 64 >"$DIR/www/doc"
head -c 1048576 /dev/urandom >"$DIR/www/big"
head -c 16 /dev/urandom >"$DIR/www/v16"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>/dev/null || exit 1
chmod 600 "$DIR/key.pem"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {
	local i
	for i in $(seq 100); do
		(exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on $1" >&2
	return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

# start_keel: a TLS server (TPORT) and a plain one (CPORT), one store each
# with the document; SPIDS holds both
start_keel() {
	local p
	TPORT=$(free_port)
	CPORT=$(free_port)
	rm -f "$DIR/t.keel" "$DIR/c.keel"
	taskset -c "$SERVER_CPU" "$SERVE" --db "$DIR/t.keel" --listen 127.0.0.1:"$TPORT" \
		--max-conns $((IDLE + 1000)) --idle-timeout 600s \
		--tls-cert "$DIR/cert.pem" --tls-key "$DIR/key.pem" >"$DIR/kt.out" 2>&1 &
	p=$!
	taskset -c "$SERVER_CPU" "$SERVE" --db "$DIR/c.keel" --listen 127.0.0.1:"$CPORT" \
		>"$DIR/kc.out" 2>&1 &
	SPIDS="$p $!"
	PIDS="$PIDS $SPIDS"
	wait_port "$TPORT" && wait_port "$CPORT" || exit 1
	curl -s -k -o /dev/null -X PUT --data-binary @"$DIR/www/doc" "https://127.0.0.1:$TPORT/doc"
	curl -s -o /dev/null -X PUT --data-binary @"$DIR/www/doc" "http://127.0.0.1:$CPORT/doc"
	curl -s -k -o /dev/null -X PUT --data-binary @"$DIR/www/big" "https://127.0.0.1:$TPORT/big"
}

# start_nginx: one process with a TLS listener (TPORT) and an h2c one (CPORT)
start_nginx() {
	TPORT=$(free_port)
	CPORT=$(free_port)
	mkdir -p "$DIR/nginx"
	cat >"$DIR/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 30000;
pid $DIR/nginx/nginx.pid;
error_log $DIR/nginx/error.log warn;
events { worker_connections 20000; }
http {
	access_log off;
	sendfile ${NGINX_SENDFILE:-off};
	tcp_nopush on;
	tcp_nodelay on;
	keepalive_timeout 600;
	keepalive_requests 100000000;
	http2_max_requests 100000000;
	open_file_cache max=64 inactive=60s;
	open_file_cache_valid 60s;
	client_body_temp_path $DIR/nginx/body;
	proxy_temp_path $DIR/nginx/proxy;
	fastcgi_temp_path $DIR/nginx/fastcgi;
	uwsgi_temp_path $DIR/nginx/uwsgi;
	scgi_temp_path $DIR/nginx/scgi;
	types { application/octet-stream doc big; }
	ssl_certificate $DIR/cert.pem;
	ssl_certificate_key $DIR/key.pem;
	ssl_protocols TLSv1.2 TLSv1.3;
	server {
		listen 127.0.0.1:$TPORT ssl http2 backlog=4096;
		listen 127.0.0.1:$CPORT http2 backlog=4096;
		root $DIR/www;
	}
}
EOF
	taskset -c "$SERVER_CPU" nginx -c "$DIR/nginx/nginx.conf" -p "$DIR/nginx" \
		>"$DIR/nginx/out" 2>&1 &
	SPIDS=$!
	PIDS="$PIDS $SPIDS"
	wait_port "$TPORT" && wait_port "$CPORT" ||
		{ cat "$DIR/nginx/out" "$DIR/nginx/error.log"; exit 1; }
}

stop_servers() {
	local p
	for p in $SPIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}

# run SERVER PROTO URL SPID [H2LOAD ARGS] -- one h2load run; prints a
# result line and appends "SERVER PROTO rate cpu_rate" to $DIR/results
run() {
	local server=$1 proto=$2 url=$3 spid=$4 t0 t1 out rate codes secs
	shift 4
	t0=$(cpu_ticks "$spid")
	out=$(taskset -c "$LOAD_CPU" h2load -t 1 -c "$CONNS" -m "$STREAMS" \
		-D "$DUR" --warm-up-time=1 "$@" "$url" 2>&1)
	t1=$(cpu_ticks "$spid")
	rate=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
	codes=$(sed -n 's/^status codes: //p' <<<"$out")
	# CPU over the warm-up and the measured window
	secs=$(awk -v a="$t0" -v b="$t1" -v t="$TICK" 'BEGIN { print (b - a) / t }')
	local cpu_rate
	# answers over warm-up and window, at the window's rate, per CPU-s
	cpu_rate=$(awk -v r="${rate:-0}" -v d="$DUR" -v s="$secs" \
		'BEGIN { if (s > 0) printf "%.0f", r * (d + 1) / s; else print 0 }')
	echo "$server $proto: ${rate:-?} req/s, server CPU ${secs}s, ${cpu_rate} req/CPU-s ($codes)"
	echo "$server $proto ${rate:-0} $cpu_rate" >>"$DIR/results"
}

# handshakes SERVER PROTO PORT SPID new|reuse -- openssl s_time for $DUR s,
# each connection a GET of the document: connections per second (real
# time) and per server CPU-second
handshakes() {
	local server=$1 proto=$2 port=$3 spid=$4 how=$5 t0 t1 out n secs real
	t0=$(cpu_ticks "$spid")
	real=$(date +%s.%N)
	out=$(taskset -c "$LOAD_CPU" openssl s_time -connect 127.0.0.1:"$port" \
		-"$how" -time "$DUR" -www /doc 2>&1)
	real=$(awk -v a="$real" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
	t1=$(cpu_ticks "$spid")
	n=$(sed -n 's/^\([0-9]*\) connections in [0-9.]*s;.*/\1/p' <<<"$out" | head -1)
	secs=$(awk -v a="$t0" -v b="$t1" -v t="$TICK" 'BEGIN { print (b - a) / t }')
	local rate cpu_rate
	rate=$(awk -v n="${n:-0}" -v r="$real" 'BEGIN { printf "%.0f", n / r }')
	cpu_rate=$(awk -v n="${n:-0}" -v s="$secs" \
		'BEGIN { if (s > 0) printf "%.0f", n / s; else print 0 }')
	echo "$server $proto: ${n:-?} connections in ${real}s, $rate/s, server CPU ${secs}s, $cpu_rate per CPU-s"
	echo "$server $proto $rate $cpu_rate" >>"$DIR/results"
}

want() { case " $TESTS " in *" $1 "*) return 0 ;; esac; return 1; }

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# idle SERVER PORT SPID -- $IDLE idle h2+TLS connections: KB each, answers
idle() {
	local server=$1 port=$2 spid=$3 before after line ans per
	before=$(rss_kb "$spid")
	coproc H2IDLE { taskset -c "$LOAD_CPU" python3 bench/http/h2idle.py \
		"$port" "$DIR/cert.pem" "$IDLE" /doc 2>&1; }
	read -r line <&"${H2IDLE[0]}"
	case "$line" in open*) ;; *) echo "$server idle: $line"; return ;; esac
	sleep 1
	after=$(rss_kb "$spid")
	echo go >&"${H2IDLE[1]}"
	read -r ans <&"${H2IDLE[0]}"
	wait "$H2IDLE_PID" 2>/dev/null
	per=$(awk -v a="$before" -v b="$after" -v n="$IDLE" \
		'BEGIN { printf "%.1f", (b - a) / n }')
	echo "$server idle: $line, RSS ${before} -> ${after} KB, $per KB a connection; $ans"
	echo "$server idle-h2-tls $per $(awk '{print $2}' <<<"$ans")" >>"$DIR/results"
}

echo "keel-serve vs nginx over HTTP/2 ($TESTS): GET 64 B at $CONNS connections x $STREAMS streams," \
	"$ROUNDS rounds of ${DUR}s (+1 s warm-up), server CPU $SERVER_CPU, load CPU $LOAD_CPU"
: >"$DIR/results"
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then order="keel nginx"; else order="nginx keel"; fi
	for s in $order; do
		start_$s
		set -- $SPIDS
		tpid=$1 cpid=${2:-$1}
		if want get64; then
			run "$s" h2-tls "https://127.0.0.1:$TPORT/doc" "$tpid"
			run "$s" h2c "http://127.0.0.1:$CPORT/doc" "$cpid"
		fi
		if want get1m; then
			CONNS=$BIG_CONNS STREAMS=1 run "$s" get1m-h2-tls \
				"https://127.0.0.1:$TPORT/big" "$tpid"
		fi
		if want tls; then
			handshakes "$s" tls-new "$TPORT" "$tpid" new
			handshakes "$s" tls-resumed "$TPORT" "$tpid" reuse
		fi
		if want put && [ "$s" = keel ]; then
			STREAMS=1 run keel put16-h2-tls "https://127.0.0.1:$TPORT/p" \
				"$tpid" -d "$DIR/www/v16" -H ':method: PUT'
			STREAMS=1 run keel put16-h1-tls "https://127.0.0.1:$TPORT/p" \
				"$tpid" --h1 -d "$DIR/www/v16" -H ':method: PUT'
		fi
		stop_servers
	done
done

if want idle; then
	for s in keel nginx; do
		start_$s
		set -- $SPIDS
		idle "$s" "$TPORT" "$1"
		stop_servers
	done
fi

{
	echo
	echo "| $CONNS conns x $STREAMS streams unless said | keel-serve /s | nginx /s | ratio | keel per CPU-s | nginx per CPU-s | ratio |"
	echo "|---|---|---|---|---|---|---|"
	for proto in h2-tls h2c get1m-h2-tls tls-new tls-resumed; do
		awk -v p="$proto" '
			$2 == p { n[$1]++; r[$1] += $3; c[$1] += $4 }
			END {
				if (!n["keel"] || !n["nginx"]) exit
				kr = r["keel"] / n["keel"]; nr = r["nginx"] / n["nginx"]
				kc = c["keel"] / n["keel"]; nc = c["nginx"] / n["nginx"]
				printf "| %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx |\n",
					p, kr, nr, (nr ? kr / nr : 0), kc, nc, (nc ? kc / nc : 0)
			}' "$DIR/results"
	done
	if want put; then
		echo
		echo "| keel-serve, durable PUT 16 B, $CONNS conns x 1 stream | h2+TLS /s | HTTP/1.1+TLS /s | ratio |"
		echo "|---|---|---|---|"
		awk '
			$2 == "put16-h2-tls" { n2++; r2 += $3 }
			$2 == "put16-h1-tls" { n1++; r1 += $3 }
			END { if (n1 && n2) printf "| | %.0f | %.0f | %.2fx |\n", r2 / n2, r1 / n1, (r2 / n2) / (r1 / n1) }
		' "$DIR/results"
	fi
	if want idle; then
		echo
		echo "| $IDLE idle h2+TLS connections | keel-serve KB each | nginx KB each | ratio | answered afterwards (keel / nginx) |"
		echo "|---|---|---|---|---|"
		awk -v n="$IDLE" '
			$2 == "idle-h2-tls" { kb[$1] = $3; a[$1] = $4 }
			END { if (kb["nginx"] > 0) printf "| | %.1f | %.1f | %.2fx | %s / %s of %d |\n", kb["keel"], kb["nginx"], kb["keel"] / kb["nginx"], a["keel"], a["nginx"], n }
		' "$DIR/results"
	fi
} | tee "$DIR/table.md"
{
	echo "Means over $ROUNDS round(s) of ${DUR} s runs (+1 s warm-up); keel-serve --threads 1 and"
	echo "nginx ($(nginx -v 2>&1 | sed 's/^nginx version: //'), one process) pinned to CPU $SERVER_CPU, h2load"
	echo "($(h2load --version 2>/dev/null | head -n 1)) to CPU $LOAD_CPU; parts: $TESTS."
	cat "$DIR/table.md"
} >"$DIR/section.md"
results_write http h2 "keel-serve against nginx and Redis" "$DIR" "$DIR/section.md"
