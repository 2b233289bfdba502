#!/bin/sh
# fsync_probe.sh BUILD_DIR -- fsync-probe end to end: a short run of every
# mode and layout on a temporary file (JSONL and SVG checked), the fixed-rate
# schedule, bad input (exit 2), a filesystem that refuses O_DIRECT and a
# failing fdatasync (exit 3, through libfiu), and the power-cut protocol over
# 127.0.0.1, which must catch the damage this script does to the file.
# Takes about 20 s.
B=${1:?usage: fsync_probe.sh BUILD_DIR}
P=$B/fsync-probe
[ -x "$P" ] || { echo "no $P; build it first"; exit 1; }
T=$(mktemp -d /tmp/fsync-probe-test.XXXXXX) || exit 1
LPID=
cleanup() {
	[ -n "$LPID" ] && kill "$LPID" 2>/dev/null && wait "$LPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
fails=0
ok() { echo "ok   $*"; }
no() { echo "FAIL $*"; fails=$((fails + 1)); }

# expect CODE PATTERN DESCRIPTION -- cmd...: exit code and a message
expect() {
	code=$1 pat=$2 what=$3
	shift 4
	timeout 60 "$@" >"$T/out" 2>&1
	rc=$?
	if [ $rc -eq "$code" ] && grep -q -- "$pat" "$T/out"; then
		ok "$what (exit $rc)"
	else
		no "$what: exit $rc, wanted $code and /$pat/; output:"
		sed 's/^/    /' "$T/out" | head -n 20
	fi
}

# field NAME FILE -- a number from the summary line of a JSONL file
field() {
	grep '"type":"summary"' "$2" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"
}

# ---- every mode and layout ------------------------------------------------
for mode in fsync fdatasync dsync direct sfr none; do
	for layout in append prealloc overwrite; do
		n=$mode-$layout
		timeout 60 "$P" --quiet --mode $mode --layout $layout --duration 300ms \
			--file-size 1M --json "$T/$n.jsonl" --svg "$T/$n.svg" \
			"$T/$n.dat" >"$T/$n.txt" 2>&1
		rc=$?
		if [ $rc -eq 3 ] && [ $mode = direct ] &&
		   grep -q "O_DIRECT is not supported" "$T/$n.txt"; then
			ok "$n: O_DIRECT refused by this filesystem, reported"
			continue
		fi
		ops=$(field ops "$T/$n.jsonl")
		if [ $rc -ne 0 ] || [ -z "$ops" ] || [ "$ops" -eq 0 ]; then
			no "$n: exit $rc, ops '$ops'"
			sed 's/^/    /' "$T/$n.txt" | head -n 10
		elif [ -e "$T/$n.dat" ]; then
			no "$n: the test file was left behind"
		elif ! head -n 1 "$T/$n.jsonl" | grep -q '"type":"start"' ||
		     ! grep -q '"type":"second"' "$T/$n.jsonl" ||
		     ! grep -q '^verdict: ' "$T/$n.txt" ||
		     ! grep -q '</svg>' "$T/$n.svg"; then
			no "$n: output incomplete"
		else
			ok "$n: $ops writes"
		fi
	done
done
# the not-durable modes must say so in plain words
grep -q 'NOT DURABLE' "$T/sfr-append.txt" && grep -q 'NOT DURABLE' "$T/none-overwrite.txt" &&
	ok "sfr and none are labelled NOT DURABLE" || no "sfr/none not labelled"

# Strict well-formedness, where the checkers are installed (the cmocka suite
# checks the same with its own parsers).
if command -v python3 >/dev/null 2>&1; then
	if python3 - "$T" <<'EOF'
import glob, json, sys
import xml.etree.ElementTree as ET
d = sys.argv[1]
for p in glob.glob(d + "/*.jsonl"):
    lines = open(p).read().splitlines()
    assert lines, p
    for l in lines:
        json.loads(l)
    assert json.loads(lines[-1])["type"] == "summary", p
for p in glob.glob(d + "/*.svg"):
    ET.parse(p)
EOF
	then ok "every JSONL line parses, every SVG is well-formed XML"
	else no "JSONL or SVG not well-formed"; fi
fi

# ---- schedules, offsets, sizes at the limits ---------------------------------
timeout 60 "$P" --quiet --rate 200 --duration 1s --json "$T/rate.jsonl" "$T/rate.dat" >/dev/null 2>&1
ops=$(field ops "$T/rate.jsonl")
late=$(field late_ops "$T/rate.jsonl")
# Never faster than the rate; as fast unless the device is slower than it
# (a loaded disk: then writes start late, and say so in late_ops).
if [ -n "$ops" ] && [ "$ops" -ge 1 ] && [ "$ops" -le 201 ] &&
   { [ "$ops" -ge 150 ] || [ "${late:-0}" -gt 0 ]; }; then
	ok "fixed rate 200/s for 1 s: $ops writes, $late started late"
else
	no "fixed rate gave '$ops' writes, '$late' late"
fi
# a pause stands in for a 400 ms device stall: with a fixed rate, latency
# counts from each write's intended start, so the writes it delayed show it
# (paused once its first second is written, so the pause falls inside the
# run however slowly the machine starts it)
"$P" --quiet --rate 100 --duration 3s --json "$T/stall.jsonl" --svg "$T/stall.svg" \
	"$T/stall.dat" >"$T/stall.txt" 2>&1 &
SP=$!
i=0
while ! grep -q '"type":"second"' "$T/stall.jsonl" 2>/dev/null && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -STOP $SP
sleep 0.4
kill -CONT $SP
wait $SP
stalls=$(field stalls_100ms "$T/stall.jsonl")
if [ -n "$stalls" ] && [ "$stalls" -ge 1 ] && grep -q '"type":"stall"' "$T/stall.jsonl" &&
   grep -q '<title>stall [0-9.]* ms' "$T/stall.svg"; then
	ok "a 400 ms pause is recorded: $stalls stalls, in JSONL and SVG"
else
	no "stall not recorded ('$stalls')"
	sed 's/^/    /' "$T/stall.txt" | head -n 10
fi
expect 0 'result:' "random offsets, 512-byte writes" -- \
	"$P" --quiet --layout overwrite --random --size 512 --file-size 64k --duration 200ms "$T/r.dat"
expect 0 'result:' "1 MiB writes" -- \
	"$P" --quiet --layout prealloc --size 1M --file-size 4M --duration 200ms "$T/big.dat"

# ---- bad input: exit 2 and a message naming the problem ------------------------
expect 2 'unknown --mode' "unknown mode" -- "$P" --mode osync "$T/x"
expect 2 'unknown --layout' "unknown layout" -- "$P" --layout sparse "$T/x"
expect 2 'size must be 512 to 1M' "size too small" -- "$P" --size 100 "$T/x"
expect 2 'size must be 512 to 1M' "size too large" -- "$P" --size 2M "$T/x"
expect 2 '--duration wants' "bad duration" -- "$P" --duration 10parsecs "$T/x"
expect 2 'file-size is smaller' "file smaller than a write" -- "$P" --size 8k --file-size 4k "$T/x"
expect 2 'random needs' "random with append" -- "$P" --random "$T/x"
expect 2 'cannot write' "unwritable path" -- "$P" --duration 100ms /proc/fsync-probe-test
expect 2 'cannot' "path in a missing directory" -- "$P" --duration 100ms "$T/no/such/dir/f"
echo keep >"$T/exists"
expect 2 'exists; pass --force' "existing file kept" -- "$P" --duration 100ms "$T/exists"
grep -q keep "$T/exists" && ok "existing file untouched" || no "existing file was changed"
expect 2 'usage' "missing FILE" -- "$P"
expect 2 'listen takes a port' "bad port" -- "$P" --listen http
expect 2 'not HOST:PORT' "bad HOST:PORT" -- "$P" --verify nowhere "$T/x"

# ---- failures of the environment: exit 3 -----------------------------------------
if command -v fiu-run >/dev/null 2>&1; then
	# fiu-run preloads libfiu; an ASan build (make asan) must be told so
	# (its own small leak is not ours to report)
	FIUENV="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
	expect 3 'O_DIRECT is not supported' "filesystem refusing O_DIRECT" -- \
		env "$FIUENV" fiu-run -c 'enable name=fsync-probe/open/direct' \
		"$P" --mode direct --duration 200ms "$T/d.dat"
	# libfiu's POSIX wrappers and ASan's interceptors cannot share a
	# process (even --help crashes), so this one runs in plain builds only
	if ldd "$P" 2>/dev/null | grep -q libasan; then
		ok "failing fdatasync: skipped in the ASan build"
	else
		expect 3 'Input/output error' "failing fdatasync stops the run" -- \
			env "$FIUENV" fiu-run -x -c 'enable name=posix/io/sync/fdatasync,failinfo=5' \
			"$P" --duration 200ms "$T/e.dat"
	fi
fi

# ---- the power-cut protocol over loopback -----------------------------------------
"$P" --listen 0 --bind 127.0.0.1 --duration 50s >"$T/listen.log" 2>&1 &
LPID=$!
i=0
while ! grep -q 'listening on' "$T/listen.log" && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/listen.log")
[ -n "$PORT" ] || { no "listener did not start"; cat "$T/listen.log"; exit 1; }
L=127.0.0.1:$PORT
F=$T/pc.dat
expect 2 'knows no writer' "verify before any writer" -- "$P" --verify "$L" "$F"

# a writer that runs its course: every acknowledged block is there.  A copy
# of slot 4 is taken once it is written, to act out an older version below.
slot4() { [ -n "$(dd if="$F" bs=4096 skip=4 count=1 2>/dev/null | tr -d '\000')" ]; }
( i=0
  while ! slot4 && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  dd if="$F" of="$T/slot4.old" bs=4096 skip=4 count=1 2>/dev/null ) &
SPID=$!
expect 0 'blocks acknowledged' "power-cut writer, 3 s" -- \
	"$P" --power-cut-writer "$L" --quiet --size 4k --file-size 64k --duration 3s "$F"
wait $SPID
expect 0 'passed: every acknowledged block survived' "verify an intact file" -- \
	"$P" --verify "$L" "$F"

# now act out what a lying device does, one slot at a time
cp "$F" "$T/pc.good"
printf 'XXXX' | dd of="$F" bs=1 seek=$((3 * 4096 + 100)) conv=notrunc 2>/dev/null
expect 1 'DAMAGED slot 3: acknowledged seq' "a corrupted block is caught" -- \
	"$P" --verify "$L" "$F"
cp "$T/pc.good" "$F"
dd if=/dev/zero of="$F" bs=4096 seek=7 count=1 conv=notrunc 2>/dev/null
expect 1 'LOST    slot 7: acknowledged seq [0-9]*, found zeros' "a block that never landed" -- \
	"$P" --verify "$L" "$F"
cp "$T/pc.good" "$F"
dd if="$T/pc.good" of="$T/slot4.new" bs=4096 skip=4 count=1 2>/dev/null
if cmp -s "$T/slot4.old" "$T/slot4.new"; then
	# a device so slow that slot 4 was written once: nothing older exists
	ok "an older version of a block: slot 4 was written only once (slow device), not acted out"
else
	dd if="$T/slot4.old" of="$F" bs=4096 seek=4 count=1 conv=notrunc 2>/dev/null
	expect 1 'slot 4: acknowledged seq' "an older version of a block" -- \
		"$P" --verify "$L" "$F"
	grep -q 'LOST    slot 4: acknowledged seq [0-9]*, found older seq' "$T/out" &&
		ok "  ... reported as an older seq" || no "older block not reported as such"
fi
cp "$T/pc.good" "$F"
dd if="$F" of="$T/slot9" bs=4096 skip=9 count=1 2>/dev/null
dd if="$T/slot9" of="$F" bs=4096 seek=10 count=1 conv=notrunc 2>/dev/null
expect 1 'DAMAGED slot 10:.*misdirected' "a block written to the wrong place" -- \
	"$P" --verify "$L" "$F"
cp "$T/pc.good" "$F"
truncate -s 32k "$F"
expect 1 'beyond the end of the file' "a file cut short" -- "$P" --verify "$L" "$F"
rm -f "$F"
expect 1 'the file .* is gone' "a vanished file" -- "$P" --verify "$L" "$F"

# a writer killed mid-run (a process crash, not a power cut): the page cache
# keeps every acknowledged block, and the write in flight is not counted
rm -f "$F"
"$P" --power-cut-writer "$L" --quiet --size 4k --file-size 64k "$F" >"$T/w.log" 2>&1 &
WPID=$!
i=0  # killed once it has written, however slowly it started
while ! slot4 && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
kill -9 $WPID 2>/dev/null
wait $WPID 2>/dev/null
expect 0 'passed' "verify after the writer was killed" -- "$P" --verify "$L" "$F"
# a torn write in the slot that was in flight is expected, not a loss
slot=$(sed -n 's/.*in flight at the cut: seq [0-9]*, slot \([0-9]*\)/\1/p' "$T/out")
if [ -n "$slot" ]; then
	printf 'torn' | dd of="$F" bs=1 seek=$((slot * 4096 + 2000)) conv=notrunc 2>/dev/null
	expect 0 "torn    slot $slot: the write of seq" "a torn in-flight write is not counted" -- \
		"$P" --verify "$L" "$F"
else
	ok "no write was in flight when the writer was killed"
fi

echo "fsync_probe.sh: $fails failed"
[ $fails -eq 0 ]
