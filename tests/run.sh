#!/bin/sh
# run.sh BUILD_DIR TEST... -- run every test program or script, print each
# one's result and a closing "N passed, N failed" line; exit 1 if any failed.
build=$1
shift
pass=0
fail=0
failed=""
for t in "$@"; do
	start=$(date +%s)
	case "$t" in
	*.sh) sh "$t" "$build" >"$build/$(basename "$t").log" 2>&1 ;;
	*) "$t" >"$t.log" 2>&1 ;;
	esac
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $t (${secs}s)"
	else
		fail=$((fail + 1))
		failed="$failed $t"
		echo "FAIL $t (exit $rc, ${secs}s); its output:"
		case "$t" in
		*.sh) tail -n 40 "$build/$(basename "$t").log" ;;
		*) tail -n 40 "$t.log" ;;
		esac
	fi
done
echo "keel: $pass passed, $fail failed"
[ $fail -eq 0 ]
