/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Minimal assertions for the unit tests: a failed check prints
 * file:line and the expression and exits 1 (automake's FAIL); exit 77 is a
 * genuine skip and must say why.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSERT_TRUE(expr)                                                              \
        do {                                                                           \
                if (!(expr)) {                                                         \
                        fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,     \
                                __LINE__, #expr);                                      \
                        exit(1);                                                       \
                }                                                                      \
        } while (0)

#define ASSERT_EQ(a, b)                                                                \
        do {                                                                           \
                long long _a = (long long) (a), _b = (long long) (b);                  \
                if (_a != _b) {                                                        \
                        fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n",      \
                                __FILE__, __LINE__, #a, #b, _a, _b);                   \
                        exit(1);                                                       \
                }                                                                      \
        } while (0)

#define ASSERT_STREQ(a, b)                                                             \
        do {                                                                           \
                const char *_a = (a), *_b = (b);                                       \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                               \
                        fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n",  \
                                __FILE__, __LINE__, #a, #b, _a ? _a : "(null)",        \
                                _b ? _b : "(null)");                                   \
                        exit(1);                                                       \
                }                                                                      \
        } while (0)

#define ASSERT_OK(expr)                                                                \
        do {                                                                           \
                long long _r = (long long) (expr);                                     \
                if (_r < 0) {                                                          \
                        fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,  \
                                #expr, strerror((int) -_r));                           \
                        exit(1);                                                       \
                }                                                                      \
        } while (0)

#define ASSERT_NEAR(a, b, eps)                                                         \
        do {                                                                           \
                double _a = (a), _b = (b);                                             \
                if (_a - _b > (eps) || _b - _a > (eps)) {                              \
                        fprintf(stderr, "%s:%d: %s ~ %s failed: %g vs %g\n", __FILE__, \
                                __LINE__, #a, #b, _a, _b);                             \
                        exit(1);                                                       \
                }                                                                      \
        } while (0)

#define TEST_SKIP(why)                                                                 \
        do {                                                                           \
                fprintf(stderr, "SKIP: %s\n", why);                                    \
                exit(77);                                                              \
        } while (0)

/* Absolute path of a fixture under tests/fixtures, from $top_srcdir or the build-time default. */
static inline const char *test_fixture(char *buf, size_t size, const char *name) {
        const char *top = getenv("top_srcdir");
        snprintf(buf, size, "%s/tests/fixtures/%s", top ? top : TOP_SRCDIR, name);
        return buf;
}
