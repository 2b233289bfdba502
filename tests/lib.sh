# lib.sh -- checks shared by the torture scripts; source it after setting
# fails=0 checks=0.  Each check prints one "ok" or "FAIL" line.
ok() { checks=$((checks + 1)); echo "ok   $1"; }
# KEEL_CHECK_FAILFAST=1 (tools/mutate): a script ends at its first failed
# check, its EXIT trap cleaning up; one is all a mutant needs
bad() {
	checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL $1"
	[ "${KEEL_CHECK_FAILFAST:-0}" = 0 ] || exit 1
}
expect() { # expect NAME WANT GOT
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: want [$2] got [$3]"; fi
}
waitfor() { # waitfor FILE PATTERN -- up to 20 s for PATTERN to show in FILE
	local i
	for i in $(seq 400); do
		grep -qE -e "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
contains() { # contains NAME FILE PATTERN
	if grep -qE -e "$3" "$2"; then ok "$1"; else
		bad "$1: no /$3/ in:"; head -c 1500 "$2"; echo; fi
}
json_num() { # json_num FILE FIELD
	sed -n "s/^ *\"$2\": \([0-9.]*\),*$/\1/p" "$1"
}
# no_verdict FILE -- the run's --json or output says it gave no verdict
# (torture: nothing acknowledged, no fault met: its lives were too short
# for a loaded machine, so a longer run is the next try, not a failure)
no_verdict() { grep -q '"result": "no-verdict"\|^torture: NO VERDICT' "$1" 2>/dev/null; }
reached() { # reached FILE FIELD=MIN... -- true when every FIELD is >= MIN
	f=$1
	shift
	for want in "$@"; do
		v=$(json_num "$f" "${want%%=*}")
		[ "${v%%.*}" -ge "${want#*=}" ] 2>/dev/null || return 1
	done
}
# A run that must also have done enough (cuts, faults, writes) runs for
# SECONDS, then twice as long, up to 8 times as long, until it has: a loaded
# machine does less a second, and every run must pass all the same.
long_enough_durations() { echo "$1 $(($1 * 2)) $(($1 * 4)) $(($1 * 8))"; }
# patient OUT CMD... -- runs CMD, a torture run, with its output in OUT,
# and returns its exit status.  A run whose lives were too short to
# acknowledge anything ("never acknowledged an operation", exit 2), or
# that passed with most of its lives acknowledging nothing ("lives too
# short": a pass that tested little), is run again with its --kill-every
# and --duration doubled, twice at most: a busy machine starts a program
# more slowly, a slow start is not a verdict, and the run must still reach
# the verdict it is checked for.
patient() {
	local out=$1 try a p i
	shift
	for try in 1 2 3; do
		"$@" >"$out" 2>&1
		rc=$?
		[ $try -lt 3 ] && { { [ $rc = 2 ] &&
			grep -q "never acknowledged an operation" "$out"; } ||
			{ [ $rc = 0 ] && grep -q "^  lives too short" "$out"; }; } ||
			return $rc
		echo "($(basename "$1"): lives too short on this machine, run again with twice as long)" >&2
		i=0 p=
		for a do
			i=$((i + 1))
			case $p in
			--kill-every|--duration)
				a=$(echo "$a" | awk '!/^[0-9.]+[a-z]*$/ { print; next }
					{ n = $0 + 0; u = $0; sub(/^[0-9.]+/, "", u)
					  print n * 2 u }') ;;
			esac
			set -- "$@" "$a"
			p=$a
		done
		shift $i
	done
	return $rc
}

# beside NAME CMD... -- runs CMD (checks of the calling script: run,
# passes, caught ...) in the background, its lines into $T/beside.NAME;
# settle waits for what runs beside and takes up its checks, in the order
# started.  Two at most at once (a third waits for one of them to end): a
# torture run is lives timed by the clock (--kill-every, --duration), most
# of it waiting on the kill and on fdatasync, not on a CPU, so two side by
# side take little more than the time of one; what a busy machine does to
# them it does to a run alone too.  BESIDE_TMPDIR=1: each job gets a TMPDIR
# of its own, $T/tmp/NAME.
BESIDE=""
beside() {
	# (a job is done when its .done is there: a shell need not reap it
	# before the next wait, so kill -0 would still find it)
	while [ "$(echo $BESIDE | wc -w)" -ge $(($(ls "$T"/beside.*.done 2>/dev/null | wc -l) + 2)) ]; do
		sleep 0.1
	done
	local n=$1
	shift
	if [ "${BESIDE_TMPDIR:-0}" = 1 ]; then
		mkdir -p "$T/tmp/$n"
		{ (fails=0 checks=0 TMPDIR=$T/tmp/$n; "$@") >"$T/beside.$n" 2>&1
		  : >"$T/beside.$n.done"; } &
	else
		{ (fails=0 checks=0; "$@") >"$T/beside.$n" 2>&1
		  : >"$T/beside.$n.done"; } &
	fi
	BESIDE="$BESIDE $n"
}
settle() {
	local n
	wait
	for n in $BESIDE; do
		cat "$T/beside.$n"
		checks=$((checks + $(grep -c '^ok   \|^FAIL ' "$T/beside.$n")))
		fails=$((fails + $(grep -c '^FAIL ' "$T/beside.$n")))
		rm -f "$T/beside.$n.done"
	done
	BESIDE=""
	[ "${KEEL_CHECK_FAILFAST:-0}" = 0 ] || [ $fails -eq 0 ] || exit 1
}
