/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pingpong: two processes (parent and a forked child) bouncing one byte
 * over two pipes, the RPC ping-pong pair of [wake-affine] (wake_affine). Each
 * side wakes the other on every round trip, so the pair runs several times
 * faster on one CPU than split across two (DESIGN.md: ~230k vs ~45k round
 * trips/s on the 2-CPU development machine).
 *
 * Placement modes:
 *   (default)    no affinity calls: wherever the kernel puts them.
 *   --cpus A,B   start the parent on A and the child on B, then reset both
 *                masks to the mask the program started with, so only the
 *                kernel's own placement keeps them split (affinityd leaves
 *                user-narrowed masks alone; a test needs the split without
 *                one). --hold keeps the narrowed masks instead.
 *   --pin CPU    both on one CPU, mask stays narrowed (hand-tuned).
 *
 * Every round trip also records whether both sides ran on the same CPU
 * (sched_getcpu() on each side, the child's through shared memory), so the
 * output says whether and when the kernel re-merged a released pair.
 */

#include "workload.h" /* first: defines _GNU_SOURCE */

#include <getopt.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

struct pp_options {
        struct wl_common_options common;     /* -d -r -p */
        struct wl_pair_placement place;      /* -c -H -P */
        long rate;                           /* -R: round trips/s, 0 = as fast as it can */
};

/* Written by the child, read by the parent: the CPU the child last ran on. */
struct pp_shared {
        _Atomic int child_cpu;
};

static void pp_help(void) {
        printf("Usage: pingpong [OPTIONS]\n"
               "Two processes exchanging one byte over two pipes (RPC ping-pong pair).\n\n"
               "  -d, --duration SEC         run time, 0 = until SIGTERM/SIGINT (default 5)\n"
               "  -r, --report-interval MS   print a progress line every MS ms (default 0: off)\n"
               "  -p, --pid-file FILE        write parent and child PID, one per line, parent\n"
               "                             first, once both run (after any --cpus release)\n"
               "  -c, --cpus A,B             start parent on CPU A and child on CPU B, then reset\n"
               "                             both masks to the starting mask (kernel keeps them\n"
               "                             split or re-merges them: see same_cpu)\n"
               "  -H, --hold                 with --cpus: keep the narrowed masks\n"
               "  -P, --pin CPU              both sides on CPU, mask stays narrowed (hand-tuned)\n"
               "  -R, --rate N               open loop: start a round trip every 1/N s, as a\n"
               "                             client sending at a rate does, and report its\n"
               "                             round-trip latency (default 0: closed loop, as\n"
               "                             fast as it can)\n"
               "  -h, --help                 this help\n\n"
               "Progress: t=SEC rate=R unit=roundtrips/s same_cpu=F cpu_parent=N cpu_child=N\n"
               "Last line: rate=R unit=roundtrips/s roundtrips=N elapsed=SEC rate_2nd_half=R\n"
               "  same_cpu=F same_cpu_2nd_half=F first_merged_s=SEC|-1 remerged=yes|no\n"
               "  migrations_parent=N migrations_child=N mode=free|split|split-held|pinned\n"
               "  pids=PARENT,CHILD\n"
               "  with --rate also: p50_us=F p99_us=F p999_us=F p99_steady_us=F late=N\n"
               "  offered=N (p99_steady: of the round trips after the first 2 s; late:\n"
               "  round trips started over 1 ms behind schedule, which count their\n"
               "  latency from when they were due); progress lines add p99_us=F\n"
               "same_cpu: fraction of round trips where both sides ran on one CPU;\n"
               "first_merged_s: start of the first window (report interval, or 100 ms) with\n"
               "same_cpu >= 0.9; remerged: same_cpu_2nd_half >= 0.9.\n");
}

static int pp_parse_args(int argc, char **argv, struct pp_options *o) {
        static const struct option longopts[] = {
                { "duration",        required_argument, NULL, 'd' },
                { "report-interval", required_argument, NULL, 'r' },
                { "pid-file",        required_argument, NULL, 'p' },
                { "cpus",            required_argument, NULL, 'c' },
                { "hold",            no_argument,       NULL, 'H' },
                { "pin",             required_argument, NULL, 'P' },
                { "rate",            required_argument, NULL, 'R' },
                { "help",            no_argument,       NULL, 'h' },
                {}
        };
        int c;

        *o = (struct pp_options) { .common.duration_s = 5, .place.pin_cpu = -1 };
        while ((c = getopt_long(argc, argv, "d:r:p:c:HP:R:h", longopts, NULL)) >= 0) {
                int r = wl_common_option(c, optarg, &o->common);

                if (r == 0)
                        r = wl_pair_option(c, optarg, &o->place);
                if (r == 0 && c == 'R')
                        r = wl_parse_long(optarg, 0, 10 * 1000 * 1000, &o->rate) < 0 ? -EINVAL : 1;
                if (r == -EINVAL && c == 'c') {
                        fprintf(stderr, "pingpong: --cpus wants two CPUs 'A,B', got '%s'\n", optarg);
                        return -EINVAL;
                }
                if (r < 0) {
                        fprintf(stderr, "pingpong: bad --%s '%s'\n", wl_long_name(longopts, c), optarg);
                        return -EINVAL;
                }
                if (r > 0)
                        continue;
                if (c == 'h') {
                        pp_help();
                        exit(EXIT_SUCCESS);
                }
                return -EINVAL;
        }
        if (wl_no_operands("pingpong", argc, argv) < 0)
                return -EINVAL;
        return wl_pair_check("pingpong", &o->place);
}

static void pp_child(int in_fd, int out_fd, struct pp_shared *sh, const struct wl_pair_placement *pl) {
        char b;

        wl_pair_child_start(pl);
        for (;;) {
                ssize_t n = read(in_fd, &b, 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        _exit(0);
                atomic_store_explicit(&sh->child_cpu, sched_getcpu(), memory_order_relaxed);
                if (write(out_fd, &b, 1) != 1)
                        _exit(0);
        }
}

/* One round trip; returns 1 on success, 0 when interrupted, -errno on a dead peer. */
static int pp_roundtrip(int out_fd, int in_fd) {
        char b = 'x';
        ssize_t n;

        n = write(out_fd, &b, 1);
        if (n != 1)
                return errno == EINTR ? 0 : -EPIPE;
        do {
                n = read(in_fd, &b, 1);
        } while (n < 0 && errno == EINTR && !wl_stop_requested);
        if (n == 1)
                return 1;
        if (n < 0 && errno == EINTR)
                return 0;
        return -EPIPE;
}

int main(int argc, char **argv) {
        struct pp_options o;
        struct wl_series ws = {};
        struct pp_shared *sh;
        cpu_set_t orig;
        int p2c[2], c2p[2];
        pid_t child, me = getpid();
        int r;

        if (pp_parse_args(argc, argv, &o) < 0) {
                fprintf(stderr, "Try 'pingpong --help'.\n");
                return 2;
        }
        wl_stdout_line_buffered();
        wl_install_stop_handlers();

        if (sched_getaffinity(0, sizeof(orig), &orig) < 0) {
                perror("pingpong: sched_getaffinity");
                return 1;
        }
        sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED) {
                perror("pingpong: mmap");
                return 1;
        }
        atomic_init(&sh->child_cpu, -1);
        if (pipe2(p2c, O_CLOEXEC) < 0 || pipe2(c2p, O_CLOEXEC) < 0) {
                perror("pingpong: pipe2");
                return 1;
        }

        if (wl_pair_place_parent("pingpong", &o.place) < 0)
                return 1;

        child = fork();
        if (child < 0) {
                perror("pingpong: fork");
                return 1;
        }
        if (child == 0) {
                close(p2c[1]);
                close(c2p[0]);
                pp_child(p2c[0], c2p[1], sh, &o.place);
        }
        close(p2c[0]);
        close(c2p[1]);

        /* First round trip: both sides are running (on their CPUs if split). */
        r = pp_roundtrip(p2c[1], c2p[0]);
        if (r <= 0) {
                fprintf(stderr, "pingpong: child did not answer (bad CPU in --cpus?)\n");
                close(p2c[1]);
                waitpid(child, NULL, 0);
                return 1;
        }
        if (wl_pair_release("pingpong", &o.place, child, &orig) < 0) {
                close(p2c[1]);
                waitpid(child, NULL, 0);
                return 1;
        }

        long long mig_p0 = 0, mig_c0 = 0, mig_p1 = -1, mig_c1 = -1;
        (void) wl_read_sched_field(me, me, "se.nr_migrations", &mig_p0);
        (void) wl_read_sched_field(child, child, "se.nr_migrations", &mig_c0);

        if (wl_write_pid_file_opt("pingpong", o.common.pid_file, (pid_t[]) { me, child }, 2) < 0) {
                close(p2c[1]);
                waitpid(child, NULL, 0);
                return 1;
        }

        struct wl_windows win;
        wl_windows_start(&win, o.common.duration_s,
                         (o.common.report_interval_ms > 0 ? o.common.report_interval_ms : 100) * WL_NSEC_PER_MSEC);
        const int64_t t0 = win.t0;
        int64_t now = t0;
        uint64_t n = 0, same = 0, prev_n = 0, prev_same = 0;
        double first_merged_s = -1;
        bool dead_peer = false;

        if (wl_series_push(&ws, t0, 0, 0) < 0)
                return 1;
        const int64_t period = o.rate > 0 ? WL_NSEC_PER_SEC / o.rate : 0;
        struct wl_latencies lat = {};
        size_t win_first = 0;
        uint64_t late = 0;

        while (!wl_stop_requested) {
                /* open loop: the n-th round trip is due at t0 + n/rate; its latency
                 * counts from `from` (wl_open_loop_wait()) */
                int64_t from = period > 0 ? wl_open_loop_wait(t0 + (int64_t) n * period, &late) : 0;

                r = pp_roundtrip(p2c[1], c2p[0]);
                if (r < 0) {
                        dead_peer = true;
                        break;
                }
                if (r == 0)
                        break;
                n++;
                if (atomic_load_explicit(&sh->child_cpu, memory_order_relaxed) == sched_getcpu())
                        same++;
                if (period > 0) {
                        now = wl_now_ns();
                        if (wl_latency_push(&lat, now - from) < 0)
                                break;
                } else {
                        if ((n & 15) != 0)
                                continue;
                        now = wl_now_ns();
                }
                if (wl_window_done(&win, now)) {
                        double dt = (double) (now - ws.s[ws.n - 1].t_ns) / 1e9;
                        double same_w = wl_frac(same - prev_same, n - prev_n);

                        if (first_merged_s < 0 && same_w >= 0.9)
                                first_merged_s = (double) (ws.s[ws.n - 1].t_ns - t0) / 1e9;
                        if (o.common.report_interval_ms > 0) {
                                printf("t=%.3f rate=%.1f unit=roundtrips/s same_cpu=%.3f cpu_parent=%d cpu_child=%d",
                                       (double) (now - t0) / 1e9, (double) (n - prev_n) / dt, same_w,
                                       sched_getcpu(), atomic_load(&sh->child_cpu));
                                if (period > 0) {
                                        double p99;

                                        wl_quantiles_us(lat.ns + win_first, lat.n - win_first, (double[]) { 0.99 },
                                                        &p99, 1);
                                        printf(" p99_us=%.1f", p99);
                                }
                                putchar('\n');
                        }
                        win_first = lat.n;
                        if (wl_series_push(&ws, now, n, same) < 0)
                                break;
                        prev_n = n;
                        prev_same = same;
                }
                if (now >= win.t_end)
                        break;
        }
        now = wl_now_ns();

        /* Read the child's counters while it is still alive (blocked in read). */
        (void) wl_read_sched_field(me, me, "se.nr_migrations", &mig_p1);
        if (!dead_peer)
                (void) wl_read_sched_field(child, child, "se.nr_migrations", &mig_c1);
        close(p2c[1]);
        close(c2p[0]);
        waitpid(child, NULL, 0);

        /* Second half: from the last window boundary at or before elapsed/2. */
        const struct wl_sample *half = wl_series_at(&ws, t0 + (now - t0) / 2);
        double elapsed = (double) (now - t0) / 1e9;
        double dt2 = (double) (now - half->t_ns) / 1e9;
        uint64_t n2 = n - half->count, same2 = same - half->same;
        double same_2nd = wl_frac(same2, n2);
        const char *mode = wl_pair_mode(&o.place);

        if (dead_peer)
                fprintf(stderr, "pingpong: child exited early\n");
        printf("rate=%.1f unit=roundtrips/s roundtrips=%llu elapsed=%.3f rate_2nd_half=%.1f "
               "same_cpu=%.3f same_cpu_2nd_half=%.3f first_merged_s=%.3f remerged=%s "
               "migrations_parent=%lld migrations_child=%lld mode=%s pids=%d,%d\n",
               elapsed > 0 ? (double) n / elapsed : 0.0, (unsigned long long) n, elapsed,
               dt2 > 0 ? (double) n2 / dt2 : 0.0, wl_frac(same, n), same_2nd,
               first_merged_s, same_2nd >= 0.9 ? "yes" : "no",
               mig_p1 >= 0 ? mig_p1 - mig_p0 : -1, mig_c1 >= 0 ? mig_c1 - mig_c0 : -1,
               mode, (int) me, (int) child);
        if (period > 0) {
                double q[4];

                wl_latency_summary(&lat, o.rate, q);
                printf("p50_us=%.1f p99_us=%.1f p999_us=%.1f p99_steady_us=%.1f late=%llu offered=%ld\n",
                       q[0], q[1], q[2], q[3], (unsigned long long) late, o.rate);
        }
        free(lat.ns);
        free(ws.s);
        return dead_peer ? 1 : 0;
}
