#!/bin/bash
# h3_burst_memory.sh SERVE H3CLIENT N -- keel-serve's resident memory before,
# at the peak of, and after N QUIC handshakes held half done (h3-client -i)
# and dropped at --header-timeout 2s: does memory go back after a burst?
# (docs/http.md, "Memory goes back after a burst").  Loopback only.
SERVE=$1 H3=$2 N=$3
T=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout $T/k.key -out $T/c.crt 2>/dev/null
extra=""
$SERVE --help 2>&1 | grep -q max-handshakes-per-source && extra="--max-handshakes 100000 --max-handshakes-per-source 100000"
$SERVE --listen 127.0.0.1:0 --db $T/db --tls-cert $T/c.crt --tls-key $T/k.key --max-conns 100000 --header-timeout 2s $extra > $T/out 2>$T/err & P=$!
for i in $(seq 100); do PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' $T/out); [ -n "$PORT" ] && break; sleep 0.05; done
rss() { awk '/VmRSS/{print $2}' /proc/$P/status; }
echo "before $(rss) KiB"
pids=""; for i in $(seq $N); do $H3 $PORT GET /k -i 1500 > /dev/null 2>&1 & pids="$pids $!"; done
sleep 1.4; echo "peak $(rss) KiB"
for p in $pids; do wait $p; done
for s in 2 4 8; do sleep 2; echo "after +${s}s $(rss) KiB"; done
kill $P; wait $P 2>/dev/null; rm -rf $T
