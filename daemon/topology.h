/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * CPU topology as read from sysfs below a root prefix: online CPUs, SMT
 * siblings (core), last-level cache, package and NUMA node of each CPU,
 * isolated and nohz_full CPUs, and the daemon's own allowed CPUs.
 * Re-read on CPU hotplug (the manager watches for it).
 */

#include "common/cpumask.h"

struct topo_cpu {
        bool online;
        int core_id;     /* unique across packages: first CPU of thread_siblings_list */
        int llc_id;      /* first CPU of the LLC's shared_cpu_list */
        int package_id;  /* physical_package_id */
        int node;        /* NUMA node, 0 if the machine has none */
};

struct topology {
        int n_cpus;             /* highest possible CPU + 1 */
        struct topo_cpu *cpus;  /* n_cpus entries, index = CPU number */
        cpumask_t online;
        cpumask_t isolated;     /* /sys/devices/system/cpu/isolated */
        cpumask_t nohz_full;    /* /sys/devices/system/cpu/nohz_full */
        cpumask_t self_allowed; /* the daemon's own allowed CPUs */
        int n_llcs, n_nodes, n_cores;
};

/* CPUs a placement may use: online, not isolated, not nohz_full. */
cpumask_t topology_usable(const struct topology *t);

int topology_load(const char *root, struct topology **ret);
struct topology *topology_free(struct topology *t);

/*
 * Build a topology from a compact description, for tests:
 * n CPUs, each given (core_id, llc_id, package_id, node). All online.
 */
struct topology *topology_new_synthetic(int n_cpus, const struct topo_cpu *cpus);
