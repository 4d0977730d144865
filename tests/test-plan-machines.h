/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The machines of tests/machines.c as struct-literal topologies, for the
 * planner tests (test-plan-hog.c, test-plan-pair.c, test-plan-spread.c).
 * The shapes are written here by hand from the real machines, not
 * derived from machines.c's generator, so a generator bug cannot hide a
 * planner one. CPU numbering as Linux does it on each (see machines.h).
 */

#include "sample/topology.h"

enum plan_machine {
        /* 2 sockets x 8 cores x SMT2, a node and an L3 per socket: core k is
         * CPUs k and k + 16; cores 0-7 socket/node 0 (LLC id 0), 8-15 socket/node 1 (LLC id 8). */
        PLAN_MACHINE_2S8C,
        /* a 16-core dual-CCD part, SMT2, one node: core k is CPUs k and k + 16;
         * cores 0-7 one L3 (LLC id 0), 8-15 the other (LLC id 8). */
        PLAN_MACHINE_DUAL_CCD,
        /* Intel 8P+16E: P core k is CPUs 2k, 2k + 1 (capacity 1024), E cores
         * CPUs 16-31 (512); one LLC, one node. */
        PLAN_MACHINE_HYBRID,
        /* 2 sockets x 4 CCDs x 16 cores x SMT2 (256 CPUs): core k is CPUs k
         * and k + 128; LLC id 16 * (k / 16), node and socket k / 64. */
        PLAN_MACHINE_256,
        _PLAN_MACHINE_MAX,
};

#define PLAN_MACHINE_CPUS_MAX 256

extern const char *const plan_machine_names[_PLAN_MACHINE_MAX];

/* Fill cpus (PLAN_MACHINE_CPUS_MAX entries) and *topo (pointing at cpus): all
 * online, nothing isolated; returns the CPU count. */
int plan_machine_build(enum plan_machine which, struct topo_cpu *cpus, struct topology *topo);
