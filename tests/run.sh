#!/bin/sh
# run.sh BUILD_DIR TEST... -- run every test program or script, print each
# one's result and a closing "N passed, N failed" line; exit 1 if any failed.
#
# Each test gets KEEL_TEST_LIMIT seconds (default 600): a test that is still
# running then is killed (TERM, then KILL 10 s later) and reported as failed,
# "exceeded its time limit", so a hang ends the run instead of stalling it.
# The limit is for hangs, not speed: every test here ends in a small part of
# it even on a busy machine.
#
# KEEL_TEST_FAILFAST=1 stops at the first failed test (the mutation suite
# uses it: one failure is all it needs to know).
build=$1
shift
limit=${KEEL_TEST_LIMIT:-600}
pass=0
fail=0
failed=""
for t in "$@"; do
	start=$(date +%s)
	case "$t" in
	*.sh) log=$build/$(basename "$t").log
	      timeout -k 10 "$limit" sh "$t" "$build" >"$log" 2>&1 ;;
	*) log=$t.log
	   timeout -k 10 "$limit" "$t" >"$log" 2>&1 ;;
	esac
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $t (${secs}s)"
	else
		fail=$((fail + 1))
		failed="$failed $t"
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			echo "FAIL $t: exceeded its time limit of ${limit}s" \
			     "(killed after ${secs}s); its output:"
		else
			echo "FAIL $t (exit $rc, ${secs}s); its output:"
		fi
		# the failed checks first, with what each printed after it,
		# then the end of the output: a long log's tail alone may not
		# show which check failed
		if grep -q '^FAIL\|^not ok\|\[  FAILED  \]' "$log"; then
			echo "-- its failed checks:"
			grep -A 12 '^FAIL\|^not ok\|\[  FAILED  \]' "$log" |
				head -n 120
			echo "-- the end of its output:"
		fi
		tail -n 40 "$log"
		if [ "${KEEL_TEST_FAILFAST:-0}" = 1 ]; then
			echo "(KEEL_TEST_FAILFAST: the remaining tests were not run)"
			break
		fi
	fi
done
echo "keel: $pass passed, $fail failed"
[ $fail -eq 0 ]
