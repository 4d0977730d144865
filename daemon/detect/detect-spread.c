/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Spread-group detector ([conservative-smp], its second half): the threads a
 * spread policy matches that each use part of a CPU (the seed's 4 processes
 * at ~40 %: 1019 s left to the scheduler, 842 s one per CPU). One finding
 * per policy with its busy members; the planner decides from the group's
 * migration rate over the window and the machine's load whether to place.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"

int detect_spread(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out) {
        _cleanup_free_ struct finding *groups = NULL;
        _cleanup_free_ bool *too_big = NULL;
        size_t n_groups = 0;
        double least;
        int r;

        if (!s || !c || !out)
                return -EINVAL;

        for (size_t i = 0; i < c->n_policies; i++)
                if (c->policies[i].enabled && c->policies[i].detector == DETECT_SPREAD)
                        n_groups++;
        if (n_groups == 0)
                return 0;
        /* cheap test before the policy lookup: most threads are idle */
        least = detect_prefilter(c, DETECT_SPREAD, 0.01);

        groups = calloc(c->n_policies, sizeof(*groups));
        too_big = calloc(c->n_policies, sizeof(*too_big));
        if (!groups || !too_big)
                return -ENOMEM;

        for (size_t i = 0; i < snapshot_n_active(s); i++) {
                const struct task *t = snapshot_active(s, i);
                const struct policy *p;
                struct finding *g;

                if (!t->have_rates || t->util < least)
                        continue;

                p = detect_policy_for(c, s, t, DETECT_SPREAD, self_pid, NULL);
                if (!p || p->detector != DETECT_SPREAD)
                        continue;
                if (p < c->policies || p >= c->policies + c->n_policies)
                        continue; /* not from this config: cannot index it */
                if (t->util < detect_util_min(p, DETECT_SPREAD))
                        continue;

                g = &groups[p - c->policies];
                if (g->n_members == 0) {
                        g->kind = DETECT_SPREAD;
                        g->policy = p;
                        g->last_cpu = -1;
                        memcpy(g->comm, t->comm, sizeof(g->comm));
                        g->comm[sizeof(g->comm) - 1] = 0;
                }
                if (g->n_members >= FINDING_MAX_MEMBERS) {
                        /* a spread group that large is a job for the scheduler:
                         * no finding, rather than the first 64 in list order
                         * placed and the rest left to float */
                        too_big[p - c->policies] = true;
                        continue;
                }

                g->members[g->n_members++] = t->id;
                g->combined_util += t->util;
                g->demand += task_demand(t);
                if (t->have_migrations)
                        g->migrations_per_s += t->migrations_per_s;
                if (t->have_schedstat)
                        g->run_delay_ms_per_s = MAX(g->run_delay_ms_per_s, t->run_delay_ms_per_s);
                g->cpus_seen = cpumask_or(&g->cpus_seen, &t->cpus_seen);
        }

        for (size_t i = 0; i < c->n_policies; i++) {
                struct finding *g = &groups[i];
                char cpus[64];

                /* a group of one is a hog or nothing: spreading needs two */
                if (g->n_members < 2 || too_big[i])
                        continue;

                g->util = g->combined_util / g->n_members;
                if (!cpumask_format_list(&g->cpus_seen, cpus, sizeof(cpus)))
                        strcpy(cpus, "...");
                snprintf(g->note, sizeof(g->note),
                         "group: %zu threads, util %.0f%% each, %.0f%% together, migrations %.2f/s on %s",
                         g->n_members, g->util * 100, g->combined_util * 100, g->migrations_per_s,
                         cpus[0] ? cpus : "?");

                r = findings_add(out, g);
                if (r < 0)
                        return r;
        }
        return 0;
}
