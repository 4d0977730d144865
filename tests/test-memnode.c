/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where pairs' memory is (memnode.h): the numa_maps parser on strings and
 * on the fixture tree tests/fixtures/memnode (a MariaDB-like server with
 * most of its heap on node 1, a client on node 0, one too large to read,
 * one malformed), and memnode_sample_tasks()'s bounds on the members
 * detect_pair_tasks_to_place() picks: nothing on a
 * one-node machine, only ping-pong pairs being placed, the cache, one read
 * per pass, the duty cycle.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "detect/detect.h"
#include "sample/memnode.h"
#include "sample/snapshot.h"
#include "test-util.h"

#define ROOT TOP_SRCDIR "/tests/fixtures/memnode"

/* What the manager's pass does after detection. */
static int memnode_sample_pairs(struct memnode_memo *m, const char *root, const struct findings *f,
                                struct snapshot *snap, uint64_t now_usec) {
        const struct task *want[16];
        size_t n = detect_pair_tasks_to_place(f, snap, want, ELEMENTSOF(want));

        return memnode_sample_tasks(m, root, want, n, snap, now_usec);
}

static void test_parse(void) {
        uint64_t kib[MEMNODE_NODES_MAX], total;
        _cleanup_free_ char *text = NULL;

        ASSERT_OK(memnode_parse_numa_maps("", 4, kib, &total));
        ASSERT_EQ(total, 0u);
        /* a line with nothing resident adds nothing; no page size: the default */
        ASSERT_OK(memnode_parse_numa_maps("7f00 default\n7f01 default anon=2 N1=2\n", 4, kib, &total));
        ASSERT_EQ(kib[1], 8u);
        ASSERT_EQ(total, 8u);
        /* a node past MEMNODE_NODES_MAX counts in the total only */
        ASSERT_OK(memnode_parse_numa_maps("7f00 default N40=3 N0=1 kernelpagesize_kB=4", 4, kib, &total));
        ASSERT_EQ(kib[0], 4u);
        ASSERT_EQ(total, 16u);
        ASSERT_EQ(memnode_parse_numa_maps("7f00 default N1=ten kernelpagesize_kB=4\n", 4, kib, &total), -EINVAL);
        ASSERT_EQ(memnode_parse_numa_maps("7f00 default N1 kernelpagesize_kB=4\n", 4, kib, &total), -EINVAL);
        ASSERT_EQ(memnode_parse_numa_maps("7f00 default N1=1 kernelpagesize_kB=0\n", 4, kib, &total), -EINVAL);

        /* the fixture server: file, bind:1, heap, an escaped file name holding "N0=9", huge pages, stack */
        ASSERT_OK(util_read_full_file_at(ROOT, "/proc/4242/numa_maps", &text, NULL));
        ASSERT_OK(memnode_parse_numa_maps(text, 4, kib, &total));
        ASSERT_EQ(kib[0], 512u * 4 + 12000u * 4);
        ASSERT_EQ(kib[1], 10u * 4 + 250144u * 4 + 4u * 2048 + 33u * 4);
        ASSERT_EQ(total, kib[0] + kib[1]);
}

static void test_majority(void) {
        struct memnode a = { .pid = 1, .total_kib = 100 }, b = { .pid = 2, .total_kib = 100 };
        double share;

        a.kib[1] = 90, a.kib[0] = 10;
        b.kib[0] = 90, b.kib[1] = 10;
        ASSERT_EQ(memnode_majority(&a, NULL, 0, &share), 1);
        ASSERT_NEAR(share, 0.9, 1e-9);
        ASSERT_EQ(memnode_majority(&a, &a, 0, NULL), 1);     /* one process counted once */
        ASSERT_EQ(memnode_majority(NULL, &a, 0, NULL), 1);
        ASSERT_EQ(memnode_majority(&a, &a, 101, NULL), -1);  /* too little */
        /* 100 of 200 on each node: no majority (half is not more than half) */
        ASSERT_EQ(memnode_majority(&a, &b, 0, &share), -1);
        ASSERT_EQ(share, 0);
        ASSERT_EQ(memnode_majority(NULL, NULL, 0, NULL), -1);
}

static struct proc_info procs[] = {
        { .pid = 4242, .start_time = 77 }, { .pid = 4343, .start_time = 88 },
        { .pid = 4444, .start_time = 99 }, { .pid = 4545, .start_time = 11 },
};

static struct task mktask(int proc, pid_t tid) {
        return (struct task) { .id = { .pid = procs[proc].pid, .tid = tid, .start_time = 5 }, .proc = &procs[proc],
                               .last_cpu = 0 };
}

static struct finding mkpair(const struct task *a, const struct task *b) {
        return (struct finding) { .kind = DETECT_PAIR, .members = { a->id, b->id }, .n_members = 2,
                                  .shape = PAIR_PINGPONG, .split_fraction = 1 };
}

static int64_t stat_of(const struct memnode_memo *m, const char *key) {
        struct json_object *o, *v;
        int64_t x;

        ASSERT_OK(memnode_memo_to_json(m, &o));
        ASSERT_TRUE(json_object_object_get_ex(o, key, &v));
        x = json_object_get_int64(v);
        json_object_put(o);
        return x;
}

static void test_sample(void) {
        struct topo_cpu cpus[2] = { { .online = true, .core_id = 0, .node = 0 },
                                    { .online = true, .core_id = 1, .node = 1 } };
        struct topology topo = { .n_cpus = 2, .cpus = cpus, .online = cpumask_first_n(2), .n_nodes = 2,
                                 .n_cores = 2, .n_llcs = 2 };
        struct task tasks[] = { mktask(0, 4250), mktask(1, 4343), mktask(2, 4444), mktask(3, 4545),
                                mktask(0, 4251) };
        struct snapshot snap = { .topo = &topo, .tasks = tasks, .n_tasks = ELEMENTSOF(tasks) };
        struct findings f = {};
        struct memnode_memo *m = NULL;
        const struct memnode *e;
        uint64_t now = 1000 * USEC_PER_SEC;

        ASSERT_OK(memnode_memo_new(&m));
        ASSERT_OK(findings_add(&f, &(struct finding) { .kind = DETECT_HOG, .members = { tasks[0].id }, .n_members = 1 }));
        ASSERT_OK(findings_add(&f, &(struct finding) { .kind = DETECT_PAIR, .members = { tasks[0].id, tasks[1].id },
                                                        .n_members = 2, .shape = PAIR_STREAM }));

        /* one node: nothing read, nothing kept, not even for a ping-pong pair */
        topo.n_nodes = 1;
        ASSERT_OK(findings_add(&f, &(struct finding) { 0 }));
        f.items[2] = mkpair(&tasks[0], &tasks[1]);
        ASSERT_OK(memnode_sample_pairs(m, ROOT, &f, &snap, now));
        ASSERT_TRUE(snap.memnodes == NULL);
        ASSERT_EQ(stat_of(m, "reads"), 0);
        ASSERT_EQ(stat_of(m, "cached"), 0);
        topo.n_nodes = 2;

        /* no pair finding (a hog, a stream): nothing read */
        f.n = 2;
        ASSERT_OK(memnode_sample_pairs(m, ROOT, &f, &snap, now));
        ASSERT_EQ(stat_of(m, "reads"), 0);
        ASSERT_EQ(snap.n_memnodes, 0u);

        /* the pair server 4242 + client 4343: one read per pass, the server first */
        f.n = 3;
        ASSERT_OK(memnode_sample_pairs(m, ROOT, &f, &snap, now));
        ASSERT_EQ(stat_of(m, "reads"), 1);
        e = snapshot_find_memnode(&snap, &tasks[0]);
        ASSERT_TRUE(e);
        ASSERT_EQ(e->pid, 4242);
        ASSERT_EQ(e->kib[1], 1008940u);
        ASSERT_TRUE(!snapshot_find_memnode(&snap, &tasks[1]));
        ASSERT_EQ(memnode_majority(e, NULL, 0, NULL), 1);
        /* the other thread of the server's process finds the same evidence */
        ASSERT_TRUE(snapshot_find_memnode(&snap, &tasks[4]) == e);

        /* the next pass past the duty cycle (100 x the read): the client; the server is cached */
        now += USEC_PER_SEC;
        ASSERT_OK(memnode_sample_pairs(m, ROOT, &f, &snap, now));
        ASSERT_EQ(stat_of(m, "reads"), 2);
        e = snapshot_find_memnode(&snap, &tasks[1]);
        ASSERT_TRUE(e);
        ASSERT_EQ(e->kib[0], 10320u);
        ASSERT_EQ(memnode_majority(snapshot_find_memnode(&snap, &tasks[0]), e, 4096, NULL), 1);

        /* within the TTL: no read at all */
        for (int i = 0; i < 10; i++) {
                now += USEC_PER_SEC;
                ASSERT_OK(memnode_sample_pairs(m, ROOT, &f, &snap, now));
        }
        ASSERT_EQ(stat_of(m, "reads"), 2);

        /* a restarted server (same PID, another start time) is another process */
        procs[0].start_time = 78;
        ASSERT_TRUE(!snapshot_find_memnode(&snap, &tasks[0]));
        procs[0].start_time = 77;

        /* co-located by us already (both ours): nothing to place, nothing read */
        f.items[2] = mkpair(&tasks[2], &tasks[3]);
        tasks[2].affinity_ours = tasks[3].affinity_ours = true;
        now += USEC_PER_SEC;
        ASSERT_OK(memnode_sample_pairs(m, ROOT, &f, &snap, now));
        ASSERT_EQ(stat_of(m, "reads"), 2);
        ASSERT_EQ(stat_of(m, "skipped_large"), 0);

        /* 16 GiB resident: not read (statm only); malformed: read, failed, not known */
        tasks[2].affinity_ours = tasks[3].affinity_ours = false;
        for (int i = 0; i < 3; i++) {
                now += USEC_PER_SEC;
                ASSERT_OK(memnode_sample_pairs(m, ROOT, &f, &snap, now));
        }
        ASSERT_EQ(stat_of(m, "skipped_large"), 1);
        ASSERT_EQ(stat_of(m, "failed"), 1);
        ASSERT_EQ(stat_of(m, "reads"), 3);
        ASSERT_TRUE(!snapshot_find_memnode(&snap, &tasks[2]));
        ASSERT_TRUE(!snapshot_find_memnode(&snap, &tasks[3]));

        /* not asked for in two TTLs: forgotten */
        now += 2 * MEMNODE_TTL_USEC + USEC_PER_SEC;
        ASSERT_OK(memnode_sample_pairs(m, ROOT, &f, &snap, now));
        ASSERT_TRUE(!snapshot_find_memnode(&snap, &tasks[0]));

        findings_clear(&f);
        memnode_memo_free(m);
}

int main(void) {
        if (sysconf(_SC_PAGESIZE) != 4096) {
                /* the fixtures' statm and the expected sizes are in 4 KiB pages */
                fprintf(stderr, "test-memnode: skipped: page size %ld, the fixtures assume 4096\n",
                        sysconf(_SC_PAGESIZE));
                return 77;
        }
        test_parse();
        test_majority();
        test_sample();
        printf("test-memnode: ok\n");
        return 0;
}
