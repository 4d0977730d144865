/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plan_levers() for Detector=always Action=weight on struct literals: the
 * cgroups of matched tasks get CPUWeight=, once per cgroup, never the root
 * cgroup, never for kernel threads or excluded tasks; the lower Priority=
 * wins a shared cgroup; a cgroup whose tasks are gone is released after
 * Hysteresis intervals; a changed CPUWeight= is released and set again.
 * Also Detector=always features with a [Match]: in force while a task
 * matches. Needs the real policy_matches() (match.c).
 */

#include <errno.h>

#include "test-levers-plan.h"

#define SEC USEC_PER_SEC

static struct topology topo = { .n_cpus = 2 };
static struct cpu_sample cpus[2];

static struct proc_info procs[] = {
        { .pid = 100, .comm = "nginx", .cgroup = (char *) "/system.slice/nginx.service", .unit = (char *) "nginx.service" },
        { .pid = 101, .comm = "nginx", .cgroup = (char *) "/system.slice/nginx.service", .unit = (char *) "nginx.service" },
        { .pid = 200, .comm = "batch", .cgroup = (char *) "/batch.slice/job.scope" },
        { .pid = 300, .comm = "nginx", .cgroup = (char *) "/" },
        { .pid = 2, .comm = "kthreadd", .cgroup = (char *) "/", .kthread = true },
        { .pid = 400, .comm = "nginx", .cgroup = (char *) "/user.slice/excluded.scope" },
};

static struct task task_of(struct proc_info *p) {
        struct task t = { .id = { .pid = p->pid, .tid = p->pid, .start_time = 1000 + p->pid }, .proc = p,
                          .kthread = p->kthread, .last_cpu = 0, .allowed = cpumask_first_n(2) };
        snprintf(t.comm, sizeof(t.comm), "%s", p->comm);
        return t;
}

static struct snapshot snap_of(struct task *tasks, size_t n) {
        topo.online = cpumask_first_n(2);
        return (struct snapshot) { .topo = &topo, .cpus = cpus, .tasks = tasks, .n_tasks = n, .window_usec = SEC };
}

static void test_weight(void) {
        char *nginx[] = { "nginx", NULL }, *batch[] = { "batch", NULL }, *excl[] = { "/user.slice/excluded.scope", NULL };
        struct policy p[3] = {
                levers_policy("web", DETECT_ALWAYS, ACTION_WEIGHT),
                levers_policy("background", DETECT_ALWAYS, ACTION_WEIGHT),
                levers_policy("hands-off", DETECT_ALWAYS, ACTION_EXCLUDE),
        };
        struct config c = levers_config(p, 3, 3);
        struct task tasks[ELEMENTSOF(procs)];
        struct plan_state *st = plan_state_new();
        struct sim_applier sim = {};
        struct action_list out = {};
        const struct action *a;
        struct snapshot s;
        uint64_t now = 100 * SEC;

        p[0].match.comm = nginx;
        p[0].cpu_weight = 500;
        p[1].match.comm = batch;
        p[1].cpu_weight = 20;
        p[2].match.cgroup = excl;
        for (size_t i = 0; i < ELEMENTSOF(procs); i++)
                tasks[i] = task_of(&procs[i]);
        s = snap_of(tasks, ELEMENTSOF(tasks));

        /* applied at once: one action per cgroup; not "/", not the kthread, not the excluded one */
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        ASSERT_EQ(out.n, 2);
        a = find_action(&out, VERB_SET, "cgroup:/system.slice/nginx.service");
        ASSERT_TRUE(a);
        ASSERT_EQ(a->type, ACT_CGROUP_WEIGHT);
        ASSERT_EQ(a->weight, 500);
        ASSERT_STREQ(a->policy, "web");
        ASSERT_CONTAINS(a->reason, "CPUWeight=500 for the cgroup of nginx[100]");
        a = find_action(&out, VERB_SET, "cgroup:/batch.slice/job.scope");
        ASSERT_TRUE(a && a->weight == 20);
        sim_apply(&sim, &out, now);

        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        ASSERT_EQ(out.n, 0);

        /* the batch job ends: released after 3 intervals without it */
        s.n_tasks = 2;
        for (int i = 0; i < 2; i++) {
                ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
                ASSERT_EQ(out.n, 0);
        }
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        ASSERT_EQ(out.n, 1);
        a = find_action(&out, VERB_RELEASE, "cgroup:/batch.slice/job.scope");
        ASSERT_TRUE(a);
        ASSERT_STREQ(a->cgroup, "/batch.slice/job.scope");
        ASSERT_CONTAINS(a->reason, "no task of policy background in it for 3 intervals");
        sim_apply(&sim, &out, now);

        /* CPUWeight= changed on reload: release now, set the new value next interval */
        p[0].cpu_weight = 800;
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        ASSERT_EQ(out.n, 1);
        a = find_action(&out, VERB_RELEASE, "cgroup:/system.slice/nginx.service");
        ASSERT_TRUE(a);
        ASSERT_CONTAINS(a->reason, "policy now asks for CPUWeight=800");
        sim_apply(&sim, &out, now);
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        a = find_action(&out, VERB_SET, "cgroup:/system.slice/nginx.service");
        ASSERT_TRUE(a && a->weight == 800);
        sim_apply(&sim, &out, now);

        /* a second policy with a lower Priority= number takes the cgroup over */
        p[1].match.comm = nginx;
        p[1].priority = 10;
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        a = find_action(&out, VERB_RELEASE, "cgroup:/system.slice/nginx.service");
        ASSERT_TRUE(a);
        ASSERT_CONTAINS(a->reason, "cgroup now governed by policy background");
        sim_apply(&sim, &out, now);
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        a = find_action(&out, VERB_SET, "cgroup:/system.slice/nginx.service");
        ASSERT_TRUE(a && a->weight == 20);
        ASSERT_STREQ(a->policy, "background");

        action_list_clear(&out);
        plan_state_free(st);
}

static void test_features_with_match(void) {
        char *nginx[] = { "nginx", NULL }, *features[] = { "NO_GENTLE_FAIR_SLEEPERS", NULL };
        struct policy p[1] = { levers_policy("web-latency", DETECT_ALWAYS, ACTION_FEATURES) };
        struct config c = levers_config(p, 1, 2);
        struct task tasks[1] = { task_of(&procs[0]) };
        struct plan_state *st = plan_state_new();
        struct sim_applier sim = {};
        struct action_list out = {};
        struct snapshot s = snap_of(tasks, 0);
        uint64_t now = 500 * SEC;

        p[0].match.comm = nginx;
        p[0].features = features;

        /* nothing matches: nothing applied */
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        ASSERT_EQ(out.n, 0);
        /* nginx runs: applied at once */
        s.n_tasks = 1;
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        ASSERT_EQ(out.n, 1);
        ASSERT_CONTAINS(out.items[0].reason, "a task matches");
        sim_apply(&sim, &out, now);
        /* nginx gone: released after Hysteresis=2 intervals */
        s.n_tasks = 0;
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        ASSERT_EQ(out.n, 0);
        ASSERT_OK(levers_plan_once(st, &s, &c, NULL, &sim, now += SEC, 10, &out));
        ASSERT_EQ(out.n, 1);
        ASSERT_EQ(out.items[0].verb, VERB_RELEASE);
        ASSERT_CONTAINS(out.items[0].reason, "no task matches policy web-latency for 2 intervals");

        action_list_clear(&out);
        plan_state_free(st);
}

int main(void) {
        struct policy any = levers_policy("any", DETECT_ALWAYS, ACTION_WEIGHT);
        struct task t = task_of(&procs[0]);

        /* An empty [Match] covers every task: what the tests below rest on. */
        ASSERT_TRUE(policy_matches(&any, &t));

        test_weight();
        test_features_with_match();
        return 0;
}
