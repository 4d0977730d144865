/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "common/cpumask.h"
#include "common/util.h"
#include "test-util.h"

static void test_list_roundtrip(void) {
        cpumask_t m;
        char buf[256];

        ASSERT_OK(cpumask_parse_list("0-3,8,10-11\n", &m));
        ASSERT_EQ(cpumask_weight(&m), 7);
        ASSERT_STREQ(cpumask_format_list(&m, buf, sizeof(buf)), "0-3,8,10-11");
        ASSERT_OK(cpumask_parse_list("", &m));
        ASSERT_TRUE(cpumask_empty(&m));
        ASSERT_EQ(cpumask_parse_list("3-1", &m), -EINVAL);
        ASSERT_EQ(cpumask_parse_list("1,x", &m), -EINVAL);
        ASSERT_EQ(cpumask_parse_list("5000", &m), -E2BIG);
}

static void test_hex(void) {
        cpumask_t m, l;

        ASSERT_OK(cpumask_parse_hex("00000000,00000003\n", &m));
        ASSERT_OK(cpumask_parse_list("0-1", &l));
        ASSERT_TRUE(cpumask_equal(&m, &l));
        ASSERT_OK(cpumask_parse_hex("1,00000000", &m));
        ASSERT_TRUE(cpumask_test(&m, 32));
        ASSERT_EQ(cpumask_weight(&m), 1);
}

static void test_ops(void) {
        cpumask_t a = cpumask_first_n(4), b = cpumask_of(2), c;
        int n = 0;

        ASSERT_TRUE(cpumask_subset(&b, &a));
        ASSERT_TRUE(!cpumask_subset(&a, &b));
        c = cpumask_andnot(&a, &b);
        ASSERT_EQ(cpumask_weight(&c), 3);
        ASSERT_TRUE(!cpumask_test(&c, 2));
        CPUMASK_FOREACH(cpu, &c)
                n += cpu;
        ASSERT_EQ(n, 0 + 1 + 3);
        ASSERT_EQ(cpumask_next(&c, 2), 3);
        ASSERT_EQ(cpumask_next(&c, 4), -1);
}

/* util_strip() works in place: callers that ignore its return value see the result. */
static void test_strip(void) {
        char nohz[] = "  (null)\n", blank[] = " \t\n", word[] = "x", empty[] = "";

        ASSERT_TRUE(util_strip(nohz) == nohz);
        ASSERT_STREQ(nohz, "(null)");
        ASSERT_STREQ(util_strip(blank), "");
        ASSERT_STREQ(util_strip(word), "x");
        ASSERT_STREQ(util_strip(empty), "");
}

int main(void) {
        test_strip();
        test_list_roundtrip();
        test_hex();
        test_ops();
        return 0;
}
