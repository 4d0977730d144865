#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/pair-tax.sh: what a running daemon costs a co-located ping-pong pair
# in steady state (target: affinityd must stay within 0.95x of hand-pinned).
# A pipe ping-pong pinned to a CPU with taskset semantics (--pin: someone
# else's pin, which the daemon respects and only watches) runs DURATION
# seconds REPEATS times in each of three modes, interleaved:
#
#   none      no daemon
#   daemon    the daemon with the shipped policies (wake-up bursts included:
#             the pair keeps the machine far above the quiet gate)
#   no-perf   the daemon with --no-perf (sampling, no tracepoint)
#
# The daemon is started 3 s before each run, in its own runtime directory.
# With --hog a CPU hog pinned to another CPU runs through each run (scenario 3's
# machine: both CPUs busy, so the daemon's own work lands on the pair's CPU
# about half of the time).
#
# With --other BINARY a fourth mode, "other", runs that affinityd (another
# build: what a change to the sampler buys, side by side).
#
# Usage (build tree, as root, holding the machine lock):
#   flock /tmp/affinityd-heavy.lock bash <srcdir>/bench/pair-tax.sh [--hog] [--other BINARY] [REPEATS] [DURATION]
set -u -o pipefail
export LC_ALL=C
HOG=0
OTHER=
while [[ ${1:-} == --* ]]; do
        case $1 in
        --hog) HOG=1 ;;
        --other) OTHER=$2; shift ;;
        *) echo "pair-tax: unknown option $1" >&2; exit 2 ;;
        esac
        shift
done
REPEATS=${1:-7}
DURATION=${2:-5}
B=${BUILDDIR:-.}
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
. "$SRCDIR/tests/cpus.sh"   # CPU_A, CPU_B: the first two this script may use
have_two_cpus || { echo "pair-tax: needs 2 CPUs" >&2; exit 2; }
PP=$B/tests/workloads/pingpong
[[ -x $PP && -x $B/affinityd ]] || { echo "pair-tax: build $B/affinityd and $PP first" >&2; exit 2; }
OUT=$(mktemp -d)
DPID=
trap '[[ -n $DPID ]] && kill "$DPID" 2>/dev/null; rm -rf "$OUT"' EXIT

rate() {
        local hpid='' r
        if [[ $HOG == 1 ]]; then
                "$B/tests/workloads/hog" --procs 1 --cpus "$CPU_B" --duration "$((DURATION + 1))" >/dev/null 2>&1 &
                hpid=$!
                sleep 0.2
        fi
        r=$("$PP" --pin "$CPU_A" --duration "$DURATION" 2>/dev/null | tail -n1 | grep -o '^rate=[0-9.]*' | cut -d= -f2)
        [[ -n $hpid ]] && { kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null; }
        echo "$r"
}
with_daemon() {  # [--binary PATH] DAEMON-ARGS...: one ping-pong run next to a fresh daemon
        local rd r bin=$B/affinityd
        [[ ${1:-} == --binary ]] && { bin=$2; shift 2; }
        rd=$(mktemp -d "$OUT/rt.XXXXXX")
        "$bin" --runtime-dir "$rd" --config-dir "$SRCDIR/policies" "$@" >"$rd/log" 2>&1 &
        DPID=$!
        sleep 3
        r=$(rate)
        kill "$DPID"; wait "$DPID" 2>/dev/null; DPID=
        echo "$r"
}

echo "# repeats=$REPEATS duration=${DURATION}s hog=$HOG kernel=$(uname -r)"
echo "# run none daemon no-perf${OTHER:+ other} (round trips/s)${OTHER:+; other: $OTHER}"
for ((i = 1; i <= REPEATS; i++)); do
        echo "$i $(rate) $(with_daemon) $(with_daemon --no-perf)${OTHER:+ $(with_daemon --binary "$OTHER")}"
done | tee "$OUT/runs"
awk -f "$SRCDIR/bench/stats.awk" -f <(cat <<'EOF'
/^[0-9]/ { n++; a[n] = $2; b[n] = $3; c[n] = $4; if (NF >= 5) { d[n] = $5; nd++ } }
END {
        ma = median(a, n); mb = median(b, n); mc = median(c, n)
        printf "median round trips/s: none %.0f, daemon %.0f (%.3fx), daemon --no-perf %.0f (%.3fx)",
               ma, mb, mb / ma, mc, mc / ma
        if (nd == n) {
                md = median(d, n)
                printf ", other %.0f (%.3fx)", md, md / ma
        }
        printf "\n"
}
EOF
) "$OUT/runs"
