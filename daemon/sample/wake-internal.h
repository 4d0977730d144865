/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Internals of the wake sampler shared by wake.c (perf), wake-edges.c (the
 * decayed edge table), wake-fallback.c and the unit tests. Not for other
 * modules: they use wake.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample/snapshot.h"

/* ---- tracepoint formats: sched:sched_waking, sched:sched_switch ---- */

struct wake_tp_format {
        int id;                  /* tracepoint id (perf_event_attr.config), also its records' common_type */
        int type_offset;         /* `unsigned short common_type`: which tracepoint a record is; -1 if absent */
        int pid_offset;          /* the 4-byte tid field asked for: sched_waking's `pid` (the wakee),
                                  * sched_switch's `next_pid` (the thread switched in) */
        int target_cpu_offset;   /* `int target_cpu`: wakee's CPU before placement; -1 if absent */
        int flags_offset;        /* `unsigned char common_flags`; -1 if absent */
        size_t min_size;         /* raw records shorter than this are malformed */
};

/*
 * Parse the text of events/sched/<event>/format. Needs "ID:" and a 4-byte
 * field named pid_field; common_type (2 bytes), target_cpu (4 bytes) and
 * common_flags (1 byte) are used when present. Returns 0 or -EBADMSG.
 */
int wake_tp_format_parse(const char *text, const char *pid_field, struct wake_tp_format *ret);

/*
 * Find tracefs below root (sys/kernel/tracing, then sys/kernel/debug/tracing)
 * and parse events/sched/<event>/format. -ENOENT with why = "tracefs not
 * mounted ..." etc.
 */
int wake_tp_format_load(const char *root, const char *event, const char *pid_field, struct wake_tp_format *ret,
                        char *why, size_t why_size);

/*
 * The trace flags the kernel puts in common_flags (enum trace_flag_type,
 * unchanged since 2.6.x): a wake-up done in hard-irq or NMI context is
 * charged to whatever task was interrupted, so it says nothing about who
 * woke whom. Soft-irq wake-ups are kept: loopback networking wakes the
 * receiver from the sender's own softirq processing.
 */
#define WAKE_TRACE_FLAG_HARDIRQ 0x08
#define WAKE_TRACE_FLAG_NMI     0x40

/* ---- the edge table: one slot per (waker, wakee), decayed rates ---- */

struct wake_edge_slot {
        uint64_t key;            /* (waker << 32) | wakee; 0 = empty */
        double count;            /* wake-ups this window (sample weight = period) */
        unsigned samples;        /* samples this window (count is samples x their periods) */
        double split;            /* of which the waker ran on another CPU than the wakee's */
        double rate_per_s;       /* decayed */
        double split_per_s;      /* decayed */
        bool split_known;        /* target_cpu was available (perf) */

        /* response time (wake_edge_table_time()) */
        uint64_t asked_ns;       /* the last wake-up along this edge in pairing asked_round */
        uint64_t asked_round;    /* wake_edge_table.time_round when asked_ns was set */
        bool answered;           /* the wakee has woken the waker since asked_ns */
        double answer_sum_ns;    /* this window: sum of the times from a question to its asker running again */
        unsigned answers;
        double response_usec;    /* mean of the last window with WAKE_RESPONSE_MIN answers; 0: none */
        /* answered or not (wake_edge_table_time()): this window's counts,
         * and their sums over the windows (wake_edge_table_fold_observed()) */
        bool asked_split;        /* the wake-up at asked_ns was split */
        unsigned timed;          /* this window's wake-ups along the edge that were timed, split or not */
        unsigned split_next, split_unanswered;
        double sum_split_next, sum_split_unanswered;
};

struct wake_edge_table {
        struct wake_edge_slot *slots;
        size_t capacity;         /* power of two, 0 before the first insert */
        size_t n;
        size_t max_edges;        /* hard cap; new edges beyond it are counted and dropped */
        uint64_t dropped;
        uint64_t time_round;     /* wake_edge_table_time() calls: a question of an earlier one is stale */
        /* wake_edge_table_time()'s askers answered and not yet switched in, by tid (reused) */
        struct wake_waiting *waiting;
        size_t waiting_capacity;
};

/* Time constant of the decay; see wake.h. */
#define WAKE_EDGE_TAU_USEC (2 * UINT64_C(1000000))
/* The answered-or-not sums (wake_edge_slot.sum_split_next) hold the
 * latest this many counts (or one window's, when it has more) while bursts
 * time the edge, and halve over WAKE_UNANSWERED_HALF_LIFE_USEC while none
 * does (fold_unanswered()). */
#define WAKE_UNANSWERED_MEMORY 64.0
#define WAKE_UNANSWERED_HALF_LIFE_USEC (1 * UINT64_C(1000000))
/* Below this rate an edge is forgotten. */
#define WAKE_EDGE_PRUNE_PER_S 1.0
#define WAKE_EDGE_MAX_DEFAULT 65536

void wake_edge_table_init(struct wake_edge_table *t, size_t max_edges);
void wake_edge_table_done(struct wake_edge_table *t);

/*
 * Count weight wake-ups waker→wakee (split of them across CPUs), seen as
 * samples readings: 1 for a perf sample (weight is its period), more for
 * a figure that is no sample (the fallback's, from /proc's switch counts
 * over the window). An edge rises at once only on WAKE_EDGE_RISE_SAMPLES
 * of them in a window. -ENOMEM, -ENOSPC (full, counted).
 */
#define WAKE_EDGE_RISE_SAMPLES 3u
int wake_edge_table_add(struct wake_edge_table *t, pid_t waker, pid_t wakee, double weight, unsigned samples,
                        double split, bool split_known);

/* Close a window of window_usec: fold counts into the decayed rates, prune. */
int wake_edge_table_fold(struct wake_edge_table *t, uint64_t window_usec, uint64_t tau_usec);
/*
 * The same when the counts were taken over only observed_usec of the
 * window (the duty-cycled sampler: events open during a burst): the rate
 * of this window is count / observed, the decay runs on window_usec.
 */
int wake_edge_table_fold_observed(struct wake_edge_table *t, uint64_t window_usec, uint64_t observed_usec,
                                  uint64_t tau_usec);

/*
 * One wake-up of a burst with its time (CLOCK_MONOTONIC ns), one thread's
 * switch-in (waker WAKE_TIMED_SWITCH_IN, wakee the thread sched_switch put
 * on its CPU), or an interrupt's wake-up (waker WAKE_TIMED_INTERRUPT: no
 * edge, but the wakee had slept): the sampler keeps them while every CPU
 * samples every one (period 1), and pairs them at the burst's end.
 */
struct wake_timed {
        uint64_t t_ns;
        pid_t waker, wakee;
        bool split;      /* a wake-up whose wakee last ran on another CPU than the waker's (target_cpu) */
};

#define WAKE_TIMED_SWITCH_IN 0
#define WAKE_TIMED_INTERRUPT (-1)

/* An asker whose answer came, waiting for its switch-in (wake_edge_table_time()). */
struct wake_waiting {
        pid_t tid;                    /* 0: empty */
        uint64_t round;               /* the time_round it was set in: older ones are empty */
        uint64_t asked_ns;
        struct wake_edge_slot *slot;  /* the asker's edge to the one that answered; NULL: switched in since */
};

/* Answers per window below which an edge's response time is not given:
 * the mean of fewer is one slow answer's. */
#define WAKE_RESPONSE_MIN 8

/*
 * Response times: sort ev by time and give each wake-up A→B that B answers
 * (B→A, the first after it) the time from A→B to A's next switch-in after
 * that answer, on the slot of A→B. For a client's request that is what the
 * client waits: the wake-up of the server, its work, its reply, and the
 * client's own wake-up, which is what co-location changes most (a split
 * pair pays a cross-CPU wake-up each way; a co-located one waits for the
 * server to sleep). The answer alone would time only the server's half:
 * under stress-ng that half read 86 -> 96 us when co-located while the
 * client's 95th percentile fell 703 -> 470 us. The events must be every
 * wake-up and switch-in of their CPUs (period 1): at a longer period a
 * request's answer may be one not sampled, and the next sampled one is
 * rounds later. A wait whose end is not seen is not timed: its asker woke
 * someone (it ran), or was woken again (it slept again: an answer that
 * came while it was still on its CPU, read without sleeping). Edges not in
 * t are skipped (dropped when the table was full). Reorders ev. -ENOMEM
 * leaves the edges without this burst's times.
 *
 * The same pass counts, on each edge A→B, the split wake-ups that follow
 * a split A→B of the burst, and of them those B had not answered (no B→A
 * in between): A woke B again without waiting for B, it ran on (see
 * wake_edge.split_unanswered). After a wake-up on one CPU the answer may
 * have come while A was preempted by B, which is not traced, so a split
 * one after it says nothing.
 */
int wake_edge_table_time(struct wake_edge_table *t, struct wake_timed *ev, size_t n);

/* Export the live edges into a growable array sorted by (waker, wakee). */
int wake_edge_table_export(const struct wake_edge_table *t, struct wake_edge **buf, size_t *allocated,
                           size_t *ret_n);

/* ---- fallback: shared pipes / unix-socket peers + matched switch rates ---- */

struct wake_fallback;

int wake_fallback_new(const char *root, struct wake_fallback **ret);
struct wake_fallback *wake_fallback_free(struct wake_fallback *f);

/* "pipes+unix-sockets", or "pipes" when sock_diag is not available. */
const char *wake_fallback_what(const struct wake_fallback *f);

/* Tests: answer unix-socket peer queries from a table instead of sock_diag. */
void wake_fallback_set_peers(struct wake_fallback *f, const uint32_t (*pairs)[2], size_t n);

/*
 * Look at this window's busy-switching tasks and add estimated edges for
 * window_usec into t (both directions, split unknown). Returns the number
 * of pairs found or -ENOMEM.
 */
int wake_fallback_scan(struct wake_fallback *f, const struct task *tasks, size_t n_tasks,
                       uint64_t window_usec, struct wake_edge_table *t);

/*
 * Minimum voluntary switches/s for a thread to be a fallback candidate:
 * each wake-up of a sleeping task is one voluntary switch of it, so a pair
 * at 2000 wake-ups/s each way switches ≥2000/s; half of that leaves room
 * for the snapshot's rate noise. Higher than the detector's default
 * WakeRate= (100/s): the fallback pairs threads by their switch rates
 * alone, and below this rate too many unrelated threads match.
 */
#define WAKE_FALLBACK_MIN_SWITCH_PER_S 1000.0
/* Two threads' switch rates must be within this factor to be paired. */
#define WAKE_FALLBACK_MATCH_RATIO 0.5

/* ---- the hot threads at the last burst (wake-hot.c) ---- */

struct wake_hot_task {
        pid_t tid;
        uint64_t start_time;
        double switches_per_s;   /* voluntary, over the pass before the burst */
        cpumask_t allowed;       /* its CPU mask at the burst, or as last said repinned */
        bool hot;                /* switching voluntarily at min_per_s or more; else busy by all switches */
        bool paired;             /* in a wake-up edge at the pair floor then (wake_hot_record_pairs()) */
};

struct wake_hot_cpu {
        pid_t tid;
        int cpu;                       /* its last CPU in the pass looked at; -1: not seen */
};

struct wake_hot {
        struct wake_hot_task *items;   /* sorted by (tid, start_time) */
        size_t n, allocated;
        double min_per_s;              /* hot: at least this many voluntary switches/s */
        bool valid;                    /* recorded since the last failure */

        /* pairs the last burst saw together, and their members' CPUs */
        pid_t (*pairs)[2];
        size_t n_pairs, pairs_allocated;
        struct wake_hot_cpu *members;  /* sorted by tid, unique */
        size_t n_members;
};

/* Record the threads switching at least min_per_s now (hot: voluntarily;
 * the others with voluntary and involuntary switches together). -ENOMEM:
 * nothing is recorded, and wake_hot_changed() says changed until the next
 * record. */
int wake_hot_record(struct wake_hot *h, const struct task *tasks, size_t n_tasks, double min_per_s);
/* Record the pairs the edges show together (most wake-ups on the wakee's
 * CPU) at min_per_s or more: the ones the kernel may split between bursts;
 * and mark the recorded threads in any edge at that rate, split or not
 * (wake_hot_task.paired). After wake_hot_record() of the same burst.
 * -ENOMEM: changed until the next record, as above. */
int wake_hot_record_pairs(struct wake_hot *h, const struct wake_edge *edges, size_t n_edges, double min_per_s);
/* What a burst could see that the last one did not (wake-hot.c); 0: nothing. */
enum wake_hot_change {
        WAKE_HOT_SAME = 0,
        WAKE_HOT_MOVED,          /* a thread newly hot, its rate doubled or halved, a together pair apart */
        WAKE_HOT_REPINNED,       /* a thread busy in a pair at the last burst has another CPU mask: a
                                  * placement no burst has watched */
};
enum wake_hot_change wake_hot_changed(struct wake_hot *h, const struct task *tasks, size_t n_tasks);
void wake_hot_free(struct wake_hot *h);
