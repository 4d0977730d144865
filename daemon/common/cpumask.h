/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A fixed-size CPU set as a plain value type, so the pure detect and plan
 * stages can copy it, compare it and build it in struct literals in tests.
 * 1024 CPUs matches glibc's cpu_set_t; larger machines are refused at
 * topology load time with -E2BIG rather than silently truncated.
 */

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPUMASK_MAX 1024
#define CPUMASK_WORDS (CPUMASK_MAX / 64)

typedef struct cpumask {
        uint64_t bits[CPUMASK_WORDS];
} cpumask_t;

static inline void cpumask_zero(cpumask_t *m) {
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                m->bits[i] = 0;
}
static inline bool cpumask_test(const cpumask_t *m, int cpu) {
        return cpu >= 0 && cpu < CPUMASK_MAX && (m->bits[cpu / 64] >> (cpu % 64)) & 1;
}
static inline void cpumask_set(cpumask_t *m, int cpu) {
        if (cpu >= 0 && cpu < CPUMASK_MAX)
                m->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}
static inline void cpumask_clear(cpumask_t *m, int cpu) {
        if (cpu >= 0 && cpu < CPUMASK_MAX)
                m->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

cpumask_t cpumask_of(int cpu);
/* The one CPU of a single-CPU mask (a pin), else -1. */
int cpumask_single(const cpumask_t *m);
/* Mask with CPUs [0, n). */
cpumask_t cpumask_first_n(int n);
unsigned cpumask_weight(const cpumask_t *m);
bool cpumask_empty(const cpumask_t *m);
bool cpumask_equal(const cpumask_t *a, const cpumask_t *b);
/* a ⊆ b */
bool cpumask_subset(const cpumask_t *a, const cpumask_t *b);
cpumask_t cpumask_and(const cpumask_t *a, const cpumask_t *b);
cpumask_t cpumask_or(const cpumask_t *a, const cpumask_t *b);
/* a \ b */
cpumask_t cpumask_andnot(const cpumask_t *a, const cpumask_t *b);
/* First set CPU >= from, or -1. Iterate: for (c = cpumask_next(m, 0); c >= 0; c = cpumask_next(m, c + 1)) */
int cpumask_next(const cpumask_t *m, int from);
#define CPUMASK_FOREACH(cpu, m) \
        for (int cpu = cpumask_next((m), 0); cpu >= 0; cpu = cpumask_next((m), cpu + 1))

/* Parse the kernel's list format ("0-3,8,10-11", also "" = empty). */
int cpumask_parse_list(const char *s, cpumask_t *ret);
/* Parse the kernel's hex mask format ("ff,ffffffff"), as in Cpus_allowed. */
int cpumask_parse_hex(const char *s, cpumask_t *ret);
/* Format as a list ("0-3,8"); "" for the empty mask. Returns buf or NULL if too small. */
char *cpumask_format_list(const cpumask_t *m, char *buf, size_t size);

void cpumask_to_cpu_set(const cpumask_t *m, cpu_set_t *ret);
void cpumask_from_cpu_set(const cpu_set_t *s, cpumask_t *ret);
