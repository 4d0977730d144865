/* SPDX-License-Identifier: GPL-2.0-or-later */
/* STUB: placeholder so the tree links; replaced by its owner. */
#include <errno.h>
#include <stdlib.h>
#include "topology.h"

cpumask_t topology_usable(const struct topology *t) { cpumask_t m = cpumask_andnot(&t->online, &t->isolated); return cpumask_andnot(&m, &t->nohz_full); }
int topology_load(const char *root, struct topology **ret) { return -EOPNOTSUPP; }
struct topology *topology_free(struct topology *t) { if (t) { free(t->cpus); free(t); } return NULL; }
struct topology *topology_new_synthetic(int n_cpus, const struct topo_cpu *cpus) { return NULL; }
