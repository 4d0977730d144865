#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Integration on the real machine: cgroup CPU weight through libcgroup on
# the cgroup v1 cpu controller (the development machines: v1 cpu, no
# systemd, no system bus). Creates a test cgroup, sets cpu.shares through
# levers_weight_set(), reads it back from the file, restores the exact
# original, removes the cgroup. Then the daemon: a weight policy on a group
# whose cpu.shares (1000) the v2 scale cannot express, kill -9, restart
# without the policy: the replay must write back exactly 1000 (the
# journal's "restore" field), not the v2->v1 conversion of weight 97 (993).
# Skips (77) without root or a writable v1 cpu hierarchy; the v2 side is
# checked in the VM (tests/vm).
set -u

tool="${top_builddir:-.}/tests/levers-tool"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root to create a cgroup"
[ -x "$tool" ] || fail "$tool not built"

# Whether this machine has a writable v1 cpu hierarchy is read from
# /proc/mounts, not from the probe under test: a probe that regresses to
# "no v1" must fail here, not skip.
v1=$(awk '$3 == "cgroup" && ("," $4 ",") ~ /,cpu,/ { print $2; exit }' /proc/mounts)
[ -n "$v1" ] || skip "no cgroup v1 cpu controller mounted (/proc/mounts)"
[ -w "$v1" ] || skip "the v1 cpu hierarchy $v1 is not writable"
probe=$("$tool" probe) || fail "probe failed"
val() { printf '%s\n' "$probe" | sed -n "s/^$1=//p"; }
[ "$(val cgroup.version)" = 1 ] || fail "$v1 is a v1 cpu hierarchy, the probe says version $(val cgroup.version): $(val cgroup.why)"
[ "$(val cgroup.writable)" = 1 ] || fail "$v1 is writable, the probe says not: $(val cgroup.why)"
[ "$(val cgroup.backend)" = libcgroup ] || fail "real root must use libcgroup, got '$(val cgroup.backend)'"
mnt=$(val cgroup.mount)
[ -f "$mnt/cpu.shares" ] || fail "no $mnt/cpu.shares"

cg="/affinityd-test-$$"
dir="$mnt$cg"
daemon=
sleeper=
work=
cleanup() {
        [ -n "$daemon" ] && kill -9 "$daemon" 2>/dev/null
        # reaped before the rmdir: a group with a task in it is EBUSY
        [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null && wait "$sleeper" 2>/dev/null
        [ -n "$work" ] && rm -rf "$work"
        [ -d "$dir" ] && rmdir "$dir"
}
trap cleanup EXIT INT TERM
mkdir "$dir" || skip "cannot create $dir"

# A new group starts at the default: shares 1024 = weight 100
[ "$(cat "$dir/cpu.shares")" = 1024 ] || fail "new group has cpu.shares $(cat "$dir/cpu.shares")"
[ "$("$tool" weight-get "$cg")" = 100 ] || fail "weight-get: $("$tool" weight-get "$cg")"

# Set through libcgroup, read the file back
out=$("$tool" weight-set "$cg" 250) || fail "weight-set 250: $out"
echo "$out"
case "$out" in "changed path=libcgroup detail=libcgroup: $dir/cpu.shares=2560 (weight 250)") ;; *) fail "unexpected: $out";; esac
[ "$(cat "$dir/cpu.shares")" = 2560 ] || fail "cpu.shares is $(cat "$dir/cpu.shares"), want 2560"
[ "$("$tool" weight-get "$cg")" = 250 ] || fail "weight-get after set"
out=$("$tool" weight-set "$cg" 250) || fail "weight-set again"
case "$out" in unchanged*) ;; *) fail "second set should change nothing: $out";; esac

# Restore
out=$("$tool" weight-set "$cg" 100) || fail "restore: $out"
[ "$(cat "$dir/cpu.shares")" = 1024 ] || fail "restore left cpu.shares $(cat "$dir/cpu.shares")"

# A value the v2 scale cannot express (1000 -> weight 97 -> 993) comes back exactly
echo 1000 > "$dir/cpu.shares"
out=$("$tool" roundtrip "$cg" 400) || fail "roundtrip: $out"
echo "$out"
printf '%s\n' "$out" | grep -q '^original 97$' || fail "original should read as weight 97"
[ "$(cat "$dir/cpu.shares")" = 1000 ] || fail "roundtrip left cpu.shares $(cat "$dir/cpu.shares"), want 1000"

# Refusals: out of range, the root group, a group that does not exist
"$tool" weight-set "$cg" 0 2>/dev/null && fail "weight 0 accepted"
"$tool" weight-set / 200 2>/dev/null && fail "root cgroup accepted"
"$tool" weight-set "$cg-nope" 200 2>/dev/null && fail "missing cgroup accepted"
[ "$(cat "$dir/cpu.shares")" = 1000 ] || fail "a refused set changed cpu.shares"

# A unit-looking name without systemd still goes through libcgroup
ucg="$cg/fake.service"
mkdir "$mnt$ucg" || fail "mkdir $mnt$ucg"
out=$("$tool" weight-set "$ucg" 300); rc=$?
rmdir "$mnt$ucg"
[ $rc = 0 ] || fail "unit cgroup without systemd: $out"
case "$out" in "changed path=libcgroup "*) ;; *) fail "expected the libcgroup path without a system bus: $out";; esac

# The daemon: set, kill -9, restart, the replay restores the exact value.
daemon_bin="${top_builddir:-.}/affinityd"
ctl_bin="${top_builddir:-.}/affctl"
[ -x "$daemon_bin" ] || fail "$daemon_bin not built"
work=$(mktemp -d /tmp/affd-v1.XXXXXX)
mkdir -p "$work/run" "$work/cfg/policies.d" "$work/quiet"
printf '[Daemon]\nInterval=200ms\nHysteresis=1\nEffectCheck=no\n' > "$work/cfg/affinityd.conf"
printf '[Daemon]\nInterval=200ms\n' > "$work/quiet/affinityd.conf"
printf '[Policy]\nDetector=always\nAction=weight\nEnabled=yes\n[Match]\nCgroup=%s\n[Action]\nCPUWeight=400\n' "$cg" \
        > "$work/cfg/policies.d/50-v1.policy"
echo 1000 > "$dir/cpu.shares"
sleep 600 &
sleeper=$!
echo "$sleeper" > "$dir/cgroup.procs" || fail "cannot move a task into $dir"
shares() { cat "$dir/cpu.shares"; }
shares_is() { [ "$(shares)" = "$1" ]; }
# wait_for SECONDS CMD...: poll every 100 ms until CMD succeeds or the deadline passes
wait_for() {
        end=$(( $(date +%s) + $1 )); shift
        until "$@"; do
                [ "$(date +%s)" -lt "$end" ] || return 1
                sleep 0.1
        done
}
"$daemon_bin" --runtime-dir "$work/run" --config-dir "$work/cfg" > "$work/daemon1.log" 2>&1 &
daemon=$!
wait_for 30 shares_is 4096 || { cat "$work/daemon1.log"; fail "daemon did not set cpu.shares 4096 (weight 400): $(shares)"; }
grep -q '"restore":"shares=1000 weight=97 set_shares=4096 set_weight=400"' "$work/run/journal" ||
        { cat "$work/run/journal"; fail "journal lacks the exact shares"; }
kill -9 "$daemon"; wait "$daemon" 2>/dev/null; daemon=
shares_is 4096 || fail "cpu.shares changed by itself after kill -9: $(shares)"
"$daemon_bin" --runtime-dir "$work/run" --config-dir "$work/quiet" > "$work/daemon2.log" 2>&1 &
daemon=$!
wait_for 30 "$ctl_bin" --runtime-dir "$work/run" status >/dev/null 2>&1 || { cat "$work/daemon2.log"; fail "restarted daemon does not answer"; }
shares_is 1000 || { cat "$work/daemon2.log"; fail "replay after kill -9 left cpu.shares $(shares), want exactly 1000"; }
kill -TERM "$daemon"; wait "$daemon" 2>/dev/null; daemon=
shares_is 1000 || fail "stop changed cpu.shares to $(shares)"
echo "ok: kill -9 + restart restored cpu.shares exactly (1000, not 993)"
kill "$sleeper" 2>/dev/null; wait "$sleeper" 2>/dev/null; sleeper=
# the group must be empty before cleanup's rmdir: the sleeper is gone

echo "PASS: cgroup v1 cpu.shares set, read back and restored (also after kill -9) through libcgroup"
exit 0
