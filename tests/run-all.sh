#!/bin/bash
# Install what the tests need, build, and run the whole test suite:
# unit and integration tests (make check), distcheck, and the end-to-end
# tests in a real systemd VM (make check-vm). Must run as root on Debian 12.
#
# AFFINITYD_SKIP_VM=1 leaves out the VM (it needs ~10 min under TCG).
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
                linux-perf rt-tests util-linux procps jq \
                mariadb-server sysbench redis-server redis-tools >/dev/null
fi

# perf tracepoints need tracefs; systemd mounts it at boot (sys-kernel-tracing.mount),
# a bare container may not have it.
if [ "$(id -u)" = 0 ] && ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || echo "note: tracefs not mountable; perf tests will use the fallback"
fi

# A daemon the quick start left running (under systemd, or in the foreground
# in another terminal) would act on the tests' own workloads, which are not
# in its configuration to leave alone: it is put in dry-run for the run and
# back as it was at the end. The tests' daemons use their own directories.
installed_ctl=$(command -v affctl || true)
if [ "$(id -u)" = 0 ] && [ -n "$installed_ctl" ] &&
   "$installed_ctl" status --json 2>/dev/null | grep -q '"dry_run":false'; then
        "$installed_ctl" dry-run on >/dev/null
        echo "note: the running affinityd is in dry-run until the tests end (it would act on their workloads)"
        trap '"$installed_ctl" dry-run off >/dev/null 2>&1 && echo "note: the running affinityd applies changes again"' EXIT
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
make -j1 check || status=$?
if [ $status -ne 0 ]; then
        # Show why: every failing test's log.
        for f in $(grep -l '^:test-result: FAIL\|^:test-result: ERROR' $(find . -name '*.trs') 2>/dev/null); do
                echo "===== ${f%.trs}.log"; cat "${f%.trs}.log"
        done
        exit $status
fi
make distcheck >distcheck.log 2>&1 || {
        echo "make distcheck failed:"; tail -60 distcheck.log
        find . -path '*/_build/*' -name '*.log' -exec grep -l '^FAIL\|^ERROR' {} + 2>/dev/null |
                while read -r f; do echo "===== $f"; tail -20 "$f"; done
        exit 1
}
echo "make distcheck: ok"
if [ -z "${AFFINITYD_SKIP_VM:-}" ]; then
        make check-vm
fi
