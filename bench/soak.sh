#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# soak.sh: the daemon under abuse, with figures for BENCHMARKS.md.
#
#  1. crash loop: the daemon (shipped policies, plus one that weights a
#     cgroup v1 cpu group at once, on the first pass) with a ping-pong pair
#     it co-locates and a hog, killed with SIGKILL at a random moment
#     (0.5-6 s after start) N times, restarted each time; then one clean
#     start and stop. Counted: threads of the workloads whose mask, and
#     the group's cpu.shares, not what they were before the first start
#     (goal: 0), and how many kills caught a change in force.
#  2. socket flood: 3,000 connections as nobody that never authenticate;
#     the daemon's CPU over 10 s and root's `affctl status` time.
#  3. threads: 20,000 idle threads, then thread churn (a Python loop
#     starting and joining threads); the daemon's CPU % of one CPU and RSS
#     before, during and after.
#
#   bench/soak.sh [--kills N] [--only crash|flood|threads] BUILDDIR
# Needs root, python3 (Debian's), runuser and the user nobody.
set -euo pipefail
KILLS=100 ONLY=
while [[ $# -gt 0 ]]; do
        case $1 in
        --kills) KILLS=$2; shift ;;
        --only) ONLY=$2; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit 0 ;;
        *) break ;;
        esac
        shift
done
B=$(cd "${1:?usage: soak.sh [--kills N] BUILDDIR}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tests/cpus.sh"   # CPU_A, CPU_B: the first two this script may use
have_two_cpus || { echo "soak: needs 2 CPUs" >&2; exit 2; }
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
        [ -z "${CGDIR:-}" ] || rmdir "$CGDIR" 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT

# The configuration: the shipped policies, and a weight on a cgroup of ours
# when the cgroup v1 cpu controller is writable (this machine's kernel).
CFG=$work/cfg
mkdir -p "$CFG/policies.d"
cp "$SRC/policies/affinityd.conf" "$CFG/"
cp "$SRC/policies/policies.d/"*.policy "$CFG/policies.d/"
CG= CGDIR=
if [ -w /sys/fs/cgroup/cpu/cpu.shares ] || [ -d /sys/fs/cgroup/cpu ]; then
        CG=/affd-soak-$$ CGDIR=/sys/fs/cgroup/cpu/affd-soak-$$
        mkdir "$CGDIR" 2>/dev/null || CG= CGDIR=
fi
if [ -n "$CG" ]; then
        printf '[Policy]\nDetector=always\nAction=weight\n[Match]\nCgroup=%s\n[Action]\nCPUWeight=500\n' "$CG" \
                >"$CFG/policies.d/60-soak-weight.policy"
fi
start() {   # start: the daemon in the background, up when affctl answers; D=PID
        "$B/affinityd" --runtime-dir "$RUN" --config-dir "$CFG" >>"$work/daemon.log" 2>&1 &
        D=$!
        for _ in $(seq 100); do "$B/affctl" --runtime-dir "$RUN" status >/dev/null 2>&1 && return 0; sleep 0.05; done
        echo "soak.sh: the daemon did not come up" >&2; tail -20 "$work/daemon.log" >&2; exit 1
}
# run time of all threads of a PID, ns (schedstat: finer than clock ticks)
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
# cpu_percent PID SECONDS: the PID's CPU over the window, % of one CPU
cpu_percent() {
        local t0 t1
        t0=$(cpu_ns "$1"); sleep "$2"; t1=$(cpu_ns "$1")
        awk -v a="$t0" -v b="$t1" -v s="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 / s * 100 }'
}

want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }

# ---- 1. crash loop
if want crash; then
"$B/tests/workloads/pingpong" --cpus "$CPU_A,$CPU_B" --duration 0 --pid-file "$work/pp.pids" >/dev/null 2>&1 &
PIDS+=($!)
"$B/tests/workloads/hog" -n 1 -d 0 -p "$work/hog.pids" >/dev/null 2>&1 &
PIDS+=($!)
[ -z "$CG" ] || echo "$!" >"$CGDIR/cgroup.procs"
shares0=$([ -z "$CG" ] || cat "$CGDIR/cpu.shares")
for _ in $(seq 50); do [ -s "$work/pp.pids" ] && [ -s "$work/hog.pids" ] && break; sleep 0.1; done
# every thread of the workloads: their processes, and what their pid files name
mapfile -t threads < <(for p in "${PIDS[@]}" $(cat "$work/pp.pids" "$work/hog.pids"); do
        ls "/proc/$p/task" 2>/dev/null; done | sort -un)
declare -A orig
for t in "${threads[@]}"; do orig[$t]=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$t/status" 2>/dev/null || echo gone); done
caught=0
for i in $(seq "$KILLS"); do
        start
        sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.5 + r / 32767 * 5.5 }')"
        # a begin not yet released: a change in force (or being made) at the kill
        if awk '/"rec":"begin"/ { b[$0 ~ /"seq":[0-9]+/ ? substr($0, index($0, "\"seq\":") + 6) + 0 : 0] = 1 }
                /"rec":"released"/ { s = substr($0, index($0, "\"seq\":") + 6) + 0; delete b[s] }
                END { for (k in b) n++; exit n > 0 ? 0 : 1 }' "$RUN/journal" 2>/dev/null; then
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
if [ -n "$CG" ]; then
        now=$(cat "$CGDIR/cpu.shares")
        [ "$now" = "$shares0" ] || { left=$((left + 1)); echo "  leftover: $CGDIR/cpu.shares $now (was $shares0)"; }
fi
echo "crash loop: $KILLS kill -9s, $caught with a change in force; leftovers after the final stop: $left (of ${#threads[@]} threads${CG:+ and $CGDIR/cpu.shares})"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()
fi

# ---- 2. socket flood
start
if want flood; then
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
fi

# ---- 3. threads
if want threads; then
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
fi
kill -TERM "$D"; wait "$D" || true; D=
