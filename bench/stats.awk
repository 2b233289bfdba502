# bench/stats.awk -- awk functions shared by bench/report.sh and bench/plot.sh
# (plain POSIX awk; each script prepends this file to its own program).
# Groups of values live in cnt[g] (how many) and val[g, 1..cnt[g]].

# value of "key": in a flat JSON line ("" when absent)
function jget(line, key,    i, s) {
	i = index(line, "\"" key "\":")
	if (!i) return ""
	s = substr(line, i + length(key) + 3)
	if (substr(s, 1, 1) == "\"") {
		s = substr(s, 2)
		return substr(s, 1, index(s, "\"") - 1)
	}
	match(s, /[,}]/)
	return substr(s, 1, RSTART - 1)
}
# sorts a[1..n] in place (insertion sort: a handful of rounds or threads)
function isort(a, n,    i, j, t) {
	for (i = 2; i <= n; i++) {
		t = a[i]
		for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
		a[j + 1] = t
	}
}
# median of the values stored under group G
function median(g,    n, i, a) {
	n = cnt[g]
	if (!n) return ""
	for (i = 1; i <= n; i++) a[i] = val[g, i] + 0
	isort(a, n)
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
