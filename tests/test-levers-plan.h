/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Struct-literal scaffolding for the steal detector and plan_levers()
 * tests: a two-CPU snapshot, policy defaults, one planning interval, and a
 * tiny simulated applier that turns SET/RELEASE into struct managed
 * entries the way the real one reports them.
 */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"
#include "plan/plan.h"
#include "test-levers-util.h"

static inline struct policy levers_policy(const char *name, enum detector d, enum policy_action a) {
        return (struct policy) {
                .name = (char *) name, .file = (char *) "test.policy", .line = 1,
                .enabled = true, .priority = 50, .detector = d, .action = a,
                .match = { .kthreads = MATCH_ANY, .realtime = MATCH_ANY },
                .util_min = -1, .migrations_min_per_s = -1, .wake_rate_min_per_s = -1,
                .run_delay_min_ms_per_s = -1, .steal_min = -1, .group_util_max = -1, .cpu_weight = -1,
        };
}

static inline struct config levers_config(struct policy *p, size_t n, unsigned hysteresis) {
        return (struct config) {
                .daemon = { .hysteresis_intervals = hysteresis, .max_actions_per_interval = 4 },
                .policies = p, .n_policies = n,
        };
}

struct sim_applier {
        struct managed items[64];
        size_t n;
};

static inline void sim_apply(struct sim_applier *sim, const struct action_list *out, uint64_t now) {
        for (size_t i = 0; i < out->n; i++) {
                const struct action *a = &out->items[i];
                char key[128];

                if (!action_target_key(a, key, sizeof(key)))
                        continue;
                if (a->verb == VERB_RELEASE) {
                        for (size_t j = 0; j < sim->n; j++)
                                if (streq(sim->items[j].key, key)) {
                                        sim->items[j] = sim->items[--sim->n];
                                        break;
                                }
                        continue;
                }
                struct managed *m = &sim->items[sim->n++];
                *m = (struct managed) { .type = a->type, .since_usec = now };
                memcpy(m->key, key, sizeof(m->key));
                memcpy(m->policy, a->policy, sizeof(m->policy));
                memcpy(m->reason, a->reason, sizeof(m->reason));
                if (a->type == ACT_SCHED_FEATURE) {
                        if (strlen(a->name) + 4 > sizeof(m->current))
                                abort();
                        strcpy(m->current, a->enable ? "" : "NO_");
                        strcat(m->current, a->name);
                }
                else if (a->type == ACT_SYSCTL)
                        snprintf(m->current, sizeof(m->current), "%s", a->value);
                else if (a->type == ACT_CGROUP_WEIGHT)
                        snprintf(m->current, sizeof(m->current), "%" PRIu64, a->weight);
        }
}

/* One interval of plan_levers() alone; out is cleared first. */
static inline int levers_plan_once(struct plan_state *state, const struct snapshot *snap, const struct config *c,
                                   const struct findings *f, const struct sim_applier *sim, uint64_t now,
                                   unsigned budget, struct action_list *out) {
        struct plan_input in = {
                .snap = snap, .config = c, .findings = f,
                .managed = sim ? sim->items : NULL, .n_managed = sim ? sim->n : 0, .now_usec = now,
        };
        struct plan_ctx ctx = { .state = state, .in = &in, .out = out, .actions_left = budget };

        out->n = 0;
        return plan_levers(&ctx);
}

static inline const struct action *find_action(const struct action_list *out, enum action_verb verb,
                                               const char *key) {
        char k[300];

        for (size_t i = 0; i < out->n; i++)
                if (out->items[i].verb == verb && action_target_key(&out->items[i], k, sizeof(k)) && streq(k, key))
                        return &out->items[i];
        return NULL;
}
