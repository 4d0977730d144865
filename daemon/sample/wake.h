/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The wake-up graph: who wakes whom, how often, and whether waker and wakee
 * sat on different CPUs when it happened. It feeds detect_pairs() ([wake-affine],
 * wake_affine: an RPC ping-pong pair runs far better on one CPU; measured
 * here with a pipe ping-pong ~260k round trips/s on one CPU, ~90k split
 * across two).
 *
 * Sources, best first; wake_sampler_source() says which one is in use:
 *
 *  "perf"  the sched:sched_waking tracepoint, one perf event per online CPU
 *          (pid -1, cpu N), PERF_SAMPLE_TID|RAW into a ring buffer per
 *          CPU. Waker = the sample's tid (the task running when it woke
 *          someone), wakee = the tracepoint's `pid` field, waker CPU = the
 *          ring's CPU, wakee CPU = `target_cpu` (task_cpu(wakee) before
 *          select_task_rq, i.e. where it last ran). Offsets come from the
 *          tracepoint's format file, never hard-coded. The sample period
 *          adapts so at most max_events_per_s samples are taken (about 1 µs
 *          each at period 1 here; hackbench makes millions of wake-ups/s).
 *          Duty-cycled: the events exist only during a burst (default
 *          100 ms) that ends just before each wake_sampler_edges() call, at
 *          the caller's measured cadence; they are opened per CPU at its
 *          start and closed at its end, because an enabled tracepoint costs
 *          every wake-up on the machine even unsampled. The period is set
 *          per CPU per burst from the last burst's exact event count, under
 *          the budget and under the kernel's perf_event_max_sample_rate, so
 *          the kernel does not throttle; a fresh event per burst also means
 *          a throttle cannot outlive its burst. Source string: "perf, 100 ms
 *          bursts before each pass" ("perf" when continuous).
 *  "fallback:..."  perf not permitted (EACCES/EPERM: perf_event_paranoid,
 *          no CAP_PERFMON), no tracefs, or a root prefix other than "/"
 *          (perf sees the real system, not a fixture tree), or
 *          wake_sampler_disable_perf(): threads with high voluntary
 *          switch rates whose processes share a pipe, or hold the two ends
 *          of a unix socket (peers from sock_diag), paired when their switch
 *          rates match. Weaker: no direction, no split evidence
 *          (split_fraction -1), rate = the smaller switch rate.
 *  "none: <why>"  neither works.
 *
 * Rates are per second of on-time (the bursts), scaled by the sample
 * period; a rise is taken at once (on three samples or more in the window,
 * wake-edges.c), and a fall decays: an EWMA per call of
 * wake_sampler_edges() that had a burst since the last one, with a 2 s
 * time constant, so a pair that goes quiet falls below the default 100/s
 * threshold within a few seconds and edges below 1/s are pruned.
 *
 * Use from the manager (one sd-event loop, no threads):
 *
 *   wake_sampler_new(root, topo, cfg.wake_sample_period, cfg.max_wake_events_per_s, &ws);
 *   wake_sampler_attach(ws, event);     // sd_event_add_io per ring buffer
 *   each interval, after sampler_sample():
 *     wake_sampler_set_tasks(ws, snap->tasks, snap->n_tasks);  // fallback input
 *     wake_sampler_edges(ws, now_usec, &snap->edges, &snap->n_edges);
 *     snap->wake_source = wake_sampler_source(ws);
 *   on CPU hotplug: wake_sampler_set_topology(ws, new_topo);
 *   on reload: wake_sampler_set_limits(ws, period, max_events_per_s);
 *
 * wake_sampler_new() does not fail because perf is not permitted: it falls
 * back and says why in the status. It fails only on bad arguments or OOM.
 */

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "sample/snapshot.h"
#include "sample/topology.h"

struct wake_sampler;
struct plan_state;
struct findings;

struct wake_status {
        char source[256];            /* as wake_sampler_source() */
        char perf_error[128];        /* why perf is not used; "" when it is */
        bool perf;                   /* perf events are open */
        bool adaptive;
        unsigned n_cpus;             /* perf events open (one per CPU) */
        uint64_t period;             /* current sample period (1 = every wake-up) */
        uint64_t max_samples_per_s;  /* budget the adaptive period keeps to */
        double events_per_s;         /* sched_waking rate seen (samples × period + lost) per second of on-time */
        double samples_per_s;        /* records read per second (wall time), last window */
        uint64_t samples;            /* cumulative records read */
        uint64_t lost;               /* cumulative samples lost (PERF_RECORD_LOST) */
        uint64_t throttled;          /* PERF_RECORD_THROTTLE seen (kernel's max sample rate) */
        uint64_t period_changes;
        uint64_t edges_dropped;      /* new edges refused because the table was full */
        uint64_t burst_usec;         /* duty cycle: length of a burst; 0 = events always open */
        uint64_t cadence_usec;       /* measured time between wake_sampler_edges() calls */
        bool on;                     /* events enabled now (in a burst) */
        double duty_frac;            /* on-time / wall time, last window */
        uint64_t bursts;             /* bursts started */
        uint64_t burst_open_errors;  /* bursts that could not open or enable their events (retried next time) */
        uint64_t event_opens;        /* perf events opened since start (parked between bursts when it pays) */
        bool events_parked;          /* open and disabled between bursts */
        double park_max_per_s;       /* above this all-CPU rate events are closed after a burst, not parked */
        double burst_events_per_s;   /* all CPUs' sched_waking rate in the last burst (what parking goes by) */
        uint64_t quiet_skips;        /* bursts skipped by the quiet gate */
        uint64_t settled_skips;      /* bursts skipped by the settled stride */
        unsigned burst_every;        /* the stride: a burst before one call in this many (1: each) */
        double switches_per_s;       /* machine-wide context switches/s, as the gate last saw them */
        double gate_floor_per_s;     /* the gate's WakeRate floor; 0: no gate, < 0: no pair policy, no bursts */
        size_t n_edges;
        double drain_cpu_frac;       /* CPU time spent draining, fraction of one CPU, last window */
};

int wake_sampler_new(const char *root, const struct topology *topo, uint64_t sample_period,
                     uint64_t max_events_per_s, struct wake_sampler **ret);
struct wake_sampler *wake_sampler_free(struct wake_sampler *ws);

/*
 * Data pages of each CPU's ring buffer on a machine of n_cpus possible
 * CPUs (a power of two, at least 1): the default, halved until all rings
 * fit the sampler's total budget. What wake_sampler_new() starts from
 * (an mmap refused for the lock limit halves it further), and what
 * bench/scale reports for machines it cannot open events on.
 */
unsigned wake_ring_pages(unsigned n_cpus, size_t page_size);

/* Switch to the fallback now (e.g. affinityd --no-perf); why goes into the status. */
int wake_sampler_disable_perf(struct wake_sampler *ws, const char *why);
/* Fixed period (benchmarks of the adaptation); on by default. */
void wake_sampler_set_adaptive(struct wake_sampler *ws, bool on);
/* The wake-up rate above which events are closed between bursts rather than
 * parked; <= 0 restores the default. For tests, which need both sides of it
 * whatever rate this host's storm reaches. */
void wake_sampler_set_park_max(struct wake_sampler *ws, double events_per_s);
/*
 * Duty cycle: events open for burst_usec before each expected call of
 * wake_sampler_edges(); 0 = always open (the cost figures in
 * BENCHMARKS.md compare both). Default 100 ms.
 */
int wake_sampler_set_duty(struct wake_sampler *ws, uint64_t burst_usec);
/* The caller will call wake_sampler_edges() early, at at_usec (a pass brought
 * forward): a burst is placed before it, and that call does not change the
 * measured cadence the regular bursts follow. */
void wake_sampler_expect_call(struct wake_sampler *ws, uint64_t at_usec);
/* The same without a burst before it: a call out of cadence that wants a
 * window of /proc of its own (the manager's recheck of a pair held back
 * for a newborn member), and keeps the edges of the last burst. */
void wake_sampler_expect_unsampled_call(struct wake_sampler *ws);
/* How long before an expected call its burst starts (wake_sampler_expect_call()):
 * 0 where there are no bursts (events open all the time, no perf). */
uint64_t wake_sampler_burst_lead_usec(const struct wake_sampler *ws);
/* The last call's edges come from a burst since the call before (or the
 * events are open all the time): false where that call kept the edges of
 * an older burst (a skipped one, or one expected without a burst). */
bool wake_sampler_edges_fresh(const struct wake_sampler *ws);
/* The lowest WakeRate= of the enabled pair policies (detect_pair_rate_floor()):
 * bursts are skipped while the machine switches less than half that often;
 * < 0 (no pair policy): no bursts; 0 (the default): no gate. */
void wake_sampler_set_floor(struct wake_sampler *ws, double wake_rate_min_per_s);
/*
 * The settled stride: bursts before one call in `every` only, while the
 * caller's placement is settled (the manager: passes that changed nothing
 * and wait for no verdict). Each burst costs every wake-up on the machine
 * (see "Duty cycle" in wake.c), so a machine whose pairs are all placed
 * pays a quarter of it at 4. Skipped calls keep the edges at their last
 * rates, not an observed zero. A burst is taken all the same before a
 * call brought forward (wake_sampler_expect_call()) and before the call
 * after one whose threads (wake_sampler_set_tasks()) were not those of the
 * last burst: a thread newly switching at half the gate's floor or more,
 * one whose switch rate doubled or halved, a pair the last burst saw
 * together now on two CPUs, or a thread busy then with another CPU mask
 * now (wake-hot.c). 1: each call
 * (the default). Needs a gate floor > 0 (wake_sampler_set_floor()).
 */
void wake_sampler_set_stride(struct wake_sampler *ws, unsigned every);
/* The stride at which the bursts, at the caller's measured cadence, cover
 * at most `share` of the time (at least 1; 1 with events always open). */
unsigned wake_sampler_stride_for_share(const struct wake_sampler *ws, double share);
/* The last call's threads moved while the stride skips bursts: the caller
 * may bring its next call forward (wake_sampler_expect_call()) to look sooner. */
bool wake_sampler_burst_wanted(const struct wake_sampler *ws);
/* The last call saw a thread of a pair at the last burst, busy still, with
 * another CPU mask (a burst-fed call too): a placement no burst has
 * watched, so the caller's placement is not settled. */
bool wake_sampler_hot_repinned(const struct wake_sampler *ws);
/* When the last burst that ended started and ended, its rings drained
 * (CLOCK_MONOTONIC µs); false before the first one ends, while a new one is
 * on or after one was cut short (a fall back from perf), and with events
 * open all the time. */
bool wake_sampler_last_burst(const struct wake_sampler *ws, uint64_t *start_usec, uint64_t *end_usec);
/* New configuration values (reload). Period 0 keeps, max 0 = unlimited. */
int wake_sampler_set_limits(struct wake_sampler *ws, uint64_t sample_period, uint64_t max_events_per_s);
/* Online CPUs changed: open/close per-CPU events. topo is not kept. */
int wake_sampler_set_topology(struct wake_sampler *ws, const struct topology *topo);

/*
 * Watch the ring buffers from the loop: one sd_event_add_io per CPU. The
 * events wake the loop only when a ring is half full (watermark), not per
 * wake-up; the rest is read by wake_sampler_drain()/wake_sampler_edges().
 * No-op with the fallback.
 */
int wake_sampler_attach(struct wake_sampler *ws, sd_event *e);

/* Read everything the rings hold; adapts the period. Returns samples read or -errno. */
int wake_sampler_drain(struct wake_sampler *ws);

/* Input of the fallback: this interval's tasks with their nvcsw_per_s.
 * Borrowed until the next wake_sampler_edges(). Harmless with perf. */
void wake_sampler_set_tasks(struct wake_sampler *ws, const struct task *tasks, size_t n_tasks);

/*
 * Close the window at now_usec (CLOCK_MONOTONIC): drain, fold this window's
 * counts into the decayed rates, prune, and return the edges. The array
 * belongs to the sampler and stays valid until the next call or free.
 * Returns the number of edges or -errno.
 */
int wake_sampler_edges(struct wake_sampler *ws, uint64_t now_usec, struct wake_edge **ret_edges,
                       size_t *ret_n);

/* "perf", "fallback:pipes+unix-sockets", "none: <why>"; valid while ws lives. */
const char *wake_sampler_source(const struct wake_sampler *ws);
void wake_sampler_status(const struct wake_sampler *ws, struct wake_status *ret);
