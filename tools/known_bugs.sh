#!/bin/sh
# known_bugs.sh BUILD_DIR -- does the kit find what the established
# crash-testing tools published?  Runs one bounded torture run per
# published bug whose program Debian 12 ships -- the bugs LazyFS reproduced
# ("When Amnesia Strikes", VLDB 2024, dsrhaslab/lazyfs reproduced-bugs/),
# here; CuttleFS's failed-fsync outcomes (Rebello et al., USENIX ATC 2020),
# tools/known_bugs/cuttlefs.sh; ALICE's crash vulnerabilities (Pillai et
# al., OSDI 2014), tools/known_bugs/alice.sh -- one at a time, --quiet
# --seed 1, each at most KB_DURATION (default 60s) of cycles plus its
# explanation, and writes the page docs/known-bugs.md between its markers
# (KB_OUT=FILE: elsewhere), one section per tool, with each tool's counts
# and wall times at the top.
# KB_ONLY="PATTERN..." runs only the rows whose id matches one of the shell
# patterns (KB_ONLY='zookeeper-* alice-zookeeper-*': the ZooKeeper rows) and
# merges them into the page instead of rewriting it: a row of the same id
# is replaced, a new one added at the end of its tool's table, each
# section's note rewritten, the counts
# and wall times at the top recounted from the rows, and a line "rows
# rerun" names the command, date and commit of the selection (the other
# rows keep the run named above it).
# A row's result is "reproduced" (the cycle, the smallest cause torture
# printed and its call site), or the case's own words on why not: fixed
# upstream (with the evidence) or not reproduced (with the reason).
set -u
B=${1:-build}
D=${KB_DURATION:-60s}
O=${KB_OUT:-docs/known-bugs.md}
only=${KB_ONLY:-}
cmd="sh tools/known_bugs.sh $B"
[ -z "${KB_DURATION:-}" ] || cmd="KB_DURATION=$D $cmd"
[ -z "$only" ] || cmd="KB_ONLY='$only' $cmd"
t0=$(date +%s)
date0=$(date -u '+%Y-%m-%d %H:%M UTC')
load0=$(cut -d ' ' -f 1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain -- . ":!$O" 2>/dev/null)" ] ||
	commit="$commit+dirty"
T=$(mktemp -d "${TMPDIR:-/tmp}/keel-known-bugs.XXXXXX")
trap 'rm -rf "$T"' EXIT
chmod 1777 "$T"	# --user postgres makes files beside its run directory
export TMPDIR="$T"
[ -x "$B/torture" ] || { echo "known_bugs.sh: no $B/torture (make first)" >&2; exit 2; }

# LevelDB's hybrid workload is built here (no Makefile rule of its own)
cc -O2 -o "$T/leveldb_hybrid" tools/known_bugs/leveldb_hybrid.c -lleveldb 2>"$T/cc.err" ||
	echo "known_bugs.sh: leveldb_hybrid did not build: $(head -n 1 "$T/cc.err")" >&2

field() { sed -n "s/.*\"$2\": \"\{0,1\}\([^\",]*\).*/\1/p" "$1"; }
md() { tr '|' '/' | tr -s ' ' | sed 's/`/'"'"'/g'; }

n=0 nrep=0 nfix=0 nnot=0
: >"$T/rows"
: >"$T/times"
: >"$T/tally"
: >"$T/tools"

# selected_case ID: named by KB_ONLY's patterns, or none given
selected_case() {
	[ -z "$only" ] && return 0
	set -f	# the patterns are the row ids', not file names
	for p in $only; do
		# shellcheck disable=SC2254
		case $1 in $p) set +f; return 0 ;; esac
	done
	set +f
	return 1
}

# section TOOL TEXT: the cases that follow are TOOL's (the first word of
# their SOURCE, up to a comma); TEXT says above its table what TOOL is
section() {
	echo "$1" >>"$T/tools"
	printf '%s\n' "$2" >"$T/note.$1"
	: >"$T/rows.$1"
}

# case ID SOURCE STUDIED DEBIAN WORKLOAD-AND-FAULT IF-NOT KIND -- TORTURE-ARGS...
#   ($said, if the case sets it: a command whose first line of output, the
#   program's own words on a reproduced failure, read from the kept
#   directory $kept, is added to the result)
#   IF-NOT: the row's words when torture finds nothing; KIND: "fixed" (fixed
#   upstream) or "not" (not reproduced).  A run torture refuses (exit 2, a
#   set-up error) is "not reproduced" with torture's words and $refused
#   (set by the case, else "the run gave no verdict"), never IF-NOT.
case_() {
	id=$1 src=$2 studied=$3 deb=$4 what=$5 ifnot=$6 kind=$7
	shift 8
	tool=${src%%,*}
	selected_case "$id" || return 0
	n=$((n + 1))
	j="$T/$id.json"
	s0=$(date +%s)
	timeout 240 "$B/torture" --quiet --seed 1 --json "$j" "$@" >"$j.out" 2>&1
	rc=$?
	secs=$(( $(date +%s) - s0 ))
	c="build/torture"
	for a in "$@"; do
		case $a in
		*[!A-Za-z0-9_./:=,-]*) c="$c '$a'" ;;
		*) c="$c $a" ;;
		esac
	done
	# the page names build/, whatever directory the run used
	c=$(printf '%s' "$c" | sed "s#$B/#build/#g")
	res=$(field "$j" result 2>/dev/null)
	cyc=$(field "$j" cycles 2>/dev/null)
	if [ -s "$j" ] && [ "$res" != pass ] && [ "$rc" != 2 ] && [ "$rc" != 124 ]; then
		nrep=$((nrep + 1))
		first=$(sed -n 's/.*"first_violation": "\(.*\)", "reproducer".*/\1/p' "$j" | sed 's/\\"/"/g' | cut -c1-160)
		cause=$(sed -n '/^  why (/,$p' "$j.out" | sed -n '/the smallest cause/,/^    with /p' |
			grep -E '^    [a-z_0-9]+\(.* -- ' | sed 's/^ *//' | head -n 3 | cut -c1-200 |
			sed 's/^/`/; s/$/`/' | paste -sd ';' - | sed 's/;/; /g')
		[ -n "$cause" ] || cause=$(grep -m1 '^  why:' "$j.out" | sed 's/^  why: //' | cut -c1-200)
		site=$(sed -n '/^  why (/,$p' "$j.out" | grep -m1 -oE 'from [^ ]+ \([^)]*:[0-9]+\)')
		[ -n "$site" ] || site=$(sed -n '/^  why (/,$p' "$j.out" | grep -m1 -oE "its call is no longer in the shim's ring|by the [a-z]+ \\(pid [0-9]+\\)[^,]*")
		[ -n "$site" ] || site="not named"
		smallest=$(sed -n '/the smallest cause/{s/^ *//;p;q;}' "$j.out" | sed 's/:$//')
		result="**reproduced** at cycle $cyc: $first. ${smallest:+$smallest: }${cause:-no smaller cause printed}; call site: $site"
		# $said (set by the case): a command that reads the program's own
		# account of the failure from the kept directory ($kept)
		if [ -n "${said:-}" ]; then
			kept=$(field "$j" dir)
			w=$(eval "$said" 2>/dev/null | head -n 1 | cut -c1-160)
			[ -z "$w" ] || result="$result; the program said: \"$w\""
		fi
		echo "$tool rep" >>"$T/tally"
	else
		if [ "$rc" = 2 ] || [ ! -s "$j" ]; then
			# no verdict: the row says why, never the words for a run
			# that held ($refused: the case's own account, if any)
			nnot=$((nnot + 1))
			result="**not reproduced**"
			echo "$tool not" >>"$T/tally"
			ifnot=${refused:-the run gave no verdict}
		elif [ "$kind" = fixed ]; then
			nfix=$((nfix + 1))
			result="**not reproduced, fixed upstream**"
			echo "$tool fix" >>"$T/tally"
		else
			nnot=$((nnot + 1))
			result="**not reproduced**"
			echo "$tool not" >>"$T/tally"
		fi
		if [ "$rc" = 124 ]; then
			run="the run passed its 240 s bound"
		elif [ "$rc" = 2 ] || [ ! -s "$j" ]; then
			run="torture refused it: $(grep -m1 'torture:' "$j.out" | cut -c1-160)"
		else
			run="$cyc cycles held"
		fi
		result="$result ($run): $ifnot"
	fi
	echo "| $id | $src | $studied | $deb | $what | \`$c\` | $(echo "$result" | md) | $secs s |" >>"$T/rows.$tool"
	echo "| $id | $src | $studied | $deb | $what | \`$c\` | $(echo "$result" | md) | $secs s |" >>"$T/rows"
	echo "$tool $id $secs s" >>"$T/times"
	echo "$id: $(echo "$result" | cut -c1-200) ($secs s)" >&2
}

R=tests/targets/redis_acl.sh
P=tests/targets/postgres.sh
S=tests/targets/postgres_stats.sh
F=tests/targets/postgres_fpw.sh
E=tests/targets/etcd.sh
L=$T/leveldb_hybrid
rv=$(redis-server --version 2>/dev/null | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
pv=$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1)
pv=$(/usr/lib/postgresql/$pv/bin/postgres --version 2>/dev/null | sed -n 's/^postgres (PostgreSQL) \([0-9.]*\).*/\1/p')
ev=$(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p')
lv=$(dpkg-query -W -f '${Version}' libleveldb-dev 2>/dev/null | cut -d- -f1)

section LazyFS "The bugs LazyFS reproduced (\"When Amnesia Strikes\", VLDB 2024; its repository's \`reproduced-bugs/\` holds one script per bug): LazyFS drops or tears what the page cache had not synced at a crash it places after a chosen call."

case_ redis-11 "LazyFS, Redis bug 11" 7.0.4 "${rv:-?}" \
	"ACL SETUSER, then ACL SAVE, acknowledged once SAVE answers OK; the ACL file read back; power cut (posix model, torn)" \
	"every ACL SAVE survived" not -- \
	--target exec --power-loss --kill-every 1s --duration "$D" --cycles 60 \
	--setup "bash $R {dir} --init" --workload "bash $R {dir}" --checker "bash $R {dir} --check"

case_ redis-vcc "LazyFS, Redis \"vcc\" (crash-consistency check)" 7.2.3 "${rv:-?}" \
	"SETs to the AOF (appendfsync always); LazyFS tears a sequence of AOF writes (one part persisted, one not): Redis truncates the torn tail itself, or stops with \"Bad file format\" until redis-check-aof --fix; here: power cut losing or garbling one interior sector of what was not synced" \
	"no acknowledged SET was lost and Redis restarted after every cut: what a tear leaves is never an fsynced (acknowledged) record, and Redis's own AOF check (aof-load-truncated) copes with the torn tail, as LazyFS saw for persist=[1]; the \"Bad file format\" of persist=[2] needs a hole inside one write that was later synced, which a power cut of this model never makes" not -- \
	--target redis:always --power-loss --device payload --duration "$D" --cycles 200

case_ postgres-1 "LazyFS, PostgreSQL bug 1" "16 (development)" "${pv:-?}" \
	"inserts, then a clean shutdown (pg_ctl stop -m fast writes pg_stat/pgstat.stat), then a power cut; the next start must not log \"corrupted statistics file\" (the checker exits 1 if it does); ext4 model" \
	"no start logged \"corrupted statistics file\" and every acknowledged insert survived. PostgreSQL 15 still renames the statistics file into place without an fsync (its binary carries \"could not rename temporary statistics file\", the plain rename()'s message; later versions call durable_rename() in pgstat_write_statsfile), so the loss is possible: these cycles' cuts never kept the rename while dropping the file's data" not -- \
	--target exec --user postgres --power-loss --fs ext4 --kill-every 6s --duration "$D" --cycles 12 \
	--setup "bash $P {dir} --init" --workload "bash $S {dir}" --checker "bash $S {dir} --check"

case_ postgres-vcc "LazyFS, PostgreSQL \"vcc\" (crash-consistency check)" "16 (development)" "${pv:-?}" \
	"full_page_writes = off; LazyFS tears a write of pgbench_accounts' data file and amcheck finds a heap tuple without its index tuple; here: puts with a CHECKPOINT every 0.5 s, power cut (torn), rows read back (no amcheck yet)" \
	"every acknowledged put survived and the server restarted: the tear LazyFS needs is of a data-file page written by a checkpoint and later read by amcheck (bt_index_parent_check), and this workload's checker reads rows back through the server, not the index against the heap" not -- \
	--target exec --user postgres --power-loss --device torn --kill-every 4s --duration "$D" --cycles 15 \
	--setup "bash $F {dir} --init" --workload "bash $F {dir}" --checker "bash $F {dir} --check"

case_ etcd-16-17-18 "LazyFS, etcd bugs 16, 17, 18" 3.4.25 "${ev:-?}" \
	"a torn first write of member/snap/db (bbolt) at the member's first start: \"bus error\", \"invalid database\", \"file size too small\" at the restart; here: a running member's puts, power cut (torn)" \
	"every acknowledged put survived and etcd restarted after every cut. The bugs need a crash during the member's very first start, and etcd.sh makes the data directory in --setup because etcd makes its first WAL in wal.tmp and renames that directory into place, which the kit does not model (docs/targets.md): the first start is not expressible yet" not -- \
	--target exec --power-loss --device torn --kill-every 4s --duration "$D" --cycles 12 \
	--setup "bash $E {dir} --init" --workload "bash $E {dir}" --checker "bash $E {dir} --check"

case_ etcd-19 "LazyFS, etcd bug 19" 2.3.0 "${ev:-?}" \
	"a crash right after a write to member/wal/*.wal: \"wal: snapshot not found\" at the restart; here: puts, power cut (unsynced writes reordered or lost)" \
	"every acknowledged put survived and etcd restarted after every cut. The bug was found in etcd 2.3.0, whose WAL and snapshot code 3.4 replaced (v3 storage: bbolt backend, snapshots by index); the crash LazyFS makes (after a WAL write, before its fsync) is what these cuts make" not -- \
	--target exec --power-loss --device reorder --kill-every 4s --duration "$D" --cycles 12 \
	--setup "bash $E {dir} --init" --workload "bash $E {dir}" --checker "bash $E {dir} --check"

case_ etcd-9-10 "LazyFS, etcd bugs 9, 10" 2.3.0 "${ev:-?}" \
	"a torn write to the WAL (the second half persisted, the first not): \"walpb: crc mismatch\" at the restart; here: puts, power cut losing or garbling one interior sector of what was not synced" \
	"every acknowledged put survived and etcd restarted after every cut: etcd 3.4 repairs a WAL whose last record is torn (wal.Repair on an unexpected end of file) and the hole these cuts make falls in records never fsynced" not -- \
	--target exec --power-loss --device payload --kill-every 4s --duration "$D" --cycles 12 \
	--setup "bash $E {dir} --init" --workload "bash $E {dir}" --checker "bash $E {dir} --check"

case_ leveldb-3 "LazyFS, LevelDB bug 3" 1.15 "${lv:-?}" \
	"synced puts into a new database; a crash right after the write of MANIFEST-000002 at creation: \"Corruption: no meta-nextfile entry in descriptor\"; here: the leveldb:sync adapter, whose first life creates the database, power cut (reorder)" \
	"every acknowledged put survived and the database opened after every cut. Fixed upstream: 1.23's DBImpl::NewDB (db/db_impl.cc) syncs the new MANIFEST (file->Sync()) before it closes it and points CURRENT at it, where 1.15's closes it unsynced" fixed -- \
	--target leveldb:sync --power-loss --device reorder --duration "$D" --cycles 300

case_ leveldb-4-5 "LazyFS, LevelDB bugs 4, 5" "1.12, 1.15, 1.23" "${lv:-?}" \
	"many puts with sync = false, then one with sync = true (the \"every Nth write synchronous\" scheme LevelDB's documentation offers for bulk loads), the database never closed; after the cut 1.12 says \"CURRENT file does not end with newline\", 1.23 keeps 120 of 98,001 pairs; here: rounds of 200 async puts and one sync put, each round acknowledged once the sync put returned, power cut (torn; the posix model, where a new file's name is durable only after its directory is fsynced)" \
	"every round acknowledged by its sync put survived" not -- \
	--target exec --power-loss --kill-every 300ms --duration "$D" --cycles 120 \
	--workload "$L {dir}" --checker "$L {dir} --check"

case_ leveldb-6 "LazyFS, LevelDB bug 6" 1.23 "${lv:-?}" \
	"synced puts; a torn sequence of writes to 000003.log (parts 1 and 5 persisted): \"Corruption: checksum mismatch\", and after RepairDB a key with a wrong value; here: the leveldb:sync adapter, power cut losing or garbling one interior sector of what was not synced" \
	"every acknowledged put survived and the database opened after every cut: with sync = true each put's log write is fsynced before it is acknowledged, so the hole a cut makes lies only in the unacknowledged tail, which the log reader drops (paranoid_checks off); LazyFS's case persists parts of a sequence across the writes before a sync, and its symptom shows only after RepairDB, which this checker never runs" not -- \
	--target leveldb:sync --power-loss --device payload --duration "$D" --cycles 300

# ZooKeeper: Debian's 3.8.0, a standalone server (LazyFS ran a three-server
# ensemble and crashed one follower), driven by tests/targets/zookeeper.sh
# and the kit's own client; the JVM runs under the shim
Z=tests/targets/zookeeper.sh
ZK=$B/shim-tests/zk_kv
zv=$(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null | sed 's/-.*//')
refused="tests/targets/zookeeper.sh needs Debian's zookeeper, java and its client built (make: $ZK)"
# why the server would not start, from its log beside the directory
said='grep -h -m1 -o -E "No snapshot found[^!]*!|has invalid magic number [-0-9]+ != [0-9]+|CRC check failed|Unable to load database[^(]*|Last transaction was partial" "$kept.zk.log"'

case_ zookeeper-2 "LazyFS, ZooKeeper bug 2" "3.4.8, 3.7.1" "${zv:-?}" \
	"a follower's first writes to a new transaction log torn (the second and fourth persisted, the first -- the file header -- not), crash before the fsync: the restart fails with \"has invalid magic number\"; here: snapCount=10 (a new log file every 5-10 transactions, so crashes fall near a file's first writes), power cut under the ext4 model, unsynced writes kept or lost each (reorder)" \
	"every acknowledged put survived and the server restarted after every cut: no cut in these cycles left a new log file without its header (the kill must fall between a new file's first writes and its first fdatasync, and the cut keep a later write while losing the header)" not -- \
	--target exec --front-end shim --power-loss --fs ext4 --device reorder --kill-every 6s --duration "$D" --cycles 12 \
	--setup "sh $Z {dir} $ZK --init" --workload "sh $Z {dir} $ZK forcesync roll" --checker "sh $Z {dir} $ZK --check"

case_ zookeeper-7 "LazyFS, ZooKeeper bug 7" "3.4.8, 3.7.1" "${zv:-?}" \
	"a crash before the fsync of a new server's first log: \"No snapshot found, but there are log entries. Something is broken!\" (3.7.1), \"Unable to load database on disk\" (3.4.8) -- the snapshot a server writes when it first starts is not fsynced, its log is; here: the data directory made by the first life's server (--init fresh), puts, power cut under the ext4 model (reorder). Only the first cut can find snapshot.0 unsynced, so the run is one cycle, with seed 2: seed 1's cut kept snapshot.0's write (seeds 2, 3, 4 and 6 of 1-6 lose it)" \
	"every acknowledged put survived and the server restarted: the cut kept the first snapshot's data" not -- \
	--target exec --front-end shim --power-loss --fs ext4 --device reorder --kill-every 6s --seed 2 --cycles 1 \
	--setup "sh $Z {dir} $ZK --init fresh" --workload "sh $Z {dir} $ZK forcesync" --checker "sh $Z {dir} $ZK --check"

case_ zookeeper-8 "LazyFS, ZooKeeper bug 8" "3.4.8, 3.7.1" "${zv:-?}" \
	"a create of a 10 KB znode whose writes to the log are torn (the first, fourth and seventh persisted), crash before the fsync: the restart fails with \"CRC check failed\"; here: puts of values padded to about 3 KB (seven sectors a transaction), power cut under the ext4 model keeping an unsynced write's first and last sectors and losing or garbling one between (payload)" \
	"every acknowledged put survived and the server restarted after every cut: no cut in these cycles left a hole inside a transaction the server had written to its log but not yet synced (the kill must fall between the write and its fdatasync)" not -- \
	--target exec --front-end shim --power-loss --fs ext4 --device payload --kill-every 6s --duration "$D" --cycles 12 \
	--setup "sh $Z {dir} $ZK --init" --workload "sh $Z {dir} $ZK forcesync big" --checker "sh $Z {dir} $ZK --check"

case_ zookeeper-21 "LazyFS, ZooKeeper bug 21" 3.4.8 "${zv:-?}" \
	"three servers; a follower crashes right after an fsync of its log, restarts and rejoins while the others go on, and crashes again the same way: afterwards it and a correct server disagree on the znodes created around the crashes; here: the standalone server, puts, power cut under the ext4 model right where the kill falls (mostly just after a log fsync), unsynced writes kept or lost each (reorder)" \
	"every acknowledged put survived and the server restarted after every cut. The bug is in how a follower that lost its unsynced tail resynchronises with a leader that went on (its log and snapshot against the leader's DIFF), which needs an ensemble whose servers crash one at a time: a torture power cut cuts every process below the watched directory at once, so three servers on one directory would all lose their unsynced writes together, and a standalone server has no leader to rejoin" not -- \
	--target exec --front-end shim --power-loss --fs ext4 --device reorder --kill-every 6s --duration "$D" --cycles 12 \
	--setup "sh $Z {dir} $ZK --init" --workload "sh $Z {dir} $ZK forcesync" --checker "sh $Z {dir} $ZK --check"
unset refused said

# CuttleFS's and ALICE's cases, one section each
. tools/known_bugs/cuttlefs.sh
. tools/known_bugs/alice.sh

total=$(( $(date +%s) - t0 ))
model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
{
	echo "<!-- known-bugs: begin (written by tools/known_bugs.sh) -->"
	echo "| | |"
	echo "|---|---|"
	echo "| command | \`$cmd\` |"
	echo "| date | $date0, $total s |"
	echo "| commit | $commit |"
	echo "| machine | $(nproc) CPUs (${model:-model unknown}), Linux $(uname -r) |"
	echo "| load average (1, 5, 15 min) | $load0 at the start, $(cut -d ' ' -f 1-3 /proc/loadavg) at the end |"
	echo "| cases | $n tried: $nrep reproduced, $nfix not reproduced (fixed upstream), $nnot not reproduced |"
	while read -r tl; do
		awk -v t="$tl" '$1 == t { n++; c[$2]++ }
			END { printf "| %s | %d tried: %d reproduced, %d not reproduced (fixed upstream), %d not reproduced |\n",
				t, n, c["rep"], c["fix"], c["not"] }' "$T/tally"
	done <"$T/tools"
	while read -r tl; do
		echo "| wall time per case, $tl | $(awk -v t="$tl" '$1 == t { printf "%s%s %s %s", (k++ ? "; " : ""), $2, $3, $4 }' "$T/times") |"
	done <"$T/tools"
	while read -r tl; do
		echo
		echo "### $tl"
		echo
		cat "$T/note.$tl"
		echo
		echo "| bug | source | version studied | Debian 12 version run | workload and fault | command | result | wall time |"
		echo "|---|---|---|---|---|---|---|---|"
		cat "$T/rows.$tl"
	done <"$T/tools"
	echo "<!-- known-bugs: end -->"
} >"$T/block"

# kb_merge: the selection's rows into the page's block (KB_ONLY)
kb_merge() {
	sed -n '/^<!-- known-bugs: begin/,/^<!-- known-bugs: end/p' "$O" >"$T/old"
	# the sections, each selected row in place of its id's or at the end
	# of its tool's table
	awk -v dir="$T" '
		function flush(  f, l) {
			if (tool == "" || done[tool]++) return
			f = dir "/rows." tool
			while ((getline l < f) > 0) {
				split(l, a, " [|] "); id = substr(a[1], 3)
				if (!(id in used)) print l
			}
			close(f)
		}
		BEGIN { while ((getline t < (dir "/tools")) > 0) {
			f = dir "/rows." t
			while ((getline l < f) > 0) {
				split(l, a, " [|] "); new[substr(a[1], 3)] = l
			}
			close(f)
		} }
		# a section: its heading, then its note, which this run rewrites
		/^### / { intable = 0; tool = substr($0, 5); seen_section = 1
			print; note = 1; next }
		note == 1 && /^$/ { print; note = 2; next }
		note == 2 && !/^$/ { old = old $0 "\n"; next }
		note == 2 {
			f = dir "/note." tool; n = 0
			while ((getline l < f) > 0) { print l; n++ }
			close(f)
			if (!n) printf "%s", old
			old = ""; print; note = 0; next
		}
		/^\|---\|---\|---/ { intable = 1; print; next }
		intable && /^\| / {
			split($0, a, " [|] "); id = substr(a[1], 3)
			if (id in new) { print new[id]; used[id] = 1 } else print
			next
		}
		intable { flush(); intable = 0 }
		/^<!-- known-bugs: end/ { flush(); next }
		seen_section { print }
	' "$T/old" >"$T/sections"
	{
		echo "<!-- known-bugs: begin (written by tools/known_bugs.sh) -->"
		grep -E '^\| \| \|$|^\|---\|---\|$|^\| (command|date|commit|machine|load average) ' "$T/old"
		echo "| rows rerun | \`$cmd\`, $date0, $total s, commit $commit: $(cut -d' ' -f2 "$T/times" | paste -sd' ' - | sed 's/ /, /g') |"
		awk '
			/^### / { tool = substr($0, 5); order[++nt] = tool }
			/^\| / && tool != "" && !/^\| bug \|/ && !/^\|---/ {
				split($0, a, " [|] "); n[tool]++; all++
				r = a[7]
				k = r ~ /^\*\*reproduced/ ? "rep" : r ~ /fixed upstream/ ? "fix" : "not"
				c[tool, k]++; call[k]++
				w = a[8]; sub(/ [|]$/, "", w)
				t[tool] = t[tool] (t[tool] == "" ? "" : "; ") substr(a[1], 3) " " w
			}
			END {
				printf "| cases | %d tried: %d reproduced, %d not reproduced (fixed upstream), %d not reproduced |\n", all, call["rep"], call["fix"], call["not"]
				for (i = 1; i <= nt; i++)
					printf "| %s | %d tried: %d reproduced, %d not reproduced (fixed upstream), %d not reproduced |\n", order[i], n[order[i]], c[order[i], "rep"], c[order[i], "fix"], c[order[i], "not"]
				for (i = 1; i <= nt; i++)
					printf "| wall time per case, %s | %s |\n", order[i], t[order[i]]
			}' "$T/sections"
		echo
		cat "$T/sections"
		echo "<!-- known-bugs: end -->"
	} >"$T/block"
}
[ -z "$only" ] || ! grep -q '^<!-- known-bugs: begin' "$O" 2>/dev/null || kb_merge

if [ -f "$O" ] && grep -q '^<!-- known-bugs: begin' "$O"; then
	awk -v blk="$T/block" '
		/^<!-- known-bugs: begin/ { while ((getline l < blk) > 0) print l; skip = 1; next }
		/^<!-- known-bugs: end/ { skip = 0; next }
		!skip { print }' "$O" >"$T/page"
	cat "$T/page" >"$O"
else
	{
		echo "# Known bugs: does the kit find what others published?"
		echo
		echo "Written by \`tools/known_bugs.sh\`; rerunning it replaces what lies"
		echo "between the markers. Each row is a bug an established crash-testing"
		echo "tool published, run here under \`torture --target exec\` or an engine"
		echo "adapter ([targets.md](targets.md), [faults.md](faults.md)) with"
		echo "Debian 12's build of the program: one bounded run (\`--seed 1\`, at"
		echo "most $D of cycles, then the explanation of a violation), one at a"
		echo "time. The sources, one section each: LazyFS (\"When Amnesia Strikes\","
		echo "VLDB 2024; its repository's \`reproduced-bugs/\` holds one script per"
		echo "bug), CuttleFS (Rebello et al., \"Can Applications Recover from fsync"
		echo "Failures?\", USENIX ATC 2020) and ALICE (Pillai et al., \"All File"
		echo "Systems Are Not Created Equal\", OSDI 2014). The kit's workloads are"
		echo "its own (\`tests/targets/\`, the engine adapters in \`targets/\`):"
		echo "they follow each bug's workload and symptom, not the tools' code."
		echo
		echo "A result is **reproduced** (the cycle, the first violation, the"
		echo "smallest cause torture's replays found and the call site it named),"
		echo "**not reproduced, fixed upstream** (with the evidence), or **not"
		echo "reproduced** (with the reason). The machine is shared: wall times are"
		echo "noisy."
		echo
		cat "$T/block"
		echo
		echo "Not covered yet: PebblesDB (13, 14, 15) and lnd (12), which"
		echo "Debian 12 does not ship; CuttleFS's ext4 data=journal column (the kit"
		echo "has no model of data journaling); ALICE's HSQLDB, HDFS and VMware"
		echo "player (not run here). LazyFS ran ZooKeeper as a three-server"
		echo "ensemble and crashed one follower; the rows here run a standalone"
		echo "server (zookeeper-21 says why that bug needs the ensemble)."
	} >"$O"
fi
cat "$T/rows"
