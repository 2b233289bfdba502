#!/bin/sh
# torture_http.sh BUILD_DIR -- `torture --target http` end to end: a 5-second
# run against keel-serve that must pass, short runs over TLS, h2c, h2+TLS and
# HTTP/3 that must pass, the positive control that must fail (in each mode), a
# server that dies on its own (must fail), bad input that must exit 2 and
# touch nothing, servers that cannot speak TLS, HTTP/2 or HTTP/3 (exit 2) and
# one that sends garbage frames (reported, no hang).  Loopback only; bounded:
# about 45 seconds.
set -u
B=${1:-build}
TORTURE=$B/torture
T=$(mktemp -d /tmp/keel-torture-http-test.XXXXXX)
fails=0
checks=0
trap 'rm -rf "$T"' EXIT

. "$(dirname "$0")/lib.sh"
# No keel-serve may outlive a run: every one of them served a store in $T.
no_server_left() { # no_server_left NAME
	if ps -eo args | grep -v grep | grep -q "keel-serve --db $T/"; then
		bad "$1: a keel-serve is still running"
	else
		ok "$1: no keel-serve left running"
	fi
}

# ---- a 5-second run passes: every acknowledged PUT/DELETE survived ----------
# (on a loaded machine, which does less a second, for longer: lib.sh)
mkdir "$T/tmp"
for d in $(long_enough_durations 5); do
	TMPDIR=$T/tmp "$TORTURE" --target http --kill-every 50ms --duration ${d}s \
		--quiet --json "$T/pass.json" >"$T/pass.out" 2>&1
	rc=$?
	{ [ $rc = 0 ] || no_verdict "$T/pass.json"; } &&
		! reached "$T/pass.json" cycles=20 acked_writes=100 || break
done
expect "${d}-second http run exits 0" 0 $rc
contains "summary says PASS" "$T/pass.out" '^torture: PASS'
contains "json says pass" "$T/pass.json" '"result": "pass"'
cycles=$(json_num "$T/pass.json" cycles)
kills=$(json_num "$T/pass.json" kills)
acked=$(json_num "$T/pass.json" acked_writes)
[ "${cycles:-0}" -ge 20 ] && ok "ran $cycles cycles" || bad "only ${cycles:-0} cycles"
expect "every cycle killed the server" "$cycles" "$kills"
[ "${acked:-0}" -ge 100 ] && ok "acked $acked writes" || bad "only ${acked:-0} acked"
for f in lost phantom holes order structure_errors writer_errors; do
	expect "json $f 0" 0 "$(json_num "$T/pass.json" $f)"
done
expect "temporary store removed" "" "$(ls -A "$T/tmp")"
no_server_left "after a pass"

# ---- over TLS 1.3, HTTP/2 and HTTP/3: short runs pass with acknowledged writes
# 8 writers: over HTTP/2 and HTTP/3 two connections of four concurrent
# streams each.  Bounded by cycles; a loaded machine (or ASan) that
# acknowledges too little in 15 cycles of 50 ms gets longer lives, not a
# failure (lib.sh).  HTTP/3 starts at 200 ms: its client learns of a dead
# server from a PING every 50 ms, and a life should hold more than that.
mode_flags() { # mode_flags MODE
	case $1 in
	tls) echo --http-tls ;;
	h2c) echo --http2 ;;
	h2tls) echo --http-tls --http2 ;;
	h3) echo --http3 ;;
	esac
}
for mode in tls h2c h2tls h3; do
	lives="50 100 200 400"
	[ $mode = h3 ] && lives="200 400 800"
	for k in $lives; do
		rm -rf "$T/$mode"
		TMPDIR=$T/tmp "$TORTURE" --target http $(mode_flags $mode) \
			--threads 8 --kill-every ${k}ms --cycles 15 --quiet \
			--dir "$T/$mode" --json "$T/$mode.json" >"$T/$mode.out" 2>&1
		rc=$?
		{ [ $rc = 0 ] || no_verdict "$T/$mode.json"; } &&
			! reached "$T/$mode.json" acked_writes=50 || break
	done
	expect "$mode: 15 cycles at ${k}ms exit 0" 0 $rc
	contains "$mode: json says pass" "$T/$mode.json" '"result": "pass"'
	expect "$mode: every cycle killed the server" 15 \
		"$(json_num "$T/$mode.json" kills)"
	acked=$(json_num "$T/$mode.json" acked_writes)
	[ "${acked:-0}" -ge 50 ] && ok "$mode: acked $acked writes" ||
		bad "$mode: only ${acked:-0} acked"
	for f in lost phantom holes order structure_errors writer_errors; do
		expect "$mode: json $f 0" 0 "$(json_num "$T/$mode.json" $f)"
	done
	no_server_left "after a $mode pass"
done
# The certificate and key were made beside the store, the key for its
# owner only (keel-serve refuses anything else).
expect "tls: key mode 600" 600 "$(stat -c %a "$T/tls/torture.keel.tls-key.pem")"
contains "tls: a certificate" "$T/tls/torture.keel.tls-cert.pem" \
	'BEGIN CERTIFICATE'

# ---- the positive control: acknowledging before the PUT is sent -------------
TMPDIR=$T/tmp "$TORTURE" --target http --duration 10s --quiet --seed 1 \
	--unsafe ack-before-commit >"$T/fail.out" 2>&1
expect "http ack-before-commit exits 1" 1 $?
contains "first violation is a lost write" "$T/fail.out" \
	'first violation +cycle [0-9]+: lost: key'
contains "reproducer names the target" "$T/fail.out" \
	'reproduce with .*--target http.*--unsafe ack-before-commit'
no_server_left "after a failure"
# ... and over TLS, HTTP/2 and HTTP/3, whose acknowledgements are the same
# oracle's.
# A busy machine (make asan beside others) can spend a whole 1 s life on
# the handshakes: a run whose clients issued nothing tested nothing, and is
# run again with lives twice as long, twice at most.
for mode in tls h2c h2tls h3; do
	for life in 1s 2s 4s; do
		TMPDIR=$T/tmp "$TORTURE" --target http $(mode_flags $mode) \
			--threads 8 --kill-every $life --duration 10s --quiet \
			--seed 1 --unsafe ack-before-commit \
			>"$T/fail-$mode.out" 2>&1
		rc=$?
		grep -q "^  acknowledged writes  *0 operations" \
			"$T/fail-$mode.out" || break
	done
	expect "$mode: ack-before-commit exits 1" 1 $rc
	contains "$mode: first violation is a lost write" "$T/fail-$mode.out" \
		'first violation +cycle [0-9]+: lost: key'
	contains "$mode: reproducer names the mode" "$T/fail-$mode.out" \
		"reproduce with .*--target http $(mode_flags $mode)"
	no_server_left "after a $mode failure"
done

# ---- a server that dies before torture kills it is a violation ---------------
# The first start is a plain keel-serve; the second kills itself 0.3 s after
# it started, well inside its 1-second life.
case "$B" in /*) SERVE=$B/keel-serve ;; *) SERVE=$PWD/$B/keel-serve ;; esac
cat >"$T/dies.sh" <<EOF
#!/bin/sh
[ -e "$T/started" ] || { touch "$T/started"; exec "$SERVE" "\$@"; }
"$SERVE" "\$@" &
pid=\$!
sleep 0.3
kill -9 \$pid
wait \$pid
EOF
chmod +x "$T/dies.sh"
TMPDIR=$T/tmp "$TORTURE" --target http --serve "$T/dies.sh" \
	--kill-every 1s --cycles 3 --quiet >"$T/dies.out" 2>&1
expect "a server dying on its own exits 1" 1 $?
# Depending on timing (seen under ASan, whose servers start slowly) the
# death shows as the wrapper's exit status 137 or as the signal itself;
# either is the violation this checks for.
contains "it is reported" "$T/dies.out" \
	'cycle 2: writer: the writer ended before it was killed \((exit status 137|signal 9)\)'

# ---- bad input: exit 2, a message naming the problem, nothing touched -------
mkdir "$T/empty"
bad_input() { # bad_input NAME PATTERN ARGS...
	name=$1 pattern=$2
	shift 2
	TMPDIR=$T/empty "$TORTURE" "$@" >"$T/bad.out" 2>&1
	expect "$name exits 2" 2 $?
	contains "$name names the problem" "$T/bad.out" "$pattern"
}
bad_input "unknown target" "--target ftp: unknown target" --target ftp
bad_input "missing keel-serve" "cannot run keel-serve at /nonexistent/ks" \
	--target http --serve /nonexistent/ks --cycles 1
bad_input "--serve without --target http" "--serve names keel-serve" \
	--serve "$B/keel-serve" --cycles 1
bad_input "fault flags with http" "--target http.*keel-serve" \
	--target http --power-loss --cycles 1
bad_input "--http-tls without --target http" \
	"--http-tls, --http2 and --http3 .*need --target http" --http-tls --cycles 1
bad_input "--http2 without --target http" \
	"--http-tls, --http2 and --http3 .*need --target http" --http2 --cycles 1
bad_input "--http3 without --target http" \
	"--http-tls, --http2 and --http3 .*need --target http" --http3 --cycles 1
bad_input "--http2 with --http3" "--http2 and --http3 .*give one" \
	--target http --http2 --http3 --cycles 1
expect "nothing made in TMPDIR" "" "$(ls -A "$T/empty")"
TMPDIR=$T/tmp "$TORTURE" --target http --serve /bin/true --cycles 1 \
	>"$T/notserve.out" 2>&1
expect "a server that never listens exits 2" 2 $?
contains "it is named" "$T/notserve.out" \
	'keel-serve \(/bin/true\) did not start: it exited before it listened'

# ---- a server that cannot speak what was asked: a set-up failure ------------
# fake_serve.py prints keel-serve's "listening" line and answers HTTP/1.1.
fake() { # fake MODE -- a --serve wrapper around fake_serve.py MODE
	printf '#!/bin/sh\nexec python3 %s/fake_serve.py %s "$@"\n' \
		"$(cd "$(dirname "$0")" && pwd)" "$1" >"$T/fake-$1.sh"
	chmod +x "$T/fake-$1.sh"
	echo "$T/fake-$1.sh"
}
TMPDIR=$T/tmp "$TORTURE" --target http --http2 --serve "$(fake http1)" \
	--cycles 1 >"$T/noh2.out" 2>&1
expect "--http2 to a server without HTTP/2 exits 2" 2 $?
contains "it is named" "$T/noh2.out" 'does not speak HTTP/2'
TMPDIR=$T/tmp "$TORTURE" --target http --http-tls --serve "$(fake http1)" \
	--cycles 1 >"$T/notls.out" 2>&1
expect "--http-tls to a server without TLS exits 2" 2 $?
contains "it is named" "$T/notls.out" 'the TLS handshake failed'
# keel-serve with HTTP/3 turned off: TLS on TCP answers, nothing on UDP.
printf '#!/bin/sh\nexec %s "$@" --no-http3\n' "$SERVE" >"$T/noh3.sh"
chmod +x "$T/noh3.sh"
TMPDIR=$T/tmp "$TORTURE" --target http --http3 --serve "$T/noh3.sh" \
	--cycles 1 >"$T/noh3.out" 2>&1
expect "--http3 to a server without HTTP/3 exits 2" 2 $?
contains "it is named" "$T/noh3.out" 'does not speak HTTP/3'
no_server_left "after --http3 to a server without HTTP/3"

# ---- garbage frames: a violation reported, no crash, no hang -----------------
# The fake answers the preface with SETTINGS, then a frame claiming 16 MiB and
# random bytes; each client connection must give up on its own (the outer
# timeout is only a guard against a hang, far above the normal second).
timeout 120 env TMPDIR=$T/tmp "$TORTURE" --target http --http2 \
	--serve "$(fake h2garbage)" --threads 8 --kill-every 1s --cycles 2 \
	--quiet >"$T/garbage.out" 2>&1
expect "garbage frames exit 1 (not a crash, not a hang)" 1 $?
contains "they are reported" "$T/garbage.out" \
	'cycle 1: writer: thread [0-9]+ op seq [0-9]+: commit failed: I/O error'
if ps -eo args | grep -v grep | grep -q "fake_serve.py .*--db $T/"; then
	bad "no fake server left running"
else
	ok "no fake server left running"
fi

echo "torture_http.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
