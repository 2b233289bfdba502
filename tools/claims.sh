#!/bin/sh
# claims.sh BUILD_DIR [NAME:CONFIG...] -- runs each engine adapter
# configuration (default: all of torture --list-targets) under a process
# kill, a power cut (reorder, torn; the posix model), the torn power cut
# again under the ext4, xfs and btrfs models where posix broke it, and
# fdatasync/fsync:EIO with the ext4 profile (with a power cut), and writes
# the verdict table to stdout.
# A run stops at its first violation, after CLAIMS_CYCLES crash cycles
# (default 200: a holding verdict rests on 200 cycles per fault), or after
# CLAIMS_DURATION (default 90s: the slowest adapters, redis and rocksdb,
# make 2-5 cycles a second), whichever comes first.  docs/claims.md is this
# output.
set -u
B=${1:-build}
shift
D=${CLAIMS_DURATION:-90s}
C=${CLAIMS_CYCLES:-200}
t0=$(date +%s)
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
		--duration "$D" --cycles "$C" --json "$j" "$@" >"$j.out" 2>&1
	rc=$?
	if [ $rc = 2 ] || [ ! -s "$j" ]; then
		echo "set-up: $(grep -m1 'torture:' "$j.out" | cut -c1-90)"
		return
	fi
	c=$(field "$j" cycles)
	if [ "$(field "$j" result)" = unavailable ]; then
		echo "UNAVAILABLE cycle $c: refuses to start or needs repair"
		echo "$t $f: $(field "$j" reproducer)" >>"$T/repro"
	elif [ "$(field "$j" result)" = pass ]; then
		extra=""
		[ "$(field "$j" faults_fired)" != 0 ] &&
			extra=", $(field "$j" fault_stops) stopped on the error of $(field "$j" faults_fired) injected"
		echo "holds ($c cycles, $(field "$j" cycles_per_second)/s$extra)"
	else
		echo "BROKEN cycle $c: $(sed -n 's/.*"first_violation": "\(.*\)", "reproducer".*/\1/p' "$j" | sed 's/\\"//g' | cut -c1-70)"
		echo "$t $f: $(field "$j" reproducer)" >>"$T/repro"
	fi
}

# The power cuts follow the strictest persistence model (posix); where one
# breaks a configuration, the file systems' own models (docs/faults.md) say
# whether the machine it runs on would: that column lists each model's
# verdict, or "-" when posix held (every other model promises more).
models() { # NAME:CONFIG -> "ext4: ...; xfs: ...; btrfs: ..."
	out=""
	for m in ext4 xfs btrfs; do
		mv=$(verdict "$1" "torn-$m" --power-loss --device torn --fs "$m")
		out="$out${out:+; }$m: $mv"
	done
	echo "$out"
}

echo "| configuration | version | process kill | power cut, reorder | power cut, torn | torn, under ext4 / xfs / btrfs | fsync EIO (ext4) + power cut |"
echo "|---|---|---|---|---|---|---|"
for t in $targets; do
	v=$("$B/targets/${t%%:*}" --version 2>/dev/null || echo "?")
	k=$(verdict "$t" kill)
	r=$(verdict "$t" reorder --power-loss --device reorder)
	o=$(verdict "$t" torn --power-loss --device torn)
	case "$r$o" in
	*BROKEN*) f=$(models "$t") ;;
	*) f="-" ;;
	esac
	e=$(verdict "$t" eio --power-loss --fail fdatasync:EIO:p=0.02 \
		--fail fsync:EIO:p=0.02 --fsync-profile ext4)
	echo "| $t | $v | $k | $r | $o | $f | $e |"
done
echo
echo "Run: $(( $(date +%s) - t0 )) s, at most $C cycles or $D per run."
echo
echo "Reproducers (run with --seed 1):"
echo
[ -f "$T/repro" ] && sed 's/^/    /' "$T/repro"
