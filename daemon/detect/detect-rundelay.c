/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run-delay detector ([select-idle]): threads that spend too long runnable but
 * not running. Report only: the tail (p99 wake-up latency) is what a
 * placement change hurts first, so affinityd shows these numbers next to
 * its other findings and never acts on them by itself.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"

int detect_rundelay(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out) {
        double least;

        if (!s || !c || !out)
                return -EINVAL;
        /* skip the lookup for quiet threads */
        least = detect_prefilter(c, DETECT_RUNDELAY, 1.0);

        for (size_t i = 0; i < snapshot_n_active(s); i++) {
                const struct task *t = snapshot_active(s, i);
                const struct policy *p;
                struct finding f;
                double min;
                int r;

                if (!t->have_rates || !t->have_schedstat)
                        continue;
                if (t->run_delay_ms_per_s < least)
                        continue;

                p = detect_policy_for(c, s, t, DETECT_RUNDELAY, self_pid, NULL);
                if (!p || p->detector != DETECT_RUNDELAY)
                        continue;
                min = detect_run_delay_min_ms_per_s(p);
                if (!(t->run_delay_ms_per_s > min))
                        continue;

                detect_task_finding(&f, DETECT_RUNDELAY, p, t);
                f.demand = task_demand(t);
                f.migrations_per_s = t->have_migrations ? t->migrations_per_s : 0;
                f.run_delay_ms_per_s = t->run_delay_ms_per_s;
                snprintf(f.note, sizeof(f.note), "run delay %.1fms/s > %.1fms/s (util %.0f%%)",
                         t->run_delay_ms_per_s, min, t->util * 100);

                r = findings_add(out, &f);
                if (r < 0)
                        return r;
        }
        return 0;
}
