#!/bin/bash
# etcd.sh DIR [--unsafe-no-fsync] -- etcd (Debian's etcd-server, a Go
# program) under torture --target exec: the workload starts a one-member
# cluster on DIR/etcd and puts keys through its v3 JSON gateway with curl,
# acknowledging each put once etcd answered it (etcd answers a put after
# its WAL entry is fsynced).  --unsafe-no-fsync is etcd's own flag that
# skips those fsyncs: a power cut then loses acknowledged puts.
#
# etcd.sh DIR --init (torture's --setup) makes the member's data directory
# once: etcd makes its first WAL in wal.tmp and renames the directory into
# place, and directory renames are not modelled (docs/faults.md).
#
# etcd.sh DIR --check starts etcd on what is left, prints "KEY VALUE" for
# every key, and stops it; it exits 3 when etcd will not start (a refusal
# to start is an availability verdict, docs/targets.md).
#
# The client and peer ports are derived from DIR, so runs side by side do
# not meet.  Every program here runs under the supervisor (torture
# --front-end auto chooses it for a shell and for Go).
set -u
d=$1
mode=${2:-}
h=$(printf '%s' "$d" | cksum | cut -d' ' -f1)
# below the kernel's ephemeral range, which the connections of tests run
# beside this one take from: a port there may be in use when this starts
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
span=$(( ${low:-32768} - 10002 ))
[ "$span" -gt 1000 ] || span=20000
port=$((10000 + h % span))
peer=$((port + 1))
url=http://127.0.0.1:$port

start() {
	etcd --name keel --data-dir "$d/etcd" \
		--listen-client-urls "$url" --advertise-client-urls "$url" \
		--listen-peer-urls "http://127.0.0.1:$peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "keel=http://127.0.0.1:$peer" \
		--log-outputs stderr --logger zap --log-level error "$@" \
		>>"$d.etcd.log" 2>&1 &
	etcd_pid=$!
	for _ in $(seq 200); do
		curl -sf -m 1 "$url/health" 2>/dev/null | grep -q '"true"' &&
			return 0
		kill -0 "$etcd_pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

b64() { printf '%s' "$1" | base64 -w0; }

if [ "$mode" = --init ]; then
	start || exit 1
	kill -TERM "$etcd_pid"
	wait "$etcd_pid" 2>/dev/null
	exit 0
fi

if [ "$mode" = --check ]; then
	[ -d "$d/etcd" ] || exit 0
	start || { kill -9 "$etcd_pid" 2>/dev/null; exit 3; }
	curl -sf -m 10 -X POST "$url/v3/kv/range" \
		-d "{\"key\": \"$(b64 k)\", \"range_end\": \"$(b64 l)\"}" |
		jq -r '.kvs[]? | (.key | @base64d) + " " + (.value | @base64d)'
	rc=$?
	kill -9 "$etcd_pid" 2>/dev/null
	wait "$etcd_pid" 2>/dev/null
	exit $rc
fi

fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
start ${mode:+"$mode"} || exit 1
i=0
while [ $i -lt 100000 ]; do
	i=$((i + 1))
	k=k$((i % 8))
	v=v$i
	echo "intent $i $k $v" >&"$fd"
	curl -sf -m 10 -X POST "$url/v3/kv/put" \
		-d "{\"key\": \"$(b64 "$k")\", \"value\": \"$(b64 "$v")\"}" \
		>/dev/null || exit 1
	echo "ack $i" >&"$fd"
done
