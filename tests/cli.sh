#!/bin/sh
# cli.sh BUILD -- the keel command line: every command, its exit codes, and
# its messages for bad input.
set -u
K="$1/keel"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
check() { # check WANT_EXIT DESCRIPTION -- COMMAND...
	want=$1; what=$2; shift 3
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: $what: exit $got, want $want"; cat "$T/out" "$T/err"
		fails=$((fails + 1))
	fi
}
has() { # has FILE TEXT DESCRIPTION
	grep -q -- "$2" "$1" || { echo "FAIL: $3: '$2' not in output"; cat "$1"; fails=$((fails + 1)); }
}

D="$T/db"
check 0 "put from stdin" -- sh -c "printf 'hello' | '$K' put '$D' greeting"
has "$T/out" "1" "put prints the revision"
printf 'from a file' >"$T/val"
check 0 "put from a file" -- "$K" put "$D" filed "$T/val"
check 0 "get" -- "$K" get "$D" greeting
[ "$(cat "$T/out")" = "hello" ] || { echo "FAIL: get returned '$(cat "$T/out")'"; fails=$((fails + 1)); }
check 1 "get a missing key" -- "$K" get "$D" nope
has "$T/err" "not found" "missing key message"
check 1 "put with a wrong revision" -- sh -c "printf x | '$K' put '$D' greeting --expect 99"
has "$T/err" "conflict" "conflict message"
check 1 "put absent on an existing key" -- sh -c "printf x | '$K' put '$D' greeting --expect absent"
check 0 "put with the right revision" -- sh -c "printf bye | '$K' put '$D' greeting --expect 1"
check 2 "bad --expect" -- "$K" put "$D" greeting "$T/val" --expect banana
check 0 "ls" -- "$K" ls "$D"
[ "$(cat "$T/out")" = "$(printf 'filed\ngreeting')" ] || { echo "FAIL: ls order"; cat "$T/out"; fails=$((fails + 1)); }
check 0 "ls --prefix" -- "$K" ls "$D" --prefix gr
[ "$(cat "$T/out")" = "greeting" ] || { echo "FAIL: ls --prefix"; fails=$((fails + 1)); }
check 0 "stat" -- "$K" stat "$D"
has "$T/out" "keys        2" "stat key count"
check 0 "heads" -- "$K" heads "$D"
has "$T/out" "valid" "heads validity"
check 0 "check a clean store" -- "$K" check "$D"
has "$T/out" "0 problems" "check summary"
check 0 "del" -- "$K" del "$D" filed
check 1 "del a missing key" -- "$K" del "$D" filed
check 0 "compact" -- "$K" compact "$D"
check 0 "get after compact" -- "$K" get "$D" greeting
[ "$(cat "$T/out")" = "bye" ] || { echo "FAIL: value after compact"; fails=$((fails + 1)); }

# damage: flip a byte inside the newest value record -> check finds it
"$K" put "$D" victim "$T/val" >/dev/null
end=$("$K" stat "$D" | awk '/end_offset/ {print $2}')
off=$((end - 112 - 200))
printf '\377' | dd of="$D" bs=1 seek=$off conv=notrunc 2>/dev/null
check 1 "check or open finds damage" -- "$K" check "$D"
grep -q "offset" "$T/out" "$T/err" || { echo "FAIL: damage report has no offset"; cat "$T/out" "$T/err"; fails=$((fails + 1)); }

# usage errors
check 2 "no command" -- "$K"
check 2 "unknown command" -- "$K" frobnicate
has "$T/err" "unknown command" "unknown command message"
check 2 "missing arguments" -- "$K" get "$D"
check 2 "unknown option" -- "$K" ls "$D" --sideways
check 0 "help" -- "$K" --help
check 0 "help per command" -- "$K" check --help
has "$T/out" "Exit 0 clean" "check help text"
check 2 "a directory" -- "$K" stat "$T"
has "$T/err" "directory" "directory message"
printf 'not a store at all, just text\n' >"$T/text"
check 2 "a foreign file" -- "$K" stat "$T/text"
has "$T/err" "not a keel store" "foreign file message"
check 2 "a missing store for reading" -- "$K" get "$T/none" k
[ -e "$T/none" ] && { echo "FAIL: get created a store"; fails=$((fails + 1)); }

[ $fails -eq 0 ] && echo "cli: all checks passed"
exit $fails
