#!/bin/sh
# h2.sh BUILD_DIR -- keel-serve over HTTP/2 (docs/http.md "HTTP/2"): the
# HTTP contract through curl over h2+TLS (ALPN) and h2c (prior knowledge),
# tokens over h2, many streams on one connection (h2load), a PUT's sync
# not holding up GETs on the same connection, the stream and header
# limits, each known attack (tests/h2_client.py: rapid reset,
# CONTINUATION flood, HPACK bomb, SETTINGS and PING floods) answered with
# GOAWAY and the server serving on, and SIGTERM's GOAWAY and drain.  The
# certificate is made here, in the temp directory.  Every server listens
# on 127.0.0.1 (port picked by the kernel); every client call and wait is
# bounded.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
set -u
B=${1:-build}
SERVE=$B/keel-serve
HERE=$(cd "$(dirname "$0")" && pwd)
CLIENT="python3 $HERE/h2_client.py"
T=$(mktemp -d /tmp/keel-h2.XXXXXX)
fails=0
checks=0
PIDS=""
declare -A NAME_OF
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

. "$HERE/lib.sh"

[ -x "$SERVE" ] || { echo "no $SERVE"; exit 1; }
for tool in openssl python3 curl h2load nghttp; do
	command -v $tool >/dev/null || { echo "h2.sh needs $tool"; exit 1; }
done
curl --version | grep -q HTTP2 || { echo "h2.sh needs a curl with HTTP2"; exit 1; }

# start NAME ARGS... -- starts a server on 127.0.0.1:0, sets PORT and PID
start() {
	local name=$1 i
	shift
	"$SERVE" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PID=$!
	PIDS="$PIDS $PID"
	NAME_OF[$PID]=$name
	for i in $(seq 400); do
		PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/$name.out")
		[ -n "$PORT" ] && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "server $name did not start:"; cat "$T/$name.err"; exit 1
}
# stop PID -- SIGTERM, then up to 20 s for it to exit; sets STATUS and
# checks it is 0 (a sanitizer build exits otherwise on an error or leak)
stop() {
	local i name=${NAME_OF[$1]}
	kill -TERM "$1" 2>/dev/null
	for i in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	STATUS=$?
	[ "$STATUS" = 0 ] && ok "server $name: SIGTERM, exit 0" ||
		bad "server $name: exit $STATUS: $(tail -c 3000 "$T/$name.err")"
}
# c2 [CURL ARGS...] -- one request over h2 ($H2: --http2 with the CA over
# https, or --http2-prior-knowledge); prints "VERSION STATUS"; headers in
# $T/h, body in $T/body
c2() {
	curl -s -m 20 $H2 -D "$T/h" -o "$T/body" -w '%{http_version} %{http_code}' "$@"
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	-nodes -days 1 -subj /CN=localhost \
	-addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	-keyout "$T/a.key" -out "$T/a.crt" 2>"$T/a.gen" ||
	{ echo "openssl cannot make a certificate:"; cat "$T/a.gen"; exit 1; }
chmod 600 "$T/a.key"
head -c 1048576 /dev/urandom >"$T/big"
head -c 2097152 /dev/urandom >"$T/over"

# contract NAME URL -- the HTTP contract over h2 at URL (a fresh store)
contract() {
	local n=$1 U=$2 etag
	expect "$n: PUT a new key: 201 over HTTP/2" "2 201" \
		"$(c2 -X PUT --data-binary hello "$U/k")"
	contains "$n: the 201 carries the ETag" "$T/h" '^etag: "[0-9]+"'
	etag=$(sed -n 's/^etag: \(.*\)\r$/\1/p' "$T/h")
	expect "$n: GET: 200" "2 200" "$(c2 "$U/k")"
	expect "$n: GET: the body" hello "$(cat "$T/body")"
	contains "$n: GET: the same ETag" "$T/h" "^etag: $etag"
	expect "$n: HEAD: 200" "2 200" "$(c2 -I "$U/k")"
	contains "$n: HEAD: content-length 5" "$T/h" '^content-length: 5'
	expect "$n: GET If-None-Match the ETag: 304" "2 304" \
		"$(c2 -H "If-None-Match: $etag" "$U/k")"
	expect "$n: PUT If-Match another ETag: 412" "2 412" \
		"$(c2 -X PUT -H 'If-Match: "999999"' --data-binary x "$U/k")"
	expect "$n: PUT If-None-Match * on a key that exists: 412" "2 412" \
		"$(c2 -X PUT -H 'If-None-Match: *' --data-binary x "$U/k")"
	expect "$n: PUT If-Match the ETag: 204" "2 204" \
		"$(c2 -X PUT -H "If-Match: $etag" --data-binary hello2 "$U/k")"
	expect "$n: a malformed If-Match: 400" "2 400" \
		"$(c2 -X PUT -H 'If-Match: nope' --data-binary x "$U/k")"
	expect "$n: PUT a second key: 201" "2 201" \
		"$(c2 -X PUT --data-binary x "$U/k2")"
	expect "$n: a listing: 200" "2 200" "$(c2 "$U/?prefix=k")"
	contains "$n: the listing names k2" "$T/body" '"key":"k2"'
	contains "$n: the listing is JSON" "$T/h" '^content-type: application/json'
	expect "$n: DELETE: 204" "2 204" "$(c2 -X DELETE "$U/k2")"
	expect "$n: GET after DELETE: 404" "2 404" "$(c2 "$U/k2")"
	expect "$n: DELETE of a missing key: 404" "2 404" "$(c2 -X DELETE "$U/k2")"
	expect "$n: POST: 405" "2 405" "$(c2 -X POST --data-binary x "$U/k")"
	contains "$n: the 405 says Allow" "$T/h" '^allow: GET, HEAD, PUT, DELETE'
	expect "$n: OPTIONS: 204" "2 204" "$(c2 -X OPTIONS "$U/k")"
	expect "$n: a key over 1024 bytes: 414" "2 414" \
		"$(c2 "$U/$(head -c 1100 /dev/zero | tr '\0' a)")"
	expect "$n: a bad percent escape: 400" "2 400" "$(c2 "$U/a%zz")"
	expect "$n: PUT 1 MiB: 201" "2 201" \
		"$(c2 -X PUT --data-binary @"$T/big" "$U/big")"
	curl -s -m 30 $H2 -o "$T/big.got" "$U/big"
	cmp -s "$T/big" "$T/big.got" && ok "$n: GET 1 MiB: byte for byte" ||
		bad "$n: GET 1 MiB differs ($(wc -c <"$T/big.got") bytes)"
	expect "$n: PUT over --max-body (1 MiB + 1 here): 413" "2 413" \
		"$(c2 -X PUT --data-binary @"$T/over" "$U/over")"
	expect "$n: the refused body was not stored" "2 404" "$(c2 "$U/over")"
	expect "$n: a header list over 16 KiB: 431" "2 431" \
		"$(c2 -H "x-big: $(head -c 17000 /dev/zero | tr '\0' b)" "$U/k")"
	expect "$n: the connection's next request is served" "2 200" "$(c2 "$U/k")"
}

# ---- the contract over h2+TLS and h2c -----------------------------------
start tls --db "$T/tls.keel" --max-body 1049000 --body-budget 8m \
	--tls-cert "$T/a.crt" --tls-key "$T/a.key"
TPORT=$PORT
TPID=$PID
H2="--http2 --cacert $T/a.crt --resolve localhost:$TPORT:127.0.0.1"
curl -sv -m 20 $H2 -o /dev/null "https://localhost:$TPORT/k" 2>"$T/alpn.err"
contains "TLS: ALPN picks h2 when curl offers it" "$T/alpn.err" \
	"ALPN: server accepted h2"
contract "h2+TLS" "https://localhost:$TPORT"
expect "h2+TLS: HTTP/1.1 is still served (curl --http1.1)" "1.1 200" \
	"$(curl -s -m 20 --http1.1 --cacert "$T/a.crt" --resolve \
		"localhost:$TPORT:127.0.0.1" -o /dev/null \
		-w '%{http_version} %{http_code}' "https://localhost:$TPORT/k")"

start plain --db "$T/plain.keel" --max-body 1049000 --body-budget 8m
CPORT=$PORT
CPID=$PID
H2=--http2-prior-knowledge
contract "h2c" "http://127.0.0.1:$CPORT"
expect "h2c: a preface split over two writes is still h2c" "1" \
	"$(timeout 30 $CLIENT split "$CPORT")"
printf 'PRI /k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >"$T/pri.req"
expect "h2c port: an HTTP/1.1 request that starts like the preface: 405" \
	"HTTP/1.1 405 Method Not Allowed" \
	"$(timeout 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$CPORT; cat '$T/pri.req' >&3; head -1 <&3" | tr -d '\r')"
expect "h2c port: HTTP/1.1 is still served" "1.1 200" \
	"$(curl -s -m 20 -o /dev/null -w '%{http_version} %{http_code}' \
		"http://127.0.0.1:$CPORT/k")"

# ---- several streams on one connection -------------------------------------
timeout 60 h2load -n 100 -c 1 -m 10 "http://127.0.0.1:$CPORT/k" >"$T/load.out" 2>&1
contains "h2load h2c: 100 GETs, 10 streams at a time on 1 connection, all 2xx" \
	"$T/load.out" "status codes: 100 2xx, 0 3xx, 0 4xx, 0 5xx"
contains "h2load h2c: the protocol was h2c" "$T/load.out" "Application protocol: h2c"
timeout 60 h2load -n 100 -c 1 -m 10 "https://127.0.0.1:$TPORT/big" \
	>"$T/loadt.out" 2>&1
contains "h2load h2+TLS: 100 GETs of 1 MiB, 10 at a time on 1 connection" \
	"$T/loadt.out" "status codes: 100 2xx, 0 3xx, 0 4xx, 0 5xx"
contains "h2load h2+TLS: every byte (100 MiB of data)" "$T/loadt.out" \
	"\(104857600\) data"
head -c 65536 /dev/urandom >"$T/b64"
timeout 60 h2load -n 100 -c 1 -m 10 -d "$T/b64" -H ':method: PUT' \
	"http://127.0.0.1:$CPORT/many" >"$T/loadp.out" 2>&1
contains "h2load h2c: 100 PUTs of 64 KiB, 10 at a time on 1 connection, all 2xx" \
	"$T/loadp.out" "status codes: 100 2xx, 0 3xx, 0 4xx, 0 5xx"
# 40 bodies of 1 MiB at once against --body-budget 8m: some wait their
# turn by 503, as over HTTP/1.1, and the rest are stored
timeout 60 h2load -n 40 -c 2 -m 20 -d "$T/big" -H ':method: PUT' \
	"http://127.0.0.1:$CPORT/many" >"$T/loadb.out" 2>&1
ok2=$(sed -n 's/^status codes: \([0-9]*\) 2xx, 0 3xx, 0 4xx, \([0-9]*\) 5xx$/\1 \2/p' "$T/loadb.out")
[ -n "$ok2" ] && [ "${ok2% *}" -ge 1 ] && [ "${ok2#* }" -ge 1 ] &&
	ok "40 PUTs of 1 MiB at once, body budget 8 MiB: stored and 503 ($ok2)" ||
	bad "40 PUTs of 1 MiB against the budget: $(grep 'status codes' "$T/loadb.out")"
expect "the budget is whole again: a 1 MiB PUT is stored" "2 204" \
	"$(c2 -X PUT --data-binary @"$T/big" "http://127.0.0.1:$CPORT/many")"
timeout 30 nghttp -n -s "http://127.0.0.1:$CPORT/k" "http://127.0.0.1:$CPORT/big" \
	"http://127.0.0.1:$CPORT/?prefix=" >"$T/nghttp.out" 2>&1
expect "nghttp: three streams on one connection, each 200" 3 \
	"$(grep -cE '^ +[0-9]+ +.* 200 ' "$T/nghttp.out")"
expect "a PUT's sync does not hold up GETs on the same connection" \
	"3 5 7 1" "$(timeout 30 $CLIENT put-get "$CPORT")"
expect "the PUT was answered once durable: its value is there" "2 200 v" \
	"$(c2 "http://127.0.0.1:$CPORT/pg") $(cat "$T/body")"
expect "over h2+TLS too" "3 5 7 1" \
	"$(timeout 30 $CLIENT put-get "$TPORT" "$T/a.crt")"

# an idle connection's frame buffer pages are dropped (H2_IDLE_PAGES_MS):
# the next answers on it are whole, small and large, with a large header
c2 -X PUT --data-binary hello "http://127.0.0.1:$CPORT/idle" >/dev/null
expect "h2c: three answers on one connection, each after it sat idle, whole" \
	"1:5 3:1048576 5:5" "$(timeout 30 $CLIENT idle "$CPORT" /idle /big)"
curl -s -m 20 --cacert "$T/a.crt" -X PUT --data-binary hello \
	"https://127.0.0.1:$TPORT/idle" >/dev/null
expect "h2+TLS: the same" "1:5 3:1048576 5:5" \
	"$(timeout 30 $CLIENT idle "$TPORT" /idle /big "$T/a.crt")"

# ---- limits --------------------------------------------------------------------
r=$(timeout 30 $CLIENT streams "$CPORT")
refused=${r##*refused }
[ "${refused:-0}" -ge 50 ] 2>/dev/null && case "$r" in none*) true;; *) false;; esac &&
	ok "150 open streams: the 50 over SETTINGS_MAX_CONCURRENT_STREAMS are refused ($r)" ||
	bad "150 open streams: $r"
expect "the server still serves" "2 200" "$(c2 "http://127.0.0.1:$CPORT/k")"

# listings a client does not take (its window is 0): four (64 KiB each)
# fill SERVE_QUEUED_MAX, the rest are answered at once instead of the
# connection pausing its reads
printf x >"$T/x"
K=$(head -c 1000 /dev/zero | tr '\0' l)
urls=""
for i in $(seq 100 179); do urls="$urls http://127.0.0.1:$CPORT/l$i$K"; done
timeout 60 h2load -n 80 -c 1 -m 10 -H ':method: PUT' -d "$T/x" $urls \
	>"$T/loadl.out" 2>&1
contains "80 keys of 1 KiB (for listings of 64 KiB)" "$T/loadl.out" \
	"status codes: 80 2xx, 0 3xx, 0 4xx, 0 5xx"
expect "8 listings not taken: 4 answered 200, 4 refused (503)" "ok 4 other 4" \
	"$(timeout 30 $CLIENT listings "$CPORT" 8)"
expect "a listing is served after them" "2 200" \
	"$(c2 "http://127.0.0.1:$CPORT/?limit=1000")"

# ---- attacks: each ends in GOAWAY(ENHANCE_YOUR_CALM) and a close ---------
for attack in rapid-reset rapid-reset-paced continuation hpack-bomb \
	settings-flood ping-flood window-flood stream-flood; do
	expect "h2c $attack: GOAWAY(ENHANCE_YOUR_CALM), then closed" \
		"goaway 0xb closed answers 0" "$(timeout 40 $CLIENT $attack "$CPORT")"
	expect "h2c $attack: the server serves on" "2 200" \
		"$(c2 "http://127.0.0.1:$CPORT/k")"
	H2="--http2 --cacert $T/a.crt --resolve localhost:$TPORT:127.0.0.1"
	expect "h2+TLS $attack: GOAWAY(ENHANCE_YOUR_CALM), then closed" \
		"goaway 0xb closed answers 0" \
		"$(timeout 40 $CLIENT $attack "$TPORT" "$T/a.crt")"
	expect "h2+TLS $attack: the server serves on" "2 200" \
		"$(c2 "https://localhost:$TPORT/k")"
	H2=--http2-prior-knowledge
done
# a new stream must be numbered above every stream opened before (RFC
# 9113 5.1.1): nghttp2 ignores a lower one, we end the connection
expect "h2c: HEADERS on a lower stream id: GOAWAY(PROTOCOL_ERROR), closed" \
	"goaway 0x1 closed" "$(timeout 40 $CLIENT lower-id "$CPORT" | sed 's/ answers.*//')"
expect "h2+TLS: the same" "goaway 0x1 closed" \
	"$(timeout 40 $CLIENT lower-id "$TPORT" "$T/a.crt" | sed 's/ answers.*//')"
kill -0 "$CPID" 2>/dev/null && kill -0 "$TPID" 2>/dev/null &&
	ok "both servers are alive after the attacks" || bad "a server died"
stop "$TPID"
expect "h2+TLS server: SIGTERM exits 0" 0 "$STATUS"

# ---- the limits HTTP/1.1 has too (http/serve_limits.h) -------------------
# --header-timeout and --body-min-rate per stream, the body budget shared
# with other clients, and the idle timeout's GOAWAY; short timeouts, and
# generous bounds on how long the server takes to apply them
head -c 10000 /dev/urandom >"$T/b10k"
start lim --db "$T/lim.keel" --header-timeout 1s --body-min-rate 1k \
	--max-body 256k --body-budget 512k
LPORT=$PORT
LPID=$PID
start limt --db "$T/limt.keel" --header-timeout 1s --body-min-rate 1k \
	--max-body 256k --body-budget 512k --tls-cert "$T/a.crt" --tls-key "$T/a.key"
LTPORT=$PORT
LTPID=$PID
for proto in h2c h2+TLS; do
	if [ $proto = h2c ]; then
		P=$LPORT; CA=""; U=http://127.0.0.1:$P
		H2=--http2-prior-knowledge; H1=""
	else
		P=$LTPORT; CA=$T/a.crt; U=https://localhost:$P
		H2="--http2 --cacert $CA --resolve localhost:$P:127.0.0.1"
		H1="--http1.1 --cacert $CA --resolve localhost:$P:127.0.0.1"
	fi
	r=$(timeout 40 $CLIENT head-stall "$P" $CA)
	case "$r" in "goaway 0xb closed answers 0 after "[0-9]) true;; *) false;; esac &&
		ok "$proto: a header block that never ends: GOAWAY(ENHANCE_YOUR_CALM) within 10 s (--header-timeout 1s): $r" ||
		bad "$proto: a header block that never ends: $r (want GOAWAY 0xb within 10 s)"
	expect "$proto: 2 slow bodies: each stream reset (CANCEL), the connection serves on" \
		"reset 2 code 0x8 goaway none served 1" \
		"$(timeout 40 $CLIENT slow-body "$P" 2 0 $CA | tail -1 | sed 's/ closed$//')"
	# 32 streams whose bodies hold the whole budget (32 x 16 KiB of 512
	# KiB), then trickle: cut for their rate, the connection ended after
	# the 4th cut (LIMITS_CUTS_MAX); the client keeps its socket open 6 s
	# more, and meanwhile other clients' PUTs are stored
	$CLIENT slow-body "$P" 32 6 $CA >"$T/slow.out" 2>&1 &
	SLOWC=$!
	waitfor "$T/slow.out" "^reset" || true
	expect "$proto: 32 slow bodies holding the whole budget: GOAWAY(ENHANCE_YOUR_CALM)" \
		"goaway 0xb" "$(sed -n 's/^reset .* \(goaway [^ ]*\).*/\1/p' "$T/slow.out")"
	expect "$proto: meanwhile another client's PUT over h2 is stored" "2 201" \
		"$(c2 -X PUT --data-binary @"$T/b10k" "$U/other")"
	expect "$proto: and one over HTTP/1.1" "204" \
		"$(curl -s -m 20 $H1 -o /dev/null -w '%{http_code}' -X PUT \
			--data-binary @"$T/b10k" "$U/other")"
	wait $SLOWC
	expect "$proto: trailers on an open stream are no protocol error" \
		"none answers 1" "$(timeout 40 $CLIENT trailers "$P" $CA)"
done
stop "$LPID"
stop "$LTPID"
start idle --db "$T/idle.keel" --idle-timeout 2s
expect "h2c: an idle connection gets GOAWAY(NO_ERROR) before it is closed" \
	"goaway 0x0 closed answers 0" "$(timeout 40 $CLIENT idle-close "$PORT")"
r=$(timeout 40 $CLIENT ping-idle "$PORT")
case "$r" in "goaway 0x0 closed after "[0-9]) true;; *) false;; esac &&
	ok "h2c: PINGs alone do not keep an idle connection open: $r" ||
	bad "h2c: a connection with PINGs every 0.5 s and no stream: $r (want GOAWAY within 10 s)"
stop "$PID"
start idlet --db "$T/idle.keel" --idle-timeout 2s --tls-cert "$T/a.crt" \
	--tls-key "$T/a.key"
expect "h2+TLS: the same" "goaway 0x0 closed answers 0" \
	"$(timeout 40 $CLIENT idle-close "$PORT" "$T/a.crt")"
stop "$PID"
H2=--http2-prior-knowledge

# ---- SIGTERM: GOAWAY, the stream in flight finishes, then close -----------
$CLIENT term "$CPORT" >"$T/term.out" 2>&1 &
TERMC=$!
waitfor "$T/term.out" "^ready" && ok "SIGTERM: a PUT stream is open (headers only)" ||
	bad "SIGTERM: the client did not get ready: $(cat "$T/term.out")"
stop "$CPID"
expect "SIGTERM: exits 0 once the stream is done" 0 "$STATUS"
wait "$TERMC"
expect "SIGTERM: GOAWAY(NO_ERROR) naming the open stream, its answer, then close" \
	"goaway 0x0 last 1 answered 1 closed" "$(tail -1 "$T/term.out")"
start again --db "$T/plain.keel"
expect "SIGTERM: the drained PUT is in the store" "2 200 t" \
	"$(c2 "http://127.0.0.1:$PORT/term") $(cat "$T/body")"
stop "$PID"

# ---- tokens over h2 ------------------------------------------------------------
TOK=h2-token-for-tests
"$SERVE" --hash-token "$TOK" write >"$T/tokens"
"$SERVE" --hash-token "$TOK-r" read >>"$T/tokens"
start tok --db "$T/tok.keel" --tokens "$T/tokens"
U=http://127.0.0.1:$PORT
expect "tokens h2c: no token: 401" "2 401" "$(c2 "$U/t")"
contains "tokens h2c: the 401 has the Bearer challenge" "$T/h" \
	'^www-authenticate: Bearer realm="keel"'
expect "tokens h2c: an unknown token: 403" "2 403" \
	"$(c2 -H "Authorization: Bearer nope" "$U/t")"
contains "tokens h2c: the 403 says invalid_token" "$T/h" 'error="invalid_token"'
expect "tokens h2c: a read token cannot PUT: 403" "2 403" \
	"$(c2 -X PUT -H "Authorization: Bearer $TOK-r" --data-binary x "$U/t")"
expect "tokens h2c: the write token PUTs: 201" "2 201" \
	"$(c2 -X PUT -H "Authorization: Bearer $TOK" --data-binary x "$U/t")"
expect "tokens h2c: the read token GETs: 200" "2 200" \
	"$(c2 -H "Authorization: Bearer $TOK-r" "$U/t")"
# one rule for whitespace around a value (serve_fields.c): never part of
# it -- HTTP/1.1's grammar strips it, HTTP/2 and HTTP/3 do not take the
# field (it was a stream reset here; nghttp3 drops it over HTTP/3): 401
expect "tokens h2c: a token with a trailing space: 401, as over HTTP/3" "2 401" \
	"$(c2 -X PUT -H "Authorization: Bearer $TOK " --data-binary x "$U/t")"
expect "tokens http/1.1: the same token with a trailing space: 201" "1.1 201" \
	"$(curl -s -m 20 -o /dev/null -w '%{http_version} %{http_code}' -X PUT \
		-H "Authorization: Bearer $TOK " --data-binary x "$U/t1")"
expect "tokens h2c: a refused PUT with a body, then the next request" "2 401 2 200" \
	"$(c2 -X PUT --data-binary @"$T/big" "$U/t2") $(c2 -H "Authorization: Bearer $TOK" "$U/t")"
stop "$PID"
start tokt --db "$T/tok.keel" --tokens "$T/tokens" --tls-cert "$T/a.crt" \
	--tls-key "$T/a.key"
H2="--http2 --cacert $T/a.crt --resolve localhost:$PORT:127.0.0.1"
U=https://localhost:$PORT
expect "tokens h2+TLS: no token: 401" "2 401" "$(c2 "$U/t")"
contains "tokens h2+TLS: the 401 has the challenge" "$T/h" '^www-authenticate: Bearer'
expect "tokens h2+TLS: a read token cannot DELETE: 403" "2 403" \
	"$(c2 -X DELETE -H "Authorization: Bearer $TOK-r" "$U/t")"
expect "tokens h2+TLS: the write token GETs: 200" "2 200" \
	"$(c2 -H "Authorization: Bearer $TOK" "$U/t")"
stop "$PID"
expect "every server stopped cleanly" 0 "$STATUS"

echo "h2: $checks checks, $fails failed"
[ "$fails" -eq 0 ] && echo "all checks passed"
[ "$fails" -eq 0 ]
