/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The plan stage: from findings, the snapshot, the configuration and what
 * is currently in force, decide which actions to take. Pure: no I/O.
 *
 * It holds state across intervals (hysteresis counters, cool-downs, the
 * "do not retry until" list) in struct plan_state, which the manager owns
 * and passes in; everything else is a const input.
 *
 * Invariants (tested in tests/test-plan*.c):
 *  - never two pinned hogs on one CPU; never pin when hogs outnumber the
 *    usable CPUs, and release all hog pins when they come to (seed 002:
 *    n+1 hogs on n CPUs must stay fair);
 *  - never place onto isolated, nohz_full or offline CPUs, or outside the
 *    task's allowed set;
 *  - never co-locate a pair onto a CPU a hog uses (pair next to a hog:
 *    -45 % measured here), never co-locate a stream pair (-25 %);
 *  - a finding must persist hysteresis_intervals before an action, and be
 *    absent that long before release; at most max_actions_per_interval.
 */

#include "action.h"
#include "config.h"
#include "detect.h"
#include "snapshot.h"

/* One change currently in force (as the applier reports it). */
struct managed {
        enum action_type type;
        struct task_id task;         /* ACT_AFFINITY */
        cpumask_t mask;              /* what we set */
        char key[128];               /* action_target_key() */
        char policy[64];
        enum detector kind;          /* which detector's finding led to it */
        uint64_t since_usec;
        char reason[160];
        char original[64];           /* the recorded original, formatted */
        char current[64];            /* the value we set, formatted */
};

struct plan_target_state {
        char key[128];               /* finding key: "hog:tid:start", "pair:tidA:tidB", ... */
        unsigned seen;               /* consecutive intervals the finding was present */
        unsigned absent;             /* consecutive intervals it was absent */
        uint64_t cooldown_until_usec;
        uint64_t no_retry_until_usec;
        char state[24];              /* "watching", "pinned", "co-located", "left alone" */
        char why[160];               /* last decision's reason (affctl hogs/pairs/explain) */
        struct finding last;         /* last evidence */
};

struct plan_state {
        struct plan_target_state *targets;
        size_t n_targets, allocated;
};

struct plan_state *plan_state_new(void);
struct plan_state *plan_state_free(struct plan_state *s);

/* Ask the planner not to retry a target until the given time (effect check failed). */
int plan_state_block(struct plan_state *s, const char *key, uint64_t until_usec, const char *why);

struct plan_input {
        const struct snapshot *snap;
        const struct config *config;
        const struct findings *findings;
        const struct managed *managed;
        size_t n_managed;
        uint64_t now_usec;
};

struct action_list {
        struct action *items;
        size_t n, allocated;
};

void action_list_clear(struct action_list *l);
int action_list_add(struct action_list *l, const struct action *a);

/* Decide. Appends to out (releases first, then sets). Returns 0 or -ENOMEM. */
int plan_run(struct plan_state *state, const struct plan_input *in, struct action_list *out);

/* Parts, one per concern (plan-hog.c, plan-pair.c, plan-levers.c), called by plan_run()
 * in this order with a shared CPU claim map so pairs never land on a hog's CPU. */
struct plan_ctx {
        struct plan_state *state;
        const struct plan_input *in;
        struct action_list *out;
        int *cpu_claim;              /* per CPU: 0 free, 1 hog, 2 pair, 3 spread */
        unsigned actions_left;       /* MaxActionsPerInterval budget */
};

int plan_hogs(struct plan_ctx *ctx);
int plan_pairs(struct plan_ctx *ctx);
int plan_spread(struct plan_ctx *ctx);
int plan_levers(struct plan_ctx *ctx);

/* Hysteresis bookkeeping shared by the parts: find or create the target state. */
struct plan_target_state *plan_state_get(struct plan_state *s, const char *key);
