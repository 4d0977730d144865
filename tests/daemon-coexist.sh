#!/bin/bash
# Integration: the real affinityd on a fixture tree (--root, --dry-run) with
# other CPU placers in it ("Coexistence"). With a sched_ext
# scheduler enabled, status says affinity planning is paused and why, and
# explain says it for each thread; when the state file says "disabled" it
# resumes. The kubelet's exclusive CPUs are listed and left out of the
# usable CPUs; a malformed state file is noted in status, warned about once,
# and ignored; the daemon keeps running throughout.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_cmd jq
GEN=$top_builddir/tests/gen-machine

work=$(mktemp -d /tmp/affd-coexist.XXXXXX)
trap 'cleanup; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cfg=$work/config
mkdir -p "$cfg/policies.d"
: > "$cfg/affinityd.conf"
root=$work/root
mkdir -p "$root"
"$GEN" write smt8 6.18 "$root" || fail "gen-machine write smt8 6.18"

mkdir -p "$root/sys/kernel/sched_ext/root" "$root/var/lib/kubelet"
echo enabled > "$root/sys/kernel/sched_ext/state"
echo simple > "$root/sys/kernel/sched_ext/root/ops"
kubelet=$root/var/lib/kubelet/cpu_manager_state
echo '{"policyName":"static","defaultCpuSet":"0-1,6-7","entries":{"pod-1":{"app":"2-5"}},"checksum":1}' > "$kubelet"

RUNDIR=$work/run
mkdir -p "$RUNDIR"
start_daemon "$cfg" --root "$root" --dry-run --no-perf --interval 200

co() { ctl status --json | jq -r ".coexistence | $1"; }
is() { [ "$(co "$1")" = "$2" ]; }

got=$(co '[.affinity, .sched_ext.state, .sched_ext.ops, .sched_ext.active, .kubelet.policy, .kubelet.exclusive,
           .kubelet.containers, .usable, .note] | @json')
want='["paused","enabled","simple",true,"static","2-5",1,"0-1,6-7",""]'
[ "$got" = "$want" ] || { ctl status --json | jq .coexistence; fail "sched_ext + kubelet: status $got, want $want"; }
[ "$(co .why)" = "sched_ext scheduler active: placement is the BPF scheduler's" ] ||
        fail "sched_ext: status gives no reason: $(co .why)"
ctl explain 1 --json | jq -e '.threads[0].coexistence | map(startswith("sched_ext scheduler active")) | any' >/dev/null ||
        { ctl explain 1 --json; fail "sched_ext: explain does not say why"; }
grep -q 'sched_ext scheduler simple enabled: affinity changes stop' "$RUNDIR/daemon.log" ||
        { cat "$RUNDIR/daemon.log"; fail "sched_ext: not logged"; }

# Unloaded: planning resumes, explain no longer names it.
echo disabled > "$root/sys/kernel/sched_ext/state"
wait_for 10 is .affinity active || fail "sched_ext disabled: status still says $(co .affinity)"
[ "$(co .sched_ext.active)" = false ] || fail "sched_ext disabled: still active"
ctl explain 1 --json | jq -e '.threads[0].coexistence | length == 0' >/dev/null ||
        { ctl explain 1 --json; fail "sched_ext disabled: explain still names a placer"; }
grep -q 'sched_ext scheduler simple no longer enabled: affinity planning resumes' "$RUNDIR/daemon.log" ||
        { cat "$RUNDIR/daemon.log"; fail "sched_ext disabled: not logged"; }

# A malformed kubelet file: noted, warned about once, ignored (no CPU exclusive), not fatal.
echo '{"policyName":"static","entries":{"pod-1":{"app":"2-' > "$kubelet"
wait_for 10 is '.note | startswith("/var/lib/kubelet/cpu_manager_state: malformed: ")' true ||
        { ctl status --json | jq .coexistence; fail "malformed kubelet file: no note in status"; }
[ "$(co '[.kubelet.present, .kubelet.exclusive, .usable] | @json')" = '[true,"","0-7"]' ] ||
        { ctl status --json | jq .coexistence; fail "malformed kubelet file: not ignored"; }
# Five more passes read the same file: still one warning.
p0=$(passes) || fail "no pass count from the daemon"
wait_for 10 passes_past $((p0 + 5)) || fail "malformed kubelet file: passes stopped at $p0"
n=$(grep -c 'affinityd\[warning\]: coexistence: /var/lib/kubelet/cpu_manager_state: malformed' "$RUNDIR/daemon.log" || true)
[ "$n" = 1 ] || { cat "$RUNDIR/daemon.log"; fail "malformed kubelet file: warned $n times, want once"; }
kill -0 "$DAEMON_PID" || fail "the daemon died on a malformed kubelet file"

echo "ok: sched_ext pauses affinity planning (status, explain, log) and it resumes; kubelet exclusive CPUs leave the usable set; a malformed state file is noted once and ignored"
