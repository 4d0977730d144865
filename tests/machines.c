/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The machine specs of tests/machines.h and the writer that turns one into
 * a /proc and /sys tree. As in tests/fixtures/sample, only the files the
 * daemon reads: the kernel's other files (core_cpus_list, die_id, cache
 * size, ...) would add files to create, and creating them is what costs
 * (about 0.7 ms a file on the development VM's ext4).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cpumask.h"
#include "machines.h"

const char *const machine_kernels[] = { "6.1", "6.18", NULL };

/* Expected values: cpus, online, cores, llcs, nodes, usable, capacities (counted by hand). */
const struct machine machines[] = {
        { .name = "up1", .what = "a 1-CPU VM: \"(null)\" has nothing to pad",
          .packages = 1, .llcs = 1, .cores = 1, .threads = 1, .nodes = 1,
          .expect = { 1, 1, 1, 1, 1, 1, 1 } },
        { .name = "vm2", .what = "a 2-vCPU VM like the development machine",
          .packages = 1, .llcs = 1, .cores = 2, .threads = 1, .nodes = 1,
          .expect = { 2, 2, 2, 1, 1, 2, 1 } },
        { .name = "vm2-bare", .what = "a 2-vCPU VM without cache information or NUMA",
          .packages = 1, .llcs = 1, .cores = 2, .threads = 1, .nodes = 0, .no_cache = true,
          .expect = { 2, 2, 2, 1, 1, 2, 1 } },
        { .name = "vm7", .what = "7 vCPUs: the fewest where 6.1 pads \"(null)\" (one blank)",
          .packages = 1, .llcs = 1, .cores = 7, .threads = 1, .nodes = 1,
          .expect = { 7, 7, 7, 1, 1, 7, 1 } },
        { .name = "vm8", .what = "8 vCPUs: \"  (null)\" on 6.1",
          .packages = 1, .llcs = 1, .cores = 8, .threads = 1, .nodes = 1,
          .expect = { 8, 8, 8, 1, 1, 8, 1 } },
        { .name = "vm4-of-16", .what = "a VM with 4 vCPUs present of 16 possible (hotplug slots)",
          .packages = 1, .llcs = 1, .cores = 4, .threads = 1, .nodes = 1, .absent = 12,
          .expect = { 16, 4, 4, 1, 1, 4, 1 } },
        { .name = "smt8", .what = "a 4-core desktop with SMT",
          .packages = 1, .llcs = 1, .cores = 4, .threads = 2, .nodes = 1,
          .expect = { 8, 8, 4, 1, 1, 8, 1 } },
        { .name = "smt8-nosmt", .what = "the same booted with nosmt: the second threads offline",
          .packages = 1, .llcs = 1, .cores = 4, .threads = 2, .nodes = 1, .offline = "4-7",
          .expect = { 8, 4, 4, 1, 1, 4, 1 } },
        { .name = "smt16-2llc", .what = "an 8-core Zen 2 desktop: two CCXs of 4 cores, each its own L3, SMT2",
          .packages = 1, .llcs = 2, .cores = 4, .threads = 2, .nodes = 1,
          .expect = { 16, 16, 8, 2, 1, 16, 1 } },
        { .name = "smp64", .what = "64 cores without SMT (an arm64 server)",
          .packages = 1, .llcs = 1, .cores = 64, .threads = 1, .nodes = 1,
          .expect = { 64, 64, 64, 1, 1, 64, 1 } },
        { .name = "smt64-numa2", .what = "2 sockets x 16 cores x SMT2, a node per socket",
          .packages = 2, .llcs = 1, .cores = 16, .threads = 2, .nodes = 2,
          .expect = { 64, 64, 32, 2, 2, 64, 1 } },
        { .name = "smt64-nohz", .what = "32 cores x SMT2 with isolcpus= and nohz_full= on 24 cores",
          .packages = 1, .llcs = 1, .cores = 32, .threads = 2, .nodes = 1,
          .isolated = "8-31,40-63", .nohz_full = "8-31,40-63",
          .expect = { 64, 64, 32, 1, 1, 16, 1 } },
        { .name = "smt64-offline", .what = "32 cores x SMT2 with cores 28-31 (CPUs 28-31,60-63) offline",
          .packages = 1, .llcs = 1, .cores = 32, .threads = 2, .nodes = 1, .offline = "28-31,60-63",
          .expect = { 64, 56, 28, 1, 1, 56, 1 } },
        { .name = "2s8c-smt2-numa2", .what = "2 sockets x 8 cores x SMT2, a node per socket",
          .packages = 2, .llcs = 1, .cores = 8, .threads = 2, .nodes = 2,
          .expect = { 32, 32, 16, 2, 2, 32, 1 } },
        { .name = "dual-ccd", .what = "a 16-core dual-CCD part (two L3s in one package), SMT2",
          .packages = 1, .llcs = 2, .cores = 8, .threads = 2, .nodes = 1,
          .expect = { 32, 32, 16, 2, 1, 32, 1 } },
        { .name = "hybrid-8p16e", .what = "an Intel 8P+16E hybrid: P cores SMT2 (CPUs 0-15), E cores 16-31",
          .packages = 1, .llcs = 1, .cores = 8, .threads = 2, .e_cores = 16, .nodes = 1,
          .numbering = MACHINE_SIBLINGS_ADJACENT, .hybrid_pmu = true,
          .expect = { 32, 32, 24, 1, 1, 32, 2 } },
        { .name = "biglittle-4+4", .what = "an arm64 big.LITTLE board: 4 little (CPUs 0-3), 4 big, cpu_capacity",
          .packages = 1, .llcs = 1, .cores = 4, .threads = 1, .e_cores = 4, .nodes = 1,
          .numbering = MACHINE_LITTLE_FIRST, .capacity = true,
          .expect = { 8, 8, 8, 1, 1, 8, 2 } },
        { .name = "smt128-numa2", .what = "2 sockets x 2 CCDs x 16 cores x SMT2, a node per socket",
          .packages = 2, .llcs = 2, .cores = 16, .threads = 2, .nodes = 2,
          .expect = { 128, 128, 64, 4, 2, 128, 1 } },
        { .name = "smp256", .what = "256 cores without SMT: 2 sockets x 2 L3s, a node per socket",
          .packages = 2, .llcs = 2, .cores = 64, .threads = 1, .nodes = 2,
          .expect = { 256, 256, 256, 4, 2, 256, 1 } },
        { .name = "smt256", .what = "2 sockets x 4 CCDs x 16 cores x SMT2, a node per socket",
          .packages = 2, .llcs = 4, .cores = 16, .threads = 2, .nodes = 2,
          .expect = { 256, 256, 128, 8, 2, 256, 1 } },
        { .name = "smt1024", .what = "the most the daemon takes (CPUMASK_MAX): 4 sockets x 8 L3s x 16 cores x SMT2",
          .packages = 4, .llcs = 8, .cores = 16, .threads = 2, .nodes = 4,
          .expect = { 1024, 1024, 512, 32, 4, 1024, 1 } },
        {},
};

const struct machine *machine_find(const char *name) {
        for (const struct machine *m = machines; m->name; m++)
                if (strcmp(m->name, name) == 0)
                        return m;
        return NULL;
}

/* ---- layout ------------------------------------------------------------ */

struct core {
        int package, llc, cluster, node;   /* llc and cluster numbered across the machine */
        bool small;                        /* E / little core: one thread, clustered L2 */
        int cpus[2], n_cpus;
};

struct layout {
        struct core *cores;
        int n_cores, n_present, n_possible;
        int *core_of;                      /* CPU -> core, -1 for an absent CPU */
        cpumask_t online, small;
};

static void layout_free(struct layout *l) {
        free(l->cores);
        free(l->core_of);
}

/* Cores in the order the firmware lists them; their CPUs numbered as Linux does. */
static int layout_build(const struct machine *m, struct layout *l) {
        int per_llc = m->cores + m->e_cores, cluster = 0, cpu = 0;
        cpumask_t offline;

        *l = (struct layout) {};
        if (m->packages < 1 || m->llcs < 1 || per_llc < 1 || m->threads < 1 || m->threads > 2)
                return -EINVAL;
        l->n_cores = m->packages * m->llcs * per_llc;
        l->cores = calloc((size_t) l->n_cores, sizeof(*l->cores));
        if (!l->cores)
                return -ENOMEM;
        for (int i = 0; i < l->n_cores; i++) {
                struct core *c = &l->cores[i];
                int in_llc = i % per_llc;

                c->llc = i / per_llc;
                c->package = c->llc / m->llcs;
                c->small = m->numbering == MACHINE_LITTLE_FIRST ? in_llc < m->e_cores : in_llc >= m->cores;
                /* A big core has its own L2; small cores share one per 4 (Gracemont, Cortex-A55 here). */
                if (i > 0 && (!c->small || !l->cores[i - 1].small || in_llc % 4 == 0 ||
                              l->cores[i - 1].llc != c->llc))
                        cluster++;
                c->cluster = cluster;
                c->node = m->nodes > 0 ? i * m->nodes / l->n_cores : 0;
                c->n_cpus = c->small ? 1 : m->threads;
        }
        if (m->numbering == MACHINE_SIBLINGS_LAST)
                for (int t = 0; t < 2; t++)
                        for (int i = 0; i < l->n_cores; i++) {
                                if (t < l->cores[i].n_cpus)
                                        l->cores[i].cpus[t] = cpu++;
                        }
        else
                for (int i = 0; i < l->n_cores; i++)
                        for (int t = 0; t < l->cores[i].n_cpus; t++)
                                l->cores[i].cpus[t] = cpu++;
        l->n_present = cpu;
        l->n_possible = cpu + m->absent;
        if (l->n_possible > CPUMASK_MAX)
                return -EINVAL;
        l->core_of = malloc((size_t) l->n_possible * sizeof(int));
        if (!l->core_of)
                return -ENOMEM;
        for (int c = 0; c < l->n_possible; c++)
                l->core_of[c] = -1;
        for (int i = 0; i < l->n_cores; i++)
                for (int t = 0; t < l->cores[i].n_cpus; t++) {
                        l->core_of[l->cores[i].cpus[t]] = i;
                        if (l->cores[i].small)
                                cpumask_set(&l->small, l->cores[i].cpus[t]);
                }
        cpumask_zero(&offline);
        if (m->offline && cpumask_parse_list(m->offline, &offline) < 0)
                return -EINVAL;
        l->online = cpumask_first_n(l->n_present);
        l->online = cpumask_andnot(&l->online, &offline);
        return 0;
}

/* Online CPUs whose core satisfies same(layout, core of cpu, core i). */
static cpumask_t online_where(const struct layout *l, int i, bool (*same)(const struct core *, const struct core *)) {
        cpumask_t m;

        cpumask_zero(&m);
        CPUMASK_FOREACH(c, &l->online)
                if (same(&l->cores[l->core_of[c]], &l->cores[i]))
                        cpumask_set(&m, c);
        return m;
}

static bool same_core(const struct core *a, const struct core *b) { return a == b; }
static bool same_cluster(const struct core *a, const struct core *b) { return a->cluster == b->cluster; }
static bool same_llc(const struct core *a, const struct core *b) { return a->llc == b->llc; }
static bool same_package(const struct core *a, const struct core *b) { return a->package == b->package; }
static bool same_node(const struct core *a, const struct core *b) { return a->node == b->node; }
static bool any_core(const struct core *a, const struct core *b) {
        (void) a;
        (void) b;
        return true;
}

/* ---- writing ----------------------------------------------------------- */

/* Files below one root; the first error is kept and later writes are skipped. */
struct writer {
        const char *root;
        int r;
};

static int mkdir_parents(char *path) {
        for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                        *p = '/';
                        return -errno;
                }
                *p = '/';
        }
        return 0;
}

__attribute__((format(printf, 3, 4)))
static void put(struct writer *w, const char *content, const char *fmt, ...) {
        char path[4096];
        va_list ap;
        FILE *f;
        int n;

        if (w->r < 0)
                return;
        n = snprintf(path, sizeof(path), "%s/", w->root);
        va_start(ap, fmt);
        vsnprintf(path + n, sizeof(path) - (size_t) n, fmt, ap);
        va_end(ap);
        w->r = mkdir_parents(path);
        if (w->r < 0)
                return;
        f = fopen(path, "we");
        if (!f) {
                w->r = -errno;
                return;
        }
        if (fputs(content, f) < 0)
                w->r = -EIO;
        if (fclose(f) != 0 && w->r >= 0)
                w->r = -errno;
}

/* "<list>\n" as the kernel's %*pbl prints a mask. */
static const char *list_line(const cpumask_t *m, char *buf, size_t size) {
        size_t n;

        cpumask_format_list(m, buf, size - 1);
        n = strlen(buf);
        buf[n] = '\n';
        buf[n + 1] = '\0';
        return buf;
}

/* The kernel's %*pb: 32-bit groups of hex, most significant first, comma-separated, nbits wide. */
static const char *hex_mask(const cpumask_t *m, int nbits, char *buf, size_t size) {
        size_t n = 0;

        for (int g = (nbits - 1) / 32; g >= 0 && n + 10 < size; g--) {
                unsigned v = 0;
                int bits = g == (nbits - 1) / 32 ? nbits - 32 * g : 32;

                for (int b = 0; b < 32; b++)
                        if (cpumask_test(m, 32 * g + b))
                                v |= 1u << b;
                n += (size_t) snprintf(buf + n, size - n, "%s%0*x", n ? "," : "", (bits + 3) / 4, v);
        }
        return buf;
}

static void write_cpu(struct writer *w, const struct machine *m, const struct layout *l, int cpu) {
        static const struct {
                const char *type;
                int level;
                bool (*shared)(const struct core *, const struct core *);
        } caches[] = {
                { "Data", 1, same_core },
                { "Instruction", 1, same_core },
                { "Unified", 2, same_cluster },   /* small cores share an L2 per cluster of 4 */
                { "Unified", 3, same_llc },
        };
        const struct core *co = &l->cores[l->core_of[cpu]];
        const char *d = "sys/devices/system/cpu";
        char buf[4096], val[32];
        cpumask_t s;
        int i = l->core_of[cpu];

        /* x86 has no online file for the boot CPU. */
        if (cpu > 0)
                put(w, cpumask_test(&l->online, cpu) ? "1\n" : "0\n", "%s/cpu%d/online", d, cpu);
        if (m->capacity)
                put(w, co->small ? "446\n" : "1024\n", "%s/cpu%d/cpu_capacity", d, cpu);
        if (!cpumask_test(&l->online, cpu))
                return;   /* offline: its topology/ and cache/ went away with it */

        s = online_where(l, i, same_core);
        put(w, list_line(&s, buf, sizeof(buf)), "%s/cpu%d/topology/thread_siblings_list", d, cpu);
        snprintf(val, sizeof(val), "%d\n", co->package);
        put(w, val, "%s/cpu%d/topology/physical_package_id", d, cpu);

        if (m->no_cache)
                return;
        for (size_t k = 0; k < sizeof(caches) / sizeof(caches[0]); k++) {
                snprintf(val, sizeof(val), "%d\n", caches[k].level);
                put(w, val, "%s/cpu%d/cache/index%zu/level", d, cpu, k);
                snprintf(val, sizeof(val), "%s\n", caches[k].type);
                put(w, val, "%s/cpu%d/cache/index%zu/type", d, cpu, k);
                s = online_where(l, i, caches[k].shared);
                put(w, list_line(&s, buf, sizeof(buf)), "%s/cpu%d/cache/index%zu/shared_cpu_list", d, cpu, k);
        }
}

static void write_sys(struct writer *w, const struct machine *m, const struct layout *l, const char *kernel) {
        const char *d = "sys/devices/system/cpu";
        char buf[4096];
        cpumask_t s, possible = cpumask_first_n(l->n_possible), present = cpumask_first_n(l->n_present);

        put(w, list_line(&possible, buf, sizeof(buf)), "%s/possible", d);
        put(w, list_line(&present, buf, sizeof(buf)), "%s/present", d);
        put(w, list_line(&l->online, buf, sizeof(buf)), "%s/online", d);
        snprintf(buf, sizeof(buf), "%s\n", m->isolated ? m->isolated : "");
        put(w, buf, "%s/isolated", d);
        if (m->nohz_full)
                snprintf(buf, sizeof(buf), "%s\n", m->nohz_full);
        else if (strcmp(kernel, "6.1") == 0)
                /* "%*pbl" of a NULL mask: "(null)" right-aligned to nr_cpu_ids. */
                snprintf(buf, sizeof(buf), "%*s\n", l->n_possible, "(null)");
        else
                snprintf(buf, sizeof(buf), "\n");
        put(w, buf, "%s/nohz_full", d);
        for (int c = 0; c < l->n_present; c++)
                write_cpu(w, m, l, c);

        if (m->hybrid_pmu) {
                s = cpumask_andnot(&present, &l->small);
                put(w, list_line(&s, buf, sizeof(buf)), "sys/devices/cpu_core/cpus");
                put(w, list_line(&l->small, buf, sizeof(buf)), "sys/devices/cpu_atom/cpus");
        }

        if (m->nodes > 0) {
                for (int n = 0; n < m->nodes; n++) {
                        int first = 0;

                        while (first < l->n_cores && l->cores[first].node != n)
                                first++;
                        s = first < l->n_cores ? online_where(l, first, same_node) : (cpumask_t) {};
                        put(w, list_line(&s, buf, sizeof(buf)), "sys/devices/system/node/node%d/cpulist", n);
                }
        }
}

/* The scheduling domains of a CPU, innermost first, as /proc/schedstat lists them. */
static int domains_of(const struct layout *l, int i, cpumask_t ret[4], const char *names[4]) {
        static bool (*const spans[])(const struct core *, const struct core *) = {
                same_core, same_cluster, same_llc, same_package, any_core,
        };
        static const char *const span_names[] = { "SMT", "CLS", "MC", "PKG", "NUMA" };
        cpumask_t below = cpumask_of(l->cores[i].cpus[0]);
        int n = 0;

        /* A level that spans no more than the one below it is degenerate: the kernel drops it. */
        for (size_t k = 0; k < sizeof(spans) / sizeof(spans[0]) && n < 4; k++) {
                cpumask_t s = online_where(l, i, spans[k]);

                if (cpumask_weight(&s) > cpumask_weight(&below)) {
                        ret[n] = below = s;
                        names[n++] = span_names[k];
                }
        }
        return n;
}

static void write_proc(struct writer *w, const struct machine *m, const struct layout *l, const char *kernel) {
        bool v15 = strcmp(kernel, "6.1") == 0;
        /* Load-balance fields per domain line: 8 per idle type in version 15, 11 in 17, plus 12. */
        int lb_fields = v15 ? 3 * 8 + 12 : 3 * 11 + 12;
        static const char init_stat[] =
                "1 (systemd) S 0 1 1 0 -1 4194560 100 0 0 0 50 30 0 0 20 0 1 0 2 10485760 300 "
                "18446744073709551615 1 1 0 0 0 0 671173123 4096 1260 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        char *stat = NULL, *sched = NULL, *status = NULL, list[4096], mask[300], line[64];
        size_t n_stat, n_sched, n_status;
        FILE *fs = open_memstream(&stat, &n_stat), *fd = open_memstream(&sched, &n_sched),
             *ft = open_memstream(&status, &n_status);
        cpumask_t allowed = cpumask_first_n(l->n_possible), iso;

        cpumask_zero(&iso);
        if (!fs || !fd || !ft || (m->isolated && cpumask_parse_list(m->isolated, &iso) < 0)) {
                w->r = -EINVAL;
                goto out;
        }
        fprintf(fs, "cpu  %d 0 %d %d 600 0 100 0 0 0\n", 3000 * l->n_present, 2000 * l->n_present,
                60000 * l->n_present);
        fprintf(fd, "version %d\ntimestamp 4295000000\n", v15 ? 15 : 17);
        CPUMASK_FOREACH(c, &l->online) {
                cpumask_t spans[4];
                const char *names[4];
                int nd = domains_of(l, l->core_of[c], spans, names);

                fprintf(fs, "cpu%d 3000 0 2000 60000 600 0 100 0 0 0\n", c);
                fprintf(fd, "cpu%d 0 0 0 0 0 0 1000000000 500000000 2000\n", c);
                for (int dm = 0; dm < nd; dm++) {
                        fprintf(fd, "domain%d %s%s%s", dm, v15 ? "" : names[dm], v15 ? "" : " ",
                                hex_mask(&spans[dm], l->n_possible, mask, sizeof(mask)));
                        for (int f = 0; f < lb_fields; f++)
                                fputs(" 0", fd);
                        fputc('\n', fd);
                }
        }
        fputs("intr 811408 0 0 0\nctxt 8613429\nbtime 1795983998\nprocesses 44832\n"
              "procs_running 1\nprocs_blocked 0\nsoftirq 90000 0 10000 0 20000 0 0 10 30000 0 29990\n", fs);

        /* init: its affinity is every possible CPU but the isolated ones (isolcpus= housekeeping). */
        allowed = cpumask_andnot(&allowed, &iso);
        fprintf(ft, "Name:\tsystemd\nUmask:\t0000\nState:\tS (sleeping)\nTgid:\t1\nNgid:\t0\nPid:\t1\nPPid:\t0\n"
                "TracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nFDSize:\t128\nGroups:\t \nThreads:\t1\n"
                "Cpus_allowed:\t%s\nCpus_allowed_list:\t%s\nMems_allowed_list:\t0\n"
                "voluntary_ctxt_switches:\t1000\nnonvoluntary_ctxt_switches:\t20\n",
                hex_mask(&allowed, l->n_possible, mask, sizeof(mask)),
                cpumask_format_list(&allowed, list, sizeof(list)));
        /* The streams' buffers are complete only once closed. */
        if ((fclose(fs) != 0) | (fclose(fd) != 0) | (fclose(ft) != 0))
                w->r = -ENOMEM;
        fs = fd = ft = NULL;
        put(w, stat, "proc/stat");
        put(w, sched, "proc/schedstat");
        put(w, status, "proc/1/status");
        put(w, status, "proc/1/task/1/status");
        put(w, init_stat, "proc/1/stat");
        put(w, init_stat, "proc/1/task/1/stat");
        put(w, "/sbin/init", "proc/1/cmdline");
        put(w, "0::/init.scope\n", "proc/1/cgroup");
        put(w, "some avg10=0.50 avg60=0.20 avg300=0.10 total=19882964\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
            "proc/pressure/cpu");
        put(w, "0.10 0.05 0.01 1/120 300\n", "proc/loadavg");
        /* systemd's 50-pid-max.conf on 64-bit Debian */
        put(w, "4194304\n", "proc/sys/kernel/pid_max");
        snprintf(line, sizeof(line), "%s.0-1-%s\n", kernel, m->capacity ? "arm64" : "amd64");
        put(w, line, "proc/sys/kernel/osrelease");
        put(w, "5f2c3e9a-0d7b-4c1e-9a53-2b8e6c4d1f70\n", "proc/sys/kernel/random/boot_id");
out:
        if (fs)
                fclose(fs);
        if (fd)
                fclose(fd);
        if (ft)
                fclose(ft);
        free(stat);
        free(sched);
        free(status);
}

int machine_write(const struct machine *m, const char *kernel, const char *root) {
        struct writer w = { .root = root };
        struct layout l;
        bool known = false;

        for (const char *const *k = machine_kernels; *k; k++)
                known = known || strcmp(*k, kernel) == 0;
        if (!known)
                return -EINVAL;
        w.r = layout_build(m, &l);
        if (w.r >= 0)
                write_sys(&w, m, &l, kernel);
        if (w.r >= 0)
                write_proc(&w, m, &l, kernel);
        layout_free(&l);
        return w.r;
}
