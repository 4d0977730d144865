/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The decayed (waker, wakee) table behind the wake graph. Open addressing
 * with linear probing: the drain path does one lookup per sample (up to
 * the adaptive budget, 200k/s by default), so it must be cheap and must not
 * allocate per sample. Deleting is done by rebuilding once per window,
 * when pruning, which is O(edges) and keeps probing free of tombstones.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sample/wake-internal.h"

#define MIN_CAPACITY 256

static inline uint64_t edge_key(pid_t waker, pid_t wakee) {
        return ((uint64_t) (uint32_t) waker << 32) | (uint32_t) wakee;
}

static inline size_t edge_hash(uint64_t key, size_t capacity) {
        /* Fibonacci hashing: tids are small consecutive numbers */
        return (size_t) ((key * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (capacity - 1);
}

void wake_edge_table_init(struct wake_edge_table *t, size_t max_edges) {
        *t = (struct wake_edge_table) { .max_edges = max_edges ? max_edges : WAKE_EDGE_MAX_DEFAULT };
}

void wake_edge_table_done(struct wake_edge_table *t) {
        free(t->slots);
        t->slots = NULL;
        t->capacity = t->n = 0;
        free(t->waiting);
        t->waiting = NULL;
        t->waiting_capacity = 0;
}

static struct wake_edge_slot *table_probe(struct wake_edge_slot *slots, size_t capacity, uint64_t key) {
        size_t i = edge_hash(key, capacity);

        for (;;) {
                if (slots[i].key == key || slots[i].key == 0)
                        return &slots[i];
                i = (i + 1) & (capacity - 1);
        }
}

/* Rehash the live slots into a table of the given capacity. */
static int table_rebuild(struct wake_edge_table *t, size_t capacity) {
        struct wake_edge_slot *slots;

        slots = calloc(capacity, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < t->capacity; i++)
                if (t->slots[i].key != 0)
                        *table_probe(slots, capacity, t->slots[i].key) = t->slots[i];
        free(t->slots);
        t->slots = slots;
        t->capacity = capacity;
        return 0;
}

int wake_edge_table_add(struct wake_edge_table *t, pid_t waker, pid_t wakee, double weight, unsigned samples,
                        double split, bool split_known) {
        uint64_t key = edge_key(waker, wakee);
        struct wake_edge_slot *s;
        int r;

        if (key == 0 || waker <= 0 || wakee <= 0)
                return -EINVAL;
        if (t->capacity == 0 || (t->n + 1) * 2 > t->capacity) {
                if (t->n >= t->max_edges) {
                        /* Full: only existing edges are counted. */
                        if (t->capacity == 0)
                                return -ENOSPC;
                } else {
                        r = table_rebuild(t, t->capacity ? t->capacity * 2 : MIN_CAPACITY);
                        if (r < 0)
                                return r;
                }
        }
        s = table_probe(t->slots, t->capacity, key);
        if (s->key == 0) {
                if (t->n >= t->max_edges) {
                        t->dropped++;
                        return -ENOSPC;
                }
                *s = (struct wake_edge_slot) { .key = key };
                t->n++;
        }
        s->count += weight;
        s->samples += samples;
        s->split += split;
        if (split_known)
                s->split_known = true;
        return 0;
}

int wake_edge_table_fold(struct wake_edge_table *t, uint64_t window_usec, uint64_t tau_usec) {
        return wake_edge_table_fold_observed(t, window_usec, window_usec, tau_usec);
}

/*
 * Fold a window's answered-or-not counts into the slot's sums. One 100 ms
 * burst of a pair at a few hundred requests/s holds only tens of split
 * wake-ups, and a share of so few swings by a tenth or more: the sums
 * hold about the latest WAKE_UNANSWERED_MEMORY counts (all of a window
 * with more), the window's own in full and the older ones scaled down to
 * the room left. A window that timed the edge but counted nothing (only
 * wake-ups on one CPU, or single split ones) holds them: a pair the
 * kernel keeps together says nothing of how it runs split. A stream under
 * stress-ng that the kernel kept together for a second or two lost its
 * verdict when the sums halved each second, and was co-located as a pair
 * together but moving (3-6 % split, 3 rounds of 5 of bench/pairs-load.sh)
 * until its effect check undid it at -5 to -13 %. A window that timed
 * nothing of it (a sampling period above 1, lost samples, no burst)
 * multiplies them by keep (halved a second), so a verdict nothing checks
 * fades as the rates do.
 */
static void fold_unanswered(struct wake_edge_slot *s, double keep) {
        double room = MAX(0.0, WAKE_UNANSWERED_MEMORY - s->split_next), k = keep;

        if (s->timed > 0)
                k = s->sum_split_next > room ? room / s->sum_split_next : 1;
        s->sum_split_next = s->sum_split_next * k + s->split_next;
        s->sum_split_unanswered = s->sum_split_unanswered * k + s->split_unanswered;
        s->split_next = s->split_unanswered = s->timed = 0;
}

int wake_edge_table_fold_observed(struct wake_edge_table *t, uint64_t window_usec, uint64_t observed_usec,
                                  uint64_t tau_usec) {
        size_t live = 0, capacity;
        double alpha, dt, keep;
        bool prune = false;

        if (window_usec == 0 || observed_usec == 0 || t->capacity == 0)
                return 0;
        dt = (double) observed_usec / 1e6;
        /* EWMA with a time constant, so the decay does not depend on the interval length. */
        alpha = 1.0 - exp(-(double) window_usec / (double) (tau_usec ? tau_usec : WAKE_EDGE_TAU_USEC));
        keep = MIN(0.5, exp2(-(double) window_usec / (double) WAKE_UNANSWERED_HALF_LIFE_USEC));

        for (size_t i = 0; i < t->capacity; i++) {
                struct wake_edge_slot *s = &t->slots[i];

                if (s->key == 0)
                        continue;
                /*
                 * Up at once, down with the decay. A new edge starts at what
                 * was observed, not at 0: from 0 its first rate would be alpha
                 * of it (a fifth at a 400 ms window), and an early pass 300 ms
                 * after a pair started saw it at ~3,000/s against a 2,000/s
                 * floor while it ran at ~20,000/s. An edge that rises does
                 * too: a client first seen while it connected (a few
                 * wake-ups) and then sending 1,000 requests/s climbed a fifth
                 * of the way a pass and crossed a 500/s floor only at the
                 * third, 3.35 s in. The decay is what holds a pair through a
                 * lull (release waits for it), not what admits one. At once
                 * only on WAKE_EDGE_RISE_SAMPLES samples or more: on a machine
                 * waking over a million tasks a second the sample period is
                 * 8-16, and one stray wake-up in a 100 ms burst would read
                 * 80-160/s, over the shipped WakeRate=. Fewer samples rise
                 * with the decay, and by their share of WAKE_EDGE_RISE_SAMPLES:
                 * once the placement is settled a fold closes a window of
                 * 4-20 s (the sampler's stride), where the decay alone would
                 * take nearly all of one sample's reading.
                 */
                if (s->samples >= WAKE_EDGE_RISE_SAMPLES && s->count / dt > s->rate_per_s) {
                        s->rate_per_s = s->count / dt;
                        s->split_per_s = s->split / dt;
                } else {
                        double a = alpha;

                        if (s->samples > 0 && s->samples < WAKE_EDGE_RISE_SAMPLES && s->count / dt > s->rate_per_s)
                                a *= (double) s->samples / WAKE_EDGE_RISE_SAMPLES;
                        s->rate_per_s += a * (s->count / dt - s->rate_per_s);
                        s->split_per_s += a * (s->split / dt - s->split_per_s);
                }
                s->count = s->split = 0;
                s->samples = 0;
                /* a window without its own answers has no response time:
                 * the check would count an old one as new */
                s->response_usec = s->answers >= WAKE_RESPONSE_MIN ? s->answer_sum_ns / s->answers / 1e3 : 0;
                s->answer_sum_ns = 0;
                s->answers = 0;
                fold_unanswered(s, keep);
                if (s->rate_per_s < WAKE_EDGE_PRUNE_PER_S) {
                        s->key = 0;
                        prune = true;
                } else
                        live++;
        }
        t->n = live;
        if (!prune)
                return 0;

        capacity = MIN_CAPACITY;
        while (capacity < live * 2)
                capacity *= 2;
        /* table_rebuild skips the emptied slots; if it fails the old table keeps holes,
         * which breaks probing, so clear it instead: the next window refills it. */
        if (table_rebuild(t, capacity) < 0) {
                memset(t->slots, 0, t->capacity * sizeof(*t->slots));
                t->n = 0;
                return -ENOMEM;
        }
        return 0;
}

static struct wake_edge_slot *table_find(const struct wake_edge_table *t, pid_t waker, pid_t wakee) {
        struct wake_edge_slot *s;

        if (t->capacity == 0 || waker <= 0 || wakee <= 0)
                return NULL;
        s = table_probe(t->slots, t->capacity, edge_key(waker, wakee));
        return s->key != 0 ? s : NULL;
}

static int timed_cmp(const void *a, const void *b) {
        const struct wake_timed *x = a, *y = b;

        return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns ? 1 : 0;
}

/*
 * The askers waiting for their switch-in, by tid: open addressing over a
 * table reused from burst to burst; an entry of an earlier round is empty,
 * so nothing is cleared. A thread waits for one answer at a time (it asks
 * while it runs), so its entry is overwritten, never removed; one whose
 * wait ended has no slot.
 */
static int waiting_reserve(struct wake_edge_table *t, size_t n) {
        size_t want = 64;

        while (want < n * 2)
                want *= 2;
        if (want <= t->waiting_capacity)
                return 0;
        free(t->waiting);
        t->waiting = calloc(want, sizeof(*t->waiting));
        t->waiting_capacity = t->waiting ? want : 0;
        return t->waiting ? 0 : -ENOMEM;
}

static struct wake_waiting *waiting_find(struct wake_edge_table *t, pid_t tid, bool add) {
        size_t mask = t->waiting_capacity - 1, i = edge_hash((uint64_t) tid, t->waiting_capacity);

        for (size_t probes = 0; probes < t->waiting_capacity; probes++, i = (i + 1) & mask) {
                struct wake_waiting *w = &t->waiting[i];
                bool live = w->tid != 0 && w->round == t->time_round;

                if (live && w->tid == tid)
                        return w;
                if (!live)
                        return add ? w : NULL;
        }
        return NULL;
}

/* tid's wait, if it has one, ended without a switch-in to time it by */
static void waiting_cancel(struct wake_edge_table *t, pid_t tid) {
        struct wake_waiting *w = waiting_find(t, tid, false);

        if (w)
                w->slot = NULL;
}

int wake_edge_table_time(struct wake_edge_table *t, struct wake_timed *ev, size_t n) {
        int r;

        /* Each CPU's ring is in time order, but a pair on two CPUs has its
         * questions in one ring and its answers in the other. */
        qsort_safe(ev, n, sizeof(*ev), timed_cmp);
        /* nothing asked in an earlier burst is a question of this one */
        t->time_round++;
        r = waiting_reserve(t, n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                struct wake_edge_slot *s, *q;
                struct wake_waiting *w;

                if (ev[i].waker == WAKE_TIMED_SWITCH_IN) {
                        /* a switch-in: an asker that got its answer runs again */
                        w = waiting_find(t, ev[i].wakee, false);
                        if (w && w->slot && ev[i].t_ns >= w->asked_ns) {
                                w->slot->answer_sum_ns += (double) (ev[i].t_ns - w->asked_ns);
                                w->slot->answers++;
                                w->slot = NULL;   /* the entry stays: emptying it would break probing */
                        }
                        continue;
                }
                /* Woken again before it ran: it slept since its answer
                 * (which came while it was still on its CPU), and its next
                 * switch-in ends another wait. No wake-up of a task already
                 * woken is traced (try_to_wake_up() checks its state first). */
                waiting_cancel(t, ev[i].wakee);
                if (ev[i].waker == WAKE_TIMED_INTERRUPT)
                        continue;
                /* the waker runs: a wait of its own ended unseen */
                waiting_cancel(t, ev[i].waker);
                s = table_find(t, ev[i].waker, ev[i].wakee);
                q = table_find(t, ev[i].wakee, ev[i].waker);
                /* this wake-up answers the wakee's last one of the waker: the
                 * wakee waits on till it is switched in */
                if (q && q->asked_round == t->time_round && !q->answered && ev[i].t_ns >= q->asked_ns) {
                        q->answered = true;
                        w = waiting_find(t, ev[i].wakee, true);
                        if (w)
                                *w = (struct wake_waiting) { .tid = ev[i].wakee, .round = t->time_round,
                                                             .asked_ns = q->asked_ns, .slot = q };
                }
                if (s) {
                        s->timed++;
                        /* again before an answer: the waker ran on */
                        if (ev[i].split && s->asked_split && s->asked_round == t->time_round) {
                                s->split_next++;
                                if (!s->answered)
                                        s->split_unanswered++;
                        }
                        s->asked_split = ev[i].split;
                        s->asked_ns = ev[i].t_ns;
                        s->asked_round = t->time_round;
                        s->answered = false;
                }
        }
        return 0;
}

static int edge_cmp(const void *a, const void *b) {
        const struct wake_edge *x = a, *y = b;

        if (x->waker_tid != y->waker_tid)
                return x->waker_tid < y->waker_tid ? -1 : 1;
        if (x->wakee_tid != y->wakee_tid)
                return x->wakee_tid < y->wakee_tid ? -1 : 1;
        return 0;
}

int wake_edge_table_export(const struct wake_edge_table *t, struct wake_edge **buf, size_t *allocated,
                           size_t *ret_n) {
        size_t n = 0;

        if (*allocated < t->n || !*buf) {
                size_t na = MAX(t->n, (size_t) 16);
                struct wake_edge *nb = realloc(*buf, na * sizeof(*nb));
                if (!nb)
                        return -ENOMEM;
                *buf = nb;
                *allocated = na;
        }
        for (size_t i = 0; i < t->capacity; i++) {
                const struct wake_edge_slot *s = &t->slots[i];

                if (s->key == 0)
                        continue;
                (*buf)[n] = (struct wake_edge) {
                        .waker_tid = (pid_t) (s->key >> 32),
                        .wakee_tid = (pid_t) (uint32_t) s->key,
                        .wakeups_per_s = s->rate_per_s,
#ifdef WAKE_EDGE_HAVE_SPLIT
                        .have_split = s->split_known && s->rate_per_s > 0,
                        .split_fraction = s->split_known && s->rate_per_s > 0
                                ? MIN(1.0, s->split_per_s / s->rate_per_s) : 0.0,
#endif
                        .response_usec = s->response_usec > 0 ? s->response_usec : NAN,
                        .split_next = s->sum_split_next,
                        .split_unanswered = s->sum_split_unanswered,
                };
                n++;
        }
        qsort_safe(*buf, n, sizeof(**buf), edge_cmp);
        *ret_n = n;
        return 0;
}
