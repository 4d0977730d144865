# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# topo-rules.sh - the placement rules of the topology checks, judged from a
# machine's own /sys (sourced by e2e.sh in the VM, and by
# tests/vm-topo-rules.sh on a fixture tree in `make check`).
#
# The *_verdict functions print one line per broken rule and nothing when
# the placement is right; topo_self_test feeds them placements that break
# the rules on this very machine, so a check that cannot fail is caught.
# Every path is below $TOPO_ROOT (default: the real /sys).

TOPO_SYS_CPU=${TOPO_ROOT:-}/sys/devices/system/cpu
TOPO_SYS_NODE=${TOPO_ROOT:-}/sys/devices/system/node

single_cpu() { [[ $1 =~ ^[0-9]+$ ]]; }

# cpu_list_expand: the tests' own, one directory up (check-vm.sh puts it
# there in the guest too)
# shellcheck source=tests/cpus.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cpus.sh"

# The online CPUs, one per line.
topo_cpus() { cpu_list_expand "$(cat "$TOPO_SYS_CPU/online")"; }
# topo_core CPU: the CPU's physical core, named by its thread_siblings_list.
topo_core() { cat "$TOPO_SYS_CPU/cpu$1/topology/thread_siblings_list"; }
# topo_node CPU: the NUMA node whose cpulist has the CPU, or "-" (no NUMA).
topo_node() {
    local n
    for n in "$TOPO_SYS_NODE"/node[0-9]*; do
        [ -r "$n/cpulist" ] || continue
        cpu_list_expand "$(cat "$n/cpulist")" | grep -qx "$1" && { echo "${n##*/node}"; return; }
    done
    echo -
}
# One line per physical core (its sibling list) / node of the online CPUs.
topo_cores() { local c; for c in $(topo_cpus); do topo_core "$c"; done | sort -u; }
topo_nodes() { local c; for c in $(topo_cpus); do topo_node "$c"; done | sort -u; }
# topo_node_cpus NODE: the online CPUs of NODE, one per line.
topo_node_cpus() { local c; for c in $(topo_cpus); do [ "$(topo_node "$c")" != "$1" ] || echo "$c"; done; }

# The machine's counts: "cpus=N cores=N packages=N nodes=N smt=N".
topo_counts() {
    local c smt=1 w
    for c in $(topo_cpus); do
        w=$(cpu_list_expand "$(topo_core "$c")" | wc -l)
        [ "$w" -le "$smt" ] || smt=$w
    done
    printf 'cpus=%s cores=%s packages=%s nodes=%s smt=%s\n' "$(topo_cpus | wc -l)" "$(topo_cores | wc -l)" \
        "$(for c in $(topo_cpus); do cat "$TOPO_SYS_CPU/cpu$c/topology/physical_package_id"; done | sort -u | wc -l)" \
        "$(topo_nodes | wc -l)" "$smt"
}

# One line per online CPU: package, core_id, siblings, node.
topo_describe() {
    local c
    for c in $(topo_cpus); do
        printf 'cpu%s package %s core_id %s siblings %s node %s\n' "$c" \
            "$(cat "$TOPO_SYS_CPU/cpu$c/topology/physical_package_id")" \
            "$(cat "$TOPO_SYS_CPU/cpu$c/topology/core_id")" "$(topo_core "$c")" "$(topo_node "$c")"
    done
}

# shared_core_verdict WHAT CPU...: each CPU holds one placed WHAT (hogs,
# pairs). Breaks the rule: two on one core while a core has none.
shared_core_verdict() {
    local what=$1 c k idle=
    declare -A on_core
    shift
    for c in "$@"; do
        k=$(topo_core "$c")
        on_core[$k]="${on_core[$k]:+${on_core[$k]},}$c"
    done
    while read -r k; do [ -n "${on_core[$k]:-}" ] || idle="$idle $k"; done < <(topo_cores)
    [ -n "$idle" ] || return 0
    for k in "${!on_core[@]}"; do
        [[ ${on_core[$k]} != *,* ]] || echo "$what on CPUs ${on_core[$k]} share the core of siblings $k while core(s)$idle have none"
    done
}

# hog_verdict CPU...: one CPU per hog. Breaks the rule: a hog not on a
# single CPU, two hogs on one CPU, two hogs on one core while a core has
# none.
hog_verdict() {
    local c placed=()
    declare -A seen
    for c in "$@"; do
        single_cpu "$c" || { echo "a hog not pinned to one CPU (Cpus_allowed_list $c)"; continue; }
        [ -z "${seen[$c]:-}" ] || echo "two hogs on CPU $c"
        seen[$c]=1
        placed+=("$c")
    done
    shared_core_verdict hogs "${placed[@]}"
}

# pair_verdict "A B" "A B"...: each argument one pair's two Cpus_allowed_list
# values. Breaks the rule: a pair not on one single CPU, a pair's CPUs on
# two nodes, two pairs on one core while a core has none.
pair_verdict() {
    local p a b placed=()
    for p in "$@"; do
        read -r a b <<< "$p"
        if ! single_cpu "$a" || [ "$a" != "$b" ]; then
            echo "pair not co-located on one CPU: $a and $b"
            if single_cpu "$a" && single_cpu "$b" && [ "$(topo_node "$a")" != "$(topo_node "$b")" ]; then
                echo "pair split across NUMA nodes $(topo_node "$a") (CPU $a) and $(topo_node "$b") (CPU $b)"
            fi
            continue
        fi
        placed+=("$a")
    done
    shared_core_verdict pairs "${placed[@]}"
}

# topo_self_test NHOGS: the verdicts must reject placements that break the
# rules on this machine: NHOGS hogs with two on the siblings of the first
# core, two pairs on those siblings, a pair with a member on each of two
# nodes. Prints one line per placement tried; returns 1 if one was
# accepted (or the machine has no SMT to break the rule with).
topo_self_test() {
    local nhogs=$1 first second wrong=() k c out rc=0
    read -r first second < <(cpu_list_expand "$(topo_cores | sed -n 1p)" | paste -sd ' ')
    [ -n "$second" ] || { echo "self-test: core $(topo_cores | sed -n 1p) has no SMT sibling: no SMT here"; return 1; }
    wrong=("$first" "$second")
    while read -r k; do
        [ "${#wrong[@]}" -lt "$nhogs" ] || break
        wrong+=("$(cpu_list_expand "$k" | sed -n 1p)")
    done < <(topo_cores | tail -n +2)
    out=$(hog_verdict "${wrong[@]}")
    echo "self-test: hogs on ${wrong[*]}: ${out:-ACCEPTED}" | paste -sd ';'
    [ -n "$out" ] || rc=1
    out=$(pair_verdict "$first $first" "$second $second")
    echo "self-test: pairs on $first and $second: ${out:-ACCEPTED}" | paste -sd ';'
    [ -n "$out" ] || rc=1
    if [ "$(topo_nodes | wc -l)" -ge 2 ]; then
        c=$(topo_node_cpus "$(topo_nodes | tail -n1)" | sed -n 1p)
        out=$(pair_verdict "$first $c")
        echo "self-test: a pair on $first and $c: ${out:-ACCEPTED}" | paste -sd ';'
        [ -n "$out" ] || rc=1
    fi
    return "$rc"
}
