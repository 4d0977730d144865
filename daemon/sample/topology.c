/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/util.h"
#include "sample/topology.h"

#define SYS_CPU "/sys/devices/system/cpu"
#define SYS_NODE "/sys/devices/system/node"

cpumask_t topology_usable(const struct topology *t) {
        cpumask_t m = cpumask_andnot(&t->online, &t->isolated);
        return cpumask_andnot(&m, &t->nohz_full);
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

__attribute__((format(printf, 2, 3)))
static void topology_note(struct topology *t, const char *fmt, ...) {
        va_list ap;

        if (t->n_notes >= TOPOLOGY_NOTES_MAX) {
                t->n_notes_dropped++;
                return;
        }
        va_start(ap, fmt);
        vsnprintf(t->notes[t->n_notes++], TOPOLOGY_NOTE_MAX, fmt, ap);
        va_end(ap);
}

/* Why a file could not be used, in the words of a note. */
static const char *read_error(int r) {
        switch (r) {
        case -EINVAL:
                return "malformed";
        case -ENODATA:
                return "empty";
        case -ERANGE:
        case -E2BIG:
                return "out of range";
        case -ENOENT:
                return "missing";
        default:
                return strerror(-r);
        }
}

/* First CPU of a list file, below n_cpus; -ENOENT if absent, -ENODATA if empty. */
static int read_first_cpu(const char *root, const char *path, int n_cpus) {
        cpumask_t m;
        bool present;
        int r;

        r = read_cpulist(root, path, &m, &present);
        if (r < 0)
                return r;
        if (!present)
                return -ENOENT;
        r = cpumask_next(&m, 0);
        if (r < 0)
                return -ENODATA;
        return r < n_cpus ? r : -ERANGE;
}

/*
 * The last-level cache of a CPU: among cache/index*, the highest level;
 * at equal level a Unified or Data cache over an Instruction cache (L1i
 * and L1d share level 1 but only data placement matters). Returns the
 * first CPU of its shared_cpu_list, or -ENOENT if the CPU has no cache info
 * (some VMs and arm64 boards). A file that cannot be read makes it -ENOENT
 * too, with a note: the caches that remain (say L2 without L3) would name
 * a wrong LLC, the package is the better guess.
 */
static int read_llc(const char *root, struct topology *t, int cpu) {
        char rel[128];
        int best_level = -1, best_first = -ENOENT;
        bool best_instruction = true;

        for (int i = 0; i < 16; i++) {
                char type[32] = "";
                int level, first, r;
                bool instruction;

                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/cache/index%d/level", cpu, i);
                r = read_int(root, rel, &level);
                if (r == -ENOENT)
                        break;   /* index directories are numbered without gaps */
                if (r < 0) {
                        topology_note(t, "%s: %s; CPU %d's LLC taken as its package's", rel, read_error(r), cpu);
                        return -ENOENT;
                }
                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/cache/index%d/type", cpu, i);
                instruction = util_read_file_at(root, rel, type, sizeof(type)) >= 0 &&
                              streq(util_strip(type), "Instruction");
                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/cache/index%d/shared_cpu_list", cpu, i);
                first = read_first_cpu(root, rel, t->n_cpus);
                if (first < 0) {
                        topology_note(t, "%s: %s; CPU %d's LLC taken as its package's", rel,
                                      read_error(first), cpu);
                        return -ENOENT;
                }
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
        t->n_capacities = count_distinct(t, offsetof(struct topo_cpu, capacity));
}

/*
 * CPU capacities. arm64 writes cpuN/cpu_capacity (1024 for the biggest
 * cores); x86 has no such file, but an Intel hybrid part lists its P and E
 * cores as the CPUs of the cpu_core and cpu_atom PMUs. Without either,
 * every CPU is 1024. A file that cannot be read leaves a note and 1024.
 */
#define CAPACITY_ATOM 512

static void load_capacities(const char *root, struct topology *t, const cpumask_t *possible) {
        static const char *const pmus[2] = { "/sys/devices/cpu_core/cpus", "/sys/devices/cpu_atom/cpus" };
        cpumask_t lists[2];
        bool have[2], any = false;
        int r;

        CPUMASK_FOREACH(c, possible) {
                char rel[128];
                int v;

                if (c >= t->n_cpus)
                        break;
                snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/cpu_capacity", c);
                r = read_int(root, rel, &v);
                if (r >= 0 && v > 0) {
                        t->cpus[c].capacity = MIN(v, TOPOLOGY_CAPACITY_MAX);
                        any = true;
                } else if (r != -ENOENT)
                        topology_note(t, "%s: %s; CPU %d taken as full capacity", rel,
                                      read_error(r < 0 ? r : -ERANGE), c);
        }
        if (any)
                return;

        for (int i = 0; i < 2; i++) {
                r = read_cpulist(root, pmus[i], &lists[i], &have[i]);
                if (r < 0) {
                        topology_note(t, "%s: %s; all CPUs taken as full capacity", pmus[i], read_error(r));
                        return;
                }
        }
        if (!have[0] || !have[1])
                return;
        CPUMASK_FOREACH(c, &lists[1])
                if (c < t->n_cpus && !cpumask_test(&lists[0], c))
                        t->cpus[c].capacity = CAPACITY_ATOM;
}

/* NUMA nodes: /sys/devices/system/node/nodeN/cpulist. No directory: node 0 for all. */
static void load_nodes(const char *root, struct topology *t) {
        char path[PATH_MAX];
        DIR *d;
        struct dirent *de;

        if (!util_path_at(path, sizeof(path), root, SYS_NODE)) {
                topology_note(t, SYS_NODE ": %s; all CPUs taken as node 0", strerror(ENAMETOOLONG));
                return;
        }
        d = opendir(path);
        if (!d) {
                if (errno != ENOENT)
                        topology_note(t, SYS_NODE ": %s; all CPUs taken as node 0", strerror(errno));
                return;
        }
        while ((de = readdir(d))) {
                char rel[128];
                cpumask_t m;
                int node, r;

                if (strncmp(de->d_name, "node", 4) != 0 || util_parse_int(de->d_name + 4, &node) < 0 ||
                    node < 0)
                        continue;
                snprintf(rel, sizeof(rel), SYS_NODE "/node%d/cpulist", node);
                r = read_cpulist(root, rel, &m, NULL);
                if (r < 0) {
                        topology_note(t, "%s: %s; its CPUs taken as node 0", rel, read_error(r));
                        continue;
                }
                CPUMASK_FOREACH(c, &m)
                        if (c < t->n_cpus)
                                t->cpus[c].node = node;
        }
        closedir(d);
}

/*
 * The CPU set: possible, else present, else online, the first that is
 * there, parses and is not empty. -E2BIG (more CPUs than a cpumask_t
 * holds) stops the search: a smaller file would only hide that.
 */
static int load_cpu_set(const char *root, struct topology *t, cpumask_t *ret) {
        static const char *const files[] = { SYS_CPU "/possible", SYS_CPU "/present", SYS_CPU "/online" };
        int r = -ENOENT;

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                bool present;
                int k = read_cpulist(root, files[i], ret, &present);

                if (k == -E2BIG)
                        return k;
                if (k < 0) {
                        topology_note(t, "%s: %s; %s", files[i], read_error(k),
                                      i + 1 < ELEMENTSOF(files) ? "trying the next CPU list" : "no CPU list left");
                        r = k;
                } else if (present && !cpumask_empty(ret))
                        return 0;
        }
        return r;
}

/* Core, package and LLC of one CPU. Offline CPUs have no topology directory: left as set up. */
static void load_cpu(const char *root, struct topology *t, int c) {
        struct topo_cpu *tc = &t->cpus[c];
        char rel[128];
        int r, v;

        snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/topology/thread_siblings_list", c);
        r = read_first_cpu(root, rel, t->n_cpus);
        if (r >= 0)
                tc->core_id = r;
        else if (tc->online)
                topology_note(t, "%s: %s; CPU %d taken as its own core", rel, read_error(r), c);
        snprintf(rel, sizeof(rel), SYS_CPU "/cpu%d/topology/physical_package_id", c);
        r = read_int(root, rel, &v);
        if (r >= 0 && v >= 0)
                tc->package_id = v;   /* -1: not known (old arm64); package 0 */
        else if (r < 0 && tc->online)
                topology_note(t, "%s: %s; CPU %d taken as package 0", rel, read_error(r), c);
        tc->llc_id = read_llc(root, t, c);
}

static void load_cpulist_noted(const char *root, struct topology *t, const char *path, const char *what,
                               cpumask_t *ret) {
        int r = read_cpulist(root, path, ret, NULL);

        if (r < 0)
                topology_note(t, "%s: %s; no CPU taken as %s", path, read_error(r), what);
}

int topology_load(const char *root, struct topology **ret) {
        struct topology *t;
        cpumask_t possible;
        bool present;
        int r, last = -1;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        r = load_cpu_set(root, t, &possible);
        if (r < 0)
                goto fail;
        CPUMASK_FOREACH(c, &possible)
                last = c;
        t->n_cpus = last + 1;
        t->cpus = calloc((size_t) t->n_cpus, sizeof(*t->cpus));
        if (!t->cpus) {
                r = -ENOMEM;
                goto fail;
        }

        r = read_cpulist(root, SYS_CPU "/online", &t->online, &present);
        if (r < 0)
                topology_note(t, SYS_CPU "/online: %s; every CPU of the CPU list taken as online", read_error(r));
        if (r < 0 || !present)
                t->online = possible;   /* kernels without hotplug support */
        t->online = cpumask_and(&t->online, &possible);
        if (cpumask_empty(&t->online)) {
                topology_note(t, SYS_CPU "/online: no CPU of the CPU list; all of them taken as online");
                t->online = possible;
        }

        for (int c = 0; c < t->n_cpus; c++) {
                struct topo_cpu *tc = &t->cpus[c];

                tc->online = cpumask_test(&t->online, c);
                /* Until read (or when unreadable, or the CPU is offline): each CPU is
                 * its own core, package 0, and the topology is re-read on hotplug. */
                tc->core_id = c;
                tc->package_id = 0;
                tc->llc_id = -1;
                tc->node = 0;
                tc->capacity = TOPOLOGY_CAPACITY_MAX;
                if (cpumask_test(&possible, c))
                        load_cpu(root, t, c);
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

        load_nodes(root, t);
        load_capacities(root, t, &possible);
        /* Unreadable: no CPU is known to be isolated. Tasks' default affinity
         * already leaves isolcpus= CPUs out, and the note says what is unknown. */
        load_cpulist_noted(root, t, SYS_CPU "/isolated", "isolated", &t->isolated);
        load_cpulist_noted(root, t, SYS_CPU "/nohz_full", "nohz_full", &t->nohz_full);

        /* Our own affinity is a property of this process, not of the tree under
         * root; with a fixture root it says nothing about the fixture's CPUs. */
        if (util_root_is_real(root)) {
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

int topology_to_json(const struct topology *t, struct json_object **ret) {
        struct json_object *o, *notes;
        char buf[4096];
        cpumask_t usable;

        if (!t || !ret)
                return -EINVAL;
        o = json_object_new_object();
        notes = json_object_new_array();
        if (!o || !notes) {
                json_object_put(o);
                json_object_put(notes);
                return -ENOMEM;
        }
        usable = topology_usable(t);
        json_object_object_add(o, "cpus", json_object_new_int(t->n_cpus));
        json_object_object_add(o, "online", json_object_new_int((int) cpumask_weight(&t->online)));
        json_object_object_add(o, "cores", json_object_new_int(t->n_cores));
        json_object_object_add(o, "llcs", json_object_new_int(t->n_llcs));
        json_object_object_add(o, "nodes", json_object_new_int(t->n_nodes));
        json_object_object_add(o, "capacities", json_object_new_int(t->n_capacities));
        json_object_object_add(o, "isolated", json_object_new_string(cpumask_format_list(&t->isolated, buf, sizeof(buf))));
        json_object_object_add(o, "nohz_full", json_object_new_string(cpumask_format_list(&t->nohz_full, buf, sizeof(buf))));
        json_object_object_add(o, "usable", json_object_new_string(cpumask_format_list(&usable, buf, sizeof(buf))));
        for (int i = 0; i < t->n_notes; i++)
                json_object_array_add(notes, json_object_new_string(t->notes[i]));
        json_object_object_add(o, "notes", notes);
        json_object_object_add(o, "notes_dropped", json_object_new_int(t->n_notes_dropped));
        *ret = o;
        return 0;
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
                if (t->cpus[c].capacity <= 0)
                        t->cpus[c].capacity = TOPOLOGY_CAPACITY_MAX;
        }
        t->online = cpumask_first_n(n_cpus);
        t->self_allowed = t->online;
        topology_count(t);
        return t;
}
