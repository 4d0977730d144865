/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"

void findings_clear(struct findings *f) {
        if (!f)
                return;
        free(f->items);
        f->items = NULL;
        f->n = f->allocated = 0;
}

int findings_add(struct findings *f, const struct finding *item) {
        if (!f || !item)
                return -EINVAL;
        if (f->n >= f->allocated) {
                size_t a = f->allocated ? f->allocated * 2 : 16;
                struct finding *n = reallocarray(f->items, a, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                f->items = n;
                f->allocated = a;
        }
        f->items[f->n++] = *item;
        return 0;
}

char *hog_key(const struct task_id *id, char *buf, size_t size) {
        int n = snprintf(buf, size, "hog:%d:%" PRIu64, (int) id->tid, id->start_time);
        return n < 0 || (size_t) n >= size ? NULL : buf;
}

char *pair_key(const struct task_id *a, const struct task_id *b, char *buf, size_t size) {
        int n = snprintf(buf, size, "pair:%d:%d", (int) MIN(a->tid, b->tid), (int) MAX(a->tid, b->tid));
        return n < 0 || (size_t) n >= size ? NULL : buf;
}

char *finding_key(const struct finding *f, char *buf, size_t size) {
        int n = -1;

        switch (f->kind) {
        case DETECT_HOG:
                if (f->n_members < 1)
                        return NULL;
                return hog_key(&f->members[0], buf, size);
        case DETECT_RUNDELAY:
                if (f->n_members < 1)
                        return NULL;
                n = snprintf(buf, size, "rundelay:%d:%" PRIu64, (int) f->members[0].tid,
                             f->members[0].start_time);
                break;
        case DETECT_SPREAD:
                n = snprintf(buf, size, "spread:%s", f->policy && f->policy->name ? f->policy->name : "");
                break;
        case DETECT_PAIR:
                if (f->n_members < 2)
                        return NULL;
                return pair_key(&f->members[0], &f->members[1], buf, size);
        case DETECT_STEAL:
                n = snprintf(buf, size, "steal");
                break;
        default:
                break;
        }
        return n < 0 || (size_t) n >= size ? NULL : buf;
}

double detect_util_min(const struct policy *p, enum detector kind) {
        if (p && p->util_min >= 0)
                return p->util_min;
        return kind == DETECT_SPREAD ? DETECT_SPREAD_UTIL_MIN_DEFAULT : DETECT_HOG_UTIL_MIN_DEFAULT;
}

double detect_migrations_min_per_s(const struct policy *p, enum detector kind) {
        if (p && p->migrations_min_per_s >= 0)
                return p->migrations_min_per_s;
        return kind == DETECT_SPREAD ? DETECT_SPREAD_MIGRATIONS_MIN_PER_S_DEFAULT
                                     : DETECT_HOG_MIGRATIONS_MIN_PER_S_DEFAULT;
}

uint64_t detect_window_usec(const struct policy *p, enum detector kind) {
        if (p && p->window_usec > 0)
                return p->window_usec;
        return kind == DETECT_SPREAD ? DETECT_SPREAD_WINDOW_USEC_DEFAULT : DETECT_HOG_WINDOW_USEC_DEFAULT;
}

double detect_run_delay_min_ms_per_s(const struct policy *p) {
        if (p && p->run_delay_min_ms_per_s > 0)
                return p->run_delay_min_ms_per_s;
        return DETECT_RUNDELAY_MIN_MS_PER_S_DEFAULT;
}

double detect_prefilter(const struct config *c, enum detector kind, double prefilter) {
        for (size_t i = 0; c && i < c->n_policies; i++) {
                const struct policy *p = &c->policies[i];

                if (!p->enabled || p->detector != kind)
                        continue;
                prefilter = MIN(prefilter, kind == DETECT_RUNDELAY ? detect_run_delay_min_ms_per_s(p)
                                                                   : detect_util_min(p, kind));
        }
        return prefilter;
}

double task_demand(const struct task *t) {
        double d;

        if (!t || !t->have_rates)
                return 0;
        d = t->util;
        if (t->have_schedstat && t->run_delay_ms_per_s > 0)
                d += t->run_delay_ms_per_s / 1000.0;
        /* one thread cannot want more than one CPU; sampling jitter can push the sum over */
        return MIN(d, 1.0);
}

void detect_task_finding(struct finding *f, enum detector kind, const struct policy *p, const struct task *t) {
        *f = (struct finding) {
                .kind = kind,
                .policy = p,
                .members[0] = t->id,
                .n_members = 1,
                .util = t->util,
                .cpus_seen = t->cpus_seen,
                .last_cpu = t->last_cpu,
        };
        memcpy(f->comm, t->comm, sizeof(f->comm));
        f->comm[sizeof(f->comm) - 1] = 0;
}

int detect_all(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out) {
        int r;

        if (!s || !c || !out)
                return -EINVAL;

        findings_clear(out);

        r = detect_hogs(s, c, self_pid, out);
        if (r < 0)
                return r;
        r = detect_pairs(s, c, self_pid, out);
        if (r < 0)
                return r;
        r = detect_spread(s, c, self_pid, out);
        if (r < 0)
                return r;
        r = detect_rundelay(s, c, self_pid, out);
        if (r < 0)
                return r;
        return detect_steal(s, c, out);
}
