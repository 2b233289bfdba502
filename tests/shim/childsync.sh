#!/bin/sh
# childsync.sh DIR [unsafe | --check] -- a put made by a shell and made
# durable by a child process: printf writes DIR/f, `sync -f` (syncfs(2),
# another process) syncs it, and the shell acknowledges without looking at
# the child's status.  Under --enumerate a crash point must stop every
# process of the workload, as a power cut stops the machine: the crash
# point just before the child's syncfs must not let the shell go on and
# acknowledge.  unsafe: no sync at all (a loss to find).
d=$1
if [ "${2:-}" = --check ]; then
	[ -f "$d/f" ] && echo "k $(cat "$d/f")"
	exit 0
fi
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
echo "intent 1 k v1" >&"$fd"
printf v1 >"$d/f"
[ "${2:-}" = unsafe ] || sync -f "$d/f"
echo "ack 1" >&"$fd"
