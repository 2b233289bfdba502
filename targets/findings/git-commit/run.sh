#!/bin/sh
# run.sh [WORKDIR] -- reproduce, without the kit, that `git commit` (git
# 2.39, Debian 12) with core.fsync=all and core.fsyncMethod=fsync returns
# before the rename that moves the branch to the new commit is durable:
# with that rename undone by a power cut (its directory was never synced),
# the branch is back at the previous commit.  Uses the rename-undoing
# LD_PRELOAD library of ../xapian-commit.  Needs git and cc.  Exit 0 when
# the defect shows, 1 if not.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
W=${1:-$(mktemp -d)}
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$W/undorename.so" \
	"$here/../xapian-commit/undorename.c" -ldl
r=$W/repo
rm -rf "$r"
git init -q "$r"
git -C "$r" config user.name finding && git -C "$r" config user.email f@f
echo one >"$r/f" && git -C "$r" add f && git -C "$r" commit -qm one
sync                                  # the first commit, durable by hand
before=$(git -C "$r" rev-parse HEAD)
echo two >"$r/f"
UNDORENAME_DIR="$r/.git/refs/heads" LD_PRELOAD="$W/undorename.so" \
	git -C "$r" -c core.fsync=all -c core.fsyncMethod=fsync \
	commit -qam two 2>"$W/log"
echo "git commit returned $? (the commit is acknowledged)"
sed 's/^/  /' "$W/log"
after=$(git -C "$r" rev-parse HEAD)
echo "after the power cut the branch is at: $(git -C "$r" log -1 --format=%s "$after")"
if [ "$after" = "$before" ]; then
	echo "DEFECT: the acknowledged commit is no longer on the branch"
	exit 0
fi
echo "not reproduced"
exit 1
