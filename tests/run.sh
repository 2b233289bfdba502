#!/bin/sh
# run.sh BUILD_DIR TEST... -- run every test program or script, print each
# one's result as it ends and a closing "N passed, N failed" line; exit 1 if
# any failed.
#
# Tests run side by side, KEEL_TEST_JOBS at a time (default: the number of
# CPUs, at most 4; 1 runs them one after the other, in order).  Every test
# owns its data (a private mktemp directory, kernel-chosen ports), and none
# may assume a quiet machine, so running beside each other is one more load
# they must stand.  They are started in the order given: list the long ones
# first so the lanes end together (the Makefile does).  A failed test's
# checks and the end of its output are printed after every test has ended,
# so lanes do not mix their output.
#
# Each test gets KEEL_TEST_LIMIT seconds (default 600): a test that is still
# running then is killed (TERM, then KILL 10 s later) and reported as failed,
# "exceeded its time limit", so a hang ends the run instead of stalling it.
# The limit is for hangs, not speed: every test here ends in a small part of
# it even on a busy machine.
#
# KEEL_TEST_FAILFAST=1 starts no test after the first failure (the mutation
# suite uses it: one failure is all it needs to know); tests already running
# finish.
build=$1
shift
here=$(dirname "$0")
jobs=${KEEL_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in
''|*[!0-9]*) echo "run.sh: KEEL_TEST_JOBS must be a number, not '$jobs'" >&2
	     exit 2 ;;
esac
[ "$jobs" -ge 1 ] || jobs=1
[ -n "${KEEL_TEST_JOBS:-}" ] || [ "$jobs" -le 4 ] || jobs=4
res=$(mktemp -d "${TMPDIR:-/tmp}/keel-run.XXXXXX") || exit 2
trap 'rm -rf "$res"' EXIT
trap 'exit 130' INT TERM
export KEEL_RUN_RESULTS="$res"
[ $# -gt 0 ] || { echo "keel: 0 passed, 0 failed"; exit 0; }

# Each test is one run_one.sh; xargs keeps JOBS of them going and starts no
# new one once a run_one.sh exits 255 (a failure under KEEL_TEST_FAILFAST).
i=0
for t in "$@"; do
	i=$((i + 1))
	printf '%s %s\n' "$i" "$t"
done >"$res/list"
xargs -P "$jobs" -n 2 sh "$here/run_one.sh" "$build" <"$res/list"
[ $? -le 123 ] || echo "(KEEL_TEST_FAILFAST: the remaining tests were not run)"

pass=0
fail=0
for f in "$res"/*.rc; do
	[ -e "$f" ] || continue
	if [ "$(cat "$f")" = 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
if [ $fail -gt 0 ]; then
	n=0
	failed=""
	while [ $n -lt $i ]; do
		n=$((n + 1))
		[ -e "$res/$n.rc" ] && [ "$(cat "$res/$n.rc")" != 0 ] || continue
		cat "$res/$n.report"
		failed="$failed $(cat "$res/$n.name")"
	done
	echo "failed:$failed"
	# once more, last, each failed test's failed checks alone (at most
	# five a test): a log cut to its last lines still shows them
	n=0
	while [ $n -lt $i ]; do
		n=$((n + 1))
		[ -e "$res/$n.rc" ] && [ "$(cat "$res/$n.rc")" != 0 ] || continue
		grep '^not ok\|^FAIL\|\[  FAILED  \]' "$res/$n.report" |
			grep -v "; its output:$" | awk '!seen[$0]++' | head -n 5 | cut -c1-300 |
			sed "s|^|$(cat "$res/$n.name"): |"
	done
fi
echo "keel: $pass passed, $fail failed"
[ $fail -eq 0 ]
