/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rate-client: an open-loop client of a line protocol at a fixed offered
 * rate, over a unix socket or TCP on 127.0.0.1, one connection. It sends
 * one request every 1/RATE s whether or not the reply before came back in
 * time (a slow reply queues the next ones, which count their latency from
 * when they were due: workload.h, wl_open_loop_wait()), reads the reply up
 * to its first newline, and prints the latency quantiles:
 *
 *   rate=R offered=N requests=N p50_us=F p99_us=F p999_us=F p99_steady_us=F late=N
 *
 * redis-benchmark and memcaslap have no rate of their own; production
 * clients send at a rate rather than as fast as they can loop, and a
 * pair's tail at a moderate rate is what co-location changes there.
 *
 *   rate-client --unix /path/redis.sock --rate 1000 --duration 10 'GET k'
 *   rate-client --port 11211 --rate 3000 'version'
 *
 * --trace FILE writes each request's send time and latency after the run
 * (bench/watch-cost.sh lays them against the daemon's passes and bursts).
 */
#include "tests/workloads/workload.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct rc_options {
        const char *unix_path;
        long port;
        long rate;
        double duration_s;
        const char *request;
        const char *trace;
};

static void rc_help(void) {
        printf("Usage: rate-client (--unix PATH | --port N) --rate N [--duration SEC] REQUEST\n"
               "Sends REQUEST (a line; CR LF appended) at a fixed rate over one connection\n"
               "and reads each reply up to its first newline.\n\n"
               "  -u, --unix PATH     connect to a unix socket\n"
               "  -P, --port N        connect to TCP 127.0.0.1:N\n"
               "  -R, --rate N        requests per second (open loop)\n"
               "  -d, --duration SEC  run time (default 10)\n"
               "  -t, --trace FILE    write each request's send time (CLOCK_BOOTTIME s)\n"
               "                      and latency (µs), one per line, at the end\n"
               "  -h, --help          this help\n\n"
               "Last line: rate=R offered=N requests=N p50_us=F p99_us=F p999_us=F\n"
               "           p99_steady_us=F (after the first 2 s) late=N\n");
}

static int rc_parse(int argc, char **argv, struct rc_options *o) {
        static const struct option longopts[] = {
                { "unix",     required_argument, NULL, 'u' },
                { "port",     required_argument, NULL, 'P' },
                { "rate",     required_argument, NULL, 'R' },
                { "duration", required_argument, NULL, 'd' },
                { "trace",    required_argument, NULL, 't' },
                { "help",     no_argument,       NULL, 'h' },
                {}
        };
        int c;

        *o = (struct rc_options) { .duration_s = 10 };
        while ((c = getopt_long(argc, argv, "u:P:R:d:t:h", longopts, NULL)) >= 0) {
                int r = 0;

                switch (c) {
                case 'u': o->unix_path = optarg; break;
                case 'P': r = wl_parse_long(optarg, 1, 65535, &o->port); break;
                case 'R': r = wl_parse_long(optarg, 1, 10 * 1000 * 1000, &o->rate); break;
                case 'd': r = wl_parse_double(optarg, 0.1, 1e6, &o->duration_s); break;
                case 't': o->trace = optarg; break;
                case 'h': rc_help(); exit(EXIT_SUCCESS);
                default: return -EINVAL;
                }
                if (r < 0) {
                        fprintf(stderr, "rate-client: bad --%s '%s'\n", wl_long_name(longopts, c), optarg);
                        return -EINVAL;
                }
        }
        if (optind != argc - 1 || !o->rate || !o->unix_path == !o->port) {
                fprintf(stderr, "rate-client: want one of --unix/--port, --rate and one REQUEST\n");
                return -EINVAL;
        }
        o->request = argv[optind];
        return 0;
}

static int rc_connect(const struct rc_options *o) {
        union {
                struct sockaddr sa;
                struct sockaddr_un un;
                struct sockaddr_in in;
        } addr = {};
        socklen_t len;
        int fd, one = 1;

        if (o->unix_path) {
                if (strlen(o->unix_path) >= sizeof(addr.un.sun_path))
                        return -ENAMETOOLONG;
                addr.un.sun_family = AF_UNIX;
                strcpy(addr.un.sun_path, o->unix_path);
                len = sizeof(addr.un);
        } else {
                addr.in = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons((uint16_t) o->port),
                                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
                len = sizeof(addr.in);
        }
        fd = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* one small request at a time: Nagle would hold it for the last ACK */
        if (addr.sa.sa_family == AF_INET)
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, &addr.sa, len) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

/* One request and its reply line; 0 on success, -errno otherwise. */
static int rc_exchange(int fd, const char *req, size_t len) {
        char buf[512];

        if (write(fd, req, len) != (ssize_t) len)
                return -EPIPE;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n < 0 && errno == EINTR && !wl_stop_requested)
                        continue;
                if (n <= 0)
                        return n == 0 ? -ECONNRESET : -errno;
                if (memchr(buf, '\n', (size_t) n))
                        return 0;
        }
}

/*
 * The trace: when each request's latency counts from (its due time, or
 * when the client's timer woke it: wl_open_loop_wait()), moved to
 * CLOCK_BOOTTIME, the clock of the daemon's debug lines (when a pass and a
 * wake-up burst ran), so that slow requests can be laid against them.
 * Written after the run, not during it: a write per request would be the
 * client's own tail. boot_off_ns: CLOCK_BOOTTIME minus CLOCK_MONOTONIC.
 */
static int rc_write_trace(const char *path, const struct wl_latencies *lat, const struct wl_latencies *from,
                          int64_t boot_off_ns) {
        FILE *f = fopen(path, "we");
        bool bad;

        if (!f)
                return -errno;
        for (size_t n = 0; n < lat->n && n < from->n; n++)
                fprintf(f, "%.6f %.1f\n", (double) (from->ns[n] + boot_off_ns) / 1e9, (double) lat->ns[n] / 1e3);
        bad = ferror(f);
        return fclose(f) == 0 && !bad ? 0 : -EIO;
}

int main(int argc, char **argv) {
        struct rc_options o;
        struct wl_latencies lat = {}, sent = {};
        char req[256];
        size_t req_len;
        double q[4];
        uint64_t late = 0;
        int fd, r = 0;

        if (rc_parse(argc, argv, &o) < 0) {
                fprintf(stderr, "Try 'rate-client --help'.\n");
                return 2;
        }
        req_len = (size_t) snprintf(req, sizeof(req), "%s\r\n", o.request);
        if (req_len >= sizeof(req)) {
                fprintf(stderr, "rate-client: request too long\n");
                return 2;
        }
        wl_stdout_line_buffered();
        wl_install_stop_handlers();
        fd = rc_connect(&o);
        if (fd < 0) {
                fprintf(stderr, "rate-client: connect: %s\n", strerror(-fd));
                return 1;
        }
        const int64_t period = WL_NSEC_PER_SEC / o.rate, t0 = wl_now_ns();
        const int64_t boot_off = wl_clock_ns(CLOCK_BOOTTIME) - wl_now_ns();
        const int64_t t_end = wl_end_ns(t0, o.duration_s);
        int64_t now = t0;

        for (uint64_t n = 0; !wl_stop_requested && now < t_end; n++) {
                int64_t from = wl_open_loop_wait(t0 + (int64_t) n * period, &late);

                r = rc_exchange(fd, req, req_len);
                if (r < 0)
                        break;
                now = wl_now_ns();
                r = wl_latency_push(&lat, now - from);
                if (r >= 0 && o.trace)
                        r = wl_latency_push(&sent, from);
                if (r < 0)
                        break;
        }
        close(fd);
        if (r < 0 && !wl_stop_requested)
                fprintf(stderr, "rate-client: %s after %zu requests\n", strerror(-r), lat.n);
        if (o.trace) {
                int t = rc_write_trace(o.trace, &lat, &sent, boot_off);

                if (t < 0) {
                        fprintf(stderr, "rate-client: %s: %s\n", o.trace, strerror(-t));
                        r = r < 0 ? r : t;
                }
        }
        wl_latency_summary(&lat, o.rate, q);
        printf("rate=%.1f offered=%ld requests=%zu p50_us=%.1f p99_us=%.1f p999_us=%.1f p99_steady_us=%.1f "
               "late=%llu\n", now > t0 ? (double) lat.n * 1e9 / (double) (now - t0) : 0.0, o.rate, lat.n, q[0],
               q[1], q[2], q[3], (unsigned long long) late);
        free(lat.ns);
        free(sent.ns);
        return r < 0 && !wl_stop_requested ? 1 : 0;
}
