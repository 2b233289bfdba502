#!/bin/sh
# git.sh -- the adapter of torture --target git:CONFIG (docs/claims.md): a
# git repository in DIR where each put writes one key's file and commits
# it, one git process per call, as people use git; the put is acknowledged
# once `git commit` has returned.
#
#   git DIR CONFIG           the workload (the protocol on $KEEL_TORTURE_FD)
#   git DIR CONFIG --check   "KEY VALUE" for each key in HEAD's tree; exit 3
#                            (availability) when HEAD names a commit git
#                            cannot read: the repository needs repair
#   git --version | --configs
#
# CONFIG  defaults  git's own settings (core.fsync: objects and derived
#                   metadata, not references -- git-config(1))
#         fsync     core.fsync=all, core.fsyncMethod=fsync: every file
#                   git writes is fsynced (git never fsyncs a directory)
# A kill can leave git's lock files behind (index.lock, a ref's .lock)
# and a key staged but not committed; git asks a person to remove the
# locks, and this workload is that person (the only git process in DIR):
# it removes them and resets the index to HEAD.
if [ "$1" = --configs ]; then
	printf '%s\n' defaults fsync
	exit 0
fi
if [ "$1" = --version ]; then
	git --version | sed 's/^git version //'
	exit 0
fi
d=$1 config=$2 mode=${3:-}
case $config in
defaults) set -- ;;
fsync) set -- -c core.fsync=all -c core.fsyncMethod=fsync ;;
*) echo "git.sh: unknown configuration '$config'" >&2; exit 2 ;;
esac
g() { git -C "$d" "$@"; }
if [ "$mode" = --check ]; then
	[ -d "$d/.git" ] || exit 0
	if ! g rev-parse -q --verify HEAD >/dev/null 2>&1; then
		# no commit yet, or HEAD's ref lost: keys absent
		exit 0
	fi
	# a HEAD that names a commit git cannot read: repair needed
	g cat-file -e HEAD^{tree} 2>/dev/null || exit 3
	for k in k0 k1 k2 k3 k4 k5 k6 k7; do
		v=$(g show "HEAD:$k" 2>/dev/null) || continue
		echo "$k ${v:-<empty>}"
	done
	exit 0
fi
fd=${KEEL_TORTURE_FD:?run me under torture --target git}
if [ ! -d "$d/.git" ]; then
	git init -q "$d" && g config user.name torture &&
		g config user.email torture@localhost && g config gc.auto 0 ||
		exit 1
fi
rm -f "$d/.git/index.lock" "$d/.git/HEAD.lock" "$d/.git/refs/heads/"*.lock
# a kill between `git add` and `git commit` leaves that key staged, and the
# next put's commit would publish the value of a put never acknowledged
# (after a check that found it absent): the index starts as HEAD's tree
if g rev-parse -q --verify HEAD >/dev/null 2>&1; then
	g reset -q >/dev/null 2>&1
else
	rm -f "$d/.git/index"
fi
n=0
while [ $n -lt 100000 ]; do
	n=$((n + 1))
	k=k$(( (KEEL_TORTURE_SEED % 8 + n) % 8 ))
	v=v$n.$$
	echo "intent $n $k $v" >&"$fd"
	printf '%s\n' "$v" >"$d/$k"
	g "$@" add "$k" && g "$@" commit -q -m "$n" || exit 1
	echo "ack $n" >&"$fd"
done
