# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/stats.awk: the statistics the bench scripts share, loaded ahead of
# their own program (awk -f bench/stats.awk -f PROGRAM ...).

# Sort a[1..n] in place (insertion sort: a handful of values).
function sortn(a, n,    i, j, t) {
        for (i = 2; i <= n; i++) {
                t = a[i]
                for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
                a[j + 1] = t
        }
}

# The median over repeats r = 1..maxrep of x[w, var, r] / x[w, base, r],
# where both were measured: the variants of one repeat run back to back, so
# a slow minute of a shared machine hits both sides of each ratio. "NA" if
# no repeat has both.
function paired_median(x, maxrep, w, var, base,    a, m, r) {
        m = 0
        for (r = 1; r <= maxrep; r++)
                if ((w, var, r) in x && (w, base, r) in x && x[w, base, r] > 0)
                        a[++m] = x[w, var, r] / x[w, base, r]
        return m ? median(a, m) : "NA"
}

# The median of a[1..n], "NA" if empty; a is left sorted (a[1] min, a[n] max).
function median(a, n) {
        if (n == 0) return "NA"
        sortn(a, n)
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

# The median time to co-location over the runs that co-located, and how
# many did where not all: a run never co-located has no time, and leaving
# it out alone would let one run in five stand for all of them.
function coloc(med, n_coloc, n_runs) {
        if (n_coloc + 0 == n_runs + 0) return med
        return med "(" (n_coloc + 0) "/" (n_runs + 0) ")"
}
