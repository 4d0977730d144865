#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/tail-cost.sh: what the daemon's watching costs the wake-up latency
# of tasks it never touches. cyclictest (rt-tests) runs one SCHED_OTHER
# thread per CPU, each waking every 1 ms from a timer and measuring how
# late it runs: the time a woken task waits behind whatever else is on
# its CPU, the daemon's passes and wake-up bursts included. Variants, run
# interleaved (stock, dryrun, stock, dryrun, ...), one at a time:
#
#   stock     no daemon
#   dryrun    affinityd --dry-run with the shipped policies (watches, changes nothing)
#   dryrunN   the same at nice N (e.g. dryrun-5, as the unit runs it: Nice=-5)
#   noperf    affinityd --dry-run --no-perf (no sched_waking bursts)
#   other     the daemon $AFFINITYD_OTHER (the build of another commit) in
#             --dry-run: what a change to the sampler costs, side by side
#
# Each run: the daemon started and given SETTLE s (its calibration and
# first passes), then cyclictest for DURATION s. Per run: p99, p99.9 and
# max of both threads' latencies in µs (from cyclictest's histogram);
# then per variant the median and range over the runs, and the median
# p99 ratio to stock.
#
#   bash bench/tail-cost.sh [--repeats N] [--duration S] [--variants LIST] [BUILDDIR]
#
# As root, holding the machine alone (no other affinityd: its instance lock,
# /run/affinityd/instance.lock, is free). The
# figures are a noisy VM's: compare variants of one run only.
set -euo pipefail
export LC_ALL=C
REPEATS=5 DURATION=15 SETTLE=3 VARIANTS=stock,dryrun
while [[ $# -gt 0 ]]; do
        case $1 in
        --repeats) REPEATS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --variants) VARIANTS=$2; shift ;;
        -h|--help) sed -n '3,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit 0 ;;
        -*) echo "tail-cost.sh: unknown option '$1'" >&2; exit 2 ;;
        *) break ;;
        esac
        shift
done
B=${1:-.}
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
[[ -x $B/affinityd ]] || { echo "tail-cost.sh: $B/affinityd not found (give the build tree)" >&2; exit 2; }
command -v cyclictest >/dev/null ||
        { echo "tail-cost.sh: needs cyclictest (apt-get install rt-tests)" >&2; exit 2; }
[[ $(id -u) = 0 ]] || { echo "tail-cost.sh: run as root" >&2; exit 2; }

WORK=$(mktemp -d /tmp/affd-tail.XXXXXX)
DPID=
trap '[[ -z $DPID ]] || { kill -TERM "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }; rm -rf "$WORK"' EXIT

start_daemon() {   # start_daemon [--binary PATH] NICE ARGS...
        local bin=$B/affinityd
        [[ $1 == --binary ]] && { bin=$2; shift 2; }
        local nice=$1; shift
        rm -rf "$WORK/rt"
        mkdir -p "$WORK/rt"
        nice -n "$nice" "$bin" --runtime-dir "$WORK/rt" --config-dir "$SRCDIR/policies" \
                --log-level warning "$@" >"$WORK/daemon.log" 2>&1 &
        DPID=$!
        # up and answering, not only started: it may wait 5 s for another's
        # instance lock and give up, and its "cost" would be stock's
        local i
        for ((i = 0; i < 300; i++)); do
                kill -0 "$DPID" 2>/dev/null || break
                "$B/affctl" --runtime-dir "$WORK/rt" status >/dev/null 2>&1 && break
                sleep 0.1
        done
        "$B/affctl" --runtime-dir "$WORK/rt" status >/dev/null 2>&1 ||
                { cat "$WORK/daemon.log" >&2; echo "tail-cost.sh: the daemon did not come up" >&2; exit 1; }
        sleep "$SETTLE"
        kill -0 "$DPID" 2>/dev/null || { cat "$WORK/daemon.log" >&2; echo "tail-cost.sh: the daemon exited" >&2; exit 1; }
}
stop_daemon() {
        [[ -n $DPID ]] || return 0
        kill -TERM "$DPID"
        wait "$DPID" || true
        DPID=
}
# p99, p99.9 and max in µs over every thread's column of the histogram
percentiles() {
        awk '/^#/ { next }
             { for (c = 2; c <= NF; c++) { n[$1 + 0] += $c; tot += $c } }
             END {
                for (us = 0; us <= 20000; us++) {
                        if (!(us in n)) continue
                        acc += n[us]; if (n[us] > 0) mx = us
                        if (!p99 && acc >= 0.99 * tot) p99 = us
                        if (!p999 && acc >= 0.999 * tot) p999 = us
                }
                printf "%d %d %d %d\n", p99, p999, mx, tot
             }' "$1"
}

IFS=, read -r -a VL <<<"$VARIANTS"
echo "# bench/tail-cost.sh: $REPEATS repeats x $DURATION s, $(nproc) CPUs, $(uname -r), $(date -u +%FT%TZ)"
echo "# $(lscpu | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }')"
printf '%-10s %3s %8s %8s %8s %8s\n' variant run p99_us p999_us max_us samples
for r in $(seq "$REPEATS"); do
        for v in "${VL[@]}"; do
                case $v in
                stock) ;;
                dryrun) start_daemon 0 --dry-run ;;
                dryrun-*|dryrun[0-9]*) start_daemon "${v#dryrun}" --dry-run ;;
                noperf) start_daemon 0 --dry-run --no-perf ;;
                other) start_daemon --binary "${AFFINITYD_OTHER:?set AFFINITYD_OTHER for the variant other}" 0 --dry-run ;;
                *) echo "tail-cost.sh: unknown variant '$v'" >&2; exit 2 ;;
                esac
                cyclictest -q -m -t "$(nproc)" -a -i 1000 --policy=other -D "$DURATION" -h 20000 \
                        --histfile="$WORK/hist" >/dev/null 2>&1
                stop_daemon
                read -r p99 p999 mx n < <(percentiles "$WORK/hist")
                printf '%-10s %3d %8d %8d %8d %8d\n' "$v" "$r" "$p99" "$p999" "$mx" "$n" | tee -a "$WORK/runs"
        done
done
echo
printf '%-10s %14s %20s %14s\n' variant "p99 median" "p99 min-max" "p99.9 median"
for v in "${VL[@]}"; do
        awk -v v="$v" -f "$SRCDIR/bench/stats.awk" -f /dev/stdin "$WORK/runs" <<'AWK'
$1 == v { p[++n] = $3; q[n] = $4 }
END { m = median(p, n); printf "%-10s %14.0f %20s %14.0f\n", v, m, p[1] "-" p[n], median(q, n) }
AWK
done
# paired: each run's p99 over the stock run of the same repeat
if [[ " ${VL[*]} " == *" stock "* ]]; then
        echo
        for v in "${VL[@]}"; do
                [[ $v != stock ]] || continue
                awk -v v="$v" -f "$SRCDIR/bench/stats.awk" -f /dev/stdin "$WORK/runs" <<'AWK'
$1 == "stock" || $1 == v { x["", $1, $2] = $3; if ($2 > maxrep) maxrep = $2 }
END { printf "%s/stock p99, median of paired ratios over %d repeats: %.2f\n", v, maxrep, paired_median(x, maxrep, "", v, "stock") }
AWK
        done
fi
