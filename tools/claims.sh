#!/bin/sh
# claims.sh BUILD_DIR [NAME:CONFIG...] -- runs each engine adapter
# configuration (default: all of torture --list-targets) under a process
# kill, a power cut (reorder, torn) and fdatasync/fsync:EIO with the ext4
# profile (with a power cut), and writes the verdict table to stdout.
# CLAIMS_DURATION (default 8s) bounds each run; a run stops at its first
# violation.  docs/claims.md is this output.
set -u
B=${1:-build}
shift
D=${CLAIMS_DURATION:-8s}
T=$(mktemp -d /tmp/keel-claims.XXXXXX)
trap 'rm -rf "$T"' EXIT
export TMPDIR="$T"
targets=${*:-$("$B/torture" --list-targets)}

field() { sed -n "s/.*\"$2\": \"\{0,1\}\([^\",]*\).*/\1/p" "$1"; }

verdict() { # NAME:CONFIG FAULT-NAME FLAGS...
	t=$1 f=$2
	shift 2
	j="$T/$(echo "$t.$f" | tr ':' '_').json"
	timeout 600 nice "$B/torture" --target "$t" --quiet --seed 1 \
		--duration "$D" --json "$j" "$@" >"$j.out" 2>&1
	rc=$?
	if [ $rc = 2 ] || [ ! -s "$j" ]; then
		echo "set-up: $(grep -m1 'torture:' "$j.out" | cut -c1-90)"
		return
	fi
	c=$(field "$j" cycles)
	if [ "$(field "$j" result)" = pass ]; then
		extra=""
		[ "$(field "$j" faults_fired)" != 0 ] &&
			extra=", $(field "$j" fault_stops) stopped on the error of $(field "$j" faults_fired) injected"
		echo "holds ($c cycles$extra)"
	else
		echo "BROKEN cycle $c: $(sed -n 's/.*"first_violation": "\(.*\)", "reproducer".*/\1/p' "$j" | sed 's/\\"//g' | cut -c1-70)"
		echo "$t $f: $(field "$j" reproducer)" >>"$T/repro"
	fi
}

echo "| configuration | version | process kill | power cut, reorder | power cut, torn | fsync EIO (ext4) + power cut |"
echo "|---|---|---|---|---|---|"
for t in $targets; do
	v=$("$B/targets/${t%%:*}" --version 2>/dev/null || echo "?")
	k=$(verdict "$t" kill)
	r=$(verdict "$t" reorder --power-loss --device reorder)
	o=$(verdict "$t" torn --power-loss --device torn)
	e=$(verdict "$t" eio --power-loss --fail fdatasync:EIO:p=0.02 \
		--fail fsync:EIO:p=0.02 --fsync-profile ext4)
	echo "| $t | $v | $k | $r | $o | $e |"
done
echo
echo "Reproducers (run with --seed 1, --duration $D):"
echo
[ -f "$T/repro" ] && sed 's/^/    /' "$T/repro"
