#!/bin/bash
# run.sh [BUILD_DIR] -- keel-serve against nginx (static files) and Redis
# (appendfsync always), same machine, same run.  Writes raw JSONL and prints
# a Markdown table (docs/results/http.md holds the last one).
#
#   ROUNDS=2 DUR=3 bash bench/http/run.sh build-http
#   PARTS=put ROUNDS=3 bash bench/http/run.sh build-http   # durable writes only
#   SERVE_ARGS='--busy-poll 250' PARTS=put bash bench/http/run.sh build-http
#                            # extra keel-serve flags (recorded on each line)
#   DEFER=1 PARTS=static bash bench/http/run.sh build  # both servers with
#                            # TCP_DEFER_ACCEPT: keel-serve --defer-accept 1,
#                            # nginx "listen ... deferred"; no idle10k (the
#                            # kernel would hold the idle connections); its
#                            # own section, http1-defer
#
# Server on CPU $SERVER_CPU, load generator on CPU $LOAD_CPU (taskset).  Every
# round runs every scenario on every server; the order of the servers
# rotates each round (the first to run on a warm or cold machine is not
# always the same one).  Per run it records answers/s (loadgen or
# redis-benchmark), the server's CPU time (utime + stime of all its
# threads, /proc/PID/stat) and its peak RSS (VmHWM).  The table goes to
# docs/results/http.md too (bench/results.sh: with the command, the machine
# and the commit; a rerun replaces it).
#
# Scenarios: get64 (64-byte GET, keep-alive, 64 connections), get64_p16
# (the same, pipelined 16 deep), get1m (1 MiB GET, 16 connections),
# get64_close (a new connection per request), get64_rate (20,000 GETs/s
# at fixed times over 64 connections: latency percentiles), put16_c64 and put16_c1
# (durable 16-byte PUT chaining If-Match; Redis: redis-benchmark SET -d 16,
# same connection count), idle10k (10,000 idle keep-alive connections: user
# memory per connection from VmRSS, then one GET on each), and fsync (fio,
# the device's plain fdatasync rate in the same directory).
set -u
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../../docs/results}
. "$(dirname "$0")/../results.sh"
results_begin "bash $0" "$@"
results_env ROUNDS DUR PARTS SERVE_ARGS SERVER_CPU LOAD_CPU DEFER
B=${1:-build}
ROUNDS=${ROUNDS:-2}
DUR=${DUR:-3}
PARTS=${PARTS:-static,put} # static: GETs against nginx; put: durable writes
SERVE_ARGS=${SERVE_ARGS:-} # extra keel-serve flags, word-split
DEFER=${DEFER:-0}          # seconds of TCP_DEFER_ACCEPT for both servers
case $DEFER in *[!0-9]* | '') echo "DEFER: seconds expected" >&2; exit 2 ;; esac
NGINX_DEFER=""
if [ "$DEFER" -gt 0 ]; then
	SERVE_ARGS="$SERVE_ARGS --defer-accept $DEFER"
	NGINX_DEFER=" deferred"
fi
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT_DEFAULT=bench/results/http/results.jsonl
[ "$DEFER" -gt 0 ] && OUT_DEFAULT=bench/results/http/results-defer.jsonl
OUT=${OUT:-$OUT_DEFAULT}
DIR=${DIR:-$(mktemp -d /var/tmp/keel-bench-http.XXXXXX)} # a real disk, not tmpfs
LOADGEN=$B/loadgen
SERVE=$B/keel-serve
TICK=$(getconf CLK_TCK)
PIDS=""

cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.2
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$DIR"
}
trap cleanup EXIT
mkdir -p "$DIR/www" "$(dirname "$OUT")"
: >"$OUT"

head -c 64 /dev/urandom | base64 | head -c 64 >"$DIR/www/doc"
head -c 1048576 /dev/urandom >"$DIR/www/big"

free_port() { # a port nobody listens on (kernel-chosen, then released)
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
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
# the machine's CPU time the host took for other guests (a virtual
# machine's "steal", /proc/stat, in ticks): a run it hit has tails of
# the host's making, whatever the server
steal_ticks() { awk '/^cpu / {print $9 + 0}' /proc/stat; }
hwm_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
jnum() { grep -o "\"$2\":[0-9.]*" <<<"$1" | head -1 | cut -d: -f2; }

# ---- servers: start_<name> sets PORT and SPID ------------------------------
start_keel() {
	rm -f "$DIR/keel.db"
	PORT=$(free_port)
	# shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
	taskset -c "$SERVER_CPU" "$SERVE" --db "$DIR/keel.db" \
		--listen 127.0.0.1:"$PORT" --threads 1 $SERVE_ARGS >"$DIR/keel.out" 2>&1 &
	SPID=$!
	PIDS="$PIDS $SPID"
	wait_port "$PORT" || exit 1
	# only the small document now: the 1 MiB PUT's buffer would leave free
	# heap behind that hides the idle connections' memory (run_static)
	curl -s -o /dev/null -X PUT --data-binary @"$DIR/www/doc" "http://127.0.0.1:$PORT/doc"
}

start_nginx() {
	PORT=$(free_port)
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
	sendfile on;
	tcp_nopush on;
	tcp_nodelay on;
	keepalive_timeout 60;
	keepalive_requests 100000000;
	open_file_cache max=64 inactive=60s;
	open_file_cache_valid 60s;
	client_body_temp_path $DIR/nginx/body;
	proxy_temp_path $DIR/nginx/proxy;
	fastcgi_temp_path $DIR/nginx/fastcgi;
	uwsgi_temp_path $DIR/nginx/uwsgi;
	scgi_temp_path $DIR/nginx/scgi;
	types { application/octet-stream doc big; }
	server {
		listen 127.0.0.1:$PORT backlog=4096$NGINX_DEFER;
		root $DIR/www;
	}
}
EOF
	taskset -c "$SERVER_CPU" nginx -c "$DIR/nginx/nginx.conf" -p "$DIR/nginx" \
		>"$DIR/nginx/out" 2>&1 &
	SPID=$!
	PIDS="$PIDS $SPID"
	wait_port "$PORT" || { cat "$DIR/nginx/out" "$DIR/nginx/error.log"; exit 1; }
}

start_redis() {
	PORT=$(free_port)
	rm -rf "$DIR/redis"
	mkdir -p "$DIR/redis"
	taskset -c "$SERVER_CPU" redis-server --port "$PORT" --bind 127.0.0.1 \
		--dir "$DIR/redis" --appendonly yes --appendfsync always --save '' \
		--daemonize no --maxclients 20000 >"$DIR/redis/out" 2>&1 &
	SPID=$!
	PIDS="$PIDS $SPID"
	wait_port "$PORT" || exit 1
}

stop_server() {
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
}

# record ROUND SERVER SCENARIO JSON CPU_TICKS [STEAL_TICKS] -- one JSONL line
record() {
	local ans tot cpu per
	ans=$(jnum "$4" answers_per_s)
	tot=$(jnum "$4" answers_total)
	cpu=$(awk -v t="$5" -v k="$TICK" 'BEGIN {printf "%.3f", t / k}')
	per=$(awk -v a="${tot:-0}" -v c="$cpu" 'BEGIN {printf("%.0f", (c > 0 ? a / c : 0))}')
	local args=""
	[ "$2" = keel ] && args=",\"serve_args\":\"$SERVE_ARGS\""
	[ -n "${6:-}" ] && args="$args,\"steal_ticks\":$6"
	echo "{\"round\":$1,\"server\":\"$2\",\"scenario\":\"$3\"$args,\"answers_per_s\":${ans:-0},\"server_cpu_s\":$cpu,\"answers_per_cpu_s\":$per,\"peak_rss_kb\":$(hwm_kb "$SPID"),\"raw\":$4}" >>"$OUT"
	printf '  %-6s %-12s %10s/s  %9s/cpu-s\n' "$2" "$3" "$ans" "$per"
}

# load ROUND SERVER SCENARIO LOADGEN-ARGS...
load() {
	local r=$1 s=$2 sc=$3 c0 c1 s0 s1 j
	shift 3
	c0=$(cpu_ticks "$SPID")
	s0=$(steal_ticks)
	j=$(taskset -c "$LOAD_CPU" "$LOADGEN" --port "$PORT" --duration "$DUR" \
		--warmup 0.5 --label "$s/$sc" "$@")
	c1=$(cpu_ticks "$SPID")
	s1=$(steal_ticks)
	record "$r" "$s" "$sc" "$j" $((c1 - c0)) $((s1 - s0))
}

# redis_set ROUND CONNS N -- redis-benchmark SET with a 16-byte value
redis_set() {
	local r=$1 c=$2 n=$3 c0 c1 t0 t1 rps j
	c0=$(cpu_ticks "$SPID")
	t0=$(date +%s%N)
	rps=$(taskset -c "$LOAD_CPU" redis-benchmark -p "$PORT" -t set -d 16 \
		-c "$c" -n "$n" --csv 2>/dev/null | awk -F'","' '/^"SET/ {print $2}' | tr -d '"')
	t1=$(date +%s%N)
	c1=$(cpu_ticks "$SPID")
	j="{\"label\":\"redis/put16_c$c\",\"conns\":$c,\"answers_total\":$n,\"answers_per_s\":${rps:-0},\"duration_s\":$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')}"
	record "$r" redis "put16_c$c" "$j" $((c1 - c0))
}

idle10k() { # idle10k ROUND SERVER
	local before after j ready=0 i
	before=$(rss_kb "$SPID")
	taskset -c "$LOAD_CPU" "$LOADGEN" --port "$PORT" --conns 10000 \
		--idle-hold 2 --label "$2/idle10k" >"$DIR/idle.json" 2>"$DIR/idle.err" &
	local lp=$!
	for i in $(seq 300); do
		grep -q READY "$DIR/idle.err" && { ready=1; break; }
		sleep 0.1
	done
	sleep 1
	after=$(rss_kb "$SPID")
	wait $lp
	j=$(cat "$DIR/idle.json")
	echo "{\"round\":$1,\"server\":\"$2\",\"scenario\":\"idle10k\",\"ready\":$ready,\"rss_before_kb\":$before,\"rss_idle_kb\":$after,\"bytes_per_conn\":$(( (after - before) * 1024 / 10000 )),\"peak_rss_kb\":$(hwm_kb "$SPID"),\"raw\":$j}" >>"$OUT"
	printf '  %-6s idle10k      %6s B/conn, %s of 10000 answered 2xx\n' "$2" \
		$(( (after - before) * 1024 / 10000 )) "$(jnum "$j" answered_2xx)"
}

run_static() { # run_static ROUND SERVER (idle first: on a fresh heap)
	[ "$DEFER" -gt 0 ] || idle10k "$1" "$2"
	[ "$2" = keel ] && curl -s -o /dev/null -X PUT --data-binary @"$DIR/www/big" \
		"http://127.0.0.1:$PORT/big"
	load "$1" "$2" get64 --conns 64 --path /doc
	load "$1" "$2" get64_p16 --conns 64 --pipeline 16 --path /doc
	load "$1" "$2" get1m --conns 16 --path /big
	load "$1" "$2" get64_close --conns 16 --close --path /doc
	# fixed rate: latency from the intended send time (no coordinated omission)
	load "$1" "$2" get64_rate --conns 64 --rate 20000 --path /doc
}

# fsync_rate ROUND CPU SCENARIO -- the device: fio, 4 KiB writes, fdatasync
# after each, pinned to CPU.  Run on the load generator's CPU (fsync) and on
# the server's (fsync_server_cpu): a sync's completion interrupt wakes a
# thread on another CPU more slowly, and on a virtual machine much more so.
fsync_rate() {
	local j
	j=$(cd "$DIR" && taskset -c "$2" fio --name=fsync --rw=write --bs=4k \
		--size=64m --ioengine=sync --fdatasync=1 --time_based --runtime="$DUR" \
		--output-format=json 2>/dev/null | tr -d '\n ')
	local iops
	iops=$(grep -o '"write":{[^}]*"iops":[0-9.]*' <<<"$j" | grep -o '"iops":[0-9.]*' | head -1 | cut -d: -f2)
	echo "{\"round\":$1,\"server\":\"fio\",\"scenario\":\"$3\",\"cpu\":$2,\"answers_per_s\":${iops:-0}}" >>"$OUT"
	printf '  fio    %-12s %10s/s (CPU %s)\n' "$3" "$iops" "$2"
	rm -f "$DIR"/fsync.*
}

[ -x "$LOADGEN" ] && [ -x "$SERVE" ] || { echo "build first: make B=$B"; exit 1; }
echo "keel-serve${SERVE_ARGS:+ $SERVE_ARGS} vs nginx vs redis: $ROUNDS rounds of ${DUR}s runs, server CPU $SERVER_CPU, load CPU $LOAD_CPU"
for r in $(seq "$ROUNDS"); do
	echo "round $r"
	if [ $((r % 2)) -eq 1 ]; then order="keel nginx"; else order="nginx keel"; fi
	case ",$PARTS," in *,static,*) ;; *) order="" ;; esac
	for s in $order; do
		start_$s
		run_static "$r" "$s"
		stop_server
	done
	case ",$PARTS," in *,put,*) ;; *) continue ;; esac
	fsync_rate "$r" "$LOAD_CPU" fsync
	fsync_rate "$r" "$SERVER_CPU" fsync_server_cpu
	if [ $((r % 2)) -eq 1 ]; then order="keel redis"; else order="redis keel"; fi
	for s in $order; do
		start_$s
		if [ "$s" = keel ]; then
			load "$r" keel put16_c64 --conns 64 --put-ratio 1 --value-size 16 --if-match
			load "$r" keel put16_c1 --conns 1 --put-ratio 1 --value-size 16 --if-match
		else
			redis_set "$r" 64 $((DUR * 8000))
			redis_set "$r" 1 $((DUR * 500))
		fi
		stop_server
	done
done

# ---- the table: mean over rounds -------------------------------------------
bash "$(dirname "$0")/table.sh" "$OUT" | tee "$DIR/table.md"
{
	echo "Means over $ROUNDS round(s) of ${DUR} s runs; keel-serve${SERVE_ARGS:+ $SERVE_ARGS} --threads 1"
	echo "and each peer pinned to CPU $SERVER_CPU, the load generator to CPU $LOAD_CPU; raw"
	echo "lines: \`$OUT\`.  Peers: $(nginx -v 2>&1 | sed 's/^nginx version: //'),"
	echo "Redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') (appendonly yes, appendfsync always)."
	[ "$DEFER" -gt 0 ] && echo "Both servers defer accepting (TCP_DEFER_ACCEPT): nginx \`listen ... deferred\`."
	echo
	cat "$DIR/table.md"
} >"$DIR/section.md"
section=http1
[ "$DEFER" -gt 0 ] && section=http1-defer
results_write http "$section" "keel-serve against nginx and Redis" "$DIR" "$DIR/section.md"
