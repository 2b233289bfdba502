#!/bin/sh
# claims.sh BUILD_DIR [NAME:CONFIG...] -- runs each engine adapter
# configuration (default: all of torture --list-targets) under a process
# kill, a power cut (reorder, torn; the posix model), the torn power cut
# again under the ext4, xfs and btrfs models where posix broke it, and
# fdatasync/fsync:EIO with the ext4 profile (with a power cut).
# A run stops at its first violation, after CLAIMS_CYCLES crash cycles
# (default 200: a holding verdict rests on 200 cycles per fault), or after
# CLAIMS_DURATION (default 90s: the slowest adapters, redis and rocksdb,
# make 2-5 cycles a second), whichever comes first.
# It writes the page docs/results/claims.md (CLAIMS_OUT=DIR: elsewhere):
# the command, the machine, the date, the commit and the duration; the
# verdict table; the minimised cause of each broken run's first violation
# and how long its search took; the reproducers; and the picture
# claims.svg beside it (tools/claims-svg.sh).  The table also goes to
# stdout.  docs/claims.md holds the promises and reads the verdicts.
set -u
B=${1:-build}
shift
D=${CLAIMS_DURATION:-90s}
C=${CLAIMS_CYCLES:-200}
O=${CLAIMS_OUT:-docs/results}
here=$(dirname "$0")
cmd="sh tools/claims.sh $B${*:+ $*}"
[ -z "${CLAIMS_CYCLES:-}" ] || cmd="CLAIMS_CYCLES=$C $cmd"
[ -z "${CLAIMS_DURATION:-}" ] || cmd="CLAIMS_DURATION=$D $cmd"
t0=$(date +%s)
date0=$(date -u '+%Y-%m-%d %H:%M UTC')
load0=$(cut -d ' ' -f 1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# a rerun must not call the tree dirty for the page the last run wrote
[ -z "$(git status --porcelain -- . ":!$O" 2>/dev/null)" ] ||
	commit="$commit+dirty"
T=$(mktemp -d "${TMPDIR:-/tmp}/keel-claims.XXXXXX")
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
		# the program's own words when it left some, else torture's
		m=$(sed -n '/the program.s last output:/{n;p;q;}' "$j.out")
		[ -n "$m" ] || m=$(grep -m1 'torture:' "$j.out")
		echo "set-up: $(echo "$m" | tr '|' '/' | cut -c1-150)"
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
		echo "BROKEN cycle $c: $(sed -n 's/.*"first_violation": "\(.*\)", "reproducer".*/\1/p' "$j" | sed 's/\\"//g' | tr '|' '/' | cut -c1-70)"
		echo "$t $f: $(field "$j" reproducer)" >>"$T/repro"
		why "$t" "$f" "$c" "$j.out" >>"$T/why"
	fi
}

# One row of the "why" table: the first violation's minimisation, as
# torture printed it ("  why (N replays ... over the M records it dropped,
# S s):", what it found, the first call of the cause).
why() { # NAME:CONFIG FAULT CYCLE OUTPUT
	w=$(grep -m1 '^  why' "$4")
	[ -n "$w" ] || return 0
	found=$(sed -n '/^  why (/{n;p;q;}' "$4" |
		sed 's/^ *//; s/:$//; s/ the power cut dropped$//; s/: \([0-9]\)/, \1/')
	first=$(sed -n '/^  why (/,$p' "$4" | grep -m1 -E '^    [a-z_]+\(.* -- ' |
		sed 's/^ *//')
	search=$(echo "$w" | sed -n 's/^  why (\([0-9]*\) replays of the power cut over the \([0-9]*\) records it dropped, \(.*\)):$/\1 replays over \2 records, \3/p')
	case $w in
	"  why:"*) found=$(echo "$w" | sed 's/^  why: //'); search="-" ;;
	esac
	echo "| $1 | $2 | $3 | $found${first:+: \`$first\`} | $search |" | tr -s ' '
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

{
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
} | tee "$T/table"

fs=$(df -PT "$T" 2>/dev/null | awk 'NR == 2 { print $2 " on " $1 }')
model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
mkdir -p "$O"
{
	echo "# Claims: the verdicts"
	echo
	echo "Written by \`tools/claims.sh\` (\`make claims\`); rerunning it replaces this"
	echo "page and [claims.svg](claims.svg). What each configuration's documentation"
	echo "promises, and what each verdict means: [docs/claims.md](../claims.md)."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| command | \`$cmd\` |"
	echo "| date | $date0, $(( $(date +%s) - t0 )) s |"
	echo "| commit | $commit |"
	echo "| machine | $(nproc) CPUs (${model:-model unknown}), Linux $(uname -r) |"
	echo "| data directory | \`${T%.*}.*\`: ${fs:-unknown} |"
	echo "| load average (1, 5, 15 min) | $load0 at the start, $(cut -d ' ' -f 1-3 /proc/loadavg) at the end |"
	echo
	echo "Each run: \`torture --target NAME:CONFIG --seed 1\` with the fault's flags;"
	echo "it ends at its first violation, after $C crash cycles or after $D,"
	echo "whichever comes first. The machine may be shared with other work: the"
	echo "cycles a second are noisy, the verdicts are not."
	echo
	echo "![each configuration under each fault, coloured by verdict](claims.svg)"
	echo
	cat "$T/table"
	echo
	echo "## Why: each broken run's first violation, minimised"
	echo
	echo "The power cut replayed with subsets of what it dropped kept, grouped by"
	echo "directory, file, then namespace or data (docs/targets.md, \"Reading a"
	echo "violation\"): the smallest set whose loss alone fails, its first call,"
	echo "and the search's cost. A process kill drops nothing: no row."
	echo
	echo "| configuration | fault | cycle | found | search |"
	echo "|---|---|---|---|---|"
	[ -f "$T/why" ] && cat "$T/why"
	echo
	echo "## Reproducers"
	echo
	echo "Each broken run's command, up to the cycle that broke (from the run's"
	echo "--json):"
	echo
	[ -f "$T/repro" ] && sed 's/^/    /' "$T/repro"
} >"$T/page"
# the sections other scripts write to the page (tools/claims_servers.sh:
# "servers", between results markers) stay
[ ! -f "$O/claims.md" ] || awk '/^<!-- results:begin / { p = 1; print "" }
	p { print } /^<!-- results:end / { p = 0 }' "$O/claims.md" >>"$T/page"
cp "$T/page" "$O/claims.md"
sh "$here/claims-svg.sh" "$O/claims.md" >"$O/claims.svg"
echo
echo "Run: $(( $(date +%s) - t0 )) s, at most $C cycles or $D per run; wrote $O/claims.md and $O/claims.svg."
