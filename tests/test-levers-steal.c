/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The steal detector and plan_levers() on struct literals: a features
 * profile applied once steal persists (hysteresis), released once it has
 * been gone as long, flapping ignored, the action budget honoured, and
 * everything released at once when its policy is removed, disabled or
 * changed. Detector=always features/sysctl profiles apply at once.
 */

#include <errno.h>
#include <stdlib.h>

#include "test-levers-plan.h"

#define SEC USEC_PER_SEC

static struct topology topo2;
static struct cpu_sample cpus2[2];

static struct snapshot snap_with_steal(double cpu0, double cpu1) {
        topo2 = (struct topology) { .n_cpus = 2, .online = cpumask_first_n(2) };
        cpus2[0] = (struct cpu_sample) { .steal_frac = cpu0 };
        cpus2[1] = (struct cpu_sample) { .steal_frac = cpu1 };
        return (struct snapshot) { .topo = &topo2, .cpus = cpus2, .window_usec = SEC, .psi_cpu_some_avg10 = -1 };
}

static void test_detect(void) {
        struct policy p[2] = {
                levers_policy("tp", DETECT_STEAL, ACTION_FEATURES),
                levers_policy("hog", DETECT_HOG, ACTION_PIN),
        };
        struct config c = levers_config(p, 2, 3);
        struct findings f = {};
        struct snapshot s;

        p[0].steal_min = 0.10;
        s = snap_with_steal(0.30, 0.10);
        ASSERT_OK(detect_steal(&s, &c, &f));
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].kind, DETECT_STEAL);
        ASSERT_TRUE(f.items[0].policy == &p[0]);
        ASSERT_NEAR(f.items[0].steal, 0.20, 1e-9);
        ASSERT_TRUE(cpumask_test(&f.items[0].cpus_seen, 0));
        ASSERT_TRUE(!cpumask_test(&f.items[0].cpus_seen, 1));
        ASSERT_STREQ(f.items[0].note, "steal 20.0% (mean of 2 CPUs, max 30.0% on CPU 0) > 10.0%");
        findings_clear(&f);

        /* at the threshold is not above it */
        s = snap_with_steal(0.10, 0.10);
        ASSERT_OK(detect_steal(&s, &c, &f));
        ASSERT_EQ(f.n, 0);

        p[0].steal_min = 0.25;
        s = snap_with_steal(0.30, 0.10);
        ASSERT_OK(detect_steal(&s, &c, &f));
        ASSERT_EQ(f.n, 0);

        /* default threshold (10 %) when the policy sets none */
        p[0].steal_min = -1;
        s = snap_with_steal(0.05, 0.05);
        ASSERT_OK(detect_steal(&s, &c, &f));
        ASSERT_EQ(f.n, 0);
        s = snap_with_steal(0.15, 0.15);
        ASSERT_OK(detect_steal(&s, &c, &f));
        ASSERT_EQ(f.n, 1);
        findings_clear(&f);

        /* an offline CPU does not count */
        topo2.online = cpumask_of(0);
        cpus2[1].steal_frac = 0.9;
        cpus2[0].steal_frac = 0.05;
        ASSERT_OK(detect_steal(&s, &c, &f));
        ASSERT_EQ(f.n, 0);

        /* disabled policy, no topology: nothing */
        p[0].enabled = false;
        s = snap_with_steal(0.5, 0.5);
        ASSERT_OK(detect_steal(&s, &c, &f));
        ASSERT_EQ(f.n, 0);
        p[0].enabled = true;
        s.topo = NULL;
        ASSERT_OK(detect_steal(&s, &c, &f));
        ASSERT_EQ(f.n, 0);
        findings_clear(&f);
}

static char *tp_features[] = { "NO_GENTLE_FAIR_SLEEPERS", "NO_WAKEUP_PREEMPTION", NULL };

/* One interval: detect on the given steal, then plan. */
static void interval(struct plan_state *st, struct config *c, struct sim_applier *sim, double steal, uint64_t now,
                     unsigned budget, struct action_list *out) {
        struct snapshot s = snap_with_steal(steal, steal);
        struct findings f = {};

        ASSERT_OK(detect_steal(&s, c, &f));
        ASSERT_OK(levers_plan_once(st, &s, c, &f, sim, now, budget, out));
        findings_clear(&f);
}

static void test_hysteresis(void) {
        struct policy p[1] = { levers_policy("steal-throughput", DETECT_STEAL, ACTION_FEATURES) };
        struct config c = levers_config(p, 1, 3);
        struct plan_state *st = plan_state_new();
        struct sim_applier sim = {};
        struct action_list out = {};
        const struct action *a;
        uint64_t now = 1000 * SEC;

        p[0].features = tp_features;
        p[0].steal_min = 0.10;
        ASSERT_TRUE(st);

        /* steal must persist Hysteresis=3 intervals */
        interval(st, &c, &sim, 0.20, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 0);
        interval(st, &c, &sim, 0.20, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 0);
        interval(st, &c, &sim, 0.20, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 2);
        a = find_action(&out, VERB_SET, "feature:GENTLE_FAIR_SLEEPERS");
        ASSERT_TRUE(a);
        ASSERT_EQ(a->type, ACT_SCHED_FEATURE);
        ASSERT_TRUE(!a->enable);
        ASSERT_STREQ(a->policy, "steal-throughput");
        ASSERT_CONTAINS(a->reason, "steal 20.0%");
        ASSERT_CONTAINS(a->reason, "for 3 intervals");
        a = find_action(&out, VERB_SET, "feature:WAKEUP_PREEMPTION");
        ASSERT_TRUE(a && !a->enable);
        sim_apply(&sim, &out, now);
        ASSERT_EQ(sim.n, 2);

        /* in force: nothing more to do */
        interval(st, &c, &sim, 0.25, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 0);

        /* steal falls: released after 3 intervals without it */
        interval(st, &c, &sim, 0.01, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 0);
        interval(st, &c, &sim, 0.01, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 0);
        interval(st, &c, &sim, 0.01, now += SEC, 0, &out);   /* releases are not held back by the budget */
        ASSERT_EQ(out.n, 2);
        a = find_action(&out, VERB_RELEASE, "feature:GENTLE_FAIR_SLEEPERS");
        ASSERT_TRUE(a);
        ASSERT_CONTAINS(a->reason, "steal at or below 10% for 3 intervals");
        ASSERT_TRUE(find_action(&out, VERB_RELEASE, "feature:WAKEUP_PREEMPTION"));
        sim_apply(&sim, &out, now);
        ASSERT_EQ(sim.n, 0);

        /* flapping around the threshold never reaches 3 in a row */
        double flap[] = { 0.2, 0.2, 0.0, 0.2, 0.2, 0.0, 0.2 };
        for (size_t i = 0; i < ELEMENTSOF(flap); i++) {
                interval(st, &c, &sim, flap[i], now += SEC, 4, &out);
                ASSERT_EQ(out.n, 0);
        }
        /* ... and the explanation says where it stands */
        struct plan_target_state *t = plan_state_find(st, "levers:steal-throughput");
        ASSERT_TRUE(t);
        ASSERT_STREQ(t->state, "watching");
        ASSERT_CONTAINS(t->why, "1 of 3 intervals");

        /* budget: one action per interval, the rest next time */
        interval(st, &c, &sim, 0.3, now += SEC, 1, &out);
        interval(st, &c, &sim, 0.3, now += SEC, 1, &out);
        ASSERT_EQ(out.n, 1);
        sim_apply(&sim, &out, now);
        interval(st, &c, &sim, 0.3, now += SEC, 1, &out);
        ASSERT_EQ(out.n, 1);
        sim_apply(&sim, &out, now);
        ASSERT_EQ(sim.n, 2);
        interval(st, &c, &sim, 0.3, now += SEC, 1, &out);
        ASSERT_EQ(out.n, 0);

        action_list_clear(&out);
        plan_state_free(st);
}

static void test_window(void) {
        struct policy p[1] = { levers_policy("steal-window", DETECT_STEAL, ACTION_FEATURES) };
        struct config c = levers_config(p, 1, 3);
        struct plan_state *st = plan_state_new();
        struct sim_applier sim = {};
        struct action_list out = {};
        uint64_t now = 3000 * SEC;

        /* Steal=10% over Window=5s at Interval=1s: five intervals in a row, not Hysteresis=3 */
        p[0].features = tp_features;
        p[0].window_usec = 5 * SEC;
        c.daemon.interval_usec = SEC;
        for (int i = 0; i < 4; i++) {
                interval(st, &c, &sim, 0.2, now += SEC, 4, &out);
                ASSERT_EQ(out.n, 0);
        }
        ASSERT_CONTAINS(plan_state_find(st, "levers:steal-window")->why, "4 of 5 intervals");
        interval(st, &c, &sim, 0.2, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 2);
        sim_apply(&sim, &out, now);
        for (int i = 0; i < 4; i++) {
                interval(st, &c, &sim, 0.0, now += SEC, 4, &out);
                ASSERT_EQ(out.n, 0);
        }
        interval(st, &c, &sim, 0.0, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 2);
        ASSERT_CONTAINS(out.items[0].reason, "for 5 intervals");

        action_list_clear(&out);
        plan_state_free(st);
}

static void test_release_on_policy_change(void) {
        struct policy p[1] = { levers_policy("steal-throughput", DETECT_STEAL, ACTION_FEATURES) };
        struct config c = levers_config(p, 1, 3);
        struct plan_state *st = plan_state_new();
        struct sim_applier sim = {};
        struct action_list out = {};
        const struct action *a;
        uint64_t now = 5000 * SEC;
        char *one[] = { "NO_GENTLE_FAIR_SLEEPERS", NULL };
        char *flipped[] = { "GENTLE_FAIR_SLEEPERS", "NO_WAKEUP_PREEMPTION", NULL };

        p[0].features = tp_features;
        for (int i = 0; i < 3; i++)
                interval(st, &c, &sim, 0.3, now += SEC, 4, &out);
        sim_apply(&sim, &out, now);
        ASSERT_EQ(sim.n, 2);

        /* a reload dropped one name from the profile: that one goes at once */
        p[0].features = one;
        interval(st, &c, &sim, 0.3, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 1);
        a = find_action(&out, VERB_RELEASE, "feature:WAKEUP_PREEMPTION");
        ASSERT_TRUE(a);
        ASSERT_CONTAINS(a->reason, "WAKEUP_PREEMPTION no longer in SchedFeatures=");
        sim_apply(&sim, &out, now);

        /* the profile now asks for the opposite state: release now, set again next interval */
        p[0].features = flipped;
        interval(st, &c, &sim, 0.3, now += SEC, 4, &out);
        a = find_action(&out, VERB_RELEASE, "feature:GENTLE_FAIR_SLEEPERS");
        ASSERT_TRUE(a);
        ASSERT_CONTAINS(a->reason, "policy now asks for GENTLE_FAIR_SLEEPERS");
        ASSERT_TRUE(!find_action(&out, VERB_SET, "feature:GENTLE_FAIR_SLEEPERS"));
        ASSERT_TRUE(find_action(&out, VERB_SET, "feature:WAKEUP_PREEMPTION"));
        sim_apply(&sim, &out, now);
        interval(st, &c, &sim, 0.3, now += SEC, 4, &out);
        a = find_action(&out, VERB_SET, "feature:GENTLE_FAIR_SLEEPERS");
        ASSERT_TRUE(a && a->enable);
        sim_apply(&sim, &out, now);
        ASSERT_EQ(sim.n, 2);

        /* disabled: everything released at once, whatever the steal */
        p[0].enabled = false;
        interval(st, &c, &sim, 0.3, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 2);
        ASSERT_CONTAINS(out.items[0].reason, "policy steal-throughput disabled");
        sim_apply(&sim, &out, now);
        ASSERT_EQ(sim.n, 0);

        /* removed: likewise */
        p[0].enabled = true;
        p[0].features = tp_features;
        for (int i = 0; i < 3; i++)
                interval(st, &c, &sim, 0.3, now += SEC, 4, &out);
        sim_apply(&sim, &out, now);
        ASSERT_EQ(sim.n, 2);
        c.n_policies = 0;
        interval(st, &c, &sim, 0.3, now += SEC, 4, &out);
        ASSERT_EQ(out.n, 2);
        ASSERT_STREQ(out.items[0].reason, "policy steal-throughput removed");
        ASSERT_EQ(out.items[0].verb, VERB_RELEASE);
        sim_apply(&sim, &out, now);
        ASSERT_EQ(sim.n, 0);

        action_list_clear(&out);
        plan_state_free(st);
}

static void test_always_and_blocks(void) {
        struct policy p[3] = {
                levers_policy("no-autogroup", DETECT_ALWAYS, ACTION_SYSCTL),
                levers_policy("gfs-a", DETECT_ALWAYS, ACTION_FEATURES),
                levers_policy("gfs-b", DETECT_ALWAYS, ACTION_FEATURES),
        };
        char *sysctls[] = { "kernel.sched_autogroup_enabled=0", "debug:migration_cost_ns = 250000", "bogus", NULL };
        char *fa[] = { "NO_GENTLE_FAIR_SLEEPERS", NULL };
        char *fb[] = { "NO_GENTLE_FAIR_SLEEPERS", "NO_WAKEUP_PREEMPTION", NULL };
        struct config c = levers_config(p, 3, 3);
        struct plan_state *st = plan_state_new();
        struct sim_applier sim = {};
        struct action_list out = {};
        const struct action *a;
        uint64_t now = 9000 * SEC;

        p[0].sysctls = sysctls;
        p[1].features = fa;
        p[1].priority = 20;
        p[2].features = fb;
        p[2].priority = 10;   /* wins the shared name */

        /* the shared feature is blocked (an apply failed: lockdown) */
        ASSERT_OK(plan_state_block(st, "feature:WAKEUP_PREEMPTION", now + 60 * SEC, "EPERM: lockdown"));

        interval(st, &c, &sim, 0, now += SEC, 10, &out);
        a = find_action(&out, VERB_SET, "sysctl:kernel.sched_autogroup_enabled");
        ASSERT_TRUE(a);
        ASSERT_EQ(a->type, ACT_SYSCTL);
        ASSERT_STREQ(a->value, "0");
        a = find_action(&out, VERB_SET, "sysctl:debug:migration_cost_ns");
        ASSERT_TRUE(a);
        ASSERT_STREQ(a->value, "250000");
        a = find_action(&out, VERB_SET, "feature:GENTLE_FAIR_SLEEPERS");
        ASSERT_TRUE(a);
        ASSERT_STREQ(a->policy, "gfs-b");
        ASSERT_TRUE(!find_action(&out, VERB_SET, "feature:WAKEUP_PREEMPTION"));
        ASSERT_EQ(out.n, 3);
        sim_apply(&sim, &out, now);

        /* steady state */
        interval(st, &c, &sim, 0, now += SEC, 10, &out);
        ASSERT_EQ(out.n, 0);
        ASSERT_CONTAINS(plan_state_find(st, "feature:WAKEUP_PREEMPTION")->why, "lockdown");

        /* the block expires */
        now += 60 * SEC;
        interval(st, &c, &sim, 0, now, 10, &out);
        ASSERT_EQ(out.n, 1);
        ASSERT_TRUE(find_action(&out, VERB_SET, "feature:WAKEUP_PREEMPTION"));
        sim_apply(&sim, &out, now);

        /* the value changed on reload */
        sysctls[0] = (char *) "kernel.sched_autogroup_enabled=1";
        interval(st, &c, &sim, 0, now += SEC, 10, &out);
        a = find_action(&out, VERB_RELEASE, "sysctl:kernel.sched_autogroup_enabled");
        ASSERT_TRUE(a);
        ASSERT_CONTAINS(a->reason, "policy now asks for kernel.sched_autogroup_enabled=1");
        ASSERT_EQ(out.n, 1);

        action_list_clear(&out);
        plan_state_free(st);
}

int main(void) {
        test_detect();
        test_hysteresis();
        test_window();
        test_release_on_policy_change();
        test_always_and_blocks();
        return 0;
}
