/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Machines the daemon must start on, written as fake /proc and /sys trees
 * at check time (tests/machines.c) instead of thousands of committed files.
 * Each machine is a short spec; machine_write() turns it into the files a
 * kernel of the given version shows, with the formats that differ between
 * kernels (6.1 pads nohz_full's "(null)" to the CPU count, 6.18 prints an
 * empty line; /proc/schedstat version 15 vs 17) and what hotplug does
 * (an offline CPU has no topology/ or cache/ directory and is missing from
 * the sibling, cache, node lists, /proc/stat and /proc/schedstat).
 *
 * CPU numbering follows what Linux does on each kind of machine:
 *   MACHINE_SIBLINGS_LAST      x86 servers and AMD: every core's first thread,
 *                              package by package, then all second threads
 *                              (2 x 8 x 2: CPU 0's sibling is 16).
 *   MACHINE_SIBLINGS_ADJACENT  Intel hybrid clients: a P core's threads are
 *                              n and n+1, the E cores follow.
 *   MACHINE_LITTLE_FIRST       arm64 big.LITTLE: the little cores come first.
 *
 * The expected counts in each spec are written by hand, not computed by
 * the generator, so a test comparing them with what the daemon read can fail.
 */

#include <stdbool.h>

enum machine_numbering {
        MACHINE_SIBLINGS_LAST,
        MACHINE_SIBLINGS_ADJACENT,
        MACHINE_LITTLE_FIRST,
};

struct machine_expect {
        int cpus;       /* highest possible CPU + 1 */
        int online;
        int cores;      /* distinct cores among online CPUs */
        int llcs;
        int nodes;
        int usable;     /* online, not isolated, not nohz_full */
        int capacities; /* distinct CPU capacities: 2 on a hybrid machine */
};

struct machine {
        const char *name;
        const char *what;          /* the real machine it stands for */
        int packages;
        int llcs;                  /* L3 caches per package (AMD CCDs) */
        int cores;                 /* big (or all) cores per LLC */
        int threads;               /* SMT threads of a big core: 1 or 2 */
        int e_cores;               /* small single-thread cores per LLC, in clusters of 4 sharing an L2 */
        int nodes;                 /* NUMA nodes, each an equal run of cores; 0: no node directory */
        int absent;                /* possible, not present CPUs (a VM's hotplug slots) */
        const char *offline;       /* present CPUs that are offline, a CPU list */
        const char *isolated;      /* isolcpus= */
        const char *nohz_full;     /* nohz_full= */
        enum machine_numbering numbering;
        bool no_cache;             /* no cache/ directories (VMs, some arm64 boards) */
        bool hybrid_pmu;           /* /sys/devices/cpu_core/cpus and cpu_atom/cpus (Intel hybrid) */
        bool capacity;             /* cpuN/cpu_capacity (arm64; x86 has none) */
        struct machine_expect expect;
};

/* The kernels whose formats machine_write() knows, NULL-terminated. */
extern const char *const machine_kernels[];

/* All machines, terminated by an entry with name NULL. */
extern const struct machine machines[];

const struct machine *machine_find(const char *name);

/*
 * Write the machine's /sys and /proc below root (an existing directory) as
 * kernel ("6.1", "6.18") shows them. Returns 0 or -errno (-EINVAL for an
 * unknown kernel or a spec the generator cannot lay out).
 */
int machine_write(const struct machine *m, const char *kernel, const char *root);
