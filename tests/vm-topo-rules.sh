#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vm-topo-rules.sh - the placement rules of `make check-vm`'s topology
# boot (tests/vm/topo-rules.sh) on a fixture tree, so that they are known
# to reject what breaks them before a VM ever runs them. The fixture is
# 2 packages x 2 cores x SMT2, one node per package, numbered as Intel
# servers do: siblings N and N+4, package 0 = CPUs 0,1,4,5 (the VM's guest
# numbers siblings adjacently and packages in blocks).
set -euo pipefail
srcdir=${srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
TOPO_ROOT=$srcdir/tests/fixtures/sample/smt2x2x2
# shellcheck source=tests/vm/topo-rules.sh
. "$srcdir/tests/vm/topo-rules.sh"

failed=0
ok() { printf 'ok: %s\n' "$1"; }
bad() { printf 'FAIL: %s\n' "$1"; failed=1; }
# accepts WHAT VERDICT...: the verdict prints nothing.
accepts() { local what=$1 out; shift; out=$("$@"); if [ -z "$out" ]; then ok "accepts $what"; else bad "rejects $what: $out"; fi; }
rejects() { local what=$1 out; shift; out=$("$@"); if [ -n "$out" ]; then ok "rejects $what: $(paste -sd ';' <<< "$out")"; else bad "accepts $what"; fi; }

# is WHAT WANT HAVE
is() { if [ "$3" = "$2" ]; then ok "$1: $3"; else bad "$1: $3, want $2"; fi; }

is counts "cpus=8 cores=4 packages=2 nodes=2 smt=2" "$(topo_counts)"
is "core of CPU 5" "1,5" "$(topo_core 5)"
is "node of CPU 6" 1 "$(topo_node 6)"

accepts "4 hogs on 4 cores" hog_verdict 0 1 2 3
accepts "3 hogs on 3 cores" hog_verdict 4 5 2
accepts "8 hogs on 8 CPUs (no core idle)" hog_verdict 0 1 2 3 4 5 6 7
rejects "2 of 4 hogs on siblings 0,4" hog_verdict 0 4 1 2
rejects "2 of 2 hogs on siblings 1,5" hog_verdict 1 5
rejects "two hogs on one CPU" hog_verdict 2 2 3
rejects "a hog not pinned" hog_verdict 0-7 1 2
accepts "2 pairs on 2 cores" pair_verdict "0 0" "5 5"
rejects "2 pairs on siblings 2,6" pair_verdict "2 2" "6 6"
rejects "a pair split across nodes" pair_verdict "0 2" "1 1"
rejects "a pair not pinned" pair_verdict "0-7 0-7"
if out=$(topo_self_test 4); then ok "self-test rejects every wrong placement: $(paste -sd ' ' <<< "$out")"; else bad "self-test: $out"; fi
# On a machine without SMT the self-test cannot break the SMT rule: it must say so.
nosmt=$(mktemp -d)
trap 'rm -rf "$nosmt"' EXIT
mkdir -p "$nosmt/sys/devices/system/cpu/cpu0/topology" "$nosmt/sys/devices/system/cpu/cpu1/topology"
echo 0-1 > "$nosmt/sys/devices/system/cpu/online"
for c in 0 1; do
    echo "$c" > "$nosmt/sys/devices/system/cpu/cpu$c/topology/thread_siblings_list"
    echo 0 > "$nosmt/sys/devices/system/cpu/cpu$c/topology/physical_package_id"
    echo "$c" > "$nosmt/sys/devices/system/cpu/cpu$c/topology/core_id"
done
if out=$(TOPO_ROOT=$nosmt; . "$srcdir/tests/vm/topo-rules.sh"; topo_self_test 2); then bad "self-test passes without SMT"; else ok "self-test without SMT fails: $out"; fi
exit "$failed"
