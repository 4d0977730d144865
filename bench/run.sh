#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/run.sh: stock vs affinityd vs hand-tuned, side by side in one run.
# For each scenario and repeat it runs the three variants
# interleaved (the order rotates every repeat: ABC, BCA, CAB, ...):
#
#   stock      no daemon, the kernel places everything
#   affinityd  a fresh daemon per run: $AFFINITYD_CMD (see below)
#   hand       the best placement we know, by taskset / sched_setaffinity
#
# and prints a table of medians, min-max, affinityd/stock and
# affinityd/hand ratios and the targets of issues 4, 5 and 8 (MET/MISSED).
# Each run records how busy the machine was with work that is not ours
# (/proc/stat busy time minus the CPU time of our own process tree, and
# steal time); runs above --noise-max / --steal-max are flagged "noisy" and
# left out of the medians while at least one clean run remains.
#
# Results: <results-dir>/latest.{json,csv,txt} plus timestamped copies, and
# the raw output of every run under <results-dir>/logs/. A PNG plot when
# gnuplot is installed.
#
# When the affinityd binary is missing (or exits at once), stock and hand
# still run and the affinityd columns read n/a.
#
# Environment:
#   AFFINITYD      daemon binary (default: <builddir>/affinityd)
#   AFFINITYD_CMD  full daemon command; @RUNDIR@ and @CONFDIR@ are replaced
#                  (default: "$AFFINITYD --runtime-dir @RUNDIR@
#                  --config-dir @CONFDIR@ --interval 1000", where @CONFDIR@
#                  is <srcdir>/policies)
#   AFFCTL         affctl binary (default: <builddir>/affctl); used only to
#                  save `pairs`/`hogs` evidence into the logs
#   AFFCTL_CMD     affctl command prefix, @RUNDIR@ replaced
#                  (default: "$AFFCTL --runtime-dir @RUNDIR@")
#   PERF, HACKBENCH, CC   tools (defaults: perf, hackbench, cc)

set -u -o pipefail
export LC_ALL=C

SELF=$(readlink -f "${BASH_SOURCE[0]}")
BENCH_DIR=$(dirname "$SELF")
CMDLINE="$0 $*"

usage() {
        cat <<EOF
Usage: bench/run.sh [OPTIONS]

  --quick               2 repeats of short runs, about 5 minutes (default)
  --full                5 repeats of longer runs, about 20-25 minutes
  --repeats N           override the number of repeats
  --duration SEC        override the length of one timed run
  --scenarios LIST      comma-separated subset: 1,2,3,4,5a,5b,5c,6a,6b,7
  --variants LIST       subset of stock,affinityd,hand
  --srcdir DIR          source tree (default: the parent of this script)
  --builddir DIR        build tree with affinityd, affctl (default: .)
  --bindir DIR          workload binaries (default: <builddir>/tests/workloads;
                        compiled into a temporary folder when missing)
  --results-dir DIR     where results go (default: <builddir>/bench/results)
  --noise-max PCT       max other tenants' busy CPU, % of the machine (default 10)
  --settle SEC          start the daemon this long before each timed run (default 0:
                        its own start is inside the run); a long-running daemon's cost
  --steal-max PCT       max steal time, % of the machine (default 5)
  --perf-loops N        loops of perf bench sched pipe for affinityd and hand
                        (default 2,000,000 quick, 10,000,000 full; stock runs N/10)
  --list                print the scenarios and exit
  -h, --help            this help

Scenarios:
  1   split pipe ping-pong (round trips/s; time until co-located)
  2   perf bench sched pipe (ops/s; time until co-located)
  3   ping-pong pair plus one CPU hog (pair rate, hog work)
  4   pipelined stream pair, both sides busy (messages/s; must be left alone)
  5a  one hog per CPU plus bursty noise (hog work, migrations)
  5b  2 x nproc processes at 40 % duty (migrations, run-queue wait/CPU-s)
  5c  nproc+1 hogs (fairness: slowest/fastest hog)
  6a  hackbench (wall time)          6b  parallel build, make -jN (wall time)
  7   daemon cost: CPU and RSS with 100/1,000/10,000 idle threads, and
      under a wake-up storm (hackbench); affinityd only
EOF
}

# ---------------------------------------------------------------- options
MODE=quick
REPEATS=
DURATION=
SCENARIOS=
VARIANTS=stock,affinityd,hand
SRCDIR=$(dirname "$BENCH_DIR")
BUILDDIR=$PWD
BINDIR=
RESULTS_DIR=
NOISE_MAX=10
STEAL_MAX=5
LIST_ONLY=0
PERF_LOOPS_OPT=
SETTLE=0

while [[ $# -gt 0 ]]; do
        case $1 in
        --quick) MODE=quick ;;
        --full) MODE=full ;;
        --repeats) REPEATS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --scenarios) SCENARIOS=$2; shift ;;
        --variants) VARIANTS=$2; shift ;;
        --srcdir) SRCDIR=$2; shift ;;
        --builddir) BUILDDIR=$2; shift ;;
        --bindir) BINDIR=$2; shift ;;
        --results-dir) RESULTS_DIR=$2; shift ;;
        --noise-max) NOISE_MAX=$2; shift ;;
        --steal-max) STEAL_MAX=$2; shift ;;
        --perf-loops) PERF_LOOPS_OPT=$2; shift ;;
        --settle) SETTLE=$2; shift ;;
        --list) LIST_ONLY=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        esac
        shift
done

ALL_SCENARIOS=1,2,3,4,5a,5b,5c,6a,6b,7
if [[ $LIST_ONLY == 1 ]]; then
        usage | sed -n '/^Scenarios:/,$p'
        exit 0
fi

if [[ $MODE == quick ]]; then
        : "${REPEATS:=2}" "${DURATION:=4}"
        # perf bench runs a fixed number of loops. The daemon co-locates a
        # new pair at its 2nd pass (1-2 s), so a run must last well beyond
        # that for the whole-run ratio to mean anything: ~4 s pinned here
        # (quick), ~20 s (full). Stock runs a tenth of the loops: its ops/s
        # is a rate, and split (~40k ops/s) the full count would take
        # ~200 s. PERF_LIMIT caps a run.
        PERF_LOOPS=2000000
        PERF_LIMIT=60
        HACKBENCH_ARGS="-g 8 -l 500"
        BUILD_FILES=16
        COST_WINDOW=4
        COST_REPEATS=1
else
        : "${REPEATS:=5}" "${DURATION:=8}"
        PERF_LOOPS=10000000
        PERF_LIMIT=90
        HACKBENCH_ARGS="-g 8 -l 1500"
        BUILD_FILES=40
        COST_WINDOW=10
        COST_REPEATS=2
fi
[[ -n $PERF_LOOPS_OPT ]] && PERF_LOOPS=$PERF_LOOPS_OPT
PERF_LOOPS_STOCK=$((PERF_LOOPS / 10))
: "${SCENARIOS:=$ALL_SCENARIOS}"
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: bad --repeats" >&2; exit 2; }
[[ $DURATION =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "run.sh: bad --duration" >&2; exit 2; }
for s in ${SCENARIOS//,/ }; do
        [[ ,$ALL_SCENARIOS, == *,$s,* ]] || { echo "run.sh: unknown scenario '$s'" >&2; exit 2; }
done
for v in ${VARIANTS//,/ }; do
        [[ $v == stock || $v == affinityd || $v == hand ]] || { echo "run.sh: unknown variant '$v'" >&2; exit 2; }
done

SRCDIR=$(readlink -f "$SRCDIR")
BUILDDIR=$(readlink -f "$BUILDDIR")
: "${RESULTS_DIR:=$BUILDDIR/bench/results}"
mkdir -p "$RESULTS_DIR" || exit 1
RESULTS_DIR=$(readlink -f "$RESULTS_DIR")
LOGDIR=$RESULTS_DIR/logs
mkdir -p "$LOGDIR" || exit 1
# The last run's logs go (s<N>-VARIANT-r<N>.*, gnuplot.log), and only
# those: the other benchmarks keep theirs in folders of their own here.
rm -f "$LOGDIR"/s[0-9]*-*-r[0-9]* "$LOGDIR/gnuplot.log"

PERF=${PERF:-perf}
HACKBENCH=${HACKBENCH:-hackbench}
CC=${CC:-cc}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/affinityd-bench.XXXXXX") || exit 1
# PIDs of everything we start in the background, so cleanup ends exactly those.
declare -a BG_PIDS=()
DAEMON_PID=

cleanup() {
        local p
        for p in "${BG_PIDS[@]}" $DAEMON_PID; do
                [[ -n $p ]] && kill -TERM "$p" 2>/dev/null
        done
        for p in "${BG_PIDS[@]}" $DAEMON_PID; do
                [[ -n $p ]] && wait "$p" 2>/dev/null
        done
        [[ -n ${NAP_FD:-} ]] && exec {NAP_FD}>&-
        rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT TERM

# A pause that forks no sleep(1): each process is news to the daemon being
# timed (tests/nap.sh).
# shellcheck source=tests/nap.sh
. "$SRCDIR/tests/nap.sh"
nap_open "$WORK" || exit 1

now() { echo "${EPOCHREALTIME/./}"; }      # µs
elapsed_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e6 }'; }

log() { printf '%s\n' "$*" >&2; }

# ---------------------------------------------------------------- binaries
WORKLOADS="pingpong stream hog duty idlethreads"
have_workloads() {
        local w
        for w in $WORKLOADS; do [[ -x $1/$w ]] || return 1; done
}
if [[ -z $BINDIR ]]; then
        BINDIR=$BUILDDIR/tests/workloads
fi
if ! have_workloads "$BINDIR"; then
        log "run.sh: workloads not built in $BINDIR; compiling them into $WORK/bin"
        BINDIR=$WORK/bin
        mkdir -p "$BINDIR"
        for w in $WORKLOADS; do
                "$CC" -O2 -pthread -o "$BINDIR/$w" "$SRCDIR/tests/workloads/$w.c" -lm ||
                        { log "run.sh: cannot compile $w"; exit 1; }
        done
fi

# ---------------------------------------------------------------- affinityd
AFFINITYD=${AFFINITYD:-$BUILDDIR/affinityd}
AFFCTL=${AFFCTL:-$BUILDDIR/affctl}
CONFDIR=$SRCDIR/policies
AFF_CMD_TEMPLATE=${AFFINITYD_CMD:-"$AFFINITYD --runtime-dir @RUNDIR@ --config-dir @CONFDIR@ --interval 1000"}
AFFCTL_TEMPLATE=${AFFCTL_CMD:-"$AFFCTL --runtime-dir @RUNDIR@"}
AFF_AVAILABLE=1
AFF_REASON=
if [[ -z ${AFFINITYD_CMD:-} && ! -x $AFFINITYD ]]; then
        AFF_AVAILABLE=0
        AFF_REASON="no daemon binary at $AFFINITYD"
fi
[[ ,$VARIANTS, == *,affinityd,* ]] || { AFF_AVAILABLE=0; AFF_REASON="variant not selected"; }
OTHER_DAEMONS=$(pgrep -x affinityd 2>/dev/null | tr '\n' ' ')

# Any affinityd that is not ours (another engineer's test, a system
# service): its presence makes "stock" not stock, so such runs count as noisy.
foreign_daemons() {
        local p out=
        for p in $(pgrep -x affinityd 2>/dev/null); do
                [[ $p == "${DAEMON_PID:-}" ]] || out+="$p "
        done
        echo "$out"
}

DAEMON_RUNDIR=
# Start a fresh daemon; ready once its bus socket exists (or, if it never
# appears, after 5 s alive). Returns 1 and disables the variant when the
# daemon exits at start.
daemon_start() {
        local log=$1 cmd t0 argv
        DAEMON_RUNDIR=$(mktemp -d "$WORK/rt.XXXXXX")
        cmd=${AFF_CMD_TEMPLATE//@RUNDIR@/$DAEMON_RUNDIR}
        cmd=${cmd//@CONFDIR@/$CONFDIR}
        read -r -a argv <<<"$cmd"
        echo "# $cmd" >"$log"
        "${argv[@]}" >>"$log" 2>&1 &
        DAEMON_PID=$!
        t0=$(now)
        while :; do
                if ! proc_alive "$DAEMON_PID"; then
                        wait "$DAEMON_PID" 2>/dev/null
                        AFF_AVAILABLE=0
                        AFF_REASON="daemon exited at start (see $log): $(tail -n1 "$log" | cut -c1-120)"
                        log "run.sh: $AFF_REASON"
                        DAEMON_PID=
                        return 1
                fi
                if [[ -S $DAEMON_RUNDIR/bus ]]; then
                        ((SETTLE == 0)) || sleep "$SETTLE"
                        return 0
                fi
                if (( $(now) - t0 > 5000000 )); then
                        echo "# run.sh: no bus socket after 5 s, going on" >>"$log"
                        return 0
                fi
                nap 0.05
        done
}

affctl_evidence() {
        local out=$1 cmd argv sub
        [[ -x ${AFFCTL%% *} || -n ${AFFCTL_CMD:-} ]] || return 0
        cmd=${AFFCTL_TEMPLATE//@RUNDIR@/$DAEMON_RUNDIR}
        read -r -a argv <<<"$cmd"
        for sub in status pairs hogs; do
                echo "## affctl $sub --json" >>"$out"
                timeout 5 "${argv[@]}" "$sub" --json >>"$out" 2>&1
        done
}

# Stop the daemon (SIGTERM: it restores everything), wait up to 10 s, then
# SIGKILL. Returns 1 if it had died during the run or needed SIGKILL.
daemon_stop() {
        local log=$1 rc=0 t0
        [[ -n $DAEMON_PID ]] || return 0
        if ! proc_alive "$DAEMON_PID"; then
                echo "# run.sh: daemon died during the run" >>"$log"
                rc=1
        fi
        kill -TERM "$DAEMON_PID" 2>/dev/null
        t0=$(now)
        while proc_alive "$DAEMON_PID" && (( $(now) - t0 < 10000000 )); do nap 0.05; done
        if proc_alive "$DAEMON_PID"; then
                echo "# run.sh: daemon ignored SIGTERM for 10 s, SIGKILL" >>"$log"
                kill -KILL "$DAEMON_PID" 2>/dev/null
                rc=1
        fi
        wait "$DAEMON_PID" 2>/dev/null
        DAEMON_PID=
        return $rc
}

# ---------------------------------------------------------------- /proc helpers
proc_alive() {  # running and not a zombie
        local st
        read -r st 2>/dev/null </proc/"$1"/stat || return 1
        st=${st##*) }
        [[ ${st:0:1} != Z ]]
}

cpus_allowed() {  # Cpus_allowed_list of a task, "" if gone
        local k v
        while read -r k v; do
                [[ $k == Cpus_allowed_list: ]] && { echo "$v"; return; }
        done 2>/dev/null </proc/"$1"/status
}

# Machine CPU counters: "busy steal total" in clock ticks over all CPUs.
cpu_stat() {
        local user nice system idle iowait irq softirq steal rest
        read -r _ user nice system idle iowait irq softirq steal rest </proc/stat
        echo "$((user + nice + system + irq + softirq)) $steal $((user + nice + system + idle + iowait + irq + softirq + steal))"
}

# CPU ticks of this shell and every descendant it has reaped.
tree_ticks() {
        local s fields
        read -r s </proc/$$/stat
        s=${s##*) }
        read -r -a fields <<<"$s"
        # fields[0] is field 3 (state): utime=14 stime=15 cutime=16 cstime=17
        echo $((fields[11] + fields[12] + fields[13] + fields[14]))
}

# CPU time (ns) of all threads of a process, from schedstat.
proc_cpu_ns() {
        local t run rest sum=0
        for t in /proc/"$1"/task/*/schedstat; do
                read -r run rest 2>/dev/null <"$t" && sum=$((sum + run))
        done
        echo $sum
}

status_field() {  # status_field PID VmRSS -> value in kB
        local k v rest
        while read -r k v rest; do
                [[ $k == "$2:" ]] && { echo "$v"; return; }
        done 2>/dev/null </proc/"$1"/status
        echo NA
}

# Last line of a workload's output as key=value: kv FILE KEY
kv() {
        tail -n1 "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print "NA" }'
}

# ---------------------------------------------------------------- machine
NCPU=$(nproc)
if (( NCPU < 2 )); then
        echo "run.sh: needs at least 2 usable CPUs (nproc=$NCPU): nothing to compare" >&2
        exit 77
fi
mapfile -t ONLINE_CPUS < <(taskset -pc $$ 2>/dev/null | sed 's/.*: //' | tr ',' '\n' |
        awk -F- '{ if (NF == 2) for (i = $1; i <= $2; i++) print i; else print $1 }')
CPU_A=${ONLINE_CPUS[0]:-0}
CPU_B=${ONLINE_CPUS[1]:-1}
CPU_LIST=$(IFS=,; echo "${ONLINE_CPUS[*]:0:$NCPU}")
KERNEL=$(uname -r)
CPU_MODEL=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
GIT_COMMIT=$(git -C "$SRCDIR" rev-parse --short HEAD 2>/dev/null || echo unknown)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
HAVE_PERF=0; "$PERF" bench sched pipe -l 1 >/dev/null 2>&1 && HAVE_PERF=1
HAVE_HACKBENCH=0; command -v "$HACKBENCH" >/dev/null && HAVE_HACKBENCH=1
LOOPS_PER_US=$("$BINDIR/stream" --calibrate | awk -F= '{ print $2 }')

echo "affinityd benchmark ($MODE): $CMDLINE"
echo "machine: nproc=$NCPU kernel=$KERNEL cpu=\"$CPU_MODEL\" commit=$GIT_COMMIT"
echo "repeats=$REPEATS duration=${DURATION}s scenarios=$SCENARIOS variants=$VARIANTS loops_per_us=$LOOPS_PER_US perf_loops=$PERF_LOOPS (stock $PERF_LOOPS_STOCK)"
if [[ $AFF_AVAILABLE == 1 ]]; then
        echo "affinityd: $AFF_CMD_TEMPLATE"
else
        echo "affinityd: n/a ($AFF_REASON)"
fi
[[ -n $OTHER_DAEMONS ]] && echo "warning: other affinityd processes are running (pids $OTHER_DAEMONS): stock runs are not stock"
echo "noise limits: other tenants <= ${NOISE_MAX}% of the machine, steal <= ${STEAL_MAX}%"
echo

# ---------------------------------------------------------------- metric table
# scenario metric unit better target  (better: higher|lower|info)
# target: "-" or "&"-joined terms REF OP X[:every], REF = stock|hand|abs.
# "stock>=0.98" on a lower-is-better metric means stock/affinityd >= 0.98.
# ":every" = in every interleaved repeat, not only the median.
METRICS=$WORK/metrics.tsv
cat >"$METRICS" <<'EOF'
1	rate_2nd_half	roundtrips/s	higher	hand>=0.95:every
1	rate	roundtrips/s	higher	-
1	t_coloc_s	s	lower	abs<=2
1	same_cpu	fraction	info	-
2	ops	ops/s	higher	hand>=0.95:every
2	t_coloc_s	s	lower	abs<=2
2	time_s	s	info	-
3	pair_rate_2nd_half	roundtrips/s	higher	stock>=0.98
3	hog_rate	units/s	higher	stock>=0.98
3	pair_same_cpu_as_hog	fraction	lower	-
4	rate	messages/s	higher	stock>=0.98
4	util_total	CPUs	info	-
4	same_cpu	fraction	info	-
5a	hog_rate	units/s	higher	stock>=0.98&hand>=0.98
5a	hog_migrations_2nd_half	count	lower	abs<=1
5a	hog_migrations	count	lower	-
5b	wait_ms_per_cpu_s	ms/CPU-s	lower	stock>=0.98
5b	migrations	count	lower	stock>=0.98
5b	work_rate	units/s	higher	stock>=0.98
5c	fairness	min/max	higher	stock>=0.98
5c	rate	units/s	higher	stock>=0.98
6a	time_s	s	lower	stock>=0.98
6b	time_s	s	lower	stock>=0.98
7	cpu_pct_idle100	%CPU	lower	-
7	cpu_pct_idle1000	%CPU	lower	-
7	cpu_pct_idle10000	%CPU	lower	abs<=0.5
7	cpu_pct_idle10000_active100	%CPU	lower	-
7	cpu_pct_storm	%CPU	lower	-
7	rss_kib_max	KiB	lower	abs<=16384
EOF

RUNS=$WORK/runs.tsv
: >"$RUNS"

# ---------------------------------------------------------------- scenarios
# Each scen_X VARIANT LOGPREFIX writes "metric value" lines to stdout and
# returns 0, or 2 when the variant does not apply (hand-tuned has no better
# placement, daemon cost without a daemon), 1 on failure.

# Wait for a pid file with two lines; prints "PID1 PID2".
wait_pid_file() {
        local f=$1 n=${2:-2} t0 lines
        t0=$(now)
        while (( $(now) - t0 < 10000000 )); do
                if [[ -s $f ]]; then
                        mapfile -t lines <"$f"
                        (( ${#lines[@]} >= n )) && { echo "${lines[*]}"; return 0; }
                fi
                nap 0.02
        done
        return 1
}

# Poll two tasks' Cpus_allowed_list every 100 ms until the workload (task
# $3) exits. Prints "T_COLOC TIMED_OUT": the seconds from $4 (µs timestamp)
# until both masks were narrowed to the same single CPU (NA if never), and
# 1 if the workload ran past $5 seconds and was stopped with SIGTERM.
watch_coloc() {
        local p1=$1 p2=$2 main=$3 t0=$4 limit_us=$(($5 * 1000000)) a b tc=NA
        while proc_alive "$main"; do
                if [[ $tc == NA ]]; then
                        a=$(cpus_allowed "$p1")
                        b=$(cpus_allowed "$p2")
                        [[ -n $a && $a == "$b" && $a =~ ^[0-9]+$ ]] && tc=$(elapsed_s "$t0" "$(now)")
                fi
                if (( $(now) - t0 > limit_us )); then
                        kill -TERM "$main" 2>/dev/null
                        echo "$tc 1"
                        return
                fi
                nap 0.1
        done
        echo "$tc 0"
}

scen_1() {  # split pipe ping-pong
        local v=$1 lp=$2 args pid pids t0 tc
        case $v in
        hand) args=(--pin "$CPU_A") ;;
        *) args=(--cpus "$CPU_A,$CPU_B") ;;
        esac
        rm -f "$WORK/pp.pid"
        "$BINDIR/pingpong" "${args[@]}" --duration "$DURATION" --report-interval 500 \
                --pid-file "$WORK/pp.pid" >"$lp.out" 2>&1 &
        pid=$!
        BG_PIDS+=("$pid")
        pids=$(wait_pid_file "$WORK/pp.pid") || { wait "$pid"; return 1; }
        t0=$(now)
        # shellcheck disable=SC2086 # two PIDs
        read -r tc _ < <(watch_coloc $pids "$pid" "$t0" $((${DURATION%.*} + 30)))
        wait "$pid" || return 1
        echo "rate_2nd_half $(kv "$lp.out" rate_2nd_half)"
        echo "rate $(kv "$lp.out" rate)"
        echo "same_cpu $(kv "$lp.out" same_cpu)"
        # never co-located counts as the whole run, not as no figure: dropped,
        # one co-located run in five read as the median
        [[ $v == affinityd ]] && echo "t_coloc_s ${tc/#NA/$DURATION}"
        return 0
}

scen_2() {  # perf bench sched pipe
        local v=$1 lp=$2 pid child t0 tc timed_out pre=() loops=$PERF_LOOPS
        [[ $HAVE_PERF == 1 ]] || { echo "# perf bench not available" >"$lp.out"; return 1; }
        [[ $v == hand ]] && pre=(taskset -c "$CPU_A")
        [[ $v == stock ]] && loops=$PERF_LOOPS_STOCK
        t0=$(now)
        "${pre[@]}" "$PERF" bench sched pipe -l "$loops" >"$lp.out" 2>&1 &
        pid=$!
        BG_PIDS+=("$pid")
        # perf runs one side itself and forks the other.
        child=
        while proc_alive "$pid" && [[ -z $child ]]; do
                read -r child _ 2>/dev/null </proc/"$pid"/task/"$pid"/children
                [[ -z $child ]] && nap 0.01
        done
        tc=NA; timed_out=0
        [[ -n $child ]] && read -r tc timed_out < <(watch_coloc "$pid" "$child" "$pid" "$t0" "$PERF_LIMIT")
        if ! wait "$pid" || [[ $timed_out == 1 ]]; then
                echo "# run.sh: stopped after ${PERF_LIMIT}s" >>"$lp.out"
                return 1
        fi
        echo "ops $(awk '/ops\/sec/ { print $1 }' "$lp.out" | tail -n1)"
        echo "time_s $(awk '/Total time:/ { print $3 }' "$lp.out" | tail -n1)"
        # never co-located: the whole run (as in scen_1)
        [[ $v == affinityd ]] && echo "t_coloc_s ${tc/#NA/$(awk '/Total time:/ { print $3 }' "$lp.out" | tail -n1)}"
        return 0
}

scen_3() {  # ping-pong pair plus a CPU hog
        local v=$1 lp=$2 hargs pargs hpid ppid pcpu hcpu
        case $v in
        hand) hargs=(--cpus "$CPU_B"); pargs=(--pin "$CPU_A") ;;
        *) hargs=(); pargs=(--cpus "$CPU_A,$CPU_B") ;;
        esac
        "$BINDIR/hog" --procs 1 "${hargs[@]}" --duration "$(awk -v d="$DURATION" 'BEGIN { print d + 0.5 }')" \
                >"$lp.hog.out" 2>&1 &
        hpid=$!
        BG_PIDS+=("$hpid")
        nap 0.25
        "$BINDIR/pingpong" "${pargs[@]}" --duration "$DURATION" --report-interval 500 >"$lp.out" 2>&1 &
        ppid=$!
        BG_PIDS+=("$ppid")
        wait "$ppid" || { wait "$hpid"; return 1; }
        wait "$hpid" || return 1
        echo "pair_rate_2nd_half $(kv "$lp.out" rate_2nd_half)"
        echo "hog_rate $(kv "$lp.hog.out" rate)"
        # CPU of the pair in the last progress line vs the hog's last CPU.
        pcpu=$(grep '^t=' "$lp.out" | tail -n1 | tr ' ' '\n' | awk -F= '$1 == "cpu_parent" { print $2 }')
        hcpu=$(grep '^hog=0' "$lp.hog.out" | tr ' ' '\n' | awk -F= '$1 == "last_cpu" { print $2 }')
        if [[ -n $pcpu && -n $hcpu ]]; then
                echo "pair_same_cpu_as_hog $([[ $pcpu == "$hcpu" ]] && echo 1 || echo 0)"
        fi
        return 0
}

scen_4() {  # pipelined stream pair
        local v=$1 lp=$2 args=()
        [[ $v == hand ]] && args=(--cpus "$CPU_A,$CPU_B" --hold)
        "$BINDIR/stream" "${args[@]}" --work-us 50 --depth 2 --loops-per-us "$LOOPS_PER_US" \
                --duration "$DURATION" >"$lp.out" 2>&1 || return 1
        echo "rate $(kv "$lp.out" rate)"
        echo "util_total $(kv "$lp.out" util_total)"
        echo "same_cpu $(kv "$lp.out" same_cpu)"
        return 0
}

scen_5a() {  # one hog per CPU plus bursty noise
        local v=$1 lp=$2 hargs=() hpid npid half mig_half mig_end
        [[ $v == hand ]] && hargs=(--cpus "$CPU_LIST")
        half=$(awk -v d="$DURATION" 'BEGIN { printf "%d", d * 500 }')
        "$BINDIR/duty" --burst --procs "$NCPU" --loops-per-us "$LOOPS_PER_US" \
                --duration "$(awk -v d="$DURATION" 'BEGIN { print d + 0.5 }')" >"$lp.noise.out" 2>&1 &
        npid=$!
        BG_PIDS+=("$npid")
        "$BINDIR/hog" --procs "$NCPU" "${hargs[@]}" --duration "$DURATION" --report-interval "$half" \
                >"$lp.out" 2>&1 &
        hpid=$!
        BG_PIDS+=("$hpid")
        wait "$hpid" || { wait "$npid"; return 1; }
        wait "$npid" || return 1
        mig_end=$(kv "$lp.out" migrations)
        mig_half=$(grep '^t=' "$lp.out" | head -n1 | tr ' ' '\n' | awk -F= '$1 == "migrations" { print $2 }')
        echo "hog_rate $(kv "$lp.out" rate)"
        echo "hog_migrations $mig_end"
        [[ -n $mig_half && $mig_end != NA ]] && echo "hog_migrations_2nd_half $((mig_end - mig_half))"
        return 0
}

scen_5b() {  # 2 x nproc tasks at 40 % duty
        local v=$1 lp=$2 args=()
        [[ $v == hand ]] && args=(--cpus "$CPU_LIST")
        "$BINDIR/duty" --procs $((2 * NCPU)) --duty 40 --period-ms 10 "${args[@]}" \
                --loops-per-us "$LOOPS_PER_US" --duration "$DURATION" >"$lp.out" 2>&1 || return 1
        echo "wait_ms_per_cpu_s $(kv "$lp.out" wait_ms_per_cpu_s)"
        echo "migrations $(kv "$lp.out" migrations)"
        echo "work_rate $(kv "$lp.out" rate)"
        return 0
}

scen_5c() {  # n+1 hogs
        local v=$1 lp=$2
        [[ $v == hand ]] && return 2    # no placement beats the kernel's time sharing here
        "$BINDIR/hog" --procs $((NCPU + 1)) --duration "$DURATION" >"$lp.out" 2>&1 || return 1
        echo "fairness $(kv "$lp.out" fairness)"
        echo "rate $(kv "$lp.out" rate)"
        return 0
}

scen_6a() {  # hackbench
        local v=$1 lp=$2 t
        [[ $v == hand ]] && return 2
        [[ $HAVE_HACKBENCH == 1 ]] || { echo "# hackbench not installed" >"$lp.out"; return 1; }
        # shellcheck disable=SC2086
        "$HACKBENCH" $HACKBENCH_ARGS >"$lp.out" 2>&1 || return 1
        t=$(awk '/^Time:/ { print $2 }' "$lp.out")
        echo "time_s ${t:-NA}"
        return 0
}

# A small C project: BUILD_FILES files of arithmetic-heavy functions.
make_project() {
        local d=$WORK/proj i j
        [[ -f $d/Makefile ]] && return 0
        mkdir -p "$d"
        for ((i = 0; i < BUILD_FILES; i++)); do
                {
                        echo "#include <stdint.h>"
                        for ((j = 0; j < 24; j++)); do
                                cat <<EOF
uint64_t f${i}_$j(uint64_t x, const uint32_t *v, int n) {
        uint64_t a = x * $((j + 3)) + $i;
        for (int k = 0; k < n; k++) {
                switch ((v[k] + a) & 7) {
                case 0: a = (a << 3) ^ v[k]; break;
                case 1: a += v[k] * 0x9e3779b9u; break;
                case 2: a ^= a >> $((j % 13 + 1)); break;
                case 3: a = a * 6364136223846793005ull + $j; break;
                case 4: a -= (v[k] | 1) * (a & 0xff); break;
                case 5: a = (a >> 1) | (a << 63); break;
                case 6: a += (uint64_t) k * k; break;
                default: a ^= 0x5555u + $i; break;
                }
        }
        return a;
}
EOF
                        done
                } >"$d/f$i.c"
        done
        echo "int main(void) { return 0; }" >"$d/main.c"
        cat >"$d/Makefile" <<'EOF'
SRCS := $(wildcard f*.c) main.c
OBJS := $(SRCS:.c=.o)
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
%.o: %.c
	$(CC) -O2 -c $< -o $@
clean:
	rm -f prog *.o
EOF
}

scen_6b() {  # parallel build
        local v=$1 lp=$2 t0 t1
        [[ $v == hand ]] && return 2
        make_project
        make -s -C "$WORK/proj" clean >/dev/null 2>&1
        t0=$(now)
        make -s -C "$WORK/proj" -j"$NCPU" CC="$CC" >"$lp.out" 2>&1 || return 1
        t1=$(now)
        echo "time_s $(elapsed_s "$t0" "$t1")"
        return 0
}

# Daemon CPU (% of one CPU) over COST_WINDOW seconds, after a settling time.
cost_window() {
        local c0 c1 t0 t1
        nap 3          # first scans of a fresh daemon are not steady state
        c0=$(proc_cpu_ns "$DAEMON_PID"); t0=$(now)
        nap "$COST_WINDOW"
        c1=$(proc_cpu_ns "$DAEMON_PID"); t1=$(now)
        awk -v c="$((c1 - c0))" -v t="$((t1 - t0))" 'BEGIN { printf "%.3f", c / (t * 1000) * 100 }'
}

scen_7() {  # daemon cost
        local v=$1 lp=$2 n ipid pct rss rss_max=0 hpid label
        [[ $v == affinityd ]] || return 2
        for n in 100 1000 10000 10000a storm; do
                label=idle${n%a}
                local iargs=(--threads "${n%a}")
                case $n in
                10000a) iargs+=(--active 100); label=idle10000_active100 ;;
                storm) iargs=(--threads 100); label=storm ;;
                esac
                "$BINDIR/idlethreads" "${iargs[@]}" --pid-file "$WORK/idle.pid" >"$lp.idle$n.out" 2>&1 &
                ipid=$!
                BG_PIDS+=("$ipid")
                wait_pid_file "$WORK/idle.pid" 1 >/dev/null || { kill "$ipid"; wait "$ipid"; return 1; }
                rm -f "$WORK/idle.pid"
                daemon_start "$lp.daemon$n.log" || { kill "$ipid"; wait "$ipid"; return 1; }
                hpid=
                if [[ $n == storm ]]; then
                        # Wake-up storm: hackbench back to back for the whole window.
                        # On SIGTERM the loop ends its current hackbench and waits
                        # for it, so none outlives the window (or our CPU count).
                        (
                                hb=
                                trap '[[ -n $hb ]] && kill -TERM "$hb" 2>/dev/null; wait; exit 0' TERM
                                while :; do
                                        "$HACKBENCH" -g 4 -l 2000 >/dev/null 2>&1 &
                                        hb=$!
                                        wait "$hb" || exit 0
                                done
                        ) &
                        hpid=$!
                        BG_PIDS+=("$hpid")
                fi
                pct=$(cost_window)
                rss=$(status_field "$DAEMON_PID" VmHWM)
                [[ -n $hpid ]] && { kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null; }
                affctl_evidence "$lp.daemon$n.log"
                daemon_stop "$lp.daemon$n.log"
                kill -TERM "$ipid" 2>/dev/null
                wait "$ipid"
                echo "cpu_pct_$label $pct"
                echo "rss_kib_$label $rss"
                [[ $rss =~ ^[0-9]+$ ]] && (( rss > rss_max )) && rss_max=$rss
        done
        echo "rss_kib_max $rss_max"
        return 0
}

# ---------------------------------------------------------------- one run
# run_one SCENARIO VARIANT REPEAT: runs it, appends rows to $RUNS.
run_one() {
        local s=$1 v=$2 r=$3 lp="$LOGDIR/s$1-$2-r$3" tt0 tt1 t0 t1 rc status metrics
        local busy0 steal0 tot0 busy1 steal1 tot1 other_pct steal_pct noisy el mid_pid='' foreign note
        if [[ $v == affinityd && $AFF_AVAILABLE != 1 ]]; then
                printf '%s\t%s\t%s\t-\tNA\tna\tNA\tNA\t0\t0\t\n' "$s" "$v" "$r" >>"$RUNS"
                return
        fi
        foreign=$(foreign_daemons)
        read -r busy0 steal0 tot0 < <(cpu_stat)
        tt0=$(tree_ticks)
        t0=$(now)
        status=ok
        if [[ $v == affinityd && $s != 7 ]]; then
                daemon_start "$lp.daemon.log" || status=daemon-failed
        fi
        if [[ $status == ok && $v == affinityd && $s != 7 ]]; then
                # The daemon's view half way through the run, while the
                # workload is alive (the end-of-run capture shows it gone).
                ( nap "$(awk -v d="$DURATION" 'BEGIN { print d / 2 }')"; affctl_evidence "$lp.daemon.mid.log" ) &
                mid_pid=$!
        fi
        if [[ $status == ok ]]; then
                # In this shell, not a $(...) subshell, so BG_PIDS and the
                # daemon state stay visible to cleanup.
                "scen_$s" "$v" "$lp" >"$WORK/metrics.out"
                rc=$?
                metrics=$(<"$WORK/metrics.out")
                case $rc in
                0) ;;
                2) status=skip ;;
                *) status=failed ;;
                esac
        fi
        [[ -n $mid_pid ]] && wait "$mid_pid"
        if [[ $v == affinityd && $s != 7 && -n $DAEMON_PID ]]; then
                affctl_evidence "$lp.daemon.log"
                daemon_stop "$lp.daemon.log" || status=daemon-died
        fi
        t1=$(now)
        tt1=$(tree_ticks)
        read -r busy1 steal1 tot1 < <(cpu_stat)
        [[ -n $DAEMON_PID ]] || foreign+=$(foreign_daemons)
        BG_PIDS=()
        el=$(elapsed_s "$t0" "$t1")
        read -r other_pct steal_pct noisy < <(awk -v b=$((busy1 - busy0)) -v s=$((steal1 - steal0)) \
                -v t=$((tot1 - tot0)) -v o=$((tt1 - tt0)) -v nm="$NOISE_MAX" -v sm="$STEAL_MAX" 'BEGIN {
                if (t <= 0) t = 1
                other = (b - o) / t * 100; if (other < 0) other = 0
                st = s / t * 100
                printf "%.1f %.1f %d\n", other, st, (other > nm || st > sm) }')
        note=
        if [[ -n $foreign ]]; then
                # shellcheck disable=SC2086 # a list of PIDs
                foreign=$(printf '%s\n' $foreign | sort -un | tr '\n' ' ')
                noisy=1
                note="foreign-affinityd:${foreign// /;}"
                note=${note%;}
        fi
        case $status in
        skip) return ;;
        ok) ;;
        *)
                log "  s$s $v r$r: $status (log: $lp.*)"
                metrics=
                ;;
        esac
        if [[ $status == ok && -z $metrics ]]; then
                status=failed
        fi
        printf '  s%-3s %-9s r%-2s %6ss other=%5s%% steal=%4s%% %s %s%s\n' "$s" "$v" "$r" "$el" "$other_pct" \
                "$steal_pct" "$([[ $noisy == 1 ]] && echo NOISY || echo "     ")" \
                "$(echo "$metrics" | awk 'NF == 2 { printf "%s=%s ", $1, $2 }')" "${note:+ [$note]}" >&2
        if [[ $status != ok ]]; then
                printf '%s\t%s\t%s\t-\tNA\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$v" "$r" "$status" "$other_pct" \
                        "$steal_pct" "$noisy" "$el" "$note" >>"$RUNS"
                return
        fi
        echo "$metrics" | while read -r m val; do
                [[ -n $m ]] || continue
                printf '%s\t%s\t%s\t%s\t%s\tok\t%s\t%s\t%s\t%s\t%s\n' "$s" "$v" "$r" "$m" "${val:-NA}" \
                        "$other_pct" "$steal_pct" "$noisy" "$el" "$note" >>"$RUNS"
        done
}

# ---------------------------------------------------------------- main loop
read -r -a VLIST <<<"${VARIANTS//,/ }"
T_START=$(now)
for s in ${SCENARIOS//,/ }; do
        reps=$REPEATS
        [[ $s == 7 ]] && reps=$(( COST_REPEATS < REPEATS ? COST_REPEATS : REPEATS ))
        log "scenario $s"
        for ((r = 1; r <= reps; r++)); do
                n=${#VLIST[@]}
                for ((k = 0; k < n; k++)); do
                        v=${VLIST[$(( (k + r - 1) % n ))]}
                        run_one "$s" "$v" "$r"
                done
        done
done
T_END=$(now)

# ---------------------------------------------------------------- results
JSON=$RESULTS_DIR/$STAMP.json
CSV=$RESULTS_DIR/$STAMP.csv
TXT=$RESULTS_DIR/$STAMP.txt
awk -F'\t' -v json="$JSON" -v csv="$CSV" -v stamp="$STAMP" -v mode="$MODE" -v cmdline="$CMDLINE" \
        -v nproc="$NCPU" -v kernel="$KERNEL" -v cpu_model="$CPU_MODEL" -v commit="$GIT_COMMIT" \
        -v repeats="$REPEATS" -v duration="$DURATION" -v aff_available="$AFF_AVAILABLE" \
        -v aff_reason="$AFF_REASON" -v aff_cmd="$AFF_CMD_TEMPLATE" -v noise_max="$NOISE_MAX" \
        -v steal_max="$STEAL_MAX" -v total_s="$(elapsed_s "$T_START" "$T_END")" \
        -v other_daemons="$OTHER_DAEMONS" -v loops_per_us="$LOOPS_PER_US" -v plotfile="$WORK/plot.dat" \
        -f "$BENCH_DIR/stats.awk" -f "$BENCH_DIR/summarize.awk" "$METRICS" "$RUNS" | tee "$TXT"
for f in json csv txt; do
        cp -f "$RESULTS_DIR/$STAMP.$f" "$RESULTS_DIR/latest.$f"
done

PLOT_DATA=$WORK/plot.dat
if command -v gnuplot >/dev/null 2>&1 && [[ -s $PLOT_DATA ]]; then
        # The first metric of each scenario, relative to stock (higher is
        # better: lower-is-better metrics are inverted); "?" = not measured.
        gnuplot <<EOF 2>>"$LOGDIR/gnuplot.log"
set terminal pngcairo size 1100,500 noenhanced
set output "$RESULTS_DIR/$STAMP.png"
set title "affinityd benchmark $STAMP ($MODE; nproc=$NCPU; $KERNEL): relative to stock, higher is better"
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
set ylabel "x stock"
set xtics rotate by -30 scale 0
set key top left
plot "$PLOT_DATA" using 2:xtic(1) title "stock", "" using 3 title "affinityd", "" using 4 title "hand-tuned"
EOF
        if [[ -s $RESULTS_DIR/$STAMP.png ]]; then
                cp -f "$RESULTS_DIR/$STAMP.png" "$RESULTS_DIR/latest.png"
                echo "plot: $RESULTS_DIR/latest.png"
        fi
fi
echo "results: $RESULTS_DIR/latest.json $RESULTS_DIR/latest.csv (logs: $LOGDIR)"
