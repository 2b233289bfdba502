#!/bin/sh
# torture_http.sh BUILD_DIR -- `torture --target http` end to end: a 5-second
# run against keel-serve that must pass, the positive control that must fail,
# a server that dies on its own (must fail), and bad input that must exit 2
# and touch nothing.  Loopback only; bounded: about 10 seconds.
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
	[ $rc = 0 ] && ! reached "$T/pass.json" cycles=20 acked_writes=100 || break
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

# ---- the positive control: acknowledging before the PUT is sent -------------
TMPDIR=$T/tmp "$TORTURE" --target http --duration 10s --quiet --seed 1 \
	--unsafe ack-before-commit >"$T/fail.out" 2>&1
expect "http ack-before-commit exits 1" 1 $?
contains "first violation is a lost write" "$T/fail.out" \
	'first violation +cycle [0-9]+: lost: key'
contains "reproducer names the target" "$T/fail.out" \
	'reproduce with .*--target http.*--unsafe ack-before-commit'
no_server_left "after a failure"

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
expect "nothing made in TMPDIR" "" "$(ls -A "$T/empty")"
TMPDIR=$T/tmp "$TORTURE" --target http --serve /bin/true --cycles 1 \
	>"$T/notserve.out" 2>&1
expect "a server that never listens exits 2" 2 $?
contains "it is named" "$T/notserve.out" \
	'keel-serve \(/bin/true\) did not start: it exited before it listened'

echo "torture_http.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
