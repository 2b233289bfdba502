#!/bin/sh
# tests/mutants/run.sh [PATCH...] -- the mutation suite (make mutants).
#
# Each patch in tests/mutants/ plants one realistic bug in the engine.  For
# each: copy the working tree (build outputs included, so only what the
# patch touches is rebuilt) into its own directory, apply the patch, build,
# run `make test` (KEEL_TEST_FAILFAST: it stops at its first failed test) and
# then a fixed torture set (each run --duration $MUTANT_TORTURE_S seconds, 10
# by default; the set stops at the first run that catches the mutant).  A
# mutant is KILLED when a check fails, SURVIVES when all pass -- a survivor
# is a gap to close with a test -- and is STALE when its patch no longer
# applies (the code moved; refresh the patch) or BROKEN when it does not
# build.  Prints one line per mutant and the kill
# ratios for make test and for torture alone.  Not in CI: it takes long.
#
#   MUTANT_MAKE_TEST=0    skip make test (torture only)
#   MUTANT_TORTURE=0      skip torture (make test only)
#   MUTANT_TORTURE_S=10   seconds per torture run
#   MUTANT_DIR=DIR        where the copies go (default a fresh temporary one,
#                         removed at the end unless MUTANT_KEEP=1)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${MUTANT_TORTURE_S:-10}
do_test=${MUTANT_MAKE_TEST:-1}
do_torture=${MUTANT_TORTURE:-1}
work=${MUTANT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/keel-mutants.XXXXXX")}
[ $# -gt 0 ] || set -- "$root"/tests/mutants/*.patch

# The fixed torture set: each line is one run's flags.
TORTURE_SET='--mixed 50 --compact-every 20ms --readers 2
--power-loss --device payload --snapshots --grow-step 1
--fail fdatasync:EIO:p=0.2 --cache-lives --kill-every 20ms
--power-loss --device reorder --compact-every 20ms --readers 1
--enumerate --device payload
--mixed 30 --fail fdatasync:EIO:p=0.05 --device garbage
--readers 2 --snapshots --compact-every 20ms --bit-rot
--early-kills 30 --mixed 50 --compact-every 20ms
--fail fdatasync:EIO:p=0.3 --cache-lives --crash-on-failed-sync
--bit-rot --readers 1 --kill-every 300ms --jitter 90 --compact-every 200ms
--mixed 50 --compact-every 20ms --fail rename:crash:p=0.3 --fail fsync_dir:crash:p=0.3 --kill-every 200ms
--bit-rot --readers 1 --kill-every 500ms --value-size 44-400 --checkpoint-kib 4096'

n=0 stale=0 broken=0 k_test=0 k_tort=0 k_any=0 counted=0
survivors=""
printf '%-34s %-10s %s\n' mutant "make test" "torture (first run that caught it, seconds)"
for patch in "$@"; do
	name=$(basename "$patch" .patch)
	n=$((n + 1))
	dir=$work/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	# the tree as it is, with the main build's objects (timestamps kept)
	(cd "$root" && tar cf - --exclude='./build-*' --exclude='./.git' .) |
		(cd "$dir" && tar xf -)
	if ! (cd "$dir" && patch -p1 -s --dry-run <"$patch" >/dev/null 2>&1); then
		printf '%-34s STALE (the patch no longer applies)\n' "$name"
		stale=$((stale + 1))
		continue
	fi
	(cd "$dir" && patch -p1 -s <"$patch")
	if ! make -C "$dir" -j2 B=build all >"$dir/build.log" 2>&1; then
		printf '%-34s BROKEN (does not build; %s)\n' "$name" "$dir/build.log"
		broken=$((broken + 1))
		continue
	fi
	counted=$((counted + 1))
	t="-"
	if [ "$do_test" = 1 ]; then
		if (cd "$dir" && KEEL_TEST_FAILFAST=1 make B=build test >"$dir/test.log" 2>&1); then
			t=survived
		else
			t=KILLED
			k_test=$((k_test + 1))
		fi
	fi
	tr="-"
	if [ "$do_torture" = 1 ]; then
		tr=survived
		i=0
		errs=""
		echo "$TORTURE_SET" | {
			while IFS= read -r flags; do
				i=$((i + 1))
				s0=$(date +%s)
				# shellcheck disable=SC2086
				"$dir/build/torture" --quiet --duration "${secs}s" \
					--seed "$i" $flags >"$dir/torture-$i.log" 2>&1
				rc=$?
				# exit 1 is a violation found; 2 is a set-up
				# error (a simulator that gave up), which proves
				# nothing about the mutant: noted, not counted
				if [ $rc -eq 1 ]; then
					echo "KILLED by run $i (exit $rc, $(( $(date +%s) - s0 ))s): $flags"
					exit 0
				fi
				[ $rc -eq 0 ] || errs="$errs $i"
			done
			echo "survived${errs:+ (set-up errors in runs$errs)}"
		} >"$dir/torture.result"
		tr=$(cat "$dir/torture.result")
		case "$tr" in KILLED*) k_tort=$((k_tort + 1)) ;; esac
	fi
	case "$t$tr" in *KILLED*) k_any=$((k_any + 1)) ;;
	*) survivors="$survivors $name" ;; esac
	printf '%-34s %-10s %s\n' "$name" "$t" "$tr"
done
echo
echo "mutants: $n ($counted built, $stale stale, $broken broken)"
[ "$do_test" = 1 ] && echo "make test kills $k_test of $counted"
[ "$do_torture" = 1 ] && echo "torture alone kills $k_tort of $counted (${secs} s per run)"
echo "killed by either: $k_any of $counted"
echo "survivors:${survivors:- none}"
[ -n "${MUTANT_DIR:-}" ] || [ "${MUTANT_KEEP:-0}" = 1 ] || rm -rf "$work"
