#!/bin/sh
# docs.sh BUILD -- the documents against the tree they describe:
#
#   flags     every --flag a program's --help prints is named in its reference
#             pages, and every --flag those pages show in backticks or in a
#             code block, for that program, is one its --help prints
#   results   every generated page's command (docs/results/*.md, "| command |"
#             rows, bench/results.sh) names a script or make target of the tree
#   map       every file under docs/ is named by README.md (a page of
#             docs/results/ by the folder; a picture by a page that shows it)
#   readme    README.md's first two commands are `make torture` and `make test`
#   links     every relative link [text](path) and ![alt](path) in README.md
#             and docs/**/*.md names a file or folder that exists, and its
#             #anchor (or a bare #anchor) a heading of the page it points to
#             (GitHub's slugs: lower case, punctuation dropped, spaces to -)
#   quick     every quick start runs: the first code block under a heading
#             "Quick start", its "$ " lines if it has any (a transcript: the
#             other lines are what they print; each command must exit 0) or
#             else the whole block (bash -e), in a fresh directory of links
#             to the tree with ./build -> BUILD and BUILD on PATH, each block
#             for at most KEEL_DOCS_QUICK_LIMIT seconds (default 60); its
#             `make` lines are left out (the tree is built).
#             A block that needs root, a network or minutes says so on the
#             line above it, and is skipped with that reason:
#               <!-- docs.sh: not run: needs root (it mounts a loop device) -->
#
# Each check is a function over the files it is given, and each is run once
# more against a planted error (a flag the program lacks, a missing script,
# an unmapped page, a reordered README, a failing quick start) to show it fails.
set -u
build=${1:?usage: docs.sh BUILD}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
root=$(pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
skip() { echo "skip $1"; }

# ---- which page documents which program ----------------------------------
# PAGE PROGRAM...: the programs whose flags a page's bare `--flag`s are (a
# command in the page names its own program).  bench-engine is built by
# `make bench` only: where it is missing its pages are skipped.
PAGES='
torture.md torture
faults.md torture
targets.md torture
campaigns.md torture
claims.md torture
engine.md keel
recovery.md keel
http.md keel-serve
fsync-probe.md fsync-probe
bench.md loadgen bench-engine
testing.md mutate
'
PROGRAMS='torture keel keel-serve fsync-probe loadgen bench-engine mutate'

# Flags of other programs that pages show bare, in backticks (a command of
# theirs is left out already): FLAG REASON
EXCEPTIONS='
--fallocate fio option, in the cross-check probe/fsync-study.sh makes
--file_append fio option, in the same cross-check
--fdatasync fio option, in the same cross-check
--h1 h2load option (HTTP/1.1 over the same TLS client), in bench/http/h2.sh
--with-http_v2_module how Debian builds nginx (its configure flag)
--http2-prior-knowledge curl option (h2c without the upgrade)
--group GNU parallel option, in the campaign recipes
--joblog GNU parallel option, in the campaign recipes
--resume GNU parallel option, in the campaign recipes
--resume-failed GNU parallel option, in the campaign recipes
--sshlogin GNU parallel option, in the campaign recipes
--array Slurm sbatch option, in the campaign recipes
--no-doc bench/run-engine.sh option (the script, not bench-engine)
--section bench/run-engine.sh option (the script, not bench-engine)
--toggle-collect valgrind option (callgrind), in the scan instruction counts of bench.md
--quick bench/run-engine.sh passes it on to bench-engine
--unsafe-no-fsync etcd option, in the etcd example (tests/targets/etcd.sh)
--init tests/targets/etcd.sh option, in the etcd example
'

# program_path NAME -- the binary, or nothing when it is not built
program_path() {
	for p in "$build/$1" "$root/build-bench/$1" "$root/tools/$1"; do
		[ -x "$p" ] && { echo "$p"; return; }
	done
}

# help_flags NAME -- the --flags the program's --help prints (keel: its
# commands' --help too), one a line
help_flags() {
	p=$(program_path "$1")
	{
		"$p" --help 2>&1
		[ "$1" = keel ] && for c in $("$p" --help 2>&1 | awk '$1 == "keel" && $2 ~ /^[a-z]+$/ { print $2 }'); do
			"$p" "$c" --help 2>&1
		done
		[ "$1" = mutate ] && for c in list show apply run merge table; do
			"$p" "$c" --help 2>&1
		done
	} | grep -oE -- '--[a-z][a-z0-9_-]*[a-z0-9]' | sort -u
}

# doc_flags PAGE -- "PROGRAM FLAG LINE" for every --flag the page shows in
# backticks or a code block; PROGRAM is "-" for a bare flag (the page's
# programs), else the program the command runs.  Commands of other programs
# (fio, make, nginx ...) are left out, and so are quoted arguments with
# spaces in them (--workload 'prog --its-flag').
doc_flags() {
	awk -v progs="$PROGRAMS" '
	BEGIN { n = split(progs, p, " "); for (i = 1; i <= n; i++) known[p[i]] = 1 }
	function unit(s, line,    cmds, nc, c, w, nw, i, first, prog, f) {
		gsub(/"[^"]*[ \t][^"]*"|'"'"'[^'"'"']*[ \t][^'"'"']*'"'"'/, "", s)
		gsub(/["'"'"'$]/, "", s)
		nc = split(s, cmds, /\|\||&&|[|;()]/)
		for (c = 1; c <= nc; c++) {
			nw = split(cmds[c], w, /[ \t]+/)
			first = ""
			for (i = 1; i <= nw; i++) {
				if (w[i] == "" || w[i] ~ /^[A-Z_][A-Z0-9_]*=/ || w[i] ~ /^(sudo|env|time|exec|nohup|#|>)$/) continue
				first = w[i]; break
			}
			if (first == "") continue
			if (first ~ /^--/) prog = "-"
			else {
				prog = first; sub(/.*\//, "", prog)
				if (!(prog in known)) continue
			}
			for (; i <= nw; i++)
				if (match(w[i], /^--[a-z][a-z0-9_-]*[a-z0-9]/))
					print prog, substr(w[i], 1, RLENGTH), line
		}
	}
	/^[ \t]*```/ { fence = !fence; acc = ""; next }
	fence {
		l = $0
		if (l ~ /\\$/) { acc = acc substr(l, 1, length(l) - 1) " "; next }
		unit(acc l, NR); acc = ""; next
	}
	{
		l = $0
		while (match(l, /`[^`]+`/)) {
			span = substr(l, RSTART + 1, RLENGTH - 2)
			l = substr(l, RSTART + RLENGTH) # before unit() moves RSTART
			unit(span, NR)
		}
	}' "$1"
}

# names_flag FLAG FILE... -- true when a file names FLAG (not a longer one)
names_flag() {
	f=$1
	shift
	grep -qE -- "$f([^a-z0-9-]|\$)" "$@" 2>/dev/null
}

# check_flags DOCS_DIR -- both directions for every mapped page in DOCS_DIR
check_flags() {
	d=$1
	before=$fails
	# each program's flags are asked for once a run and kept ($T/helps):
	# the planted checks run this again on the same programs, and mutate's
	# seven --help are seven Python starts (seconds on a busy machine)
	mkdir -p "$T/helps"
	for prog in $PROGRAMS; do
		[ -n "$(program_path "$prog")" ] || continue
		[ -f "$T/helps/$prog" ] || help_flags "$prog" >"$T/helps/$prog"
		cp "$T/helps/$prog" "$T/help.$prog"
	done
	echo "$PAGES" | while read -r page progs; do
		[ -n "$page" ] && [ -f "$d/$page" ] || continue
		missing=""
		for prog in $progs; do
			[ -n "$(program_path "$prog")" ] || missing="$missing $prog"
		done
		if [ -n "$missing" ]; then
			skip "$page: not built:$missing"
			continue
		fi
		for prog in $progs; do cat "$T/help.$prog"; done | sort -u >"$T/page-help"
		doc_flags "$d/$page" | sort -u -k1,2 | while read -r prog flag line; do
			[ "$flag" = --help ] && continue # every program takes it
			if [ "$prog" = - ]; then
				grep -qxF -- "$flag" "$T/page-help" && continue
				# a page may cite another program of the kit
				# (engine.md: the torture runs behind a claim)
				grep -qxF -- "$flag" "$T"/help.* && continue
				echo "$EXCEPTIONS" | grep -q "^$flag " && continue
				echo "FAIL $page:$line: \`$flag\` is not a flag of$(printf ' %s' $progs) (--help), nor of another program here"
			elif [ -f "$T/help.$prog" ]; then
				grep -qxF -- "$flag" "$T/help.$prog" ||
					echo "FAIL $page:$line: \`$prog $flag\`: $prog has no $flag (--help)"
			fi
		done
	done >"$T/flag-fails"
	# the other way: every flag of a program in one of its pages
	for prog in $PROGRAMS; do
		[ -f "$T/help.$prog" ] || continue
		pages=$(echo "$PAGES" | awk -v p="$prog" -v d="$d" '{ for (i = 2; i <= NF; i++) if ($i == p) printf "%s/%s ", d, $1 }')
		present=""
		for pg in $pages; do [ -f "$pg" ] && present="$present $pg"; done
		if [ -z "$present" ]; then
			echo "FAIL $prog: none of its pages ($pages) exists" >>"$T/flag-fails"
			continue
		fi
		while read -r flag; do
			[ "$flag" = --help ] && continue
			# shellcheck disable=SC2086 # a list of pages
			names_flag "$flag" $present ||
				echo "FAIL $prog $flag (--help) is named in none of:$(printf '%s\n' "$present" | sed "s|$d/||g")" >>"$T/flag-fails"
		done <"$T/help.$prog"
	done
	rm -f "$T"/help.*
	cat "$T/flag-fails"
	fails=$((fails + $(grep -c '^FAIL' "$T/flag-fails")))
	[ "$fails" = "$before" ]
}

# check_results DOCS_DIR -- every results page's commands exist in the tree
check_results() {
	before=$fails
	for page in "$1"/results/*.md; do
		[ -f "$page" ] || continue
		grep -E '^\| *command *\| *`' "$page" | sed 's/^[^`]*`//; s/`.*//' >"$T/cmds"
		if [ ! -s "$T/cmds" ]; then
			bad "${page#"$root"/}: no \"| command |\" row (a page here is written by a script: bench/results.sh)"
			continue
		fi
		while read -r cmd; do
			# the first word that is not a setting or an interpreter
			# (a quoted value is a setting's: TESTS='get64 put')
			words=$(printf '%s\n' "$cmd" | sed "s/'[^']*'//g; s/\"[^\"]*\"//g")
			set -f
			# shellcheck disable=SC2086 # split the command into words
			set -- $words
			set +f
			while [ $# -gt 0 ]; do
				case $1 in *=*|sh|bash|env|nice|time|-n|[0-9]*) shift ;; *) break ;; esac
			done
			script=${1:-}
			case $script in
			make)
				shift
				while [ $# -gt 0 ]; do case $1 in -*|*=*) shift ;; *) break ;; esac; done
				if [ $# -gt 0 ] && grep -qE "^${1}:" "$root/Makefile"; then
					ok "${page#"$root"/}: make $1"
				else
					bad "${page#"$root"/}: \`$cmd\`: no such make target"
				fi ;;
			build/*|'$B/'*)
				if grep -qF "(B)/${script#*/}" "$root/Makefile"; then
					ok "${page#"$root"/}: $script"
				else
					bad "${page#"$root"/}: \`$cmd\`: the Makefile builds no $script"
				fi ;;
			*)
				if [ -n "$script" ] && [ -f "$root/${script#./}" ]; then
					ok "${page#"$root"/}: $script"
				else
					bad "${page#"$root"/}: \`$cmd\`: no script ${script:-(none)} in the tree"
				fi ;;
			esac
		done <"$T/cmds"
	done
	[ "$fails" = "$before" ]
}

# check_map README DOCS_DIR -- every file under DOCS_DIR named by README
check_map() {
	before=$fails
	readme=$1 d=$2
	(cd "$d/.." && find docs -type f | sort) >"$T/docfiles"
	while read -r f; do
		case $f in
		docs/results/*.md)
			grep -qF "$f" "$readme" || grep -qF 'docs/results' "$readme" ||
				bad "$f: README.md names neither it nor docs/results/" ;;
		*.md)
			grep -qF "$f" "$readme" || bad "$f: not in README.md's map" ;;
		*)
			grep -qF "$f" "$readme" ||
				grep -rqF --include='*.md' "$(basename "$f")" "$d" ||
				bad "$f: neither README.md nor a page under docs/ links it" ;;
		esac
	done <"$T/docfiles"
	[ "$fails" = "$before" ]
}

# md_links PAGE -- "LINE<TAB>TARGET" for every link outside code blocks and
# code spans whose target has no scheme (http:, mailto: ...)
md_links() {
	awk '
	/^[ \t]*```/ { fence = !fence; next }
	fence { next }
	{
		l = $0
		gsub(/`[^`]*`/, "", l)
		while (match(l, /\]\([^)]*\)/)) {
			t = substr(l, RSTART + 2, RLENGTH - 3)
			l = substr(l, RSTART + RLENGTH)
			sub(/[ \t].*/, "", t) # a title after the path
			if (t != "" && t !~ /^[a-zA-Z][a-zA-Z0-9+.-]*:/) printf "%d\t%s\n", NR, t
		}
	}' "$1"
}

# md_anchors PAGE -- the #anchors of its headings, one a line, as GitHub
# makes them (lower case; ASCII punctuation but - and _ dropped; spaces to
# -; a repeated one gets -1, -2 ...)
md_anchors() {
	awk '
	/^[ \t]*```/ { fence = !fence; next }
	fence || !/^#+[ \t]/ { next }
	{
		h = $0
		sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#*[ \t]*$/, "", h)
		h = tolower(h)
		gsub(/[]!-,.\/:-@[\\^`{-~]/, "", h)
		gsub(/ /, "-", h)
		a = (h in seen) ? h "-" seen[h] : h
		seen[h]++
		print a
	}' "$1"
}

# check_links PAGE... -- every relative link of the pages resolves
check_links() {
	before=$fails
	for page in "$@"; do
		dir=$(dirname "$page")
		md_links "$page" >"$T/links"
		while IFS="$(printf '\t')" read -r line target; do
			path=${target%%#*}
			anchor=""
			case $target in *'#'*) anchor=${target#*#} ;; esac
			if [ -z "$path" ]; then dest=$page; else dest=$dir/$path; fi
			if [ ! -e "$dest" ]; then
				bad "${page#"$root"/}:$line: link to $target: no such file"
			elif [ -n "$anchor" ] && [ -f "$dest" ] && ! md_anchors "$dest" | grep -qxF -- "$anchor"; then
				bad "${page#"$root"/}:$line: link to $target: no heading #$anchor in ${dest#"$root"/}"
			fi
		done <"$T/links"
	done
	[ "$fails" = "$before" ]
}

# check_readme README -- the first two commands of its first code block
check_readme() {
	awk '/^```/ { if (inside) exit; inside = 1; next }
	     inside && NF { sub(/[ \t]*#.*/, ""); print; if (++n == 2) exit }' "$1" >"$T/first"
	if [ "$(sed -n 1p "$T/first")" = "make torture" ] &&
	   [ "$(sed -n 2p "$T/first")" = "make test" ]; then
		ok "$(basename "$1"): opens with make torture, make test"
	else
		bad "$(basename "$1"): its first commands are [$(paste -sd '|' "$T/first")], not make torture, make test"
		return 1
	fi
}

# quick_blocks PAGE -- the page's quick starts: "N<TAB>LINE<TAB>SKIP-REASON"
# a line in $T/blocks, and block N as a bash script in $T/block.N.  A
# transcript's "$ " lines (and the lines that continue one ending in "\")
# each must exit 0, as a reader typing them would see; a plain block runs
# under bash -e.  `make` lines are left out: the tree is built already
# (make test builds it first), and the test must not rebuild it.
quick_blocks() {
	rm -f "$T"/block.*
	awk -v out="$T/block." '
	function take(l) {
		if (l ~ /^[ \t]*make([ \t]|$)/) { body = body "# (not run: " l ")\n"; return }
		body = body l "\n"
	}
	/^#+ .*[Qq]uick start/ { want = 1; reason = ""; next }
	/^#/ { want = 0 }
	want && /<!-- docs\.sh: not run:/ {
		reason = $0; sub(/.*not run: */, "", reason); sub(/ *-->.*/, "", reason)
	}
	want && /^```/ && !inside { inside = 1; n++; start = NR; body = ""; prompts = 0; cont = 0; next }
	inside && /^```/ {
		inside = 0; want = 0
		printf "%d\t%d\t%s\n", n, start, reason
		printf "%s", (prompts ? "" : "set -e\n") body > (out n)
		close(out n)
		next
	}
	inside {
		if ($0 ~ /^\$ /) {
			if (!prompts) body = ""
			prompts = 1; line = substr($0, 3)
		} else if (prompts && cont) line = $0
		else if (!prompts) { take($0); next }
		else next
		cont = line ~ /\\$/
		if (cont || line ~ /&[ \t]*$/ || line ~ /^[ \t]*make([ \t]|$)/) take(line)
		else take(line " || { echo \"quick start: exit $? from: " gensub_(line) "\" >&2; exit 1; }")
	}
	# the line, safe inside double quotes
	function gensub_(l) { gsub(/[\\"$`]/, "", l); return l }' "$1" >"$T/blocks"
}

# check_quick PAGE... -- run every quick start of the pages, each in a fresh
# directory holding links to the tree (tools/, README.md ...) and build ->
# BUILD, with BUILD on PATH; what a block starts in the background is
# killed when it ends
check_quick() {
	before=$fails
	limit=${KEEL_DOCS_QUICK_LIMIT:-60}
	for page in "$@"; do
		quick_blocks "$page"
		while IFS="$(printf '\t')" read -r n line reason; do
			name="$(basename "$page"):$line"
			if [ -n "$reason" ]; then
				skip "$name quick start: $reason"
				continue
			fi
			rm -rf "$T/run" && mkdir "$T/run"
			for e in "$root"/*; do
				[ "$(basename "$e")" = build ] || ln -s "$e" "$T/run/"
			done
			ln -s "$build" "$T/run/build"
			{
				echo "trap 'exit 143' TERM"
				echo "trap 'rc=\$?; kill \$(jobs -p) 2>/dev/null || :; exit \$rc' EXIT"
				cat "$T/block.$n"
			} >"$T/run.sh"
			(cd "$T/run" && PATH="$build:$PATH" \
				timeout -k 5 "$limit" bash "$T/run.sh") </dev/null >"$T/out" 2>&1
			rc=$?
			if [ $rc -eq 0 ]; then
				ok "$name quick start runs$(grep -q '^# (not run: make' "$T/block.$n" && echo ' (its make lines left out)')"
			else
				bad "$name quick start: exit $rc$([ $rc -eq 124 ] && echo ", over ${limit}s"):"
				grep -v '^set -e$' "$T/block.$n" | sed 's/ || { echo "quick start: exit.*//; s/^/    /'
				tail -n 15 "$T/out"
			fi
		done <"$T/blocks"
	done
	[ "$fails" = "$before" ]
}

# ---- the tree's documents ------------------------------------------------
check_flags "$root/docs" && ok "flags: pages and --help agree"
check_results "$root/docs" && ok "results: every page's command is in the tree"
check_map "$root/README.md" "$root/docs" && ok "map: README.md names every file under docs/"
check_readme "$root/README.md"
check_links "$root/README.md" $(find "$root/docs" -name '*.md' | sort) &&
	ok "links: every relative link resolves"
check_quick "$root/README.md" "$root"/docs/*.md && ok "quick starts run"

# ---- each check against a planted error ----------------------------------
# planted DESCRIPTION PATTERN CHECK ARGS... -- CHECK must fail with a FAIL
# line that matches PATTERN (the planted error, not another); its output is
# shown only when it does not
planted() {
	planted_what=$1 pattern=$2
	shift 2
	saved=$fails
	"$@" >"$T/planted.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] && grep '^FAIL' "$T/planted.out" | grep -qE -- "$pattern"; then
		fails=$saved
		ok "planted $planted_what: caught ($(grep '^FAIL' "$T/planted.out" | grep -m 1 -E -- "$pattern" | cut -c 6-))"
	else
		fails=$saved
		bad "planted $planted_what: not caught"
		cat "$T/planted.out"
	fi
}
P=$T/planted
mkdir -p "$P/docs/results"
printf '# torture\n\n`--kill-every 50ms` and `build/torture --no-such-flag`\n' >"$P/docs/torture.md"
planted "flag torture lacks" "no-such-flag" check_flags "$P/docs"
planted "torture flag no page names" "torture --jitter .*named in none" check_flags "$P/docs"
printf '# keel-serve\n\n```\nbuild/keel-serve --db x --listen :0 --tls-cretificate c\n```\n' >"$P/docs/http.md"
rm -f "$P/docs/torture.md"
planted "misspelt keel-serve flag in a code block" "keel-serve --tls-cretificate" check_flags "$P/docs"
printf '# x\n\n| | |\n|---|---|\n| command | `ROUNDS=1 bash bench/no-such-script.sh build` |\n' >"$P/docs/results/x.md"
planted "results page whose script is gone" "no script bench/no-such-script.sh" check_results "$P/docs"
printf '# x\n\nno command row\n' >"$P/docs/results/x.md"
planted "results page with no command" "no .. command .. row" check_results "$P/docs"
printf '# keel\n\n```sh\nmake torture\nmake test\n```\n\n- `docs/http.md`\n- `docs/results/`\n' >"$P/README.md"
check_map "$P/README.md" "$P/docs" >"$T/map.out" && ok "planted map: a mapped tree passes" ||
	{ bad "planted map: a mapped tree fails"; cat "$T/map.out"; }
printf '# orphan\n' >"$P/docs/orphan.md"
planted "page README.md does not name" "orphan.md" check_map "$P/README.md" "$P/docs"
printf '# keel\n\n```sh\nmake test\nmake torture\n```\n' >"$P/README.md"
printf '# a\n\n## The `--dir` flag, and more\n\nSee [b](b.md), [here](#the---dir-flag-and-more), [it](b.md#two-words) and `[x](gone.md)`.\n' >"$P/docs/a.md"
printf '# b\n\n## Two words\n' >"$P/docs/b.md"
check_links "$P/docs/a.md" >"$T/links.out" && ok "planted links: good links pass" ||
	{ bad "planted links: good links fail"; cat "$T/links.out"; }
printf '\nAnd [gone](results/gone.md).\n' >>"$P/docs/a.md"
planted "link to a missing page" "a.md:7: link to results/gone.md" check_links "$P/docs/a.md"
printf '# a\n\n[b](b.md#three-words)\n' >"$P/docs/a.md"
planted "link to a missing heading" "no heading #three-words" check_links "$P/docs/a.md"
planted "README that opens with make test" "make test.make torture" check_readme "$P/README.md"
printf '# p\n\n## Quick start\n\n```\n$ keel put s.keel k -\n$ keel get s.keel k\nv\n$ keel no-such-command s.keel\n```\n' >"$P/quick.md"
planted "quick start with a failing command" "quick.md:5 quick start: exit" check_quick "$P/quick.md"
printf '# p\n\n## Quick start\n\n```sh\necho v | keel put s.keel k -\nkeel get s.keel k\n```\n' >"$P/quick.md"
check_quick "$P/quick.md" >"$T/quick.out" && ok "planted quick start: a good one runs" ||
	{ bad "planted quick start: a good one fails"; cat "$T/quick.out"; }

echo "docs.sh: $fails failed"
[ "$fails" -eq 0 ]
