#!/bin/sh
# git_commits.sh DIR [CONFIG...] -- a workload for torture --target exec: a
# git repository in DIR where each put writes a key's file and commits it;
# the put is acknowledged once `git commit` has returned.  CONFIG are git
# "-c name=value" settings for every git call (e.g. core.fsync=committed).
# One process per git call: give it lives of a second or more (--kill-every).
d=$1
shift
fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
g() { git -C "$d" "$@"; }
cfg=""
for c in "$@"; do cfg="$cfg -c $c"; done
if [ ! -d "$d/.git" ]; then
	g init -q && g config user.name torture && g config user.email t@t \
		&& g config gc.auto 0 || exit 1
fi
# a kill can leave git's lock behind; git asks a person to remove it, and
# this workload is that person (the only git process in DIR)
rm -f "$d/.git/index.lock" "$d/.git/HEAD.lock" "$d/.git/refs/heads/"*.lock
i=$(g rev-list --count HEAD 2>/dev/null || echo 0)
n=0
while [ $n -lt 100000 ]; do
	i=$((i + 1)); n=$((n + 1))
	k=k$((i % 8))
	v=v$i.$$
	echo "intent $n $k $v" >&"$fd"
	printf '%s\n' "$v" > "$d/$k"
	# shellcheck disable=SC2086
	git -C "$d" $cfg add "$k" && git -C "$d" $cfg commit -q -m "$i" || exit 1
	echo "ack $n" >&"$fd"
done
