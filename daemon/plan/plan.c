/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Planner core: target state with hysteresis, cool-downs and the
 * do-not-retry list, the action list, and plan_run(), which calls the
 * parts in priority order with one shared CPU claim map:
 *
 *   hogs (plan-hog.c) → pairs (plan-pair.c) → spread groups (plan-spread.c)
 *   → levers (plan-levers.c)
 *
 * Hogs go first because two hogs on one CPU is the worst placement there
 * is ([conservative-smp]); pairs must not land on a hog's CPU (-45 % measured here),
 * and spread groups take what is left. Releases are emitted before sets
 * so a CPU a release frees is free when the next set lands.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/plan.h"

/* Forget a target nobody looked at for this many passes (and nothing pending on it). */
#define PLAN_GC_GENERATIONS 30

struct plan_state *plan_state_new(void) {
        return calloc(1, sizeof(struct plan_state));
}

struct plan_state *plan_state_free(struct plan_state *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_targets; i++)
                free(s->targets[i]);
        free(s->targets);
        free(s);
        return NULL;
}

struct plan_target_state *plan_state_find(const struct plan_state *s, const char *key) {
        if (!s || !key)
                return NULL;
        for (size_t i = 0; i < s->n_targets; i++)
                if (streq(s->targets[i]->key, key))
                        return s->targets[i];
        return NULL;
}

bool plan_target_involves(const struct plan_target_state *st, pid_t tid) {
        int a, b;
        char c;

        if (!st || tid <= 0)
                return false;
        /* the finding keys of detect.c (finding_key) and action_target_key()'s "task:" */
        if (sscanf(st->key, "pair:%d:%d%c", &a, &b, &c) == 2)
                return a == tid || b == tid;
        if (sscanf(st->key, "hog:%d:", &a) == 1 || sscanf(st->key, "rundelay:%d:", &a) == 1 ||
            sscanf(st->key, "task:%d:", &a) == 1)
                return a == tid;
        return false;
}

static enum detector kind_of_key(const char *key) {
        if (strncmp(key, "hog:", 4) == 0)
                return DETECT_HOG;
        if (strncmp(key, "pair:", 5) == 0)
                return DETECT_PAIR;
        if (strncmp(key, "spread:", 7) == 0)
                return DETECT_SPREAD;
        if (strncmp(key, "rundelay:", 9) == 0)
                return DETECT_RUNDELAY;
        if (strncmp(key, "steal", 5) == 0)
                return DETECT_STEAL;
        return _DETECT_MAX;
}

struct plan_target_state *plan_state_get(struct plan_state *s, const char *key) {
        struct plan_target_state *t;

        if (!s || !key || strlen(key) >= sizeof(t->key))
                return NULL;

        t = plan_state_find(s, key);
        if (t) {
                t->generation = s->generation;
                return t;
        }

        if (s->n_targets >= s->allocated) {
                size_t a = s->allocated ? s->allocated * 2 : 16;
                struct plan_target_state **n = reallocarray(s->targets, a, sizeof(*n));
                if (!n)
                        return NULL;
                s->targets = n;
                s->allocated = a;
        }
        t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        strcpy(t->key, key);
        t->kind = kind_of_key(key);
        t->cpu = -1;
        t->last.last_cpu = -1;
        t->generation = s->generation;
        strcpy(t->state, plan_state_to_string(PLAN_WATCHING));
        s->targets[s->n_targets++] = t;
        return t;
}

/* No retry of t before until_usec (or a later time it had), for reason:
 * shown as its why now, and kept as the block's own (plan_state_blocked())
 * while later passes say other things of it. The one place a block is set. */
static void hold_until(struct plan_target_state *t, uint64_t until_usec, const char *reason) {
        t->no_retry_until_usec = MAX(t->no_retry_until_usec, until_usec);
        snprintf(t->block_why, sizeof(t->block_why), "%s", reason);
        memcpy(t->why, t->block_why, sizeof(t->why));
}

int plan_state_block(struct plan_state *s, const char *key, uint64_t until_usec, const char *why) {
        struct plan_target_state *t;
        char reason[sizeof(t->block_why)];

        if (!s || !key)
                return -EINVAL;
        t = plan_state_get(s, key);
        if (!t)
                return -ENOMEM;
        snprintf(reason, sizeof(reason), "not retried: %s", why ?: "effect check failed");
        hold_until(t, until_usec, reason);
        return 0;
}

const char *plan_undo_key(const struct action *a, char *buf, size_t size) {
        char pair[64];

        if (a->kind != DETECT_PAIR || !a->partner.tid || a->work_pair[0].tid ||
            !pair_key(&a->task, &a->partner, pair, sizeof(pair)))
                return buf;
        snprintf(buf, size, "%s", pair);
        return buf;
}

bool plan_state_blocked(const struct plan_state *s, const char *key, const char *action_key,
                        uint64_t now_usec, const char **ret_why) {
        const char *keys[] = { key, action_key };

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const struct plan_target_state *t = plan_state_find(s, keys[i]);

                if (t && t->no_retry_until_usec > now_usec) {
                        if (ret_why)
                                *ret_why = t->block_why[0] ? t->block_why : t->why;
                        return true;
                }
        }
        return false;
}

static bool task_key(const struct task_id *id, char *buf, size_t size) {
        return action_target_key(&(struct action) { .type = ACT_AFFINITY, .task = *id }, buf, size) != NULL;
}

/* The "task:" state of thread id, made if new; NULL with *ret_err set. */
static struct plan_target_state *task_state_get(struct plan_state *s, const struct task_id *id, int *ret_err) {
        struct plan_target_state *t;
        char key[128];

        if (!s || !id || !task_key(id, key, sizeof(key))) {
                *ret_err = -EINVAL;
                return NULL;
        }
        t = plan_state_get(s, key);
        if (!t) {
                *ret_err = -ENOMEM;
                return NULL;
        }
        t->task = *id;
        return t;
}

int plan_state_second_look(struct plan_state *s, const struct action *a, uint64_t until_usec, const char *why,
                           double placed_work) {
        const struct task_id *ids[2] = { &a->task, a->partner.tid ? &a->partner : NULL };
        struct plan_target_state *pair;
        char key[64];
        int r = 0;

        for (size_t i = 0; i < ELEMENTSOF(ids) && ids[i]; i++) {
                struct plan_target_state *t = task_state_get(s, ids[i], &r);

                if (!t)
                        return r;
                t->looked_again = true;
                hold_until(t, until_usec, why ?: "released for a second look");
        }
        pair = ids[1] && pair_key(ids[0], ids[1], key, sizeof(key)) ? plan_state_find(s, key) : NULL;
        if (pair && pair->cooldown_until_usec > until_usec)
                pair->cooldown_until_usec = until_usec;
        if (pair && !a->work_pair[0].tid && a->evidence_basis == EVIDENCE_IO_BYTES) {
                pair->look_placed_work = placed_work > 0 ? placed_work : 0;
                pair->look_until_usec = until_usec;
        }
        return 0;
}

uint64_t plan_state_look_until(const struct plan_state *s, const struct task_id *id, uint64_t now_usec) {
        const struct plan_target_state *t;
        char key[128];

        if (!s || !id || !task_key(id, key, sizeof(key)))
                return 0;
        t = plan_state_find(s, key);
        return t && t->looked_again && t->no_retry_until_usec > now_usec ? t->no_retry_until_usec : 0;
}

bool plan_state_looked_again(const struct plan_state *s, const struct task_id *id) {
        const struct plan_target_state *t;
        char key[128];

        if (!s || !id || !task_key(id, key, sizeof(key)))
                return false;
        t = plan_state_find(s, key);
        return t && t->looked_again;      /* the key holds the start time: a reused TID is another */
}

int plan_state_foreign(struct plan_state *s, const struct task_id *id) {
        int r = 0;
        struct plan_target_state *t = task_state_get(s, id, &r);

        if (!t)
                return r;
        t->foreign_changes++;
        /* The first time leaves the state alone: a block the effect check set
         * keeps its reason, and the thread is someone else's for now anyway
         * (the matcher sees it narrowed until they put it back). */
        if (t->foreign_changes >= PLAN_FOREIGN_MAX) {
                hold_until(t, UINT64_MAX, PLAN_FOREIGN_WHY);
                plan_set_state(t, PLAN_LEFT_ALONE, "%s", PLAN_FOREIGN_WHY);
        }
        return (int) MIN(t->foreign_changes, (unsigned) INT_MAX);
}

/*
 * Targets that count foreign changes outlive the garbage collection (the
 * second change may come an hour after the first), as do those looked at
 * again (a second second look would make it a loop), and go when their thread
 * does: a reused TID has another start time, so it would never match, but
 * the list must not grow with every thread that ever exited.
 */
static void plan_state_forget_exited(struct plan_state *s, const struct snapshot *snap) {
        size_t j = 0;

        for (size_t i = 0; i < s->n_targets; i++) {
                struct plan_target_state *t = s->targets[i];

                if ((t->foreign_changes > 0 || t->looked_again) && !snapshot_find_id(snap, &t->task)) {
                        free(t);
                        continue;
                }
                s->targets[j++] = t;
        }
        s->n_targets = j;
}

static void plan_state_gc(struct plan_state *s, uint64_t now_usec) {
        size_t j = 0;

        for (size_t i = 0; i < s->n_targets; i++) {
                struct plan_target_state *t = s->targets[i];

                if (s->generation - t->generation > PLAN_GC_GENERATIONS && t->foreign_changes == 0 && !t->looked_again &&
                    t->cooldown_until_usec <= now_usec && t->no_retry_until_usec <= now_usec) {
                        free(t);
                        continue;
                }
                s->targets[j++] = t;
        }
        s->n_targets = j;
}

void action_list_clear(struct action_list *l) {
        if (!l)
                return;
        free(l->items);
        l->items = NULL;
        l->n = l->allocated = 0;
}

int action_list_add(struct action_list *l, const struct action *a) {
        if (!l || !a)
                return -EINVAL;
        if (l->n >= l->allocated) {
                size_t n = l->allocated ? l->allocated * 2 : 16;
                struct action *items = reallocarray(l->items, n, sizeof(*items));
                if (!items)
                        return -ENOMEM;
                l->items = items;
                l->allocated = n;
        }
        l->items[l->n++] = *a;
        return 0;
}

int plan_emit(struct plan_ctx *ctx, const struct action *a) {
        const struct policy *p = config_find_policy(ctx->in->config, a->policy);
        struct action c = *a;
        int r;

        /* The applier keeps the detector with the change, so each planner part
         * recognises its own pins later, even after its policy is gone. */
        c.kind = p ? p->detector : DETECT_ALWAYS;
        r = action_list_add(ctx->out, &c);
        if (r < 0)
                return r;
        if (a->verb == VERB_SET && ctx->actions_left > 0)
                ctx->actions_left--;
        return 0;
}

void plan_cooldown_arm(const struct plan_ctx *ctx, struct plan_target_state *st) {
        st->cooldown_until_usec = ctx->in->now_usec + ctx->in->config->daemon.cooldown_usec;
        st->cooldown_dry_run = ctx->in->dry_run;
}

/* Out of dry-run: the cool-downs its reported changes armed are over. */
static void cooldowns_end_dry_run(struct plan_state *s) {
        for (size_t i = 0; i < s->n_targets; i++)
                if (s->targets[i]->cooldown_dry_run) {
                        s->targets[i]->cooldown_until_usec = 0;
                        s->targets[i]->cooldown_dry_run = false;
                }
}

cpumask_t plan_policy_cpus(const struct policy *p) {
        cpumask_t all, m, one;

        all = cpumask_first_n(CPUMASK_MAX);
        if (p && !cpumask_empty(&p->cpus_mask))
                return p->cpus_mask;
        if (!p || !p->cpus || !p->cpus[0])
                return all;

        cpumask_zero(&m);
        for (char **s = p->cpus; *s; s++) {
                if (cpumask_parse_list(*s, &one) < 0)
                        return all; /* config validation rejects this; be permissive, not stuck */
                m = cpumask_or(&m, &one);
        }
        return m;
}

bool plan_managed_original(const struct managed *m, cpumask_t *ret) {
        cpumask_t o;

        if (!m || !m->original[0])
                return false;
        if (cpumask_parse_list(m->original, &o) < 0 || cpumask_empty(&o))
                return false;
        *ret = o;
        return true;
}

/* Stable: releases keep their order, sets keep theirs (a move is RELEASE then SET). */
static int partition_releases_first(struct action_list *out, size_t from) {
        size_t n = out->n - from, k = 0;
        _cleanup_free_ struct action *tmp = NULL;

        if (n < 2)
                return 0;
        tmp = malloc(n * sizeof(*tmp));
        if (!tmp)
                return -ENOMEM;
        for (size_t i = from; i < out->n; i++)
                if (out->items[i].verb == VERB_RELEASE)
                        tmp[k++] = out->items[i];
        for (size_t i = from; i < out->n; i++)
                if (out->items[i].verb != VERB_RELEASE)
                        tmp[k++] = out->items[i];
        memcpy(out->items + from, tmp, n * sizeof(*tmp));
        return 0;
}

/*
 * Which detector led to a change in force: the one the action carried
 * (the applier reports it, the journal keeps it). An entry read as
 * DETECT_ALWAYS from a journal written before the detector was recorded
 * takes its policy's Detector=. Without this the parts would not
 * recognise their own pins.
 */
static enum detector managed_kind(const struct config *c, const struct managed *m) {
        const struct policy *p;

        if (m->kind >= 0 && m->kind < _DETECT_MAX && m->kind != DETECT_ALWAYS)
                return m->kind;
        p = config_find_policy(c, m->policy);
        if (p && p->detector >= 0 && p->detector < _DETECT_MAX)
                return p->detector;
        return m->kind;
}

/*
 * A sched_ext scheduler is enabled: it places tasks itself, and a mask of
 * ours would only narrow where it may put them, against its own model of
 * the machine. So every affinity change in force is given back (releases
 * are never held back by the budget) and no part that sets affinity runs.
 * Their targets say why, and their hysteresis starts again afterwards:
 * what was seen under the BPF scheduler says nothing about the stock one.
 */
static int plan_yield_affinity(struct plan_ctx *ctx) {
        const struct plan_input *in = ctx->in;
        struct plan_state *s = ctx->state;
        int r;

        for (size_t i = 0; i < in->n_managed; i++) {
                const struct managed *m = &in->managed[i];
                struct action a;

                if (m->type != ACT_AFFINITY)
                        continue;
                a = (struct action) {
                        .type = ACT_AFFINITY,
                        .verb = VERB_RELEASE,
                        .task = m->task,
                        .mask = m->mask,
                        .partner = m->partner,
                };
                snprintf(a.policy, sizeof(a.policy), "%s", m->policy);
                snprintf(a.reason, sizeof(a.reason), "%s", COEXIST_SCHED_EXT_WHY);
                r = plan_emit(ctx, &a);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_targets; i++) {
                struct plan_target_state *t = s->targets[i];

                if (t->kind != DETECT_HOG && t->kind != DETECT_PAIR && t->kind != DETECT_SPREAD)
                        continue;
                t->seen = 0;
                t->absent = 0;
                t->cpu = -1;
                plan_set_state(t, PLAN_LEFT_ALONE, "%s", COEXIST_SCHED_EXT_WHY);
        }
        return 0;
}

int plan_run(struct plan_state *state, const struct plan_input *in_orig, struct action_list *out) {
        _cleanup_free_ struct managed *managed = NULL;
        _cleanup_free_ int *claim = NULL;
        struct plan_input input, *in = &input;
        struct plan_ctx ctx;
        size_t from;
        int r;

        if (!state || !in_orig || !in_orig->snap || !in_orig->config || !out)
                return -EINVAL;
        if (!in_orig->snap->topo || in_orig->snap->topo->n_cpus <= 0)
                return -EINVAL;

        input = *in_orig;
        if (in_orig->n_managed > 0) {
                managed = calloc(in_orig->n_managed, sizeof(*managed));
                if (!managed)
                        return -ENOMEM;
                for (size_t i = 0; i < in_orig->n_managed; i++) {
                        managed[i] = in_orig->managed[i];
                        managed[i].kind = managed_kind(in_orig->config, &managed[i]);
                }
                input.managed = managed;
        }

        state->generation++;
        state->recheck_soon = false;
        from = out->n;

        claim = calloc(in->snap->topo->n_cpus, sizeof(*claim));
        if (!claim)
                return -ENOMEM;

        ctx = (struct plan_ctx) {
                .state = state,
                .in = in,
                .out = out,
                .cpu_claim = claim,
                .actions_left = in->config->daemon.max_actions_per_interval,
        };

        plan_state_forget_exited(state, in->snap);
        if (!in->dry_run)
                cooldowns_end_dry_run(state);

        if (in->snap->coexist.sched_ext) {
                r = plan_yield_affinity(&ctx);
                if (r < 0)
                        return r;
        } else {
                r = plan_hogs(&ctx);
                if (r < 0)
                        return r;
                r = plan_pairs(&ctx);
                if (r < 0)
                        return r;
                r = plan_spread(&ctx);
                if (r < 0)
                        return r;
        }
        /* Weights, sched_features and sysctls set no placement: a BPF
         * scheduler keeps placing as it likes (and may read cpu.weight). */
        r = plan_levers(&ctx);
        if (r < 0)
                return r;

        r = partition_releases_first(out, from);
        if (r < 0)
                return r;

        plan_state_gc(state, in->now_usec);
        return 0;
}

bool plan_recheck_soon(const struct plan_state *s) {
        return s && s->recheck_soon;
}

void plan_count_presence(unsigned *seen, unsigned *absent, bool present, unsigned cap) {
        if (present) {
                *seen = plan_count_up(*seen, cap);
                *absent = 0;
        } else {
                *absent = plan_count_up(*absent, cap);
                *seen = 0;
        }
}

/* The one body of plan_set_state() and plan_set_pair_state(): the state's string, and why. */
__attribute__((format(printf, 3, 0)))
static void state_set(struct plan_target_state *st, const char *state, const char *fmt, va_list ap) {
        char why[sizeof(st->why)];

        /* through a copy: a block's reason passed in may be st->why itself */
        vsnprintf(why, sizeof(why), fmt, ap);
        snprintf(st->state, sizeof(st->state), "%s", state);
        memcpy(st->why, why, sizeof(why));
}

void plan_set_state(struct plan_target_state *st, enum plan_state_id state, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        state_set(st, plan_state_to_string(state), fmt, ap);
        va_end(ap);
}

void plan_set_pair_state(struct plan_target_state *st, enum pair_state state, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        state_set(st, pair_state_to_string(state), fmt, ap);
        va_end(ap);
}
