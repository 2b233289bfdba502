#!/bin/sh
# slurm.sh BUILD_DIR -- sharded runs on a real scheduler: starts a private
# one-node Slurm cluster (Debian's slurm-wlm and munge), submits a torture
# campaign, a generated-mutant sample and a reference-model run
# (tests/refmodel/shard.sh) as Slurm job arrays of two tasks,
# merges the shards, and checks each merged table equals the same work run
# unsharded.  Skips, saying why, where it cannot start Slurm (not root, the
# packages missing); leaves nothing running.
#
# Private means nothing of the machine's own set-up is touched: the munge
# daemon, its key and socket, Slurm's configuration (SLURM_CONF), state,
# logs and ports all live in a temporary directory.
set -u
B=${1:-build}
case $B in /*) ;; *) B=$(pwd)/$B ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
fails=0
checks=0
. "$(dirname "$0")/lib.sh"
skip() { echo "SKIP slurm.sh: $1"; exit 0; }

[ "$(id -u)" = 0 ] || skip "needs root to start slurmd (run make test as root)"
for c in munged munge unmunge slurmctld slurmd sbatch sinfo runuser python3; do
	command -v "$c" >/dev/null 2>&1 ||
		skip "no $c (apt-get install slurm-wlm munge)"
done
id munge >/dev/null 2>&1 || skip "no munge user (apt-get install munge)"

T=$(mktemp -d /tmp/keel-slurm.XXXXXX)
chmod 755 "$T"
M=$T/munge
stop() {
	for p in "$T/slurmd.pid" "$T/slurmctld.pid" "$M/munged.pid"; do
		[ -s "$p" ] && kill "$(cat "$p" 2>/dev/null)" 2>/dev/null
	done
	# wait (bounded) for them to go, then make sure
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		alive=0
		for p in "$T/slurmd.pid" "$T/slurmctld.pid" "$M/munged.pid"; do
			[ -s "$p" ] && kill -0 "$(cat "$p" 2>/dev/null)" 2>/dev/null && alive=1
		done
		[ $alive = 0 ] && break
		sleep 1
	done
	for p in "$T/slurmd.pid" "$T/slurmctld.pid" "$M/munged.pid"; do
		[ -s "$p" ] && kill -9 "$(cat "$p" 2>/dev/null)" 2>/dev/null
	done
	rm -rf "$T"
}
trap stop EXIT
trap 'exit 1' INT TERM HUP PIPE

# ---- munge: a private daemon, key and socket ------------------------------
mkdir -p "$M"
dd if=/dev/urandom of="$M/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$M/munge.key"
chown -R munge:munge "$M"
chmod 711 "$M"
runuser -u munge -- munged --socket="$M/sock" --key-file="$M/munge.key" \
	--pid-file="$M/munged.pid" --log-file="$M/munged.log" \
	--seed-file="$M/seed" >"$T/munged.out" 2>&1 ||
	skip "munged did not start: $(tail -n 1 "$T/munged.out")"
munge -n --socket="$M/sock" | unmunge --socket="$M/sock" | grep -q 'Success' ||
	skip "munge credentials do not round-trip"

# ---- Slurm: one node, its own ports and directories -----------------------
H=$(hostname)
port=$((20000 + $$ % 20000))
mkdir -p "$T/ctld" "$T/spool"
cat >"$T/slurm.conf" <<EOF
ClusterName=keeltest
SlurmctldHost=$H
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$M/sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/ctld
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ReturnToService=2
NodeName=$H CPUs=$(nproc) State=UNKNOWN
PartitionName=keeltest Nodes=$H Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$T/slurm.conf"
slurmctld >"$T/ctld.out" 2>&1 || skip "slurmctld did not start: $(tail -n 1 "$T/ctld.out")"
slurmd >"$T/d.out" 2>&1 || skip "slurmd did not start: $(tail -n 1 "$T/d.out")"
state=""
for _ in $(seq 60); do
	state=$(sinfo -h -o %t 2>/dev/null)
	[ "$state" = idle ] && break
	sleep 1
done
[ "$state" = idle ] || skip "the node did not come up (state '$state')"
ok "a one-node cluster is up (slurm $(sinfo -V | cut -d' ' -f2))"

# run ARRAY-SIZE SCRIPT: submits SCRIPT as a job array and waits for it
submit() {
	timeout 900 sbatch --array=0-$(($1 - 1)) --wait -o "$T/job-%A-%a.out" \
		"$2" >"$T/sbatch.out" 2>&1
}

# ---- a torture campaign as a job array ------------------------------------
cat >"$T/small.campaign" <<'EOF'
# tests/slurm.sh: a safe and an unsafe recipe
targets = files:rename-full files:rename-nosync
faults = kill power-cut
devices = torn
seeds = 1
cycles = 5
duration = 120s
kill-every = 100ms
EOF
# a run whose workload acknowledged nothing (a very busy machine) makes
# its shard exit 1; it is run again, as docs/campaigns.md says (4 tries)
cat >"$T/campaign.job" <<EOF
#!/bin/sh
export TMPDIR=$T
for try in 1 2 3 4; do
	$B/torture --campaign $T/small.campaign --shard \$SLURM_ARRAY_TASK_ID/2 \\
		--out $T/c\$SLURM_ARRAY_TASK_ID.jsonl 2>>$T/c\$SLURM_ARRAY_TASK_ID.err
	[ \$? = 1 ] || exit 0
done
EOF
chmod +x "$T/campaign.job"
# the same campaign unsharded, beside the job array: its runs are lives of
# 100 ms, mostly waiting for the kill, and what is compared is each run's
# verdict and the cycles of those that hold, which the timing does not move
(for try in 1 2 3 4; do
	TMPDIR=$T "$B/torture" --campaign "$T/small.campaign" \
		--out "$T/whole.jsonl" 2>>"$T/whole.err"
	[ $? = 1 ] || break
done) &
whole=$!
submit 2 "$T/campaign.job"
expect "the campaign's job array ran" 0 $?
for i in 0 1; do
	[ -s "$T/c$i.jsonl" ] && ok "shard $i wrote its results" ||
		bad "shard $i wrote nothing: $(tail -n 3 "$T/c$i.err" 2>/dev/null)"
done
wait $whole
# identity and verdict of every run, and the cycles of those that hold
# (a broken run's cycle depends on where a timed kill landed)
facts() {
	"$B/torture" --report --merge "$@" | sed -e 's/.*"run": \([0-9]*\),.*"target": "\([^"]*\)", "config": "\([^"]*\)",.*"fault": "\([^"]*\)", "device": "\([^"]*\)", "seed": \([0-9]*\),.*"verdict": "\([a-z]*\)", "cycles": \([0-9]*\),.*/\1 \2:\3 \4 \5 \6 \7 \8/' \
		-e 's/ broken [0-9]*$/ broken/' | sort
}
facts "$T/c0.jsonl" "$T/c1.jsonl" >"$T/facts.shards"
facts "$T/whole.jsonl" >"$T/facts.whole"
expect "4 runs in the merged campaign" 4 "$(wc -l <"$T/facts.shards")"
expect "the merged shards equal the unsharded campaign" \
	"$(cat "$T/facts.whole")" "$(cat "$T/facts.shards")"
contains "the unsafe recipe broke under the power cut" "$T/facts.shards" \
	'files:rename-nosync power-cut torn 1 broken'

# ---- a mutant sample as a job array ----------------------------------------
# Three mutants of the CRC code with known fates: two the unit suites kill
# (the hardware path off by one), one trivially equivalent (the ARM path,
# not compiled here), so the test is quick and its table exact.
ids=$(python3 "$root/tools/mutate" list base/crc32c.c 2>/dev/null |
	awk -F'\t' '$2 ~ /return crc32c_hw\(crc, buf, len [+-] 1\)/ ||
		($1 ~ /:swap:/ && $2 ~ /__crc32cd/) { print $1 }' | head -n 3)
set --
for i in $ids; do set -- "$@" --id "$i"; done
expect "three mutants picked" 3 $(($# / 2))
# every unit suite gets a generous cap: these are limits, not expectations
python3 - "$T/times.json" "$root" <<'EOF'
import json, subprocess, sys
t = subprocess.run(["make", "-s", "-C", sys.argv[2], "--no-print-directory",
                    "print-TESTS"], capture_output=True, text=True).stdout.split()
json.dump({n: 30 for n in t}, open(sys.argv[1], "w"))
EOF
cat >"$T/mutants.job" <<EOF
#!/bin/sh
export TMPDIR=$T
exec python3 $root/tools/mutate run --tier unit --base-times $T/times.json \\
	--shard \$SLURM_ARRAY_TASK_ID/2 --work $T/mw\$SLURM_ARRAY_TASK_ID \\
	--out $T/m\$SLURM_ARRAY_TASK_ID.jsonl $* 2>$T/m\$SLURM_ARRAY_TASK_ID.err
EOF
chmod +x "$T/mutants.job"
submit 2 "$T/mutants.job"
expect "the mutants' job array ran" 0 $?
TMPDIR=$T python3 "$root/tools/mutate" run --tier unit \
	--base-times "$T/times.json" --work "$T/mw" --out "$T/mwhole.jsonl" \
	"$@" 2>"$T/mwhole.err"
expect "the unsharded mutant run exits 0" 0 $?
verdicts() {
	python3 "$root/tools/mutate" merge --json "$@" |
		python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print(r["id"], r["result"], r.get("by", "-"))'
}
verdicts "$T/m0.jsonl" "$T/m1.jsonl" >"$T/mv.shards" 2>&1
verdicts "$T/mwhole.jsonl" >"$T/mv.whole" 2>&1
expect "3 mutants in the merged sample" 3 "$(wc -l <"$T/mv.shards")"
expect "the merged shards equal the unsharded sample" \
	"$(cat "$T/mv.whole")" "$(cat "$T/mv.shards")"
[ "$(uname -m)" = x86_64 ] &&
	expect "two killed, one equivalent (the ARM path)" "2 1" \
		"$(grep -c ' KILLED ' "$T/mv.shards") $(grep -c ' EQUIVALENT ' "$T/mv.shards")"

# ---- the reference model's long run as a job array -------------------------
# tests/refmodel/shard.sh, each task a shard of the workloads (here of one
# op, 32 seeds: quick); the merged states are judged as the unsharded
# run's are, workload by workload
cat >"$T/refmodel.job" <<EOF
#!/bin/sh
cd $root && exec sh tests/refmodel/shard.sh $B \$SLURM_ARRAY_TASK_ID/2 \\
	$T/r\$SLURM_ARRAY_TASK_ID 1 32 >$T/r\$SLURM_ARRAY_TASK_ID.log 2>&1
EOF
chmod +x "$T/refmodel.job"
submit 2 "$T/refmodel.job"
expect "the reference model's job array ran" 0 $?
(cd "$root" && sh tests/refmodel/shard.sh "$B" 0/1 "$T/rwhole" 1 32) \
	>"$T/rwhole.log" 2>&1
expect "the unsharded reference run exits 0" 0 $?
for k in data names; do
	py=model.py
	[ $k = data ] || py=names.py
	cat "$T/r0.$k" "$T/r1.$k" 2>/dev/null |
		python3 "$root/tests/refmodel/$py" check 32 >"$T/rshards.$k" 2>&1
	python3 "$root/tests/refmodel/$py" check 32 <"$T/rwhole.$k" \
		>"$T/rwhole.$k.check" 2>&1
	expect "the merged shards' $k check equals the unsharded one's" \
		"$(cat "$T/rwhole.$k.check")" "$(cat "$T/rshards.$k")"
	contains "... and agrees with the model ($k)" "$T/rshards.$k" \
		"no disagreement"
done

echo "slurm.sh: $checks checks, $fails failed"
[ $fails = 0 ]
