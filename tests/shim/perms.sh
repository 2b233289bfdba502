#!/bin/sh
# perms.sh DIR -- a workload run as another user (torture --user), for the
# supervisor's identity (supervisor/creds.c): the calls the harness makes
# on a program's behalf must be checked as the program's own.  Each put
# first tries to create DIR/ro/fN in a directory the program made
# read-only (mode 555), which the kernel refuses anyone but root, and
# syncs DIR/ro (what was made there outlasts a power cut), then
# saves "data vN" the safe way (write, fsync, rename, fsync of DIR) and
# acknowledges it.
#
# perms.sh DIR --check prints "data V" and exits 1 when DIR/ro holds
# anything: a create the program was not allowed to make was made.
set -u
d=$1
if [ "${2:-}" = --check ]; then
	[ -z "$(ls -A "$d/ro" 2>/dev/null)" ] || {
		echo "perms.sh: $d/ro holds $(ls -A "$d/ro" | head -n 3 | tr '\n' ' ')" >&2
		exit 1
	}
	cat "$d/data" 2>/dev/null
	exit 0
fi
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
[ "$(id -u)" != 0 ] || { echo "perms.sh: run me as another user (--user)" >&2; exit 2; }
mkdir -p "$d/ro" && chmod 555 "$d/ro" || exit 2
i=0
while :; do
	i=$((i + 1))
	echo "intent $i data v$i" >&"$fd"
	(: >"$d/ro/f$i") 2>/dev/null
	sync "$d/ro" || exit 1 # what was made there lasts
	printf 'data v%d\n' "$i" >"$d/data.tmp" && sync "$d/data.tmp" &&
		mv "$d/data.tmp" "$d/data" && sync "$d" || exit 1
	echo "ack $i" >&"$fd"
done
