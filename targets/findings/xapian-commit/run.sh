#!/bin/sh
# run.sh [WORKDIR] -- reproduce, without the kit, that Xapian 1.4.22's
# WritableDatabase::commit() (glass backend, Debian 12's libxapian30)
# returns before the rename that publishes the new revision is durable:
# with that rename undone by a power cut (its directory was never synced),
# the acknowledged commit is gone.  Needs libxapian-dev, g++ and cc.
# Exit 0 when the defect shows, 1 if not.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
W=${1:-$(mktemp -d)}
g++ -O2 -Wall -Wextra -Werror -o "$W/kv" "$here/kv.cc" -lxapian
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$W/undorename.so" \
	"$here/undorename.c" -ldl
rm -rf "$W/db"
"$W/kv" "$W/db" 1 >/dev/null     # revision 1, no faults
sync                              # ... made durable by hand
echo "before: $("$W/kv" "$W/db" --check)"
acked=$(UNDORENAME_DIR="$W/db" LD_PRELOAD="$W/undorename.so" \
	"$W/kv" "$W/db" 1 2>"$W/log")
echo "commit() returned: $acked"
grep -E "rename|synced|durable" "$W/log" | sed 's/^/  /'
after=$("$W/kv" "$W/db" --check)
echo "after the power cut: $after"
k=$(echo "$acked" | awk '{print $2}')
v=$(echo "$acked" | awk '{print $3}')
if echo "$after" | grep -qx "$k $v"; then
	echo "not reproduced"
	exit 1
fi
echo "DEFECT: the acknowledged commit ($k = $v) was rolled back"
