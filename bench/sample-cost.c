/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sample-cost: what one sampler pass costs as the number of threads on the
 * machine grows (target: 10,000 idle threads at the default 1 s interval
 * in at most 0.5 % of one CPU and 16 MiB RSS).
 *
 * For each N (default 100, 1,000, 10,000) a workload process starts N
 * sleeping threads (16 KiB stacks, so 10,000 fit in ~160 MiB of address
 * space and a little RSS); then a fresh measuring process, standing in for
 * the daemon, builds a sampler on the real /proc, takes the first pass
 * (discovery: every thread is read once) and then --passes more at
 * --interval-ms. It prints the per-pass wall time, the per-pass CPU time
 * (thread CPU clock) and the CPU time from getrusage(RUSAGE_SELF) over all
 * steady passes, the resulting share of one CPU at a 1 s interval, its RSS,
 * and what the passes read.
 *
 * --active K lets the first K threads of the workload wake every 10 ms and
 * spin ~0.2 ms, so the workload process is active in every window: the
 * cost then grows with the active threads, not with N.
 *
 * --events runs the proc connector as the daemon does (fork/exec/exit fed to
 * the sampler, /proc listed every 10th pass); its CPU time is included.
 *
 * Other processes on the machine are sampled too; their share is in the
 * numbers (it is what the daemon would pay). Run it on a quiet machine for
 * stable figures.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench-util.h"
#include "common/util.h"
#include "sample/proc-connector.h"
#include "sample/sample.h"
#include "sample/topology.h"

#define STACK_KIB_DEFAULT 16

struct options {
        long threads[16];
        size_t n_threads;
        unsigned passes;
        unsigned warmup;
        unsigned interval_ms;
        long stack_kib;
        long active;
        bool events;
        enum sampler_gate gate;
};

/* ---- workload ----------------------------------------------------------- */

static void *idle_thread(void *arg) {
        for (;;)
                pause();
        return NULL;
}

static void *active_thread(void *arg) {
        for (;;) {
                struct timespec ts = { .tv_nsec = 10 * NSEC_PER_MSEC };
                uint64_t end;

                nanosleep(&ts, NULL);
                end = util_now_usec() + 200;
                while (util_now_usec() < end)
                        ;
        }
        return NULL;
}

/* Child: start n threads, report "ok" or the error on fd, then sleep. */
static _Noreturn void workload(long n, long active, long stack_kib, int fd) {
        pthread_attr_t attr;
        char msg[256];
        long i;
        int r;

        /* never outlive the benchmark */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, (size_t) stack_kib * 1024);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (i = 0; i < n; i++) {
                pthread_t t;

                r = pthread_create(&t, &attr, i < active ? active_thread : idle_thread, NULL);
                if (r != 0) {
                        struct rlimit nproc = {};
                        getrlimit(RLIMIT_NPROC, &nproc);
                        snprintf(msg, sizeof(msg),
                                 "pthread_create #%ld: %s (RLIMIT_NPROC %llu; see also "
                                 "/proc/sys/kernel/threads-max and vm.max_map_count)",
                                 i, strerror(r), (unsigned long long) nproc.rlim_cur);
                        (void) !write(fd, msg, strlen(msg));
                        _exit(1);
                }
        }
        (void) !write(fd, "ok", 2);
        close(fd);
        for (;;)
                pause();
}

/* ---- measuring process ------------------------------------------------- */

static uint64_t rusage_usec(void) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (uint64_t) ru.ru_utime.tv_sec * USEC_PER_SEC + (uint64_t) ru.ru_utime.tv_usec +
               (uint64_t) ru.ru_stime.tv_sec * USEC_PER_SEC + (uint64_t) ru.ru_stime.tv_usec;
}

struct result {
        unsigned threads;           /* threads the sampler saw (whole machine) */
        uint64_t first_wall_usec, first_cpu_usec;
        double wall_avg_usec, wall_max_usec, cpu_avg_usec, rusage_avg_usec;
        long rss_kib, hwm_kib;
        uint64_t events;
        double files_avg, read_avg, carried_avg, expensive_avg, active_avg;
        char gate[16];
};

static int on_event(const struct proc_event *ev, void *userdata) {
        struct sampler *s = userdata;

        switch (ev->what) {
        case PROC_EVENT_FORK_:
                sampler_note_fork(s, ev->pid, ev->tid);
                break;
        case PROC_EVENT_EXEC_:
                sampler_note_exec(s, ev->pid);
                break;
        case PROC_EVENT_EXIT_:
                sampler_note_exit(s, ev->pid, ev->tid);
                break;
        default:
                break;
        }
        return 0;
}

static uint64_t thread_cpu_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static int measure(const struct options *o, struct result *res) {
        struct proc_connector *pc = NULL;
        struct proc_connector_stats pcs;
        struct topology *topo = NULL;
        struct sampler *s = NULL;
        struct snapshot *snap;
        struct sampler_stats st;
        uint64_t ru0, next;
        double wall_sum = 0, cpu_sum = 0, files = 0, rd = 0, carried = 0, exp = 0, act = 0;
        int r;

        memset(res, 0, sizeof(*res));
        r = topology_load("/", &topo);
        if (r < 0)
                return r;
        r = sampler_new("/", topo, 0, &s);
        if (r < 0)
                return r;
        r = sampler_set_options(s, &(struct sampler_options) { .gate = o->gate });
        if (r < 0)
                return r;
        if (o->events) {
                r = proc_connector_new(&pc);
                if (r < 0) {
                        fprintf(stderr, "proc connector: %s\n", strerror(-r));
                        return r;
                }
                sampler_set_process_events(s, true);
        }

        r = sampler_sample(s, util_now_usec(), &snap);
        if (r < 0)
                return r;
        sampler_get_stats(s, &st);
        res->first_wall_usec = st.wall_usec;
        res->first_cpu_usec = st.cpu_usec;

        /* Warm-up back to back: the gate backoff of idle processes counts passes,
         * and the daemon lives in that steady state after its first minute. */
        for (unsigned i = 0; i < o->warmup; i++) {
                if (pc && proc_connector_dispatch(pc, on_event, s) == -ENOBUFS)
                        sampler_note_lost(s);
                r = sampler_sample(s, util_now_usec(), &snap);
                if (r < 0)
                        return r;
        }

        ru0 = rusage_usec();
        next = util_now_usec();
        for (unsigned i = 0; i < o->passes; i++) {
                next += (uint64_t) o->interval_ms * USEC_PER_MSEC;
                while (util_now_usec() < next) {
                        uint64_t left = next - util_now_usec();
                        struct timespec ts = { .tv_sec = (time_t) (left / USEC_PER_SEC),
                                               .tv_nsec = (long) (left % USEC_PER_SEC) * 1000 };
                        nanosleep(&ts, NULL);
                }
                /* The daemon drains the connector as events come; here, before each pass. */
                uint64_t ev_cpu0 = thread_cpu_usec(), ev_cpu;
                if (pc && proc_connector_dispatch(pc, on_event, s) == -ENOBUFS)
                        sampler_note_lost(s);
                ev_cpu = thread_cpu_usec() - ev_cpu0;
                r = sampler_sample(s, util_now_usec(), &snap);
                if (r < 0)
                        return r;
                sampler_get_stats(s, &st);
                wall_sum += (double) st.wall_usec;
                cpu_sum += (double) (st.cpu_usec + ev_cpu);
                res->wall_max_usec = MAX(res->wall_max_usec, (double) st.wall_usec);
                files += st.files_read;
                rd += st.threads_read;
                carried += st.threads_carried;
                exp += st.expensive_reads;
                act += st.processes_active;
        }
        res->rusage_avg_usec = (double) (rusage_usec() - ru0) / o->passes;
        res->threads = st.threads;
        res->wall_avg_usec = wall_sum / o->passes;
        res->cpu_avg_usec = cpu_sum / o->passes;
        res->files_avg = files / o->passes;
        res->read_avg = rd / o->passes;
        res->carried_avg = carried / o->passes;
        res->expensive_avg = exp / o->passes;
        res->active_avg = act / o->passes;
        res->rss_kib = status_kib("VmRSS");
        res->hwm_kib = status_kib("VmHWM");
        snprintf(res->gate, sizeof(res->gate), "%s%s", st.gate, pc ? "+ev" : "");
        proc_connector_get_stats(pc, &pcs);
        res->events = pcs.events;
        proc_connector_free(pc);
        sampler_free(s);
        topology_free(topo);
        return 0;
}

/* Fork the measuring process so each N starts from a clean heap (RSS). */
static int measure_in_child(const struct options *o, struct result *res) {
        int p[2], status;
        pid_t pid;
        ssize_t n;

        if (pipe(p) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                struct result r;
                int k;

                close(p[0]);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                k = measure(o, &r);
                if (k < 0) {
                        fprintf(stderr, "sampler: %s\n", strerror(-k));
                        _exit(1);
                }
                (void) !write(p[1], &r, sizeof(r));
                _exit(0);
        }
        close(p[1]);
        n = read(p[0], res, sizeof(*res));
        close(p[0]);
        waitpid(pid, &status, 0);
        return n == (ssize_t) sizeof(*res) && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static int run_one(const struct options *o, long n) {
        struct result res;
        char msg[512] = "";
        int p[2], r;
        pid_t w;
        ssize_t k;

        if (pipe(p) < 0)
                return -errno;
        w = fork();
        if (w < 0)
                return -errno;
        if (w == 0) {
                close(p[0]);
                workload(n, o->active, o->stack_kib, p[1]);
        }
        close(p[1]);
        k = read(p[0], msg, sizeof(msg) - 1);
        close(p[0]);
        if (k <= 0 || strncmp(msg, "ok", 2) != 0) {
                fprintf(stderr, "workload with %ld threads failed: %s\n", n, k > 0 ? msg : "no answer");
                kill(w, SIGKILL);
                waitpid(w, NULL, 0);
                return -EAGAIN;
        }

        r = measure_in_child(o, &res);
        kill(w, SIGKILL);
        waitpid(w, NULL, 0);
        if (r < 0) {
                fprintf(stderr, "measuring %ld threads failed\n", n);
                return r;
        }
        /* CPU share at a 1 s interval: CPU µs per pass / 1,000,000 µs. */
        printf("%7ld %8u %8s %8.0f %8.0f %8.0f %8.0f %8.0f %7.3f %6.1f %6.1f %7.0f %7.0f %8.0f %6.0f\n", n,
               res.threads, res.gate, (double) res.first_cpu_usec, res.wall_avg_usec, res.wall_max_usec,
               res.cpu_avg_usec, res.rusage_avg_usec, res.cpu_avg_usec / 1e4, res.rss_kib / 1024.0,
               res.hwm_kib / 1024.0, res.files_avg, res.read_avg, res.carried_avg, res.expensive_avg);
        fflush(stdout);
        return 0;
}

static void help(void) {
        printf("Usage: sample-cost [OPTIONS]\n"
               "Per-pass cost of the affinityd sampler with N idle threads on this machine.\n\n"
               "  -t, --threads LIST     thread counts, comma separated (default 100,1000,10000)\n"
               "  -p, --passes N         steady passes to measure per count (default 5)\n"
               "  -i, --interval-ms MS   time between passes (default 1000; 0 = back to back)\n"
               "  -w, --warmup N         back-to-back passes before measuring (default 40; 0 = measure\n"
               "                         the start-up regime right after the first pass)\n"
               "  -s, --stack-kib K      stack per workload thread (default %d)\n"
               "  -a, --active K         the first K workload threads wake every 10 ms (default 0)\n"
               "  -g, --gate GATE        auto, clock, stat or none (default auto)\n"
               "  -e, --events           feed proc connector events to the sampler, as the daemon does\n"
               "  -h, --help             this help\n\n"
               "Columns: N, threads the sampler saw, gate, CPU µs of the first pass (discovery),\n"
               "wall µs per pass avg and max, CPU µs per pass (thread clock) and from getrusage,\n"
               "%% of one CPU at a 1 s interval, RSS and peak RSS in MiB, files read, threads\n"
               "read and carried, expensive (schedstat+sched) reads, all per pass.\n",
               STACK_KIB_DEFAULT);
}

static int parse_args(int argc, char **argv, struct options *o) {
        static const struct option longopts[] = {
                { "threads", required_argument, NULL, 't' },
                { "passes", required_argument, NULL, 'p' },
                { "warmup", required_argument, NULL, 'w' },
                { "interval-ms", required_argument, NULL, 'i' },
                { "stack-kib", required_argument, NULL, 's' },
                { "active", required_argument, NULL, 'a' },
                { "gate", required_argument, NULL, 'g' },
                { "events", no_argument, NULL, 'e' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        *o = (struct options) {
                .threads = { 100, 1000, 10000 },
                .n_threads = 3,
                .passes = 5,
                .warmup = 40,
                .interval_ms = 1000,
                .stack_kib = STACK_KIB_DEFAULT,
                .gate = SAMPLER_GATE_AUTO,
        };
        while ((c = getopt_long(argc, argv, "t:p:w:i:s:a:g:eh", longopts, NULL)) >= 0) {
                char *end;
                switch (c) {
                case 't':
                        o->n_threads = 0;
                        for (char *tok = strtok(optarg, ","); tok && o->n_threads < ELEMENTSOF(o->threads);
                             tok = strtok(NULL, ",")) {
                                long v = strtol(tok, &end, 10);
                                if (*end || v < 0 || v > 100000) {
                                        fprintf(stderr, "bad thread count '%s' (0..100000)\n", tok);
                                        return -EINVAL;
                                }
                                o->threads[o->n_threads++] = v;
                        }
                        break;
                case 'p':
                        o->passes = (unsigned) strtoul(optarg, &end, 10);
                        if (*end || o->passes < 1 || o->passes > 10000) {
                                fprintf(stderr, "bad --passes (1..10000)\n");
                                return -EINVAL;
                        }
                        break;
                case 'w':
                        o->warmup = (unsigned) strtoul(optarg, &end, 10);
                        if (*end || o->warmup > 100000) {
                                fprintf(stderr, "bad --warmup (0..100000)\n");
                                return -EINVAL;
                        }
                        break;
                case 'i':
                        o->interval_ms = (unsigned) strtoul(optarg, &end, 10);
                        if (*end || o->interval_ms > 60000) {
                                fprintf(stderr, "bad --interval-ms (0..60000)\n");
                                return -EINVAL;
                        }
                        break;
                case 's':
                        o->stack_kib = strtol(optarg, &end, 10);
                        if (*end || o->stack_kib < 16 || o->stack_kib > 8192) {
                                fprintf(stderr, "bad --stack-kib (16..8192)\n");
                                return -EINVAL;
                        }
                        break;
                case 'a':
                        o->active = strtol(optarg, &end, 10);
                        if (*end || o->active < 0) {
                                fprintf(stderr, "bad --active\n");
                                return -EINVAL;
                        }
                        break;
                case 'g':
                        for (o->gate = 0; o->gate < _SAMPLER_GATE_MAX; o->gate++)
                                if (streq(optarg, sampler_gate_to_string(o->gate)))
                                        break;
                        if (o->gate == _SAMPLER_GATE_MAX) {
                                fprintf(stderr, "bad --gate (auto, clock, stat, none)\n");
                                return -EINVAL;
                        }
                        break;
                case 'e':
                        o->events = true;
                        break;
                case 'h':
                        help();
                        exit(0);
                default:
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 0;
}

int main(int argc, char **argv) {
        struct options o;
        int failed = 0;

        if (parse_args(argc, argv, &o) < 0) {
                help();
                return 2;
        }
        printf("# sampler cost: %u warm-up passes, then %u measured per count, interval %u ms, %ld KiB stacks, "
               "%ld active, %s, %ld CPUs online\n",
               o.warmup, o.passes, o.interval_ms, o.stack_kib, o.active, o.events ? "proc connector events" : "no events",
               sysconf(_SC_NPROCESSORS_ONLN));
        printf("#     N  sampled     gate  1st-cpu  wall-us  wall-mx   cpu-us  ru-cpus  %%cpu@1s  rssMiB  hwmMiB"
               "   files    read  carried    exp\n");
        for (size_t i = 0; i < o.n_threads; i++)
                if (run_one(&o, o.threads[i]) < 0)
                        failed = 1;
        return failed;
}
