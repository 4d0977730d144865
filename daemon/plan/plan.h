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
 *    usable CPUs, and release all hog pins when they come to ([conservative-smp]:
 *    n+1 hogs on n CPUs must stay fair);
 *  - never place onto isolated, nohz_full or offline CPUs, or outside the
 *    task's allowed set;
 *  - a pair is one CPU, on the node that holds most of its memory when
 *    snapshot->memnodes says so (memnode.h); spread groups and hogs go
 *    over cores (SMT siblings last), nodes and LLCs, the highest capacity
 *    first (for a pair: worth a move within its LLC, not to another;
 *    plan-pair.c);
 *  - never co-locate a pair onto a CPU a hog uses (pair next to a hog:
 *    -45 % measured here), never co-locate a stream pair (-25 %);
 *  - a finding must persist hysteresis_intervals before an action, and be
 *    absent that long before release; at most max_actions_per_interval
 *    SETs per pass (releases are never held back: restoring cannot break
 *    an invariant, keeping a pin can); a cool-down per target after each
 *    change; no retry while plan_state_block() says so;
 *  - a pin whose CPU became unusable or left the task's allowed set is
 *    released at once, and placed again in the same pass if a CPU is free
 *    (RELEASE before SET): a task is never left stuck.
 *  - while a sched_ext scheduler is enabled (snap->coexist.sched_ext) no
 *    affinity is set and every affinity change in force is released
 *    (COEXIST_SCHED_EXT_WHY); hog, pair and spread targets start their
 *    hysteresis again when it is gone, since what was seen under the BPF
 *    scheduler says nothing about the stock one; the levers go on;
 *  - no CPU the kubelet gave a container (snapshot_usable()) and no thread
 *    left alone for good (plan_state_foreign()) is ever a target.
 *
 * Every decision leaves its state and reason in struct plan_target_state
 * ("pinned to 1", "left alone: 3 hogs > 2 usable CPUs", "watching 2/3"),
 * which `affctl hogs|pairs|explain` show.
 *
 * struct action and struct managed carry the detector (kind) that led to
 * a change, and the journal records it. plan_run() resolves it from the
 * policy (Detector=) only for an entry read as DETECT_ALWAYS (a journal
 * written before the detector was recorded); parts see the resolved kind.
 */

#include "apply/action.h"
#include "common/states.h"
#include "config/config.h"
#include "detect/detect.h"
#include "sample/calibrate.h"
#include "sample/snapshot.h"

struct plan_target_state {
        char key[128];               /* finding key: "hog:tid:start", "pair:tidA:tidB", ... */
        enum detector kind;          /* _DETECT_MAX for keys not tied to a detector ("task:...") */
        char policy[64];             /* policy name (not a pointer: config may be reloaded) */
        unsigned seen;               /* consecutive intervals the finding was present */
        unsigned absent;             /* consecutive intervals it was absent */
        uint64_t cooldown_until_usec;
        bool cooldown_dry_run;       /* armed by a change only reported (plan_cooldown_arm()) */
        uint64_t no_retry_until_usec;
        char state[48];              /* a string of common/states.h: plan_state_id or pair_state */
        char why[160];               /* last decision's reason (affctl hogs/pairs/explain) */
        char block_why[160];         /* plan_state_block()'s reason, kept while why moves on */
        struct finding last;         /* last evidence; last.policy is always NULL here */

        /*
         * Migrations over the policy window, decayed: each interval
         * migrations_decayed = migrations_decayed * e^(-dt/W) + migrations
         * in the interval; the rate is migrations_decayed / W. A hop every
         * 2 s (5-6 per 10 s) settles at 0.5/s; one hop decays
         * below 0.1/s (with W = 10 s) right away.
         */
        double migrations_decayed;
        double migrations_window_per_s;  /* migrations_decayed / W, as last judged */
        /*
         * Hog: its util averaged over the same window (exponentially, the
         * same decay), the effect check's "before". One interval's util is
         * a biased "before": the interval that made a hog a hog is one of its
         * busiest, so the median after the pin looked like a loss and noise
         * alone undid good pins. util_avg_n counts the samples in it.
         */
        double util_avg;
        unsigned util_avg_n;
        /*
         * Pair: what it moved in the windows before we placed it, where the
         * kernel put it (effect_proxy_for(), on before_basis), time-weighted
         * and decayed (plan-pair.c, note_window()): the effect check's
         * "before" is at least this. One window is a biased "before" too:
         * under background load that runs in slices of up to half a second,
         * a stream's 300 ms window read 7.8e5 bytes/s where its 3 s read
         * 1.24e6, and a co-location that cost it 14 % read +36 %.
         */
        double before_sum, before_weight;
        unsigned before_windows;     /* how many windows that mean has */
        /* the same for its response time, over the windows that had one
         * (snapshot_pair_response_usec()): the check's response "before" */
        double response_sum, response_weight;
        unsigned response_windows;   /* how many windows that mean has */
        uint64_t before_usec;        /* the last window added */
        enum evidence_basis before_basis;
        int cpu;                     /* hog: the CPU it is pinned (or being pinned) to, else -1 */
        uint64_t first_seen_usec;    /* pair: the pass the planner first knew it */
        uint64_t placed_usec;        /* pair: when we co-located it (0: not ours) */
        struct task_id fan_hub;      /* pair: placed as a fan with this hub (tid 0: not a fan),
                                      * until released (plan-pair.c, item_shape()) */
        /* "task:" keys: times someone else changed the affinity we set on this
         * thread (plan_state_foreign()); kept until the thread exits. */
        unsigned foreign_changes;
        /* "task:" keys: the effect check released this thread's pair once
         * for a second look (plan_state_second_look()); the next verdict on
         * it is final. Kept until the thread exits, as foreign_changes. */
        bool looked_again;
        /* "pair:" keys: the bytes/s the pair moved on one CPU before its
         * second look (plan_state_second_look()), the median the verdict
         * read, held against the windows of the look at the first pass
         * after it (plan-pair.c, judge_look()); 0: not measured, or judged */
        double look_placed_work;
        uint64_t look_until_usec;    /* "pair:" keys: when that look ends */
        struct task_id task;
        uint64_t generation;         /* plan_run pass that last looked at it (garbage collection) */
};

struct plan_state {
        /* Pointers, so a plan_target_state * stays valid while more targets are added. */
        struct plan_target_state **targets;
        size_t n_targets, allocated;

        uint64_t generation;         /* plan_run passes so far */
        /* Hogs outnumbering usable CPUs: consecutive intervals it held / did not. */
        unsigned hog_overcommit_seen, hog_overcommit_absent;
        unsigned hog_overcommit_hogs, hog_overcommit_cpus;   /* last counts, for affctl hogs */
        /* The last plan_run() held a pair back until its members have a
         * window of their own (plan_recheck_soon()). */
        bool recheck_soon;
};

struct plan_state *plan_state_new(void);
struct plan_state *plan_state_free(struct plan_state *s);

/*
 * True when the last plan_run() held a pair back because a member was born
 * in this window, so that its rates still include its start-up. The caller
 * then runs the next pass soon rather than an interval later, so that the
 * fix still lands within a second of the pair's start, on a before its
 * effect check can trust.
 */
bool plan_recheck_soon(const struct plan_state *s);

/*
 * Ask the planner not to retry a target until the given time (effect check
 * failed). key is either a finding key ("hog:TID:START") or the action's
 * action_target_key() ("task:TID:START"); the planner honours both.
 */
int plan_state_block(struct plan_state *s, const char *key, uint64_t until_usec, const char *why);

/*
 * The key an undo of a blocks for RetryAfter=: for a pair, the pair
 * ("pair:TIDLOW:TIDHIGH"), not its thread: a verdict on a server thread with
 * one client says nothing of it with the next (MariaDB's thread cache hands
 * the same thread to each new connection; blocking the thread kept a later
 * client at a fixed rate split, seen in a CI rehearsal under load). Anything
 * else, a feeder (work_pair) too, is blocked as the target it is: buf holds
 * action_target_key(a) on entry and is returned as it is then.
 */
const char *plan_undo_key(const struct action *a, char *buf, size_t size);

/*
 * The effect check kept a pair by bytes that showed no clear gain, on a
 * "before" that may be of the pair's first second only
 * (effect_result.second_look): the pair's members (a->task, a->partner;
 * the manager undoes each one's change as its verdict comes, in the same
 * pass, for they are judged on the same figures) are not placed again
 * before until_usec (PLAN_SECOND_LOOK_USEC from now), so that the next
 * "before", the mean of the windows where the kernel puts the pair, is of
 * the kernel's placement now, over several windows. Marks both as looked
 * at again: the next verdict on them is final. Five seconds: the windows'
 * mean decays over 3 s, and under background load that comes in slices of
 * up to half a second a stream's rate is steady within a few percent over
 * four windows.
 *
 * The look is the pair's hold, and the cool-down its placement armed ends
 * with it; so does the one of a pair that shares a member and is released
 * for it (a fan's other pair, a chain's link: plan_state_look_until()).
 * Cooldown= is there against flapping, and a look is one release and one
 * placement, whose verdict is final. Held the cool-down's 30 s
 * instead, Redis at 2,000 requests/s beside stress-ng, released for its
 * look 3 s after it was co-located, ran split for the rest of a 10 s run:
 * p99 4.1 ms against 2.8 ms with it pinned by hand (a client at a fixed
 * rate moves as many bytes anywhere, so it always gets a look).
 */
#define PLAN_SECOND_LOOK_USEC (5 * USEC_PER_SEC)
/* placed_work: the pair's bytes/s on one CPU that the verdict read (0: not
 * measured), kept for the pair (plan_target_state.look_placed_work) where
 * the action was judged by its own bytes, not by a pair it feeds. */
int plan_state_second_look(struct plan_state *s, const struct action *a, uint64_t until_usec, const char *why,
                           double placed_work);
/* Was thread id released for a second look already? */
bool plan_state_looked_again(const struct plan_state *s, const struct task_id *id);
/* When the second look of thread id ends, if it is in one now; else 0. */
uint64_t plan_state_look_until(const struct plan_state *s, const struct task_id *id, uint64_t now_usec);

/*
 * Someone else changed the affinity affinityd set on thread id (the
 * applier's APPLIER_EVENT_FOREIGN: taskset, GameMode, TuneD, a cpuset
 * reset). The first time the planner may place it again once it is back
 * on its default CPUs and its finding holds; the second time for the same
 * thread (TID and start time) the two of us would fight: it is blocked for
 * good ("task:TID:START", which every part checks), until it exits.
 * Returns the count so far (1, 2, ...), or -EINVAL / -ENOMEM.
 */
#define PLAN_FOREIGN_MAX 2
#define PLAN_FOREIGN_WHY "left alone for good: its affinity was changed by someone else twice"
int plan_state_foreign(struct plan_state *s, const struct task_id *id);

struct plan_input {
        const struct snapshot *snap;
        const struct config *config;
        const struct findings *findings;
        const struct managed *managed;
        size_t n_managed;
        uint64_t now_usec;
        pid_t self_pid;              /* the daemon: never a target (detect_policy_for()) */
        /* What co-location buys on this machine (sample/calibrate.h); NULL or
         * not done: unknown, pairs are placed as the policy says. */
        const struct calibration *calibration;
        bool dry_run;                /* the changes are only reported (plan_cooldown_arm()) */
};

struct action_list {
        struct action *items;
        size_t n, allocated;
};

void action_list_clear(struct action_list *l);
int action_list_add(struct action_list *l, const struct action *a);

/* Decide. Appends to out (releases first, then sets). Returns 0 or -ENOMEM. */
int plan_run(struct plan_state *state, const struct plan_input *in, struct action_list *out);

/* Parts, one per concern (plan-hog.c, plan-pair.c, plan-spread.c, plan-levers.c), called
 * by plan_run() in this order with a shared CPU claim map so pairs never land on a hog's
 * CPU. plan_hogs() marks 1 on the CPUs of hogs it keeps or pins and on the last CPU of
 * busy hogs it leaves alone (they still use that CPU). */
struct plan_ctx {
        struct plan_state *state;
        const struct plan_input *in;
        struct action_list *out;
        int *cpu_claim;              /* per CPU: 0 free, 1 hog, 2 pair, 3 spread */
        unsigned actions_left;       /* MaxActionsPerInterval budget */
};

int plan_hogs(struct plan_ctx *ctx);
int plan_pairs(struct plan_ctx *ctx);
/* Span=auto on this machine (config.h enum pair_span): the widest span the
 * calibration measured as costing a pair nothing (core, llc), else cpu. */
enum pair_span plan_pair_auto_span(const struct calibration *c, const struct topology *topo);
int plan_spread(struct plan_ctx *ctx);
int plan_levers(struct plan_ctx *ctx);

/*
 * Hysteresis bookkeeping shared by the parts: find or create the target
 * state (NULL on -ENOMEM). Marks it as looked at in this pass; targets no
 * part looked at for a while, with no cool-down or block pending, are
 * forgotten at the end of plan_run(). The pointer stays valid until then.
 */
struct plan_target_state *plan_state_get(struct plan_state *s, const char *key);
/* Record a target's state (its string from common/states.h's table) and
 * why, for affctl hogs/pairs/explain; a pair's with plan_set_pair_state(). */
void plan_set_state(struct plan_target_state *st, enum plan_state_id state, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void plan_set_pair_state(struct plan_target_state *st, enum pair_state state, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/*
 * Hysteresis counters (seen, absent): plan_count_up() adds one interval,
 * held at cap so it never wraps; plan_count_presence() adds one to seen
 * (absent back to 0) when present, else to absent (seen back to 0). The
 * hog and spread planners cap at PLAN_COUNT_CAP, the pair planner at
 * UINT32_MAX.
 */
#define PLAN_COUNT_CAP 1000000u
static inline unsigned plan_count_up(unsigned n, unsigned cap) {
        return n >= cap ? cap : n + 1;
}
void plan_count_presence(unsigned *seen, unsigned *absent, bool present, unsigned cap);
/* Find only; NULL if unknown. Does not mark it. */
struct plan_target_state *plan_state_find(const struct plan_state *s, const char *key);
/* Does the target concern thread tid (`affctl explain`)? A hog, run-delay
 * or "task:" target its thread, a pair either member; groups and steal no
 * single thread. */
bool plan_target_involves(const struct plan_target_state *st, pid_t tid);

/* Is the target (by finding key and/or action key, either may be NULL) blocked at now? */
bool plan_state_blocked(const struct plan_state *s, const char *key, const char *action_key,
                        uint64_t now_usec, const char **ret_why);

/* Helpers for the parts. */
/* The policy's CPUs= restriction, or all CPUs if it has none (or it does not parse). */
cpumask_t plan_policy_cpus(const struct policy *p);
/* Append an action; a SET spends one unit of ctx->actions_left (releases are never held back). */
int plan_emit(struct plan_ctx *ctx, const struct action *a);
/*
 * After a change of a target (a pin, a release): no other change of it for
 * the daemon's Cooldown=, for that is how flapping starts. One armed by a
 * change made in dry-run, which only reported it, ends when dry-run does:
 * an operator who read "would co-locate" and turned dry-run off gets the
 * change at the next pass, not a cool-down later (the topology VM's pairs,
 * reported while their check read their PIDs, waited 30 s so).
 */
void plan_cooldown_arm(const struct plan_ctx *ctx, struct plan_target_state *st);
/* The mask a managed task had before we changed it (parsed m->original); false if unknown. */
bool plan_managed_original(const struct managed *m, cpumask_t *ret);

/*
 * A topology id (core_id, llc_id, node: each below n_cpus) as an index
 * into per-id counters of n entries; an id out of range (a partial
 * topology reads -1) counts in slot 0 rather than outside the array.
 */
static inline int plan_id_index(int id, int n) {
        return id >= 0 && id < n ? id : 0;
}
