#!/bin/sh
# floors.sh [BUILD] -- the folders keep to their floors (README, "Layout"):
# a folder uses only its own floor and the ones below it, never a floor
# above, and never a pair on the NEVER list even on its own floor.  Every
# '#include "x.h"' of every .c and .h is resolved to the folder that holds
# x.h (beside the including file first, then the top-level folders, as the
# Makefile's -I list does), and each one that breaks the rule fails with
# FILE:LINE.  A folder missing from the table, or an include that resolves
# to no file or to more than one, fails too: the check cannot judge it.
#
#   floors.sh [BUILD]     first shows on made-up trees that a violation is
#                         caught, then checks this tree (BUILD is unused)
#   floors.sh --root DIR  checks the tree at DIR only
set -u

# folder floor
FLOORS='base 0
recovery 1
faultsim 1
engine 2
shim 2
supervisor 2
torture 3
http 3
tools 3
probe 3
bench 3
targets 3
tests 4'
# Tests may include anything: floor 4 is above every other.

# from to  -- never, whatever the floors say (shared design, "Layout")
NEVER='engine faultsim
engine shim
engine torture
engine http
engine bench
shim engine
supervisor engine
recovery engine
faultsim engine
http faultsim
http torture'

# check_tree ROOT -- prints a FAIL line per violation; exit 1 if any
check_tree() {
	root=$(cd "$1" && pwd -P) || return 1
	never=" $(printf '%s\n' "$NEVER" | tr ' ' '>' | tr '\n' ' ') "
	folders=$(printf '%s\n' "$FLOORS" | while read -r d fl; do
		echo "$d"; done | tr '\n' ' ')
	eval "$(printf '%s\n' "$FLOORS" |
		while read -r d fl; do echo "floor_$d=$fl"; done)"
	bad=0 files=0 incs=0
	list=$(mktemp)
	find "$root" -type d \( -name '.git' -o -name 'build*' -o -name docs \) \
		-prune -o \( -name '*.c' -o -name '*.h' \) -type f -print |
		sort >"$list"
	while read -r f; do
		rel=${f#"$root"/}
		top=${rel%%/*}
		files=$((files + 1))
		case "$top" in
		*[!a-z0-9_]*|"$rel") top_floor= ;;
		*) eval "top_floor=\${floor_$top-}" ;;
		esac
		if [ -z "$top_floor" ]; then
			echo "FAIL $rel: folder '$top' has no floor (add it to the table in tests/floors.sh)"
			bad=$((bad + 1))
			continue
		fi
		grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
		sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2/' >"$list.inc"
		while read -r line inc; do
			incs=$((incs + 1))
			to=$(resolve "$root" "${f%/*}" "$inc") || {
				echo "FAIL $rel:$line: \"$inc\" $to"
				bad=$((bad + 1))
				continue
			}
			to_top=${to%%/*}
			[ "$to_top" = "$top" ] && continue
			to_floor=
			case "$to_top" in
			*[!a-z0-9_]*) ;;
			*) eval "to_floor=\${floor_$to_top-}" ;;
			esac
			if [ -z "$to_floor" ]; then
				echo "FAIL $rel:$line: includes $to, in '$to_top', which has no floor"
				bad=$((bad + 1))
			elif [ "$to_floor" -gt "$top_floor" ]; then
				echo "FAIL $rel:$line: includes $to: $to_top/ (floor $to_floor) is above $top/ (floor $top_floor)"
				bad=$((bad + 1))
			else
				case "$never" in *" $top>$to_top "*)
					echo "FAIL $rel:$line: includes $to: $top/ never uses $to_top/"
					bad=$((bad + 1)) ;;
				esac
			fi
		done <"$list.inc"
	done <"$list"
	rm -f "$list" "$list.inc"
	echo "floors: $files files, $incs includes, $bad violations ($folders)"
	[ "$bad" -eq 0 ]
}

# resolve ROOT DIR INC -- prints the path (relative to ROOT) of the header
# INC included from a file in DIR, or why it cannot, and fails
resolve() {
	if [ -f "$2/$3" ]; then
		p=$(realpath -m --relative-to="$1" "$2/$3")
		case "$p" in ../*) echo "lies outside the tree"; return 1 ;; esac
		echo "$p"
		return 0
	fi
	found=
	for d in $folders; do
		[ -f "$1/$d/$3" ] && found="$found $d/$3"
	done
	case "$found" in
	"") echo "is in no folder"; return 1 ;;
	" "*" "*) echo "is in more than one folder:$found"; return 1 ;;
	esac
	echo "${found# }"
}

if [ "${1-}" = "--root" ]; then
	check_tree "$2"
	exit
fi

# ---- the check catches what it targets: made-up trees --------------------
self=$(cd "$(dirname "$0")" && pwd -P)/floors.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
no() { echo "FAIL $1"; fails=$((fails + 1)); }
mk() { # mk FILE LINE... -- a file of the made-up tree, one line per argument
	f=$1
	shift
	mkdir -p "$(dirname "$f")"
	printf '%s\n' "$@" >"$f"
}
mk "$T/good/base/fmt.h" '#include <stdint.h>'
mk "$T/good/engine/eng.h" '#include "fmt.h"'
mk "$T/good/engine/eng.c" '#include "eng.h"' '#include "fmt.h"'
mk "$T/good/recovery/rec.c" '#include "fmt.h"'
mk "$T/good/tests/t.c" '#include "eng.h"' '#include "../base/fmt.h"'
cp -R "$T/good" "$T/up"
mk "$T/up/recovery/rec.c" '#include "fmt.h"' '' '#include "eng.h"'
cp -R "$T/good" "$T/never"
mk "$T/never/shim/shim.c" '#include <stdio.h>' '#include "eng.h"'
cp -R "$T/good" "$T/unknown"
mk "$T/unknown/engine/eng.c" '#include "nowhere.h"'
mk "$T/unknown/attic/old.c" '#include "fmt.h"'

sh "$self" --root "$T/good" >"$T/out" 2>&1 &&
	ok "a tree that keeps its floors passes" ||
	{ no "a tree that keeps its floors fails:"; cat "$T/out"; }
expect_caught() { # expect_caught TREE WHAT PATTERN...
	tree=$1 what=$2
	shift 2
	if sh "$self" --root "$T/$tree" >"$T/out" 2>&1; then
		no "$what: not caught"; cat "$T/out"; return
	fi
	for p in "$@"; do
		grep -q -- "$p" "$T/out" || { no "$what: no '$p' in:"; cat "$T/out"; return; }
	done
	ok "$what: caught"
}
expect_caught up "recovery including an engine header" \
	'^FAIL recovery/rec.c:3: includes engine/eng.h: engine/ (floor 2) is above recovery/ (floor 1)$'
expect_caught never "the shim including an engine header (same floor)" \
	'^FAIL shim/shim.c:2: includes engine/eng.h: shim/ never uses engine/$'
expect_caught unknown "an unknown header and a folder with no floor" \
	'^FAIL engine/eng.c:1: "nowhere.h" is in no folder$' \
	"^FAIL attic/old.c: folder 'attic' has no floor"

# ---- this tree ------------------------------------------------------------
check_tree "$(dirname "$self")/.." && ok "this tree keeps its floors" ||
	no "this tree breaks its floors (above)"
echo "floors.sh: $fails failed"
[ "$fails" -eq 0 ]
