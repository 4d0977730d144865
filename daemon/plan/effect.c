/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "plan/effect.h"

struct effect_params effect_params_default(void) {
        return (struct effect_params) {
                .tolerance = EFFECT_TOLERANCE_DEFAULT,
                .min_samples = EFFECT_MIN_SAMPLES_DEFAULT,
                .direction = EFFECT_HIGHER_IS_BETTER,
                .min_abs = 0.0,
        };
}

const char *effect_verdict_to_string(enum effect_verdict v) {
        switch (v) {
        case EFFECT_PENDING: return "pending";
        case EFFECT_KEEP: return "keep";
        case EFFECT_UNDO: return "undo";
        }
        return "unknown";
}

static int cmp_double(const void *x, const void *y) {
        double a = *(const double *) x, b = *(const double *) y;
        return a < b ? -1 : a > b ? 1 : 0;
}

int effect_judge(double before, const double *after, size_t n_after, const struct effect_params *p,
                 struct effect_result *ret) {
        double v[EFFECT_MAX_SAMPLES], median, change, diff;
        unsigned min_samples, n = 0;
        size_t start;

        if (!p || !ret || !isfinite(p->tolerance) || p->tolerance < 0)
                return -EINVAL;
        min_samples = p->min_samples > 0 ? p->min_samples : 1;
        if (min_samples > EFFECT_MAX_SAMPLES)
                min_samples = EFFECT_MAX_SAMPLES;

        *ret = (struct effect_result) { .verdict = EFFECT_PENDING, .before = before };

        /* the newest EFFECT_MAX_SAMPLES finite samples */
        start = n_after;
        while (start > 0 && n < EFFECT_MAX_SAMPLES) {
                start--;
                if (isfinite(after[start]))
                        v[n++] = after[start];
        }
        ret->n = n;

        if (!isfinite(before) || before <= 0) {
                ret->verdict = EFFECT_KEEP;
                snprintf(ret->why, sizeof(ret->why), "no baseline (before %g): keep", before);
                return 0;
        }
        if (n < min_samples) {
                snprintf(ret->why, sizeof(ret->why), "%u of %u samples: wait", n, min_samples);
                return 0;
        }

        qsort_safe(v, n, sizeof(double), cmp_double);
        median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        diff = median - before;
        change = (p->direction == EFFECT_HIGHER_IS_BETTER ? diff : -diff) / before;
        ret->after = median;
        ret->change = change;

        if (change < -p->tolerance && fabs(diff) > p->min_abs) {
                ret->verdict = EFFECT_UNDO;
                snprintf(ret->why, sizeof(ret->why), "%g -> %g (%+.0f %%, median of %u) worse than %.0f %%: undo",
                         before, median, change * 100, n, p->tolerance * 100);
        } else {
                ret->verdict = EFFECT_KEEP;
                snprintf(ret->why, sizeof(ret->why), "%g -> %g (%+.0f %%, median of %u) within %.0f %%: keep",
                         before, median, change * 100, n, p->tolerance * 100);
        }
        return 0;
}

void effect_samples_add(struct effect_samples *s, double v) {
        s->v[s->next] = v;
        s->next = (s->next + 1) % EFFECT_MAX_SAMPLES;
        if (s->n < EFFECT_MAX_SAMPLES)
                s->n++;
}

size_t effect_samples_get(const struct effect_samples *s, double *ret, size_t size) {
        size_t k = 0;
        unsigned first = (s->next + EFFECT_MAX_SAMPLES - s->n) % EFFECT_MAX_SAMPLES;

        for (unsigned i = 0; i < s->n && k < size; i++)
                ret[k++] = s->v[(first + i) % EFFECT_MAX_SAMPLES];
        return k;
}

/*
 * The read() and write() calls of a side that talks through them: one
 * every two switches or more (a request and its answer are a read and a
 * write a wake-up), or calls of more than a pipe holds (64 kB), which
 * sleep inside themselves until the other side drains them (dd bs=1M into
 * a pipe: 16 switches or more a call). A thread that talks through
 * recv()/send(), which /proc/TID/io does not count, moves other bytes
 * through smaller calls, and they say nothing of its exchange: pgbench -R
 * 2000 writes its per-transaction log, 98 kB/s through 24 write()s a
 * second, and its backend reads the pages its cache does not hold yet,
 * 3.7 MB/s through 454 calls of 8 kB in the first second and 8 kB/s
 * twenty seconds on, split or on one CPU, at 4,500 switches/s each. Judged
 * by them, its co-location beside stress-ng was undone at -32 to -84 %
 * in 3 of 9 rounds; by its round trips and answers it was kept in 3 of 3.
 */
#define EFFECT_BYTES_CALLS_PER_SWITCH_MIN 0.5
#define EFFECT_BYTES_BLOCKING_CALL (64.0 * 1024)

static bool exchange_calls(const struct task *t) {
        return task_calls_per_switch(t) >= EFFECT_BYTES_CALLS_PER_SWITCH_MIN ||
               (t->io_calls_per_s > 0 && t->io_bytes_per_s / t->io_calls_per_s > EFFECT_BYTES_BLOCKING_CALL);
}

/*
 * Bytes that are the pair's exchange: at least one a switch, on each
 * side, through calls that are the exchange's (exchange_calls()). A pipe
 * ping-pong moves 2 bytes per round trip and switches once; a stream's
 * messages are bigger. A client that reads its script at start (sysbench:
 * ~20 kB/s over its first window at 20k switches/s) and then talks
 * through recv()/send() is not judged by those bytes: they stop, and the
 * change looked -100 %.
 */
static bool moves_its_bytes(const struct task *t) {
        return t->have_io_rate && t->io_bytes_per_s > 0 &&
               t->io_bytes_per_s >= task_switches_per_s(t) && exchange_calls(t);
}

enum evidence_basis effect_basis_for(enum detector kind, const struct task *t, const struct task *partner) {
        if (kind == DETECT_PAIR && t && partner && moves_its_bytes(t) && moves_its_bytes(partner))
                return EVIDENCE_IO_BYTES;
        return EVIDENCE_OWN;
}

double effect_proxy_for(enum detector kind, const struct task *t, const struct task *partner) {
        return effect_proxy_on(kind, effect_basis_for(kind, t, partner), t, partner);
}

double effect_proxy_on(enum detector kind, enum evidence_basis basis, const struct task *t, const struct task *partner) {
        if (!t || !t->have_rates)
                return NAN;
        switch (kind) {
        case DETECT_PAIR:
                if (!partner || !partner->have_rates)
                        return NAN;
                if (basis == EVIDENCE_IO_BYTES)
                        return t->have_io_rate && partner->have_io_rate ? (t->io_bytes_per_s + partner->io_bytes_per_s) / 2
                                                                        : NAN;
                return (task_switches_per_s(t) + task_switches_per_s(partner)) / 2;
        case DETECT_RUNDELAY:
                return t->run_delay_ms_per_s;
        default:
                return t->util;
        }
}

enum effect_direction effect_direction_for(enum detector kind) {
        return kind == DETECT_RUNDELAY ? EFFECT_LOWER_IS_BETTER : EFFECT_HIGHER_IS_BETTER;
}

void effect_state_init_full(struct effect_state *s, double before, enum effect_direction direction) {
        *s = (struct effect_state) {
                .before = before,
                .after_median = NAN,
                .min_samples = EFFECT_MIN_SAMPLES_DEFAULT,
                .direction = direction,
        };
}

void effect_state_init(struct effect_state *s, double before) {
        effect_state_init_full(s, before, EFFECT_HIGHER_IS_BETTER);
}

enum effect_verdict effect_observe(struct effect_state *s, double value, unsigned intervals, unsigned settle,
                                   double tolerance) {
        double v[EFFECT_MAX_SAMPLES];
        size_t n;
        struct effect_params p = {
                .tolerance = tolerance,
                .min_samples = s->min_samples,
                .direction = s->direction,
        };

        /* the first window after the change still holds time from before it */
        if (intervals > 1 && isfinite(value))
                effect_samples_add(&s->samples, value);
        if (intervals < settle)
                return EFFECT_PENDING;
        n = effect_samples_get(&s->samples, v, EFFECT_MAX_SAMPLES);
        if (effect_judge(s->before, v, n, &p, &s->last) < 0)
                return EFFECT_KEEP;   /* a bad tolerance must not undo anything */
        if (s->last.verdict != EFFECT_PENDING)
                s->after_median = s->last.after;
        return s->last.verdict;
}

int effect_track(struct effect_tracker *tr, const struct action *a) {
        struct effect_pending *n;

        if (a->verb != VERB_SET || a->type != ACT_AFFINITY || a->evidence_before <= 0)
                return 0;
        n = realloc(tr->items, (tr->n + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        tr->items = n;
        n = &tr->items[tr->n++];
        *n = (struct effect_pending) { .action = *a };
        effect_state_init_full(&n->state, a->evidence_before, effect_direction_for(a->kind));
        n->judge_response = a->kind == DETECT_PAIR && a->response_before_usec > 0;
        if (n->judge_response)
                effect_state_init_full(&n->response, a->response_before_usec, EFFECT_LOWER_IS_BETTER);
        return 0;
}

static void effect_forget(struct effect_tracker *tr, size_t i) {
        tr->items[i] = tr->items[--tr->n];
}

void effect_forget_task(struct effect_tracker *tr, const struct task_id *task) {
        for (size_t i = tr->n; i > 0; i--)
                if (task_id_equal(&tr->items[i - 1].action.task, task))
                        effect_forget(tr, i - 1);
}

/* The task an action was about, if it is still the same task. */
static const struct task *effect_task(const struct snapshot *snap, const struct task_id *id) {
        const struct task *t = snapshot_find_task(snap, id->tid);

        return t && t->id.start_time == id->start_time ? t : NULL;
}

const char *effect_measure_name(enum detector kind, enum evidence_basis basis) {
        if (kind == DETECT_PAIR)
                return basis == EVIDENCE_IO_BYTES ? "bytes/s" : basis == EVIDENCE_RESPONSE ? "response us" : "round trips/s";
        return kind == DETECT_RUNDELAY ? "run delay" : "util";
}

const struct effect_gain *effect_gain_of(const struct effect_tracker *tr, const struct task_id *task) {
        for (size_t i = 0; tr && task && i < tr->n_gains; i++)
                if (task_id_equal(&tr->gains[i].task, task))
                        return &tr->gains[i];
        return NULL;
}

void effect_gain_forget(struct effect_tracker *tr, const struct task_id *task) {
        for (size_t i = tr->n_gains; i > 0; i--)
                if (task_id_equal(&tr->gains[i - 1].task, task))
                        tr->gains[i - 1] = tr->gains[--tr->n_gains];
}

/* A kept change's figures on the measure that decided (s), replacing any
 * earlier one of its task. -ENOMEM: not kept (shown as none). */
static int gain_keep(struct effect_tracker *tr, const struct effect_pending *p, const struct effect_state *s) {
        struct effect_gain g = {
                .task = p->action.task,
                .kind = p->action.kind,
                .basis = s->last.basis,
                .before = s->before,
                .after = s->last.after,
        };
        struct effect_gain *n;

        if (!(g.before > 0) || !isfinite(g.after))
                return 0;
        g.gain = s->direction == EFFECT_LOWER_IS_BETTER ? (g.after > 0 ? g.before / g.after : 0)
                                                        : g.after / g.before;
        effect_gain_forget(tr, &g.task);
        n = realloc(tr->gains, (tr->n_gains + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        tr->gains = n;
        tr->gains[tr->n_gains++] = g;
        return 0;
}

/* Gains of tasks no longer there. */
static void gains_prune(struct effect_tracker *tr, const struct snapshot *snap) {
        for (size_t i = tr->n_gains; i > 0; i--)
                if (!effect_task(snap, &tr->gains[i - 1].task))
                        tr->gains[i - 1] = tr->gains[--tr->n_gains];
}

/*
 * Every window since the change worse than before by more than margin
 * (relative, in the state's direction), not only their median. A negative
 * margin asks for less: no window better than before by -margin or more.
 */
static bool every_window_worse(const struct effect_state *s, double before, double margin) {
        double v[EFFECT_MAX_SAMPLES];
        size_t n = effect_samples_get(&s->samples, v, ELEMENTSOF(v)), k = 0;

        for (size_t i = 0; i < n; i++) {
                if (!isfinite(v[i]))
                        continue;
                if (s->direction == EFFECT_LOWER_IS_BETTER ? v[i] <= before * (1 + margin)
                                                           : v[i] >= before * (1 - margin))
                        return false;
                k++;
        }
        return k > 0;
}

/*
 * A longer response time is a loss only where every window since the
 * change answered slower than the "before" by more than the tolerance, not
 * only their median, and that "before" is the mean of at least
 * RESPONSE_BEFORE_WINDOWS_MIN bursts: a mean moves with the tail, and a
 * pair placed within a second of its first requests has one burst's.
 * MariaDB at 1,000/s under stress-ng read 96 -> 108 us (+13 %) and was
 * undone in 2 of 3 repeats by the median against one burst, where pinning
 * it by hand cut its p99 from 2,810 to 608 us.
 */
#define RESPONSE_BEFORE_WINDOWS_MIN 2

static bool every_window_slower(const struct effect_pending *p, double tolerance) {
        return p->action.response_before_windows >= RESPONSE_BEFORE_WINDOWS_MIN &&
               every_window_worse(&p->response, p->response.before, tolerance);
}

/* the windows after the dropped one before bytes_fell() and second_look() may act early */
#define BYTES_FELL_WINDOWS_MIN 2

/*
 * A pair judged by its bytes, its figures so far into *ret: the verdict's
 * (v decided), or while the median still waits, the median of the
 * windows there are, once there are BYTES_FELL_WINDOWS_MIN of them. False:
 * not judged by bytes, or too few windows yet.
 */
static bool bytes_so_far(const struct effect_pending *p, enum effect_verdict v, double tolerance,
                         struct effect_result *ret) {
        struct effect_params early = { .tolerance = tolerance, .min_samples = 1, .direction = p->state.direction };
        double w[EFFECT_MAX_SAMPLES];
        size_t n;

        if (p->action.kind != DETECT_PAIR || p->action.evidence_basis != EVIDENCE_IO_BYTES)
                return false;
        *ret = p->state.last;
        if (v != EFFECT_PENDING)
                return true;
        n = effect_samples_get(&p->state.samples, w, ELEMENTSOF(w));
        if (effect_judge(p->state.before, w, n, &early, ret) < 0 || ret->n < BYTES_FELL_WINDOWS_MIN)
                return false;
        ret->basis = EVIDENCE_IO_BYTES;
        return true;
}

/*
 * A pair judged by its bytes keeps a change only where its bytes held:
 * bytes that fell in every window since the change by more than half the
 * tolerance are a loss, though their median is within it, whatever the
 * answers say. A stream taken for a ping-pong under stress-ng read
 * "bytes/s -10 % (1.482e+06 -> 1.338e+06)" and was kept by its response
 * time (+12 %), while it lost ~20 % by its own count. A client at a fixed
 * rate sends as many bytes wherever it runs, so its windows fall on both
 * sides of its "before"; a closed loop that answers faster moves more.
 * Half: the tolerance is what one median must clear, and a loss in every
 * window is the stronger evidence. The windows are held to the mean of
 * the pair's windows before, not to the "before" the median is, which is
 * at least the deciding window's figure: a client at a fixed rate placed
 * in a window of its bursts would read lower than that in every window
 * after, and lose a co-location that cut its tail.
 *
 * Being a loss in every window, it needs no median of min_samples: it
 * undoes from BYTES_FELL_WINDOWS_MIN windows on, while the median still
 * waits (v pending). A stream the loaded kernel keeps mostly together
 * loses 8-13 % on one CPU from the first window on; held there for the
 * median's five windows (about 6 s with the dropped one), it ran at 0.89-
 * 0.91x of its stock rate over a 10 s run. A win does not look like this
 * (a ping-pong that co-location helps moves more bytes in its first
 * window), nor does a fixed rate (its windows fall on both sides). Two,
 * not one: under load one window is one slice of the load's. Rewrites
 * the verdict as an undo; true when it did.
 */
static bool bytes_fell(struct effect_pending *p, enum effect_verdict v, double tolerance) {
        double mean = p->action.evidence_before_mean;
        double ref = mean > 0 ? MIN(mean, p->state.before) : p->state.before;
        struct effect_result r;

        if (v == EFFECT_UNDO || !bytes_so_far(p, v, tolerance, &r))
                return false;
        if (r.change >= 0 || !every_window_worse(&p->state, ref, tolerance / 2))
                return false;
        r.verdict = EFFECT_UNDO;
        snprintf(r.why, sizeof(r.why),
                 "%.4g -> %.4g (%+.0f %%, median of %u), lower in every window than %.4g by more than %.0f %%: undo",
                 r.before, r.after, r.change * 100, r.n, ref, tolerance * 50);
        p->state.last = r;
        return true;
}

/*
 * The pair's response time decides when it was timed before and after and
 * its round trips did not say the change won (the state that decides, or
 * NULL to let the round trips' verdict stand):
 *
 *  - round trips within the tolerance (a client at a fixed rate sends as
 *    many requests wherever it runs): the response time's verdict, a keep
 *    with its gain or an undo with its loss;
 *  - round trips counted by switches fell beyond it: the same. At a fixed
 *    rate switches are no work: MariaDB at 1,000/s switched 13-16 % less
 *    on one CPU while answering as fast, and was undone on a host where
 *    hand-pinning it halved its p99 (481 against 1,044 us).
 *
 * A longer response undoes only where every window after the change was
 * longer than a "before" of two bursts or more (every_window_slower()).
 * Round trips that rose beyond the tolerance are a win whatever the
 * response says (a closed loop waits less per request when it does more),
 * and bytes that fell are a loss: a stream taken for a ping-pong (beyond
 * the tolerance, or in every window: bytes_fell()).
 *
 * The response time is what the client waits (wake_edge_table_time()):
 * its request, the server's work and answer, and its own wake-up, which
 * is what co-location changes most. The server's half alone read 86 -> 96
 * us (+11 %) under stress-ng while the client's 95th percentile fell 703
 * -> 470 us: that half is not timed on its own any more.
 */
static struct effect_state *response_decides(struct effect_pending *p, enum effect_verdict v,
                                             enum effect_verdict vr, double tolerance) {
        struct effect_result *res = &p->response.last;
        bool held = v == EFFECT_KEEP && p->state.last.change <= tolerance;
        bool switches_fell = v == EFFECT_UNDO && p->action.evidence_basis == EVIDENCE_OWN;

        if (!p->judge_response || vr == EFFECT_PENDING || !(held || switches_fell))
                return NULL;
        if (vr == EFFECT_UNDO && !every_window_slower(p, tolerance))
                vr = res->verdict = EFFECT_KEEP;     /* slower by the median only, or against one burst */
        /* what the round trips said beside it: the undo's reason, or the
         * keep's log line (which names the response's gain itself) */
        if (vr == EFFECT_UNDO)
                snprintf(res->why, sizeof(res->why),
                         "response us %.4g -> %.4g (%+.0f %%, median of %u) worse than %.0f %% while %s %+.0f %%: undo",
                         res->before, res->after, res->change * 100, res->n, tolerance * 100,
                         effect_measure_name(p->action.kind, p->action.evidence_basis), p->state.last.change * 100);
        else
                snprintf(res->why, sizeof(res->why), "%s %+.0f %% (%.4g -> %.4g), %s%s",
                         effect_measure_name(p->action.kind, p->action.evidence_basis), p->state.last.change * 100,
                         p->state.last.before, p->state.last.after,
                         held ? "within the tolerance" : "switches, not work, while the answers held",
                         res->change < -tolerance
                                 ? p->action.response_before_windows < RESPONSE_BEFORE_WINDOWS_MIN
                                           ? "; answers slower than one burst before"
                                           : "; answers slower, not in every window"
                                 : "");
        return &p->response;
}

/*
 * A keep by bytes that show no clear gain (less than a quarter of the
 * tolerance above the "before", or lower; the whole tolerance on a
 * "before" of one window or two, below) is not trusted: that "before" may
 * be of the pair's first second, and the kernel's placement of a stream
 * changes as it runs. Under stress-ng --cpu 2 --cpu-load 40 a stream ran 21-22k
 * messages/s in its first half second, where the kernel kept its sides
 * together, was co-located then and kept at "bytes/s -1 %"; unplaced it
 * runs 22-25k once the kernel spreads it. Such a keep becomes a release
 * for a second look (the manager holds the pair off for
 * PLAN_SECOND_LOOK_USEC, 5 s, which ends the cool-down of its placement
 * too): placed again, it is judged against a "before" of the windows
 * where the kernel put it meanwhile, and that verdict is final
 * (action.looked_again). A closed loop that co-location helps moves
 * clearly more, and keeps. A client at a fixed rate moves as many bytes
 * anywhere, and gets its look too: the kernel's placement for the look,
 * once, then the verdict by its answers; a stream kept on one CPU lost
 * 10 % for good. Against the "before" itself,
 * not the mean of the windows before as bytes_fell() holds them to: that
 * mean only ever lies below it.
 *
 * Like bytes_fell(), it need not wait for the median of five: no window
 * of the first BYTES_FELL_WINDOWS_MIN or more clearly above the "before"
 * is no clear gain in any of them (held five windows, the stream paid 10 %
 * for six of a 10 s run). On a "before" of fewer than
 * BYTES_BEFORE_WINDOWS_MIN windows (a pair placed in its first seconds),
 * the median of five must clear the whole tolerance: that is what one
 * window of a loaded machine swings. The same stream, placed after
 * windows of 1.19e6 and 1.22e6 bytes/s, was kept at +7 % and +10 % on one
 * CPU (1.28e6, 1.35e6) where the kernel moved it at 1.4e6 later, and ran
 * at 0.86-0.91x of its stock rate. A pair that gains less there has its
 * look, and is placed again unless one CPU moved clearly less than the
 * look (plan-pair.c, judge_look()); so does a closed loop kept by its
 * faster answers with bytes that rose by less. decided: the verdict's
 * state, NULL while the median waits. True when it rewrote the verdict.
 */
#define BYTES_BEFORE_WINDOWS_MIN 3

static bool second_look(struct effect_pending *p, enum effect_verdict v, const struct effect_state *decided,
                        double tolerance) {
        double clear = p->action.evidence_before_windows < BYTES_BEFORE_WINDOWS_MIN ? tolerance : tolerance / 4;
        struct effect_result r;

        if (p->action.looked_again || (decided && decided->last.verdict != EFFECT_KEEP) ||
            !bytes_so_far(p, v, tolerance, &r))
                return false;
        /* no clear gain: by the median of five, or while it waits, in
         * every window so far (a win shows from the first) */
        if (decided ? !(r.change < clear) : !every_window_worse(&p->state, p->state.before, -tolerance / 4))
                return false;
        r.verdict = EFFECT_UNDO;
        r.second_look = true;
        snprintf(r.why, sizeof(r.why), "%.4g -> %.4g (%+.0f %%, median of %u), no clear gain: released for a second look",
                 r.before, r.after, r.change * 100, r.n);
        p->state.last = r;
        return true;
}

/*
 * A pair whose work fell to nothing (the median the undo rests on about 0)
 * and whose members neither ran, switched nor waited to run in the last
 * window went quiet: its exchange ended (two of MariaDB's own threads at
 * 225 wake-ups/s while sysbench prepared its table, co-located, then idle:
 * the check read "8.03 -> 0 (-100 %)" and undid it, and blocked the pair's
 * next burst for RetryAfter=). Threads that a pin starves wait to run, and
 * are judged as ever; so is a feeder whose pin starves it (its pair then
 * sleeps for want of requests, but the feeder waits to run).
 */
#define EFFECT_QUIET_WORK 1.0            /* switches/s or bytes/s: the proxy's "about 0" */
#define EFFECT_QUIET_RUN_DELAY_MS_PER_S 1.0
#define EFFECT_QUIET_UTIL 0.01

static bool pair_went_quiet(const struct task *a, const struct task *b) {
        return a->have_rates && b->have_rates && a->util + b->util < EFFECT_QUIET_UTIL &&
               task_switches_per_s(a) + task_switches_per_s(b) < EFFECT_QUIET_WORK &&
               a->run_delay_ms_per_s + b->run_delay_ms_per_s < EFFECT_QUIET_RUN_DELAY_MS_PER_S;
}

void effect_check(struct effect_tracker *tr, const struct snapshot *snap, double tolerance,
                  void (*verdict)(const struct action *a, const struct effect_result *res, void *userdata),
                  void *userdata) {
        gains_prune(tr, snap);
        for (size_t i = 0; i < tr->n;) {
                struct effect_pending *p = &tr->items[i];
                const struct task *t = effect_task(snap, &p->action.task), *partner = NULL;
                const struct task *w[2] = { t, NULL };   /* whose work is measured */
                bool fed = p->action.work_pair[0].tid != 0;
                enum effect_verdict v, vr = EFFECT_PENDING;
                struct effect_state *decided;

                if (p->action.kind == DETECT_PAIR) {
                        partner = effect_task(snap, &p->action.partner);
                        w[0] = fed ? effect_task(snap, &p->action.work_pair[0]) : t;
                        w[1] = fed ? effect_task(snap, &p->action.work_pair[1]) : partner;
                }
                /* Gone, or its pair (or the pair it feeds) broke up (a client
                 * disconnected): that is no verdict on the change, and nothing
                 * is blocked for it. */
                if (!t || (p->action.kind == DETECT_PAIR && (!partner || !w[0] || !w[1]))) {
                        effect_forget(tr, i);
                        continue;
                }
                v = effect_observe(&p->state, effect_proxy_on(p->action.kind, p->action.evidence_basis, w[0], w[1]),
                                   ++p->intervals, 0, tolerance);
                p->state.last.basis = p->action.evidence_basis;
                if (p->judge_response) {
                        vr = effect_observe(&p->response, snapshot_pair_new_response_usec(snap, w[0]->id.tid, w[1]->id.tid),
                                            p->intervals, 0, tolerance);
                        p->response.last.basis = EVIDENCE_RESPONSE;
                }
                if (bytes_fell(p, v, tolerance))
                        decided = &p->state;
                else if (v != EFFECT_PENDING)
                        decided = response_decides(p, v, vr, tolerance) ?: &p->state;
                else
                        decided = NULL;
                if (second_look(p, v, decided, tolerance))
                        decided = &p->state;
                if (!decided) {
                        i++;
                        continue;
                }
                /* an undo of a pair that went quiet: no verdict, nothing blocked */
                if (decided->last.verdict == EFFECT_UNDO && p->action.kind == DETECT_PAIR &&
                    p->state.last.after < EFFECT_QUIET_WORK && pair_went_quiet(w[0], w[1]) &&
                    (!fed || pair_went_quiet(t, partner))) {
                        effect_forget(tr, i);
                        continue;
                }
                if (decided->last.verdict == EFFECT_KEEP)
                        (void) gain_keep(tr, p, decided);
                verdict(&p->action, &decided->last, userdata);
                effect_forget(tr, i);
        }
}

void effect_forget_affinity(struct effect_tracker *tr) {
        for (size_t i = tr->n; i > 0; i--)
                if (tr->items[i - 1].action.type == ACT_AFFINITY)
                        effect_forget(tr, i - 1);
        tr->n_gains = 0;        /* every gain is of an affinity change */
}

void effect_tracker_clear(struct effect_tracker *tr) {
        free(tr->gains);
        free(tr->items);
        *tr = (struct effect_tracker) {};
}
