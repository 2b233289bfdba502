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

# flip FILE OFF: invert the byte at OFF, so it always changes (writing 0xff
# changed nothing when the byte already was 0xff: 1 run in 256)
flip() {
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $((255 - b)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# damage: flip a byte inside the newest value record -> check finds it
"$K" put "$D" victim "$T/val" >/dev/null
end=$("$K" stat "$D" | awk '/end_offset/ {print $2}')
off=$((end - 112 - 200))
flip "$D" "$off"
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

# only put creates a store
check 2 "compact a missing store" -- "$K" compact "$T/nosuch.keel"
has "$T/err" "no such store" "missing store message"
[ -e "$T/nosuch.keel" ] && { echo "FAIL: compact created a store"; fails=$((fails + 1)); }
check 2 "del in a missing store" -- "$K" del "$T/typo.keel" k
[ -e "$T/typo.keel" ] && { echo "FAIL: del created a store"; fails=$((fails + 1)); }
for c in ls stat heads check; do
	check 2 "$c of a missing store" -- "$K" $c "$T/none"
	[ -e "$T/none" ] && { echo "FAIL: $c created a store"; fails=$((fails + 1)); rm -f "$T/none"; }
done

# options: an unknown option or a bad value is named, exit 2
O="$T/opts.keel"
for k in a b c; do "$K" put "$O" $k "$T/val" >/dev/null; done
check 2 "an extra argument" -- "$K" put "$O" k "$T/val" extra
has "$T/err" "unexpected argument 'extra'" "extra argument named"
check 0 "ls --limit" -- "$K" ls "$O" --limit 1
[ "$(cat "$T/out")" = "a" ] || { echo "FAIL: ls --limit 1 listed $(cat "$T/out")"; fails=$((fails + 1)); }
check 0 "ls --limit=2" -- "$K" ls "$O" --limit=2
[ "$(wc -l <"$T/out")" -eq 2 ] || { echo "FAIL: ls --limit=2"; fails=$((fails + 1)); }
check 2 "a bad --limit" -- "$K" heads "$O" --limit abc
has "$T/err" "--limit abc: expected a whole number" "bad --limit named"
check 2 "an option the command does not take" -- "$K" stat "$O" -l
has "$T/err" "unknown option -l" "-l on stat named"
check 2 "an unknown short option" -- "$K" ls "$O" -x
has "$T/err" "unknown option -x" "-x named"
check 2 "a missing option value" -- "$K" ls "$O" --prefix
has "$T/err" "--prefix needs a value" "missing value named"
check 2 "a bad --expect" -- "$K" del "$O" a --expect absent
has "$T/err" "--expect absent" "bad --expect named"
check 0 "a key after --" -- "$K" put "$O" -- -dash "$T/val"
check 0 "get a key after --" -- "$K" get "$O" -- -dash
long=$(head -c 1500 /dev/zero | tr '\0' k)
check 2 "a key over the limit" -- "$K" get "$O" "$long"
has "$T/err" "(1500 bytes): keys are 1 to 1024 bytes" "long key message"
[ "$(wc -c <"$T/err")" -lt 300 ] || { echo "FAIL: the long key is echoed whole"; fails=$((fails + 1)); }
check 2 "an empty key" -- "$K" put "$O" "" "$T/val"
has "$T/err" "empty key" "empty key message"
check 0 "check wording" -- "$K" check "$O"
has "$T/out" "4 keys; [0-9]* records* (tree nodes and values stored apart)" "check says what a record is"

# damage behind a durable head: reported at the record, heads exits 1,
# salvage copies what still verifies
S="$T/salvage.keel"
i=1
while [ $i -le 6 ]; do
	head -c 3000 /dev/urandom >"$T/v$i"
	"$K" put "$S" key$i "$T/v$i" >/dev/null
	i=$((i + 1))
done
"$K" heads "$S" --limit 0 >"$T/heads"
h2=$(awk '$1 == 2 {print $2}' "$T/heads")   # commit 3's region starts after it
victim=$((h2 + 112 + 200))                  # inside key3's value record
flip "$S" "$victim"
check 1 "open of a store damaged behind a durable head" -- "$K" get "$S" key1
has "$T/err" "corrupt at offset $((h2 + 112)): record fails its checksum" "damage at the record"
has "$T/err" "keel salvage" "the way forward is named"
check 1 "heads on a damaged store" -- "$K" heads "$S"
has "$T/out" "DAMAGED" "heads shows the damage"
check 1 "salvage" -- "$K" salvage "$S" "$T/saved.keel"
has "$T/out" "salvaged .* 5 keys" "salvage count"
has "$T/out" "read from txid 6" "salvage reads past the damage"
has "$T/err" "lost key key3" "salvage names the lost key"
for i in 1 2 4 5 6; do
	check 0 "salvaged key$i" -- "$K" get "$T/saved.keel" key$i
	cmp -s "$T/out" "$T/v$i" || { echo "FAIL: salvaged key$i differs"; fails=$((fails + 1)); }
done
check 1 "the lost key is absent" -- "$K" get "$T/saved.keel" key3
check 0 "the copy checks clean" -- "$K" check "$T/saved.keel"
check 2 "salvage into an existing file" -- "$K" salvage "$S" "$T/saved.keel"
has "$T/err" "exists" "existing output refused"
check 0 "salvage of a clean store" -- "$K" salvage "$O" "$T/clean-copy.keel"
has "$T/out" "4 keys" "clean salvage count"

# a store cut inside its first head, a bad superblock checksum
head -c 12300 "$O" >"$T/torn.keel"
check 2 "a store whose first commit is torn" -- "$K" stat "$T/torn.keel"
has "$T/err" "first commit is torn" "torn first commit named"
cp "$O" "$T/badsuper.keel"
flip "$T/badsuper.keel" 30  # inside the random file_id: a constant could match it
cmp -s "$O" "$T/badsuper.keel" && { echo "FAIL: the superblock byte did not change"; fails=$((fails + 1)); }
check 1 "a bad superblock checksum" -- "$K" stat "$T/badsuper.keel"
has "$T/err" "corrupt at offset 0: superblock checksum mismatch" "superblock reason"

[ $fails -eq 0 ] && echo "cli: all checks passed"
exit $fails
