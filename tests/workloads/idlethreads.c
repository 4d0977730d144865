/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * idlethreads: one process with N threads that sleep, for measuring what a
 * per-thread sampler costs when most threads do nothing (scenario
 * 7: the daemon's CPU and RSS with 100 / 1,000 / 10,000 idle threads).
 *
 * The threads block in sigwait() on a signal nobody sends; the main thread
 * waits for the duration or SIGTERM/SIGINT. --active K makes the first K
 * threads wake every --wake-ms (default 10 ms) and do a little work, so a
 * benchmark can tell "cost grows with all threads" from "cost grows with
 * active threads".
 */

#include "workload.h" /* first: defines _GNU_SOURCE */

#include <getopt.h>
#include <pthread.h>

#define IDLE_MAX 100000

struct idle_options {
        long n;
        long stack_kib;
        struct wl_common_options common;
        long active;
        double wake_ms;
};

static void idle_help(void) {
        printf("Usage: idlethreads [OPTIONS]\n"
               "One process with N sleeping threads.\n\n"
               "  -t, --threads N        threads to start, 1..%d (default 100)\n"
               "  -s, --stack-kib K      stack size per thread (default 64)\n"
               "  -d, --duration SEC     run time, 0 = until SIGTERM/SIGINT (default 0)\n"
               "  -a, --active K         the first K threads wake every --wake-ms (default 0)\n"
               "  -w, --wake-ms MS       wake-up period of active threads (default 10)\n"
               "  -p, --pid-file FILE    write the PID once all threads run\n"
               "  -h, --help             this help\n\n"
               "Prints 'ready threads=N pid=P' once all threads run.\n"
               "Last line: threads=N active=K elapsed=SEC rss_kib=R pid=P\n",
               IDLE_MAX);
}

static int idle_parse_args(int argc, char **argv, struct idle_options *o) {
        static const struct option longopts[] = {
                { "threads",   required_argument, NULL, 't' },
                { "stack-kib", required_argument, NULL, 's' },
                { "duration",  required_argument, NULL, 'd' },
                { "active",    required_argument, NULL, 'a' },
                { "wake-ms",   required_argument, NULL, 'w' },
                { "pid-file",  required_argument, NULL, 'p' },
                { "help",      no_argument,       NULL, 'h' },
                {}
        };
        int c;

        *o = (struct idle_options) { .n = 100, .stack_kib = 64, .wake_ms = 10 };
        while ((c = getopt_long(argc, argv, "t:s:d:a:w:p:h", longopts, NULL)) >= 0) {
                int r = wl_common_option(c, optarg, &o->common);

                if (r == 0) {
                        switch (c) {
                        case 't':
                                r = wl_parse_long(optarg, 1, IDLE_MAX, &o->n);
                                break;
                        case 's':
                                r = wl_parse_long(optarg, 16, 1024 * 1024, &o->stack_kib);
                                break;
                        case 'a':
                                r = wl_parse_long(optarg, 0, IDLE_MAX, &o->active);
                                break;
                        case 'w':
                                r = wl_parse_double(optarg, 0.1, 1e6, &o->wake_ms);
                                break;
                        case 'h':
                                idle_help();
                                exit(EXIT_SUCCESS);
                        default:
                                return -EINVAL;
                        }
                }
                if (r < 0) {
                        fprintf(stderr, "idlethreads: bad value '%s' for an option\n", optarg);
                        return -EINVAL;
                }
        }
        return wl_no_operands("idlethreads", argc, argv);
}

static void *idle_sleeper(void *p) {
        sigset_t set;
        int sig;

        (void) p;
        /* SIGUSR2 is blocked in every thread and never sent: sleeps forever
         * in the kernel without a timer, costing no wake-ups. */
        sigemptyset(&set);
        sigaddset(&set, SIGUSR2);
        for (;;)
                (void) sigwait(&set, &sig);
        return NULL;
}

static void *idle_waker(void *p) {
        const double *wake_ms = p;
        int64_t next = wl_now_ns();
        uint64_t x = 1;

        for (;;) {
                next += (int64_t) (*wake_ms * 1e6);
                wl_sleep_until_ns(next);
                x = wl_spin(1000, x); /* ~1-2 µs of work per wake-up */
        }
        return NULL;
}

static long idle_rss_kib(void) {
        char line[256];
        long v = -1;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld", &v) == 1)
                        break;
        fclose(f);
        return v;
}

int main(int argc, char **argv) {
        struct idle_options o;
        pthread_attr_t attr;
        sigset_t block, stopsigs;
        pid_t me = getpid();
        long started = 0;
        int r;

        if (idle_parse_args(argc, argv, &o) < 0) {
                fprintf(stderr, "Try 'idlethreads --help'.\n");
                return 2;
        }
        wl_stdout_line_buffered();

        /* Threads inherit this mask: SIGUSR2 for sigwait, and the stop
         * signals, which only the main thread takes (with sigtimedwait). */
        sigemptyset(&block);
        sigaddset(&block, SIGUSR2);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGINT);
        pthread_sigmask(SIG_BLOCK, &block, NULL);

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, (size_t) o.stack_kib * 1024);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (long i = 0; i < o.n; i++) {
                pthread_t t;

                r = pthread_create(&t, &attr, i < o.active ? idle_waker : idle_sleeper, &o.wake_ms);
                if (r != 0) {
                        fprintf(stderr, "idlethreads: thread %ld: %s\n", i, strerror(r));
                        break;
                }
                started++;
        }
        pthread_attr_destroy(&attr);
        if (started < o.n)
                return 1;
        if (wl_write_pid_file_opt("idlethreads", o.common.pid_file, &me, 1) < 0)
                return 1;
        printf("ready threads=%ld pid=%d\n", started, (int) me);

        const int64_t t0 = wl_now_ns();
        const int64_t t_end = wl_end_ns(t0, o.common.duration_s);
        sigemptyset(&stopsigs);
        sigaddset(&stopsigs, SIGTERM);
        sigaddset(&stopsigs, SIGINT);
        for (;;) {
                int64_t now = wl_now_ns();
                if (now >= t_end)
                        break;
                int64_t left = t_end - now;
                struct timespec ts = {
                        .tv_sec = left > 3600 * WL_NSEC_PER_SEC ? 3600 : left / WL_NSEC_PER_SEC,
                        .tv_nsec = left > 3600 * WL_NSEC_PER_SEC ? 0 : left % WL_NSEC_PER_SEC,
                };
                if (sigtimedwait(&stopsigs, NULL, &ts) > 0)
                        break;
        }
        printf("threads=%ld active=%ld elapsed=%.3f rss_kib=%ld pid=%d\n", started,
               o.active < started ? o.active : started, (double) (wl_now_ns() - t0) / 1e9,
               idle_rss_kib(), (int) me);
        /* exit() ends every thread. */
        return 0;
}
