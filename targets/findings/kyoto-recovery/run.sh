#!/bin/sh
# run.sh [WORKDIR] -- reproduce, without the kit, that Kyoto Cabinet 1.2.79's
# HashDB (Debian 12's libkyotocabinet16v5) repairs a database that was not
# closed by copying it to DB.tmpkch and renaming that over the database,
# with no sync of the directory: when a power cut undoes that rename, the
# transactions committed (hard, synced) after the repair are gone.  Uses the
# rename-undoing LD_PRELOAD library of ../xapian-commit.  Needs
# libkyotocabinet-dev and cc.  Exit 0 when the defect shows, 1 if not.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
W=${1:-$(mktemp -d)}
cc -O2 -Wall -Wextra -Werror -o "$W/kv" "$here/kv.c" -lkyotocabinet
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$W/undorename.so" \
	"$here/../xapian-commit/undorename.c" -ldl
d=$W/db
rm -rf "$d" && mkdir "$d"
"$W/kv" "$d" 50 >/dev/null            # a database, closed cleanly
"$W/kv" "$d" >/dev/null & pid=$!      # a writer killed in the middle:
sleep 0.3; kill -9 $pid; wait $pid 2>/dev/null || true   # not closed
sync                                  # all of it durable, by hand
acked=$(UNDORENAME_DIR="$d" LD_PRELOAD="$W/undorename.so" \
	"$W/kv" "$d" 1 2>"$W/log")        # opens (repairs), one hard commit
echo "after the repairing open, committed: $acked"
sed 's/^/  /' "$W/log"
k=$(echo "$acked" | awk '{print $2}')
v=$(echo "$acked" | awk '{print $3}')
after=$("$W/kv" "$d" --check | grep "^$k " || true)
echo "after the power cut: ${after:-$k absent}"
if [ "$after" = "$k $v" ]; then
	echo "not reproduced"
	exit 1
fi
echo "DEFECT: the transaction committed after the repair is gone"
