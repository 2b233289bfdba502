#!/bin/sh
# faults_doc.sh BUILD -- the fiu-run examples of docs/faults.md ("Examples"
# and "libfiu's POSIX preload") do what the document says they do.  The
# keel-serve example (a commit's own sync failing, through fiu-ctrl) is run
# by tests/http.sh.  libfiu's preload and ASan do not mix: skipped there.
set -u
K="$1/keel"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
checks=0 fails=0
. tests/lib.sh

if ! command -v fiu-run >/dev/null; then
	echo "faults_doc.sh: fiu-run missing (fiu-utils): skipped"
	exit 0
fi
if ldd "$K" 2>/dev/null | grep -q libasan; then
	echo "faults_doc.sh: a sanitizer build: skipped"
	exit 0
fi

S="$T/s.keel"
echo v | "$K" put "$S" k0 - >/dev/null
head -c 100000 /dev/urandom >"$T/big"
state() { "$K" ls -l "$S" | md5sum; }
before=$(state)

# a commit whose write fails
fiu-run -c 'enable name=keel/io/pwrite,failinfo=-1' "$K" put "$S" k "$T/big" \
	>"$T/out" 2>&1
expect "short pwrite: exit 2" 2 $?
contains "short pwrite: the put fails" "$T/out" '^keel: put k: I/O error$'
expect "short pwrite: the store keeps what it had" "$before" "$(state)"

# fdatasync from the start: the open fails, the put never runs
echo v | fiu-run -c 'enable name=keel/io/fdatasync,failinfo=5' "$K" put "$S" k - \
	>"$T/out" 2>&1
expect "fdatasync EIO: exit 2" 2 $?
contains "fdatasync EIO: the open fails" "$T/out" "^keel: $S: I/O error\$"
expect "fdatasync EIO: nothing written" "$before" "$(state)"

echo v | fiu-run -c 'enable name=keel/io/fsync,failinfo=28' \
	-c 'enable name=keel/io/fdatasync,failinfo=28' "$K" put "$S" k - \
	>"$T/out" 2>&1
expect "sync ENOSPC: exit 2" 2 $?
contains "sync ENOSPC: the open fails" "$T/out" "^keel: $S: no space left on device\$"
expect "sync ENOSPC: nothing written" "$before" "$(state)"

# one write in a hundred short: fails (2) or succeeds (0), never corrupts
fiu-run -c 'enable_random name=keel/io/pwrite,probability=0.01,failinfo=-1' \
	"$K" put "$S" k "$T/big" >"$T/out" 2>&1
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 2 ] && ok "random short pwrite: exit $rc" ||
	bad "random short pwrite: exit $rc"
"$K" check "$S" >"$T/out" 2>&1
expect "random short pwrite: the store checks clean" 0 $?

# libfiu's POSIX preload: the same at the open
echo v | fiu-run -x -c 'enable name=posix/io/sync/fdatasync,failinfo=5' \
	-c 'enable name=posix/io/sync/fsync,failinfo=5' "$K" put "$S" k2 - \
	>"$T/out" 2>&1
expect "posix preload fdatasync: exit 2" 2 $?
contains "posix preload fdatasync: the open fails" "$T/out" "^keel: $S: I/O error\$"
"$K" get "$S" k2 >/dev/null 2>&1
expect "posix preload fdatasync: k2 absent" 1 $?

# the simulator's spec: the third fdatasync fails, wherever it falls
TMPDIR=$T "$1/torture" --fail fdatasync:EIO:nth=3 --duration 2 --quiet \
	>"$T/out" 2>&1
expect "torture --fail fdatasync:EIO:nth=3 passes" 0 $?

echo "faults_doc.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
