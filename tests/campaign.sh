#!/bin/sh
# campaign.sh BUILD_DIR -- torture --campaign and --report (docs/campaigns.md):
# a small campaign of three config-file recipes (9 runs of at most 6
# cycles) run whole and as two shards; the merged report of the shards must
# equal the whole run's; merging a shard twice, or a shard and its rerun,
# counts each run once; a missing shard shows; bad input of every kind
# gives exit 2 and a message.
#
# What must match between the whole run and the shards: each run's
# identity and verdict, and the cycle count of every run that holds (it
# stops at its cycle bound, so the count is exact).  A broken run stops at
# its first violation, and which cycle that is depends on where the kill
# landed (kills are timed, and the machine is busy): its cycle and its
# words are left out, as are the rates.
set -u
B=${1:-build}
T=$(mktemp -d /tmp/keel-campaign-test.XXXXXX)
fails=0
checks=0
trap 'rm -rf "$T"' EXIT
export TMPDIR="$T"
. "$(dirname "$0")/lib.sh"
tt="$B/torture"

cat >"$T/small.campaign" <<'EOF'
# tests/campaign.sh: a safe and an unsafe recipe, then the append-only log
targets = files:rename-full files:rename-nosync
faults = kill power-cut
devices = torn
seeds = 1-2
cycles = 6
duration = 120s
kill-every = 100ms
run = files:append-log power-cut torn 1
EOF

# ---- the run list and its shards ----------------------------------------
"$tt" --campaign "$T/small.campaign" --list >"$T/list.all" 2>&1
expect "--list exits 0" 0 $?
expect "the campaign expands to 9 runs" 9 "$(grep -vc '^#' "$T/list.all")"
contains "the cross product comes first, in order" "$T/list.all" \
	"^2 files:rename-full power-cut torn 1$"
contains "run lines follow it" "$T/list.all" "^8 files:append-log power-cut torn 1$"
for i in 0 1; do
	"$tt" --campaign "$T/small.campaign" --shard $i/2 --list \
		>"$T/list.$i" 2>&1
	expect "--shard $i/2 --list exits 0" 0 $?
	expect "shard $i/2 holds exactly the runs k with k mod 2 = $i" "" \
		"$(grep -v '^#' "$T/list.$i" | awk -v i=$i '$1 % 2 != i')"
done
expect "the two shards together are the whole list, once each" \
	"$(grep -v '^#' "$T/list.all" | sort)" \
	"$(cat "$T/list.0" "$T/list.1" | grep -v '^#' | sort)"
id=$(sed -n '1s/^# campaign \([0-9a-f]*\):.*/\1/p' "$T/list.all")
expect "the campaign id is 16 hex digits" 16 "${#id}"

# The id is the definition's, not the file's spelling.
cat >"$T/respelled.campaign" <<'EOF'
cycles=6
kill-every = 0.1
	run   =   files:append-log   power-cut	torn 1
seeds = 1 2
duration = 2m
# the same campaign, written another way
devices = torn
faults = kill power-cut
targets = files:rename-full files:rename-nosync
EOF
"$tt" --campaign "$T/respelled.campaign" --list >"$T/list.re" 2>&1
expect "a respelled file is the same campaign" "$(head -1 "$T/list.all")" \
	"$(head -1 "$T/list.re")"
sed 's/seeds = 1-2/seeds = 1-3/' "$T/small.campaign" >"$T/other.campaign"
"$tt" --campaign "$T/other.campaign" --list >"$T/list.other" 2>&1
other=$(sed -n '1s/^# campaign \([0-9a-f]*\):.*/\1/p' "$T/list.other")
[ -n "$other" ] && [ "$other" != "$id" ]
expect "another definition is another campaign" 0 $?

# tools/claims.campaign is make claims as a campaign: every configuration
# torture knows, under each of its four faults
"$tt" --campaign "$(dirname "$0")/../tools/claims.campaign" --list \
	>"$T/list.claims" 2>&1
expect "tools/claims.campaign: 4 runs per adapter configuration" \
	$((4 * $("$tt" --list-targets | wc -l))) "$(grep -vc '^#' "$T/list.claims")"
expect "tools/claims.campaign: each under make claims's four faults" "" \
	"$("$tt" --list-targets | while read -r t; do
		for f in "kill none" "power-cut reorder" "power-cut torn" "eio torn"; do
			grep -q "^[0-9]* $t $f 1$" "$T/list.claims" || echo "$t $f"
		done
	done)"

# ---- whole, and as two shards --------------------------------------------
# A run whose workload acknowledged nothing in all its cycles (a machine so
# busy that no 100 ms life got that far) has no verdict: its shard exits 1
# and is run again, as docs/campaigns.md tells a user to; the merge keeps
# each run's last line.  Up to 4 tries.
shard() { # OUT [--shard I/N]
	out=$1
	shift
	for try in 1 2 3 4; do
		"$tt" --campaign "$T/small.campaign" --out "$out" "$@" 2>>"$out.err"
		rc=$?
		[ $rc = 1 ] || break
		echo "note: $out: a run could not be set up (try $try):"
		grep 'setup' "$out.err" | tail -n 3
	done
	return $rc
}
# The whole campaign runs beside its shards (one after the other): its
# runs are lives of 100 ms, most of their time spent waiting for the kill,
# not on a CPU, and no run of one touches another's files (each has its
# own directory); what is compared below is each run's verdict and the
# cycles of those that hold, which the timing does not move.
(shard "$T/all.jsonl"; echo $? >"$T/all.rc") >"$T/all.notes" 2>&1 &
for i in 0 1; do
	shard "$T/s$i.jsonl" --shard $i/2
	expect "shard $i/2 exits 0" 0 $?
done
wait
cat "$T/all.notes"
expect "the whole campaign exits 0" 0 "$(cat "$T/all.rc")"
expect "it wrote one line per run (per try)" 0 \
	$(($(wc -l <"$T/all.jsonl") % 9))
expect "the shards wrote 5 and 4 lines (per try)" "0 0" \
	"$(($(wc -l <"$T/s0.jsonl") % 5)) $(($(wc -l <"$T/s1.jsonl") % 4))"
for f in campaign run runs shard target config version kit fault device seed \
	cycles verdict lost phantom structure_errors writer_errors power_cuts \
	faults_fired host; do
	grep -q "\"$f\": " "$T/s1.jsonl" || echo "$f"
done >"$T/fields.missing"
expect "the result line has the documented fields" "" "$(cat "$T/fields.missing")"
contains "an unsafe run is broken" "$T/all.jsonl" \
	'"config": "rename-nosync", .*"fault": "power-cut", .*"verdict": "broken"'
contains "a broken run's line carries its reproducer" "$T/all.jsonl" \
	'"reproducer": ".*--target files:rename-nosync .*--power-loss'

# the deterministic part of each merged line: identity, verdict, and the
# cycles of the runs that hold
facts() {
	"$tt" --report --merge "$@" | sed -e 's/.*"run": \([0-9]*\),.*"target": "\([^"]*\)", "config": "\([^"]*\)",.*"fault": "\([^"]*\)", "device": "\([^"]*\)", "seed": \([0-9]*\),.*"verdict": "\([a-z]*\)", "cycles": \([0-9]*\),.*/\1 \2:\3 \4 \5 \6 \7 \8/' \
		-e 's/ broken [0-9]*$/ broken/'
}
# the table with its timing-dependent parts (rates; a broken cell's cycle
# and words) taken out, and without its closing lines
table() {
	"$tt" --report "$@" | sed -n '/^|/p' | awk -F'|' 'BEGIN { OFS = "|" }
	{ for (i = 2; i < NF; i++) {
		if ($i ~ /^ BROKEN/) {
			n = ""
			if (match($i, /\([0-9]+ of [0-9]+ seeds\)/))
				n = " " substr($i, RSTART, RLENGTH)
			s = $i; sub(/ cycle .*/, "", s); $i = s n " "
		} else gsub(/, [0-9.]+\/s/, "", $i)
	  } print }'
}
facts "$T/all.jsonl" >"$T/facts.all"
facts "$T/s0.jsonl" "$T/s1.jsonl" >"$T/facts.shards"
expect "the merged facts cover all 9 runs" 9 "$(wc -l <"$T/facts.shards")"
expect "two shards merged equal one unsharded run (identity, verdict, cycles)" \
	"$(cat "$T/facts.all")" "$(cat "$T/facts.shards")"
contains "every run that holds ran its 6 cycles" "$T/facts.all" \
	"^0 files:rename-full kill none 1 holds 6$"
table "$T/all.jsonl" >"$T/table.all"
table "$T/s1.jsonl" "$T/s0.jsonl" >"$T/table.shards"
expect "and so do their tables" "$(cat "$T/table.all")" \
	"$(cat "$T/table.shards")"
contains "the table has a row per configuration, a column per fault" \
	"$T/table.all" "^\| configuration \| version \| process kill \| power cut, torn \|$"
contains "a safe recipe holds, cycles summed over its seeds" "$T/table.all" \
	"^\| files:rename-full \| POSIX calls \(no engine\) \| holds \(12 cycles over 2 seeds\) \| holds \(12 cycles over 2 seeds\) \|$"
contains "the unsafe one is broken on both seeds" "$T/table.all" \
	"^\| files:rename-nosync \|.*\| BROKEN seed 1 \(2 of 2 seeds\) \|$"
contains "a run the cross product has not got a cell of is -" "$T/table.all" \
	"^\| files:append-log \|.*\| - \| holds \(6 cycles\) \|$"

# ---- merging is idempotent -----------------------------------------------
"$tt" --report "$T/s0.jsonl" "$T/s1.jsonl" >"$T/rep.once"
"$tt" --report "$T/s0.jsonl" "$T/s1.jsonl" "$T/s1.jsonl" "$T/s0.jsonl" \
	>"$T/rep.twice"
expect "merging each shard twice changes no cell" \
	"$(sed -n '/^|/p' "$T/rep.once")" "$(sed -n '/^|/p' "$T/rep.twice")"
lines=$((2 * ($(wc -l <"$T/s0.jsonl") + $(wc -l <"$T/s1.jsonl"))))
contains "and says the second lines replaced the first" "$T/rep.twice" \
	"9 of 9 runs merged from 4 files \($lines lines, $((lines - 9)) replaced"
expect "--merge of a shard twice prints each run once" 4 \
	"$("$tt" --report --merge "$T/s1.jsonl" "$T/s1.jsonl" | wc -l)"
# a shard that is run again appends to its file: its new lines win
before=$(wc -l <"$T/s1.jsonl")
shard "$T/s1.jsonl" --shard 1/2 --quiet
expect "a rerun shard exits 0" 0 $?
added=$(($(wc -l <"$T/s1.jsonl") - before))
expect "its file now has the rerun's lines too" 1 \
	$((added > 0 && added % 4 == 0))
"$tt" --report --merge "$T/s0.jsonl" "$T/s1.jsonl" >"$T/merged"
expect "the merge keeps one line per run" 9 "$(wc -l <"$T/merged")"
expect "and for the rerun shard, the later lines" "$(tail -n 4 "$T/s1.jsonl")" \
	"$(grep '"shard": "1/2"' "$T/merged")"
expect "the table after a rerun is the table before" "$(cat "$T/table.all")" \
	"$(table "$T/s0.jsonl" "$T/s1.jsonl")"

# a row whose runs report other versions (shards on machines with other
# packages) names them all; a run that could not be set up says why
sed '2s/"version": "[^"]*"/"version": "POSIX 2"/' "$T/merged" >"$T/versions.jsonl"
"$tt" --report "$T/versions.jsonl" >"$T/rep.versions"
contains "a row of two versions names both" "$T/rep.versions" \
	"^\| files:rename-full \| POSIX calls \(no engine\) / POSIX 2 \| holds"
sed '1s/"verdict": "holds"/"verdict": "setup"/; 1s/"message": null/"message": "no adapter here"/' \
	"$T/merged" >"$T/setup.jsonl"
"$tt" --report "$T/setup.jsonl" >"$T/rep.setup"
contains "a run that could not be set up shows in its cell" "$T/rep.setup" \
	"^\| files:rename-full \| [^|]* \| set-up: no adapter here \(1 of 2 seeds\) \| holds"

# a run stopped by a set-up error after cycles that passed keeps them: a
# copy of torture whose "files" adapter is tests/shim/misbehave, which
# behaves for two starts and then makes a call the shim refuses
mkdir -p "$T/late/targets"
cp "$tt" "$B/libkeel-shim.so" "$T/late/"
M=$(cd "$B" && pwd)/shim-tests/misbehave
cat >"$T/late/targets/files" <<EOF
#!/bin/sh
[ "\$1" = --version ] && { echo "misbehave 1"; exit 0; }
[ "\${3:-}" = --check ] && exec "$M" "\$1" --check
exec "$M" "\$1" refuse-after 2
EOF
chmod +x "$T/late/targets/files"
printf 'run = files:rename-full kill none 1\ncycles = 6\nkill-every = 5s\n' \
	>"$T/late.campaign"
"$T/late/torture" --campaign "$T/late.campaign" --out "$T/late.jsonl" \
	--quiet 2>"$T/late.err"
expect "a campaign with a late refusal exits 1" 1 $?
contains "its line keeps the cycles that passed and names the refusal" \
	"$T/late.jsonl" '"verdict": "setup", "cycles": 2,.*"acked": 2,.*"message": "cycle 3, by the workload: the shim refused: open'

# ---- a missing shard shows ---------------------------------------------------
"$tt" --report "$T/s0.jsonl" >"$T/rep.half" 2>&1
expect "a report of one shard of two exits 0" 0 $?
contains "and says which runs are missing" "$T/rep.half" \
	"5 of 9 runs merged.*|Missing runs: 1 3 5 7 "

# ---- bad input: exit 2 and a message -----------------------------------------
refused() { # NAME PATTERN ARGS... -- torture ARGS must exit 2, saying PATTERN
	name=$1 pat=$2
	shift 2
	"$tt" "$@" >"$T/bad.out" 2>"$T/bad.err"
	rc=$?
	expect "$name: exit 2" 2 $rc
	contains "$name: says so" "$T/bad.err" "$pat"
	[ -s "$T/bad.out" ] && bad "$name: printed on stdout: $(head -c 200 "$T/bad.out")"
}
# The checks below write their input to $T/in first: a function at the end
# of a pipeline would run in a subshell, and its counts would be lost.
bad_file() { # NAME PATTERN -- the campaign file $T/in is refused
	cp "$T/in" "$T/bad.campaign"
	refused "$1" "$2" --campaign "$T/bad.campaign" --list
}
printf 'targets = files:rename-full\nfautls = kill\n' >"$T/in"
bad_file "an unknown key" "bad.campaign:2: unknown key 'fautls' \(known: targets, faults"
refused "shard 3/2" "--shard 3/2: .*numbered from 0, so I goes from 0 to 1" \
	--campaign "$T/small.campaign" --shard 3/2 --list
refused "shard 2/2" "no shard 2 of 2" --campaign "$T/small.campaign" \
	--shard 2/2 --list
refused "shard 0/0" "N must be from 1" --campaign "$T/small.campaign" \
	--shard 0/0
refused "shard -1/2" "want I/N" --campaign "$T/small.campaign" --shard -1/2
refused "shard 1" "want I/N" --campaign "$T/small.campaign" --shard 1
printf 'targets = nosuch:thing\n' >"$T/in"
bad_file "an unknown target" "bad.campaign:1: nosuch:thing: unknown target"
grep -q "^  sqlite:wal-full$" "$T/bad.err" && grep -q "^  files:append-log$" "$T/bad.err"
expect "an unknown target lists the valid ones" 0 $?
printf 'targets = files:nosuch\n' >"$T/in"
bad_file "an unknown configuration" "files:nosuch: unknown configuration"
grep -q "^  files:overwrite$" "$T/bad.err" && ! grep -q "sqlite" "$T/bad.err"
expect "an unknown configuration lists its adapter's" 0 $?
printf 'targets = files\n' >"$T/in"
bad_file "a target without a configuration" "NAME:\* for all"
printf 'run = files:rename-full kill torn 1\n' >"$T/in"
bad_file "a kill with a device" "its device is none"
printf 'targets = files:*\nfaults = eio\nseeds = 1\n' >"$T/in"
bad_file "a power cut without devices" "power-cut and eio need devices"
printf 'targets = files:*\nfaults = kill\n' >"$T/in"
bad_file "half a cross product" "needs targets, faults and seeds"
printf 'run = files:overwrite kill none 4\nrun = files:overwrite kill none 4\n' >"$T/in"
bad_file "a run listed twice" "files:overwrite kill none 4 is listed twice"
printf 'cycles = 5\ncycles = 6\n' >"$T/in"
bad_file "a key given twice" ":2: cycles given twice \(first on line 1\)"
printf '# nothing\n\n' >"$T/in"; bad_file "no runs" "no runs"
printf 'targets = sqlite:* lmdb:*\nfaults = kill power-cut eio\ndevices = torn reorder\nseeds = 1-9999\n' >"$T/in"
bad_file "a cross product too large" "more than 100000 runs"
awk 'BEGIN { printf "cycles = 1"; for (i = 0; i < 2000; i++) printf " "; print "" }' >"$T/in"
bad_file "a line too long" ":1: line longer than 1024 bytes"
awk 'BEGIN { for (i = 0; i < 10001; i++) print "# x" }' >"$T/in"
bad_file "too many lines" "more than 10000 lines"
printf 'cycles = 5\000\n' >"$T/in"; bad_file "a NUL byte" "byte 0x00"
head -c 3000 /dev/urandom >"$T/in"; bad_file "random bytes" "bad.campaign:[0-9]+: "
refused "no such file" "nosuch.campaign: No such file" --campaign "$T/nosuch.campaign"
refused "a run flag beside --campaign" "'--seed' is not a campaign flag" \
	--campaign "$T/small.campaign" --seed 3

# results of another campaign definition: a real one, one run of it
# (only its line's campaign id matters here: a set-up verdict, exit 1 on a
# machine too busy, does as well)
printf 'run = files:append-log kill none 1\ncycles = 2\nkill-every = 100ms\n' \
	>"$T/one.campaign"
"$tt" --campaign "$T/one.campaign" --out "$T/one.jsonl" --quiet
expect "a one-run campaign writes its line" "1" "$(wc -l <"$T/one.jsonl")"
refused "a merge of two campaigns" "campaign [0-9a-f]{16}, but .*s0.jsonl:1 is campaign $id: results of different campaign definitions cannot be merged" \
	--report "$T/s0.jsonl" "$T/one.jsonl"
bad_results() { # NAME PATTERN -- results $T/in, after a good shard's
	cat "$T/s0.jsonl" "$T/in" >"$T/bad.jsonl"
	refused "$1" "$2" --report "$T/s1.jsonl" "$T/bad.jsonl"
}
echo 'garbage' >"$T/in"; bad_results "a line that is no JSON" "bad.jsonl:6: not a JSON object: not a JSON object at byte 0"
head -n 1 "$T/s1.jsonl" | cut -c 1-100 >"$T/in"
bad_results "a line cut short" "bad.jsonl:6: not a JSON object: "
head -n 1 "$T/s1.jsonl" | sed 's/"seed": 2/"seed": {"a": 1}/' >"$T/in"
bad_results "a nested value" "bad.jsonl:6: .*nested"
head -n 1 "$T/s1.jsonl" | sed 's/"run": 1,/"run": 1, "run": 3,/' >"$T/in"
bad_results "a key twice" "bad.jsonl:6: .*a key given twice"
head -n 1 "$T/s1.jsonl" | sed 's/"run": 1,/"run": 9,/' >"$T/in"
bad_results "a run beyond the campaign" "bad.jsonl:6: want \"run\" K and \"runs\" M"
head -n 1 "$T/s1.jsonl" | sed 's/"seed": 2/"seed": 7/' >"$T/in"
bad_results "a run that changed its identity" "bad.jsonl:6: run 1 is files:rename-full kill none 7 here but .* 2 in .*s1.jsonl:[0-9]+"
head -n 1 "$T/s1.jsonl" | sed 's/"verdict": "[a-z]*"/"verdict": "fine"/' >"$T/in"
bad_results "an unknown verdict" "bad.jsonl:6: want \"verdict\""
head -n 1 "$T/s1.jsonl" | sed 's/"target": "files"/"target": "fi|es"/' >"$T/in"
bad_results "a target that is no name" "bad.jsonl:6: want \"target\""
awk 'BEGIN { printf "{\"a\": \""; for (i = 0; i < 5000; i++) printf "x"; print "\"}" }' >"$T/in"
bad_results "a line too long" "bad.jsonl:6: line longer than 4096 bytes"
printf '{"campaign": "%s"\000}\n' "$id" >"$T/in"; bad_results "a NUL byte" "bad.jsonl:6: a NUL byte"
printf '%s' "$(head -n 1 "$T/s1.jsonl")" >"$T/in"
bad_results "a last line without its newline" "bad.jsonl:6: the last line has no newline"
head -c 3000 /dev/urandom >"$T/in"; bad_results "random bytes" "bad.jsonl:[0-9]+: "
refused "a report of nothing" "needs the result files" --report
: >"$T/empty.jsonl"
refused "a report of an empty file" "no result lines" --report "$T/empty.jsonl"
refused "a flag --report does not know" "'--cycles' is not a report flag" \
	--report --cycles "$T/s0.jsonl"

echo "campaign.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
