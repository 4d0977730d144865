/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hog planner ([conservative-smp]): pin each CPU hog that keeps hopping to
 * a CPU of its own, and undo that as soon as it would be unfair.
 *
 * The seed in numbers: a finite-element job took 1019 s stock, 842 s with
 * one taskset per process, and 1373 s with a naive "never migrate" patch,
 * whose author named the drawback himself: n+1 hogs on n CPUs leaves one
 * with 100 % and two with 50 %. So the invariants, in order:
 *
 *  1. never two of our pinned hogs on one CPU;
 *  2. when the busy threads that compete for the hogs' CPUs (the hogs,
 *     and the others that no idle CPU outside them can take) outnumber
 *     those CPUs, pin nothing, and release every hog pin once that has
 *     held for Hysteresis= intervals (the kernel's rotation is the fair
 *     thing then);
 *  3. only onto usable CPUs (snapshot_usable(): online, not isolated, not
 *     nohz_full, not a kubelet container's exclusive CPU) within
 *     the task's own allowed set and the policy's CPUs=;
 *  4. prefer the CPU the hog is already on, but first: never put two hogs
 *     on SMT siblings while a core has none, then the highest-capacity
 *     CPUs (a hybrid part's P cores before its E cores, big before
 *     little), then spread over nodes and LLCs;
 *  5. a pinned hog stays pinned while it still wants a CPU (its demand:
 *     util + run delay; a pinned hog no longer migrates, so migrations
 *     cannot be the test), and is released after Hysteresis= intervals
 *     without;
 *  6. a pin whose CPU went offline or left the task's cpuset is released
 *     at once and, if a CPU is free, the hog is placed again in the same
 *     pass: a task is never left stuck.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "detect/match.h"
#include "plan/effect.h"
#include "plan/plan.h"

struct hog_item {
        struct plan_target_state *st;
        struct task_id id;
        const struct task *t;          /* NULL: exited */
        const struct managed *m;       /* our pin in force, if any */
        const struct finding *f;       /* this interval's finding, if any */
        const struct policy *p;        /* NULL: policy gone */
        cpumask_t base;                /* allowed set before our pin (now, if not pinned) */
        cpumask_t cand;                /* base ∩ usable ∩ CPUs= */
        double demand, util_min, mig_rate, mig_min;
        bool busy, migrating, present;
        bool keep, move, placed;
        bool paired;                   /* a member of a pair (in_pair()): never a hog */
        int pin_cpu;
};

struct hog_plan {
        struct plan_ctx *ctx;
        const struct snapshot *snap;
        const struct topology *topo;
        cpumask_t usable;
        unsigned K;
        struct hog_item *items;
        size_t n_items;
        int *hard;                     /* CPUs a busy thread someone else pinned occupies */
        int *soft;                     /* busy threads (not our pins) last seen per CPU */
        /* scratch for pick_cpu(), per core / node / LLC id (domain_counts()) */
        int *core_taken, *node_claimed, *node_total, *llc_claimed, *llc_total;
        double floor;                  /* lowest Util= of any hog policy: "busy" for counting */
        unsigned overcommit_hogs, overcommit_cpus;
        bool overcommit_now, overcommit_release;
};

static bool pinnable(const struct policy *p) {
        return p && p->enabled && p->detector == DETECT_HOG && p->action == ACTION_PIN;
}

static struct hog_item *item_find(struct hog_plan *hp, const struct task_id *id) {
        for (size_t i = 0; i < hp->n_items; i++)
                if (task_id_equal(&hp->items[i].id, id))
                        return &hp->items[i];
        return NULL;
}

static struct hog_item *item_get(struct hog_plan *hp, const struct task_id *id, size_t cap) {
        struct hog_item *it = item_find(hp, id);

        if (it || hp->n_items >= cap)
                return it;
        hp->items[hp->n_items] = (struct hog_item) { .id = *id, .pin_cpu = -1 };
        return &hp->items[hp->n_items++];
}

/* Our pin in force on thread id (of any planner), or NULL. */
static const struct managed *managed_of(const struct hog_plan *hp, const struct task_id *id) {
        const struct plan_input *in = hp->ctx->in;

        for (size_t j = 0; j < in->n_managed; j++)
                if (in->managed[j].type == ACT_AFFINITY && task_id_equal(&in->managed[j].task, id))
                        return &in->managed[j];
        return NULL;
}

/* Our pair pin of thread id (its CPU, or a Span='s CPUs), or NULL. */
static const cpumask_t *pair_pin_of(const struct hog_plan *hp, const struct task_id *id) {
        const struct managed *m = managed_of(hp, id);

        return m && m->kind == DETECT_PAIR ? &m->mask : NULL;
}

/*
 * A member of a ping-pong pair is no hog, whatever its demand says: its
 * run delay is its partner's turn on the CPU they share. Measured here:
 * MariaDB's connection thread co-located with its sysbench client reads
 * util 0.52 and demand 1.00; pinned as a hog away from the pair's CPU it
 * and the pair planner moved it between the two CPUs every pass.
 * Nor is a thread that wakes another, and is woken by it, at pair rates
 * (WakeRate=): a busy client of a server (redis-benchmark with 50
 * connections, util 0.96) is half of an exchange whose two ends the
 * kernel's wake-up placement moves together; pinned, it is the server
 * that gets moved onto its CPU. Both ways: a compute thread that only
 * posts to a helper or a logger a few hundred times a second is a hog
 * like any other, and so is one that the sampler charges with the
 * wake-ups of the interrupts that land on its CPU, or one that exchanges
 * with a kernel thread (a kworker): that is no pair (task_is_kthread()).
 */
static bool in_pair(const struct hog_plan *hp, const struct task_id *id) {
        const struct plan_input *in = hp->ctx->in;
        double floor = detect_pair_rate_floor(in->config);
        const struct snapshot *s = in->snap;

        for (size_t i = 0; floor >= 0 && i < s->n_edges; i++) {
                const struct wake_edge *e = &s->edges[i], *back;
                const struct task *wakee;

                if (e->waker_tid != id->tid || e->wakee_tid == id->tid || e->wakeups_per_s < floor)
                        continue;
                wakee = snapshot_find_task(s, e->wakee_tid);
                if (wakee && task_is_kthread(wakee))
                        continue;
                back = snapshot_find_edge(s, e->wakee_tid, id->tid);
                if (back && back->wakeups_per_s >= floor)
                        return true;
        }

        for (size_t i = 0; in->findings && i < in->findings->n; i++) {
                const struct finding *f = &in->findings->items[i];

                /* a feeder wakes one way: a thread posting to a helper of its own process */
                if (f->kind != DETECT_PAIR || f->shape == PAIR_FEEDER)
                        continue;
                for (size_t k = 0; k < f->n_members; k++)
                        if (task_id_equal(&f->members[k], id))
                                return true;
        }
        return pair_pin_of(hp, id) != NULL;
}

/*
 * Two hogs of one set: the same policy, and the same process or the same
 * program (comm). A shipped hog policy matches every thread, so the policy
 * alone would make any busy thread on the machine a sibling of any hopping
 * one; a job's workers (a compile's cc1s, an MPI rank's peers, one
 * program's threads) share a process or a name.
 */
static bool siblings(const struct hog_item *a, const struct hog_item *b) {
        if (!a->t || !b->t || !a->p || a->p != b->p)
                return false;
        return a->id.pid == b->id.pid || strncmp(a->t->comm, b->t->comm, sizeof(a->t->comm)) == 0;
}

/*
 * A thread that wants a CPU: by its demand (util + run delay), since three
 * hogs on two CPUs each get 66 % and still want a whole one. Outside a set
 * Scope= a thread is the operator's other work, load the daemon does not
 * place: it counts by the CPU it takes (util). A duty-cycled job next door
 * (40 % busy, the rest asleep) waits behind a pinned hog and so reads 80 %
 * demand; counted by demand it turned every pass into "hogs > CPUs" and
 * the scoped daemon's pins flapped; a real hog outside still counts.
 * The daemon's own threads never count: it wants no CPU of its own (its
 * sampler keeps within a budget of a few per cent), but its run delay
 * behind the hogs it watches made its demand read as a third hog (an ASan
 * build in CI, scoped with the test: "3 hogs > 2 usable CPUs", and the
 * test's pin released).
 */
static bool is_busy_thread(const struct hog_plan *hp, const struct task *t) {
        if (!t->have_rates || (hp->ctx->in->self_pid > 0 && t->id.pid == hp->ctx->in->self_pid))
                return false;
        if (!match_in_scope(hp->ctx->in->config, t))
                return t->util >= hp->floor;
        return task_demand(t) >= hp->floor;
}

/*
 * The busy threads that could be companions() of a hog this pass: those of
 * a policy that has a hopping hog (a finding) or a pin in force, in the
 * same process or with the same comm. A sibling that never hopped has no
 * finding and no state, so without this it was never looked at: one of the
 * two hogs of tests/hogs-integration.sh was pinned within a second and the
 * other, if it had not hopped by then, could stay unmanaged for the whole
 * minute (with the first pinned, the balancer has no reason to move it):
 * the symptom with which a CI rehearsal under load failed.
 */
static void collect_siblings(struct hog_plan *hp, size_t cap) {
        const struct plan_input *in = hp->ctx->in;
        size_t n_seeds = hp->n_items;

        for (size_t i = 0; i < snapshot_n_active(hp->snap); i++) {
                const struct task *t = snapshot_active(hp->snap, i);
                const struct policy *p = NULL;
                struct hog_item cand;
                bool want = false;

                if (!is_busy_thread(hp, t) || item_find(hp, &t->id))
                        continue;
                for (size_t j = 0; j < n_seeds && !want; j++) {
                        const struct hog_item *seed = &hp->items[j];

                        /* a pair member is no hog (in_pair()), so it heads no hog set */
                        if (!seed->t || !(seed->f || seed->m) || seed->paired || !pinnable(seed->p))
                                continue;
                        if (!p)
                                p = detect_policy_for(in->config, hp->snap, t, DETECT_HOG, in->self_pid, NULL);
                        if (!p)
                                break;
                        cand = (struct hog_item) { .id = t->id, .t = t, .p = p };
                        want = siblings(&cand, seed);
                }
                if (want) {
                        struct hog_item *it = item_get(hp, &t->id, cap);

                        if (it)
                                it->p = p;
                }
        }
}

/* Items from..n_items: their task, state target and policy. */
static int resolve(struct hog_plan *hp, size_t from) {
        const struct plan_input *in = hp->ctx->in;
        struct plan_state *state = hp->ctx->state;

        for (size_t i = from; i < hp->n_items; i++) {
                struct hog_item *it = &hp->items[i];
                char key[128];

                if (!hog_key(&it->id, key, sizeof(key)))
                        return -ENAMETOOLONG;
                it->t = snapshot_find_id(hp->snap, &it->id);
                it->paired = !it->m && in_pair(hp, &it->id);
                /* plan_state_get marks it as looked at; exited, unmanaged ones are left to age out */
                it->st = it->f || it->m || it->t ? plan_state_get(state, key) : plan_state_find(state, key);
                if (!it->st)
                        return -ENOMEM;
                it->st->last.members[0] = it->id;
                it->st->last.n_members = 1;
                it->st->last.kind = DETECT_HOG;

                if (it->f)
                        it->p = it->f->policy;
                else if (it->m)
                        it->p = config_find_policy(in->config, it->m->policy);
                else if (!it->p)        /* collect_siblings() has matched it already */
                        it->p = config_find_policy(in->config, it->st->policy);
                if (it->p && (!it->p->enabled || it->p->detector != DETECT_HOG))
                        it->p = NULL;
                if (it->p && it->p->name)
                        snprintf(it->st->policy, sizeof(it->st->policy), "%s", it->p->name);
                else if (it->m)
                        snprintf(it->st->policy, sizeof(it->st->policy), "%s", it->m->policy);
        }
        return 0;
}

static int collect(struct hog_plan *hp) {
        const struct plan_input *in = hp->ctx->in;
        struct plan_state *state = hp->ctx->state;
        size_t cap = 0, n0;
        int r;

        if (in->findings)
                cap += in->findings->n;
        cap += in->n_managed + state->n_targets;
        if (cap > 0)
                cap += snapshot_n_active(hp->snap);
        if (cap == 0)
                return 0;
        hp->items = calloc(cap, sizeof(*hp->items));
        if (!hp->items)
                return -ENOMEM;

        for (size_t i = 0; in->findings && i < in->findings->n; i++) {
                const struct finding *f = &in->findings->items[i];
                struct hog_item *it;

                if (f->kind != DETECT_HOG || f->n_members < 1)
                        continue;
                it = item_get(hp, &f->members[0], cap);
                if (it)
                        it->f = f;
        }
        for (size_t i = 0; i < in->n_managed; i++) {
                const struct managed *m = &in->managed[i];
                struct hog_item *it;

                if (m->type != ACT_AFFINITY || m->kind != DETECT_HOG)
                        continue;
                it = item_get(hp, &m->task, cap);
                if (it)
                        it->m = m;
        }
        for (size_t i = 0; i < state->n_targets; i++) {
                struct plan_target_state *st = state->targets[i];

                if (st->kind != DETECT_HOG || st->last.n_members < 1)
                        continue;
                (void) item_get(hp, &st->last.members[0], cap);
        }

        n0 = hp->n_items;
        r = resolve(hp, 0);
        if (r < 0)
                return r;
        collect_siblings(hp, cap);
        return resolve(hp, n0);
}

/* Update the evidence, the decayed migration rate and the hysteresis counters. */
static void judge(struct hog_plan *hp, struct hog_item *it) {
        const struct plan_input *in = hp->ctx->in;
        struct plan_target_state *st = it->st;
        const struct task *t = it->t;
        cpumask_t pcpus;

        it->util_min = detect_util_min(it->p, DETECT_HOG);
        it->mig_min = detect_migrations_min_per_s(it->p, DETECT_HOG);

        if (it->m) {
                it->pin_cpu = cpumask_single(&it->m->mask);
                if (!plan_managed_original(it->m, &it->base))
                        it->base = hp->topo->online;
        } else if (t)
                it->base = t->allowed;
        pcpus = plan_policy_cpus(it->p);
        it->cand = cpumask_and(&it->base, &hp->usable);
        it->cand = cpumask_and(&it->cand, &pcpus);

        if (!t)
                return;

        it->demand = task_demand(t);
        it->busy = it->demand >= it->util_min;

        if (t->have_rates) {
                uint64_t win = t->window_usec ?: hp->snap->window_usec ?: in->config->daemon.interval_usec;
                double win_s = (double) win / USEC_PER_SEC;
                double W = (double) detect_window_usec(it->p, DETECT_HOG) / USEC_PER_SEC;
                double hops;

                /* the hops since the last reading, which may span passes
                 * (a pass's window alone undercounted them so) */
                if (t->have_migrations)
                        hops = t->migrations_per_s *
                               (t->migrations_window_usec ? (double) t->migrations_window_usec / USEC_PER_SEC : win_s);
                else    /* no se.nr_migrations: count the CPU changes we can see */
                        hops = st->last.last_cpu >= 0 && t->last_cpu != st->last.last_cpu;
                if (W <= 0)
                        W = 1;
                st->migrations_decayed = st->migrations_decayed * exp(-win_s / W) + hops;
                {
                        double u = effect_proxy_for(DETECT_HOG, t, NULL), k = exp(-win_s / W);

                        if (isfinite(u)) {
                                st->util_avg = st->util_avg_n == 0 ? u : st->util_avg * k + u * (1 - k);
                                st->util_avg_n = MIN(st->util_avg_n + 1, 1000000u);
                        }
                }
                it->mig_rate = st->migrations_decayed / W;
                st->migrations_window_per_s = it->mig_rate;
        }
        it->migrating = it->mig_rate > it->mig_min;

        /* A pinned hog cannot migrate; it stays ours as long as it still wants a CPU. */
        it->present = it->busy && (it->m || it->migrating);

        /* evidence for affctl hogs / explain, fresh every interval */
        if (it->f)
                st->last = *it->f;
        else {
                st->last = (struct finding) {
                        .kind = DETECT_HOG,
                        .members[0] = it->id,
                        .n_members = 1,
                        .util = t->util,
                        .migrations_per_s = t->have_migrations ? t->migrations_per_s : 0,
                        .run_delay_ms_per_s = t->have_schedstat ? t->run_delay_ms_per_s : 0,
                        .cpus_seen = t->cpus_seen,
                };
                memcpy(st->last.comm, t->comm, sizeof(st->last.comm));
                st->last.comm[sizeof(st->last.comm) - 1] = 0;
        }
        st->last.policy = NULL;
        st->last.demand = it->demand;
        st->last.last_cpu = t->last_cpu;
}

/*
 * A hog set is handled as a whole: once one hog of a policy hops and is (or
 * is being) pinned, its busy siblings (siblings(): same policy, same
 * process or program) that happen to sit still are pinned too. Left alone,
 * a sibling can be moved onto the pinned hog's CPU by the balancer
 * whenever noise arrives, which is the stacking the pins exist to prevent.
 * Seen in tests/hogs-integration.sh here: with one of two hogs pinned to
 * CPU 0, the other sat on CPU 1 without migrating and was never managed,
 * so the set was half placed.
 */
static void companions(struct hog_plan *hp) {
        for (size_t i = 0; i < hp->n_items; i++) {
                struct hog_item *it = &hp->items[i];

                if (!it->t || !it->busy || it->present || !it->p)
                        continue;
                for (size_t j = 0; j < hp->n_items; j++)
                        if (j != i && siblings(it, &hp->items[j]) && hp->items[j].present &&
                            !hp->items[j].paired && (hp->items[j].m || hp->items[j].migrating)) {
                                it->present = true;
                                break;
                        }
        }
}

/* Hysteresis counters, once presence is final for this interval. */
static void count(struct hog_item *it) {
        struct plan_target_state *st = it->st;

        if (!it->t)
                return;
        plan_count_presence(&st->seen, &st->absent, it->present, PLAN_COUNT_CAP);
}

/*
 * One busy thread (or co-located pairs on one pin, one CPU's load) as
 * overcommit() counts it: the usable CPUs it can run on, and whether it is
 * a hog we pin or would pin within the hogs' CPUs (counted there, wherever
 * it runs now).
 */
struct busy_unit {
        cpumask_t mask;
        bool hog;
        bool pair;     /* co-located pairs' members on this pin */
};

/*
 * Can unit u have a CPU of its own in outside (the usable CPUs no hog
 * would be pinned to)? Kuhn's augmenting paths: a free CPU of its mask,
 * else one whose unit can move to another. free_cpus are the CPUs of
 * outside nobody has; owner[c] is the unit on each other CPU c of outside;
 * visited the CPUs this search has tried. A path visits each CPU once, so
 * it is at most as deep as outside is wide; a free CPU is taken before any
 * path is followed, so threads that share one wide mask cost a mask
 * operation each.
 */
static bool take_outside(const struct busy_unit *units, size_t u, const cpumask_t *outside, int *owner,
                         cpumask_t *free_cpus, cpumask_t *visited) {
        cpumask_t m = cpumask_and(&units[u].mask, free_cpus);
        int c = cpumask_next(&m, 0);

        if (c >= 0) {
                cpumask_clear(free_cpus, c);
                owner[c] = (int) u;
                return true;
        }
        m = cpumask_and(&units[u].mask, outside);
        m = cpumask_andnot(&m, visited);
        CPUMASK_FOREACH(d, &m) {
                if (cpumask_test(visited, d))
                        continue;
                cpumask_set(visited, d);
                if (take_outside(units, (size_t) owner[d], outside, owner, free_cpus, visited)) {
                        owner[d] = (int) u;
                        return true;
                }
        }
        return false;
}

/*
 * How many of the busy units compete for the hogs' CPUs U. A hog counts
 * there; so does a thread that can only run in U. A thread that can also
 * run on a usable CPU outside U counts only where those are taken: first
 * by the threads that can run nowhere else, then by as many of the others
 * as a matching of each to a CPU of its own mask can place (the kernel's
 * balancer puts a busy thread on an idle CPU it may use). Where U is every
 * usable CPU, as for hogs free to run anywhere, this is every busy thread.
 */
static int count_competing(const struct busy_unit *units, size_t n_units, const cpumask_t *U,
                           const cpumask_t *usable, int n_cpus, unsigned *ret) {
        cpumask_t outside = cpumask_andnot(usable, U), free_cpus = outside, visited;
        unsigned n = 0, room = cpumask_weight(&outside), taken = 0;
        _cleanup_free_ int *owner = NULL;

        if (room > 0) {
                owner = calloc((size_t) n_cpus, sizeof(*owner));
                if (!owner)
                        return -ENOMEM;
        }
        /* pass 0: the threads that cannot run in U take their CPUs first;
         * pass 1: those that can run in U, counted unless one is left */
        for (int pass = 0; pass < 2; pass++)
                for (size_t u = 0; u < n_units; u++) {
                        cpumask_t in = cpumask_and(&units[u].mask, U);

                        if (units[u].hog || (pass == 0) != cpumask_empty(&in))
                                continue;
                        if (taken < room && !cpumask_subset(&units[u].mask, U)) {
                                cpumask_zero(&visited);
                                if (take_outside(units, u, &outside, owner, &free_cpus, &visited)) {
                                        taken++;
                                        continue;
                                }
                        }
                        if (pass == 1)
                                n++;
                }
        for (size_t u = 0; u < n_units; u++)
                n += units[u].hog;
        *ret = n;
        return 0;
}

/* A hog this pass pins or keeps pinned, within its candidate CPUs (not a
 * pair's member, whatever hog state it still has: in_pair()). */
static bool hog_unit(const struct hog_item *it) {
        return it && it->busy && !it->paired && pinnable(it->p) && (it->m || it->present) &&
               !cpumask_empty(&it->cand);
}

/*
 * Invariant 2: count the busy threads that compete for the CPUs the hogs
 * could be pinned to. Every busy thread counts, not only the ones a hog
 * policy covers: an excluded or report-only hog still takes its share of a
 * CPU, and pinning around it is exactly the n+1 unfairness of [conservative-smp].
 * One that can run on a usable CPU outside them, free of other busy
 * threads, does not compete (count_competing()): with the hogs on two CPUs
 * of four (a taskset, CPUs=), a busy job on the third read as a third hog
 * and every pin was let go.
 */
static int overcommit(struct hog_plan *hp) {
        struct plan_state *state = hp->ctx->state;
        _cleanup_free_ struct busy_unit *units = NULL;
        size_t n_units = 0;
        cpumask_t U;
        unsigned n = 0;
        int r;

        cpumask_zero(&U);
        for (size_t i = 0; i < hp->n_items; i++) {
                const struct hog_item *it = &hp->items[i];

                if (it->t && it->busy && pinnable(it->p))
                        U = cpumask_or(&U, &it->cand);
        }

        if (!cpumask_empty(&U)) {
                units = calloc(MAX(snapshot_n_active(hp->snap), (size_t) 1), sizeof(*units));
                if (!units)
                        return -ENOMEM;
        }
        for (size_t i = 0; units && i < snapshot_n_active(hp->snap); i++) {
                const struct task *t = snapshot_active(hp->snap, i);
                const struct hog_item *it;
                const cpumask_t *pin;
                cpumask_t a;
                bool dup = false;

                if (!is_busy_thread(hp, t))
                        continue;
                it = item_find(hp, &t->id);
                if (hog_unit(it)) {
                        units[n_units++] = (struct busy_unit) { .mask = it->cand, .hog = true };
                        continue;
                }
                pin = pair_pin_of(hp, &t->id);
                a = cpumask_and(pin ?: &t->allowed, &hp->usable);
                if (cpumask_empty(&a))
                        continue;
                /* The members of a pair we co-located take turns on its
                 * CPU, and each reads busy by its run delay (the other's
                 * turn): one CPU's load, counted once for the pin, not
                 * once a member (so are pairs packed onto one CPU). A
                 * pair and one hog on 2 CPUs read 3 > 2, and the hog's pin
                 * was let go. */
                for (size_t j = 0; pin && j < n_units && !dup; j++)
                        dup = units[j].pair && cpumask_equal(&units[j].mask, &a);
                if (!dup)
                        units[n_units++] = (struct busy_unit) { .mask = a, .pair = pin != NULL };
        }

        if (units) {
                r = count_competing(units, n_units, &U, &hp->usable, hp->topo->n_cpus, &n);
                if (r < 0)
                        return r;
        }

        hp->overcommit_hogs = n;
        hp->overcommit_cpus = cpumask_weight(&U);
        hp->overcommit_now = !cpumask_empty(&U) && n > hp->overcommit_cpus;
        plan_count_presence(&state->hog_overcommit_seen, &state->hog_overcommit_absent, hp->overcommit_now,
                            PLAN_COUNT_CAP);
        state->hog_overcommit_hogs = hp->overcommit_hogs;
        state->hog_overcommit_cpus = hp->overcommit_cpus;
        hp->overcommit_release = hp->overcommit_now && state->hog_overcommit_seen >= hp->K;
        return 0;
}

/* Where other busy threads sit: to be avoided (soft) or never used (hard). */
static void occupancy(struct hog_plan *hp) {
        const struct plan_input *in = hp->ctx->in;
        int n = hp->topo->n_cpus;

        /* a busy thread has non-zero rates, so it is in the active list (when
         * the floor is 0 every thread would count: walk them all) */
        bool all = !(hp->floor > 0);
        size_t n_walk = all ? hp->snap->n_tasks : snapshot_n_active(hp->snap);

        for (size_t i = 0; i < n_walk; i++) {
                const struct task *t = all ? &hp->snap->tasks[i] : snapshot_active(hp->snap, i);
                cpumask_t a;
                int c;

                if (!is_busy_thread(hp, t))
                        continue;
                if (managed_of(hp, &t->id))
                        continue; /* our hog pins are claimed by review_pins(), other pins counted below */

                a = cpumask_and(&t->allowed, &hp->usable);
                c = cpumask_single(&a);
                if (c >= 0 && c < n) {
                        /* pinned by someone else (or a cpuset of one CPU): that CPU is taken */
                        hp->hard[c]++;
                        continue;
                }
                if (t->last_cpu >= 0 && t->last_cpu < n)
                        hp->soft[t->last_cpu]++;
        }

        /* pair and spread pins in force (one CPU; a pair's span, Span=, is all of
         * its CPUs): a hog there would push them away */
        for (size_t j = 0; j < in->n_managed; j++) {
                const struct managed *m = &in->managed[j];
                int c = cpumask_single(&m->mask);

                if (m->type != ACT_AFFINITY || m->kind == DETECT_HOG)
                        continue;
                if (c >= 0 && c < n)
                        hp->soft[c]++;
                else if (m->kind == DETECT_PAIR)
                        CPUMASK_FOREACH(d, &m->mask) {
                                if (d >= n)
                                        break;
                                hp->soft[d]++;
                        }
        }
}

static bool cpu_taken(const struct hog_plan *hp, int c) {
        return hp->ctx->cpu_claim[c] || hp->hard[c];
}

/*
 * Taken CPUs per core, and claimed and usable CPUs per node and per LLC,
 * counted once per pick over the usable CPUs. Each candidate CPU used to
 * scan the usable CPUs itself (for its SMT siblings, its node, its LLC):
 * O(CPUs²) a pick and, with hogs growing with the machine, O(CPUs³) a
 * pass. bench/scale measured 3.5-3.8 ms of planning a pass on the 256-CPU
 * fixture with 64 hogs and 127 ms on the 1,024-CPU one with 256 hogs.
 */
static void domain_counts(struct hog_plan *hp) {
        int n = hp->topo->n_cpus;
        int *arrays[] = { hp->core_taken, hp->node_claimed, hp->node_total, hp->llc_claimed, hp->llc_total };

        for (size_t k = 0; k < ELEMENTSOF(arrays); k++)
                memset(arrays[k], 0, (size_t) n * sizeof(int));
        CPUMASK_FOREACH(x, &hp->usable) {
                const struct topo_cpu *tc;
                bool taken;

                if (x >= n)
                        break;
                tc = &hp->topo->cpus[x];
                taken = cpu_taken(hp, x);
                hp->node_total[plan_id_index(tc->node, n)]++;
                hp->llc_total[plan_id_index(tc->llc_id, n)]++;
                if (taken) {
                        hp->core_taken[plan_id_index(tc->core_id, n)]++;
                        hp->node_claimed[plan_id_index(tc->node, n)]++;
                        hp->llc_claimed[plan_id_index(tc->llc_id, n)]++;
                }
        }
}

struct cpu_score {
        int smt;                  /* taken SMT siblings */
        int capacity;             /* topo_cpu.capacity: higher is better */
        int soft;                 /* other busy threads there */
        unsigned node_c, node_t;  /* node load as claimed/total */
        unsigned llc_c, llc_t;
        int distance;             /* 0 same CPU as last, 1 same core, 2 same LLC, 3 same node, 4 else */
        int cpu;
};

/* <0 if a is better */
static int score_cmp(const struct cpu_score *a, const struct cpu_score *b) {
        uint64_t x, y;

        /* two hogs on SMT siblings share a core for good; a busy thread that is
         * not pinned will be moved off by the kernel's balancer */
        if (a->smt != b->smt)
                return a->smt < b->smt ? -1 : 1;
        /* A pin is for good too: a hog pinned to an E core (or a little
         * one) stays on the slower core for as long as it is pinned. After
         * smt, so that a free E core comes before a P core's second thread,
         * the order Linux's ITMT priorities give busy tasks. */
        if (a->capacity != b->capacity)
                return a->capacity > b->capacity ? -1 : 1;
        if (a->soft != b->soft)
                return a->soft < b->soft ? -1 : 1;
        x = (uint64_t) a->node_c * b->node_t;
        y = (uint64_t) b->node_c * a->node_t;
        if (x != y)
                return x < y ? -1 : 1;
        x = (uint64_t) a->llc_c * b->llc_t;
        y = (uint64_t) b->llc_c * a->llc_t;
        if (x != y)
                return x < y ? -1 : 1;
        if (a->distance != b->distance)
                return a->distance < b->distance ? -1 : 1;
        return a->cpu < b->cpu ? -1 : a->cpu > b->cpu;
}

static int pick_cpu(struct hog_plan *hp, const struct hog_item *it) {
        const struct topology *topo = hp->topo;
        int n = topo->n_cpus, last = it->t ? it->t->last_cpu : -1;
        struct cpu_score best = { .cpu = -1 };

        if (last >= n)
                last = -1;

        domain_counts(hp);
        CPUMASK_FOREACH(c, &it->cand) {
                struct cpu_score s = { .cpu = c };

                if (c >= n)
                        break;
                s.capacity = topo->cpus[c].capacity;
                if (cpu_taken(hp, c))
                        continue;

                /* the hog itself was counted where it last ran */
                s.soft = hp->soft[c] - (c == last && !it->m ? 1 : 0);
                if (s.soft < 0)
                        s.soft = 0;
                /* c itself is not taken: the core's taken CPUs are its siblings */
                s.smt = hp->core_taken[plan_id_index(topo->cpus[c].core_id, n)];
                s.node_c = (unsigned) hp->node_claimed[plan_id_index(topo->cpus[c].node, n)];
                s.node_t = (unsigned) MAX(hp->node_total[plan_id_index(topo->cpus[c].node, n)], 1);
                s.llc_c = (unsigned) hp->llc_claimed[plan_id_index(topo->cpus[c].llc_id, n)];
                s.llc_t = (unsigned) MAX(hp->llc_total[plan_id_index(topo->cpus[c].llc_id, n)], 1);
                if (last < 0)
                        s.distance = 4;
                else if (c == last)
                        s.distance = 0;
                else if (topo->cpus[c].core_id == topo->cpus[last].core_id)
                        s.distance = 1;
                else if (topo->cpus[c].llc_id == topo->cpus[last].llc_id)
                        s.distance = 2;
                else if (topo->cpus[c].node == topo->cpus[last].node)
                        s.distance = 3;
                else
                        s.distance = 4;

                if (best.cpu < 0 || score_cmp(&s, &best) < 0)
                        best = s;
        }
        return best.cpu;
}

static void fill_action(struct action *a, const struct hog_item *it, enum action_verb verb,
                        const cpumask_t *mask, const char *policy, const char *reason) {
        *a = (struct action) {
                .type = ACT_AFFINITY,
                .verb = verb,
                .task = it->id,
                .mask = *mask,
                .evidence_before = it->st->util_avg_n > 0 ? it->st->util_avg
                                   : it->t && it->t->have_rates ? effect_proxy_for(DETECT_HOG, it->t, NULL) : 0,
        };
        snprintf(a->policy, sizeof(a->policy), "%s", policy ?: "");
        snprintf(a->reason, sizeof(a->reason), "%s", reason);
}

static int release(struct hog_plan *hp, struct hog_item *it, bool move, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int release(struct hog_plan *hp, struct hog_item *it, bool move, const char *fmt, ...) {
        struct plan_ctx *ctx = hp->ctx;
        char reason[160];
        struct action a;
        va_list ap;
        int r;

        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);

        fill_action(&a, it, VERB_RELEASE, &it->m->mask, it->m->policy, reason);
        r = plan_emit(ctx, &a);
        if (r < 0)
                return r;

        it->keep = false;
        it->move = move;
        it->st->cpu = -1;
        if (!move)
                /* no re-pin right after a release: that is how flapping starts */
                plan_cooldown_arm(ctx, it->st);
        plan_set_state(it->st, PLAN_RELEASED, "%s", reason);
        return 0;
}

static int cmp_managed_age(const void *a, const void *b) {
        const struct hog_item *x = *(const struct hog_item * const *) a, *y = *(const struct hog_item * const *) b;

        if (x->m->since_usec != y->m->since_usec)
                return x->m->since_usec < y->m->since_usec ? -1 : 1;
        return x->id.tid < y->id.tid ? -1 : x->id.tid > y->id.tid;
}

/* Pins in force: keep, release, or release-and-move. Oldest first, so the older pin keeps a contested CPU. */
static int review_pins(struct hog_plan *hp) {
        _cleanup_free_ struct hog_item **order = NULL;
        size_t n = 0;
        int r;

        order = calloc(hp->n_items ?: 1, sizeof(*order));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < hp->n_items; i++)
                if (hp->items[i].m)
                        order[n++] = &hp->items[i];
        qsort_safe(order, n, sizeof(*order), cmp_managed_age);

        for (size_t i = 0; i < n; i++) {
                struct hog_item *it = order[i];
                const struct task *t = it->t;
                int c = it->pin_cpu;
                char buf[64];

                if (!t) {
                        r = release(hp, it, false, "hog exited");
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!pinnable(it->p)) {
                        r = release(hp, it, false, "policy %s no longer pins hogs", it->m->policy);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!cpumask_equal(&t->allowed, &it->m->mask)) {
                        if (c < 0 || !cpumask_test(&t->allowed, c)) {
                                /* cpuset change or hotplug fallback: the kernel reset the mask */
                                it->base = t->allowed;
                                it->cand = cpumask_and(&it->base, &hp->usable);
                                {
                                        cpumask_t pc = plan_policy_cpus(it->p);
                                        it->cand = cpumask_and(&it->cand, &pc);
                                }
                                r = release(hp, it, true, "CPU %d left the task's allowed CPUs (now %s)", c,
                                            cpumask_format_list(&t->allowed, buf, sizeof(buf)) ?: "?");
                        } else
                                /* someone ran taskset: theirs now (the applier leaves it as they set it) */
                                r = release(hp, it, false, "affinity changed by someone else (now %s)",
                                            cpumask_format_list(&t->allowed, buf, sizeof(buf)) ?: "?");
                        if (r < 0)
                                return r;
                        continue;
                }
                if (c < 0 || c >= hp->topo->n_cpus || !cpumask_test(&hp->usable, c)) {
                        r = release(hp, it, true, "CPU %d is no longer usable (offline, isolated, nohz_full or a container's)", c);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!cpumask_test(&it->cand, c)) {
                        r = release(hp, it, true, "CPU %d is outside the policy's CPUs now", c);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (hp->overcommit_release) {
                        r = release(hp, it, false, "left alone: %u hogs > %u usable CPUs", hp->overcommit_hogs,
                                    hp->overcommit_cpus);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (it->st->absent >= hp->K) {
                        r = release(hp, it, false, "no longer a hog: demand %.0f%% < %.0f%% for %u intervals",
                                    it->demand * 100, it->util_min * 100, it->st->absent);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (cpu_taken(hp, c)) {
                        r = release(hp, it, true, "CPU %d is taken by another hog", c);
                        if (r < 0)
                                return r;
                        continue;
                }

                it->keep = true;
                it->st->cpu = c;
                hp->ctx->cpu_claim[c] = 1;
                if (it->st->absent > 0)
                        plan_set_state(it->st, PLAN_PINNED, "pinned to %d (not a hog for %u/%u intervals)", c,
                                  it->st->absent, hp->K);
                else
                        plan_set_state(it->st, PLAN_PINNED, "pinned to %d", c);
        }
        return 0;
}

static int cmp_place_order(const void *a, const void *b) {
        const struct hog_item *x = *(const struct hog_item * const *) a, *y = *(const struct hog_item * const *) b;

        /* moves first: they were placed before and must not be stranded */
        if (x->move != y->move)
                return x->move ? -1 : 1;
        if (x->st->seen != y->st->seen)
                return x->st->seen > y->st->seen ? -1 : 1;
        return x->id.tid < y->id.tid ? -1 : x->id.tid > y->id.tid;
}

static void explain_idle(struct hog_plan *hp, struct hog_item *it) {
        uint64_t W = detect_window_usec(it->p, DETECT_HOG);

        if (!it->t)
                plan_set_state(it->st, PLAN_GONE, "exited");
        else if (!it->busy)
                plan_set_state(it->st, PLAN_WATCHING, "not a hog: demand %.0f%% < %.0f%%", it->demand * 100,
                          it->util_min * 100);
        else if (!it->migrating)
                plan_set_state(it->st, PLAN_WATCHING, "not migrating: %.2f/s <= %.2f/s over %" PRIu64 "s",
                          it->mig_rate, it->mig_min, W / USEC_PER_SEC);
}

/* The hogs to place this pass, in placement order; the others are explained. */
static size_t place_order(struct hog_plan *hp, struct hog_item **order) {
        size_t n = 0;

        for (size_t i = 0; i < hp->n_items; i++) {
                struct hog_item *it = &hp->items[i];

                if (it->keep)
                        continue;
                if ((it->move && it->busy) || (it->present && !it->m)) {
                        order[n++] = it;
                        continue;
                }
                if (!it->m)
                        explain_idle(hp, it);
        }
        qsort_safe(order, n, sizeof(*order), cmp_place_order);
        return n;
}

/* Why a hog is not pinned this pass, as its state; false if nothing holds it back. */
static bool place_held_back(struct hog_plan *hp, struct hog_item *it) {
        struct plan_ctx *ctx = hp->ctx;
        const struct plan_input *in = ctx->in;
        struct plan_target_state *st = it->st;
        const char *why = NULL;
        char akey[128];

        if (it->paired) {
                plan_set_state(st, PLAN_LEFT_ALONE_PAIR, "wakes or is woken at pair rates (a pair "
                               "member or a busy client): not an independent hog");
                return true;
        }
        if (!pinnable(it->p)) {
                plan_set_state(st, PLAN_REPORT, "report only (policy %s)", st->policy[0] ? st->policy : "?");
                return true;
        }
        if (hp->overcommit_now) {
                plan_set_state(st, PLAN_LEFT_ALONE, "left alone: %u hogs > %u usable CPUs", hp->overcommit_hogs,
                          hp->overcommit_cpus);
                return true;
        }
        if (!it->move && st->seen < hp->K) {
                plan_set_state(st, PLAN_WATCHING, "watching %u/%u", st->seen, hp->K);
                return true;
        }
        snprintf(akey, sizeof(akey), "task:%d:%" PRIu64, (int) it->id.tid, it->id.start_time);
        if (plan_state_blocked(ctx->state, st->key, akey, in->now_usec, &why)) {
                char w[sizeof(st->why)];

                snprintf(w, sizeof(w), "%s", why); /* why may be st->why itself */
                plan_set_state(st, PLAN_BLOCKED, "%s", w);
                return true;
        }
        if (!it->move && st->cooldown_until_usec > in->now_usec) {
                plan_set_state(st, PLAN_COOLDOWN, "cooldown: %" PRIu64 "s left",
                          (st->cooldown_until_usec - in->now_usec + USEC_PER_SEC - 1) / USEC_PER_SEC);
                return true;
        }
        if (ctx->actions_left == 0) {
                plan_set_state(st, PLAN_WATCHING, "action budget used up (MaxActionsPerInterval=%u)",
                          in->config->daemon.max_actions_per_interval);
                return true;
        }
        return false;
}

/* Pin the hog to CPU c, and claim the CPU for this pass. */
static int place_pin(struct hog_plan *hp, struct hog_item *it, int c) {
        struct plan_ctx *ctx = hp->ctx;
        struct plan_target_state *st = it->st;
        char reason[160], cpus[64];
        cpumask_t one = cpumask_of(c);
        struct action a;
        int r;

        snprintf(reason, sizeof(reason),
                 "hog: util %.0f%% demand %.0f%% migrations %.2f/s on %s -> CPU %d",
                 it->t->util * 100, it->demand * 100, it->mig_rate,
                 cpumask_format_list(&st->last.cpus_seen, cpus, sizeof(cpus)) ?: "?", c);
        fill_action(&a, it, VERB_SET, &one, st->policy, reason);
        r = plan_emit(ctx, &a);
        if (r < 0)
                return r;

        ctx->cpu_claim[c] = 1;
        it->placed = true;
        st->cpu = c;
        plan_cooldown_arm(ctx, st);
        if (it->t->last_cpu >= 0 && it->t->last_cpu < hp->topo->n_cpus && hp->soft[it->t->last_cpu] > 0)
                hp->soft[it->t->last_cpu]--;
        plan_set_state(st, PLAN_PINNING, "pinning to %d", c);
        return 0;
}

static int place(struct hog_plan *hp) {
        _cleanup_free_ struct hog_item **order = NULL;
        size_t n;
        int r;

        order = calloc(hp->n_items ?: 1, sizeof(*order));
        if (!order)
                return -ENOMEM;
        n = place_order(hp, order);

        for (size_t i = 0; i < n; i++) {
                struct hog_item *it = order[i];
                char cpus[64];
                int c;

                if (!it->t || place_held_back(hp, it))
                        continue;
                c = pick_cpu(hp, it);
                if (c < 0) {
                        plan_set_state(it->st, PLAN_LEFT_ALONE, "no free CPU in %s",
                                  cpumask_format_list(&it->cand, cpus, sizeof(cpus)) ?: "?");
                        continue;
                }
                r = place_pin(hp, it, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * Hogs we did not pin still use a CPU: pairs and groups must not land there
 * (a pair next to a hog: -45 %). A CPU counts as a hog's when the busy
 * threads left alone there use a hog's worth of it together (their util
 * adds up to the policy's UtilMin=): one hog, or two stacked at half a CPU
 * each. Demand alone is not use: with four MariaDB clients on two CPUs
 * (sysbench --threads=4), a connection thread whose pair was not yet seen
 * waited enough to reach 90 % demand at 47 % util, and its claim sent every
 * pair to the other CPU, or moved two placed pairs onto it (four pairs on
 * one CPU: 0.93 of stock).
 */
static int claim_unpinned(struct hog_plan *hp) {
        int n = hp->topo->n_cpus, *claim = hp->ctx->cpu_claim;
        _cleanup_free_ double *used = calloc(MAX(n, 1), sizeof(double));
        _cleanup_free_ double *need = calloc(MAX(n, 1), sizeof(double));

        if (!used || !need)
                return -ENOMEM;
        for (int c = 0; c < n; c++)
                need[c] = 1.0;
        for (size_t i = 0; i < hp->n_items; i++) {
                const struct hog_item *it = &hp->items[i];
                int c;

                if (!it->t || !it->busy || it->keep || it->placed || it->paired || !it->t->have_rates)
                        continue;
                c = it->t->last_cpu;
                if (c < 0 || c >= n)
                        continue;
                used[c] += it->t->util;
                need[c] = MIN(need[c], it->util_min);
        }
        for (int c = 0; c < n; c++)
                if (used[c] > 0 && used[c] >= need[c] && !claim[c])
                        claim[c] = 1;
        return 0;
}

int plan_hogs(struct plan_ctx *ctx) {
        const struct plan_input *in;
        struct hog_plan hp = {};
        int n, r;

        if (!ctx || !ctx->in || !ctx->in->snap || !ctx->in->snap->topo || !ctx->cpu_claim)
                return -EINVAL;
        in = ctx->in;

        hp.ctx = ctx;
        hp.snap = in->snap;
        hp.topo = in->snap->topo;
        hp.usable = snapshot_usable(hp.snap);
        hp.K = MAX(in->config->daemon.hysteresis_intervals, 1u);
        n = hp.topo->n_cpus;

        hp.floor = DETECT_HOG_UTIL_MIN_DEFAULT;
        for (size_t i = 0; i < in->config->n_policies; i++) {
                const struct policy *p = &in->config->policies[i];
                if (p->enabled && p->detector == DETECT_HOG)
                        hp.floor = MIN(hp.floor, detect_util_min(p, DETECT_HOG));
        }

        r = collect(&hp);
        if (r < 0)
                goto finish;

        hp.hard = calloc(n, sizeof(int));
        hp.soft = calloc(n, sizeof(int));
        hp.core_taken = calloc(n, sizeof(int));
        hp.node_claimed = calloc(n, sizeof(int));
        hp.node_total = calloc(n, sizeof(int));
        hp.llc_claimed = calloc(n, sizeof(int));
        hp.llc_total = calloc(n, sizeof(int));
        if (!hp.hard || !hp.soft || !hp.core_taken || !hp.node_claimed || !hp.node_total || !hp.llc_claimed ||
            !hp.llc_total) {
                r = -ENOMEM;
                goto finish;
        }

        for (size_t i = 0; i < hp.n_items; i++)
                judge(&hp, &hp.items[i]);
        companions(&hp);
        for (size_t i = 0; i < hp.n_items; i++)
                count(&hp.items[i]);

        r = overcommit(&hp);
        if (r < 0)
                goto finish;
        occupancy(&hp);

        r = review_pins(&hp);
        if (r < 0)
                goto finish;
        r = place(&hp);
        if (r < 0)
                goto finish;

        r = claim_unpinned(&hp);

finish:
        free(hp.items);
        free(hp.hard);
        free(hp.soft);
        free(hp.core_taken);
        free(hp.node_claimed);
        free(hp.node_total);
        free(hp.llc_claimed);
        free(hp.llc_total);
        return r;
}
