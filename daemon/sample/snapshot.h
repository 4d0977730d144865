/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What the sampler saw: one record per thread with cumulative counters and
 * the rates derived from the previous sample, one record per CPU, the
 * topology and the wake-up graph. The detect and plan stages take a
 * const struct snapshot * and never do I/O, so tests build snapshots from
 * struct literals.
 *
 * Units are in field names: _ns, _usec, _per_s; "util" is a fraction of one
 * CPU (1.0 = one CPU fully busy over the window).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample/coexist.h"
#include "sample/memnode.h"
#include "common/cpumask.h"
#include "sample/topology.h"

struct sample_table;

/*
 * A thread's identity. PIDs are reused: a (tid, start_time) pair names one
 * thread for its whole life. start_time is field 22 of /proc/TID/stat
 * (clock ticks after boot).
 */
struct task_id {
        pid_t pid;   /* thread group leader */
        pid_t tid;
        uint64_t start_time;
};

static inline bool task_id_equal(const struct task_id *a, const struct task_id *b) {
        return a->tid == b->tid && a->start_time == b->start_time;
}

/* Per-process attributes used to match policies, read once per process. */
struct proc_info {
        pid_t pid;
        uint64_t start_time;
        char comm[16];
        char *exe;      /* readlink of /proc/PID/exe, NULL for kernel threads or unreadable */
        char *cmdline;  /* NUL separators replaced by spaces */
        char *cgroup;   /* cgroup v2 path, or v1 "cpu" controller path */
        char *cgroup_systemd;  /* the path in systemd's tree: v2, else v1 name=systemd (slices, units) */
        char *unit;     /* systemd unit from the cgroup path, NULL if none */
        uid_t uid;
        /*
         * When the service this process belongs to started: the start_time
         * of its oldest ancestor with the same comm, through parents of the
         * same comm (a PostgreSQL backend forked by the postmaster for each
         * connection, Apache or sshd children); start_time for the rest.
         * A pair's server is the side whose service started first
         * (detect_pair_roles()), and a per-connection backend starts after
         * its client.
         */
        uint64_t lineage_start_time;
        bool kthread;
};

enum task_policy {
        TASK_SCHED_OTHER,
        TASK_SCHED_BATCH,
        TASK_SCHED_IDLE,
        TASK_SCHED_FIFO,
        TASK_SCHED_RR,
        TASK_SCHED_DEADLINE,
};

static inline bool task_policy_is_rt(enum task_policy p) {
        return p == TASK_SCHED_FIFO || p == TASK_SCHED_RR || p == TASK_SCHED_DEADLINE;
}

struct task {
        struct task_id id;
        const struct proc_info *proc; /* owned by the sampler; may be NULL in tests */
        char comm[16];                /* thread name */
        bool kthread;
        enum task_policy policy;
        int nice;
        int last_cpu;                 /* field 39 of stat */
        cpumask_t allowed;            /* Cpus_allowed_list */

        /* cumulative counters, as read */
        uint64_t utime_ticks, stime_ticks;
        uint64_t run_ns, wait_ns, slices;   /* /proc/.../schedstat; valid if have_schedstat */
        uint64_t nvcsw, nivcsw;             /* voluntary / involuntary switches */
        uint64_t nr_migrations;             /* se.nr_migrations; valid if have_migrations */
        uint64_t io_bytes, io_calls;        /* /proc/.../io rchar + wchar, syscr + syscw; valid if have_io */
        bool have_schedstat, have_migrations, have_io;
        /* The current mask is one affinityd set (the manager marks it from the
         * applier's list before detection), so "narrowed" does not mean
         * "narrowed by someone else" for it. */
        bool affinity_ours;

        /* rates over the last window, from the previous sample; valid if have_rates */
        bool have_rates;
        double util;                /* fraction of one CPU */
        double run_delay_ms_per_s;  /* ms spent runnable-but-waiting per second */
        double nvcsw_per_s, nivcsw_per_s;
        double migrations_per_s;
        /* what that rate covers: since the last read of se.nr_migrations,
         * which skips passes where the thread ran little; 0: window_usec */
        uint64_t migrations_window_usec;
        /*
         * Bytes passed through read()/write() and their kin per second
         * (rchar + wchar): what a pipe, FIFO or read/write socket pair
         * moves, its useful work. Read only for threads that switch often
         * (100 a second, or the lowest WakeRate= where that is lower:
         * sampler_set_pair_floor()), the only ones a pair can be made
         * of; recv()/send() do not count in it, so a server using those
         * reads 0. Valid if have_io_rate.
         */
        bool have_io_rate;
        double io_bytes_per_s;
        /* The calls that moved them (syscr + syscw) per second: a request
         * and its answer are a read and a write on each side per wake-up, a
         * pipelined stream makes several (detect-pair.c). */
        double io_calls_per_s;
        cpumask_t cpus_seen;        /* CPUs seen as last_cpu over the recent windows */
        uint64_t window_usec;       /* length of the window the rates cover; 0: the snapshot's
                                     * window_usec (threads carried unchanged, rates 0) */
        /* Born in this window: the rates are over its life so far, start-up
         * included (a client that loads a script or calibrates before it
         * talks reads as half its rate), not a window of its own. */
        bool rates_since_birth;
};

/* A kernel thread (its own flag, or its process's): never a pair's member
 * nor a hub's partner; wake-ups to or from it are the kernel's housekeeping. */
static inline bool task_is_kthread(const struct task *t) {
        return t->kthread || (t->proc && t->proc->kthread);
}

/* Its context switches a second, voluntary and not. */
static inline double task_switches_per_s(const struct task *t) {
        return t->nvcsw_per_s + t->nivcsw_per_s;
}

/* Its read()/write() calls (/proc/TID/io syscr + syscw) per switch; 0: not known. */
static inline double task_calls_per_switch(const struct task *t) {
        double sw = task_switches_per_s(t);

        return t->have_io_rate && t->io_calls_per_s > 0 && sw > 0 ? t->io_calls_per_s / sw : 0;
}

struct cpu_sample {
        /* cumulative jiffies from /proc/stat */
        uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
        /* fractions over the last window (0..1) */
        double busy, idle_frac, iowait_frac, steal_frac;
        /* /proc/schedstat, when the kernel has it (CONFIG_SCHEDSTATS): cumulative
         * ns all tasks on this CPU waited runnable / ran, and the rate of the former */
        bool have_schedstat;
        uint64_t run_delay_ns, rq_cpu_time_ns;
        double run_delay_ms_per_s;
};

#define WAKE_EDGE_HAVE_SPLIT 1
struct wake_edge {
        pid_t waker_tid, wakee_tid;
        double wakeups_per_s;        /* decayed rate estimate */
        bool have_split;             /* false: the source cannot tell (fallback) */
        double split_fraction;       /* 0..1: waker's CPU != wakee's target_cpu; valid if have_split */
        /*
         * Mean µs from a wake-up waker→wakee, through the wakee waking the
         * waker back, to the waker's next switch-in, over the last burst
         * that timed it (wake_edge_table_time()): on a client's edge to its
         * server, the response time the client waits. NAN: not measured
         * (fallback, a burst sampling one wake-up in several, no
         * sched_switch, too few answers).
         */
        double response_usec;
        /*
         * Split wake-ups waker→wakee (the wakee last ran on another CPU)
         * that followed a split one of the same burst (split_next), and of
         * them those the wakee had not answered in between
         * (split_unanswered: no wake-up wakee→waker since): the waker ran
         * on and woke it again instead of waiting for its answer. A
         * request and its answer alternate, whatever the load: a pipe
         * ping-pong read 0 unanswered of 800-21,000 split wake-ups, quiet
         * and under stress-ng. A pipelined stream's sides each run on
         * while the other works: 56-72 % both ways together, quiet and
         * under that load (30-86 % one way, with which side is the
         * faster for a while). Only
         * split wake-ups count: on one CPU a wakee that preempts its waker
         * answers while the waker is runnable, an answer the tracepoint
         * does not see (a pinned ping-pong read 96 % unanswered there).
         * Sums over the sampler's windows, rounded down: about the
         * latest 64 counts, held through windows that timed the pair only
         * on one CPU, halved a second through windows that timed nothing
         * of it; 0: none counted lately (a sampling period above 1 times
         * nothing).
         */
        unsigned split_next, split_unanswered;
};

struct snapshot {
        uint64_t timestamp_usec;      /* CLOCK_MONOTONIC */
        uint64_t window_usec;
        const struct topology *topo;

        struct task *tasks;
        size_t n_tasks;

        struct cpu_sample *cpus;      /* topo->n_cpus entries */
        double psi_cpu_some_avg10;    /* percent, as /proc/pressure/cpu prints it; -1 if not available */

        /*
         * The threads that ran in the window (util or run delay above 0), for
         * the loops that only care about busy threads: with 10,000 idle
         * threads each walk over every struct task cost ~0.5 ms a pass, and
         * the detectors and planners made six of them. NULL: every task
         * counts (struct-literal tests). Built by the manager after sampling.
         */
        const struct task **active;
        size_t n_active;

        struct wake_edge *edges;
        size_t n_edges;
        const char *wake_source;      /* "perf", "none", ... for affctl status */
        /* the edges were kept from a burst before the last pass (a burst
         * skipped, or a pass expected without one): their response times
         * are no window of this pass's own (false where the wake-up source
         * samples all the time) */
        bool edges_kept;

        /* Other CPU placers this pass (coexist.h): sched_ext, the kubelet's exclusive CPUs. */
        struct coexist coexist;

        /*
         * Where the memory of the processes of pairs being placed is, by NUMA
         * node (memnode.h): filled by memnode_sample_tasks() after detection,
         * only on machines with more than one node; NULL otherwise.
         */
        const struct memnode *memnodes;
        size_t n_memnodes;

        /* Set by the sampler: tid → index into tasks, so snapshot_find_task() is O(1).
         * NULL in snapshots built from struct literals (linear search). */
        const struct sample_table *task_index;
};

static inline size_t snapshot_n_active(const struct snapshot *s) {
        return s->active ? s->n_active : s->n_tasks;
}
static inline const struct task *snapshot_active(const struct snapshot *s, size_t i) {
        return s->active ? s->active[i] : &s->tasks[i];
}

/*
 * The CPUs a plan may place onto: topology_usable() (online, not isolated,
 * not nohz_full) less the CPUs another placer owns (the kubelet's
 * exclusive CPUs). The one place that says "usable" for the planners and
 * the matcher; topology_usable() alone is the hardware's view.
 */
cpumask_t snapshot_usable(const struct snapshot *s);

/* The memory-by-node evidence of t's process (t->proc's PID and start time,
 * or t->id.pid for tasks built without one), or NULL if not known. */
const struct memnode *snapshot_find_memnode(const struct snapshot *s, const struct task *t);

/* Lookup helpers for the pure stages (linear or hashed; O(n) is fine in tests). */
const struct task *snapshot_find_task(const struct snapshot *s, pid_t tid);
/* The same thread, not just the same TID: NULL if the TID now names another one. */
const struct task *snapshot_find_id(const struct snapshot *s, const struct task_id *id);
/* The edge waker→wakee, or NULL. Linear: the sampler's edges are sorted, tests' literals may not be. */
const struct wake_edge *snapshot_find_edge(const struct snapshot *s, pid_t waker, pid_t wakee);
/*
 * A pair's response time in µs: the shorter of its two edges' (the
 * client's wait for an answer to its request; the other way round is the
 * server's wait for the next request, which at a fixed rate is mostly
 * idle). NAN unless both edges have one (wake_edge.response_usec).
 */
double snapshot_pair_response_usec(const struct snapshot *s, pid_t a, pid_t b);
/* The same, of this pass's own burst: NAN where the edges were kept from an
 * older one (edges_kept), whose answers a window before already counted. */
double snapshot_pair_new_response_usec(const struct snapshot *s, pid_t a, pid_t b);
