#!/bin/bash
# Install what the tests need, build, and run the whole test suite:
# unit and integration tests (make check), the same again with background
# load on every CPU (stress-ng --cpu $(nproc) --cpu-load 40: production
# machines are never quiet, and no verdict may hang on an idle CPU), the
# same built with ASan and UBSan, distcheck, and the end-to-end tests in a
# real systemd VM (make check-vm). Must run as root on Debian 12.
# Durations on the 2-CPU development machine: make check ~5 min, under
# load ~6 min, ASan ~6 min, distcheck ~6 min, check-vm ~7 min.
#
# AFFINITYD_SKIP_VM=1 leaves out the VM (it needs ~10 min under TCG);
# AFFINITYD_SKIP_CONTAINER=1 the container test (make check-container:
# it builds the package and the image, a few minutes);
# AFFINITYD_SKIP_SANITIZERS=1 the sanitizer build; AFFINITYD_SKIP_LOADED=1
# the run under load.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        # build + test dependencies (the first line is also in the README's first command)
        apt-get install -y -qq --no-install-recommends \
                build-essential autoconf automake libtool pkg-config \
                libsystemd-dev libcgroup-dev libnl-3-dev libnl-genl-3-dev libinih-dev libjson-c-dev \
                linux-perf rt-tests util-linux procps jq debhelper dpkg-dev \
                mariadb-server sysbench redis-server redis-tools python3-prometheus-client stress-ng prometheus \
                python3-yaml podman runc mmdebstrap >/dev/null
fi

# perf tracepoints need tracefs; systemd mounts it at boot (sys-kernel-tracing.mount),
# a bare container may not have it. Mounted here, it is unmounted at the end.
MOUNTED_TRACEFS=
if [ "$(id -u)" = 0 ] && ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
        if mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
                MOUNTED_TRACEFS=yes
        else
                echo "note: tracefs not mountable; perf tests will use the fallback"
        fi
fi

# One affinityd per machine (affinityd(8), /run/affinityd.lock): the tests
# run their own daemons, so one the quick start left running is stopped for
# the run and started again at the end, under systemd. One running in the
# foreground (outside systemd) cannot be restarted from here as it was: we
# say so and stop, rather than end it.
installed_ctl=$(command -v affctl || true)
RESTART_SERVICE= STRESS_PID=
on_exit() {
        [ -z "$STRESS_PID" ] || kill "$STRESS_PID" 2>/dev/null || true
        [ -z "$MOUNTED_TRACEFS" ] || umount /sys/kernel/tracing 2>/dev/null ||
                echo "note: /sys/kernel/tracing, mounted for the tests, is still in use: left mounted"
        [ -z "$RESTART_SERVICE" ] || { systemctl start affinityd && echo "note: affinityd.service started again"; }
}
trap on_exit EXIT
if [ "$(id -u)" = 0 ] && [ -d /run/systemd/system ] && systemctl is-active --quiet affinityd 2>/dev/null; then
        systemctl stop affinityd
        echo "note: affinityd.service stopped for the tests (one instance per machine); started again at the end"
        RESTART_SERVICE=yes
elif [ -n "$installed_ctl" ] && running=$("$installed_ctl" status --json 2>/dev/null | sed -n 's/^ *"pid":\([0-9]*\),*$/\1/p' | head -1) &&
     [ -n "$running" ]; then
        echo "affinityd is running in the foreground (PID $running); the tests run their own daemons and only one"
        echo "may run per machine: stop it (Ctrl-C, or kill $running) and run this again."
        exit 1
fi

./bootstrap.sh >/dev/null 2>&1 || ./bootstrap.sh
# Out of the source tree, beside the quick start's build/; a tree configured
# in place (an older quick start) is used as it is, since configure refuses
# a second, out-of-tree build of a configured source tree.
if [ -f "$top/config.status" ] && [ -z "${AFFINITYD_BUILD_DIR:-}" ]; then
        echo "note: $top is configured in place; building there"
        build=$top
else
        build=${AFFINITYD_BUILD_DIR:-$top/build-ci}
fi
mkdir -p "$build"
cd "$build"
"$top/configure" -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var
make -j"$(nproc)" >/dev/null
status=0
# Tests run one at a time: the integration tests measure real placement on
# this 2-CPU machine, and two of them at once would each see the other as load.
# Show why: every failing test's log.
failed_logs() {
        for f in $(grep -l '^:test-result: FAIL\|^:test-result: ERROR' $(find "$1" -name '*.trs') 2>/dev/null); do
                echo "===== ${f%.trs}.log"; cat "${f%.trs}.log"
        done
}
# Each part says how long it took (bash's SECONDS), so a CI log shows
# where the time goes against its limit.
part_start() { PART_T0=$SECONDS; }
took() { echo "($(( SECONDS - PART_T0 )) s)"; }
part_start
make -j1 check || status=$?
if [ $status -ne 0 ]; then
        failed_logs .
        exit $status
fi
echo "make check: ok $(took)"
# Again, with every CPU 40 % busy: the tests take their expectations from
# this machine in the same run, and each daemon under test is scoped to its
# test's cgroup, so the load must change no verdict.
if [ -z "${AFFINITYD_SKIP_LOADED:-}" ]; then
        stress-ng --cpu "$(nproc)" --cpu-load 40 --timeout 0 >/dev/null 2>&1 &
        STRESS_PID=$!
        part_start
        echo "make check again, with stress-ng --cpu $(nproc) --cpu-load 40 beside it (pid $STRESS_PID)"
        make -j1 check || status=$?
        kill "$STRESS_PID" 2>/dev/null || true
        wait "$STRESS_PID" 2>/dev/null || true
        STRESS_PID=
        if [ $status -ne 0 ]; then
                echo "make check under load failed:"
                failed_logs .
                exit $status
        fi
        echo "make check under load: ok $(took)"
fi
# The same suite built with AddressSanitizer and UBSan, any report fatal
# (-fno-sanitize-recover: UBSan would otherwise print and go on), beside
# the plain build. AFFINITYD_SKIP_SANITIZERS=1 leaves it out.
if [ -z "${AFFINITYD_SKIP_SANITIZERS:-}" ]; then
        san=${AFFINITYD_SANITIZER_BUILD_DIR:-$top/build-asan}
        part_start
        mkdir -p "$san"
        (
                cd "$san"
                "$top/configure" -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var \
                        CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
                        LDFLAGS="-fsanitize=address,undefined"
                make -j"$(nproc)" >/dev/null
                ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 make -j1 check
        ) || {
                echo "the ASan + UBSan build's make check failed:"
                failed_logs "$san"
                exit 1
        }
        echo "make check with ASan + UBSan: ok $(took)"
fi
part_start
make distcheck >distcheck.log 2>&1 || {
        echo "make distcheck failed:"; tail -60 distcheck.log
        find . -path '*/_build/*' -name '*.log' -exec grep -l '^FAIL\|^ERROR' {} + 2>/dev/null |
                while read -r f; do echo "===== $f"; tail -20 "$f"; done
        exit 1
}
echo "make distcheck: ok $(took)"
if [ -z "${AFFINITYD_SKIP_VM:-}" ]; then
        part_start
        make check-vm
        echo "make check-vm: ok $(took)"
fi
if [ -z "${AFFINITYD_SKIP_CONTAINER:-}" ]; then
        part_start
        make check-container
        echo "make check-container: ok $(took)"
fi
