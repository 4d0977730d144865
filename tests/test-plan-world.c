/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "test-plan-world.h"
#include "test-util.h"

void world_init(struct world *w, int n_cpus) {
        memset(w, 0, sizeof(*w));
        ASSERT_TRUE(n_cpus <= MAX_CPUS);
        for (int c = 0; c < n_cpus; c++)
                w->cpus[c] = (struct topo_cpu) { .online = true, .core_id = c, .llc_id = 0, .package_id = 0, .node = 0 };
        w->topo = (struct topology) {
                .n_cpus = n_cpus,
                .cpus = w->cpus,
                .online = cpumask_first_n(n_cpus),
                .self_allowed = cpumask_first_n(n_cpus),
                .n_llcs = 1, .n_nodes = 1, .n_cores = n_cpus,
        };
        w->cfg = (struct config) {
                .daemon = {
                        .interval_usec = USEC_PER_SEC,
                        .max_actions_per_interval = 4,
                        .hysteresis_intervals = 3,
                        .cooldown_usec = 30 * USEC_PER_SEC,
                },
                .policies = w->pol,
        };
        w->state = plan_state_new();
        ASSERT_TRUE(w->state);
        w->now = 1000 * USEC_PER_SEC;
}

void world_init_machine(struct world *w, enum plan_machine which) {
        struct topo_cpu cpus[PLAN_MACHINE_CPUS_MAX];
        struct topology t;
        int n;

        ASSERT_TRUE(MAX_CPUS >= PLAN_MACHINE_CPUS_MAX);
        n = plan_machine_build(which, cpus, &t);
        world_init(w, n);
        memcpy(w->cpus, cpus, sizeof(cpus[0]) * (size_t) n);
        t.cpus = w->cpus;
        w->topo = t;
}

void world_done(struct world *w) {
        plan_state_free(w->state);
        findings_clear(&w->findings);
        action_list_clear(&w->out);
}

struct task *world_add_task(struct world *w, pid_t tid, const char *comm, double util, double delay, double mig,
                            int last_cpu) {
        struct task *t;

        ASSERT_TRUE(w->n_tasks < MAX_TASKS);
        t = &w->tasks[w->n_tasks];
        *t = (struct task) {
                .id = { .pid = tid, .tid = tid, .start_time = 1000 + tid },
                .policy = TASK_SCHED_OTHER,
                .last_cpu = last_cpu,
                .allowed = w->topo.online,
                .have_schedstat = true,
                .have_migrations = true,
                .have_rates = true,
                .util = util,
                .run_delay_ms_per_s = delay,
                .window_usec = USEC_PER_SEC,
        };
        snprintf(t->comm, sizeof(t->comm), "%s", comm);
        cpumask_set(&t->cpus_seen, last_cpu);
        w->mig_free[w->n_tasks] = mig;
        w->in_group[w->n_tasks] = false;
        w->n_tasks++;
        return t;
}

void world_remove_task(struct world *w, pid_t tid) {
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

struct task *world_task(struct world *w, pid_t tid) {
        for (size_t i = 0; i < w->n_tasks; i++)
                if (w->tasks[i].id.tid == tid)
                        return &w->tasks[i];
        return NULL;
}

struct managed *world_managed(struct world *w, pid_t tid) {
        for (size_t i = 0; i < w->n_managed; i++)
                if (w->managed[i].task.tid == tid)
                        return &w->managed[i];
        return NULL;
}

int world_pinned_cpu(struct world *w, pid_t tid) {
        struct managed *m = world_managed(w, tid);

        return m && cpumask_weight(&m->mask) == 1 ? cpumask_next(&m->mask, 0) : -1;
}

void world_detect_hog(struct world *w, const struct task *t, const struct policy *p) {
        struct finding f = { .kind = DETECT_HOG, .policy = p, .n_members = 1 };

        if (world_managed(w, t->id.tid))
                return;
        if (task_demand(t) < detect_util_min(p, DETECT_HOG))
                return;
        if (!(t->migrations_per_s > detect_migrations_min_per_s(p, DETECT_HOG)))
                return;
        f.members[0] = t->id;
        f.util = t->util;
        f.demand = task_demand(t);
        f.migrations_per_s = t->migrations_per_s;
        f.run_delay_ms_per_s = t->run_delay_ms_per_s;
        f.cpus_seen = t->cpus_seen;
        f.last_cpu = t->last_cpu;
        memcpy(f.comm, t->comm, sizeof(f.comm));
        ASSERT_OK(findings_add(&w->findings, &f));
}

/* What the applier would do. */
static void world_apply(struct world *w) {
        w->n_sets = w->n_releases = 0;
        for (size_t i = 0; i < w->out.n; i++) {
                const struct action *a = &w->out.items[i];
                struct task *t = world_task(w, a->task.tid);
                struct managed *m = world_managed(w, a->task.tid);

                ASSERT_EQ(a->type, ACT_AFFINITY);
                if (w->dry_run) {       /* the applier only logs "would" */
                        *(a->verb == VERB_SET ? &w->n_sets : &w->n_releases) += 1;
                        continue;
                }
                if (a->verb == VERB_RELEASE) {
                        w->n_releases++;
                        /* every SET of this step comes after every RELEASE */
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
                ASSERT_TRUE(!m); /* never SET twice without a RELEASE in between */
                ASSERT_TRUE(w->n_managed < ELEMENTSOF(w->managed));
                m = &w->managed[w->n_managed++];
                *m = (struct managed) {
                        .type = ACT_AFFINITY,
                        .task = a->task,
                        .mask = a->mask,
                        /* as the applier: the detector plan_emit() put in, and the pair */
                        .kind = a->kind,
                        .partner = a->partner,
                        .since_usec = w->now,
                };
                snprintf(m->policy, sizeof(m->policy), "%s", a->policy);
                snprintf(m->reason, sizeof(m->reason), "%s", a->reason);
                snprintf(m->key, sizeof(m->key), "task:%d:%" PRIu64, (int) a->task.tid, a->task.start_time);
                ASSERT_TRUE(cpumask_format_list(&t->allowed, m->original, sizeof(m->original)));
                ASSERT_TRUE(cpumask_format_list(&a->mask, m->current, sizeof(m->current)));
                t->allowed = a->mask;
        }
}

void world_step(struct world *w) {
        struct snapshot snap;
        struct plan_input in;

        /* the sampler: pinned threads stop migrating and run where pinned */
        for (size_t i = 0; i < w->n_tasks; i++) {
                struct task *t = &w->tasks[i];
                int c = world_pinned_cpu(w, t->id.tid);
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
                .edges = w->edges,
                .n_edges = w->n_edges,
                .psi_cpu_some_avg10 = -1,
                .coexist = w->coexist,
        };

        findings_clear(&w->findings);
        w->detect(w);

        in = (struct plan_input) {
                .snap = &snap,
                .config = &w->cfg,
                .findings = &w->findings,
                .managed = w->managed,
                .n_managed = w->n_managed,
                .now_usec = w->now,
                .self_pid = w->self_pid,
                .dry_run = w->dry_run,
        };
        action_list_clear(&w->out);
        ASSERT_OK(plan_run(w->state, &in, &w->out));
        world_apply(w);
        w->total_sets += w->n_sets;
        w->total_releases += w->n_releases;
        w->check(w);
        w->now += USEC_PER_SEC;
}

void world_steps(struct world *w, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                world_step(w);
}
