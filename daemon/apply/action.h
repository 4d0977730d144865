/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * An action is one change to the system the planner wants, or the release
 * of one it made earlier. It carries its reason and evidence so that the
 * journal, the logs and `affctl explain` can say why.
 */

#include <stdbool.h>
#include <stdint.h>

#include "common/cpumask.h"
#include "config/config.h"
#include "sample/snapshot.h"

enum action_type {
        ACT_AFFINITY,       /* sched_setaffinity of one thread */
        ACT_CGROUP_WEIGHT,  /* cpu.weight (v2) / cpu.shares (v1) of one cgroup */
        ACT_SCHED_FEATURE,  /* one sched_features name on/off */
        ACT_SYSCTL,         /* one sysctl or debugfs sched tunable */
        ACT_CGROUP_SUBTREE, /* "+cpu" in one cgroup v2 cgroup.subtree_control: the applier
                             * makes these itself, before a weight that needs it (apply.h) */
        _ACT_TYPE_MAX,
};

enum action_verb {
        VERB_SET,      /* record the original, then change */
        VERB_RELEASE,  /* restore the recorded original */
};

/*
 * What an action's evidence_before measures (plan/effect.h,
 * effect_proxy_for()): the detector's own proxy (a hog's util, a pair's
 * switches, a victim's run delay), or, for a pair whose members move bytes
 * through read()/write(), those bytes: the work a pipe or a stream gets
 * done, which switches do not tell apart from a stream's churn.
 */
enum evidence_basis {
        EVIDENCE_OWN,
        EVIDENCE_IO_BYTES,
        /* a pair's response time (lower is better): what a client sending
         * at a fixed rate waits for, where its round trips/s stay what it
         * sends whatever the placement; judged beside the others, never
         * instead of them (plan/effect.c, effect_check()) */
        EVIDENCE_RESPONSE,
};

struct action {
        enum action_type type;
        enum action_verb verb;

        /* ACT_AFFINITY */
        struct task_id task;
        cpumask_t mask;

        /* ACT_CGROUP_WEIGHT: cgroup path relative to the hierarchy root, v2-scale weight
         * ACT_CGROUP_SUBTREE: cgroup is the parent whose subtree_control hands "cpu" down,
         * enable = true for "+cpu" */
        char cgroup[256];
        uint64_t weight;

        /* ACT_SCHED_FEATURE: name without NO_, enable = true for NAME, false for NO_NAME
         * ACT_SYSCTL: name is "kernel.sched_autogroup_enabled" or "debug:migration_cost_ns" */
        char name[96];
        bool enable;
        char value[64];

        /* why */
        enum detector kind;   /* the detector whose finding led to it (plan_emit fills it from the policy) */
        char policy[64];
        char reason[160];     /* e.g. "hog: util 98% migrations 0.6/s on 0,1" */
        double evidence_before; /* the throughput proxy measured before (effect check) */
        enum evidence_basis evidence_basis; /* what evidence_before measures; the check measures the same */
        double evidence_before_mean; /* pair: the mean of its windows before, which evidence_before is
                                      * at least (a burst window reads above it); 0: not known */
        unsigned evidence_before_windows; /* pair: the windows evidence_before is of (0: not known,
                                           * read as fewer than the effect check trusts) */
        double response_before_usec; /* pair: its response time before, µs (0: not measured) */
        unsigned response_before_windows; /* the bursts that "before" is the mean of */
        bool looked_again;    /* pair: the effect check's verdict on it is final: placed again after
                               * a second look (plan_state_second_look()), or its "before" is of a
                               * placement of ours (a move, a join, a new span) */
        struct task_id partner; /* pair: the other member; the effect check judges the pair's
                                 * round trips, which neither member's own counts show */
        struct task_id work_pair[2]; /* pair: the pair whose work the check measures instead, when
                                      * set (tid != 0): a feeder's, the pair it feeds, for a
                                      * one-way hand-off's switches are no work (a client at a fixed
                                      * rate that finds two requests queued takes both awake) */
};

/* Stable key of the target ("task:tid:start", "cgroup:/x", "feature:NAME", "sysctl:NAME",
 * "subtree:/x" for the cpu controller in /x's cgroup.subtree_control). */
char *action_target_key(const struct action *a, char *buf, size_t size);

/* A hash of the action's type, verb and target (not its value): two
 * actions of one verb on one target have the same. */
uint64_t action_target_hash(const struct action *a);
const char *action_type_to_string(enum action_type t);

/* One change currently in force (as the applier reports it). */
struct managed {
        enum action_type type;
        struct task_id task;         /* ACT_AFFINITY */
        cpumask_t mask;              /* what we set */
        char key[128];               /* action_target_key() */
        char policy[64];
        enum detector kind;          /* which detector's finding led to it */
        struct task_id partner;      /* DETECT_PAIR: the pair it was set for (tid 0: not known,
                                      * e.g. replayed from the journal) */
        uint64_t since_usec;
        char reason[160];
        char original[64];           /* the recorded original, formatted */
        char current[64];            /* the value we set, formatted */
};

