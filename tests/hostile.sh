#!/bin/sh
# hostile.sh BUILD_DIR -- crafted store files through the command line and
# keel-serve: a tree whose branches all share one child (200^5 paths to one
# leaf, every checksum valid) and a value damaged in an older commit that
# open does not re-read.  Every command must answer with a clear error, and
# promptly: each runs under `timeout`, whose limit only a walk of the whole
# DAG could reach (the fixed commands read a few records).  The stores are
# written by build/tests/test_hostile.  Every server listens on 127.0.0.1,
# port picked by the kernel.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
set -u
B=${1:-build}
K=$B/keel
SERVE=$B/keel-serve
MAKE_STORE=$B/tests/test_hostile
T=$(mktemp -d /tmp/keel-hostile.XXXXXX)
fails=0
checks=0
PIDS=""
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

. "$(dirname "$0")/lib.sh"

for x in "$K" "$SERVE" "$MAKE_STORE"; do
	[ -x "$x" ] || { echo "no $x"; exit 1; }
done

# start NAME ARGS... -- starts a server, sets PORT
start() {
	local name=$1 i
	shift
	"$SERVE" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PIDS="$PIDS $!"
	for i in $(seq 100); do
		PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/$name.out")
		[ -n "$PORT" ] && return 0
		sleep 0.05
	done
	echo "server $name did not start:"; cat "$T/$name.err"; exit 1
}
code() { curl -s -m 20 -o "$T/body" -w '%{http_code}' "$@"; }

# ---- a shared-child DAG ------------------------------------------------------
"$MAKE_STORE" --write-dag "$T/dag" || { echo "cannot write the DAG store"; exit 1; }

# (output cut at 1 MB: an unbounded walk must not fill the disk)
timeout 60 "$K" check "$T/dag" 2>&1 | head -c 1000000 >"$T/check.out"
expect "keel check on the DAG exits 1 (not killed by timeout)" 1 "${PIPESTATUS[0]}"
contains "keel check names the damage" "$T/check.out" "referenced a second time"
contains "keel check counts the problems" "$T/check.out" "[0-9]+ problems"
lines=$(wc -l <"$T/check.out")
[ "$lines" -le 103 ] && ok "keel check lists a bounded number of lines ($lines)" ||
	bad "keel check printed $lines lines"

timeout 60 "$K" ls "$T/dag" 2>"$T/ls.err" | head -c 1000000 >"$T/ls.out"
expect "keel ls on the DAG exits 1 (not killed by timeout)" 1 "${PIPESTATUS[0]}"
expect "keel ls printed the one key once" "k" "$(cat "$T/ls.out")"
contains "keel ls says the store is corrupt" "$T/ls.err" "corrupt"

cp "$T/dag" "$T/dag.copy"
timeout 60 "$K" compact "$T/dag" >"$T/compact.out" 2>&1
expect "keel compact on the DAG exits 1" 1 $?
cmp -s "$T/dag" "$T/dag.copy" && ok "the refused compaction left the file as it was" ||
	bad "the refused compaction changed the file"

start dag --db "$T/dag"
U=http://127.0.0.1:$PORT
expect "GET /?after=k (the repeated key) answers 500" 500 "$(code "$U/?after=k")"
expect "GET / (a listing) answers 500" 500 "$(code "$U/")"
expect "the server still answers: GET /k" 200 "$(code "$U/k")"

# ---- a value damaged in an older commit --------------------------------------
"$MAKE_STORE" --write-bad-value "$T/bad" || { echo "cannot write the damaged store"; exit 1; }
start bad --db "$T/bad"
U=http://127.0.0.1:$PORT
expect "GET of the damaged value answers 500" 500 "$(code "$U/big")"
grep -qa 'AHOVCJQX' "$T/body" && bad "the damaged value's bytes were sent" ||
	ok "no value bytes in the answer"
expect "GET of an undamaged key answers 200" 200 "$(code "$U/a")"
timeout 60 "$K" get "$T/bad" big >"$T/get.out" 2>"$T/get.err"
expect "keel get of the damaged value exits 1" 1 $?
expect "keel get printed no bytes" 0 "$(wc -c <"$T/get.out")"

echo "hostile: $checks checks, $fails failed"
[ $fails -eq 0 ] && echo "all checks passed"
[ $fails -eq 0 ]
