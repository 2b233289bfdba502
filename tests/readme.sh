#!/bin/sh
# readme.sh BUILD -- the README's example program, taken from README.md as
# printed (so the two cannot drift): built against the build tree and run
# twice in the same directory, then installed with 'make install DESTDIR=..'
# and built again against the installed headers, keel.pc and libkeel.so.
set -u
build=$1
root=$(pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

# the first C block after "## The API"
awk '/^## The API/ { api = 1 }
     api && /^```c$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' README.md >"$T/app.c"
grep -q 'int main' "$T/app.c" && ok "example extracted" || bad "no example in README.md"

run_twice() { # run_twice NAME PROGRAM [ENV...]
	name=$1 prog=$2
	shift 2
	mkdir "$T/run-$name"
	for n in 1 2; do
		(cd "$T/run-$name" && env "$@" "$prog") >"$T/out" 2>&1
		rc=$?
		if [ $rc -eq 0 ] &&
		   grep -q '^{"n":1} at revision [0-9]' "$T/out" &&
		   grep -q '^a stale revision: ' "$T/out"; then
			ok "$name: run $n"
		else
			bad "$name: run $n exit $rc:"; cat "$T/out"
		fi
	done
	[ -s "$T/run-$name/data.keel" ] && ok "$name: data.keel made" ||
		bad "$name: no data.keel"
}

# a sanitizer build's library needs the same runtime in the program
san=
nm "$build/libkeel.a" 2>/dev/null | grep -q '__asan_\|__ubsan_' &&
	san="-fsanitize=address,undefined"
# the README's line: the build tree's include/, laid out as make install does
cc -std=c99 -Wall -Wextra -Werror $san -I"$build/include" "$T/app.c" \
	"$build/libkeel.a" -lfiu -lpthread -o "$T/app-static" 2>"$T/cc.err" &&
	ok "compiles against the build tree" ||
	{ bad "compiles against the build tree:"; cat "$T/cc.err"; }
[ -x "$T/app-static" ] && run_twice build "$T/app-static"

# installed into a staging root, built with pkg-config, run with the
# loader pointed at it (a private prefix is not in ld.so's path)
prefix=/opt/keel-test
make -s install B="$build" DESTDIR="$T/root" PREFIX=$prefix >"$T/install.out" 2>&1 &&
	ok "make install DESTDIR" ||
	{ bad "make install DESTDIR:"; cat "$T/install.out"; }
inc=$T/root$prefix/include
for h in keel.h keel_err.h keel_recovery.h; do # keel.h and what it includes
	[ -f "$inc/$h" ] && ok "$h at the top of include/" || bad "no include/$h"
done
[ -f "$inc/keel/io.h" ] && ok "io.h under include/keel/" || bad "no include/keel/io.h"
[ ! -e "$inc/io.h" ] && ok "no io.h in include/ itself" || bad "io.h in include/"
[ -L "$T/root$prefix/lib/libkeel.so" ] && [ -f "$T/root$prefix/lib/libkeel.so.1" ] &&
	ok "libkeel.so -> libkeel.so.1" || bad "shared library not installed"
flags=$(PKG_CONFIG_SYSROOT_DIR="$T/root" \
	PKG_CONFIG_PATH="$T/root$prefix/lib/pkgconfig" \
	pkg-config --cflags --libs keel 2>"$T/pc.err") &&
	ok "pkg-config keel: $flags" || { bad "pkg-config keel:"; cat "$T/pc.err"; }
# the flags come after the source, as in the README's line
cc -std=c99 -Wall -Wextra -Werror $san "$T/app.c" $flags -o "$T/app-installed" \
	2>"$T/cc.err" && ok "compiles against the installed keel" ||
	{ bad "compiles against the installed keel:"; cat "$T/cc.err"; }
[ -x "$T/app-installed" ] &&
	run_twice installed "$T/app-installed" LD_LIBRARY_PATH="$T/root$prefix/lib"

echo "readme.sh: $fails failed"
[ $fails -eq 0 ]
