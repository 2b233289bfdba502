#!/bin/sh
# tests/mutants/sim.sh [PATCH...] -- the simulator's mutation suite (make
# mutants-sim).  Each patch in tests/mutants/sim/ plants one realistic bug
# in the fault simulator or a front end (faultsim/, shim/, supervisor/) that
# flips a verdict.  For each: copy the working tree with its build (only
# what the patch touches is rebuilt), apply the patch, build torture, the
# shim and the test programs, then run the simulator's unit tests
# (tests/test_faultsim) and tests/sim_rules.sh, stopping at the first
# failure.  A mutant is KILLED when a check fails, SURVIVES when all pass
# (a gap: close it with a test), STALE when the patch no longer applies,
# BROKEN when it does not build.  Needs `make` run first (build/).  About
# a minute a mutant; not in make test.  Run over the whole set (no PATCH
# given) from the repository root, it writes its table to
# docs/results/mutants.md (section "simulator", bench/results.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
whole=$#
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-sim-mutants.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ $# -gt 0 ] || set -- "$root"/tests/mutants/sim/*.patch
[ -x "$root/build/torture" ] || { echo "sim.sh: run make first" >&2; exit 2; }

n=0 killed=0 survived="" stale=0 broken=0
if [ "$whole" = 0 ] && [ "$(pwd)" = "$root" ]; then
	. bench/results.sh
	results_begin tests/mutants/sim.sh
fi
table=$work/table.md
printf '| mutant | result |\n|---|---|\n' >"$table"
printf '%-40s %s\n' mutant result
for patch in "$@"; do
	name=$(basename "$patch" .patch)
	n=$((n + 1))
	dir=$work/$name
	mkdir -p "$dir"
	(cd "$root" && tar cf - --exclude='./build-*' --exclude='./.git' .) |
		(cd "$dir" && tar xf -)
	if ! (cd "$dir" && patch -p1 -s <"$patch" >/dev/null 2>&1); then
		printf '%-40s STALE (the patch no longer applies)\n' "$name"
		stale=$((stale + 1))
		rm -rf "$dir"
		continue
	fi
	if ! make -C "$dir" B=build build/torture build/libkeel-shim.so \
	        build/shim-tests/rules build/tests/test_faultsim \
	        >"$work/$name.build" 2>&1; then
		printf '%-40s BROKEN (does not build)\n' "$name"
		broken=$((broken + 1))
		rm -rf "$dir"
		continue
	fi
	t0=$(date +%s)
	if ! (cd "$dir" && build/tests/test_faultsim >"$work/$name.unit" 2>&1); then
		how="test_faultsim"
	elif ! (cd "$dir" && SIM_RULES_FAILFAST=1 sh tests/sim_rules.sh build \
	         >"$work/$name.rules" 2>&1); then
		how="sim_rules.sh: $(grep '^FAIL' "$work/$name.rules" | head -n 1 |
		      cut -c 6-60)"
	else
		how=""
	fi
	if [ -n "$how" ]; then
		killed=$((killed + 1))
		printf '%-40s KILLED by %s (%ss)\n' "$name" "$how" \
		       $(( $(date +%s) - t0 ))
		printf '| %s | killed by %s (%ss) |\n' "$name" "$how" \
		       $(( $(date +%s) - t0 )) >>"$table"
	else
		survived="$survived $name"
		printf '%-40s SURVIVES\n' "$name"
		printf '| %s | **survives** |\n' "$name" >>"$table"
	fi
	rm -rf "$dir"
done
counted=$((n - stale - broken))
echo "sim.sh: $n mutants, $killed of $counted killed, $stale stale, $broken broken"
if [ "$whole" = 0 ] && [ "$(pwd)" = "$root" ]; then
	printf '\n%s mutants planted in faultsim/, shim/ and supervisor/ (tests/mutants/sim/*.patch): %s of %s killed, %s stale, %s broken.\n' \
		"$n" "$killed" "$counted" "$stale" "$broken" >>"$table"
	results_write mutants simulator "Generated mutants" "${TMPDIR:-/tmp}" \
		"$table" "Each patch plants a bug that flips a verdict; tests/test_faultsim or tests/sim_rules.sh must kill it (docs/testing.md)."
fi
[ -z "$survived" ] || echo "sim.sh: survivors:$survived"
[ $stale -eq 0 ] && [ $broken -eq 0 ] && [ -z "$survived" ]
