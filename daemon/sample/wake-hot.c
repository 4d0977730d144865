/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The threads that switch often enough to be in a pair, as of the last
 * wake-up burst, and whether this pass's threads still look like them.
 * What lets the sampler skip bursts while the placement is settled
 * (wake.h, wake_sampler_set_stride()) without missing a pair that starts
 * between them: a pair is two threads that switch at least as often as
 * its wake-up rate, and /proc already gives every thread's voluntary
 * switches each pass, at no cost to anyone else.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/cpumask.h"
#include "common/util.h"
#include "sample/wake-internal.h"

static int hot_cmp(const void *a, const void *b) {
        const struct wake_hot_task *x = a, *y = b;

        if (x->tid != y->tid)
                return x->tid < y->tid ? -1 : 1;
        return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

static bool task_is_hot(const struct task *t, double min_per_s) {
        return t->have_rates && t->nvcsw_per_s >= min_per_s;
}

/* By both kinds of switch: one side of a pair moved onto its partner's CPU
 * stops switching voluntarily (the partner it wakes preempts it, and finds
 * it runnable), but goes on switching. */
static bool task_is_busy(const struct task *t, double min_per_s) {
        return t->have_rates && task_switches_per_s(t) >= min_per_s;
}

static int hot_tid_cmp(const void *a, const void *b) {
        const struct wake_hot_task *x = a, *y = b;

        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Mark the recorded threads at either end of an edge at min_per_s or more. */
static void mark_paired(struct wake_hot *h, const struct wake_edge *edges, size_t n_edges, double min_per_s) {
        for (size_t i = 0; i < n_edges; i++) {
                if (edges[i].wakeups_per_s < min_per_s)
                        continue;
                for (int k = 0; k < 2; k++) {
                        struct wake_hot_task key = { .tid = k ? edges[i].wakee_tid : edges[i].waker_tid }, *it;
                        it = bsearch_safe(&key, h->items, h->n, sizeof(*h->items), hot_tid_cmp);
                        if (it)
                                it->paired = true;
                }
        }
}

int wake_hot_record(struct wake_hot *h, const struct task *tasks, size_t n_tasks, double min_per_s) {
        size_t n = 0;

        if (!h || (!tasks && n_tasks > 0))
                return -EINVAL;
        /* busy, not only hot: the side of a pair held on its partner's
         * CPU switches involuntarily, and a repin of it is one to see */
        for (size_t i = 0; i < n_tasks; i++)
                n += task_is_busy(&tasks[i], min_per_s);
        if (n > h->allocated) {
                struct wake_hot_task *p = reallocarray(h->items, n, sizeof(*p));
                if (!p) {
                        h->n = 0;
                        h->valid = false;
                        return -ENOMEM;
                }
                h->items = p;
                h->allocated = n;
        }
        h->n = 0;
        for (size_t i = 0; i < n_tasks; i++)
                if (task_is_busy(&tasks[i], min_per_s))
                        h->items[h->n++] = (struct wake_hot_task) {
                                .tid = tasks[i].id.tid,
                                .start_time = tasks[i].id.start_time,
                                .switches_per_s = tasks[i].nvcsw_per_s,
                                .allowed = tasks[i].allowed,
                                .hot = task_is_hot(&tasks[i], min_per_s),
                        };
        qsort_safe(h->items, h->n, sizeof(*h->items), hot_cmp);
        h->min_per_s = min_per_s;
        h->valid = true;
        return 0;
}

/* A pair is "together" below this split fraction: most of its wake-ups
 * found the wakee on the waker's CPU (a pair the kernel keeps together, or
 * one held on one CPU). */
#define HOT_TOGETHER_MAX 0.5

static int cpu_cmp(const void *a, const void *b) {
        const struct wake_hot_cpu *x = a, *y = b;

        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static bool edge_together(const struct wake_edge *e, double min_per_s) {
        return e->have_split && e->split_fraction < HOT_TOGETHER_MAX && e->wakeups_per_s >= min_per_s;
}

int wake_hot_record_pairs(struct wake_hot *h, const struct wake_edge *edges, size_t n_edges, double min_per_s) {
        size_t n = 0, k = 0;

        if (!h || (!edges && n_edges > 0))
                return -EINVAL;
        mark_paired(h, edges, n_edges, min_per_s);
        for (size_t i = 0; i < n_edges; i++)
                n += edge_together(&edges[i], min_per_s);
        if (n > h->pairs_allocated) {
                pid_t (*p)[2] = reallocarray(h->pairs, n, sizeof(*p));
                struct wake_hot_cpu *c = p ? reallocarray(h->members, 2 * n, sizeof(*c)) : NULL;
                if (p)
                        h->pairs = p;
                if (!c) {
                        h->n_pairs = h->n_members = 0;
                        h->valid = false;
                        return -ENOMEM;
                }
                h->members = c;
                h->pairs_allocated = n;
        }
        h->n_pairs = h->n_members = 0;
        for (size_t i = 0; i < n_edges; i++) {
                const struct wake_edge *e = &edges[i];
                if (!edge_together(e, min_per_s))
                        continue;
                h->pairs[h->n_pairs][0] = e->waker_tid;
                h->pairs[h->n_pairs++][1] = e->wakee_tid;
                h->members[h->n_members++] = (struct wake_hot_cpu) { .tid = e->waker_tid, .cpu = -1 };
                h->members[h->n_members++] = (struct wake_hot_cpu) { .tid = e->wakee_tid, .cpu = -1 };
        }
        qsort_safe(h->members, h->n_members, sizeof(*h->members), cpu_cmp);
        for (size_t i = 0; i < h->n_members; i++)     /* unique */
                if (k == 0 || h->members[k - 1].tid != h->members[i].tid)
                        h->members[k++] = h->members[i];
        h->n_members = k;
        return 0;
}

static int member_cpu(const struct wake_hot *h, pid_t tid) {
        struct wake_hot_cpu key = { .tid = tid }, *m;

        m = bsearch_safe(&key, h->members, h->n_members, sizeof(*h->members), cpu_cmp);
        return m ? m->cpu : -1;
}

/*
 * A pair the last burst saw together whose two members /proc now shows on
 * different CPUs: the kernel may have split it (a loaded machine does,
 * and merges it again a few seconds later), which only a burst can tell.
 * One look at two last CPUs can be a migration in flight: that costs a
 * burst, never a decision.
 */
static bool together_pair_apart(struct wake_hot *h, const struct task *tasks, size_t n_tasks) {
        if (h->n_pairs == 0)
                return false;
        for (size_t i = 0; i < h->n_members; i++)
                h->members[i].cpu = -1;
        for (size_t i = 0; i < n_tasks; i++) {
                struct wake_hot_cpu key = { .tid = tasks[i].id.tid }, *m;
                m = bsearch_safe(&key, h->members, h->n_members, sizeof(*h->members), cpu_cmp);
                if (m)
                        m->cpu = tasks[i].last_cpu;
        }
        for (size_t i = 0; i < h->n_pairs; i++) {
                int a = member_cpu(h, h->pairs[i][0]), b = member_cpu(h, h->pairs[i][1]);
                if (a >= 0 && b >= 0 && a != b)
                        return true;
        }
        return false;
}

/*
 * A thread hot now that was not at the last burst (new, or newly busy), or
 * one whose switch rate went up or down by more than half while it moved
 * by at least the floor, or a together pair now apart: a pair may have
 * started, stopped or been split by the kernel, which only a burst can
 * tell. Threads that went quiet or exited are not a change: their edges
 * decay at the next burst, and an exit is the plan's to see. Nothing
 * recorded: moved.
 *
 * A thread in a pair at the last burst, busy still, whose CPU mask
 * changed is more: someone (an operator's taskset, a cpuset, this daemon)
 * made a placement that no burst has seen, and how the kernel then runs
 * the pair is known only from watching it for a while. An operator who
 * frees one member of a pinned pair leaves the kernel to place it, and
 * under load the kernel split such a pair in stretches of a quarter
 * second, which one burst after the change did not see and the next, 20 s
 * later at the settled stride, came too late for. Threads in no pair are
 * not looked at: a program that re-pins its own busy threads (a game's
 * worker pool) would keep the bursts from ever thinning out.
 */
enum wake_hot_change wake_hot_changed(struct wake_hot *h, const struct task *tasks, size_t n_tasks) {
        enum wake_hot_change r = WAKE_HOT_SAME;

        if (!h || !h->valid)
                return WAKE_HOT_MOVED;
        if (together_pair_apart(h, tasks, n_tasks))
                r = WAKE_HOT_MOVED;
        for (size_t i = 0; i < n_tasks; i++) {
                const struct task *t = &tasks[i];
                struct wake_hot_task key = { .tid = t->id.tid, .start_time = t->id.start_time }, *was;
                double now, delta;

                if (!task_is_busy(t, h->min_per_s))
                        continue;
                was = bsearch_safe(&key, h->items, h->n, sizeof(*h->items), hot_cmp);
                if (was && was->paired && !cpumask_equal(&was->allowed, &t->allowed)) {
                        /* said once: a burst the quiet gate skips records nothing */
                        was->allowed = t->allowed;
                        return WAKE_HOT_REPINNED;
                }
                if (!task_is_hot(t, h->min_per_s))
                        continue;
                if (!was || !was->hot) {
                        r = WAKE_HOT_MOVED;
                        continue;
                }
                now = t->nvcsw_per_s;
                delta = now > was->switches_per_s ? now - was->switches_per_s : was->switches_per_s - now;
                if (delta >= h->min_per_s && (now > 2 * was->switches_per_s || 2 * now < was->switches_per_s))
                        r = WAKE_HOT_MOVED;
        }
        return r;
}

void wake_hot_free(struct wake_hot *h) {
        if (!h)
                return;
        free(h->items);
        free(h->pairs);
        free(h->members);
        *h = (struct wake_hot) {};
}
