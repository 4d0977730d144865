#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# daemon-cost.sh: the whole daemon's steady-state CPU and RSS with many idle
# threads (target: at most 0.5 % of one CPU and 16 MiB with 10,000 idle
# threads at the default 1 s interval), for one or more builds side by side.
# With --active K the first K of them wake every --wake-ms (idlethreads'
# options): threads that run are read every pass, so this is the cost of a
# host with many busy threads (a JVM's pools, a Go runtime's timers). With
# --processes P there are P such processes, each with its own N threads: a
# host of many multi-threaded services whose helper threads run now and
# then while their first thread sleeps (each such process is active at
# every pass, so this is what the daemon's per-process work costs).
#
# Scenario 7 of run.sh measures a freshly started daemon (3 s settle); this
# measures the state an operator sees after a minute: big idle processes
# are then checked with back-off (2, 4, 8, 16 passes), which takes ~30
# passes to reach. Builds are run interleaved (A B A B ...), one daemon at a
# time against the same idle-thread process, and medians are reported, so
# a shared, noisy machine hits every build alike.
#
#   bench/daemon-cost.sh [--threads N] [--active K] [--wake-ms MS] [--processes P]
#                        [--settle S] [--window S] [--repeats N]
#                        [--config-dir DIR] BUILDDIR...
#
# BUILDDIR is a build tree with affinityd (and tests/workloads/idlethreads in
# the first one). Output: one line per run, then per build the median CPU %
# of one CPU (run time from /proc/PID/task/*/schedstat over the window), the median
# RSS, and the ratio to the first build.
set -euo pipefail

THREADS=10000 ACTIVE=0 WAKE_MS=10 PROCESSES=1 SETTLE=40 WINDOW=30 REPEATS=5 CONFIG_DIR=''
usage() { sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
        case $1 in
        --threads) THREADS=$2; shift ;;
        --active) ACTIVE=$2; shift ;;
        --wake-ms) WAKE_MS=$2; shift ;;
        --processes) PROCESSES=$2; shift ;;
        --settle) SETTLE=$2; shift ;;
        --window) WINDOW=$2; shift ;;
        --repeats) REPEATS=$2; shift ;;
        --config-dir) CONFIG_DIR=$2; shift ;;
        -h|--help) usage 0 ;;
        -*) echo "daemon-cost.sh: unknown option '$1'" >&2; usage 2 >&2 ;;
        *) break ;;
        esac
        shift
done
[[ $# -ge 1 ]] || { echo "daemon-cost.sh: no build directory given" >&2; exit 2; }
BUILDS=("$@")
for b in "${BUILDS[@]}"; do
        [[ -x $b/affinityd ]] || { echo "daemon-cost.sh: $b/affinityd not found" >&2; exit 2; }
done
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
: "${CONFIG_DIR:=$SRCDIR/policies}"
IDLE=${BUILDS[0]}/tests/workloads/idlethreads
[[ -x $IDLE ]] || { echo "daemon-cost.sh: $IDLE not found (make check builds it)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/affd-cost.XXXXXX)
IPIDS=() DPID=
cleanup() {
        local p
        [[ -n $DPID ]] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
        for p in "${IPIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
        rm -rf "$WORK"
}
trap cleanup EXIT

# CPU time in ns: the sum of the threads' run time from schedstat. utime +
# stime are ticks charged to whoever runs at a tick: for a daemon that runs
# ~1 ms a second that is ~12 ticks in 30 s, and runs of one build spread by
# +-30 % (seen here before this was changed). Ticks only where schedstat is
# absent.
cpu_ns() {
        local f sum=0 v
        for f in /proc/"$1"/task/*/schedstat; do
                read -r v _ <"$f" 2>/dev/null || { sum=; break; }
                sum=$((sum + v))
        done
        [[ -n $sum ]] && { echo "$sum"; return; }
        awk -v hz="$(getconf CLK_TCK)" '{ printf "%.0f\n", ($14 + $15) * 1e9 / hz }' "/proc/$1/stat"
}
# processes created on the whole machine: others' churn is work for the daemon
# (each new process is read), so it is printed with every run
forks() { awk '/^processes/ { print $2 }' /proc/stat; }
# and so is their CPU use (their threads that run are read every pass):
# "busy idle" jiffies of the whole machine, the daemon's own included
busy_idle() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat; }
now_ns() { date +%s%N; }

for k in $(seq "$PROCESSES"); do
        "$IDLE" --threads "$THREADS" --active "$ACTIVE" --wake-ms "$WAKE_MS" --pid-file "$WORK/idle-$k.pid" \
                >"$WORK/idle-$k.out" 2>&1 &
        IPIDS+=("$!")
done
for k in $(seq "$PROCESSES"); do
        for _ in $(seq 100); do [[ -s $WORK/idle-$k.pid ]] && break; sleep 0.1; done
        [[ -s $WORK/idle-$k.pid ]] || { echo "daemon-cost.sh: idlethreads $k did not start" >&2; exit 1; }
done

echo "processes=$PROCESSES threads=$THREADS active=$ACTIVE wake-ms=$WAKE_MS settle=${SETTLE}s window=${WINDOW}s repeats=$REPEATS builds=${#BUILDS[@]} config=$CONFIG_DIR"
declare -A CPU RSS
for r in $(seq "$REPEATS"); do
        for i in "${!BUILDS[@]}"; do
                b=${BUILDS[$i]}
                rd=$WORK/run-$r-$i
                mkdir -p "$rd"
                "$b/affinityd" --runtime-dir "$rd" --config-dir "$CONFIG_DIR" >"$rd/log" 2>&1 &
                DPID=$!
                sleep "$SETTLE"
                kill -0 "$DPID" 2>/dev/null || { cat "$rd/log" >&2; echo "daemon-cost.sh: $b/affinityd died" >&2; exit 1; }
                c0=$(cpu_ns "$DPID"); t0=$(now_ns); f0=$(forks); read -r b0 i0 < <(busy_idle)
                sleep "$WINDOW"
                c1=$(cpu_ns "$DPID"); t1=$(now_ns); f1=$(forks); read -r b1 i1 < <(busy_idle)
                rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$DPID/status")
                kill -TERM "$DPID"; wait "$DPID" || true; DPID=
                pct=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.3f", 100 * c / t }')
                printf 'run %d build %d (%s): cpu %s %% of one CPU, rss %s KiB; machine: busy %s %%, forks/s %s\n' \
                        "$r" "$i" "$b" "$pct" "$rss" \
                        "$(awk -v b=$((b1 - b0)) -v i=$((i1 - i0)) 'BEGIN { printf "%.1f", (b + i > 0 ? 100 * b / (b + i) : 0) }')" \
                        "$(awk -v f=$((f1 - f0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", f / (t / 1e9) }')"
                CPU[$i]+="$pct "
                RSS[$i]+="$rss "
        done
done

median() {
        tr ' ' '\n' | awk -f "$SRCDIR/bench/stats.awk" \
                -f <(echo 'NF { v[++n] = $1 } END { m = median(v, n); if (n % 2) print m; else printf "%.3f\n", m }')
}
base=$(median <<<"${CPU[0]}")
for i in "${!BUILDS[@]}"; do
        m=$(median <<<"${CPU[$i]}")
        mr=$(median <<<"${RSS[$i]}")
        printf 'build %d %s: median cpu %s %% (runs: %s) median rss %.1f MiB; cpu ratio to build 0: %s\n' \
                "$i" "${BUILDS[$i]}" "$m" "${CPU[$i]% }" "$(awk -v k="$mr" 'BEGIN { print k / 1024 }')" \
                "$(awk -v a="$m" -v b="$base" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')"
done
