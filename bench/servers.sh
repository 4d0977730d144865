#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/servers.sh: real servers nobody here wrote, stock vs affinityd vs
# hand-pinned, interleaved in one run (the order rotates every repeat).
#
#   mdb-ps-1   MariaDB + sysbench oltp_point_select, 1 client thread (qps)
#   mdb-ro-1   MariaDB + sysbench oltp_read_only, 1 client thread (qps)
#   mdb-ps-4   the same, 4 client threads
#   mdb-ro-4
#   mdb-churn  short connections: one sysbench client after another, each
#              runs 3,000 point selects (a few tenths of a second) and
#              leaves, for the whole run (qps over all of them)
#   redis-1    Redis + redis-benchmark GET, 1 connection (requests/s)
#   redis-50   the same, 50 connections
#   redis-hub  three redis-benchmark processes of 1 connection each: one
#              Redis thread serving three clients (a hub, not a pair)
#   pg-1       PostgreSQL + pgbench -S (select only), 1 client (tps); a
#              backend process forked per connection
#   pg-4       the same, 4 clients (-c 4, one pgbench thread per CPU)
#   pg-8       8 clients: more connections than CPUs, each pgbench thread
#              serving several backends (hubs, not pairs)
#   mc-1       memcached (4 worker threads) + memcaslap, 1 connection, over
#              TCP on 127.0.0.1 (transactions/s); memcaslap pins its own
#              threads, so the pair is co-located around the client's CPU
#   nginx-1    nginx (1 worker, as www-data) + wrk, 1 thread, 1 connection,
#              a 612-byte static page over TCP on 127.0.0.1 (requests/s)
#   sockperf-1 sockperf ping-pong over TCP on 127.0.0.1 (round trips/s,
#              from its reported mean latency)
#   proxy-1    wrk (1 thread, 1 connection) -> an nginx reverse proxy (1
#              worker) -> the nginx-1 server: a chain of three (requests/s)
# Loads that are no pair to co-locate, where the daemon must cost nothing
# (not in the default list; the target is >= 0.98x stock, and hand, all on
# one CPU, is no reference for them):
#   redis-p16  Redis + redis-benchmark GET, 1 connection, 16 requests in
#              flight (-P 16): a pipelined client (requests/s)
#   iperf-stream  iperf3, one TCP stream over 127.0.0.1 (Mbit/s received)
#   hackbench  perf bench sched messaging -g 4 -l 200 (4 groups of 20
#              senders and 20 receivers over sockets, 160 processes a run)
#              one run after another (messages/s)
#   sng-pipe   stress-ng --pipe 1: a writer and a reader streaming through
#              a pipe, both busy (bogo ops/s)
#   sng-sock   stress-ng --sock 1: a client and a server over a TCP socket
#              (bogo ops/s)
#
# Fixed offered rate (open loop, below saturation; N requests/s, e.g.
# mdb-ps-r1000): the client sends at its rate as production clients do,
# and the figure is latency, p50 and p99 in µs, beside the rate achieved
#   mdb-ps-rN  sysbench oltp_point_select --rate=N, 1 thread (its latency
#              histogram)
#   pg-rN      pgbench -S -R N, 1 client (its per-transaction log)
#   redis-rN   bench/rate-client 'GET k' on the unix socket, 1 connection
#   pipe-rN    tests/workloads/pingpong --rate N: a pipe pair, no server
#
#   stock      no daemon; the server's threads may run anywhere
#   affinityd  a fresh daemon per run, the shipped policies, 1 s interval,
#              started --settle seconds (default 0) before the client
#   hand       server and client all on one CPU (taskset; the first this
#              script may use), what a careful human does for a single
#              client
#   stock-again  (not in the default list) stock once more in each repeat:
#              stock against itself, the spread any paired ratio of the run
#              carries before a variant changes anything
#   grouped    (not in the default list) what a careful human does for
#              several clients: 1 s into the run, each server thread goes
#              with the client thread it exchanges the most wake-ups with
#              (perf, 0.3 s of the whole machine), each client with its
#              server threads on one CPU, one group per CPU in turn
#              (taskset -p); a pgbench thread with its backends, a sysbench
#              thread with its MariaDB connection thread. Not for
#              mdb-churn: its clients come and go after the grouping
#   other      (not in the default list) the daemon $AFFINITYD_OTHER (e.g.
#              the build of another commit) run as affinityd is: two
#              builds side by side in one interleaved run; with
#              $AFFINITYD_OTHER_CONFIG, on that configuration directory
#              instead of the shipped policies (two configurations of one
#              build: AFFINITYD_OTHER=$PWD/affinityd)
#   dryrun-other  the same in --dry-run: what the other build or
#              configuration's watching costs
#   noperf     (not in the default list) affinityd --no-perf: what the
#              daemon costs and does without the perf wake-up sampler
#   dryrun     (not in the default list) affinityd --dry-run: it watches
#              and changes nothing; what watching alone costs a client
#   dryrun-noperf  the same with --no-perf: what watching costs without the
#              wake-up sampler
#   VARIANT@N  a daemon variant run at nice N (e.g. dryrun@-5, as the
#              systemd unit runs it, Nice=-5); without @, at the bench's own
#              nice level
#
# --load PCT: production machines are never quiet. stress-ng --cpu NCPU
# --cpu-load PCT runs on every CPU for the whole benchmark, every variant
# beside the same load (stress-ng is installed when missing).
#
# Each server is a private instance started by this script on a unix
# socket in a temporary folder (not the system's instance, whose data and
# state are not touched; the loopback servers, whose clients speak only
# TCP, on a free port of 127.0.0.1), and stopped and removed at the end.
# Missing packages (mariadb-server sysbench redis-server redis-tools,
# postgresql for pg-*, memcached libmemcached-tools nginx-light wrk
# sockperf for the loopback rows, iperf3, linux-perf for hackbench,
# stress-ng for sng-*) are installed with apt-get when run as root.
#
# For affinityd the figure covers the whole run from the client's start,
# so the time until the pair is co-located counts against it; that time is
# reported too (from the client's start to the daemon's "co-locate" log
# line). Redis is measured on the server side: total_commands_processed
# over the window.
#
# Results: <results-dir>/servers-<stamp>.{txt,csv} and servers-latest.*,
# raw logs under <results-dir>/logs/servers-<stamp>/.

set -u -o pipefail
export LC_ALL=C

SELF=$(readlink -f "${BASH_SOURCE[0]}")
BENCH_DIR=$(dirname "$SELF")
SRCDIR=$(dirname "$BENCH_DIR")
BUILDDIR=$PWD
RESULTS_DIR=
REPEATS=3
DURATION=12
SETTLE=0
LOAD=
WORKLOADS=mdb-ps-1,mdb-ro-1,mdb-ps-4,mdb-ro-4,mdb-churn,redis-1,redis-50,redis-hub,pg-1,pg-4,pg-8,mc-1,nginx-1,sockperf-1,proxy-1
VARIANTS=stock,affinityd,hand
# set per variant by one_run() (other, dryrun-other), never by the caller's environment
unset DAEMON_CONFIG

usage() {
        sed -n '3,/^# Each server/p' "$SELF" | sed '$d; s/^# \{0,1\}//'
        cat <<EOF

Usage: bench/servers.sh [--repeats N] [--duration SEC] [--settle SEC] [--load PCT] [--workloads LIST]
                        [--variants LIST] [--srcdir DIR] [--builddir DIR]
                        [--results-dir DIR] [--summarize RUNS.CSV]
Defaults: --repeats $REPEATS --duration $DURATION --workloads $WORKLOADS
Latency rows, e.g.: --workloads mdb-ps-r1000,pg-r1000,redis-r1000,pipe-r1000
                    --variants stock,affinityd,dryrun,hand
EOF
}

# The tables of a run from its runs.csv ($1), on stdout (also --summarize).
summary_tables() {
awk -F, -f "$BENCH_DIR/stats.awk" -f /dev/stdin "$1" <<'EOF'
NR == 1 { next }
$1 ~ /-r[0-9]+$/ { next }   # fixed-rate rows: the latency table below
$4 != "NA" {
        k = $1 SUBSEP $2
        n[k]++; v[k, n[k]] = $4
        byrep[$1, $2, $3] = $4; if ($3 > maxrep) maxrep = $3
        if (!($1 in seen)) { seen[$1] = 1; order[++nw] = $1 }
        if ($2 == "affinityd") nr[$1]++
        if ($2 == "affinityd" && $5 != "NA") { nc[$1]++; c[$1, nc[$1]] = $5 }
        if ($2 == "affinityd" && $6 != "NA") { na[$1]++; ac[$1, na[$1]] = $6 }
}
# The verdict's figure (stats.awk, paired_median()): on a host whose single
# runs spread over +-30 %, a slow minute hits both sides of the ratio.
function paired(w, var, base) { return paired_median(byrep, maxrep, w, var, base) }
function med(w, var,    a, i, k) {
        k = w SUBSEP var
        for (i = 1; i <= n[k]; i++) a[i] = v[k, i]
        return median(a, n[k])
}
END {
        printf "%-9s %10s %10s %10s %8s %8s %8s %8s %5s  %s\n", "workload", "stock", "affinityd", "hand",
               "aff/hand", "aff/stk", "paired", "coloc_s", "sets", "target (on paired)"
        for (i = 1; i <= nw; i++) {
                w = order[i]
                s = med(w, "stock"); a = med(w, "affinityd"); h = med(w, "hand"); np = med(w, "noperf")
                ot = med(w, "other"); gr = med(w, "grouped"); sa = med(w, "stock-again")
                for (j = 1; j <= nc[w]; j++) cc[j] = c[w, j]
                cm = coloc(median(cc, nc[w]), nc[w], nr[w]); delete cc
                for (j = 1; j <= na[w]; j++) cc[j] = ac[w, j]
                am = median(cc, na[w]); delete cc
                single = w ~ /-1$/
                if (single) { ratio = paired(w, "affinityd", "hand"); goal = 0.9; what = ">= 0.90x hand" }
                else { ratio = paired(w, "affinityd", "stock"); goal = 0.98; what = ">= 0.98x stock" }
                verdict = ratio == "NA" ? "n/a" : ratio >= goal ? "MET" : "MISSED"
                printf "%-9s %10s %10s %10s %8s %8s %8s %8s %5s  %s %s\n", w, fmt(s), fmt(a), fmt(h),
                       (a != "NA" && h != "NA") ? sprintf("%.3f", a / h) : "NA",
                       (a != "NA" && s != "NA") ? sprintf("%.3f", a / s) : "NA",
                       ratio == "NA" ? "NA" : sprintf("%.3f", ratio), cm, am, what, verdict
                if (np != "NA")
                        printf "%-9s %10s %10s (--no-perf)  noperf/stock %s, paired %s\n", w, "", fmt(np),
                               s != "NA" ? sprintf("%.3f", np / s) : "NA", fmt3(paired(w, "noperf", "stock"))
                # several clients: each repeat too, where a target must hold in every one
                if (!single && a != "NA" && s != "NA")
                        printf "%-9s %10s affinityd / stock, each repeat:%s\n", w, "", each(w, "affinityd", "stock")
                if (sa != "NA")
                        printf "%-9s %10s %10s (stock again)  paired %s, each repeat:%s\n", w, "", fmt(sa),
                               fmt3(paired(w, "stock-again", "stock")), each(w, "stock-again", "stock")
                if (gr != "NA")
                        printf "%-9s %10s %10s (grouped by hand)  grouped/stock %s, paired %s; affinityd/grouped paired %s\n",
                               w, "", fmt(gr), s != "NA" ? sprintf("%.3f", gr / s) : "NA",
                               fmt3(paired(w, "grouped", "stock")), fmt3(paired(w, "affinityd", "grouped"))
                if (ot != "NA")
                        printf "%-9s %10s %10s (other)  other/stock %s, paired %s; affinityd/other paired %s\n", w, "",
                               fmt(ot), s != "NA" ? sprintf("%.3f", ot / s) : "NA", fmt3(paired(w, "other", "stock")),
                               fmt3(paired(w, "affinityd", "other"))
        }
}
function fmt(x) { return x == "NA" ? "NA" : sprintf("%.0f", x) }
function fmt3(x) { return x == "NA" ? "NA" : sprintf("%.3f", x) }
# var / base in each repeat, in order
function each(w, var, base,    r, out) {
        for (r = 1; r <= maxrep; r++)
                if ((w, var, r) in byrep && (w, base, r) in byrep && byrep[w, base, r] > 0)
                        out = out sprintf(" %.2f", byrep[w, var, r] / byrep[w, base, r])
        return out
}
EOF
# Fixed-rate rows: latency medians per variant and the paired p99 ratios
# (within one repeat, as above); lower is better. Targets: p99 <= stock and
# <= 1.2x hand with the daemon acting, within 5 % of stock in --dry-run.
awk -F, -f "$BENCH_DIR/stats.awk" -f /dev/stdin "$1" <<'EOF'
NR == 1 { next }
$1 ~ /-r[0-9]+$/ && $8 != "NA" {
        k = $1 SUBSEP $2
        n[k]++; p99[k, n[k]] = $8; p50[k, n[k]] = $7
        if (!($2 in vseen)) { vseen[$2] = 1; vars[++nv] = $2 }
        byrep[$1, $2, $3] = $8; if ($3 > maxrep) maxrep = $3
        if (!($1 in seen)) { seen[$1] = 1; order[++nw] = $1 }
        if ($2 == "affinityd") nr[$1]++
        if ($2 == "affinityd" && $5 != "NA") { nc[$1]++; c[$1, nc[$1]] = $5 }
        # the steady p99 (column 9; runs before it was measured have none)
        if ($9 != "" && $9 != "NA" && $9 > 0) { ns[k]++; p99s[k, ns[k]] = $9; byreps[$1, $2, $3] = $9; have_s = 1 }
}
function paired(w, var, base,    x) {
        x = paired_median(byrep, maxrep, w, var, base)
        return x == "NA" ? x : sprintf("%.2f", x)
}
function paireds(w, var, base,    x) {
        x = paired_median(byreps, maxrep, w, var, base)
        return x == "NA" ? x : sprintf("%.2f", x)
}
function meds(w, var,    a, i, k) {
        k = w SUBSEP var
        if (!ns[k]) return "NA"
        for (i = 1; i <= ns[k]; i++) a[i] = p99s[k, i]
        return sprintf("%.0f", median(a, ns[k]))
}
function med(arr, w, var,    a, i, k) {
        k = w SUBSEP var
        if (!n[k]) return "NA"
        for (i = 1; i <= n[k]; i++) a[i] = arr[k, i]
        return sprintf("%.0f", median(a, n[k]))
}
function cell(w, var) { return med(p50, w, var) "/" med(p99, w, var) }
END {
        if (!nw) exit
        printf "\nFixed offered rate: p50/p99 latency in us (medians), paired p99 ratios (lower is better)\n"
        printf "%-13s %11s %11s %11s %11s %8s %8s %8s %8s\n", "workload", "stock", "affinityd", "dryrun", "hand",
               "aff/stk", "aff/hand", "dry/stk", "coloc_s"
        for (i = 1; i <= nw; i++) {
                w = order[i]
                for (j = 1; j <= nc[w]; j++) cc[j] = c[w, j]
                cm = coloc(nc[w] ? median(cc, nc[w]) : "NA", nc[w], nr[w]); delete cc
                printf "%-13s %11s %11s %11s %11s %8s %8s %8s %8s\n", w, cell(w, "stock"), cell(w, "affinityd"),
                       cell(w, "dryrun"), cell(w, "hand"), paired(w, "affinityd", "stock"),
                       paired(w, "affinityd", "hand"), paired(w, "dryrun", "stock"), cm
                for (j = 1; j <= nv; j++)
                        if (vars[j] !~ /^(stock|affinityd|dryrun|hand)$/ && n[w, vars[j]])
                                printf "%-13s %11s %11s (%s)  paired p99 /stock %s\n", w, "",
                                       cell(w, vars[j]), vars[j], paired(w, vars[j], "stock")
        }
        if (!have_s) exit
        printf "\nSteady p99 in us, after the first 2 s of each run (medians), paired ratios (lower is better)\n"
        printf "%-13s %8s %9s %8s %8s %8s %8s %8s\n", "workload", "stock", "affinityd", "dryrun", "hand",
               "aff/stk", "aff/hand", "dry/stk"
        for (i = 1; i <= nw; i++) {
                w = order[i]
                printf "%-13s %8s %9s %8s %8s %8s %8s %8s\n", w, meds(w, "stock"), meds(w, "affinityd"),
                       meds(w, "dryrun"), meds(w, "hand"), paireds(w, "affinityd", "stock"),
                       paireds(w, "affinityd", "hand"), paireds(w, "dryrun", "stock")
        }
}
EOF
}

while [[ $# -gt 0 ]]; do
        case $1 in
        --repeats) REPEATS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --settle) SETTLE=$2; shift ;;
        --load) LOAD=$2; shift
                [[ $LOAD =~ ^[0-9]+$ && $LOAD -ge 1 && $LOAD -le 100 ]] ||
                        { echo "servers.sh: --load $LOAD: a percentage, 1-100" >&2; exit 2; } ;;
        --workloads) WORKLOADS=$2; shift ;;
        --variants) VARIANTS=$2; shift ;;
        --srcdir) SRCDIR=$2; shift ;;
        --builddir) BUILDDIR=$2; shift ;;
        --results-dir) RESULTS_DIR=$2; shift ;;
        --summarize) SUMMARIZE=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "servers.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        esac
        shift
done

# --summarize RUNS.CSV: the tables of an earlier run, nothing run
if [[ -n ${SUMMARIZE:-} ]]; then
        summary_tables "$SUMMARIZE"
        exit
fi
AFFINITYD=${AFFINITYD:-$BUILDDIR/affinityd}
RATE_CLIENT=${RATE_CLIENT:-$BUILDDIR/bench/rate-client}
PINGPONG=${PINGPONG:-$BUILDDIR/tests/workloads/pingpong}
AFFCTL=${AFFCTL:-$BUILDDIR/affctl}
RESULTS_DIR=${RESULTS_DIR:-$BUILDDIR/bench/results}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
LOGS=$RESULTS_DIR/logs/servers-$STAMP
mkdir -p "$LOGS" || exit 1
. "$SRCDIR/tests/cpus.sh"
NCPU=$(nproc)
# the CPUs this script may use (stock's mask, hand's CPU, grouped's CPUs):
# its own allowed set, which a cpuset may leave without CPU 0
ALLCPUS=$(allowed_of $$)
mapfile -t CPU_IDS < <(allowed_cpus)

die() { echo "servers.sh: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root (it starts the daemon and pins threads)"
[[ -x $AFFINITYD ]] || die "no daemon at $AFFINITYD (build first, or set AFFINITYD)"

. "$SRCDIR/tests/servers-lib.sh"
mapfile -t need < <(servers_missing_packages)
[[ ,$WORKLOADS, == *,pg-* ]] && need+=($(postgres_missing_package))
[[ ,$WORKLOADS, =~ ,(mc|nginx|sockperf|proxy)- ]] && need+=($(loopback_missing_packages))
[[ ,$WORKLOADS, == *,iperf-* ]] && ! command -v iperf3 >/dev/null && need+=(iperf3)
[[ ,$WORKLOADS, == *,sng-* || -n $LOAD ]] && ! command -v stress-ng >/dev/null && need+=(stress-ng)
command -v gnuplot >/dev/null || need+=(gnuplot-nox)   # the chart
# perf: hackbench's runs, and the grouped variant's wake-ups
[[ ,$WORKLOADS, == *,hackbench,* || ,$VARIANTS, == *,grouped,* ]] && ! command -v perf >/dev/null && need+=(linux-perf)
if [[ ${#need[@]} -gt 0 ]]; then
        echo "# installing ${need[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
                die "cannot install ${need[*]}"
fi
# perf tracepoints need tracefs; systemd mounts it at boot, a bare machine
# may not have it. Unmounted again at the end if we mounted it.
MOUNTED_TRACEFS=0
if ! mountpoint -q /sys/kernel/tracing && mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
        MOUNTED_TRACEFS=1
fi

WORK=$(mktemp -d /tmp/affinityd-servers.XXXXXX)
DAEMON_PID=

cleanup() {
        [[ -n ${TICK:-} ]] && exec {TICK}>&-
        [[ -n $DAEMON_PID ]] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
        [[ -n ${WATCH_PID:-} ]] && wait "$WATCH_PID" 2>/dev/null
        [[ -n ${GROUP_PID:-} ]] && kill "$GROUP_PID" 2>/dev/null && wait "$GROUP_PID" 2>/dev/null
        [[ -n ${LOAD_PID:-} ]] && kill "$LOAD_PID" 2>/dev/null && wait "$LOAD_PID" 2>/dev/null
        servers_stop
        rm -rf "$WORK"
        [[ $MOUNTED_TRACEFS == 1 ]] && umount /sys/kernel/tracing 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

server_pid() {
        case $1 in
        mdb-*) echo "$MDB_PID" ;; redis-*) echo "$RDS_PID" ;; pg-*) echo "$PG_PID" ;;
        mc-*) echo "$MC_PID" ;; nginx-*) echo "$NGX_PID" ;; sockperf-*) echo "$SP_PID" ;;
        proxy-*) echo "$PXY_PID $NGX_PID" ;; iperf-*) echo "$IP_PID" ;;
        esac
}

# The child processes of server process $2 that serve for it: for
# PostgreSQL and nginx (backends, the worker); none for the others.
server_children() {
        [[ $1 == pg-* || $1 == nginx-* || $1 == proxy-* ]] && pgrep -P "$2"
}

# Every thread of the server to a CPU list (taskset -a), its serving
# children too (server_children()), and the backends forked later inherit
# the postmaster's mask.
pin_server() {
        local p c
        for p in $(server_pid "$1"); do
                taskset -a -p -c "$2" "$p" >/dev/null
                for c in $(server_children "$1" "$p"); do taskset -a -p -c "$2" "$c" >/dev/null 2>&1; done
        done
}

# The grouped variant's placement, made GROUP_AT s into the run: every
# thread of the server and of its serving children (what pin_server()
# resets after the run) is given to the user thread outside the server
# that it exchanges the most wake-ups with (50 or more in 0.3 s of
# sched_waking over the whole machine; kernel threads and interrupts are
# no client), and each such client thread goes with its server threads to
# one CPU, in turn by TID. Prints the groups as pinned, one per line: CPU,
# client TID, server TIDs; what went wrong on stderr.
GROUP_AT=1
group_by_hand() {
        local w=$1 p c s n i=0 srv=$WORK/group.servers data=$WORK/group.data
        local -A to=() members=()
        sleep "$GROUP_AT"
        for p in $(server_pid "$w"); do
                for c in "$p" $(server_children "$w" "$p"); do ls "/proc/$c/task" 2>/dev/null; done
        done >"$srv"
        [[ -s $srv ]] || { echo "grouped: no server threads found" >&2; return 0; }
        perf record -q -o "$data" -e sched:sched_waking -a -- sleep 0.3 >/dev/null 2>&1 ||
                { echo "grouped: perf record failed" >&2; return 0; }
        # every (server thread, other thread, wake-ups) of 50 or more, most first
        while read -r s c n; do
                # the first user thread of each server thread's list is its client
                [[ -z ${to[$s]:-} && -e /proc/$c/exe ]] && to[$s]=$c && members[$c]+=" $s"
        done < <(perf script -i "$data" -F tid,trace 2>/dev/null | awk '
                FNR == NR { srv[$1] = 1; next }
                match($0, /pid=[0-9]+/) {
                        w = $1; x = substr($0, RSTART + 4, RLENGTH - 4)
                        if (w == 0 || x == 0 || (w in srv) == (x in srv)) next
                        if (w in srv) n[w " " x]++; else n[x " " w]++
                }
                END { for (k in n) if (n[k] >= 50) print k, n[k] }' "$srv" - | sort -k3,3nr)
        for c in $(printf '%s\n' "${!members[@]}" | sort -n); do
                local pinned=
                for p in "$c" ${members[$c]}; do
                        taskset -p -c "${CPU_IDS[i % ${#CPU_IDS[@]}]}" "$p" >/dev/null 2>&1 && pinned+=" $p"
                done
                echo "${CPU_IDS[i % ${#CPU_IDS[@]}]}$pinned"
                i=$((i + 1))
        done
        rm -f "$data" "$srv"
}

# Builtin-only waiting: the daemon brings a pass forward for a new process
# (at most 3 at once, then one per 10 s), so the bench must not fork while
# it waits, or its own sleep and grep would use up what the client needs.
TICK_FIFO=$WORK/tick
mkfifo "$TICK_FIFO"
exec {TICK}<>"$TICK_FIFO"
nap() { read -r -t "$1" -u "$TICK" _ || true; }

# start_daemon RUNDIR BINARY [OPTIONS...]
start_daemon() {
        local rundir=$1 bin=$2 deadline
        mkdir -p "$rundir"
        ${DAEMON_NICE:+nice -n "$DAEMON_NICE"} "$bin" --runtime-dir "$rundir" \
                --config-dir "${DAEMON_CONFIG:-$SRCDIR/policies}" --interval 1000 \
                --log-level info "${@:3}" >"$rundir/daemon.log" 2>&1 &
        DAEMON_PID=$!
        deadline=$((${EPOCHREALTIME/./} + 10000000))
        until [[ -S $rundir/bus ]]; do
                kill -0 "$DAEMON_PID" 2>/dev/null || break
                ((${EPOCHREALTIME/./} < deadline)) || break
                nap 0.02
        done
        [[ -S $rundir/bus ]] || die "the daemon did not come up: $rundir/daemon.log"
        watch_start "$rundir/daemon.log" "$rundir/coloc_at"
        # settled: its first pass ran (the socket comes up after it)
        nap 0.2
        # --settle: a daemon that has run a while, as on a server where it
        # runs for days: its start (the first pass reads every thread, the
        # tracepoints are opened, which patches kernel text with an IPI to
        # every CPU) is then not inside the timed run
        ((SETTLE == 0)) || nap "$SETTLE"
}

stop_daemon() {
        kill "$DAEMON_PID" 2>/dev/null
        wait "$DAEMON_PID" 2>/dev/null
        DAEMON_PID=
        # tail --pid ends within its 1 s check, then the loop at EOF
        [[ -z ${WATCH_PID:-} ]] || wait "$WATCH_PID" 2>/dev/null
        WATCH_PID=
}

# When the daemon logs its first co-location, in the file $2 (EPOCHREALTIME
# in µs; empty if never). Started before the timed run, since it forks
# (tail), and it waits without polling: tail -f sleeps on inotify and wakes
# once a second for --pid, and the loop only when the daemon writes. A
# reader that polled the log every 20 ms, even fork-free, cost the daemon
# variants 5-7 % against stock on Redis with 50 connections (two saturated
# processes on two CPUs), with the daemon changing nothing; a probe
# without it read the same daemon level with stock.
watch_start() {
        local log=$1 out=$2
        : >"$out"
        tail --pid="$DAEMON_PID" -n +1 -f "$log" 2>/dev/null | while IFS= read -r line; do
                if [[ $line == *"pair: co-locate"* ]]; then
                        echo "${EPOCHREALTIME/./}" >"$out"
                        break
                fi
        done &
        WATCH_PID=$!
}

# Seconds from $1 (µs) to the time in file $2, or NA.
watch_result() {
        local at
        at=$(cat "$2" 2>/dev/null)
        if [[ -n $at ]] && ((at >= $1)); then
                printf '%d.%02d\n' $(((at - $1) / 1000000)) $((((at - $1) % 1000000) / 10000))
        else
                echo NA
        fi
}

# One client run; prints its rate. $1 workload, $2 prefix command (taskset or empty), $3 log.
run_client() {
        local w=$1 pre=$2 log=$3 threads test c before after
        case $w in
        *-r[0-9]*)
                run_rate_client "$w" "$pre" "$log"
                ;;
        mdb-churn)
                local end=$((${EPOCHREALTIME/./} + DURATION * 1000000)) t0 q=0 n
                t0=${EPOCHREALTIME/./}
                : >"$log"
                while ((${EPOCHREALTIME/./} < end)); do
                        $pre "${SB[@]}" --threads=1 --events=3000 --time=0 oltp_point_select run >>"$log" 2>&1
                done
                n=$(awk '/queries:/ { s += $2 } END { print s + 0 }' "$log")
                awk -v n="$n" -v a="$t0" -v b="${EPOCHREALTIME/./}" 'BEGIN { printf "%.1f\n", n / ((b - a) / 1e6) }'
                ;;
        mdb-*)
                test=oltp_point_select; [[ $w == mdb-ro-* ]] && test=oltp_read_only
                threads=${w##*-}
                $pre "${SB[@]}" --threads="$threads" --time="$DURATION" --report-interval=1 "$test" run >"$log" 2>&1
                awk '/queries:/ { gsub(/\(/, "", $3); print $3 }' "$log"
                ;;
        redis-*)
                # -P: requests in flight on each connection (1, redis-benchmark's own default)
                local procs=1 pipeline=1 bp=() gone=0
                c=${w##*-}
                [[ $w == redis-hub ]] && procs=3 c=1
                [[ $w == redis-p* ]] && pipeline=${w#redis-p} c=1
                before=$(redis_commands)
                for ((k = 0; k < procs; k++)); do
                        $pre redis-benchmark -s "$RDS_SOCK" -c "$c" -P "$pipeline" -n 100000000 -t get -q \
                                >"$log.$k" 2>&1 &
                        bp+=($!)
                done
                sleep "$DURATION"
                after=$(redis_commands)
                # a client that ended before its time measured nothing
                for k in "${bp[@]}"; do kill "$k" 2>/dev/null || gone=1; done
                wait "${bp[@]}" 2>/dev/null
                ((gone == 0)) || { echo NA; return; }
                # the window also counts our own two INFO calls: negligible
                awk -v a="$before" -v b="$after" -v d="$DURATION" 'BEGIN { printf "%.1f\n", (b - a) / d }'
                ;;
        mc-1)
                $pre memcaslap -s "127.0.0.1:$MC_PORT" -c 1 -T 1 -t "${DURATION}s" >"$log" 2>&1
                awk '/^Run time/ { for (i = 1; i <= NF; i++) if ($i == "TPS:") print $(i + 1) }' "$log"
                ;;
        nginx-1|proxy-1)
                local port=$NGX_PORT
                [[ $w == proxy-1 ]] && port=$PXY_PORT
                $pre wrk -t 1 -c 1 -d "${DURATION}s" "http://127.0.0.1:$port/" >"$log" 2>&1
                awk '/^Requests\/sec/ { print $2 }' "$log"
                ;;
        sockperf-1)
                # avg-latency is half a round trip (sockperf's convention)
                $pre sockperf pp --tcp -i 127.0.0.1 -p "$SP_PORT" -t "$DURATION" >"$log" 2>&1
                awk '/avg-latency=/ { for (i = 1; i <= NF; i++) if ($i ~ /^avg-latency=/) {
                        split($i, kv, "="); if (kv[2] > 0) printf "%.1f\n", 1e6 / (2 * kv[2]) } }' "$log"
                ;;
        iperf-stream)
                $pre iperf3 -c 127.0.0.1 -p "$IP_PORT" -t "$DURATION" -f m >"$log" 2>&1
                awk '/receiver$/ { print $7 }' "$log"
                ;;
        hackbench)
                # 4 groups x 20 senders x 20 receivers x 200 loops a run
                local end=$((${EPOCHREALTIME/./} + DURATION * 1000000)) t0 n=0
                t0=${EPOCHREALTIME/./}
                : >"$log"
                while ((${EPOCHREALTIME/./} < end)); do
                        $pre perf bench sched messaging -g 4 -l 200 >>"$log" 2>&1 || break
                        n=$((n + 1))
                done
                ((n > 0)) || { echo NA; return; }
                awk -v n="$n" -v a="$t0" -v b="${EPOCHREALTIME/./}" 'BEGIN { printf "%.1f\n", n * 320000 / ((b - a) / 1e6) }'
                ;;
        sng-pipe|sng-sock)
                # stress-ng's "bogo ops/s (real time)" of the stressor's line
                # (its table line: bogo ops, real, usr and sys time, bogo ops/s twice)
                local port=()
                [[ $w == sng-sock ]] && port=(--sock-port "$(free_port)")
                $pre stress-ng --"${w#sng-}" 1 "${port[@]}" -t "$DURATION" --metrics-brief >"$log" 2>&1 ||
                        { echo NA; return; }
                awk -v s="${w#sng-}" '$4 == s && NF == 10 && $5 ~ /^[0-9]+$/ && $(NF - 1) > 0 { print $(NF - 1); exit }' "$log"
                ;;
        pg-*)
                c=${w##*-}
                $pre runuser -u postgres -- "$PG_BIN/pgbench" -h "$PG_SOCKDIR" -S -c "$c" -j $((c < NCPU ? c : NCPU)) \
                        -T "$DURATION" \
                        postgres >"$log" 2>&1
                awk '/^tps/ { print $3; exit }' "$log"
                ;;
        esac
}

# p50 and p99 (µs) of a latency histogram on stdin: "VALUE COUNT" lines,
# VALUE in µs.
hist_quantiles() {
        sort -g | awk '{ v[NR] = $1; c[NR] = $2; n += $2 }
                END { if (!n) { print "NA NA"; exit }
                      for (i = 1; i <= NR; i++) { s += c[i]
                              if (!a && s >= 0.50 * n) a = v[i]
                              if (!b && s >= 0.99 * n) b = v[i] }
                      printf "%.1f %.1f\n", a, b }'
}

# A fixed-rate row: prints "RATE P50_US P99_US P99_STEADY_US". The steady
# p99 leaves out the first STEADY_FROM s (2, as the open-loop clients'
# p99_steady_us: tests/workloads/workload.h says why): exact for pgbench
# (a log line a transaction) and the clients of this tree; sysbench reports
# no histogram of a part of a run, so for it the figure is the median of
# its per-second p99 (--report-interval=1) after STEADY_FROM s.
STEADY_FROM=2
run_rate_client() {
        local w=$1 pre=$2 log=$3 n=${1##*-r}
        case $w in
        mdb-ps-r*)
                # sysbench prints its histogram in ms: "  0.105 |****  12", and
                # a line a second: "[ 3s ] thds: 1 tps: ... lat (ms,99%): 0.26 ..."
                $pre "${SB[@]}" --threads=1 --rate="$n" --time="$DURATION" --histogram=on \
                        --report-interval=1 --percentile=99 oltp_point_select run >"$log" 2>&1
                echo "$(awk '/queries:/ { gsub(/\(/, "", $3); print $3 }' "$log")" \
                        "$(awk '$2 ~ /^\|/ { printf "%f %d\n", $1 * 1000, $NF }' "$log" | hist_quantiles)" \
                        "$(awk -v from="$STEADY_FROM" -f "$BENCH_DIR/stats.awk" -f /dev/stdin "$log" <<'AWK'
/^\[ *[0-9]+s \]/ { t = $2; sub(/s$/, "", t)
                     if (t + 0 > from) for (i = 1; i < NF; i++) if ($i == "(ms,99%):") a[++m] = $(i + 1) * 1000 }
END { x = median(a, m); print x == "NA" ? "NA" : sprintf("%.1f", x) }
AWK
)"
                ;;
        pg-r*)
                # one line a transaction: client, number, time (µs), script, epoch s, µs, lag
                rm -f "$PG_SOCKDIR"/lat.*
                (cd "$PG_SOCKDIR" && $pre runuser -u postgres -- "$PG_BIN/pgbench" -h "$PG_SOCKDIR" -S -c 1 -j 1 \
                        -R "$n" -T "$DURATION" -l --log-prefix="$PG_SOCKDIR/lat" postgres) >"$log" 2>&1
                echo "$(awk '/^tps/ { print $3; exit }' "$log")" \
                        "$(cat "$PG_SOCKDIR"/lat.* 2>/dev/null | awk '{ print $3, 1 }' | hist_quantiles)" \
                        "$(cat "$PG_SOCKDIR"/lat.* 2>/dev/null |
                           awk -v from="$STEADY_FROM" 'NR == 1 { t0 = $5 + $6 / 1e6 } $5 + $6 / 1e6 - t0 >= from { print $3, 1 }' |
                           hist_quantiles | awk '{ print $2 }')"
                rm -f "$PG_SOCKDIR"/lat.*
                ;;
        redis-r*|pipe-r*)
                if [[ $w == redis-* ]]; then
                        $pre "$RATE_CLIENT" --unix "$RDS_SOCK" --rate "$n" --duration "$DURATION" 'GET k' >"$log" 2>&1
                elif [[ -n $pre ]]; then
                        $pre "$PINGPONG" --pin "${CPU_IDS[0]}" --rate "$n" --duration "$DURATION" >"$log" 2>&1
                else
                        "$PINGPONG" --rate "$n" --duration "$DURATION" >"$log" 2>&1
                fi
                awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
                     END { if (f["p99_us"] != "") print f["rate"], f["p50_us"], f["p99_us"], f["p99_steady_us"]
                           else print "NA NA NA NA" }' "$log"
                ;;
        esac
}

RAW=$LOGS/runs.csv
echo "workload,variant,repeat,rate,colocate_s,affinity_sets,p50_us,p99_us,p99_steady_us" >"$RAW"

one_run() {
        local w=$1 v=$2 r=$3 tag=$LOGS/$1.$2.$3 rate coloc=NA actions=NA pre= daemon=0 p50=NA p99=NA p99s=NA
        DAEMON_NICE=
        [[ $v == *@* ]] && DAEMON_NICE=${v#*@}
        case ${v%%@*} in
        stock|stock-again|grouped) pin_server "$w" "$ALLCPUS" ;;
        hand) pin_server "$w" "${CPU_IDS[0]}"; pre="taskset -c ${CPU_IDS[0]}" ;;
        affinityd|noperf|other|dryrun|dryrun-noperf|dryrun-other)
                daemon=1
                pin_server "$w" "$ALLCPUS"
                case ${v%%@*} in
                noperf) start_daemon "$tag.run" "$AFFINITYD" --no-perf ;;
                dryrun) start_daemon "$tag.run" "$AFFINITYD" --dry-run ;;
                dryrun-noperf) start_daemon "$tag.run" "$AFFINITYD" --dry-run --no-perf ;;
                other) DAEMON_CONFIG=${AFFINITYD_OTHER_CONFIG:-} start_daemon "$tag.run" \
                        "${AFFINITYD_OTHER:?set AFFINITYD_OTHER for the variant other}" ;;
                dryrun-other) DAEMON_CONFIG=${AFFINITYD_OTHER_CONFIG:-} start_daemon "$tag.run" \
                        "${AFFINITYD_OTHER:?set AFFINITYD_OTHER for the variant dryrun-other}" --dry-run ;;
                *) start_daemon "$tag.run" "$AFFINITYD" ;;
                esac
                ;;
        *) die "unknown variant $v" ;;
        esac
        [[ $daemon == 1 || $v != *@* ]] || die "$v: @N sets a daemon's nice level; ${v%%@*} runs none"
        if ((daemon)); then
                local t0=${EPOCHREALTIME/./}   # no fork here: the daemon would count it as a new process
                rate=$(run_client "$w" "$pre" "$tag.log")
                "$AFFCTL" --runtime-dir "$tag.run" pairs >"$tag.pairs" 2>&1
                "$AFFCTL" --runtime-dir "$tag.run" pairs --json >"$tag.pairs.json" 2>&1
                # what the watching did (bursts, their share of the time, samples)
                "$AFFCTL" --runtime-dir "$tag.run" status --json >"$tag.status.json" 2>&1
                stop_daemon
                coloc=$(watch_result "$t0" "$tag.run/coloc_at")
                echo "$coloc" >"$tag.coloc"
                actions=$(grep -c "set affinity" "$tag.run/daemon.log")
                cp "$tag.run/daemon.log" "$tag.daemon.log"
                rm -rf "$tag.run"
        elif [[ $v == grouped ]]; then
                group_by_hand "$w" >"$tag.groups" 2>&1 &
                GROUP_PID=$!
                rate=$(run_client "$w" "$pre" "$tag.log")
                wait "$GROUP_PID"
                GROUP_PID=
        else
                rate=$(run_client "$w" "$pre" "$tag.log")
        fi
        pin_server "$w" "$ALLCPUS"
        [[ $w == *-r[0-9]* ]] && read -r rate p50 p99 p99s <<<"$rate"
        echo "$w,$v,$r,${rate:-NA},$coloc,$actions,${p50:-NA},${p99:-NA},${p99s:-NA}" >>"$RAW"
        printf '%-12s %-9s r%d %12s %s%s\n' "$w" "$v" "$r" "${rate:-NA}" \
                "$([[ $p99 != NA ]] && echo "p50 ${p50} µs, p99 ${p99} µs, steady p99 ${p99s:-NA} µs; ")" \
                "$( ((daemon)) && echo "co-located after ${coloc} s, ${actions} affinity changes")"
}

IFS=, read -r -a WL <<<"$WORKLOADS"
IFS=, read -r -a VL <<<"$VARIANTS"
for w in "${WL[@]}"; do
        case $w in mdb-ps-1|mdb-ro-1|mdb-ps-4|mdb-ro-4|mdb-churn|redis-1|redis-50|redis-hub|pg-1|pg-4|pg-8) ;;
        mc-1|nginx-1|sockperf-1|proxy-1) ;;
        redis-p[0-9]*) [[ $w =~ ^redis-p[0-9]+$ ]] || die "unknown workload $w" ;;
        iperf-stream|hackbench|sng-pipe|sng-sock) ;;
        mdb-ps-r[0-9]*|pg-r[0-9]*) ;;
        redis-r[0-9]*) [[ -x $RATE_CLIENT ]] || die "no $RATE_CLIENT (make builds it)" ;;
        pipe-r[0-9]*) [[ -x $PINGPONG ]] || die "no $PINGPONG (make check builds it)" ;;
        *) die "unknown workload $w" ;; esac
done
if [[ " ${WL[*]}" == *" mdb-"* ]]; then mariadb_start "$WORK" "$LOGS" || die "MariaDB did not start"; fi
if [[ " ${WL[*]}" == *" redis-"* ]]; then redis_start "$WORK" "$LOGS" || die "Redis did not start"; fi
if [[ " ${WL[*]}" == *" pg-"* ]]; then postgres_start "$WORK" "$LOGS" || die "PostgreSQL did not start"; fi
if [[ " ${WL[*]}" == *" mc-"* ]]; then memcached_start "$WORK" "$LOGS" || die "memcached did not start"; fi
if [[ " ${WL[*]}" =~ \ (nginx|proxy)- ]]; then nginx_start "$WORK" "$LOGS" || die "nginx did not start"; fi
if [[ " ${WL[*]}" == *" proxy-"* ]]; then nginx_proxy_start "$WORK" "$LOGS" || die "the nginx proxy did not start"; fi
if [[ " ${WL[*]}" == *" sockperf-"* ]]; then sockperf_start "$WORK" "$LOGS" || die "the sockperf server did not start"; fi
if [[ " ${WL[*]}" == *" iperf-"* ]]; then iperf3_start "$WORK" "$LOGS" || die "the iperf3 server did not start"; fi

if [[ -n $LOAD ]]; then
        # stopped with this script however it ends, a kill -9 too
        setpriv --pdeathsig TERM -- stress-ng --cpu "$NCPU" --cpu-load "$LOAD" --timeout 0 --quiet &
        LOAD_PID=$!
        sleep 1   # its workers started and spread before the first run
fi
echo "# bench/servers.sh: ${REPEATS} repeats x ${DURATION} s, $NCPU CPUs, $(uname -r), $(date -u +%FT%TZ)${LOAD:+, beside stress-ng --cpu $NCPU --cpu-load $LOAD}"
echo "# $("$AFFINITYD" --version 2>/dev/null | head -1)"
for ((r = 1; r <= REPEATS; r++)); do
        for w in "${WL[@]}"; do
                n=${#VL[@]}
                for ((i = 0; i < n; i++)); do
                        one_run "$w" "${VL[$(((i + r - 1) % n))]}" "$r"
                done
        done
done

SUMMARY=$RESULTS_DIR/servers-$STAMP.txt
summary_tables "$RAW" >"$SUMMARY"
cp "$RAW" "$RESULTS_DIR/servers-$STAMP.csv"
cp "$SUMMARY" "$RESULTS_DIR/servers-latest.txt"
cp "$RAW" "$RESULTS_DIR/servers-latest.csv"
echo
cat "$SUMMARY"

# The chart: each workload's median per variant relative to stock (every
# figure here is a rate: higher is better), beside the raw files.
if command -v gnuplot >/dev/null 2>&1; then
        awk '$1 != "workload" && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ {
                printf "%s %.4f %s %s\n", $1, 1, $3 / $2, ($4 ~ /^[0-9]+$/ ? sprintf("%.4f", $4 / $2) : "?") }' \
                "$SUMMARY" >"$LOGS/chart.dat"
        if [[ -s $LOGS/chart.dat ]]; then
                gnuplot <<EOF 2>>"$LOGS/gnuplot.log"
set terminal svg size 1000,460 noenhanced font "sans,12"
set output "$RESULTS_DIR/servers-$STAMP.svg"
set title "Real servers, $STAMP: median rate relative to stock (higher is better; $REPEATS x ${DURATION} s, nproc=$NCPU)"
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
set ylabel "x stock"
set xtics scale 0
set key top right
set grid ytics
plot "$LOGS/chart.dat" using 2:xtic(1) title "stock", "" using 3 title "affinityd", "" using 4 title "hand (taskset)"
EOF
                [[ -s $RESULTS_DIR/servers-$STAMP.svg ]] && cp -f "$RESULTS_DIR/servers-$STAMP.svg" "$RESULTS_DIR/servers-latest.svg" &&
                        echo "# chart: $RESULTS_DIR/servers-$STAMP.svg"
        fi
fi
echo "# raw: $RESULTS_DIR/servers-$STAMP.csv, logs: $LOGS"
