/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * topology_load() on fixture trees (tests/fixtures/sample/: a 2-CPU VM and
 * a 2-socket SMT machine with isolated and nohz_full CPUs), on variants of
 * them written into a temporary copy (no cache info, no node directory,
 * an offline CPU, "(null)" nohz_full padded as 6.1 pads it, too many CPUs,
 * files that cannot be read: each a fallback and a note), on every machine
 * of tests/machines.c as each supported kernel writes it, on this
 * machine's real /sys, and topology_new_synthetic().
 */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "machines.h"
#include "test-fixtures.h"
#include "test-util.h"
#include "sample/topology.h"

static char tmp_root[PATH_MAX];

static void cleanup(void) {
        if (tmp_root[0])
                test_rm_tree(tmp_root);
}

/* Fresh copy of a fixture in tmp_root. */
static const char *copy_fixture(const char *name) {
        cleanup();
        return test_copy_fixture(tmp_root, sizeof(tmp_root), "test-topology.", name);
}

static cpumask_t mask(const char *list) {
        cpumask_t m;
        ASSERT_OK(cpumask_parse_list(list, &m));
        return m;
}

static void test_smp2(void) {
        char root[PATH_MAX];
        struct topology *t = NULL;

        ASSERT_OK(topology_load(test_fixture(root, sizeof(root), "sample/smp2"), &t));
        ASSERT_EQ(t->n_cpus, 2);
        ASSERT_TRUE(cpumask_equal(&t->online, &(cpumask_t) { .bits = { 3 } }));
        for (int c = 0; c < 2; c++) {
                ASSERT_TRUE(t->cpus[c].online);
                ASSERT_EQ(t->cpus[c].core_id, c);      /* no SMT: every CPU its own core */
                ASSERT_EQ(t->cpus[c].llc_id, 0);       /* index3 shared_cpu_list 0-1 */
                ASSERT_EQ(t->cpus[c].package_id, 0);
                ASSERT_EQ(t->cpus[c].node, 0);
        }
        ASSERT_EQ(t->n_cores, 2);
        ASSERT_EQ(t->n_llcs, 1);
        ASSERT_EQ(t->n_nodes, 1);
        ASSERT_TRUE(cpumask_empty(&t->isolated));     /* empty file */
        ASSERT_TRUE(cpumask_empty(&t->nohz_full));    /* absent file */
        /* With a fixture root our own affinity says nothing: all online CPUs. */
        ASSERT_TRUE(cpumask_equal(&t->self_allowed, &t->online));
        cpumask_t u = topology_usable(t);
        ASSERT_TRUE(cpumask_equal(&u, &t->online));
        topology_free(t);
}

static void test_smt(void) {
        char root[PATH_MAX];
        struct topology *t = NULL;
        /* CPU:                  0  1  2  3  4  5  6  7 */
        static const int core[] = { 0, 1, 2, 3, 0, 1, 2, 3 };
        static const int pkg[] = { 0, 0, 1, 1, 0, 0, 1, 1 };
        static const int llc[] = { 0, 0, 2, 2, 0, 0, 2, 2 };

        ASSERT_OK(topology_load(test_fixture(root, sizeof(root), "sample/smt2x2x2"), &t));
        ASSERT_EQ(t->n_cpus, 8);
        for (int c = 0; c < 8; c++) {
                ASSERT_EQ(t->cpus[c].core_id, core[c]);
                ASSERT_EQ(t->cpus[c].package_id, pkg[c]);
                ASSERT_EQ(t->cpus[c].llc_id, llc[c]);
                ASSERT_EQ(t->cpus[c].node, pkg[c]);
        }
        ASSERT_EQ(t->n_cores, 4);
        ASSERT_EQ(t->n_llcs, 2);
        ASSERT_EQ(t->n_nodes, 2);
        cpumask_t iso = mask("6-7"), nohz = mask("7"), usable = mask("0-5");
        ASSERT_TRUE(cpumask_equal(&t->isolated, &iso));
        ASSERT_TRUE(cpumask_equal(&t->nohz_full, &nohz));
        cpumask_t u = topology_usable(t);
        ASSERT_TRUE(cpumask_equal(&u, &usable));
        topology_free(t);
}

static void test_variants(void) {
        struct topology *t = NULL;
        const char *root;
        char rel[128];

        /* An offline CPU has no topology or cache directory. */
        root = copy_fixture("sample/smt2x2x2");
        test_write_at(root, "/sys/devices/system/cpu/online", "0-6\n");
        test_remove_at(root, "/sys/devices/system/cpu/cpu7/topology");
        test_remove_at(root, "/sys/devices/system/cpu/cpu7/cache");
        test_write_at(root, "/sys/devices/system/cpu/nohz_full", "(null)\n");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->n_cpus, 8);
        ASSERT_TRUE(!t->cpus[7].online);
        ASSERT_TRUE(!cpumask_test(&t->online, 7));
        ASSERT_EQ(t->cpus[7].core_id, 7);
        ASSERT_TRUE(cpumask_empty(&t->nohz_full));
        ASSERT_EQ(t->n_cores, 4);   /* counted over online CPUs */
        topology_free(t);

        /* No cache info and no node directory: LLC = package, node 0. */
        root = copy_fixture("sample/smt2x2x2");
        for (int c = 0; c < 8; c++) {
                snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu%d/cache", c);
                test_remove_at(root, rel);
        }
        test_remove_at(root, "/sys/devices/system/node");
        ASSERT_OK(topology_load(root, &t));
        for (int c = 0; c < 8; c++) {
                ASSERT_EQ(t->cpus[c].node, 0);
                ASSERT_EQ(t->cpus[c].llc_id, t->cpus[c].package_id == 0 ? 0 : 2);
        }
        ASSERT_EQ(t->n_llcs, 2);
        ASSERT_EQ(t->n_nodes, 1);
        topology_free(t);

        /* Linux 6.1 without nohz_full=: "(null)" right-aligned to the CPU
         * count (2 blanks at 8 CPUs, 58 at 64). An empty mask, not an error. */
        root = copy_fixture("sample/smt2x2x2");
        test_write_at(root, "/sys/devices/system/cpu/nohz_full", "  (null)\n");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->n_notes, 0);   /* read, not noted as malformed */
        ASSERT_TRUE(cpumask_empty(&t->nohz_full));
        ASSERT_EQ(cpumask_weight(&t->online), 8);
        topology_free(t);
        {
                char padded[80];

                snprintf(padded, sizeof(padded), "%64s\n", "(null)");
                ASSERT_EQ(strlen(padded), 65);
                /* The width is nr_cpu_ids, the possible CPUs: 64 possible, 8 online. */
                test_write_at(root, "/sys/devices/system/cpu/possible", "0-63\n");
                test_write_at(root, "/sys/devices/system/cpu/present", "0-63\n");
                test_write_at(root, "/sys/devices/system/cpu/nohz_full", padded);
                ASSERT_OK(topology_load(root, &t));
                ASSERT_EQ(t->n_notes, 0);
                ASSERT_EQ(t->n_cpus, 64);
                ASSERT_TRUE(cpumask_empty(&t->nohz_full));
                cpumask_t u = topology_usable(t), want = mask("0-5");
                ASSERT_TRUE(cpumask_equal(&u, &want));
                topology_free(t);
        }

        /* No "possible": falls back to present, then online. */
        root = copy_fixture("sample/smp2");
        test_remove_at(root, "/sys/devices/system/cpu/possible");
        test_remove_at(root, "/sys/devices/system/cpu/present");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->n_cpus, 2);
        topology_free(t);

        /* More CPUs than cpumask_t holds: refused, not truncated. */
        test_write_at(root, "/sys/devices/system/cpu/online", "0-2047\n");
        ASSERT_EQ(topology_load(root, &t), -E2BIG);

        /* Nothing there at all. */
        ASSERT_EQ(topology_load("/nonexistent-root", &t), -ENOENT);
}

/* True if some note of t starts with prefix (notes name their file first). */
static bool has_note(const struct topology *t, const char *prefix) {
        for (int i = 0; i < t->n_notes; i++)
                if (strncmp(t->notes[i], prefix, strlen(prefix)) == 0)
                        return true;
        return false;
}

/*
 * A file that is there but cannot be read or parsed: the load goes on
 * with a fallback and a note naming the file. Only the CPU set is required.
 */
static void test_unreadable(void) {
        static const char cpu[] = "/sys/devices/system/cpu";
        struct topology *t = NULL;
        const char *root;
        char rel[128];

        root = copy_fixture("sample/smt2x2x2");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->n_notes, 0);   /* a sound tree has nothing to say */
        topology_free(t);

        /* A malformed L3 of CPU 3: its LLC is its package's (CPU 2's), not its L2. */
        test_write_at(root, "/sys/devices/system/cpu/cpu3/cache/index3/shared_cpu_list", "2-x\n");
        /* A malformed sibling list: CPU 5 its own core. */
        test_write_at(root, "/sys/devices/system/cpu/cpu5/topology/thread_siblings_list", "garbage\n");
        /* An unreadable package id (a directory: read() fails with EISDIR): package 0. */
        test_remove_at(root, "/sys/devices/system/cpu/cpu6/topology/physical_package_id");
        snprintf(rel, sizeof(rel), "%s/sys/devices/system/cpu/cpu6/topology/physical_package_id", root);
        ASSERT_OK(mkdir(rel, 0755));
        /* A malformed node: its CPUs in node 0. */
        test_write_at(root, "/sys/devices/system/node/node1/cpulist", "2-3,6-\n");
        /* Malformed isolated: no CPU known to be isolated. */
        test_write_at(root, "/sys/devices/system/cpu/isolated", "1-x\n");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->n_cpus, 8);
        ASSERT_EQ(t->cpus[3].llc_id, 2);
        ASSERT_EQ(t->cpus[5].core_id, 5);
        ASSERT_EQ(t->cpus[1].core_id, 1);    /* CPU 5's sibling still knows its core */
        ASSERT_EQ(t->cpus[6].package_id, 0);
        for (int c = 0; c < 8; c++)
                ASSERT_EQ(t->cpus[c].node, 0);
        ASSERT_TRUE(cpumask_empty(&t->isolated));
        ASSERT_EQ(t->n_notes, 5);
        ASSERT_TRUE(has_note(t, "/sys/devices/system/cpu/cpu3/cache/index3/shared_cpu_list: malformed"));
        ASSERT_TRUE(has_note(t, "/sys/devices/system/cpu/cpu5/topology/thread_siblings_list: malformed"));
        ASSERT_TRUE(has_note(t, "/sys/devices/system/cpu/cpu6/topology/physical_package_id: Is a directory"));
        ASSERT_TRUE(has_note(t, "/sys/devices/system/node/node1/cpulist: malformed"));
        ASSERT_TRUE(has_note(t, "/sys/devices/system/cpu/isolated: malformed"));
        ASSERT_EQ(t->n_notes_dropped, 0);
        topology_free(t);

        /* More notes than are kept: the rest are counted. */
        for (int c = 0; c < 8; c++) {
                snprintf(rel, sizeof(rel), "%s/cpu%d/cache/index0/level", cpu, c);
                test_write_at(root, rel, "one\n");
        }
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->n_notes, TOPOLOGY_NOTES_MAX);
        ASSERT_EQ(t->n_notes + t->n_notes_dropped, 5 - 1 + 8);   /* CPU 3's L3 is not reached now */
        ASSERT_EQ(t->n_llcs, 2);                                  /* every CPU: its package's */
        topology_free(t);

        /* A malformed "possible": "present" gives the CPUs, with a note. */
        root = copy_fixture("sample/smt2x2x2");
        test_write_at(root, "/sys/devices/system/cpu/possible", "0-\n");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->n_cpus, 8);
        ASSERT_TRUE(has_note(t, "/sys/devices/system/cpu/possible: malformed"));
        topology_free(t);

        /* A malformed "online": every CPU of the list taken as online. */
        test_write_at(root, "/sys/devices/system/cpu/online", "x\n");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(cpumask_weight(&t->online), 8);
        ASSERT_TRUE(has_note(t, "/sys/devices/system/cpu/online: malformed"));
        topology_free(t);

        /* No CPU list that parses: fatal, the only thing that is. */
        test_write_at(root, "/sys/devices/system/cpu/present", "?\n");
        ASSERT_EQ(topology_load(root, &t), -EINVAL);

        /* A malformed cpu_capacity: that CPU at full capacity, the others as read. */
        cleanup();
        root = test_mkdtemp_tree(tmp_root, sizeof(tmp_root), "test-topology.");
        ASSERT_OK(machine_write(machine_find("biglittle-4+4"), "6.18", root));
        test_write_at(root, "/sys/devices/system/cpu/cpu2/cpu_capacity", "big\n");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->cpus[2].capacity, 1024);
        ASSERT_EQ(t->cpus[1].capacity, 446);
        ASSERT_TRUE(has_note(t, "/sys/devices/system/cpu/cpu2/cpu_capacity: malformed"));
        topology_free(t);

        /* Intel's PMU lists, malformed: every CPU at full capacity, with a note. */
        cleanup();
        root = test_mkdtemp_tree(tmp_root, sizeof(tmp_root), "test-topology.");
        ASSERT_OK(machine_write(machine_find("hybrid-8p16e"), "6.1", root));
        test_write_at(root, "/sys/devices/cpu_atom/cpus", "16-\n");
        ASSERT_OK(topology_load(root, &t));
        ASSERT_EQ(t->n_capacities, 1);
        ASSERT_TRUE(has_note(t, "/sys/devices/cpu_atom/cpus: malformed"));
        topology_free(t);
}

/* The counts each spec states, and the per-CPU facts a few layouts are built to show. */
static void test_machines(void) {
        for (const struct machine *m = machines; m->name; m++)
                for (const char *const *k = machine_kernels; *k; k++) {
                        struct topology *t = NULL;
                        const char *root;

                        cleanup();
                        root = test_mkdtemp_tree(tmp_root, sizeof(tmp_root), "test-topology.");
                        ASSERT_OK(machine_write(m, *k, root));
                        fprintf(stderr, "%s on %s\n", m->name, *k);
                        ASSERT_OK(topology_load(root, &t));
                        ASSERT_EQ(t->n_notes, 0);   /* every file read as it is meant */
                        ASSERT_EQ(t->n_cpus, m->expect.cpus);
                        ASSERT_EQ(cpumask_weight(&t->online), m->expect.online);
                        ASSERT_EQ(t->n_cores, m->expect.cores);
                        ASSERT_EQ(t->n_llcs, m->expect.llcs);
                        ASSERT_EQ(t->n_nodes, m->expect.nodes);
                        ASSERT_EQ(t->n_capacities, m->expect.capacities);
                        cpumask_t u = topology_usable(t);
                        ASSERT_EQ(cpumask_weight(&u), m->expect.usable);
                        cpumask_t nohz = m->nohz_full ? mask(m->nohz_full) : (cpumask_t) {};
                        ASSERT_TRUE(cpumask_equal(&t->nohz_full, &nohz));
                        CPUMASK_FOREACH(c, &t->online) {
                                /* Ids are first CPUs of their lists: an online CPU at or below c. */
                                ASSERT_TRUE(t->cpus[c].core_id <= c && t->cpus[t->cpus[c].core_id].online);
                                ASSERT_TRUE(t->cpus[c].llc_id <= c && t->cpus[t->cpus[c].llc_id].online);
                        }
                        if (streq(m->name, "dual-ccd")) {
                                ASSERT_EQ(t->cpus[16].core_id, 0);   /* CPU 0's sibling */
                                ASSERT_EQ(t->cpus[24].llc_id, 8);    /* second CCD: 8-15,24-31 */
                                ASSERT_EQ(t->cpus[7].llc_id, 0);
                        } else if (streq(m->name, "hybrid-8p16e")) {
                                ASSERT_EQ(t->cpus[1].core_id, 0);    /* P core: threads 0 and 1 */
                                ASSERT_EQ(t->cpus[17].core_id, 17);  /* E core: one thread */
                                ASSERT_EQ(t->cpus[31].llc_id, 0);
                                ASSERT_EQ(t->cpus[15].capacity, 1024);   /* cpu_core */
                                ASSERT_EQ(t->cpus[16].capacity, 512);    /* cpu_atom */
                        } else if (streq(m->name, "biglittle-4+4")) {
                                ASSERT_EQ(t->cpus[3].capacity, 446);     /* cpu_capacity, little */
                                ASSERT_EQ(t->cpus[4].capacity, 1024);
                        } else if (streq(m->name, "smt64-offline")) {
                                ASSERT_TRUE(!t->cpus[60].online && t->cpus[59].online);
                                ASSERT_EQ(t->cpus[59].core_id, 27);
                        } else if (streq(m->name, "2s8c-smt2-numa2")) {
                                ASSERT_EQ(t->cpus[24].node, 1);      /* package 1: 8-15,24-31 */
                                ASSERT_EQ(t->cpus[24].core_id, 8);
                                ASSERT_EQ(t->cpus[24].package_id, 1);
                        }
                        topology_free(t);
                }
}

static void test_real(void) {
        struct topology *t = NULL;
        cpu_set_t set;
        cpumask_t self;

        ASSERT_OK(topology_load("/", &t));
        ASSERT_TRUE(t->n_cpus >= 1);
        ASSERT_TRUE(cpumask_weight(&t->online) >= 1);
        ASSERT_EQ((long) cpumask_weight(&t->online), sysconf(_SC_NPROCESSORS_ONLN));
        ASSERT_TRUE(t->n_cores >= 1 && t->n_llcs >= 1 && t->n_nodes >= 1);
        ASSERT_OK(sched_getaffinity(0, sizeof(set), &set));
        cpumask_from_cpu_set(&set, &self);
        ASSERT_TRUE(cpumask_equal(&t->self_allowed, &self));
        CPUMASK_FOREACH(c, &t->online) {
                ASSERT_TRUE(t->cpus[c].online);
                ASSERT_TRUE(t->cpus[c].core_id <= c);   /* first CPU of its sibling list */
                ASSERT_TRUE(t->cpus[c].llc_id <= c);
        }
        fprintf(stderr, "this machine: %d CPUs, %d cores, %d LLCs, %d nodes\n", t->n_cpus, t->n_cores,
                t->n_llcs, t->n_nodes);
        topology_free(t);
        /* NULL and "" mean the real root too. */
        ASSERT_OK(topology_load(NULL, &t));
        topology_free(t);
}

static void test_synthetic(void) {
        const struct topo_cpu cpus[4] = {
                { .core_id = 0, .llc_id = 0, .package_id = 0, .node = 0 },
                { .core_id = 0, .llc_id = 0, .package_id = 0, .node = 0 },
                { .core_id = 2, .llc_id = 2, .package_id = 1, .node = 1 },
                { .core_id = 2, .llc_id = 2, .package_id = 1, .node = 1 },
        };
        struct topology *t = topology_new_synthetic(4, cpus);

        ASSERT_TRUE(t);
        ASSERT_EQ(t->n_cpus, 4);
        ASSERT_EQ(cpumask_weight(&t->online), 4);
        ASSERT_TRUE(t->cpus[3].online);
        ASSERT_EQ(t->n_cores, 2);
        ASSERT_EQ(t->n_llcs, 2);
        ASSERT_EQ(t->n_nodes, 2);
        ASSERT_TRUE(cpumask_equal(&t->self_allowed, &t->online));
        ASSERT_TRUE(cpumask_empty(&t->isolated));
        topology_free(t);
        ASSERT_TRUE(topology_new_synthetic(0, cpus) == NULL);
        ASSERT_TRUE(topology_free(NULL) == NULL);
}

int main(void) {
        atexit(cleanup);
        test_smp2();
        test_smt();
        test_variants();
        test_unreadable();
        test_machines();
        test_real();
        test_synthetic();
        return 0;
}
