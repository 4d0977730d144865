/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stream: a pipelined producer/consumer pair where both sides are busy. The
 * producer (parent) spends --producer-us of CPU making each message, the
 * consumer (forked child) --consumer-us handling it, and a credit pipe
 * limits the messages in flight to --depth, so the two sides wake each
 * other about once per message in both directions: it looks like a
 * ping-pong pair to a wake-up graph, but its combined utilisation is well
 * above one CPU. Co-locating it halves its throughput at best (measured here:
 * "co-locating one here costs about 25 %"), so affinityd must leave it alone.
 *
 * Work is a fixed number of spin loops (calibrated to µs at start, or given
 * with --loops-per-us so every run of a benchmark does the same work).
 * Placement modes are those of pingpong: default, --cpus A,B [--hold], --pin.
 */

#include "workload.h" /* first: defines _GNU_SOURCE */

#include <getopt.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define STREAM_MAX_MSG 4096

struct stream_options {
        struct wl_common_options common;     /* -d -r -p -L -C */
        struct wl_pair_placement place;      /* -c -H -P */
        double producer_us, consumer_us;
        long depth;
        long msg_size;
        double jitter_pct;      /* work per message uniform in w*(1 +- jitter) */
};

struct stream_shared {
        _Atomic int consumer_cpu;
};

static void stream_help(void) {
        printf("Usage: stream [OPTIONS]\n"
               "Pipelined producer/consumer pair, both sides busy (combined load > 1 CPU).\n\n"
               "  -d, --duration SEC         run time, 0 = until SIGTERM/SIGINT (default 5)\n"
               "  -r, --report-interval MS   progress line every MS ms (default 0: off)\n"
               "  -p, --pid-file FILE        write producer and consumer PID, one per line\n"
               "  -w, --work-us US           CPU work per message on each side (default 50)\n"
               "      --producer-us US       producer work per message (overrides --work-us)\n"
               "      --consumer-us US       consumer work per message (overrides --work-us)\n"
               "  -D, --depth N              messages in flight (default 2)\n"
               "  -j, --jitter PCT           vary the work per message uniformly by +-PCT %%\n"
               "                             (default 0); with --depth 2+ the queue then runs\n"
               "                             empty and full now and then, so both sides sleep\n"
               "                             and wake each other while staying pipelined\n"
               "  -s, --msg-size BYTES       message size, 1..%d (default 64)\n"
               "  -L, --loops-per-us X       spin loops per µs (default: calibrate at start)\n"
               "  -C, --calibrate            print loops_per_us=X and exit\n"
               "  -c, --cpus A,B             start producer on A, consumer on B, then reset masks\n"
               "  -H, --hold                 with --cpus: keep the narrowed masks (hand-tuned)\n"
               "  -P, --pin CPU              both on one CPU, mask stays narrowed\n"
               "  -h, --help                 this help\n\n"
               "Progress: t=SEC rate=R unit=messages/s util_producer=F util_consumer=F same_cpu=F\n"
               "Last line: rate=R unit=messages/s messages=N elapsed=SEC rate_2nd_half=R\n"
               "  util_producer=F util_consumer=F util_total=F same_cpu=F\n"
               "  migrations_producer=N migrations_consumer=N sleeps_producer=PER_S\n"
               "  sleeps_consumer=PER_S producer_us=US consumer_us=US\n"
               "  depth=N jitter_pct=PCT loops_per_us=X mode=free|split|split-held|pinned\n"
               "  pids=P,C\n"
               "util_*: CPU time / elapsed (1.0 = one full CPU), from schedstat;\n"
               "sleeps_*: voluntary context switches per second (each one is a wake-up by\n"
               "the other side, the signal a wake-up graph sees).\n",
               STREAM_MAX_MSG);
}

enum {
        OPT_PRODUCER_US = 0x100,
        OPT_CONSUMER_US,
};

static int stream_parse_args(int argc, char **argv, struct stream_options *o) {
        static const struct option longopts[] = {
                { "duration",        required_argument, NULL, 'd' },
                { "report-interval", required_argument, NULL, 'r' },
                { "pid-file",        required_argument, NULL, 'p' },
                { "work-us",         required_argument, NULL, 'w' },
                { "producer-us",     required_argument, NULL, OPT_PRODUCER_US },
                { "consumer-us",     required_argument, NULL, OPT_CONSUMER_US },
                { "depth",           required_argument, NULL, 'D' },
                { "msg-size",        required_argument, NULL, 's' },
                { "jitter",          required_argument, NULL, 'j' },
                { "loops-per-us",    required_argument, NULL, 'L' },
                { "calibrate",       no_argument,       NULL, 'C' },
                { "cpus",            required_argument, NULL, 'c' },
                { "hold",            no_argument,       NULL, 'H' },
                { "pin",             required_argument, NULL, 'P' },
                { "help",            no_argument,       NULL, 'h' },
                {}
        };
        double work = 50, prod = -1, cons = -1;
        int c;

        *o = (struct stream_options) { .common.duration_s = 5, .depth = 2, .msg_size = 64, .place.pin_cpu = -1 };
        while ((c = getopt_long(argc, argv, "d:r:p:w:D:s:j:L:Cc:HP:h", longopts, NULL)) >= 0) {
                int r = wl_common_option(c, optarg, &o->common);

                if (r == 0)
                        r = wl_pair_option(c, optarg, &o->place);
                if (r == 0) {
                        switch (c) {
                        case 'w':
                                r = wl_parse_double(optarg, 0, 1e6, &work);
                                break;
                        case OPT_PRODUCER_US:
                                r = wl_parse_double(optarg, 0, 1e6, &prod);
                                break;
                        case OPT_CONSUMER_US:
                                r = wl_parse_double(optarg, 0, 1e6, &cons);
                                break;
                        case 'D':
                                r = wl_parse_long(optarg, 1, 1000, &o->depth);
                                break;
                        case 's':
                                r = wl_parse_long(optarg, 1, STREAM_MAX_MSG, &o->msg_size);
                                break;
                        case 'j':
                                r = wl_parse_double(optarg, 0, 100, &o->jitter_pct);
                                break;
                        case 'h':
                                stream_help();
                                exit(EXIT_SUCCESS);
                        default:
                                return -EINVAL;
                        }
                }
                if (r < 0) {
                        fprintf(stderr, "stream: bad value '%s' for an option\n", optarg);
                        return -EINVAL;
                }
        }
        if (wl_no_operands("stream", argc, argv) < 0 || wl_pair_check("stream", &o->place) < 0)
                return -EINVAL;
        o->producer_us = prod >= 0 ? prod : work;
        o->consumer_us = cons >= 0 ? cons : work;
        return 0;
}

/* read() exactly size bytes; 1 = done, 0 = EOF or stop, -errno on error. */
static int stream_read_full(int fd, char *buf, size_t size) {
        size_t off = 0;

        while (off < size) {
                ssize_t n = read(fd, buf + off, size - off);
                if (n < 0 && errno == EINTR) {
                        if (wl_stop_requested)
                                return 0;
                        continue;
                }
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                off += (size_t) n;
        }
        return 1;
}

/* Loops for one message: base +- jitter, from a per-side xorshift state. */
static uint64_t stream_loops(uint64_t base, double jitter_pct, uint64_t *rng) {
        uint64_t x = *rng;

        if (jitter_pct <= 0)
                return base;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *rng = x;
        double u = (double) (x >> 11) / 9007199254740992.0; /* [0, 1) */
        return (uint64_t) ((double) base * (1.0 + jitter_pct / 100.0 * (2.0 * u - 1.0)));
}

static void stream_consumer(int data_fd, int credit_fd, const struct stream_options *o,
                            uint64_t loops, struct stream_shared *sh) {
        char buf[STREAM_MAX_MSG];
        uint64_t x = 1, rng = 0x2545f4914f6cdd1dULL;

        wl_pair_child_start(&o->place);
        for (;;) {
                if (stream_read_full(data_fd, buf, (size_t) o->msg_size) <= 0)
                        _exit(0);
                atomic_store_explicit(&sh->consumer_cpu, sched_getcpu(), memory_order_relaxed);
                x = wl_spin(stream_loops(loops, o->jitter_pct, &rng), x + (uint64_t) buf[0]);
                char credit = (char) x;
                if (write(credit_fd, &credit, 1) != 1)
                        _exit(0);
        }
}

static long long stream_run_ns(pid_t pid) {
        struct wl_schedstat st;

        return wl_read_schedstat(pid, pid, &st) < 0 ? -1 : st.run_ns;
}

int main(int argc, char **argv) {
        struct stream_options o;
        struct stream_shared *sh;
        struct wl_series ws = {};
        cpu_set_t orig;
        int data[2], credit[2];
        pid_t child, me = getpid();

        if (stream_parse_args(argc, argv, &o) < 0) {
                fprintf(stderr, "Try 'stream --help'.\n");
                return 2;
        }
        wl_stdout_line_buffered();
        if (wl_loops_per_us(&o.common) > 0)
                return 0;
        wl_install_stop_handlers();

        const uint64_t prod_loops = (uint64_t) (o.producer_us * o.common.loops_per_us);
        const uint64_t cons_loops = (uint64_t) (o.consumer_us * o.common.loops_per_us);

        if (sched_getaffinity(0, sizeof(orig), &orig) < 0) {
                perror("stream: sched_getaffinity");
                return 1;
        }
        sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED) {
                perror("stream: mmap");
                return 1;
        }
        atomic_init(&sh->consumer_cpu, -1);
        if (pipe2(data, O_CLOEXEC) < 0 || pipe2(credit, O_CLOEXEC) < 0) {
                perror("stream: pipe2");
                return 1;
        }
        if (wl_pair_place_parent("stream", &o.place) < 0)
                return 1;
        child = fork();
        if (child < 0) {
                perror("stream: fork");
                return 1;
        }
        if (child == 0) {
                close(data[1]);
                close(credit[0]);
                stream_consumer(data[0], credit[1], &o, cons_loops, sh);
        }
        close(data[0]);
        close(credit[1]);

        char msg[STREAM_MAX_MSG] = { 'm' }, cbuf[1024];
        /* Handshake: one empty-work message, so both sides run before the
         * release and the pid file. */
        if (write(data[1], msg, (size_t) o.msg_size) != o.msg_size ||
            stream_read_full(credit[0], cbuf, 1) <= 0) {
                fprintf(stderr, "stream: consumer did not answer (bad CPU in --cpus?)\n");
                close(data[1]);
                waitpid(child, NULL, 0);
                return 1;
        }
        if (wl_pair_release("stream", &o.place, child, &orig) < 0 ||
            wl_write_pid_file_opt("stream", o.common.pid_file, (pid_t[]) { me, child }, 2) < 0) {
                close(data[1]);
                waitpid(child, NULL, 0);
                return 1;
        }

        long long mig_p0 = 0, mig_c0 = 0, mig_p1 = -1, mig_c1 = -1;
        long long vol_p0 = 0, vol_c0 = 0, vol_p1 = -1, vol_c1 = -1;
        (void) wl_read_sched_field(me, me, "se.nr_migrations", &mig_p0);
        (void) wl_read_sched_field(child, child, "se.nr_migrations", &mig_c0);
        (void) wl_read_sched_field(me, me, "nr_voluntary_switches", &vol_p0);
        (void) wl_read_sched_field(child, child, "nr_voluntary_switches", &vol_c0);
        long long run_p0 = stream_run_ns(me), run_c0 = stream_run_ns(child);
        long long run_pw = run_p0, run_cw = run_c0;

        struct wl_windows win;
        wl_windows_start(&win, o.common.duration_s,
                         (o.common.report_interval_ms > 0 ? o.common.report_interval_ms : 100) * WL_NSEC_PER_MSEC);
        const int64_t t0 = win.t0;
        int64_t now = t0;
        uint64_t done = 0, same = 0, prev_done = 0, x = 7, rng = 0x9e3779b97f4a7c15ULL;
        long credits = o.depth;
        bool dead_peer = false;

        if (wl_series_push(&ws, t0, 0, 0) < 0)
                return 1;
        while (!wl_stop_requested) {
                x = wl_spin(stream_loops(prod_loops, o.jitter_pct, &rng), x);
                msg[1] = (char) x;
                while (credits == 0) {
                        ssize_t n = read(credit[0], cbuf, sizeof(cbuf));
                        if (n < 0 && errno == EINTR)
                                break;
                        if (n <= 0) {
                                dead_peer = true;
                                break;
                        }
                        credits += n;
                        done += (uint64_t) n;
                        if (atomic_load_explicit(&sh->consumer_cpu, memory_order_relaxed) == sched_getcpu())
                                same += (uint64_t) n;
                }
                if (credits == 0)
                        break;
                if (write(data[1], msg, (size_t) o.msg_size) != o.msg_size) {
                        dead_peer = errno != EINTR;
                        break;
                }
                credits--;

                now = wl_now_ns();
                if (wl_window_done(&win, now)) {
                        if (o.common.report_interval_ms > 0) {
                                double dt = (double) (now - ws.s[ws.n - 1].t_ns) / 1e9;
                                long long rp = stream_run_ns(me), rc = stream_run_ns(child);
                                printf("t=%.3f rate=%.1f unit=messages/s util_producer=%.3f util_consumer=%.3f same_cpu=%.3f\n",
                                       (double) (now - t0) / 1e9, (double) (done - prev_done) / dt,
                                       (double) (rp - run_pw) / 1e9 / dt, (double) (rc - run_cw) / 1e9 / dt,
                                       wl_frac(same - ws.s[ws.n - 1].same, done - prev_done));
                                run_pw = rp;
                                run_cw = rc;
                        }
                        if (wl_series_push(&ws, now, done, same) < 0)
                                break;
                        prev_done = done;
                }
                if (now >= win.t_end)
                        break;
        }
        now = wl_now_ns();
        long long run_p1 = stream_run_ns(me), run_c1 = dead_peer ? -1 : stream_run_ns(child);
        (void) wl_read_sched_field(me, me, "se.nr_migrations", &mig_p1);
        (void) wl_read_sched_field(me, me, "nr_voluntary_switches", &vol_p1);
        if (!dead_peer) {
                (void) wl_read_sched_field(child, child, "se.nr_migrations", &mig_c1);
                (void) wl_read_sched_field(child, child, "nr_voluntary_switches", &vol_c1);
        }
        close(data[1]);
        close(credit[0]);
        waitpid(child, NULL, 0);

        double elapsed = (double) (now - t0) / 1e9;
        const struct wl_sample *half = wl_series_at(&ws, t0 + (now - t0) / 2);
        double dt2 = (double) (now - half->t_ns) / 1e9;
        double up = elapsed > 0 && run_p1 >= 0 ? (double) (run_p1 - run_p0) / 1e9 / elapsed : -1;
        double uc = elapsed > 0 && run_c1 >= 0 ? (double) (run_c1 - run_c0) / 1e9 / elapsed : -1;
        const char *mode = wl_pair_mode(&o.place);

        if (dead_peer)
                fprintf(stderr, "stream: consumer exited early\n");
        printf("rate=%.1f unit=messages/s messages=%llu elapsed=%.3f rate_2nd_half=%.1f "
               "util_producer=%.3f util_consumer=%.3f util_total=%.3f same_cpu=%.3f "
               "migrations_producer=%lld migrations_consumer=%lld sleeps_producer=%.1f sleeps_consumer=%.1f "
               "producer_us=%g consumer_us=%g "
               "depth=%ld jitter_pct=%g loops_per_us=%.3f mode=%s pids=%d,%d\n",
               elapsed > 0 ? (double) done / elapsed : 0.0, (unsigned long long) done, elapsed,
               dt2 > 0 ? (double) (done - half->count) / dt2 : 0.0,
               up, uc, up >= 0 && uc >= 0 ? up + uc : -1, wl_frac(same, done),
               mig_p1 >= 0 ? mig_p1 - mig_p0 : -1, mig_c1 >= 0 ? mig_c1 - mig_c0 : -1,
               elapsed > 0 && vol_p1 >= 0 ? (double) (vol_p1 - vol_p0) / elapsed : -1,
               elapsed > 0 && vol_c1 >= 0 ? (double) (vol_c1 - vol_c0) / elapsed : -1,
               o.producer_us, o.consumer_us, o.depth, o.jitter_pct, o.common.loops_per_us, mode, (int) me, (int) child);
        free(ws.s);
        return dead_peer ? 1 : 0;
}
