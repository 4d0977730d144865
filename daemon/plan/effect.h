/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The effect check: after a change, did the target get slower? Pure: no
 * I/O, no clock; the manager feeds it numbers.
 *
 * The planner puts a throughput proxy into action.evidence_before
 * (effect_proxy_for() below: a hog's useful CPU, a pair's round trips, a
 * run-delay victim's run delay). After the change effect_track() keeps an
 * effect_state per action, effect_check() feeds it the same proxy once per
 * interval (effect_observe() drops the first: its window straddles the
 * change) and on EFFECT_UNDO the manager releases the change (applier_apply VERB_RELEASE) and
 * calls plan_state_block(key, now + RetryAfter) so the planner does not
 * retry.
 *
 * Noise guard: no verdict before min_samples samples, and the verdict
 * uses their median, so one disturbed interval neither undoes a good
 * change nor keeps a bad one. The effects this guards against are large
 * (plan/plan-pair.c, measured here: a pipe ping-pong pair ~260k round
 * trips/s on one CPU vs ~90k split, ~3x; [conservative-smp]: naive pinning 1373 s vs 1019 s, -26 %), beyond
 * the default 10 % tolerance. Single samples are not: a shell busy loop
 * on this 2-CPU machine under load (loadavg 40, other builds running),
 * sampled over 1 s intervals, read util .41 .49 .36 .35 .40 .51 .44 .22.
 * Medians of 3 consecutive samples still swing -11..+9 % around the
 * overall 0.405; medians of 5 stay at 0.40 (±1 %). Hence 5 by default.
 * The planner's evidence_before should be a median over a window too.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "apply/action.h"
#include "sample/snapshot.h"

#define EFFECT_TOLERANCE_DEFAULT 0.10   /* EffectTolerance=10% */
#define EFFECT_MIN_SAMPLES_DEFAULT 5    /* intervals after the change before a verdict */
#define EFFECT_MAX_SAMPLES 16

enum effect_verdict {
        EFFECT_PENDING, /* not enough samples yet */
        EFFECT_KEEP,   /* not worse beyond tolerance (or nothing to compare with) */
        EFFECT_UNDO,   /* worse beyond tolerance: roll back */
};

enum effect_direction {
        EFFECT_HIGHER_IS_BETTER,   /* util, wake rate, switch rate */
        EFFECT_LOWER_IS_BETTER,    /* run delay */
};

struct effect_params {
        double tolerance;              /* fraction, 0.10 = 10 % */
        unsigned min_samples;          /* noise guard; 0 counts as 1 */
        enum effect_direction direction;
        double min_abs;                /* ignore changes smaller than this in absolute units (0: none) */
};

/* Defaults: 10 %, 5 samples, higher is better, no absolute floor. */
struct effect_params effect_params_default(void);

struct effect_result {
        enum effect_verdict verdict;
        double before;
        double after;                  /* median of the samples used */
        double change;                 /* relative, signed so that > 0 is better, < 0 worse */
        unsigned n;                    /* samples used */
        enum evidence_basis basis;     /* effect_check(): what was judged (the action's, or its response) */
        bool second_look;              /* effect_check(): an undo for a second look at the kernel's
                                        * placement, not a loss (plan_state_second_look()) */
        char why[160];                 /* "util 0.98 -> 0.71 (-28 %, 3 samples) worse than 10 %: undo" */
};

/*
 * Judge samples taken after the change against before. NaN samples are
 * ignored; at most the newest EFFECT_MAX_SAMPLES are used. before <= 0
 * (no baseline) gives EFFECT_KEEP. Returns 0, or -EINVAL for a negative
 * or non-finite tolerance.
 */
int effect_judge(double before, const double *after, size_t n_after, const struct effect_params *p,
                 struct effect_result *ret);

/* A small ring of the newest samples, for the manager to keep per action. */
struct effect_samples {
        double v[EFFECT_MAX_SAMPLES];
        unsigned n;                    /* valid samples, <= EFFECT_MAX_SAMPLES */
        unsigned next;                 /* write position */
};

void effect_samples_add(struct effect_samples *s, double v);
/* Copy out oldest first; returns the count. */
size_t effect_samples_get(const struct effect_samples *s, double *ret, size_t size);

const char *effect_verdict_to_string(enum effect_verdict v);

/*
 * The proxy: what the planners put into evidence_before and what the
 * manager measures after the change, one function for both so the live
 * check is the tested one. NAN when it cannot be measured (no rates yet,
 * the partner is gone): a NAN sample is ignored.
 *
 *  - hog, spread group: util, the CPU the thread got to use;
 *  - pair: its round trips/s, read as the mean of both members' context
 *    switches/s, voluntary plus involuntary. Each member switches once a
 *    round trip wherever it runs, but on one CPU the wake-up preempts the
 *    waker, so its voluntary switch becomes an involuntary one. Measured
 *    here, MariaDB + sysbench point selects: the server thread's voluntary
 *    switches read 11,260/s split and 317/s co-located while the queries
 *    went from 10k/s to 55k/s; its util went 0.72 -> 0.52 (a co-located
 *    ping-pong needs less CPU per request). Neither is a rate of work;
 *    the sum of both kinds is;
 *  - run-delay victim: run delay in ms/s (lower is better).
 *
 * A pair whose members move bytes through read()/write() (each side at
 * least a byte a switch, through a call every two switches or calls that
 * block: pipes, FIFOs, read/write sockets; effect.c, moves_its_bytes())
 * is judged by those bytes instead (EVIDENCE_IO_BYTES): the work it gets
 * done. A stream (both sides busy, pipelined) taken for a ping-pong on a
 * loaded machine, where its squeezed sides look like one, switches more
 * on one CPU while it moves fewer bytes; by its bytes it is undone. A
 * server that uses recv()/send() moves 0 there (or other bytes, in other
 * calls) and keeps the switches.
 *
 * A pair's response time (EVIDENCE_RESPONSE, snapshot_pair_response_usec():
 * what its client waits for an answer) is not a proxy of its own: it is
 * judged beside the above where that stayed within the tolerance or its
 * switches fell (effect_check()).
 */
enum evidence_basis effect_basis_for(enum detector kind, const struct task *t, const struct task *partner);
/* The proxy on a given basis (NAN where it cannot be had now). */
double effect_proxy_on(enum detector kind, enum evidence_basis basis, const struct task *t, const struct task *partner);
/* The same on effect_basis_for()'s basis: for the planners' evidence_before. */
double effect_proxy_for(enum detector kind, const struct task *t, const struct task *partner);
enum effect_direction effect_direction_for(enum detector kind);

/*
 * Per-action state for the manager: one sample per interval after the
 * change. effect_observe(s, value, intervals, settle, tolerance):
 * intervals counts the intervals since the change (1 = the first sample
 * after it). That first sample's window straddles the change and is
 * dropped; there is no verdict before `settle` intervals nor before
 * s->min_samples kept samples (EFFECT_MIN_SAMPLES_DEFAULT unless the
 * caller changes it after init). Returns EFFECT_PENDING until then, and
 * from then on the verdict of effect_judge() on the newest samples
 * (s->last says why; s->after_median is its median).
 */
struct effect_state {
        double before;
        double after_median;
        unsigned min_samples;
        enum effect_direction direction;
        struct effect_samples samples;
        struct effect_result last;
};

void effect_state_init(struct effect_state *s, double before);
/* The same with the proxy's direction known (effect_direction_for()). */
void effect_state_init_full(struct effect_state *s, double before, enum effect_direction direction);
enum effect_verdict effect_observe(struct effect_state *s, double value, unsigned intervals, unsigned settle,
                                   double tolerance);

/*
 * The changes waiting for their verdict, one per affinity SET with a
 * proxy measured before it (action.evidence_before > 0). The manager
 * tracks each SET it applied (effect_track()), and once a pass, after
 * sampling, has each judged (effect_check()): a change whose target or
 * pair partner is gone is forgotten with no verdict (a client that
 * disconnected says nothing of the change), one that made its target
 * slower is handed to undo(), which releases it and blocks its retry.
 */
struct effect_pending {
        struct action action;        /* the SET applied; action.kind says what the proxy is */
        unsigned intervals;          /* passes since it was applied */
        struct effect_state state;
        /* a pair with a response time before (action.response_before_usec):
         * the same, of its response time (lower is better) */
        bool judge_response;
        struct effect_state response;
};

/*
 * A change in force with its verdict: what the effect check measured
 * before and after it, on the basis it was judged by. The gain an operator
 * is shown (affctl actions, pairs, status, metrics): after / before, > 1
 * better (for run delay, before / after).
 */
struct effect_gain {
        struct task_id task;
        enum detector kind;
        enum evidence_basis basis;
        double before, after;
        double gain;
};

struct effect_tracker {
        struct effect_pending *items;
        size_t n;
        struct effect_gain *gains;   /* kept changes, until released or their task is gone */
        size_t n_gains;
};

/* The measured gain of the change in force on this task, or NULL (none yet). */
const struct effect_gain *effect_gain_of(const struct effect_tracker *tr, const struct task_id *task);
/* The change on this task was released: its gain is no longer in force. */
void effect_gain_forget(struct effect_tracker *tr, const struct task_id *task);
/* "bytes/s", "round trips/s" (switches), "response us", "util", "run delay": what a gain is of. */
const char *effect_measure_name(enum detector kind, enum evidence_basis basis);

/* Track a SET of ours; anything else is ignored. -ENOMEM: not tracked (the
 * effect check is a safety net; running without it beats failing). */
int effect_track(struct effect_tracker *tr, const struct action *a);
/*
 * The change on this task ended (released) or is replaced (a new SET: a
 * hog or pair moved, re-spanned): the verdicts still pending on it go. A
 * verdict on a change no longer in force judges something else (a hog
 * released when hogs outnumbered CPUs, sharing them, read as a pin that
 * lost), and its undo released the change that replaced it, or blocked
 * the target for RetryAfter= for nothing. Not from within effect_check()'s
 * verdict callback.
 */
void effect_forget_task(struct effect_tracker *tr, const struct task_id *task);
/*
 * Judge every tracked change on snap; verdict(action, result, userdata) for
 * each that got one: EFFECT_UNDO (slower beyond tolerance: the caller
 * releases it) or EFFECT_KEEP (its gain is kept, effect_gain_of()). Gains
 * of tasks gone from snap are dropped.
 *
 * A pair is judged by its round trips (or bytes) first: fewer beyond the
 * tolerance is an undo, more beyond it a keep. Within it, which is what a
 * client sending at a fixed rate shows whatever the placement, or with
 * fewer switches (no work at a fixed rate), its response time decides
 * (EVIDENCE_RESPONSE in result.basis): longer beyond the tolerance is an
 * undo, else a keep with the response's gain.
 * Without enough response times by then (a pair sampled one wake-up in
 * several, the fallback) the round trips' verdict stands.
 */
void effect_check(struct effect_tracker *tr, const struct snapshot *snap, double tolerance,
                  void (*verdict)(const struct action *a, const struct effect_result *res, void *userdata),
                  void *userdata);
/* Forget the affinity changes: under a sched_ext scheduler their releases
 * end them, and a verdict would judge the BPF scheduler, not the change. */
void effect_forget_affinity(struct effect_tracker *tr);
void effect_tracker_clear(struct effect_tracker *tr);
