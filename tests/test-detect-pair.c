/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * detect_pairs() on struct literals: a split ping-pong pair, a stream, a
 * pair that is together, one-way traffic, thresholds from the policy,
 * members that are gone, kernel threads, narrowed affinity, and the
 * fallback source without split evidence.
 */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"
#include "test-fixtures.h"
#include "test-util.h"

#define ALL2 ((cpumask_t) { .bits = { 0x3 } })
#define CPU0 ((cpumask_t) { .bits = { 0x1 } })
#define CPU1 ((cpumask_t) { .bits = { 0x2 } })

static struct topo_cpu topo_cpus[2] = {
        { .online = true, .core_id = 0, .llc_id = 0, .package_id = 0, .node = 0 },
        { .online = true, .core_id = 1, .llc_id = 0, .package_id = 0, .node = 0 },
};
static struct topology topo = {
        .n_cpus = 2,
        .cpus = topo_cpus,
        .online = ALL2,
        .self_allowed = ALL2,
        .n_llcs = 1, .n_nodes = 1, .n_cores = 2,
};

static struct policy pair_policy = TEST_POLICY("pairs", DETECT_PAIR, ACTION_COLOCATE);

static struct config config = {
        .daemon = { .interval_usec = 1000000, .max_actions_per_interval = 4, .hysteresis_intervals = 3 },
        .policies = &pair_policy,
        .n_policies = 1,
};

/* owners (Owners=): root, a system account (a database's), two users */
static struct proc_info proc_root = { .uid = 0 }, proc_mysql = { .uid = 104 }, proc_alice = { .uid = 1000 },
                        proc_bob = { .uid = 1001 }, proc_nobody = { .uid = 65534 },
                        proc_dynamic = { .uid = 61200 }, proc_high = { .uid = 60000 },
                        proc_unknown = { .uid = (uid_t) -1 }, proc_unknown2 = { .uid = (uid_t) -1 };

static struct task mktask(pid_t tid, double util, int cpu) {
        struct task t = {
                .proc = &proc_root,
                .id = { .pid = tid, .tid = tid, .start_time = 1000 + (uint64_t) tid },
                .last_cpu = cpu,
                .allowed = ALL2,
                .have_rates = true,
                .util = util,
                .nvcsw_per_s = 40000,
                .window_usec = 1000000,
        };
        snprintf(t.comm, sizeof(t.comm), "pp%d", (int) tid);
        cpumask_set(&t.cpus_seen, cpu);
        return t;
}

static struct wake_edge mkedge(pid_t a, pid_t b, double rate, double split) {
        struct wake_edge e = { .waker_tid = a, .wakee_tid = b, .wakeups_per_s = rate };
#ifdef WAKE_EDGE_HAVE_SPLIT
        e.have_split = split >= 0;
        e.split_fraction = split >= 0 ? split : 0;
#else
        (void) split;
#endif
        return e;
}

static struct snapshot mksnap(struct task *tasks, size_t n_tasks, struct wake_edge *edges, size_t n_edges) {
        return (struct snapshot) {
                .timestamp_usec = 10 * USEC_PER_SEC,
                .window_usec = USEC_PER_SEC,
                .topo = &topo,
                .tasks = tasks,
                .n_tasks = n_tasks,
                .edges = edges,
                .n_edges = n_edges,
                .wake_source = "perf",
        };
}

static void run(const struct snapshot *s, struct findings *out) {
        findings_clear(out);
        ASSERT_OK(detect_pairs(s, &config, 1, out));
}

static void test_split_pair(void) {
        struct task tasks[] = { mktask(100, 0.60, 0), mktask(101, 0.55, 1), mktask(7, 0.1, 0) };
        struct wake_edge edges[] = {
                mkedge(101, 100, 44000, 0.9),    /* order must not matter */
                mkedge(100, 101, 45000, 0.95),
                mkedge(7, 100, 50, 1),           /* noise */
        };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};
        char key[128];

        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].kind, DETECT_PAIR);
        ASSERT_TRUE(f.items[0].policy == &pair_policy);
        ASSERT_EQ(f.items[0].n_members, 2);
        ASSERT_EQ(f.items[0].members[0].tid, 100);
        ASSERT_EQ(f.items[0].members[1].tid, 101);
        ASSERT_EQ(f.items[0].members[1].start_time, 1101);
        ASSERT_NEAR(f.items[0].wake_rate_per_s, 44000, 1e-6);
        ASSERT_NEAR(f.items[0].combined_util, 1.15, 1e-9);
        ASSERT_TRUE(cpumask_equal(&f.items[0].cpus_seen, &ALL2));
        ASSERT_TRUE(strncmp(f.items[0].note, "stream", 6) != 0);
#ifdef WAKE_EDGE_HAVE_SPLIT
        /* rate-weighted: (45000 * 0.95 + 44000 * 0.9) / 89000 */
        ASSERT_NEAR(f.items[0].split_fraction, (45000 * 0.95 + 44000 * 0.9) / 89000, 1e-9);
#else
        ASSERT_NEAR(f.items[0].split_fraction, 1.0, 1e-9);   /* last CPUs differ */
#endif
        ASSERT_STREQ(finding_key(&f.items[0], key, sizeof(key)), "pair:100:101");
        findings_clear(&f);
}

static void test_stream(void) {
        /* a pipelined producer/consumer: both busy */
        struct task tasks[] = { mktask(200, 0.95, 0), mktask(201, 0.90, 1) };
        struct wake_edge edges[] = { mkedge(200, 201, 30000, 1), mkedge(201, 200, 30000, 1) };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_TRUE(strncmp(f.items[0].note, "stream", 6) == 0);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        ASSERT_NEAR(f.items[0].combined_util, 1.85, 1e-9);

        /* MaxCombinedUtil=200% makes it a pair */
        pair_policy.group_util_max = 2.0;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_TRUE(strncmp(f.items[0].note, "stream", 6) != 0);
        pair_policy.group_util_max = -1;
        findings_clear(&f);
}

/*
 * Squeezed by a load, a stream's utils are a ping-pong's (0.46 + 0.46 split
 * under stress-ng 40 %), but it still reads and writes several messages a
 * wake-up (10-14 a switch) where a ping-pong makes one read and one write
 * (2.0): a stream. One side alone, a side with no read()/write() calls
 * (recv()/send()), or a pair held on one CPU by us is no stream by them.
 */
static void test_stream_by_calls(void) {
        struct task tasks[] = { mktask(210, 0.46, 0), mktask(211, 0.46, 1) };
        struct wake_edge edges[] = { mkedge(210, 211, 3000, 1), mkedge(211, 210, 2600, 1) };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        for (int k = 0; k < 2; k++) {
                tasks[k].nvcsw_per_s = 3000;
                tasks[k].have_io_rate = true;
                tasks[k].io_calls_per_s = 34000;
                tasks[k].io_bytes_per_s = 1.1e6;
        }
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        fprintf(stderr, "stream by calls: %s\n", f.items[0].note);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        ASSERT_TRUE(strstr(f.items[0].note, "reads and writes a switch"));

        /* a ping-pong: one read and one write a switch */
        tasks[0].io_calls_per_s = tasks[1].io_calls_per_s = 6000;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        /* one side batching, the other not */
        tasks[0].io_calls_per_s = 34000;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        /* the other through recv()/send(): nothing counted there */
        tasks[1].io_calls_per_s = 0;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        /* held on one CPU by us: judged by its effect check, not here */
        tasks[1].io_calls_per_s = 34000;
        tasks[0].allowed = tasks[1].allowed = CPU1;
        tasks[0].affinity_ours = tasks[1].affinity_ours = true;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        findings_clear(&f);
}

/*
 * Squeezed by a load, a stream's utils (0.55 + 0.55) and its reads and
 * writes a switch (2-3) pass for a ping-pong's, but most of its split
 * wake-ups go unanswered before the next one, both ways together (56-71 %
 * measured under stress-ng, 30-86 % one way): a stream. One direction
 * alone (a feeder's, or a producer's that its consumer rarely waits for)
 * is no stream, nor is a share under 55 % both ways together or under a
 * quarter one way, too few wake-ups to count, or a pair held on one CPU
 * by us.
 */
static void test_stream_by_unanswered(void) {
        struct task tasks[] = { mktask(220, 0.55, 0), mktask(221, 0.55, 1) };
        struct wake_edge edges[] = { mkedge(220, 221, 7000, 0.1), mkedge(221, 220, 9000, 0.1) };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        edges[0].split_next = 250, edges[0].split_unanswered = 165;
        edges[1].split_next = 290, edges[1].split_unanswered = 190;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        fprintf(stderr, "stream by unanswered: %s\n", f.items[0].note);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        ASSERT_TRUE(strstr(f.items[0].note, "66% of split wake-ups unanswered before the next (66% and 66% each way"));

        /* a ping-pong answers every one */
        edges[0].split_unanswered = edges[1].split_unanswered = 0;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        /* one direction runs on, the other waits (a feeder): no stream */
        edges[0].split_unanswered = 250;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        /* half each way (each message in two parts) is not a stream */
        edges[0].split_unanswered = 125;
        edges[1].split_next = 250, edges[1].split_unanswered = 125;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        /* both ways together: 296 of 540 is under 55 %, 298 is not,
         * however they fall each way (a quarter or more) */
        edges[1].split_next = 290, edges[1].split_unanswered = 171;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        edges[1].split_unanswered = 173;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        /* 40 of 134 one way, 207 of 300 the other (30 % and 69 %, 57 %
         * together): what the stream read under load */
        edges[0].split_next = 134, edges[0].split_unanswered = 40;
        edges[1].split_next = 300, edges[1].split_unanswered = 207;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        /* a quarter each way at least: 62 of 250 with all of the other's
         * (352 of 540 together) is not a stream, 63 is */
        edges[0].split_next = 250, edges[0].split_unanswered = 62;
        edges[1].split_next = 290, edges[1].split_unanswered = 290;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        edges[0].split_unanswered = 63;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        /* too few to count one way (all of them unanswered, and 180 of
         * 265 together) */
        edges[0].split_unanswered = 165;
        edges[1].split_next = 15, edges[1].split_unanswered = 15;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        /* held on one CPU by us: the effect check judges it (the same
         * counts are a stream otherwise) */
        edges[1].split_next = 290, edges[1].split_unanswered = 190;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        tasks[0].allowed = tasks[1].allowed = CPU1;
        tasks[0].affinity_ours = tasks[1].affinity_ours = true;
        run(&s, &f);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        findings_clear(&f);
}

/* Held by us on one CPU, two members cannot use more than it: a reading
 * above (1.21, a QEMU guest's clock skew) is no stream, and the pair the
 * effect check kept stays. Split, or on a span of two CPUs, the same
 * utils are a stream. */
static void test_held_one_cpu_is_no_stream(void) {
        struct task tasks[] = { mktask(460, 0.65, 1), mktask(461, 0.56, 1) };
        struct wake_edge edges[] = { mkedge(460, 461, 1288, 0), mkedge(461, 460, 27, 0) };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        tasks[0].allowed = tasks[1].allowed = CPU1;
        tasks[0].affinity_ours = tasks[1].affinity_ours = true;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        ASSERT_NEAR(f.items[0].combined_util, 1.0, 1e-9);

        tasks[0].allowed = tasks[1].allowed = ALL2;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        ASSERT_NEAR(f.items[0].combined_util, 1.21, 1e-9);
        findings_clear(&f);
}

static void test_thresholds(void) {
        struct task tasks[] = { mktask(300, 0.3, 0), mktask(301, 0.3, 1) };
        struct wake_edge one_way[] = { mkedge(300, 301, 50000, 1), mkedge(301, 300, 30, 1) };
        struct wake_edge slow[] = { mkedge(300, 301, 80, 1), mkedge(301, 300, 90, 1) };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), one_way, ELEMENTSOF(one_way));
        struct findings f = {};

        /* a producer waking a consumer that never wakes it back is not a ping-pong */
        run(&s, &f);
        ASSERT_EQ(f.n, 0);

        /* below the default 100/s both ways */
        s.edges = slow;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);
        pair_policy.wake_rate_min_per_s = 60;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_NEAR(f.items[0].wake_rate_per_s, 80, 1e-9);
        pair_policy.wake_rate_min_per_s = -1;

        /* no pair policy at all: nothing */
        pair_policy.enabled = false;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);
        pair_policy.enabled = true;
        findings_clear(&f);
}

static void test_not_ours(void) {
        struct task tasks[] = { mktask(400, 0.5, 0), mktask(401, 0.5, 1) };
        struct wake_edge edges[] = { mkedge(400, 401, 40000, 1), mkedge(401, 400, 40000, 1) };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        /* exited: the snapshot no longer has 401 */
        s.n_tasks = 1;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);
        s.n_tasks = 2;

        /* no rates yet (first sample of a new thread) */
        tasks[1].have_rates = false;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);
        tasks[1].have_rates = true;

        /* kernel thread */
        tasks[0].kthread = true;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);
        tasks[0].kthread = false;

        /* the daemon itself */
        findings_clear(&f);
        ASSERT_OK(detect_pairs(&s, &config, 400, &f));
        ASSERT_EQ(f.n, 0);

        /* someone ran taskset -c 1 on one member: respected, and it anchors
         * the pair (only the other member may be moved, onto CPU 1) */
        tasks[0].allowed = CPU1;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].anchored, 1u);
        ASSERT_TRUE(task_id_equal(&f.items[0].members[0], &tasks[0].id));
        /* held around the anchor (our pin on CPU 1 too): still a finding, by the stronger direction */
        tasks[1].allowed = CPU1;
        tasks[1].affinity_ours = true;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].anchored, 1u);
        tasks[1].allowed = ALL2;
        tasks[1].affinity_ours = false;
        /* split across two narrowed masks: someone's choice, still no finding */
        tasks[0].allowed = CPU0;
        tasks[1].allowed = CPU1;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);

        /* both pinned to CPU 0 (how a pair we co-located looks): still a finding, together */
        tasks[1].allowed = CPU0;
        tasks[1].last_cpu = 0;
        edges[0] = mkedge(400, 401, 120000, 0);
        edges[1] = mkedge(401, 400, 120000, 0);
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_TRUE(f.items[0].split_fraction < 0.5);
        /* moved beside each other by someone: the bursts before still read
         * 69 % split, and the two can no longer run apart */
        edges[0] = mkedge(400, 401, 120000, 0.69);
        edges[1] = mkedge(401, 400, 120000, 0.69);
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_NEAR(f.items[0].split_fraction, 0, 1e-9);
        /* on two CPUs the share stands */
        tasks[1].allowed = ALL2;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_NEAR(f.items[0].split_fraction, 0.69, 1e-9);
        findings_clear(&f);
}

/*
 * A pair we hold on one CPU wakes mostly one way: the waker is preempted
 * by the wakee it woke, so the reply wakes nobody (MariaDB + sysbench
 * co-located here: 48,230/1,510 wake-ups/s; the weaker direction is put
 * under the 100/s floor here). It stays a finding at its stronger rate;
 * the same edges on a pair we do not hold are one thread notifying
 * another, no finding.
 */
static void test_held_pair_one_way(void) {
        struct task tasks[] = { mktask(450, 0.52, 0), mktask(451, 0.46, 0) };
        struct wake_edge edges[] = { mkedge(450, 451, 48230, 0), mkedge(451, 450, 62, 0) };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        run(&s, &f);
        ASSERT_EQ(f.n, 0);

        tasks[0].allowed = tasks[1].allowed = CPU0;
        tasks[0].affinity_ours = tasks[1].affinity_ours = true;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_NEAR(f.items[0].wake_rate_per_s, 48230, 1e-6);

        /* held by us on one span (Span=: a core's two siblings), one mask for both: still a pair */
        tasks[0].allowed = tasks[1].allowed = (cpumask_t) { .bits = { 0x3 } };
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_NEAR(f.items[0].wake_rate_per_s, 48230, 1e-6);

        /* pinned to two different CPUs by us (not how we hold a pair): the weaker direction */
        tasks[0].allowed = CPU0;
        tasks[1].allowed = CPU1;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);
        findings_clear(&f);
}

/* One thread of a process waking another of it one way at a pair rate: a
 * feeder (sysbench --rate's event generator 501 and its worker 500, the
 * worker in a ping-pong with server 502); a one-way waker from another
 * process, one woken back often, or one whose wakee wakes nobody at a pair
 * rate (a pair member notifying a helper), is none. items[0] is 500-501,
 * items[1] the ping-pong 500-502 (findings in thread order). */
static void test_feeder(void) {
        struct task tasks[] = { mktask(500, 0.20, 0), mktask(501, 0.05, 1), mktask(502, 0.30, 1) };
        struct wake_edge edges[] = {
                mkedge(501, 500, 1000, 1), mkedge(500, 501, 30, 1),
                mkedge(500, 502, 1000, 1), mkedge(502, 500, 1000, 1),
        };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        tasks[1].id.pid = 500;
        run(&s, &f);
        ASSERT_EQ(f.n, 2);
        ASSERT_EQ(f.items[0].shape, PAIR_FEEDER);
        ASSERT_NEAR(f.items[0].wake_rate_per_s, 1000, 1e-9);
        ASSERT_TRUE(strncmp(f.items[0].note, "one-way", 7) == 0);
        ASSERT_EQ(f.items[1].shape, PAIR_PINGPONG);

        /* the other way round: the worker 500 notifies its helper 501, which
         * wakes nobody at a pair rate: no feeder, the ping-pong alone */
        edges[0] = mkedge(500, 501, 1000, 1);
        edges[1] = mkedge(501, 500, 30, 1);
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        edges[0] = mkedge(501, 500, 1000, 1);
        edges[1] = mkedge(500, 501, 30, 1);

        /* the worker's ping-pong gone (under the floor): nothing to feed */
        edges[2].wakeups_per_s = edges[3].wakeups_per_s = 50;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);
        edges[2].wakeups_per_s = edges[3].wakeups_per_s = 1000;

        /* woken back at more than a quarter of its rate: neither a feeder nor (below 100/s) a pair */
        edges[0].wakeups_per_s = 300;
        edges[1].wakeups_per_s = 90;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        edges[0].wakeups_per_s = 1000;
        edges[1].wakeups_per_s = 30;

        /* both busy: a producer and its consumer, a stream */
        tasks[0].util = tasks[1].util = 0.9;
        run(&s, &f);
        ASSERT_EQ(f.n, 2);
        ASSERT_EQ(f.items[0].shape, PAIR_STREAM);
        tasks[0].util = 0.20, tasks[1].util = 0.05;

        /* held with its pair on one CPU by us: it reads as a pair (pair_rate()), the planner's chain() keeps it */
        tasks[0].allowed = tasks[1].allowed = CPU0;
        tasks[0].affinity_ours = tasks[1].affinity_ours = true;
        run(&s, &f);
        ASSERT_TRUE(f.n >= 1);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        ASSERT_EQ(f.items[0].members[0].tid, 500);
        ASSERT_EQ(f.items[0].members[1].tid, 501);
        tasks[0].allowed = tasks[1].allowed = ALL2;
        tasks[0].affinity_ours = tasks[1].affinity_ours = false;

        /* another process: the ping-pong alone */
        tasks[1].id.pid = 501;
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].members[1].tid, 502);
        findings_clear(&f);
}

/* One thread at pair rates with three others: a hub, not three pairs to co-locate. */
static void test_hub(void) {
        struct task tasks[] = { mktask(600, 0.55, 0), mktask(601, 0.2, 1), mktask(602, 0.2, 1), mktask(603, 0.2, 0) };
        struct wake_edge edges[] = {
                mkedge(600, 601, 9000, 1), mkedge(601, 600, 9000, 1),
                mkedge(600, 602, 8000, 1), mkedge(602, 600, 8000, 1),
                mkedge(603, 600, 7000, 0), mkedge(600, 603, 7000, 0),
        };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        run(&s, &f);
        ASSERT_EQ(f.n, 3);
        for (size_t i = 0; i < f.n; i++) {
                ASSERT_EQ(f.items[i].shape, PAIR_HUB);
                ASSERT_TRUE(strncmp(f.items[i].note, "hub: a member exchanges with 3 threads", 38) == 0);
        }
        /* two partners: still two ping-pongs */
        s.n_edges = 4;
        run(&s, &f);
        ASSERT_EQ(f.n, 2);
        for (size_t i = 0; i < f.n; i++)
                ASSERT_EQ(f.items[i].shape, PAIR_PINGPONG);
        /* the third partner exited, its decayed edges still above WakeRate=:
         * a thread-cached server thread with its next client, no hub */
        s = mksnap(tasks, 3, edges, ELEMENTSOF(edges));
        run(&s, &f);
        ASSERT_EQ(f.n, 2);
        for (size_t i = 0; i < f.n; i++)
                ASSERT_EQ(f.items[i].shape, PAIR_PINGPONG);
        findings_clear(&f);     /* a third partner below WakeRate=: test_many() */
}

/* A server that wakes two kernel threads (rcu_preempt, a kworker) over
 * WakeRate= besides its one client serves no hub: one ping-pong. */
static void test_hub_not_kthreads(void) {
        struct task tasks[] = { mktask(600, 0.55, 0), mktask(601, 0.4, 1), mktask(15, 0.01, 0), mktask(700, 0.01, 1) };
        struct wake_edge edges[] = {
                mkedge(600, 601, 40000, 1), mkedge(601, 600, 40000, 1),
                mkedge(600, 15, 300, 0), mkedge(600, 700, 200, 1),
        };
        struct snapshot s;
        struct findings f = {};

        tasks[2].kthread = tasks[3].kthread = true;
        s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        run(&s, &f);
        ASSERT_EQ(f.n, 1);
        ASSERT_EQ(f.items[0].shape, PAIR_PINGPONG);
        /* the same two as user threads: a hub of three */
        tasks[2].kthread = tasks[3].kthread = false;
        run(&s, &f);
        ASSERT_TRUE(f.n >= 1);
        ASSERT_EQ(f.items[0].shape, PAIR_HUB);
        findings_clear(&f);
}

/* The fallback's verdict for members on CPUs cpu_a/cpu_b migrating mig_a/mig_b per s
 * (mig < 0: no se.nr_migrations). */
static const struct finding *fallback_case(struct findings *f, int cpu_a, int cpu_b, double mig_a, double mig_b) {
        static struct task tasks[2];
        static struct wake_edge edges[2];
        static struct snapshot s;
        char text[96];

        tasks[0] = mktask(500, 0.5, cpu_a);
        tasks[1] = mktask(501, 0.5, cpu_b);
        tasks[0].have_migrations = mig_a >= 0;
        tasks[1].have_migrations = mig_b >= 0;
        tasks[0].migrations_per_s = MAX(mig_a, 0);
        tasks[1].migrations_per_s = MAX(mig_b, 0);
        edges[0] = mkedge(500, 501, 30000, -1);
        edges[1] = mkedge(501, 500, 30000, -1);
        s = mksnap(tasks, 2, edges, 2);
        s.wake_source = "fallback:pipes+unix-sockets";
        run(&s, f);
        ASSERT_EQ(f->n, 1);
        /* whatever the verdict, the words never say "split 0%" */
        ASSERT_TRUE(strstr(detect_pair_split_text(&f->items[0], DETECT_PAIR_SPLIT_MIN, text, sizeof(text)), "0%") == NULL);
        ASSERT_TRUE(strstr(f->items[0].note, "split 0%") == NULL);
        return &f->items[0];
}

/*
 * A pair anchored by someone else on CPU 1 (member 600, unless !anchor),
 * at the last burst split for the share split, its free member 601 moving
 * mig/s over a 1 s window: detect-pair.c, leaves_anchor(). tweak (may be
 * NULL) changes the two before the run.
 */
static const struct finding *anchored_case(struct findings *f, double split, double mig, bool anchor,
                                           void (*tweak)(struct task pair[2])) {
        static struct task tasks[2];
        static struct wake_edge edges[2];
        static struct snapshot s;

        tasks[0] = mktask(600, 0.5, 1);
        tasks[1] = mktask(601, 0.5, 1);
        if (anchor)
                tasks[0].allowed = CPU1;
        tasks[0].have_migrations = tasks[1].have_migrations = true;
        tasks[0].migrations_per_s = anchor ? 0 : mig;
        tasks[1].migrations_per_s = mig;
        if (tweak)
                tweak(tasks);
        edges[0] = mkedge(600, 601, 30000, split);
        edges[1] = mkedge(601, 600, 30000, split);
        s = mksnap(tasks, 2, edges, 2);
        run(&s, f);
        ASSERT_EQ(f->n, 1);
        ASSERT_EQ(f->items[0].anchored, anchor ? 1u : 0u);
        return &f->items[0];
}

static void held_by_us_on_a_span(struct task pair[2]) { pair[1].affinity_ours = true; }
static void no_count(struct task pair[2]) { pair[1].have_migrations = false; }
static void newborn(struct task pair[2]) { pair[1].rates_since_birth = true; }
static void short_window(struct task pair[2]) { pair[1].migrations_window_usec = 200 * 1000; }
/* five moves over 556 ms, as the sampler gives them: a rate that times its
 * window comes back a hair under 5 */
static void five_in_556ms(struct task pair[2]) {
        pair[1].migrations_window_usec = 556 * 1000;
        pair[1].migrations_per_s = 5.0 * (double) USEC_PER_SEC / (556.0 * 1000);
}
static void anchor_moved_too(struct task pair[2]) {
        pair[0].migrations_per_s = 12;
        pair[1].migrations_per_s = 3;   /* six moves over 2 s: too slow */
        pair[1].migrations_window_usec = 2 * USEC_PER_SEC;
}

/* The burst's share stands: x reads as the burst left it. */
static void assert_burst_share(const struct finding *x, double split) {
        ASSERT_NEAR(x->split_fraction, split, 1e-9);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_WAKEUPS);
}

static void test_anchor_on_the_move(void) {
        struct findings f = {};
        const struct finding *x;
        char text[96];

        /* the free member moved 12 times in the window: split, whatever the burst read */
        x = anchored_case(&f, 0.01, 12, true, NULL);
        ASSERT_NEAR(x->split_fraction, 1.0, 1e-9);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_MIGRATIONS);
        ASSERT_STREQ(detect_pair_split_text(x, DETECT_PAIR_SPLIT_MIN, text, sizeof(text)), "split: migrating 12/s");
        /* 6/s (a start that stayed split for 4 % of its round trips), and under 5 */
        ASSERT_EQ(anchored_case(&f, 0.01, 6, true, NULL)->split_basis, SPLIT_BASIS_MIGRATIONS);
        x = anchored_case(&f, 0.01, 5, true, NULL);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_MIGRATIONS);
        ASSERT_STREQ(detect_pair_split_text(x, DETECT_PAIR_SPLIT_MIN, text, sizeof(text)), "split: migrating 5/s");
        assert_burst_share(anchored_case(&f, 0.01, 4, true, NULL), 0.01);
        /* a burst that read it split: its share stands, moves or not */
        assert_burst_share(anchored_case(&f, 0.2, 12, true, NULL), 0.2);
        /* no anchor: two members moving may move together */
        assert_burst_share(anchored_case(&f, 0.01, 12, false, NULL), 0.01);
        /* the free member on a mask of ours (a span), no count, since birth */
        assert_burst_share(anchored_case(&f, 0.01, 12, true, held_by_us_on_a_span), 0.01);
        assert_burst_share(anchored_case(&f, 0.01, 12, true, no_count), 0.01);
        assert_burst_share(anchored_case(&f, 0.01, 12, true, newborn), 0.01);
        /* 200 ms: 12/s is two moves, 30/s six */
        assert_burst_share(anchored_case(&f, 0.01, 12, true, short_window), 0.01);
        ASSERT_EQ(anchored_case(&f, 0.01, 30, true, short_window)->split_basis, SPLIT_BASIS_MIGRATIONS);
        ASSERT_EQ(anchored_case(&f, 0.01, 0, true, five_in_556ms)->split_basis, SPLIT_BASIS_MIGRATIONS);
        /* the anchor's own move (its owner's pin) is not the free member's */
        assert_burst_share(anchored_case(&f, 0.01, 12, true, anchor_moved_too), 0.01);
        findings_clear(&f);
}

static void test_no_split_evidence(void) {
        /* the fallback source: rates, no split (split_fraction -1 on the edges) */
        struct findings f = {};
        const struct finding *x;
        char text[96];

        /* `perf bench sched pipe` split by the kernel (BENCHMARKS.md): on one CPU at
         * the look, migrating 20/s each: split, on the window's evidence */
        x = fallback_case(&f, 0, 0, 20, 18);
        ASSERT_NEAR(x->split_fraction, 1.0, 1e-9);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_MIGRATIONS);
        ASSERT_NEAR(x->migrations_per_s, 38, 1e-9);
        ASSERT_STREQ(detect_pair_split_text(x, DETECT_PAIR_SPLIT_MIN, text, sizeof(text)), "split: migrating 38/s");

        /* still all window, on one CPU: together; on two: split all window */
        x = fallback_case(&f, 1, 1, 0, 0);
        ASSERT_NEAR(x->split_fraction, 0.0, 1e-9);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_MIGRATIONS);
        ASSERT_STREQ(detect_pair_split_text(x, DETECT_PAIR_SPLIT_MIN, text, sizeof(text)), "together: on one CPU, not migrating");
        x = fallback_case(&f, 0, 1, 0.2, 0.2);
        ASSERT_NEAR(x->split_fraction, 1.0, 1e-9);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_MIGRATIONS);

        /* a few migrations (the kernel held it together next to a hog: 0-3/s):
         * apart at the look is a split to confirm, on one CPU is not known */
        x = fallback_case(&f, 0, 1, 1.5, 1.5);
        ASSERT_NEAR(x->split_fraction, 1.0, 1e-9);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_LOOK);
        x = fallback_case(&f, 1, 1, 1.5, 1.5);
        ASSERT_NEAR(x->split_fraction, -1.0, 1e-9);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_UNKNOWN);
        ASSERT_TRUE(strstr(x->note, "split unknown") != NULL);

        /* no migration counts (no /proc/TID/sched): the look alone */
        x = fallback_case(&f, 0, 1, -1, -1);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_LOOK);
        x = fallback_case(&f, 0, 0, -1, 30);
        ASSERT_NEAR(x->split_fraction, -1.0, 1e-9);
        ASSERT_EQ(x->split_basis, SPLIT_BASIS_UNKNOWN);
        findings_clear(&f);
}

static void test_no_edges(void) {
        struct task tasks[] = { mktask(500, 0.5, 0), mktask(501, 0.5, 1) };
        struct wake_edge edges[] = { mkedge(500, 501, 30000, -1), mkedge(501, 500, 30000, -1) };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        /* no edges at all */
        s.n_edges = 0;
        run(&s, &f);
        ASSERT_EQ(f.n, 0);
        findings_clear(&f);
}

static void test_many(void) {
        /* one server thread, three clients: one finding per pair above the
         * rate, and the one below it does not make the server a hub */
        struct task tasks[] = { mktask(600, 0.8, 0), mktask(601, 0.2, 1), mktask(602, 0.2, 1), mktask(603, 0.1, 0) };
        struct wake_edge edges[] = {
                mkedge(600, 601, 9000, 1), mkedge(601, 600, 9000, 1),
                mkedge(600, 602, 5000, 1), mkedge(602, 600, 5000, 1),
                mkedge(600, 603, 60, 0), mkedge(603, 600, 60, 0),
        };
        struct snapshot s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
        struct findings f = {};

        run(&s, &f);
        ASSERT_EQ(f.n, 2);
        for (size_t i = 0; i < f.n; i++)
                ASSERT_EQ(f.items[i].shape, PAIR_PINGPONG);
        findings_clear(&f);
}

/* Owners=: whose tasks may be co-located with whose (affinityd(8), THREAT MODEL) */
static void test_owners(void) {
        static const struct {
                struct proc_info *a, *b;
                int owners;      /* -1: unset, the default (trusted) */
                bool pair;
        } cases[] = {
                { &proc_root, &proc_root, -1, true },
                { &proc_mysql, &proc_root, -1, true },     /* MariaDB and a root-run sysbench */
                { &proc_alice, &proc_alice, -1, true },    /* a user's own two tasks */
                { &proc_alice, &proc_root, -1, false },    /* a user must not get root's task pinned */
                { &proc_alice, &proc_mysql, -1, false },
                { &proc_alice, &proc_bob, -1, false },
                { &proc_nobody, &proc_root, -1, true },    /* nginx's workers as nobody, and wrk */
                { &proc_dynamic, &proc_root, -1, true },   /* a DynamicUser= service */
                { &proc_nobody, &proc_alice, -1, false },  /* never for a user's partner */
                { &proc_dynamic, &proc_alice, -1, false },
                { &proc_high, &proc_root, -1, false },     /* 60000: a login user's range */
                { &proc_mysql, &proc_root, PAIR_OWNERS_SAME, false },
                { &proc_alice, &proc_alice, PAIR_OWNERS_SAME, true },
                { &proc_alice, &proc_root, PAIR_OWNERS_ANY, true },
                { &proc_alice, &proc_root, PAIR_OWNERS_TRUSTED, false },
                /* owners not read (/proc status unreadable): different users,
                 * also two of them, also where only the same owner may pair */
                { &proc_unknown, &proc_unknown2, -1, false },
                { &proc_unknown, &proc_unknown2, PAIR_OWNERS_SAME, false },
                { &proc_unknown, &proc_root, -1, false },
        };
        int saved = pair_policy.pair_owners;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct task tasks[] = { mktask(100, 0.60, 0), mktask(101, 0.55, 1) };
                struct wake_edge edges[] = { mkedge(100, 101, 45000, 0.95), mkedge(101, 100, 44000, 0.9) };
                struct snapshot s;
                struct findings f = {};

                tasks[0].proc = cases[i].a;
                tasks[1].proc = cases[i].b;
                pair_policy.pair_owners = cases[i].owners;
                s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
                run(&s, &f);
                if ((f.n == 1) != cases[i].pair)
                        fprintf(stderr, "owners case %zu: uid %u + %u, Owners=%d: %zu findings\n", i,
                                (unsigned) cases[i].a->uid, (unsigned) cases[i].b->uid, cases[i].owners, f.n);
                ASSERT_EQ(f.n, cases[i].pair ? 1 : 0);
                findings_clear(&f);
        }
        pair_policy.pair_owners = saved;
}

/*
 * Roles: the side whose service started first serves. A PostgreSQL backend
 * is forked by the postmaster after its client (pgbench) connects, so by
 * its own start time it would be the "client"; its lineage (the
 * postmaster's start) makes it the server. Seen mislabelled on a real
 * pgbench run before lineage_start_time existed.
 */
static void test_roles(void) {
        struct proc_info postmaster_child = { .pid = 4343, .start_time = 9000, .lineage_start_time = 100 },
                         pgbench = { .pid = 4300, .start_time = 8990, .lineage_start_time = 8990 },
                         plain_old = { .pid = 10, .start_time = 50 }, plain_new = { .pid = 20, .start_time = 60 };
        struct task backend = { .id = { .tid = 4343, .pid = 4343, .start_time = 9000 }, .proc = &postmaster_child },
                    client = { .id = { .tid = 4300, .pid = 4300, .start_time = 8990 }, .proc = &pgbench },
                    srv = { .id = { .tid = 10, .pid = 10, .start_time = 50 }, .proc = &plain_old },
                    cli = { .id = { .tid = 20, .pid = 20, .start_time = 60 }, .proc = &plain_new },
                    sibling = { .id = { .tid = 11, .pid = 10, .start_time = 55 }, .proc = &plain_old };
        enum pair_role role[2];

        detect_pair_roles(&client, &backend, role);
        ASSERT_EQ(role[0], PAIR_ROLE_CLIENT);
        ASSERT_EQ(role[1], PAIR_ROLE_SERVER);
        /* without lineage (struct literals, 0): each process's own start */
        detect_pair_roles(&cli, &srv, role);
        ASSERT_EQ(role[0], PAIR_ROLE_CLIENT);
        ASSERT_EQ(role[1], PAIR_ROLE_SERVER);
        /* two threads of one process serve each other: peers */
        detect_pair_roles(&srv, &sibling, role);
        ASSERT_EQ(role[0], PAIR_ROLE_PEER);
        ASSERT_EQ(role[1], PAIR_ROLE_PEER);
}

/*
 * A fan: one pgbench thread, the client of two backends at pair rates, is
 * placed whole where its three threads fit one CPU together (0.9 here),
 * and left to the kernel like a hub where they do not (co-locating it with
 * one backend moves it away from the other); a server thread serving two
 * threads of one client process the same. A proxy between its client and its backend is a link, and its
 * two pairs stay ping-pongs (the planner's chain()), also when it started
 * before its backend and so reads as the server of both: its partners
 * are not one service.
 */
static void fan_task(struct task *t, pid_t tid, struct proc_info *proc, int cpu) {
        *t = mktask(tid, 0.3, cpu);
        t->proc = proc;
        t->id.pid = proc->pid;
        t->id.start_time = proc->start_time;
}

static void test_fan(void) {
        struct proc_info pgbench = { .pid = 700, .start_time = 8990, .lineage_start_time = 8990 },
                         back1 = { .pid = 701, .start_time = 9000, .lineage_start_time = 100 },
                         back2 = { .pid = 702, .start_time = 9001, .lineage_start_time = 100 },
                         wrk = { .pid = 710, .start_time = 9500 }, proxy = { .pid = 711, .start_time = 200 },
                         backend = { .pid = 712, .start_time = 100 }, old_proxy = { .pid = 713, .start_time = 50 },
                         bench = { .pid = 720, .start_time = 9600 };
        struct task tasks[3];
        struct wake_edge edges[] = {
                mkedge(0, 0, 6000, 1), mkedge(0, 0, 6000, 1),
                mkedge(0, 0, 5000, 1), mkedge(0, 0, 5000, 1),
        };
        struct snapshot s;
        struct findings f = {};
        pid_t mid, ends[2];

        for (int c = 0; c < 4; c++) {
                if (c == 0) {           /* pgbench thread, client of both */
                        fan_task(&tasks[0], 700, &pgbench, 0);
                        fan_task(&tasks[1], 701, &back1, 1);
                        fan_task(&tasks[2], 702, &back2, 1);
                } else if (c == 1) {    /* one server thread, two threads of one client process */
                        fan_task(&tasks[0], 701, &back1, 0);
                        fan_task(&tasks[1], 720, &bench, 1);
                        fan_task(&tasks[2], 721, &bench, 1);
                } else if (c == 2) {    /* wrk -> proxy -> backend: a chain */
                        fan_task(&tasks[0], 711, &proxy, 0);
                        fan_task(&tasks[1], 710, &wrk, 1);
                        fan_task(&tasks[2], 712, &backend, 1);
                } else {                /* the same, the proxy older than its backend */
                        fan_task(&tasks[0], 713, &old_proxy, 0);
                        fan_task(&tasks[1], 710, &wrk, 1);
                        fan_task(&tasks[2], 712, &backend, 1);
                }
                mid = tasks[0].id.tid, ends[0] = tasks[1].id.tid, ends[1] = tasks[2].id.tid;
                for (int k = 0; k < 2; k++) {
                        edges[2 * k] = mkedge(mid, ends[k], 6000 - 1000 * k, 1);
                        edges[2 * k + 1] = mkedge(ends[k], mid, 6000 - 1000 * k, 1);
                }
                s = mksnap(tasks, ELEMENTSOF(tasks), edges, ELEMENTSOF(edges));
                run(&s, &f);
                ASSERT_EQ(f.n, 2);
                for (size_t i = 0; i < f.n; i++) {
                        fprintf(stderr, "fan case %d: %s\n", c, f.items[i].note);
                        ASSERT_EQ(f.items[i].shape, c < 2 ? PAIR_FAN : PAIR_PINGPONG);
                        if (c < 2) {
                                ASSERT_TRUE(strstr(f.items[i].note, "fan of 2, util 0.90 together: ") == f.items[i].note);
                                /* the whole fan's util: what the planner's chain() holds on one CPU */
                                ASSERT_TRUE(f.items[i].combined_util > 0.89 && f.items[i].combined_util < 0.91);
                                /* its hub: the pgbench thread 700, the server thread 701, each the lower TID */
                                ASSERT_EQ(f.items[i].fan_hub, 1u << 0);
                        }
                }
                if (c < 2) {
                        const struct task *want[8];

                        /* the hub's memory is read once, not once per pair */
                        ASSERT_EQ(detect_pair_tasks_to_place(&f, &s, want, ELEMENTSOF(want)), 3);
                }
                findings_clear(&f);
                if (c >= 2)
                        continue;
                /* the three too busy for one CPU (1.35 > MaxCombinedUtil=, default 1.2): a hub */
                for (int k = 0; k < 3; k++)
                        tasks[k].util = 0.45;
                run(&s, &f);
                ASSERT_EQ(f.n, 2);
                for (size_t i = 0; i < f.n; i++) {
                        fprintf(stderr, "fan case %d, busier: %s\n", c, f.items[i].note);
                        ASSERT_EQ(f.items[i].shape, PAIR_HUB);
                        ASSERT_TRUE(strstr(f.items[i].note, "fan: a member is the client or the server of 2 threads "
                                                            "at pair rates, util 1.35 together > 1.20") == f.items[i].note);
                }
                findings_clear(&f);
        }
}

int main(void) {
        test_roles();
        test_fan();
        test_split_pair();
        test_owners();
        test_stream();
        test_stream_by_calls();
        test_stream_by_unanswered();
        test_held_one_cpu_is_no_stream();
        test_thresholds();
        test_not_ours();
        test_held_pair_one_way();
        test_feeder();
        test_hub();
        test_hub_not_kthreads();
        test_no_split_evidence();
        test_anchor_on_the_move();
        test_no_edges();
        test_many();
        return 0;
}
