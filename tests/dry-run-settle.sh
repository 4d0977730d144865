#!/bin/bash
# A daemon in --dry-run plans the change it would make again each time the
# change's cool-down ends, for it never makes it. A repeat is no news: the
# wake-up bursts thin out as they do once a daemon that acts has made its
# change, or watching alone would cost a fixed-rate client more than
# acting does. Here a ping-pong is held split on two CPUs (the pair
# policy with AllowNarrowed=yes), with Interval=200ms and Cooldown=1s, so
# the same "would co-locate" comes back about every second. The test waits
# for a longer stride (a burst in more than 4 passes: 10 passes in a row
# with no news), then for a repeat of the change, and asks that the repeat
# left the stride long. Where each repeat counted as news, the count
# started again every ~5 passes and the stride never passed 4.
# Then someone else moves one side (taskset, as an operator would): a
# placement no burst has watched, so the bursts come back (one in 4 passes
# or more often) while the daemon looks at it, with no change of its own
# to report, and they thin out again once they have watched it.
# Needs root, jq, 2+ CPUs and the perf wake-up source (the stride is its);
# skips (77) where perf(1) cannot open the tracepoint either, fails where
# only the daemon cannot.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
two_cpus
require_cmd jq

work=$(mktemp -d /tmp/affd-dryrun.XXXXXX)
cfg=$work/cfg
mkdir -p "$cfg/policies.d"
printf '[Daemon]\nInterval=200ms\nCooldown=1s\n' >"$cfg/affinityd.conf"
# IgnoreCalibration=yes: on a host whose calibration reads co-location as
# free the pair would be left alone, and nothing reported to repeat
{ cat "$top_srcdir/policies/policies.d/50-pingpong.policy"; printf '\n[Action]\nAllowNarrowed=yes\nIgnoreCalibration=yes\n'; } \
	>"$cfg/policies.d/50-pingpong.policy"
trap 'cleanup; rm -rf "$work"' EXIT
scope_enter   # the daemon under test looks at this test's processes only

start_daemon "$cfg" --dry-run
SRC=$(ctl status --json | jq -r '.capabilities.wake_source // "?"')
wake_source_checked "$SRC"
[[ $SRC == perf* ]] || skip "the settled stride is the perf sampler's, and perf cannot open sched:sched_waking here: $SRC"

"$top_builddir/tests/workloads/pingpong" --cpus "$CPU_A,$CPU_B" --hold --duration 120 --pid-file "$work/pp.pids" >/dev/null 2>&1 &
CHILDREN+=("$!")
wait_for 10 test -s "$work/pp.pids" || fail "pingpong did not start"
{ read -r P1; read -r P2; } <"$work/pp.pids"

woulds() { grep -cE "would affinity task:($P1|$P2):" "$RUNDIR/daemon.log" || true; }
reported() { [ "$(woulds)" -ge 1 ]; }
stride() { ctl status --json | jq -r '.capabilities.wake_sampler.burst_every // 0'; }
long_stride() { [ "$(stride)" -gt 4 ]; }

wait_for 20 reported || fail "the dry-run daemon never reported co-locating pingpong $P1/$P2"
echo "# reported: $(grep -E "would affinity task:($P1|$P2):" "$RUNDIR/daemon.log" | head -1 | sed 's/.*would //')"
wait_for 30 long_stride || fail "no long stride within 30 s of the report: a burst every $(stride) pass(es), the change reported $(woulds) times"
n=$(woulds)
repeated() { [ "$(woulds)" -gt "$n" ]; }
wait_for 10 repeated || fail "the change was not reported again within 10 s (Cooldown=1s): nothing was checked"
s=$(stride)
echo "# the change reported $(woulds) times; after the latest repeat a burst every $s passes"
[ "$s" -gt 4 ] || fail "a repeat of a change already reported unsettled the dry-run daemon: a burst every $s pass(es)"
echo "# a dry-run daemon's repeated report left its bursts thinned out"

# Both sides onto CPU_B by hand: together now, nothing for the daemon to
# change, so only the moved mask can bring the bursts back; and once they
# have watched it, they thin out again (the move is news once).
# what was reported, by verb and target (any lever): the same report again is no news
targets() { grep -oE "would [a-z-]+ [^ ]+" "$RUNDIR/daemon.log" | sort -u | tr '\n' ' '; }
before=$(targets)
taskset -pc "$CPU_B" "$P1" >/dev/null || fail "cannot move $P1"
unsettled() { [ "$(stride)" -le 4 ]; }
wait_for 5 unsettled || fail "a busy thread moved by someone else left the bursts thinned out: a burst every $(stride) passes"
echo "# $P1 moved to CPU $CPU_B by hand: a burst every $(stride) pass(es)"
wait_for 15 long_stride || fail "the bursts did not thin out again within 15 s of the move: a burst every $(stride) pass(es); reported: $(targets)"
# checked once the bursts are thin again: the log only grows, so this
# covers the whole time they were back
[ "$(targets)" = "$before" ] || fail "the daemon reported a change of a new target after the move, which unsettles it too: $(targets)"
echo "# thinned out again: a burst every $(stride) passes"
echo "ok: a repeated report left the bursts thinned out, a moved thread brought them back for a while"
