/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The co-location calibration on this machine: it measures every level the
 * topology has from the first usable CPU, its figures are sane, it puts
 * the calling thread's mask back, and it costs well under a second. The
 * gain itself is this host's (1.2x on one, 30x on another, more with the
 * other CPU busy): it is printed, not held to a figure.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "sample/calibrate.h"
#include "sample/snapshot.h"
#include "test-util.h"

static void test_live(void) {
        struct topology *topo = NULL;
        struct calibration c;
        cpu_set_t before, after;
        cpumask_t usable;

        ASSERT_OK(topology_load("/", &topo));
        ASSERT_TRUE(pthread_getaffinity_np(pthread_self(), sizeof(before), &before) == 0);
        ASSERT_OK(calibrate(topo, NULL, NULL, &c));
        ASSERT_TRUE(pthread_getaffinity_np(pthread_self(), sizeof(after), &after) == 0);
        ASSERT_TRUE(CPU_EQUAL(&before, &after));
        usable = topology_usable(topo);
        if (cpumask_weight(&usable) < 2) {
                ASSERT_TRUE(!c.done && c.why[0]);
                fprintf(stderr, "calibrate: %s\n", c.why);
                topology_free(topo);
                return;
        }
        ASSERT_TRUE(c.done);
        fprintf(stderr, "calibrate: CPU %d alone %.0f round trips/s, in %llu ms, %u reading(s)\n", c.cpu,
                c.same_per_s, (unsigned long long) c.cost_usec / 1000, c.readings);
        ASSERT_TRUE(c.same_per_s > 0 && c.n_levels >= 1);
        ASSERT_TRUE(c.readings >= 1 && c.readings <= CALIB_READINGS_FOR_FREE);
        for (int i = 0; i < c.n_levels; i++) {
                const struct calib_result *x = &c.levels[i];

                fprintf(stderr, "calibrate: %s (CPU %d / %d): %.0f round trips/s split, co-location buys %.2fx\n",
                        calib_level_to_string(x->level), x->cpu_a, x->cpu_b, x->split_per_s, x->gain);
                ASSERT_TRUE(x->split_per_s > 0 && x->gain > 0);
                ASSERT_TRUE(x->gain <= c.gain_max);
                /* a free level only on a second reading */
                ASSERT_TRUE(x->gain >= CALIB_GAIN_MIN || c.readings >= CALIB_READINGS_FOR_FREE);
                /* the pair's own level, and the largest for unknown CPUs */
                ASSERT_NEAR(calibration_gain_for(&c, topo, x->cpu_a, x->cpu_b), x->gain, 1e-12);
        }
        ASSERT_NEAR(calibration_gain_for(&c, topo, -1, 0), c.gain_max, 1e-12);
        ASSERT_TRUE(calibration_gain_for(NULL, topo, 0, 1) == 0);
        /* per reading, 3 rounds of (1 + levels) 20 ms runs, and thread start-up */
        ASSERT_TRUE(c.cost_usec < (uint64_t) c.readings * CALIB_ROUNDS * (1 + c.n_levels) * CALIB_RUN_USEC * 4);
        topology_free(topo);
}

/*
 * A second reading merged in: each level keeps its larger gain (a free
 * reading must be confirmed, calibrate.h), the largest is recomputed, the
 * costs add up; into a failed one it is taken whole, and a failed one adds
 * nothing.
 */
static void test_merge(void) {
        struct calibration a = {
                .done = true, .cpu = 0, .same_per_s = 1000, .n_levels = 2, .gain_max = 1.5,
                .cost_usec = 300000, .readings = 1,
                .levels = { { .level = CALIB_SMT, .cpu_a = 0, .cpu_b = 1, .split_per_s = 980, .gain = 1.02 },
                            { .level = CALIB_NODE, .cpu_a = 0, .cpu_b = 4, .split_per_s = 666, .gain = 1.5 } },
        };
        struct calibration b = {
                .done = true, .cpu = 0, .same_per_s = 1100, .n_levels = 2, .gain_max = 2.2,
                .cost_usec = 250000, .readings = 1,
                .levels = { { .level = CALIB_SMT, .cpu_a = 0, .cpu_b = 1, .split_per_s = 500, .gain = 2.2 },
                            { .level = CALIB_NODE, .cpu_a = 0, .cpu_b = 4, .split_per_s = 800, .gain = 1.375 } },
        };
        struct calibration none = { .cpu = -1 }, c = a;

        calibration_merge(&c, &b);
        ASSERT_EQ(c.readings, 2);
        ASSERT_NEAR(c.levels[0].gain, 2.2, 1e-12);           /* the noise-free reading */
        ASSERT_NEAR(c.levels[0].split_per_s, 500, 1e-12);
        ASSERT_NEAR(c.levels[1].gain, 1.5, 1e-12);           /* the first was larger */
        ASSERT_NEAR(c.gain_max, 2.2, 1e-12);
        ASSERT_EQ(c.cost_usec, 550000u);
        c = a;
        calibration_merge(&c, &none);
        ASSERT_EQ(c.readings, 1);
        ASSERT_NEAR(c.levels[0].gain, 1.02, 1e-12);
        calibration_merge(&none, &a);
        ASSERT_TRUE(none.done && none.readings == 1 && none.n_levels == 2);
}

/*
 * A free reading is believed only once a pass found its CPUs quiet: the
 * busy check reads the busiest of the CPUs it measured on (CPU 0 and the
 * levels' partners 1 and 4, not CPU 2), or of all of them where it was
 * not measured; a level that pays is never "free", believed or not.
 */
static void test_busy(void) {
        struct calibration c = {
                .done = true, .cpu = 0, .same_per_s = 1000, .n_levels = 2, .gain_max = 1.5, .readings = 2,
                .levels = { { .level = CALIB_SMT, .cpu_a = 0, .cpu_b = 1, .split_per_s = 980, .gain = 1.02 },
                            { .level = CALIB_NODE, .cpu_a = 0, .cpu_b = 4, .split_per_s = 666, .gain = 1.5 } },
        };
        struct calibration starved = { .cpu = -1, .starved = true };
        struct cpu_sample cpus[5] = { { .busy = 0.05 }, { .busy = 0.10 }, { .busy = 0.90 }, { .busy = 0 }, { .busy = 0.15 } };
        cpumask_t usable = {};

        cpumask_set(&usable, 0);
        cpumask_set(&usable, 1);
        cpumask_set(&usable, 4);
        ASSERT_TRUE(calibration_reads_free(&c));
        /* not yet checked: not believed */
        ASSERT_TRUE(!calibration_quiet(&c) && !calibration_free_at(&c, CALIB_SMT));
        ASSERT_NEAR(calibration_cpus_busy(&c, cpus, 5, &usable), 0.15, 1e-12);
        /* starved: the CPUs it may use (CPU 2 is not one) */
        ASSERT_NEAR(calibration_cpus_busy(&starved, cpus, 5, &usable), 0.15, 1e-12);
        cpumask_set(&usable, 2);
        ASSERT_NEAR(calibration_cpus_busy(&starved, cpus, 5, &usable), 0.90, 1e-12);
        calibration_note_busy(&c, calibration_cpus_busy(&c, cpus, 5, NULL));
        ASSERT_TRUE(calibration_quiet(&c));
        ASSERT_TRUE(calibration_free_at(&c, CALIB_SMT) && !calibration_free_at(&c, CALIB_NODE));
        calibration_note_busy(&c, CALIB_BUSY_MAX);
        ASSERT_TRUE(!calibration_quiet(&c) && !calibration_free_at(&c, CALIB_SMT));
        ASSERT_TRUE(!calibration_quiet(NULL) && !calibration_reads_free(NULL));
}

/*
 * What a pass window says of a calibration made in [1000, 1300) µs: a
 * window overlapping it nothing; the first one next to it, before or
 * after, is its check; a doubtful free reading (or a starved probe) is
 * measured again after a quiet window, not a busy one, and not before the
 * retry time; a believed reading, or one that pays, never.
 */
static void test_step(void) {
        struct calibration c = {
                .done = true, .cpu = 0, .same_per_s = 1000, .n_levels = 1, .gain_max = 1.02, .readings = 2,
                .from_usec = 1000, .at_usec = 1300,
                .levels = { { .level = CALIB_CORE, .cpu_a = 0, .cpu_b = 1, .split_per_s = 980, .gain = 1.02 } },
        };
        struct calibration pays = c, starved = { .cpu = -1, .starved = true, .from_usec = 1000, .at_usec = 1300 };

        pays.levels[0].gain = pays.gain_max = 2.5;
        ASSERT_EQ(calibration_step(&c, 900, 1100, 0, 0), CALIB_STEP_NONE);     /* overlaps its start */
        ASSERT_EQ(calibration_step(&c, 1200, 2200, 0, 0), CALIB_STEP_NONE);    /* overlaps its end */
        ASSERT_EQ(calibration_step(&c, 0, 0, 0, 0), CALIB_STEP_NONE);          /* no window (first pass) */
        ASSERT_EQ(calibration_step(&c, 300, 1000, 0.5, 0), CALIB_STEP_NOTE);   /* just before */
        ASSERT_EQ(calibration_step(&c, 1300, 2300, 0.5, 0), CALIB_STEP_NOTE);  /* just after */
        calibration_note_busy(&c, 0.5);
        ASSERT_EQ(calibration_step(&c, 2300, 3300, 0.5, 0), CALIB_STEP_NONE);  /* still busy */
        ASSERT_EQ(calibration_step(&c, 2300, 3300, 0.05, 0), CALIB_STEP_AGAIN);
        ASSERT_EQ(calibration_step(&c, 2300, 3300, 0.05, 5000), CALIB_STEP_NONE); /* not yet */
        calibration_note_busy(&c, 0.05);
        ASSERT_EQ(calibration_step(&c, 2300, 3300, 0.05, 0), CALIB_STEP_NONE); /* believed */
        ASSERT_EQ(calibration_step(&pays, 1300, 2300, 0.5, 0), CALIB_STEP_NOTE);
        calibration_note_busy(&pays, 0.5);
        ASSERT_EQ(calibration_step(&pays, 2300, 3300, 0.05, 0), CALIB_STEP_NONE); /* pays: used as read */
        ASSERT_EQ(calibration_step(&starved, 2300, 3300, 0.5, 0), CALIB_STEP_NONE);
        ASSERT_EQ(calibration_step(&starved, 2300, 3300, 0.05, 0), CALIB_STEP_AGAIN);
        ASSERT_EQ(calibration_step(NULL, 2300, 3300, 0.05, 0), CALIB_STEP_NONE);
}

int main(void) {
        test_merge();
        test_busy();
        test_step();
        test_live();
        return 0;
}
