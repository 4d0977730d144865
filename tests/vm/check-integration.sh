#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-integration.sh <abs_srcdir> <abs_builddir> [TEST...] -
# `make check-vm-integration`: the integration tests that start a daemon
# (tests/*.sh, as `make check` runs them on this machine) run again inside
# the Debian 12 + systemd guest of run-in-vm.sh: another host, with its own
# costs (QEMU TCG: switches and wake-ups ~10x slower, a split pair's cost
# unlike any real host's), cgroup v2 as the only hierarchy, the Debian 6.1
# kernel, systemd as PID 1. A test that carries a figure from one host, or
# a timing from a fast one, fails here.
#
# The source tree and the build tree are copied into the share (9p) and the
# tests run there with top_srcdir/top_builddir set as automake's harness
# sets them; nothing is installed into the guest's /. The guest gets the
# packages these tests need (AFFINITYD_VM_EXTRA_PKGS, a separate cached
# image): python3 with the Prometheus client, MariaDB, sysbench and Redis.
#
# Default TEST list: every tests/*.sh that starts a daemon and needs no
# podman, prometheus or the host's cgroup v1 (see INTEG_TESTS below).
# Prints one PASS/FAIL/SKIP line per test with its time, the failed tests'
# output tail, and "N passed, N failed, N skipped". Exit 0 only if none
# failed.
#
# Env: AFFINITYD_VM_TIMEOUT (VM lifetime, default 3000 s), AFFINITYD_VM_SMP
# (default 2), AFFINITYD_VM_KEEP=1 (keep the share with each test's log);
# the other run-in-vm.sh / build-image.sh knobs pass through.
set -euo pipefail

log() { printf 'check-integration: %s\n' "$*" >&2; }
[ $# -ge 2 ] || { echo "usage: $0 <abs_srcdir> <abs_builddir> [test.sh...]" >&2; exit 2; }
SRCDIR=$(cd "$1" && pwd)
BUILDDIR=$(cd "$2" && pwd)
shift 2
HERE=$SRCDIR/tests/vm
CACHE=${AFFINITYD_VM_CACHE:-/var/tmp/affinityd-vmtest}
export AFFINITYD_VM_CACHE=$CACHE
export AFFINITYD_VM_TIMEOUT=${AFFINITYD_VM_TIMEOUT:-3000}
export AFFINITYD_VM_EXTRA_PKGS=${AFFINITYD_VM_EXTRA_PKGS:-python3,python3-prometheus-client,mariadb-server,sysbench,redis-server,redis-tools}

# The tests that start a daemon of their own and can run in the guest. Not
# here: container.sh (podman), monitoring.sh (promtool), levers-cgroup-v1.sh
# (the host's v1 tree), the unit-test binaries (they test no host).
INTEG_TESTS="apply-daemon.sh early-pass.sh early-pass-hold.sh hogs-integration.sh
pairs-integration.sh servers-integration.sh daemon-metrics.sh daemon-status.sh
daemon-owners.sh daemon-tracefs.sh daemon-machines.sh"
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || read -r -d '' -a TESTS <<<"$INTEG_TESTS" || true

# The workloads and the binaries the tests start (check_PROGRAMS).
make -C "$BUILDDIR" -s all >/dev/null
make -C "$BUILDDIR" -s check TESTS= >/dev/null

mkdir -p "$CACHE/runs"
SHARE=$(mktemp -d "$CACHE/runs/integ.XXXXXX")
chmod 755 "$SHARE"
cleanup() {
    if [ -n "${AFFINITYD_VM_KEEP:-}" ]; then log "share dir kept: $SHARE"; else rm -rf "$SHARE"; fi
}
trap cleanup EXIT
# The build tree may sit inside the source tree (build/, build-ci/): copy
# the source without any build tree, then the build tree on its own.
tar -C "$SRCDIR" --exclude=.git --exclude='./build*' --exclude='./*.tar.gz' -cf - . | { mkdir "$SHARE/src"; tar -C "$SHARE/src" -xf -; }
tar -C "$BUILDDIR" --exclude='./vm-build' --exclude='./*.tar.gz' -cf - . | { mkdir "$SHARE/build"; tar -C "$SHARE/build" -xf -; }
mkdir "$SHARE/out"
printf '%s\n' "${TESTS[@]}" >"$SHARE/tests.txt"

# In the guest: tracefs as systemd mounts it, then each test as automake's
# harness runs it (exit 77 = skip), its output to out/NAME.log.
cat >"$SHARE/run.sh" <<'GUEST'
set -u
cd /mnt/share
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing || true
echo "guest: $(nproc) CPUs, kernel $(uname -r), $(awk '$3 == "cgroup2" { print "cgroup v2 at " $2; exit }' /proc/mounts)"
echo "guest: busiest at start: $(ps -eo comm=,pcpu= --sort=-pcpu | head -n 3 | awk '{ printf "%s %s%%  ", $1, $2 }')"
command -v perf >/dev/null && perf bench sched pipe -l 20000 2>/dev/null | awk '/ops\/sec/ { print "guest: perf bench sched pipe, split: " $1 " ops/s" }'
command -v perf >/dev/null && taskset -c 0 perf bench sched pipe -l 20000 2>/dev/null | awk '/ops\/sec/ { print "guest: perf bench sched pipe, one CPU: " $1 " ops/s" }'
while read -r t; do
    t0=$(date +%s.%N)
    top_srcdir=/mnt/share/src top_builddir=/mnt/share/build \
        timeout 900 bash "/mnt/share/src/tests/$t" >"out/$t.log" 2>&1 </dev/null
    rc=$?
    dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    case $rc in 0) v=PASS ;; 77) v=SKIP ;; *) v="FAIL (exit $rc)" ;; esac
    echo "$v: $t (${dt} s)" | tee -a out/results.txt
done <tests.txt
GUEST

t0=$(date +%s)
rc=0
bash "$HERE/run-in-vm.sh" "$SHARE" 'bash /mnt/share/run.sh' || rc=$?
log "guest run ended with $rc after $(( $(date +%s) - t0 )) s"

pass=0 failn=0 skipn=0
if [ -f "$SHARE/out/results.txt" ]; then
    while read -r line; do
        case $line in
            PASS:*) pass=$((pass + 1)) ;;
            SKIP:*) skipn=$((skipn + 1)); t=${line#SKIP: }; t=${t%% *}
                    echo "--- $t: $(grep -m1 '^SKIP' "$SHARE/out/$t.log" || true)" ;;
            FAIL*) failn=$((failn + 1)); t=${line#*: }; t=${t%% *}
                   echo "--- $t, last 60 lines:"; tail -n 60 "$SHARE/out/$t.log" ;;
        esac
    done <"$SHARE/out/results.txt"
    echo "=== in the guest:"; cat "$SHARE/out/results.txt"
fi
ran=$((pass + failn + skipn))
[ "$ran" -eq "${#TESTS[@]}" ] || { log "only $ran of ${#TESTS[@]} tests reported (guest exit $rc)"; failn=$((failn + ${#TESTS[@]} - ran)); }
echo "$pass passed, $failn failed, $skipn skipped"
[ "$failn" -eq 0 ]
