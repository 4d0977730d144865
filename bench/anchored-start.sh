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

REPEATS=6 LOAD=40 SETTLED=20 DEADLINE=20 OTHER='' INTERVAL=()
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
for c in stress-ng jq taskset; do
        command -v "$c" >/dev/null || { echo "anchored-start: needs $c" >&2; exit 2; }
done
[[ -z $OTHER || -x $OTHER ]] || { echo "anchored-start: --other $OTHER is not an executable" >&2; exit 2; }
. "$SRCDIR/tests/cpus.sh"   # CPU_A, CPU_B: the first two this script may use
have_two_cpus || { echo "anchored-start: needs two CPUs" >&2; exit 2; }

work=$(mktemp -d /tmp/affd-anchored.XXXXXX)
LOGS=$B/bench/results/logs/anchored-start-$(date +%Y%m%d-%H%M%S)
mkdir -p "$LOGS" "$work/cfg"
cp -r "$SRCDIR/policies/policies.d" "$work/cfg/"
: >"$work/cfg/affinityd.conf"   # every line of the shipped one is a comment
ORIG=$(allowed_of $$)
DPID='' PPID_='' SPID=''
# The daemon gets SIGTERM and is waited for: it restores what it changed.
stop_all() {
        [[ -n $PPID_ ]] && { kill "$PPID_" 2>/dev/null; wait "$PPID_" 2>/dev/null; }
        [[ -n $DPID ]] && { kill -TERM "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
        PPID_='' DPID=''
}
trap 'stop_all; [[ -n $SPID ]] && kill "$SPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
stress-ng --cpu "$(nproc)" --cpu-load "$LOAD" -t 0 --quiet &
SPID=$!

# While the pair is timed the script starts no process: each one is a new
# process to the daemon, whose early pass bursts, and a settled daemon
# would be watched more often than it is left. Time from bash's clock,
# masks read with builtins, pauses on a FIFO.
. "$SRCDIR/tests/nap.sh"
nap_open "$work"
now_ms() { local t=${EPOCHREALTIME/./}; printf -v "$1" '%d' $(( t / 1000 )); }
mask_into() {   # mask_into VAR TID: its Cpus_allowed_list, "" if gone
        local k v
        printf -v "$1" '%s' ''
        while read -r k v; do
                [[ $k == Cpus_allowed_list: ]] && { printf -v "$1" '%s' "$v"; return 0; }
        done 2>/dev/null <"/proc/$2/status"
}
stride() {   # the daemon's burst stride, 1 while it bursts before each pass
        "$B/affctl" --runtime-dir "$work/run" status --json 2>/dev/null |
                jq -r '.capabilities.wake_sampler.burst_every // 1'
}

# try VARIANT BIN ROUND → RES="seconds split-share", seconds "-" when not
# within the deadline; 1 when the try could not be made (said why)
try() {
        local t0 t1 t a1 a2 m s i
        rm -rf "$work/run"; mkdir -p "$work/run"
        "$2" --runtime-dir "$work/run" --config-dir "$work/cfg" "${INTERVAL[@]}" >"$work/daemon.log" 2>&1 &
        DPID=$!
        for ((i = 0; ; i++)); do
                kill -0 "$DPID" 2>/dev/null || { cat "$work/daemon.log" >&2; echo "anchored-start: $1 exited" >&2; stop_all; return 1; }
                s=$(stride)
                [[ ${s:-1} -ge $SETTLED ]] && break
                ((i < 180)) || { echo "anchored-start: $1 did not settle in 180 s (stride ${s:-?})" >&2; stop_all; return 1; }
                nap 1
        done
        # the early-pass allowance given back (one per 10 s) that the
        # polling above may have taken: the pair's start gets its early pass
        nap 10
        rm -f "$work/pids"
        "$PP" --cpus "$CPU_A,$CPU_B" --hold --duration 0 --report-interval 250 \
                --pid-file "$work/pids" >"$work/pp.out" 2>&1 &
        PPID_=$!
        for ((i = 0; i < 200; i++)); do [[ -s $work/pids ]] && break; nap 0.05; done
        [[ -s $work/pids ]] || { echo "anchored-start: pingpong did not start" >&2; stop_all; return 1; }
        { read -r a1; read -r a2; } <"$work/pids"
        taskset -pc "$ORIG" "$a2" >/dev/null || { echo "anchored-start: cannot free $a2" >&2; stop_all; return 1; }
        now_ms t0
        t=-
        while now_ms t1; ((t1 - t0 < DEADLINE * 1000)); do
                mask_into m "$a2"
                if [[ $m == "$CPU_A" ]]; then
                        printf -v t '%d.%02d' $(( (t1 - t0) / 1000 )) $(( (t1 - t0) % 1000 / 10 ))
                        break
                fi
                nap 0.05
        done
        # the pair's own split share from the free on, by round trips: the
        # first 250 ms window holds the held split before the free
        s=$(awk '/^t=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                         if (v["t"] < 0.5) next
                         x += (1 - v["same_cpu"]) * v["rate"]; n += v["rate"] }
                 END { printf "%.3f\n", (n > 0 ? x / n : 1) }' "$work/pp.out")
        [[ $(allowed_of "$a1") == "$CPU_A" ]] || echo "anchored-start: the pinned side's mask was changed: $(allowed_of "$a1")" >&2
        stop_all
        cp "$work/daemon.log" "$LOGS/$3.$1.daemon.log"
        cp "$work/pp.out" "$LOGS/$3.$1.pingpong.out"
        RES="$t $s"
}

variants="affinityd${OTHER:+ other}"
echo "# anchored pair on CPU $CPU_A beside stress-ng --cpu $(nproc) --cpu-load $LOAD; daemon ${INTERVAL[*]:-at its default interval}, settled to one pass in >= $SETTLED; $(nproc) CPUs, $(uname -r)"
echo "# round variant seconds-to-co-location split-share-until-then"
: >"$work/runs.txt"
for r in $(seq 1 "$REPEATS"); do
        # shellcheck disable=SC2086  # two words, split on purpose
        set -- $variants
        [[ $((r % 2)) -eq 0 && -n $OTHER ]] && set -- other affinityd
        for v in "$@"; do
                bin=$B/affinityd
                [[ $v == other ]] && bin=$OTHER
                try "$v" "$bin" "$r" || continue
                echo "$r $v $RES" | tee -a "$work/runs.txt"
        done
done
echo
echo "variant  tries  median_s  longest_s  not_in_${DEADLINE}s"
# a try not within the deadline counts as longer than it
for v in $variants; do
        awk -v v="$v" '$2 == v { print ($3 == "-" ? "inf" : $3) }' "$work/runs.txt" | sort -g |
                awk -v v="$v" -v d="$DEADLINE" '{ t[NR] = $1; late += $1 == "inf" }
                        function show(x) { return x == "inf" ? ">" d : sprintf("%.2f", x) }
                        END { if (!NR) { printf "%-9s  0  -  -  0\n", v; exit }
                              if (NR % 2) m = show(t[(NR + 1) / 2])
                              else if (t[NR / 2 + 1] == "inf") m = ">" d
                              else m = sprintf("%.2f", (t[NR / 2] + t[NR / 2 + 1]) / 2)
                              printf "%-9s  %d  %s  %s  %d\n", v, NR, m, show(t[NR]), late }'
done
