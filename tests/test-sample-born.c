/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Threads born since the last pass get rates over their life at the first
 * pass that reads them (daemon/sample/sample.c, born_in_window_usec()), so a new
 * ping-pong pair can be co-located one pass earlier. Live, on
 * this machine's /proc:
 *  - a child that spins, forked 300 ms after pass 1 and read at pass 2,
 *    has rates there: util near 1, its window its age (< the pass window);
 *  - a child younger than 100 ms at pass 2 has none yet (start-up noise);
 *  - a child born before pass 1 is read as before (rates at pass 2 over
 *    the whole window);
 *  - a child first seen 15 ms old, switching often but under 100 times
 *    yet, has a rate of bytes at the next pass;
 *  - a child switching often on well under 1 % of a CPU has rates of
 *    switches and bytes at every pass.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "sample/sample.h"
#include "sample/snapshot.h"
#include "test-util.h"
#include "sample/topology.h"

static pid_t spinner(void) {
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (volatile unsigned long i = 0;; i++)
                        ;
        }
        return pid;
}

static void nap_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0)
                ;
}

static void *idle_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

/* A child that writes a byte and sleeps nap_us, over and over, on the CPU
 * it starts on: at 200 us a few thousand switches a second, under 100 in
 * its first 15 ms; at 2 ms about 500 a second. With idle: a second thread
 * that never runs, so that the chatter (the process's first thread) is not
 * alone in its process, as an event loop's thread is not beside its
 * helpers (Redis's, Node's). */
static pid_t chatter(long nap_us, bool idle, unsigned start_ms) {
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                FILE *null = fopen("/dev/null", "w");
                struct timespec ts = { .tv_nsec = nap_us * 1000 };
                cpu_set_t one;
                int cpu = sched_getcpu();
                pthread_t helper;

                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (idle && pthread_create(&helper, NULL, idle_thread, NULL) != 0)
                        _exit(1);
                nap_ms(start_ms);
                CPU_ZERO(&one);
                CPU_SET(cpu < 0 ? 0 : cpu, &one);
                (void) sched_setaffinity(0, sizeof(one), &one);
                setvbuf(null, NULL, _IONBF, 0);
                for (;;) {
                        (void) !fwrite("x", 1, 1, null);
                        nanosleep(&ts, NULL);
                }
        }
        return pid;
}

static void reap(pid_t pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* The task's run time so far, ns (/proc/PID/schedstat: what the kernel says it got). */
static uint64_t run_ns_of(pid_t pid) {
        char path[64], buf[128];
        unsigned long long ns = 0;

        snprintf(path, sizeof(path), "/proc/%d/schedstat", (int) pid);
        ASSERT_TRUE(util_read_file_at(NULL, path, buf, sizeof(buf)) > 0);
        ASSERT_TRUE(sscanf(buf, "%llu", &ns) == 1);
        return ns;
}

/* Context switches so far (/proc/PID/status), or 0. */
static unsigned long switches_of(pid_t pid) {
        char path[64], buf[4096];
        unsigned long v = 0, iv = 0;
        const char *p;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        if (util_read_file_at(NULL, path, buf, sizeof(buf)) <= 0)
                return 0;
        if ((p = strstr(buf, "voluntary_ctxt_switches:")))
                v = strtoul(p + strlen("voluntary_ctxt_switches:"), NULL, 10);
        if ((p = strstr(buf, "nonvoluntary_ctxt_switches:")))
                iv = strtoul(p + strlen("nonvoluntary_ctxt_switches:"), NULL, 10);
        return v + iv;
}

/*
 * A thread first seen 15 ms old, switching a few thousand times a second
 * but under 100 times yet: its io is read at once, and the next pass has
 * its rate of bytes (its young rates being none, that pass would not ask
 * for its io otherwise). The spinners are gone first, and it is seen once
 * it has switched a few times: beside them and stress-ng on 2 CPUs it had
 * not run in its first 15 ms (a CI rehearsal), and a thread that never ran
 * is no chatter.
 */
static void chatter_first_sight(struct sampler *s) {
        struct snapshot *snap = NULL;
        const struct task *t;
        pid_t chat = chatter(200, false, 0);
        uint64_t t_fork = util_now_usec();

        nap_ms(15);
        for (int i = 0; i < 500 && switches_of(chat) < 3; i++)
                nap_ms(1);
        fprintf(stderr, "chatter: %lu switches at %llu ms old\n", switches_of(chat),
                (unsigned long long) (util_now_usec() - t_fork) / 1000);
        ASSERT_OK(sampler_sample(s, util_now_usec(), &snap));
        t = snapshot_find_task(snap, chat);
        ASSERT_TRUE(t && !t->have_rates);
        nap_ms(300);
        ASSERT_OK(sampler_sample(s, util_now_usec(), &snap));
        t = snapshot_find_task(snap, chat);
        ASSERT_TRUE(t);
        fprintf(stderr, "chatter: have_io_rate %d, %.0f bytes/s, %.0f switches/s\n", t->have_io_rate,
                t->io_bytes_per_s, t->nvcsw_per_s + t->nivcsw_per_s);
        ASSERT_TRUE(t->have_io_rate && t->io_bytes_per_s > 0);
        reap(chat);
}

/*
 * A thread that switches 500 times a second on well under 1 % of a CPU,
 * on one CPU: its stat's ticks rarely move between two passes and its CPU
 * never does. It has rates of switches and bytes at every pass; a sampler
 * that took the stat's word that it had not run read 0 switches a second
 * and no bytes (a CI host, where the chatter above ran that cheaply). The
 * sampler can tell only by the thread's count of runs (schedstat), read
 * every pass where the process clock gates it: without them (a /proc of
 * another PID namespace, a kernel without schedstat) this case says so and
 * is not run.
 *
 * With idle: the chatter is the first thread of a process with another,
 * and starts only once the sampler has seen it idle for 4 passes (cold,
 * as an event loop with no client yet). Alone in its process it would be
 * read for its clock; here the clock could be its helper's, and it is
 * found as a pair's thread is: by the wake-up edges that name it, handed
 * to the sampler after each pass from its start on (the daemon hands it
 * the wake sampler's). From its third pass on it must have its rates.
 * Before, it was read only once its stat showed a tick, at 0.4 % of a CPU
 * every second or so here, every few seconds on a host with cheaper
 * system calls.
 */
static void chatter_quiet(struct sampler *s, bool idle) {
        const char *what = idle ? "quiet chatter beside an idle thread" : "quiet chatter";
        /* the chatter starts 1,500 ms after its fork, and the passes are
         * 250 ms apart from 300 ms: those from 2,300 ms on, the third after
         * its start and later, must have its rates. The first read of it
         * (at 1,800 ms) may count its runs since it was last read, its idle
         * second included, and find too few; the second counts them over
         * one pass and reads its io; the third has a rate of bytes. */
        const unsigned start_ms = idle ? 1500 : 0, lag_passes = idle ? 7 : 0;
        struct snapshot *snap = NULL;
        struct sampler_stats st;
        const struct task *t;
        uint64_t t_fork;
        pid_t chat;

        sampler_get_stats(s, &st);
        if (!streq(st.gate, "clock") || !st.task_schedstat) {
                fprintf(stderr, "%s: not run: gate %s, task schedstat %s\n", what, st.gate,
                        st.task_schedstat ? "yes" : "no");
                return;
        }
        chat = chatter(2000, idle, start_ms);
        t_fork = util_now_usec();
        nap_ms(300);
        ASSERT_OK(sampler_sample(s, util_now_usec(), &snap));   /* first sight */
        ASSERT_TRUE(snapshot_find_task(snap, chat));
        for (unsigned pass = 0; pass < lag_passes + 6; pass++) {
                nap_ms(250);
                ASSERT_OK(sampler_sample(s, util_now_usec(), &snap));
                t = snapshot_find_task(snap, chat);
                ASSERT_TRUE(t);
                fprintf(stderr, "%s: %.0f switches/s, have_io_rate %d, %.0f bytes/s%s\n", what,
                        t->nvcsw_per_s + t->nivcsw_per_s, t->have_io_rate, t->io_bytes_per_s,
                        pass < lag_passes ? " (not judged)" : "");
                if (idle && util_now_usec() - t_fork >= start_ms * USEC_PER_MSEC) {
                        /* what the wake sampler sees of it once it chats: its
                         * wake-ups of a partner (the test, here) */
                        struct wake_edge e = { .waker_tid = chat, .wakee_tid = getpid(), .wakeups_per_s = 480 };

                        sampler_want_threads(s, &e, 1, 100);
                }
                if (pass < lag_passes)
                        continue;
                ASSERT_TRUE(t->have_rates && t->nvcsw_per_s + t->nivcsw_per_s > 0);
                ASSERT_TRUE(t->have_io_rate && t->io_bytes_per_s > 0);
        }
        reap(chat);
}

int main(void) {
        struct topology *topo = NULL;
        struct sampler *s = NULL;
        struct snapshot *snap = NULL;
        const struct task *t;
        pid_t old, born, baby;
        uint64_t t1, t2, born_ns0, born_ns;
        double own0, own;

        if (geteuid() != 0)
                fprintf(stderr, "note: not root; reading other users' threads may fail (not needed here)\n");
        ASSERT_OK(topology_load("/", &topo));
        ASSERT_OK(sampler_new("/", topo, 65536, &s));

        old = spinner();
        nap_ms(200);
        t1 = util_now_usec();
        ASSERT_OK(sampler_sample(s, t1, &snap));            /* pass 1: old is fresh here */
        t = snapshot_find_task(snap, old);
        ASSERT_TRUE(t);
        ASSERT_TRUE(!t->have_rates);                        /* born before the last pass: no window yet */

        nap_ms(300);
        born = spinner();
        nap_ms(300);
        baby = spinner();
        nap_ms(20);
        t2 = util_now_usec();
        born_ns0 = run_ns_of(born);                         /* all it ran since its fork, just before */
        ASSERT_OK(sampler_sample(s, t2, &snap));            /* pass 2 */
        born_ns = run_ns_of(born);                          /* ... and just after */

        t = snapshot_find_task(snap, old);
        ASSERT_TRUE(t && t->have_rates);
        ASSERT_TRUE(!t->rates_since_birth);                 /* a window of its own */

        t = snapshot_find_task(snap, born);
        ASSERT_TRUE(t);
        /* its util over its own life, as the kernel counted it: a loaded
         * machine gives a spinner less than a CPU, and the sampler must say
         * what it got, over the window since its fork, not the pass's */
        own0 = t->window_usec ? (double) born_ns0 / 1000.0 / (double) t->window_usec : 0;
        own = t->window_usec ? (double) born_ns / 1000.0 / (double) t->window_usec : 0;
        fprintf(stderr, "born: have_rates %d util %.2f (its own run time over the window: %.2f-%.2f) window %llu us "
                "(pass window %llu us)\n", t->have_rates, t->util, own0, own, (unsigned long long) t->window_usec,
                (unsigned long long) (t2 - t1));
        ASSERT_TRUE(t->have_rates);
        ASSERT_TRUE(t->rates_since_birth);                  /* the planner waits a window for it */
        ASSERT_TRUE(t->window_usec >= 250 * USEC_PER_MSEC && t->window_usec < t2 - t1);
        /* diluted over the pass window it would read about half of own */
        ASSERT_TRUE(own0 > 0.02 && t->util > own0 * 0.8 && t->util < own * 1.2 + 0.05);

        t = snapshot_find_task(snap, baby);
        ASSERT_TRUE(t);
        ASSERT_TRUE(!t->have_rates);                        /* 20 ms old: no rate from start-up */

        reap(old);
        reap(born);
        reap(baby);

        chatter_first_sight(s);
        chatter_quiet(s, false);
        chatter_quiet(s, true);

        sampler_free(s);
        topology_free(topo);
        return 0;
}
