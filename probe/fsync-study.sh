#!/bin/sh
# fsync-study.sh [DIR [SECONDS [OUT]]] -- the figures of docs/results/fsync-probe.md
# (docs/fsync-probe.md explains them).
#
# Runs fsync-probe for SECONDS (default 3) in every mode and layout with
# 4 KiB writes on a file in DIR (default: the current directory; give the
# mount point of the device you study), then a size sweep, then the fio
# cross-check: fsync-probe --mode fdatasync against fio --fdatasync=1 with the
# same layout, interleaved over ROUNDS rounds (default 5; shared machines are
# noisy), the median of each compared.  Prints markdown tables; keeps every
# JSONL file and SVG plot in OUT (default ./fsync-study-out).  The tables and
# the fdatasync plots also go to docs/results/fsync-probe.md and beside it
# (bench/results.sh: with the command, the machine and the commit; a rerun
# replaces them); RESULTS_DIR=none leaves docs/ alone.
#
# FSYNC_PROBE=path/to/fsync-probe overrides the binary (default build/).
# Needs about 2 * 64 MiB free in DIR.
set -u
RESULTS_DIR=${RESULTS_DIR:-$(dirname "$0")/../docs/results}
. "$(dirname "$0")/../bench/results.sh"
results_begin "$0" "$@"
results_env ROUNDS FSYNC_PROBE
DIR=${1:-.}
SECS=${2:-3}
OUT=${3:-./fsync-study-out}
P=${FSYNC_PROBE:-build/fsync-probe}
FILESIZE=64M
ROUNDS=${ROUNDS:-5}
[ -x "$P" ] || { echo "fsync-study: no $P (make it, or set FSYNC_PROBE)" >&2; exit 2; }
[ -d "$DIR" ] && [ -w "$DIR" ] || { echo "fsync-study: cannot write in $DIR" >&2; exit 2; }
mkdir -p "$OUT" || exit 2
F=$DIR/fsync-study.$$.dat
trap 'rm -f "$F"' EXIT INT TERM

# field NAME JSONL -- a value from the summary line
field() {
	grep '"type":"summary"' "$2" | sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" | tr -d '"'
}
# us -> "412 us" / "3.1 ms"
human() {
	awk -v u="$1" 'BEGIN { if (u == "" || u == "null") print "-";
		else if (u < 1000) printf "%.0f us\n", u;
		else if (u < 1000000) printf "%.1f ms\n", u / 1000;
		else printf "%.2f s\n", u / 1000000 }'
}
# the middle value of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# probe NAME ARGS... -- one fsync-probe run into $OUT/NAME.{jsonl,svg,txt}
probe() {
	name=$1
	shift
	rm -f "$F"
	"$P" --quiet --duration "${SECS}s" --file-size $FILESIZE "$@" \
		--json "$OUT/$name.jsonl" --svg "$OUT/$name.svg" "$F" \
		>"$OUT/$name.txt" 2>&1
}

{
	echo "## fsync-probe on $(cd "$DIR" && pwd), $(date -u +%Y-%m-%dT%H:%MZ)"
	echo
	"$P" --quiet --duration 200ms --file-size 1M "$F" 2>/dev/null | sed -n 's/^device: \(.*\); kernel \(.*\)/Device: \1; kernel \2./p'
	rm -f "$F"
	echo
	echo "4 KiB writes, closed loop, ${SECS} s each; latency is write + sync."
	echo
	echo "| mode | layout | writes/s | p50 | p99 | p99.9 | max | verdict |"
	echo "|---|---|---:|---:|---:|---:|---:|---|"
	for mode in fsync fdatasync dsync direct sfr none; do
		for layout in append prealloc overwrite; do
			probe "$mode-$layout" --mode $mode --layout $layout
			rc=$?
			j=$OUT/$mode-$layout.jsonl
			if [ $rc -ne 0 ] && ! grep -q '"type":"summary"' "$j" 2>/dev/null; then
				why=$(sed -n 's/^fsync-probe: //p' "$OUT/$mode-$layout.txt" | head -n 1)
				echo "| $mode | $layout | - | - | - | - | - | did not run: $why |"
				continue
			fi
			ops=$(field ops_per_s "$j")
			verdict=$(sed -n 's/^verdict: \([A-Za-z ]*\):.*/\1/p' "$OUT/$mode-$layout.txt" | head -n 1)
			printf '| %s | %s | %.0f | %s | %s | %s | %s | %s |\n' "$mode" "$layout" \
				"$ops" "$(human "$(field p50_us "$j")")" \
				"$(human "$(field p99_us "$j")")" "$(human "$(field p999_us "$j")")" \
				"$(human "$(field max_us "$j")")" "$verdict"
		done
	done

	echo
	echo "Write size sweep, fdatasync, overwrite layout:"
	echo
	echo "| size | writes/s | MB/s | p50 | p99 | p99.9 |"
	echo "|---:|---:|---:|---:|---:|---:|"
	for size in 512 4k 64k 1M; do
		probe "size-$size" --mode fdatasync --layout overwrite --size $size
		j=$OUT/size-$size.jsonl
		printf '| %s | %.0f | %.1f | %s | %s | %s |\n' "$size" "$(field ops_per_s "$j")" \
			"$(field mb_per_s "$j")" "$(human "$(field p50_us "$j")")" \
			"$(human "$(field p99_us "$j")")" "$(human "$(field p999_us "$j")")"
	done

	# fio_run LAYOUT -- fio --fdatasync=1 writes/s on a file prepared like ours
	fio_run() {
		rm -f "$F"
		case $1 in
		append) : >"$F"; extra="--fallocate=none --file_append=1" ;;
		prealloc) extra="--fallocate=native" ;;
		overwrite) # written and synced first, with non-zero bytes as ours are
			tr '\000' '\132' </dev/zero | dd of="$F" bs=1M count=64 \
				iflag=fullblock conv=fsync 2>/dev/null
			extra="--fallocate=none" ;;
		esac
		# shellcheck disable=SC2086
		fio --name=cross --filename="$F" --rw=write --bs=4k --size=$FILESIZE \
			--ioengine=sync --fdatasync=1 --runtime="$SECS" --time_based \
			$extra --minimal 2>/dev/null | awk -F';' '{ printf "%.0f\n", $49 }'
	}

	if command -v fio >/dev/null 2>&1; then
		echo
		echo "Cross-check: fsync-probe --mode fdatasync against fio --rw=write --bs=4k"
		echo "--ioengine=sync --fdatasync=1 on the same layout, alternating, $ROUNDS rounds of"
		echo "${SECS} s each; medians:"
		echo
		echo "| layout | fsync-probe writes/s | fio writes/s | ratio |"
		echo "|---|---:|---:|---:|"
		for layout in append prealloc overwrite; do
			: >"$OUT/cross-$layout.probe"
			: >"$OUT/cross-$layout.fio"
			for round in $(seq "$ROUNDS"); do
				probe "cross-$layout-$round" --mode fdatasync --layout $layout
				field ops_per_s "$OUT/cross-$layout-$round.jsonl" >>"$OUT/cross-$layout.probe"
				fio_run $layout >>"$OUT/cross-$layout.fio"
			done
			a=$(median <"$OUT/cross-$layout.probe")
			b=$(median <"$OUT/cross-$layout.fio")
			printf '| %s | %.0f | %s | %s |\n' $layout "$a" "$b" \
				"$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
		done
	else
		echo
		echo "(fio not installed: no cross-check)"
	fi
	echo
	echo "Raw JSONL, SVG plots and plain-words summaries: $OUT/"
} | tee "$OUT/study.md"
[ "$RESULTS_DIR" = none ] && exit 0
for layout in append prealloc overwrite; do
	[ -f "$OUT/fdatasync-$layout.svg" ] && results_svg "$OUT/fdatasync-$layout.svg" \
		"fsync-probe-fdatasync-$layout.svg" \
		"fdatasync, $layout layout: latency percentiles and writes per second, second by second"
done
# the page has its own title and the command: the study's heading goes
sed '1,2d' "$OUT/study.md" >"$OUT/section.md"
results_write fsync-probe fsync-study "fsync-probe: what this machine's disk does with synced writes" \
	"$DIR" "$OUT/section.md"
