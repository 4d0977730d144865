#!/bin/bash
# Integration ([conservative-smp]) with real processes and the built daemon:
#   1. three hogs on two CPUs → none pinned, `affctl hogs` says why;
#   2. two hopping hogs + bursty noise → pinned one per CPU, their migrations drop to ~0;
#   3. a hog that stops (SIGSTOP: util 0) → released after hysteresis;
#   4. SIGTERM → every mask we set is back to what it was;
#   5. CPUs= gives a hog one CPU, a busy job runs on the other → the hog is
#      pinned there and stays (the job does not compete for its CPU).
# The policy matches only this test's hogs (their command line holds this
# test's temp dir), and the daemon is scoped to the test's cgroup, so
# nothing else on the machine is touched, and other work there is load,
# never one of its hogs.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_cmd jq

HOG=$top_builddir/tests/workloads/hog
DUTY=$top_builddir/tests/workloads/duty
[ -x "$HOG" ] && [ -x "$DUTY" ] || skip "workloads not built (make tests/workloads/hog tests/workloads/duty)"

two_cpus
# The scenarios are written for two usable CPUs: restrict everything we
# start to the first two this test may use.
CPUS=$CPU_A,$CPU_B
command -v taskset >/dev/null || skip "needs taskset"

work=$(mktemp -d /tmp/affd-hogs.XXXXXX)
cfg=$work/cfg
mkdir -p "$cfg/policies.d"
# EffectCheck=no: step 2's bursty noise shares each CPU with a pinned hog,
# which no longer hops away from it, and other work on the machine (a
# build, the run under load) takes more of it: its util fell 12 % in a run
# here, 31 % in another with a build beside it, and the effect check undid
# a pin, failing "pinned hogs stop migrating". Judged by its own util a
# pinned hog pays for what others do on its CPU; this test is about the pin
# and release lifecycle, and the effect check's verdicts are test-effect's.
cat > "$cfg/affinityd.conf" <<'INI'
[Daemon]
Interval=200ms
Hysteresis=2
Cooldown=1s
MaxActionsPerInterval=4
EffectCheck=no
INI
cat > "$cfg/policies.d/50-test-hogs.policy" <<INI
[Policy]
Name=test-hogs
Detector=hog
Action=pin

[Match]
Cmdline=*$work/*

[Detect]
Util=70%
Migrations=0.1/s
Window=10s

[Action]
# the hogs run on two CPUs (taskset), which is "narrowed" on a machine with more CPUs
AllowNarrowed=yes
INI

# A hog left stopped (step 3 failing) would keep its workload, and so
# cleanup's wait, from ever ending: continue it first.
STOPPED=
trap '[ -z "$STOPPED" ] || kill -CONT "$STOPPED" 2>/dev/null || true; cleanup; rm -rf "$work"' EXIT
scope_enter   # the daemon under test changes this test's processes only
# what the daemon did, for a failure's log
daemon_story() { grep -E "affinity|released|undo|effect|hog" "$RUNDIR/daemon.log" | tail -30 >&2 || true; ctl hogs >&2 || true; }

migrations_of() { awk '/^se.nr_migrations/ {print $3}' "/proc/$1/sched"; }
is_single_cpu() { [[ "$(allowed_of "$1")" =~ ^[0-9]+$ ]]; }
hogs_json() { ctl hogs --json; }

# start_hogs N NAME: N hog processes on $CPUS (unpinned within them); PIDs in $work/NAME.pids
start_hogs() {
        local n=$1 name=$2
        rm -f "$work/$name.pids"
        taskset -c "$CPUS" "$HOG" -n "$n" -d 0 -p "$work/$name.pids" >/dev/null 2>&1 &
        CHILDREN+=("$!")
        eval "${name}_MAIN=$!"
        wait_for 10 test -s "$work/$name.pids" || fail "hog workload did not start"
        wait_for 5 bash -c "[ \$(wc -l < '$work/$name.pids') -eq $n ]" || fail "hog pid file incomplete"
}

stop_pid() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# overcommit as the planner sees it, for a failure's log: the daemon is
# scoped to this test's cgroup, so other work on the machine is load, never
# one of its hogs, and cannot be a reason to skip
overcommit_story() {
        hogs_json | jq -c '.overcommit' >&2 || true
}

orig_mask=$(taskset -c "$CPUS" sh -c 'awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status')

start_daemon "$cfg" --interval 200

# ---------------------------------------------------------------- 1. n+1: three hogs on two CPUs
start_hogs 3 three
mapfile -t THREE < "$work/three.pids"
left_alone() {
        hogs_json | jq -e '[.hogs[] | select(.state == "left alone" and (.why | test("hogs > [0-9]+ usable CPUs")))] | length >= 1' >/dev/null
}
none_pinned() {
        local p
        for p in "${THREE[@]}"; do ! is_single_cpu "$p" || return 1; done
}
# Where the hogs start slowly (a QEMU guest), the daemon may see two of them
# first and pin both, rightly; once it counts the third it says "left
# alone" at once and lets the pins go after its hysteresis: both, within
# the deadline.
left_alone_none_pinned() { left_alone && none_pinned; }
wait_for 20 left_alone_none_pinned || { hogs_json >&2; daemon_story
        fail "three hogs on two CPUs: affctl hogs never says 'left alone: N hogs > M usable CPUs' with none of them pinned"; }
# and for 15 passes (3 s here; Hysteresis= needs fewer) none of them gets pinned
holds_for_passes 15 none_pinned ||
        fail "a hog pinned while 3 hogs share 2 CPUs (masks:$(for p in "${THREE[@]}"; do printf ' %s %s' "$p" "$(allowed_of "$p")"; done))"
stop_pid "$three_MAIN"
echo "ok 1: three hogs on two CPUs left alone"

# ---------------------------------------------------------------- 2. two hopping hogs + bursty noise
taskset -c "$CPUS" "$DUTY" --burst -n 2 -d 0 >/dev/null 2>&1 &
NOISE=$!; CHILDREN+=("$NOISE")
start_hogs 2 two
mapfile -t TWO < "$work/two.pids"
a=${TWO[0]} b=${TWO[1]}

# The hogs must hop. Whether the noise makes the kernel move a busy task is
# the host's: here it did; on a CI host of the same kind the two hogs stayed
# each on its CPU for the whole 60 s ("not migrating: 0.00/s"), and the
# daemon rightly left them alone. So once the daemon has seen them, the
# test moves each one still unpinned to the other CPU and its mask back, 20
# times, as a balancer would, with the daemon frozen: it sees the hops at
# its next reading of them, never a mask halfway; 20 hops keep its decayed
# rate over Migrations= for seconds. (Hogs that hopped by themselves, by
# sched_setaffinity, overwrote a pin made between their read of the mask
# and their write under stress-ng, and a change by someone else twice is
# "left alone for good".)
# Seen: two passes after they started, the daemon has read each hog once
# at least, so the hops count in its next reading. (Waiting for affctl
# hogs to list them does not do: a hog that never hopped is not listed.)
p0=$(passes) || fail "no pass count from the daemon"
wait_for 20 passes_past $((p0 + 2)) || fail "the daemon made no 2 passes within 20 s"
cpu_of() { local f; read -r -a f <"/proc/$1/stat" && echo "${f[38]}"; }   # where it last ran
# force_hops PID...: each one still unpinned to the other CPU and back, 20 times, the daemon frozen
force_hops() {
        local h
        daemon_freeze
        for _ in $(seq 20); do
                for h in "$@"; do
                        [ "$(allowed_of "$h")" = "$orig_mask" ] || continue
                        taskset -pc "$(( $(cpu_of "$h") == CPU_A ? CPU_B : CPU_A ))" "$h" >/dev/null
                        taskset -pc "$orig_mask" "$h" >/dev/null
                done
        done
        daemon_thaw
}
force_hops "$a" "$b"

both_pinned() {
        is_single_cpu "$a" && is_single_cpu "$b" && [ "$(allowed_of "$a")" != "$(allowed_of "$b")" ]
}
if ! wait_for 60 both_pinned; then
        overcommit_story
        daemon_story
        fail "two hopping hogs not pinned one per CPU within 60 s (allowed: $(allowed_of "$a") / $(allowed_of "$b"))"
fi
echo "ok 2a: hogs pinned to CPU $(allowed_of "$a") and CPU $(allowed_of "$b")"

# affctl hogs explains it
hogs_json | jq -e --argjson p "$a" '[.hogs[] | select(.tid == $p and (.state == "pinned" or .state == "pinning"))] | length == 1' >/dev/null ||
        { hogs_json >&2; fail "affctl hogs does not show hog $a as pinned"; }

# migrations of the pinned hogs drop to ~0 (a pinned task can only be moved
# by hotplug), over 3 s in which the daemon changed neither pin: where the
# bursty noise read as a third hog for a few passes (the QEMU guest), the
# daemon let both go and pinned them again elsewhere, a move of its own
# and not what is measured here. Such a window is measured again (at
# most 3 times), said.
pin_lines() { grep -c -e "task:$a:" -e "task:$b:" "$RUNDIR/daemon.log" || true; }
for try in 1 2 3; do
        wait_for 60 both_pinned || { daemon_story; fail "the hogs lost their pins and were not pinned again within 60 s"; }
        l0=$(pin_lines)
        ma0=$(migrations_of "$a"); mb0=$(migrations_of "$b")
        sleep 3
        ma1=$(migrations_of "$a"); mb1=$(migrations_of "$b")
        [ "$(pin_lines)" != "$l0" ] || ! both_pinned || break
        [ "$try" -lt 3 ] || { daemon_story; fail "the daemon changed the hogs' pins in each of 3 windows of 3 s"; }
        echo "# the daemon changed a hog's pin during the 3 s window (attempt $try): $(grep -e "task:$a:" -e "task:$b:" "$RUNDIR/daemon.log" | tail -n 1)"
done
if [ $((ma1 - ma0)) -gt 1 ] || [ $((mb1 - mb0)) -gt 1 ]; then
        # Seen once in a CI rehearsal (2 and 0), not reproduced in the runs
        # after it: what the daemon did to them, for the next time.
        grep -E "affinity|released|undo|effect" "$RUNDIR/daemon.log" >&2 || true
        echo "# allowed now: $(allowed_of "$a") / $(allowed_of "$b")" >&2
        fail "pinned hogs still migrate: $((ma1 - ma0)) and $((mb1 - mb0)) in 3 s"
fi
echo "ok 2b: migrations in 3 s after pinning: $((ma1 - ma0)), $((mb1 - mb0))"

# ---------------------------------------------------------------- 3. a hog that stops is released
kill -STOP "$a"; STOPPED=$a
released() { [ "$(allowed_of "$a")" = "$orig_mask" ]; }
wait_for 15 released || { daemon_story; fail "stopped hog $a still pinned to $(allowed_of "$a")"; }
is_single_cpu "$b" || { daemon_story; fail "the other hog lost its pin when one stopped"; }
kill -CONT "$a"; STOPPED=
echo "ok 3: stopped hog released (back to $orig_mask), the other still pinned"

# ---------------------------------------------------------------- 4. SIGTERM restores
is_single_cpu "$b" || fail "hog $b not pinned before SIGTERM"
stop_daemon
[ "$(allowed_of "$b")" = "$orig_mask" ] || fail "after SIGTERM hog $b is still on $(allowed_of "$b"), want $orig_mask"
[ "$(allowed_of "$a")" = "$orig_mask" ] || fail "after SIGTERM hog $a is on $(allowed_of "$a"), want $orig_mask"
echo "ok 4: SIGTERM restored $orig_mask"

stop_pid "$two_MAIN"
stop_pid "$NOISE"

# ---------------------------------------------------------------- 5. a busy job the hogs' CPUs need not hold
# CPUs= gives the hogs CPU A only. A busy job no policy covers may run on
# A or B; with the hog on A it has B to itself, so it does not share the
# hog's CPU and the pin stays. (Any busy thread allowed on A used to count:
# "2 hogs > 1 usable CPUs", the hog never pinned; on a guest of four CPUs,
# two busy jobs on the other two let the pins of step 2 go.)
cfg5=$work/cfg5
mkdir -p "$cfg5/policies.d"
cp "$cfg/affinityd.conf" "$cfg5/"
sed "s/^AllowNarrowed=yes\$/&\nCPUs=$CPU_A/" "$cfg/policies.d/50-test-hogs.policy" >"$cfg5/policies.d/50-test-hogs.policy"
grep -q "^CPUs=$CPU_A\$" "$cfg5/policies.d/50-test-hogs.policy" || fail "could not write CPUs=$CPU_A into the step 5 policy"
taskset -c "$CPUS" sh -c 'while :; do :; done' &
JOB=$!; CHILDREN+=("$JOB")
start_hogs 1 one
h=$(head -n 1 "$work/one.pids")
start_daemon "$cfg5" --interval 200
p0=$(passes) || fail "no pass count from the daemon (step 5)"
wait_for 20 passes_past $((p0 + 2)) || fail "the daemon made no 2 passes within 20 s (step 5)"
# the premise: the job is busy (a thread the count would have taken)
echo "# step 5: the busy job ran $(cpu_pct_over "$JOB" 1) % of a CPU over 1 s"
force_hops "$h"
pinned_on_a() { [ "$(allowed_of "$h")" = "$CPU_A" ]; }
wait_for 60 pinned_on_a || { overcommit_story; daemon_story
        fail "a hog with CPUs=$CPU_A and a busy job beside it: not pinned to CPU $CPU_A within 60 s (allowed: $(allowed_of "$h"))"; }
# and it stays so for 15 passes (3 s here), with the job busy all along
holds_for_passes 15 pinned_on_a ||
        { overcommit_story; daemon_story; fail "the hog's pin to CPU $CPU_A went while the busy job ran beside it"; }
stop_daemon
[ "$(allowed_of "$h")" = "$orig_mask" ] || fail "after SIGTERM the step 5 hog is on $(allowed_of "$h"), want $orig_mask"
stop_pid "$one_MAIN"
stop_pid "$JOB"
echo "ok 5: a hog pinned to CPU $CPU_A (CPUs=) with a busy job beside it, and restored"
echo "ok: hogs integration"
