#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The levers on a real systemd machine with cgroup v2 and no lockdown: run
# INSIDE the test VM (not part of `make check`; the machines that run
# `make check` have cgroup v1 and lockdown). Every change is restored and
# checked restored.
#
#   tests/vm/run-in-vm.sh SHARE 'LEVERS_TOOL=./levers-tool sh ./levers-vm.sh'
#
# Checks:
#   1. probe: cgroup v2 through libcgroup, systemd path available, features readable;
#   2. a unit's cgroup (transient sleep service): CPUWeight through
#      SetUnitProperties (systemctl show agrees), then restored;
#   3. a plain cgroup whose parent lacks +cpu: enabled in the parent's
#      cgroup.subtree_control, cpu.weight set through libcgroup, restored;
#   4. sched_features: GENTLE_FAIR_SLEEPERS off and back on; an EEVDF name refused;
#   5. debug:migration_cost_ns and kernel.sched_schedstats set and restored.
set -u

tool=${LEVERS_TOOL:-${top_builddir:-.}/tests/levers-tool}
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root"
[ -x "$tool" ] || fail "no $tool"

probe=$("$tool" --allow-mount probe) || fail "probe"
printf '%s\n' "$probe" | grep -v '^json='
val() { printf '%s\n' "$probe" | sed -n "s/^$1=//p"; }
[ "$(val cgroup.version)" = 2 ] || skip "not cgroup v2 here"
[ "$(val cgroup.backend)" = libcgroup ] || fail "backend $(val cgroup.backend)"
[ "$(val features.readable)" = 1 ] || fail "features: $(val features.why)"
mnt=$(val cgroup.mount)

# 2. systemd path
unit=affinityd-levers-test.service
if [ "$(val cgroup.systemd)" = 1 ]; then
        systemd-run --quiet --unit=$unit -p Type=exec sleep 300 || fail "systemd-run"
        cg=/system.slice/$unit
        orig=$("$tool" weight-get "$cg") || fail "weight-get $cg"
        out=$("$tool" weight-set "$cg" 300) || fail "weight-set: $out"
        echo "$out"
        case "$out" in "changed path=systemd detail=systemd: $unit CPUWeight=300"*) ;; *) fail "not through systemd: $out";; esac
        [ "$(cat "$mnt$cg/cpu.weight")" = 300 ] || fail "cpu.weight $(cat "$mnt$cg/cpu.weight")"
        [ "$(systemctl show -P CPUWeight $unit)" = 300 ] || fail "systemd says CPUWeight=$(systemctl show -P CPUWeight $unit)"
        out=$("$tool" weight-set "$cg" "$orig") || fail "restore: $out"
        [ "$(cat "$mnt$cg/cpu.weight")" = "$orig" ] || fail "not restored: $(cat "$mnt$cg/cpu.weight")"
        systemctl stop $unit
        echo "ok: unit cgroup through SetUnitProperties, restored to $orig"
else
        fail "no systemd path: is dbus running? ($(val cgroup.why))"
fi

# 3. libcgroup path, +cpu in the parent
p=/affinityd-levers-$$
mkdir "$mnt$p" "$mnt$p/child" || fail "mkdir"
trap 'rmdir "$mnt$p/child" "$mnt$p" 2>/dev/null' EXIT
grep -qw cpu "$mnt$p/cgroup.subtree_control" && fail "new parent already hands cpu down?"
[ "$("$tool" weight-get "$p/child")" = 100 ] || fail "weight-get child"
out=$("$tool" weight-set "$p/child" 50) || fail "weight-set child: $out"
echo "$out"
case "$out" in *"enabled +cpu in $mnt$p/cgroup.subtree_control"*"libcgroup: $mnt$p/child/cpu.weight=50"*) ;;
*) fail "unexpected: $out";; esac
grep -qw cpu "$mnt$p/cgroup.subtree_control" || fail "+cpu not in subtree_control"
[ "$(cat "$mnt$p/child/cpu.weight")" = 50 ] || fail "child cpu.weight"
"$tool" weight-set "$p/child" 100 >/dev/null || fail "restore child"
[ "$(cat "$mnt$p/child/cpu.weight")" = 100 ] || fail "child not restored"
echo "ok: +cpu enabled in the parent, cpu.weight through libcgroup, restored"

# 4. sched_features
f=$(val features.path)
[ "$("$tool" feature-get GENTLE_FAIR_SLEEPERS)" = on ] || fail "GENTLE_FAIR_SLEEPERS not on at start"
[ "$("$tool" feature-set GENTLE_FAIR_SLEEPERS off)" = changed ] || fail "feature-set off"
grep -qw NO_GENTLE_FAIR_SLEEPERS "$f" || fail "kernel list does not say NO_GENTLE_FAIR_SLEEPERS"
[ "$("$tool" feature-set GENTLE_FAIR_SLEEPERS on)" = changed ] || fail "feature-set on"
grep -qw GENTLE_FAIR_SLEEPERS "$f" && ! grep -qw NO_GENTLE_FAIR_SLEEPERS "$f" || fail "not restored"
err=$("$tool" feature-set RUN_TO_PARITY off 2>&1) && fail "RUN_TO_PARITY accepted on $(uname -r)"
case "$err" in *"arrived in 6.6"*) ;; *) fail "RUN_TO_PARITY error: $err";; esac
echo "ok: GENTLE_FAIR_SLEEPERS toggled and restored; RUN_TO_PARITY refused: $err"

# 5. tunables
orig=$("$tool" sysctl-get debug:migration_cost_ns) || fail "get migration_cost_ns"
"$tool" sysctl-set debug:migration_cost_ns 250000 >/dev/null || fail "set migration_cost_ns"
[ "$(cat /sys/kernel/debug/sched/migration_cost_ns)" = 250000 ] || fail "migration_cost_ns not set"
"$tool" sysctl-set debug:migration_cost_ns "$orig" >/dev/null || fail "restore migration_cost_ns"
[ "$(cat /sys/kernel/debug/sched/migration_cost_ns)" = "$orig" ] || fail "migration_cost_ns not restored"
orig=$("$tool" sysctl-get kernel.sched_schedstats) || fail "get schedstats"
"$tool" sysctl-set kernel.sched_schedstats 1 >/dev/null || fail "set schedstats"
[ "$(cat /proc/sys/kernel/sched_schedstats)" = 1 ] || fail "schedstats not set"
"$tool" sysctl-set kernel.sched_schedstats "$orig" >/dev/null || fail "restore schedstats"
[ "$(cat /proc/sys/kernel/sched_schedstats)" = "$orig" ] || fail "schedstats not restored"
echo "ok: debug:migration_cost_ns and kernel.sched_schedstats set and restored"

echo "PASS: levers in the VM"
exit 0
