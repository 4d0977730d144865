#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-vm.sh <abs_srcdir> <abs_builddir> - `make check-vm`: install the built
# tree into a Debian 12 + systemd VM and run the end-to-end checks (e2e.sh).
#
#  1. build-image.sh: builds or reuses the cached image (needs root the first time)
#  2. make install DESTDIR=<share>/stage from the build tree (prefix /usr,
#     sysconfdir /etc, localstatedir /var: what a distribution package does;
#     a tree configured otherwise is rebuilt in <builddir>/vm-build)
#  3. the project's test workloads (tests/workloads/{pingpong,hog}), when
#     built, go to <stage>/usr/lib/affinityd/tests/
#  4. run-in-vm.sh, once per suite: the guest unpacks the stage into /,
#     reloads systemd and runs e2e.sh; the affinityd journal comes back
#     through the share. Suite "base": 2 vCPUs, every lever and restore.
#     Suite "topo": a second boot with a QEMU CPU topology (2 sockets x 2
#     cores x 2 threads, 1 core a socket on a host of under 4 CPUs; one
#     NUMA node per socket), where real hogs and
#     ping-pong pairs must be placed by the SMT and NUMA rules
#  5. prints one PASS/FAIL/SKIP line per check (topo's prefixed "topo:") and
#     "N passed, N failed, N skipped" over both
#
# Exit: 0 only if every check passed (skips allowed); 1 otherwise.
# On failure: the last 100 journal lines of affinityd.service and the VM
# console tail are printed.
#
# Env knobs: AFFINITYD_VM_CACHE (see build-image.sh), AFFINITYD_VM_KEEP=1 (keep
# the share dir with stage/, out/journal-*.txt), AFFINITYD_VM_TIMEOUT (VM
# lifetime, default 720 s), E2E_BUDGET (default 540 s) and the other E2E_*
# knobs of e2e.sh, which are passed into the guest; AFFINITYD_VM_SUITES
# (default "base topo"), AFFINITYD_VM_TOPO_TIMEOUT (default 600 s),
# E2E_TOPO_BUDGET (default 420 s) and AFFINITYD_VM_TOPO_CORES (cores a
# socket, see TOPO_CORES) for the topology boot.
set -euo pipefail

T0=$(date +%s.%N)
log() { printf 'check-vm: %s\n' "$*" >&2; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

[ $# -eq 2 ] || { echo "usage: $0 <abs_srcdir> <abs_builddir>" >&2; exit 2; }
SRCDIR=$(cd "$1" && pwd)
BUILDDIR=$(cd "$2" && pwd)
HERE=$SRCDIR/tests/vm
CACHE=${AFFINITYD_VM_CACHE:-/var/tmp/affinityd-vmtest}
export AFFINITYD_VM_CACHE=$CACHE
VM_TIMEOUT=${AFFINITYD_VM_TIMEOUT:-720}
E2E_BUDGET=${E2E_BUDGET:-540}
SUITES=${AFFINITYD_VM_SUITES:-base topo}
# The topology boot. Under TCG -cpu max is an AMD model and qemu 7.2 cannot
# emulate topoext, so the guest saw threads=2 as 8 cores of one thread each
# (measured: every thread_siblings_list a single CPU, qemu warns "This family
# of AMD CPU doesn't support hyperthreading"); vendor=GenuineIntel makes the
# guest read the topology from the Intel CPUID leaves qemu fills from -smp.
TOPO_CPU=max,vendor=GenuineIntel
# Cores a socket: 2 (8 vCPUs) on a host of 4 CPUs or more, 1 (4 vCPUs)
# below. Under TCG every vCPU is a host thread: at 4 vCPUs a host CPU the
# topology boot froze mid-run or hung booting in CI runs and rehearsals
# on 2-CPU hosts, while the 2-vCPU base boot never did. Two SMT threads a core and
# two sockets, one NUMA node each, stay: they are what the topology checks
# place by. nproc is the CPUs this harness may run on; a runner held to
# fewer by a cgroup quota sets AFFINITYD_VM_TOPO_CORES=1.
TOPO_CORES=${AFFINITYD_VM_TOPO_CORES:-$([ "$(nproc)" -ge 4 ] && echo 2 || echo 1)}
[[ $TOPO_CORES =~ ^[1-9]$ ]] || { log "AFFINITYD_VM_TOPO_CORES=$TOPO_CORES: want 1-9"; exit 2; }
TOPO_SMP=$((4 * TOPO_CORES)),sockets=2,cores=$TOPO_CORES,threads=2
TOPO_NUMA=2
TOPO_WANT="cpus=$((4 * TOPO_CORES)) cores=$((2 * TOPO_CORES)) packages=2 nodes=2 smt=2"
TOPO_TIMEOUT=${AFFINITYD_VM_TOPO_TIMEOUT:-600}
E2E_TOPO_BUDGET=${E2E_TOPO_BUDGET:-420}

SHARE=
cleanup() {
    if [ -n "$SHARE" ]; then
        if [ -n "${AFFINITYD_VM_KEEP:-}" ]; then log "share dir kept: $SHARE"; else rm -rf "$SHARE"; fi
    fi
}
trap cleanup EXIT

# ---- 1. image
t=$(date +%s.%N)
IMG=$(bash "$HERE/build-image.sh") || { log "build-image.sh failed"; exit 1; }
T_IMAGE=$(elapsed "$t")
log "image $IMG ready in $T_IMAGE s"

# ---- 2. install into the stage
mkdir -p "$CACHE/runs"
SHARE=$(mktemp -d "$CACHE/runs/share.XXXXXX")
chmod 755 "$SHARE"
mkdir -p "$SHARE/stage" "$SHARE/out" "$SHARE/e2e"
t=$(date +%s.%N)

# The value of a make variable as configured in a build tree's Makefile.
makevar() { sed -n "s/^$2 = //p" "$1/Makefile" | head -n1; }
configured_for_vm() {
    [ -f "$1/Makefile" ] &&
        [ "$(makevar "$1" prefix)" = /usr ] &&
        [ "$(makevar "$1" sysconfdir)" = /etc ] &&
        [ "$(makevar "$1" localstatedir)" = /var ]
}

BUILD=$BUILDDIR
if ! configured_for_vm "$BUILD"; then
    # Paths are compiled in (SYSCONFDIR, VENDORDIR): the VM needs the same
    # layout a package would have, so configure a separate tree for it.
    BUILD=$BUILDDIR/vm-build
    log "$BUILDDIR is not configured with --prefix=/usr --sysconfdir=/etc --localstatedir=/var; building $BUILD"
    if ! configured_for_vm "$BUILD"; then
        mkdir -p "$BUILD"
        (cd "$BUILD" && "$SRCDIR/configure" -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var) \
            > "$SHARE/out/configure.log" 2>&1 || {
            tail -n 30 "$SHARE/out/configure.log" >&2
            log "configure for the VM failed (an in-tree configured srcdir cannot host a VPATH build: configure with --prefix=/usr --sysconfdir=/etc --localstatedir=/var instead)"
            exit 1
        }
    fi
fi
if ! make -C "$BUILD" -j"$(nproc)" install DESTDIR="$SHARE/stage" > "$SHARE/out/install.log" 2>&1; then
    tail -n 40 "$SHARE/out/install.log" >&2
    log "make install DESTDIR=... failed in $BUILD"
    exit 1
fi

# Test workloads: built on demand when the tree has rules for them (they may
# be check_PROGRAMS, which `make all` skips); absent ones make e2e.sh fall
# back to stress-ng / perf bench or skip.
for w in pingpong hog; do
    make -C "$BUILD" -s "tests/workloads/$w" > /dev/null 2>&1 || true
    if [ -x "$BUILD/tests/workloads/$w" ] && [ -f "$BUILD/tests/workloads/$w" ]; then
        install -D -m 0755 "$BUILD/tests/workloads/$w" "$SHARE/stage/usr/lib/affinityd/tests/$w"
        log "workload $w: included"
    else
        log "workload $w: not built (e2e.sh uses a stock workload or skips)"
    fi
done
# The Debian package, for the debian-package check (install, run, purge):
# built from the committed tree (git archive HEAD) where dpkg-buildpackage
# is installed (tests/run-all.sh installs it), else that check skips.
if [[ " $SUITES " != *" base "* ]]; then
    log "suite base not run: no package built"
elif [ -f "$SRCDIR/debian/control" ] && command -v dpkg-buildpackage >/dev/null &&
   git -C "$SRCDIR" rev-parse HEAD >/dev/null 2>&1; then
    pkg=$(mktemp -d "$CACHE/runs/deb.XXXXXX")
    mkdir "$pkg/src"
    if git -C "$SRCDIR" archive HEAD | tar -x -C "$pkg/src" &&
       (cd "$pkg/src" && dpkg-buildpackage -us -uc -b) > "$SHARE/out/deb-build.log" 2>&1; then
        mkdir -p "$SHARE/deb"
        cp "$pkg"/affinityd_*.deb "$SHARE/deb/"
        export E2E_DEB=/mnt/share/deb/$(cd "$SHARE/deb" && ls affinityd_*.deb | head -n1)
        log "package $(basename "$E2E_DEB"): built"
    else
        tail -n 30 "$SHARE/out/deb-build.log" >&2
        log "dpkg-buildpackage failed (the debian-package check will fail)"
        export E2E_DEB=/mnt/share/deb/build-failed.deb
    fi
    rm -rf "$pkg"
else
    log "no dpkg-buildpackage (or no git checkout): the debian-package check skips"
fi
cp "$HERE/e2e.sh" "$HERE/topo-rules.sh" "$SHARE/e2e/"
cp "$HERE/../cpus.sh" "$SHARE/"        # topo-rules.sh sources it from ../
cp -r "$HERE/policies" "$SHARE/e2e/"
T_INSTALL=$(elapsed "$t")
log "staged $(find "$SHARE/stage" -type f | wc -l) files in $T_INSTALL s"

# ---- 3. the guest side
# Every exported E2E_* knob is passed through to e2e.sh in the guest.
{
    echo '#!/bin/bash'
    echo '# Written by check-vm.sh; runs as root in the VM, cwd = the share.'
    for v in $(compgen -e | grep '^E2E_' | grep -vx E2E_BUDGET || true); do
        printf 'export %s=%q\n' "$v" "${!v}"
    done
    printf 'export E2E_BUDGET=%q\n' "$E2E_BUDGET"
    cat <<'EOF'
set -uo pipefail
S=$AFFINITYD_VM_SHARE
# guest.sh SUITE [BUDGET]: e2e.sh's E2E_SUITE; results and journals go to
# out/*-SUITE*.
export E2E_SUITE=${1:-base}
export E2E_BUDGET=${2:-$E2E_BUDGET}
echo "=== guest: installing the staged tree"
# tar, not `cp -a stage/. /`: Debian 12 is merged-/usr, so / has symlinks
# lib -> usr/lib etc., and cp refuses to copy stage/lib (a directory from
# systemdsystemunitdir=/lib/systemd/system) over the /lib symlink.
# --keep-directory-symlink follows them; --no-overwrite-dir keeps the modes of
# existing system directories; --owner/--group: files as root, whoever built.
tar -C "$S/stage" --owner=0 --group=0 -cf - . |
    tar -C / --keep-directory-symlink --no-overwrite-dir -xf - || { echo "guest: unpacking the stage failed"; exit 1; }
ldconfig
# What a package's maintainer scripts would do for these file types.
if ls "$S"/stage/usr/lib/sysusers.d/*.conf >/dev/null 2>&1; then timeout 60 systemd-sysusers; fi
for f in "$S"/stage/usr/lib/tmpfiles.d/*.conf; do
    [ -e "$f" ] && timeout 60 systemd-tmpfiles --create "/usr/lib/tmpfiles.d/${f##*/}"
done
timeout 120 systemctl daemon-reload || echo "guest: systemctl daemon-reload failed or hung"
# dbus-daemon must see a newly installed bus policy (org.affinityd1.conf).
systemctl is-active -q dbus && { timeout 60 systemctl reload dbus || echo "guest: systemctl reload dbus failed or hung"; }
rm -f "$S/out/results-$E2E_SUITE"
E2E_RESULTS=$S/out/results-$E2E_SUITE timeout -k 10 $((E2E_BUDGET + 60)) bash "$S/e2e/e2e.sh"
rc=$?
[ "$rc" = 124 ] && echo "guest: e2e.sh hit its overall timeout"
journalctl -u affinityd --no-pager > "$S/out/journal-affinityd-$E2E_SUITE.txt" 2>&1
journalctl -b --no-pager -o short-monotonic | tail -n 400 > "$S/out/journal-boot-tail-$E2E_SUITE.txt" 2>&1
exit "$rc"
EOF
} > "$SHARE/guest.sh"

# ---- 4. run, one boot per suite
# boot SUITE: one run-in-vm.sh boot of that suite; its exit code.
boot() {
    local suite=$1
    case $suite in
        base)
            AFFINITYD_VM_IMAGE=$IMG AFFINITYD_VM_TIMEOUT=$VM_TIMEOUT AFFINITYD_VM_SAVE=$SHARE/out/vm-$suite \
                bash "$HERE/run-in-vm.sh" "$SHARE" 'bash ./guest.sh base' ;;
        topo)
            echo "=== topology boot: -cpu $TOPO_CPU -smp $TOPO_SMP, $TOPO_NUMA NUMA nodes"
            AFFINITYD_VM_IMAGE=$IMG AFFINITYD_VM_TIMEOUT=$TOPO_TIMEOUT AFFINITYD_VM_SAVE=$SHARE/out/vm-$suite \
                AFFINITYD_VM_CPU=$TOPO_CPU AFFINITYD_VM_SMP=$TOPO_SMP AFFINITYD_VM_NUMA=$TOPO_NUMA \
                bash "$HERE/run-in-vm.sh" "$SHARE" \
                "E2E_TOPO_WANT='$TOPO_WANT' bash ./guest.sh topo $E2E_TOPO_BUDGET" ;;
    esac
}
declare -A VMRC T_VM BOOT_RETRIED
for suite in $SUITES; do
    case $suite in
        base|topo) ;;
        *) log "unknown suite '$suite' in AFFINITYD_VM_SUITES (base, topo)"; exit 2 ;;
    esac
    t=$(date +%s.%N)
    set +e
    boot "$suite"
    VMRC[$suite]=$?
    # 126: the guest never started the command (run-in-vm.sh's boot
    # watchdog), so no check ran and none can have failed; 127: the guest
    # froze as a whole (its heartbeat stopped; a check that fails or hangs
    # reports through its own timeout and leaves the heartbeat beating):
    # boot once more. The retry is reported in the summary; a second hang
    # or freeze fails the suite.
    # (watchdog.txt: the harness's, not a command's own exit 126 or 127)
    if grep -qx 'boot-hung\|froze' "$SHARE/out/vm-$suite/watchdog.txt" 2>/dev/null; then
        BOOT_RETRIED[$suite]=${VMRC[$suite]}
        log "suite $suite: $([ "${VMRC[$suite]}" = 126 ] && echo "the boot hung before any check ran" || echo "the guest froze mid-run"); booting once more"
        rm -rf "$SHARE/out/vm-$suite.try1"
        mv "$SHARE/out/vm-$suite" "$SHARE/out/vm-$suite.try1"
        rm -f "$SHARE/out/results-$suite"
        boot "$suite"
        VMRC[$suite]=$?
    fi
    set -e
    T_VM[$suite]=$(elapsed "$t")
done

# ---- 5. summary
PASSED=0 FAILED=0 SKIPPED=0
FAILED_SUITES=
for suite in $SUITES; do
    RESULTS=$SHARE/out/results-$suite
    prefix=
    [ "$suite" = base ] || prefix="$suite: "
    failed_before=$FAILED
    echo
    echo "=== affinityd VM end-to-end results${prefix:+ ($suite, -smp $TOPO_SMP, $TOPO_NUMA nodes)}"
    if [ -s "$RESULTS" ]; then
        while IFS=$'\t' read -r st name secs reason; do
            case $st in
                PASS) PASSED=$((PASSED + 1)) ;;
                FAIL) FAILED=$((FAILED + 1)) ;;
                SKIP) SKIPPED=$((SKIPPED + 1)) ;;
                INFO) printf 'INFO %s%s: %s\n' "$prefix" "$name" "$reason"; continue ;;
            esac
            printf '%s %s%s (%s s)%s\n' "$st" "$prefix" "$name" "$secs" "${reason:+: $reason}"
        done < "$RESULTS"
    fi
    # A run that died before every check reported is a failure of its own.
    case ${BOOT_RETRIED[$suite]:-} in
        126) echo "INFO ${prefix}vm: the first boot hung before any check ran (run-in-vm.sh exit 126); booted again" ;;
        127) echo "INFO ${prefix}vm: the first boot froze mid-run, its heartbeat stopped (run-in-vm.sh exit 127); its results were dropped and it booted again" ;;
    esac
    watchdog=$(cat "$SHARE/out/vm-$suite/watchdog.txt" 2>/dev/null || true)
    case ${VMRC[$suite]}:$watchdog in
        0:|1:) ;;
        124:*) FAILED=$((FAILED + 1)); echo "FAIL ${prefix}vm: timed out" ;;
        125:*) FAILED=$((FAILED + 1)); echo "FAIL ${prefix}vm: harness failure (no exit code from the guest)" ;;
        # only a second boot ends here (the INFO line above says what the first did)
        126:boot-hung) FAILED=$((FAILED + 1)); echo "FAIL ${prefix}vm: the second boot hung before any check ran (no command started)" ;;
        127:froze) FAILED=$((FAILED + 1)); echo "FAIL ${prefix}vm: the second boot froze mid-run (no heartbeat)" ;;
        *) FAILED=$((FAILED + 1)); echo "FAIL ${prefix}vm: guest command exited ${VMRC[$suite]}" ;;
    esac
    if ! grep -q '^PASS\|^FAIL' "$RESULTS" 2>/dev/null; then
        FAILED=$((FAILED + 1))
        echo "FAIL ${prefix}vm: no check reported a result"
    fi
    if [ "${VMRC[$suite]}" = 1 ] && [ "$FAILED" = "$failed_before" ]; then
        FAILED=$((FAILED + 1))
        echo "FAIL ${prefix}vm: e2e.sh failed without a failed check (see output above)"
    fi
    [ "$FAILED" = "$failed_before" ] || FAILED_SUITES="$FAILED_SUITES $suite"
done

for suite in $FAILED_SUITES; do
    echo
    echo "=== journalctl -u affinityd --no-pager | tail -100 (guest, suite $suite)"
    if [ -s "$SHARE/out/journal-affinityd-$suite.txt" ]; then
        tail -n 100 "$SHARE/out/journal-affinityd-$suite.txt"
    else
        echo "(no journal came back)"
    fi
    # run-in-vm.sh printed the console tail as the boot ended, but a CI log
    # may keep only its end: repeat what shows where the guest stopped.
    if [ -s "$SHARE/out/journal-boot-tail-$suite.txt" ]; then
        echo "=== guest boot journal, last 40 lines (suite $suite)"
        tail -n 40 "$SHARE/out/journal-boot-tail-$suite.txt"
    fi
    echo "=== guest output, last 30 lines (suite $suite)"
    tail -n 30 "$SHARE/out/vm-$suite/output.txt" 2>/dev/null || echo "(no output came back)"
    echo "=== VM console, last 30 lines (suite $suite)"
    tail -n 30 "$SHARE/out/vm-$suite/console.txt" 2>/dev/null || echo "(no console log)"
    cat "$SHARE/out/vm-$suite/boot-info.txt" 2>/dev/null || echo "(no boot info: the guest never started the command)"
done

echo "check-vm: wall time $(elapsed "$T0") s (image $T_IMAGE s, install $T_INSTALL s$(for suite in $SUITES; do printf ', VM %s %s s' "$suite" "${T_VM[$suite]}"; done))"
if [ "$SKIPPED" != 0 ]; then
    echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
else
    echo "$PASSED passed, $FAILED failed"
fi
[ "$FAILED" = 0 ]
