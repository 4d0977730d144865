/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The co-location calibration (calibrate.h): two threads of ours bounce a
 * byte over two pipes, as a client and its server do, first on one CPU,
 * then one on each of two CPUs that a topology level separates.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "sample/calibrate.h"
#include "sample/snapshot.h"

const char *calib_level_to_string(enum calib_level l) {
        static const char *const names[_CALIB_LEVEL_MAX] = {
                [CALIB_SMT] = "smt", [CALIB_CORE] = "core", [CALIB_LLC] = "llc", [CALIB_NODE] = "node",
        };
        return l >= 0 && l < _CALIB_LEVEL_MAX ? names[l] : "unknown";
}

/* The level that separates CPUs a and b (a != b). */
static enum calib_level level_between(const struct topology *t, int a, int b) {
        const struct topo_cpu *x = &t->cpus[a], *y = &t->cpus[b];

        if (x->node != y->node)
                return CALIB_NODE;
        if (x->llc_id != y->llc_id)
                return CALIB_LLC;
        if (x->core_id != y->core_id)
                return CALIB_CORE;
        return CALIB_SMT;
}

struct echo {
        int in, out;            /* the echo thread's own ends: it closes them */
        int cpu;
};

static int pin_self(int cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The server side: echo every byte until the pipe closes. Detached: it
 * closes its own ends and frees its arguments whenever it gets to run. */
static void *echo_main(void *arg) {
        struct echo *e = arg;
        char c;

        /* Unpinned it would run where the client does (it inherits its
         * mask): a "split" run on one CPU reads as a level that costs
         * nothing. Its ends closed, the client reads EOF: the run fails. */
        if (pin_self(e->cpu) < 0) {
                close(e->in);
                close(e->out);
                free(e);
                return NULL;
        }
        while (read(e->in, &c, 1) == 1)
                if (write(e->out, &c, 1) != 1)
                        break;
        close(e->in);
        close(e->out);
        free(e);
        return NULL;
}

/*
 * A reply that takes longer than this ends the run (-ETIME): the echo
 * thread got no CPU (a container's cgroup starved by a pinned pair was seen
 * to hold the daemon's start for 30 s), and a start must not wait on it.
 */
#define CALIB_REPLY_MAX_MSEC 200

/* Round trips/s with this thread on cpu_client and the echo on cpu_server. */
static int run_once(int cpu_client, int cpu_server, double *ret) {
        int to[2] = { -1, -1 }, from[2] = { -1, -1 }, r = 0;
        struct echo *e = NULL;
        pthread_attr_t attr;
        pthread_t th;
        uint64_t t0, n = 0;
        char c = 'x';

        if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0 || !(e = calloc(1, sizeof(*e)))) {
                r = -errno ?: -ENOMEM;
                goto out;
        }
        *e = (struct echo) { .in = to[0], .out = from[1], .cpu = cpu_server };
        r = -pthread_attr_init(&attr);
        r = r ?: -pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = r ?: -pthread_create(&th, &attr, echo_main, e);
        (void) pthread_attr_destroy(&attr);
        if (r < 0)
                goto out;
        to[0] = from[1] = -1;   /* the echo thread's now */
        e = NULL;
        r = pin_self(cpu_client);
        t0 = util_now_usec();
        while (r >= 0 && util_now_usec() - t0 < CALIB_RUN_USEC) {
                struct pollfd pfd = { .fd = from[0], .events = POLLIN };

                if (write(to[1], &c, 1) != 1) {
                        r = -EIO;
                        break;
                }
                if (poll(&pfd, 1, CALIB_REPLY_MAX_MSEC) != 1) {
                        r = -ETIME;
                        break;
                }
                if (read(from[0], &c, 1) != 1) {
                        r = -EIO;
                        break;
                }
                n++;
        }
        *ret = (double) n * USEC_PER_SEC / (double) MAX(util_now_usec() - t0, 1ULL);
out:
        free(e);
        for (int k = 0; k < 2; k++) {
                if (to[k] >= 0)
                        close(to[k]);
                if (from[k] >= 0)
                        close(from[k]);
        }
        return r;
}

static int cmp_double(const void *x, const void *y) {
        double a = *(const double *) x, b = *(const double *) y;
        return a < b ? -1 : a > b;
}

static double median3(double *v) {
        qsort(v, CALIB_ROUNDS, sizeof(double), cmp_double);
        return v[CALIB_ROUNDS / 2];
}

/* For each level, the first CPU after cpu that it separates from cpu. */
static void pick_partners(const struct topology *t, const cpumask_t *ok, int cpu, int partner[_CALIB_LEVEL_MAX]) {
        for (int l = 0; l < _CALIB_LEVEL_MAX; l++)
                partner[l] = -1;
        for (int c = 0; c < t->n_cpus; c++) {
                enum calib_level l;

                if (c == cpu || !cpumask_test(ok, c))
                        continue;
                l = level_between(t, cpu, c);
                if (partner[l] < 0)
                        partner[l] = c;
        }
}

/* The measurement itself, on the calling thread (pinned as it goes). */
static int measure(int cpu, const int partner[_CALIB_LEVEL_MAX], struct calibration *ret) {
        double same[CALIB_ROUNDS], split[_CALIB_LEVEL_MAX][CALIB_ROUNDS];
        uint64_t t0 = util_now_usec();
        int r = 0;

        /* interleaved: same, then each level, round after round, so that a
         * burst of load next door lands on all of them alike */
        for (int k = 0; k < CALIB_ROUNDS; k++) {
                r = run_once(cpu, cpu, &same[k]);
                for (int l = 0; r >= 0 && l < _CALIB_LEVEL_MAX; l++)
                        if (partner[l] >= 0)
                                r = run_once(cpu, partner[l], &split[l][k]);
                if (r < 0)
                        return r;
        }
        ret->cpu = cpu;
        ret->same_per_s = median3(same);
        for (int l = 0; l < _CALIB_LEVEL_MAX; l++) {
                struct calib_result *x;

                if (partner[l] < 0)
                        continue;
                x = &ret->levels[ret->n_levels++];
                *x = (struct calib_result) { .level = (enum calib_level) l, .cpu_a = cpu, .cpu_b = partner[l],
                                             .split_per_s = median3(split[l]) };
                x->gain = x->split_per_s > 0 ? ret->same_per_s / x->split_per_s : 0;
                ret->gain_max = MAX(ret->gain_max, x->gain);
        }
        ret->done = ret->n_levels > 0;
        ret->readings = ret->done;
        if (!ret->done)
                snprintf(ret->why, sizeof(ret->why), "no second CPU to measure against");
        ret->cost_usec = util_now_usec() - t0;
        return 0;
}

/*
 * The measurement runs on a thread of its own, never the caller's: the
 * caller (the daemon's main loop) is neither pinned nor held. On a CPU a
 * pinned pair keeps busy, a container's cgroup got no time for 30 s and
 * the daemon did not answer; now the caller waits CALIB_WAIT_MSEC at most
 * and goes on uncalibrated, and the worker, whenever it finishes, frees
 * what the two share (the last of the two to let go does).
 */
#define CALIB_WAIT_MSEC 3000

struct calib_job {
        pthread_mutex_t lock;
        unsigned refs;
        int cpu, partner[_CALIB_LEVEL_MAX];
        int done_fd[2];
        int r;
        struct calibration result;
};

struct calib_job *calib_job_unref(struct calib_job *j) {
        bool last;

        if (!j)
                return NULL;
        pthread_mutex_lock(&j->lock);
        last = --j->refs == 0;
        pthread_mutex_unlock(&j->lock);
        if (!last)
                return NULL;
        close(j->done_fd[0]);
        close(j->done_fd[1]);
        pthread_mutex_destroy(&j->lock);
        free(j);
        return NULL;
}

static bool job_done(struct calib_job *j, int timeout_msec) {
        struct pollfd pfd = { .fd = j->done_fd[0], .events = POLLIN };

        return poll(&pfd, 1, timeout_msec) == 1;
}

void calibration_merge(struct calibration *c, const struct calibration *next) {
        if (!next->done)
                return;
        if (!c->done) {
                *c = *next;
                return;
        }
        c->gain_max = 0;
        for (int i = 0; i < c->n_levels; i++) {
                struct calib_result *x = &c->levels[i];

                for (int k = 0; k < next->n_levels; k++)
                        if (next->levels[k].level == x->level && next->levels[k].gain > x->gain)
                                *x = next->levels[k];
                c->gain_max = MAX(c->gain_max, x->gain);
        }
        c->cost_usec += next->cost_usec;
        c->readings += next->readings;
}

static bool gain_free(double gain) {
        return gain > 0 && gain < CALIB_GAIN_MIN;
}

static bool any_level_free(const struct calibration *c) {
        for (int i = 0; i < c->n_levels; i++)
                if (gain_free(c->levels[i].gain))
                        return true;
        return false;
}

static void *job_main(void *arg) {
        struct calib_job *j = arg;
        char c = 1;

        j->r = measure(j->cpu, j->partner, &j->result);
        /* a free level is believed on a second reading only (CALIB_READINGS_FOR_FREE) */
        while (j->r >= 0 && any_level_free(&j->result) && j->result.readings < CALIB_READINGS_FOR_FREE) {
                struct calibration again = { .cpu = -1 };

                j->r = measure(j->cpu, j->partner, &again);
                if (j->r >= 0)
                        calibration_merge(&j->result, &again);
                if (!again.done)
                        break;
        }
        (void) !write(j->done_fd[1], &c, 1);
        calib_job_unref(j);
        return NULL;
}

int calibrate(const struct topology *topo, const cpumask_t *allowed, struct calib_job **pending,
              struct calibration *ret) {
        struct calib_job *j;
        pthread_attr_t attr;
        pthread_t th;
        cpumask_t ok;
        uint64_t t0;
        int cpu, r;

        if (!topo || !ret)
                return -EINVAL;
        *ret = (struct calibration) { .cpu = -1 };
        ok = topology_usable(topo);
        if (allowed && !cpumask_empty(allowed))
                ok = cpumask_and(&ok, allowed);
        cpu = cpumask_next(&ok, 0);
        if (cpu < 0 || cpumask_weight(&ok) < 2) {
                snprintf(ret->why, sizeof(ret->why), "fewer than two usable CPUs");
                return 0;
        }
        if (pending && *pending) {
                if (!job_done(*pending, 0)) {
                        ret->starved = true;
                        snprintf(ret->why, sizeof(ret->why), "the last probe, starved, still runs (busy CPUs)");
                        return 0;
                }
                *pending = calib_job_unref(*pending);
        }
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        if (pipe2(j->done_fd, O_CLOEXEC) < 0) {
                free(j);
                return -errno;
        }
        pthread_mutex_init(&j->lock, NULL);
        j->refs = 2;
        j->cpu = cpu;
        pick_partners(topo, &ok, cpu, j->partner);
        t0 = util_now_usec();
        r = -pthread_attr_init(&attr);
        r = r ?: -pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = r ?: -pthread_create(&th, &attr, job_main, j);
        (void) pthread_attr_destroy(&attr);
        if (r < 0) {
                j->refs = 1;
                calib_job_unref(j);
                return r;
        }
        if (job_done(j, CALIB_WAIT_MSEC)) {
                r = j->r;
                if (r >= 0)
                        *ret = j->result;
        } else {
                r = 0;
                if (pending) {
                        *pending = j;   /* our reference, let go when it is seen done */
                        j = NULL;
                }
                ret->starved = true;
                snprintf(ret->why, sizeof(ret->why), "the probe got no CPU time within %d ms (busy CPUs)",
                         CALIB_WAIT_MSEC);
        }
        if (r == -ETIME) {
                /* a reply that took over CALIB_REPLY_MAX_MSEC: starved as well */
                r = 0;
                ret->starved = true;
                snprintf(ret->why, sizeof(ret->why), "a reply of the probe took over %d ms (busy CPUs)",
                         CALIB_REPLY_MAX_MSEC);
        }
        ret->from_usec = t0;
        ret->at_usec = util_now_usec();
        calib_job_unref(j);
        return r;
}

double calibration_gain_for(const struct calibration *c, const struct topology *topo, int a, int b) {
        enum calib_level l;

        if (!c || !c->done)
                return 0;
        if (!topo || a < 0 || b < 0 || a >= topo->n_cpus || b >= topo->n_cpus || a == b)
                return c->gain_max;
        l = level_between(topo, a, b);
        for (int i = 0; i < c->n_levels; i++)
                if (c->levels[i].level == l)
                        return c->levels[i].gain;
        return c->gain_max;
}

bool calibration_quiet(const struct calibration *c) {
        return c && c->done && c->busy_known && c->busy < CALIB_BUSY_MAX;
}

bool calibration_reads_free(const struct calibration *c) {
        return c && c->done && any_level_free(c);
}

bool calibration_doubtful(const struct calibration *c) {
        return calibration_reads_free(c) && !calibration_quiet(c);
}

bool calibration_free_at(const struct calibration *c, enum calib_level l) {
        if (!calibration_quiet(c))
                return false;
        for (int i = 0; i < c->n_levels; i++)
                if (c->levels[i].level == l)
                        return gain_free(c->levels[i].gain);
        return false;
}

bool calibration_free_between(const struct calibration *c, const struct topology *topo, int a, int b) {
        return calibration_quiet(c) && gain_free(calibration_gain_for(c, topo, a, b));
}

double calibration_cpus_busy(const struct calibration *c, const struct cpu_sample *cpus, int n_cpus,
                             const cpumask_t *usable) {
        double busy = 0;

        if (!c || !cpus)
                return 0;
        if (!c->done) {
                /* not measured (starved): the CPUs it would use are among these */
                for (int k = 0; usable && k < n_cpus; k++)
                        if (cpumask_test(usable, k))
                                busy = MAX(busy, cpus[k].busy);
                return busy;
        }
        if (c->cpu >= 0 && c->cpu < n_cpus)
                busy = cpus[c->cpu].busy;
        for (int i = 0; i < c->n_levels; i++)
                if (c->levels[i].cpu_b >= 0 && c->levels[i].cpu_b < n_cpus)
                        busy = MAX(busy, cpus[c->levels[i].cpu_b].busy);
        return busy;
}

void calibration_note_busy(struct calibration *c, double busy) {
        c->busy = busy;
        c->busy_known = true;
}

enum calib_step calibration_step(const struct calibration *c, uint64_t from_usec, uint64_t to_usec, double busy,
                                 uint64_t retry_from_usec) {
        if (!c || from_usec >= to_usec || !(c->done || c->starved))
                return CALIB_STEP_NONE;
        if (from_usec < c->at_usec && to_usec > c->from_usec)
                return CALIB_STEP_NONE;   /* the probe's own runs are in it */
        if (c->done && !c->busy_known)
                return CALIB_STEP_NOTE;
        if (!c->starved && !calibration_doubtful(c))
                return CALIB_STEP_NONE;
        return busy < CALIB_BUSY_MAX && to_usec >= retry_from_usec ? CALIB_STEP_AGAIN : CALIB_STEP_NONE;
}
