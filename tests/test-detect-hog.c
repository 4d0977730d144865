/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hog, spread-group and run-delay detectors on struct literals
 * ([select-idle] and [conservative-smp]), and the findings list.
 *
 * Policy lookup is match.c's detect_policy_for(), as in the daemon.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"
#include "test-fixtures.h"
#include "test-util.h"

/* ---------------------------------------------------------------- fixtures */

static struct topo_cpu cpus4[4] = {
        { .online = true, .core_id = 0 }, { .online = true, .core_id = 1 },
        { .online = true, .core_id = 2 }, { .online = true, .core_id = 3 },
};
static struct topology topo4;

static struct proc_info procs[256];   /* test_spread_too_big() takes FINDING_MAX_MEMBERS + 1 */
static size_t n_procs;

static struct task task_literal(pid_t tid, const char *comm, double util, double delay, double mig, int last_cpu) {
        struct proc_info *p;
        struct task t = {
                .id = { .pid = tid, .tid = tid, .start_time = 5000 + tid },
                .policy = TASK_SCHED_OTHER,
                .last_cpu = last_cpu,
                .allowed = topo4.online,
                .have_schedstat = true,
                .have_migrations = true,
                .have_rates = true,
                .util = util,
                .run_delay_ms_per_s = delay,
                .migrations_per_s = mig,
                .window_usec = USEC_PER_SEC,
        };

        ASSERT_TRUE(n_procs < ELEMENTSOF(procs));
        p = &procs[n_procs++];
        *p = (struct proc_info) { .pid = tid, .start_time = 5000 + tid, .exe = (char *) "/usr/bin/work",
                                  .cmdline = (char *) "work", .cgroup = (char *) "/user.slice", .uid = 1000 };
        snprintf(p->comm, sizeof(p->comm), "%s", comm);
        t.proc = p;
        snprintf(t.comm, sizeof(t.comm), "%s", comm);
        cpumask_set(&t.cpus_seen, last_cpu);
        return t;
}

static struct snapshot snapshot_of(struct task *tasks, size_t n) {
        return (struct snapshot) {
                .window_usec = USEC_PER_SEC,
                .topo = &topo4,
                .tasks = tasks,
                .n_tasks = n,
                .psi_cpu_some_avg10 = -1,
        };
}

static struct config config_of(struct policy *p, size_t n) {
        return (struct config) {
                .daemon = { .interval_usec = USEC_PER_SEC, .max_actions_per_interval = 4, .hysteresis_intervals = 3 },
                .policies = p,
                .n_policies = n,
        };
}

/* ---------------------------------------------------------------- tests */

static void test_findings_list(void) {
        struct findings f = {};
        struct finding x = { .kind = DETECT_HOG, .n_members = 1, .members[0] = { .pid = 7, .tid = 8, .start_time = 9 } };
        char key[128];

        for (int i = 0; i < 100; i++)
                ASSERT_OK(findings_add(&f, &x));
        ASSERT_EQ(f.n, 100);
        ASSERT_STREQ(finding_key(&f.items[99], key, sizeof(key)), "hog:8:9");
        findings_clear(&f);
        ASSERT_EQ(f.n, 0);
        ASSERT_TRUE(f.items == NULL);
        findings_clear(&f);

        {
                struct policy p = TEST_POLICY("workers", DETECT_SPREAD, ACTION_SPREAD);
                struct finding g = { .kind = DETECT_SPREAD, .policy = &p };
                struct finding pr = { .kind = DETECT_PAIR, .n_members = 2,
                                      .members = { { .tid = 30 }, { .tid = 20 } } };
                ASSERT_STREQ(finding_key(&g, key, sizeof(key)), "spread:workers");
                ASSERT_STREQ(finding_key(&pr, key, sizeof(key)), "pair:20:30");
                ASSERT_TRUE(finding_key(&g, key, 5) == NULL);
        }
}

static void test_thresholds(void) {
        struct policy p = TEST_POLICY("x", DETECT_HOG, ACTION_PIN);
        struct task t = task_literal(1, "t", 0.5, 300, 0, 0);

        ASSERT_NEAR(detect_util_min(NULL, DETECT_HOG), 0.80, 1e-9);
        ASSERT_NEAR(detect_util_min(NULL, DETECT_SPREAD), 0.20, 1e-9);
        ASSERT_NEAR(detect_migrations_min_per_s(NULL, DETECT_HOG), 0.10, 1e-9);
        ASSERT_EQ(detect_window_usec(NULL, DETECT_HOG), 10 * USEC_PER_SEC);
        ASSERT_NEAR(detect_run_delay_min_ms_per_s(NULL), 50, 1e-9);
        p.util_min = 0.5;
        p.migrations_min_per_s = 2;
        p.window_usec = 3 * USEC_PER_SEC;
        p.run_delay_min_ms_per_s = 20;
        ASSERT_NEAR(detect_util_min(&p, DETECT_HOG), 0.5, 1e-9);
        ASSERT_NEAR(detect_migrations_min_per_s(&p, DETECT_HOG), 2, 1e-9);
        ASSERT_EQ(detect_window_usec(&p, DETECT_HOG), 3 * USEC_PER_SEC);
        ASSERT_NEAR(detect_run_delay_min_ms_per_s(&p), 20, 1e-9);

        /* demand = util + waiting fraction, capped at one CPU; util alone without schedstat */
        ASSERT_NEAR(task_demand(&t), 0.8, 1e-9);
        t.run_delay_ms_per_s = 900;
        ASSERT_NEAR(task_demand(&t), 1.0, 1e-9);
        t.have_schedstat = false;
        ASSERT_NEAR(task_demand(&t), 0.5, 1e-9);
        t.have_rates = false;
        ASSERT_NEAR(task_demand(&t), 0, 1e-9);
}

static void test_hogs(void) {
        struct policy pol[] = { TEST_POLICY("hogs", DETECT_HOG, ACTION_PIN) };
        struct config c = config_of(pol, ELEMENTSOF(pol));
        struct task tasks[] = {
                task_literal(101, "hopper", 0.97, 20, 0.6, 1),     /* the seed's hog: found */
                task_literal(102, "sitter", 0.99, 1, 0.0, 0),      /* busy, does not hop */
                task_literal(103, "bursty", 0.30, 5, 4.0, 2),      /* hops, not busy */
                task_literal(104, "starved", 0.50, 480, 1.0, 3),   /* n+1: shares its CPU, wants all of it */
                task_literal(105, "fresh", 0.99, 0, 1.0, 3),       /* no rates yet */
                task_literal(106, "nostat", 0.95, 0, 0, 0),        /* no se.nr_migrations: cpus_seen decides */
                task_literal(107, "nostat1", 0.95, 0, 0, 2),       /* ... on one CPU: not hopping */
                task_literal(108, "edge", 0.80, 0, 0.1, 1),        /* exactly 0.1/s: not "more than" */
        };
        struct snapshot s;
        struct findings f = {};
        const struct finding *h;

        cpumask_set(&tasks[0].cpus_seen, 0);
        tasks[4].have_rates = false;
        tasks[5].have_migrations = false;
        cpumask_set(&tasks[5].cpus_seen, 1);
        tasks[6].have_migrations = false;
        s = snapshot_of(tasks, ELEMENTSOF(tasks));

        ASSERT_OK(detect_hogs(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 3);
        h = &f.items[0];
        ASSERT_EQ(h->kind, DETECT_HOG);
        ASSERT_TRUE(h->policy == &pol[0]);
        ASSERT_EQ(h->n_members, 1);
        ASSERT_EQ(h->members[0].tid, 101);
        ASSERT_EQ(h->members[0].start_time, 5101);
        ASSERT_NEAR(h->util, 0.97, 1e-9);
        ASSERT_NEAR(h->demand, 0.99, 1e-9);
        ASSERT_NEAR(h->migrations_per_s, 0.6, 1e-9);
        ASSERT_NEAR(h->run_delay_ms_per_s, 20, 1e-9);
        ASSERT_EQ(cpumask_weight(&h->cpus_seen), 2);
        ASSERT_EQ(h->last_cpu, 1);
        ASSERT_STREQ(h->comm, "hopper");
        ASSERT_STREQ(h->note, "hog: util 97% demand 99% migrations 0.60/s run delay 20.0ms/s on 0-1");
        ASSERT_EQ(f.items[1].members[0].tid, 104);
        ASSERT_NEAR(f.items[1].demand, 0.98, 1e-9);
        ASSERT_EQ(f.items[2].members[0].tid, 106);

        /* the policy's thresholds: Util=50 %, Migrations=1/s */
        findings_clear(&f);
        pol[0].util_min = 0.5;
        pol[0].migrations_min_per_s = 1.0;
        tasks[2].util = 0.6;
        ASSERT_OK(detect_hogs(&s, &c, 1, &f));
        /* 101 hops 0.6/s < 1/s; 103 now busy enough, hops 4/s; 106 by cpus_seen */
        ASSERT_EQ(f.n, 2);
        ASSERT_EQ(f.items[0].members[0].tid, 103);
        ASSERT_EQ(f.items[1].members[0].tid, 106);

        /* the daemon itself, kernel threads and RT tasks are never findings */
        findings_clear(&f);
        pol[0].util_min = -1;
        pol[0].migrations_min_per_s = -1;
        tasks[0].kthread = true;
        ((struct proc_info *) tasks[0].proc)->kthread = true;
        tasks[3].policy = TASK_SCHED_FIFO;
        ASSERT_OK(detect_hogs(&s, &c, 106, &f));
        ASSERT_EQ(f.n, 0);

        /* no hog policy, no findings */
        findings_clear(&f);
        c.n_policies = 0;
        ASSERT_OK(detect_hogs(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 0);
        findings_clear(&f);
}

static void test_spread(void) {
        struct policy pol[] = {
                TEST_POLICY("workers", DETECT_SPREAD, ACTION_SPREAD),
                TEST_POLICY("others", DETECT_SPREAD, ACTION_SPREAD),
        };
        char *workers[] = { (char *) "worker*", NULL }, *others[] = { (char *) "other*", NULL };
        struct config c;
        struct task tasks[] = {
                task_literal(201, "worker1", 0.40, 10, 1.0, 0),
                task_literal(202, "worker2", 0.42, 30, 2.0, 0),
                task_literal(203, "worker3", 0.38, 10, 0.5, 1),
                task_literal(204, "worker4", 0.41, 10, 0.0, 2),
                task_literal(205, "worker5", 0.01, 0, 0.0, 2),     /* idle member: not counted */
                task_literal(206, "other1", 0.50, 0, 1.0, 3),      /* a group of one: no finding */
                task_literal(207, "stranger", 0.60, 0, 1.0, 3),    /* no spread policy */
        };
        struct snapshot s = snapshot_of(tasks, ELEMENTSOF(tasks));
        struct findings f = {};
        const struct finding *g;

        pol[0].match.comm = workers;
        pol[1].match.comm = others;
        c = config_of(pol, ELEMENTSOF(pol));

        ASSERT_OK(detect_spread(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 1);
        g = &f.items[0];
        ASSERT_EQ(g->kind, DETECT_SPREAD);
        ASSERT_TRUE(g->policy == &pol[0]);
        ASSERT_EQ(g->n_members, 4);
        ASSERT_NEAR(g->combined_util, 1.61, 1e-9);
        ASSERT_NEAR(g->util, 1.61 / 4, 1e-9);
        ASSERT_NEAR(g->migrations_per_s, 3.5, 1e-9);
        ASSERT_NEAR(g->run_delay_ms_per_s, 30, 1e-9);
        ASSERT_EQ(cpumask_weight(&g->cpus_seen), 3);
        ASSERT_TRUE(strstr(g->note, "4 threads"));

        /* a second member for "others": two groups */
        findings_clear(&f);
        tasks[6] = task_literal(208, "other2", 0.5, 0, 1.0, 2);
        ASSERT_OK(detect_spread(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 2);
        ASSERT_TRUE(f.items[1].policy == &pol[1]);
        ASSERT_EQ(f.items[1].n_members, 2);

        /* Util= raises the bar for members */
        findings_clear(&f);
        pol[0].util_min = 0.41;
        ASSERT_OK(detect_spread(&s, &c, 1, &f));
        ASSERT_EQ(f.items[0].n_members, 2);
        findings_clear(&f);
}

/* A group of more busy members than a finding holds is no finding: not
 * the first FINDING_MAX_MEMBERS placed and the rest left floating. */
static void test_spread_too_big(void) {
        struct policy pol[] = { TEST_POLICY("workers", DETECT_SPREAD, ACTION_SPREAD) };
        char *workers[] = { (char *) "worker*", NULL };
        struct task tasks[FINDING_MAX_MEMBERS + 1];
        struct snapshot s;
        struct findings f = {};
        struct config c;

        for (size_t i = 0; i < ELEMENTSOF(tasks); i++)
                tasks[i] = task_literal((pid_t) (1000 + i), "worker", 0.30, 10, 1.0, (int) (i % 2));
        pol[0].match.comm = workers;
        c = config_of(pol, 1);
        s = snapshot_of(tasks, FINDING_MAX_MEMBERS);
        ASSERT_OK(detect_spread(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].n_members, FINDING_MAX_MEMBERS);
        findings_clear(&f);
        s = snapshot_of(tasks, ELEMENTSOF(tasks));
        ASSERT_OK(detect_spread(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 0);
        findings_clear(&f);
}

static void test_rundelay(void) {
        struct policy pol[] = { TEST_POLICY("latency", DETECT_RUNDELAY, ACTION_REPORT) };
        struct config c = config_of(pol, 1);
        struct task tasks[] = {
                task_literal(301, "victim", 0.20, 120, 0, 0),
                task_literal(302, "fine", 0.20, 10, 0, 1),
                task_literal(303, "nostat", 0.20, 200, 0, 1),
        };
        struct snapshot s = snapshot_of(tasks, ELEMENTSOF(tasks));
        struct findings f = {};

        tasks[2].have_schedstat = false;
        ASSERT_OK(detect_rundelay(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].kind, DETECT_RUNDELAY);
        ASSERT_EQ(f.items[0].members[0].tid, 301);
        ASSERT_NEAR(f.items[0].run_delay_ms_per_s, 120, 1e-9);
        ASSERT_STREQ(f.items[0].comm, "victim");
        ASSERT_STREQ(f.items[0].note, "run delay 120.0ms/s > 50.0ms/s (util 20%)");

        findings_clear(&f);
        pol[0].run_delay_min_ms_per_s = 5;
        ASSERT_OK(detect_rundelay(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 2);
        findings_clear(&f);

        /* RunDelay= below the detector's cheap floor (1 ms/s) is a threshold too */
        tasks[1].run_delay_ms_per_s = 0.8;
        pol[0].run_delay_min_ms_per_s = 0.5;
        ASSERT_OK(detect_rundelay(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 2);
        findings_clear(&f);
}

/* Util= below the hog detector's cheap floor (5 %) is a threshold too. */
static void test_hog_low_util(void) {
        struct policy pol[] = { TEST_POLICY("hogs", DETECT_HOG, ACTION_REPORT) };
        struct config c = config_of(pol, 1);
        struct task tasks[] = { task_literal(501, "sipper", 0.03, 0, 1.0, 0) };
        struct snapshot s = snapshot_of(tasks, ELEMENTSOF(tasks));
        struct findings f = {};

        ASSERT_OK(detect_hogs(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 0);
        pol[0].util_min = 0.02;
        ASSERT_OK(detect_hogs(&s, &c, 1, &f));
        ASSERT_EQ(f.n, 1);
        findings_clear(&f);
}

static void test_detect_all(void) {
        struct policy pol[] = {
                TEST_POLICY("hogs", DETECT_HOG, ACTION_PIN),
                TEST_POLICY("latency", DETECT_RUNDELAY, ACTION_REPORT),
        };
        struct config c = config_of(pol, ELEMENTSOF(pol));
        struct task tasks[] = {
                task_literal(401, "hopper", 0.90, 80, 1.0, 0),
        };
        struct snapshot s = snapshot_of(tasks, 1);
        struct findings f = {};
        struct finding junk = { .kind = DETECT_STEAL };

        ASSERT_OK(findings_add(&f, &junk));
        ASSERT_OK(detect_all(&s, &c, 1, &f));
        /* cleared first; the hog is also a run-delay victim */
        ASSERT_EQ(f.n, 2);
        ASSERT_EQ(f.items[0].kind, DETECT_HOG);
        ASSERT_EQ(f.items[1].kind, DETECT_RUNDELAY);
        findings_clear(&f);
        ASSERT_TRUE(detect_all(NULL, &c, 1, &f) == -EINVAL);
}

int main(void) {
        topo4 = (struct topology) {
                .n_cpus = 4, .cpus = cpus4,
                .online = cpumask_first_n(4), .self_allowed = cpumask_first_n(4),
                .n_llcs = 1, .n_nodes = 1, .n_cores = 4,
        };

        test_findings_list();
        test_thresholds();
        test_hogs();
        test_spread();
        test_spread_too_big();
        test_hog_low_util();
        test_rundelay();
        test_detect_all();
        printf("test-detect-hog: ok\n");
        return 0;
}
