# lib.sh -- checks shared by the torture scripts; source it after setting
# fails=0 checks=0.  Each check prints one "ok" or "FAIL" line.
ok() { checks=$((checks + 1)); echo "ok   $1"; }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
expect() { # expect NAME WANT GOT
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: want [$2] got [$3]"; fi
}
contains() { # contains NAME FILE PATTERN
	if grep -qE -e "$3" "$2"; then ok "$1"; else
		bad "$1: no /$3/ in:"; head -c 1500 "$2"; echo; fi
}
json_num() { # json_num FILE FIELD
	sed -n "s/^ *\"$2\": \([0-9.]*\),*$/\1/p" "$1"
}
