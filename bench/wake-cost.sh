#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/wake-cost.sh: what the sched:sched_waking sampler costs a wake-up
# heavy workload. A pipe ping-pong pinned to one CPU (the co-located pair
# of tests/pairs-integration.sh: ~480k round trips/s here, one sched_waking per round trip)
# runs REPEATS times in each of three modes, interleaved:
#
#   off         no perf event
#   continuous  the wake sampler with its events always open (the adaptive
#               period, as before the duty cycle)
#   duty        the wake sampler as the daemon runs it: events open only in
#               100 ms bursts before each 1 s pass
#
# The sampler runs in its own process (tests/test-wake --bench), started
# 0.4 s before the ping-pong; the ping-pong runs DURATION seconds. The pair
# uses its CPU fully, so 1/rate is its CPU time per round trip and the
# difference to "off", divided by the sched_waking events per round trip
# (measured by the sampler), is the cost per wake-up.
#
# Usage (build tree, as root, holding the machine lock):
#   flock /tmp/affinityd-heavy.lock bash <srcdir>/bench/wake-cost.sh [REPEATS] [DURATION]
set -u -o pipefail
export LC_ALL=C
REPEATS=${1:-7}
DURATION=${2:-3}
B=${BUILDDIR:-.}
PP=$B/tests/workloads/pingpong
TW=$B/tests/test-wake
[[ -x $PP && -x $TW ]] || { echo "wake-cost: build $PP and $TW first (make tests/test-wake tests/workloads/pingpong)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# the pair on the first CPU this script may use (tests/cpus.sh)
. "$(cd "$(dirname "$0")/.." && pwd)/tests/cpus.sh"
mapfile -t CPU_IDS < <(allowed_cpus)
CPU_A=${CPU_IDS[0]}
rate() { "$PP" --pin "$CPU_A" --duration "$DURATION" 2>/dev/null | tail -n1 | grep -o '^rate=[0-9.]*' | cut -d= -f2; }
with_sampler() {  # MODE-ARGS...: run the sampler around one ping-pong run
        local pid r
        "$TW" --bench "$(awk -v d="$DURATION" 'BEGIN { print d + 1 }')" "$@" >"$OUT/tw.out" 2>&1 &
        pid=$!
        sleep 0.4
        r=$(rate)
        wait "$pid"
        echo "$r $(awk '/^[0-9]/ { e = $2 } END { print e + 0 }' "$OUT/tw.out")"
}

echo "# repeats=$REPEATS duration=${DURATION}s kernel=$(uname -r) perf_event_max_sample_rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate)"
echo "# run off continuous duty events_per_s(continuous)"
for ((i = 1; i <= REPEATS; i++)); do
        off=$(rate)
        read -r cont ev < <(with_sampler --continuous)
        read -r duty _ < <(with_sampler)
        echo "$i $off $cont $duty $ev"
done | tee "$OUT/runs"
awk -f "$(dirname "$0")/stats.awk" -f <(cat <<'EOF'
/^[0-9]/ { n++; off[n] = $2; cont[n] = $3; duty[n] = $4; ev[n] = $5 }
END {
        mo = median(off, n); mc = median(cont, n); md = median(duty, n); me = median(ev, n)
        per_rt = me / mc        # sched_waking events per round trip (while on)
        printf "median round trips/s: off %.0f, continuous %.0f (%.3fx), duty-cycled %.0f (%.3fx)\n", mo, mc, mc / mo, md, md / mo
        printf "sched_waking events per round trip: %.2f\n", per_rt
        printf "cost per wake-up: continuous %.3f us, duty-cycled %.3f us (averaged over on and off time), off 0\n", \
                (1e6 / mc - 1e6 / mo) / per_rt, (1e6 / md - 1e6 / mo) / per_rt
}
EOF
) "$OUT/runs"
