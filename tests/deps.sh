#!/bin/sh
# deps.sh PKG... -- make sure the Debian packages are installed.
# As root: installs what is missing (apt-get update once, then install).
# Otherwise: prints the exact apt-get line and fails.
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "keel: missing Debian packages. Run as root:" >&2
	echo "  apt-get update && apt-get install -y$missing" >&2
	exit 1
fi
echo "keel: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# apt's chatter (on a minimal system debconf's "delaying package
# configuration, since apt-utils is not installed") goes to a log, shown
# only when something fails.
log=$(mktemp) || exit 1
# Another apt (a machine's own first-boot or periodic run) may hold the
# lock for a while: wait for it, up to 10 minutes, rather than fail.
for try in $(seq 60); do
	if apt-get -o DPkg::Lock::Timeout=60 update -qq >"$log" 2>&1 &&
	   apt-get -o DPkg::Lock::Timeout=60 install -y -qq$missing >>"$log" 2>&1; then
		rm -f "$log"
		exit 0
	fi
	grep -q 'Could not get lock\|Unable to lock' "$log" || break
	echo "keel: apt is busy (another apt holds its lock); waiting" >&2
	sleep 10
done
echo "keel: apt-get install$missing failed:" >&2
tail -n 30 "$log" >&2
rm -f "$log"
exit 1
