/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Coexistence rules of the planner on struct literals, in the
 * world of test-plan-world.h (it plays sampler, detector and applier):
 *
 *  - sched_ext enabled: no affinity SET, every pin of ours released with
 *    COEXIST_SCHED_EXT_WHY, targets say so; the levers still run; once it
 *    is off, planning resumes after a fresh hysteresis;
 *  - the kubelet's exclusive CPUs are never the CPU of a hog or a pair,
 *    and a pin on a CPU that becomes exclusive is moved off it;
 *  - a thread whose affinity someone else changed twice is left alone for
 *    good, until it exits; once is not enough, and a new thread with the
 *    same TID is planned as any other.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "plan/plan.h"
#include "test-fixtures.h"
#include "test-plan-world.h"
#include "test-util.h"

/* Every task is a hog for the detector but these two, a ping-pong pair. */
#define PAIR_A 201
#define PAIR_B 202

static bool pair_together(struct world *w) {
        int a = world_pinned_cpu(w, PAIR_A), b = world_pinned_cpu(w, PAIR_B);

        return a >= 0 && a == b;
}

/* As detect_hogs() and detect_pairs() would see this world (test-plan-hog.c's detector, plus the pair). */
static void detect(struct world *w) {
        const struct task *pa = NULL, *pb = NULL;

        for (size_t i = 0; i < w->n_tasks; i++) {
                const struct task *t = &w->tasks[i];

                if (t->id.tid == PAIR_A)
                        pa = t;
                else if (t->id.tid == PAIR_B)
                        pb = t;
                else
                        world_detect_hog(w, t, &w->pol[0]);
        }
        if (pa && pb && w->cfg.n_policies > 1) {
                struct finding f = {
                        .kind = DETECT_PAIR,
                        .policy = &w->pol[1],
                        .members = { pa->id, pb->id },
                        .n_members = 2,
                        .util = 0.5,
                        .combined_util = 1.0,
                        .wake_rate_per_s = 45000,
                        /* split until we put them together */
                        .split_fraction = pair_together(w) ? 0.02 : 0.95,
                        .last_cpu = -1,
                        /* one look (the fallback's weakest basis): Hysteresis=
                         * applies to the pair as to the hogs */
                        .split_basis = SPLIT_BASIS_LOOK,
                        .shape = PAIR_PINGPONG,
                };
                ASSERT_OK(findings_add(&w->findings, &f));
        }
}

/* After every step: no SET ever lands on a CPU the kubelet gave a container, nor while sched_ext is on. */
static void check(struct world *w) {
        for (size_t i = 0; i < w->out.n; i++) {
                const struct action *a = &w->out.items[i];
                cpumask_t both;

                if (a->verb != VERB_SET)
                        continue;
                ASSERT_TRUE(!w->coexist.sched_ext);
                both = cpumask_and(&a->mask, &w->coexist.kubelet_exclusive);
                ASSERT_TRUE(cpumask_empty(&both));
        }
}

static void world_init_coexist(struct world *w, int n_cpus) {
        world_init(w, n_cpus);
        w->pol[0] = (struct policy) TEST_POLICY("hogs", DETECT_HOG, ACTION_PIN);
        w->pol[1] = (struct policy) TEST_POLICY("pairs", DETECT_PAIR, ACTION_COLOCATE);
        w->cfg.n_policies = 2;
        w->cfg.daemon.retry_after_usec = 600 * USEC_PER_SEC;
        w->detect = detect;
        w->check = check;
}

static struct task *add_task(struct world *w, pid_t tid, double util, double delay, double mig, int last_cpu) {
        char comm[16];
        struct task *t;

        snprintf(comm, sizeof(comm), "t%d", (int) tid);
        t = world_add_task(w, tid, comm, util, delay, mig, last_cpu);
        if (tid == PAIR_A || tid == PAIR_B)
                t->nvcsw_per_s = 45000;
        return t;
}

static const struct plan_target_state *task_state(struct world *w, pid_t tid) {
        char key[64];

        snprintf(key, sizeof(key), "task:%d:%" PRIu64, (int) tid, (uint64_t) 1000 + (uint64_t) tid);
        return plan_state_find(w->state, key);
}

static const struct plan_target_state *hog_target(struct world *w, pid_t tid) {
        char key[64];

        snprintf(key, sizeof(key), "hog:%d:%" PRIu64, (int) tid, (uint64_t) 1000 + (uint64_t) tid);
        return plan_state_find(w->state, key);
}

/* ---------------------------------------------------------------- sched_ext */

static void test_sched_ext(void) {
        struct world w;
        const struct plan_target_state *st;

        world_init_coexist(&w, 4);
        /* shorter than the time under sched_ext below: what holds off the
         * second pins is the hysteresis, not the first pins' cool-down */
        w.cfg.daemon.cooldown_usec = 5 * USEC_PER_SEC;
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 0);
        add_task(&w, PAIR_A, 0.5, 5, 0.0, 2);
        add_task(&w, PAIR_B, 0.5, 5, 0.0, 3);
        world_steps(&w, 3);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0);
        ASSERT_TRUE(world_pinned_cpu(&w, 102) >= 0);
        ASSERT_TRUE(pair_together(&w));
        ASSERT_EQ(w.n_managed, 4);

        /* A BPF scheduler is loaded: every pin of ours goes in one pass, nothing is set. */
        w.coexist.sched_ext = true;
        snprintf(w.coexist.sched_ext_state, sizeof(w.coexist.sched_ext_state), "enabled");
        world_step(&w);
        ASSERT_EQ(w.n_sets, 0);
        ASSERT_EQ(w.n_releases, 4);
        ASSERT_EQ(w.n_managed, 0);
        for (size_t i = 0; i < w.out.n; i++)
                ASSERT_STREQ(w.out.items[i].reason, COEXIST_SCHED_EXT_WHY);
        st = hog_target(&w, 101);
        ASSERT_TRUE(st);
        ASSERT_STREQ(st->state, "left alone");
        ASSERT_STREQ(st->why, COEXIST_SCHED_EXT_WHY);

        /* It stays loaded: the hogs keep hopping, the pair stays split, still nothing. */
        world_steps(&w, 20);
        ASSERT_EQ(w.total_sets, 4);
        ASSERT_EQ(w.n_managed, 0);
        ASSERT_STREQ(hog_target(&w, 102)->why, COEXIST_SCHED_EXT_WHY);

        /* Unloaded ("disabled"): planning resumes after a fresh hysteresis
         * (3 intervals), not at once on the counts from before the BPF scheduler. */
        w.coexist.sched_ext = false;
        snprintf(w.coexist.sched_ext_state, sizeof(w.coexist.sched_ext_state), "disabled");
        world_steps(&w, 2);
        ASSERT_EQ(w.n_managed, 0);
        ASSERT_STREQ(hog_target(&w, 101)->why, "watching 2/3");
        world_step(&w);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0);
        ASSERT_TRUE(world_pinned_cpu(&w, 102) >= 0);
        ASSERT_TRUE(pair_together(&w));
        world_done(&w);
}

/* The levers go on under sched_ext: an always-on sysctl profile is still applied. */
static void test_sched_ext_keeps_levers(void) {
        struct world w;
        struct action_list out = {};
        struct snapshot snap;
        char *sysctls[] = { (char *) "kernel.sched_autogroup_enabled=0", NULL };
        struct plan_input in;
        bool set = false;

        world_init_coexist(&w, 2);
        w.pol[0] = (struct policy) TEST_POLICY("profile", DETECT_ALWAYS, ACTION_SYSCTL);
        w.pol[0].sysctls = sysctls;
        w.cfg.n_policies = 1;
        w.coexist.sched_ext = true;
        snap = (struct snapshot) { .timestamp_usec = w.now, .window_usec = USEC_PER_SEC, .topo = &w.topo,
                                   .psi_cpu_some_avg10 = -1, .coexist = w.coexist };
        in = (struct plan_input) { .snap = &snap, .config = &w.cfg, .findings = &w.findings, .now_usec = w.now };
        ASSERT_OK(plan_run(w.state, &in, &out));
        for (size_t i = 0; i < out.n; i++)
                if (out.items[i].type == ACT_SYSCTL && out.items[i].verb == VERB_SET)
                        set = true;
        ASSERT_TRUE(set);
        action_list_clear(&out);
        world_done(&w);
}

/* ---------------------------------------------------------------- kubelet */

/* 8 CPUs, the kubelet gave 2-5 to containers: hogs and the pair land on 0-1 and 6-7 only. */
static void test_kubelet_exclusive_never_chosen(void) {
        struct world w;
        cpumask_t ok;

        world_init_coexist(&w, 8);
        ASSERT_OK(cpumask_parse_list("2-5", &w.coexist.kubelet_exclusive));
        ASSERT_OK(cpumask_parse_list("0-1,6-7", &ok));
        /* last seen on the exclusive CPUs (allowed everywhere: not in a container) */
        add_task(&w, 101, 0.95, 10, 2.0, 2);
        add_task(&w, 102, 0.95, 10, 2.0, 3);
        add_task(&w, PAIR_A, 0.5, 5, 0.0, 4);
        add_task(&w, PAIR_B, 0.5, 5, 0.0, 5);
        world_steps(&w, 4);
        ASSERT_TRUE(cpumask_test(&ok, world_pinned_cpu(&w, 101)));
        ASSERT_TRUE(cpumask_test(&ok, world_pinned_cpu(&w, 102)));
        ASSERT_TRUE(pair_together(&w));
        ASSERT_TRUE(cpumask_test(&ok, world_pinned_cpu(&w, PAIR_A)));
        world_done(&w);

        /* a hog pinned to 1, then the kubelet gives 0-1 to a container: moved off at once */
        world_init_coexist(&w, 4);
        add_task(&w, 101, 0.95, 10, 2.0, 1);
        world_steps(&w, 3);
        ASSERT_EQ(world_pinned_cpu(&w, 101), 1);
        ASSERT_OK(cpumask_parse_list("0-1", &w.coexist.kubelet_exclusive));
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) == 2 || world_pinned_cpu(&w, 101) == 3);
        world_done(&w);

        /* only exclusive CPUs left outside the hogs' one free CPU: 2 hogs > 1 usable CPU, none pinned */
        world_init_coexist(&w, 4);
        ASSERT_OK(cpumask_parse_list("1-3", &w.coexist.kubelet_exclusive));
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 1);
        world_steps(&w, 6);
        ASSERT_EQ(w.n_managed, 0);
        ASSERT_STREQ(hog_target(&w, 101)->why, "left alone: 2 hogs > 1 usable CPUs");
        world_done(&w);
}

/* ---------------------------------------------------------------- changed twice */

/* Someone else sets the hog's mask (as the applier's reconcile finds it and drops our entry). */
static void foreign_change(struct world *w, pid_t tid, const char *mask) {
        struct managed *m = world_managed(w, tid);
        struct task *t = world_task(w, tid);

        ASSERT_TRUE(m && t);
        ASSERT_OK(cpumask_parse_list(mask, &t->allowed));
        *m = w->managed[--w->n_managed];
}

static void test_changed_twice_left_alone(void) {
        struct task_id id = { .pid = 101, .tid = 101, .start_time = 1101 };
        const struct plan_target_state *st;
        struct world w;
        unsigned i;

        world_init_coexist(&w, 4);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0);

        /* Once: GameMode narrows it, later puts it back. Pinned again once its finding holds. */
        foreign_change(&w, 101, "3");
        ASSERT_EQ(plan_state_foreign(w.state, &id), 1);
        world_steps(&w, 3);
        ASSERT_EQ(w.n_managed, 0);
        world_task(&w, 101)->allowed = cpumask_first_n(4);
        for (i = 0; i < 60 && world_pinned_cpu(&w, 101) < 0; i++)
                world_step(&w);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0);
        ASSERT_EQ(task_state(&w, 101)->foreign_changes, 1);

        /* Twice: left alone for good, even when it is put back and keeps hopping. */
        foreign_change(&w, 101, "2");
        ASSERT_EQ(plan_state_foreign(w.state, &id), 2);
        world_task(&w, 101)->allowed = cpumask_first_n(4);
        world_steps(&w, 40);   /* past plan.c's garbage collection (30 passes) */
        ASSERT_EQ(w.n_managed, 0);
        st = task_state(&w, 101);
        ASSERT_TRUE(st);
        ASSERT_STREQ(st->why, PLAN_FOREIGN_WHY);
        ASSERT_STREQ(hog_target(&w, 101)->state, "blocked");
        ASSERT_STREQ(hog_target(&w, 101)->why, PLAN_FOREIGN_WHY);

        /* It exits: forgotten. A new thread with the same TID (another start time) is a hog like any other. */
        world_remove_task(&w, 101);
        world_step(&w);
        ASSERT_TRUE(!task_state(&w, 101));
        {
                struct task *t = add_task(&w, 101, 0.95, 10, 2.0, 0);
                t->id.start_time = 7777;
        }
        world_steps(&w, 3);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0);
        world_done(&w);
}

/* A pair member changed twice: the pair is never co-located again. */
static void test_changed_twice_pair(void) {
        struct task_id id = { .pid = PAIR_B, .tid = PAIR_B, .start_time = 1000 + PAIR_B };
        struct world w;

        world_init_coexist(&w, 4);
        add_task(&w, PAIR_A, 0.5, 5, 0.0, 2);
        add_task(&w, PAIR_B, 0.5, 5, 0.0, 3);
        ASSERT_EQ(plan_state_foreign(w.state, &id), 1);
        ASSERT_EQ(plan_state_foreign(w.state, &id), 2);
        world_steps(&w, 10);
        ASSERT_EQ(w.total_sets, 0);
        world_done(&w);
}

int main(void) {
        test_sched_ext();
        test_sched_ext_keeps_levers();
        test_kubelet_exclusive_never_chosen();
        test_changed_twice_left_alone();
        test_changed_twice_pair();
        printf("ok\n");
        return 0;
}
