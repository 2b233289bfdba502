#!/bin/sh
# h3_browser.sh BUILD_DIR -- keel-serve's HTTP/3 (docs/http.md "HTTP/3")
# through a real browser: headless Chromium, with QUIC forced for the
# server's origin and the test certificate's key pinned, loads a page that
# keel-serve serves (PUT here as a key), whose script PUTs, GETs, PUTs
# with If-Match (current and stale), DELETEs and lists keys with fetch,
# GETs a 1 MiB value (its SHA-256 checked), PUTs a 600 KB body, and writes
# into the DOM what it saw and performance's nextHopProtocol of every
# request.  Checked: every request went over "h3", every answer was the
# one the contract gives, and the store (read back over HTTP/2) has what
# the browser wrote.  Also: Alt-Svc on HTTP/1.1 and HTTP/2 answers, none
# with --no-http3, and the same page against a --no-http3 server does not
# report h3 (the check can fail).  Where Chromium is missing or cannot
# start here, the script says so and skips (exit 0 with a SKIP line);
# once it has started, every failure is a failure.  Loopback only; every
# wait is bounded.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
set -u
B=${1:-build}
SERVE=$B/keel-serve
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/keel-h3b.XXXXXX)
fails=0
checks=0
PIDS=""
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

. "$HERE/lib.sh"

skip() { echo "SKIP h3_browser.sh: $1"; exit 0; }

[ -x "$SERVE" ] || { echo "no $SERVE"; exit 1; }
for c in openssl curl python3; do
	command -v $c >/dev/null || { echo "h3_browser.sh needs $c"; exit 1; }
done
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
	skip "no chromium (apt-get install chromium)"

# start NAME ARGS... -- a server on 127.0.0.1:0; sets PORT and PID
start() {
	local name=$1 i
	shift
	"$SERVE" --listen 127.0.0.1:0 --db "$T/$name.db" "$@" \
		>"$T/$name.out" 2>"$T/$name.err" &
	PID=$!
	PIDS="$PIDS $PID"
	for i in $(seq 400); do
		PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/$name.out")
		[ -n "$PORT" ] && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "server $name did not start:"; cat "$T/$name.err"; exit 1
}
# stop PID -- SIGTERM, up to 20 s to exit; sets STATUS
stop() {
	local i
	kill -TERM "$1" 2>/dev/null
	for i in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	STATUS=$?
}
# curl over TLS to the current server (certificate not checked: ours)
c() { curl -sk --max-time 20 "$@"; }
# browse NAME URL -- headless Chromium, QUIC forced for the server's
# origin, our key pinned; the DOM after the page's script into NAME.dom
browse() {
	rm -rf "$T/profile"
	timeout 90 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu \
		--no-first-run --disable-extensions --user-data-dir="$T/profile" \
		--origin-to-force-quic-on="127.0.0.1:$PORT" \
		--ignore-certificate-errors-spki-list="$SPKI" \
		--virtual-time-budget=20000 --dump-dom "$2" \
		>"$T/$1.dom" 2>"$T/$1.chromium"
}

# the certificate (as tests/tls.sh makes it) and its key's SPKI hash
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	-nodes -days 1 -subj /CN=localhost \
	-addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	-keyout "$T/k.key" -out "$T/c.crt" 2>"$T/gen" ||
	{ echo "openssl cannot make a certificate:"; cat "$T/gen"; exit 1; }
chmod 600 "$T/k.key"
SPKI=$(openssl x509 -in "$T/c.crt" -pubkey -noout |
	openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)

# Can Chromium run here at all?  A page of its own, no network.
printf '<!doctype html><p id=x>probe</p><script>document.getElementById("x").textContent="CHROMIUM-RUNS"</script>' >"$T/probe.html"
PORT=1 browse probe "file://$T/probe.html"
grep -q CHROMIUM-RUNS "$T/probe.dom" ||
	skip "chromium cannot run here: $(grep -v dbus "$T/probe.chromium" | tail -n 1)"

# The page: each step's answer into RESULT, then the protocols.
cat >"$T/page.html" <<'EOF'
<!doctype html><html><head><title>keel h3</title></head><body>
<pre id="out">running</pre><script>
const pattern = n => { let a = new Array(n);
  for (let i = 0; i < n; i++) a[i] = String.fromCharCode(97 + i % 26);
  return a.join(''); };
const hex = b => Array.from(new Uint8Array(b))
  .map(x => x.toString(16).padStart(2, '0')).join('');
(async () => {
  const r = [];
  try {
    let a = await fetch('/b/one', {method: 'PUT', body: 'alpha'});
    r.push('put=' + a.status);
    const tag = a.headers.get('etag');
    a = await fetch('/b/one', {cache: 'no-store'});
    r.push('get=' + a.status + ':' + await a.text() + ':' +
           (a.headers.get('etag') === tag ? 'etag-same' : 'etag-differs'));
    a = await fetch('/b/one', {method: 'PUT', body: 'beta',
                               headers: {'If-Match': tag}});
    r.push('ifmatch=' + a.status);
    a = await fetch('/b/one', {method: 'PUT', body: 'gamma',
                               headers: {'If-Match': tag}});
    r.push('stale=' + a.status);
    a = await fetch('/b/gone', {method: 'PUT', body: 'x'});
    a = await fetch('/b/gone', {method: 'DELETE'});
    r.push('delete=' + a.status);
    a = await fetch('/b/gone', {cache: 'no-store'});
    r.push('deleted=' + a.status);
    a = await fetch('/?prefix=b/', {cache: 'no-store'});
    r.push('list=' + a.status + ':' +
           (await a.json()).keys.map(k => k.key).join(','));
    a = await fetch('/big', {cache: 'no-store'});
    const big = await a.arrayBuffer();
    const want = await (await fetch('/big.sha256', {cache: 'no-store'})).text();
    r.push('big=' + big.byteLength + ':' +
           (hex(await crypto.subtle.digest('SHA-256', big)) === want
            ? 'sha-ok' : 'sha-bad'));
    a = await fetch('/b/upload', {method: 'PUT', body: pattern(600000)});
    r.push('upload=' + a.status);
    const res = performance.getEntriesByType('resource');
    const nav = performance.getEntriesByType('navigation')[0];
    r.push('n=' + res.length);
    r.push('nav=' + nav.nextHopProtocol);
    r.push('protos=' + Array.from(new Set(res.map(e => e.nextHopProtocol)))
                            .join(','));
    await fetch('/b/result', {method: 'PUT', body: r.join(' ')});
  } catch (e) { r.push('error=' + e); }
  document.getElementById('out').textContent = 'RESULT ' + r.join(' ');
})();
</script></body></html>
EOF

start h3 --tls-cert "$T/c.crt" --tls-key "$T/k.key"
contains "startup line says HTTP/3" "$T/h3.out" ", TLS, HTTP/3\)"
c --http1.1 -D "$T/h1.head" -o /dev/null "https://127.0.0.1:$PORT/none"
contains "HTTP/1.1 answers carry Alt-Svc" "$T/h1.head" "^Alt-Svc: h3=\":$PORT\""
c --http2 -D "$T/h2.head" -o /dev/null "https://127.0.0.1:$PORT/none"
contains "HTTP/2 answers carry Alt-Svc" "$T/h2.head" "^alt-svc: h3=\":$PORT\""

# the page, a 1 MiB value and its SHA-256, over HTTP/2
python3 -c 'import sys; sys.stdout.write("".join(chr(33 + (i * 7) % 90) for i in range(1 << 20)))' >"$T/big"
sha256sum "$T/big" | cut -c1-64 | tr -d '\n' >"$T/big.sha256"
expect "PUT the page" 201 "$(c -o /dev/null -w '%{http_code}' -X PUT --data-binary @"$T/page.html" "https://127.0.0.1:$PORT/page")"
c -o /dev/null -X PUT --data-binary @"$T/big" "https://127.0.0.1:$PORT/big"
c -o /dev/null -X PUT --data-binary @"$T/big.sha256" "https://127.0.0.1:$PORT/big.sha256"

browse h3 "https://127.0.0.1:$PORT/page"
RESULT=$(sed -n 's/.*<pre id="out">\(RESULT [^<]*\).*/\1/p' "$T/h3.dom")
echo "browser: $RESULT"
for want in put=201 get=200:alpha:etag-same ifmatch=204 stale=412 \
	delete=204 deleted=404 list=200:b/one big=1048576:sha-ok upload=201 \
	nav=h3 protos=h3; do
	case " $RESULT " in
	*" $want "*) ok "browser: $want" ;;
	*) bad "browser: $want (got: ${RESULT:-nothing; see below})" ;;
	esac
done
[ -n "$RESULT" ] || tail -n 5 "$T/h3.chromium"

# the store has what the browser wrote (read over HTTP/2)
expect "store: b/one" beta "$(c "https://127.0.0.1:$PORT/b/one")"
expect "store: b/gone deleted" 404 "$(c -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/b/gone")"
python3 -c 'import sys; sys.stdout.write("".join(chr(97 + i % 26) for i in range(600000)))' >"$T/upload.want"
c -o "$T/upload.got" "https://127.0.0.1:$PORT/b/upload"
if cmp -s "$T/upload.want" "$T/upload.got"; then ok "store: the browser's 600 KB body"
else bad "store: the browser's 600 KB body differs ($(wc -c <"$T/upload.got") bytes)"; fi
c "https://127.0.0.1:$PORT/b/result" >"$T/result"
contains "store: the browser's own report" "$T/result" "protos=h3"
stop "$PID"
expect "server stops cleanly" 0 "$STATUS"

# --no-http3: no Alt-Svc, and the same page does not come over h3
start off --tls-cert "$T/c.crt" --tls-key "$T/k.key" --no-http3
c --http2 -D "$T/off.head" -o /dev/null "https://127.0.0.1:$PORT/none"
if grep -qi '^alt-svc' "$T/off.head"; then bad "--no-http3: Alt-Svc sent"
else ok "--no-http3: no Alt-Svc"; fi
c -o /dev/null -X PUT --data-binary @"$T/page.html" "https://127.0.0.1:$PORT/page"
browse off "https://127.0.0.1:$PORT/page"
if grep -q '<pre id="out">RESULT .*protos=h3' "$T/off.dom"; then bad "--no-http3: the page reports h3"
else ok "--no-http3: the page does not report h3 (the check can fail)"; fi
stop "$PID"

echo "h3_browser.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
