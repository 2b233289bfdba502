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
apt-get update -qq >/dev/null && apt-get install -y -qq$missing >/dev/null || {
	echo "keel: apt-get install$missing failed" >&2
	exit 1
}
