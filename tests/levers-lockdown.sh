#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Integration on the real machine: unavailable levers are reported with
# their cause, and nothing crashes.
#  1. as things are (debugfs usually not mounted here): probe works, every
#     unavailable lever has a cause line, cgroups still work;
#  2. in a private mount namespace with --allow-mount, so the backend
#     mounts debugfs and securityfs itself: under kernel lockdown
#     (integrity/confidentiality, as on the development machines) the
#     features cause names the lockdown state read from
#     /sys/kernel/security/lockdown, and a feature write fails cleanly with
#     it; without lockdown the list is read and a feature reads back.
# Nothing is ever written to sched_features here.
set -u

tool="${top_builddir:-.}/tests/levers-tool"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ -x "$tool" ] || fail "$tool not built"

# 1. as the machine is
probe=$("$tool" probe) || fail "probe failed"
printf '%s\n' "$probe" | grep -v '^json='
val() { printf '%s\n' "$probe" | sed -n "s/^$1=//p"; }
if [ "$(val features.readable)" != 1 ]; then
        [ -n "$(val features.why)" ] || fail "features unavailable without a cause"
fi
if [ "$(val sysctl.debug_tunables)" != 1 ]; then
        [ -n "$(val sysctl.why)" ] || fail "debug tunables unavailable without a cause"
fi
if [ "$(val cgroup.version)" = 0 ] || [ "$(val cgroup.writable)" != 1 ]; then
        [ -n "$(val cgroup.why)" ] || fail "cgroup unavailable without a cause"
fi
printf '%s\n' "$probe" | grep -q '^json={"cgroup":' || fail "no JSON caps"

[ "$(id -u)" = 0 ] || skip "part 2 needs root (mount namespace)"
unshare --mount --propagation private true 2>/dev/null || skip "no mount namespaces here"

# 2. private mount namespace; the backend mounts debugfs and securityfs itself
ns=$(unshare --mount --propagation private sh -c '
        tool=$1
        umount /sys/kernel/debug 2>/dev/null
        umount /sys/kernel/security 2>/dev/null
        echo "--- probe"
        "$tool" --allow-mount probe
        echo "--- feature-get"
        "$tool" --allow-mount feature-get NEXT_BUDDY 2>&1
        echo "rc=$?"
        echo "--- lockdown-file"
        cat /sys/kernel/security/lockdown 2>&1
' sh "$tool") || fail "namespace run failed: $ns"
printf '%s\n' "$ns" | grep -v '^json='

nval() { printf '%s\n' "$ns" | sed -n "s/^$1=//p" | head -n1; }
lockdown_line=$(printf '%s\n' "$ns" | sed -n '/^--- lockdown-file/{n;p;}')
state=$(printf '%s\n' "$lockdown_line" | sed -n 's/.*\[\(.*\)\].*/\1/p')
[ -n "$state" ] || skip "securityfs has no lockdown file here: $lockdown_line"
[ "$(nval lockdown)" = "$state" ] || fail "probe says lockdown '$(nval lockdown)', file says [$state]"

if [ "$state" != none ]; then
        [ "$(nval features.readable)" = 0 ] || fail "features readable under lockdown [$state]?"
        why=$(nval features.why)
        case "$why" in
        "lockdown: /sys/kernel/security/lockdown says [$state]; EPERM on /sys/kernel/debug/sched/features"*) ;;
        *) fail "features cause does not name the lockdown: '$why'";;
        esac
        printf '%s\n' "$ns" | grep -q "^error: Operation not permitted: lockdown: /sys/kernel/security/lockdown says \[$state\]" ||
                fail "feature-get did not fail with the lockdown cause"
        printf '%s\n' "$ns" | grep -q '^rc=1$' || fail "feature-get should exit 1"
        # debugfs tunables are refused the same way, with the same cause
        case "$(nval sysctl.why)" in *lockdown*) ;; *) fail "debug tunables cause: '$(nval sysctl.why)'";; esac
        echo "PASS: lockdown [$state] reported as the cause; nothing crashed"
else
        [ "$(nval features.readable)" = 1 ] || fail "no lockdown, yet features unreadable: $(nval features.why)"
        printf '%s\n' "$ns" | grep -Eq '^(on|off)$' || fail "feature-get NEXT_BUDDY did not read back"
        echo "PASS: no lockdown; features readable ($(nval features.count) names)"
fi
exit 0
