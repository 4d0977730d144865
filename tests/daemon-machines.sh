#!/bin/bash
# Integration: the real affinityd starts on every machine of tests/machines.c,
# as Linux 6.1 and as 6.18 write its /sys and /proc (--root on a tree that
# tests/gen-machine writes), reports the topology the spec states in
# `affctl status`, logs no warning or error, and stops cleanly on SIGTERM.
# Then the same with files it cannot read: it starts, warns naming each
# file, and lists the notes in its status; the same after CPUs go offline
# under it; without any CPU list it refuses.
# --dry-run and a private runtime and config directory: nothing on this
# machine is changed.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_cmd jq
GEN=$top_builddir/tests/gen-machine

# Thousands of files per tree: tmpfs when TMPDIR does not say otherwise
# (tests/test-fixtures.h test_mkdtemp_tree() says why).
base=${TMPDIR:-/dev/shm}
if [ -z "${TMPDIR:-}" ] && ! { [ -w /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -ge 262144 ]; }; then
        base=/tmp
fi
work=$(mktemp -d "$base/affd-machines.XXXXXX")
trap 'cleanup; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cfg=$work/config
mkdir -p "$cfg/policies.d"
# The default policies would plan for the fixture's processes; a report-only
# one is enough to read the topology (with none, the daemon rightly warns
# that it has nothing to do, and this test wants no warning at all).
: > "$cfg/affinityd.conf"
printf '[Policy]\nDetector=hog\nAction=report\n' >"$cfg/policies.d/50-report.policy"

# run_on NAME KERNEL: write the machine into $root and start the daemon on it.
run_on() {
        root=$work/$1-$2
        rm -rf "$root"
        mkdir -p "$root"
        "$GEN" write "$1" "$2" "$root" || fail "gen-machine write $1 $2"
        RUNDIR=$work/run-$1-$2
        mkdir -p "$RUNDIR"
        start_daemon "$cfg" --root "$root" --dry-run --no-perf --interval 1000
}

# True once the daemon has exited (gone, or a zombie waiting for us to reap it).
daemon_exited() {
        [ ! -e "/proc/$DAEMON_PID" ] || [ "$(sed 's/.*) //; s/ .*//' "/proc/$DAEMON_PID/stat")" = Z ]
}

# stop_clean WHAT: SIGTERM, then exit status 0 within 10 s and the stop logged.
stop_clean() {
        local rc=0
        kill -TERM "$DAEMON_PID"
        wait_for 10 daemon_exited || { cat "$RUNDIR/daemon.log"; fail "$1: still running 10 s after SIGTERM"; }
        wait "$DAEMON_PID" || rc=$?
        DAEMON_PID=
        [ "$rc" -eq 0 ] || { cat "$RUNDIR/daemon.log"; fail "$1: exit status $rc after SIGTERM, want 0"; }
        grep -q 'restored 0 change(s) on stop' "$RUNDIR/daemon.log" ||
                { cat "$RUNDIR/daemon.log"; fail "$1: no clean stop in the log"; }
}

# The number of CPUs in a CPU list ("0-3,8" is 5).
list_weight='if . == "" then 0 else split(",") | map(split("-") | map(tonumber) |
        if length == 2 then .[1] - .[0] + 1 else 1 end) | add end'

n=0
while read -r name kernel cpus online cores llcs nodes usable capacities; do
        run_on "$name" "$kernel"
        got=$(ctl status --json | jq -c ".topology | [.cpus, .online, .cores, .llcs, .nodes,
                (.usable | $list_weight), .capacities, (.notes | length)]")
        want="[$cpus,$online,$cores,$llcs,$nodes,$usable,$capacities,0]"
        [ "$got" = "$want" ] || { ctl status --json | jq .topology
                fail "$name on $kernel: status topology [cpus,online,cores,llcs,nodes,usable,capacities,notes] $got, want $want"; }
        ! grep -E '^affinityd\[(warning|err)\]' "$RUNDIR/daemon.log" ||
                fail "$name on $kernel: the daemon warned on a sound tree"
        stop_clean "$name on $kernel"
        rm -rf "$root" "$RUNDIR"   # one tree at a time: the 1,024-CPU one is 62 MiB on tmpfs
        n=$((n + 1))
done < <("$GEN" list)
[ "$n" -ge 30 ] || fail "only $n machines listed by gen-machine"

# Files it cannot read: a malformed L3 list, a malformed sibling list, a
# node list that is a directory (EISDIR). It runs, on the fallbacks.
run_on hybrid-8p16e 6.1   # to have the tree; restarted below on the broken copy
stop_clean "hybrid-8p16e before breaking it"
cpu=$root/sys/devices/system/cpu
echo '0-x' > "$cpu/cpu20/cache/index3/shared_cpu_list"
echo 'garbage' > "$cpu/cpu3/topology/thread_siblings_list"
rm "$root/sys/devices/system/node/node0/cpulist"
mkdir "$root/sys/devices/system/node/node0/cpulist"
RUNDIR=$work/run-broken
mkdir -p "$RUNDIR"
start_daemon "$cfg" --root "$root" --dry-run --no-perf --interval 1000
# CPU 3 (the second thread of P core 1) is its own core: 25 cores.
got=$(ctl status --json | jq -c '.topology | [.cpus, .online, .cores, .llcs, .nodes, (.notes | length)]')
[ "$got" = "[32,32,25,1,1,3]" ] || fail "broken hybrid: status topology $got, want [32,32,25,1,1,3]"
for f in /sys/devices/system/cpu/cpu20/cache/index3/shared_cpu_list \
         /sys/devices/system/cpu/cpu3/topology/thread_siblings_list \
         /sys/devices/system/node/node0/cpulist; do
        ctl status --json | jq -e --arg f "$f" '[.topology.notes[] | startswith($f + ": ")] | any' >/dev/null ||
                fail "broken hybrid: no note in status for $f"
        grep -qF "affinityd[warning]: topology: $f: " "$RUNDIR/daemon.log" ||
                { cat "$RUNDIR/daemon.log"; fail "broken hybrid: no warning naming $f"; }
done
stop_clean "broken hybrid"

# Hotplug under the running daemon: smt8's CPUs 4-7 go offline (the tree
# becomes smt8-nosmt's, as `echo 0 > cpuN/online` leaves it), with a
# malformed sibling list in the new tree: it re-reads the topology, status
# follows, and it warns naming the file.
run_on smt8 6.18
new=$work/smt8-nosmt-new
mkdir -p "$new"
"$GEN" write smt8-nosmt 6.18 "$new" || fail "gen-machine write smt8-nosmt"
echo garbage > "$new/sys/devices/system/cpu/cpu1/topology/thread_siblings_list"
mv "$root/sys" "$root/sys.old" && mv "$new/sys" "$root/sys"
online_is() { [ "$(ctl status --json | jq '.topology.online')" = "$1" ]; }
wait_for 10 online_is 4 ||
        { cat "$RUNDIR/daemon.log"; fail "hotplug: status still says $(ctl status --json | jq .topology.online) online CPUs, want 4"; }
grep -q 'online CPUs changed: 0-7 → 0-3' "$RUNDIR/daemon.log" || fail "hotplug: not logged"
got=$(ctl status --json | jq -c '.topology | [.cpus, .online, .cores, (.notes | length)]')
[ "$got" = "[8,4,4,1]" ] || fail "hotplug: status topology $got, want [8,4,4,1]"
grep -qF 'affinityd[warning]: topology: /sys/devices/system/cpu/cpu1/topology/thread_siblings_list: ' \
        "$RUNDIR/daemon.log" || { cat "$RUNDIR/daemon.log"; fail "hotplug: no warning naming the file"; }
stop_clean "smt8 after hotplug"

# No CPU list that parses: it refuses to start, and says why.
cpu=$root/sys/devices/system/cpu
for f in possible present online; do echo 'x' > "$cpu/$f"; done
RUNDIR=$work/run-nocpus
mkdir -p "$RUNDIR"
rc=0
timeout 20 "$AFFINITYD" --root "$root" --runtime-dir "$RUNDIR" --config-dir "$cfg" --dry-run --no-perf \
        >"$RUNDIR/daemon.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "started without a CPU list (exit status $rc)"
grep -q "cannot read the CPU topology below $root" "$RUNDIR/daemon.log" ||
        { cat "$RUNDIR/daemon.log"; fail "no CPU list: no error saying so"; }

echo "ok: started and stopped on $n machine trees with the topology of each spec; runs on unreadable files with notes, also after hotplug; refuses without a CPU list"
