#!/bin/sh
# sound_servers.sh BUILD_DIR -- servers people run, judged through the
# front end that sees them: etcd (a Go program, Debian's etcd-server) under
# power cuts.  With its defaults every acknowledged put survives, its bytes
# recorded by the supervisor; with --unsafe-no-fsync (etcd's own flag that
# skips the WAL's fsyncs) a power cut loses acknowledged puts -- before the
# supervisor both PASSed, 0 bytes seen.  Bounded: about two minutes; skipped
# (saying so) where etcd, curl or jq is missing.
set -u
B=${1:-build}
TORTURE=$B/torture
E=tests/targets/etcd.sh
T=$(mktemp -d /tmp/keel-servers.XXXXXX)
fails=0
checks=0
trap 'rm -rf "$T"' EXIT
mkdir "$T/tmp"
export TMPDIR="$T/tmp"

. "$(dirname "$0")/lib.sh"

for tool in etcd curl jq; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "sound_servers.sh: no $tool (apt-get install etcd-server" \
		     "curl jq): etcd is not tested"
		exit 0
	fi
done

run() {
	name=$1 want=$2 pat=$3
	shift 3
	t0=$(date +%s)
	"$TORTURE" --target exec --quiet "$@" >"$T/$name.out" 2>&1
	rc=$?
	case "|$want|" in
	*"|$rc|"*) ok "$name exits $rc ($(( $(date +%s) - t0 ))s)" ;;
	*) bad "$name exits $want ($(( $(date +%s) - t0 ))s): got $rc"
	   tail -c 2000 "$T/$name.out" ;;
	esac
	[ -z "$pat" ] || contains "$name says so" "$T/$name.out" "$pat"
}

# lives of 4 s: etcd starts in about one, and each put is a curl process
run "etcd-defaults" 0 "front end +workload: supervisor" --power-loss \
	--kill-every 4s --cycles 3 --seed 1 \
	--setup "bash $E {dir} --init" --workload "bash $E {dir}" \
	--checker "bash $E {dir} --check"
n=$(sed -n 's/^  tracked calls  *\([0-9]*\) bytes.*/\1/p' "$T/etcd-defaults.out")
if [ "${n:-0}" -gt 0 ]; then ok "etcd-defaults recorded $n bytes"; else
	bad "etcd-defaults recorded no bytes"; fi
# the loss needs a put whose WAL entry was not yet written back when the
# power went: a few cycles, each ending at the first loss
# (or etcd will not start on what the cut left of its WAL: unavailable, 3)
run "etcd-unsafe-no-fsync" "1|3" "cycle [0-9]+: (lost: key|availability)" \
	--power-loss \
	--kill-every 4s --cycles 8 --seed 1 --no-explain \
	--setup "bash $E {dir} --init" \
	--workload "bash $E {dir} --unsafe-no-fsync" \
	--checker "bash $E {dir} --check"

echo "sound_servers.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
