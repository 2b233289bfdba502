#!/bin/sh
# daemon.sh DIR -- a workload that first starts a process in a session of
# its own (setsid, as a daemon does; every PostgreSQL backend does the
# same), then overwrites DIR/data and syncs it, acknowledging each value.
# A kill must stop the whole program, not its process group alone: the
# checker fails while that process still runs, as a second postmaster
# refuses to start beside a backend of the first.
#
# daemon.sh DIR --init writes the first value (torture's --setup);
# daemon.sh DIR --check checks that no process of the last life runs, and
# prints the value.
set -u
d=$1
case ${2:-} in
--init) printf 'data v%08d\n' 0 >"$d/data"; exit 0 ;;
--check)
	pid=$(cat "$d/daemon.pid" 2>/dev/null)
	if [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = sleep ]; then
		echo "daemon.sh: process $pid of the last life still runs" >&2
		exit 1
	fi
	cat "$d/data"
	exit 0 ;;
esac
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
# not the protocol's descriptor: the process outlives nothing by holding it
eval "setsid sleep 600 </dev/null >/dev/null 2>&1 $fd>&- &"
echo $! >"$d/daemon.pid"
i=0
while :; do
	i=$((i + 1))
	v=$(printf 'v%08d' $i)
	echo "intent $i data $v" >&"$fd"
	printf 'data %s\n' "$v" |
		dd of="$d/data" conv=notrunc,fsync status=none || exit 1
	echo "ack $i" >&"$fd"
done
