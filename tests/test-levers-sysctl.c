/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scheduler sysctls and debugfs tunables: the allow-list and ranges (pure),
 * "name=value" splitting, reads and writes on fixture trees for the 5.13+
 * debugfs layout, the pre-5.13 sysctls, an EEVDF kernel, and a machine
 * without debugfs; schedstats probing.
 */

#include <errno.h>

#include "common/util.h"
#include "apply/levers.h"
#include "test-levers-util.h"

static void test_allow_list(void) {
        char why[256];

        ASSERT_EQ(levers_sysctl_check("kernel.sched_autogroup_enabled", "0", why, sizeof(why)), 0);
        ASSERT_EQ(levers_sysctl_check("kernel.sched_autogroup_enabled", "1", why, sizeof(why)), 0);
        ASSERT_EQ(levers_sysctl_check("kernel.sched_autogroup_enabled", "2", why, sizeof(why)), -ERANGE);
        ASSERT_STREQ(why, "kernel.sched_autogroup_enabled=2: out of range 0..1");
        ASSERT_EQ(levers_sysctl_check("kernel.sched_autogroup_enabled", "-1", why, sizeof(why)), -EINVAL);
        ASSERT_STREQ(why, "kernel.sched_autogroup_enabled=-1: not a non-negative decimal integer");
        ASSERT_EQ(levers_sysctl_check("kernel.sched_autogroup_enabled", "yes", why, sizeof(why)), -EINVAL);
        ASSERT_EQ(levers_sysctl_check("kernel.sched_autogroup_enabled", "0x1", why, sizeof(why)), -EINVAL);
        ASSERT_EQ(levers_sysctl_check("kernel.sched_autogroup_enabled", "", why, sizeof(why)), -EINVAL);
        ASSERT_EQ(levers_sysctl_check("kernel.sched_schedstats", "1", why, sizeof(why)), 0);
        ASSERT_EQ(levers_sysctl_check("debug:migration_cost_ns", "0", why, sizeof(why)), 0);
        ASSERT_EQ(levers_sysctl_check("debug:migration_cost_ns", "1000000000", why, sizeof(why)), 0);
        ASSERT_EQ(levers_sysctl_check("debug:migration_cost_ns", "1000000001", why, sizeof(why)), -ERANGE);
        ASSERT_EQ(levers_sysctl_check("debug:base_slice_ns", "3000000", why, sizeof(why)), 0);
        ASSERT_EQ(levers_sysctl_check("debug:base_slice_ns", "99999", why, sizeof(why)), -ERANGE);
        ASSERT_STREQ(why, "debug:base_slice_ns=99999: out of range 100000..1000000000");
        ASSERT_EQ(levers_sysctl_check("debug:base_slice_ns", "99999999999999999999999", why, sizeof(why)), -EINVAL);
        ASSERT_EQ(levers_sysctl_check("debug:min_granularity_ns", "750000", why, sizeof(why)), 0);
        ASSERT_EQ(levers_sysctl_check("debug:wakeup_granularity_ns", "0", why, sizeof(why)), 0);
        ASSERT_EQ(levers_sysctl_check("debug:latency_ns", "6000000", why, sizeof(why)), 0);

        /* never an arbitrary sysctl or file */
        ASSERT_EQ(levers_sysctl_check("vm.swappiness", "10", why, sizeof(why)), -ENOENT);
        ASSERT_CONTAINS(why, "vm.swappiness: not an allowed scheduler tunable");
        ASSERT_EQ(levers_sysctl_check("kernel.sched_rt_runtime_us", "-1", why, sizeof(why)), -ENOENT);
        ASSERT_EQ(levers_sysctl_check("debug:../../../etc/passwd", "1", why, sizeof(why)), -ENOENT);
        ASSERT_EQ(levers_sysctl_check("sched.migration_cost_ns", "1", why, sizeof(why)), -ENOENT);
        ASSERT_EQ(levers_sysctl_check("debug:features", "1", why, sizeof(why)), -ENOENT);
        ASSERT_EQ(levers_sysctl_check("debug:migration_cost_ns", NULL, NULL, 0), 0);
}

static void test_split(void) {
        char n[96], v[64];

        ASSERT_OK(levers_sysctl_split("kernel.sched_autogroup_enabled=0", n, sizeof(n), v, sizeof(v)));
        ASSERT_STREQ(n, "kernel.sched_autogroup_enabled");
        ASSERT_STREQ(v, "0");
        ASSERT_OK(levers_sysctl_split("  debug:migration_cost_ns = 250000 ", n, sizeof(n), v, sizeof(v)));
        ASSERT_STREQ(n, "debug:migration_cost_ns");
        ASSERT_STREQ(v, "250000");
        ASSERT_EQ(levers_sysctl_split("kernel.sched_autogroup_enabled", n, sizeof(n), v, sizeof(v)), -EINVAL);
        ASSERT_EQ(levers_sysctl_split("=1", n, sizeof(n), v, sizeof(v)), -EINVAL);
        ASSERT_EQ(levers_sysctl_split("a=", n, sizeof(n), v, sizeof(v)), -EINVAL);
}

static void test_debugfs_layout(void) {
        char *root = levers_fixture_copy("v2"), buf[64];
        struct levers *l;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_sysctl_get(l, "debug:migration_cost_ns", buf, sizeof(buf)));
        ASSERT_STREQ(buf, "500000");
        ASSERT_EQ(levers_sysctl_set(l, "debug:migration_cost_ns", "250000"), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/kernel/debug/sched/migration_cost_ns"), "250000");
        ASSERT_EQ(levers_sysctl_set(l, "debug:migration_cost_ns", "250000"), 0);
        ASSERT_OK(levers_sysctl_get(l, "debug:min_granularity_ns", buf, sizeof(buf)));
        ASSERT_STREQ(buf, "3000000");

        /* 6.1 has no base_slice_ns */
        ASSERT_EQ(levers_sysctl_get(l, "debug:base_slice_ns", buf, sizeof(buf)), -ENOENT);
        ASSERT_CONTAINS(levers_last_error(l), "this kernel has no /sys/kernel/debug/sched/base_slice_ns; "
                                              "base_slice_ns arrived in 6.6");

        ASSERT_OK(levers_sysctl_get(l, "kernel.sched_autogroup_enabled", buf, sizeof(buf)));
        ASSERT_STREQ(buf, "0");
        ASSERT_EQ(levers_sysctl_set(l, "kernel.sched_autogroup_enabled", "1"), 1);
        ASSERT_STREQ(levers_slurp(root, "/proc/sys/kernel/sched_autogroup_enabled"), "1");

        /* refused values leave the file alone */
        ASSERT_EQ(levers_sysctl_set(l, "kernel.sched_autogroup_enabled", "1x"), -EINVAL);
        ASSERT_CONTAINS(levers_last_error(l), "not a non-negative decimal integer");
        ASSERT_STREQ(levers_slurp(root, "/proc/sys/kernel/sched_autogroup_enabled"), "1");
        /* a value outside a policy's range is the kernel's to refuse: a
         * restore puts back what an admin had set (1.5 s here), which a
         * policy may not ask for (levers_sysctl_check()) */
        ASSERT_EQ(levers_sysctl_check("debug:migration_cost_ns", "1500000000", NULL, 0), -ERANGE);
        ASSERT_EQ(levers_sysctl_set(l, "debug:migration_cost_ns", "1500000000"), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/kernel/debug/sched/migration_cost_ns"), "1500000000");
        ASSERT_EQ(levers_sysctl_set(l, "vm.swappiness", "1"), -ENOENT);
        ASSERT_EQ(levers_sysctl_get(l, "vm.swappiness", buf, sizeof(buf)), -ENOENT);
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_legacy_sysctls(void) {
        char *root = levers_fixture_copy("v1"), buf[64];
        struct levers *l;

        /* before 5.13 the tunables were sysctls: debug:NAME finds kernel.sched_NAME */
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_sysctl_get(l, "debug:migration_cost_ns", buf, sizeof(buf)));
        ASSERT_STREQ(buf, "500000");
        ASSERT_EQ(levers_sysctl_set(l, "debug:migration_cost_ns", "100000"), 1);
        ASSERT_STREQ(levers_slurp(root, "/proc/sys/kernel/sched_migration_cost_ns"), "100000");
        ASSERT_OK(levers_sysctl_get(l, "debug:latency_ns", buf, sizeof(buf)));
        ASSERT_STREQ(buf, "24000000");
        ASSERT_EQ(levers_sysctl_get(l, "debug:base_slice_ns", buf, sizeof(buf)), -ENOENT);
        ASSERT_CONTAINS(levers_last_error(l), "/proc/sys/kernel/sched_base_slice_ns");
        ASSERT_EQ(levers_sysctl_set(l, "kernel.sched_schedstats", "1"), 1);
        ASSERT_STREQ(levers_slurp(root, "/proc/sys/kernel/sched_schedstats"), "1");
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_eevdf(void) {
        char *root = levers_fixture_copy("eevdf"), buf[64];
        struct levers *l;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_sysctl_get(l, "debug:base_slice_ns", buf, sizeof(buf)));
        ASSERT_STREQ(buf, "3000000");
        ASSERT_EQ(levers_sysctl_set(l, "debug:base_slice_ns", "1500000"), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/kernel/debug/sched/base_slice_ns"), "1500000");
        ASSERT_EQ(levers_sysctl_get(l, "debug:min_granularity_ns", buf, sizeof(buf)), -ENOENT);
        ASSERT_CONTAINS(levers_last_error(l), "min_granularity_ns left in 6.6 (EEVDF)");
        /* no such sysctl on this kernel */
        ASSERT_EQ(levers_sysctl_get(l, "kernel.sched_schedstats", buf, sizeof(buf)), -ENOENT);
        ASSERT_CONTAINS(levers_last_error(l), "CONFIG_SCHEDSTATS");
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_no_debugfs(void) {
        char *root = levers_fixture_copy("hybrid"), buf[64];
        struct lever_caps c;
        struct levers *l;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_EQ(levers_sysctl_get(l, "debug:migration_cost_ns", buf, sizeof(buf)), -ENODEV);
        ASSERT_CONTAINS(levers_last_error(l), "debugfs not mounted");
        ASSERT_OK(levers_probe(l, &c));
        ASSERT_TRUE(!c.debug_tunables_readable);
        ASSERT_CONTAINS(c.sysctl_why, "debugfs not mounted");
        ASSERT_TRUE(!c.autogroup_present);
        ASSERT_TRUE(!c.schedstats_present);
        ASSERT_CONTAINS(c.schedstats_why, "CONFIG_SCHEDSTATS");
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_probe_schedstats(void) {
        char *root = levers_fixture_copy("v1");
        struct lever_caps c;
        struct levers *l;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_probe(l, &c));
        ASSERT_TRUE(c.autogroup_present);
        ASSERT_TRUE(c.debug_tunables_readable);
        ASSERT_STREQ(c.sysctl_why, "");
        ASSERT_TRUE(c.schedstats_present);
        ASSERT_TRUE(!c.schedstats_enabled);
        ASSERT_CONTAINS(c.schedstats_why, "kernel.sched_schedstats=0");
        levers_free(l);
        levers_fixture_remove(root);

        root = levers_fixture_copy("v2");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_probe(l, &c));
        ASSERT_TRUE(c.schedstats_present && c.schedstats_enabled);
        ASSERT_STREQ(c.schedstats_why, "");
        levers_free(l);
        levers_fixture_remove(root);
}

int main(void) {
        test_allow_list();
        test_split();
        test_debugfs_layout();
        test_legacy_sysctls();
        test_eevdf();
        test_no_debugfs();
        test_probe_schedstats();
        return 0;
}
