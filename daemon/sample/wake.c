/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The wake sampler: sched:sched_waking through perf, one event and one
 * ring buffer per online CPU, read from the sd-event loop; falls back to
 * wake-fallback.c when perf is not permitted. Beside it, in its group and
 * ring, sched:sched_switch times the response times at period 1
 * (switch_open()). See wake.h for the contract.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "common/util.h"
#include "sample/wake-internal.h"
#include "sample/wake.h"

/*
 * Ring buffer per CPU: 64 data pages (256 KiB) hold ~4100 samples of 64
 * bytes; the loop is woken at half full. Under a wake-up storm the daemon
 * competes for CPU with the storm, and a 128 KiB ring overflowed here
 * (a pinned pipe ping-pong, ~400k wake-ups/s, period 1) before the loop
 * got to run; lost samples are counted and make the period grow. Big
 * machines get smaller rings so all rings stay within RING_BYTES_TOTAL
 * (wake_ring_pages(): 64 pages to 128 CPUs, 32 at 256, 8 at 1,024). The
 * kernel counts a ring against perf_event_mlock_kb times the online CPUs
 * per user (516 KiB a CPU by default), the excess against RLIMIT_MEMLOCK
 * unless the process has CAP_IPC_LOCK; the unit's LimitMEMLOCK= covers all
 * rings at any size. When mmap fails the size is halved down to one page.
 */
#define RING_PAGES_DEFAULT 64
#define RING_BYTES_TOTAL (UINT64_C(32) << 20)

/* How often the period is reconsidered from the drain path. Short, so a
 * wake-up storm is throttled within a fraction of a second. */
#define ADAPT_WINDOW_USEC (250 * USEC_PER_MSEC)
/* Largest period: 16M wake-ups per sample would need an absurd storm. */
#define PERIOD_MAX (UINT64_C(1) << 24)
/*
 * After samples were lost the period is not lowered for this long. Loss
 * means the loop did not get to run before a ring filled, which is what a
 * wake-up storm on a busy machine does: measured here with a pinned pipe
 * ping-pong (~400k wake-ups/s) next to two CPU hogs, the period went
 * 8 → 4 half a second after the loss stopped and lost ~190k samples again
 * a second later.
 */
#define LOSS_HOLD_USEC (5 * USEC_PER_SEC)

/*
 * Duty cycle. An enabled sched_waking event costs every wake-up on the
 * machine even when it is not sampled: a pinned pipe ping-pong (~490k
 * round trips/s on one CPU, 1.07 sched_waking each) ran 3.7 % slower with
 * the events always enabled at the adaptive period, 0.07 µs per wake-up
 * (bench/wake-cost.sh, 7 interleaved runs), which alone kept the
 * co-located pair under 0.95x hand-pinned. So the events are enabled only
 * during a short burst before each pass of the caller
 * (wake_sampler_edges()), and disabled (PERF_EVENT_IOC_DISABLE) between.
 *
 * Opening and closing them per burst cost a third of the daemon's CPU on
 * an idle machine (perf record of the daemon with 10,000 idle threads):
 * the first event on a tracepoint registers its probe, which patches
 * kernel text with an IPI to every CPU (smp_call_function_many_cond), the
 * last one's close patches it back, and each burst faulted in fresh ring
 * pages. Two things keep that off the common case:
 *
 *  - The quiet gate. A wake-up that matters to a pair puts the wakee on
 *    a CPU: a context switch. Right before a burst the machine's switch
 *    rate since the last look (/proc/stat "ctxt") is compared with the
 *    lowest WakeRate= of the pair policies: a pair at that rate each way
 *    switches twice as often, so below it no pair can be there, the burst
 *    is skipped and the pass folds an observed zero (edges decay as if
 *    sampled). An idle machine (60-95 switches/s here, under the shipped
 *    100/s) then opens nothing. A pass brought forward for a new process
 *    always gets its burst; with no pair policy there are no bursts.
 *
 *  - Parking. Between bursts the events are disabled
 *    (PERF_EVENT_IOC_DISABLE), not closed, while the machine wakes fewer
 *    than PARK_EVENTS_MAX_PER_S tasks a second. A disabled event keeps the
 *    probe registered: each wake-up then makes one call that finds no
 *    enabled event on its CPU and returns (perf_trace_##call():
 *    hlist_empty()), ~7 ns here (bench/wake-cost.sh: a pinned ping-pong
 *    at ~470k wake-ups/s ran 0.7 % slower with parked events than with
 *    closed ones). Above that rate the calls cost more than reopening,
 *    and the events are closed after each burst. Re-enabling clears a
 *    throttle (event_sched_in()) and each burst resets the count, so
 *    nothing carries over but the remainder of a sample period
 *    (tests/test-wake.c, storm test).
 *
 *  - The settled stride (wake_sampler_set_stride()). Once the manager's
 *    passes change nothing, a burst a pass only confirms the placement:
 *    bursts come before one call in `stride`, and at once again when the
 *    busy threads in /proc are not those of the last burst (wake-hot.c).
 *    Skipped calls keep the edges as the last burst left them.
 *
 * 100 ms of every 1 s pass: 10 % of the cost, and at the detector's
 * WakeRate= floor (100/s) an edge still gets ~10 wake-ups per burst.
 * The burst ends BURST_MARGIN_USEC before the next expected call, so the
 * pass sees fresh data: a pair that started during the off-time is found
 * at the same pass as with continuous sampling. Rates are counts over the
 * on-time, so they need no other correction.
 */
#define BURST_USEC_DEFAULT (100 * USEC_PER_MSEC)
#define BURST_MARGIN_USEC (30 * USEC_PER_MSEC)
/* A thread is hot (wake-hot.c) from the lowest WakeRate= over HOT_SHARE: a
 * member of a pair at the floor switches at least at the floor, and half
 * of it leaves room for the snapshot's noise. (The quiet gate needs no
 * such share: a pair at the floor switches twice the floor.) */
#define HOT_SHARE 2
/* Wake-ups/s (all CPUs) above which events are closed between bursts, not parked:
 * 100k × ~7 ns is 0.07 % of a CPU, about a fifth of what reopening costs. */
#define PARK_EVENTS_MAX_PER_S 100000.0
/* Cadence assumed until the caller's is measured: the daemon's default interval. */
#define CADENCE_USEC_DEFAULT USEC_PER_SEC
#define CADENCE_USEC_MIN (10 * USEC_PER_MSEC)
#define CADENCE_USEC_MAX (60 * USEC_PER_SEC)
/* The longest settled stride wake_sampler_stride_for_share() gives: at a
 * 10 ms cadence and 100 ms bursts, a share of 1/200 asks for 2,000 calls */
#define STRIDE_MAX 10000u
/*
 * Per-CPU samples/s are kept under perf_event_max_sample_rate / 4: the
 * kernel throttles an event that takes more than max_sample_rate/HZ
 * samples in one tick, and wake-ups come in clumps within a tick.
 */
#define KERNEL_RATE_SHARE 4
/*
 * Timed wake-ups and switch-ins kept per burst for the response times
 * (wake_edge_table_time()): 24 bytes each, 1.5 MiB. A burst of 100 ms at
 * period 1 under the default budget (200k wake-ups/s sampled) holds ~20k
 * wake-ups and about as many switch-ins; the switch-ins are not in the
 * budget, which sets the wake-up event's period: at any period above 1
 * they are not sampled (switch_arm()).
 */
#define TIMED_MAX 65536

enum wake_mode {
        WAKE_MODE_PERF,
        WAKE_MODE_FALLBACK,
        WAKE_MODE_NONE,
};

struct wake_cpu {
        int cpu;
        int fd;                    /* -1: not open */
        int switch_fd;             /* sched_switch, in fd's group and ring; -1: none (no response times) */
        bool switch_on;            /* not PERF_EVENT_IOC_DISABLE'd: it follows fd's enable */
        void *base;                /* mmap: one meta page + data */
        size_t mmap_size;
        uint8_t *data;
        uint64_t data_size;        /* power of two */
        sd_event_source *source;

        bool enabled;              /* PERF_EVENT_IOC_ENABLE'd: in a burst */
        uint64_t period;           /* sample period of this CPU's event */
        uint64_t armed_period;     /* the period the kernel's event has */
        uint64_t hold_until_usec;  /* no lowering of the period before this (throttle/loss) */
        double events_per_s;       /* sched_waking rate on this CPU, last burst (exact count) */
        uint64_t burst_samples, burst_lost, burst_throttled;
};

struct wake_sampler {
        char *root;
        enum wake_mode mode;
        char source[256];
        char perf_error[128];

        /* perf */
        struct wake_tp_format fmt;
        struct wake_tp_format switch_fmt;   /* id -1: not loaded (switch_error says why) */
        char switch_error[96];
        struct wake_cpu *cpus;     /* index = CPU number, n_cpu_slots entries */
        int n_cpu_slots;
        unsigned n_open;
        size_t ring_pages;
        size_t page_size;
        sd_event *event;
        uint8_t *scratch;          /* a record that wraps around the ring end is copied here */

        uint64_t period, min_period, max_samples_per_s;
        bool adaptive;
        double park_max_per_s;     /* PARK_EVENTS_MAX_PER_S unless set (wake_sampler_set_park_max()) */
        double burst_events_per_s; /* all CPUs' wake-ups/s in the last burst, kept past closing */

        /* adaptation window */
        uint64_t adapt_start_usec;
        uint64_t hold_until_usec;  /* no lowering of the period before this (recent loss) */
        uint64_t adapt_samples, adapt_lost, adapt_throttled;
        double adapt_events;

        /* status window (closed by wake_sampler_edges) */
        uint64_t win_start_usec;
        uint64_t win_samples;
        double win_events;
        uint64_t win_lost;
        uint64_t win_drain_ns;
        double events_per_s, samples_per_s, drain_cpu_frac;

        uint64_t samples, lost, throttled, period_changes;

        /* duty cycle (burst_usec 0: events always open) */
        cpumask_t online;
        int n_cpus_topo;
        uint64_t burst_usec;
        bool on;                   /* events are open */
        uint64_t on_since_usec;
        uint64_t burst_start_usec;
        uint64_t burst_end_usec;   /* when the last burst ended (0: none yet) */
        uint64_t fold_on_usec;     /* on-time not yet folded into the rates */
        uint64_t win_on_usec;      /* on-time in the status window */
        uint64_t cadence_usec;     /* measured time between wake_sampler_edges() calls */
        uint64_t last_call_usec;   /* CLOCK_MONOTONIC of the last call */
        unsigned n_calls;
        bool early_call;           /* the next call is out of cadence (wake_sampler_expect_call(),
                                    * wake_sampler_expect_unsampled_call()) */
        bool last_fresh;           /* the last call's edges are of a burst since the one before */
        sd_event_source *burst_timer;
        uint64_t bursts, burst_open_errors;
        uint64_t opens;            /* perf_event_open() calls that succeeded */

        /* quiet gate */
        double floor_per_s;        /* lowest WakeRate= of the pair policies; < 0: none, 0: no gate */
        uint64_t ctxt, ctxt_usec;  /* /proc/stat ctxt at the last look, and when */
        double switches_per_s;     /* machine-wide, since the look before */
        uint64_t quiet_skips;      /* bursts skipped as quiet */
        bool quiet_since_fold;     /* a burst was skipped since the edges were last folded */
        double duty_frac;          /* measured on-time fraction, last status window */

        /* settled stride (wake_sampler_set_stride()) */
        unsigned stride;           /* a burst before every stride-th call; 1: before each */
        unsigned calls_since_burst; /* calls since the last one a burst fed */
        bool hot_moved;            /* the last call's threads are not those of the last burst */
        bool hot_repinned;         /* the last call saw a thread of a pair at the last burst with another
                                    * CPU mask (WAKE_HOT_REPINNED), a burst-fed call too */
        bool tasks_given;          /* wake_sampler_set_tasks() since the last call */
        uint64_t settled_skips;    /* bursts skipped by the stride */
        struct wake_hot hot;       /* the threads that could be in a pair at the last burst */

        /* this burst's wake-ups with their times, while all are sampled */
        struct wake_timed *timed;
        size_t n_timed, timed_allocated;
        bool timed_ok;             /* every wake-up of the burst so far is in timed */

        /* edges */
        struct wake_edge_table table;
        struct wake_edge *out;
        size_t out_allocated, n_out;
        uint64_t last_edges_usec;

        /* fallback */
        struct wake_fallback *fallback;
        const struct task *tasks;
        size_t n_tasks;
};

static uint64_t thread_cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* ---- tracepoint format ---- */

static int parse_int_after(const char *s, const char *key, int *ret) {
        const char *p = strstr(s, key);
        char *end;
        long v;

        if (!p)
                return -EBADMSG;
        p += strlen(key);
        errno = 0;
        v = strtol(p, &end, 10);
        if (errno != 0 || end == p || v < 0 || v > INT_MAX)
                return -EBADMSG;
        *ret = (int) v;
        return 0;
}

int wake_tp_format_parse(const char *text, const char *pid_field, struct wake_tp_format *ret) {
        struct wake_tp_format f = { .id = -1, .type_offset = -1, .pid_offset = -1, .target_cpu_offset = -1,
                                    .flags_offset = -1 };
        const char *line = text;

        while (line && *line) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t) (eol - line) : strlen(line);
                char buf[512], name[64];
                const char *field, *semi, *n0;
                int offset, size;

                if (len >= sizeof(buf))
                        len = sizeof(buf) - 1;
                memcpy(buf, line, len);
                buf[len] = '\0';
                line = eol ? eol + 1 : NULL;

                if (strncmp(buf, "ID:", 3) == 0) {
                        if (parse_int_after(buf, "ID:", &f.id) < 0)
                                return -EBADMSG;
                        continue;
                }
                field = strstr(buf, "field:");
                if (!field)
                        continue;
                field += strlen("field:");
                semi = strchr(field, ';');
                if (!semi)
                        continue;
                /* The name is the last identifier of the declaration: "pid_t pid", "char comm[16]". */
                n0 = semi;
                while (n0 > field && n0[-1] == ']')
                        while (n0 > field && *--n0 != '[')
                                ;
                {
                        const char *e = n0;
                        while (n0 > field && (n0[-1] == '_' || (n0[-1] >= 'a' && n0[-1] <= 'z') ||
                                              (n0[-1] >= 'A' && n0[-1] <= 'Z') || (n0[-1] >= '0' && n0[-1] <= '9')))
                                n0--;
                        if (e == n0 || (size_t) (e - n0) >= sizeof(name))
                                continue;
                        memcpy(name, n0, (size_t) (e - n0));
                        name[e - n0] = '\0';
                }
                if (parse_int_after(semi, "offset:", &offset) < 0 || parse_int_after(semi, "size:", &size) < 0)
                        return -EBADMSG;

                if (streq(name, pid_field) && size == 4)
                        f.pid_offset = offset;
                else if (streq(name, "common_type") && size == 2)
                        f.type_offset = offset;
                else if (streq(name, "target_cpu") && size == 4)
                        f.target_cpu_offset = offset;
                else if (streq(name, "common_flags") && size == 1)
                        f.flags_offset = offset;
                else
                        continue;
                f.min_size = MAX(f.min_size, (size_t) offset + (size_t) size);
        }
        if (f.id < 0 || f.pid_offset < 0)
                return -EBADMSG;
        *ret = f;
        return 0;
}

int wake_tp_format_load(const char *root, const char *event, const char *pid_field, struct wake_tp_format *ret,
                        char *why, size_t why_size) {
        static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
        _cleanup_free_ char *text = NULL;
        char path[PATH_MAX];
        int r = -ENOENT;

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                int k;

                snprintf(path, sizeof(path), "%s/events/sched/%s/format", dirs[i], event);
                k = util_read_full_file_at(root, path, &text, NULL);
                if (k >= 0 || r == -ENOENT)
                        r = k;     /* keep the first error that is not "not there" (EACCES) */
                if (k >= 0)
                        break;
        }
        if (r < 0) {
                char probe[PATH_MAX];
                /* Tell "not mounted" from "no such tracepoint" for the status line. */
                if (r == -ENOENT && util_read_file_at(root, "/sys/kernel/tracing/README", probe, 2) == -ENOENT &&
                    util_read_file_at(root, "/sys/kernel/debug/tracing/README", probe, 2) == -ENOENT)
                        snprintf(why, why_size, "tracefs not mounted at /sys/kernel/tracing");
                else if (r == -EACCES || r == -EPERM)
                        snprintf(why, why_size, "tracefs not readable: %s (needs root, or CAP_PERFMON and access to tracefs)",
                                 strerror(-r));
                else
                        snprintf(why, why_size, "sched:%s format: %s", event, strerror(-r));
                return r;
        }
        r = wake_tp_format_parse(text, pid_field, ret);
        if (r < 0)
                snprintf(why, why_size, "sched:%s format: unexpected layout", event);
        return r;
}

/* ---- perf events ---- */

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
        return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

static void cpu_close(struct wake_cpu *c) {
        c->source = sd_event_source_disable_unref(c->source);
        c->enabled = false;
        if (c->switch_fd >= 0)
                close(c->switch_fd);    /* before its group leader and ring */
        c->switch_fd = -1;
        if (c->base)
                munmap(c->base, c->mmap_size);
        c->base = NULL;
        c->data = NULL;
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
}

static void perf_close_all(struct wake_sampler *ws) {
        for (int i = 0; i < ws->n_cpu_slots; i++)
                cpu_close(&ws->cpus[i]);
        ws->n_open = 0;
}

/*
 * The switch-ins that end a response time (wake_edge_table_time()): a
 * question's asker runs again on its CPU. Sampled, every one, only where
 * every wake-up is (period 1); at a longer period nothing is timed, and
 * the event is disabled on its own, costing what a parked one does, not
 * a count of every switch. Otherwise it is a member of the wake-up
 * event's group, enabled and disabled with it.
 */
static void switch_arm(struct wake_cpu *c) {
        bool want = c->period == 1;

        if (c->switch_fd >= 0 && c->switch_on != want &&
            ioctl(c->switch_fd, want ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) == 0)
                c->switch_on = want;
}

/*
 * sched:sched_switch on c's CPU, in the group of c's wake-up event (one
 * enable, one disable) and writing into its ring (PERF_EVENT_IOC_SET_OUTPUT:
 * records told apart by common_type), the same clock. The kernel filter
 * drops switches to the idle task, half of a split pair's switches, which
 * end no wait. Any failure leaves the CPU without it: wake-ups are still
 * sampled, response times are not (timed_add()).
 */
static void switch_open(struct wake_sampler *ws, struct wake_cpu *c) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_TRACEPOINT,
                .size = sizeof(attr),
                .config = (uint64_t) ws->switch_fmt.id,
                .sample_period = 1,
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
                .use_clockid = 1,
                .clockid = CLOCK_MONOTONIC,
        };
        long fd;

        if (ws->switch_fmt.id < 0)
                return;     /* the format did not load: switch_error says why */
        if (ws->fmt.type_offset < 0 || ws->switch_fmt.type_offset < 0) {
                snprintf(ws->switch_error, sizeof(ws->switch_error),
                         "no common_type in the tracepoints' formats to tell their records apart");
                return;
        }
        fd = perf_event_open(&attr, -1, c->cpu, c->fd, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
                snprintf(ws->switch_error, sizeof(ws->switch_error), "sched:sched_switch: %s", strerror(errno));
                return;
        }
        if (ioctl((int) fd, PERF_EVENT_IOC_SET_OUTPUT, c->fd) < 0) {
                snprintf(ws->switch_error, sizeof(ws->switch_error), "sched:sched_switch output: %s",
                         strerror(errno));
                close((int) fd);
                return;
        }
        (void) ioctl((int) fd, PERF_EVENT_IOC_SET_FILTER, "next_pid != 0");
        c->switch_fd = (int) fd;
        c->switch_on = true;
        switch_arm(c);
}

static int cpu_open_pages(struct wake_sampler *ws, struct wake_cpu *c, size_t pages) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_TRACEPOINT,
                .size = sizeof(attr),
                .config = (uint64_t) ws->fmt.id,
                .sample_period = c->period,
                /* Not PERF_SAMPLE_PERIOD: for software events and tracepoints
                 * the kernel then takes a sample of every event and ignores
                 * sample_period (perf_swevent_event()). The period is known
                 * here; set_period() drains before changing it. */
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
                /* one clock for all CPUs' rings: response times pair a
                 * wake-up in one ring with its answer in another */
                .use_clockid = 1,
                .clockid = CLOCK_MONOTONIC,
                .disabled = 1,
                .watermark = 1,
                .wakeup_watermark = (uint32_t) (pages * ws->page_size / 2),
        };
        long fd;
        void *base;

        fd = perf_event_open(&attr, -1, c->cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
                return -errno;
        base = mmap(NULL, (pages + 1) * ws->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd, 0);
        if (base == MAP_FAILED) {
                int r = -errno;
                close((int) fd);
                return r == -EPERM || r == -ENOMEM ? -ENOBUFS : r;
        }
        c->fd = (int) fd;
        c->armed_period = c->period;
        c->base = base;
        c->mmap_size = (pages + 1) * ws->page_size;
        {
                struct perf_event_mmap_page *meta = base;
                /* data_offset/data_size exist since 4.1; older kernels: right after the meta page */
                if (meta->data_size) {
                        c->data = (uint8_t *) base + meta->data_offset;
                        c->data_size = meta->data_size;
                } else {
                        c->data = (uint8_t *) base + ws->page_size;
                        c->data_size = pages * ws->page_size;
                }
        }
        switch_open(ws, c);
        return 0;
}

static int on_ring(sd_event_source *s, int fd, uint32_t revents, void *userdata);

unsigned wake_ring_pages(unsigned n_cpus, size_t page_size) {
        unsigned pages = RING_PAGES_DEFAULT;

        while (pages > 1 && (uint64_t) pages * page_size * MAX(n_cpus, 1u) > RING_BYTES_TOTAL)
                pages /= 2;
        return pages;
}

static int cpu_attach(struct wake_sampler *ws, struct wake_cpu *c) {
        if (!ws->event || c->fd < 0 || c->source)
                return 0;
        return sd_event_add_io(ws->event, &c->source, c->fd, EPOLLIN, on_ring, ws);
}

static int cpu_open(struct wake_sampler *ws, struct wake_cpu *c) {
        int r;

        for (;;) {
                r = cpu_open_pages(ws, c, ws->ring_pages);
                if (r != -ENOBUFS || ws->ring_pages <= 1)
                        break;
                ws->ring_pages /= 2;     /* mlock limit: try a smaller ring */
        }
        if (r < 0)
                return r;
        r = cpu_attach(ws, c);
        if (r < 0) {
                cpu_close(c);
                return r;
        }
        ws->n_open++;
        ws->opens++;
        return 0;
}

/* Start a burst on one CPU: its period for this burst, a count from zero. */
static int cpu_enable(struct wake_cpu *c) {
        if (c->fd < 0 || c->enabled)
                return 0;
        if (c->armed_period != c->period) {
                if (ioctl(c->fd, PERF_EVENT_IOC_PERIOD, &c->period) < 0)
                        return -errno;
                c->armed_period = c->period;
        }
        switch_arm(c);
        if (ioctl(c->fd, PERF_EVENT_IOC_RESET, 0) < 0 || ioctl(c->fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
                return -errno;
        c->enabled = true;
        return 0;
}

static void cpu_disable(struct wake_cpu *c) {
        if (c->fd >= 0 && c->enabled)
                (void) ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0);
        c->enabled = false;
}

static void perf_error_message(struct wake_sampler *ws, int r) {
        char buf[32] = "?";

        if (r == -EACCES || r == -EPERM) {
                (void) util_read_file_at(ws->root, "/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf));
                util_strip(buf);
                snprintf(ws->perf_error, sizeof(ws->perf_error),
                         "perf_event_open: %s (perf_event_paranoid=%s; needs CAP_PERFMON or CAP_SYS_ADMIN)",
                         strerror(-r), buf);
        } else
                snprintf(ws->perf_error, sizeof(ws->perf_error), "perf_event_open: %s", strerror(-r));
}

static int slots_resize(struct wake_sampler *ws, int n) {
        struct wake_cpu *c;

        if (n <= ws->n_cpu_slots)
                return 0;
        c = realloc(ws->cpus, (size_t) n * sizeof(*c));
        if (!c)
                return -ENOMEM;
        for (int i = ws->n_cpu_slots; i < n; i++)
                c[i] = (struct wake_cpu) { .cpu = i, .fd = -1, .switch_fd = -1, .period = ws->period };
        ws->cpus = c;
        ws->n_cpu_slots = n;
        return 0;
}

static void set_source_perf(struct wake_sampler *ws);

/* The switch event's error names what the CPUs open now lack: one that
 * failed on a CPU since taken offline, or at an open since retried, is
 * no longer the state (a format that did not load stays: id -1). A text
 * that changed, either way, is shown (the source). */
static void switch_error_refresh(struct wake_sampler *ws, const char *before) {
        bool all = ws->switch_fmt.id >= 0 && ws->n_open > 0;

        for (int i = 0; all && i < ws->n_cpu_slots; i++)
                if (ws->cpus[i].fd >= 0 && ws->cpus[i].switch_fd < 0)
                        all = false;
        if (all)
                ws->switch_error[0] = '\0';
        if (ws->mode == WAKE_MODE_PERF && !streq(before, ws->switch_error))
                set_source_perf(ws);
}

/* A burst starts or goes on: events enabled on every CPU in online (parked
 * ones re-enabled, missing ones opened), the others closed. */
static int perf_sync_cpus(struct wake_sampler *ws, const cpumask_t *online, int n_cpus) {
        char before[sizeof(ws->switch_error)];
        int r;

        r = slots_resize(ws, n_cpus);
        if (r < 0)
                return r;
        snprintf(before, sizeof(before), "%s", ws->switch_error);
        for (int i = 0; i < ws->n_cpu_slots; i++) {
                struct wake_cpu *c = &ws->cpus[i];

                if (!(i < n_cpus && cpumask_test(online, i))) {
                        if (c->fd >= 0) {
                                cpu_close(c);
                                ws->n_open--;
                        }
                        continue;
                }
                r = c->fd < 0 ? cpu_open(ws, c) : 0;
                r = r < 0 ? r : cpu_enable(c);
                if (r == -ENODEV)        /* went offline meanwhile: closed at the next sync */
                        continue;
                if (r < 0)
                        return r;
        }
        switch_error_refresh(ws, before);
        return ws->n_open > 0 ? 0 : -ENODEV;
}

static void perf_disable_all(struct wake_sampler *ws) {
        for (int i = 0; i < ws->n_cpu_slots; i++)
                cpu_disable(&ws->cpus[i]);
}

static int perf_start(struct wake_sampler *ws, const struct topology *topo) {
        int r;

        /* perf sees the real system's tasks: with a fixture tree as root the
         * tids would not be the fixture's. */
        if (!streq(ws->root, "/") && ws->root[0] != '\0') {
                snprintf(ws->perf_error, sizeof(ws->perf_error), "root prefix %.64s: perf describes the real system",
                         ws->root);
                return -EXDEV;
        }
        r = wake_tp_format_load(ws->root, "sched_waking", "pid", &ws->fmt, ws->perf_error, sizeof(ws->perf_error));
        if (r < 0)
                return r;
        if (wake_tp_format_load(ws->root, "sched_switch", "next_pid", &ws->switch_fmt, ws->switch_error,
                                sizeof(ws->switch_error)) < 0)
                ws->switch_fmt.id = -1;
        ws->scratch = malloc(UINT16_MAX + 1);
        if (!ws->scratch)
                return -ENOMEM;
        ws->ring_pages = wake_ring_pages((unsigned) MAX(topo->n_cpus, 1), ws->page_size);
        r = perf_sync_cpus(ws, &topo->online, topo->n_cpus);
        if (r < 0) {
                perf_error_message(ws, r);
                perf_close_all(ws);
                return r;
        }
        return 0;
}

/* ---- reading the rings ---- */

/* Every wake-up and switch-in of c's CPU is sampled now: its events
 * could time a response. */
static bool cpu_timing(const struct wake_cpu *c) {
        return c->period == 1 && c->switch_fd >= 0 && c->switch_on;
}

/* Keep a wake-up (or a switch-in, an interrupt's wake-up: struct
 * wake_timed) with its time for the burst's response times, while every
 * wake-up and switch-in is sampled; one that is not makes the burst's
 * pairing void. */
static void timed_add(struct wake_sampler *ws, const struct wake_cpu *c, uint64_t t_ns, pid_t waker, pid_t wakee,
                      bool split) {
        if (!ws->timed_ok)
                return;
        if (!cpu_timing(c) || ws->n_timed >= TIMED_MAX) {
                ws->timed_ok = false;
                return;
        }
        if (ws->n_timed == ws->timed_allocated) {
                size_t na = MAX(ws->timed_allocated * 2, (size_t) 1024);
                struct wake_timed *n = realloc(ws->timed, na * sizeof(*n));

                if (!n) {
                        ws->timed_ok = false;
                        return;
                }
                ws->timed = n;
                ws->timed_allocated = na;
        }
        ws->timed[ws->n_timed++] = (struct wake_timed) { .t_ns = t_ns, .waker = waker, .wakee = wakee, .split = split };
}

/* Pair what the burst kept into response times (on the edges, folded at
 * the next call), and start over. */
static void timed_flush(struct wake_sampler *ws) {
        /* a CPU that gave no record may still not have sampled all of its
         * switch-ins: a wait ended there would end at a later one */
        for (int i = 0; i < ws->n_cpu_slots; i++)
                if (ws->cpus[i].fd >= 0 && !cpu_timing(&ws->cpus[i]))
                        ws->timed_ok = false;
        if (ws->timed_ok && ws->n_timed > 0)
                (void) wake_edge_table_time(&ws->table, ws->timed, ws->n_timed);
        ws->n_timed = 0;
        ws->timed_ok = true;
}

static uint16_t record_type(const uint8_t *raw, const struct wake_tp_format *f) {
        uint16_t type;

        memcpy(&type, raw + f->type_offset, 2);
        return type;
}

/* A switch-in from the CPU's sched_switch event (switch_open()): only its
 * time and thread, for the response times. It is no wake-up: it counts in
 * the samples read, not in the wake-up rates the period is set by. */
static void handle_switch(struct wake_sampler *ws, struct wake_cpu *c, const uint8_t *raw, uint64_t t_ns) {
        int32_t next;

        if (record_type(raw, &ws->switch_fmt) != (uint16_t) ws->switch_fmt.id)
                return;
        ws->samples++;
        ws->win_samples++;
        memcpy(&next, raw + ws->switch_fmt.pid_offset, 4);
        if (next > 0)
                timed_add(ws, c, t_ns, 0, next, false);
}

static void handle_sample(struct wake_sampler *ws, struct wake_cpu *c, const uint8_t *rec, size_t size) {
        const struct wake_tp_format *f = &ws->fmt;
        uint32_t pid_tid[2], raw_size;
        uint64_t period = c->period, t_ns;
        int cpu = c->cpu;
        const uint8_t *raw;
        int32_t wakee, target = -1;
        bool split;

        /* header, u32 pid, u32 tid, u64 time, u32 size, raw[size] */
        if (size < sizeof(struct perf_event_header) + 8 + 8 + 4)
                return;
        memcpy(pid_tid, rec + 8, 8);
        memcpy(&t_ns, rec + 16, 8);
        memcpy(&raw_size, rec + 24, 4);
        raw = rec + 28;
        if (28 + (size_t) raw_size > size)
                return;
        if (c->switch_fd >= 0 && raw_size >= ws->switch_fmt.min_size &&
            record_type(raw, f) != (uint16_t) f->id) {
                handle_switch(ws, c, raw, t_ns);
                return;
        }
        if (raw_size < f->min_size)
                return;

        ws->samples++;
        ws->win_samples++;
        c->burst_samples++;
        ws->adapt_samples++;
        ws->win_events += (double) period;
        ws->adapt_events += (double) period;

        memcpy(&wakee, raw + f->pid_offset, 4);
        if (wakee <= 0)
                return;
        /* An interrupt's wake-up (hard irq, NMI, or the idle task's: an
         * interrupt on an idle CPU) makes no edge; for the response times
         * it still says the wakee had gone to sleep again. */
        if ((f->flags_offset >= 0 && (raw[f->flags_offset] & (WAKE_TRACE_FLAG_HARDIRQ | WAKE_TRACE_FLAG_NMI))) ||
            pid_tid[1] == 0) {
                timed_add(ws, c, t_ns, WAKE_TIMED_INTERRUPT, wakee, false);
                return;
        }
        if (f->target_cpu_offset >= 0)
                memcpy(&target, raw + f->target_cpu_offset, 4);
        if ((pid_t) pid_tid[1] == wakee)
                return;
        split = target >= 0 && target != cpu;
        (void) wake_edge_table_add(&ws->table, (pid_t) pid_tid[1], wakee, (double) period, 1,
                                   split ? (double) period : 0.0, target >= 0);
        timed_add(ws, c, t_ns, (pid_t) pid_tid[1], wakee, split);
}

static void handle_record(struct wake_sampler *ws, struct wake_cpu *c, const uint8_t *rec, size_t size) {
        const struct perf_event_header *h = (const struct perf_event_header *) rec;
        uint64_t n;

        switch (h->type) {
        case PERF_RECORD_SAMPLE:
                handle_sample(ws, c, rec, size);
                break;
        case PERF_RECORD_LOST:
                /* u64 id, u64 lost */
                if (size >= sizeof(*h) + 16) {
                        memcpy(&n, rec + sizeof(*h) + 8, 8);
                        ws->lost += n;
                        ws->win_lost += n;
                        ws->adapt_lost += n;
                        c->burst_lost += n;
                        ws->timed_ok = false;
                        ws->win_events += (double) n * (double) c->period;
                        ws->adapt_events += (double) n * (double) c->period;
                }
                break;
        case PERF_RECORD_THROTTLE:
                ws->throttled++;
                ws->adapt_throttled++;
                c->burst_throttled++;
                ws->timed_ok = false;
                break;
        default:
                break;
        }
}

static unsigned cpu_drain(struct wake_sampler *ws, struct wake_cpu *c) {
        struct perf_event_mmap_page *meta = c->base;
        uint64_t head, tail, mask = c->data_size - 1;
        unsigned n = 0;

        if (!meta)
                return 0;
        head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        tail = meta->data_tail;
        while (tail < head) {
                struct perf_event_header h;
                uint64_t off = tail & mask;
                const uint8_t *rec;

                /* Records are 8-byte aligned and the ring a multiple of 8: a header never wraps. */
                memcpy(&h, c->data + off, sizeof(h));
                if (h.size < sizeof(h) || h.size > head - tail) {
                        tail = head;    /* corrupt: resynchronise by dropping the rest */
                        break;
                }
                if (off + h.size > c->data_size) {
                        uint64_t first = c->data_size - off;
                        memcpy(ws->scratch, c->data + off, first);
                        memcpy(ws->scratch + first, c->data, h.size - first);
                        rec = ws->scratch;
                } else
                        rec = c->data + off;
                handle_record(ws, c, rec, h.size);
                tail += h.size;
                n++;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
        return n;
}

static uint64_t pow2_ceil(double v) {
        uint64_t p = 1;

        while ((double) p < v && p < PERIOD_MAX)
                p <<= 1;
        return p;
}

static void set_period(struct wake_sampler *ws, uint64_t period) {
        if (period == ws->period)
                return;
        /* What the rings hold was sampled at the old period: count it at that. */
        for (int i = 0; i < ws->n_cpu_slots; i++)
                (void) cpu_drain(ws, &ws->cpus[i]);
        for (int i = 0; i < ws->n_cpu_slots; i++) {
                if (ws->cpus[i].fd >= 0 && ioctl(ws->cpus[i].fd, PERF_EVENT_IOC_PERIOD, &period) == 0)
                        ws->cpus[i].armed_period = period;
                ws->cpus[i].period = period;
                switch_arm(&ws->cpus[i]);
        }
        ws->period = period;
        ws->period_changes++;
}

/*
 * Keep the samples taken under max_samples_per_s: the period becomes the
 * smallest power of two with events/period under the budget. Lost samples
 * count as events (they were wake-ups we could not read), and a throttle
 * record (the kernel's perf_event_max_sample_rate kicked in, dropping
 * samples without counting them) doubles the period at least and holds it
 * for LOSS_HOLD_USEC. Going down is one halving per window and only when a
 * quarter of the period would do, so a rate near the budget does not make
 * the period flap.
 */
static void adapt(struct wake_sampler *ws, uint64_t now) {
        uint64_t dt = now - ws->adapt_start_usec, want;
        double events_per_s;

        if (dt < ADAPT_WINDOW_USEC)
                return;
        events_per_s = ws->adapt_events * 1e6 / (double) dt;    /* lost samples included */
        if (ws->adaptive) {
                want = ws->max_samples_per_s ? pow2_ceil(events_per_s / (double) ws->max_samples_per_s) : 1;
                if (ws->adapt_throttled > 0 || ws->adapt_lost > 0) {
                        want = MAX(want, ws->period * 2);
                        ws->hold_until_usec = now + LOSS_HOLD_USEC;
                }
                want = MIN(MAX(want, ws->min_period), PERIOD_MAX);
                if (want > ws->period)
                        set_period(ws, want);
                else if (want * 4 <= ws->period && now >= ws->hold_until_usec)
                        set_period(ws, MAX(ws->period / 2, ws->min_period));
        }
        ws->adapt_start_usec = now;
        ws->adapt_samples = ws->adapt_lost = ws->adapt_throttled = 0;
        ws->adapt_events = 0;
}

int wake_sampler_drain(struct wake_sampler *ws) {
        uint64_t t0;
        unsigned n = 0;

        if (!ws || ws->mode != WAKE_MODE_PERF)
                return 0;
        t0 = thread_cpu_ns();
        for (int i = 0; i < ws->n_cpu_slots; i++)
                n += cpu_drain(ws, &ws->cpus[i]);
        if (ws->burst_usec == 0)
                adapt(ws, util_now_usec());     /* duty cycle: adapted per burst instead */
        ws->win_drain_ns += thread_cpu_ns() - t0;
        return (int) MIN(n, (unsigned) INT_MAX);
}

static int on_ring(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct wake_sampler *ws = userdata;
        uint64_t t0 = thread_cpu_ns();

        for (int i = 0; i < ws->n_cpu_slots; i++)
                if (ws->cpus[i].fd == fd) {
                        (void) cpu_drain(ws, &ws->cpus[i]);
                        break;
                }
        if (ws->burst_usec == 0)
                adapt(ws, util_now_usec());
        ws->win_drain_ns += thread_cpu_ns() - t0;
        return 0;
}

/* ---- duty cycle ---- */

static int on_burst_timer(sd_event_source *s, uint64_t usec, void *userdata);
static void use_fallback(struct wake_sampler *ws);

static uint64_t kernel_rate_cap(const struct wake_sampler *ws) {
        char buf[32];
        unsigned long long v;

        /* Read each burst: the kernel lowers it by itself when sampling interrupts take too long. */
        if (util_read_file_at(ws->root, "/proc/sys/kernel/perf_event_max_sample_rate", buf, sizeof(buf)) < 0 ||
            sscanf(buf, "%llu", &v) != 1 || v == 0)
                v = 100000;      /* the kernel's default */
        return MAX((uint64_t) v / KERNEL_RATE_SHARE, (uint64_t) 100);
}

/*
 * Periods for the next burst, per CPU, from this burst's exact counts
 * (read() of the event: every sched_waking on that CPU while it was open,
 * sampled or not). All CPUs together stay under max_samples_per_s, and
 * each CPU under the kernel's per-event limit; a CPU whose event was
 * throttled or lost samples gets at least twice the period and keeps it
 * for LOSS_HOLD_USEC (its count missed the throttled time).
 */
static void burst_adapt(struct wake_sampler *ws, uint64_t on_usec, uint64_t now) {
        double total = 0, on_s = (double) MAX(on_usec, (uint64_t) 1) / 1e6;
        uint64_t cap = kernel_rate_cap(ws), global, max_period = 0;

        for (int i = 0; i < ws->n_cpu_slots; i++) {
                struct wake_cpu *c = &ws->cpus[i];
                uint64_t count = 0;

                if (c->fd < 0)
                        continue;
                if (read(c->fd, &count, sizeof(count)) != (ssize_t) sizeof(count))
                        count = c->burst_samples * c->period;
                c->events_per_s = ((double) count + (double) c->burst_lost * (double) c->period) / on_s;
                total += c->events_per_s;
        }
        global = ws->max_samples_per_s ? pow2_ceil(total / (double) ws->max_samples_per_s) : 1;
        for (int i = 0; i < ws->n_cpu_slots; i++) {
                struct wake_cpu *c = &ws->cpus[i];
                uint64_t want;

                if (c->fd < 0)
                        continue;
                want = MAX(global, pow2_ceil(c->events_per_s / (double) cap));
                if (c->burst_throttled > 0 || c->burst_lost > 0) {
                        want = MAX(want, c->period * 2);
                        c->hold_until_usec = now + LOSS_HOLD_USEC;
                } else if (now < c->hold_until_usec)
                        want = MAX(want, c->period);
                want = MIN(MAX(want, ws->min_period), PERIOD_MAX);
                if (!ws->adaptive)
                        want = ws->min_period;
                if (want != c->period)
                        ws->period_changes++;
                c->period = want;
                c->burst_samples = c->burst_lost = c->burst_throttled = 0;
                max_period = MAX(max_period, want);
        }
        if (max_period)
                ws->period = max_period;
}

/* All CPUs' wake-up rate in the last burst. */
static double burst_events_per_s(const struct wake_sampler *ws) {
        double sum = 0;

        for (int i = 0; i < ws->n_cpu_slots; i++)
                if (ws->cpus[i].fd >= 0)
                        sum += ws->cpus[i].events_per_s;
        return sum;
}

/* Account the on-time up to now (the burst may go on). */
static void burst_account(struct wake_sampler *ws, uint64_t now) {
        uint64_t d;

        if (!ws->on || now <= ws->on_since_usec)
                return;
        d = now - ws->on_since_usec;
        ws->fold_on_usec += d;
        ws->win_on_usec += d;
        ws->on_since_usec = now;
}

/*
 * When the next burst starts: so that it ends BURST_MARGIN_USEC before the
 * next expected call of wake_sampler_edges(), at the caller's measured
 * cadence; a call too close for a whole burst is left to the one after.
 */
static uint64_t burst_next_start(const struct wake_sampler *ws, uint64_t now) {
        uint64_t lead = ws->burst_usec + BURST_MARGIN_USEC, target = ws->last_call_usec + ws->cadence_usec;

        while (target < now + lead)
                target += ws->cadence_usec;
        return target - lead;
}

static int burst_timer_set(struct wake_sampler *ws, uint64_t at) {
        int r;

        if (!ws->event)
                return 0;
        if (!ws->burst_timer) {
                r = sd_event_add_time(ws->event, &ws->burst_timer, CLOCK_MONOTONIC, at, USEC_PER_MSEC,
                                      on_burst_timer, ws);
                if (r < 0)
                        return r;
        } else {
                r = sd_event_source_set_time(ws->burst_timer, at);
                if (r < 0)
                        return r;
        }
        return sd_event_source_set_enabled(ws->burst_timer, SD_EVENT_ONESHOT);
}

static void burst_end(struct wake_sampler *ws, uint64_t now) {
        if (!ws->on)
                return;
        perf_disable_all(ws);
        for (int i = 0; i < ws->n_cpu_slots; i++)
                (void) cpu_drain(ws, &ws->cpus[i]);
        timed_flush(ws);
        /* the counts cover the whole burst (burst_account() moves on_since at each call) */
        burst_adapt(ws, now > ws->burst_start_usec ? now - ws->burst_start_usec : 0, now);
        burst_account(ws, now);
        ws->on = false;
        /* after the drain: the daemon's own work on the rings belongs to the burst */
        ws->burst_end_usec = util_now_usec();
        ws->burst_events_per_s = burst_events_per_s(ws);
        if (ws->burst_events_per_s > ws->park_max_per_s)
                perf_close_all(ws);     /* parked, they would cost more than reopening */
}

/* The "ctxt" line of /proc/stat: context switches since boot, all CPUs. */
static int read_ctxt(const char *root, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        const char *l;
        int r;

        r = util_read_full_file_at(root, "/proc/stat", &buf, NULL);
        if (r < 0)
                return r;
        l = strstr(buf, "\nctxt ");
        if (!l || sscanf(l + 6, "%" SCNu64, ret) != 1)
                return -EINVAL;
        return 0;
}

/*
 * The quiet gate (see "Duty cycle" above): true if this burst can be
 * skipped. The first look, an unreadable /proc/stat, an early call (a
 * new process, not in the last rate yet) and the gate being off all say
 * no.
 */
static bool burst_quiet(struct wake_sampler *ws, uint64_t now) {
        uint64_t ctxt, dt = now - ws->ctxt_usec;
        bool had = ws->ctxt_usec > 0;

        if (ws->floor_per_s < 0)
                return true;    /* no pair policy: nobody reads the edges */
        if (ws->floor_per_s == 0 || read_ctxt(ws->root, &ctxt) < 0)
                return false;
        if (had && dt > 0 && ctxt >= ws->ctxt)
                ws->switches_per_s = (double) (ctxt - ws->ctxt) * 1e6 / (double) dt;
        ws->ctxt = ctxt;
        ws->ctxt_usec = now;
        if (!had || ws->early_call)
                return false;
        return ws->switches_per_s < ws->floor_per_s;
}

/*
 * The settled stride (wake_sampler_set_stride()): true if this burst can be
 * skipped because the caller's placement is settled and /proc shows the
 * same busy threads as at the last burst. A call brought forward, no gate
 * floor to tell busy threads by, or the stride's own turn say no.
 */
static bool burst_settled(const struct wake_sampler *ws) {
        return ws->stride > 1 && ws->floor_per_s > 0 && !ws->early_call && !ws->hot_moved &&
               ws->calls_since_burst + 1 < ws->stride;
}

static int burst_begin(struct wake_sampler *ws, uint64_t now) {
        int r;

        if (burst_quiet(ws, now)) {
                /* parked events would keep costing every wake-up for nothing */
                perf_close_all(ws);
                ws->quiet_skips++;
                ws->quiet_since_fold = true;
                return 0;
        }
        if (burst_settled(ws)) {
                /* Parked events stay parked (reopening costs more); the edges
                 * keep their rates: this is no observed zero, unlike the gate's. */
                ws->settled_skips++;
                return 0;
        }

        r = perf_sync_cpus(ws, &ws->online, ws->n_cpus_topo);
        if (r == -EACCES || r == -EPERM) {
                /* permission taken away (e.g. perf_event_paranoid raised) */
                perf_error_message(ws, r);
                use_fallback(ws);
                return 0;
        }
        if (r < 0) {
                /* EMFILE, ENOMEM, ...: try again at the next burst */
                perf_close_all(ws);
                ws->burst_open_errors++;
                return r;
        }
        ws->on = true;
        ws->n_timed = 0;
        ws->timed_ok = true;
        ws->on_since_usec = ws->burst_start_usec = now;
        ws->bursts++;
        return 0;
}

static int on_burst_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct wake_sampler *ws = userdata;
        uint64_t now = util_now_usec(), t0 = thread_cpu_ns();

        if (ws->mode != WAKE_MODE_PERF || ws->burst_usec == 0)
                return 0;
        if (ws->on) {
                burst_end(ws, now);
                (void) burst_timer_set(ws, burst_next_start(ws, now));
        } else if (burst_begin(ws, now) >= 0 && ws->on)
                (void) burst_timer_set(ws, now + ws->burst_usec);
        else if (ws->mode == WAKE_MODE_PERF)
                (void) burst_timer_set(ws, burst_next_start(ws, now));
        ws->win_drain_ns += thread_cpu_ns() - t0;
        return 0;
}

void wake_sampler_expect_call(struct wake_sampler *ws, uint64_t at_usec) {
        uint64_t now = util_now_usec(), lead;

        if (!ws)
                return;
        ws->early_call = true;
        if (ws->mode != WAKE_MODE_PERF || ws->burst_usec == 0)
                return;   /* events enabled all the time */
        if (ws->on) {
                /* A burst is on (the first one, at start, was when a benchmark
                 * started its pair right after the daemon): it goes on until
                 * shortly before that call, so the call sees the new process. */
                uint64_t end = at_usec > now + BURST_MARGIN_USEC ? at_usec - BURST_MARGIN_USEC : now;
                if (end > ws->burst_start_usec + ws->burst_usec)
                        (void) burst_timer_set(ws, end);
                return;
        }
        /* a burst ending BURST_MARGIN_USEC before that call, as short as it must */
        lead = ws->burst_usec + BURST_MARGIN_USEC;
        (void) burst_timer_set(ws, at_usec > now + lead ? at_usec - lead : now);
}

void wake_sampler_expect_unsampled_call(struct wake_sampler *ws) {
        if (ws)
                ws->early_call = true;
}

uint64_t wake_sampler_burst_lead_usec(const struct wake_sampler *ws) {
        if (!ws || ws->mode != WAKE_MODE_PERF || ws->burst_usec == 0)
                return 0;
        return ws->burst_usec + BURST_MARGIN_USEC;
}

bool wake_sampler_edges_fresh(const struct wake_sampler *ws) {
        return ws && ws->last_fresh;
}

/* ---- the object ---- */

static void use_fallback(struct wake_sampler *ws) {
        int r;

        perf_close_all(ws);
        ws->on = false;
        ws->burst_timer = sd_event_source_disable_unref(ws->burst_timer);
        ws->mode = WAKE_MODE_FALLBACK;
        if (!ws->fallback) {
                r = wake_fallback_new(ws->root, &ws->fallback);
                if (r < 0) {
                        ws->mode = WAKE_MODE_NONE;
                        snprintf(ws->source, sizeof(ws->source), "none: fallback: %s", strerror(-r));
                        return;
                }
        }
        snprintf(ws->source, sizeof(ws->source), "fallback:%s", wake_fallback_what(ws->fallback));
}

static void set_source_perf(struct wake_sampler *ws) {
        char duty[96];

        if (ws->burst_usec == 0)
                snprintf(duty, sizeof(duty), "perf");
        else if (ws->stride > 1)
                snprintf(duty, sizeof(duty), "perf, %" PRIu64 " ms bursts before one pass in %u (placement settled)",
                         ws->burst_usec / USEC_PER_MSEC, ws->stride);
        else
                snprintf(duty, sizeof(duty), "perf, %" PRIu64 " ms bursts before each pass",
                         ws->burst_usec / USEC_PER_MSEC);
        if (ws->switch_error[0])
                snprintf(ws->source, sizeof(ws->source), "%s; no response times: %s", duty, ws->switch_error);
        else
                snprintf(ws->source, sizeof(ws->source), "%s", duty);
}

int wake_sampler_new(const char *root, const struct topology *topo, uint64_t sample_period,
                     uint64_t max_events_per_s, struct wake_sampler **ret) {
        struct wake_sampler *ws;
        long ps = sysconf(_SC_PAGESIZE);
        int r;

        if (!topo || !ret)
                return -EINVAL;
        ws = calloc(1, sizeof(*ws));
        if (!ws)
                return -ENOMEM;
        ws->root = strdup(root ? root : "/");
        if (!ws->root) {
                free(ws);
                return -ENOMEM;
        }
        ws->page_size = ps > 0 ? (size_t) ps : 4096;
        ws->ring_pages = RING_PAGES_DEFAULT;
        ws->min_period = ws->period = MAX(sample_period, (uint64_t) 1);
        ws->max_samples_per_s = max_events_per_s;
        ws->adaptive = true;
        ws->stride = 1;
        ws->park_max_per_s = PARK_EVENTS_MAX_PER_S;
        ws->adapt_start_usec = ws->win_start_usec = ws->last_edges_usec = util_now_usec();
        ws->burst_usec = BURST_USEC_DEFAULT;
        ws->cadence_usec = CADENCE_USEC_DEFAULT;
        ws->last_call_usec = ws->adapt_start_usec;
        ws->online = topo->online;
        ws->n_cpus_topo = topo->n_cpus;
        wake_edge_table_init(&ws->table, WAKE_EDGE_MAX_DEFAULT);

        r = perf_start(ws, topo);
        if (r == -ENOMEM) {
                wake_sampler_free(ws);
                return r;
        }
        if (r < 0)
                use_fallback(ws);
        else {
                /* The events just opened are the first burst (they proved perf works). */
                ws->mode = WAKE_MODE_PERF;
                ws->on = true;
                ws->on_since_usec = ws->burst_start_usec = util_now_usec();
                ws->bursts = 1;
                set_source_perf(ws);
        }
        *ret = ws;
        return 0;
}

struct wake_sampler *wake_sampler_free(struct wake_sampler *ws) {
        if (!ws)
                return NULL;
        perf_close_all(ws);
        sd_event_source_disable_unref(ws->burst_timer);
        free(ws->cpus);
        sd_event_unref(ws->event);
        wake_fallback_free(ws->fallback);
        wake_hot_free(&ws->hot);
        wake_edge_table_done(&ws->table);
        free(ws->out);
        free(ws->scratch);
        free(ws->timed);
        free(ws->root);
        free(ws);
        return NULL;
}

int wake_sampler_disable_perf(struct wake_sampler *ws, const char *why) {
        if (!ws)
                return -EINVAL;
        snprintf(ws->perf_error, sizeof(ws->perf_error), "%s", why ? why : "disabled");
        use_fallback(ws);
        return 0;
}

void wake_sampler_set_adaptive(struct wake_sampler *ws, bool on) {
        if (!ws)
                return;
        ws->adaptive = on;
        if (!on)
                set_period(ws, ws->min_period);
}

void wake_sampler_set_park_max(struct wake_sampler *ws, double events_per_s) {
        if (ws)
                ws->park_max_per_s = events_per_s > 0 ? events_per_s : PARK_EVENTS_MAX_PER_S;
}

int wake_sampler_set_limits(struct wake_sampler *ws, uint64_t sample_period, uint64_t max_events_per_s) {
        if (!ws)
                return -EINVAL;
        if (sample_period > 0) {
                ws->min_period = MIN(sample_period, PERIOD_MAX);
                if (ws->period < ws->min_period || !ws->adaptive)
                        set_period(ws, ws->min_period);
        }
        ws->max_samples_per_s = max_events_per_s;
        return 0;
}

int wake_sampler_set_topology(struct wake_sampler *ws, const struct topology *topo) {
        int r;

        if (!ws || !topo)
                return -EINVAL;
        ws->online = topo->online;
        ws->n_cpus_topo = topo->n_cpus;
        if (ws->mode != WAKE_MODE_PERF || !ws->on)
                return 0;       /* off: the next burst opens the new set */
        r = perf_sync_cpus(ws, &topo->online, topo->n_cpus);    /* the new CPUs join the burst */
        if (r < 0 && r != -ENOMEM) {
                perf_error_message(ws, r);
                use_fallback(ws);
                return 0;
        }
        return r;
}

int wake_sampler_attach(struct wake_sampler *ws, sd_event *e) {
        int r;

        if (!ws || !e)
                return -EINVAL;
        if (ws->event != e) {
                sd_event_unref(ws->event);
                ws->event = sd_event_ref(e);
        }
        for (int i = 0; i < ws->n_cpu_slots; i++) {
                r = cpu_attach(ws, &ws->cpus[i]);
                if (r < 0)
                        return r;
        }
        if (ws->mode == WAKE_MODE_PERF && ws->burst_usec > 0)
                return burst_timer_set(ws, ws->on ? ws->burst_start_usec + ws->burst_usec
                                                  : burst_next_start(ws, util_now_usec()));
        return 0;
}

int wake_sampler_set_duty(struct wake_sampler *ws, uint64_t burst_usec) {
        uint64_t now = util_now_usec();
        int r = 0;

        if (!ws)
                return -EINVAL;
        if (burst_usec == ws->burst_usec)
                return 0;
        ws->burst_usec = burst_usec;
        if (ws->mode != WAKE_MODE_PERF)
                return 0;
        set_source_perf(ws);
        if (burst_usec == 0) {
                /* continuous: open now and keep open */
                ws->burst_timer = sd_event_source_disable_unref(ws->burst_timer);
                if (!ws->on)
                        r = burst_begin(ws, now);
                return r;
        }
        if (ws->on)
                return burst_timer_set(ws, MAX(ws->burst_start_usec + burst_usec, now));
        return burst_timer_set(ws, burst_next_start(ws, now));
}

void wake_sampler_set_floor(struct wake_sampler *ws, double wake_rate_min_per_s) {
        if (ws)
                ws->floor_per_s = wake_rate_min_per_s;
}

void wake_sampler_set_tasks(struct wake_sampler *ws, const struct task *tasks, size_t n_tasks) {
        if (!ws)
                return;
        ws->tasks = tasks;
        ws->n_tasks = n_tasks;
        ws->tasks_given = true;
}

void wake_sampler_set_stride(struct wake_sampler *ws, unsigned every) {
        if (!ws || MAX(every, 1u) == ws->stride)
                return;
        ws->stride = MAX(every, 1u);
        if (ws->mode == WAKE_MODE_PERF)
                set_source_perf(ws);
}

unsigned wake_sampler_stride_for_share(const struct wake_sampler *ws, double share) {
        double calls;
        unsigned n;

        if (!ws || share <= 0 || ws->burst_usec == 0 || ws->cadence_usec == 0)
                return 1;
        calls = (double) ws->burst_usec / ((double) ws->cadence_usec * share);
        if (calls >= STRIDE_MAX)
                return STRIDE_MAX;
        n = (unsigned) calls;
        return MAX(n + (n < calls), 1u);
}

bool wake_sampler_hot_repinned(const struct wake_sampler *ws) {
        return ws && ws->hot_repinned;
}

bool wake_sampler_last_burst(const struct wake_sampler *ws, uint64_t *start_usec, uint64_t *end_usec) {
        if (!ws || ws->burst_end_usec == 0 || ws->burst_end_usec < ws->burst_start_usec)
                return false;
        *start_usec = ws->burst_start_usec;
        *end_usec = ws->burst_end_usec;
        return true;
}

bool wake_sampler_burst_wanted(const struct wake_sampler *ws) {
        return ws && ws->mode == WAKE_MODE_PERF && ws->burst_usec > 0 && ws->stride > 1 && ws->hot_moved;
}

/*
 * The stride's bookkeeping at each call: a call a burst fed records the busy
 * threads; one without a burst counts towards the stride's turn and looks
 * whether the threads moved since (wake-hot.c). Either says whether a busy
 * thread got another CPU mask (wake_sampler_hot_repinned()).
 */
static void stride_note_call(struct wake_sampler *ws, bool fed) {
        enum wake_hot_change change;
        double hot_min = ws->floor_per_s > 0 ? ws->floor_per_s / HOT_SHARE : 0;

        if (fed) {
                /* the burst sees a new mask too, but the caller must hear of
                 * it: a burst is also taken for a new process (an operator's
                 * taskset is one), and the record would hide the change */
                ws->hot_repinned = ws->tasks_given &&
                                   wake_hot_changed(&ws->hot, ws->tasks, ws->n_tasks) == WAKE_HOT_REPINNED;
                ws->calls_since_burst = 0;
                ws->hot_moved = false;
                if (ws->tasks_given && hot_min > 0)
                        (void) wake_hot_record(&ws->hot, ws->tasks, ws->n_tasks, hot_min);
                return;
        }
        ws->calls_since_burst = MIN(ws->calls_since_burst + 1, UINT_MAX - 1);
        /* no threads to compare, or no floor to tell busy ones by: no skipping */
        if (!ws->tasks_given || hot_min <= 0 || ws->hot.min_per_s != hot_min) {
                ws->hot_moved = true;
                ws->hot_repinned = false;
                return;
        }
        change = wake_hot_changed(&ws->hot, ws->tasks, ws->n_tasks);
        ws->hot_moved = change != WAKE_HOT_SAME;
        ws->hot_repinned = change == WAKE_HOT_REPINNED;
}

int wake_sampler_edges(struct wake_sampler *ws, uint64_t now_usec, struct wake_edge **ret_edges,
                       size_t *ret_n) {
        uint64_t window;
        int r;

        uint64_t real_now = util_now_usec();
        bool duty, fed;

        if (!ws || !ret_edges || !ret_n)
                return -EINVAL;
        (void) wake_sampler_drain(ws);

        /* The caller's cadence, for placing the next burst right before its next call. */
        if (ws->n_calls++ > 0 && real_now > ws->last_call_usec && !ws->early_call)
                ws->cadence_usec = MIN(MAX(real_now - ws->last_call_usec, CADENCE_USEC_MIN), CADENCE_USEC_MAX);
        ws->last_call_usec = real_now;
        ws->early_call = false;

        duty = ws->mode == WAKE_MODE_PERF && ws->burst_usec > 0;
        if (ws->mode == WAKE_MODE_PERF)
                burst_account(ws, real_now);
        if (duty && !ws->on)
                (void) burst_timer_set(ws, burst_next_start(ws, real_now));

        if (ws->mode == WAKE_MODE_PERF && !duty)
                timed_flush(ws);    /* events always open: a window is the pairing's burst */
        fed = duty && (ws->fold_on_usec > 0 || ws->on);
        ws->last_fresh = !duty || fed;
        if (duty)
                stride_note_call(ws, fed);
        else
                ws->hot_repinned = false;   /* no bursts to thin out */
        window = now_usec > ws->last_edges_usec ? now_usec - ws->last_edges_usec : 0;
        /*
         * Duty cycle: the counts were taken over fold_on_usec of on-time, so
         * the rates are counts per on-time; the decay still runs on the wall
         * clock window. A window without any on-time has nothing to say and
         * is left to the next fold (the edges keep their rates meanwhile),
         * unless its bursts were skipped by the quiet gate: that is an
         * observed zero over the whole window.
         */
        if (window > 0 && (!duty || ws->fold_on_usec > 0 || ws->quiet_since_fold)) {
                uint64_t on = !duty ? window : ws->fold_on_usec > 0 ? MIN(ws->fold_on_usec, window) : window;

                if (ws->mode == WAKE_MODE_FALLBACK && ws->tasks)
                        (void) wake_fallback_scan(ws->fallback, ws->tasks, ws->n_tasks, window, &ws->table);
                r = wake_edge_table_fold_observed(&ws->table, window, on, WAKE_EDGE_TAU_USEC);
                if (r < 0)
                        return r;
                ws->last_edges_usec = now_usec;
                ws->fold_on_usec = 0;
                ws->quiet_since_fold = false;
        }
        ws->tasks = NULL;
        ws->n_tasks = 0;
        ws->tasks_given = false;

        /* status window: wake-ups per second of on-time, samples and CPU per second of wall time */
        {
                uint64_t dt = real_now - ws->win_start_usec;
                if (dt > 0) {
                        uint64_t on = ws->mode == WAKE_MODE_PERF ? ws->win_on_usec : dt;
                        ws->samples_per_s = (double) ws->win_samples * 1e6 / (double) dt;
                        ws->events_per_s = on > 0 ? ws->win_events * 1e6 / (double) on : 0;
                        ws->drain_cpu_frac = (double) ws->win_drain_ns / 1e3 / (double) dt;
                        ws->duty_frac = MIN((double) on / (double) dt, 1.0);
                }
                ws->win_start_usec = real_now;
                ws->win_samples = ws->win_lost = ws->win_drain_ns = ws->win_on_usec = 0;
                ws->win_events = 0;
        }

        r = wake_edge_table_export(&ws->table, &ws->out, &ws->out_allocated, &ws->n_out);
        if (r < 0)
                return r;
        /* the stride: the pairs this burst saw together, to watch in /proc till the next */
        if (fed && ws->floor_per_s > 0)
                (void) wake_hot_record_pairs(&ws->hot, ws->out, ws->n_out, ws->floor_per_s / HOT_SHARE);
        *ret_edges = ws->out;
        *ret_n = ws->n_out;
        return (int) MIN(ws->n_out, (size_t) INT_MAX);
}

const char *wake_sampler_source(const struct wake_sampler *ws) {
        return ws ? ws->source : "none: no sampler";
}

void wake_sampler_status(const struct wake_sampler *ws, struct wake_status *ret) {
        *ret = (struct wake_status) {};
        if (!ws) {
                snprintf(ret->source, sizeof(ret->source), "none: no sampler");
                return;
        }
        snprintf(ret->source, sizeof(ret->source), "%s", ws->source);
        snprintf(ret->perf_error, sizeof(ret->perf_error), "%s", ws->mode == WAKE_MODE_PERF ? "" : ws->perf_error);
        ret->perf = ws->mode == WAKE_MODE_PERF;
        ret->adaptive = ws->adaptive;
        ret->n_cpus = ws->mode == WAKE_MODE_PERF ? cpumask_weight(&ws->online) : 0;
        ret->burst_usec = ws->burst_usec;
        ret->cadence_usec = ws->cadence_usec;
        ret->on = ws->on;
        ret->duty_frac = ws->duty_frac;
        ret->bursts = ws->bursts;
        ret->burst_open_errors = ws->burst_open_errors;
        ret->event_opens = ws->opens;
        ret->events_parked = ws->n_open > 0 && !ws->on;
        ret->park_max_per_s = ws->park_max_per_s;
        ret->burst_events_per_s = ws->burst_events_per_s;
        ret->quiet_skips = ws->quiet_skips;
        ret->settled_skips = ws->settled_skips;
        ret->burst_every = ws->stride;
        ret->switches_per_s = ws->switches_per_s;
        ret->gate_floor_per_s = ws->floor_per_s;
        ret->period = ws->period;
        ret->max_samples_per_s = ws->max_samples_per_s;
        ret->events_per_s = ws->events_per_s;
        ret->samples_per_s = ws->samples_per_s;
        ret->samples = ws->samples;
        ret->lost = ws->lost;
        ret->throttled = ws->throttled;
        ret->period_changes = ws->period_changes;
        ret->edges_dropped = ws->table.dropped;
        ret->n_edges = ws->table.n;
        ret->drain_cpu_frac = ws->drain_cpu_frac;
}
