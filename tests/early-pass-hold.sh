#!/bin/bash
# Integration: a pass brought forward for one new process is held back for
# the next one too, up to 300 ms past its time in all. The process that
# brings a pass forward is often the tool that starts the workload, and the
# workload's client comes a little later; a pass 300 ms after the tool saw
# the client only 100 ms old (bench/servers.sh: memcached and nginx
# co-located after 1.12 s instead of 0.31 s).
#
# With Interval=60s the only regular passes are at start and 60 s later.
# After a quiet spell, process A, then 150 ms later process B: the pass
# must be planned for ~300 ms after B (held back), not ~300 ms after A.
# What is checked is the time the daemon planned the pass for (its debug
# line "... to T s (boot)"): a loaded machine runs a pass later than
# planned, never earlier, so the pass's own time is checked only against
# that lower bound and its lateness printed. Times are CLOCK_BOOTTIME, the
# starts read from /proc/uptime with bash builtins only, since every fork
# in the test's cgroup is a new process to the daemon (Scope=: the rest of
# the machine's are not).
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
require_cmd jq

work=$(mktemp -d /tmp/affd-hold.XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT
scope_enter   # the daemon under test changes this test's processes only
mkdir -p "$work/cfg/policies.d"
printf '[Daemon]\nInterval=60s\n' >"$work/cfg/affinityd.conf"
cp "$top_srcdir/policies/policies.d/50-pingpong.policy" "$work/cfg/policies.d/"

# uptime_ms VAR: boot time in ms into VAR, without a fork ($(...) is one)
uptime_ms() { local u _; read -r u _ </proc/uptime; printf -v "$1" '%d' $(( 10#${u/./} * 10 )); }
probe=$(python3 "$top_srcdir/tests/proc-events-probe.py") || {
        rc=$?
        [ $rc -eq 77 ] && skip "$probe"
        fail "$probe"
}
start_daemon "$work/cfg" --log-level debug
pc=$(ctl status --json | jq -r '.capabilities.proc_connector')
[[ $pc == listening* ]] || fail "the kernel delivers process events ($probe), but the daemon's proc connector is: $pc"

# Wait out the early-pass limit (the start-up affctl calls may have used
# it) without starting a process (nap, tests/lib.sh).
nap_open "$work"

secs_ms() { local w=${1%.*} f=${1#*.}000; printf -v "$2" '%d' $(( 10#$w * 1000 + 10#${f:0:3} )); }
# The first pass after A and the time the daemon last planned it for, in
# ms of boot time, and how many plans it made after A, read from the log
# with builtins only: no fork to hold the pass back meanwhile.
pass_and_plan() {
        local line t re_plan='^affinityd\[debug\]: new process: next pass .* to ([0-9]+\.[0-9]+) s \(boot\)$'
        local re_pass='^affinityd\[debug\]: pass [0-9]+ at ([0-9]+\.[0-9]+)-[0-9]+\.[0-9]+ s'
        t_plan= t_first= n_plans=0
        while IFS= read -r line; do
                if [[ $line =~ $re_plan ]]; then
                        secs_ms "${BASH_REMATCH[1]}" t
                        (( t <= t_a )) || { t_plan=$t; t_first=${t_first:-$t}; n_plans=$(( n_plans + 1 )); }
                elif [[ $line =~ $re_pass ]]; then
                        secs_ms "${BASH_REMATCH[1]}" t
                        (( t <= t_a )) || { t_pass=$t; return 0; }
                fi
        done <"$RUNDIR/daemon.log"
        return 1
}

# One try: 0 when judged (a wrong hold fails the test), 1 when B's process
# event reached the daemon only after the pass had run, so there was
# nothing to hold (seen once in a distcheck on a busy host: B at +150 ms,
# its event handled after the pass at +314 ms).
attempt() {
        local got=
        nap 11

        # processes that stay past the pass: one gone before its burst asks
        # for no pass (early-pass.sh)
        uptime_ms t_a
        sleep 3 &                              # A: brings the next pass forward to ~A+300 ms
        nap 0.15
        uptime_ms t_b
        sleep 3 &                              # B: must hold it back to ~B+300 ms
        # polled for up to 10 s (far below the regular pass)
        t_pass=
        for (( i = 0; i < 100; i++ )); do
                if pass_and_plan; then got=yes; break; fi
                nap 0.1
        done
        [ -n "$got" ] || fail "no pass within 10 s of two new processes (Interval=60s)"
        [ -n "$t_plan" ] || fail "a pass at $(( t_pass - t_a )) ms after A, but no early pass was planned for A or B"
        echo "# A at +0, B at +$(( t_b - t_a )) ms; the pass planned for +$(( t_plan - t_a )) ms, run at +$(( t_pass - t_a )) ms"
        grep "new process:" "$RUNDIR/daemon.log" | tail -3 | sed 's/^/# /'
        if (( n_plans < 2 )); then
                echo "# the daemon saw only one new process before the pass ran: B's event came after it, nothing to hold"
                return 1
        fi
        # /proc/uptime has 10 ms steps: allow 20 ms either way
        (( t_plan >= t_b + 300 - 20 )) ||
                fail "the pass was planned for $(( t_plan - t_b )) ms after B, $(( t_plan - t_a )) ms after A: B did not hold it back to B+300 ms"
        # "Its time" is the one the daemon planned when it saw A: a slow machine
        # may deliver A's event late (under ASan on a loaded host, 1.1 s after A
        # started), and then every time planned is late with it
        (( t_first <= t_a + 300 + 20 )) ||
                echo "# the daemon saw A late: its first pass planned for +$(( t_first - t_a )) ms, not +300"
        (( t_plan <= t_first + 300 + 20 )) ||
                fail "the pass was planned for $(( t_plan - t_a )) ms after A, first for +$(( t_first - t_a )) ms: held back beyond 300 ms past its time"
        (( t_pass >= t_plan - 20 )) ||
                fail "the pass ran at +$(( t_pass - t_a )) ms, before the +$(( t_plan - t_a )) ms it was planned for"
        echo "ok: the early pass waited for the later process (ran $(( t_pass - t_plan )) ms after its planned time)"
        return 0
}

for try in 1 2 3; do
        attempt && exit 0
        echo "# try $try: B's process event reached the daemon after the pass; again"
done
fail "in 3 tries B's process event never reached the daemon before the pass brought forward for A: the hold could not be judged"
