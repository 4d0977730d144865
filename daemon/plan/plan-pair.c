/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Pair planner ([wake-affine]): co-locate ping-pong pairs
 * the kernel left split, keep watching them, and let go when they no
 * longer need it.
 *
 * Measured here (2 CPUs, 6.18): a pipe ping-pong does ~260k round trips/s
 * on one CPU and ~90k split; put next to a CPU hog it drops ~45 %; a
 * pipelined stream pair co-located loses ~25 %. So:
 *
 *  1. co-locate a pair only when its finding (detect-pair.c) says it was
 *     split for most of the window, for Hysteresis= intervals more than it
 *     was together; the target state's `seen` counts that;
 *  2. never a stream nor a hub (the finding's shape, detect-pair.c); a
 *     feeder (a thread waking one of its process's pair members one way)
 *     only as a link of a pair we hold, on that pair's CPU (chain()); a
 *     fan (a thread with two partners of one service) whole, its second
 *     pair a link of its first in the same pass (place_new());
 *  3. the CPU: in both members' allowed sets (before our change), usable
 *     (online, not isolated, not nohz_full) and in the policy's CPUs=;
 *     never one a hog is pinned to (cpu_claim == 1) or where another busy
 *     thread (util > 0.5) runs; least loaded by the other threads' util,
 *     a slower CPU (a hybrid's E core, a little core) counting as somewhat
 *     loaded (capacity_cost()), preferring a CPU a member already runs
 *     on, then one sharing its core, LLC or node, so the pair's cache
 *     footprint moves as little as possible; on a machine with several
 *     NUMA nodes, a CPU of the node that holds most of the pair's memory
 *     (snapshot->memnodes, from
 *     /proc/PID/numa_maps) before any other, when that is known: a pair is
 *     one CPU, so never split across nodes, and a remote node would make
 *     every access of its working set cross the interconnect;
 *  4. both members or neither: a set is emitted only if the budget has
 *     room for both;
 *  5. a co-located pair stays pinned while its finding is present; when
 *     the finding has been absent Hysteresis= intervals (quiet) or a member
 *     exited, both are released; a stream or a policy that no longer
 *     co-locates releases at once;
 *  6. a pinned pair whose CPU is now a hog's, went offline or left the
 *     allowed set is moved in the same pass (the applier keeps the
 *     recorded original on a second SET); if no CPU is left, released;
 *  7. a pair of which only one member is still ours (the other's pin was
 *     undone by the effect check or changed by someone else) is released,
 *     and with a block from the effect check not retried until it expires;
 *     after a release, Cooldown= passes before it is co-located again. An
 *     anchor that whoever pinned it lets go is not such a half: it joins
 *     our member's CPU (adoptable_cpu());
 *  8. "one CPU" is the pair's home CPU; the mask set may be its span
 *     (Span=, pair_mask()): the core's SMT siblings or its LLC where the
 *     calibration found a split there as cheap as one CPU.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/effect.h"
#include "plan/plan.h"

/* A thread busier than this makes its CPU a bad home for a pair (pair next to a hog: -45 %). */
#define PAIR_BUSY_UTIL 0.5

/*
 * Cost, in CPUs of load, of placing the pair away from where its members
 * run. A pair moved to a CPU sharing nothing with its current ones starts
 * with cold caches; a quarter of a CPU of other load is the point where a
 * less loaded CPU is worth that.
 */
static const double distance_cost[] = { 0.0, 0.05, 0.10, 0.20, 0.25 };

/*
 * Cost of sharing with what is already placed (distinct pairs on
 * distinct cores, and LLCs before sharing one). An SMT sibling that holds a
 * pinned pair or hog halves this CPU's execution units: more than the
 * farthest move costs. A pair already in the LLC competes for its cache:
 * less than a move to another LLC, so a free LLC wins over a shared one
 * only when the pair would move anyway.
 */
#define PAIR_SIBLING_TAKEN_COST 0.30
#define PAIR_LLC_TAKEN_COST 0.08

/*
 * The pair's memory counts as on one node when that node holds more than
 * half of the resident memory of the members' processes (interleaved or
 * evenly spread memory has no home) and there is at least this much of it:
 * below a few MiB the working set lives in the caches, and where its pages
 * are does not matter. Not measured here (the development machine has one
 * node); a remote DRAM access costs ~1.5-2x a local one on two-socket
 * x86 servers, more than any cache move the distance costs stand for, so a
 * CPU on that node comes before every other, not only by a cost.
 */
#define PAIR_MEM_MIN_KIB (4 * 1024)


/* What the effect check compares a change of a pair with (fill_action()). */
struct pair_before {
        enum evidence_basis basis;
        double evidence;
        double evidence_mean;   /* the windows' mean alone (note_window()); 0: none */
        unsigned windows;       /* the windows evidence is of: that mean's, or 1 (this one) */
        double response_usec;   /* 0: not measured */
        unsigned response_windows;   /* the windows (bursts) it is the mean of */
};

struct pair_item {
        struct plan_target_state *st;
        const struct finding *f;        /* this interval's finding, NULL if absent */
        const struct policy *p;         /* NULL: the policy is gone */
        struct task_id id[2];
        const struct task *t[2];        /* NULL: exited */
        const struct managed *m[2];     /* our pin in force */
        const struct managed *other[2]; /* an affinity change of another part (a hog pin) */
        const struct managed *pair_pin[2]; /* another pair's pin (that pair keeps or releases it) */
        unsigned anchored;              /* bit k: member k is held on one CPU by someone else, or by
                                         * a stronger pair (chain_cpu): never ours to set */
        int pin_cpu;                    /* both ours (or an anchor) on this one CPU, else -1 */
        int chain_cpu;                  /* a member is in a stronger pair on this CPU (chain()), else -1 */
        cpumask_t chain_mask;           /* then: the CPUs that pair is held on (its span) */
        const struct pair_item *chain_pair; /* then: that pair (a feeder's work is its) */
        double chain_util;              /* then: the util of the whole chain */
        double rate;                    /* for ordering */
        bool decided;                   /* decided this pass (decide(), or with its fan: place_fan_link()) */
        bool placed_now;                /* placed this pass: placed_before is what its actions carried */
        struct pair_before placed_before;
};

/* A member of a pair kept or placed this pass, where, and the util of
 * what it is co-located with (its pair, or its whole chain). */
struct pair_use {
        struct task_id id;
        int cpu;
        cpumask_t mask;         /* the CPUs the pair is held on: cpu, or its span (pair_mask()) */
        double util;
        enum pair_role role;    /* its role in that pair */
        const struct pair_item *pair; /* that pair */
};

struct pair_plan {
        struct plan_ctx *ctx;
        const struct snapshot *snap;
        const struct topology *topo;
        int n_cpus;
        cpumask_t usable;
        double *load;                   /* per CPU: Σ util of threads last seen there */
        int *busy;                      /* per CPU: threads with util > PAIR_BUSY_UTIL there */
        cpumask_t hog_pinned;           /* CPUs a hog pin in force holds (a span leaves them out) */
        /* scratch for choose_cpu(), per core / LLC id (sharing_counts()) */
        int *core_claimed, *core_paired, *llc_paired;
        int n_ids;
        struct pair_use *used;          /* members of pairs kept or placed this pass */
        size_t n_used, used_allocated;
        struct pair_item *items;
        size_t n_items;
};

/* The CPU a held mask counts as the pair's home (its claim, its load, the
 * report's "cpu"): the one it was placed on, while the mask still has it. */
static int mask_home(const struct plan_target_state *st, const cpumask_t *mask) {
        return st && st->cpu >= 0 && cpumask_test(mask, st->cpu) ? st->cpu : cpumask_next(mask, 0);
}

/* A pin of the pair planner's (whichever pair it is for). */
static bool is_pair_pin(const struct managed *m) {
        return m->kind == DETECT_PAIR;
}

/*
 * A pin held for this pair: set for a pair with this partner. A server
 * thread serves client after client (a thread cache, a pool); the pin it
 * still holds for the client that just left belongs to that pair, which
 * releases it, not to the next one, which places its own. A pin with no
 * partner recorded (replayed from the journal after a restart) counts as
 * the pair's that finds it.
 */
static bool is_ours(const struct managed *m, const struct task_id *partner) {
        return is_pair_pin(m) && (m->partner.tid == 0 || task_id_equal(&m->partner, partner));
}

/* Member k is in place: our pin, or an anchor someone else pinned (detect-pair.c). */
static bool held(const struct pair_item *it, int k) {
        return it->m[k] || (it->anchored & (1u << k));
}

/* Both members held: the pair is ours as a whole, not half of one. */
static bool complete(const struct pair_item *it) {
        return held(it, 0) && held(it, 1) && (it->m[0] || it->m[1]);
}

/* The state stays the enum "co-located"; the CPU is its own field (the
 * pairs report's "cpu"), so that machines need not parse a sentence. */
static void set_colocated_state(struct plan_target_state *st, int cpu) {
        st->cpu = cpu;
}

static const struct pair_use *use_of(const struct pair_plan *pp, const struct task_id *id) {
        for (size_t i = 0; i < pp->n_used; i++)
                if (task_id_equal(&pp->used[i].id, id))
                        return &pp->used[i];
        return NULL;
}

static bool used(const struct pair_plan *pp, const struct task_id *id) {
        return use_of(pp, id) != NULL;
}

static int use(struct pair_plan *pp, const struct pair_item *it, const cpumask_t *mask) {
        double util = it->chain_cpu >= 0 ? it->chain_util : it->f ? it->f->combined_util : 0;
        enum pair_role role[2] = { PAIR_ROLE_PEER, PAIR_ROLE_PEER };

        if (it->t[0] && it->t[1])
                detect_pair_roles(it->t[0], it->t[1], role);
        if (pp->n_used + 2 > pp->used_allocated) {
                size_t na = pp->used_allocated ? pp->used_allocated * 2 : 16;
                struct pair_use *n = reallocarray(pp->used, na, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                pp->used = n;
                pp->used_allocated = na;
        }
        for (int k = 0; k < 2; k++)
                pp->used[pp->n_used++] = (struct pair_use) {
                        .id = it->id[k], .cpu = it->st->cpu, .mask = *mask, .util = util, .role = role[k],
                        .pair = it,
                };
        return 0;
}

static struct pair_item *item_get(struct pair_plan *pp, const struct task_id *a, const struct task_id *b,
                                  size_t cap) {
        for (size_t i = 0; i < pp->n_items; i++) {
                struct pair_item *it = &pp->items[i];
                if ((task_id_equal(&it->id[0], a) && task_id_equal(&it->id[1], b)) ||
                    (task_id_equal(&it->id[0], b) && task_id_equal(&it->id[1], a)))
                        return it;
        }
        if (pp->n_items >= cap)
                return NULL;
        /* members ordered by tid, as finding_key() orders them */
        pp->items[pp->n_items] = (struct pair_item) {
                .id = { a->tid <= b->tid ? *a : *b, a->tid <= b->tid ? *b : *a },
                .pin_cpu = -1,
                .chain_cpu = -1,
        };
        return &pp->items[pp->n_items++];
}

static int collect(struct pair_plan *pp) {
        const struct plan_input *in = pp->ctx->in;
        struct plan_state *state = pp->ctx->state;
        size_t cap = state->n_targets + in->n_managed;

        if (in->findings)
                cap += in->findings->n;
        if (cap == 0)
                return 0;
        pp->items = calloc(cap, sizeof(*pp->items));
        if (!pp->items)
                return -ENOMEM;

        for (size_t i = 0; in->findings && i < in->findings->n; i++) {
                const struct finding *f = &in->findings->items[i];
                struct pair_item *it;

                if (f->kind != DETECT_PAIR || f->n_members < 2)
                        continue;
                it = item_get(pp, &f->members[0], &f->members[1], cap);
                if (it && (!it->f || f->wake_rate_per_s > it->f->wake_rate_per_s))
                        it->f = f;
        }
        for (size_t i = 0; i < state->n_targets; i++) {
                const struct plan_target_state *st = state->targets[i];

                if (st->kind == DETECT_PAIR && st->last.n_members >= 2)
                        (void) item_get(pp, &st->last.members[0], &st->last.members[1], cap);
        }

        for (size_t i = 0; i < pp->n_items; i++) {
                struct pair_item *it = &pp->items[i];
                char key[128];
                bool pinned;

                for (int k = 0; k < 2; k++) {
                        it->t[k] = snapshot_find_id(pp->snap, &it->id[k]);
                        for (size_t j = 0; j < in->n_managed; j++) {
                                const struct managed *m = &in->managed[j];
                                if (m->type != ACT_AFFINITY || !task_id_equal(&m->task, &it->id[k]))
                                        continue;
                                if (is_ours(m, &it->id[1 - k]))
                                        it->m[k] = m;
                                else if (!is_pair_pin(m))
                                        it->other[k] = m;
                                else    /* another pair's: that pair keeps or releases it; placing
                                         * this one takes it over (the applier keeps the recorded
                                         * original), joining it makes a chain (chain()) */
                                        it->pair_pin[k] = m;
                        }
                }
                if (!pair_key(&it->id[0], &it->id[1], key, sizeof(key)))
                        return -ENAMETOOLONG;
                /* Marked as looked at only while there is something to do; the rest ages out. */
                it->st = it->f || it->m[0] || it->m[1] ? plan_state_get(state, key) : plan_state_find(state, key);
                if (!it->st)
                        return -ENOMEM;

                /* a quiet interval keeps the last finding's anchor: hysteresis, not release_half() */
                it->anchored = it->f ? it->f->anchored : it->st->last.anchored;
                pinned = it->m[0] && it->m[1];
                if (pinned && cpumask_equal(&it->m[0]->mask, &it->m[1]->mask))
                        it->pin_cpu = mask_home(it->st, &it->m[0]->mask);
                for (int k = 0; k < 2 && !pinned; k++)
                        /* around an anchor: our pin on the anchor's one CPU */
                        if ((it->anchored & (1u << k)) && it->m[1 - k] && it->t[k] &&
                            cpumask_equal(&it->m[1 - k]->mask, &it->t[k]->allowed))
                                it->pin_cpu = cpumask_single(&it->m[1 - k]->mask);
                if (it->pin_cpu >= pp->n_cpus)     /* the topology shrank under it */
                        it->pin_cpu = -1;
                if (!it->st->first_seen_usec)
                        it->st->first_seen_usec = in->now_usec;
                it->st->last.kind = DETECT_PAIR;
                it->st->last.members[0] = it->id[0];
                it->st->last.members[1] = it->id[1];
                it->st->last.n_members = 2;

                if (it->f)
                        it->p = it->f->policy;
                else if (it->m[0] || it->m[1])
                        it->p = config_find_policy(in->config, (it->m[0] ?: it->m[1])->policy);
                else
                        it->p = config_find_policy(in->config, it->st->policy);
                if (it->p && (!it->p->enabled || it->p->detector != DETECT_PAIR))
                        it->p = NULL;
                if (it->p && it->p->name)
                        snprintf(it->st->policy, sizeof(it->st->policy), "%s", it->p->name);
                it->rate = it->f ? it->f->wake_rate_per_s : it->st->last.wake_rate_per_s;
        }
        return 0;
}

/* Pairs we hold first (they keep their CPU), then the strongest. A pair
 * with a member another pair holds comes after the pairs that hold all of
 * theirs: the pair that holds it decides first, so a chain's link keeps
 * its place every pass rather than the two taking the pin from each other
 * as their rates cross. A feeder comes after the pairs, the one it feeds
 * among them: it only ever joins a pair, in the pass that pair is placed. */
static int item_cmp(const void *a, const void *b) {
        const struct pair_item *x = a, *y = b;
        bool px = x->m[0] || x->m[1], py = y->m[0] || y->m[1];
        bool sx = x->pair_pin[0] || x->pair_pin[1], sy = y->pair_pin[0] || y->pair_pin[1];
        bool fx = x->f && x->f->shape == PAIR_FEEDER, fy = y->f && y->f->shape == PAIR_FEEDER;

        if (px != py)
                return px ? -1 : 1;
        if (sx != sy)
                return sx ? 1 : -1;
        if (fx != fy)
                return fx ? 1 : -1;
        if (x->rate != y->rate)
                return x->rate > y->rate ? -1 : 1;
        return x->id[0].tid < y->id[0].tid ? -1 : x->id[0].tid > y->id[0].tid;
}

static int load_init(struct pair_plan *pp) {
        pp->load = calloc(pp->n_cpus, sizeof(*pp->load));
        pp->busy = calloc(pp->n_cpus, sizeof(*pp->busy));
        pp->n_ids = pp->topo && pp->topo->cpus ? pp->topo->n_cpus : 0;
        pp->core_claimed = calloc(MAX(pp->n_ids, 1), sizeof(int));
        pp->core_paired = calloc(MAX(pp->n_ids, 1), sizeof(int));
        pp->llc_paired = calloc(MAX(pp->n_ids, 1), sizeof(int));
        if (!pp->load || !pp->busy || !pp->core_claimed || !pp->core_paired || !pp->llc_paired)
                return -ENOMEM;
        for (size_t i = 0; i < snapshot_n_active(pp->snap); i++) {
                const struct task *t = snapshot_active(pp->snap, i);

                if (!t->have_rates || t->last_cpu < 0 || t->last_cpu >= pp->n_cpus)
                        continue;
                pp->load[t->last_cpu] += t->util;
                if (t->util > PAIR_BUSY_UTIL)
                        pp->busy[t->last_cpu]++;
        }
        for (size_t j = 0; j < pp->ctx->in->n_managed; j++) {
                const struct managed *m = &pp->ctx->in->managed[j];

                if (m->type == ACT_AFFINITY && m->kind == DETECT_HOG && cpumask_single(&m->mask) >= 0)
                        pp->hog_pinned = cpumask_or(&pp->hog_pinned, &m->mask);
        }
        return 0;
}

/*
 * The CPUs the pair may go to before looking at load: allowed ∩ usable ∩
 * CPUs=. With AllowNarrowed=yes the members' own masks (someone else's
 * narrowing, or what it was before ours) are no bound: that is what the
 * key says, and two members held on different CPUs (a start-up script's
 * taskset) would otherwise have no CPU in common, ever.
 */
static cpumask_t candidates(const struct pair_plan *pp, const struct pair_item *it) {
        cpumask_t c = pp->usable, pcpus = plan_policy_cpus(it->p);

        c = cpumask_and(&c, &pcpus);
        if (it->p && it->p->allow_narrowed)
                return c;
        for (int k = 0; k < 2; k++) {
                cpumask_t base;

                /* a chain's shared member: its own pair chose the CPU within its allowed set,
                 * and its mask may still be the CPU that pair is moving it from */
                if (it->chain_cpu >= 0 && (it->anchored & (1u << k)) && !(it->f && (it->f->anchored & (1u << k))))
                        continue;
                if (it->m[k] && plan_managed_original(it->m[k], &base))
                        ;
                else if (it->t[k])
                        base = it->t[k]->allowed;
                else
                        continue;
                c = cpumask_and(&c, &base);
        }
        return c;
}

/*
 * How far the pair may spread around its CPU (Span=, config.h). auto: a
 * core's SMT siblings where the calibration measured a split between them
 * as cheap as one CPU, and the LLC where a split between its cores is too;
 * anywhere else, wherever nothing was measured and where the reading is
 * not believed (calibration_quiet()), one CPU (what a
 * split's measured cost asks for). An anchor holds its member on one CPU,
 * so a pair around it is on that CPU.
 */
enum pair_span plan_pair_auto_span(const struct calibration *c, const struct topology *topo) {
        bool smt = topo && topo->n_cores > 0 && topo->n_cores < topo->n_cpus;

        if (smt && !calibration_free_at(c, CALIB_SMT))
                return PAIR_SPAN_CPU;
        if (calibration_free_at(c, CALIB_CORE))
                return PAIR_SPAN_LLC;
        return smt ? PAIR_SPAN_CORE : PAIR_SPAN_CPU;    /* with SMT, its level is free by now */
}

/* With IgnoreCalibration=, Span=auto is one CPU: a level the calibration
 * read as free is one it read as buying nothing, and spreading the pair
 * over it would pin the pair where it already was, split. */
static enum pair_span span_of(const struct pair_plan *pp, const struct pair_item *it) {
        int s = it->p && it->p->pair_span >= 0 ? it->p->pair_span : PAIR_SPAN_AUTO;

        if (it->anchored)
                return PAIR_SPAN_CPU;
        if (s != PAIR_SPAN_AUTO)
                return (enum pair_span) s;
        return plan_pair_auto_span(it->p && it->p->ignore_calibration ? NULL : pp->ctx->in->calibration, pp->topo);
}

/*
 * The CPUs a pair homed on cpu is set to: cpu, and within its span
 * (span_of()) the pair's other candidates that no hog pin holds. A chain's
 * link joins its stronger pair's CPUs. Pins, not this pass's claims: a busy
 * thread's last CPU is claimed too, and moves from pass to pass; a span
 * that followed it would be set anew every pass.
 */
static cpumask_t pair_mask(const struct pair_plan *pp, const struct pair_item *it, int cpu) {
        const struct topology *t = pp->topo;
        enum pair_span span = span_of(pp, it);
        cpumask_t m = cpumask_of(cpu), cand;

        if (it->chain_cpu >= 0)
                return it->chain_mask;
        if (span == PAIR_SPAN_CPU || !t->cpus || cpu < 0 || cpu >= pp->n_cpus)
                return m;
        cand = candidates(pp, it);
        CPUMASK_FOREACH(d, &cand) {
                if (d >= pp->n_cpus)
                        break;
                if (!cpumask_test(&pp->hog_pinned, d) &&
                    (span == PAIR_SPAN_CORE ? t->cpus[d].core_id == t->cpus[cpu].core_id
                                            : t->cpus[d].llc_id == t->cpus[cpu].llc_id))
                        cpumask_set(&m, d);
        }
        return m;
}

/* The pair holds these CPUs this pass: no hog goes there, and other pairs
 * count them as taken (sharing_cost()). */
static void claim_mask(struct pair_plan *pp, const cpumask_t *mask) {
        CPUMASK_FOREACH(d, mask) {
                if (d >= pp->n_cpus)
                        break;
                if (pp->ctx->cpu_claim[d] != 1)
                        pp->ctx->cpu_claim[d] = 2;
        }
}

/* The mask of our pin(s) a held pair keeps. */
static const cpumask_t *held_mask(const struct pair_item *it) {
        return &(it->m[0] ?: it->m[1])->mask;
}

/*
 * Claimed CPUs per core, and pair-claimed ones per core and per LLC,
 * counted once per choice. Each candidate CPU used to scan every CPU for
 * claimed siblings and LLC neighbours: O(CPUs²) a choice, and with pairs
 * growing with the machine O(CPUs³) a pass (bench/scale: 79 ms of planning
 * a pass on the 1,024-CPU fixture with 128 pairs, most of it here).
 */
static void sharing_counts(const struct pair_plan *pp) {
        const struct topology *t = pp->topo;
        const int *claim = pp->ctx->cpu_claim;
        int n = pp->n_ids;

        if (n == 0)
                return;
        memset(pp->core_claimed, 0, (size_t) n * sizeof(int));
        memset(pp->core_paired, 0, (size_t) n * sizeof(int));
        memset(pp->llc_paired, 0, (size_t) n * sizeof(int));
        for (int d = 0; d < pp->n_cpus && d < n; d++) {
                int core = plan_id_index(t->cpus[d].core_id, n);

                if (!claim[d])
                        continue;
                pp->core_claimed[core]++;
                if (claim[d] == 2) {
                        pp->core_paired[core]++;
                        pp->llc_paired[plan_id_index(t->cpus[d].llc_id, n)]++;
                }
        }
}

/* What sharing a core with a claimed CPU, or an LLC with another pair, costs
 * a pair on c (a core's CPUs share its LLC: its own pair CPUs are siblings,
 * not LLC neighbours). */
static double sharing_cost(const struct pair_plan *pp, int c) {
        const struct topology *t = pp->topo;
        const int *claim = pp->ctx->cpu_claim;
        bool sibling, llc;
        int core;

        if (!t->cpus || c >= pp->n_ids || c >= pp->n_cpus)
                return 0;
        core = plan_id_index(t->cpus[c].core_id, pp->n_ids);
        sibling = pp->core_claimed[core] - (claim[c] ? 1 : 0) > 0;
        llc = pp->llc_paired[plan_id_index(t->cpus[c].llc_id, pp->n_ids)] - pp->core_paired[core] > 0;
        return (sibling ? PAIR_SIBLING_TAKEN_COST : 0) + (llc ? PAIR_LLC_TAKEN_COST : 0);
}

/*
 * What a slower CPU costs a pair, in CPUs of load: PAIR_SLOWER_CPU_COST
 * times the share of a fastest CPU's capacity it lacks (an Intel hybrid's
 * E core, 512: 0.15; an arm64 little core at 446: 0.17). A pair's members
 * take turns on its CPU, so every round trip runs at that CPU's speed;
 * but Intel's 512 is an order, not a measurement (topology.h), so this
 * places by the order the hog planner uses, not by an amount: more than a
 * move within the LLC (an idle P core before the E core the pair runs
 * on), less than a core shared with a hog or another pair (a free E core
 * before a P core's second thread, as Linux's ITMT priorities order busy
 * tasks). 0 where every CPU is alike.
 */
#define PAIR_SLOWER_CPU_COST 0.30

static double capacity_cost(const struct topology *t, int c) {
        int cap;

        if (!t->cpus || t->n_capacities < 2 || c >= t->n_cpus)
                return 0;
        cap = t->cpus[c].capacity;
        return cap > 0 ? PAIR_SLOWER_CPU_COST * (1.0 - (double) MIN(cap, TOPOLOGY_CAPACITY_MAX) / TOPOLOGY_CAPACITY_MAX)
                       : 0;
}


static int distance(const struct topology *topo, int a, int b) {
        if (a < 0 || b < 0 || a >= topo->n_cpus || b >= topo->n_cpus || !topo->cpus)
                return ELEMENTSOF(distance_cost) - 1;
        if (a == b)
                return 0;
        if (topo->cpus[a].core_id == topo->cpus[b].core_id)
                return 1;
        if (topo->cpus[a].llc_id == topo->cpus[b].llc_id)
                return 2;
        if (topo->cpus[a].node == topo->cpus[b].node)
                return 3;
        return 4;
}

/*
 * The node that holds the pair's memory (PAIR_MEM_MIN_KIB, a majority), or
 * -1: not known, one node, or spread out. *ret_share: that node's fraction.
 */
static int mem_node(const struct pair_plan *pp, const struct pair_item *it, double *ret_share) {
        const struct memnode *a, *b;

        if (ret_share)
                *ret_share = 0;
        if (pp->topo->n_nodes <= 1 || !it->t[0] || !it->t[1])
                return -1;
        a = snapshot_find_memnode(pp->snap, it->t[0]);
        b = snapshot_find_memnode(pp->snap, it->t[1]);
        return memnode_majority(a, b, PAIR_MEM_MIN_KIB, ret_share);
}

enum no_cpu_reason {
        NO_CPU_NONE_ALLOWED,   /* the allowed/usable/CPUs= intersection is empty */
        NO_CPU_HOG,            /* the only CPUs left are hogs' */
        NO_CPU_BUSY,           /* every candidate has a busy thread */
};

/*
 * A fan (PAIR_FAN, detect-pair.c): a hub and its two partners, in two
 * pairs that share the hub. It is held whole or not at all: pinned with
 * one partner and the other left where it was it read 0.79x stock. Its
 * first pair is placed only where its other pair can join in the same
 * pass (fan_cannot_join()), and that pair is placed at once after it
 * (place_fan_link()); a fan pair never adopts a lone member back
 * (adoptable_cpu()), and one held without its other pair on its CPU is
 * let go (keep_fans_whole()). Its shape and hub are the finding's, or the
 * last one's in a quiet interval (hysteresis).
 */
static bool held_as_fan(const struct pair_item *it) {
        return it->st && it->st->fan_hub.tid && (it->m[0] || it->m[1] || it->placed_now);
}

/*
 * A pair placed as a fan stays one while it is ours, unless it turns into
 * a stream or a hub: a partner's quiet interval leaves the hub with one
 * partner at pair rates, and its other pair then reads as a plain
 * ping-pong until that partner is back; the fan is judged whole all the
 * same (hysteresis), not taken apart pair by pair.
 */
static enum pair_shape item_shape(const struct pair_item *it) {
        enum pair_shape s = it->f ? it->f->shape : it->st ? it->st->last.shape : PAIR_PINGPONG;

        return s == PAIR_PINGPONG && held_as_fan(it) ? PAIR_FAN : s;
}

/* The fan's hub among the members, or NULL. */
static const struct task_id *fan_hub(const struct pair_item *it) {
        unsigned bits = it->f ? it->f->fan_hub : it->st ? it->st->last.fan_hub : 0;

        if (item_shape(it) != PAIR_FAN)
                return NULL;
        if (held_as_fan(it))
                return &it->st->fan_hub;
        return bits ? &it->id[bits & 1u ? 0 : 1] : NULL;
}

/* Two pairs of one fan: both fans, with one hub. */
static bool same_fan(const struct pair_item *a, const struct pair_item *b) {
        const struct task_id *x = fan_hub(a), *y = fan_hub(b);

        return a != b && x && y && task_id_equal(x, y);
}

/* The fan's other pair found this interval, or NULL. */
static struct pair_item *fan_sibling(const struct pair_plan *pp, const struct pair_item *it) {
        if (!fan_hub(it))
                return NULL;
        for (size_t i = 0; i < pp->n_items; i++)
                if (pp->items[i].f && same_fan(&pp->items[i], it))
                        return &pp->items[i];
        return NULL;
}

/* The fan's third thread: the member of its other pair sib (fan_sibling()) that is not the hub. */
static const struct task *fan_third(const struct pair_item *it, const struct pair_item *sib) {
        const struct task_id *hub = fan_hub(it);

        if (!sib || !hub)
                return NULL;
        return task_id_equal(&sib->id[0], hub) ? sib->t[1] : sib->t[0];
}

/* A fan's link (its other pair, chained to its first): the first pair's util is the whole fan's. */
static bool fan_link(const struct pair_item *it) {
        return it->chain_cpu >= 0 && item_shape(it) == PAIR_FAN;
}

/* The SET the fan's third thread needs to follow its first pair onto cpu
 * (a move, a new span): budgeted with the first pair's, or the fan would
 * be left half. */
static unsigned fan_link_sets(const struct pair_plan *pp, const struct pair_item *it, int cpu) {
        const struct task *t = it->chain_cpu < 0 ? fan_third(it, fan_sibling(pp, it)) : NULL;
        cpumask_t one = cpumask_of(cpu);

        return t && !(t->affinity_ours && cpumask_equal(&t->allowed, &one));
}

/* The fan's other pair joins this pass, on the CPU its first pair was placed on (chain()). */
static bool joins_fan(const struct pair_item *it) {
        return it->chain_pair && it->chain_pair->placed_now && same_fan(it, it->chain_pair);
}

/*
 * Choose the pair's CPU, or -1 with the reason. The members' own load (a
 * fan's: all three threads') is not counted against any CPU: it moves
 * with them. The CPU it was last placed on (its state's cpu, kept until a
 * release: in a dry run, the CPU of the report it repeats each cool-down,
 * for the change is never made) comes first while it still takes the
 * pair, as a held pair keeps its CPU while that still fits: between two
 * CPUs about as loaded the choice followed the load next door, and a
 * dry-run daemon that had reported "on CPU 1" eight times reported "on
 * CPU 0", news to the wake-up sampler, which then watched every pass
 * again (tests/dry-run-settle.sh under stress-ng, in CI rehearsals; a
 * preference of 0.10 CPUs of load was not enough there).
 */
static int choose_cpu(const struct pair_plan *pp, const struct pair_item *it, enum no_cpu_reason *ret_why,
                      char *detail, size_t detail_size) {
        const int *claim = pp->ctx->cpu_claim;
        cpumask_t cand = candidates(pp, it);
        const struct pair_item *sib = it->chain_cpu < 0 ? fan_sibling(pp, it) : NULL;
        const struct task *mine[3] = { it->t[0], it->t[1], fan_third(it, sib) };
        double best_score = 0;
        int best = -1, n_hog = 0, n_busy = 0, node = mem_node(pp, it, NULL);
        bool best_home = false, best_again = false;
        size_t off = 0;

        detail[0] = '\0';
        if (sib) {
                /* a fan's CPU is one its third thread may run on too */
                cpumask_t theirs = candidates(pp, sib);
                cand = cpumask_and(&cand, &theirs);
        }
        if (it->chain_cpu >= 0) {
                /* a chain's CPU is its stronger pair's; chain() checked that it fits */
                cpumask_t one = cpumask_of(it->chain_cpu);
                cand = cpumask_and(&cand, &one);
        }
        sharing_counts(pp);
        CPUMASK_FOREACH(c, &cand) {
                double load, score;
                int busy, d = ELEMENTSOF(distance_cost) - 1;
                bool home, again;

                if (c >= pp->n_cpus)
                        break;
                if (claim[c] == 1) {
                        n_hog++;
                        off += (size_t) MAX(0, snprintf(detail + off, off < detail_size ? detail_size - off : 0,
                                                         "%sCPU %d: hog", off ? ", " : "", c));
                        continue;
                }
                load = pp->load[c];
                busy = pp->busy[c];
                for (int k = 0; k < 3; k++) {
                        const struct task *t = mine[k];
                        if (!t || !t->have_rates || t->last_cpu != c)
                                continue;
                        load -= t->util;
                        if (t->util > PAIR_BUSY_UTIL)
                                busy--;
                }
                if (busy > 0 && it->chain_cpu < 0) {
                        n_busy++;
                        off += (size_t) MAX(0, snprintf(detail + off, off < detail_size ? detail_size - off : 0,
                                                         "%sCPU %d: busy thread", off ? ", " : "", c));
                        continue;
                }
                for (int k = 0; k < 2; k++)
                        if (it->t[k])
                                d = MIN(d, distance(pp->topo, c, it->t[k]->last_cpu));
                score = MAX(load, 0.0) + distance_cost[d] + sharing_cost(pp, c) + capacity_cost(pp->topo, c);
                home = node >= 0 && c < pp->topo->n_cpus && pp->topo->cpus[c].node == node;
                again = c == it->st->cpu;
                if (best < 0 || (again && !best_again) ||
                    (again == best_again && ((home && !best_home) || (home == best_home && score < best_score - 1e-9)))) {
                        best = c;
                        best_score = score;
                        best_home = home;
                        best_again = again;
                }
        }
        if (best < 0)
                *ret_why = n_hog + n_busy == 0 ? NO_CPU_NONE_ALLOWED : n_busy == 0 ? NO_CPU_HOG : NO_CPU_BUSY;
        return best;
}

/*
 * The time constant of the mean of a pair's windows (note_window()):
 * seconds, so that the load's slices (stress-ng's are up to 0.5 s) average
 * out, and no longer, so that a pair whose traffic changed is judged on
 * what it does now.
 */
#define PAIR_BEFORE_TAU_USEC (3 * USEC_PER_SEC)

/*
 * A window of the pair before we placed it, split or not: into the pair's
 * decayed, time-weighted mean of what it moved (the effect check's basis).
 * The question the check answers is whether the pair does better on one
 * CPU than where the kernel put it, and the kernel moves it: a stream
 * under load moved ~1.3e6 bytes/s over 3 s where the kernel placed it and
 * 8.9e5 in the one window that read it split; judged against that window
 * it was kept at "+13 %" while it lost 26 %. A window since a
 * member's birth counts too, by its length, where the pair is judged by
 * its switches: a start-up that switched little only lowers the mean, and
 * the "before" is never below this window's own figure (pair_before()).
 * Not by its bytes: those hold what the program read to start, which is
 * no exchange. /usr/bin/python3 reads 44 kB of its modules before its
 * first message; over a since-birth window of about 0.1 s that read
 * 3.7e5 bytes/s, ten times what a chain of python processes exchanging
 * one byte moved on one CPU, and beside stress-ng its co-location was
 * undone at "-90 %" while its own round trips had risen (its response
 * time is noted all the same). Every other window of a pair not ours
 * counts, with a finding or without, of any shape (decide()): a stream
 * left alone as one for seconds, then read as a ping-pong in the one
 * window in which the daemon's own catch-up after a stop starved it (2.7k
 * messages/s of its 33k), was judged against that window alone and kept
 * at +629 % while it lost 40 % (pairs-integration.sh).
 *
 * The response time is a burst's: a pass whose edges were kept from an
 * older burst (a settled stride's skip, the recheck after a newborn hold)
 * adds no window of it. Counted again, one burst would pass for the two
 * a slower answer needs before it may undo (effect.c,
 * RESPONSE_BEFORE_WINDOWS_MIN).
 */
static void note_window(const struct pair_plan *pp, struct pair_item *it) {
        struct plan_target_state *st = it->st;
        uint64_t now = pp->ctx->in->now_usec, w;
        enum evidence_basis basis;
        double v, keep, resp;
        bool startup;

        if (!it->t[0] || !it->t[1] || it->m[0] || it->m[1])
                return;   /* gone, or ours: what it moves now is no "before" */
        basis = effect_basis_for(DETECT_PAIR, it->t[0], it->t[1]);
        /* its start-up's reads, no "before" (above) */
        startup = basis == EVIDENCE_IO_BYTES && (it->t[0]->rates_since_birth || it->t[1]->rates_since_birth);
        v = effect_proxy_on(DETECT_PAIR, basis, it->t[0], it->t[1]);
        w = MIN(it->t[0]->window_usec, it->t[1]->window_usec);
        if (!isfinite(v) || w == 0)
                return;
        if (basis != st->before_basis || st->before_usec == 0 || now <= st->before_usec) {
                st->before_sum = st->before_weight = st->response_sum = st->response_weight = 0;
                st->before_windows = st->response_windows = 0;
        } else {
                keep = exp(-(double) (now - st->before_usec) / PAIR_BEFORE_TAU_USEC);
                st->before_sum *= keep;
                st->before_weight *= keep;
                st->response_sum *= keep;
                st->response_weight *= keep;
        }
        st->before_basis = basis;
        st->before_usec = now;
        if (!startup) {
                st->before_sum += v * (double) w;
                st->before_weight += (double) w;
                st->before_windows++;
        }
        resp = snapshot_pair_new_response_usec(pp->snap, it->t[0]->id.tid, it->t[1]->id.tid);
        if (resp > 0) {
                st->response_sum += resp * (double) w;
                st->response_weight += (double) w;
                st->response_windows++;
        }
}

/* The effect check's "before": this window's figure, or the mean of the
 * windows before it when that is higher (note_window()). */
static double pair_before(const struct pair_item *it, enum evidence_basis basis) {
        const struct plan_target_state *st = it->st;
        double v = effect_proxy_on(DETECT_PAIR, basis, it->t[0], it->t[1]);

        if (!isfinite(v))
                return 0;
        if (st && st->before_weight > 0 && st->before_basis == basis)
                v = MAX(v, st->before_sum / st->before_weight);
        return v;
}

/* The check's response "before": the mean of the windows before, or this
 * window's when none had one; 0 when not measured. */
static double pair_response_before(const struct pair_plan *pp, const struct pair_item *it) {
        const struct plan_target_state *st = it->st;
        double v;

        if (st && st->response_weight > 0)
                return st->response_sum / st->response_weight;
        v = it->t[0] && it->t[1] ? snapshot_pair_response_usec(pp->snap, it->t[0]->id.tid, it->t[1]->id.tid) : NAN;
        return v > 0 ? v : 0;
}

/* The pair's "before" for the effect check: what its actions carried when
 * it was placed this pass (place() starts its mean anew after), or now. */
static struct pair_before pair_before_of(const struct pair_plan *pp, const struct pair_item *it) {
        enum evidence_basis basis;
        struct pair_before b;

        if (it->placed_now)
                return it->placed_before;
        basis = effect_basis_for(DETECT_PAIR, it->t[0], it->t[1]);
        b = (struct pair_before) {
                .basis = basis,
                .evidence = pair_before(it, basis),
                .evidence_mean = it->st && it->st->before_weight > 0 && it->st->before_basis == basis
                                         ? it->st->before_sum / it->st->before_weight : 0,
                .response_usec = pair_response_before(pp, it),
        };
        /* a window above the mean is the "before" on its own */
        b.windows = b.evidence_mean > 0 && b.evidence <= b.evidence_mean ? it->st->before_windows : 1;
        if (b.response_usec > 0)
                b.response_windows = it->st && it->st->response_weight > 0 ? it->st->response_windows : 1;
        return b;
}

/*
 * The pair whose work judges a change of this one: itself, or for a
 * feeder joining its pair's CPU, the pair it feeds. A one-way hand-off
 * has no answer to time, and its switches are no work: sysbench --rate's
 * event generator joined its client at 1,000 requests/s while the pair's
 * answers came 4.4x as fast (163 -> 37 us), and the generator's switches
 * read -36 %, for the client took the requests it found queued without
 * sleeping in between. That undid the feeder's pin.
 */
static const struct pair_item *judged_pair(const struct pair_item *it) {
        if (it->f && it->f->shape == PAIR_FEEDER && it->chain_pair && it->chain_pair->t[0] && it->chain_pair->t[1])
                return it->chain_pair;
        return it;
}

static void fill_action(const struct pair_plan *pp, struct action *a, const struct pair_item *it, int k,
                        enum action_verb verb, const cpumask_t *mask, const char *policy, const char *reason) {
        const struct pair_item *judged = judged_pair(it);
        struct pair_before b = pair_before_of(pp, judged);

        *a = (struct action) {
                .type = ACT_AFFINITY,
                .verb = verb,
                .task = it->id[k],
                .mask = *mask,
                .partner = it->id[1 - k],
                .evidence_basis = b.basis,
                .evidence_before = b.evidence,
                .evidence_before_mean = b.evidence_mean,
                .evidence_before_windows = b.windows,
                .response_before_usec = b.response_usec,
                .response_before_windows = b.response_windows,
                /* final: after a second look of either member, or a "before"
                 * of our own placement (a move, a join, a new span): there
                 * is no kernel's placement in it to look at again */
                .looked_again = plan_state_looked_again(pp->ctx->state, &it->id[0]) ||
                                plan_state_looked_again(pp->ctx->state, &it->id[1]) || it->m[0] || it->m[1],
        };
        if (judged != it) {
                a->work_pair[0] = judged->id[0];
                a->work_pair[1] = judged->id[1];
        }
        snprintf(a->policy, sizeof(a->policy), "%s", policy ?: "");
        snprintf(a->reason, sizeof(a->reason), "%s", reason);
}

/* Release whatever of the pair is ours. Releases are never held back by the budget. */
static int release(struct pair_plan *pp, struct pair_item *it, enum pair_state state, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int release(struct pair_plan *pp, struct pair_item *it, enum pair_state state, const char *fmt, ...) {
        char reason[160];
        va_list ap;
        int r;

        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);

        for (int k = 0; k < 2; k++) {
                struct action a;

                if (!it->m[k])
                        continue;
                fill_action(pp, &a, it, k, VERB_RELEASE, &it->m[k]->mask, it->m[k]->policy, reason);
                r = plan_emit(pp->ctx, &a);
                if (r < 0)
                        return r;
        }
        it->st->cpu = -1;
        it->st->seen = 0;
        it->st->placed_usec = 0;
        it->st->fan_hub = (struct task_id) {};
        /* no co-location right after a release: that is how flapping starts;
         * but a member in its second look (a fan's hub, a chain's shared
         * member, released with the pair the effect check looks at again)
         * ends the hold with the look, as that pair's does */
        plan_cooldown_arm(pp->ctx, it->st);
        for (int k = 0; k < 2; k++) {
                uint64_t look = plan_state_look_until(pp->ctx->state, &it->id[k], pp->ctx->in->now_usec);

                if (look && look < it->st->cooldown_until_usec)
                        it->st->cooldown_until_usec = look;
        }
        plan_set_pair_state(it->st, state, "%s", reason);
        return 0;
}

/*
 * An anchor let go: one member is ours on one CPU, beside a partner that
 * someone else had pinned there and has now put back (a start-up script's
 * taskset, a tool that pins its client only while it warms up). The partner
 * is free, the pair is still a ping-pong pair split by nothing but the next
 * wake-up, and releasing ours would leave it split for Cooldown= (30 s
 * measured here, daemon-owners.sh). So the free partner joins our CPU: the
 * CPU of the lone pin, or -1 when there is nothing to adopt. A partner that
 * someone changed away from one of our pins (foreign_changes) is theirs,
 * and a pair or a member the effect check blocked is not retried: neither
 * is adopted.
 * akey: the members' action target keys.
 */
static int adoptable_cpu(const struct pair_plan *pp, const struct pair_item *it, char akey[2][128]) {
        uint64_t now = pp->ctx->in->now_usec;

        if (item_shape(it) == PAIR_FAN)
                return -1;   /* placed whole or not at all: a lone member is let go */

        for (int k = 0; k < 2; k++) {
                const struct plan_target_state *ts;
                int j = 1 - k, cpu;

                if (!it->m[k] || it->m[j] || it->other[j] || it->pair_pin[j] || (it->anchored & (1u << j)) ||
                    !it->t[j])
                        continue;
                cpu = mask_home(it->st, &it->m[k]->mask);
                ts = plan_state_find(pp->ctx->state, akey[j]);
                if (cpu < 0 || cpu >= pp->n_cpus || (ts && ts->foreign_changes > 0) ||
                    plan_state_blocked(pp->ctx->state, it->st->key, akey[0], now, NULL) ||
                    plan_state_blocked(pp->ctx->state, NULL, akey[1], now, NULL))
                        return -1;
                return cpu;
        }
        return -1;
}

/* Half a pair is ours (the effect check undid one pin, someone changed it,
 * or the CPU went away): let go of the rest. */
static int release_half(struct pair_plan *pp, struct pair_item *it) {
        if (!complete(it))
                return release(pp, it, PAIR_RELEASED, "pair: released: only one member still co-located");
        return release(pp, it, PAIR_RELEASED, "pair: released: members no longer on one usable CPU");
}

/*
 * The share of a pair's wake-ups split across CPUs that is worth a pin on
 * this host. A split round trip costs what the calibration measured a
 * split costs against one CPU (gain g), so a pair split for a share f of
 * them runs about 1 + f (g - 1) times as long as on one CPU, more with
 * the migrations that go with it: a pin pays what the calibration asks of
 * any co-location (CALIB_GAIN_MIN) from f = (CALIB_GAIN_MIN - 1) / (g - 1).
 * Under stress-ng --cpu 2 --cpu-load 40 on a 6.6-9.2x host the kernel kept
 * a pipe ping-pong together for 96-99 % of its wake-ups, moving it 5-8
 * times a second, and it made 0.70-0.83x of the same pair pinned by hand
 * (more than the split share alone costs: the moves cost too); at a fixed
 * 5 % the daemon never acted, at 10 % / (g - 1) it waited seconds on
 * readings of 1 %. Only ever lower than DETECT_PAIR_SPLIT_MIN, where the
 * detector calls a pair split (a 1.2x host waits for that as before), and
 * never below PAIR_SPLIT_SHARE_FLOOR: the share is a rate decayed over
 * the sampler's bursts, and for a ping-pong of tens of thousands of
 * wake-ups/s half a percent is tens of them a burst. At 1,000/s it is one
 * or two a 100 ms burst, and the kernel already keeps such a pair together
 * for the rest; a pin then takes the split that lands in its p99. The
 * gain is taken as read also from busy CPUs (calibrate.h, CALIB_BUSY_MAX):
 * a pin it prices wrongly is one the effect check undoes.
 */
#define PAIR_SPLIT_SHARE_FLOOR 0.005

static double split_share_min(const struct pair_plan *pp, const struct pair_item *it) {
        double g = calibration_gain_for(pp->ctx->in->calibration, pp->topo, it->t[0]->last_cpu, it->t[1]->last_cpu);

        if (!(g > 1))
                return DETECT_PAIR_SPLIT_MIN;
        return MAX(MIN((CALIB_GAIN_MIN - 1) / (g - 1), DETECT_PAIR_SPLIT_MIN), PAIR_SPLIT_SHARE_FLOOR);
}

/*
 * Member k needs no SET for mask one: our pin is that already, or its own
 * mask is (someone held it there; with AllowNarrowed=yes it is no anchor,
 * but a SET to the mask it has changes nothing, and the applier keeps no
 * entry for it, so the same SET came back every pass).
 */
static bool in_place(const struct pair_item *it, int k, const cpumask_t *one) {
        if (it->m[k])
                return cpumask_equal(&it->m[k]->mask, one);
        /* a mask of ours for something else is released this pass, not kept */
        return it->t[k] && !it->other[k] && !it->pair_pin[k] && !it->t[k]->affinity_ours &&
               cpumask_equal(&it->t[k]->allowed, one);
}

/*
 * The load a placement moves: the members' util off the CPUs they last ran
 * on, with their count there as busy threads, so that the pairs decided
 * after it in this pass do not find them there; a fan's busy partner moved
 * off CPU 1 still read as a busy thread there, and the second fan of
 * pgbench -c 4 -j 2 went onto the first one's CPU (23k tps, 36k stock).
 * Onto cpu: the pair's combined util (a fan's link adds none: its first
 * pair's is the whole fan's). An anchor does not move.
 */
static void move_load(struct pair_plan *pp, const struct pair_item *it, int cpu) {
        for (int k = 0; k < 2; k++) {
                const struct task *t = it->t[k];

                if ((it->anchored & (1u << k)) || !t || !t->have_rates || t->last_cpu < 0 ||
                    t->last_cpu >= pp->n_cpus || t->last_cpu == cpu)
                        continue;
                pp->load[t->last_cpu] -= t->util;
                if (t->util > PAIR_BUSY_UTIL)
                        pp->busy[t->last_cpu]--;
        }
        if (!fan_link(it))
                pp->load[cpu] += it->f ? it->f->combined_util : 1.0;
}

static int place(struct pair_plan *pp, struct pair_item *it, int cpu, const char *what) {
        const struct finding *f = it->f;
        cpumask_t mask = pair_mask(pp, it, cpu);
        char reason[160], split[96], mem[48] = "", where[24];
        const char *held_by = it->chain_cpu >= 0 ? ", held there by its other pair" : ", pinned there by someone else";
        double share;
        int r, node = mem_node(pp, it, &share);

        enum pair_role role[2] = { PAIR_ROLE_PEER, PAIR_ROLE_PEER };

        if (it->t[0] && it->t[1])
                detect_pair_roles(it->t[0], it->t[1], role);
        if (node >= 0)
                snprintf(mem, sizeof(mem), ", memory %.0f%% on node %d", share * 100, node);
        if (cpumask_weight(&mask) > 1) {
                const char *list = cpumask_format_list(&mask, split, sizeof(split));
                snprintf(where, sizeof(where), "CPUs %.18s", list ?: "of its span");
        } else
                snprintf(where, sizeof(where), "CPU %d", cpu);
        /* who is who first: what an operator reads the line for; its tail may be cut */
        if (snprintf(reason, sizeof(reason), "pair: %s %s %d (%s%s) + %s %d (%s%s) on %s: %.0f wake-ups/s%s, %s%s",
                 what, it->t[0] ? it->t[0]->comm : "?", (int) it->id[0].tid, pair_role_to_string(role[0]),
                 it->anchored & 1u ? held_by : "",
                 it->t[1] ? it->t[1]->comm : "?", (int) it->id[1].tid, pair_role_to_string(role[1]),
                 it->anchored & 2u ? held_by : "", where, f ? f->wake_rate_per_s : 0,
                 f && f->shape == PAIR_FEEDER ? " one way" : "",
                 f ? detect_pair_split_text(f, split_share_min(pp, it), split, sizeof(split)) : "split ?", mem) < 0)
                reason[0] = '\0';
        it->placed_before = pair_before_of(pp, it);
        if (!it->st->fan_hub.tid && fan_hub(it))
                it->st->fan_hub = *fan_hub(it);
        it->placed_now = true;
        for (int k = 0; k < 2; k++) {
                struct action a;

                if (in_place(it, k, &mask) || (it->anchored & (1u << k)))
                        continue;    /* in place already, or someone else's anchor: never ours to set */
                fill_action(pp, &a, it, k, VERB_SET, &mask, it->p && it->p->name ? it->p->name : it->st->policy, reason);
                r = plan_emit(pp->ctx, &a);
                if (r < 0)
                        return r;
        }
        claim_mask(pp, &mask);
        move_load(pp, it, cpu);
        it->st->cpu = cpu;
        /* ours now: what it moves and how fast it answers from here on are no "before" */
        it->st->before_sum = it->st->before_weight = it->st->response_sum = it->st->response_weight = 0;
        it->st->before_windows = it->st->response_windows = 0;
        it->st->before_usec = 0;
        it->st->look_placed_work = 0;   /* placed: its look is over */
        if (!it->st->placed_usec)
                it->st->placed_usec = pp->ctx->in->now_usec;
        r = use(pp, it, &mask);
        if (r < 0)
                return r;
        plan_set_pair_state(it->st, PAIR_COLOCATED, "%s", reason);
        set_colocated_state(it->st, cpu);
        return 0;
}

static unsigned sets_needed(const struct pair_plan *pp, const struct pair_item *it, int cpu) {
        cpumask_t mask = pair_mask(pp, it, cpu);
        unsigned n = 0;

        for (int k = 0; k < 2; k++)
                if (!(it->anchored & (1u << k)) && !in_place(it, k, &mask))
                        n++;
        return n;
}

static int no_cpu(struct pair_plan *pp, struct pair_item *it, enum no_cpu_reason why, const char *detail) {
        enum pair_state state = why == NO_CPU_HOG ? PAIR_LEFT_ALONE_HOG_CPU : PAIR_LEFT_ALONE_NO_FREE_CPU;
        const char *text = why == NO_CPU_HOG ? "only CPU free is a hog's"
                         : why == NO_CPU_BUSY ? "a busy thread on every allowed CPU"
                         : "no usable CPU in both members' allowed sets";

        /* seen is kept: still split, so it is placed as soon as a CPU frees up */
        if (it->m[0] || it->m[1])
                return release(pp, it, state, "pair: released: %s (%s)", text, detail);
        plan_set_pair_state(it->st, state, "%s (%s)", text, detail[0] ? detail : "-");
        return 0;
}

/*
 * Short connections (a client that connects, runs a few hundred queries
 * and leaves, many times a minute) are not worth a pin: by the time a pass
 * sees the pair it is nearly over, and each one costs a SET on each member
 * and a release. Measured here, MariaDB with one sysbench client after
 * another of 3,000 point selects each (~0.2 s): 14-16 affinity changes in
 * 12 s for no gain over stock. So a pair that ends, its client gone, within
 * PAIR_SHORT_USEC of being co-located counts against the process of the
 * member that stays (the server); once it has PAIR_SHORT_MIN such pairs within
 * PAIR_SHORT_MEMORY_USEC, its next pairs are co-located only when they have
 * lasted PAIR_SHORT_USEC. A long client of that server is still co-located,
 * 2 s late; a server whose clients all stay is never delayed.
 */
#define PAIR_SHORT_USEC (2 * USEC_PER_SEC)
#define PAIR_SHORT_MIN 2
#define PAIR_SHORT_MEMORY_USEC (60 * USEC_PER_SEC)

/* Kept per process: a thread cache hands each client one of several threads
 * (MariaDB here: three in turn for one client after another). */
static int churn_key(const struct task *t, char *buf, size_t size) {
        int n = t->proc ? snprintf(buf, size, "churn:%d:%" PRIu64, (int) t->proc->pid, t->proc->start_time)
                        : snprintf(buf, size, "churn:%d:%" PRIu64, (int) t->id.pid, t->id.start_time);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

/* The member that stays had a pair end short: count it (decaying after PAIR_SHORT_MEMORY). */
static int churn_note(struct pair_plan *pp, const struct task *survivor) {
        uint64_t now = pp->ctx->in->now_usec;
        struct plan_target_state *cs;
        char key[128];
        int r;

        r = churn_key(survivor, key, sizeof(key));
        if (r < 0)
                return r;
        cs = plan_state_get(pp->ctx->state, key);
        if (!cs)
                return -ENOMEM;
        if (cs->no_retry_until_usec <= now)
                cs->seen = 0;
        cs->seen++;
        /* kept (not aged out) while it matters */
        cs->no_retry_until_usec = now + PAIR_SHORT_MEMORY_USEC;
        plan_set_state(cs, PLAN_SHORT_CONNECTIONS, "%u pair(s) ended within %.0f s of co-location", cs->seen,
                       (double) PAIR_SHORT_USEC / USEC_PER_SEC);
        return 0;
}

/* Short pairs lately of a member's process (0 when none or forgotten). */
static unsigned churn_count(const struct pair_plan *pp, const struct task *t) {
        const struct plan_target_state *cs;
        char key[128];

        if (churn_key(t, key, sizeof(key)) < 0)
                return 0;
        cs = plan_state_find(pp->ctx->state, key);
        return cs && cs->no_retry_until_usec > pp->ctx->in->now_usec ? cs->seen : 0;
}

/*
 * A chain: one member of this pair is in a stronger pair kept or placed
 * this pass, the way a proxy sits between its client and its backend. wrk
 * -> nginx proxy -> nginx backend, one connection, measured here: 3.1-6.5k
 * requests/s stock, 12.5-13.8k with all three on one CPU, 5.5-6.6k with
 * only the stronger pair co-located and the backend left where it was
 * ("left alone: shared"). So the other member joins the stronger pair's
 * CPU, the shared one held there by that pair (anchored: never in this
 * pair's actions), when the whole chain fits one CPU: its util, the
 * stronger pair's (or chain's) plus this member's, at most
 * PAIR_CHAIN_FIT. A chain of more links grows the same way, one pair at a
 * time. A member that is the client of both (pgbench's thread with two
 * backends) or the server of both is a fan, not a link, unless the
 * detector found the fan (PAIR_FAN: both its pairs at pair rates, and the
 * three threads' util together within MaxCombinedUtil=, which the first
 * pair's util already is, so no fit is asked here): then the fan's other
 * partner joins its hub's CPU the same way, through the hub only (a pair
 * of another fan or a plain pair sharing a member chains by the rules
 * above). With one of its pairs below pair rates it is no fan: only a
 * member between the two, or a peer, chains. Returns true when this pair
 * is now a chain's link.
 */
#define PAIR_CHAIN_FIT 1.0

static bool chain(struct pair_plan *pp, struct pair_item *it) {
        const struct pair_use *u0 = use_of(pp, &it->id[0]), *u1 = use_of(pp, &it->id[1]);
        const struct pair_use *u = u0 ?: u1;
        int k = u0 ? 0 : 1, j = 1 - k;
        bool fan;
        double util;

        if ((u0 && u1) || !u || u->cpu < 0 || u->cpu >= pp->n_cpus || (!it->f && !it->m[j]) || !it->t[j] ||
            it->m[k] || it->other[j] || it->pair_pin[j] || (it->anchored & (1u << j)))
                return false;
        /* a feeder joins the pair of the thread it wakes, never the other way:
         * a pair member's one-way notices to a helper leave the helper be */
        if (it->f && it->f->shape == PAIR_FEEDER && !(it->f->waker & (1u << j)))
                return false;
        /* the fan's other pair, through its hub, onto the fan's first pair: its
         * third thread is in that pair's util. A fan pair joins nothing through
         * a partner: it is placed whole as its own group or not at all. */
        if (item_shape(it) == PAIR_FAN && fan_hub(it) && !task_id_equal(fan_hub(it), &it->id[k]))
                return false;
        fan = u->pair && u->pair->chain_cpu < 0 && same_fan(it, u->pair) && task_id_equal(fan_hub(it), &it->id[k]);
        if (it->t[k]) {
                enum pair_role role[2];

                detect_pair_roles(it->t[0], it->t[1], role);
                if (role[k] != PAIR_ROLE_PEER && role[k] == u->role && !fan)
                        return false;
        }
        /* a fan's combined util is the whole fan's already (the detector's) */
        util = fan ? MAX(u->util, it->f ? it->f->combined_util : it->st->last.combined_util)
                   : u->util + (it->t[j]->have_rates ? it->t[j]->util : 0);
        /* once joined the chain shares one CPU, so its util fits by construction:
         * only a new link is measured against the CPU */
        if (!fan && !it->m[j] && util > PAIR_CHAIN_FIT)
                return false;
        it->anchored |= 1u << k;
        it->chain_cpu = u->cpu;
        it->chain_mask = u->mask;
        it->chain_pair = u->pair;
        it->chain_util = util;
        it->pin_cpu = it->m[j] && cpumask_equal(&it->m[j]->mask, &u->mask) ? u->cpu : -1;
        return true;
}

/* Keep the finding of this interval, or count the intervals without one. */
static void remember_finding(struct pair_item *it) {
        struct plan_target_state *st = it->st;

        if (it->f) {
                st->last = *it->f;
                st->last.policy = NULL;
                st->absent = 0;
        } else
                st->absent = plan_count_up(st->absent, UINT32_MAX);
}

/* Gone: a member exited (or its TID names another task now). */
static int decide_gone(struct pair_plan *pp, struct pair_item *it) {
        const struct plan_input *in = pp->ctx->in;
        struct plan_target_state *st = it->st;
        pid_t gone = !it->t[0] ? it->id[0].tid : it->id[1].tid;
        bool ours = it->m[0] || it->m[1];

        st->seen = 0;
        st->look_placed_work = 0;   /* "pair:" keys have no start times: a reused TID is no look's */
        if (ours && st->placed_usec && in->now_usec - st->placed_usec < PAIR_SHORT_USEC) {
                int r = churn_note(pp, it->t[0] ?: it->t[1]);
                if (r < 0)
                        return r;
        }
        if (ours)
                return release(pp, it, PAIR_RELEASED, "pair: released: member %d exited", (int) gone);
        plan_set_pair_state(st, PAIR_GONE, "member %d exited", (int) gone);
        return 0;
}

/* Quiet: no finding (wake rate below WakeRate=, or not ours to touch any
 * more). Ours stays on its kept pin for Hysteresis= intervals. */
static int decide_quiet(struct pair_plan *pp, struct pair_item *it) {
        unsigned hyst = MAX(pp->ctx->in->config->daemon.hysteresis_intervals, 1u);
        struct plan_target_state *st = it->st;

        st->seen = 0;
        if (!it->m[0] && !it->m[1]) {
                plan_set_pair_state(st, PAIR_QUIET, "wake rate below the policy's WakeRate= (last %.0f/s)",
                               st->last.wake_rate_per_s);
                return 0;
        }
        /* a chain's link, quiet for a pass: hysteresis too, while its stronger pair holds */
        if (!complete(it) && (used(pp, &it->id[0]) || used(pp, &it->id[1])))
                (void) chain(pp, it);
        if (!complete(it) || it->pin_cpu < 0)
                return release_half(pp, it);
        if (st->absent >= hyst || !it->p)
                return release(pp, it, PAIR_RELEASED, "pair: released: quiet for %u intervals%s",
                               st->absent, it->p ? "" : " (policy gone)");
        /* keep it for now: hysteresis */
        claim_mask(pp, held_mask(it));
        plan_set_pair_state(st, PAIR_COLOCATED, "quiet for %u of %u intervals", st->absent, hyst);
        set_colocated_state(st, it->pin_cpu);
        return use(pp, it, held_mask(it));
}

/*
 * A pair with a finding that is not to be co-located: not a ping-pong
 * pair, a policy that does not co-locate, a member in a stronger pair it
 * cannot chain to (chain() is tried here, and makes the pair a link when
 * it can), or a member someone else pinned. Releases what is ours, or says
 * why it is left alone. 1: decided; 0: eligible; negative errno.
 */
static int decide_ineligible(struct pair_plan *pp, struct pair_item *it) {
        struct plan_target_state *st = it->st;
        const struct finding *f = it->f;
        bool ours = it->m[0] || it->m[1];
        enum pair_state state;
        int r;

        if (f->shape == PAIR_HUB || f->shape == PAIR_STREAM) {
                state = f->shape == PAIR_HUB ? PAIR_LEFT_ALONE_HUB : PAIR_LEFT_ALONE_STREAM;
                st->seen = 0;
                if (ours)
                        return (r = release(pp, it, state, "pair: released: %s", f->note)) < 0 ? r : 1;
                plan_set_pair_state(st, state, "%s", f->note);
                return 1;
        }
        if (!it->p || it->p->action != ACTION_COLOCATE) {
                st->seen = 0;
                if (ours)
                        return (r = release(pp, it, PAIR_WATCHING, "pair: released: policy %s does not co-locate",
                                            st->policy)) < 0 ? r : 1;
                plan_set_pair_state(st, PAIR_WATCHING, "policy %s: Action=%s (report only)", st->policy,
                               it->p ? policy_action_to_string(it->p->action) : "?");
                return 1;
        }
        if (f->shape == PAIR_FEEDER) {
                /* one way: only a link of a pair we hold, on that pair's CPU (chain() is false
                 * when neither member is in a pair kept or placed this pass) */
                if (!chain(pp, it)) {
                        st->seen = 0;
                        if (ours)
                                return (r = release(pp, it, PAIR_LEFT_ALONE_ONE_WAY,
                                                    "pair: released: one-way, its pair not held")) < 0 ? r : 1;
                        plan_set_pair_state(st, PAIR_LEFT_ALONE_ONE_WAY,
                                            "%s; joins only a pair held on one CPU, where all three fit", f->note);
                        return 1;
                }
        } else if ((used(pp, &it->id[0]) || used(pp, &it->id[1])) && !chain(pp, it)) {
                st->seen = 0;
                if (ours)
                        return (r = release(pp, it, PAIR_LEFT_ALONE_SHARED,
                                            "pair: released: member in a stronger pair")) < 0 ? r : 1;
                plan_set_pair_state(st, PAIR_LEFT_ALONE_SHARED, "a member is in a stronger pair");
                return 1;
        }
        if (it->other[0] || it->other[1]) {
                const struct managed *o = it->other[0] ?: it->other[1];

                st->seen = 0;
                if (ours)
                        return (r = release(pp, it, PAIR_LEFT_ALONE_PINNED, "pair: released: member pinned by %s",
                                            o->reason)) < 0 ? r : 1;
                plan_set_pair_state(st, PAIR_LEFT_ALONE_PINNED, "member %d already pinned: %s", (int) o->task.tid,
                               o->reason);
                return 1;
        }
        return 0;
}

/* The members' affinity action target keys (the effect check's blocks are kept by them). */
static int member_keys(const struct pair_item *it, char akey[2][128]) {
        for (int k = 0; k < 2; k++)
                if (!action_target_key(&(struct action) { .type = ACT_AFFINITY, .task = it->id[k] }, akey[k],
                                       sizeof(akey[k])))
                        return -ENAMETOOLONG;
        return 0;
}

/* The CPU a pair of ours holds is still a home: not a hog's, usable, and
 * in both members' allowed sets and the policy's CPUs=. */
static bool still_fits(const struct pair_plan *pp, const struct pair_item *it, int cpu) {
        cpumask_t cand;

        if (cpu < 0 || cpu >= pp->n_cpus || pp->ctx->cpu_claim[cpu] == 1 || !cpumask_test(&pp->usable, cpu))
                return false;
        cand = candidates(pp, it);
        return cpumask_test(&cand, cpu);
}

/* Keep: both members stay on the kept pin's CPU. */
static int keep(struct pair_plan *pp, struct pair_item *it, int cpu) {
        const struct finding *f = it->f;

        claim_mask(pp, held_mask(it));
        if (!fan_link(it))
                pp->load[cpu] += f->combined_util;
        it->st->cpu = cpu;
        plan_set_pair_state(it->st, PAIR_COLOCATED, "%.0f wake-ups/s each way, util %.2f; %s", f->wake_rate_per_s,
                       f->combined_util, (it->m[0] ?: it->m[1])->reason);
        set_colocated_state(it->st, cpu);
        return use(pp, it, held_mask(it));
}

/* Join: the free partner of our lone pin moves to its CPU (adoptable_cpu()). */
static int join(struct pair_plan *pp, struct pair_item *it, int cpu) {
        if (sets_needed(pp, it, cpu) > pp->ctx->actions_left) {
                /* ours is kept: the partner joins on a pass with budget */
                claim_mask(pp, held_mask(it));
                plan_set_pair_state(it->st, PAIR_WATCHING, "partner free again; no action budget "
                               "left this interval to join it");
                return use(pp, it, held_mask(it));
        }
        return place(pp, it, cpu, "joined");
}

/* Move: our CPU is a hog's now, offline, or outside the allowed set; the
 * new one is choose_cpu()'s (a chain link's: its stronger pair's CPU). */
static int move(struct pair_plan *pp, struct pair_item *it) {
        enum no_cpu_reason ncr;
        char detail[160];
        int cpu = choose_cpu(pp, it, &ncr, detail, sizeof(detail));

        if (cpu < 0)
                return no_cpu(pp, it, ncr, detail);
        if (sets_needed(pp, it, cpu) + fan_link_sets(pp, it, cpu) > pp->ctx->actions_left)
                return release(pp, it, PAIR_RELEASED, "pair: released: CPU %d no longer fit, no budget to move",
                               it->pin_cpu);
        return place(pp, it, cpu, "moved");
}

/*
 * A pair of ours: keep it on its kept pin (it->pin_cpu: both members there,
 * or a chain's link already on its stronger pair's CPU), let the partner
 * of a lone pin join it (adoptable_cpu()), or move it when that CPU no
 * longer fits; else release it.
 */
static int keep_or_move(struct pair_plan *pp, struct pair_item *it, char akey[2][128]) {
        int adopted = complete(it) ? -1 : adoptable_cpu(pp, it, akey);

        /* a chain whose stronger pair moved: moved after it */
        if (adopted < 0 && (!complete(it) || (it->pin_cpu < 0 && it->chain_cpu < 0)))
                return release_half(pp, it);
        if (adopted >= 0 && still_fits(pp, it, adopted))
                return join(pp, it, adopted);
        if (adopted < 0 && still_fits(pp, it, it->pin_cpu)) {
                cpumask_t want = pair_mask(pp, it, it->pin_cpu);

                /* its span changed (Span=, the calibration, a hog pinned on a CPU of it): set anew */
                if (!cpumask_equal(&want, held_mask(it)) &&
                    sets_needed(pp, it, it->pin_cpu) + fan_link_sets(pp, it, it->pin_cpu) <= pp->ctx->actions_left)
                        return place(pp, it, it->pin_cpu, "re-spanned");
                return keep(pp, it, it->pin_cpu);
        }
        return move(pp, it);
}

/*
 * Not ours: co-locate once it has been split for Hysteresis= intervals
 * more than it was together: a together interval takes one off rather
 * than starting over, because with the fallback source the split may be
 * one look at both members' last CPU, and one unlucky look must not
 * restart the count of a pair that is split most of the time. Unknown
 * (the fallback could not tell) counts neither way. True: split long
 * enough; else the state says how long so far.
 */
static bool split_long_enough(struct pair_plan *pp, struct pair_item *it) {
        unsigned hyst = MAX(pp->ctx->in->config->daemon.hysteresis_intervals, 1u);
        struct plan_target_state *st = it->st;
        const struct finding *f = it->f;
        double split_min = split_share_min(pp, it);
        char split[96];

        detect_pair_split_text(f, split_min, split, sizeof(split));
        if (f->split_fraction < 0) {
                plan_set_pair_state(st, PAIR_WATCHING, "%s, %.0f wake-ups/s each way", split, f->wake_rate_per_s);
                return false;
        }
        if (f->split_fraction < split_min) {
                if (st->seen > 0)
                        st->seen--;
                /* the host's price beside the share, where it is not the detector's */
                if (split_min < DETECT_PAIR_SPLIT_MIN)
                        plan_set_pair_state(st, PAIR_WATCHING, "%s (a pin pays from %.1f%% on this host), "
                                            "%.0f wake-ups/s each way", split, split_min * 100, f->wake_rate_per_s);
                else
                        plan_set_pair_state(st, PAIR_WATCHING, "%s, %.0f wake-ups/s each way", split,
                                            f->wake_rate_per_s);
                return false;
        }
        st->seen = plan_count_up(st->seen, UINT32_MAX);
        /*
         * The tracepoint's split fraction is already an average over every
         * wake-up of the window (thousands per second for a pair over the
         * threshold), and the fallback's migration count covers the window
         * too: that is the persistence Hysteresis= exists to establish; one
         * look at two last CPUs is not. Acting on the first such interval
         * is what makes the fix land within two intervals of the pair
         * starting (the target in BENCHMARKS.md); release still waits
         * Hysteresis= intervals.
         */
        if (st->seen < (f->split_basis != SPLIT_BASIS_LOOK ? 1u : hyst)) {
                plan_set_pair_state(st, PAIR_WATCHING, "%s for %u of %u intervals, %.0f wake-ups/s each way",
                               split, st->seen, hyst, f->wake_rate_per_s);
                return false;
        }
        return true;
}

enum hold {
        HOLD_NONE,
        HOLD_NEWBORN,     /* a member started in this interval */
        HOLD_SHORT,       /* a member serves short connections, and the pair is young */
        HOLD_BLOCKED,     /* an effect check's block */
        HOLD_COOLDOWN,    /* the cool-down after a release */
};

/* What holds the pair back (held_back()), without a word of it to the
 * state: a fan's first pair asks it of its other pair (fan_cannot_join()).
 * *ret_why (may be NULL): a block's own reason. */
static enum hold hold_of(const struct pair_plan *pp, const struct pair_item *it, char akey[2][128],
                         const char **ret_why) {
        uint64_t now = pp->ctx->in->now_usec;
        const struct plan_target_state *st = it->st;

        /*
         * The effect check compares what the pair moves after the change with
         * this window's figure. A member born in it has rates over its life so
         * far: a stream that calibrated for half a second before it streamed
         * read half its rate, and co-locating it, which cost it 38 %, looked
         * +18 %. Decided on a window of its own, asked for soon.
         */
        if (it->t[0]->rates_since_birth || it->t[1]->rates_since_birth)
                return HOLD_NEWBORN;
        if (MAX(churn_count(pp, it->t[0]), churn_count(pp, it->t[1])) >= PAIR_SHORT_MIN &&
            now - st->first_seen_usec < PAIR_SHORT_USEC)
                return HOLD_SHORT;
        if (plan_state_blocked(pp->ctx->state, st->key, akey[0], now, ret_why) ||
            plan_state_blocked(pp->ctx->state, NULL, akey[1], now, ret_why))
                return HOLD_BLOCKED;
        return st->cooldown_until_usec > now ? HOLD_COOLDOWN : HOLD_NONE;
}

/* Split long enough, but held back: a member too new to judge, a server of
 * short connections, a block from the effect check, or the cool-down after
 * a release. True: held back, and the state says why. */
static bool held_back(struct pair_plan *pp, struct pair_item *it, char akey[2][128]) {
        struct plan_target_state *st = it->st;
        const char *why = NULL;

        switch (hold_of(pp, it, akey, &why)) {
        case HOLD_NONE:
                return false;
        case HOLD_NEWBORN:
                plan_set_pair_state(st, PAIR_WATCHING, "split; a member started in this interval: decided on a "
                               "window of its own, at the next pass (brought forward)");
                pp->ctx->state->recheck_soon = true;
                break;
        case HOLD_SHORT:
                plan_set_pair_state(st, PAIR_WATCHING, "split; a member serves short connections: co-located once "
                               "this pair has lasted %.0f s", (double) PAIR_SHORT_USEC / USEC_PER_SEC);
                break;
        case HOLD_BLOCKED:
                plan_set_pair_state(st, PAIR_LEFT_ALONE_BLOCKED, "%s", why ?: "not retried yet");
                break;
        case HOLD_COOLDOWN:
                plan_set_pair_state(st, PAIR_WATCHING, "split, cool-down for %.0f s more",
                               (double) (st->cooldown_until_usec - pp->ctx->in->now_usec) / USEC_PER_SEC);
                break;
        }
        return true;
}

/* Place new: a pair not ours, split long enough and not held back, goes on
 * choose_cpu()'s CPU (a chain link's: its stronger pair's) when the budget
 * has room for both members. */
/*
 * Where the calibration says co-location buys under CALIB_GAIN_MIN between
 * the CPUs this pair's members last ran on, a pin would only take the
 * balancer's freedom: the pair is left to the kernel, and says why. Not
 * for a policy with IgnoreCalibration=yes: its operator measured the
 * workload itself, or the pipe probe's reading is noise on this host. Nor
 * where the reading was taken on busy CPUs, or is not checked against
 * their load yet (calibration_quiet()): there it says little, and the
 * effect check judges the pin instead.
 */
static bool no_gain_here(const struct pair_plan *pp, const struct pair_item *it) {
        const struct calibration *c = pp->ctx->in->calibration;
        double gain;

        if ((it->p && it->p->ignore_calibration) ||
            !calibration_free_between(c, pp->topo, it->t[0]->last_cpu, it->t[1]->last_cpu))
                return false;
        gain = calibration_gain_for(c, pp->topo, it->t[0]->last_cpu, it->t[1]->last_cpu);
        plan_set_pair_state(it->st, PAIR_LEFT_ALONE_NO_GAIN,
                            "co-location buys %.2fx on this host (calibrated; under %.2fx)", gain, CALIB_GAIN_MIN);
        return true;
}

/*
 * Why the fan's other pair could not join its first pair on cpu in this
 * pass, or NULL: what would stop place_new() for it (a member someone else
 * holds, its policy, its CPUs, and what holds any pair back: hold_of()),
 * asked before the first pair is placed, so that a fan is placed whole or
 * not at all.
 */
static const char *fan_cannot_join(const struct pair_plan *pp, const struct pair_item *sib, int cpu) {
        const struct task_id *hub = fan_hub(sib);
        char akey[2][128];
        cpumask_t cand;
        int j;

        if (!hub || !sib->t[0] || !sib->t[1])
                return "its other pair is gone";
        j = task_id_equal(&sib->id[0], hub) ? 1 : 0;
        if (sib->m[0] || sib->m[1])
                return "its other pair is held apart";
        if (!sib->p || sib->p->action != ACTION_COLOCATE)
                return "its other pair's policy does not co-locate";
        if (sib->other[j] || sib->pair_pin[j] || (sib->anchored & (1u << j)))
                return "its third thread is pinned by someone else";
        if (used(pp, &sib->id[j]))
                return "its third thread is in another pair";
        cand = candidates(pp, sib);
        if (!cpumask_test(&cand, cpu))
                return "its third thread may not run on this CPU";
        if (member_keys(sib, akey) < 0)
                return "its other pair's keys are too long";
        switch (hold_of(pp, sib, akey, NULL)) {
        case HOLD_NEWBORN:
                return "a thread of its other pair started in this interval";
        case HOLD_SHORT:
                return "a member of its other pair serves short connections";
        case HOLD_BLOCKED:
                return "its other pair is blocked by an effect check";
        case HOLD_COOLDOWN:
                return "its other pair is in its cool-down";
        case HOLD_NONE:
                break;
        }
        return NULL;
}

static int place_new(struct pair_plan *pp, struct pair_item *it, char akey[2][128]);

/* The fan's other pair, at once after its first: decided now if it had
 * not been (the pairs go by rate), and placed as a link of the first. */
static int place_fan_link(struct pair_plan *pp, struct pair_item *sib) {
        char akey[2][128];
        int r;

        if (!sib->decided) {
                sib->decided = true;
                remember_finding(sib);
                note_window(pp, sib);
        }
        r = decide_ineligible(pp, sib);
        if (r != 0)
                return MIN(r, 0);
        r = member_keys(sib, akey);
        return r < 0 ? r : place_new(pp, sib, akey);
}

/*
 * A fan's first pair (a fan's link joins without a split of its own to
 * wait for: joins_fan()) is placed only where its other pair can join on
 * the same CPU, with the budget for all three threads, and that pair is
 * placed right after it: its threads took turns with the hub where the
 * kernel kept them together, and are split from it once the hub moves.
 */
static int place_new(struct pair_plan *pp, struct pair_item *it, char akey[2][128]) {
        bool first_of_fan = item_shape(it) == PAIR_FAN && it->chain_cpu < 0;
        struct pair_item *sib = first_of_fan ? fan_sibling(pp, it) : NULL;
        const char *why = NULL;
        enum no_cpu_reason ncr;
        char detail[160];
        int cpu, r;

        /* a fan's link follows its first pair, which was judged for the fan */
        if (!joins_fan(it) && (no_gain_here(pp, it) || !split_long_enough(pp, it)))
                return 0;
        if (held_back(pp, it, akey))
                return 0;
        cpu = choose_cpu(pp, it, &ncr, detail, sizeof(detail));
        if (cpu < 0)
                return no_cpu(pp, it, ncr, detail);
        if (first_of_fan)
                why = sib ? fan_cannot_join(pp, sib, cpu) : "its other pair is not found this interval";
        if (why) {
                plan_set_pair_state(it->st, PAIR_WATCHING, "split; a fan, placed whole or not at all: %s", why);
                return 0;
        }
        if (pp->ctx->actions_left < sets_needed(pp, it, cpu) + first_of_fan) {
                plan_set_pair_state(it->st, PAIR_WATCHING, "split; no action budget left this interval");
                return 0;
        }
        plan_cooldown_arm(pp->ctx, it->st);
        r = place(pp, it, cpu, "co-locate");
        return r < 0 || !first_of_fan ? r : place_fan_link(pp, sib);
}

/*
 * A pair released for a second look (plan_state_second_look()) was
 * measured on one CPU (st->look_placed_work, the median of its bytes/s
 * there) and then where the kernel put it, in the look's windows (their
 * mean, decayed over PAIR_BEFORE_TAU_USEC: note_window()). Where one CPU
 * moved less than that mean by more than half of EffectTolerance= (the
 * margin bytes_fell(), effect.c, holds a pair's every window to), placing
 * it again would measure that loss once more: the pair is blocked until
 * RetryAfter=, as an undo blocks it (its "pair:" key: each member stays
 * free for its other pairs). Judged once, at the first pass after the
 * look (st->look_until_usec), for every pair before any is decided
 * (plan_pairs(): a fan's other pair is decided with its first), then the
 * figure is dropped; a look of one window (Interval= of 5 s or more, a
 * basis that changed) blocks nothing. A stream beside stress-ng --cpu 2
 * --cpu-load 40 read 1.28e6-1.38e6 bytes/s on one CPU and 1.4e6-1.45e6
 * where the kernel put it; placed again after its look and kept within
 * the tolerance, it ran at 0.91-0.93x of its stock rate over 10 s runs. A
 * client at a fixed rate moves as many bytes anywhere and is placed
 * again, judged by its answers; so is a pair that did as well or better.
 */
static int judge_look(struct pair_plan *pp, struct pair_item *it) {
        struct plan_target_state *st = it->st;
        uint64_t now = pp->ctx->in->now_usec;
        double margin = pp->ctx->in->config->daemon.effect_tolerance / 2, placed;
        struct pair_before b;
        char why[160];

        if (!st || !(st->look_placed_work > 0) || now < st->look_until_usec)
                return 0;   /* nothing to judge, or the look goes on */
        placed = st->look_placed_work;
        st->look_placed_work = 0;
        if (!it->t[0] || !it->t[1])
                return 0;
        b = pair_before_of(pp, it);
        if (b.basis != EVIDENCE_IO_BYTES || !(b.evidence_mean > 0) || st->before_windows < 2 ||
            placed > b.evidence_mean * (1 - margin))
                return 0;
        snprintf(why, sizeof(why), "one CPU moved less: %.4g bytes/s there, %.4g where the kernel put it in its "
                 "second look (%+.0f %%)", placed, b.evidence_mean, (placed / b.evidence_mean - 1) * 100);
        return plan_state_block(pp->ctx->state, st->key, now + pp->ctx->in->config->daemon.retry_after_usec, why);
}

/*
 * One pair, in order: gone or quiet; ineligible (not a ping-pong pair, not
 * co-located by its policy, shared, pinned by someone else); ours: keep,
 * join or move; not ours: place new once split long enough.
 */
static int decide(struct pair_plan *pp, struct pair_item *it) {
        char akey[2][128];
        int r;

        it->decided = true;
        remember_finding(it);
        if (!it->t[0] || !it->t[1])
                return decide_gone(pp, it);
        note_window(pp, it);
        if (!it->f)
                return decide_quiet(pp, it);
        r = decide_ineligible(pp, it);
        if (r != 0)
                return MIN(r, 0);
        r = member_keys(it, akey);
        if (r < 0)
                return r;
        if (it->m[0] || it->m[1])
                return keep_or_move(pp, it, akey);
        return place_new(pp, it, akey);
}

/* The CPU pair it holds this pass (kept or placed: use()), or -1. */
static int used_cpu(const struct pair_plan *pp, const struct pair_item *it) {
        for (size_t i = 0; i < pp->n_used; i++)
                if (pp->used[i].pair == it)
                        return pp->used[i].cpu;
        return -1;
}

/*
 * A fan pair of ours held without its other pair on its CPU (that one
 * undone by its effect check, turned into a stream, quiet past its
 * hysteresis, or without the budget to follow a move) is let go: half a
 * fan is what placing it whole avoids.
 */
static int keep_fans_whole(struct pair_plan *pp) {
        for (size_t i = 0; i < pp->n_items; i++) {
                struct pair_item *it = &pp->items[i];
                int cpu = used_cpu(pp, it), r;
                bool whole = false;

                /* not one set this pass: the applier releases before it sets, and
                 * would pin it again after letting it go */
                if (item_shape(it) != PAIR_FAN || (!it->m[0] && !it->m[1]) || cpu < 0 || it->placed_now)
                        continue;
                for (size_t j = 0; j < pp->n_used && !whole; j++)
                        whole = same_fan(pp->used[j].pair, it) && pp->used[j].cpu == cpu;
                if (whole)
                        continue;
                r = release(pp, it, PAIR_RELEASED, "pair: released: its fan is no longer held whole on one CPU");
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Our pins whose pair the planner no longer knows (state forgotten): release. */
static int release_orphans(struct pair_plan *pp) {
        const struct plan_input *in = pp->ctx->in;

        for (size_t i = 0; i < in->n_managed; i++) {
                const struct managed *m = &in->managed[i];
                bool known = false;
                struct action a;
                int r;

                if (m->type != ACT_AFFINITY || !is_pair_pin(m))
                        continue;
                for (size_t j = 0; j < pp->n_items && !known; j++)
                        known = task_id_equal(&pp->items[j].id[0], &m->task) ||
                                task_id_equal(&pp->items[j].id[1], &m->task);
                if (known)
                        continue;
                a = (struct action) { .type = ACT_AFFINITY, .verb = VERB_RELEASE, .task = m->task, .mask = m->mask };
                snprintf(a.policy, sizeof(a.policy), "%s", m->policy);
                snprintf(a.reason, sizeof(a.reason), "pair: released: pair no longer tracked");
                r = plan_emit(pp->ctx, &a);
                if (r < 0)
                        return r;
        }
        return 0;
}

int plan_pairs(struct plan_ctx *ctx) {
        struct pair_plan pp = {};
        int r;

        if (!ctx || !ctx->in || !ctx->in->snap || !ctx->in->snap->topo || !ctx->cpu_claim)
                return -EINVAL;
        pp = (struct pair_plan) {
                .ctx = ctx,
                .snap = ctx->in->snap,
                .topo = ctx->in->snap->topo,
                .n_cpus = MIN(ctx->in->snap->topo->n_cpus, CPUMASK_MAX),
                .usable = snapshot_usable(ctx->in->snap),
        };

        r = collect(&pp);
        if (r >= 0)
                r = load_init(&pp);
        if (r >= 0 && pp.n_items > 1)
                qsort_safe(pp.items, pp.n_items, sizeof(*pp.items), item_cmp);
        for (size_t i = 0; r >= 0 && i < pp.n_items; i++)
                r = judge_look(&pp, &pp.items[i]);
        for (size_t i = 0; r >= 0 && i < pp.n_items; i++)
                if (!pp.items[i].decided)   /* a fan's link may be, with its first pair */
                        r = decide(&pp, &pp.items[i]);
        if (r >= 0)
                r = keep_fans_whole(&pp);
        if (r >= 0)
                r = release_orphans(&pp);

        free(pp.items);
        free(pp.load);
        free(pp.busy);
        free(pp.core_claimed);
        free(pp.core_paired);
        free(pp.llc_paired);
        free(pp.used);
        return r < 0 ? r : 0;
}
