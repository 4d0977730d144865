/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gen-machine: the machines of tests/machines.c for shell tests.
 *   gen-machine list                   one line per machine and kernel:
 *                                      NAME KERNEL CPUS ONLINE CORES LLCS NODES USABLE CAPACITIES
 *   gen-machine write NAME KERNEL DIR  write its /proc and /sys below DIR
 */
#include <stdio.h>
#include <string.h>

#include "machines.h"

int main(int argc, char **argv) {
        const struct machine *m;
        int r;

        if (argc == 2 && strcmp(argv[1], "list") == 0) {
                for (m = machines; m->name; m++)
                        for (const char *const *k = machine_kernels; *k; k++)
                                printf("%s %s %d %d %d %d %d %d %d\n", m->name, *k, m->expect.cpus,
                                       m->expect.online, m->expect.cores, m->expect.llcs, m->expect.nodes,
                                       m->expect.usable, m->expect.capacities);
                return 0;
        }
        if (argc != 5 || strcmp(argv[1], "write") != 0) {
                fprintf(stderr, "usage: gen-machine list | gen-machine write NAME KERNEL DIR\n");
                return 2;
        }
        m = machine_find(argv[2]);
        if (!m) {
                fprintf(stderr, "gen-machine: no machine %s\n", argv[2]);
                return 2;
        }
        r = machine_write(m, argv[3], argv[4]);
        if (r < 0) {
                fprintf(stderr, "gen-machine: %s %s: %s\n", argv[2], argv[3], strerror(-r));
                return 1;
        }
        return 0;
}
