#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# scale.sh: what a pass costs as the CPU count grows, on the fixture
# machines of tests/machines.c (2 to 256 CPUs, SMT, several L3s, two NUMA
# nodes on the large ones) with 200 and 2,000 threads in their /proc.
#
#   bench/scale.sh [--builddir DIR] [--repeats N] [--machines LIST]
#                  [--threads LIST] [--interval MS] [--settle S] [--window S]
#                  [--no-daemon] [--results-dir DIR]
#
# Three parts:
#  1. bench/scale rings --measure: the wake sampler's per-CPU events and ring
#     sizes at 1..1024 CPUs against perf_event_mlock_kb and LimitMEMLOCK=,
#     and the real events opened on this machine's CPUs with the rings
#     sized for 2..256 possible CPUs.
#  2. bench/scale: sample + detect + plan in-process, CPU time per pass
#     (medians), peak RSS and heap, a fit in µs per CPU.
#  3. The whole daemon: affinityd --root TREE --dry-run --no-perf at
#     --interval, with `bench/scale mutate` advancing the busy threads of
#     the tree, its CPU time (schedstat of its threads) over --window after
#     --settle divided by the passes it ran, and its VmHWM. Configurations
#     interleaved, --repeats runs each, medians.
#
# It starts affinityd: run it as root under
#   flock /tmp/affinityd-heavy.lock bash bench/scale.sh ...
# The trees go in a temporary directory (tmpfs when there is room) that is
# removed at the end. The output is also saved to RESULTS_DIR/scale-STAMP.txt.
set -euo pipefail

BUILDDIR=. REPEATS=3 MACHINES=vm2,smt8,smt16-2llc,smt64-numa2,smt128-numa2,smt256 THREADS=200,2000
INTERVAL=200 SETTLE=4 WINDOW=8 DAEMON=1 RESULTS=
usage() { sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
        case $1 in
        --builddir) BUILDDIR=$2; shift ;;
        --repeats) REPEATS=$2; shift ;;
        --machines) MACHINES=$2; shift ;;
        --threads) THREADS=$2; shift ;;
        --interval) INTERVAL=$2; shift ;;
        --settle) SETTLE=$2; shift ;;
        --window) WINDOW=$2; shift ;;
        --no-daemon) DAEMON=0 ;;
        --results-dir) RESULTS=$2; shift ;;
        -h|--help) usage 0 ;;
        *) echo "scale.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
        esac
        shift
done
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILDDIR=$(cd "$BUILDDIR" && pwd)
SCALE=$BUILDDIR/bench/scale
AFFINITYD=${AFFINITYD:-$BUILDDIR/affinityd}
AFFCTL=${AFFCTL:-$BUILDDIR/affctl}
: "${RESULTS:=$BUILDDIR/bench/results}"
[[ -x $SCALE ]] || { echo "scale.sh: $SCALE not found (make bench/scale)" >&2; exit 2; }
if [[ $DAEMON = 1 ]]; then
        [[ -x $AFFINITYD && -x $AFFCTL ]] || { echo "scale.sh: no affinityd/affctl in $BUILDDIR" >&2; exit 2; }
        command -v jq >/dev/null || { echo "scale.sh: jq is needed for the daemon runs" >&2; exit 2; }
fi

# Thousands of files per tree: tmpfs when there is room (the 256-CPU tree
# with 2,000 threads is ~12,000 files).
base=${TMPDIR:-/dev/shm}
if [[ -z ${TMPDIR:-} ]] && ! { [[ -w /dev/shm ]] && [[ $(df -Pk /dev/shm | awk 'NR == 2 { print $4 }') -ge 262144 ]]; }; then
        base=/tmp
fi
WORK=$(mktemp -d "$base/affd-scale.XXXXXX")
DPID= MPID=
cleanup() {
        [[ -n $DPID ]] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
        [[ -n $MPID ]] && kill -TERM "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null
        rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$RESULTS"
OUT=$RESULTS/scale-$(date -u +%Y%m%dT%H%M%SZ).txt

{
echo "# bench/scale.sh --repeats $REPEATS --machines $MACHINES --threads $THREADS --interval $INTERVAL" \
     "--settle $SETTLE --window $WINDOW; $(uname -r), $(nproc) CPUs online here"
echo
echo "## 1. wake sampler rings"
"$SCALE" rings --measure
echo
echo "## 2. sample + detect + plan, in-process"
"$SCALE" --machines "$MACHINES" --threads "$THREADS" --repeats "$REPEATS" --tmpdir "$WORK"
} 2> >(grep -v '^run ' >&2) | tee "$OUT"

[[ $DAEMON = 1 ]] || exit 0

# CPU time in ns of a process: its threads' run time from schedstat.
cpu_ns() {
        local f sum=0 v
        for f in /proc/"$1"/task/*/schedstat; do
                read -r v _ <"$f" 2>/dev/null || continue
                sum=$((sum + v))
        done
        echo "$sum"
}
passes() { "$AFFCTL" --runtime-dir "$1" status --json | jq '.counts.passes'; }
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }

cfg=$WORK/config
mkdir -p "$cfg"
cp -r "$SRCDIR/policies/." "$cfg/"
declare -a CONFS
for m in ${MACHINES//,/ }; do
        for t in ${THREADS//,/ }; do
                "$SCALE" write "$m" "$t" "$WORK/$m-$t"
                CONFS+=("$m:$t")
        done
done
declare -A PP HW
n=${#CONFS[@]}
for r in $(seq "$REPEATS"); do
        for j in $(seq 0 $((n - 1))); do
                c=${CONFS[$(((j + (r - 1) * 5) % n))]}   # rotated each repeat
                m=${c%:*} t=${c#*:} tree=$WORK/$m-$t rd=$WORK/run
                rm -rf "$rd"; mkdir -p "$rd"
                "$SCALE" mutate "$tree" "$t" "$INTERVAL" &
                MPID=$!
                "$AFFINITYD" --root "$tree" --runtime-dir "$rd" --config-dir "$cfg" --dry-run --no-perf \
                        --interval "$INTERVAL" >"$rd/log" 2>&1 &
                DPID=$!
                ok=
                for _ in $(seq 100); do
                        "$AFFCTL" --runtime-dir "$rd" status >/dev/null 2>&1 && { ok=1; break; }
                        kill -0 "$DPID" 2>/dev/null || break
                        sleep 0.1
                done
                [[ -n $ok ]] || { cat "$rd/log" >&2; echo "scale.sh: affinityd on $tree did not answer" >&2; exit 1; }
                sleep "$SETTLE"
                c0=$(cpu_ns "$DPID"); p0=$(passes "$rd")
                sleep "$WINDOW"
                c1=$(cpu_ns "$DPID"); p1=$(passes "$rd")
                h=$(hwm "$DPID")
                kill -TERM "$DPID"; wait "$DPID" || true; DPID=
                kill -TERM "$MPID"; wait "$MPID" 2>/dev/null || true; MPID=
                us=$(awk -v c=$((c1 - c0)) -v p=$((p1 - p0)) 'BEGIN { printf "%.0f", (p > 0 ? c / p / 1000 : -1) }')
                echo "daemon run $r $m threads=$t: $((p1 - p0)) passes, $us µs/pass, VmHWM $h KiB" >&2
                PP[$c]+="$us "
                HW[$c]+="$h "
        done
done

median() { tr ' ' '\n' | awk -f "$SRCDIR/bench/stats.awk" -f <(echo 'NF { v[++n] = $1 } END { print median(v, n) }'); }
{
echo
echo "## 3. the whole daemon (--root TREE --dry-run --no-perf --interval $INTERVAL), medians of $REPEATS runs"
printf '%-16s %5s %6s %10s %9s\n' machine cpus thr 'us/pass' hwmKiB
for c in "${CONFS[@]}"; do
        m=${c%:*} t=${c#*:}
        cpus=$(grep -c '^cpu[0-9]' "$WORK/$m-$t/proc/stat")
        printf '%-16s %5s %6s %10s %9s\n' "$m" "${cpus:-?}" "$t" "$(median <<<"${PP[$c]}")" "$(median <<<"${HW[$c]}")"
done | tee "$WORK/daemon.txt"
awk '{ x = $2; y = $4; k = $3; n[k]++; sx[k] += x; sy[k] += y; sxx[k] += x * x; sxy[k] += x * y
       if (!(k in lo) || x < lox[k]) { lox[k] = x; lo[k] = y }
       if (!(k in hi) || x > hix[k]) { hix[k] = x; hi[k] = y } }
     END { for (k in n) { b = (n[k] * sxy[k] - sx[k] * sy[k]) / (n[k] * sxx[k] - sx[k] * sx[k])
                          a = (sy[k] - b * sx[k]) / n[k]
                          printf "daemon fit threads=%s: %.0f + %.1f µs/CPU per pass; %d CPUs / %d CPUs = %.1fx\n",
                                 k, a, b, hix[k], lox[k], (lo[k] > 0 ? hi[k] / lo[k] : 0) } }' "$WORK/daemon.txt" | sort
} | tee -a "$OUT"
echo "saved: $OUT"
