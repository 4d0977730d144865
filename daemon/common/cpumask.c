/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpumask.h"

cpumask_t cpumask_of(int cpu) {
        cpumask_t m;
        cpumask_zero(&m);
        cpumask_set(&m, cpu);
        return m;
}

int cpumask_single(const cpumask_t *m) {
        return cpumask_weight(m) == 1 ? cpumask_next(m, 0) : -1;
}

cpumask_t cpumask_first_n(int n) {
        cpumask_t m;
        cpumask_zero(&m);
        for (int i = 0; i < n && i < CPUMASK_MAX; i++)
                cpumask_set(&m, i);
        return m;
}

unsigned cpumask_weight(const cpumask_t *m) {
        unsigned n = 0;
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                n += (unsigned) __builtin_popcountll(m->bits[i]);
        return n;
}

bool cpumask_empty(const cpumask_t *m) {
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                if (m->bits[i])
                        return false;
        return true;
}

bool cpumask_equal(const cpumask_t *a, const cpumask_t *b) {
        return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

bool cpumask_subset(const cpumask_t *a, const cpumask_t *b) {
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                if (a->bits[i] & ~b->bits[i])
                        return false;
        return true;
}

cpumask_t cpumask_and(const cpumask_t *a, const cpumask_t *b) {
        cpumask_t r;
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                r.bits[i] = a->bits[i] & b->bits[i];
        return r;
}

cpumask_t cpumask_or(const cpumask_t *a, const cpumask_t *b) {
        cpumask_t r;
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                r.bits[i] = a->bits[i] | b->bits[i];
        return r;
}

cpumask_t cpumask_andnot(const cpumask_t *a, const cpumask_t *b) {
        cpumask_t r;
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                r.bits[i] = a->bits[i] & ~b->bits[i];
        return r;
}

int cpumask_next(const cpumask_t *m, int from) {
        if (from < 0)
                from = 0;
        for (int w = from / 64; w < (int) CPUMASK_WORDS; w++) {
                uint64_t v = m->bits[w];
                if (w == from / 64)
                        v &= ~UINT64_C(0) << (from % 64);
                if (v)
                        return w * 64 + __builtin_ctzll(v);
        }
        return -1;
}

static int parse_cpu(const char **p, int *ret) {
        char *end;
        long v;

        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        errno = 0;
        v = strtol(*p, &end, 10);
        if (errno || v < 0)
                return -EINVAL;
        if (v >= CPUMASK_MAX)
                return -E2BIG;
        *p = end;
        *ret = (int) v;
        return 0;
}

int cpumask_parse_list(const char *s, cpumask_t *ret) {
        cpumask_t m;
        const char *p = s;
        int r;

        cpumask_zero(&m);
        while (*p == ' ' || *p == '\t')
                p++;
        while (*p && *p != '\n') {
                int a, b;

                r = parse_cpu(&p, &a);
                if (r < 0)
                        return r;
                b = a;
                if (*p == '-') {
                        p++;
                        r = parse_cpu(&p, &b);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                }
                for (int c = a; c <= b; c++)
                        cpumask_set(&m, c);
                if (*p == ',')
                        p++;
                else if (*p && *p != '\n')
                        return -EINVAL;
        }
        *ret = m;
        return 0;
}

int cpumask_parse_hex(const char *s, cpumask_t *ret) {
        cpumask_t m;
        size_t len = strlen(s);
        int bit = 0;

        cpumask_zero(&m);
        while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
                len--;
        if (len == 0)
                return -EINVAL;
        /* Walk from the least significant (rightmost) digit. */
        for (size_t i = len; i > 0; i--) {
                char c = s[i - 1];
                int v;

                if (c == ',')
                        continue;
                if (c >= '0' && c <= '9')
                        v = c - '0';
                else if (c >= 'a' && c <= 'f')
                        v = c - 'a' + 10;
                else if (c >= 'A' && c <= 'F')
                        v = c - 'A' + 10;
                else
                        return -EINVAL;
                for (int j = 0; j < 4; j++, bit++)
                        if (v & (1 << j)) {
                                if (bit >= CPUMASK_MAX)
                                        return -E2BIG;
                                cpumask_set(&m, bit);
                        }
        }
        *ret = m;
        return 0;
}

char *cpumask_format_list(const cpumask_t *m, char *buf, size_t size) {
        size_t off = 0;
        int c = cpumask_next(m, 0);

        if (size == 0)
                return NULL;
        buf[0] = '\0';
        while (c >= 0) {
                int end = c, n;
                while (cpumask_test(m, end + 1))
                        end++;
                if (end == c)
                        n = snprintf(buf + off, size - off, "%s%d", off ? "," : "", c);
                else
                        n = snprintf(buf + off, size - off, "%s%d-%d", off ? "," : "", c, end);
                if (n < 0 || (size_t) n >= size - off)
                        return NULL;
                off += (size_t) n;
                c = cpumask_next(m, end + 1);
        }
        return buf;
}

void cpumask_to_cpu_set(const cpumask_t *m, cpu_set_t *ret) {
        CPU_ZERO(ret);
        CPUMASK_FOREACH(c, m)
                if (c < CPU_SETSIZE)
                        CPU_SET(c, ret);
}

void cpumask_from_cpu_set(const cpu_set_t *s, cpumask_t *ret) {
        cpumask_zero(ret);
        for (int c = 0; c < CPU_SETSIZE && c < CPUMASK_MAX; c++)
                if (CPU_ISSET(c, s))
                        cpumask_set(ret, c);
}
