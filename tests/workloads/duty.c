/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * duty: N processes, each busy a fixed share of every period (the [conservative-smp]
 * "four ~40 % tasks" that keep migrating), or, with --burst, bursty noise:
 * random short bursts of work separated by random sleeps.
 *
 * Periodic mode: every --period-ms each process does --duty % of the period
 * worth of fixed work (spin loops, calibrated to µs once at start, or given
 * with --loops-per-us), then sleeps to the next period boundary. When the
 * work does not fit in the period (the CPU was busy), the period counts as
 * an overrun and the schedule restarts from now.
 *
 * Reports work done, migrations and run-queue wait (schedstat field 2) per
 * process and in total; wait_ms_per_cpu_s is the run-queue wait per second
 * of CPU time used, the "run-queue wait per CPU-second" of the run-delay report.
 * --cpus LIST pins process i to LIST[i % n] (hand-tuned).
 */

#include "workload.h" /* first: defines _GNU_SOURCE */

#include <getopt.h>
#include <math.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define DUTY_MAX 1024

struct duty_options {
        long n;
        double duty_pct;
        double period_ms;
        struct wl_common_options common;
        bool burst;
        double burst_min_us, burst_max_us, gap_mean_ms;
        long seed;
        int cpus[WL_MAX_CPUS];
        int ncpus;
};

struct duty_slot {
        _Atomic uint64_t loops;         /* spin loops done */
        _Atomic uint64_t periods;       /* periods (or bursts) completed */
        _Atomic uint64_t overruns;
        _Atomic int pid;                /* 0 until running; -1 = failed */
        uint64_t cpus_visited[WL_MAX_CPUS / 64];
        /* Filled by the monitor. */
        long long mig0, mig1;
        struct wl_schedstat st0, st1;
        uint64_t loops0, loops1, periods0, periods1, overruns0, overruns1;
};

struct duty_shared {
        _Atomic int stop;
        struct duty_slot slot[];
};

static void duty_help(void) {
        printf("Usage: duty [OPTIONS]\n"
               "N processes, each busy a share of every period; or bursty noise (--burst).\n\n"
               "  -n, --procs N              processes (default 4)\n"
               "  -u, --duty PCT             busy share of each period, 1..100 (default 40)\n"
               "  -T, --period-ms MS         period (default 10)\n"
               "  -d, --duration SEC         run time, 0 = until SIGTERM/SIGINT (default 5)\n"
               "  -b, --burst                bursty noise: sleep a random time (exponential,\n"
               "                             mean --gap-mean-ms), then work a random time\n"
               "                             (uniform --burst-min-us..--burst-max-us)\n"
               "      --burst-min-us US      shortest burst (default 500)\n"
               "      --burst-max-us US      longest burst (default 5000)\n"
               "      --gap-mean-ms MS       mean sleep between bursts (default 20)\n"
               "  -S, --seed N               random seed for --burst (default 1)\n"
               "  -L, --loops-per-us X       spin loops per µs (default: calibrate at start)\n"
               "  -C, --calibrate            print loops_per_us=X and exit\n"
               "  -c, --cpus LIST            pin process i to LIST[i %% n] (hand-tuned)\n"
               "  -p, --pid-file FILE        write the PIDs, one per line, once all run\n"
               "  -h, --help                 this help\n\n"
               "Per process: proc=I pid=P units=U periods=N overruns=N migrations=N\n"
               "             run_delay_ms=D cpu_ms=C cpus=LIST\n"
               "Last line: work=UNITS unit=units rate=UNITS_PER_S periods=N overruns=N\n"
               "  migrations=SUM migrations_max=N run_delay_ms=SUM cpu_s=SUM\n"
               "  wait_ms_per_cpu_s=X util=F procs=N elapsed=SEC mode=duty|burst pinned=yes|no\n"
               "(one unit = %d spin loops, as in hog)\n",
               WL_UNIT_LOOPS);
}

enum {
        OPT_BURST_MIN = 0x100,
        OPT_BURST_MAX,
        OPT_GAP_MEAN,
};

static int duty_parse_args(int argc, char **argv, struct duty_options *o) {
        static const struct option longopts[] = {
                { "procs",        required_argument, NULL, 'n' },
                { "duty",         required_argument, NULL, 'u' },
                { "period-ms",    required_argument, NULL, 'T' },
                { "duration",     required_argument, NULL, 'd' },
                { "burst",        no_argument,       NULL, 'b' },
                { "burst-min-us", required_argument, NULL, OPT_BURST_MIN },
                { "burst-max-us", required_argument, NULL, OPT_BURST_MAX },
                { "gap-mean-ms",  required_argument, NULL, OPT_GAP_MEAN },
                { "seed",         required_argument, NULL, 'S' },
                { "loops-per-us", required_argument, NULL, 'L' },
                { "calibrate",    no_argument,       NULL, 'C' },
                { "cpus",         required_argument, NULL, 'c' },
                { "pid-file",     required_argument, NULL, 'p' },
                { "help",         no_argument,       NULL, 'h' },
                {}
        };
        int c;

        *o = (struct duty_options) {
                .n = 4, .duty_pct = 40, .period_ms = 10, .common.duration_s = 5,
                .burst_min_us = 500, .burst_max_us = 5000, .gap_mean_ms = 20, .seed = 1,
        };
        while ((c = getopt_long(argc, argv, "n:u:T:d:bS:L:Cc:p:h", longopts, NULL)) >= 0) {
                int r = wl_common_option(c, optarg, &o->common);

                if (r == 0) {
                        switch (c) {
                        case 'n':
                                r = wl_parse_long(optarg, 1, DUTY_MAX, &o->n);
                                break;
                        case 'u':
                                r = wl_parse_double(optarg, 1, 100, &o->duty_pct);
                                break;
                        case 'T':
                                r = wl_parse_double(optarg, 0.1, 60000, &o->period_ms);
                                break;
                        case 'b':
                                o->burst = true;
                                break;
                        case OPT_BURST_MIN:
                                r = wl_parse_double(optarg, 1, 1e7, &o->burst_min_us);
                                break;
                        case OPT_BURST_MAX:
                                r = wl_parse_double(optarg, 1, 1e7, &o->burst_max_us);
                                break;
                        case OPT_GAP_MEAN:
                                r = wl_parse_double(optarg, 0.01, 1e6, &o->gap_mean_ms);
                                break;
                        case 'S':
                                r = wl_parse_long(optarg, 0, LONG_MAX, &o->seed);
                                break;
                        case 'c':
                                o->ncpus = wl_parse_cpu_list(optarg, o->cpus, WL_MAX_CPUS);
                                r = o->ncpus > 0 ? 0 : -EINVAL;
                                break;
                        case 'h':
                                duty_help();
                                exit(EXIT_SUCCESS);
                        default:
                                return -EINVAL;
                        }
                }
                if (r < 0) {
                        fprintf(stderr, "duty: bad value '%s' for an option\n", optarg);
                        return -EINVAL;
                }
        }
        if (wl_no_operands("duty", argc, argv) < 0)
                return -EINVAL;
        if (o->burst_max_us < o->burst_min_us) {
                fprintf(stderr, "duty: --burst-max-us is below --burst-min-us\n");
                return -EINVAL;
        }
        return 0;
}

/* xorshift64*: a small deterministic generator per process (no shared state). */
static double duty_uniform(uint64_t *state) {
        uint64_t x = *state;

        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *state = x;
        return (double) ((x * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0;
}

static void duty_mark_cpu(struct duty_slot *s) {
        int cpu = sched_getcpu();

        if (cpu >= 0 && cpu < WL_MAX_CPUS)
                s->cpus_visited[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

/* Spin `loops` in unit-sized chunks so the stop flag and counters stay live. */
static uint64_t duty_work(struct duty_shared *sh, struct duty_slot *s, uint64_t loops, uint64_t x) {
        while (loops > 0 && !atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
                uint64_t chunk = loops < WL_UNIT_LOOPS ? loops : WL_UNIT_LOOPS;
                x = wl_spin(chunk, x);
                atomic_fetch_add_explicit(&s->loops, chunk, memory_order_relaxed);
                loops -= chunk;
        }
        duty_mark_cpu(s);
        return x;
}

static void duty_child(struct duty_shared *sh, int index, const struct duty_options *o, int cpu) {
        struct duty_slot *s = &sh->slot[index];
        uint64_t x = (uint64_t) index + 1, rng = ((uint64_t) o->seed + 1) * 0x9e3779b97f4a7c15ULL + (uint64_t) index;

        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (cpu >= 0 && wl_pin_to_cpu(0, cpu) < 0) {
                atomic_store(&s->pid, -1);
                _exit(2);
        }
        atomic_store(&s->pid, (int) getpid());

        if (o->burst) {
                while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
                        double u = duty_uniform(&rng);
                        double gap_ms = -log(1.0 - u) * o->gap_mean_ms;
                        wl_sleep_until_ns(wl_now_ns() + (int64_t) (gap_ms * 1e6));
                        double burst_us = o->burst_min_us + duty_uniform(&rng) * (o->burst_max_us - o->burst_min_us);
                        x = duty_work(sh, s, (uint64_t) (burst_us * o->common.loops_per_us), x);
                        atomic_fetch_add_explicit(&s->periods, 1, memory_order_relaxed);
                }
                _exit(0);
        }

        const int64_t period_ns = (int64_t) (o->period_ms * 1e6);
        const uint64_t loops = (uint64_t) (o->period_ms * 1000.0 * o->duty_pct / 100.0 * o->common.loops_per_us);
        int64_t next = wl_now_ns();
        while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
                x = duty_work(sh, s, loops, x);
                atomic_fetch_add_explicit(&s->periods, 1, memory_order_relaxed);
                next += period_ns;
                int64_t now = wl_now_ns();
                if (now > next) {
                        atomic_fetch_add_explicit(&s->overruns, 1, memory_order_relaxed);
                        next = now;
                        continue;
                }
                wl_sleep_until_ns(next);
        }
        _exit(0);
}

static void duty_snapshot(struct duty_slot *s, long long *mig, struct wl_schedstat *st,
                          uint64_t *loops, uint64_t *periods, uint64_t *overruns) {
        pid_t pid = atomic_load(&s->pid);

        *mig = -1;
        *st = (struct wl_schedstat) { -1, -1, -1 };
        (void) wl_read_sched_field(pid, pid, "se.nr_migrations", mig);
        (void) wl_read_schedstat(pid, pid, st);
        *loops = atomic_load(&s->loops);
        *periods = atomic_load(&s->periods);
        *overruns = atomic_load(&s->overruns);
}

int main(int argc, char **argv) {
        struct duty_options o;
        struct duty_shared *sh;
        pid_t *pids;

        if (duty_parse_args(argc, argv, &o) < 0) {
                fprintf(stderr, "Try 'duty --help'.\n");
                return 2;
        }
        wl_stdout_line_buffered();
        if (wl_loops_per_us(&o.common) > 0)
                return 0;
        wl_install_stop_handlers();

        sh = mmap(NULL, sizeof(*sh) + (size_t) o.n * sizeof(struct duty_slot),
                  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        pids = calloc((size_t) o.n, sizeof(*pids));
        if (sh == MAP_FAILED || !pids) {
                fprintf(stderr, "duty: out of memory\n");
                return 1;
        }
        for (long i = 0; i < o.n; i++) {
                pids[i] = fork();
                if (pids[i] < 0) {
                        perror("duty: fork");
                        return 1;
                }
                if (pids[i] == 0)
                        duty_child(sh, (int) i, &o, o.ncpus > 0 ? o.cpus[i % o.ncpus] : -1);
        }

        int64_t deadline = wl_now_ns() + 10 * WL_NSEC_PER_SEC;
        bool failed = false;
        for (long i = 0; i < o.n && !failed; i++) {
                while (atomic_load(&sh->slot[i].pid) == 0 && !wl_stop_requested && wl_now_ns() < deadline)
                        wl_sleep_until_ns(wl_now_ns() + WL_NSEC_PER_MSEC);
                if (atomic_load(&sh->slot[i].pid) <= 0) {
                        fprintf(stderr, "duty: process %ld did not start (bad CPU in --cpus?)\n", i);
                        failed = true;
                }
        }
        if (!failed && wl_write_pid_file_opt("duty", o.common.pid_file, pids, (int) o.n) < 0)
                failed = true;

        const int64_t t0 = wl_now_ns();
        for (long i = 0; i < o.n && !failed; i++) {
                struct duty_slot *s = &sh->slot[i];
                duty_snapshot(s, &s->mig0, &s->st0, &s->loops0, &s->periods0, &s->overruns0);
        }
        if (!failed) {
                const int64_t t_end = wl_end_ns(t0, o.common.duration_s);
                while (!wl_stop_requested && wl_now_ns() < t_end)
                        wl_sleep_until_ns(t_end == INT64_MAX ? wl_now_ns() + WL_NSEC_PER_SEC : t_end);
        }
        const int64_t t1 = wl_now_ns();
        for (long i = 0; i < o.n && !failed; i++) {
                struct duty_slot *s = &sh->slot[i];
                duty_snapshot(s, &s->mig1, &s->st1, &s->loops1, &s->periods1, &s->overruns1);
        }
        atomic_store(&sh->stop, 1);
        for (long i = 0; i < o.n; i++)
                waitpid(pids[i], NULL, 0);
        if (failed)
                return 1;

        double elapsed = (double) (t1 - t0) / 1e9, units = 0, delay_ms = 0, cpu_s = 0;
        uint64_t periods = 0, overruns = 0;
        long long migsum = 0, migmax = 0;
        for (long i = 0; i < o.n; i++) {
                struct duty_slot *s = &sh->slot[i];
                double u = (double) (s->loops1 - s->loops0) / WL_UNIT_LOOPS;
                double d_ms = (double) (s->st1.wait_ns - s->st0.wait_ns) / 1e6;
                double c_ms = (double) (s->st1.run_ns - s->st0.run_ns) / 1e6;
                long long mig = s->mig1 - s->mig0;
                char cpus[1024];

                wl_format_cpu_bits(s->cpus_visited, WL_MAX_CPUS / 64, cpus, sizeof(cpus));
                printf("proc=%ld pid=%d units=%.1f periods=%llu overruns=%llu migrations=%lld "
                       "run_delay_ms=%.1f cpu_ms=%.1f cpus=%s\n",
                       i, (int) pids[i], u, (unsigned long long) (s->periods1 - s->periods0),
                       (unsigned long long) (s->overruns1 - s->overruns0), mig, d_ms, c_ms, cpus);
                units += u;
                periods += s->periods1 - s->periods0;
                overruns += s->overruns1 - s->overruns0;
                migsum += mig;
                migmax = mig > migmax ? mig : migmax;
                delay_ms += d_ms;
                cpu_s += c_ms / 1000.0;
        }
        printf("work=%.1f unit=units rate=%.1f periods=%llu overruns=%llu migrations=%lld migrations_max=%lld "
               "run_delay_ms=%.1f cpu_s=%.3f wait_ms_per_cpu_s=%.2f util=%.3f procs=%ld elapsed=%.3f "
               "loops_per_us=%.3f mode=%s pinned=%s\n",
               units, elapsed > 0 ? units / elapsed : 0.0, (unsigned long long) periods,
               (unsigned long long) overruns, migsum, migmax, delay_ms, cpu_s,
               cpu_s > 0 ? delay_ms / cpu_s : 0.0, elapsed > 0 ? cpu_s / elapsed : 0.0, o.n, elapsed,
               o.common.loops_per_us, o.burst ? "burst" : "duty", o.ncpus > 0 ? "yes" : "no");
        free(pids);
        return 0;
}
