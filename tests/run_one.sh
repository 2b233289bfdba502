#!/bin/sh
# run_one.sh BUILD_DIR N TEST -- one test of tests/run.sh: runs it under
# KEEL_TEST_LIMIT, prints its PASS/FAIL line, and leaves in KEEL_RUN_RESULTS
# N.rc (its exit status), N.name and, when it failed, N.report (its failed
# checks and the end of its output).  Exits 255 after a failure under
# KEEL_TEST_FAILFAST=1, so that xargs starts no further test.
build=$1 n=$2 t=$3
res=${KEEL_RUN_RESULTS:?run_one.sh is run by tests/run.sh}
limit=${KEEL_TEST_LIMIT:-600}
start=$(date +%s)
case "$t" in
*.sh) log=$build/$(basename "$t").log
      timeout -k 10 "$limit" sh "$t" "$build" >"$log" 2>&1 </dev/null ;;
*) log=$t.log
   timeout -k 10 "$limit" "$t" >"$log" 2>&1 </dev/null ;;
esac
rc=$?
secs=$(( $(date +%s) - start ))
echo "$t" >"$res/$n.name"
echo $rc >"$res/$n.rc"
if [ $rc -eq 0 ]; then
	echo "PASS $t (${secs}s)"
	exit 0
fi
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	line="FAIL $t: exceeded its time limit of ${limit}s (killed after ${secs}s)"
else
	line="FAIL $t (exit $rc, ${secs}s)"
fi
echo "$line"
{
	echo "$line; its output:"
	# the failed checks first, with what each printed after it, then the
	# end of the output: a long log's tail alone may not show which check
	# failed
	if grep -q '^FAIL\|^not ok\|\[  FAILED  \]' "$log"; then
		echo "-- its failed checks:"
		grep -A 12 '^FAIL\|^not ok\|\[  FAILED  \]' "$log" | head -n 120
		echo "-- the end of its output:"
	fi
	tail -n 40 "$log"
} >"$res/$n.report"
[ "${KEEL_TEST_FAILFAST:-0}" = 1 ] && exit 255
exit 1
