# SPDX-License-Identifier: BSD-2-Clause
#
# Two lines of figures, the kernel's rounds then Sluice's (space
# separated, "-" for a round that gave none): prints "RATIO (S / K)",
# the ratio of the two medians, or "-" when a round failed or the
# kernel's median is 0.  Used by tests/bench/lossy_host.sh and, in the
# VM, tests/vm/bench_lossy.sh.
function med(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/-/ { bad = 1 }
NR == 1 { k = med($0) }
NR == 2 { s = med($0) }
END { if (k > 0 && !bad) printf "%.2f (%.1f / %.1f)", s / k, s, k; else print "-" }
