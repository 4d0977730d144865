/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sample-coexist.c: the kubelet's cpu_manager_state parsed from strings
 * (both formats, policy "none", every way it can be malformed), and both
 * files read below a temporary root: absent, sched_ext enabled and not,
 * a malformed or unreadable file noted and ignored.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sample/coexist.h"
#include "common/util.h"
#include "test-fixtures.h"
#include "test-util.h"

static cpumask_t mask(const char *list) {
        cpumask_t m;

        ASSERT_OK(cpumask_parse_list(list, &m));
        return m;
}

static int parse(const char *json, cpumask_t *ret, unsigned *ret_n, char *why, size_t why_size) {
        char policy[32] = "unset";

        why[0] = '\0';
        return coexist_parse_kubelet(json, ret, ret_n, policy, sizeof(policy), why, why_size);
}

static void test_parse(void) {
        char policy[32], why[160];
        cpumask_t m;
        unsigned n;

        /* the kubelet's own example (v2: pod UID → container → CPUs) */
        ASSERT_OK(coexist_parse_kubelet("{\"policyName\":\"static\",\"defaultCpuSet\":\"0-1,6-7\","
                                        "\"entries\":{\"6f1b-pod\":{\"app\":\"2-5\"}},\"checksum\":1234}",
                                        &m, &n, policy, sizeof(policy), why, sizeof(why)));
        ASSERT_TRUE(cpumask_equal(&m, &(cpumask_t) { .bits = { 0x3c } }));
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(policy, "static");

        /* several pods and containers: the union */
        ASSERT_OK(parse("{\"policyName\":\"static\",\"defaultCpuSet\":\"0,7\",\"entries\":{"
                        "\"a\":{\"x\":\"1-2\",\"y\":\"3\"},\"b\":{\"z\":\"5-6\"}}}", &m, &n, why, sizeof(why)));
        {
                cpumask_t want = mask("1-3,5-6");
                ASSERT_TRUE(cpumask_equal(&m, &want));
        }
        ASSERT_EQ(n, 3);

        /* v1 (kubelet < 1.18): container ID → CPUs */
        ASSERT_OK(parse("{\"policyName\":\"static\",\"defaultCpuSet\":\"0\",\"entries\":{\"c0ffee\":\"4-5\"}}",
                        &m, &n, why, sizeof(why)));
        {
                cpumask_t want = mask("4-5");
                ASSERT_TRUE(cpumask_equal(&m, &want));
        }
        ASSERT_EQ(n, 1);

        /* policy none, no entries, null entries: nothing is exclusive */
        ASSERT_OK(parse("{\"policyName\":\"none\",\"defaultCpuSet\":\"\",\"entries\":{\"p\":{\"c\":\"1\"}}}",
                        &m, &n, why, sizeof(why)));
        ASSERT_TRUE(cpumask_empty(&m));
        ASSERT_EQ(n, 0);
        ASSERT_OK(parse("{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\"}", &m, &n, why, sizeof(why)));
        ASSERT_TRUE(cpumask_empty(&m));
        ASSERT_OK(parse("{\"policyName\":\"static\",\"entries\":null}", &m, &n, why, sizeof(why)));
        ASSERT_TRUE(cpumask_empty(&m));

        /* malformed: -EINVAL with a reason, the output untouched */
        {
                static const char *const bad[] = {
                        "",
                        "{\"policyName\":\"static\",",
                        "[1,2]",
                        "{\"defaultCpuSet\":\"0-7\"}",
                        "{\"policyName\":7}",
                        "{\"policyName\":\"static\",\"entries\":[\"2-5\"]}",
                        "{\"policyName\":\"static\",\"entries\":{\"p\":{\"c\":\"2-x\"}}}",
                        "{\"policyName\":\"static\",\"entries\":{\"p\":{\"c\":\"\"}}}",
                        "{\"policyName\":\"static\",\"entries\":{\"p\":{\"c\":5}}}",
                        "{\"policyName\":\"static\",\"entries\":{\"p\":7}}",
                };
                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        m = mask("7");
                        n = 9;
                        if (parse(bad[i], &m, &n, why, sizeof(why)) != -EINVAL) {
                                fprintf(stderr, "accepted: %s\n", bad[i]);
                                ASSERT_TRUE(false);
                        }
                        ASSERT_TRUE(why[0] != '\0');
                        ASSERT_TRUE(cpumask_equal(&m, &(cpumask_t) { .bits = { 0x80 } }));
                        ASSERT_EQ(n, 9);
                }
        }
        ASSERT_EQ(parse("{\"policyName\":\"static\",\"entries\":{\"p\":{\"c\":\"2-x\"}}}", &m, &n, why, sizeof(why)),
                  -EINVAL);
        ASSERT_STREQ(why, "entry c: bad CPU list \"2-x\"");
}

static void mkdir_at(const char *root, const char *rel) {
        char path[PATH_MAX], cmd[PATH_MAX + 32];

        ASSERT_TRUE(util_path_at(path, sizeof(path), root, rel));
        snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
        ASSERT_EQ(system(cmd), 0);
}

static void test_read(void) {
        char root[PATH_MAX];
        struct coexist c;

        test_mkdtemp(root, sizeof(root), "affd-coexist.");

        /* nothing there: no sched_ext, no kubelet, no note */
        ASSERT_OK(coexist_read(root, &c));
        ASSERT_TRUE(!c.sched_ext);
        ASSERT_STREQ(c.sched_ext_state, "");
        ASSERT_TRUE(!c.kubelet_present);
        ASSERT_TRUE(cpumask_empty(&c.kubelet_exclusive));
        ASSERT_STREQ(c.note, "");

        /* sched_ext: only "enabled" counts; the scheduler's name comes along */
        mkdir_at(root, "/sys/kernel/sched_ext/root");
        test_write_at(root, COEXIST_SCHED_EXT_STATE, "enabled\n");
        test_write_at(root, COEXIST_SCHED_EXT_OPS, "simple\n");
        ASSERT_OK(coexist_read(root, &c));
        ASSERT_TRUE(c.sched_ext);
        ASSERT_STREQ(c.sched_ext_state, "enabled");
        ASSERT_STREQ(c.sched_ext_ops, "simple");
        test_write_at(root, COEXIST_SCHED_EXT_STATE, "disabled\n");
        ASSERT_OK(coexist_read(root, &c));
        ASSERT_TRUE(!c.sched_ext);
        ASSERT_STREQ(c.sched_ext_state, "disabled");
        ASSERT_STREQ(c.sched_ext_ops, "");
        /* unreadable (a directory): not taken as on, and said */
        test_remove_at(root, COEXIST_SCHED_EXT_STATE);
        mkdir_at(root, COEXIST_SCHED_EXT_STATE);
        ASSERT_OK(coexist_read(root, &c));
        ASSERT_TRUE(!c.sched_ext);
        ASSERT_TRUE(strncmp(c.note, COEXIST_SCHED_EXT_STATE ": ", strlen(COEXIST_SCHED_EXT_STATE) + 2) == 0);
        /* ... and a bad kubelet file at the same time: both are said */
        mkdir_at(root, "/var/lib/kubelet");
        test_write_at(root, COEXIST_KUBELET_STATE, "[]");
        ASSERT_OK(coexist_read(root, &c));
        ASSERT_TRUE(strncmp(c.note, COEXIST_SCHED_EXT_STATE ": ", strlen(COEXIST_SCHED_EXT_STATE) + 2) == 0);
        ASSERT_TRUE(strstr(c.note, "; " COEXIST_KUBELET_STATE ": malformed: not a JSON object; ignored") != NULL);
        test_remove_at(root, "/sys/kernel/sched_ext");

        /* kubelet: read, then malformed (noted, ignored), then a NUL byte */
        mkdir_at(root, "/var/lib/kubelet");
        test_write_at(root, COEXIST_KUBELET_STATE,
                      "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-1,6-7\","
                      "\"entries\":{\"pod\":{\"app\":\"2-5\"}},\"checksum\":1}\n");
        ASSERT_OK(coexist_read(root, &c));
        ASSERT_TRUE(c.kubelet_present);
        {
                cpumask_t want = mask("2-5");
                ASSERT_TRUE(cpumask_equal(&c.kubelet_exclusive, &want));
        }
        ASSERT_EQ(c.kubelet_containers, 1);
        ASSERT_STREQ(c.kubelet_policy, "static");
        ASSERT_STREQ(c.note, "");

        test_write_at(root, COEXIST_KUBELET_STATE, "{\"policyName\":\"static\",\"entries\":{\"pod\":{\"app\":\"2-");
        ASSERT_OK(coexist_read(root, &c));
        ASSERT_TRUE(c.kubelet_present);
        ASSERT_TRUE(cpumask_empty(&c.kubelet_exclusive));
        ASSERT_STREQ(c.kubelet_policy, "");
        ASSERT_TRUE(strncmp(c.note, COEXIST_KUBELET_STATE ": malformed: ", strlen(COEXIST_KUBELET_STATE) + 13) == 0);
        ASSERT_TRUE(strstr(c.note, "; ignored") != NULL);

        test_write_bytes_at(root, COEXIST_KUBELET_STATE, "{\"policyName\":\"static\"}\0{}", 26);
        ASSERT_OK(coexist_read(root, &c));
        ASSERT_TRUE(cpumask_empty(&c.kubelet_exclusive));
        ASSERT_STREQ(c.note, COEXIST_KUBELET_STATE ": malformed: NUL byte in the file; ignored");

        test_rm_tree(root);
}

int main(void) {
        test_parse();
        test_read();
        printf("ok\n");
        return 0;
}
