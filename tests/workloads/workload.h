/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Helpers shared by the workload generators in tests/workloads/ (pingpong,
 * stream, hog, duty, idlethreads). Header-only on purpose: each generator
 * stays one standalone program that builds with a plain
 * `cc -O2 -pthread x.c -lm`, so the VM test and bench/run.sh can compile
 * them without the project's libraries.
 *
 * Output contract shared by all generators: progress lines go to stdout,
 * line-buffered; the LAST line is a summary of space-separated key=value
 * pairs (e.g. "rate=261234.5 unit=roundtrips/s ..."), so a test or the
 * bench runner takes `tail -n1` and splits on spaces and '='.
 *
 * These programs read only their own /proc/self and /proc/<own child>
 * entries, so they do not take a root prefix.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define WL_NSEC_PER_SEC  INT64_C(1000000000)
#define WL_NSEC_PER_MSEC INT64_C(1000000)
#define WL_NSEC_PER_USEC INT64_C(1000)
#define WL_MAX_CPUS 1024

/*
 * One work unit of hog/duty: a fixed number of spin iterations, so "units"
 * are the same amount of computation in every run and every mode (a
 * wall-clock spin would count time spent preempted as work done).
 * About 10-20 µs on the development machine.
 */
#define WL_UNIT_LOOPS 10000

/*
 * Set from SIGTERM/SIGINT only. The one mutable global the generators have:
 * a signal handler can do nothing else (CONVENTIONS: signal handlers only set
 * flags).
 */
static volatile sig_atomic_t wl_stop_requested;

static inline void wl_on_stop_signal(int sig) {
        (void) sig;
        wl_stop_requested = 1;
}

/* Install SIGTERM/SIGINT handlers without SA_RESTART, so a blocking read()
 * returns EINTR and the generator can print its summary. SIGPIPE is
 * ignored: a dead peer shows up as EPIPE. */
static inline void wl_install_stop_handlers(void) {
        struct sigaction sa = { .sa_handler = wl_on_stop_signal };

        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
}

static inline int64_t wl_clock_ns(clockid_t id) {
        struct timespec ts;

        clock_gettime(id, &ts);
        return (int64_t) ts.tv_sec * WL_NSEC_PER_SEC + ts.tv_nsec;
}

static inline int64_t wl_now_ns(void) {
        return wl_clock_ns(CLOCK_MONOTONIC);
}

static inline int64_t wl_thread_cpu_ns(void) {
        return wl_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static inline pid_t wl_gettid(void) {
        return (pid_t) syscall(SYS_gettid);
}

/* Sleep until an absolute CLOCK_MONOTONIC time; returns early on a signal. */
static inline void wl_sleep_until_ns(int64_t t) {
        struct timespec ts = {
                .tv_sec = t / WL_NSEC_PER_SEC,
                .tv_nsec = t % WL_NSEC_PER_SEC,
        };

        (void) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/*
 * Spin for a fixed number of iterations of a dependent xorshift chain. The
 * empty asm keeps the compiler from folding the loop; the chain keeps the
 * CPU from overlapping iterations, so the cost per loop is stable.
 */
static inline uint64_t wl_spin(uint64_t loops, uint64_t seed) {
        uint64_t x = seed | 1;

        for (uint64_t i = 0; i < loops; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                __asm__ volatile("" : "+r"(x));
        }
        return x;
}

/*
 * Spin loops per microsecond of CPU time: best (fastest) of several short
 * trials, measured with the thread CPU clock, so preemption by other
 * tenants does not inflate it. Still varies a few % between machines and
 * runs: the bench runner calibrates once and passes --loops-per-us to every
 * run so all variants do the same work.
 */
static inline double wl_calibrate_loops_per_us(void) {
        const uint64_t loops = 200000;
        double best = 0;

        (void) wl_spin(loops, 1); /* warm up: page in, let the clock ramp */
        for (int i = 0; i < 9; i++) {
                int64_t t0 = wl_thread_cpu_ns();
                (void) wl_spin(loops, (uint64_t) i + 1);
                int64_t dt = wl_thread_cpu_ns() - t0;
                if (dt <= 0)
                        continue;
                double r = (double) loops * 1000.0 / (double) dt;
                if (r > best)
                        best = r;
        }
        return best > 0 ? best : 1000.0;
}

/* Strict number parsers for options: whole string, range checked. */
static inline int wl_parse_long(const char *s, long min, long max, long *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static inline int wl_parse_double(const char *s, double min, double max, double *ret) {
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno != 0 || end == s || *end != '\0' || !(v >= min && v <= max))
                return -EINVAL;
        *ret = v;
        return 0;
}

/*
 * Parse "0,1" or "0-3,6" into a list of CPU numbers (order kept, so "1,0"
 * means first task on CPU 1). Returns the count or -EINVAL.
 */
static inline int wl_parse_cpu_list(const char *s, int *ret_cpus, int max) {
        int n = 0;
        const char *p = s;

        while (*p) {
                char *end;
                long a, b;

                errno = 0;
                a = strtol(p, &end, 10);
                if (errno != 0 || end == p || a < 0 || a >= WL_MAX_CPUS)
                        return -EINVAL;
                b = a;
                p = end;
                if (*p == '-') {
                        p++;
                        b = strtol(p, &end, 10);
                        if (errno != 0 || end == p || b < a || b >= WL_MAX_CPUS)
                                return -EINVAL;
                        p = end;
                }
                for (long c = a; c <= b; c++) {
                        if (n >= max)
                                return -E2BIG;
                        ret_cpus[n++] = (int) c;
                }
                if (*p == ',')
                        p++;
                else if (*p != '\0')
                        return -EINVAL;
        }
        return n > 0 ? n : -EINVAL;
}

static inline int wl_pin_to_cpu(pid_t pid, int cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return sched_setaffinity(pid, sizeof(set), &set) < 0 ? -errno : 0;
}

static inline int wl_set_affinity(pid_t pid, const cpu_set_t *set) {
        return sched_setaffinity(pid, sizeof(*set), set) < 0 ? -errno : 0;
}

/* Write a list of task ids, one per line, atomically (tmp + rename): a
 * test polling for the file never sees half of it. */
static inline int wl_write_pid_file(const char *path, const pid_t *pids, int n) {
        char tmp[PATH_MAX];
        FILE *f;
        int r = 0;

        if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int) getpid()) >= (int) sizeof(tmp))
                return -ENAMETOOLONG;
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        for (int i = 0; i < n; i++)
                fprintf(f, "%d\n", (int) pids[i]);
        if (fflush(f) != 0 || ferror(f))
                r = -EIO;
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

/*
 * Read one "name : value" field of /proc/<pid>/task/<tid>/sched (needs
 * CONFIG_SCHED_DEBUG, e.g. "se.nr_migrations", "nr_involuntary_switches").
 * Returns 0 and the integer part of the value, or -errno.
 */
static inline int wl_read_sched_field(pid_t pid, pid_t tid, const char *field, long long *ret) {
        char path[64], line[256];
        size_t len = strlen(field);
        FILE *f;
        int r = -ENOENT;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/sched", (int) pid, (int) tid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, field, len) != 0 || (line[len] != ' ' && line[len] != ':'))
                        continue;
                char *colon = strchr(line + len, ':');
                if (!colon)
                        break;
                *ret = strtoll(colon + 1, NULL, 10);
                r = 0;
                break;
        }
        fclose(f);
        return r;
}

/* Per-task CPU time, run-queue wait (both ns) and timeslices from
 * /proc/<pid>/task/<tid>/schedstat (CONFIG_SCHED_INFO). */
struct wl_schedstat {
        long long run_ns;
        long long wait_ns;
        long long slices;
};

static inline int wl_read_schedstat(pid_t pid, pid_t tid, struct wl_schedstat *ret) {
        char path[64];
        FILE *f;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int) pid, (int) tid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        r = fscanf(f, "%lld %lld %lld", &ret->run_ns, &ret->wait_ns, &ret->slices) == 3 ? 0 : -EIO;
        fclose(f);
        return r;
}

/* Format a bitmap of visited CPUs as "0,1,3" (or "-" when empty). */
static inline void wl_format_cpu_bits(const uint64_t *bits, int nwords, char *buf, size_t size) {
        size_t off = 0;

        buf[0] = '\0';
        for (int w = 0; w < nwords; w++)
                for (int b = 0; b < 64; b++) {
                        if (!(bits[w] & (UINT64_C(1) << b)))
                                continue;
                        int n = snprintf(buf + off, size - off, "%s%d", off ? "," : "", w * 64 + b);
                        if (n < 0 || (size_t) n >= size - off)
                                return;
                        off += (size_t) n;
                }
        if (off == 0)
                snprintf(buf, size, "-");
}

/* Make stdout line-buffered even into a file or pipe, so a test polling the
 * output sees each progress line as soon as it is printed. */
static inline void wl_stdout_line_buffered(void) {
        setvbuf(stdout, NULL, _IOLBF, 0);
}

/*
 * A time series of cumulative counters, one sample per window, so a
 * generator can report the rate over the second half of its run (after a
 * daemon had time to act) whatever the duration turns out to be.
 */
struct wl_sample {
        int64_t t_ns;
        uint64_t count;
        uint64_t same;  /* events that happened with both sides on one CPU */
};

struct wl_series {
        struct wl_sample *s;
        size_t n, allocated;
};

static inline int wl_series_push(struct wl_series *ws, int64_t t_ns, uint64_t count, uint64_t same) {
        if (ws->n == ws->allocated) {
                size_t na = ws->allocated ? ws->allocated * 2 : 1024;
                struct wl_sample *ns = realloc(ws->s, na * sizeof(*ns));
                if (!ns)
                        return -ENOMEM;
                ws->s = ns;
                ws->allocated = na;
        }
        ws->s[ws->n++] = (struct wl_sample) { t_ns, count, same };
        return 0;
}

/* The last sample at or before t_ns (the first sample if none). */
static inline const struct wl_sample *wl_series_at(const struct wl_series *ws, int64_t t_ns) {
        size_t h = 0;

        for (size_t i = 0; i < ws->n; i++)
                if (ws->s[i].t_ns <= t_ns)
                        h = i;
        return &ws->s[h];
}

static inline double wl_frac(uint64_t a, uint64_t b) {
        return b ? (double) a / (double) b : 0.0;
}

/* ---- command line: what the generators spell the same way ---- */

/*
 * The long name of option c in a getopt_long() table, for messages
 * ("bad --duration '...'"); "?" if it has none.
 */
static inline const char *wl_long_name(const struct option *longopts, int c) {
        for (const struct option *lo = longopts; lo->name; lo++)
                if (lo->val == c)
                        return lo->name;
        return "?";
}

/*
 * Options with the same letter, bounds and meaning in every generator that
 * takes them: -d/--duration SEC, -r/--report-interval MS, -p/--pid-file FILE,
 * -L/--loops-per-us X, -C/--calibrate. Each generator keeps its own getopt
 * table, defaults and help text; wl_common_option() is the switch cases.
 */
struct wl_common_options {
        double duration_s;        /* 0 = until SIGTERM/SIGINT */
        long report_interval_ms;  /* 0 = no progress lines */
        const char *pid_file;
        double loops_per_us;      /* 0 = calibrate at start */
        bool calibrate_only;
};

/* 1: c is a common option (stored), 0: it is not one, -EINVAL: bad value. */
static inline int wl_common_option(int c, const char *arg, struct wl_common_options *o) {
        switch (c) {
        case 'd':
                return wl_parse_double(arg, 0, 1e7, &o->duration_s) < 0 ? -EINVAL : 1;
        case 'r':
                return wl_parse_long(arg, 0, 3600 * 1000, &o->report_interval_ms) < 0 ? -EINVAL : 1;
        case 'p':
                o->pid_file = arg;
                return 1;
        case 'L':
                return wl_parse_double(arg, 0.001, 1e6, &o->loops_per_us) < 0 ? -EINVAL : 1;
        case 'C':
                o->calibrate_only = true;
                return 1;
        default:
                return 0;
        }
}

/* After the getopt loop: the generators take no operands. */
static inline int wl_no_operands(const char *prog, int argc, char **argv) {
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
                return -EINVAL;
        }
        return 0;
}

/*
 * Without --loops-per-us, calibrate. With --calibrate, print
 * "loops_per_us=X" and return 1: the caller exits 0 (bench/run.sh
 * calibrates once this way and passes the value to every run).
 */
static inline int wl_loops_per_us(struct wl_common_options *o) {
        if (o->loops_per_us <= 0)
                o->loops_per_us = wl_calibrate_loops_per_us();
        if (o->calibrate_only) {
                printf("loops_per_us=%.3f\n", o->loops_per_us);
                return 1;
        }
        return 0;
}

/* wl_write_pid_file() for --pid-file (nothing without one), saying why it failed. */
static inline int wl_write_pid_file_opt(const char *prog, const char *path, const pid_t *pids, int n) {
        int r;

        if (!path)
                return 0;
        r = wl_write_pid_file(path, pids, n);
        if (r < 0)
                fprintf(stderr, "%s: writing %s: %s\n", prog, path, strerror(-r));
        return r;
}

/* End of a run of duration_s from t0; 0 = until SIGTERM/SIGINT. */
static inline int64_t wl_end_ns(int64_t t0, double duration_s) {
        return duration_s > 0 ? t0 + (int64_t) (duration_s * 1e9) : INT64_MAX;
}

/*
 * Report windows of a loop that checks the clock now and then (pingpong,
 * stream): wl_window_done() is true once the current window has ended and
 * starts the next; a window missed entirely (a long stall) is skipped.
 */
struct wl_windows {
        int64_t t0, t_end;
        int64_t window_ns, next;
};

static inline void wl_windows_start(struct wl_windows *w, double duration_s, int64_t window_ns) {
        w->t0 = wl_now_ns();
        w->t_end = wl_end_ns(w->t0, duration_s);
        w->window_ns = window_ns;
        w->next = w->t0 + window_ns;
}

static inline bool wl_window_done(struct wl_windows *w, int64_t now) {
        if (now < w->next)
                return false;
        w->next += w->window_ns;
        if (w->next <= now)
                w->next = now + w->window_ns;
        return true;
}

/* ---- the two-process generators (pingpong, stream): placement ---- */

/*
 * --cpus A,B [--hold] | --pin CPU. Default: no affinity calls. --cpus
 * starts the parent on A and the child on B, then (without --hold) resets
 * both masks to the one the program started with, so only the kernel's own
 * placement keeps them split. --pin: both on one CPU, mask stays narrowed.
 */
struct wl_pair_placement {
        int cpus[2];
        bool split, hold;
        int pin_cpu;              /* -1 = none */
};

/* -c, -H, -P: 1 handled, 0 not one of them, -EINVAL bad value. */
static inline int wl_pair_option(int c, const char *arg, struct wl_pair_placement *pl) {
        long v;

        switch (c) {
        case 'c':
                if (wl_parse_cpu_list(arg, pl->cpus, 2) != 2)
                        return -EINVAL;
                pl->split = true;
                return 1;
        case 'H':
                pl->hold = true;
                return 1;
        case 'P':
                if (wl_parse_long(arg, 0, WL_MAX_CPUS - 1, &v) < 0)
                        return -EINVAL;
                pl->pin_cpu = (int) v;
                return 1;
        default:
                return 0;
        }
}

static inline int wl_pair_check(const char *prog, const struct wl_pair_placement *pl) {
        if (pl->split && pl->pin_cpu >= 0) {
                fprintf(stderr, "%s: --cpus and --pin exclude each other\n", prog);
                return -EINVAL;
        }
        if (pl->hold && !pl->split) {
                fprintf(stderr, "%s: --hold needs --cpus\n", prog);
                return -EINVAL;
        }
        return 0;
}

/* Before the fork: the parent on its CPU (the child inherits it until it moves itself). */
static inline int wl_pair_place_parent(const char *prog, const struct wl_pair_placement *pl) {
        int r = pl->split ? wl_pin_to_cpu(0, pl->cpus[0]) : pl->pin_cpu >= 0 ? wl_pin_to_cpu(0, pl->pin_cpu) : 0;

        if (r < 0)
                fprintf(stderr, "%s: sched_setaffinity: %s\n", prog, strerror(-r));
        return r;
}

/*
 * First thing in the child. The parent decides when to stop (it closes
 * the pipe); a signal to the whole process group must not make the child
 * vanish first. It dies with the parent.
 */
static inline void wl_pair_child_start(const struct wl_pair_placement *pl) {
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (pl->split && wl_pin_to_cpu(0, pl->cpus[1]) < 0)
                _exit(2);
}

/*
 * Once both sides ran on their CPUs: --cpus without --hold puts both back
 * to the starting mask. Neither task is moved by this; from here on only
 * the kernel places them.
 */
static inline int wl_pair_release(const char *prog, const struct wl_pair_placement *pl, pid_t child,
                                  const cpu_set_t *orig) {
        int r;

        if (!pl->split || pl->hold)
                return 0;
        r = wl_set_affinity(child, orig);
        if (r >= 0)
                r = wl_set_affinity(0, orig);
        if (r < 0)
                fprintf(stderr, "%s: resetting affinity: %s\n", prog, strerror(-r));
        return r;
}

/* mode= of the summary line. */
static inline const char *wl_pair_mode(const struct wl_pair_placement *pl) {
        return pl->split ? (pl->hold ? "split-held" : "split") : pl->pin_cpu >= 0 ? "pinned" : "free";
}

/* ---- open-loop clients (pingpong --rate, bench/rate-client) ---- */

/* Latencies of an open-loop run, in ns, in the order they came. */
struct wl_latencies {
        int64_t *ns;
        size_t n, cap;
};

/*
 * Wait for a request due at `due` (CLOCK_MONOTONIC ns) and return the time
 * its latency counts from. An open-loop client sends at its rate whether or
 * not the reply before came back in time. Behind schedule (a slow reply),
 * the latency counts from when it was due, as for a client with a queue of
 * requests, and *late is counted up when over 1 ms behind; ahead of it,
 * from when the client's timer woke it: how late a sleeping client's timer
 * fires is the client's own (here up to milliseconds at the 99th
 * percentile, on one CPU and with no daemon), not the server's reply.
 */
static inline int64_t wl_open_loop_wait(int64_t due, uint64_t *late) {
        int64_t now = wl_now_ns();

        if (now < due) {
                wl_sleep_until_ns(due);
                return wl_now_ns();
        }
        if (now - due > WL_NSEC_PER_MSEC)
                (*late)++;
        return due;
}

static inline int wl_latency_push(struct wl_latencies *l, int64_t ns) {
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 4096;
                int64_t *p = realloc(l->ns, cap * sizeof(*p));

                if (!p) {
                        fprintf(stderr, "out of memory for latencies\n");
                        return -ENOMEM;
                }
                l->ns = p;
                l->cap = cap;
        }
        l->ns[l->n++] = ns;
        return 0;
}

static inline int wl_cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

        return (x > y) - (x < y);
}

/*
 * The quantiles q[0..k) (nearest rank) of n latencies, in µs, to ret[];
 * one sort of a copy, so the series stays in time order for the windows.
 * 0 when empty, -1 when out of memory.
 */
static inline void wl_quantiles_us(const int64_t *ns, size_t n, const double *q, double *ret, size_t k) {
        int64_t *c = n ? malloc(n * sizeof(*c)) : NULL;

        for (size_t j = 0; j < k; j++)
                ret[j] = n ? -1 : 0;
        if (!c)
                return;
        memcpy(c, ns, n * sizeof(*c));
        qsort(c, n, sizeof(*c), wl_cmp_i64);
        for (size_t j = 0; j < k; j++) {
                size_t i = (size_t) (q[j] * (double) n);

                ret[j] = (double) c[i < n ? i : n - 1] / 1e3;
        }
        free(c);
}

/*
 * The steady p99 leaves out the requests of the first WL_STEADY_FROM_S
 * seconds: a daemon that co-locates a pair within a second of its first
 * requests still leaves that second's ~1,000 split round trips in a 10 s
 * run, over 1 % of it, so the run's p99 is the split latency whatever
 * happens after. Both figures are printed: the run's p99 says what the
 * first second costs, the steady one what the placement does after it.
 */
#define WL_STEADY_FROM_S 2

/*
 * The summary both open-loop clients print, in µs: p50, p99 and p999 of
 * the run, and the p99 of its requests after WL_STEADY_FROM_S (0 when the
 * run was shorter). Request n was due at n/rate, so the first rate ×
 * WL_STEADY_FROM_S latencies are that time.
 */
static inline void wl_latency_summary(const struct wl_latencies *l, long rate, double ret[4]) {
        static const double q[3] = { 0.50, 0.99, 0.999 };
        size_t skip = (size_t) rate * WL_STEADY_FROM_S;

        wl_quantiles_us(l->ns, l->n, q, ret, 3);
        ret[3] = 0;
        if (skip < l->n)
                wl_quantiles_us(l->ns + skip, l->n - skip, &q[1], &ret[3], 1);
}
