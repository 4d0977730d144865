#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/pipe-no-perf.sh: the daemon without perf. `perf bench
# sched pipe -l LOOPS` as a newcomer runs it, REPEATS times in each of
# three modes, interleaved (stock, hand, no-perf, stock, ...):
#
#   stock     no daemon, no affinity: where the kernel puts it (LOOPS/10:
#             split, it runs ~7x slower; ops/s is a rate either way)
#   hand      taskset -c A (the first CPU allowed): both on one CPU, by hand
#   no-perf   affinityd --no-perf with the shipped policies, started fresh
#             (and answering affctl status) before the benchmark starts:
#             the fallback wake-up source, split judged from the members'
#             se.nr_migrations and last CPUs
#
# Prints one line per run (mode, ops/s) and the medians, with no-perf and
# stock over hand. Target: no-perf >= 0.8x hand.
#
# Usage (build tree, as root, holding the machine lock):
#   flock /tmp/affinityd-heavy.lock bash <srcdir>/bench/pipe-no-perf.sh [REPEATS] [LOOPS]
set -u -o pipefail
export LC_ALL=C
REPEATS=${1:-5}
LOOPS=${2:-2000000}
B=${BUILDDIR:-.}
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
. "$SRCDIR/tests/cpus.sh"   # CPU_A: the first CPU this script may use
have_two_cpus || { echo "pipe-no-perf: needs 2 CPUs" >&2; exit 2; }
command -v perf >/dev/null || { echo "pipe-no-perf: needs perf (linux-perf)" >&2; exit 2; }
[[ -x $B/affinityd && -x $B/affctl ]] || { echo "pipe-no-perf: build $B/affinityd and $B/affctl first" >&2; exit 2; }
OUT=$(mktemp -d)
DPID=
trap '[[ -n $DPID ]] && kill "$DPID" 2>/dev/null; rm -rf "$OUT"' EXIT

ops() { awk '/ops\/sec/ { print $1 }'; }

run() {
        case $1 in
        stock) perf bench sched pipe -l "$((LOOPS / 10))" | ops ;;
        hand) taskset -c "$CPU_A" perf bench sched pipe -l "$LOOPS" | ops ;;
        no-perf)
                rm -rf "$OUT/rd"; mkdir -p "$OUT/rd"
                "$B/affinityd" --runtime-dir "$OUT/rd" --config-dir "$SRCDIR/policies" --no-perf >"$OUT/log" 2>&1 &
                DPID=$!
                for _ in $(seq 100); do "$B/affctl" --runtime-dir "$OUT/rd" status >/dev/null 2>&1 && break; sleep 0.1; done
                perf bench sched pipe -l "$LOOPS" | ops
                kill -TERM "$DPID"; wait "$DPID" 2>/dev/null; DPID=
                grep -m1 'co-locate' "$OUT/log" | sed 's/^/# /' >&2
                ;;
        esac
}

for _ in $(seq "$REPEATS"); do
        for m in stock hand no-perf; do
                r=$(run "$m")
                echo "$m $r"
        done
done | tee "$OUT/runs"
awk -f "$SRCDIR/bench/stats.awk" -e '
        { v[$1, ++n[$1]] = $2 }
        END {
                for (m in n) { for (i = 1; i <= n[m]; i++) a[i] = v[m, i]; med[m] = median(a, n[m]) }
                printf "median ops/s: stock %.0f, hand %.0f, no-perf %.0f; no-perf/hand %.3f, stock/hand %.3f\n",
                       med["stock"], med["hand"], med["no-perf"], med["no-perf"] / med["hand"], med["stock"] / med["hand"]
        }' "$OUT/runs"
