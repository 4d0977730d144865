/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What co-location buys on this machine: a pipe ping-pong between two of
 * the daemon's own threads, run on one CPU and across CPUs at each level
 * of the topology (SMT sibling, another core of the same LLC, another LLC,
 * another NUMA node), interleaved, medians of CALIB_ROUNDS short runs. The
 * same pair of threads is 1.2x faster on one CPU than split on one host of
 * a machine kind and 4-30x on another: a rule with a fixed figure is right
 * on one of them only, so the pair rules ask this instead.
 *
 * Only the daemon's own two threads are pinned (pthread_setaffinity_np),
 * for CALIB_RUN_USEC at a time; nothing of anyone else is touched. Run at
 * start and when the CPUs change (hotplug), and again where a free reading
 * came from busy CPUs or the probe was starved (CALIB_BUSY_MAX): about
 * 0.3 s of two threads.
 */

#include <stdbool.h>
#include <stdint.h>

#include "common/cpumask.h"
#include "sample/topology.h"

#define CALIB_LEVELS_MAX 4
#define CALIB_RUN_USEC (20 * 1000ULL)
#define CALIB_ROUNDS 3
/*
 * Below this the gain is noise: medians of 20 ms runs on a loaded 2-CPU
 * machine wander by a few percent, and a pair co-located for less than 5 %
 * is not worth a pinned thread the balancer can no longer move.
 */
#define CALIB_GAIN_MIN 1.05
/*
 * A level read under CALIB_GAIN_MIN (and believed: CALIB_BUSY_MAX)
 * leaves the pairs split there to the kernel, which loses 1.2-30x where
 * the reading was noise, while a level read as paying when it does not costs a pin the effect check can undo.
 * So a reading that some level is free is measured once more at once, and
 * each level keeps the larger gain of the two (calibration_merge()). In
 * the topology VM (8 vCPUs of TCG on 2 host CPUs) one level read 1.29x to
 * 5.86x from one daemon start to the next; in one CI run a pair the kernel
 * had moved onto two cores of one socket stayed split past its test's
 * deadline (the likeliest reason a low reading of that level; the log did
 * not say) while the guest's co-located pair made 3x its round trips.
 */
#define CALIB_READINGS_FOR_FREE 2
/*
 * A free reading is believed only where the CPUs it was measured on were
 * quiet: each busy under CALIB_BUSY_MAX of a pass window next to the
 * measurement (calibration_quiet()). Someone else's threads on those CPUs
 * share them with the probe and bend its ratio either way. With a pipe
 * ping-pong held on CPUs 0 and 1 (a split pair, what the daemon is there
 * for) the probe read 0.91-0.93x at 5 starts of 8 on a host where a pair
 * on one CPU makes 2.5x its split rate, and that pair was left to the
 * kernel (the container test, in CI); stress-ng's compute at 10-40 % of
 * both CPUs made the same host read 2.2-5.0x. A doubtful free reading
 * leaves pairs to their policies (the effect check judges what a pin
 * does) and is measured again once a pass finds those CPUs quiet, at most
 * once a CALIB_RETRY_USEC: on a busy machine a quiet window can be a
 * short lull. So is a probe that got no CPU time in time (starved).
 * A reading that pays is used as read: it only prices the share of split
 * wake-ups a pin waits for, and the effect check undoes a pin that does
 * not pay.
 */
#define CALIB_BUSY_MAX 0.20
#define CALIB_RETRY_USEC (60 * 1000000ULL)

enum calib_level {
        CALIB_SMT,        /* two hardware threads of one core */
        CALIB_CORE,       /* two cores sharing an LLC */
        CALIB_LLC,        /* two LLCs of one node */
        CALIB_NODE,       /* two NUMA nodes */
        _CALIB_LEVEL_MAX,
};

struct calib_result {
        enum calib_level level;
        int cpu_a, cpu_b;            /* the two CPUs measured */
        double split_per_s;          /* round trips/s, one thread on each */
        double gain;                 /* same-CPU round trips over split ones */
};

struct calibration {
        bool done;                   /* false: not measured (too few CPUs, or failed: why) */
        int cpu;                     /* the CPU of the same-CPU runs */
        double same_per_s;           /* round trips/s, both threads on cpu */
        struct calib_result levels[CALIB_LEVELS_MAX];
        int n_levels;
        double gain_max;             /* the largest gain over the levels (0: none measured) */
        uint64_t cost_usec;          /* wall time it took */
        unsigned readings;           /* measurements merged in (CALIB_READINGS_FOR_FREE) */
        uint64_t from_usec, at_usec; /* CLOCK_MONOTONIC when it began and ended (done or not) */
        bool starved;                /* !done: the probe got no CPU time in time (busy CPUs) */
        bool busy_known;             /* busy was read from a pass window (calibration_note_busy()) */
        double busy;                 /* the busiest of its CPUs in that window, 0..1 */
        char why[128];               /* when !done */
};

const char *calib_level_to_string(enum calib_level l);

/* Merge a second measurement into c: per level the larger gain (with its
 * split rate), the largest of them, the cost of both; readings counts it. */
void calibration_merge(struct calibration *c, const struct calibration *next);

/* A probe that outlived the caller's wait (starved): it runs on until its
 * echo gets CPU time, and owns its threads and pipes till then. */
struct calib_job;

/*
 * Measure on the CPUs of topo that allowed holds (the daemon's own mask).
 * Returns 0 with ret->done, or 0 with !ret->done and why (fewer than two
 * usable CPUs; starved); -errno if threads or pipes could not be made.
 * pending (may be NULL) keeps a starved probe: while it still runs no
 * other starts, since two probes on the same CPUs would each read the
 * other's load as the cost of a split; the call returns starved instead.
 */
int calibrate(const struct topology *topo, const cpumask_t *allowed, struct calib_job **pending,
              struct calibration *ret);

/* Let go of a pending probe (it frees itself when it ends); NULL-tolerant. */
struct calib_job *calib_job_unref(struct calib_job *j);

/* The gain for a pair whose members were last on CPUs a and b (the level
 * that separates them), or the largest measured when a or b is unknown;
 * 0 when nothing was measured. */
double calibration_gain_for(const struct calibration *c, const struct topology *topo, int a, int b);

/* Level l was measured, a split there buys under CALIB_GAIN_MIN from
 * co-location, and the reading is believed (calibration_quiet()): two
 * CPUs of that level are as good as one for a pair. */
bool calibration_free_at(const struct calibration *c, enum calib_level l);

/* Like calibration_free_at(), for the level that separates CPUs a and b
 * (every level, when a or b is unknown: calibration_gain_for()). */
bool calibration_free_between(const struct calibration *c, const struct topology *topo, int a, int b);

/* Some level was read free: what calibration_quiet() must confirm. */
bool calibration_reads_free(const struct calibration *c);

/* Some level was read free, and is not believed (not yet checked, or its
 * CPUs were busy): what a quiet window measures again. */
bool calibration_doubtful(const struct calibration *c);

/* It was measured (not starved) and its CPUs were found quiet (under
 * CALIB_BUSY_MAX) in a pass window next to the measurement: its free
 * readings are believed. */
bool calibration_quiet(const struct calibration *c);

/* The busiest of the CPUs c was measured on (its own and each level's
 * partner) in a pass window (cpus: n_cpus entries), 0..1; where c was not
 * measured, of those in usable (where it would measure). */
struct cpu_sample;
double calibration_cpus_busy(const struct calibration *c, const struct cpu_sample *cpus, int n_cpus,
                             const cpumask_t *usable);

/* Record busy, read from a pass window next to the measurement. */
void calibration_note_busy(struct calibration *c, double busy);

/*
 * What a pass window [from_usec, to_usec), whose busiest of c's CPUs was
 * busy (calibration_cpus_busy()), says of c. A window that overlaps the
 * measurement holds the probe's own runs, and says nothing.
 */
enum calib_step {
        CALIB_STEP_NONE,      /* nothing to do */
        CALIB_STEP_NOTE,      /* its first window: calibration_note_busy() */
        CALIB_STEP_AGAIN,     /* doubtful or starved, and the window quiet: measure again */
};
enum calib_step calibration_step(const struct calibration *c, uint64_t from_usec, uint64_t to_usec, double busy,
                                 uint64_t retry_from_usec);
