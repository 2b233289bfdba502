# bench/results.sh -- the generated results pages (docs/results/NAME.md),
# sourced by the scripts that measure (plain POSIX sh; no tool to install).
#
# Calling sequence, in a script run from the repository root:
#
#   . bench/results.sh
#   results_begin "$0" "$@"         # the command, the date, the load, the commit
#   results_env ROUNDS DUR          # the settings it read from the environment
#   ... measure; write markdown tables to a file ...
#   results_write NAME SECTION "Page title" DATA_DIR TABLES.md [NOTE]
#
# A page holds one section per script that writes to it (bench/shim-ab.sh and
# bench/shim-overhead.sh share docs/results/shim.md), each between markers;
# results_write replaces its own section (or appends it) and leaves the others
# as they are, so rerunning a script replaces what that script wrote.  Each
# section opens with a table of the facts a figure needs to be read: the exact
# command, the date (UTC) and how long it took, the commit ("+dirty" when the
# tree differs from it, results pages aside), the machine (CPUs and their
# model, memory, kernel), the file system and device of the directory the data
# went to, and the load average at the start and the end (the machines this
# runs on are shared: a figure measured at load 6 on two cores says little on
# its own, a ratio against a peer measured in the same round says more).
# Pictures go beside the page (results_svg); the section links them.
#
# tests/docs.sh checks that every page's commands name a script in the tree.

# RESULTS_DIR: where the pages go (default docs/results, from the repository
# root; a script run from elsewhere sets it before sourcing this file).
RESULTS_DIR=${RESULTS_DIR:-docs/results}

# results_begin COMMAND ARGS... -- remember the command line, the start and
# the load average now; the commit is read here, before anything is written
results_begin() {
	results_cmd=$1
	# as a reader would type it: "sh X" for a script without its x bit
	[ -f "$1" ] && [ ! -x "$1" ] && results_cmd="sh $1"
	shift
	for results_arg in "$@"; do
		case $results_arg in
		*[!A-Za-z0-9_./:,=+@%-]*|'') results_cmd="$results_cmd '$results_arg'" ;;
		*) results_cmd="$results_cmd $results_arg" ;;
		esac
	done
	# paths from the repository root, however the script was called
	results_top=$(git -C "$(dirname "$RESULTS_DIR")" rev-parse --show-toplevel 2>/dev/null)
	[ -z "$results_top" ] ||
		results_cmd=$(printf '%s\n' "$results_cmd" | sed "s|$results_top/||g; s| \./| |g; s|^\./||")
	results_env=""
	results_t0=$(date +%s)
	results_date=$(date -u '+%Y-%m-%d %H:%M UTC')
	results_load0=$(cut -d ' ' -f 1-3 /proc/loadavg)
	results_git="git -C $(dirname "$RESULTS_DIR")"
	results_commit=$($results_git rev-parse --short HEAD 2>/dev/null || echo unknown)
	# a rerun in the same tree must not call itself dirty for the pages the
	# last run wrote
	if [ -n "$($results_git status --porcelain -- ':(top)' \
		':(top,exclude)docs/results' ':(top,exclude)bench/results' 2>/dev/null)" ]; then
		results_commit="$results_commit+dirty"
	fi
	results_svgs=""
}

# results_env NAME... -- put these variables (those that are set) in front of
# the recorded command, as the script read them: ROUNDS=1 DUR=2 bash ...
results_env() {
	for results_var in "$@"; do
		eval "results_val=\${$results_var-}"
		eval "results_set=\${$results_var+set}"
		[ "$results_set" = set ] || continue
		case $results_val in
		*[!A-Za-z0-9_./:,=+@%-]*|'') results_env="$results_env$results_var='$results_val' " ;;
		*) results_env="$results_env$results_var=$results_val " ;;
		esac
	done
}

# results_machine DATA_DIR -- the machine's facts, one table row each
results_machine() {
	results_model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
	results_mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	# (a file system mounted twice over the same point is listed twice)
	results_fs=$(findmnt -no FSTYPE,SOURCE -T "$1" 2>/dev/null | awk 'NR == 1 { print $1 " on " $2 }')
	[ -n "$results_fs" ] ||
		results_fs=$(df -PT "$1" 2>/dev/null | awk 'NR == 2 { print $2 " on " $1 }')
	echo "| machine | $(nproc) CPUs (${results_model:-model unknown}), $results_mem memory, Linux $(uname -r) |"
	echo "| data directory | \`$1\`: ${results_fs:-unknown} |"
}

# results_svg SOURCE NAME.svg [ALT] -- copy a picture beside the page and
# link it from the section results_write writes next
results_svg() {
	mkdir -p "$RESULTS_DIR"
	cp "$1" "$RESULTS_DIR/$2"
	results_svgs="$results_svgs![${3:-$2}]($2)
"
}

# results_section SECTION DATA_DIR TABLES [NOTE] -- the section's text
results_section() {
	echo "<!-- results:begin $1 (generated; rerunning the command replaces this section) -->"
	echo "## $1"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| command | \`$results_env$results_cmd\` |"
	echo "| date | $results_date, $(( $(date +%s) - results_t0 )) s |"
	echo "| commit | $results_commit |"
	results_machine "$2"
	echo "| load average (1, 5, 15 min) | $results_load0 at the start, $(cut -d ' ' -f 1-3 /proc/loadavg) at the end |"
	echo
	echo "${4:-The machine was shared with other builds and tests while this ran: absolute figures are noisy; ratios against a peer measured in the same round are the figures to read.}"
	echo
	[ -z "$results_svgs" ] || printf '%s\n' "$results_svgs"
	cat "$3"
	echo
	echo "<!-- results:end $1 -->"
}

# results_write NAME SECTION TITLE DATA_DIR TABLES [NOTE] -- write (or
# replace) SECTION of $RESULTS_DIR/NAME.md; the page is made if missing
results_write() {
	results_page=$RESULTS_DIR/$1.md
	results_tmp=$(mktemp)
	mkdir -p "$RESULTS_DIR"
	results_section "$2" "$4" "$5" "${6:-}" >"$results_tmp.section"
	if [ ! -f "$results_page" ]; then
		printf '# %s\n\nGenerated: each section is written by the command it names, and rerunning that\ncommand replaces it.\n\n' "$3" >"$results_page"
	fi
	awk -v name="$2" -v gen="$results_tmp.section" '
		function emit(   l) { while ((getline l < gen) > 0) print l; done = 1 }
		$0 ~ /^<!-- results:begin / && $3 == name { emit(); skip = 1; next }
		skip && $0 ~ /^<!-- results:end / { skip = 0; next }
		!skip { print }
		END { if (!done) { print ""; emit() } }
	' "$results_page" | cat -s >"$results_tmp"
	cp "$results_tmp" "$results_page"
	rm -f "$results_tmp" "$results_tmp.section"
	echo "results: wrote section \"$2\" of $results_page" >&2
}
