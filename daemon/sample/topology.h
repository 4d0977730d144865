/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * CPU topology as read from sysfs below a root prefix: online CPUs, SMT
 * siblings (core), last-level cache, package and NUMA node of each CPU,
 * isolated and nohz_full CPUs, and the daemon's own allowed CPUs.
 * Re-read on CPU hotplug (the manager watches for it).
 */

#include "common/cpumask.h"

/* What topology_load() could not read keeps: the first few notes, then a count. */
#define TOPOLOGY_NOTES_MAX 8
#define TOPOLOGY_NOTE_MAX  224

struct topo_cpu {
        bool online;
        int core_id;     /* unique across packages: first CPU of thread_siblings_list */
        int llc_id;      /* first CPU of the LLC's shared_cpu_list */
        int package_id;  /* physical_package_id */
        int node;        /* NUMA node, 0 if the machine has none */
        /* Compute capacity on cpu_capacity's scale, 1024 for the fastest CPUs:
         * cpuN/cpu_capacity (arm64, big.LITTLE), else 1024 for Intel hybrid's
         * cpu_core CPUs and 512 for its cpu_atom ones (an order, not a
         * measurement), else 1024. Placement uses it as an order: the
         * hog and spread planners compare it, the pair planner weighs a
         * slower CPU below a shared core (plan-pair.c capacity_cost()). */
        int capacity;
};

/* The capacity of the fastest CPUs (struct topo_cpu's capacity). */
#define TOPOLOGY_CAPACITY_MAX 1024

struct topology {
        int n_cpus;             /* highest possible CPU + 1 */
        struct topo_cpu *cpus;  /* n_cpus entries, index = CPU number */
        cpumask_t online;
        cpumask_t isolated;     /* /sys/devices/system/cpu/isolated */
        cpumask_t nohz_full;    /* /sys/devices/system/cpu/nohz_full */
        cpumask_t self_allowed; /* the daemon's own allowed CPUs */
        int n_llcs, n_nodes, n_cores;
        int n_capacities;       /* distinct capacities among online CPUs: 2 on a hybrid machine */
        /* Files that were there but could not be read or parsed, each with
         * what was assumed instead ("<path>: malformed; CPU 3 taken as its
         * own core"). The daemon logs them and `affctl status` shows them. */
        char notes[TOPOLOGY_NOTES_MAX][TOPOLOGY_NOTE_MAX];
        int n_notes;
        int n_notes_dropped;    /* notes past TOPOLOGY_NOTES_MAX */
};

/* CPUs the hardware and boot options leave for placement: online, not
 * isolated, not nohz_full. Planners use snapshot_usable(), which also
 * leaves out the CPUs other placers own (coexist.h). */
cpumask_t topology_usable(const struct topology *t);

/*
 * Read the topology below root. Only the CPU set is required: the first of
 * possible, present and online that is there and parses; without one,
 * -ENOENT (or the last -errno), and -E2BIG for more than CPUMASK_MAX CPUs
 * (refused, not truncated). Everything else that cannot be read falls back
 * (each CPU its own core, package 0, the package's LLC, node 0, no CPU
 * isolated or nohz_full) and leaves a note in t->notes.
 */
int topology_load(const char *root, struct topology **ret);
struct topology *topology_free(struct topology *t);

/* For `affctl status`: counts, isolated/nohz_full/usable lists and the notes. */
struct json_object;
int topology_to_json(const struct topology *t, struct json_object **ret);

/*
 * Build a topology from a compact description, for tests:
 * n CPUs, each given (core_id, llc_id, package_id, node, capacity; 0 for
 * 1024). All online.
 */
struct topology *topology_new_synthetic(int n_cpus, const struct topo_cpu *cpus);
