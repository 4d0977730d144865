#!/bin/bash
# Integration: as root outside systemd with tracefs not mounted,
# the daemon mounts it on /sys/kernel/tracing as systemd does at boot, says
# so in the log and in `affctl status`, and its wake-up source is not "no
# tracefs". Under systemd (sd_booted) it must leave the mount alone instead.
# Runs in a private mount namespace, so the machine's own mounts are never
# touched: the test unmounts tracefs there first.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
require_cmd jq
require_cmd unshare
if [ -z "${AFFD_TRACEFS_NS:-}" ]; then
        unshare --mount --propagation private true 2>/dev/null ||
                skip "no mount namespaces here (unshare --mount failed): cannot unmount tracefs privately"
        trap - EXIT
        AFFD_TRACEFS_NS=1 exec unshare --mount --propagation private "$BASH" "$0" "$@"
fi

target=/sys/kernel/tracing
[ -d "$target" ] || skip "this kernel has no $target directory to mount tracefs on"
while mountpoint -q "$target"; do umount "$target" || fail "cannot unmount $target in the private namespace"; done

cfg=$(mktemp -d /tmp/affd-cfg.XXXXXX)
trap 'cleanup; rm -rf "$cfg"' EXIT
scope_enter   # the daemon under test acts on this test's processes only
mkdir -p "$cfg/policies.d"
cp "$top_srcdir/policies/policies.d/50-pingpong.policy" "$cfg/policies.d/"
printf '[Daemon]\nInterval=200ms\n' >"$cfg/affinityd.conf"

start_daemon "$cfg"
log=$RUNDIR/daemon.log
status=$(ctl status --json)
tracefs=$(jq -r '.capabilities.tracefs' <<<"$status")
src=$(jq -r '.capabilities.wake_source' <<<"$status")
echo "# tracefs: $tracefs; wake source: $src"

if [ -d /run/systemd/system ]; then
        # booted with systemd: not ours to mount
        ! mountpoint -q "$target" || fail "mounted tracefs under systemd"
        [ "$tracefs" = "left to systemd" ] || fail "status says tracefs '$tracefs' under systemd"
        echo "# ok: under systemd tracefs was left alone"
        exit 0
fi
mountpoint -q "$target" || { cat "$log"; fail "tracefs not mounted on $target by the daemon"; }
grep -q "mounted tracefs on $target" "$log" || { cat "$log"; fail "the log does not say tracefs was mounted"; }
[[ $tracefs == "mounted by affinityd on $target"* ]] || fail "status says tracefs '$tracefs'"
[[ $src != *tracefs* ]] || fail "wake source still blames tracefs: $src"

# a second start finds it mounted and says nothing about mounting
stop_daemon
: >"$log"
start_daemon "$cfg"
[ "$(ctl status --json | jq -r '.capabilities.tracefs')" = mounted ] || fail "second start: tracefs status not 'mounted'"
! grep -q "mounted tracefs" "$log" || fail "second start mounted tracefs again"

# --no-perf: no reason to mount
stop_daemon
umount "$target"
: >"$log"
start_daemon "$cfg" --no-perf
! mountpoint -q "$target" || fail "mounted tracefs with --no-perf"
echo "# ok: mounted once, reported, left alone with --no-perf"
