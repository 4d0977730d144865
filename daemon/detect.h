/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The detect stage: pure functions from (snapshot, config) to findings.
 * No I/O, no logging above debug. Each detector lives in detect-<kind>.c.
 *
 * A finding names the tasks involved, the policy that asked for it and the
 * evidence numbers, so every later decision can be explained (seed 004:
 * judge by before/after numbers).
 */

#include "config.h"
#include "snapshot.h"

#define FINDING_MAX_MEMBERS 64

struct finding {
        enum detector kind;
        const struct policy *policy;
        struct task_id members[FINDING_MAX_MEMBERS];
        size_t n_members;

        /* evidence; fields not relevant to the kind are 0 */
        double util;                 /* hog: util of the thread; group: mean */
        double combined_util;        /* pair/group: sum of members' util */
        double migrations_per_s;     /* hog: its rate; group: sum */
        double wake_rate_per_s;      /* pair: min of the two directions */
        double split_fraction;       /* pair: fraction of the window the members ran on different CPUs */
        double run_delay_ms_per_s;
        double steal;                /* steal: machine-wide fraction */
        cpumask_t cpus_seen;
        char note[160];              /* short human text, e.g. "stream: combined util 1.7 > 1.2" */
};

struct findings {
        struct finding *items;
        size_t n, allocated;
};

void findings_clear(struct findings *f);
int findings_add(struct findings *f, const struct finding *item);

/* Does the policy's [Match] cover this task? Pure: uses task->proc. */
bool policy_matches(const struct policy *p, const struct task *t);

/*
 * The policy that governs a task for a detector, honouring exclusions and
 * the safety defaults (kernel threads, RT tasks, narrowed affinity, the
 * daemon itself: self_pid). Returns NULL if the task must not be touched;
 * ret_why (may be NULL) gets a static string saying why not.
 */
const struct policy *detect_policy_for(const struct config *c, const struct snapshot *s,
                                       const struct task *t, enum detector kind,
                                       pid_t self_pid, const char **ret_why);

/* Each returns 0 or -errno (-ENOMEM only); findings are appended. */
int detect_hogs(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);
int detect_pairs(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);
int detect_spread(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);
int detect_steal(const struct snapshot *s, const struct config *c, struct findings *out);
int detect_rundelay(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);

/* Run all detectors. */
int detect_all(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);
