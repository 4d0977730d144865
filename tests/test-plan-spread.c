/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The spread-group planner on struct literals ([conservative-smp]: 4
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
#include "plan/plan.h"
#include "test-fixtures.h"
#include "test-plan-world.h"
#include "test-util.h"

/*
 * The detectors, as detect_spread()/detect_hogs() would with a match on the
 * thread name; threads we pinned are left out (detect_policy_for: narrowed
 * affinity).
 */
static void detect(struct world *w) {
        struct finding g = { .kind = DETECT_SPREAD, .policy = &w->pol[0], .last_cpu = -1 };

        for (size_t i = 0; i < w->n_tasks; i++) {
                const struct task *t = &w->tasks[i];

                if (world_managed(w, t->id.tid))
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
                const struct task *t = world_task(w, m->task.tid);
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

static void spread_setup(struct world *w) {
        w->pol[0] = (struct policy) TEST_POLICY("workers", DETECT_SPREAD, ACTION_SPREAD);
        w->pol[1] = (struct policy) TEST_POLICY("hogs", DETECT_HOG, ACTION_PIN);
        w->cfg.n_policies = 2;
        w->cfg.daemon.max_actions_per_interval = 8;
        w->detect = detect;
        w->check = check_invariants;
}

static void world_init_spread(struct world *w, int n_cpus) {
        world_init(w, n_cpus);
        spread_setup(w);
}

static struct task *add_task(struct world *w, pid_t tid, bool group, double util, double mig, int last_cpu) {
        char comm[16];

        snprintf(comm, sizeof(comm), group ? "worker%d" : "other%d", (int) tid);
        world_add_task(w, tid, comm, util, 10, mig, last_cpu);
        w->in_group[w->n_tasks - 1] = group;
        return &w->tasks[w->n_tasks - 1];
}

static unsigned n_pinned_kind(struct world *w, enum detector kind) {
        unsigned n = 0;

        for (size_t i = 0; i < w->n_managed; i++)
                n += w->managed[i].kind == kind;
        return n;
}

static const struct plan_target_state *group_state(struct world *w) {
        return plan_state_find(w->state, "spread:workers");
}

/* ---------------------------------------------------------------- tests */

/* The seed: 4 x 40 % on 4 CPUs that keep migrating → one per CPU, and it stays that way. */
static void test_one_per_cpu(void) {
        struct world w;
        bool used[4] = {};

        world_init_spread(&w, 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        world_steps(&w, 2);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        ASSERT_STREQ(group_state(&w)->why, "watching 2/3");
        world_step(&w);
        ASSERT_EQ(w.n_sets, 4);
        for (pid_t tid = 101; tid <= 104; tid++) {
                int c = world_pinned_cpu(&w, tid);
                ASSERT_TRUE(c >= 0 && c < 4);
                ASSERT_TRUE(!used[c]);
                used[c] = true;
        }
        /* pinned members no longer migrate and drop out of the findings: still placed */
        world_steps(&w, 60);
        ASSERT_EQ(w.total_sets, 4);
        ASSERT_EQ(w.total_releases, 0);
        ASSERT_STREQ(group_state(&w)->state, "spread");
        world_done(&w);
}

/* More members than CPUs: balanced, the util on each CPU adds up to at most one CPU. */
static void test_balanced(void) {
        struct world w;
        int count[2] = {};

        world_init_spread(&w, 2);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                count[world_pinned_cpu(&w, tid)]++;
        ASSERT_EQ(count[0], 2);
        ASSERT_EQ(count[1], 2);
        world_done(&w);
}

/* A group that does not fit is left alone, all of it. */
static void test_does_not_fit(void) {
        struct world w;

        world_init_spread(&w, 2);
        for (pid_t tid = 101; tid <= 103; tid++)
                add_task(&w, tid, true, 0.55, 2.0, 0);
        world_steps(&w, 6);
        ASSERT_EQ(w.total_sets, 0);
        ASSERT_STREQ(group_state(&w)->state, "left alone");
        ASSERT_TRUE(strstr(group_state(&w)->why, "does not fit"));
        world_done(&w);
}

/*
 * A placed group that stops fitting is released, and cools down like any
 * release of it: members near the line fit one pass and not the next, and
 * were pinned and let go pass after pass.
 */
static void test_no_longer_fits_cools_down(void) {
        struct world w;

        world_init_spread(&w, 2);
        for (pid_t tid = 101; tid <= 103; tid++)
                add_task(&w, tid, true, 0.45, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 3);
        for (pid_t tid = 101; tid <= 103; tid++)
                world_task(&w, tid)->util = 0.55;
        world_step(&w);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        ASSERT_TRUE(strstr(group_state(&w)->why, "does not fit"));
        for (pid_t tid = 101; tid <= 103; tid++)
                world_task(&w, tid)->util = 0.45;
        world_steps(&w, 10);
        ASSERT_EQ(w.total_sets, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        world_done(&w);
}

/* A group that does not migrate is the scheduler's business. */
static void test_not_migrating(void) {
        struct world w;

        world_init_spread(&w, 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 0.0, (int) (tid - 101));
        world_steps(&w, 10);
        ASSERT_EQ(w.total_sets, 0);
        ASSERT_TRUE(strstr(group_state(&w)->why, "not migrating"));
        world_done(&w);
}

/* The machine gets busy → the group is released after hysteresis. */
static void test_machine_busy(void) {
        struct world w;

        world_init_spread(&w, 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 4);
        /* other load: 1.6 + 4 x 0.6 = 4.0 on 4 CPUs */
        for (pid_t tid = 201; tid <= 204; tid++)
                add_task(&w, tid, false, 0.60, 0.0, (int) (tid - 201));
        world_steps(&w, 2);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 4);
        world_step(&w);
        ASSERT_EQ(w.n_releases, 4);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        ASSERT_TRUE(strstr(group_state(&w)->why, "machine busy"));
        /* and not placed again while busy */
        world_steps(&w, 40);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        world_done(&w);
}

/* Members exit: their pins go at once; below two busy members the rest go after hysteresis. */
static void test_group_shrinks(void) {
        struct world w;

        world_init_spread(&w, 4);
        for (pid_t tid = 101; tid <= 103; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 3);
        world_remove_task(&w, 101);
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 2);
        world_remove_task(&w, 102);
        world_step(&w);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 1);
        world_steps(&w, 2);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 0);
        ASSERT_TRUE(strstr(group_state(&w)->why, "shrank"));
        world_done(&w);
}

/* Never on a hog's CPU: the hog is placed first, the group takes the rest; a later hog pushes a member away. */
static void test_hog_first(void) {
        struct world w;
        int hc;

        world_init_spread(&w, 4);
        add_task(&w, 50, false, 0.95, 2.0, 0);     /* a hopping hog */
        for (pid_t tid = 101; tid <= 103; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_HOG), 1);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 3);
        hc = world_pinned_cpu(&w, 50);
        for (pid_t tid = 101; tid <= 103; tid++)
                ASSERT_TRUE(world_pinned_cpu(&w, tid) != hc);     /* also checked in check_invariants */
        world_done(&w);

        /* group first, then a hog on 2 CPUs' worth: the member on the hog's CPU moves */
        world_init_spread(&w, 3);
        for (pid_t tid = 101; tid <= 102; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 2);
        add_task(&w, 50, false, 0.95, 2.0, world_pinned_cpu(&w, 101));
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_HOG), 1);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 2);
        world_done(&w);
}

/* Hotplug: a member's CPU goes offline → released and placed again in the same interval. */
static void test_hotplug(void) {
        struct world w;
        int c;

        world_init_spread(&w, 4);
        for (pid_t tid = 101; tid <= 102; tid++)
                add_task(&w, tid, true, 0.40, 2.0, (int) (tid - 101));
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 2);
        c = world_pinned_cpu(&w, 101);
        cpumask_clear(&w.topo.online, c);
        w.cpus[c].online = false;
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(w.n_sets, 1);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0 && world_pinned_cpu(&w, 101) != c);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) != world_pinned_cpu(&w, 102));
        world_done(&w);
}

/* The action budget spreads the work over intervals; the plan stays consistent. */
static void test_budget(void) {
        struct world w;
        bool used[4] = {};

        world_init_spread(&w, 4);
        w.cfg.daemon.max_actions_per_interval = 2;
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, true, 0.40, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(w.n_sets, 2);
        ASSERT_STREQ(group_state(&w)->state, "spreading");
        world_step(&w);
        ASSERT_EQ(w.n_sets, 2);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), 4);
        for (pid_t tid = 101; tid <= 104; tid++) {
                int c = world_pinned_cpu(&w, tid);
                ASSERT_TRUE(!used[c]);
                used[c] = true;
        }
        world_done(&w);
}

/* ---- the machines of test-plan-machines.h ---------------------------- */

/* Members per core, LLC and node of the group tids 101..100+n, after it was spread. */
struct spread_placement {
        int core[MAX_CPUS], llc[MAX_CPUS], node[MAX_CPUS];
        int fastest;    /* members on a CPU of the machine's highest capacity */
};

/* n members at 40 % all seen on CPU from, spread on machine m (after tweak, if any). */
static struct spread_placement spread_on(enum plan_machine m, int n, int from, void (*tweak)(struct world *w)) {
        struct spread_placement p = {};
        struct world w;

        world_init_machine(&w, m);
        spread_setup(&w);
        w.cfg.daemon.max_actions_per_interval = MAX_TASKS;
        if (tweak)
                tweak(&w);
        for (pid_t tid = 101; tid <= 100 + n; tid++)
                add_task(&w, tid, true, 0.40, 2.0, from);
        if (tweak)
                tweak(&w);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned_kind(&w, DETECT_SPREAD), (unsigned) n);
        for (pid_t tid = 101; tid <= 100 + n; tid++) {
                int c = world_pinned_cpu(&w, tid);
                const struct task *t = world_task(&w, tid);
                cpumask_t orig;

                ASSERT_TRUE(c >= 0);
                /* within the member's cpuset */
                ASSERT_OK(cpumask_parse_list(world_managed(&w, tid)->original, &orig));
                ASSERT_TRUE(cpumask_test(&orig, c));
                (void) t;
                p.core[w.cpus[c].core_id]++;
                p.llc[w.cpus[c].llc_id]++;
                p.node[w.cpus[c].node]++;
                p.fastest += w.cpus[c].capacity == TOPOLOGY_CAPACITY_MAX;
        }
        world_done(&w);
        return p;
}

static void all_cores_once(const struct spread_placement *p) {
        for (int k = 0; k < MAX_CPUS; k++)
                ASSERT_TRUE(p->core[k] <= 1);
}

/* Node 1 of the 2-socket box reserved (isolated first threads, nohz_full second ones),
 * and cores 1 and 2 of node 0; the first member's cpuset is CPUs 5 and 21 (core 5). */
static void reserve_2s8c(struct world *w) {
        for (int c = 8; c < 16; c++) {
                cpumask_set(&w->topo.isolated, c);
                cpumask_set(&w->topo.nohz_full, c + 16);
        }
        cpumask_set(&w->topo.isolated, 1);
        cpumask_set(&w->topo.isolated, 17);
        cpumask_set(&w->topo.nohz_full, 2);
        cpumask_set(&w->topo.nohz_full, 18);
        if (w->n_tasks > 0)
                w->tasks[0].allowed = (cpumask_t) { .bits = { (1u << 5) | (1u << 21) } };
}

/*
 * Across cores, LLCs and nodes, not just CPUs: members all seen on CPU 0
 * are spread one per core on every machine, evenly over the nodes and the
 * L3s, on a hybrid's P cores first; never onto a reserved CPU
 * (check_invariants) nor out of a cpuset.
 */
static void test_machines(void) {
        struct spread_placement p;

        p = spread_on(PLAN_MACHINE_2S8C, 4, 0, NULL);
        all_cores_once(&p);
        ASSERT_EQ(p.node[0], 2);
        ASSERT_EQ(p.node[1], 2);

        p = spread_on(PLAN_MACHINE_DUAL_CCD, 4, 0, NULL);
        all_cores_once(&p);
        ASSERT_EQ(p.llc[0], 2);
        ASSERT_EQ(p.llc[8], 2);

        p = spread_on(PLAN_MACHINE_HYBRID, 8, 0, NULL);
        all_cores_once(&p);
        ASSERT_EQ(p.fastest, 8);
        /* seen on an E core (CPU 16), they still take the 8 P cores first, then E cores
         * before a P core's second thread */
        p = spread_on(PLAN_MACHINE_HYBRID, 8, 16, NULL);
        all_cores_once(&p);
        ASSERT_EQ(p.fastest, 8);
        p = spread_on(PLAN_MACHINE_HYBRID, 12, 16, NULL);
        all_cores_once(&p);
        ASSERT_EQ(p.fastest, 8);

        /* 256 CPUs, 4 L3s per node: 2 members go to two nodes, not two L3s of one */
        p = spread_on(PLAN_MACHINE_256, 2, 0, NULL);
        ASSERT_EQ(p.node[0], 1);
        ASSERT_EQ(p.node[1], 1);
        p = spread_on(PLAN_MACHINE_256, 8, 0, NULL);
        all_cores_once(&p);
        ASSERT_EQ(p.node[0], 4);
        for (int llc = 0; llc < 128; llc += 16)
                ASSERT_EQ(p.llc[llc], 1);

        /* reserved CPUs and a cpuset: 6 members seen on node 1, on node 0's usable cores 0 and 3-7 */
        p = spread_on(PLAN_MACHINE_2S8C, 6, 8, reserve_2s8c);
        all_cores_once(&p);
        ASSERT_EQ(p.node[0], 6);
        ASSERT_EQ(p.core[1] + p.core[2], 0);
}

int main(void) {
        test_one_per_cpu();
        test_balanced();
        test_does_not_fit();
        test_no_longer_fits_cools_down();
        test_not_migrating();
        test_machine_busy();
        test_group_shrinks();
        test_hog_first();
        test_hotplug();
        test_budget();
        test_machines();
        printf("test-plan-spread: ok\n");
        return 0;
}
