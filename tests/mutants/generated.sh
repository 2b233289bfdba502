#!/bin/sh
# tests/mutants/generated.sh -- the generated mutation run (docs/testing.md),
# written to docs/results/mutants.md.
#
#   sh tests/mutants/generated.sh [--sample N] [--seed S] [--jobs J]
#                                 [--tier unit|sim|test] [--faultsim]
#                                 [--files 'FILE...'] [--section NAME]
#                                 [--equivalent FILE] [--shim]
#                                 [--results DIR]
#       runs a sample of tools/mutate's mutants of base/, engine/ and
#       recovery/ (or of --files, a space-separated list, globs allowed) as J
#       shards side by side on this machine (2 by default;
#       across machines, run `tools/mutate run --shard I/N` on each, or as a
#       Slurm job array as tests/slurm.sh does, and merge with --merge),
#       then writes the page's section NAME (default "generated")
#   --faultsim: the simulator's run, short for --files 'faultsim/*.c'
#       --tier sim --section generated-faultsim --equivalent
#       tests/mutants/equivalent/faultsim.md (flags after it override these)
#   --shim: the front ends' run, short for --files 'shim/*.c supervisor/*.c'
#       --tier sim --section generated-shim --equivalent
#       tests/mutants/equivalent/shim.md
#   --results DIR: keep each shard's result file there (DIR/sI.jsonl, for a
#       later --merge with a rerun) instead of a temporary directory
#   sh tests/mutants/generated.sh --merge RESULT.jsonl...
#       writes the page from shards already run (later files win for a
#       mutant in several: a rerun after new tests replaces the first verdict)
#
# The unit tier (--tier unit, the default) runs, for each mutant, the unit
# suites that execute its line (a coverage map, build-cov/), fail-fast; the
# sim tier (for faultsim/) runs those suites, then, for a mutant they leave
# alive, tests/sim_rules.sh and tests/refmodel.sh (the end-to-end checks of
# the simulator's rules), and for shim/ and supervisor/ first tests/shim.sh,
# shim_backstop.sh and shim_sound.sh (the front ends end to end: no unit
# suite runs the shim's .so, only torture links the supervisor); the test
# tier runs every part of make test.
# EQUIVALENT and DUPLICATE mutants (identical object code) are never run;
# survivors are argued equivalent in tests/mutants/equivalent/generated.md
# (faultsim.md for the simulator's, shim.md for the front ends') or killed by
# a new test.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
sample=460 seed=1 jobs=2 tier=unit merge=0
srcs="" section=generated equiv=tests/mutants/equivalent/generated.md
keep=""
args="$*"
while [ $# -gt 0 ]; do
	case $1 in
	--sample) sample=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--tier) tier=$2; shift 2 ;;
	--files) srcs=$2; shift 2 ;;
	--section) section=$2; shift 2 ;;
	--equivalent) equiv=$2; shift 2 ;;
	--faultsim)
		srcs='faultsim/*.c' tier=sim section=generated-faultsim
		equiv=tests/mutants/equivalent/faultsim.md
		shift ;;
	--shim)
		srcs='shim/*.c supervisor/*.c' tier=sim section=generated-shim
		equiv=tests/mutants/equivalent/shim.md
		shift ;;
	--results) keep=$2; shift 2 ;;
	--merge) merge=1; shift; break ;;
	*) echo "generated.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
. bench/results.sh
# shellcheck disable=SC2086
results_begin tests/mutants/generated.sh $args
out=$(mktemp -d "${TMPDIR:-/tmp}/keel-mutants.XXXXXX")
trap 'rm -rf "$out"' EXIT
if [ $merge = 1 ]; then
	[ $# -gt 0 ] || { echo "generated.sh: --merge needs result files" >&2; exit 2; }
	files="$*"
else
	files=""
	res=$out
	[ -z "$keep" ] || { mkdir -p "$keep" && res=$keep; }
	i=0
	while [ $i -lt "$jobs" ]; do
		# shellcheck disable=SC2086 # $srcs: a list, its globs expanded
		python3 tools/mutate run --sample "$sample" --seed "$seed" \
			--shard $i/"$jobs" --tier "$tier" --out "$res/s$i.jsonl" \
			--base-times "$out/times.json" \
			--coverage-map "$out/coverage.json" $srcs \
			>"$out/s$i.log" 2>&1 &
		files="$files $res/s$i.jsonl"
		i=$((i + 1))
		# the first shard measures the times and the coverage map the
		# others then read
		[ $i = 1 ] && while [ ! -s "$out/coverage.json" ] &&
			kill -0 $! 2>/dev/null; do sleep 5; done
	done
	wait
fi
# shellcheck disable=SC2086
python3 tools/mutate table --equivalent "$equiv" $files >"$out/table.txt" || exit 1
{
	echo '```'
	cat "$out/table.txt"
	echo '```'
} >"$out/tables.md"
results_write mutants "$section" "Generated mutants" "${TMPDIR:-/tmp}" \
	"$out/tables.md" \
	"Survivors are argued equivalent in $equiv or killed by a test; docs/testing.md."
cat "$out/table.txt"
