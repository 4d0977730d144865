/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "test-plan-machines.h"
#include "test-util.h"

const char *const plan_machine_names[_PLAN_MACHINE_MAX] = {
        [PLAN_MACHINE_2S8C] = "2s8c-smt2-numa2",
        [PLAN_MACHINE_DUAL_CCD] = "dual-ccd",
        [PLAN_MACHINE_HYBRID] = "hybrid-8p16e",
        [PLAN_MACHINE_256] = "smt256",
};

/* SMT2 with siblings last: cores_per_llc cores share an L3, cores_per_node a node. */
static int siblings_last(struct topo_cpu *cpus, int n_cores, int cores_per_llc, int cores_per_node) {
        for (int c = 0; c < 2 * n_cores; c++) {
                int core = c % n_cores;

                cpus[c] = (struct topo_cpu) { .online = true, .core_id = core,
                                              .llc_id = core / cores_per_llc * cores_per_llc,
                                              .package_id = core / cores_per_node, .node = core / cores_per_node,
                                              .capacity = 1024 };
        }
        return 2 * n_cores;
}

int plan_machine_build(enum plan_machine which, struct topo_cpu *cpus, struct topology *topo) {
        int n = 0, llcs = 1, nodes = 1, cores = 0, capacities = 1;

        memset(cpus, 0, sizeof(*cpus) * PLAN_MACHINE_CPUS_MAX);
        switch (which) {
        case PLAN_MACHINE_2S8C:
                n = siblings_last(cpus, 16, 8, 8);
                llcs = 2, nodes = 2, cores = 16;
                break;
        case PLAN_MACHINE_DUAL_CCD:
                n = siblings_last(cpus, 16, 8, 16);
                llcs = 2, cores = 16;
                break;
        case PLAN_MACHINE_HYBRID:
                n = 32;
                for (int c = 0; c < n; c++)
                        cpus[c] = (struct topo_cpu) { .online = true, .core_id = c < 16 ? c / 2 * 2 : c,
                                                      .capacity = c < 16 ? 1024 : 512 };
                cores = 24, capacities = 2;
                break;
        case PLAN_MACHINE_256:
                n = siblings_last(cpus, 128, 16, 64);
                llcs = 8, nodes = 2, cores = 128;
                break;
        default:
                ASSERT_TRUE(false);
        }
        *topo = (struct topology) {
                .n_cpus = n,
                .cpus = cpus,
                .online = cpumask_first_n(n),
                .self_allowed = cpumask_first_n(n),
                .n_llcs = llcs, .n_nodes = nodes, .n_cores = cores, .n_capacities = capacities,
        };
        return n;
}
