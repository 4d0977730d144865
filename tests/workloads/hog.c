/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hog: N CPU-bound tasks (processes or threads) counting fixed-size work
 * units, the hopping hogs of [conservative-smp] ("be a bit more conservative in
 * SMP"). Reports work units/s per hog and in total, and each hog's
 * migrations (se.nr_migrations from /proc/<pid>/task/<tid>/sched),
 * involuntary switches and run-queue wait over the run, plus the CPUs it
 * ran on. The monitor (the parent process, or the main thread) reads the
 * counters from outside at start and end, so the hogs do nothing but spin.
 *
 * --cpus LIST pins hog i to LIST[i % n]: the hand-tuned placement.
 * --idle-after SEC makes the hogs stop being hogs (sleep) but stay alive,
 * for "a hog that stops is released" tests.
 */

#include "workload.h" /* first: defines _GNU_SOURCE */

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define HOG_MAX 1024
#define HOG_CPU_WORDS (WL_MAX_CPUS / 64)

struct hog_options {
        long n;
        bool threads;
        struct wl_common_options common;
        int cpus[WL_MAX_CPUS];
        int ncpus;
        double idle_after_s;    /* <= 0: never */
};

/* Per hog, in memory shared with forked hogs. */
struct hog_slot {
        _Atomic uint64_t units;
        _Atomic int tid;        /* 0 until running (and pinned) */
        int pin_err;
        uint64_t cpus_visited[HOG_CPU_WORDS];
        int last_cpu;
        /* Filled by the monitor. */
        long long mig0, mig1, invol0, invol1;
        struct wl_schedstat st0, st1;
        uint64_t units0, units1;
};

struct hog_shared {
        _Atomic int stop;
        int64_t idle_at_ns;     /* CLOCK_MONOTONIC; INT64_MAX = never */
        struct hog_slot slot[];
};

struct hog_arg {
        struct hog_shared *sh;
        int index;
        int cpu;                /* -1 = do not pin */
};

static void hog_help(void) {
        printf("Usage: hog [OPTIONS]\n"
               "N CPU-bound tasks counting work units (%d spin loops each).\n\n"
               "  -n, --procs N              N hog processes (default 1)\n"
               "  -t, --threads N            N hog threads in one process instead\n"
               "  -d, --duration SEC         run time, 0 = until SIGTERM/SIGINT (default 5)\n"
               "  -r, --report-interval MS   progress line every MS ms (default 0: off)\n"
               "  -p, --pid-file FILE        write the hogs' task ids (PIDs, or TIDs with\n"
               "                             --threads), one per line, once all run\n"
               "  -c, --cpus LIST            pin hog i to LIST[i %% n] (hand-tuned), e.g. 0,1\n"
               "  -I, --idle-after SEC       hogs stop spinning after SEC and sleep until the end\n"
               "  -h, --help                 this help\n\n"
               "Progress: t=SEC rate=R unit=units/s migrations=N hog_rates=R,R.. hog_migrations=N,N..\n"
               "Per hog:  hog=I tid=T units=U rate=R migrations=N invol=N run_delay_ms=D util=F\n"
               "          cpus=LIST last_cpu=C\n"
               "Last line: rate=TOTAL unit=units/s hogs=N elapsed=SEC rate_min=R rate_max=R\n"
               "  fairness=MIN/MAX migrations=SUM migrations_max=N invol=SUM run_delay_ms=SUM\n"
               "  mode=procs|threads pinned=yes|no\n",
               WL_UNIT_LOOPS);
}

static int hog_parse_args(int argc, char **argv, struct hog_options *o) {
        static const struct option longopts[] = {
                { "procs",           required_argument, NULL, 'n' },
                { "threads",         required_argument, NULL, 't' },
                { "duration",        required_argument, NULL, 'd' },
                { "report-interval", required_argument, NULL, 'r' },
                { "pid-file",        required_argument, NULL, 'p' },
                { "cpus",            required_argument, NULL, 'c' },
                { "idle-after",      required_argument, NULL, 'I' },
                { "help",            no_argument,       NULL, 'h' },
                {}
        };
        int c;

        *o = (struct hog_options) { .n = 1, .common.duration_s = 5 };
        while ((c = getopt_long(argc, argv, "n:t:d:r:p:c:I:h", longopts, NULL)) >= 0) {
                int r = wl_common_option(c, optarg, &o->common);

                if (r == 0) {
                        switch (c) {
                        case 'n':
                                r = wl_parse_long(optarg, 1, HOG_MAX, &o->n);
                                o->threads = false;
                                break;
                        case 't':
                                r = wl_parse_long(optarg, 1, HOG_MAX, &o->n);
                                o->threads = true;
                                break;
                        case 'c':
                                o->ncpus = wl_parse_cpu_list(optarg, o->cpus, WL_MAX_CPUS);
                                r = o->ncpus > 0 ? 0 : -EINVAL;
                                break;
                        case 'I':
                                r = wl_parse_double(optarg, 0, 1e7, &o->idle_after_s);
                                break;
                        case 'h':
                                hog_help();
                                exit(EXIT_SUCCESS);
                        default:
                                return -EINVAL;
                        }
                }
                if (r < 0) {
                        fprintf(stderr, "hog: bad value '%s' for an option\n", optarg);
                        return -EINVAL;
                }
        }
        return wl_no_operands("hog", argc, argv);
}

static void *hog_body(void *p) {
        const struct hog_arg *a = p;
        struct hog_slot *s = &a->sh->slot[a->index];
        uint64_t x = (uint64_t) a->index + 1;

        if (a->cpu >= 0) {
                s->pin_err = wl_pin_to_cpu(0, a->cpu);
                if (s->pin_err < 0) {
                        atomic_store(&s->tid, -1);
                        return NULL;
                }
        }
        atomic_store(&s->tid, (int) wl_gettid());
        while (!atomic_load_explicit(&a->sh->stop, memory_order_relaxed)) {
                int cpu;

                if (a->sh->idle_at_ns != INT64_MAX && wl_now_ns() >= a->sh->idle_at_ns) {
                        wl_sleep_until_ns(wl_now_ns() + 50 * WL_NSEC_PER_MSEC);
                        continue;
                }
                x = wl_spin(WL_UNIT_LOOPS, x);
                atomic_fetch_add_explicit(&s->units, 1, memory_order_relaxed);
                cpu = sched_getcpu();
                if (cpu >= 0 && cpu < WL_MAX_CPUS) {
                        s->cpus_visited[cpu / 64] |= UINT64_C(1) << (cpu % 64);
                        s->last_cpu = cpu;
                }
        }
        return NULL;
}

/* Read one hog's counters from outside (monitor side). */
static void hog_read_counters(pid_t pid, pid_t tid, long long *mig, long long *invol,
                              struct wl_schedstat *st) {
        *mig = *invol = -1;
        *st = (struct wl_schedstat) { -1, -1, -1 };
        (void) wl_read_sched_field(pid, tid, "se.nr_migrations", mig);
        (void) wl_read_sched_field(pid, tid, "nr_involuntary_switches", invol);
        (void) wl_read_schedstat(pid, tid, st);
}

int main(int argc, char **argv) {
        struct hog_options o;
        struct hog_shared *sh;
        struct hog_arg *args;
        pthread_t *threads = NULL;
        pid_t *pids, me = getpid();
        size_t shsize;
        sigset_t stopsigs, oldmask;
        int r;

        if (hog_parse_args(argc, argv, &o) < 0) {
                fprintf(stderr, "Try 'hog --help'.\n");
                return 2;
        }
        wl_stdout_line_buffered();
        wl_install_stop_handlers();

        shsize = sizeof(*sh) + (size_t) o.n * sizeof(struct hog_slot);
        sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        args = calloc((size_t) o.n, sizeof(*args));
        pids = calloc((size_t) o.n, sizeof(*pids));
        if (sh == MAP_FAILED || !args || !pids) {
                fprintf(stderr, "hog: out of memory\n");
                return 1;
        }
        sh->idle_at_ns = INT64_MAX;
        if (o.threads) {
                threads = calloc((size_t) o.n, sizeof(*threads));
                if (!threads)
                        return 1;
        }

        /* Hogs never handle SIGTERM/SIGINT: the monitor does, then stops them. */
        sigemptyset(&stopsigs);
        sigaddset(&stopsigs, SIGTERM);
        sigaddset(&stopsigs, SIGINT);
        sigprocmask(SIG_BLOCK, &stopsigs, &oldmask);
        for (long i = 0; i < o.n; i++) {
                args[i] = (struct hog_arg) {
                        .sh = sh,
                        .index = (int) i,
                        .cpu = o.ncpus > 0 ? o.cpus[i % o.ncpus] : -1,
                };
                if (o.threads) {
                        r = pthread_create(&threads[i], NULL, hog_body, &args[i]);
                        if (r != 0) {
                                fprintf(stderr, "hog: pthread_create: %s\n", strerror(r));
                                return 1;
                        }
                        continue;
                }
                pids[i] = fork();
                if (pids[i] < 0) {
                        perror("hog: fork");
                        atomic_store(&sh->stop, 1);
                        return 1;
                }
                if (pids[i] == 0) {
                        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                        hog_body(&args[i]);
                        _exit(0);
                }
        }
        sigprocmask(SIG_SETMASK, &oldmask, NULL);

        /* Wait until every hog runs (and is pinned, with --cpus). */
        int64_t deadline = wl_now_ns() + 10 * WL_NSEC_PER_SEC;
        bool failed = false;
        for (long i = 0; i < o.n && !failed; i++) {
                while (atomic_load(&sh->slot[i].tid) == 0 && !wl_stop_requested && wl_now_ns() < deadline)
                        wl_sleep_until_ns(wl_now_ns() + WL_NSEC_PER_MSEC);
                if (atomic_load(&sh->slot[i].tid) <= 0) {
                        fprintf(stderr, "hog: hog %ld did not start: %s\n", i,
                                sh->slot[i].pin_err < 0 ? strerror(-sh->slot[i].pin_err) : "timeout");
                        failed = true;
                }
        }

        pid_t *tids = calloc((size_t) o.n, sizeof(*tids));
        if (!tids)
                return 1;
        for (long i = 0; i < o.n; i++)
                tids[i] = atomic_load(&sh->slot[i].tid);
        if (!failed && wl_write_pid_file_opt("hog", o.common.pid_file, tids, (int) o.n) < 0)
                failed = true;

        const int64_t t0 = wl_now_ns();
        const int64_t t_end = wl_end_ns(t0, o.common.duration_s);
        if (o.idle_after_s > 0)
                sh->idle_at_ns = t0 + (int64_t) (o.idle_after_s * 1e9);
        for (long i = 0; i < o.n && !failed; i++) {
                struct hog_slot *s = &sh->slot[i];
                hog_read_counters(o.threads ? me : tids[i], tids[i], &s->mig0, &s->invol0, &s->st0);
                s->units0 = atomic_load(&s->units);
        }

        /* Monitor: sleep to each window end (or the end), report. */
        const int64_t window_ns = o.common.report_interval_ms > 0 ? o.common.report_interval_ms * WL_NSEC_PER_MSEC : INT64_MAX;
        int64_t next = window_ns == INT64_MAX ? t_end : t0 + window_ns;
        uint64_t *prev_units = calloc((size_t) o.n, sizeof(*prev_units));
        int64_t prev_t = t0;
        if (!prev_units)
                return 1;
        for (long i = 0; i < o.n; i++)
                prev_units[i] = sh->slot[i].units0;
        while (!failed && !wl_stop_requested) {
                int64_t until = next < t_end ? next : t_end;
                wl_sleep_until_ns(until);
                int64_t now = wl_now_ns();
                if (wl_stop_requested || now >= t_end)
                        break;
                if (now < until)
                        continue;
                double dt = (double) (now - prev_t) / 1e9, total = 0;
                long long migsum = 0;
                char rates[4096] = "", migs[4096] = "";
                size_t ro = 0, mo = 0;
                for (long i = 0; i < o.n; i++) {
                        struct hog_slot *s = &sh->slot[i];
                        long long mig, invol;
                        struct wl_schedstat st;
                        uint64_t u = atomic_load(&s->units);
                        double rate = (double) (u - prev_units[i]) / dt;

                        hog_read_counters(o.threads ? me : tids[i], tids[i], &mig, &invol, &st);
                        total += rate;
                        migsum += mig - s->mig0;
                        prev_units[i] = u;
                        if (ro < sizeof(rates) - 32)
                                ro += (size_t) snprintf(rates + ro, sizeof(rates) - ro, "%s%.1f", i ? "," : "", rate);
                        if (mo < sizeof(migs) - 32)
                                mo += (size_t) snprintf(migs + mo, sizeof(migs) - mo, "%s%lld", i ? "," : "", mig - s->mig0);
                }
                printf("t=%.3f rate=%.1f unit=units/s migrations=%lld hog_rates=%s hog_migrations=%s\n",
                       (double) (now - t0) / 1e9, total, migsum, rates, migs);
                prev_t = now;
                next += window_ns;
        }

        /* Final counters while the hogs still run, then stop them. */
        int64_t t1 = wl_now_ns();
        for (long i = 0; i < o.n && !failed; i++) {
                struct hog_slot *s = &sh->slot[i];
                s->units1 = atomic_load(&s->units);
                hog_read_counters(o.threads ? me : tids[i], tids[i], &s->mig1, &s->invol1, &s->st1);
        }
        atomic_store(&sh->stop, 1);
        for (long i = 0; i < o.n; i++) {
                if (o.threads)
                        pthread_join(threads[i], NULL);
                else if (pids[i] > 0)
                        waitpid(pids[i], NULL, 0);
        }
        if (failed)
                return 1;

        double elapsed = (double) (t1 - t0) / 1e9, total = 0, rmin = 0, rmax = 0, delay_ms = 0;
        long long migsum = 0, migmax = 0, involsum = 0;
        for (long i = 0; i < o.n; i++) {
                struct hog_slot *s = &sh->slot[i];
                double rate = elapsed > 0 ? (double) (s->units1 - s->units0) / elapsed : 0;
                long long mig = s->mig1 - s->mig0, invol = s->invol1 - s->invol0;
                double d_ms = (double) (s->st1.wait_ns - s->st0.wait_ns) / 1e6;
                double util = elapsed > 0 ? (double) (s->st1.run_ns - s->st0.run_ns) / 1e9 / elapsed : 0;
                char cpus[1024];

                wl_format_cpu_bits(s->cpus_visited, HOG_CPU_WORDS, cpus, sizeof(cpus));
                printf("hog=%ld tid=%d units=%llu rate=%.1f migrations=%lld invol=%lld run_delay_ms=%.1f "
                       "util=%.3f cpus=%s last_cpu=%d\n",
                       i, (int) tids[i], (unsigned long long) (s->units1 - s->units0), rate, mig, invol,
                       d_ms, util, cpus, s->last_cpu);
                total += rate;
                rmin = i == 0 || rate < rmin ? rate : rmin;
                rmax = i == 0 || rate > rmax ? rate : rmax;
                migsum += mig;
                migmax = mig > migmax ? mig : migmax;
                involsum += invol;
                delay_ms += d_ms;
        }
        printf("rate=%.1f unit=units/s hogs=%ld elapsed=%.3f rate_min=%.1f rate_max=%.1f fairness=%.3f "
               "migrations=%lld migrations_max=%lld invol=%lld run_delay_ms=%.1f mode=%s pinned=%s\n",
               total, o.n, elapsed, rmin, rmax, rmax > 0 ? rmin / rmax : 0.0, migsum, migmax, involsum,
               delay_ms, o.threads ? "threads" : "procs", o.ncpus > 0 ? "yes" : "no");
        free(prev_units);
        free(tids);
        free(args);
        free(pids);
        free(threads);
        return 0;
}
