# Helpers for the shell integration tests (sourced).
# Every wait polls with a deadline; nothing sleeps and hopes.

: "${top_builddir:?run under make check}"
: "${top_srcdir:?run under make check}"
AFFINITYD=$top_builddir/affinityd
AFFCTL=$top_builddir/affctl

skip() { echo "SKIP: $*"; exit 77; }
# A CI log keeps the test's output only: the daemon's last words (why it
# held back, what it released) go with the failure.
fail() {
        echo "FAIL: $*"
        if [ -n "${RUNDIR:-}" ] && [ -s "$RUNDIR/daemon.log" ]; then
                echo "--- the daemon's log, last 40 lines ($RUNDIR/daemon.log):"
                tail -n 40 "$RUNDIR/daemon.log"
        fi
        exit 1
}

require_root() { [ "$(id -u)" = 0 ] || skip "needs root (sched_setaffinity on other tasks, cgroups)"; }
require_cmd() { command -v "$1" >/dev/null || skip "needs $1"; }
# mean_same_cpu PINGPONG_OUTPUT [SECONDS]: the share of round trips with
# both sides on one CPU over the progress windows of the last SECONDS
# (default 4) of its output (pingpong --report-interval): the pair's own
# count, not the daemon's reading, decides whether the kernel keeps it
# together by itself. Not from the start: pingpong --cpus starts split, and
# a test splits it again now and then. 0 without any window.
mean_same_cpu() {
        awk -v span="${2:-4}" '/^t=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                     n++; t[n] = v["t"] + 0; x[n] = v["same_cpu"] + 0 }
             END { for (i = n; i >= 1 && t[i] > t[n] - span; i--) { s += x[i]; k++ }
                   printf "%.2f\n", k ? s / k : 0 }' "$1"
}
# perf_tracepoints: this kernel lets root open the sched:sched_waking
# tracepoint, asked of perf(1), not of the daemon: a skip decided by the
# daemon's own report would hide a regression in its perf set-up.
perf_tracepoints() { command -v perf >/dev/null && perf stat -e sched:sched_waking -- true >/dev/null 2>&1; }
# wake_source_checked SRC: the daemon's wake-up source is one the tests
# can rely on; a fallback is taken only where perf itself cannot open the
# tracepoint, and "none" never.
wake_source_checked() {
        case $1 in
        perf*) ;;
        fallback:*) ! perf_tracepoints || fail "perf opens sched:sched_waking here, yet the daemon fell back: $1" ;;
        *) fail "the daemon has no wake-up source: $1" ;;
        esac
}

# wait_for SECONDS CMD...: run CMD every 100 ms until it succeeds or the deadline passes.
wait_for() {
        local deadline=$(( $(date +%s%N) + $1 * 1000000000 )); shift
        while :; do
                if "$@"; then return 0; fi
                [ "$(date +%s%N)" -lt "$deadline" ] || return 1
                sleep 0.1
        done
}

# nap_open DIR, then nap SECONDS: a pause that starts no process
. "$top_srcdir/tests/nap.sh"

# holds_for_passes N CMD...: CMD succeeds every 200 ms while the daemon runs
# N passes; returns 1 at its first failure, at once (the caller says what
# went). Passes, not seconds: on a slow host fewer passes fit a second, and
# a hold counted in seconds would see fewer of the daemon's chances to
# break it. Fewer than N in 60 s is a failure of its own.
holds_for_passes() {
        local n=$1 p0 deadline=$(( $(date +%s%N) + 60 * 1000000000 )); shift
        p0=$(passes) || fail "no pass count from the daemon to hold $* for"
        while :; do
                # the count first: CMD, checked after it, saw the Nth pass's doing
                if passes_past $(( p0 + n )); then "$@" || return 1; return 0; fi
                "$@" || return 1
                [ "$(date +%s%N)" -lt "$deadline" ] || fail "the daemon ran $(( $(passes || echo "$p0") - p0 )) of $n passes in 60 s"
                sleep 0.2
        done
}

# scope_enter: this test's own cgroup. The test's shell moves into a new
# cgroup (so every process it starts from now on is there) and every daemon
# start_daemon starts gets [Daemon] Scope= for it (affinityd.conf(5)): it
# changes the test's processes only, and a build, a benchmark or another
# busy process next door counts as load, never as one of its hogs or pairs.
# The cgroup is made in a tree without the cpu controller where there is
# one (the v2 tree of a hybrid machine, else v1's name=systemd; Scope=
# matches a task's path in systemd's tree too), so that the test's
# processes compete for CPU as they did before; on a pure v2 machine it is
# a cgroup of its own under the root. scope_leave (run by cleanup) moves
# the shell back and removes it.
SCOPE_DIR= SCOPE_PATH= SCOPE_ORIG= SCOPE_KILLED=
scope_tree() {  # prints "MOUNT KEY": KEY is the /proc/PID/cgroup line's controller field
        local v2 v1cpu named
        v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
        v1cpu=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/mounts)
        named=$(awk '$3 == "cgroup" && $4 ~ /(^|,)name=systemd(,|$)/ { print $2; exit }' /proc/mounts)
        if [ -n "$v2" ]; then printf '%s %s' "$v2" ""
        elif [ -n "$named" ]; then printf '%s %s' "$named" name=systemd
        elif [ -n "$v1cpu" ]; then printf '%s %s' "$v1cpu" cpu
        fi
}
scope_enter() {
        local mnt key
        # a cgroup of its own is root's to make: a skip for others, not a failure
        require_root
        read -r mnt key <<<"$(scope_tree)" || true
        [ -n "$mnt" ] || fail "no cgroup hierarchy mounted: cannot scope the daemon under test"
        SCOPE_PATH=/affd-test.$$
        SCOPE_DIR=$mnt$SCOPE_PATH
        SCOPE_ORIG=$mnt$(awk -F: -v k="$key" '
                k == "" && $1 == "0" { print $3; exit }
                k != "" { n = split($2, c, ","); for (i = 1; i <= n; i++) if (c[i] == k) { print $3; exit } }' /proc/self/cgroup)
        mkdir "$SCOPE_DIR" || fail "cannot make the test's cgroup $SCOPE_DIR"
        echo $$ >"$SCOPE_DIR/cgroup.procs" || fail "cannot move the test into $SCOPE_DIR"
}
scope_empty() {   # stops what is left in the test's cgroup; rmdir
        local p
        # A process of the test that outlived cleanup's kills (a grandchild
        # no CHILDREN entry names) must not run on after the test: killed,
        # and named, since a test should have stopped it itself.
        while read -r p; do
                [[ " $SCOPE_KILLED " == *" $p "* ]] ||
                        echo "note: pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) left in $SCOPE_DIR: killed" >&2
                SCOPE_KILLED+=" $p"
                kill -KILL "$p" 2>/dev/null || true
        done <"$SCOPE_DIR/cgroup.procs"
        rmdir "$SCOPE_DIR" 2>/dev/null
}
scope_leave() {
        [ -n "$SCOPE_DIR" ] && [ -d "$SCOPE_DIR" ] || return 0
        echo $$ >"$SCOPE_ORIG/cgroup.procs" 2>/dev/null || true
        # A task killed a moment ago keeps the cgroup busy until it is
        # reaped (rmdir says EBUSY with cgroup.procs already empty): retried.
        wait_for 5 scope_empty || echo "note: $SCOPE_DIR not removed (still in use)"
        SCOPE_DIR=
}

# start_daemon CONFIG_DIR [extra args]: runs affinityd in the background with a
# private runtime dir; sets DAEMON_PID and RUNDIR; waits until affctl answers.
# After scope_enter, a second configuration directory adds the Scope= drop-in.
start_daemon() {
        local cfg=$1; shift
        local scope=()
        RUNDIR=${RUNDIR:-$(mktemp -d /tmp/affd-test.XXXXXX)}
        if [ -n "$SCOPE_PATH" ]; then
                mkdir -p "$RUNDIR/scope-conf/affinityd.conf.d"
                printf '[Daemon]\nScope=%s %s/*\n' "$SCOPE_PATH" "$SCOPE_PATH" \
                        >"$RUNDIR/scope-conf/affinityd.conf.d/99-test-scope.conf"
                scope=(--config-dir "$RUNDIR/scope-conf")
        fi
        # SIGPIPE at its default, as a container's or a shell's start leaves it
        # (systemd ignores it for a service; make or CI may hand it down ignored).
        # SIGTERM when the test's shell dies, by a SIGKILL too (a harness's
        # timeout, an operator's kill -9), which no trap of the test can catch:
        # the daemon restores what it changed and exits, instead of going on
        # changing the machine's tasks and holding its lock from the next test.
        command -v setpriv >/dev/null || fail "needs setpriv (util-linux) to start the daemon under test"
        env --default-signal=PIPE setpriv --pdeathsig TERM -- "$AFFINITYD" --runtime-dir "$RUNDIR" --config-dir "$cfg" "${scope[@]}" "$@" \
                >"$RUNDIR/daemon.log" 2>&1 &
        DAEMON_PID=$!
        wait_for 20 "$AFFCTL" --runtime-dir "$RUNDIR" status >/dev/null 2>&1 ||
                { cat "$RUNDIR/daemon.log"; fail "daemon did not answer affctl status"; }
}

stop_daemon() {
        [ -n "${DAEMON_PID:-}" ] || return 0
        kill -TERM "$DAEMON_PID" 2>/dev/null || true
        # a frozen one (daemon_freeze) too; only then: a SIGCONT beside the
        # SIGTERM of one that runs is most likely what hung an ASan daemon's
        # exit in a CI rehearsal (LeakSanitizer's tracer waited for ever for
        # the thread it attached to stop)
        ! daemon_stopped || kill -CONT "$DAEMON_PID" 2>/dev/null || true
        wait "$DAEMON_PID" 2>/dev/null || true
        DAEMON_PID=
}

# daemon_freeze / daemon_thaw: the daemon stopped (SIGSTOP) while the test
# makes a change it must see only whole, never halfway (a split made of
# several tasksets, hops to another CPU and back): daemon_freeze returns
# once every thread of it has stopped, for a signal stops a thread only
# after the system call it is in, which may be a change of its own.
daemon_stopped() {
        local s st
        [ -d "/proc/$DAEMON_PID" ] || return 1
        for s in /proc/"$DAEMON_PID"/task/*/stat; do
                st=$(sed 's/.*) //' "$s" 2>/dev/null) || continue
                [ "${st%% *}" = T ] || return 1
        done
}
daemon_freeze() {
        kill -STOP "$DAEMON_PID"
        wait_for 5 daemon_stopped || fail "the daemon did not stop within 5 s of SIGSTOP"
}
daemon_thaw() { kill -CONT "$DAEMON_PID"; }

ctl() { "$AFFCTL" --runtime-dir "$RUNDIR" "$@"; }
# the daemon's passes so far, and whether it has run N; a count of passes,
# not of seconds, is what holds on a slow host (a pass is re-armed from
# its own end); a status that gives no count (a daemon too busy to answer
# in time, or gone) is said on stderr and is no number to count with
passes() {
        local p
        p=$(ctl status --json | jq -r .counts.passes)
        [[ $p =~ ^[0-9]+$ ]] || { echo "# affctl status gave no pass count (${p:-nothing})" >&2; return 1; }
        echo "$p"
}
passes_past() { local p; p=$(passes) && [ "$p" -ge "$1" ]; }

# cpu_pct_over TID SECONDS: the thread's own CPU use over the next SECONDS,
# in % of one CPU, from its scheduler run time (/proc/TID/schedstat, ns):
# what the kernel says it got on this machine now, to hold the daemon's
# figure to rather than a share some other host's idle CPU gave.
run_ns_of() { local r _; read -r r _ <"/proc/$1/schedstat" && printf '%s' "$r"; }
cpu_pct_over() {
        local a b t0 t1
        a=$(run_ns_of "$1") t0=$(date +%s%N)
        sleep "$2"
        b=$(run_ns_of "$1") t1=$(date +%s%N)
        awk -v a="$a" -v b="$b" -v t="$(( t1 - t0 ))" 'BEGIN { printf "%.1f", (t > 0 ? (b - a) * 100 / t : 0) }'
}

# allowed_of TID (a thread's Cpus_allowed_list); CPU_A, CPU_B, CPU_LAST:
# the first two and the last CPU this test may use (have_two_cpus,
# tests/cpus.sh); two_cpus: those, or a skip.
. "$top_srcdir/tests/cpus.sh"
two_cpus() { have_two_cpus || skip "needs at least 2 CPUs (allowed here: $(allowed_of $$))"; }

CHILDREN=()
cleanup() {
        stop_daemon
        for p in "${CHILDREN[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        scope_leave
        if [ -n "${RUNDIR:-}" ] && [ -z "${KEEP:-}" ]; then rm -rf "$RUNDIR"; fi
}
trap cleanup EXIT
