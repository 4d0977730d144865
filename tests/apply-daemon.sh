#!/bin/bash
# Integration: the daemon undoes what it did.
#  1. a test policy pins a hog; SIGTERM → the original mask is back and the
#     journal holds only its header;
#  1b. pinned again; a reload that disables the policy releases the pin at
#     once, and the daemon goes on;
#  2. pinned again; kill -9 → the mask stays pinned; the next start (with
#     no policies at all) restores it from the journal before answering;
#  2b. pinned again; kill -9; a start that a broken configuration stops
#     (exit 78, which systemd does not restart) still restores the pin first;
#  3. pinned again; the user runs taskset → the daemon stops managing it,
#     and SIGTERM leaves the user's mask alone.
# A lone hog on an idle box may never migrate, and the hog detector wants
# migrations; a "kicker" (a short spinner started pinned onto whatever CPU
# the hog is on) makes the balancer move it, without touching the hog's
# own affinity. The kicker is pinned, so the daemon leaves it alone.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
# Before any skip: lib.sh's cleanup ends in `[ -n "$RUNDIR" ] && ...`, which
# under set -e turns exit 77 into 1 when RUNDIR is unset.
RUNDIR=$(mktemp -d /tmp/affd-test.XXXXXX)
require_root
require_cmd taskset
require_cmd timeout
two_cpus
HOGBIN=$top_builddir/tests/workloads/hog

cfg=$(mktemp -d /tmp/affd-cfg.XXXXXX)
quiet=$(mktemp -d /tmp/affd-quiet.XXXXXX)
broken=$(mktemp -d /tmp/affd-broken.XXXXXX)
trap 'cleanup; rm -rf "$cfg" "$quiet" "$broken"' EXIT   # also when a check fails or skips
scope_enter   # the daemon under test changes this test's processes only
mkdir -p "$cfg/policies.d" "$quiet/policies.d"
cat > "$cfg/affinityd.conf" <<'INI'
[Daemon]
Interval=200ms
Hysteresis=1
Cooldown=0s
# the kicker makes the hog slower on purpose: no effect-check undo here
EffectCheck=no
INI
cat > "$cfg/policies.d/50-test-hog.policy" <<'INI'
[Policy]
Detector=hog
Action=pin

[Match]
Comm=hog

[Detect]
Util=50%
Migrations=0.01/s
Window=2s
INI
cat > "$quiet/affinityd.conf" <<'INI'
[Daemon]
Interval=200ms
INI
cat > "$broken/affinityd.conf" <<'INI'
[Daemon]
Interval=fast
INI

"$HOGBIN" -n 1 -d 0 -p "$RUNDIR/hog.pid" >/dev/null 2>&1 &
CHILDREN+=("$!")
wait_for 5 test -s "$RUNDIR/hog.pid" || fail "hog workload did not start"
HOG=$(head -n1 "$RUNDIR/hog.pid")
CHILDREN+=("$HOG")
ORIG=$(allowed_of "$HOG")

KICKER=
start_kicker() {
        ( while :; do
                # a builtin read, not awk: one fork less a turn for a shell
                # that is in the test's scope, where its work counts (on a
                # slow host a fork costs milliseconds)
                read -r -a f <"/proc/$HOG/stat" 2>/dev/null || exit 0
                c=${f[38]}
                taskset -c "$c" timeout 0.3 sh -c 'while :; do :; done' || true
                sleep 0.2
          done ) &
        KICKER=$!
        CHILDREN+=("$KICKER")
}
stop_kicker() {
        [ -n "$KICKER" ] || return 0
        kill "$KICKER" 2>/dev/null || true
        wait "$KICKER" 2>/dev/null || true
        KICKER=
}

pinned() {
        local m
        m=$(allowed_of "$HOG")
        [ "$m" != "$ORIG" ] && [[ "$m" =~ ^[0-9]+$ ]]
}

listed() { ctl actions --json | grep -q "task:$HOG:"; }
journal_live() { grep -c '"rec":"begin"' "$RUNDIR/journal" || true; }

# pin_hog: a daemon started with the hog policy has pinned the hog, lists
# the pin in affctl actions and holds its begin record in the journal, all
# at once after the kicker stops. On a loaded machine the daemon may let
# the pin go again (the hog's share falls under Util= beside the load, or
# busy work next door leaves no CPU to give it): that is its rule, not what
# this test checks, so the hog is pinned again (at most 3 times), with the
# daemon's reason said. A hog pinned but not listed, or listed with no
# journal record, fails at once.
pin_hog() {
        local try
        start_daemon "$cfg"
        for try in 1 2 3; do
                start_kicker
                if ! wait_for 30 pinned; then
                        stop_kicker
                        ctl hogs 2>&1 | head -n 20 || true
                        fail "the hog ($HOG, mask $(allowed_of "$HOG")) was not pinned within 30 s"
                fi
                stop_kicker
                # journal, then actions, then the mask: a pin let go between
                # the reads shows in the last one, which decides
                j=$(journal_live)
                l=0; listed && l=1
                if pinned; then
                        [ "$l" = 1 ] || fail "the hog is pinned ($(allowed_of "$HOG")) but affctl actions does not list the pin of $HOG"
                        [ "$j" -ge 1 ] || fail "no begin record in the journal while pinned"
                        return 0
                fi
                echo "# the daemon let the pin of $HOG go again (attempt $try): $(grep -i "release\|undo" "$RUNDIR/daemon.log" | tail -n 1)"
        done
        fail "the daemon let the pin of $HOG go 3 times"
}

# 1. SIGTERM restores
pin_hog
stop_daemon
[ "$(allowed_of "$HOG")" = "$ORIG" ] || fail "SIGTERM: mask is $(allowed_of "$HOG"), want $ORIG"
[ "$(wc -l < "$RUNDIR/journal")" -eq 1 ] || fail "SIGTERM: journal not compacted to its header"
echo "ok 1: SIGTERM restored $ORIG"

# 1b. a reload that disables the policy releases its pin before it answers,
# and the daemon goes on
pin_hog
policy=$cfg/policies.d/50-test-hog.policy
sed -i 's/^\[Policy\]$/[Policy]\nEnabled=no/' "$policy"
ctl reload >/dev/null || fail "affctl reload with the hog policy disabled failed"
# released before the reload answers, not at a later pass
if [ "$(allowed_of "$HOG")" != "$ORIG" ] || listed; then
        fail "reload disabled the policy: the hog is on $(allowed_of "$HOG") when the reload answers, want $ORIG and no pin listed"
fi
grep -q "is gone" "$RUNDIR/daemon.log" || fail "the daemon log does not say the pin's policy is gone"
kill -0 "$DAEMON_PID" || fail "the daemon did not survive the reload"
stop_daemon
sed -i '/^Enabled=no$/d' "$policy"
echo "ok 1b: a reload that disabled the policy released its pin ($ORIG)"

# 2. kill -9, restart restores
pin_hog
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=
pinned || fail "kill -9: the pin vanished by itself (mask $(allowed_of "$HOG"))"
start_daemon "$quiet"
[ "$(allowed_of "$HOG")" = "$ORIG" ] ||
        fail "restart after kill -9: mask is $(allowed_of "$HOG"), want $ORIG"
grep -qi "restor" "$RUNDIR/daemon.log" || echo "note: the daemon log does not mention the restore"
stop_daemon
echo "ok 2: the start after kill -9 restored $ORIG"

# 2b. kill -9, then a start that a broken configuration stops
pin_hog
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=
pinned || fail "kill -9: the pin vanished by itself (mask $(allowed_of "$HOG"))"
rc=0
timeout 60 "$AFFINITYD" --runtime-dir "$RUNDIR" --config-dir "$broken" >"$RUNDIR/broken.log" 2>&1 || rc=$?
[ "$rc" = 78 ] || { cat "$RUNDIR/broken.log"; fail "a broken configuration: exit $rc, want 78"; }
[ "$(allowed_of "$HOG")" = "$ORIG" ] ||
        fail "a start stopped by a broken configuration left the crashed run's pin: mask $(allowed_of "$HOG"), want $ORIG"
[ "$(grep -c '"rec":"begin"' "$RUNDIR/journal" || true)" = 0 ] || fail "the journal still holds a change after the restore"
echo "ok 2b: a start stopped by a broken configuration (exit 78) restored $ORIG first"

# 3. a user's taskset wins
pin_hog
not_managed() { ! listed; }
sets_of_hog() { grep -c "set affinity task:$HOG:" "$RUNDIR/daemon.log" || true; }
for try in 1 2 3; do
        sets=$(sets_of_hog)
        ours=$(allowed_of "$HOG")
        user=$CPU_A; [ "$ours" != "$CPU_A" ] || user=$CPU_B
        taskset -p -c "$user" "$HOG" >/dev/null
        wait_for 10 not_managed && break
        # The daemon may move its pin meanwhile (a window that still holds
        # the kicker's load: "CPU 1 is taken by another hog", seen under
        # stress-ng), and onto the user's CPU: a mask equal to its own pin
        # is no change it can see. Only then is it asked again.
        [ "$(sets_of_hog)" -gt "$sets" ] || fail "the daemon still manages $HOG after the user's taskset"
        echo "# the daemon moved its pin of $HOG while the user set $user (attempt $try): $(grep "task:$HOG:" "$RUNDIR/daemon.log" | tail -n 1)"
done
not_managed || fail "the daemon still manages $HOG after the user's taskset, 3 times"
stop_daemon
[ "$(allowed_of "$HOG")" = "$user" ] ||
        fail "the user's taskset was overwritten: mask $(allowed_of "$HOG"), want $user"
echo "ok 3: the user's taskset ($user) was left alone"

rm -rf "$cfg" "$quiet" "$broken"
