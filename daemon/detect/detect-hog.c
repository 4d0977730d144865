/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hog detector ([conservative-smp]): a thread that wants most of a CPU and
 * hops between CPUs. One finding per thread per window; whether it hopped
 * often enough over the longer policy window is for the planner to judge
 * (plan-hog.c keeps the decayed rate), because a hop happens every couple
 * of seconds while a window is one sampling interval.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"

int detect_hogs(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out) {
        double least;

        if (!s || !c || !out)
                return -EINVAL;
        /* cheap tests before the policy lookup: most threads are idle */
        least = detect_prefilter(c, DETECT_HOG, 0.05);

        for (size_t i = 0; i < snapshot_n_active(s); i++) {
                const struct task *t = snapshot_active(s, i);
                const struct policy *p;
                struct finding f;
                double demand, mig_min;
                char cpus[64];
                int r;

                if (!t->have_rates)
                        continue;
                demand = task_demand(t);
                if (demand < least)
                        continue;

                p = detect_policy_for(c, s, t, DETECT_HOG, self_pid, NULL);
                if (!p || p->detector != DETECT_HOG)
                        continue;
                if (demand < detect_util_min(p, DETECT_HOG))
                        continue;

                /* Without se.nr_migrations there is no rate; cpus_seen still shows hopping. */
                mig_min = detect_migrations_min_per_s(p, DETECT_HOG);
                if (t->have_migrations ? !(t->migrations_per_s > mig_min)
                                       : cpumask_weight(&t->cpus_seen) < 2)
                        continue;

                detect_task_finding(&f, DETECT_HOG, p, t);
                f.demand = demand;
                f.migrations_per_s = t->migrations_per_s;
                f.run_delay_ms_per_s = t->have_schedstat ? t->run_delay_ms_per_s : 0;
                if (!cpumask_format_list(&t->cpus_seen, cpus, sizeof(cpus)))
                        strcpy(cpus, "...");
                snprintf(f.note, sizeof(f.note),
                         "hog: util %.0f%% demand %.0f%% migrations %.2f/s run delay %.1fms/s on %s",
                         t->util * 100, demand * 100, t->migrations_per_s, f.run_delay_ms_per_s,
                         cpus[0] ? cpus : "?");

                r = findings_add(out, &f);
                if (r < 0)
                        return r;
        }
        return 0;
}
