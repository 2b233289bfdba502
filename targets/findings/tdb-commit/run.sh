#!/bin/sh
# run.sh [WORKDIR] -- reproduce, without the kit, that tdb_transaction_commit
# (Samba's tdb 1.4.8, Debian 12's libtdb1) returns success when the sync
# that clears its recovery marker fails, and that a power cut afterwards
# rolls the acknowledged commit back.  Needs libtdb-dev and a C compiler.
# Exit 0 when the defect shows (the acknowledged value is gone), 1 if not.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
W=${1:-$(mktemp -d)}
cc -O2 -Wall -Wextra -Werror -o "$W/repro" "$here/repro.c" -ltdb
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$W/failsync.so" \
	"$here/failsync.c" -ldl
db=$W/t.tdb
found=1
for n in 0 1 2 3 4; do
	rm -f "$db"
	"$W/repro" "$db" init
	out=$(FAILSYNC_FILE=t.tdb FAILSYNC_NTH=$n LD_PRELOAD="$W/failsync.so" \
		"$W/repro" "$db" commit 2>/dev/null)
	after=$("$W/repro" "$db" read)
	echo "fail sync $n of the commit: $out; after the power cut: $after"
	case "$out:$after" in
	*"returned 0"*:"key = old") found=0 ;;
	esac
done
[ $found = 0 ] && echo "DEFECT: an acknowledged commit was rolled back" ||
	echo "not reproduced"
exit $found
