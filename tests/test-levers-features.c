/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_features on fixture trees: the 5.13+ path (debug/sched/features)
 * and the older one (debug/sched_features), a CFS list (6.1) and an EEVDF
 * list (6.8) with and without a name, NO_ syntax, writes and read-back,
 * debugfs not mounted, and policy validation messages.
 */

#include <errno.h>

#include "common/util.h"
#include "detect/detect.h"   /* struct policy */
#include "apply/levers.h"
#include "test-levers-util.h"

static void test_paths(void) {
        struct lever_caps c;
        struct levers *l;
        char *root;

        root = levers_fixture_copy("v2");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_probe(l, &c));
        ASSERT_STREQ(c.features_path, "/sys/kernel/debug/sched/features");
        ASSERT_TRUE(c.features_readable);
        ASSERT_TRUE(c.features_writable);
        ASSERT_EQ(c.features_count, 26);
        ASSERT_STREQ(c.features_why, "");
        levers_free(l);
        levers_fixture_remove(root);

        root = levers_fixture_copy("v1");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_probe(l, &c));
        ASSERT_STREQ(c.features_path, "/sys/kernel/debug/sched_features");
        ASSERT_TRUE(c.features_readable);
        ASSERT_EQ(c.features_count, 23);
        levers_free(l);
        levers_fixture_remove(root);

        /* debugfs not mounted: said so, and the rest still probes */
        root = levers_fixture_copy("hybrid");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_probe(l, &c));
        ASSERT_STREQ(c.features_path, "");
        ASSERT_TRUE(!c.features_readable);
        ASSERT_CONTAINS(c.features_why, "debugfs not mounted on /sys/kernel/debug");
        ASSERT_EQ(c.cgroup_version, 1);
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_list(void) {
        char *root = levers_fixture_copy("v2");
        char **names = NULL;
        bool *enabled = NULL;
        size_t n = 0;
        struct levers *l;
        bool seen_gfs = false, seen_nb = false;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_features_list(l, &names, &enabled, &n));
        ASSERT_EQ(n, 26);
        for (size_t i = 0; i < n; i++) {
                ASSERT_TRUE(strncmp(names[i], "NO_", 3) != 0);
                if (streq(names[i], "GENTLE_FAIR_SLEEPERS")) {
                        seen_gfs = true;
                        ASSERT_TRUE(enabled[i]);
                }
                if (streq(names[i], "NEXT_BUDDY")) {
                        seen_nb = true;
                        ASSERT_TRUE(!enabled[i]);
                }
        }
        ASSERT_TRUE(seen_gfs && seen_nb);
        strv_free(names);
        free(enabled);

        ASSERT_TRUE(levers_feature_known(l, "GENTLE_FAIR_SLEEPERS"));
        ASSERT_TRUE(levers_feature_known(l, "NO_GENTLE_FAIR_SLEEPERS"));
        ASSERT_TRUE(levers_feature_known(l, "NEXT_BUDDY"));
        ASSERT_TRUE(!levers_feature_known(l, "RUN_TO_PARITY"));
        ASSERT_TRUE(!levers_feature_known(l, "PLACE_LAG"));
        levers_free(l);
        levers_fixture_remove(root);

        root = levers_fixture_copy("eevdf");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_TRUE(levers_feature_known(l, "RUN_TO_PARITY"));
        ASSERT_TRUE(levers_feature_known(l, "NO_PLACE_LAG"));
        ASSERT_TRUE(!levers_feature_known(l, "GENTLE_FAIR_SLEEPERS"));
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_check(void) {
        char *root = levers_fixture_copy("v2"), why[256];
        struct levers *l;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_EQ(levers_feature_check(l, "NO_GENTLE_FAIR_SLEEPERS", why, sizeof(why)), 0);
        ASSERT_EQ(levers_feature_check(l, "WAKEUP_PREEMPTION", why, sizeof(why)), 0);
        ASSERT_EQ(levers_feature_check(l, "RUN_TO_PARITY", why, sizeof(why)), -ENOENT);
        ASSERT_STREQ(why, "RUN_TO_PARITY: not a sched feature of this kernel (6.1.0-18-amd64); "
                          "it arrived in 6.6 (EEVDF)");
        ASSERT_EQ(levers_feature_check(l, "NO_FROBNICATE", why, sizeof(why)), -ENOENT);
        ASSERT_STREQ(why, "FROBNICATE: not a sched feature of this kernel (6.1.0-18-amd64)");
        ASSERT_EQ(levers_feature_check(l, "no_gentle_fair_sleepers", why, sizeof(why)), -EINVAL);
        ASSERT_EQ(levers_feature_check(l, "NO_", why, sizeof(why)), -EINVAL);
        ASSERT_EQ(levers_feature_check(l, "A B", why, sizeof(why)), -EINVAL);
        levers_free(l);
        levers_fixture_remove(root);

        root = levers_fixture_copy("eevdf");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_EQ(levers_feature_check(l, "NO_GENTLE_FAIR_SLEEPERS", why, sizeof(why)), -ENOENT);
        ASSERT_CONTAINS(why, "(6.8.0-31-generic); it left in 6.6 (EEVDF); PLACE_LAG is the nearest");
        ASSERT_EQ(levers_feature_check(l, "NO_RUN_TO_PARITY", why, sizeof(why)), 0);
        levers_free(l);
        levers_fixture_remove(root);

        /* cannot tell without the list: the cause, not "unknown name" */
        root = levers_fixture_copy("hybrid");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_EQ(levers_feature_check(l, "NO_GENTLE_FAIR_SLEEPERS", why, sizeof(why)), -ENODEV);
        ASSERT_CONTAINS(why, "debugfs not mounted");
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_get_set(void) {
        char *root = levers_fixture_copy("v2");
        struct levers *l;
        bool on;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_feature_get(l, "GENTLE_FAIR_SLEEPERS", &on));
        ASSERT_TRUE(on);
        ASSERT_OK(levers_feature_get(l, "NO_NEXT_BUDDY", &on));   /* the NO_ prefix names the same feature */
        ASSERT_TRUE(!on);

        /* NO_NAME is what the kernel is told; the file then reads back the new state */
        ASSERT_EQ(levers_feature_set(l, "GENTLE_FAIR_SLEEPERS", false), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/kernel/debug/sched/features"), "NO_GENTLE_FAIR_SLEEPERS");
        ASSERT_OK(levers_feature_get(l, "GENTLE_FAIR_SLEEPERS", &on));
        ASSERT_TRUE(!on);
        ASSERT_EQ(levers_feature_set(l, "GENTLE_FAIR_SLEEPERS", false), 0);   /* already so: not written */
        ASSERT_EQ(levers_feature_set(l, "GENTLE_FAIR_SLEEPERS", true), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/kernel/debug/sched/features"), "GENTLE_FAIR_SLEEPERS");
        levers_free(l);
        levers_fixture_remove(root);

        root = levers_fixture_copy("v1");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_EQ(levers_feature_set(l, "NEXT_BUDDY", true), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/kernel/debug/sched_features"), "NEXT_BUDDY");
        levers_free(l);
        levers_fixture_remove(root);

        /* a name this kernel lacks is refused before anything is written */
        root = levers_fixture_copy("v2");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_EQ(levers_feature_set(l, "RUN_TO_PARITY", false), -ENOENT);
        ASSERT_CONTAINS(levers_last_error(l), "arrived in 6.6");
        ASSERT_CONTAINS(levers_slurp(root, "/sys/kernel/debug/sched/features"), "GENTLE_FAIR_SLEEPERS START_DEBIT");
        ASSERT_EQ(levers_feature_set(l, "bad name", false), -EINVAL);
        levers_free(l);
        levers_fixture_remove(root);

        /* no debugfs: nothing to write to, and the cause is named */
        root = levers_fixture_copy("hybrid");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_EQ(levers_feature_set(l, "GENTLE_FAIR_SLEEPERS", false), -ENODEV);
        ASSERT_CONTAINS(levers_last_error(l), "debugfs not mounted");
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_check_policy(void) {
        char *root = levers_fixture_copy("v2");
        char *features[] = { "NO_GENTLE_FAIR_SLEEPERS", "RUN_TO_PARITY", NULL };
        char *sysctls[] = { "kernel.sched_autogroup_enabled=2", "vm.swappiness=10",
                            "debug:base_slice_ns=3000000", "debug:migration_cost_ns=250000", "nonsense", NULL };
        struct policy p = {
                .name = (char *) "throughput", .file = (char *) "/etc/affinityd/policies.d/tp.policy", .line = 3,
                .enabled = true, .detector = DETECT_STEAL, .action = ACTION_FEATURES, .cpu_weight = -1,
                .features = features, .sysctls = sysctls, .features_line = 5, .sysctls_line = 7,
        };
        struct config_errors errs = {};
        struct levers *l;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_EQ(levers_check_policy(l, &p, &errs), 5);
        ASSERT_EQ(errs.n, 5);
        ASSERT_STREQ(errs.items[0].file, p.file);
        ASSERT_EQ(errs.items[0].line, 5);
        ASSERT_EQ(errs.items[1].line, 7);
        /* each at its own key's line, not the [Policy] header's */
        ASSERT_STREQ(errs.items[0].message, "/etc/affinityd/policies.d/tp.policy:5: SchedFeatures=RUN_TO_PARITY: "
                              "RUN_TO_PARITY: not a sched feature of this kernel (6.1.0-18-amd64); "
                              "it arrived in 6.6 (EEVDF)");
        ASSERT_STREQ(errs.items[1].message, "/etc/affinityd/policies.d/tp.policy:7: Sysctl=kernel.sched_autogroup_enabled=2: "
                              "kernel.sched_autogroup_enabled=2: out of range 0..1");
        ASSERT_CONTAINS(errs.items[2].message, "Sysctl=vm.swappiness=10: vm.swappiness: not an allowed scheduler tunable");
        ASSERT_CONTAINS(errs.items[3].message, "Sysctl=debug:base_slice_ns=3000000: this kernel has no "
                                 "/sys/kernel/debug/sched/base_slice_ns; base_slice_ns arrived in 6.6");
        ASSERT_CONTAINS(errs.items[4].message, "Sysctl=nonsense: expected NAME=VALUE");
        config_errors_clear(&errs);

        p.action = ACTION_WEIGHT;
        p.features = p.sysctls = NULL;
        ASSERT_EQ(levers_check_policy(l, &p, &errs), 1);
        ASSERT_EQ(errs.items[0].line, 3);
        /* no CPUWeight= line: the [Policy] header's */
        ASSERT_STREQ(errs.items[0].message, "/etc/affinityd/policies.d/tp.policy:3: CPUWeight=-1: Action=weight needs CPUWeight=1..10000");
        config_errors_clear(&errs);
        p.cpu_weight = 500;
        ASSERT_EQ(levers_check_policy(l, &p, &errs), 0);
        ASSERT_EQ(errs.n, 0);
        config_errors_clear(&errs);
        levers_free(l);
        levers_fixture_remove(root);
}

int main(void) {
        test_paths();
        test_list();
        test_check();
        test_get_set();
        test_check_policy();
        return 0;
}
