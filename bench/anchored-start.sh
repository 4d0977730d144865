#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/anchored-start.sh: how soon a settled daemon co-locates a pair that
# starts on a loaded machine with one side pinned by someone else (a client
# that pins itself, as memcaslap does) and the other free. The kernel keeps
# such a pair together most of the time and splits it in stretches of a few
# milliseconds, which one wake-up burst often does not see; a daemon whose
# placement is settled bursts rarely (one pass in 20 at the default
# interval). Under `stress-ng --cpu $(nproc) --cpu-load LOAD`, REPEATS
# rounds, each of them, for each variant (rotating the order):
#
#   start the daemon (the shipped policies, its default interval or
#   --interval's), wait
#   until its bursts have thinned out to one pass in SETTLED or fewer
#   (`affctl status`), start tests/workloads/pingpong --hold on the first
#   two CPUs, free its second side at once (the first stays on CPU A), and
#   time until the daemon has moved the free side onto CPU A, or DEADLINE
#   seconds; then stop the pair and the daemon (which restores).
#
# Variants: affinityd (this build), other (--other BINARY, e.g. a build of
# the commit before). Prints each try's time and the pair's split share
# after the free by its own count, and per variant the median and the
# longest time and the tries not co-located in time. Each try's daemon log
# and pingpong lines are kept in bench/results/logs/anchored-start-TIME/
# under the build tree.
#
# Usage (build tree, as root, nothing else running):
#   bash <srcdir>/bench/anchored-start.sh [--repeats N] [--load PCT]
#        [--settled N] [--deadline SEC] [--interval MS] [--other BINARY]
set -u -o pipefail
export LC_ALL=C

REPEATS=6 LOAD=40 SETTLED=10 DEADLINE=20 OTHER='' INTERVAL=()
while [[ $# -gt 0 ]]; do
        case $1 in
        --repeats) REPEATS=$2; shift ;;
        --load) LOAD=$2; shift ;;
        --settled) SETTLED=$2; shift ;;
        --deadline) DEADLINE=$2; shift ;;
        --other) OTHER=$2; shift ;;
        --interval) INTERVAL=(--interval "$2"); shift ;;
        *) echo "anchored-start: unknown option $1" >&2; exit 2 ;;
        esac
        shift
done
B=${BUILDDIR:-.}
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
PP=$B/tests/workloads/pingpong
[[ -x $PP && -x $B/affinityd && -x $B/affctl ]] ||
        { echo "anchored-start: build $B/affinityd, $B/affctl and $PP first" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "anchored-start: needs root" >&2; exit 2; }
command -v stress-ng >/dev/null || { echo "anchored-start: needs stress-ng" >&2; exit 2; }
. "$SRCDIR/tests/cpus.sh"   # CPU_A, CPU_B: the first two this script may use
have_two_cpus || { echo "anchored-start: needs two CPUs" >&2; exit 2; }

work=$(mktemp -d /tmp/affd-anchored.XXXXXX)
LOGS=$B/bench/results/logs/anchored-start-$(date +%Y%m%d-%H%M%S)
mkdir -p "$LOGS"
mkdir -p "$work/cfg"
cp -r "$SRCDIR/policies/policies.d" "$work/cfg/"
: >"$work/cfg/affinityd.conf"
ORIG=$(allowed_of $$)
DPID='' PPID_='' SPID=''
stop_all() {
        [[ -n $PPID_ ]] && { kill "$PPID_" 2>/dev/null; wait "$PPID_" 2>/dev/null; }
        [[ -n $DPID ]] && { kill -TERM "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
        PPID_='' DPID=''
}
trap 'stop_all; [[ -n $SPID ]] && kill "$SPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
stress-ng --cpu "$(nproc)" --cpu-load "$LOAD" -t 0 --quiet &
SPID=$!

now() { awk '{ print $1 }' /proc/uptime; }
stride() {   # the daemon's burst stride, 1 while it bursts before each pass
        "$B/affctl" --runtime-dir "$work/run" status --json 2>/dev/null |
                jq -r '.capabilities.wake_sampler.burst_every // 1'
}

# try VARIANT BIN ROUND → "seconds split-share", seconds "-" when not in time
try() {
        local t0 t a1 a2 s
        rm -rf "$work/run"; mkdir -p "$work/run"
        "$2" --runtime-dir "$work/run" --config-dir "$work/cfg" "${INTERVAL[@]}" >"$work/daemon.log" 2>&1 &
        DPID=$!
        t0=$(now)
        while s=$(stride); [[ ${s:-1} -lt $SETTLED ]]; do
                awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 180) }' &&
                        { echo "anchored-start: $1 did not settle in 180 s (stride ${s:-?})" >&2; stop_all; return 1; }
                sleep 1
        done
        rm -f "$work/pids"
        "$PP" --cpus "$CPU_A,$CPU_B" --hold --duration $((DEADLINE + 10)) --report-interval 250 \
                --pid-file "$work/pids" >"$work/pp.out" 2>&1 &
        PPID_=$!
        while [[ ! -s $work/pids ]]; do sleep 0.05; done
        { read -r a1; read -r a2; } <"$work/pids"
        taskset -pc "$ORIG" "$a2" >/dev/null
        t0=$(now) t=-
        while awk -v a="$t0" -v b="$(now)" -v d="$DEADLINE" 'BEGIN { exit !(b - a < d) }'; do
                if [[ $(allowed_of "$a2") == "$CPU_A" ]]; then
                        t=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
                        break
                fi
                sleep 0.05
        done
        # the pair's own split share from the free on, by round trips
        s=$(awk '/^t=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                         if (v["t"] < 0.25) next
                         x += (1 - v["same_cpu"]) * v["rate"]; n += v["rate"] }
                 END { printf "%.3f\n", (n > 0 ? x / n : 1) }' "$work/pp.out")
        [[ $(allowed_of "$a1") == "$CPU_A" ]] || echo "anchored-start: the pinned side's mask was changed: $(allowed_of "$a1")" >&2
        stop_all
        cp "$work/daemon.log" "$LOGS/$3.$1.daemon.log"
        cp "$work/pp.out" "$LOGS/$3.$1.pingpong.out"
        echo "$t $s"
}

variants="affinityd${OTHER:+ other}"
echo "# anchored pair on CPU $CPU_A beside stress-ng --cpu $(nproc) --cpu-load $LOAD; daemon ${INTERVAL[*]:-at its default interval}, settled to one pass in >= $SETTLED; $(nproc) CPUs, $(uname -r)"
echo "# round variant seconds-to-co-location split-share-until-then"
for r in $(seq 1 "$REPEATS"); do
        # shellcheck disable=SC2086  # two words, split on purpose
        set -- $variants
        [[ $((r % 2)) -eq 0 && -n $OTHER ]] && set -- other affinityd
        for v in "$@"; do
                bin=$B/affinityd
                [[ $v == other ]] && bin=$OTHER
                res=$(try "$v" "$bin" "$r") || continue
                echo "$r $v $res"
        done
done | tee "$work/runs.txt"
echo
echo "variant  median_s  longest_s  not_in_${DEADLINE}s"
for v in $variants; do
        awk -v v="$v" -v d="$DEADLINE" '$2 == v { if ($3 == "-") late++; else t[++n] = $3 }
                END { if (!n) { printf "%-8s  -  -  %d\n", v, late; exit }
                      asort(t); m = n % 2 ? t[(n + 1) / 2] : (t[n / 2] + t[n / 2 + 1]) / 2
                      printf "%-8s  %.2f  %.2f  %d\n", v, m, t[n], late }' "$work/runs.txt"
done
