/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "topology.h"

#define SYS_CPU "/sys/devices/system/cpu"
#define SYS_NODE "/sys/devices/system/node"

cpumask_t topology_usable(const struct topology *t) {
        cpumask_t m = cpumask_andnot(&t->online, &t->isolated);
        return cpumask_andnot(&m, &t->nohz_full);
}

static bool root_is_real(const char *root) {
        return !root || root[0] == '\0' || streq(root, "/");
}

/*
 * Read a CPU list file. Absent, empty and "(null)" all give the empty mask;
 * only a malformed list is an error. Linux 6.1 prints nohz_full without
 * nohz_full= as "%*pbl" of a NULL mask: "(null)" right-aligned to the CPU
 * count, so at 8 CPUs it is "  (null)" and at 64 it has 58 blanks before it;
 * later kernels print an empty line.
 */
static int read_cpulist(const char *root, const char *path, cpumask_t *ret, bool *ret_present) {
        char buf[4096];
        const char *s;
        ssize_t n;

        cpumask_zero(ret);
        if (ret_present)
                *ret_present = false;
        n = util_read_file_at(root, path, buf, sizeof(buf));
        if (n == -ENOENT)
                return 0;
        if (n < 0)
                return (int) n;
        if (ret_present)
                *ret_present = true;
        s = util_strip(buf);
        if (s[0] == '\0' || streq(s, "(null)"))
                return 0;
        return cpumask_parse_list(s, ret);
}

static int read_int(const char *root, const char *path, int *ret) {
        char buf[64];
        ssize_t n;

        n = util_read_file_at(root, path, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        return util_parse_int(util_strip(buf), ret);
}

/* First CPU of a list file, or -errno. */
static int read_first_cpu(const char *root, const char *path) {
        cpumask_t m;
        bool present;
        int r;

        r = read_cpulist(root, path, &m, &present);
        if (r < 0)
                return r;
        if (!present)
                return -ENOENT;
        r = cpumask_next(&m, 0);
        return r < 0 ? -ENODATA : r;
}

/*
 * The last-level cache of a CPU: among cache/index*, the highest level;
 * at equal level a Unified or Data cache over an Instruction cache (L1i
 * and L1d share level 1 but only data placement matters). Returns the
 * first CPU of its shared_cpu_list, or -ENOENT if the CPU has no cache info
 * (some VMs and arm64 boards).
 */
static int read_llc(const char *root, int cpu) {
        char rel[128];
        int best_level = -1, best_first = -ENOENT;
        bool best_instruction = true;

        for (int i = 0; i < 16; i++) {
                char type[32] = "";
                int level, first;
                bool instruction;

                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/cache/index%d/level", cpu, i);
                if (read_int(root, rel, &level) < 0)
                        break;   /* index directories are numbered without gaps */
                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/cache/index%d/type", cpu, i);
                instruction = util_read_file_at(root, rel, type, sizeof(type)) >= 0 &&
                              streq(util_strip(type), "Instruction");
                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/cache/index%d/shared_cpu_list", cpu, i);
                first = read_first_cpu(root, rel);
                if (first < 0)
                        continue;
                if (level > best_level || (level == best_level && best_instruction && !instruction)) {
                        best_level = level;
                        best_first = first;
                        best_instruction = instruction;
                }
        }
        return best_first;
}

static int count_distinct(const struct topology *t, size_t field_offset) {
        int n = 0;

        /* O(n²) over online CPUs; n ≤ 1024 and this runs once per hotplug. */
        CPUMASK_FOREACH(c, &t->online) {
                int v = *(const int *) ((const char *) &t->cpus[c] + field_offset);
                bool dup = false;

                CPUMASK_FOREACH(d, &t->online) {
                        if (d >= c)
                                break;
                        if (*(const int *) ((const char *) &t->cpus[d] + field_offset) == v) {
                                dup = true;
                                break;
                        }
                }
                if (!dup)
                        n++;
        }
        return n;
}

static void topology_count(struct topology *t) {
        t->n_cores = count_distinct(t, offsetof(struct topo_cpu, core_id));
        t->n_llcs = count_distinct(t, offsetof(struct topo_cpu, llc_id));
        t->n_nodes = count_distinct(t, offsetof(struct topo_cpu, node));
}

/* NUMA nodes: /sys/devices/system/node/nodeN/cpulist. No directory: node 0 for all. */
static int load_nodes(const char *root, struct topology *t) {
        char path[PATH_MAX];
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (!util_path_at(path, sizeof(path), root, SYS_NODE))
                return -ENAMETOOLONG;
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d))) {
                char rel[128];
                cpumask_t m;
                int node;

                if (strncmp(de->d_name, "node", 4) != 0 || util_parse_int(de->d_name + 4, &node) < 0 ||
                    node < 0)
                        continue;
                snprintf(rel, sizeof(rel), SYS_NODE "/node%d/cpulist", node);
                r = read_cpulist(root, rel, &m, NULL);
                if (r < 0)
                        break;
                CPUMASK_FOREACH(c, &m)
                        if (c < t->n_cpus)
                                t->cpus[c].node = node;
        }
        closedir(d);
        return r;
}

int topology_load(const char *root, struct topology **ret) {
        struct topology *t;
        cpumask_t possible;
        bool present;
        int r, last = -1;

        r = read_cpulist(root, SYS_CPU "/possible", &possible, &present);
        if (r >= 0 && (!present || cpumask_empty(&possible)))
                r = read_cpulist(root, SYS_CPU "/present", &possible, &present);
        if (r >= 0 && (!present || cpumask_empty(&possible)))
                r = read_cpulist(root, SYS_CPU "/online", &possible, &present);
        if (r < 0)
                return r;   /* -E2BIG for > CPUMASK_MAX CPUs: refused, not truncated */
        if (!present || cpumask_empty(&possible))
                return -ENOENT;
        CPUMASK_FOREACH(c, &possible)
                last = c;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->n_cpus = last + 1;
        t->cpus = calloc((size_t) t->n_cpus, sizeof(*t->cpus));
        if (!t->cpus) {
                topology_free(t);
                return -ENOMEM;
        }

        r = read_cpulist(root, SYS_CPU "/online", &t->online, &present);
        if (r < 0)
                goto fail;
        if (!present)
                t->online = possible;   /* kernels without hotplug support */
        t->online = cpumask_and(&t->online, &possible);

        for (int c = 0; c < t->n_cpus; c++) {
                struct topo_cpu *tc = &t->cpus[c];
                char rel[128];
                int v;

                tc->online = cpumask_test(&t->online, c);
                /* Offline CPUs have no topology directory: each is its own core,
                 * package 0, until it comes online (and the topology is re-read). */
                tc->core_id = c;
                tc->package_id = 0;
                tc->llc_id = -1;
                tc->node = 0;

                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/topology/thread_siblings_list", c);
                v = read_first_cpu(root, rel);
                if (v >= 0)
                        tc->core_id = v;
                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/topology/physical_package_id", c);
                if (read_int(root, rel, &v) >= 0 && v >= 0)
                        tc->package_id = v;
                tc->llc_id = read_llc(root, c);
        }
        /* No cache information: assume the package shares one LLC (the
         * common case on x86; on a VM without cache info nothing better is known). */
        for (int c = 0; c < t->n_cpus; c++)
                if (t->cpus[c].llc_id < 0) {
                        t->cpus[c].llc_id = c;
                        for (int d = 0; d < c; d++)
                                if (t->cpus[d].package_id == t->cpus[c].package_id) {
                                        t->cpus[c].llc_id = t->cpus[d].llc_id;
                                        break;
                                }
                }

        r = load_nodes(root, t);
        if (r < 0)
                goto fail;

        r = read_cpulist(root, SYS_CPU "/isolated", &t->isolated, NULL);
        if (r < 0)
                goto fail;
        r = read_cpulist(root, SYS_CPU "/nohz_full", &t->nohz_full, NULL);
        if (r < 0)
                goto fail;

        /* Our own affinity is a property of this process, not of the tree under
         * root; with a fixture root it says nothing about the fixture's CPUs. */
        if (root_is_real(root)) {
                cpu_set_t set;

                if (sched_getaffinity(0, sizeof(set), &set) < 0) {
                        r = -errno;
                        goto fail;
                }
                cpumask_from_cpu_set(&set, &t->self_allowed);
        } else
                t->self_allowed = t->online;

        topology_count(t);
        *ret = t;
        return 0;
fail:
        topology_free(t);
        return r;
}

struct topology *topology_free(struct topology *t) {
        if (t) {
                free(t->cpus);
                free(t);
        }
        return NULL;
}

struct topology *topology_new_synthetic(int n_cpus, const struct topo_cpu *cpus) {
        struct topology *t;

        if (n_cpus <= 0 || n_cpus > CPUMASK_MAX || !cpus)
                return NULL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->cpus = calloc((size_t) n_cpus, sizeof(*t->cpus));
        if (!t->cpus) {
                free(t);
                return NULL;
        }
        t->n_cpus = n_cpus;
        for (int c = 0; c < n_cpus; c++) {
                t->cpus[c] = cpus[c];
                t->cpus[c].online = true;
        }
        t->online = cpumask_first_n(n_cpus);
        t->self_allowed = t->online;
        topology_count(t);
        return t;
}
