/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Spread-group planner ([conservative-smp]): the threads of a spread policy
 * that each use part of a CPU and keep migrating are placed one per CPU,
 * or, when there are more of them than free CPUs, balanced so that the
 * members' util on any one CPU adds up to at most one CPU. The seed: 4
 * processes at ~40 % took 1019 s left alone (CPU0 at 80 %, the others at
 * 30 %, constant migration) and 842 s one per CPU.
 *
 * Runs after hogs and pairs and never uses a CPU they claimed. Releases
 * the whole group when it shrinks below two busy members, when the
 * machine gets busy (members' fixed places then cost more than the
 * scheduler's freedom: sum of util over the usable CPUs above
 * SPREAD_MACHINE_BUSY), or when an unplaced group stops migrating, each
 * after Hysteresis= intervals; a member whose CPU went away or was taken
 * by a hog is moved at once.
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

/* Mean util per usable CPU above which a group is left to the scheduler ("~0.9"). */
#define SPREAD_MACHINE_BUSY 0.9

struct member {
        struct task_id id;
        const struct task *t;
        const struct managed *m;
        cpumask_t cand;
        int pin_cpu;        /* CPU of our pin in force, -1 */
        int new_cpu;        /* planned CPU, -1 */
        bool keep, release, move;
        double util;
};

struct group {
        struct plan_target_state *st;
        const struct policy *p;
        const struct finding *f;
        char name[64];
        struct member members[FINDING_MAX_MEMBERS * 2];
        size_t n;
};

static bool spreadable(const struct policy *p) {
        return p && p->enabled && p->detector == DETECT_SPREAD && p->action == ACTION_SPREAD;
}

static struct member *member_get(struct group *g, const struct task_id *id) {
        for (size_t i = 0; i < g->n; i++)
                if (task_id_equal(&g->members[i].id, id))
                        return &g->members[i];
        if (g->n >= ELEMENTSOF(g->members))
                return NULL;
        g->members[g->n] = (struct member) { .id = *id, .pin_cpu = -1, .new_cpu = -1 };
        return &g->members[g->n++];
}

static struct group *group_get(struct group **groups, size_t *n, size_t cap, const char *name) {
        for (size_t i = 0; i < *n; i++)
                if (streq((*groups)[i].name, name))
                        return &(*groups)[i];
        if (*n >= cap)
                return NULL;
        memset(&(*groups)[*n], 0, sizeof(struct group));
        snprintf((*groups)[*n].name, sizeof((*groups)[*n].name), "%s", name);
        return &(*groups)[(*n)++];
}

static int emit(struct plan_ctx *ctx, const struct group *g, const struct member *mb, enum action_verb verb,
                const cpumask_t *mask, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int emit(struct plan_ctx *ctx, const struct group *g, const struct member *mb, enum action_verb verb,
                const cpumask_t *mask, const char *fmt, ...) {
        struct action a = {
                .type = ACT_AFFINITY,
                .verb = verb,
                .task = mb->id,
                .mask = *mask,
                .evidence_before = mb->t && mb->t->have_rates ? effect_proxy_for(DETECT_HOG, mb->t, NULL) : 0,
        };
        va_list ap;

        snprintf(a.policy, sizeof(a.policy), "%s", mb->m ? mb->m->policy : g->name);
        va_start(ap, fmt);
        vsnprintf(a.reason, sizeof(a.reason), fmt, ap);
        va_end(ap);
        return plan_emit(ctx, &a);
}

static int release_all(struct plan_ctx *ctx, struct group *g, const char *why) {
        int r;

        for (size_t i = 0; i < g->n; i++) {
                struct member *mb = &g->members[i];

                if (!mb->m || mb->release)
                        continue;
                r = emit(ctx, g, mb, VERB_RELEASE, &mb->m->mask, "spread %s: %s", g->name, why);
                if (r < 0)
                        return r;
                mb->release = true;
                mb->keep = false;
        }
        return 0;
}

static bool any_managed(const struct group *g) {
        for (size_t i = 0; i < g->n; i++)
                if (g->members[i].m && !g->members[i].release)
                        return true;
        return false;
}

/* Sum of util of every thread over the usable CPUs: how busy the machine is. */
static double machine_load(const struct snapshot *s, const cpumask_t *usable) {
        double sum = 0;
        unsigned n = cpumask_weight(usable);

        for (size_t i = 0; i < snapshot_n_active(s); i++)
                if (snapshot_active(s, i)->have_rates)
                        sum += snapshot_active(s, i)->util;
        return n > 0 ? sum / n : 1.0;
}

static int cmp_util_desc(const void *a, const void *b) {
        const struct member *x = *(const struct member * const *) a, *y = *(const struct member * const *) b;

        if (x->util != y->util)
                return x->util > y->util ? -1 : 1;
        return x->id.tid < y->id.tid ? -1 : x->id.tid > y->id.tid;
}

/*
 * Where to put member mb given the group's load per CPU so far: an empty
 * CPU first (one per CPU), then away from the members already placed: not
 * on an SMT sibling of one, then the fastest CPUs (a hybrid's P cores
 * before its E cores), then on the node, then in the LLC with the
 * fewest (the order plan-hog.c spreads hogs in: a node's memory bandwidth
 * and an LLC are what members next to each other share), then where it
 * runs now; a CPU it fits on (sum of util <= 1). -1 if none.
 */
#define SPREAD_RANKS 6
static bool rank_less(const int a[SPREAD_RANKS], const int b[SPREAD_RANKS]) {
        for (int k = 0; k < SPREAD_RANKS; k++)
                if (a[k] != b[k])
                        return a[k] < b[k];
        return false;
}

static int pick(const struct topology *topo, const cpumask_t *avail, const double *load, const int *count,
                const struct member *mb) {
        int n = topo->n_cpus, last = mb->t ? mb->t->last_cpu : -1, best = -1;
        int best_rank[SPREAD_RANKS] = {};

        if (last >= n)
                last = -1;

        CPUMASK_FOREACH(c, &mb->cand) {
                int rank[SPREAD_RANKS] = {};

                if (c >= n)
                        break;
                if (!cpumask_test(avail, c))
                        continue;
                if (load[c] + mb->util > 1.0 + 1e-9)
                        continue;
                rank[0] = count[c];                     /* one per CPU before stacking */
                CPUMASK_FOREACH(x, avail) {
                        if (x >= n)
                                break;
                        if (x == c || count[x] == 0)
                                continue;
                        if (topo->cpus[x].core_id == topo->cpus[c].core_id)
                                rank[1] += count[x];    /* then not next to a member on SMT */
                        if (topo->cpus[x].node == topo->cpus[c].node)
                                rank[3] += count[x];    /* then spread over nodes */
                        if (topo->cpus[x].llc_id == topo->cpus[c].llc_id)
                                rank[4] += count[x];    /* then over LLCs */
                }
                rank[2] = -topo->cpus[c].capacity;      /* then the fastest CPUs */
                rank[5] = c == last ? 0 : 1;            /* then stay where it runs */

                if (best < 0 || rank_less(rank, best_rank)) {
                        best = c;
                        memcpy(best_rank, rank, sizeof(rank));
                }
        }
        return best;
}

/* One group's pass: what the steps of plan_group() share. */
struct spread_pass {
        struct plan_ctx *ctx;
        struct group *g;
        const cpumask_t *usable;
        double load_per_cpu;            /* the machine's util per usable CPU (machine_load()) */
        unsigned hyst;                  /* Hysteresis= intervals, at least 1 */
        double util_min, mig_min;       /* the policy's Util= and Migrations= */
        cpumask_t pcpus;                /* the policy's CPUs= */
        size_t n_busy;                  /* members at Util= or above */
        double combined;                /* their util together */
        double rate;                    /* migrations per busy member per s, decayed over Window= */
        bool busy_machine, present, managed;
        double *load;                   /* per CPU: util of the members kept or placed there */
        int *count;                     /* per CPU: members kept or placed there */
        cpumask_t avail;                /* CPUs the group may use */
        struct member *order[FINDING_MAX_MEMBERS * 2]; /* members to place, biggest first */
        size_t n_order;
};

/* Members: evidence, and the CPUs each may go to. */
static void members_read(struct spread_pass *sp, double win_s) {
        const struct snapshot *snap = sp->ctx->in->snap;
        struct group *g = sp->g;
        double hops = 0, window_s;
        struct plan_target_state *st = g->st;

        for (size_t i = 0; i < g->n; i++) {
                struct member *mb = &g->members[i];
                const struct task *t = snapshot_find_task(snap, mb->id.tid);
                cpumask_t base;

                mb->t = t && task_id_equal(&t->id, &mb->id) ? t : NULL;
                if (mb->m) {
                        mb->pin_cpu = cpumask_single(&mb->m->mask);
                        if (!plan_managed_original(mb->m, &base))
                                base = snap->topo->online;
                } else
                        base = mb->t ? mb->t->allowed : snap->topo->online;
                mb->cand = cpumask_and(&base, sp->usable);
                mb->cand = cpumask_and(&mb->cand, &sp->pcpus);
                if (!mb->t)
                        continue;
                mb->util = mb->t->util;
                if (mb->util >= sp->util_min) {
                        sp->n_busy++;
                        sp->combined += mb->util;
                }
                if (!mb->m && mb->t->have_migrations)
                        hops += mb->t->migrations_per_s * win_s;
        }

        /* the group's migrations per busy member over the window, decayed (as for hogs) */
        window_s = (double) detect_window_usec(g->p, DETECT_SPREAD) / USEC_PER_SEC;
        if (window_s <= 0)
                window_s = 1;
        st->migrations_decayed = st->migrations_decayed * exp(-win_s / window_s) +
                                 (sp->n_busy ? hops / sp->n_busy : 0);
        sp->rate = st->migrations_decayed / window_s;
        st->migrations_window_per_s = sp->rate;
}

/* Evidence for affctl hogs, with every member we track (pinned ones too). */
static void evidence_set(struct spread_pass *sp) {
        struct group *g = sp->g;
        struct plan_target_state *st = g->st;

        if (g->f)
                st->last = *g->f;
        else
                st->last = (struct finding) { .kind = DETECT_SPREAD, .last_cpu = -1 };
        st->last.policy = NULL;
        st->last.n_members = 0;
        st->last.combined_util = sp->combined;
        for (size_t i = 0; i < g->n && st->last.n_members < FINDING_MAX_MEMBERS; i++)
                if (g->members[i].t && (g->members[i].util >= sp->util_min || g->members[i].m))
                        st->last.members[st->last.n_members++] = g->members[i].id;
        st->last.util = sp->n_busy ? sp->combined / sp->n_busy : 0;
}

/* Present this interval (a spread group worth spreading): count for hysteresis. */
static void presence_count(struct spread_pass *sp) {
        struct plan_target_state *st = sp->g->st;
        bool migrating = sp->rate > sp->mig_min;

        sp->busy_machine = sp->load_per_cpu > SPREAD_MACHINE_BUSY;
        sp->managed = any_managed(sp->g);
        sp->present = spreadable(sp->g->p) && sp->n_busy >= 2 && !sp->busy_machine && (sp->managed || migrating);
        plan_count_presence(&st->seen, &st->absent, sp->present, PLAN_COUNT_CAP);
}

/* Whole-group releases: the policy no longer spreads, or the group has
 * been absent Hysteresis= intervals. 1: released; 0: not; negative errno. */
static int group_release(struct spread_pass *sp) {
        struct plan_target_state *st = sp->g->st;
        char why[128];
        int r;

        if (sp->managed && !spreadable(sp->g->p)) {
                r = release_all(sp->ctx, sp->g, "policy no longer spreads");
                if (r < 0)
                        return r;
                plan_set_state(st, PLAN_RELEASED, "policy %s no longer spreads", sp->g->name);
                return 1;
        }
        if (!sp->managed || st->absent < sp->hyst)
                return 0;
        if (sp->n_busy < 2)
                snprintf(why, sizeof(why), "group shrank to %zu busy thread%s", sp->n_busy,
                         sp->n_busy == 1 ? "" : "s");
        else if (sp->busy_machine)
                snprintf(why, sizeof(why), "machine busy: %.0f%% per CPU > %.0f%%", sp->load_per_cpu * 100,
                         SPREAD_MACHINE_BUSY * 100);
        else
                snprintf(why, sizeof(why), "no longer a spread group");
        r = release_all(sp->ctx, sp->g, why);
        if (r < 0)
                return r;
        plan_cooldown_arm(sp->ctx, st);
        plan_set_state(st, PLAN_RELEASED, "%s", why);
        return 1;
}

/* CPUs this group may use: not a hog's, not a pair's, not another group's. */
static void avail_init(struct spread_pass *sp, int n) {
        sp->avail = *sp->usable;
        sp->avail = cpumask_and(&sp->avail, &sp->pcpus);
        for (int c = 0; c < n; c++)
                if (sp->ctx->cpu_claim[c])
                        cpumask_clear(&sp->avail, c);
}

/* Member pins in force: keep, or release (and move). */
static int pins_review(struct spread_pass *sp, int n) {
        struct group *g = sp->g;
        int r;

        for (size_t i = 0; i < g->n; i++) {
                struct member *mb = &g->members[i];
                int c = mb->pin_cpu;

                if (!mb->m)
                        continue;
                if (!mb->t) {
                        r = emit(sp->ctx, g, mb, VERB_RELEASE, &mb->m->mask, "spread %s: member exited", g->name);
                        if (r < 0)
                                return r;
                        mb->release = true;
                        continue;
                }
                if (!cpumask_equal(&mb->t->allowed, &mb->m->mask)) {
                        bool moved_by_kernel = c < 0 || !cpumask_test(&mb->t->allowed, c);

                        r = emit(sp->ctx, g, mb, VERB_RELEASE, &mb->m->mask, "spread %s: %s", g->name,
                                 moved_by_kernel ? "pinned CPU left the task's allowed CPUs"
                                                 : "affinity changed by someone else");
                        if (r < 0)
                                return r;
                        mb->release = true;
                        if (moved_by_kernel) {
                                mb->move = true;
                                mb->cand = cpumask_and(&mb->t->allowed, sp->usable);
                                mb->cand = cpumask_and(&mb->cand, &sp->pcpus);
                        }
                        continue;
                }
                if (c < 0 || c >= n || !cpumask_test(&sp->avail, c) || !cpumask_test(&mb->cand, c) ||
                    sp->load[c] + mb->util > 1.0 + 1e-9) {
                        r = emit(sp->ctx, g, mb, VERB_RELEASE, &mb->m->mask,
                                 "spread %s: CPU %d no longer usable for the group", g->name, c);
                        if (r < 0)
                                return r;
                        mb->release = true;
                        mb->move = true;
                        continue;
                }
                mb->keep = true;
                sp->load[c] += mb->util;
                sp->count[c]++;
        }
        return 0;
}

/* Nothing of ours in force: say why the group is left alone, or wait for
 * Hysteresis=, a block of the effect check, or the cool-down. True: not
 * placed this pass, and the state says why. */
static bool not_yet(struct spread_pass *sp) {
        const struct plan_input *in = sp->ctx->in;
        struct plan_target_state *st = sp->g->st;
        const struct policy *p = sp->g->p;
        const char *why = NULL;

        if (any_managed(sp->g))
                return false;
        if (!sp->present) {
                if (!p || !p->enabled)
                        plan_set_state(st, PLAN_GONE, "policy %s is gone or disabled", sp->g->name);
                else if (!spreadable(p))
                        plan_set_state(st, PLAN_REPORT, "report only (policy %s)", sp->g->name);
                else if (sp->n_busy < 2)
                        plan_set_state(st, PLAN_WATCHING, "%zu busy thread%s, spreading needs 2", sp->n_busy,
                                       sp->n_busy == 1 ? "" : "s");
                else if (sp->busy_machine)
                        plan_set_state(st, PLAN_LEFT_ALONE, "machine busy: %.0f%% per CPU > %.0f%%",
                                       sp->load_per_cpu * 100, SPREAD_MACHINE_BUSY * 100);
                else
                        plan_set_state(st, PLAN_WATCHING, "not migrating: %.2f/s per thread <= %.2f/s", sp->rate,
                                       sp->mig_min);
                return true;
        }
        if (st->seen < sp->hyst) {
                plan_set_state(st, PLAN_WATCHING, "watching %u/%u", st->seen, sp->hyst);
                return true;
        }
        if (plan_state_blocked(sp->ctx->state, st->key, NULL, in->now_usec, &why)) {
                char w[sizeof(st->why)];

                snprintf(w, sizeof(w), "%s", why); /* why may be st->why itself */
                plan_set_state(st, PLAN_BLOCKED, "%s", w);
                return true;
        }
        if (st->cooldown_until_usec > in->now_usec) {
                plan_set_state(st, PLAN_COOLDOWN, "cooldown: %" PRIu64 "s left",
                               (st->cooldown_until_usec - in->now_usec + USEC_PER_SEC - 1) / USEC_PER_SEC);
                return true;
        }
        return false;
}

/* The busy members without a pin (and the ones to move), biggest first. */
static void order_collect(struct spread_pass *sp) {
        struct group *g = sp->g;

        for (size_t i = 0; i < g->n; i++) {
                struct member *mb = &g->members[i];
                char akey[128];

                if (!mb->t || mb->keep || mb->util < sp->util_min)
                        continue;
                if (mb->release && !mb->move)
                        continue;
                if (!sp->present && !mb->move)
                        continue; /* hysteresis holds the pins in force; nothing new meanwhile */
                snprintf(akey, sizeof(akey), "task:%d:%" PRIu64, (int) mb->id.tid, mb->id.start_time);
                if (plan_state_blocked(sp->ctx->state, NULL, akey, sp->ctx->in->now_usec, NULL))
                        continue; /* an effect check undid it: it stays the scheduler's */
                sp->order[sp->n_order++] = mb;
        }
        qsort_safe(sp->order, sp->n_order, sizeof(sp->order[0]), cmp_util_desc);
}

/* A CPU for every member to place, or none: a group half placed is worse
 * than one left alone. 1: does not fit, released; 0: all fit; negative errno. */
static int fit_all(struct spread_pass *sp) {
        const struct topology *topo = sp->ctx->in->snap->topo;
        char cpus[64];
        int r;

        for (size_t i = 0; i < sp->n_order; i++) {
                struct member *mb = sp->order[i];
                int c = pick(topo, &sp->avail, sp->load, sp->count, mb);

                if (c < 0) {
                        bool had = any_managed(sp->g);

                        for (size_t j = 0; j < i; j++)
                                sp->order[j]->new_cpu = -1;
                        r = release_all(sp->ctx, sp->g, "group no longer fits");
                        if (r < 0)
                                return r;
                        /* as any release of the group: members near the line fit
                         * one pass and not the next, and were pinned and let go
                         * pass after pass */
                        if (had)
                                plan_cooldown_arm(sp->ctx, sp->g->st);
                        plan_set_state(sp->g->st, PLAN_LEFT_ALONE, "does not fit: %zu threads, %.0f%% together on %s",
                                       sp->n_busy, sp->combined * 100,
                                       cpumask_format_list(&sp->avail, cpus, sizeof(cpus)) ?: "?");
                        return 1;
                }
                mb->new_cpu = c;
                sp->load[c] += mb->util;
                sp->count[c]++;
        }
        return 0;
}

/* Pin the members placed, as far as the action budget goes. */
static int pins_set(struct spread_pass *sp) {
        for (size_t i = 0; i < sp->n_order; i++) {
                struct member *mb = sp->order[i];
                cpumask_t one = cpumask_of(mb->new_cpu);
                int r;

                if (sp->ctx->actions_left == 0)
                        break;
                r = emit(sp->ctx, sp->g, mb, VERB_SET, &one,
                         "spread %s: util %.0f%%, group %.0f%% on %zu threads -> CPU %d", sp->g->name,
                         mb->util * 100, sp->combined * 100, sp->n_busy, mb->new_cpu);
                if (r < 0)
                        return r;
                mb->keep = true;
        }
        return 0;
}

/* Claim what the group uses, so levers and later groups see it, and say where it is. */
static void claim_and_report(struct spread_pass *sp, int n) {
        struct plan_target_state *st = sp->g->st;
        size_t pending = 0;
        cpumask_t used;
        char cpus[64];

        for (int c = 0; c < n; c++)
                if (sp->count[c] > 0 && !sp->ctx->cpu_claim[c])
                        sp->ctx->cpu_claim[c] = 3;

        cpumask_zero(&used);
        for (int c = 0; c < n; c++)
                if (sp->count[c] > 0)
                        cpumask_set(&used, c);
        for (size_t i = 0; i < sp->n_order; i++)
                if (!sp->order[i]->keep)
                        pending++;
        if (pending > 0)
                plan_set_state(st, PLAN_SPREADING, "%zu threads on %s, %zu waiting for the action budget",
                               sp->n_busy, cpumask_format_list(&used, cpus, sizeof(cpus)) ?: "?", pending);
        else if (sp->n_order > 0)
                plan_set_state(st, PLAN_SPREADING, "spreading %zu threads over %s", sp->n_busy,
                               cpumask_format_list(&used, cpus, sizeof(cpus)) ?: "?");
        else
                plan_set_state(st, PLAN_SPREAD, "%zu threads on %s", sp->n_busy,
                               cpumask_format_list(&used, cpus, sizeof(cpus)) ?: "?");
        st->last.cpus_seen = used;
}

/*
 * One group, in order: read its members and count its presence; release
 * the whole group, or review the pins in force; wait (not_yet()); place
 * the rest all or nothing, pin them, claim their CPUs.
 */
static int plan_group(struct plan_ctx *ctx, struct group *g, const cpumask_t *usable, double load_per_cpu,
                      unsigned hyst) {
        const struct plan_input *in = ctx->in;
        int n = in->snap->topo->n_cpus, r;
        uint64_t win = in->snap->window_usec ?: in->config->daemon.interval_usec;
        _cleanup_free_ double *load = calloc(n, sizeof(*load));
        _cleanup_free_ int *count = calloc(n, sizeof(*count));
        struct spread_pass sp = {
                .ctx = ctx,
                .g = g,
                .usable = usable,
                .load_per_cpu = load_per_cpu,
                .hyst = hyst,
                .util_min = detect_util_min(g->p, DETECT_SPREAD),
                .mig_min = detect_migrations_min_per_s(g->p, DETECT_SPREAD),
                .pcpus = plan_policy_cpus(g->p),
                .load = load,
                .count = count,
        };

        members_read(&sp, (double) win / USEC_PER_SEC);
        evidence_set(&sp);
        presence_count(&sp);
        r = group_release(&sp);
        if (r != 0)
                return MIN(r, 0);
        if (!load || !count)
                return -ENOMEM;
        avail_init(&sp, n);
        r = pins_review(&sp, n);
        if (r < 0)
                return r;
        if (not_yet(&sp))
                return 0;
        order_collect(&sp);
        r = fit_all(&sp);
        if (r != 0)
                return MIN(r, 0);
        r = pins_set(&sp);
        if (r < 0)
                return r;
        claim_and_report(&sp, n);
        return 0;
}

/* The groups of this pass: from the findings, our pins in force, and the
 * groups the planner remembers (*ret_n of them; *ret NULL when none). */
static int groups_collect(struct plan_ctx *ctx, struct group **ret, size_t *ret_n) {
        const struct plan_input *in = ctx->in;
        _cleanup_free_ struct group *groups = NULL;
        size_t n_groups = 0, cap = 0;

        *ret = NULL;
        *ret_n = 0;
        for (size_t i = 0; in->findings && i < in->findings->n; i++)
                cap += in->findings->items[i].kind == DETECT_SPREAD;
        for (size_t i = 0; i < in->n_managed; i++)
                cap += in->managed[i].kind == DETECT_SPREAD;
        for (size_t i = 0; i < ctx->state->n_targets; i++)
                cap += ctx->state->targets[i]->kind == DETECT_SPREAD;
        if (cap == 0)
                return 0;
        groups = calloc(cap, sizeof(*groups));
        if (!groups)
                return -ENOMEM;

        for (size_t i = 0; in->findings && i < in->findings->n; i++) {
                const struct finding *f = &in->findings->items[i];
                struct group *g;

                if (f->kind != DETECT_SPREAD || !f->policy || !f->policy->name)
                        continue;
                g = group_get(&groups, &n_groups, cap, f->policy->name);
                if (!g)
                        continue;
                g->f = f;
                g->p = f->policy;
                for (size_t j = 0; j < f->n_members; j++)
                        (void) member_get(g, &f->members[j]);
        }
        for (size_t i = 0; i < in->n_managed; i++) {
                const struct managed *m = &in->managed[i];
                struct group *g;
                struct member *mb;

                if (m->type != ACT_AFFINITY || m->kind != DETECT_SPREAD)
                        continue;
                g = group_get(&groups, &n_groups, cap, m->policy);
                if (!g)
                        continue;
                mb = member_get(g, &m->task);
                if (mb)
                        mb->m = m;
        }
        for (size_t i = 0; i < ctx->state->n_targets; i++) {
                const struct plan_target_state *st = ctx->state->targets[i];
                struct group *g;

                if (st->kind != DETECT_SPREAD || strlen(st->key) <= 7)
                        continue;
                g = group_get(&groups, &n_groups, cap, st->key + 7);
                if (!g)
                        continue;
                /* members seen before: pinned ones may no longer show up in findings */
                for (size_t j = 0; j < st->last.n_members; j++)
                        (void) member_get(g, &st->last.members[j]);
        }
        *ret = TAKE_PTR(groups);
        *ret_n = n_groups;
        return 0;
}

int plan_spread(struct plan_ctx *ctx) {
        const struct plan_input *in;
        _cleanup_free_ struct group *groups = NULL;
        size_t n_groups = 0;
        cpumask_t usable;
        double load;
        unsigned hyst;
        int r;

        if (!ctx || !ctx->in || !ctx->in->snap || !ctx->in->snap->topo || !ctx->cpu_claim)
                return -EINVAL;
        in = ctx->in;
        r = groups_collect(ctx, &groups, &n_groups);
        if (r < 0 || n_groups == 0)
                return r;

        usable = snapshot_usable(in->snap);
        load = machine_load(in->snap, &usable);
        hyst = MAX(in->config->daemon.hysteresis_intervals, 1u);

        for (size_t i = 0; i < n_groups; i++) {
                struct group *g = &groups[i];
                char key[128];
                bool alive = false;

                if (!g->p)
                        g->p = config_find_policy(in->config, g->name);
                snprintf(key, sizeof(key), "spread:%s", g->name);

                for (size_t j = 0; j < g->n && !alive; j++) {
                        const struct task *t = snapshot_find_task(in->snap, g->members[j].id.tid);
                        alive = (t && task_id_equal(&t->id, &g->members[j].id)) || g->members[j].m;
                }
                /* a group with nothing left is left to age out of the state */
                g->st = g->f || alive ? plan_state_get(ctx->state, key) : plan_state_find(ctx->state, key);
                if (!g->st)
                        return -ENOMEM;
                if (!alive && !g->f) {
                        plan_set_state(g->st, PLAN_GONE, "no members left");
                        continue;
                }
                snprintf(g->st->policy, sizeof(g->st->policy), "%s", g->name);

                r = plan_group(ctx, g, &usable, load, hyst);
                if (r < 0)
                        return r;
        }
        return 0;
}
