#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Integration on the real machine: cgroup CPU weight through libcgroup on
# the cgroup v1 cpu controller (the development machines: v1 cpu, no
# systemd, no system bus). Creates a test cgroup, sets cpu.shares through
# levers_weight_set(), reads it back from the file, restores the exact
# original, removes the cgroup. Skips (77) without root or a writable v1
# cpu hierarchy; the v2 side is checked in the VM (tests/vm).
set -u

tool="${top_builddir:-.}/tests/levers-tool"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root to create a cgroup"
[ -x "$tool" ] || fail "$tool not built"

probe=$("$tool" probe) || fail "probe failed"
val() { printf '%s\n' "$probe" | sed -n "s/^$1=//p"; }
[ "$(val cgroup.version)" = 1 ] || skip "no cgroup v1 cpu controller here (version $(val cgroup.version): $(val cgroup.why))"
[ "$(val cgroup.writable)" = 1 ] || skip "v1 cpu hierarchy not writable: $(val cgroup.why)"
[ "$(val cgroup.backend)" = libcgroup ] || fail "real root must use libcgroup, got '$(val cgroup.backend)'"
mnt=$(val cgroup.mount)
[ -f "$mnt/cpu.shares" ] || fail "no $mnt/cpu.shares"

cg="/affinityd-test-$$"
dir="$mnt$cg"
cleanup() { [ -d "$dir" ] && rmdir "$dir"; }
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

echo "PASS: cgroup v1 cpu.shares set, read back and restored through libcgroup"
exit 0
