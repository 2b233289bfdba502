#!/bin/bash
# redis_acl.sh DIR [config] -- redis-server's ACL file under torture --target exec
# (LazyFS's Redis bug 11): the workload starts redis-server with
# --aclfile DIR/users.acl (no RDB, no AOF), and for each operation sets a
# user with ACL SETUSER (its key pattern carries the value) and runs
# ACL SAVE, acknowledging once ACL SAVE answered OK: the user is then
# promised to be in the ACL file.
#
# redis_acl.sh DIR config -- the same for CONFIG REWRITE: redis-server
# started with the configuration file DIR/redis.conf (no ACL file), and
# for each operation CONFIG SET of masteruser or masterauth (the key; its
# value the string set) and CONFIG REWRITE, acknowledged once CONFIG
# REWRITE answered OK: the setting is then promised to be in the file.
#
# redis_acl.sh DIR --init (torture's --setup) makes the empty ACL file
# (redis-server will not start without it) and an empty DIR/redis.conf.
# redis_acl.sh DIR --check reads the ACL file back and prints "USER VALUE"
# for each user line (VALUE: the user's key pattern without its "~"), and
# "masteruser VALUE" / "masterauth VALUE" for those lines of redis.conf.
#
# The port is derived from DIR; the server listens on 127.0.0.1 only.
set -u
d=$1
mode=${2:-}
acl=$d/users.acl
h=$(printf '%s' "$d" | cksum | cut -d' ' -f1)
# below the kernel's ephemeral range, which the connections of tests run
# beside this one take from: a port there may be in use when this starts
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
span=$(( ${low:-32768} - 10002 ))
[ "$span" -gt 1000 ] || span=20000
port=$((10000 + h % span))

if [ "$mode" = --init ]; then
	: >"$acl"
	: >"$d/redis.conf"
	exit 0
fi

if [ "$mode" = --check ]; then
	[ ! -f "$acl" ] || awk '$1 == "user" && $2 ~ /^u[0-9]+$/ {
		for (i = 3; i <= NF; i++)
			if ($i ~ /^~/) { print $2, substr($i, 2); break }
	}' "$acl"
	[ ! -f "$d/redis.conf" ] || awk '$1 == "masteruser" || $1 == "masterauth" {
		v = $2; gsub(/"/, "", v); print $1, v
	}' "$d/redis.conf"
	exit 0
fi

fd=${KEEL_TORTURE_FD:?run me under torture --target exec}
cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
if [ "$mode" = config ]; then
	eval 'redis-server "$d/redis.conf" --port "$port" --bind 127.0.0.1 \
		--dir "$d" --save "" --appendonly no --daemonize no \
		>>"$d.redis.log" 2>&1 '"$fd"'>&- &'
else
	eval 'redis-server --port "$port" --bind 127.0.0.1 --dir "$d" \
		--aclfile "$acl" --save "" --appendonly no --daemonize no \
		>>"$d.redis.log" 2>&1 '"$fd"'>&- &'
fi
pid=$!
for _ in $(seq 200); do
	[ "$(cli ping 2>/dev/null)" = PONG ] && break
	kill -0 "$pid" 2>/dev/null || exit 1
	sleep 0.05
done
i=0
while [ $i -lt 100000 ]; do
	i=$((i + 1))
	if [ "$mode" = config ]; then
		case $((i % 2)) in 0) u=masteruser ;; *) u=masterauth ;; esac
		v=v$i.$$
		echo "intent $i $u $v" >&"$fd"
		[ "$(cli CONFIG SET "$u" "$v")" = OK ] || exit 1
		[ "$(cli CONFIG REWRITE)" = OK ] || exit 1
	else
		u=u$((i % 8))
		v=v$i
		echo "intent $i $u $v" >&"$fd"
		[ "$(cli ACL SETUSER "$u" reset on nopass "~$v" +get)" = OK ] || exit 1
		[ "$(cli ACL SAVE)" = OK ] || exit 1
	fi
	echo "ack $i" >&"$fd"
done
