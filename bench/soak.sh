#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# soak.sh: the daemon under abuse, with figures for BENCHMARKS.md.
#
#  1. crash loop: the daemon (shipped policies) with a ping-pong pair it
#     co-locates and a hog, killed with SIGKILL at a random moment
#     (0.2-3 s after start) N times, restarted each time; then one clean
#     start and stop. Counted: threads of the workloads whose mask is not
#     what it was before the first start (goal: 0), and how many of the
#     kills caught a change in force.
#  2. socket flood: 3,000 connections as nobody that never authenticate;
#     the daemon's CPU over 10 s and root's `affctl status` time.
#  3. threads: 20,000 idle threads, then thread churn (a Python loop
#     starting and joining threads); the daemon's CPU % of one CPU and RSS
#     before, during and after.
#
#   bench/soak.sh [--kills N] BUILDDIR
# Needs root, python3 (Debian's), runuser and the user nobody.
set -euo pipefail
KILLS=100
while [[ $# -gt 0 ]]; do
        case $1 in
        --kills) KILLS=$2; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit 0 ;;
        *) break ;;
        esac
        shift
done
B=$(cd "${1:?usage: soak.sh [--kills N] BUILDDIR}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "soak.sh: needs root" >&2; exit 1; }
work=$(mktemp -d /tmp/affd-soak.XXXXXX)
chmod 755 "$work"
RUN=$work/run
PIDS=()
D=
cleanup() {
        [ -z "$D" ] || kill -TERM "$D" 2>/dev/null || true
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT

start() {   # start: the daemon in the background, up when affctl answers; D=PID
        "$B/affinityd" --runtime-dir "$RUN" --config-dir "$SRC/policies" >>"$work/daemon.log" 2>&1 &
        D=$!
        for _ in $(seq 100); do "$B/affctl" --runtime-dir "$RUN" status >/dev/null 2>&1 && return 0; sleep 0.05; done
        echo "soak.sh: the daemon did not come up" >&2; tail -20 "$work/daemon.log" >&2; exit 1
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
# cpu_percent PID SECONDS: the PID's CPU over the window, % of one CPU
cpu_percent() {
        local t0 t1 hz
        hz=$(getconf CLK_TCK)
        t0=$(cpu_ticks "$1"); sleep "$2"; t1=$(cpu_ticks "$1")
        awk -v a="$t0" -v b="$t1" -v s="$2" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz / s * 100 }'
}

# ---- 1. crash loop
"$B/tests/workloads/pingpong" --cpus 0,1 --duration 0 --pid-file "$work/pp.pids" >/dev/null 2>&1 &
PIDS+=($!)
"$B/tests/workloads/hog" -n 1 -d 0 -p "$work/hog.pids" >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -s "$work/pp.pids" ] && [ -s "$work/hog.pids" ] && break; sleep 0.1; done
# every thread of the workloads: their processes, and what their pid files name
mapfile -t threads < <(for p in "${PIDS[@]}" $(cat "$work/pp.pids" "$work/hog.pids"); do
        ls "/proc/$p/task" 2>/dev/null; done | sort -un)
declare -A orig
for t in "${threads[@]}"; do orig[$t]=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$t/status" 2>/dev/null || echo gone); done
caught=0
for i in $(seq "$KILLS"); do
        start
        sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.2 + r / 32767 * 2.8 }')"
        if grep -q '"applied"' "$RUN/journal" 2>/dev/null || [ "$(grep -c . "$RUN/journal" 2>/dev/null || echo 0)" -gt 1 ]; then
                caught=$((caught + 1))
        fi
        kill -9 "$D"; wait "$D" 2>/dev/null || true; D=
done
start
sleep 1
kill -TERM "$D"; wait "$D" || true; D=
left=0
for t in "${threads[@]}"; do
        now=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$t/status" 2>/dev/null || echo gone)
        [ "$now" = gone ] || [ "$now" = "${orig[$t]}" ] || { left=$((left + 1)); echo "  leftover: thread $t at $now (was ${orig[$t]})"; }
done
echo "crash loop: $KILLS kill -9s, $caught with a change journaled; leftovers after the final stop: $left (of ${#threads[@]} threads)"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()

# ---- 2. socket flood
start
chmod 755 "$RUN"
mkdir "$work/nobody" && chown nobody "$work/nobody"
cp "$SRC/tests/bus-flood.py" "$work/"
idle=$(cpu_percent "$D" 5)
runuser -u nobody -- bash -c "ulimit -n 4096 && exec /usr/bin/python3 '$work/bus-flood.py' '$RUN/bus' 3000 '$work/nobody/ready'" &
F=$!
for _ in $(seq 600); do [ -s "$work/nobody/ready" ] && break; sleep 0.1; done
flood=$(cpu_percent "$D" 10)
t0=$(date +%s%N); "$B/affctl" --runtime-dir "$RUN" status >/dev/null; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
kill "$F"; wait "$F" 2>/dev/null || true
echo "socket flood: 3000 connections as nobody: daemon CPU ${idle}% idle, ${flood}% during the flood (10 s); root's affctl status ${ms} ms; fds $(ls /proc/$D/fd | wc -l)"

# ---- 3. threads
before_cpu=$(cpu_percent "$D" 10); before_rss=$(rss_kib "$D")
"$B/tests/workloads/idlethreads" -t 20000 -p "$work/idle.pid" >/dev/null 2>&1 &
I=$!
for _ in $(seq 600); do [ -s "$work/idle.pid" ] && break; sleep 0.1; done
sleep 5
during_cpu=$(cpu_percent "$D" 20); during_rss=$(rss_kib "$D")
kill "$I"; wait "$I" 2>/dev/null || true
/usr/bin/python3 -c '
import threading, time
end = time.time() + 40; n = 0
while time.time() < end:
    ts = [threading.Thread(target=lambda: None) for _ in range(100)]
    for t in ts: t.start()
    for t in ts: t.join()
    n += 100
print(n / 40)' >"$work/churn.rate" &
C=$!
sleep 5
churn_cpu=$(cpu_percent "$D" 20); churn_rss=$(rss_kib "$D")
wait "$C"
sleep 10
after_cpu=$(cpu_percent "$D" 10); after_rss=$(rss_kib "$D")
printf 'threads: before %s%% %s KiB; 20,000 idle threads %s%% %s KiB; churn (%.0f thread starts/s) %s%% %s KiB; after %s%% %s KiB\n' \
        "$before_cpu" "$before_rss" "$during_cpu" "$during_rss" "$(cat "$work/churn.rate")" "$churn_cpu" "$churn_rss" \
        "$after_cpu" "$after_rss"
kill -TERM "$D"; wait "$D" || true; D=
