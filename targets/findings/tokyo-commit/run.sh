#!/bin/sh
# run.sh [WORKDIR] -- reproduce, without the kit, that Tokyo Cabinet 1.4.48
# (Debian 12, libtokyocabinet9) with HDBOTSYNC returns true from
# tchdbtrancommit before the truncation of its write-ahead log is durable:
# with that truncation undone by a power cut (the file was never synced
# after it), the next open finds the log of the committed transaction and
# restores it -- the acknowledged commit is undone.  undotrunc.c plays the
# cut (an LD_PRELOAD library that undoes, at exit, every truncation not
# synced since).  Needs libtokyocabinet-dev and cc.  Exit 0 when the defect
# shows, 1 if not.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
W=${1:-$(mktemp -d)}
cc -O2 -Wall -Wextra -Werror -o "$W/kv" "$here/kv.c" -ltokyocabinet
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$W/undotrunc.so" \
	"$here/undotrunc.c" -ldl
db=$W/db
rm -rf "$db"
mkdir -p "$db"
"$W/kv" "$db/casket.tch" put one >/dev/null
sync                                  # the first commit, durable by hand
UNDOTRUNC_SUFFIX=.wal LD_PRELOAD="$W/undotrunc.so" \
	"$W/kv" "$db/casket.tch" put two >/dev/null 2>"$W/log"
echo "tchdbtrancommit returned true (the commit of k=two is acknowledged)"
sed 's/^/  /' "$W/log"
got=$("$W/kv" "$db/casket.tch" get)
echo "after the power cut, the next open reads k=$got"
if [ "$got" = one ]; then
	echo "DEFECT: the acknowledged commit is undone"
	exit 0
fi
echo "not reproduced"
exit 1
