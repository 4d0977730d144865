/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The spread-group planner on struct literals (issue 5; seed 002: 4
 * processes at ~40 % ran 1019 s left to the scheduler, 842 s one per CPU).
 *
 * As in test-plan-hog.c, a small world plays sampler, detector and
 * applier around plan_run(); it holds a hog policy too, to check that a
 * group never lands on a hog's CPU.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan.h"
#include "test-util.h"

#define MAX_TASKS 32
#define MAX_CPUS 16

struct world {
        struct topo_cpu cpus[MAX_CPUS];
        struct topology topo;
        struct task tasks[MAX_TASKS];
        double mig_free[MAX_TASKS];
        bool in_group[MAX_TASKS];          /* covered by the spread policy */
        size_t n_tasks;
        struct policy pol[2];              /* 0: spread "workers", 1: hogs */
        struct config cfg;
        struct plan_state *state;
        struct managed managed[64];
        size_t n_managed;
        struct findings findings;
        struct action_list out;
        unsigned n_sets, n_releases, total_sets, total_releases;
        uint64_t now;
};

static struct policy policy_literal(const char *name, enum detector d, enum policy_action a) {
        return (struct policy) {
                .name = (char *) name,
                .enabled = true,
                .priority = 50,
                .detector = d,
                .action = a,
                .util_min = -1, .migrations_min_per_s = -1, .wake_rate_min_per_s = -1,
                .run_delay_min_ms_per_s = -1, .steal_min = -1, .group_util_max = -1,
                .cpu_weight = -1,
        };
}

static void world_init(struct world *w, int n_cpus) {
        memset(w, 0, sizeof(*w));
        for (int c = 0; c < n_cpus; c++)
                w->cpus[c] = (struct topo_cpu) { .online = true, .core_id = c };
        w->topo = (struct topology) {
                .n_cpus = n_cpus,
                .cpus = w->cpus,
                .online = cpumask_first_n(n_cpus),
                .self_allowed = cpumask_first_n(n_cpus),
                .n_llcs = 1, .n_nodes = 1, .n_cores = n_cpus,
        };
        w->pol[0] = policy_literal("workers", DETECT_SPREAD, ACTION_SPREAD);
        w->pol[1] = policy_literal("hogs", DETECT_HOG, ACTION_PIN);
        w->cfg = (struct config) {
                .daemon = {
                        .interval_usec = USEC_PER_SEC,
                        .max_actions_per_interval = 8,
                        .hysteresis_intervals = 3,
                        .cooldown_usec = 30 * USEC_PER_SEC,
                },
                .policies = w->pol,
                .n_policies = 2,
        };
        w->state = plan_state_new();
        ASSERT_TRUE(w->state);
        w->now = 1000 * USEC_PER_SEC;
}

static void world_done(struct world *w) {
        plan_state_free(w->state);
        findings_clear(&w->findings);
        action_list_clear(&w->out);
}

static struct task *add_task(struct world *w, pid_t tid, bool group, double util, double mig, int last_cpu) {
        struct task *t;

        ASSERT_TRUE(w->n_tasks < MAX_TASKS);
        t = &w->tasks[w->n_tasks];
        *t = (struct task) {
                .id = { .pid = tid, .tid = tid, .start_time = 1000 + tid },
                .last_cpu = last_cpu,
                .allowed = w->topo.online,
                .have_schedstat = true,
                .have_migrations = true,
                .have_rates = true,
                .util = util,
                .run_delay_ms_per_s = 10,
                .window_usec = USEC_PER_SEC,
        };
        snprintf(t->comm, sizeof(t->comm), group ? "worker%d" : "other%d", (int) tid);
        cpumask_set(&t->cpus_seen, last_cpu);
        w->mig_free[w->n_tasks] = mig;
        w->in_group[w->n_tasks] = group;
        w->n_tasks++;
        return t;
}

static struct task *task_of(struct world *w, pid_t tid) {
        for (size_t i = 0; i < w->n_tasks; i++)
                if (w->tasks[i].id.tid == tid)
                        return &w->tasks[i];
        return NULL;
}

static void remove_task(struct world *w, pid_t tid) {
        for (size_t i = 0; i < w->n_tasks; i++)
                if (w->tasks[i].id.tid == tid) {
                        size_t n = w->n_tasks - i - 1;
                        memmove(&w->tasks[i], &w->tasks[i + 1], n * sizeof(w->tasks[0]));
                        memmove(&w->mig_free[i], &w->mig_free[i + 1], n * sizeof(w->mig_free[0]));
                        memmove(&w->in_group[i], &w->in_group[i + 1], n * sizeof(w->in_group[0]));
                        w->n_tasks--;
                        return;
                }
}

static struct managed *managed_of(struct world *w, pid_t tid) {
        for (size_t i = 0; i < w->n_managed; i++)
                if (w->managed[i].task.tid == tid)
                        return &w->managed[i];
        return NULL;
}

static int pinned_cpu(struct world *w, pid_t tid) {
        struct managed *m = managed_of(w, tid);

        return m && cpumask_weight(&m->mask) == 1 ? cpumask_next(&m->mask, 0) : -1;
}

static unsigned n_pinned_kind(struct world *w, enum detector kind) {
        unsigned n = 0;

        for (size_t i = 0; i < w->n_managed; i++)
                n += w->managed[i].kind == kind;
        return n;
}

static void apply(struct world *w) {
        w->n_sets = w->n_releases = 0;
        for (size_t i = 0; i < w->out.n; i++) {
                const struct action *a = &w->out.items[i];
                struct task *t = task_of(w, a->task.tid);
                struct managed *m = managed_of(w, a->task.tid);

                if (a->verb == VERB_RELEASE) {
                        w->n_releases++;
                        ASSERT_EQ(w->n_sets, 0);
                        ASSERT_TRUE(m);
                        if (t && cpumask_equal(&t->allowed, &m->mask)) {
                                cpumask_t o;
                                ASSERT_OK(cpumask_parse_list(m->original, &o));
                                t->allowed = o;
                        }
                        *m = w->managed[--w->n_managed];
                        continue;
                }
                w->n_sets++;
                ASSERT_TRUE(t);
                ASSERT_TRUE(!m);
                m = &w->managed[w->n_managed++];
                *m = (struct managed) {
                        .type = ACT_AFFINITY,
                        .task = a->task,
                        .mask = a->mask,
                        .kind = streq(a->policy, "hogs") ? DETECT_HOG : DETECT_SPREAD,
                        .since_usec = w->now,
                };
                snprintf(m->policy, sizeof(m->policy), "%s", a->policy);
                ASSERT_TRUE(cpumask_format_list(&t->allowed, m->original, sizeof(m->original)));
                t->allowed = a->mask;
        }
}

/* Per CPU: our group members' util adds up to at most one CPU, never on a hog's CPU. */
static void check_invariants(struct world *w) {
        double load[MAX_CPUS] = {};
        bool hog[MAX_CPUS] = {};
        cpumask_t usable = topology_usable(&w->topo);

        for (size_t i = 0; i < w->n_managed; i++) {
                const struct managed *m = &w->managed[i];
                int c = cpumask_next(&m->mask, 0);

                ASSERT_EQ(cpumask_weight(&m->mask), 1);
                if (m->kind == DETECT_HOG) {
                        ASSERT_TRUE(!hog[c]);
                        hog[c] = true;
                }
        }
        for (size_t i = 0; i < w->n_managed; i++) {
                const struct managed *m = &w->managed[i];
                const struct task *t = task_of(w, m->task.tid);
                int c = cpumask_next(&m->mask, 0);

                if (m->kind != DETECT_SPREAD || !t)
                        continue;
                ASSERT_TRUE(!hog[c]);
                load[c] += t->util;
        }
        for (size_t i = 0; i < w->out.n; i++)
                if (w->out.items[i].verb == VERB_SET)
                        ASSERT_TRUE(cpumask_test(&usable, cpumask_next(&w->out.items[i].mask, 0)));
        for (int c = 0; c < MAX_CPUS; c++)
                ASSERT_TRUE(load[c] <= 1.0 + 1e-9);
}

static void step(struct world *w) {
        struct snapshot snap;
        struct plan_input in;
        struct finding g = { .kind = DETECT_SPREAD, .policy = &w->pol[0], .last_cpu = -1 };

        for (size_t i = 0; i < w->n_tasks; i++) {
                struct task *t = &w->tasks[i];
                int c = pinned_cpu(w, t->id.tid);
                cpumask_t one = cpumask_of(c);

                if (c >= 0 && cpumask_equal(&t->allowed, &one)) {
                        t->migrations_per_s = 0;
                        t->last_cpu = c;
                } else
                        t->migrations_per_s = w->mig_free[i];
        }
        snap = (struct snapshot) {
                .timestamp_usec = w->now,
                .window_usec = USEC_PER_SEC,
                .topo = &w->topo,
                .tasks = w->tasks,
                .n_tasks = w->n_tasks,
                .psi_cpu_some_avg10 = -1,
        };

        /* the detectors, as detect_spread()/detect_hogs() would with a match on the thread
         * name; threads we pinned are left out (detect_policy_for: narrowed affinity) */
        findings_clear(&w->findings);
        for (size_t i = 0; i < w->n_tasks; i++) {
                const struct task *t = &w->tasks[i];

                if (managed_of(w, t->id.tid))
                        continue;
                if (w->in_group[i]) {
                        if (t->util < detect_util_min(&w->pol[0], DETECT_SPREAD))
                                continue;
                        g.members[g.n_members++] = t->id;
                        g.combined_util += t->util;
                        g.migrations_per_s += t->migrations_per_s;
                        continue;
                }
                if (task_demand(t) >= 0.8 && t->migrations_per_s > 0.1) {
                        struct finding f = { .kind = DETECT_HOG, .policy = &w->pol[1], .n_members = 1,
                                             .members[0] = t->id, .util = t->util, .last_cpu = t->last_cpu };
                        ASSERT_OK(findings_add(&w->findings, &f));
                }
        }
        if (g.n_members >= 2) {
                g.util = g.combined_util / g.n_members;
                ASSERT_OK(findings_add(&w->findings, &g));
        }

        in = (struct plan_input) {
                .snap = &snap,
                .config = &w->cfg,
                .findings = &w->findings,
                .managed = w->managed,
                .n_managed = w->n_managed,
                .now_usec = w->now,
        };
        action_list_clear(&w->out);
        ASSERT_OK(plan_run(w->state, &in, &w->out));
        apply(w);
        w->total_sets += w->n_sets;
        w->total_releases += w->n_releases;
        check_invariants(w);
        w->now += USEC_PER_SEC;
}

static void steps(struct world *w, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                step(w);
}

static const struct plan_target_state *group_state(struct world *w) {
        return plan_state_find(w->state, "spread:workers");
}

/* ---------------------------------------------------------------- tests */

/* The seed: 4 x 40 % on 4 CPUs that keep migrating → one per CPU, and it stays that way. */
static void test_one_per_cpu(void) {
        struct world w;
        bool used[4] = {};

        world_init(&w, 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        steps(&w, 2);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        ASSERT_STREQ(group_state(&w)->why, "watching 2/3");
        step(&w);
        ASSERT_EQ(w.n_sets, 4);
        for (pid_t tid = 101; tid <= 104; tid++) {
                int c = pinned_cpu(&w, tid);
                ASSERT_TRUE(c >= 0 && c < 4);
                ASSERT_TRUE(!used[c]);
                used[c] = true;
        }
        /* pinned members no longer migrate and drop out of the findings: still placed */
        steps(&w, 60);
        ASSERT_EQ(w.total_sets, 4);
        ASSERT_EQ(w.total_releases, 0);
        ASSERT_STREQ(group_state(&w)->state, "spread");
        world_done(&w);
}

/* More members than CPUs: balanced, the util on each CPU adds up to at most one CPU. */
static void test_balanced(void) {
        struct world w;
        int count[2] = {};

        world_init(&w, 2);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                count[pinned_cpu(&w, tid)]++;
        ASSERT_EQ(count[0], 2);
        ASSERT_EQ(count[1], 2);
        world_done(&w);
}

/* A group that does not fit is left alone, all of it. */
static void test_does_not_fit(void) {
        struct world w;

        world_init(&w, 2);
        for (pid_t tid = 101; tid <= 103; tid++)
                add_task(&w, tid, true, 0.55, 2.0, 0);
        steps(&w, 6);
        ASSERT_EQ(w.total_sets, 0);
        ASSERT_STREQ(group_state(&w)->state, "left alone");
        ASSERT_TRUE(strstr(group_state(&w)->why, "does not fit"));
        world_done(&w);
}

/* A group that does not migrate is the scheduler's business. */
static void test_not_migrating(void) {
        struct world w;

        world_init(&w, 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 0.0, (int) (tid - 101));
        steps(&w, 10);
        ASSERT_EQ(w.total_sets, 0);
        ASSERT_TRUE(strstr(group_state(&w)->why, "not migrating"));
        world_done(&w);
}

/* The machine gets busy → the group is released after hysteresis. */
static void test_machine_busy(void) {
        struct world w;

        world_init(&w, 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 4);
        /* other load: 1.6 + 4 x 0.6 = 4.0 on 4 CPUs */
        for (pid_t tid = 201; tid <= 204; tid++)
                add_task(&w, tid, false, 0.60, 0.0, (int) (tid - 201));
        steps(&w, 2);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 4);
        step(&w);
        ASSERT_EQ(w.n_releases, 4);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        ASSERT_TRUE(strstr(group_state(&w)->why, "machine busy"));
        /* and not placed again while busy */
        steps(&w, 40);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        world_done(&w);
}

/* Members exit: their pins go at once; below two busy members the rest go after hysteresis. */
static void test_group_shrinks(void) {
        struct world w;

        world_init(&w, 4);
        for (pid_t tid = 101; tid <= 103; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 3);
        remove_task(&w, 101);
        step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 2);
        remove_task(&w, 102);
        step(&w);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 1);
        steps(&w, 2);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        ASSERT_TRUE(strstr(group_state(&w)->why, "shrank"));
        world_done(&w);
}

/* Never on a hog's CPU: the hog is placed first, the group takes the rest; a later hog pushes a member away. */
static void test_hog_first(void) {
        struct world w;
        int hc;

        world_init(&w, 4);
        add_task(&w, 50, false, 0.95, 2.0, 0);     /* a hopping hog */
        for (pid_t tid = 101; tid <= 103; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_HOG), 1);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 3);
        hc = pinned_cpu(&w, 50);
        for (pid_t tid = 101; tid <= 103; tid++)
                ASSERT_TRUE(pinned_cpu(&w, tid) != hc);     /* also checked in check_invariants */
        world_done(&w);

        /* group first, then a hog on 2 CPUs' worth: the member on the hog's CPU moves */
        world_init(&w, 3);
        for (pid_t tid = 101; tid <= 102; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 2);
        add_task(&w, 50, false, 0.95, 2.0, pinned_cpu(&w, 101));
        steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_HOG), 1);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 2);
        world_done(&w);
}

/* Hotplug: a member's CPU goes offline → released and placed again in the same interval. */
static void test_hotplug(void) {
        struct world w;
        int c;

        world_init(&w, 4);
        for (pid_t tid = 101; tid <= 102; tid++)
                add_task(&w, tid, true, 0.40, 2.0, (int) (tid - 101));
        steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 2);
        c = pinned_cpu(&w, 101);
        cpumask_clear(&w.topo.online, c);
        w.cpus[c].online = false;
        step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(w.n_sets, 1);
        ASSERT_TRUE(pinned_cpu(&w, 101) >= 0 && pinned_cpu(&w, 101) != c);
        ASSERT_TRUE(pinned_cpu(&w, 101) != pinned_cpu(&w, 102));
        world_done(&w);
}

/* The action budget spreads the work over intervals; the plan stays consistent. */
static void test_budget(void) {
        struct world w;
        bool used[4] = {};

        world_init(&w, 4);
        w.cfg.daemon.max_actions_per_interval = 2;
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        steps(&w, 3);
        ASSERT_EQ(w.n_sets, 2);
        ASSERT_STREQ(group_state(&w)->state, "spreading");
        step(&w);
        ASSERT_EQ(w.n_sets, 2);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 4);
        for (pid_t tid = 101; tid <= 104; tid++) {
                int c = pinned_cpu(&w, tid);
                ASSERT_TRUE(!used[c]);
                used[c] = true;
        }
        world_done(&w);
}

int main(void) {
        test_one_per_cpu();
        test_balanced();
        test_does_not_fit();
        test_not_migrating();
        test_machine_busy();
        test_group_shrinks();
        test_hog_first();
        test_hotplug();
        test_budget();
        printf("test-plan-spread: ok\n");
        return 0;
}
