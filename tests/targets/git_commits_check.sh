#!/bin/sh
# git_commits_check.sh DIR -- the checker of git_commits.sh: "KEY VALUE" for
# each key in the commit HEAD names (nothing when there is no commit yet).
# A repository git cannot read (a ref naming a missing object) fails the
# check: the kit reports it as an unreadable store.
d=$1
[ -d "$d/.git" ] || exit 0
git -C "$d" rev-parse -q --verify HEAD >/dev/null 2>&1 || {
	# no commit: a fresh repository, or a HEAD whose ref is empty/missing
	[ -z "$(git -C "$d" for-each-ref 2>/dev/null)" ] && exit 0
	echo "git_commits_check: refs exist but HEAD does not resolve" >&2
	exit 1
}
git -C "$d" fsck --no-dangling --connectivity-only >/dev/null 2>&1 || exit 1
for k in k0 k1 k2 k3 k4 k5 k6 k7; do
	v=$(git -C "$d" show "HEAD:$k" 2>/dev/null) || continue
	echo "$k ${v:-<empty>}"
done
