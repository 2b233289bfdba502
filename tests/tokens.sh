#!/bin/sh
# tokens.sh BUILD_DIR -- keel-serve's access tokens (--tokens, docs/http.md
# "Access tokens"): 401 and 403, read and write scopes, prefixes and
# listings, SIGHUP re-reads (a bad file keeps the old tokens), malformed
# files, the loopback rule, --hash-token, and no token in the server's
# output.  Every server listens on 127.0.0.1 (port picked by the kernel)
# except the two that check the loopback rule; every client call and wait
# is bounded.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
set -u
B=${1:-build}
SERVE=$B/keel-serve
T=$(mktemp -d /tmp/keel-tokens.XXXXXX)
fails=0
checks=0
PIDS=""
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

. "$(dirname "$0")/lib.sh"

[ -x "$SERVE" ] || { echo "no $SERVE"; exit 1; }

# start NAME ARGS... -- starts a server on 127.0.0.1:0, sets PORT and PID
start() {
	local name=$1 i
	shift
	"$SERVE" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PID=$!
	PIDS="$PIDS $PID"
	for i in $(seq 400); do
		PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/$name.out")
		[ -n "$PORT" ] && return 0
		sleep 0.05
	done
	echo "server $name did not start:"; cat "$T/$name.err"; exit 1
}
# code [CURL ARGS...] -- the status; headers in $T/h, body in $T/body
code() { curl -s -m 5 -D "$T/h" -o "$T/body" -w '%{http_code}' "$@"; }
# as TOKEN [CURL ARGS...] -- code with that bearer token
as() { local t=$1; shift; code -H "Authorization: Bearer $t" "$@"; }
# waitmore FILE PATTERN N -- until FILE has more than N lines matching
waitmore() {
	local i
	for i in $(seq 400); do
		[ "$(grep -cE -e "$2" "$1")" -gt "$3" ] && return 0
		sleep 0.05
	done
	return 1
}
line() { "$SERVE" --hash-token "$@"; }

RT=read-token-AAAA1111
WT=write-token-BBBB2222
PT=prefix-token-CCCC3333
NT=new-token-DDDD4444

# ---- --hash-token ---------------------------------------------------------------
want=$(printf %s "$RT" | sha256sum | cut -d' ' -f1)
expect "--hash-token prints SHA-256 and the scope" "$want read" "$(line "$RT" read)"
expect "--hash-token reads the token from stdin with -" "$want write" \
	"$(printf '%s\n' "$RT" | line - write)"
expect "--hash-token keeps the prefix as written" \
	"$(printf %s "$PT" | sha256sum | cut -d' ' -f1) write team%2Fa/" \
	"$(line "$PT" write team%2Fa/)"
line "$RT" admin >"$T/ht.out" 2>"$T/ht.err"
expect "--hash-token with a bad scope exits 2" 2 $?
contains "--hash-token names the scope rule" "$T/ht.err" "read or write"
line 'has space' read >"$T/ht.out" 2>"$T/ht.err"
expect "--hash-token with a token no client can send exits 2" 2 $?
grep -qF 'has space' "$T/ht.err" && bad "--hash-token echoed the token" ||
	ok "--hash-token's error does not echo the token"
head -c 5000 /dev/zero | tr '\0' a | line - read >"$T/ht.out" 2>"$T/ht.err"
expect "--hash-token - with an over-long token exits 2" 2 $?
contains "--hash-token - says it is too long" "$T/ht.err" "longer than 4096 bytes"
line "$RT" >/dev/null 2>&1
expect "--hash-token without a scope exits 2" 2 $?

# ---- the tokens file --------------------------------------------------------
{
	echo "# keel-serve tokens"
	echo
	line "$RT" read
	line "$WT" write
	line "$PT" write team%2Fa/
} >"$T/tokens"
start main --db "$T/main.keel" --tokens "$T/tokens"
U=http://127.0.0.1:$PORT

expect "no Authorization: 401" 401 "$(code "$U/k")"
contains "401 carries WWW-Authenticate: Bearer" "$T/h" \
	'^WWW-Authenticate: Bearer realm="keel"'
expect "another scheme: 401" 401 "$(code -H 'Authorization: Basic dXNlcjpwdw==' "$U/k")"
expect "a malformed bearer token: 401" 401 "$(code -H 'Authorization: Bearer a b' "$U/k")"
expect "an unknown token: 403" 403 "$(as wrong-token-0000 "$U/k")"
contains "an unknown token is invalid_token (RFC 6750)" "$T/h" 'error="invalid_token"'
grep -qF wrong-token-0000 "$T/h" "$T/body" && bad "the answer echoed the token" ||
	ok "the answer does not echo the token"
expect "no Authorization on a listing: 401" 401 "$(code "$U/")"
expect "no Authorization on PUT: 401, nothing stored" 401 \
	"$(code -X PUT --data-binary v "$U/k")"

# raw FILE -- sends stdin on a new connection, the reply goes to FILE (the
# server closes after the last request, which asks for it; at most 3 s)
raw() {
	exec 3<>/dev/tcp/127.0.0.1/$PORT || return 1
	cat >&3
	timeout 3 cat <&3 >"$1"
	exec 3<&-
}
printf 'HEAD /k HTTP/1.1\r\nHost: a\r\n\r\nGET /k HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' |
	raw "$T/raw"
expect "a refused HEAD keeps the connection: two answers" 2 \
	"$(grep -ac '^HTTP/1.1 401' "$T/raw")"
grep -aq 'UnauthorizedHTTP/' "$T/raw" && bad "the refused HEAD carried a body" ||
	ok "the refused HEAD carries no body"
printf 'PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET /k HTTP/1.1\r\nHost: a\r\n\r\n' |
	raw "$T/raw"
expect "a refused PUT's body is not read: one answer, then close" 1 \
	"$(grep -ac '^HTTP/1.1 ' "$T/raw")"
contains "the refused PUT's answer closes" "$T/raw" '^Connection: close'

expect "write token: PUT 201" 201 "$(as "$WT" -X PUT --data-binary hello "$U/k")"
expect "write token: GET 200" 200 "$(as "$WT" "$U/k")"
expect "read token: GET 200" 200 "$(as "$RT" "$U/k")"
expect "read token: the value" hello "$(cat "$T/body")"
expect "read token: HEAD 200" 200 "$(as "$RT" -I "$U/k")"
expect "read token: listing 200" 200 "$(as "$RT" "$U/?prefix=k")"
expect "read token: PUT 403" 403 "$(as "$RT" -X PUT --data-binary x "$U/k")"
contains "403 says insufficient_scope" "$T/h" 'error="insufficient_scope"'
expect "read token: DELETE 403" 403 "$(as "$RT" -X DELETE "$U/k")"
as "$RT" "$U/k" >/dev/null
expect "the refused PUT changed nothing" hello "$(cat "$T/body")"
expect "Bearer in any case, several spaces" 200 \
	"$(code -H "Authorization: bEaReR   $RT" "$U/k")"
expect "two Authorization headers: 400" 400 \
	"$(code -H "Authorization: Bearer $RT" -H "Authorization: Bearer $WT" "$U/k")"
expect "write token: DELETE 204" 204 "$(as "$WT" -X DELETE "$U/k")"

# a prefix-limited write token: team/a/ (written team%2Fa/ in the file)
expect "prefix token: PUT in scope 201" 201 \
	"$(as "$PT" -X PUT --data-binary x "$U/team%2Fa%2Fdoc")"
expect "prefix token: GET in scope 200" 200 "$(as "$PT" "$U/team%2Fa%2Fdoc")"
expect "prefix token: a raw slash spells the same key" 200 "$(as "$PT" "$U/team/a/doc")"
expect "prefix token: PUT out of scope 403" 403 \
	"$(as "$PT" -X PUT --data-binary x "$U/team%2Fb%2Fdoc")"
expect "prefix token: a key shorter than the prefix 403" 403 "$(as "$PT" "$U/team")"
expect "prefix token: listing its prefix 200" 200 "$(as "$PT" "$U/?prefix=team%2Fa%2F")"
contains "prefix token: the listing shows the key" "$T/body" '"key":"team/a/doc"'
expect "prefix token: listing a longer prefix 200" 200 "$(as "$PT" "$U/?prefix=team/a/d")"
expect "prefix token: listing everything 403" 403 "$(as "$PT" "$U/")"
expect "prefix token: listing a shorter prefix 403" 403 "$(as "$PT" "$U/?prefix=team")"

# ---- SIGHUP ----------------------------------------------------------------
{ line "$NT" read; line "$WT" write; } >"$T/tokens.new"
mv "$T/tokens.new" "$T/tokens"
kill -HUP "$PID"
waitfor "$T/main.err" "SIGHUP: .*: 2 tokens" && ok "SIGHUP: the new file is loaded" ||
	bad "SIGHUP: no reload message in: $(cat "$T/main.err")"
expect "SIGHUP: the new token works" 200 "$(as "$NT" "$U/?prefix=")"
expect "SIGHUP: the removed token is refused" 403 "$(as "$RT" "$U/?prefix=")"
expect "SIGHUP: the removed prefix token is refused" 403 "$(as "$PT" "$U/team%2Fa%2Fdoc")"

{ line "$WT" write; echo "not-a-hash read"; } >"$T/tokens"
kill -HUP "$PID"
waitfor "$T/main.err" "SIGHUP: .*tokens: line 2: .*stay in force" &&
	ok "SIGHUP with a bad file: refused, naming file and line" ||
	bad "SIGHUP with a bad file: no message in: $(cat "$T/main.err")"
expect "SIGHUP with a bad file: the old tokens still work" 200 "$(as "$NT" "$U/?prefix=")"
expect "SIGHUP with a bad file: still no access without a token" 401 "$(code "$U/after-hup")"
expect "SIGHUP with a bad file: still no access with an unknown one" 403 \
	"$(as wrong-token-0000 "$U/after-hup")"
expect "SIGHUP with a bad file: nothing lost (write token)" 201 \
	"$(as "$WT" -X PUT --data-binary y "$U/after-hup")"
kill -0 "$PID" 2>/dev/null && ok "SIGHUP with a bad file: the server runs on" ||
	bad "the server died"

# several reloads in a row: each must land, the old tables freed under ASan
for i in 1 2 3; do
	n=$(grep -c 'SIGHUP: ' "$T/main.err")
	line "$NT" write >"$T/tokens"
	kill -HUP "$PID"
	waitmore "$T/main.err" 'SIGHUP: ' "$n" || bad "reload $i: no SIGHUP message"
done
expect "after three more reloads the last file is in force" 201 \
	"$(as "$NT" -X PUT --data-binary z "$U/nt")"
expect "and the write token it no longer holds is refused" 403 "$(as "$WT" "$U/nt")"

kill -TERM "$PID"
for i in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
wait "$PID"
expect "the server exits 0 after SIGTERM" 0 $?

leaked=""
for t in "$RT" "$WT" "$PT" "$NT" wrong-token-0000; do
	grep -qF "$t" "$T/main.out" "$T/main.err" && leaked="$leaked $t"
done
expect "no token appears in the server's stdout or stderr" "" "$leaked"

# ---- malformed files at startup: exit 2 naming file and line ---------------
bad_file() { # bad_file NAME PATTERN -- $T/bad holds the file
	timeout 10 "$SERVE" --db "$T/bad.keel" --listen 127.0.0.1:0 \
		--tokens "$T/bad" >"$T/bad.out" 2>"$T/bad.err"
	expect "$1: exit 2" 2 $?
	contains "$1: the message" "$T/bad.err" "$2"
}
{ line "$RT" read; echo; echo "$want rw"; } >"$T/bad"
bad_file "a bad scope on line 3" "$T/bad: line 3: the scope must be read or write"
{ echo "# c"; echo "${want^^} read"; } >"$T/bad"
bad_file "upper-case hex" "$T/bad: line 2: expected the token's SHA-256"
{ echo "$want read a%zz"; } >"$T/bad"
bad_file "a bad escape in the prefix" "line 1: the prefix has a bad %XX escape"
{ echo "$want read a b"; } >"$T/bad"
bad_file "text after the prefix" "line 1: unexpected text after the prefix"
{ line "$RT" read; line "$RT" write; } >"$T/bad"
bad_file "the same token twice" "line 2: the same token as line 1"
{ printf '%s read ' "$want"; head -c 5000 /dev/zero | tr '\0' a; echo; } >"$T/bad"
bad_file "an over-long line" "line 1: longer than 4096 bytes"
head -c 1100000 /dev/zero | tr '\0' '\n' >"$T/bad"
bad_file "a file over 1 MiB" "larger than 1048576 bytes"
rm -f "$T/bad"
bad_file "a missing file" "$T/bad: No such file"
grep -qF "$want" "$T/bad.err" && bad "a load error echoed a hash" ||
	ok "load errors do not echo the file's text"

# ---- the loopback rule -------------------------------------------------------
timeout 10 "$SERVE" --db "$T/open.keel" --listen 0.0.0.0:0 >"$T/open.out" 2>"$T/open.err"
expect "0.0.0.0 without --tokens: exit 2" 2 $?
contains "the refusal names --insecure-open" "$T/open.err" "--insecure-open"
contains "the refusal names --tokens" "$T/open.err" "--tokens"
# open_start NAME ARGS... -- a server on 0.0.0.0:0; 0 once it listens
open_start() {
	local name=$1
	shift
	"$SERVE" --db "$T/$name.keel" --listen 0.0.0.0:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PID=$!
	PIDS="$PIDS $PID"
	waitfor "$T/$name.out" "listening on 0.0.0.0:[0-9]+"
	local rc=$?
	kill -9 "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	return $rc
}
open_start insecure --insecure-open && ok "0.0.0.0 with --insecure-open starts" ||
	bad "0.0.0.0 with --insecure-open did not start: $(cat "$T/insecure.err")"
line "$RT" read >"$T/tokens"
open_start guarded --tokens "$T/tokens" && ok "0.0.0.0 with --tokens starts" ||
	bad "0.0.0.0 with --tokens did not start: $(cat "$T/guarded.err")"
start local --db "$T/local.keel" --listen localhost:0
expect "localhost without --tokens starts, and needs no token" 404 "$(code "http://127.0.0.1:$PORT/k")"
kill -9 "$PID"; wait "$PID" 2>/dev/null

echo "tokens: $checks checks, $fails failed"
[ $fails -eq 0 ] && echo "all checks passed"
[ $fails -eq 0 ]
