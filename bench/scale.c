/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * scale: what one pass of sample + detect + plan costs as the CPU count
 * grows, on the fixture machines of tests/machines.c with a task
 * population written into their /proc.
 *
 *   scale [--machines LIST] [--threads LIST] [--passes N] [--warmup N]
 *         [--repeats N] [--config-dir DIR] [--tmpdir DIR]
 *   scale write MACHINE THREADS DIR   one tree, for bench/scale.sh's daemon runs
 *   scale mutate DIR INTERVAL_MS      advance its busy threads until killed
 *   scale rings [--measure]           the wake sampler's ring sizes, 1..1024 CPUs; with
 *                                     --measure the real events on this machine's CPUs, the
 *                                     rings sized for 2..256 possible CPUs
 *
 * The population (population_write()): THREADS threads in all; a hog per
 * four CPUs and a ping-pong pair per eight (at least one of each), each in
 * a process of its own, the rest idle in processes of 20 threads. Between
 * passes, outside the measured time, the busy threads' files are advanced
 * as one second of a real machine would: a hog runs a whole CPU and hops
 * to the next CPU (it migrates: the planner pins it), a pair member runs
 * 30 % and switches 20,000 times. The pairs' wake-up edges are handed to
 * the planner as the perf sampler would (20,000/s each way, half of them
 * across CPUs), because perf cannot describe a fixture tree.
 *
 * Each measurement runs in a fresh process (this binary again, with
 * --measure), so its peak RSS is its own; configurations are interleaved
 * (every repeat measures each once, the order rotated each repeat) and
 * the medians of the per-pass CPU times are reported, so the noise of a
 * shared machine hits every configuration alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench-util.h"
#include "common/util.h"
#include "config/config.h"
#include "detect/detect.h"
#include "plan/plan.h"
#include "sample/sample.h"
#include "tests/machines.h"
#include "tests/test-fixtures.h"
#include "sample/topology.h"
#include "sample/wake.h"

#define IDLE_THREADS_PER_PROCESS 20
#define PAIR_WAKEUPS_PER_S 20000.0
/* Fake PIDs: far above anything the fixture's init uses. */
#define PID_BASE 1000
#define HOG_TICKS_PER_S 100             /* one CPU-second at CLK_TCK 100 */
#define PAIR_UTIL 0.3

struct population {
        int n_cpus;                     /* online CPUs the busy threads hop over */
        int threads;
        int hogs, pairs;
};

static void population_init(struct population *p, int n_cpus, int threads) {
        *p = (struct population) {
                .n_cpus = n_cpus,
                .threads = threads,
                .hogs = MAX(n_cpus / 4, 1),
                .pairs = MAX(n_cpus / 8, 1),
        };
        /* never more busy threads than threads */
        while (p->hogs + 2 * p->pairs > threads && p->hogs > 1)
                p->hogs--;
}

/* ---- writing the tree -------------------------------------------------- */

static int write_file(const char *root, const char *rel, const char *content) {
        char path[PATH_MAX], tmp[PATH_MAX + 8];
        int fd;
        size_t n = strlen(content);

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        /* rename: a daemon reading the tree never sees half a file */
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (write(fd, content, n) != (ssize_t) n) {
                close(fd);
                return -EIO;
        }
        close(fd);
        return rename(tmp, path) < 0 ? -errno : 0;
}

__attribute__((format(printf, 2, 3)))
static int mkdirf(const char *root, const char *fmt, ...) {
        char rel[256], path[PATH_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(rel, sizeof(rel), fmt, ap);
        va_end(ap);
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* What a thread's counters are after `pass` seconds. */
struct counters {
        uint64_t utime, run_ns, nvcsw, migrations;
        int cpu;
};

enum kind { IDLE, HOG, PAIR };

/* secs: seconds of the fixture's life; a hog hops to the next CPU every second. */
static struct counters counters_at(const struct population *p, enum kind k, int index, double secs) {
        unsigned whole = (unsigned) secs;

        switch (k) {
        case HOG:
                return (struct counters) {
                        .utime = 500 + (uint64_t) (secs * HOG_TICKS_PER_S),
                        .run_ns = (uint64_t) ((5 + secs) * NSEC_PER_SEC),
                        .nvcsw = 10,
                        .migrations = 10 + whole,
                        .cpu = (int) (((unsigned) index + whole) % (unsigned) p->n_cpus),
                };
        case PAIR:
                return (struct counters) {
                        .utime = 100 + (uint64_t) (secs * PAIR_UTIL * HOG_TICKS_PER_S),
                        .run_ns = (uint64_t) ((1 + secs * PAIR_UTIL) * NSEC_PER_SEC),
                        .nvcsw = 1000 + (uint64_t) (secs * PAIR_WAKEUPS_PER_S),
                        .migrations = 10 + 2 * whole,
                        .cpu = index % p->n_cpus,
                };
        default:
                return (struct counters) { .utime = 2, .run_ns = 20 * NSEC_PER_MSEC, .nvcsw = 50, .migrations = 3,
                                           .cpu = index % p->n_cpus };
        }
}

static int write_thread(const char *root, int pid, int tid, const char *comm, const struct counters *c, int nthreads,
                        int n_cpus) {
        char rel[256], buf[2048];
        int r;

        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", pid, tid);
        snprintf(buf, sizeof(buf),
                 "%d (%s) S 1 %d %d 0 -1 4194304 100 0 0 0 %" PRIu64 " 0 0 0 20 0 %d 0 5000 10485760 300 "
                 "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 %d 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                 tid, comm, pid, pid, c->utime, nthreads, c->cpu);
        r = write_file(root, rel, buf);
        if (r < 0)
                return r;
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/status", pid, tid);
        snprintf(buf, sizeof(buf),
                 "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t1\n"
                 "TracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nFDSize:\t64\n"
                 "Groups:\t \nThreads:\t%d\nCpus_allowed_list:\t0-%d\nMems_allowed_list:\t0\n"
                 "voluntary_ctxt_switches:\t%" PRIu64 "\nnonvoluntary_ctxt_switches:\t5\n",
                 comm, pid, tid, nthreads, n_cpus - 1, c->nvcsw);
        r = write_file(root, rel, buf);
        if (r < 0)
                return r;
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/schedstat", pid, tid);
        snprintf(buf, sizeof(buf), "%" PRIu64 " 3000000 %" PRIu64 "\n", c->run_ns, c->nvcsw);
        r = write_file(root, rel, buf);
        if (r < 0)
                return r;
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/sched", pid, tid);
        snprintf(buf, sizeof(buf),
                 "%s (%d, #threads: %d)\n-------------------------------------------------------------------\n"
                 "se.exec_start                                :        420428.485988\n"
                 "se.sum_exec_runtime                          :             1.259627\n"
                 "se.nr_migrations                             :   %18" PRIu64 "\n"
                 "nr_switches                                  :   %18" PRIu64 "\n"
                 "policy                                       :                    0\n"
                 "prio                                         :                  120\n",
                 comm, tid, nthreads, c->migrations, c->nvcsw);
        return write_file(root, rel, buf);
}

/* The process files; utime is the sum over its threads (the stat gate compares it). */
static int write_process(const char *root, int pid, const char *comm, uint64_t utime, int nthreads, int n_cpus) {
        char rel[256], buf[2048];
        int r;

        snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
        snprintf(buf, sizeof(buf),
                 "%d (%s) S 1 %d %d 0 -1 4194304 100 0 0 0 %" PRIu64 " 0 0 0 20 0 %d 0 5000 10485760 300 "
                 "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                 pid, comm, pid, pid, utime, nthreads);
        r = write_file(root, rel, buf);
        if (r < 0)
                return r;
        snprintf(rel, sizeof(rel), "proc/%d/status", pid);
        snprintf(buf, sizeof(buf),
                 "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t1\n"
                 "TracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nFDSize:\t64\n"
                 "Groups:\t \nThreads:\t%d\nCpus_allowed_list:\t0-%d\nMems_allowed_list:\t0\n"
                 "voluntary_ctxt_switches:\t50\nnonvoluntary_ctxt_switches:\t5\n",
                 comm, pid, pid, nthreads, n_cpus - 1);
        return write_file(root, rel, buf);
}

static uint64_t process_utime(const struct population *p, enum kind k, int first_index, int nthreads, double secs) {
        uint64_t sum = 0;

        for (int i = 0; i < nthreads; i++)
                sum += counters_at(p, k, first_index + i, secs).utime;
        return sum;
}

/* Busy processes first (hogs, then pair members), then the idle ones. */
static int population_write(const struct population *p, const char *root) {
        char rel[256], path[PATH_MAX], comm[16];
        int pid = PID_BASE, r, left;

        for (int i = 0; i < p->hogs + 2 * p->pairs; i++, pid++) {
                enum kind k = i < p->hogs ? HOG : PAIR;
                struct counters c = counters_at(p, k, i, 0);

                snprintf(comm, sizeof(comm), k == HOG ? "hog%d" : "pp%d", i);
                r = mkdirf(root, "proc/%d", pid);
                if (r >= 0)
                        r = mkdirf(root, "proc/%d/task", pid);
                if (r >= 0)
                        r = mkdirf(root, "proc/%d/task/%d", pid, pid);
                if (r >= 0)
                        r = write_process(root, pid, comm, c.utime, 1, p->n_cpus);
                if (r >= 0)
                        r = write_thread(root, pid, pid, comm, &c, 1, p->n_cpus);
                if (r < 0)
                        return r;
        }
        left = p->threads - p->hogs - 2 * p->pairs;
        for (int i = p->hogs + 2 * p->pairs; left > 0; pid += IDLE_THREADS_PER_PROCESS) {
                int n = MIN(left, IDLE_THREADS_PER_PROCESS);

                r = mkdirf(root, "proc/%d", pid);
                if (r >= 0)
                        r = mkdirf(root, "proc/%d/task", pid);
                for (int t = 0; t < n && r >= 0; t++) {
                        struct counters c = counters_at(p, IDLE, i + t, 0);
                        r = mkdirf(root, "proc/%d/task/%d", pid, pid + t);
                        if (r >= 0)
                                r = write_thread(root, pid, pid + t, "worker", &c, n, p->n_cpus);
                }
                if (r >= 0)
                        r = write_process(root, pid, "worker", process_utime(p, IDLE, i, n, 0), n, p->n_cpus);
                if (r < 0)
                        return r;
                i += n;
                left -= n;
        }
        /* machine_write()'s init has no schedstat or sched: the sampler would
         * conclude the kernel lacks them (CONFIG_SCHED_INFO) and read no one's */
        r = write_file(root, "proc/1/task/1/schedstat", "500000000 1000000 1000\n");
        if (r >= 0)
                r = write_file(root, "proc/1/task/1/sched",
                               "systemd (1, #threads: 1)\nse.nr_migrations                             :"
                               "                    5\n");
        if (r < 0)
                return r;
        /* the per-process files read once (policy matching) */
        for (int q = PID_BASE; q < pid; q++) {
                snprintf(rel, sizeof(rel), "%s/proc/%d", root, q);
                if (access(rel, F_OK) < 0)
                        continue;
                snprintf(rel, sizeof(rel), "proc/%d/cmdline", q);
                r = write_file(root, rel, "/usr/bin/app");
                if (r >= 0) {
                        snprintf(rel, sizeof(rel), "proc/%d/cgroup", q);
                        r = write_file(root, rel, "0::/system.slice/app.service\n");
                }
                if (r < 0)
                        return r;
                snprintf(path, sizeof(path), "%s/proc/%d/exe", root, q);
                if (symlink("/usr/bin/app", path) < 0 && errno != EEXIST)
                        return -errno;
        }
        return 0;
}

/* One second later: only the busy threads change. */
static int population_advance(const struct population *p, const char *root, double secs) {
        int r;

        for (int i = 0; i < p->hogs + 2 * p->pairs; i++) {
                enum kind k = i < p->hogs ? HOG : PAIR;
                struct counters c = counters_at(p, k, i, secs);
                char comm[16];

                snprintf(comm, sizeof(comm), k == HOG ? "hog%d" : "pp%d", i);
                r = write_thread(root, PID_BASE + i, PID_BASE + i, comm, &c, 1, p->n_cpus);
                if (r >= 0)
                        r = write_process(root, PID_BASE + i, comm, c.utime, 1, p->n_cpus);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- measuring (a fresh process per configuration) --------------------- */

struct result {
        double sample_usec, detect_usec, plan_usec, total_usec;   /* medians per pass, thread CPU time */
        double files;                                              /* files read per pass (median) */
        long hwm_kib;
        size_t heap_bytes;
        size_t tasks, findings, actions;
};

static uint64_t thread_cpu_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
        if (n == 0)
                return NAN;
        qsort(v, n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int measure(const char *root, const char *config_dir, int threads, unsigned warmup, unsigned passes,
                   struct result *res) {
        _cleanup_free_ double *ts = NULL, *td = NULL, *tp = NULL, *tt = NULL, *tf = NULL;
        _cleanup_free_ struct wake_edge *edges = NULL;
        struct config_paths paths = { .dirs = { config_dir, NULL } };
        struct findings findings = {};
        struct action_list actions = {};
        struct config *config = NULL;
        struct topology *topo = NULL;
        struct plan_state *state = NULL;
        struct sampler *s = NULL;
        struct population pop;
        struct snapshot *snap;
        uint64_t now = 1000 * USEC_PER_SEC;
        int r;

        ts = calloc(passes, sizeof(double));
        td = calloc(passes, sizeof(double));
        tp = calloc(passes, sizeof(double));
        tt = calloc(passes, sizeof(double));
        tf = calloc(passes, sizeof(double));
        if (!ts || !td || !tp || !tt || !tf)
                return -ENOMEM;
        r = topology_load(root, &topo);
        if (r < 0)
                return r;
        population_init(&pop, cpumask_weight(&topo->online), threads);
        r = config_load(&paths, &config, NULL);
        if (r < 0)
                return r;
        r = sampler_new(root, topo, 0, &s);
        if (r < 0)
                return r;
        state = plan_state_new();
        edges = calloc((size_t) pop.pairs * 2, sizeof(*edges));
        if (!state || !edges)
                return -ENOMEM;
        for (int i = 0; i < pop.pairs; i++) {
                pid_t a = PID_BASE + pop.hogs + 2 * i, b = a + 1;
                edges[2 * i] = (struct wake_edge) { a, b, PAIR_WAKEUPS_PER_S, true, 0.5 };
                edges[2 * i + 1] = (struct wake_edge) { b, a, PAIR_WAKEUPS_PER_S, true, 0.5 };
        }

        for (unsigned pass = 0; pass < warmup + passes; pass++) {
                struct sampler_stats st;
                uint64_t c0, c1, c2, c3;

                r = population_advance(&pop, root, (double) pass);
                if (r < 0)
                        return r;
                now += USEC_PER_SEC;
                c0 = thread_cpu_nsec();
                r = sampler_sample(s, now, &snap);
                if (r < 0)
                        return r;
                snap->edges = edges;
                snap->n_edges = (size_t) pop.pairs * 2;
                snap->wake_source = "perf";
                c1 = thread_cpu_nsec();
                findings_clear(&findings);
                r = detect_all(snap, config, getpid(), &findings);
                if (r < 0)
                        return r;
                c2 = thread_cpu_nsec();
                action_list_clear(&actions);
                r = plan_run(state, &(struct plan_input) { .snap = snap, .config = config, .findings = &findings,
                                                           .now_usec = now },
                             &actions);
                if (r < 0)
                        return r;
                c3 = thread_cpu_nsec();
                if (pass < warmup)
                        continue;
                sampler_get_stats(s, &st);
                ts[pass - warmup] = (double) (c1 - c0) / 1e3;
                td[pass - warmup] = (double) (c2 - c1) / 1e3;
                tp[pass - warmup] = (double) (c3 - c2) / 1e3;
                tt[pass - warmup] = (double) (c3 - c0) / 1e3;
                tf[pass - warmup] = st.files_read;
                res->tasks = snap->n_tasks;
                res->findings = findings.n;
                res->actions = MAX(res->actions, actions.n);
        }
        res->sample_usec = median(ts, passes);
        res->detect_usec = median(td, passes);
        res->plan_usec = median(tp, passes);
        res->total_usec = median(tt, passes);
        res->files = median(tf, passes);
        {
                struct mallinfo2 mi = mallinfo2();
                res->heap_bytes = mi.uordblks + mi.hblkhd;
        }
        res->hwm_kib = status_kib("VmHWM");
        findings_clear(&findings);
        action_list_clear(&actions);
        free(actions.items);
        plan_state_free(state);
        sampler_free(s);
        config_free(config);
        topology_free(topo);
        return 0;
}

/* ---- the driver -------------------------------------------------------- */

struct options {
        char *machines[16];
        size_t n_machines;
        int threads[8];
        size_t n_threads;
        unsigned passes, warmup, repeats;
        const char *config_dir;
        const char *tmpdir;
};

struct conf {
        const struct machine *m;
        int threads;
        char root[PATH_MAX];
        int online;
        double *total, *sample, *detect, *plan, *files, *hwm, *heap;
        size_t n;
        struct result last;
};

static int run_measure(const char *self, const struct options *o, struct conf *c) {
        char cmd[PATH_MAX * 2 + 256], line[512];
        struct result r = {};
        FILE *f;
        int n, status;

        snprintf(cmd, sizeof(cmd), "'%s' --measure '%s' --config-dir '%s' --threads %d --warmup %u --passes %u",
                 self, c->root, o->config_dir, c->threads, o->warmup, o->passes);
        f = popen(cmd, "r");
        if (!f)
                return -errno;
        n = fgets(line, sizeof(line), f)
                    ? sscanf(line, "%lf %lf %lf %lf %lf %ld %zu %zu %zu %zu", &r.total_usec, &r.sample_usec,
                             &r.detect_usec, &r.plan_usec, &r.files, &r.hwm_kib, &r.heap_bytes, &r.tasks,
                             &r.findings, &r.actions)
                    : 0;
        status = pclose(f);
        if (n != 10 || status != 0) {
                fprintf(stderr, "scale: measuring %s with %d threads failed\n", c->m->name, c->threads);
                return -EIO;
        }
        c->total[c->n] = r.total_usec;
        c->sample[c->n] = r.sample_usec;
        c->detect[c->n] = r.detect_usec;
        c->plan[c->n] = r.plan_usec;
        c->files[c->n] = r.files;
        c->hwm[c->n] = (double) r.hwm_kib;
        c->heap[c->n] = (double) r.heap_bytes;
        c->n++;
        c->last = r;
        return 0;
}

/* Least squares y = a + b x over the configurations with one thread count. */
static void fit(const struct conf *cs, size_t n, int threads, double (*y)(const struct conf *), double *ret_a,
                double *ret_b) {
        double sx = 0, sy = 0, sxx = 0, sxy = 0, k = 0;

        for (size_t i = 0; i < n; i++) {
                if (cs[i].threads != threads)
                        continue;
                double x = cs[i].online, v = y(&cs[i]);
                sx += x, sy += v, sxx += x * x, sxy += x * v, k++;
        }
        *ret_b = k > 1 && k * sxx - sx * sx != 0 ? (k * sxy - sx * sy) / (k * sxx - sx * sx) : NAN;
        *ret_a = k > 0 ? (sy - *ret_b * sx) / k : NAN;
}

static double med_of(double *v, size_t n) {
        double tmp[256];

        n = MIN(n, ELEMENTSOF(tmp));
        memcpy(tmp, v, n * sizeof(double));
        return median(tmp, n);
}
static double y_total(const struct conf *c) { return med_of(c->total, c->n); }
static double y_sample(const struct conf *c) { return med_of(c->sample, c->n); }
static double y_plan(const struct conf *c) { return med_of(c->plan, c->n) + med_of(c->detect, c->n); }
static double y_heap(const struct conf *c) { return med_of(c->heap, c->n) / 1024.0; }

static int run_all(const char *self, const struct options *o) {
        char base[PATH_MAX - 64];
        struct conf *cs;
        size_t n = o->n_machines * o->n_threads;
        int r = 0;

        snprintf(base, sizeof(base), "%s/affd-scale.XXXXXX", o->tmpdir);
        if (!mkdtemp(base)) {
                fprintf(stderr, "scale: mkdtemp in %s: %s\n", o->tmpdir, strerror(errno));
                return -errno;
        }
        cs = calloc(n, sizeof(*cs));
        if (!cs)
                return -ENOMEM;
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct conf *c = &cs[i];
                struct population pop;

                c->m = machine_find(o->machines[i / o->n_threads]);
                c->threads = o->threads[i % o->n_threads];
                if (!c->m) {
                        fprintf(stderr, "scale: no machine %s (tests/gen-machine list)\n", o->machines[i / o->n_threads]);
                        r = -EINVAL;
                        break;
                }
                c->online = c->m->expect.online;
                snprintf(c->root, sizeof(c->root), "%s/%s-%d", base, c->m->name, c->threads);
                population_init(&pop, c->online, c->threads);
                if (mkdir(c->root, 0755) < 0 || (r = machine_write(c->m, "6.18", c->root)) < 0 ||
                    (r = population_write(&pop, c->root)) < 0) {
                        fprintf(stderr, "scale: writing %s: %s\n", c->root, strerror(r < 0 ? -r : errno));
                        r = r < 0 ? r : -errno;
                        break;
                }
                double **v[] = { &c->total, &c->sample, &c->detect, &c->plan, &c->files, &c->hwm, &c->heap };
                for (size_t k = 0; k < ELEMENTSOF(v); k++)
                        if (!(*v[k] = calloc(o->repeats, sizeof(double))))
                                r = -ENOMEM;
        }
        printf("# scale: %u warm-up + %u measured passes per run, %u interleaved repeats, kernel 6.18 trees "
               "in %s, policies %s\n",
               o->warmup, o->passes, o->repeats, o->tmpdir, o->config_dir);
        fflush(stdout);
        for (unsigned rep = 0; rep < o->repeats && r >= 0; rep++) {
                for (size_t j = 0; j < n && r >= 0; j++) {
                        struct conf *c = &cs[(j + rep * 5) % n];   /* rotated each repeat */
                        r = run_measure(self, o, c);
                        if (r >= 0)
                                fprintf(stderr, "run %u %s threads=%d: total %.0f µs\n", rep + 1, c->m->name,
                                        c->threads, c->last.total_usec);
                }
        }
        if (r >= 0) {
                printf("# medians over the repeats of each run's median pass (CPU µs, thread clock)\n");
                printf("%-16s %4s %5s %6s %5s %8s %8s %8s %8s %7s %7s %7s %6s %4s %4s\n", "machine", "cpus", "llcs",
                       "nodes", "thr", "total", "sample", "detect", "plan", "files", "hwmKiB", "heapKiB", "tasks",
                       "find", "act");
                for (size_t i = 0; i < n; i++) {
                        struct conf *c = &cs[i];
                        printf("%-16s %4d %5d %6d %5d %8.0f %8.0f %8.1f %8.1f %7.0f %7.0f %7.0f %6zu %4zu %4zu\n",
                               c->m->name, c->online, c->m->expect.llcs, c->m->expect.nodes, c->threads,
                               y_total(c), y_sample(c), med_of(c->detect, c->n), med_of(c->plan, c->n),
                               med_of(c->files, c->n), med_of(c->hwm, c->n), y_heap(c), c->last.tasks,
                               c->last.findings, c->last.actions);
                }
                for (size_t t = 0; t < o->n_threads; t++) {
                        double a, b, sa, sb, pa, pb, ha, hb, lo = NAN, hi = NAN;
                        int clo = 0, chi = 0;

                        fit(cs, n, o->threads[t], y_total, &a, &b);
                        fit(cs, n, o->threads[t], y_sample, &sa, &sb);
                        fit(cs, n, o->threads[t], y_plan, &pa, &pb);
                        fit(cs, n, o->threads[t], y_heap, &ha, &hb);
                        for (size_t i = 0; i < n; i++) {
                                if (cs[i].threads != o->threads[t])
                                        continue;
                                if (!clo || cs[i].online < clo)
                                        clo = cs[i].online, lo = y_total(&cs[i]);
                                if (cs[i].online > chi)
                                        chi = cs[i].online, hi = y_total(&cs[i]);
                        }
                        printf("fit threads=%d: total %.0f + %.1f µs/CPU (sample %.1f, detect+plan %.1f µs/CPU); "
                               "heap %.0f + %.1f KiB/CPU; total %d CPUs / %d CPUs = %.1fx\n",
                               o->threads[t], a, b, sb, pb, ha, hb, chi, clo, hi / lo);
                }
        }
        for (size_t i = 0; i < n; i++) {
                free(cs[i].total), free(cs[i].sample), free(cs[i].detect), free(cs[i].plan);
                free(cs[i].files), free(cs[i].hwm), free(cs[i].heap);
        }
        free(cs);
        test_rm_tree(base);
        if (access(base, F_OK) == 0 && r >= 0)
                r = -EIO;       /* not all of it could be removed */
        return r;
}

/* ---- the wake sampler's rings on paper --------------------------------- */

static void rings(void) {
        static const int cpus[] = { 1, 2, 8, 16, 64, 128, 256, 512, 1024 };
        long ps = sysconf(_SC_PAGESIZE);
        uint64_t memlock = 8 << 20, mlock_kb = 516;   /* the unit's LimitMEMLOCK=, the kernel's default */
        char buf[64];

        if (util_read_file_at(NULL, "/proc/sys/kernel/perf_event_mlock_kb", buf, sizeof(buf)) > 0)
                (void) util_parse_u64(util_strip(buf), &mlock_kb);
        printf("# wake sampler rings: page %ld B, perf_event_mlock_kb %" PRIu64 " (per user and online CPU), "
               "LimitMEMLOCK= %" PRIu64 " MiB\n", ps, mlock_kb, memlock >> 20);
        printf("%5s %6s %9s %10s %11s %12s %10s\n", "cpus", "events", "pages/cpu", "KiB/cpu", "total MiB",
               "user-lim MiB", "over-lim");
        for (size_t i = 0; i < ELEMENTSOF(cpus); i++) {
                unsigned pages = wake_ring_pages((unsigned) cpus[i], (size_t) ps);
                /* mmap locks data pages + the meta page; the kernel's per-user
                 * allowance is perf_event_mlock_kb times the online CPUs */
                uint64_t per_cpu = ((uint64_t) pages + 1) * (uint64_t) ps;
                uint64_t total = per_cpu * (uint64_t) cpus[i];
                uint64_t user_limit = mlock_kb * 1024 * (uint64_t) cpus[i];
                uint64_t over = total > user_limit ? total - user_limit : 0;

                printf("%5d %6d %9u %10.0f %11.1f %12.1f %10.1f\n", cpus[i], cpus[i], pages, per_cpu / 1024.0,
                       total / 1048576.0, user_limit / 1048576.0, over / 1048576.0);
        }
}

/* The perf rings this process has mapped: count and bytes, from /proc/self/maps. */
static void perf_maps(unsigned *ret_n, uint64_t *ret_bytes) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/maps", "re");
        char line[512];

        *ret_n = 0;
        *ret_bytes = 0;
        while (f && fgets(line, sizeof(line), f)) {
                unsigned long lo, hi;
                if (strstr(line, "perf_event") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
                        (*ret_n)++;
                        *ret_bytes += hi - lo;
                }
        }
}

/*
 * The real sampler on this machine's online CPUs, sized as on a machine of
 * `possible` CPUs (the ring size follows the possible CPUs, the events the
 * online ones): what the kernel actually mapped and pinned.
 */
static int rings_measure(int possible) {
        struct topology *real = NULL, *t = NULL;
        struct wake_sampler *ws = NULL;
        struct wake_status st;
        struct topo_cpu *cpus;
        uint64_t bytes;
        unsigned n;
        long rss0;
        int r;

        r = topology_load("/", &real);
        if (r < 0)
                return r;
        possible = MAX(possible, real->n_cpus);
        cpus = calloc((size_t) possible, sizeof(*cpus));
        if (!cpus)
                return -ENOMEM;
        for (int c = 0; c < possible; c++)
                cpus[c] = (struct topo_cpu) { .core_id = c, .llc_id = 0 };
        t = topology_new_synthetic(possible, cpus);
        free(cpus);
        if (!t)
                return -ENOMEM;
        t->online = real->online;
        rss0 = status_kib("VmRSS");
        r = wake_sampler_new("/", t, 1, 0, &ws);
        if (r >= 0) {
                wake_sampler_status(ws, &st);
                perf_maps(&n, &bytes);
                printf("measured %4d possible, %u online: %u events, %u rings mapped, %.0f KiB each, %.1f MiB in all, "
                       "VmPin %ld KiB, VmLck %ld KiB, RSS +%ld KiB%s%s\n",
                       possible, cpumask_weight(&t->online), st.n_cpus, n, n ? bytes / 1024.0 / n : 0.0,
                       bytes / 1048576.0, status_kib("VmPin"), status_kib("VmLck"), status_kib("VmRSS") - rss0, st.perf ? "" : "; no perf: ",
                       st.perf ? "" : st.perf_error);
        }
        wake_sampler_free(ws);
        topology_free(t);
        topology_free(real);
        return r;
}

/* ---- command line ------------------------------------------------------ */

static void help(void) {
        printf("Usage: scale [OPTIONS]            sample+detect+plan per pass on fixture machines\n"
               "       scale write MACHINE THREADS DIR\n"
               "       scale mutate DIR THREADS INTERVAL_MS\n"
               "       scale rings [--measure]\n\n"
               "  -m, --machines LIST   tests/machines.c names (default vm2,smt8,smt16-2llc,smt64-numa2,\n"
               "                        smt128-numa2,smt256)\n"
               "  -t, --threads LIST    threads in the fixture's /proc (default 200,2000)\n"
               "  -p, --passes N        measured passes per run (default 30)\n"
               "  -w, --warmup N        passes before measuring (default 40: the sampler's back-off settles)\n"
               "  -r, --repeats N       interleaved runs per configuration (default 5)\n"
               "  -c, --config-dir DIR  policies (default: the source tree's policies/)\n"
               "  -d, --tmpdir DIR      where the trees go (default /dev/shm)\n");
}

static int parse_list(char *arg, char **strs, int *ints, size_t max, size_t *ret_n) {
        *ret_n = 0;
        for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
                if (*ret_n >= max)
                        return -E2BIG;
                if (strs)
                        strs[(*ret_n)++] = tok;
                else if (util_parse_int(tok, &ints[*ret_n]) < 0 || ints[*ret_n] < 1 || ints[*ret_n] > 100000)
                        return -EINVAL;
                else
                        (*ret_n)++;
        }
        return *ret_n > 0 ? 0 : -EINVAL;
}

int main(int argc, char **argv) {
        static const struct option longopts[] = {
                { "machines", required_argument, NULL, 'm' }, { "threads", required_argument, NULL, 't' },
                { "passes", required_argument, NULL, 'p' },   { "warmup", required_argument, NULL, 'w' },
                { "repeats", required_argument, NULL, 'r' },  { "config-dir", required_argument, NULL, 'c' },
                { "tmpdir", required_argument, NULL, 'd' },   { "measure", required_argument, NULL, 'M' },
                { "help", no_argument, NULL, 'h' },           {},
        };
        static char default_machines[] = "vm2,smt8,smt16-2llc,smt64-numa2,smt128-numa2,smt256";
        static char default_threads[] = "200,2000";
        struct options o = { .passes = 30, .warmup = 40, .repeats = 5, .config_dir = SRCDIR "/policies",
                             .tmpdir = "/dev/shm" };
        const char *measure_root = NULL;
        int c, r;

        if (argc >= 2 && streq(argv[1], "rings")) {
                rings();
                /* --measure: open the real events (root and perf permitted) */
                if (argc == 3 && streq(argv[2], "--measure"))
                        for (int p = 2; p <= 256; p *= 2)
                                if ((r = rings_measure(p)) < 0)
                                        fprintf(stderr, "scale rings: the sampler on %d: %s\n", p, strerror(-r));
                return 0;
        }
        if (argc == 5 && streq(argv[1], "write")) {
                const struct machine *m = machine_find(argv[2]);
                struct population pop;
                int threads;

                if (!m || util_parse_int(argv[3], &threads) < 0 || threads < 1) {
                        fprintf(stderr, "scale write: bad machine or thread count\n");
                        return 2;
                }
                population_init(&pop, m->expect.online, threads);
                r = machine_write(m, "6.18", argv[4]);
                if (r >= 0)
                        r = population_write(&pop, argv[4]);
                if (r < 0)
                        fprintf(stderr, "scale write: %s\n", strerror(-r));
                return r < 0;
        }
        if (argc == 5 && streq(argv[1], "mutate")) {
                struct topology *topo = NULL;
                struct population pop;
                int threads, ms;

                if (util_parse_int(argv[3], &threads) < 0 || util_parse_int(argv[4], &ms) < 0 || ms < 1 ||
                    topology_load(argv[2], &topo) < 0) {
                        fprintf(stderr, "scale mutate: bad arguments or no tree\n");
                        return 2;
                }
                population_init(&pop, cpumask_weight(&topo->online), threads);
                topology_free(topo);
                for (uint64_t t0 = util_now_usec();;) {
                        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000 };
                        r = population_advance(&pop, argv[2], (double) (util_now_usec() - t0) / USEC_PER_SEC);
                        if (r < 0) {
                                fprintf(stderr, "scale mutate: %s\n", strerror(-r));
                                return 1;
                        }
                        nanosleep(&ts, NULL);
                }
        }

        if (parse_list(default_machines, o.machines, NULL, ELEMENTSOF(o.machines), &o.n_machines) < 0 ||
            parse_list(default_threads, NULL, o.threads, ELEMENTSOF(o.threads), &o.n_threads) < 0)
                return 2;
        while ((c = getopt_long(argc, argv, "m:t:p:w:r:c:d:h", longopts, NULL)) >= 0) {
                int v;
                switch (c) {
                case 'm':
                        r = parse_list(optarg, o.machines, NULL, ELEMENTSOF(o.machines), &o.n_machines);
                        break;
                case 't':
                        r = parse_list(optarg, NULL, o.threads, ELEMENTSOF(o.threads), &o.n_threads);
                        break;
                case 'p':
                case 'w':
                case 'r':
                        r = util_parse_int(optarg, &v);
                        if (r >= 0 && (v < (c == 'w' ? 0 : 1) || v > 10000))
                                r = -ERANGE;
                        if (r >= 0)
                                *(c == 'p' ? &o.passes : c == 'w' ? &o.warmup : &o.repeats) = (unsigned) v;
                        break;
                case 'c':
                        o.config_dir = optarg, r = 0;
                        break;
                case 'd':
                        o.tmpdir = optarg, r = 0;
                        break;
                case 'M':
                        measure_root = optarg, r = 0;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        help();
                        return 2;
                }
                if (r < 0) {
                        fprintf(stderr, "scale: bad value for -%c: %s\n", c, optarg);
                        return 2;
                }
        }
        if (o.repeats > 256) {
                fprintf(stderr, "scale: at most 256 repeats\n");
                return 2;
        }
        if (measure_root) {
                struct result res = {};
                r = measure(measure_root, o.config_dir, o.threads[0], o.warmup, o.passes, &res);
                if (r < 0) {
                        fprintf(stderr, "scale --measure %s: %s\n", measure_root, strerror(-r));
                        return 1;
                }
                printf("%.1f %.1f %.2f %.2f %.0f %ld %zu %zu %zu %zu\n", res.total_usec, res.sample_usec,
                       res.detect_usec, res.plan_usec, res.files, res.hwm_kib, res.heap_bytes, res.tasks,
                       res.findings, res.actions);
                return 0;
        }
        {
                char self[PATH_MAX];
                ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);

                if (k <= 0) {
                        fprintf(stderr, "scale: cannot find myself: %s\n", strerror(errno));
                        return 1;
                }
                self[k] = '\0';
                return run_all(self, &o) < 0;
        }
}
