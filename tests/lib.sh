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

# wait_for SECONDS CMD...: run CMD every 100 ms until it succeeds or the deadline passes.
wait_for() {
        local deadline=$(( $(date +%s%N) + $1 * 1000000000 )); shift
        while :; do
                if "$@"; then return 0; fi
                [ "$(date +%s%N)" -lt "$deadline" ] || return 1
                sleep 0.1
        done
}

# start_daemon CONFIG_DIR [extra args]: runs affinityd in the background with a
# private runtime dir; sets DAEMON_PID and RUNDIR; waits until affctl answers.
start_daemon() {
        local cfg=$1; shift
        RUNDIR=${RUNDIR:-$(mktemp -d /tmp/affd-test.XXXXXX)}
        "$AFFINITYD" --runtime-dir "$RUNDIR" --config-dir "$cfg" "$@" >"$RUNDIR/daemon.log" 2>&1 &
        DAEMON_PID=$!
        wait_for 20 "$AFFCTL" --runtime-dir "$RUNDIR" status >/dev/null 2>&1 ||
                { cat "$RUNDIR/daemon.log"; fail "daemon did not answer affctl status"; }
}

stop_daemon() {
        [ -n "${DAEMON_PID:-}" ] || return 0
        kill -TERM "$DAEMON_PID" 2>/dev/null || true
        wait "$DAEMON_PID" 2>/dev/null || true
        DAEMON_PID=
}

ctl() { "$AFFCTL" --runtime-dir "$RUNDIR" "$@"; }

# Cpus_allowed_list of a thread
allowed_of() { awk '/^Cpus_allowed_list/ {print $2}' "/proc/$1/status"; }

CHILDREN=()
cleanup() {
        stop_daemon
        for p in "${CHILDREN[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        if [ -n "${RUNDIR:-}" ] && [ -z "${KEEP:-}" ]; then rm -rf "$RUNDIR"; fi
}
trap cleanup EXIT
