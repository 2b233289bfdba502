#!/bin/sh
# h3_udp.sh BUILD_DIR -- keel-serve's HTTP/3 socket under hostile datagrams
# (docs/http.md "HTTP/3", "Hostile datagrams"): garbage, short headers for
# no connection, broken long headers (cut short, absurd lengths, 255-byte
# connection IDs, unknown versions), Version Negotiation for an Initial
# in a version we do not speak, then well-formed Initials whose
# payload does not decrypt, more of them than --max-conns; a stateless
# reset for an unknown short header, and one for each of 8 that come
# joined (UDP_GRO).  Checked: the
# server lives on and serves HTTPS between the floods; the Initials keep
# no connection (TCP is served long before the handshake deadline);
# SIGTERM ends it cleanly (under ASan: no leak, no error).  Datagrams are sent to
# 127.0.0.1 only; every wait is bounded.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
set -u
B=${1:-build}
SERVE=$B/keel-serve
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/keel-h3u.XXXXXX)
fails=0
checks=0
PID=""
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

. "$HERE/lib.sh"

[ -x "$SERVE" ] || { echo "no $SERVE"; exit 1; }
for c in openssl curl python3; do
	command -v $c >/dev/null || { echo "h3_udp.sh needs $c"; exit 1; }
done

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	-nodes -days 1 -subj /CN=localhost \
	-addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	-keyout "$T/k.key" -out "$T/c.crt" 2>"$T/gen" ||
	{ echo "openssl cannot make a certificate:"; cat "$T/gen"; exit 1; }
chmod 600 "$T/k.key"

"$SERVE" --listen 127.0.0.1:0 --db "$T/db" --tls-cert "$T/c.crt" \
	--tls-key "$T/k.key" --max-conns 16 --header-timeout 60s \
	>"$T/out" 2>"$T/err" &
PID=$!
PORT=""
for i in $(seq 400); do
	PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/out")
	[ -n "$PORT" ] && break
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.05
done
[ -n "$PORT" ] || { echo "keel-serve did not start:"; cat "$T/err"; exit 1; }

# served PATH -- one HTTPS GET's status (000 when refused)
served() { curl -sk --max-time 10 -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT$1"; }
# served_again -- up to 20 s for a GET to be answered 404 (missing key)
served_again() {
	local i
	for i in $(seq 100); do
		[ "$(served /none)" = 404 ] && return 0
		sleep 0.2
	done
	return 1
}

# UDP_GRO: 8 short-header packets for no connection sent joined (one
# sendmsg, UDP_SEGMENT) may reach the server's socket as one buffer; it
# must tell them apart, a stateless reset each (before the floods, which
# spend the sweep's resets)
python3 "$HERE/h3_udp.py" "$PORT" gro 8 >"$T/gro"
if grep -q 'no gso' "$T/gro"; then
	echo "skip datagrams sent joined (the kernel refuses UDP_SEGMENT)"
else
	expect "8 datagrams sent joined (GSO): 8 stateless resets" \
		"replies 8" "$(cat "$T/gro")"
fi

for kind in garbage short long; do
	python3 "$HERE/h3_udp.py" "$PORT" $kind 3000
	if kill -0 "$PID" 2>/dev/null && [ "$(served /none)" = 404 ]; then
		ok "$kind datagrams: dropped, HTTPS served on"
	else
		bad "$kind datagrams: the server died or stopped answering"
	fi
done

# a short-header packet for no connection gets a stateless reset (42
# bytes, short form: RFC 9000 10.3); one of 21 bytes gets nothing (a
# reset must be smaller than what prompted it, and at least 21)
python3 "$HERE/h3_udp.py" "$PORT" reset 1 >"$T/resets"
expect "stateless reset for an unknown short header; none for 21 bytes" \
	"reply 42 0x40|no reply" "$(paste -sd'|' "$T/resets")"

# an Initial in a version we do not speak gets a Version Negotiation
# packet listing QUIC v1 (RFC 9000 6, 17.2.1); one under 1200 bytes, the
# least a client's Initial may be, gets nothing
python3 "$HERE/h3_udp.py" "$PORT" vn 1 >"$T/vn"
expect "Version Negotiation (v1) for an unknown version; none under 1200 bytes" \
	"vn 00000001|no reply" "$(paste -sd'|' "$T/vn")"

# 64 well-formed Initials whose payload does not decrypt, against
# --max-conns 16 and a 60 s handshake deadline: each connection is
# dropped as its first packet fails (ngtcp2's DROP_CONN), so none holds a
# slot and TCP is served well before the deadline
python3 "$HERE/h3_udp.py" "$PORT" initial 64
if kill -0 "$PID" 2>/dev/null && served_again; then
	ok "Initials that do not decrypt: no connection kept"
else
	bad "Initials that do not decrypt: HTTPS not served within 20 s"
fi

kill -TERM "$PID"
for i in $(seq 200); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -9 "$PID" 2>/dev/null
wait "$PID"
expect "exit status after SIGTERM" 0 "$?"
PID=""
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/err"; then
	bad "sanitizer report:"; head -n 30 "$T/err"
else
	ok "no sanitizer report"
fi

echo "h3_udp.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
