/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Planning the system-wide levers: cgroup CPU weight, sched_features and
 * scheduler sysctls. Pure: no I/O.
 *
 *   Detector=steal  + Action=features|sysctl: apply the policy's profile
 *       once steal has been above the policy's threshold for Hysteresis
 *       intervals, or for its Window= if that is longer (detect-steal.c,
 *       [fair-sleepers]), release it once it has been below that long.
 *   Detector=always + Action=features|sysctl: apply at once while the
 *       policy is enabled (and, if it has a [Match], while some task
 *       matches); release after Hysteresis intervals without a match.
 *   Detector=always + Action=weight: CPUWeight= on the cgroup of every task
 *       the policy matches (task->proc->cgroup; never the root cgroup); a
 *       cgroup whose tasks stop matching is released after Hysteresis
 *       intervals. Where two weight policies claim one cgroup, the lower
 *       Priority= number wins ([wake-affine]: weights are for a group that the
 *       group scheduling starves).
 *   Any lever this module set whose policy is gone, disabled, or no longer
 *   lists that entry (or value) is released at once: a reload that drops a
 *   profile must not leave the system changed.
 *
 * Per-policy hysteresis lives in plan_state under "levers:<policy>", per
 * cgroup under the action's target key ("cgroup:<path>"), which is also
 * the key plan_state_block() uses for "do not retry until".
 * Releases are never held back by MaxActionsPerInterval; sets are.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "detect/match.h"
#include "plan/plan.h"

#define KEY_MAX 128   /* struct managed.key, struct plan_target_state.key */

/* Same default as detect-steal.c, only for the release message. */
#define STEAL_MIN_DEFAULT 0.10

/* line_fmt() for reason and why lines, where truncation is fine (keeps -Wformat-truncation for real buffers). */
static void line_fmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line_fmt(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

struct weight_claim {
        const char *cgroup;           /* points into a proc_info */
        const struct policy *policy;
        const struct task *example;   /* a task that made the claim, for the reason */
};

struct levers_plan {
        struct plan_ctx *ctx;
        const struct config *c;
        unsigned hysteresis;
        struct weight_claim *claims;
        size_t n_claims;
        char **done_keys;             /* keys released or set this interval */
};

static bool is_lever_type(enum action_type t) {
        return t == ACT_CGROUP_WEIGHT || t == ACT_SCHED_FEATURE || t == ACT_SYSCTL;
}

static int lever_type_of(enum policy_action a) {
        switch (a) {
        case ACTION_WEIGHT:
                return ACT_CGROUP_WEIGHT;
        case ACTION_FEATURES:
                return ACT_SCHED_FEATURE;
        case ACTION_SYSCTL:
                return ACT_SYSCTL;
        default:
                return -1;
        }
}

/* Does this module drive the policy? */
static bool policy_is_lever(const struct policy *p) {
        if (!p->enabled)
                return false;
        if (p->detector == DETECT_ALWAYS)
                return lever_type_of(p->action) >= 0;
        if (p->detector == DETECT_STEAL)
                return p->action == ACTION_FEATURES || p->action == ACTION_SYSCTL;
        return false;
}

static bool match_is_empty(const struct policy *p) {
        const struct policy_match *m = &p->match;

        /* Kernel=no / Realtime=no only narrow to ordinary tasks, which always exist. */
        return strv_length(m->comm) == 0 && strv_length(m->exe) == 0 && strv_length(m->cmdline) == 0 &&
               strv_length(m->cgroup) == 0 && strv_length(m->unit) == 0 && strv_length(m->user) == 0 &&
               m->kthreads != MATCH_YES && m->realtime != MATCH_YES;
}

/* A task that a lever policy may act for: a user task in Scope=, not excluded by any Action=exclude policy. */
static bool task_eligible(const struct config *c, const struct task *t) {
        if (task_is_kthread(t) || !t->proc || !match_in_scope(c, t))
                return false;
        for (size_t i = 0; i < c->n_policies; i++) {
                const struct policy *x = &c->policies[i];
                if (x->enabled && x->action == ACTION_EXCLUDE && policy_matches(x, t))
                        return false;
        }
        return true;
}

static bool cgroup_is_root(const char *cg) {
        return !cg || cg[strspn(cg, "/")] == '\0';
}

static bool done_has(struct levers_plan *lp, const char *key) {
        return strv_contains(lp->done_keys, key);
}

static int done_add(struct levers_plan *lp, const char *key) {
        return strv_push(&lp->done_keys, key);
}

static const struct managed *managed_by_key(struct levers_plan *lp, const char *key) {
        const struct plan_input *in = lp->ctx->in;

        for (size_t i = 0; i < in->n_managed; i++)
                if (is_lever_type(in->managed[i].type) && streq(in->managed[i].key, key))
                        return &in->managed[i];
        return NULL;
}

/* ---- what a policy wants ---- */

/* Parse a feature entry "NAME" / "NO_NAME". */
static void feature_entry(const char *e, const char **ret_name, bool *ret_enable) {
        if (strncmp(e, "NO_", 3) == 0) {
                *ret_name = e + 3;
                *ret_enable = false;
        } else {
                *ret_name = e;
                *ret_enable = true;
        }
}

static int sysctl_entry(const char *e, char *name, size_t nsize, char *value, size_t vsize) {
        const char *eq = strchr(e, '=');
        size_t n;

        if (!eq)
                return -EINVAL;
        n = (size_t) (eq - e);
        while (n > 0 && (e[n - 1] == ' ' || e[n - 1] == '\t'))
                n--;
        if (n == 0 || n >= nsize)
                return -EINVAL;
        memcpy(name, e, n);
        name[n] = '\0';
        eq++;
        eq += strspn(eq, " \t");
        n = strlen(eq);
        while (n > 0 && (eq[n - 1] == ' ' || eq[n - 1] == '\t' || eq[n - 1] == '\n'))
                n--;
        if (n == 0 || n >= vsize)
                return -EINVAL;
        memcpy(value, eq, n);
        value[n] = '\0';
        return 0;
}

/*
 * m->current is the applier's formatting of the value we set; compare only
 * when it parses unambiguously, so a formatting difference never causes a
 * release/set loop.
 */
static int current_as_u64(const struct managed *m, uint64_t *ret) {
        char buf[64];

        line_fmt(buf, sizeof(buf), "%s", m->current);
        util_strip(buf);
        return util_parse_u64(buf, ret);
}

static int current_as_feature(const struct managed *m, const char *name, bool *ret) {
        const char *v = m->current;

        if (streq(v, "1") || streq(v, "on") || streq(v, "true") || streq(v, "yes") || streq(v, name)) {
                *ret = true;
                return 0;
        }
        if (streq(v, "0") || streq(v, "off") || streq(v, "false") || streq(v, "no") ||
            (strncmp(v, "NO_", 3) == 0 && streq(v + 3, name))) {
                *ret = false;
                return 0;
        }
        return -EINVAL;
}

/* Is the managed entry still part of what its (lever) policy asks for? why gets the difference. */
static bool entry_still_wanted(const struct policy *p, const struct managed *m, char *why, size_t size) {
        const char *key_name = strchr(m->key, ':');

        key_name = key_name ? key_name + 1 : "";

        switch (m->type) {
        case ACT_SCHED_FEATURE:
                for (char **e = p->features; e && *e; e++) {
                        const char *name;
                        bool enable, cur;

                        feature_entry(*e, &name, &enable);
                        if (!streq(name, key_name))
                                continue;
                        if (current_as_feature(m, name, &cur) >= 0 && cur != enable) {
                                line_fmt(why, size, "policy now asks for %s", *e);
                                return false;
                        }
                        return true;
                }
                line_fmt(why, size, "%s no longer in SchedFeatures=", key_name);
                return false;

        case ACT_SYSCTL:
                for (char **e = p->sysctls; e && *e; e++) {
                        char name[96], value[64];
                        uint64_t want, cur;

                        if (sysctl_entry(*e, name, sizeof(name), value, sizeof(value)) < 0 ||
                            !streq(name, key_name))
                                continue;
                        if (util_parse_u64(value, &want) >= 0 && current_as_u64(m, &cur) >= 0 && cur != want) {
                                line_fmt(why, size, "policy now asks for %s", *e);
                                return false;
                        }
                        return true;
                }
                line_fmt(why, size, "%s no longer in Sysctl=", key_name);
                return false;

        case ACT_CGROUP_WEIGHT: {
                uint64_t cur;

                if (current_as_u64(m, &cur) >= 0 && p->cpu_weight > 0 && cur != (uint64_t) p->cpu_weight) {
                        line_fmt(why, size, "policy now asks for CPUWeight=%" PRIi64, p->cpu_weight);
                        return false;
                }
                return true;
        }
        default:
                return true;
        }
}

/*
 * How many intervals a steal policy's finding must persist (and be gone)
 * before acting: Hysteresis=, or the policy's Window= in intervals if that
 * is longer ("Steal=10% over Window=30s" means 30 one-second intervals).
 */
static unsigned policy_intervals(struct levers_plan *lp, const struct policy *p) {
        uint64_t interval = lp->c->daemon.interval_usec;
        unsigned n = lp->hysteresis;

        if (p->detector == DETECT_STEAL && p->window_usec > 0 && interval > 0) {
                uint64_t w = (p->window_usec + interval - 1) / interval;
                if (w > n)
                        n = (unsigned) MIN(w, UINT64_C(100000));
        }
        return n;
}

/* ---- per-interval presence ---- */

static struct plan_target_state *policy_state(struct levers_plan *lp, const struct policy *p) {
        struct plan_target_state *st;
        char key[KEY_MAX];

        line_fmt(key, sizeof(key), "levers:%s", p->name);
        st = plan_state_get(lp->ctx->state, key);
        if (st) {
                st->kind = p->detector;
                line_fmt(st->policy, sizeof(st->policy), "%s", p->name);
        }
        return st;
}

static const struct finding *steal_finding(struct levers_plan *lp, const struct policy *p) {
        const struct findings *f = lp->ctx->in->findings;

        for (size_t i = 0; f && i < f->n; i++)
                if (f->items[i].kind == DETECT_STEAL && f->items[i].policy &&
                    (f->items[i].policy == p ||
                     (f->items[i].policy->name && streq(f->items[i].policy->name, p->name))))
                        return &f->items[i];
        return NULL;
}

static bool policy_matches_any(struct levers_plan *lp, const struct policy *p) {
        const struct snapshot *s = lp->ctx->in->snap;

        /* a daemon scoped to some cgroups acts machine-wide only for a task there */
        if (match_is_empty(p) && !lp->c->daemon.scope)
                return true;
        for (size_t i = 0; s && i < s->n_tasks; i++)
                /* the policy's own match first: it rules out almost every task,
                 * the exclusion policies' matches cost as much again */
                if (policy_matches(p, &s->tasks[i]) && task_eligible(lp->c, &s->tasks[i]))
                        return true;
        return false;
}

/* Update the per-policy counters once per interval (steal and always features/sysctl). */
static int update_policy_states(struct levers_plan *lp) {
        for (size_t i = 0; i < lp->c->n_policies; i++) {
                const struct policy *p = &lp->c->policies[i];
                struct plan_target_state *st;
                const struct finding *f = NULL;
                bool present;

                if (!policy_is_lever(p) || p->action == ACTION_WEIGHT) {
                        char key[KEY_MAX];

                        /* a disabled policy starts its hysteresis afresh when enabled again */
                        line_fmt(key, sizeof(key), "levers:%s", p->name);
                        st = plan_state_find(lp->ctx->state, key);
                        if (st)
                                st->seen = st->absent = 0;
                        continue;
                }
                st = policy_state(lp, p);
                if (!st)
                        return -ENOMEM;
                if (p->detector == DETECT_STEAL) {
                        f = steal_finding(lp, p);
                        present = f != NULL;
                } else
                        present = policy_matches_any(lp, p);

                if (present) {
                        st->seen++;
                        st->absent = 0;
                        if (f) {
                                st->last = *f;
                                st->last.policy = NULL;   /* config may be reloaded */
                        }
                } else {
                        st->absent++;
                        st->seen = 0;
                }
        }
        return 0;
}

/* The cgroups that weight policies claim this interval, one winner per cgroup. */
static bool policy_is_weight(const struct policy *p) {
        return policy_is_lever(p) && p->action == ACTION_WEIGHT && p->cpu_weight >= 1 && p->cpu_weight <= 10000;
}

static int collect_weight_claims(struct levers_plan *lp) {
        const struct snapshot *s = lp->ctx->in->snap;
        bool any = false;

        /* Every task is walked (a claim holds while a matching task exists, idle
         * or not), so not at all when no weight policy is on: with 10,000 idle
         * threads the walk was a tenth of the daemon's CPU time. */
        for (size_t pi = 0; pi < lp->c->n_policies && !any; pi++)
                any = policy_is_weight(&lp->c->policies[pi]);
        if (!any)
                return 0;

        for (size_t ti = 0; s && ti < s->n_tasks; ti++) {
                const struct task *t = &s->tasks[ti];
                int eligible = -1;   /* not yet known: it costs a match per exclusion policy */
                const char *cg;

                if (t->kthread || !t->proc)
                        continue;
                cg = t->proc->cgroup;
                if (cgroup_is_root(cg) || strlen(cg) + strlen("cgroup:") >= KEY_MAX)
                        continue;

                for (size_t pi = 0; pi < lp->c->n_policies; pi++) {
                        const struct policy *p = &lp->c->policies[pi];
                        struct weight_claim *w = NULL;

                        if (!policy_is_weight(p) || !policy_matches(p, t))
                                continue;
                        if (eligible < 0)
                                eligible = task_eligible(lp->c, t);
                        if (!eligible)
                                break;
                        for (size_t k = 0; k < lp->n_claims; k++)
                                if (streq(lp->claims[k].cgroup, cg))
                                        w = &lp->claims[k];
                        if (w) {
                                if (p->priority < w->policy->priority) {
                                        w->policy = p;
                                        w->example = t;
                                }
                                continue;
                        }
                        w = realloc(lp->claims, (lp->n_claims + 1) * sizeof(*w));
                        if (!w)
                                return -ENOMEM;
                        lp->claims = w;
                        lp->claims[lp->n_claims++] = (struct weight_claim) { cg, p, t };
                }
        }
        return 0;
}

static const struct weight_claim *claim_for(struct levers_plan *lp, const char *cgroup) {
        for (size_t k = 0; k < lp->n_claims; k++)
                if (streq(lp->claims[k].cgroup, cgroup))
                        return &lp->claims[k];
        return NULL;
}

/* Per-cgroup counters: claimed cgroups are seen, managed cgroups without a claim are absent. */
static int update_cgroup_states(struct levers_plan *lp) {
        const struct plan_input *in = lp->ctx->in;
        char key[KEY_MAX];

        for (size_t k = 0; k < lp->n_claims; k++) {
                struct plan_target_state *st;

                line_fmt(key, sizeof(key), "cgroup:%s", lp->claims[k].cgroup);
                st = plan_state_get(lp->ctx->state, key);
                if (!st)
                        return -ENOMEM;
                st->seen++;
                st->absent = 0;
        }
        for (size_t i = 0; i < in->n_managed; i++) {
                const struct managed *m = &in->managed[i];
                struct plan_target_state *st;

                if (m->type != ACT_CGROUP_WEIGHT || claim_for(lp, m->key + strlen("cgroup:")))
                        continue;
                st = plan_state_get(lp->ctx->state, m->key);
                if (!st)
                        return -ENOMEM;
                st->absent++;
                st->seen = 0;
        }
        return 0;
}

/* ---- emitting ---- */

static int emit(struct levers_plan *lp, const struct action *a) {
        char key[KEY_MAX];
        int r;

        if (!action_target_key(a, key, sizeof(key)))
                return 0;
        r = plan_emit(lp->ctx, a);
        if (r < 0)
                return r;
        return done_add(lp, key);
}

static int release(struct levers_plan *lp, const struct managed *m, const char *why) {
        struct action a = { .type = m->type, .verb = VERB_RELEASE };
        const char *k = strchr(m->key, ':');
        struct plan_target_state *st;

        if (!k || done_has(lp, m->key))
                return 0;
        k++;
        if (m->type == ACT_CGROUP_WEIGHT)
                line_fmt(a.cgroup, sizeof(a.cgroup), "%s", k);
        else
                line_fmt(a.name, sizeof(a.name), "%s", k);
        line_fmt(a.policy, sizeof(a.policy), "%s", m->policy);
        line_fmt(a.reason, sizeof(a.reason), "%s", why);

        st = plan_state_get(lp->ctx->state, m->key);
        if (st) {
                line_fmt(st->state, sizeof(st->state), "%s", plan_state_to_string(PLAN_RELEASED));
                line_fmt(st->why, sizeof(st->why), "%s", why);
        }
        return emit(lp, &a);
}

static int plan_releases(struct levers_plan *lp) {
        const struct plan_input *in = lp->ctx->in;
        char why[160];
        int r;

        for (size_t i = 0; i < in->n_managed; i++) {
                const struct managed *m = &in->managed[i];
                const struct policy *p;
                struct plan_target_state *st;

                if (!is_lever_type(m->type))
                        continue;
                p = config_find_policy(lp->c, m->policy);
                why[0] = '\0';
                if (!p)
                        line_fmt(why, sizeof(why), "policy %s removed", m->policy);
                else if (!p->enabled)
                        line_fmt(why, sizeof(why), "policy %s disabled", m->policy);
                else if (!policy_is_lever(p) || lever_type_of(p->action) != (int) m->type)
                        line_fmt(why, sizeof(why), "policy %s no longer sets %s", m->policy,
                                 action_type_to_string(m->type));
                else if (!entry_still_wanted(p, m, why, sizeof(why)))
                        ;
                else if (m->type == ACT_CGROUP_WEIGHT) {
                        const struct weight_claim *w = claim_for(lp, m->key + strlen("cgroup:"));

                        st = plan_state_get(lp->ctx->state, m->key);
                        if (!st)
                                return -ENOMEM;
                        if (w && w->policy != p)
                                line_fmt(why, sizeof(why), "cgroup now governed by policy %s", w->policy->name);
                        else if (!w && st->absent >= lp->hysteresis)
                                line_fmt(why, sizeof(why), "no task of policy %s in it for %u intervals",
                                         p->name, st->absent);
                } else {
                        st = policy_state(lp, p);
                        if (!st)
                                return -ENOMEM;
                        if (st->absent >= policy_intervals(lp, p)) {
                                if (p->detector == DETECT_STEAL)
                                        line_fmt(why, sizeof(why), "steal at or below %.0f%% for %u intervals",
                                                 (p->steal_min >= 0 ? p->steal_min : STEAL_MIN_DEFAULT) * 100, st->absent);
                                else
                                        line_fmt(why, sizeof(why), "no task matches policy %s for %u intervals",
                                                 p->name, st->absent);
                        }
                }
                if (!why[0])
                        continue;
                r = release(lp, m, why);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* May we set this target now? Fills why when not. */
static bool may_set(struct levers_plan *lp, const char *key, const char *policy, char *why, size_t size) {
        const struct managed *m = managed_by_key(lp, key);
        struct plan_target_state *st;
        const char *blocked_why = NULL;

        if (done_has(lp, key))
                return false;
        if (m) {
                if (!streq(m->policy, policy))
                        line_fmt(why, size, "already set by policy %s", m->policy);
                return false;
        }
        if (plan_state_blocked(lp->ctx->state, NULL, key, lp->ctx->in->now_usec, &blocked_why)) {
                line_fmt(why, size, "%s", blocked_why ? blocked_why : "not retried yet");
                return false;
        }
        st = plan_state_find(lp->ctx->state, key);
        if (st && st->cooldown_until_usec > lp->ctx->in->now_usec) {
                line_fmt(why, size, "cooling down");
                return false;
        }
        return lp->ctx->actions_left > 0;
}

static int set_one(struct levers_plan *lp, struct action *a, const struct policy *p, const char *reason) {
        char key[KEY_MAX], why[160] = "";
        struct plan_target_state *st;

        if (!action_target_key(a, key, sizeof(key)))
                return 0;
        if (!may_set(lp, key, p->name, why, sizeof(why))) {
                st = plan_state_get(lp->ctx->state, key);
                if (st && why[0]) {
                        line_fmt(st->state, sizeof(st->state), "%s", plan_state_to_string(PLAN_LEFT_ALONE));
                        line_fmt(st->why, sizeof(st->why), "%s", why);
                }
                return 0;
        }
        a->verb = VERB_SET;
        line_fmt(a->policy, sizeof(a->policy), "%s", p->name);
        line_fmt(a->reason, sizeof(a->reason), "%s", reason);
        st = plan_state_get(lp->ctx->state, key);
        if (st) {
                line_fmt(st->state, sizeof(st->state), "%s", plan_state_to_string(PLAN_APPLIED));
                line_fmt(st->why, sizeof(st->why), "%s", reason);
        }
        return emit(lp, a);
}

static int set_profile(struct levers_plan *lp, const struct policy *p, const char *reason) {
        int r;

        if (p->action == ACTION_FEATURES)
                for (char **e = p->features; e && *e; e++) {
                        struct action a = { .type = ACT_SCHED_FEATURE };
                        const char *name;

                        feature_entry(*e, &name, &a.enable);
                        if (!name[0] || strlen(name) >= sizeof(a.name))
                                continue;
                        line_fmt(a.name, sizeof(a.name), "%s", name);
                        r = set_one(lp, &a, p, reason);
                        if (r < 0)
                                return r;
                }
        else if (p->action == ACTION_SYSCTL)
                for (char **e = p->sysctls; e && *e; e++) {
                        struct action a = { .type = ACT_SYSCTL };

                        if (sysctl_entry(*e, a.name, sizeof(a.name), a.value, sizeof(a.value)) < 0)
                                continue;
                        r = set_one(lp, &a, p, reason);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static int plan_sets(struct levers_plan *lp) {
        const struct policy **order;
        size_t n = 0;
        int r = 0;

        /* Policies in Priority= order (lower number first; stable), so the winner of a shared key is deterministic. */
        order = calloc(lp->c->n_policies + 1, sizeof(*order));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < lp->c->n_policies; i++)
                if (policy_is_lever(&lp->c->policies[i]) && lp->c->policies[i].action != ACTION_WEIGHT) {
                        size_t j = n++;
                        while (j > 0 && order[j - 1]->priority > lp->c->policies[i].priority) {
                                order[j] = order[j - 1];
                                j--;
                        }
                        order[j] = &lp->c->policies[i];
                }

        for (size_t i = 0; i < n && r >= 0; i++) {
                const struct policy *p = order[i];
                struct plan_target_state *st = policy_state(lp, p);
                char reason[160];

                if (!st) {
                        r = -ENOMEM;
                        break;
                }
                if (p->detector == DETECT_STEAL) {
                        unsigned need = policy_intervals(lp, p);

                        if (st->seen < need) {
                                if (st->seen > 0) {
                                        line_fmt(st->state, sizeof(st->state), "%s", plan_state_to_string(PLAN_WATCHING));
                                        line_fmt(st->why, sizeof(st->why), "%s, %u of %u intervals", st->last.note,
                                                 st->seen, need);
                                }
                                continue;
                        }
                        line_fmt(reason, sizeof(reason), "policy %s: %s for %u intervals", p->name,
                                 st->last.note, st->seen);
                } else {
                        if (st->seen == 0)
                                continue;
                        line_fmt(reason, sizeof(reason), "policy %s: Detector=always%s", p->name,
                                 match_is_empty(p) ? "" : ", a task matches");
                }
                line_fmt(st->state, sizeof(st->state), "%s", plan_state_to_string(PLAN_APPLIED));
                line_fmt(st->why, sizeof(st->why), "%s", reason);
                r = set_profile(lp, p, reason);
        }
        free(order);
        if (r < 0)
                return r;

        for (size_t k = 0; k < lp->n_claims; k++) {
                const struct weight_claim *w = &lp->claims[k];
                struct action a = { .type = ACT_CGROUP_WEIGHT, .weight = (uint64_t) w->policy->cpu_weight };
                char reason[160];

                line_fmt(a.cgroup, sizeof(a.cgroup), "%s", w->cgroup);
                line_fmt(reason, sizeof(reason), "policy %s: CPUWeight=%" PRIi64 " for the cgroup of %s[%d]",
                         w->policy->name, w->policy->cpu_weight,
                         w->example->proc->comm[0] ? w->example->proc->comm : w->example->comm,
                         (int) w->example->id.pid);
                r = set_one(lp, &a, w->policy, reason);
                if (r < 0)
                        return r;
        }
        return 0;
}

int plan_levers(struct plan_ctx *ctx) {
        struct levers_plan lp = { .ctx = ctx };
        int r;

        if (!ctx || !ctx->in || !ctx->in->config || !ctx->state || !ctx->out)
                return 0;
        lp.c = ctx->in->config;
        lp.hysteresis = MAX(lp.c->daemon.hysteresis_intervals, 1u);

        r = update_policy_states(&lp);
        if (r >= 0)
                r = collect_weight_claims(&lp);
        if (r >= 0)
                r = update_cgroup_states(&lp);
        if (r >= 0)
                r = plan_releases(&lp);
        if (r >= 0)
                r = plan_sets(&lp);

        free(lp.claims);
        strv_free(lp.done_keys);
        return r < 0 ? r : 0;
}
