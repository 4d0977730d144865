#!/bin/bash
# bench/rate-feeder.sh: what a one-way waker costs a co-located pair's tail.
#
# sysbench --rate=N drives its worker thread from an event-generator thread
# of its own (a queue and a condition variable: one wake-up a request, one
# way). The daemon co-locates the worker with its MariaDB connection
# thread (a ping-pong), and the generator stays where the kernel puts it.
# Per run: MariaDB + sysbench oltp_point_select --rate=RATE for 24 s with
# the daemon (shipped policies); at 12 s, in every other run, every other
# sysbench thread is pinned (taskset) to the CPU the daemon put the worker
# on. Printed per run: the median of sysbench's per-second p99 over 4-11 s
# and over 14-24 s, so the two halves of one run compare the placements
# on the same minute of the machine.
#
#   cd build-ci && bash ../bench/rate-feeder.sh [--runs N] [--rate N]
#
# Needs root, mariadb-server and sysbench (the README's test command
# installs them). Leaves nothing behind: its MariaDB and daemon are its own,
# in a temporary directory.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
SRCDIR=$(cd "$BENCH_DIR/.." && pwd)
BUILDDIR=${BUILDDIR:-$PWD}
RUNS=4 RATE=1000
while [[ $# -gt 0 ]]; do
        case $1 in
        --runs) RUNS=$2; shift ;;
        --rate) RATE=$2; shift ;;
        *) echo "usage: rate-feeder.sh [--runs N] [--rate N]" >&2; exit 2 ;;
        esac
        shift
done
AFFINITYD=$BUILDDIR/affinityd
[[ -x $AFFINITYD ]] || { echo "rate-feeder.sh: no $AFFINITYD (run it from the build directory)" >&2; exit 1; }
. "$SRCDIR/tests/servers-lib.sh"
work=$(mktemp -d /tmp/affd-feeder.XXXXXX)
D=
trap '[[ -z $D ]] || kill "$D" 2>/dev/null; servers_stop; rm -rf "$work"' EXIT
mariadb_start "$work" "$work" >/dev/null || exit 1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(uname -r); sysbench --rate=$RATE, $RUNS runs"
for run in $(seq 1 "$RUNS"); do
        rd=$work/run$run
        mkdir -p "$rd"
        "$AFFINITYD" --runtime-dir "$rd" --config-dir "$SRCDIR/policies" --interval 1000 >"$rd/daemon.log" 2>&1 &
        D=$!
        sleep 2
        "${SB[@]}" --threads=1 --rate="$RATE" --time=24 --report-interval=1 --percentile=99 oltp_point_select run \
                >"$rd/sb.log" 2>&1 &
        S=$!
        sleep 12
        cpu=
        for t in /proc/$S/task/*; do
                a=$(taskset -pc "${t##*/}" 2>/dev/null | awk '{ print $NF }')
                [[ $a =~ ^[0-9]+$ ]] && cpu=$a
        done
        if (( run % 2 )) && [[ -n $cpu ]]; then
                for t in /proc/$S/task/*; do taskset -pc "$cpu" "${t##*/}" >/dev/null 2>&1 || true; done
                what="then every sysbench thread on CPU $cpu"
        else
                what="then left as the daemon placed it (worker on CPU ${cpu:-none})"
        fi
        wait "$S" || true
        kill "$D"; wait "$D" 2>/dev/null || true; D=
        awk -v what="$what" -f "$BENCH_DIR/stats.awk" -f /dev/stdin "$rd/sb.log" <<'AWK'
/^\[ *[0-9]+s \]/ { t = $2; sub(/s$/, "", t); t += 0
                   for (i = 1; i < NF; i++) if ($i == "(ms,99%):") v = $(i + 1) * 1000
                   if (t >= 4 && t <= 11) a[++n] = v; if (t >= 14) b[++m] = v }
END { printf "p99 (median of per-second) 4-11 s %s us, 14-24 s %s us: %s\n", median(a, n), median(b, m), what }
AWK
done
