#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/pairs-load.sh: pairs on a machine that is never quiet. Under
# `stress-ng --cpu $(nproc) --cpu-load LOAD` for the whole run, REPEATS
# rounds, each of these runs of DURATION seconds, in an order that rotates
# every round:
#
#   stream stock        tests/workloads/stream --work-us 20 --jitter 50, no daemon
#   stream affinityd    the same beside a fresh daemon (the shipped policies)
#   stream dryrun       the same beside a daemon in --dry-run: what its
#                       watching alone costs the stream
#   stream stock-again  stock once more: the spread of two runs of one
#                       kind under this load, the yardstick for the others
#   pingpong stock      tests/workloads/pingpong --cpus A,B (the first two
#                       CPUs allowed): started split,
#                       masks reset, the kernel places it from there
#   pingpong affinityd  the same beside a fresh daemon
#   pingpong hand       pingpong --pin A: both on one CPU, by hand
#   ... other           with --other BINARY: that build's daemon as well
#
# The stream is a pair the daemon must not hurt: both sides are busy and
# pipelined, and squeezed by the load they may look like a ping-pong; the
# target is >= 0.95x of its stock rate. The split ping-pong should get what
# pinning it by hand gets: >= 0.85x hand. Each daemon starts SETTLE seconds
# before its workload (its start-up calibration done) and stops after it
# (SIGTERM: it restores what it changed). The figures are the medians of
# the ratios paired by round (the runs of one round are back to back) and
# of the rates; each daemon run says what its effect check decided, and
# its log is kept (bench/results/logs/pairs-load-TIME/ROUND.WORKLOAD.VARIANT.daemon.log
# under the build tree) to say why; the rounds' rates are kept there too
# (runs.txt).
#
# Usage (build tree, as root, nothing else running):
#   bash <srcdir>/bench/pairs-load.sh [--repeats N] [--duration SEC]
#        [--load PCT] [--settle SEC] [--other BINARY]
#        [--workloads stream,pingpong]
set -u -o pipefail
export LC_ALL=C

REPEATS=3 DURATION=10 LOAD=40 SETTLE=2 OTHER='' WORKLOADS=stream,pingpong
while [[ $# -gt 0 ]]; do
        case $1 in
        --repeats) REPEATS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --load) LOAD=$2; shift ;;
        --settle) SETTLE=$2; shift ;;
        --other) OTHER=$2; shift ;;
        --workloads) WORKLOADS=$2; shift ;;
        *) echo "pairs-load: unknown option $1" >&2; exit 2 ;;
        esac
        shift
done
B=${BUILDDIR:-.}
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
ST=$B/tests/workloads/stream PP=$B/tests/workloads/pingpong
[[ -x $ST && -x $PP && -x $B/affinityd ]] ||
        { echo "pairs-load: build $B/affinityd, $ST and $PP first (make; make tests/workloads/stream tests/workloads/pingpong)" >&2; exit 2; }
command -v stress-ng >/dev/null || { echo "pairs-load: needs stress-ng (apt-get install stress-ng)" >&2; exit 2; }
. "$SRCDIR/tests/cpus.sh"   # CPU_A, CPU_B: the first two this script may use
have_two_cpus || { echo "pairs-load: needs 2 CPUs" >&2; exit 2; }
[[ -z $OTHER || -x $OTHER ]] || { echo "pairs-load: --other $OTHER is not an executable" >&2; exit 2; }
read -r -a WLS <<<"${WORKLOADS//,/ }"
for w in "${WLS[@]}"; do
        [[ $w == stream || $w == pingpong ]] || { echo "pairs-load: unknown workload $w (stream, pingpong)" >&2; exit 2; }
done

OUT=$(mktemp -d)
LOGS=$B/bench/results/logs/pairs-load-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$LOGS" || { echo "pairs-load: cannot make $LOGS" >&2; exit 2; }
LPID=
# the rounds run in a pipeline's subshell: a daemon's PID is left in a file
trap '[[ -s $OUT/dpid ]] && kill "$(cat "$OUT/dpid")" 2>/dev/null; [[ -n $LPID ]] && kill "$LPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$OUT"' EXIT

# workload_cmd WORKLOAD VARIANT: the workload's command line
workload_cmd() {
        case $1 in
        stream) echo "$ST --work-us 20 --jitter 50 --duration $DURATION" ;;
        pingpong) if [[ $2 == hand ]]; then echo "$PP --pin $CPU_A --duration $DURATION"
                  else echo "$PP --cpus $CPU_A,$CPU_B --duration $DURATION"; fi ;;
        esac
}

# run WORKLOAD VARIANT ROUND: one run; prints "RATE ACTIONS" (ACTIONS: the daemon's
# affinity changes and its effect check's keeps and undos, one a thread;
# "-" without a daemon)
run() {
        local w=$1 v=$2 bin= rd r verdicts=- DPID
        local -a args=()
        case $v in
        affinityd) bin=$B/affinityd ;;
        dryrun) bin=$B/affinityd args=(--dry-run) ;;
        other) bin=$OTHER ;;
        esac
        if [[ -n $bin ]]; then
                rd=$(mktemp -d "$OUT/rt.XXXXXX")
                "$bin" --runtime-dir "$rd" --config-dir "$SRCDIR/policies" "${args[@]}" >"$rd/log" 2>&1 &
                DPID=$!
                echo "$DPID" >"$OUT/dpid"
                # up (it may wait 5 s for another's instance lock, then give
                # up): a daemon that never ran must not be measured as one
                if ! ready "$rd" "$DPID"; then
                        kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null
                        : >"$OUT/dpid"
                        cat "$rd/log" >&2
                        echo "pairs-load: the daemon ($bin) did not come up" >&2
                        echo "NA daemon-not-up"
                        return 1
                fi
                sleep "$SETTLE"
        fi
        # shellcheck disable=SC2046 # the command line is words
        r=$($(workload_cmd "$w" "$v") 2>/dev/null | tail -n1 | grep -o '^rate=[0-9.]*' | cut -d= -f2)
        if [[ -n $bin ]]; then
                kill "$DPID"; wait "$DPID" 2>/dev/null
                : >"$OUT/dpid"
                cp "$rd/log" "$LOGS/$3.$w.$v.daemon.log"
                verdicts="set:$(grep -c 'set affinity' "$rd/log")/kept:$(grep -c 'effect check: .* kept:' "$rd/log")/undone:$(grep 'effect check:' "$rd/log" | grep -vc ' kept:')/for-a-look:$(grep -c 'effect check: .*released for a second look' "$rd/log")"
        fi
        # a run with no rate is no figure, not a rate of 0
        echo "${r:-NA} $verdicts"
}

# ready RUNDIR PID: the daemon answers affctl within 30 s, and still runs
ready() {
        local i
        for ((i = 0; i < 300; i++)); do
                kill -0 "$2" 2>/dev/null || return 1
                "$B/affctl" --runtime-dir "$1" status >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        return 1
}

variants_of() {
        case $1 in
        stream) echo "stock affinityd dryrun stock-again${OTHER:+ other}" ;;
        pingpong) echo "stock affinityd${OTHER:+ other} hand" ;;
        esac
}

stress-ng --cpu "$(nproc)" --cpu-load "$LOAD" --timeout 0 --quiet &
LPID=$!
sleep 1
echo "# host: $(lscpu | awk -F: '/^Model name/ { gsub(/^ +/, "", $2); print $2; exit }'), $(nproc) CPUs, kernel $(uname -r)"
echo "# load: stress-ng --cpu $(nproc) --cpu-load $LOAD; repeats=$REPEATS duration=${DURATION}s settle=${SETTLE}s${OTHER:+; other: $OTHER}"
echo "# daemon logs: $LOGS"
echo "# round workload variant rate effect-check"
for ((i = 1; i <= REPEATS; i++)); do
        for w in "${WLS[@]}"; do
                read -r -a vs <<<"$(variants_of "$w")"
                n=${#vs[@]}
                for ((k = 0; k < n; k++)); do
                        v=${vs[$(((k + i - 1) % n))]}
                        # (a subshell of the pipeline: exit would end only it)
                        res=$(run "$w" "$v" "$i") || { echo "$i $w $v $res"; : >"$OUT/failed"; break 3; }
                        echo "$i $w $v $res"
                done
        done
done | tee "$OUT/runs"
[ ! -e "$OUT/failed" ] || { echo "pairs-load: stopped: a daemon did not come up (above)" >&2; exit 1; }
# the rounds beside the daemon logs, for the per-round ratios later
cp "$OUT/runs" "$LOGS/runs.txt"
awk -f "$SRCDIR/bench/stats.awk" -f <(cat <<'EOF'
/^[0-9]/ && $4 != "NA" && $4 != "" { x[$2, $3, $1] = $4; if ($1 > maxrep) maxrep = $1; seen[$2, $3] = 1 }
function rates(w, v,    a, m, r) {
        m = 0
        for (r = 1; r <= maxrep; r++) if ((w, v, r) in x) a[++m] = x[w, v, r]
        return median(a, m)
}
function line(w, v, base, target,    q) {
        if (!((w, v) in seen)) return
        q = paired_median(x, maxrep, w, v, base)
        printf "%-9s %-10s %12.0f %8s %s\n", w, v, rates(w, v),
               q == "NA" ? "n/a" : sprintf("%.3f", q), target
}
END {
        printf "%-9s %-10s %12s %8s %s\n", "workload", "variant", "median/s", "ratio", "(paired median of variant/base; target)"
        line("stream", "stock", "stock", "")
        line("stream", "affinityd", "stock", "/stock, >= 0.95")
        line("stream", "dryrun", "stock", "/stock, watching alone")
        line("stream", "stock-again", "stock", "/stock, the spread of stock itself")
        line("stream", "other", "stock", "/stock, >= 0.95")
        line("pingpong", "stock", "hand", "/hand")
        line("pingpong", "affinityd", "hand", "/hand, >= 0.85")
        line("pingpong", "other", "hand", "/hand, >= 0.85")
        line("pingpong", "hand", "hand", "")
}
EOF
) "$OUT/runs"
