#!/bin/bash
# Integration: a pass brought forward for one new process is held back for
# the next one too, up to 300 ms past its time in all. The process that
# brings a pass forward is often the tool that starts the workload, and the
# workload's client comes a little later; a pass 300 ms after the tool saw
# the client only 100 ms old (bench/servers.sh: memcached and nginx
# co-located after 1.12 s instead of 0.31 s).
#
# With Interval=20s the only regular passes are at start and 20 s later.
# After a quiet spell, process A, then 150 ms later process B: the pass
# must come ~300 ms after B (held back), not ~300 ms after A. Pass times
# are the daemon's own (--log-level debug, CLOCK_BOOTTIME), the starts are
# read from /proc/uptime with bash builtins only, since every fork is a
# new process to the daemon.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
require_cmd jq

work=$(mktemp -d /tmp/affd-hold.XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT
mkdir -p "$work/cfg/policies.d"
printf '[Daemon]\nInterval=20s\n' >"$work/cfg/affinityd.conf"
cp "$top_srcdir/policies/policies.d/50-pingpong.policy" "$work/cfg/policies.d/"

# uptime_ms VAR: boot time in ms into VAR, without a fork ($(...) is one)
uptime_ms() { local u _; read -r u _ </proc/uptime; printf -v "$1" '%d' $(( 10#${u/./} * 10 )); }
start_daemon "$work/cfg" --log-level debug
pc=$(ctl status --json | jq -r '.capabilities.proc_connector')
[[ $pc == listening* ]] || skip "no proc connector here ($pc): nothing announces new processes"

# Wait out the early-pass limit (the start-up affctl calls used it) without
# starting a process: read -t on a FIFO is a builtin.
mkfifo "$work/quiet"
exec 3<>"$work/quiet"
read -r -t 11 -u 3 || true

uptime_ms t_a
/bin/true                              # A: brings the next pass forward to ~A+300 ms
read -r -t 0.15 -u 3 || true
uptime_ms t_b
/bin/true                              # B: must hold it back to ~B+300 ms
read -r -t 1.5 -u 3 || true            # the pass comes within this (no fork meanwhile)

# the first pass after A, in ms of boot time
t_pass=$(awk -v a="$t_a" '/^affinityd\[debug\]: pass [0-9]+ at / && $5 * 1000 > a { print int($5 * 1000); exit }' "$RUNDIR/daemon.log")
[ -n "$t_pass" ] || { tail -20 "$RUNDIR/daemon.log"; fail "no pass within 1.65 s of two new processes (Interval=20s)"; }
echo "# A at +0, B at +$(( t_b - t_a )) ms, the pass at +$(( t_pass - t_a )) ms"
grep "new process:" "$RUNDIR/daemon.log" | tail -3 | sed 's/^/# /'
# /proc/uptime has 10 ms steps: allow 20 ms either way
(( t_pass >= t_b + 300 - 20 )) ||
        fail "the pass ran $(( t_pass - t_b )) ms after B, $(( t_pass - t_a )) ms after A: B did not hold it back to B+300 ms"
(( t_pass <= t_a + 600 + 100 )) ||
        fail "the pass ran $(( t_pass - t_a )) ms after A: held back beyond 300 ms past its time"
echo "ok: the early pass waited for the later process"
