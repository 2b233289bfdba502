#!/bin/sh
# hg.sh DIR -- Mercurial (Debian's mercurial, the hg program) under
# torture --target exec, the workload ALICE ran (Pillai et al., OSDI 2014):
# a repository in DIR where each put writes one key's file and commits it,
# one hg process per call, as people use hg; the put is acknowledged once
# `hg commit` has returned.
#
# hg.sh DIR --init (torture's --setup) makes the repository with one
# commit.  hg.sh DIR --check prints "KEY VALUE" for each key in the tip
# revision's manifest; it first runs `hg recover` when a killed commit left
# an abandoned transaction (what hg tells a person to do), and exits 1 when
# hg cannot read the tip (the repository is corrupt).
#
# A kill leaves hg's lock behind (a symbolic link naming a process that is
# gone); hg breaks such a lock itself when it sees the process is dead.
set -u
d=$1
mode=${2:-}
h() { HGRCPATH= HGPLAIN=1 hg --cwd "$d" --config ui.username=torture "$@"; }

if [ "$mode" = --init ]; then
	hg init "$d" || exit 1
	echo init >"$d/base"
	h commit -q -A -m init || exit 1
	exit 0
fi

if [ "$mode" = --check ]; then
	[ -d "$d/.hg" ] || exit 1
	if [ -e "$d/.hg/store/journal" ]; then
		h recover -q >/dev/null 2>&1
	fi
	files=$(h files -r tip 2>/dev/null) || { echo "hg.sh: hg files -r tip failed" >&2; exit 1; }
	for k in $files; do
		case $k in k[0-9]) ;; *) continue ;; esac
		v=$(h cat -r tip "$k" 2>/dev/null) || { echo "hg.sh: hg cat $k failed" >&2; exit 1; }
		echo "$k ${v:-<empty>}"
	done
	exit 0
fi

fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
[ ! -e "$d/.hg/store/journal" ] || h recover -q >/dev/null 2>&1
n=0
while [ $n -lt 100000 ]; do
	n=$((n + 1))
	k=k$((n % 8))
	v=v$n.$$
	echo "intent $n $k $v" >&"$fd"
	printf '%s\n' "$v" >"$d/$k"
	h commit -q -A -m "$n" "$k" || exit 1
	echo "ack $n" >&"$fd"
done
