#!/bin/sh
# bench/report.sh -- markdown tables from bench-engine's JSONL.
#
#   bench/report.sh RESULTS.jsonl > tables.md
#
# Every figure is the median over the rounds of the run; every ratio is the
# median over the rounds of keel's figure divided by the peer's figure from
# the same round (measured moments apart, so the load they saw was alike).  Only the
# lines of the newest run id in the file are used.  Plain POSIX awk (mawk
# here): no JSON library, the fields are the flat ones bench-engine writes.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 RESULTS.jsonl" >&2; exit 2; }
[ -r "$1" ] || { echo "$0: cannot read $1" >&2; exit 1; }

awk "$(cat "$(dirname "$0")/stats.awk")"'
function add(g, v) { cnt[g]++; val[g, cnt[g]] = v; seen[g] = 1 }
function fmt(v) {
	if (v == "") return "-"
	if (v >= 100) return sprintf("%.0f", v)
	if (v >= 10) return sprintf("%.1f", v)
	return sprintf("%.2f", v)
}
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2fx", a / b) }
# median over rounds of (keel / peer), for figures stored as P SUBSEP engine
# SUBSEP rest SUBSEP round in rv[]; "" when no round has both
function rratio(p, peer, rest,    r, g, a, b) {
	g = "ratio" SUBSEP p SUBSEP peer SUBSEP rest
	if (!(g in seen)) {
		for (r = 1; r <= rounds; r++) {
			a = rv[p SUBSEP "keel" SUBSEP rest SUBSEP r]
			b = rv[p SUBSEP peer SUBSEP rest SUBSEP r]
			if (a != "" && b != "" && b > 0) add(g, a / b)
		}
		seen[g] = 1
	}
	return median(g)
}
function rfmt(x) { return x == "" ? "-" : sprintf("%.2fx", x) }
# "lowest-highest" of the per-round ratios behind rratio(P, PEER, REST)
function rrange(p, peer, rest,    g, i, lo, hi) {
	rratio(p, peer, rest)
	g = "ratio" SUBSEP p SUBSEP peer SUBSEP rest
	for (i = 1; i <= cnt[g]; i++) {
		if (lo == "" || val[g, i] + 0 < lo) lo = val[g, i] + 0
		if (hi == "" || val[g, i] + 0 > hi) hi = val[g, i] + 0
	}
	return lo == "" ? "" : sprintf("%.2f-%.2f", lo, hi)
}
# "yes" or "NO" against a target ratio
function meets(r, target, range) {
	if (r == "") return "not measured"
	return sprintf("%.2fx (%s)%s", r, r >= target ? "met" : "NOT met", \
	    range == "" ? "" : "; rounds " range)
}

{ lines[NR] = $0; run = jget($0, "run") }   # the newest run is the last one
END {
	nengines = split("keel lmdb sqlite rocksdb leveldb plain plain-ring plain-falloc", order, " ")
	npeers = split("lmdb sqlite rocksdb leveldb", peers, " ")
	for (i = 1; i <= NR; i++) {
		l = lines[i]
		if (jget(l, "run") != run) continue
		wl = jget(l, "workload"); e = jget(l, "engine")
		t = jget(l, "threads"); v = jget(l, "value_size"); m = jget(l, "mode")
		if (jget(l, "round") + 0 > rounds) rounds = jget(l, "round") + 0
		ld = jget(l, "load1") + 0
		if (minload == "" || ld < minload) minload = ld
		if (ld > maxload) maxload = ld
		facts = sprintf("%s, %s CPUs (%s), %d MiB RAM, Linux %s, %s on %s", \
		    jget(l, "host"), jget(l, "cpus"), jget(l, "cpu"), jget(l, "mem_mib"), \
		    jget(l, "kernel"), jget(l, "fs"), jget(l, "device"))
		ver[e] = jget(l, "engine_version")
		rd = jget(l, "round")
		if (wl == "commit") {
			add("c" SUBSEP e SUBSEP t SUBSEP v, jget(l, "ops_per_s"))
			rv["c" SUBSEP e SUBSEP t SUBSEP v SUBSEP rd] = jget(l, "ops_per_s")
			if (jget(l, "bytes_per_op") + 0 >= 0)
				add("b" SUBSEP e SUBSEP t SUBSEP v, jget(l, "bytes_per_op"))
			if (jget(l, "syncs") + 0 > 0)
				add("spc" SUBSEP e SUBSEP t SUBSEP v, jget(l, "ops") / jget(l, "syncs"))
			if (jget(l, "syncs") + 0 > 0 && jget(l, "bytes") + 0 >= 0)
				add("bps" SUBSEP e SUBSEP t SUBSEP v, jget(l, "bytes") / jget(l, "syncs"))
			if (jget(l, "dev_bytes_per_op") != "" && jget(l, "dev_bytes_per_op") + 0 >= 0) {
				add("d" SUBSEP e SUBSEP t SUBSEP v, jget(l, "dev_bytes_per_op"))
				if (jget(l, "syncs") + 0 > 0)
					add("dps" SUBSEP e SUBSEP t SUBSEP v, jget(l, "dev_write_bytes") / jget(l, "syncs"))
				anydev = 1
			}
			tl[t] = 1; vl[v] = 1; ce[e] = 1
		} else if (wl == "read") {
			add("r" SUBSEP e SUBSEP t SUBSEP m, jget(l, "ops_per_s"))
			rv["r" SUBSEP e SUBSEP t SUBSEP m SUBSEP rd] = jget(l, "ops_per_s")
			rtl[t] = 1; re[e] = 1; rkeys = jget(l, "keys")
		} else if (wl == "scan") {
			add("s" SUBSEP e SUBSEP t, jget(l, "ops_per_s"))
			rv["s" SUBSEP e SUBSEP t SUBSEP rd] = jget(l, "ops_per_s")
			add("se" SUBSEP e SUBSEP t, jget(l, "entries_per_s"))
			rtl[t] = 1; se[e] = 1; slen = jget(l, "scan_length")
		} else if (wl == "space") {
			space[e] = l
		} else if (wl == "recover") {
			add("rc_cold" SUBSEP e, jget(l, "cold_ms"))
			add("rc_warm" SUBSEP e, jget(l, "warm_ms"))
			add("rc_read" SUBSEP e, jget(l, "bytes_read"))
			add("rc_pend" SUBSEP e, jget(l, "pending"))
			add("rc_pbytes" SUBSEP e, jget(l, "pending_bytes"))
			rce[e] = 1
		}
	}
	if (run == "") { print "No measurements."; exit }
	nt = 0; for (t in tl) tlist[++nt] = t + 0
	nv = 0; for (v in vl) vlist[++nv] = v + 0
	nrt = 0; for (t in rtl) rtlist[++nrt] = t + 0
	isort(tlist, nt); isort(vlist, nv); isort(rtlist, nrt)

	printf "Run `%s`: %d round(s); %s; load average (1 min) %.2f to %.2f during the run.\n\n", \
	    run, rounds, facts, minload, maxload

	# ---- durable commits -------------------------------------------------
	if (nt) {
		print "### Durable commits per second (median of rounds)\n"
		engine_table("c")
		print "### keel'\''s durable commits against each peer (median over rounds of keel / peer in the same round)\n"
		print "`best peer` is the peer with the highest median in that row.\n"
		print "| writers | value | keel/lmdb | keel/sqlite | keel/rocksdb | keel/leveldb | keel/best peer | keel/plain | keel/plain-ring | keel/plain-falloc |"
		print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		for (a = 1; a <= nv; a++) for (b = 1; b <= nt; b++) {
			v = vlist[a]; t = tlist[b]
			row = sprintf("| %d | %d B |", t, v)
			for (k = 1; k <= npeers; k++)
				row = row " " rfmt(rratio("c", peers[k], t SUBSEP v)) " |"
			bestname = bestpeer(t, v)
			row = row " " (bestname == "" ? "-" : rfmt(rratio("c", bestname, t SUBSEP v)) " (" bestname ")") " |"
			row = row " " rfmt(rratio("c", "plain", t SUBSEP v)) " |"
			row = row " " rfmt(rratio("c", "plain-ring", t SUBSEP v)) " |"
			row = row " " rfmt(rratio("c", "plain-falloc", t SUBSEP v)) " |"
			print row
		}
		print ""

		print "### Bytes per put (1 writer, median of rounds)\n"
		print "`file` is what the files grew by per put during the timed run (keel: the end of its data, `keel_stat` end_offset, shown only when no compaction ran during the measurement, see the space section for the figure with compaction off; others: the directory'\''s apparent size; LMDB reuses its pages and SQLite its WAL, so theirs stays near 0 once warm).  `puts/sync` is keel'\''s commits per sync.\n"
		print "| engine | value | file B/put | puts/sync |"
		print "|---|---:|---:|---:|"
		for (a = 1; a <= nv; a++) for (k = 1; k <= nengines; k++) {
			e = order[k]; v = vlist[a]
			if (!(e in ce)) continue
			bp = fmt(median("b" SUBSEP e SUBSEP 1 SUBSEP v))
			if (bp == "-" && (e in space) && v == 16)
				bp = fmt(jget(space[e], "bytes_per_op")) " (compaction off)"
			printf "| %s | %d B | %s | %s |\n", e, v, bp, fmt(median("spc" SUBSEP e SUBSEP 1 SUBSEP v))
		}
		print ""
		if (("keel" in ce)) {
			print "keel'\''s commits per sync with many writers (group commit), and what one group sync appended (the end offset'\''s growth over the syncs; - where a compaction ran during the measurement) and wrote to the device (when measured, below), median of rounds:\n"
			print "| writers | value | puts/sync | appended B/sync | device B/sync |"
			print "|---:|---:|---:|---:|---:|"
			for (a = 1; a <= nv; a++) for (b = 1; b <= nt; b++)
				printf "| %d | %d B | %s | %s | %s |\n", tlist[b], vlist[a], \
				    fmt(median("spc" SUBSEP "keel" SUBSEP tlist[b] SUBSEP vlist[a])), \
				    fmt(median("bps" SUBSEP "keel" SUBSEP tlist[b] SUBSEP vlist[a])), \
				    fmt(median("dps" SUBSEP "keel" SUBSEP tlist[b] SUBSEP vlist[a]))
			print ""
		}
	}

	# ---- device bytes -----------------------------------------------------
	if (nt && anydev) {
		print "### Device bytes per commit (median of rounds)\n"
		print "Bytes written to the block device per durable commit, from the device'\''s own counters (`/sys/dev/block/MAJ:MIN/stat`) read after a `syncfs` around each timed measurement: file data, preallocation zeros, the file system'\''s journal and compaction rewrites included.  They count every writer of that device, so they mean something only when the stores are on a device of the run'\''s own (`docs/bench.md`, \"Device bytes per commit\").\n"
		engine_table("d")
	}

	# ---- reads and scans --------------------------------------------------
	if (nrt) {
		printf "### Random point reads over %s keys (16-byte values; ops/s, median of rounds)\n\n", rkeys
		print "`snapshot`: keel_snapshot_get from one snapshot per thread vs one LMDB read transaction per thread.  `fresh`: keel_snapshot_refresh + keel_snapshot_get (newest state every call) vs mdb_txn_renew + mdb_get + mdb_txn_reset per read.  Each value'\''s bytes are read.\n"
		print "| threads | mode | keel | lmdb | keel/lmdb (median of per-round ratios) |"
		print "|---:|---|---:|---:|---:|"
		for (b = 1; b <= nrt; b++) for (mi = 1; mi <= 2; mi++) {
			m = mi == 1 ? "snapshot" : "fresh"; t = rtlist[b]
			kv = median("r" SUBSEP "keel" SUBSEP t SUBSEP m)
			lv = median("r" SUBSEP "lmdb" SUBSEP t SUBSEP m)
			if (kv == "" && lv == "") continue
			printf "| %d | %s | %s | %s | %s |\n", t, m, fmt(kv), fmt(lv), rfmt(rratio("r", "lmdb", t SUBSEP m))
		}
		print ""
		if (slen != "") {
			printf "### Range scans of %s entries from a random key (scans/s, median of rounds)\n\n", slen
			print "keel_iter_open + keel_iter_next from one snapshot per thread vs an LMDB cursor (MDB_SET_RANGE, MDB_NEXT) in one read transaction per thread.\n"
			print "| threads | keel | lmdb | keel/lmdb | keel entries/s | lmdb entries/s |"
			print "|---:|---:|---:|---:|---:|---:|"
			for (b = 1; b <= nrt; b++) {
				t = rtlist[b]
				kv = median("s" SUBSEP "keel" SUBSEP t); lv = median("s" SUBSEP "lmdb" SUBSEP t)
				if (kv == "" && lv == "") continue
				printf "| %d | %s | %s | %s | %s | %s |\n", t, fmt(kv), fmt(lv), rfmt(rratio("s", "lmdb", t)), \
				    fmt(median("se" SUBSEP "keel" SUBSEP t)), fmt(median("se" SUBSEP "lmdb" SUBSEP t))
			}
			print ""
			# every round, as the medians hide how far rounds spread on
			# a shared machine
			print "Every round (scans/s; keel and LMDB measured back to back):\n"
			print "| round | threads | keel | lmdb | keel/lmdb |"
			print "|---:|---:|---:|---:|---:|"
			for (r = 1; r <= rounds; r++)
				for (b = 1; b <= nrt; b++) {
					t = rtlist[b]
					kv = rv["s" SUBSEP "keel" SUBSEP t SUBSEP r]
					lv = rv["s" SUBSEP "lmdb" SUBSEP t SUBSEP r]
					if (kv == "" || lv == "") continue
					printf "| %d | %d | %s | %s | %s |\n", r, t, fmt(kv), fmt(lv), ratio(kv, lv)
				}
			print ""
		}
	}

	# ---- space ------------------------------------------------------------
	if ("keel" in space) {
		l = space["keel"]
		printf "### File size against live bytes (keel, %s overwrites of %s keys, 16-byte values, one writer, %s)\n\n", \
		    jget(l, "ops"), jget(l, "keys"), jget(l, "mode")
		print "`file` is the data file'\''s size (preallocation included), `in use` its end offset, `live` the bytes reachable from the newest head, `bound` the size the automatic policy keeps the file within, max(2.5x live, live + compact_slack) (all from `keel_stat`).  The peaks are the highest of 200 samples taken during the overwrites.  B/put is the end offset'\''s growth per put in a separate store with compaction off (`KEEL_NOCOMPACT`), over " jget(l, "bytes_per_op_puts") " puts.\n"
		print "| overwrites | file | in use | live | bound | file/live | in use/live | peak file/live | peak in use/live | peak file/bound | compactions | B/put |"
		print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		printf "| %s%s | %s | %s | %s | %s | %.2fx | %.2fx | %.2fx | %.2fx | %s | %s | %s |\n\n", \
		    jget(l, "ops"), jget(l, "stopped_at_cap") == 1 ? " (stopped at the size cap)" : "", \
		    jget(l, "file_size"), jget(l, "end_offset"), jget(l, "live_bytes"), \
		    jget(l, "space_bound") == "" ? "-" : jget(l, "space_bound"), \
		    jget(l, "file_over_live"), jget(l, "end_over_live"), jget(l, "peak_file_over_live"), \
		    jget(l, "peak_end_over_live"), \
		    jget(l, "peak_file_over_bound") == "" ? "-" : sprintf("%.2fx", jget(l, "peak_file_over_bound")), \
		    jget(l, "compactions"), fmt(jget(l, "bytes_per_op"))
	}

	# ---- recovery at the worst point --------------------------------------
	if ("keel" in rce) {
		print "### Reopen after a kill at the worst point of the checkpoint cycle (keel, median of rounds)\n"
		print "A child process loads the keys and overwrites random ones with 16-byte values until the pending span is within one commit of the checkpoint bound (`KEEL_CHECKPOINT_BYTES_DEFAULT`, 4 MiB), where a reopen has the most to replay; it is killed there (SIGKILL) and the store reopened twice: first with the file'\''s pages evicted (`cold`), then from the page cache (`cached`).  `read` is `keel_recovery.bytes_read` of the cold open.\n"
		print "| pending commits | pending bytes | read | cold open | cached open |"
		print "|---:|---:|---:|---:|---:|"
		printf "| %s | %s | %s | %s ms | %s ms |\n\n", fmt(median("rc_pend" SUBSEP "keel")), \
		    fmt(median("rc_pbytes" SUBSEP "keel")), fmt(median("rc_read" SUBSEP "keel")), \
		    fmt(median("rc_cold" SUBSEP "keel")), fmt(median("rc_warm" SUBSEP "keel"))
	}

	# ---- targets ----------------------------------------------------------
	print "### Targets (issues 2, 20 and 33)\n"
	print "Median of the per-round ratios, and the lowest and highest round.  Issue 20 replaced issue 2'\''s \"16 writers >= 2x the best peer\" with 1.5x LevelDB at 16 and 64 writers, and added the plain-ring and bytes-per-put targets.  Issue 33 raised range scans to 1.2x LMDB.\n"
	print "| target | measured |"
	print "|---|---|"
	printf "| 1 writer, 16 B: keel >= 1.5x LMDB (issue 2) | %s |\n", meets(rratio("c", "lmdb", 1 SUBSEP 16), 1.5, rrange("c", "lmdb", 1 SUBSEP 16))
	printf "| 1 writer, 16 B: keel >= 0.8x plain append+fdatasync (issue 2) | %s |\n", meets(rratio("c", "plain", 1 SUBSEP 16), 0.8, rrange("c", "plain", 1 SUBSEP 16))
	printf "| 1 writer, 16 B: keel >= 1.1x SQLite WAL FULL (issue 20) | %s |\n", meets(rratio("c", "sqlite", 1 SUBSEP 16), 1.1, rrange("c", "sqlite", 1 SUBSEP 16))
	printf "| 1 writer, 16 B: keel >= 1.0x plain-ring (issue 20) | %s |\n", meets(rratio("c", "plain-ring", 1 SUBSEP 16), 1.0, rrange("c", "plain-ring", 1 SUBSEP 16))
	for (b = 1; b <= nt; b++) {
		t = tlist[b]
		if (t != 16 && t != 64) continue
		printf "| %d writers, 16 B: keel >= 1.5x LevelDB (issue 20; best peer here: %s) | %s |\n", t, bestpeer(t, 16), \
		    meets(rratio("c", "leveldb", t SUBSEP 16), 1.5, rrange("c", "leveldb", t SUBSEP 16))
	}
	if ("keel" in space) {
		bp = jget(space["keel"], "bytes_per_op") + 0
		printf "| bytes appended per 16 B put, 1 writer, compaction off: <= 256 (issue 20) | %s (%s) |\n", fmt(bp), (bp > 0 && bp <= 256) ? "met" : "NOT met"
	}
	for (b = 1; b <= nrt; b++) {
		t = rtlist[b]
		printf "| point reads, %d thread(s), snapshot: keel >= 1.0x LMDB | %s |\n", t, \
		    meets(rratio("r", "lmdb", t SUBSEP "snapshot"), 1, rrange("r", "lmdb", t SUBSEP "snapshot"))
		printf "| point reads, %d thread(s), fresh: keel >= 1.0x LMDB | %s |\n", t, \
		    meets(rratio("r", "lmdb", t SUBSEP "fresh"), 1, rrange("r", "lmdb", t SUBSEP "fresh"))
		printf "| range scans, %d thread(s): keel >= 1.2x LMDB (issue 33) | %s |\n", t, \
		    meets(rratio("s", "lmdb", t), 1.2, rrange("s", "lmdb", t))
	}
	if ("keel" in space) {
		pb = jget(space["keel"], "peak_file_over_bound")
		if (pb == "") {
			fl = jget(space["keel"], "file_over_live") + 0
			printf "| file <= 2.5x live bytes after the overwrites | %.2fx (%s) |\n", fl, ((fl > 0 && fl <= 2.5) ? "met" : "NOT met")
		} else {
			pb += 0
			printf "| file <= max(2.5x live, live + compact_slack) at every sample | peak %.2f of the bound (%s) |\n", pb, ((pb > 0 && pb <= 1) ? "met" : "NOT met")
		}
	}
	print ""
}
# a table of the medians of figure P (stored as P SUBSEP engine SUBSEP
# writers SUBSEP value size): a row per value size and writer count, a
# column per engine of the commit workload
function engine_table(p,    a, b, k, hdr, sep, row) {
	hdr = "| writers | value |"; sep = "|---:|---:|"
	for (k = 1; k <= nengines; k++) if (order[k] in ce) { hdr = hdr " " order[k] " |"; sep = sep "---:|" }
	print hdr; print sep
	for (a = 1; a <= nv; a++) for (b = 1; b <= nt; b++) {
		row = sprintf("| %d | %d B |", tlist[b], vlist[a])
		for (k = 1; k <= nengines; k++) if (order[k] in ce)
			row = row " " fmt(median(p SUBSEP order[k] SUBSEP tlist[b] SUBSEP vlist[a])) " |"
		print row
	}
	print ""
}
# the peer engine with the highest median commits/s at (T, V); "" if none
function bestpeer(t, v,    k, pv, best, name) {
	best = ""; name = ""
	for (k = 1; k <= npeers; k++) {
		pv = median("c" SUBSEP peers[k] SUBSEP t SUBSEP v)
		if (pv != "" && (best == "" || pv > best)) { best = pv; name = peers[k] }
	}
	return name
}
' "$1"
