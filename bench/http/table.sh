#!/bin/bash
# table.sh RESULTS.jsonl -- the Markdown table for docs/results/http.md: the
# mean over rounds of each server's figures per scenario, and keel-serve's
# ratio to the peer measured in the same rounds.
set -u
awk '
function num(line, key,   m) {
	if (match(line, "\"" key "\":[0-9.]+")) {
		m = substr(line, RSTART, RLENGTH)
		sub(/.*:/, "", m)
		return m + 0
	}
	return -1
}
function str(line, key,   m) {
	if (match(line, "\"" key "\":\"[^\"]*\"")) {
		m = substr(line, RSTART, RLENGTH)
		sub(/^[^:]*:"/, "", m)
		sub(/"$/, "", m)
		return m
	}
	return ""
}
{
	s = str($0, "server"); sc = str($0, "scenario"); k = s SUBSEP sc
	n[k]++
	rps[k] += num($0, "answers_per_s")
	cpu[k] += num($0, "answers_per_cpu_s")
	rss[k] += num($0, "peak_rss_kb")
	bpc[k] += num($0, "bytes_per_conn")
	ok2[k] += num($0, "answered_2xx")
	p50[k] += num($0, "p50")
	p99[k] += num($0, "p99")
	p999[k] += num($0, "p999")
	mx[k] += num($0, "max")
	if (sc == "get64_rate") { # per round: the tails, and the steal of the host
		r = num($0, "round"); rk = s SUBSEP r
		rp99[rk] = num($0, "p99"); rp999[rk] = num($0, "p999")
		rst[rk] = num($0, "steal_ticks")
		if (r > maxr) maxr = r
	}
}
function m(a, k) { return n[k] ? a[k] / n[k] : 0 }
function ratio(a, b) { return b > 0 ? sprintf("%.2fx", a / b) : "-" }
function row(sc, peer, label,   kk, kp) {
	kk = "keel" SUBSEP sc; kp = peer SUBSEP sc
	if (!n[kk]) return
	printf "| %s | %.0f | %.0f | %s | %.0f | %.0f | %s | %.1f / %.1f |\n", label,
		m(rps, kk), m(rps, kp), ratio(m(rps, kk), m(rps, kp)),
		m(cpu, kk), m(cpu, kp), ratio(m(cpu, kk), m(cpu, kp)),
		m(rss, kk) / 1024, m(rss, kp) / 1024
}
END {
	print "| scenario | keel-serve answers/s | peer answers/s | ratio | keel answers/CPU-s | peer answers/CPU-s | ratio | peak RSS MiB keel / peer |"
	print "|---|---|---|---|---|---|---|---|"
	row("get64", "nginx", "GET 64 B, keep-alive, 64 conns (peer: nginx)")
	row("get64_p16", "nginx", "GET 64 B, pipelined 16, 64 conns (nginx)")
	row("get1m", "nginx", "GET 1 MiB, 16 conns (nginx)")
	row("get64_close", "nginx", "GET 64 B, new connection each, 16 conns (nginx)")
	row("put16_c64", "redis", "durable PUT 16 B, 64 conns (Redis appendfsync always)")
	row("put16_c1", "redis", "durable PUT 16 B, 1 conn (Redis appendfsync always)")
	kk = "keel" SUBSEP "get64_rate"; kp = "nginx" SUBSEP "get64_rate"
	if (n[kk] && n[kp])
		printf "\nFixed rate, 20,000 GET/s of 64 B over 64 connections, latency from the intended send time (us), p50 / p99 / p99.9 / max: keel-serve %.0f / %.0f / %.0f / %.0f, nginx %.0f / %.0f / %.0f / %.0f.\n",
			m(p50, kk), m(p99, kk), m(p999, kk), m(mx, kk),
			m(p50, kp), m(p99, kp), m(p999, kp), m(mx, kp)
	if (n[kk] && n[kp]) { # goal: no worse than nginx in every round
		line = ""; won = 0; all = 0; quiet = 0; qwon = 0
		for (r = 1; r <= maxr; r++) {
			a = "keel" SUBSEP r; b = "nginx" SUBSEP r
			if (!(a in rp99) || !(b in rp99)) continue
			all++
			w = rp99[a] <= rp99[b] && rp999[a] <= rp999[b]
			won += w
			if (rst[a] == 0 && rst[b] == 0) { quiet++; qwon += w }
			line = line sprintf("%s round %d: keel %.0f / %.0f (steal %s), nginx %.0f / %.0f (steal %s)",
				line == "" ? "" : ";", r, rp99[a], rp999[a],
				rst[a] < 0 ? "-" : rst[a], rp99[b], rp999[b], rst[b] < 0 ? "-" : rst[b])
		}
		printf "Per round, p99 / p99.9 (us) and the CPU ticks the host stole from this machine during each run:%s. keel-serve'"'"'s p99 and p99.9 both no higher than nginx'"'"'s in %d of %d rounds; in the %d round(s) where neither run lost time to the host, %d.\n",
			line, won, all, quiet, qwon
	}
	kk = "keel" SUBSEP "put16_c1"; kf = "fio" SUBSEP "fsync"
	if (n[kk] && n[kf])
		printf "\nDurable PUT on 1 connection: %.0f/s against the device'"'"'s plain fdatasync rate %.0f/s (fio, 4 KiB writes, on the load generator'"'"'s CPU): %s.\n",
			m(rps, kk), m(rps, kf), ratio(m(rps, kk), m(rps, kf))
	ks = "fio" SUBSEP "fsync_server_cpu"
	if (n[kk] && n[ks])
		printf "fio on the server'"'"'s CPU: %.0f/s; keel-serve on one connection is %s of that.\n",
			m(rps, ks), ratio(m(rps, kk), m(rps, ks))
	ki = "keel" SUBSEP "idle10k"; ni = "nginx" SUBSEP "idle10k"
	if (n[ki])
		printf "\n10,000 idle keep-alive connections: keel-serve %.0f bytes of user memory each (VmRSS growth), nginx %.0f; answered 2xx afterwards: keel %.0f, nginx %.0f of 10000.\n",
			m(bpc, ki), m(bpc, ni), m(ok2, ki), m(ok2, ni)
}' "$1"
