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

# The median of a[1..n], "NA" if empty; a is left sorted (a[1] min, a[n] max).
function median(a, n) {
        if (n == 0) return "NA"
        sortn(a, n)
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
