/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hog planner's invariants on struct literals ([conservative-smp]).
 *
 * A small world (test-plan-world.h) stands in for the sampler and the
 * applier: tasks with a util, run delay and a migration rate they show
 * while not pinned; each step builds the snapshot and the hog findings the
 * detector would give (busy and migrating in this window, not pinned by
 * us), runs plan_run(), and applies the actions the way the applier would.
 * After every step the invariants are checked on what is in force.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/util.h"
#include "control/report-json.h"
#include "plan/plan.h"
#include "test-fixtures.h"
#include "test-plan-world.h"
#include "test-util.h"

/* The detector, as detect_hogs() with a policy covering every thread we did not pin. */
static void detect(struct world *w) {
        if (w->cfg.n_policies == 0)
                return;
        for (size_t i = 0; i < w->n_tasks; i++)
                world_detect_hog(w, &w->tasks[i], &w->pol[0]);
}

/* Invariants on what is in force after every step. */
static void check_invariants(struct world *w) {
        cpumask_t usable = topology_usable(&w->topo), used;

        cpumask_zero(&used);
        for (size_t i = 0; i < w->n_managed; i++) {
                const struct managed *m = &w->managed[i];
                struct task *t = world_task(w, m->task.tid);
                cpumask_t orig;
                int c;

                ASSERT_EQ(cpumask_weight(&m->mask), 1);
                c = cpumask_next(&m->mask, 0);
                /* never two pinned hogs on one CPU */
                ASSERT_TRUE(!cpumask_test(&used, c));
                cpumask_set(&used, c);
                if (!t)
                        continue;
                ASSERT_OK(cpumask_parse_list(m->original, &orig));
                /* within the task's own allowed set */
                ASSERT_TRUE(cpumask_test(&orig, c));
        }
        /* every SET of this step: a usable CPU */
        for (size_t i = 0; i < w->out.n; i++)
                if (w->out.items[i].verb == VERB_SET) {
                        int c = cpumask_next(&w->out.items[i].mask, 0);
                        ASSERT_EQ(cpumask_weight(&w->out.items[i].mask), 1);
                        ASSERT_TRUE(cpumask_test(&usable, c));
                }
}

static void hogs_setup(struct world *w) {
        w->pol[0] = (struct policy) TEST_POLICY("hogs", DETECT_HOG, ACTION_PIN);
        w->cfg.n_policies = 1;
        w->cfg.daemon.retry_after_usec = 600 * USEC_PER_SEC;
        w->detect = detect;
        w->check = check_invariants;
}

static void world_init_hogs(struct world *w, int n_cpus) {
        world_init(w, n_cpus);
        hogs_setup(w);
}

/* One of the machines of test-plan-machines.h, with a budget that places every hog in one pass. */
static void machine_hogs(struct world *w, enum plan_machine which) {
        world_init_machine(w, which);
        hogs_setup(w);
        w->cfg.daemon.max_actions_per_interval = MAX_TASKS;
}

static struct task *add_task(struct world *w, pid_t tid, double util, double delay, double mig, int last_cpu) {
        char comm[16];

        snprintf(comm, sizeof(comm), "hog%d", (int) tid);
        return world_add_task(w, tid, comm, util, delay, mig, last_cpu);
}

static const struct plan_target_state *hog_state(struct world *w, pid_t tid) {
        char key[128];
        struct task_id id = { .pid = tid, .tid = tid, .start_time = 1000 + tid };

        ASSERT_TRUE(hog_key(&id, key, sizeof(key)));
        return plan_state_find(w->state, key);
}

static unsigned n_pinned(struct world *w) {
        return w->n_managed;
}

/* ---------------------------------------------------------------- tests */

/* Two hogs that hop on a 2-CPU box: one CPU each, after hysteresis, and they stay. */
static void test_two_hogs_pinned(void) {
        struct world w;
        const struct plan_target_state *st;

        world_init_hogs(&w, 2);
        /* both last seen on CPU 0: the kernel just stacked them there */
        add_task(&w, 101, 0.90, 80, 2.0, 0);
        add_task(&w, 102, 0.85, 120, 2.0, 0);
        /* bursty noise: not hogs */
        add_task(&w, 200, 0.20, 5, 3.0, 1);
        add_task(&w, 201, 0.10, 5, 3.0, 0);

        /* Hysteresis=3: nothing in the first two intervals */
        world_steps(&w, 2);
        ASSERT_EQ(n_pinned(&w), 0);
        st = hog_state(&w, 101);
        ASSERT_TRUE(st);
        ASSERT_STREQ(st->state, "watching");
        ASSERT_STREQ(st->why, "watching 2/3");

        world_step(&w);
        ASSERT_EQ(w.n_sets, 2);
        ASSERT_EQ(n_pinned(&w), 2);
        /* the first keeps CPU 0 where it runs, the other gets CPU 1 */
        ASSERT_TRUE(world_pinned_cpu(&w, 101) != world_pinned_cpu(&w, 102));
        ASSERT_TRUE(world_pinned_cpu(&w, 101) == 0 || world_pinned_cpu(&w, 102) == 0);
        ASSERT_EQ(world_managed(&w, 200) == NULL, 1);

        /* pinned: no more migrations, no findings; they stay pinned while they are hogs
         * (long after the decayed migration rate has gone to zero) */
        world_steps(&w, 60);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_EQ(w.total_sets, 2);
        ASSERT_EQ(w.total_releases, 0);
        st = hog_state(&w, 101);
        ASSERT_STREQ(st->state, "pinned");
        ASSERT_TRUE(strncmp(st->why, "pinned to ", 10) == 0);
        world_done(&w);
}

/*
 * In dry-run the pins are reported, once a cool-down: turned off, the
 * daemon makes them at its next pass, not a cool-down after the report.
 * Before, the cool-down a reported pin armed held the real one back for
 * Cooldown= (the topology VM's pairs waited 30 s so).
 */
static void test_dry_run_then_live(void) {
        struct world w;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.90, 80, 2.0, 0);
        add_task(&w, 102, 0.85, 120, 2.0, 0);
        w.dry_run = true;
        world_steps(&w, 3);
        ASSERT_EQ(w.n_sets, 2);                 /* "would pin" */
        ASSERT_EQ(n_pinned(&w), 0);
        world_steps(&w, 5);                     /* reported once, not every pass */
        ASSERT_EQ(w.n_sets, 0);
        w.dry_run = false;
        world_step(&w);
        ASSERT_EQ(w.n_sets, 2);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) != world_pinned_cpu(&w, 102));
        world_done(&w);
}

/*
 * A hog set of which only one member hops: the still sibling (same program,
 * no finding ever) is pinned with it, and an unrelated busy thread that
 * does not hop is not. Before, a sibling that had never hopped was no item
 * of the planner at all: one of two hogs pinned, the other never.
 */
static void test_still_sibling_pinned(void) {
        struct world w;

        world_init_hogs(&w, 4);
        world_add_task(&w, 101, "solver", 0.95, 30, 2.0, 0);
        world_add_task(&w, 102, "solver", 0.95, 30, 0.0, 1);
        world_add_task(&w, 300, "other", 0.95, 30, 0.0, 2);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_TRUE(world_managed(&w, 101) != NULL);
        ASSERT_TRUE(world_managed(&w, 102) != NULL);
        ASSERT_TRUE(world_managed(&w, 300) == NULL);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) != world_pinned_cpu(&w, 102));
        /* the still one keeps the CPU it was on */
        ASSERT_EQ(world_pinned_cpu(&w, 102), 1);
        /* and the set stays placed */
        world_steps(&w, 30);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_EQ(w.total_releases, 0);
        world_done(&w);

        /* A hopping thread that is half of an exchange is no hog, so it heads
         * no set: its still sibling (a server's other busy thread) stays free. */
        world_init_hogs(&w, 4);
        w.pol[1] = (struct policy) TEST_POLICY("pairs", DETECT_PAIR, ACTION_COLOCATE);
        w.cfg.n_policies = 2;
        world_add_task(&w, 101, "server", 0.95, 30, 2.0, 0);
        world_add_task(&w, 102, "server", 0.95, 30, 0.0, 1);
        world_add_task(&w, 103, "client", 0.50, 30, 0.0, 2);
        w.edges[0] = (struct wake_edge) { .waker_tid = 103, .wakee_tid = 101, .wakeups_per_s = 9000 };
        w.edges[1] = (struct wake_edge) { .waker_tid = 101, .wakee_tid = 103, .wakeups_per_s = 9000 };
        w.n_edges = 2;
        world_steps(&w, 6);
        ASSERT_TRUE(world_managed(&w, 101) == NULL);
        ASSERT_TRUE(world_managed(&w, 102) == NULL);
        world_done(&w);
}

/* A lone hog that does not hop is left alone (measured: 0 migrations per 10 s on 6.18). */
static void test_quiet_hog_left_alone(void) {
        struct world w;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.99, 1, 0.0, 1);
        world_steps(&w, 10);
        ASSERT_EQ(n_pinned(&w), 0);
        /* one hop is not "keeps hopping": a single migration in 10 s */
        w.mig_free[0] = 1.0;
        world_step(&w);
        w.mig_free[0] = 0.0;
        world_steps(&w, 10);
        ASSERT_EQ(n_pinned(&w), 0);
        world_done(&w);
}

/*
 * A reading of se.nr_migrations that spans passes (the sampler skips it
 * while a thread runs little) counts every hop since the last one: 5 hops
 * in 5 s, not a pass's share of them. The decayed rate over Window=10s is
 * then 5 / 10; one second's share read 0.1/s, not migrating.
 */
static void test_reading_spans_passes(void) {
        struct world w;
        struct task *t;

        world_init_hogs(&w, 2);
        t = add_task(&w, 101, 0.95, 30, 0, 0);
        world_steps(&w, 3);
        w.mig_free[0] = 1.0;
        t->migrations_window_usec = 5 * USEC_PER_SEC;
        world_step(&w);
        ASSERT_NEAR(hog_state(&w, 101)->migrations_window_per_s, 0.5, 0.01);
        world_done(&w);
}

/* A slow hopper, 5-6 per 10 s as measured on 6.18 with noise, is pinned. */
static void test_slow_hopper_pinned(void) {
        struct world w;
        unsigned i;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 30, 0.55, 0);
        for (i = 0; i < 20 && n_pinned(&w) == 0; i++)
                world_step(&w);
        ASSERT_EQ(n_pinned(&w), 1);
        ASSERT_TRUE(i >= 3);
        ASSERT_EQ(world_pinned_cpu(&w, 101), 0);
        world_done(&w);
}

/* [conservative-smp]: n+1 hogs on n CPUs are never pinned, and the reason is shown. */
static void test_n_plus_one_never_pinned(void) {
        struct world w;
        const struct plan_target_state *st;

        world_init_hogs(&w, 2);
        /* three hogs sharing two CPUs: 66 % each, waiting the rest */
        add_task(&w, 101, 0.66, 330, 3.0, 0);
        add_task(&w, 102, 0.66, 330, 3.0, 1);
        add_task(&w, 103, 0.66, 330, 3.0, 0);
        world_steps(&w, 20);
        ASSERT_EQ(n_pinned(&w), 0);
        st = hog_state(&w, 101);
        ASSERT_TRUE(st);
        ASSERT_STREQ(st->state, "left alone");
        ASSERT_STREQ(st->why, "left alone: 3 hogs > 2 usable CPUs");
        world_done(&w);
}

/* Two pinned hogs, then a third appears: all pins go after hysteresis, none is added. */
static void test_n_plus_one_releases(void) {
        struct world w;
        struct task *t;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 20, 2.0, 0);
        add_task(&w, 102, 0.95, 20, 2.0, 1);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 2);

        /* the third one shares CPU 1 with a pinned hog: 50/50 there, 100 % on CPU 0 */
        t = world_task(&w, 102);
        t->util = 0.5;
        t->run_delay_ms_per_s = 500;
        add_task(&w, 103, 0.5, 500, 1.0, 1);

        world_step(&w);
        ASSERT_EQ(w.n_sets, 0);
        ASSERT_EQ(n_pinned(&w), 2);
        world_step(&w);
        ASSERT_EQ(n_pinned(&w), 2);
        world_step(&w);
        ASSERT_EQ(w.n_releases, 2);
        ASSERT_EQ(w.n_sets, 0);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_STREQ(hog_state(&w, 101)->why, "left alone: 3 hogs > 2 usable CPUs");

        /* while they outnumber the CPUs, nothing is pinned again */
        world_task(&w, 101)->util = 0.66;
        world_task(&w, 101)->run_delay_ms_per_s = 330;
        world_task(&w, 102)->util = 0.66;
        world_task(&w, 102)->run_delay_ms_per_s = 330;
        world_task(&w, 103)->util = 0.66;
        world_task(&w, 103)->run_delay_ms_per_s = 330;
        world_steps(&w, 40);
        ASSERT_EQ(n_pinned(&w), 0);

        /* the third exits: after cool-down and hysteresis, two are pinned again */
        world_remove_task(&w, 103);
        world_task(&w, 101)->util = 0.95;
        world_task(&w, 101)->run_delay_ms_per_s = 10;
        world_task(&w, 102)->util = 0.95;
        world_task(&w, 102)->run_delay_ms_per_s = 10;
        world_steps(&w, 10);
        ASSERT_EQ(n_pinned(&w), 2);
        world_done(&w);
}

/* A busy thread no policy covers still counts: pinning around it would be the n+1 case. */
static void test_uncovered_busy_thread_counts(void) {
        struct world w;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.66, 330, 3.0, 0);
        add_task(&w, 102, 0.66, 330, 3.0, 1);
        add_task(&w, 103, 0.66, 330, 0.0, 0);   /* busy, but never a finding: does not hop */
        world_steps(&w, 10);
        ASSERT_EQ(n_pinned(&w), 0);
        world_done(&w);
}

/* The daemon's own thread, busy and waiting behind the hogs, is no third hog. */
static void test_own_thread_is_no_hog(void) {
        struct world w;

        world_init_hogs(&w, 2);
        w.self_pid = 103;
        add_task(&w, 101, 0.95, 20, 2.0, 0);
        add_task(&w, 102, 0.95, 20, 2.0, 1);
        add_task(&w, 103, 0.40, 500, 0.0, 0);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 2);
        w.self_pid = 0;   /* any other process so busy is a third hog */
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 0);
        world_done(&w);
}

/*
 * With Scope= set, a thread outside it is load: it counts by the CPU it
 * takes, not by its demand. A duty-cycled job next door (40 % busy, waiting
 * behind the pinned hog the rest: 90 % demand) is no third hog; a real hog
 * outside (95 %) is, and the pins go (the n+1 case).
 */
static void test_scope_outside_is_load(void) {
        char *scope[] = { (char *) "/in", NULL };
        struct proc_info in = { .pid = 101, .cgroup = (char *) "/in" }, out = { .pid = 103, .cgroup = (char *) "/out" };
        struct world w;

        world_init_hogs(&w, 2);
        w.cfg.daemon.scope = scope;
        add_task(&w, 101, 0.95, 20, 2.0, 0)->proc = &in;
        add_task(&w, 102, 0.95, 20, 2.0, 1)->proc = &in;
        add_task(&w, 103, 0.40, 500, 0.0, 0)->proc = &out;
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 2);
        world_task(&w, 103)->util = 0.95;
        world_task(&w, 103)->run_delay_ms_per_s = 50;
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_STREQ(hog_state(&w, 101)->why, "left alone: 3 hogs > 2 usable CPUs");
        w.cfg.daemon.scope = NULL;
        world_done(&w);
}

/* a busy thread that never hops (no finding), allowed on list */
static void add_busy_on(struct world *w, pid_t tid, const char *list, int last_cpu) {
        struct task *t = add_task(w, tid, 0.95, 20, 0.0, last_cpu);

        ASSERT_OK(cpumask_parse_list(list, &t->allowed));
}

/* four CPUs, two hopping hogs, a policy that pins on CPUs 0-1 only (CPUs=) */
static void two_hogs_on_0_1(struct world *w) {
        world_init_hogs(w, 4);
        ASSERT_OK(cpumask_parse_list("0-1", &w->pol[0].cpus_mask));
        add_task(w, 101, 0.95, 10, 2.0, 0);
        add_task(w, 102, 0.95, 10, 2.0, 1);
}

/*
 * Hogs to be pinned on CPUs 0-1 of four (the policy's CPUs=): a busy
 * thread that an idle CPU outside them can take does not compete for
 * theirs; one that no CPU outside is left for does. Before, any busy
 * thread allowed on CPU 0 or 1 counted, and one busy job on CPU 3 of a
 * 4-CPU host read "3 hogs > 2 usable CPUs": every pin let go.
 */
static void test_busy_elsewhere_no_competitor(void) {
        struct world w;

        /* two busy jobs allowed anywhere: CPUs 2 and 3 take them */
        two_hogs_on_0_1(&w);
        add_busy_on(&w, 201, "0-3", 2);
        add_busy_on(&w, 202, "0-3", 3);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_EQ(w.state->hog_overcommit_hogs, 2);

        /* a third: one of the three has no CPU outside, 3 > 2, the pins go */
        add_busy_on(&w, 203, "0-3", 0);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_STREQ(hog_state(&w, 101)->why, "left alone: 3 hogs > 2 usable CPUs");
        world_done(&w);

        /* the CPUs outside go first to the threads that can run nowhere
         * else: two pinned by someone to 2-3 leave none for a free one
         * (met first, the free one would take CPU 2 and read as no
         * competitor, and the second of the pinned ones go uncounted) */
        two_hogs_on_0_1(&w);
        add_busy_on(&w, 201, "0-3", 0);
        add_busy_on(&w, 202, "2-3", 2);
        add_busy_on(&w, 203, "2-3", 3);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_EQ(w.state->hog_overcommit_hogs, 3);
        world_done(&w);

        /* a matching, not first come: 201 (2-3) may take CPU 3 so that 202
         * (0-2) has CPU 2; no thread competes for the hogs' CPUs */
        two_hogs_on_0_1(&w);
        add_busy_on(&w, 201, "2-3", 2);
        add_busy_on(&w, 202, "0-2", 2);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_EQ(w.state->hog_overcommit_hogs, 2);
        world_done(&w);

        /* an isolated CPU is no room: the balancer never moves a thread
         * there, so of two busy jobs one has CPU 3 and the other competes */
        two_hogs_on_0_1(&w);
        cpumask_set(&w.topo.isolated, 2);
        add_busy_on(&w, 201, "0-3", 3);
        add_busy_on(&w, 202, "0-3", 0);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_EQ(w.state->hog_overcommit_hogs, 3);
        world_done(&w);

        /* a hopping thread of the policy allowed only outside CPUs= is no
         * hog there: it has CPU 3 to itself */
        two_hogs_on_0_1(&w);
        {
                struct task *t = add_task(&w, 103, 0.95, 10, 2.0, 3);
                ASSERT_OK(cpumask_parse_list("3", &t->allowed));
        }
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_EQ(w.state->hog_overcommit_hogs, 2);
        world_done(&w);

        /* hogs free to run anywhere: U is every CPU, every busy thread counts */
        world_init_hogs(&w, 4);
        for (pid_t tid = 101; tid <= 104; tid++)
                add_task(&w, tid, 0.95, 10, 2.0, (int) (tid - 101));
        add_busy_on(&w, 201, "0-3", 0);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_EQ(w.state->hog_overcommit_hogs, 5);
        world_done(&w);
}

/* Never onto isolated, nohz_full or offline CPUs; within the task's allowed set. */
static void test_unusable_cpus(void) {
        struct world w;

        world_init_hogs(&w, 6);
        cpumask_set(&w.topo.isolated, 2);
        cpumask_set(&w.topo.nohz_full, 3);
        cpumask_clear(&w.topo.online, 4);
        w.cpus[4].online = false;
        /* hogs last seen on the unusable CPUs */
        add_task(&w, 101, 0.95, 10, 2.0, 2);
        add_task(&w, 102, 0.95, 10, 2.0, 3);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 2);
        for (pid_t tid = 101; tid <= 102; tid++) {
                int c = world_pinned_cpu(&w, tid);
                ASSERT_TRUE(c == 0 || c == 1 || c == 5);
        }
        world_done(&w);

        /* only CPU 0 and 1 usable, a third hog: 3 > 2, none pinned */
        world_init_hogs(&w, 4);
        cpumask_set(&w.topo.isolated, 2);
        cpumask_set(&w.topo.nohz_full, 3);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 1);
        add_task(&w, 103, 0.95, 10, 2.0, 2);
        world_steps(&w, 6);
        ASSERT_EQ(n_pinned(&w), 0);
        world_done(&w);

        /* allowed set: a hog allowed 2-3 only, last seen on 0 (stale), gets 2 or 3 */
        world_init_hogs(&w, 4);
        {
                struct task *t = add_task(&w, 101, 0.95, 10, 2.0, 0);
                cpumask_t a;
                ASSERT_OK(cpumask_parse_list("2-3", &a));
                t->allowed = a;
        }
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 1);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) == 2 || world_pinned_cpu(&w, 101) == 3);
        world_done(&w);

        /* the policy's CPUs= restricts too */
        world_init_hogs(&w, 4);
        ASSERT_OK(cpumask_parse_list("3", &w.pol[0].cpus_mask));
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 1);
        world_steps(&w, 6);
        /* two hogs, one CPU allowed by the policy: 2 > 1, none */
        ASSERT_EQ(n_pinned(&w), 0);
        world_done(&w);
}

/* Prefer the CPU the hog already uses. */
static void test_prefer_last_cpu(void) {
        struct world w;

        world_init_hogs(&w, 8);
        add_task(&w, 101, 0.95, 10, 2.0, 5);
        add_task(&w, 102, 0.95, 10, 2.0, 2);
        add_task(&w, 103, 0.95, 10, 2.0, 7);
        world_steps(&w, 3);
        ASSERT_EQ(world_pinned_cpu(&w, 101), 5);
        ASSERT_EQ(world_pinned_cpu(&w, 102), 2);
        ASSERT_EQ(world_pinned_cpu(&w, 103), 7);
        world_done(&w);
}

/*
 * 2 sockets, 2 cores each, 2 SMT threads per core, one LLC per socket:
 * CPUs 0,1 = socket 0 cores 0,1; 2,3 = socket 1 cores 2,3; 4-7 their
 * siblings (4 with 0, 5 with 1, ...). 4 hogs → one per core, two per LLC.
 */
static void smt_topology(struct world *w) {
        world_init_hogs(w, 8);
        for (int c = 0; c < 8; c++) {
                int core = c % 4, pkg = core / 2;
                w->cpus[c] = (struct topo_cpu) { .online = true, .core_id = core, .llc_id = pkg * 2,
                                                 .package_id = pkg, .node = pkg };
        }
        w->topo.n_llcs = 2;
        w->topo.n_nodes = 2;
        w->topo.n_cores = 4;
}

static void test_smt_two_llcs(void) {
        struct world w;
        int cores[4] = {}, llcs[4] = {};

        smt_topology(&w);
        /* all four stacked on socket 0, two of them on SMT siblings of one core */
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 4);
        add_task(&w, 103, 0.95, 10, 2.0, 1);
        add_task(&w, 104, 0.95, 10, 2.0, 5);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 4);
        for (pid_t tid = 101; tid <= 104; tid++) {
                int c = world_pinned_cpu(&w, tid);
                ASSERT_TRUE(c >= 0);
                cores[w.cpus[c].core_id]++;
                llcs[w.cpus[c].llc_id]++;
        }
        /* one per core: no two hogs on SMT siblings */
        for (int k = 0; k < 4; k++)
                ASSERT_EQ(cores[k], 1);
        /* two per LLC */
        ASSERT_EQ(llcs[0], 2);
        ASSERT_EQ(llcs[2], 2);
        /* and the first one stayed where it was */
        ASSERT_EQ(world_pinned_cpu(&w, 101), 0);
        world_done(&w);

        /* 2 hogs on that machine: one per socket */
        smt_topology(&w);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 1);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_TRUE(w.cpus[world_pinned_cpu(&w, 101)].llc_id != w.cpus[world_pinned_cpu(&w, 102)].llc_id);
        world_done(&w);

        /* one socket, one LLC, 4 cores x 2 threads: two hogs on sibling threads are split */
        world_init_hogs(&w, 8);
        for (int c = 0; c < 8; c++)
                w.cpus[c].core_id = c % 4;
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 4);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 2);
        ASSERT_TRUE(w.cpus[world_pinned_cpu(&w, 101)].core_id != w.cpus[world_pinned_cpu(&w, 102)].core_id);
        /* and one of them stayed where it was */
        ASSERT_TRUE(world_pinned_cpu(&w, 101) == 0 || world_pinned_cpu(&w, 102) == 4);
        world_done(&w);

        /* 6 hogs on 8 threads: SMT siblings are used only once every core has one */
        smt_topology(&w);
        for (pid_t tid = 101; tid <= 106; tid++)
                add_task(&w, tid, 0.95, 10, 2.0, 0);
        w.cfg.daemon.max_actions_per_interval = 8;
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 6);
        memset(cores, 0, sizeof(cores));
        for (pid_t tid = 101; tid <= 106; tid++)
                cores[w.cpus[world_pinned_cpu(&w, tid)].core_id]++;
        for (int k = 0; k < 4; k++)
                ASSERT_TRUE(cores[k] >= 1 && cores[k] <= 2);
        world_done(&w);
}

/*
 * The machines of tests/machines.c, as struct literals. Each hog is added
 * last seen on a CPU the planner should not keep it on, so a test fails
 * if "prefer the CPU it is on" wins over the machine's shape.
 */

/* arm64 big.LITTLE: little CPUs 0-3 (cpu_capacity 446), big 4-7; one core each, one LLC. */
static void biglittle_topology(struct world *w) {
        world_init_hogs(w, 8);
        for (int c = 0; c < 8; c++)
                w->cpus[c].capacity = c < 4 ? 446 : 1024;
        w->topo.n_capacities = 2;
}

/* Hogs first..last (tids) per core id, per LLC id and per node, after they were placed. */
struct placement {
        int core[MAX_CPUS], llc[MAX_CPUS], node[MAX_CPUS], capacity_1024;
};

static struct placement placed(struct world *w, pid_t first, pid_t last) {
        struct placement p = {};

        for (pid_t tid = first; tid <= last; tid++) {
                int c = world_pinned_cpu(w, tid);

                ASSERT_TRUE(c >= 0);
                p.core[w->cpus[c].core_id]++;
                p.llc[w->cpus[c].llc_id]++;
                p.node[w->cpus[c].node]++;
                p.capacity_1024 += w->cpus[c].capacity == 1024;
        }
        return p;
}

/* n hogs (tids 101...) last seen on CPUs from, from + 1, ... wrapping after span: all pinned, where. */
static struct placement run_hogs(struct world *w, int n, int from, int span) {
        for (int i = 0; i < n; i++)
                add_task(w, 101 + i, 0.95, 10, 2.0, from + i % span);
        world_steps(w, 3);
        ASSERT_EQ(n_pinned(w), n);
        return placed(w, 101, 100 + n);
}

static void test_hybrid(void) {
        struct placement p;
        struct world w;
        int doubled = 0;

        /* 8 hogs on E cores: one per P core, none left on an E core or a P core's second thread. */
        machine_hogs(&w, PLAN_MACHINE_HYBRID);
        p = run_hogs(&w, 8, 16, 8);
        ASSERT_EQ(p.capacity_1024, 8);
        for (int k = 0; k < 16; k += 2)
                ASSERT_EQ(p.core[k], 1);
        world_done(&w);

        /* 12: the P cores, then 4 E cores; no core shared while one is idle. */
        machine_hogs(&w, PLAN_MACHINE_HYBRID);
        p = run_hogs(&w, 12, 16, 12);
        ASSERT_EQ(p.capacity_1024, 8);
        for (int k = 0; k < 32; k++)
                ASSERT_TRUE(p.core[k] <= 1);
        world_done(&w);

        /* 26 on 24 cores, all seen on P threads: every E core before a P core's
         * second thread, so exactly two P cores carry two hogs. */
        machine_hogs(&w, PLAN_MACHINE_HYBRID);
        p = run_hogs(&w, 26, 0, 16);
        for (int k = 16; k < 32; k++)
                ASSERT_EQ(p.core[k], 1);
        for (int k = 0; k < 16; k += 2) {
                ASSERT_TRUE(p.core[k] >= 1 && p.core[k] <= 2);
                doubled += p.core[k] == 2;
        }
        ASSERT_EQ(doubled, 2);
        world_done(&w);
}

static void test_dual_ccd(void) {
        struct placement p;
        struct world w;

        /* 2 hogs on one CCD: one per L3. */
        machine_hogs(&w, PLAN_MACHINE_DUAL_CCD);
        p = run_hogs(&w, 2, 0, 2);
        ASSERT_EQ(p.llc[0], 1);
        ASSERT_EQ(p.llc[8], 1);
        world_done(&w);

        /* 16 hogs all seen on CPU 0: one per core, 8 per L3, no SMT thread shared. */
        machine_hogs(&w, PLAN_MACHINE_DUAL_CCD);
        p = run_hogs(&w, 16, 0, 1);
        for (int k = 0; k < 16; k++)
                ASSERT_EQ(p.core[k], 1);
        ASSERT_EQ(p.llc[0], 8);
        ASSERT_EQ(p.llc[8], 8);
        world_done(&w);

        /* 2 sockets x 8 cores x SMT2, a node each: 4 hogs seen on node 0: 2 per node, a core each. */
        machine_hogs(&w, PLAN_MACHINE_2S8C);
        p = run_hogs(&w, 4, 0, 4);
        ASSERT_EQ(p.node[0], 2);
        ASSERT_EQ(p.node[1], 2);
        for (int k = 0; k < 16; k++)
                ASSERT_TRUE(p.core[k] <= 1);
        world_done(&w);
}

/*
 * 2 sockets x 4 CCDs x 16 cores x SMT2 (256 CPUs). 16 hogs all seen on
 * CPU 0: 8 per node, 2 per L3, one per core. 136
 * hogs: every one of the 128 cores gets one before 8 of them get a second.
 * With node 1 and the first L3's other CPUs isolated or nohz_full, 8 hogs
 * go to the 8 cores left, never to a reserved CPU (check_invariants).
 */
static void test_256(void) {
        struct placement p;
        struct world w;
        int doubled = 0;

        machine_hogs(&w, PLAN_MACHINE_256);
        p = run_hogs(&w, 16, 0, 1);
        ASSERT_EQ(p.node[0], 8);
        ASSERT_EQ(p.node[1], 8);
        for (int llc = 0; llc < 128; llc += 16)
                ASSERT_EQ(p.llc[llc], 2);
        for (int k = 0; k < 128; k++)
                ASSERT_TRUE(p.core[k] <= 1);
        world_done(&w);

        machine_hogs(&w, PLAN_MACHINE_256);
        p = run_hogs(&w, 136, 0, 1);
        for (int k = 0; k < 128; k++) {
                ASSERT_TRUE(p.core[k] >= 1 && p.core[k] <= 2);
                doubled += p.core[k] == 2;
        }
        ASSERT_EQ(doubled, 8);
        world_done(&w);

        machine_hogs(&w, PLAN_MACHINE_256);
        for (int c = 64; c < 128; c++) {
                cpumask_set(&w.topo.isolated, c);
                cpumask_set(&w.topo.nohz_full, c + 128);
        }
        for (int c = 8; c < 64; c++)
                cpumask_set(c % 2 ? &w.topo.nohz_full : &w.topo.isolated, c);
        for (int c = 136; c < 192; c++)
                cpumask_set(&w.topo.isolated, c);
        p = run_hogs(&w, 8, 64, 64);   /* seen on the reserved node 1 */
        for (int k = 0; k < 8; k++)
                ASSERT_EQ(p.core[k], 1);
        world_done(&w);
}

static void test_biglittle(void) {
        struct world w;

        /* 2 hogs on little CPUs: moved to big ones. */
        biglittle_topology(&w);
        ASSERT_EQ(run_hogs(&w, 2, 0, 2).capacity_1024, 2);
        world_done(&w);

        /* 5: the 4 big CPUs and one little. */
        biglittle_topology(&w);
        w.cfg.daemon.max_actions_per_interval = 8;
        ASSERT_EQ(run_hogs(&w, 5, 0, 5).capacity_1024, 4);
        world_done(&w);
}

/* A hog that stops being one is released after hysteresis, not before. */
static void test_release_when_not_hog(void) {
        struct world w;
        const struct plan_target_state *st;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 1);

        world_task(&w, 101)->util = 0.05;
        world_task(&w, 101)->run_delay_ms_per_s = 0;
        world_step(&w);
        ASSERT_EQ(n_pinned(&w), 1);
        st = hog_state(&w, 101);
        ASSERT_STREQ(st->state, "pinned");
        ASSERT_STREQ(st->why, "pinned to 0 (not a hog for 1/3 intervals)");
        /* a blip: back to busy resets the count */
        world_task(&w, 101)->util = 0.95;
        world_step(&w);
        world_task(&w, 101)->util = 0.05;
        world_steps(&w, 2);
        ASSERT_EQ(n_pinned(&w), 1);
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(n_pinned(&w), 0);
        st = hog_state(&w, 101);
        ASSERT_STREQ(st->state, "released");
        ASSERT_TRUE(strstr(st->why, "no longer a hog"));

        /* busy and hopping again: the cool-down (30 s) holds it back */
        world_task(&w, 101)->util = 0.95;
        world_steps(&w, 10);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_STREQ(hog_state(&w, 101)->state, "cooldown");
        world_steps(&w, 25);
        ASSERT_EQ(n_pinned(&w), 1);
        world_done(&w);
}

/* A pinned hog sharing its CPU with noise: util dips but demand stays, so it stays pinned. */
static void test_pinned_hog_with_noise_stays(void) {
        struct world w;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 1);
        world_task(&w, 101)->util = 0.6;
        world_task(&w, 101)->run_delay_ms_per_s = 400;
        world_steps(&w, 10);
        ASSERT_EQ(n_pinned(&w), 1);
        world_done(&w);
}

/* Hysteresis: the finding must persist K intervals; an interruption restarts the count. */
static void test_hysteresis(void) {
        struct world w;

        world_init_hogs(&w, 2);
        w.cfg.daemon.hysteresis_intervals = 5;
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        world_steps(&w, 3);
        /* not busy for one interval */
        world_task(&w, 101)->util = 0.1;
        world_task(&w, 101)->run_delay_ms_per_s = 0;
        world_step(&w);
        world_task(&w, 101)->util = 0.95;
        world_steps(&w, 4);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_STREQ(hog_state(&w, 101)->why, "watching 4/5");
        world_step(&w);
        ASSERT_EQ(n_pinned(&w), 1);
        world_done(&w);
}

/* MaxActionsPerInterval: never more SETs in one interval; the rest follow. */
static void test_budget(void) {
        struct world w;

        world_init_hogs(&w, 8);
        w.cfg.daemon.max_actions_per_interval = 2;
        for (pid_t tid = 101; tid <= 106; tid++)
                add_task(&w, tid, 0.95, 10, 2.0, (int) (tid - 101));
        world_steps(&w, 2);
        world_step(&w);
        ASSERT_EQ(w.n_sets, 2);
        world_step(&w);
        ASSERT_EQ(w.n_sets, 2);
        world_step(&w);
        ASSERT_EQ(w.n_sets, 2);
        ASSERT_EQ(n_pinned(&w), 6);
        world_step(&w);
        ASSERT_EQ(w.n_sets, 0);
        world_done(&w);
}

/* Do-not-retry (an effect check undid it): blocked by the action's key or the finding key. */
static void test_block(void) {
        struct world w;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 1);
        ASSERT_OK(plan_state_block(w.state, "task:101:1101", w.now + 20 * USEC_PER_SEC, "got slower"));
        ASSERT_OK(plan_state_block(w.state, "hog:102:1102", w.now + 40 * USEC_PER_SEC, "got slower"));
        world_steps(&w, 5);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_STREQ(hog_state(&w, 101)->state, "blocked");
        ASSERT_TRUE(strstr(hog_state(&w, 101)->why, "got slower"));
        world_steps(&w, 20);
        ASSERT_EQ(n_pinned(&w), 1);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0);
        world_steps(&w, 20);
        ASSERT_EQ(n_pinned(&w), 2);
        world_done(&w);
}

/* Hotplug: the pinned CPU goes offline → RELEASE, then SET to a free CPU in the same interval. */
static void test_hotplug_moves(void) {
        struct world w;
        int c;

        world_init_hogs(&w, 4);
        add_task(&w, 101, 0.95, 10, 2.0, 1);
        add_task(&w, 102, 0.95, 10, 2.0, 2);
        world_steps(&w, 3);
        ASSERT_EQ(world_pinned_cpu(&w, 101), 1);

        /* CPU 1 goes offline; the snapshot still shows the mask we set */
        cpumask_clear(&w.topo.online, 1);
        w.cpus[1].online = false;
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(w.n_sets, 1);
        ASSERT_EQ(w.out.items[0].verb, VERB_RELEASE);
        ASSERT_EQ(w.out.items[1].verb, VERB_SET);
        c = world_pinned_cpu(&w, 101);
        ASSERT_TRUE(c == 0 || c == 3);
        ASSERT_EQ(world_pinned_cpu(&w, 102), 2);
        ASSERT_TRUE(strstr(w.out.items[0].reason, "CPU 1 is no longer usable"));

        /* isolated at runtime: same */
        cpumask_set(&w.topo.isolated, c);
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(w.n_sets, 1);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0 && world_pinned_cpu(&w, 101) != c && world_pinned_cpu(&w, 101) != 1);
        world_done(&w);

        /* no CPU left to move to: released, not stuck, not stacked */
        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 1);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 2);
        cpumask_clear(&w.topo.online, 1);
        w.cpus[1].online = false;
        world_step(&w);
        ASSERT_TRUE(w.n_releases >= 1);
        ASSERT_EQ(w.n_sets, 0);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) == 0 || world_pinned_cpu(&w, 101) == -1);
        ASSERT_TRUE(world_pinned_cpu(&w, 102) == -1);
        world_done(&w);
}

/* cpuset change: the task's allowed set no longer holds the pinned CPU → release and move. */
static void test_cpuset_change(void) {
        struct world w;
        struct task *t;
        cpumask_t a;

        world_init_hogs(&w, 4);
        t = add_task(&w, 101, 0.95, 10, 2.0, 1);
        world_steps(&w, 3);
        ASSERT_EQ(world_pinned_cpu(&w, 101), 1);

        /* the cpuset became 2-3: the kernel reset the task's mask to it */
        ASSERT_OK(cpumask_parse_list("2-3", &a));
        t->allowed = a;
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(w.n_sets, 1);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) == 2 || world_pinned_cpu(&w, 101) == 3);
        world_done(&w);

        /* someone ran taskset 0-1 (pinned CPU still in it): released, not moved */
        world_init_hogs(&w, 4);
        t = add_task(&w, 101, 0.95, 10, 2.0, 1);
        world_steps(&w, 3);
        ASSERT_EQ(world_pinned_cpu(&w, 101), 1);
        ASSERT_OK(cpumask_parse_list("0-1", &a));
        t->allowed = a;
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(w.n_sets, 0);
        ASSERT_TRUE(strstr(hog_state(&w, 101)->why, "someone else"));
        world_done(&w);
}

/* Exit → release; policy turned into report-only → release and never pin. */
static void test_exit_and_policy_change(void) {
        struct world w;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 1);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 2);
        world_remove_task(&w, 101);
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(n_pinned(&w), 1);

        w.pol[0].action = ACTION_REPORT;
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(n_pinned(&w), 0);
        add_task(&w, 103, 0.95, 10, 2.0, 0);
        world_steps(&w, 10);
        ASSERT_EQ(n_pinned(&w), 0);
        ASSERT_STREQ(hog_state(&w, 103)->state, "report");
        world_done(&w);
}

/* The policy is removed by a reload: its pins go (known as hog pins by their reason). */
static void test_policy_removed(void) {
        struct world w;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        world_steps(&w, 3);
        ASSERT_EQ(n_pinned(&w), 1);
        w.cfg.n_policies = 0;
        world_step(&w);
        ASSERT_EQ(w.n_releases, 1);
        ASSERT_EQ(n_pinned(&w), 0);
        world_steps(&w, 40);
        ASSERT_EQ(w.total_sets, 1);
        world_done(&w);
}

/* Property: random machines and hogs, the invariants hold at every step (checked in world_step()). */
static void test_random(void) {
        unsigned seed = 12345;

        for (int round = 0; round < 200; round++) {
                struct world w;
                int n_cpus = 1 + rand_r(&seed) % 8;
                int n_hogs = rand_r(&seed) % 10;

                world_init_hogs(&w, n_cpus);
                w.cfg.daemon.hysteresis_intervals = 1 + rand_r(&seed) % 3;
                w.cfg.daemon.cooldown_usec = (rand_r(&seed) % 5) * USEC_PER_SEC;
                for (int c = 0; c < n_cpus; c++) {
                        w.cpus[c].core_id = c / 2 * 2;
                        w.cpus[c].llc_id = c / 4 * 4;
                        if (rand_r(&seed) % 8 == 0)
                                cpumask_set(&w.topo.isolated, c);
                }
                for (int h = 0; h < n_hogs; h++) {
                        struct task *t = add_task(&w, 100 + h, 0.5 + (rand_r(&seed) % 50) / 100.0,
                                                  rand_r(&seed) % 400, (rand_r(&seed) % 4) * 0.5,
                                                  rand_r(&seed) % n_cpus);
                        if (rand_r(&seed) % 4 == 0) {
                                cpumask_zero(&t->allowed);
                                for (int c = 0; c < n_cpus; c++)
                                        if (rand_r(&seed) % 2)
                                                cpumask_set(&t->allowed, c);
                                if (cpumask_empty(&t->allowed))
                                        cpumask_set(&t->allowed, 0);
                        }
                }
                for (int s = 0; s < 30; s++) {
                        world_step(&w);
                        /* never pinned while the busy threads outnumber the CPUs (as the planner
                         * counts them: test_n_plus_one_* check the counting itself) */
                        if (w.state->hog_overcommit_seen >= 1)
                                ASSERT_EQ(w.n_sets, 0);
                        if (w.state->hog_overcommit_seen >= w.cfg.daemon.hysteresis_intervals)
                                ASSERT_EQ(w.n_managed, 0);
                        /* perturb: hogs come and go, CPUs get isolated */
                        if (rand_r(&seed) % 5 == 0 && w.n_tasks > 0) {
                                struct task *t = &w.tasks[rand_r(&seed) % w.n_tasks];
                                t->util = (rand_r(&seed) % 100) / 100.0;
                                t->run_delay_ms_per_s = rand_r(&seed) % 300;
                        }
                        if (rand_r(&seed) % 15 == 0) {
                                int c = rand_r(&seed) % n_cpus;
                                if (cpumask_test(&w.topo.isolated, c))
                                        cpumask_clear(&w.topo.isolated, c);
                                else
                                        cpumask_set(&w.topo.isolated, c);
                        }
                }
                world_done(&w);
        }
}

/* affctl hogs: the JSON carries state, why and evidence. */
static void test_json(void) {
        struct world w;
        struct json_object *o = NULL, *hogs, *h, *v;
        bool found = false;

        world_init_hogs(&w, 2);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        world_steps(&w, 4);
        ASSERT_OK(hogs_to_json(w.state, &w.findings, &o));
        ASSERT_TRUE(json_object_object_get_ex(o, "hogs", &hogs));
        for (size_t i = 0; i < json_object_array_length(hogs); i++) {
                h = json_object_array_get_idx(hogs, i);
                ASSERT_TRUE(json_object_object_get_ex(h, "tid", &v));
                if (json_object_get_int(v) != 101)
                        continue;
                found = true;
                ASSERT_TRUE(json_object_object_get_ex(h, "state", &v));
                ASSERT_STREQ(json_object_get_string(v), "pinned");
                ASSERT_TRUE(json_object_object_get_ex(h, "why", &v));
                ASSERT_STREQ(json_object_get_string(v), "pinned to 0");
                ASSERT_TRUE(json_object_object_get_ex(h, "cpu", &v));
                ASSERT_EQ(json_object_get_int(v), 0);
                ASSERT_TRUE(json_object_object_get_ex(h, "comm", &v));
                ASSERT_STREQ(json_object_get_string(v), "hog101");
                ASSERT_TRUE(json_object_object_get_ex(h, "util", &v));
                ASSERT_NEAR(json_object_get_double(v), 0.95, 1e-9);
        }
        ASSERT_TRUE(found);
        ASSERT_TRUE(json_object_object_get_ex(o, "groups", &v));
        ASSERT_TRUE(json_object_object_get_ex(o, "rundelay", &v));
        json_object_put(o);
        world_done(&w);
}

/* The claim map that plan_pairs() gets: every hog CPU is marked 1. */
static void test_claims_for_pairs(void) {
        struct world w;
        struct snapshot snap;
        struct plan_input in;
        struct plan_ctx ctx;
        int claim[4] = {};

        world_init_hogs(&w, 4);
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 0.0, 3);   /* a hog that does not hop: not pinned, still a hog's CPU */
        world_steps(&w, 3);
        ASSERT_EQ(world_pinned_cpu(&w, 101), 0);

        snap = (struct snapshot) { .window_usec = USEC_PER_SEC, .topo = &w.topo, .tasks = w.tasks, .n_tasks = w.n_tasks };
        in = (struct plan_input) { .snap = &snap, .config = &w.cfg, .findings = &w.findings,
                                   .managed = w.managed, .n_managed = w.n_managed, .now_usec = w.now };
        /* the quiet hog needs a state to be known as a hog: it has one only if it was a finding once */
        {
                struct finding f = { .kind = DETECT_HOG, .policy = &w.pol[0], .n_members = 1,
                                     .members[0] = world_task(&w, 102)->id, .last_cpu = 3 };
                ASSERT_OK(findings_add(&w.findings, &f));
        }
        action_list_clear(&w.out);
        ctx = (struct plan_ctx) { .state = w.state, .in = &in, .out = &w.out, .cpu_claim = claim,
                                  .actions_left = 4 };
        ASSERT_OK(plan_hogs(&ctx));
        ASSERT_EQ(claim[0], 1);
        ASSERT_EQ(claim[3], 1);
        ASSERT_EQ(claim[1], 0);
        ASSERT_EQ(claim[2], 0);
        world_done(&w);
}

/*
 * A CPU is claimed for busy threads left alone when they use a hog's worth
 * of it: a thread at 90 % demand but 47 % util (a MariaDB connection
 * thread waiting behind three others) claims nothing; two stacked at half
 * a CPU each do, as does one at 95 %.
 */
static void test_claims_by_use(void) {
        struct world w;
        struct snapshot snap;
        struct plan_input in;
        struct plan_ctx ctx;
        int claim[4] = {};
        const pid_t quiet[] = { 102, 103, 104, 105 };

        world_init_hogs(&w, 4);
        add_task(&w, 102, 0.47, 430, 0.0, 1);
        add_task(&w, 103, 0.50, 500, 0.0, 2);
        add_task(&w, 104, 0.50, 500, 0.0, 2);
        add_task(&w, 105, 0.95, 50, 0.0, 3);
        for (size_t i = 0; i < ELEMENTSOF(quiet); i++) {
                struct finding f = { .kind = DETECT_HOG, .policy = &w.pol[0], .n_members = 1,
                                     .members[0] = world_task(&w, quiet[i])->id,
                                     .last_cpu = world_task(&w, quiet[i])->last_cpu };
                ASSERT_OK(findings_add(&w.findings, &f));
        }
        snap = (struct snapshot) { .window_usec = USEC_PER_SEC, .topo = &w.topo, .tasks = w.tasks, .n_tasks = w.n_tasks };
        in = (struct plan_input) { .snap = &snap, .config = &w.cfg, .findings = &w.findings,
                                   .managed = w.managed, .n_managed = w.n_managed, .now_usec = w.now };
        ctx = (struct plan_ctx) { .state = w.state, .in = &in, .out = &w.out, .cpu_claim = claim,
                                  .actions_left = 4 };
        ASSERT_OK(plan_hogs(&ctx));
        ASSERT_EQ(w.out.n, 0);
        ASSERT_EQ(claim[0], 0);
        ASSERT_EQ(claim[1], 0);
        ASSERT_EQ(claim[2], 1);
        ASSERT_EQ(claim[3], 1);
        world_done(&w);
}

/*
 * A busy thread that wakes another at pair rates is half of an exchange,
 * not an independent hog (redis-benchmark with 50 connections: util 0.96,
 * hopping; pinned, the kernel moved Redis onto its CPU). The two real
 * hogs are pinned; it is left alone and claims no CPU.
 */
/* The hog detector, and a one-way finding of 102 and 105, a helper of its own process (a feeder
 * finding: detect-pair.c no longer makes one of a helper that wakes nobody, but whichever thread
 * wakes which, no feeder finding exempts a hog). */
static void detect_with_feeder(struct world *w) {
        struct finding f = { .kind = DETECT_PAIR, .shape = PAIR_FEEDER, .policy = &w->pol[1], .n_members = 2 };

        detect(w);
        f.members[0] = world_task(w, 102)->id;
        f.members[1] = world_task(w, 105)->id;
        ASSERT_OK(findings_add(&w->findings, &f));
}

/* kworker: 104 is a kernel thread, and the exchange with it no pair: 103 is a hog */
static void exchange_case(bool kworker) {
        struct world w;
        const struct plan_target_state *st;

        world_init_hogs(&w, 4);
        w.pol[1] = (struct policy) TEST_POLICY("pairs", DETECT_PAIR, ACTION_COLOCATE);
        w.cfg.n_policies = 2;
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        add_task(&w, 102, 0.95, 10, 2.0, 1);
        add_task(&w, 103, 0.96, 25, 2.0, 2);   /* the busy client */
        add_task(&w, 104, 0.55, 40, 5.0, 3);   /* its server */
        add_task(&w, 105, 0.05, 0, 0.0, 3);    /* 102's helper */
        world_task(&w, 105)->id.pid = 102;
        w.detect = detect_with_feeder;
        w.edges[0] = (struct wake_edge) { .waker_tid = 103, .wakee_tid = 104, .wakeups_per_s = 9000 };
        w.edges[1] = (struct wake_edge) { .waker_tid = 101, .wakee_tid = 101, .wakeups_per_s = 9000 }; /* self: no */
        w.edges[2] = (struct wake_edge) { .waker_tid = 104, .wakee_tid = 103, .wakeups_per_s = 9000 };
        /* 102 posts to a helper 400 times a second and is never woken back: still a hog */
        w.edges[3] = (struct wake_edge) { .waker_tid = 102, .wakee_tid = 105, .wakeups_per_s = 400 };
        w.n_edges = 4;
        world_task(&w, 104)->kthread = kworker;
        world_steps(&w, 5);
        ASSERT_TRUE(world_pinned_cpu(&w, 101) >= 0);
        ASSERT_TRUE(world_pinned_cpu(&w, 102) >= 0);
        if (kworker) {
                ASSERT_TRUE(world_pinned_cpu(&w, 103) >= 0);
                world_done(&w);
                return;
        }
        ASSERT_EQ(world_managed(&w, 103) == NULL, 1);
        st = hog_state(&w, 103);
        ASSERT_TRUE(st);
        ASSERT_STREQ(st->state, "left alone: pair");

        /* below the pair policy's WakeRate= (the default 100/s) one way: a hog like any other */
        w.edges[0].wakeups_per_s = 60;
        world_steps(&w, 5);
        ASSERT_TRUE(world_pinned_cpu(&w, 103) >= 0);
        world_done(&w);
}

static void test_exchange_is_no_hog(void) {
        exchange_case(false);
        exchange_case(true);
}

/* The hog detector, and a split ping-pong pair of 201 and 202 (placed by the pair planner). */
static void detect_with_pair(struct world *w) {
        struct finding f = { .kind = DETECT_PAIR, .shape = PAIR_PINGPONG, .policy = &w->pol[1], .n_members = 2,
                             .split_fraction = 1.0, .split_basis = SPLIT_BASIS_WAKEUPS, .wake_rate_per_s = 9000,
                             .combined_util = 1.0, .last_cpu = -1 };

        detect(w);
        f.members[0] = world_task(w, 201)->id;
        f.members[1] = world_task(w, 202)->id;
        ASSERT_OK(findings_add(&w->findings, &f));
}

/* A pair's two pins share their CPU; a hog's is never on it, nor on another hog's. */
static void check_hog_beside_pair(struct world *w) {
        cpumask_t hogs, pairs;

        cpumask_zero(&hogs);
        cpumask_zero(&pairs);
        for (size_t i = 0; i < w->n_managed; i++) {
                const struct managed *m = &w->managed[i];
                int c = cpumask_single(&m->mask);

                ASSERT_TRUE(c >= 0);
                if (m->kind == DETECT_HOG) {
                        ASSERT_TRUE(!cpumask_test(&hogs, c));
                        cpumask_set(&hogs, c);
                } else
                        cpumask_set(&pairs, c);
        }
        for (int c = 0; c < w->topo.n_cpus; c++)
                ASSERT_TRUE(!(cpumask_test(&hogs, c) && cpumask_test(&pairs, c)));
}

/*
 * A pair we co-located is one CPU's load: its members take turns there,
 * each busy by its run delay (the other's turn). On 2 CPUs a pair and one
 * hopping hog fit, one CPU each; counted a member at a time they read
 * "3 hogs > 2 usable CPUs" and the hog was never pinned (or let go).
 */
static void colocated_pair_case(bool client_hops) {
        struct world w;
        int pc;

        world_init_hogs(&w, 2);
        w.check = check_hog_beside_pair;
        w.pol[1] = (struct policy) TEST_POLICY("pairs", DETECT_PAIR, ACTION_COLOCATE);
        w.cfg.n_policies = 2;
        add_task(&w, 101, 0.95, 10, 2.0, 0);
        /* hopping while split, the client also has a hog finding and so a
         * hog state, which stays with it once it is the pair's member */
        world_add_task(&w, 201, "client", 0.5, 500, client_hops ? 2.0 : 0.0, 0);
        world_add_task(&w, 202, "server", 0.5, 500, 0.0, 1);
        w.edges[0] = (struct wake_edge) { .waker_tid = 201, .wakee_tid = 202, .wakeups_per_s = 9000 };
        w.edges[1] = (struct wake_edge) { .waker_tid = 202, .wakee_tid = 201, .wakeups_per_s = 9000 };
        w.n_edges = 2;
        w.detect = detect_with_pair;
        world_steps(&w, 8);
        pc = world_pinned_cpu(&w, 201);
        ASSERT_TRUE(pc >= 0);
        ASSERT_EQ(world_pinned_cpu(&w, 202), pc);
        ASSERT_EQ(world_pinned_cpu(&w, 101), 1 - pc);
        ASSERT_EQ(w.state->hog_overcommit_hogs, 2);
        if (client_hops)
                ASSERT_TRUE(hog_state(&w, 201) != NULL);
        world_done(&w);
}

static void test_colocated_pair_is_one_cpu(void) {
        colocated_pair_case(false);
        colocated_pair_case(true);
}

/* `affctl explain PID`'s planner entries: by the thread a target concerns,
 * never by a number that only happens to stand in its key (a start time). */
static void test_target_involves(void) {
        struct plan_target_state st = {};

        snprintf(st.key, sizeof(st.key), "hog:123:456");
        ASSERT_TRUE(plan_target_involves(&st, 123));
        ASSERT_TRUE(!plan_target_involves(&st, 456));
        ASSERT_TRUE(!plan_target_involves(&st, 12));
        snprintf(st.key, sizeof(st.key), "pair:10:20");
        ASSERT_TRUE(plan_target_involves(&st, 10));
        ASSERT_TRUE(plan_target_involves(&st, 20));
        ASSERT_TRUE(!plan_target_involves(&st, 2));
        snprintf(st.key, sizeof(st.key), "task:77:9");
        ASSERT_TRUE(plan_target_involves(&st, 77));
        ASSERT_TRUE(!plan_target_involves(&st, 9));
        snprintf(st.key, sizeof(st.key), "rundelay:5:1");
        ASSERT_TRUE(plan_target_involves(&st, 5));
        snprintf(st.key, sizeof(st.key), "spread:5");
        ASSERT_TRUE(!plan_target_involves(&st, 5));
        snprintf(st.key, sizeof(st.key), "steal");
        ASSERT_TRUE(!plan_target_involves(&st, 5));
}

int main(void) {
        test_target_involves();
        test_two_hogs_pinned();
        test_dry_run_then_live();
        test_still_sibling_pinned();
        test_quiet_hog_left_alone();
        test_slow_hopper_pinned();
        test_reading_spans_passes();
        test_n_plus_one_never_pinned();
        test_n_plus_one_releases();
        test_uncovered_busy_thread_counts();
        test_scope_outside_is_load();
        test_own_thread_is_no_hog();
        test_unusable_cpus();
        test_busy_elsewhere_no_competitor();
        test_prefer_last_cpu();
        test_smt_two_llcs();
        test_hybrid();
        test_dual_ccd();
        test_256();
        test_biglittle();
        test_release_when_not_hog();
        test_pinned_hog_with_noise_stays();
        test_hysteresis();
        test_budget();
        test_block();
        test_hotplug_moves();
        test_cpuset_change();
        test_exit_and_policy_change();
        test_policy_removed();
        test_random();
        test_json();
        test_claims_for_pairs();
        test_claims_by_use();
        test_exchange_is_no_hog();
        test_colocated_pair_is_one_cpu();
        printf("test-plan-hog: ok\n");
        return 0;
}
