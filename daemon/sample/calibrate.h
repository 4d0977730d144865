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
 * start and when the CPUs change (hotplug): about 0.3 s of two threads.
 */

#include <stdbool.h>
#include <stdint.h>

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
 * A level read under CALIB_GAIN_MIN leaves the pairs split there to the
 * kernel, which loses 1.2-30x where the reading was noise, while a level
 * read as paying when it does not costs a pin the effect check can undo.
 * So a reading that some level is free is measured once more at once, and
 * each level keeps the larger gain of the two (calibration_merge()). In
 * the topology VM (8 vCPUs of TCG on 2 host CPUs) one level read 1.29x to
 * 5.86x from one daemon start to the next; in one CI run a pair the kernel
 * had moved onto two cores of one socket stayed split past its test's
 * deadline (the likeliest reason a low reading of that level; the log did
 * not say) while the guest's co-located pair made 3x its round trips.
 */
#define CALIB_READINGS_FOR_FREE 2

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
        char why[128];               /* when !done */
};

const char *calib_level_to_string(enum calib_level l);

/* Merge a second measurement into c: per level the larger gain (with its
 * split rate), the largest of them, the cost of both; readings counts it. */
void calibration_merge(struct calibration *c, const struct calibration *next);

/*
 * Measure on the CPUs of topo that allowed holds (the daemon's own mask).
 * Returns 0 with ret->done, or 0 with !ret->done and why (fewer than two
 * usable CPUs); -errno if threads or pipes could not be made.
 */
int calibrate(const struct topology *topo, const cpumask_t *allowed, struct calibration *ret);

/* The gain for a pair whose members were last on CPUs a and b (the level
 * that separates them), or the largest measured when a or b is unknown;
 * 0 when nothing was measured. */
double calibration_gain_for(const struct calibration *c, const struct topology *topo, int a, int b);

/* Level l was measured, and a split there buys under CALIB_GAIN_MIN from
 * co-location: two CPUs of that level are as good as one for a pair. */
bool calibration_free_at(const struct calibration *c, enum calib_level l);
