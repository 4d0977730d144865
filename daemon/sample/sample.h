/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The sampler: every interval, one record per thread of every process and
 * one per CPU, as a struct snapshot (snapshot.h) for the pure stages.
 *
 * Cost is the design constraint (10,000 idle threads at a 1 s
 * interval in at most 0.5 % of one CPU and 16 MiB RSS). Measured on the
 * 2-CPU development VM (kernel 6.18):
 *
 *   open+read+close of /proc/P/task/T/stat        ~4-5 µs
 *                                   .../status     ~6-7 µs
 *                                   .../schedstat  ~3-4 µs
 *                                   .../sched      ~5-9 µs
 *   getdents of /proc/P/task, 10,000 threads      ~7-12 ms (kernel instantiates a dentry per entry)
 *   /proc/P/stat of a 10,000-thread process        ~1.2 ms (walks every thread, twice)
 *   clock_gettime(process CPU clock), 10,000 thr.  ~0.6 ms quiet, 3-6 ms when other work
 *                                                  thrashes the caches; 1 thread ~0.2 µs
 *   getdents of /proc, with 10,000 threads         ~1.5-5 ms (walks every PID, threads too)
 *
 * Reading even one file per thread per pass costs ~50 ms for 10,000 threads
 * (5 % of a CPU), so the sampler does not read what it can prove unchanged:
 *
 *  1. Process gate. The process CPU clock (sum_exec_runtime of all its
 *     threads, live and dead, in ns) is compared with the last pass. Equal
 *     means none of its threads ran: nothing to read, its threads are
 *     "carried" (rates 0, counters as before). Any thread creation or exit
 *     runs code in the process, so it moves the clock too. With a root
 *     prefix other than "/" the clock would name the wrong processes, so
 *     the gate falls back to utime+stime and num_threads from /proc/P/stat.
 *  2. Thread accounting. In a process that ran, threads that ran in the
 *     last few passes ("hot") are read; the others are carried if the
 *     process clock's delta is explained by the hot threads' schedstat
 *     run-time deltas (within 5 ms or 1 % of the window); otherwise cold
 *     threads are searched, most recently active first, then round-robin,
 *     until the delta is explained or max_search_reads threads were read in
 *     the pass; the ones not reached keep their old readings, so their CPU
 *     time is counted when they are read. So a
 *     10,000-thread process with one busy thread costs a few reads, not
 *     10,000, and no pass reads more than a bounded number of cold threads.
 *  3. Per thread: stat (cheap) every time a thread is read; status
 *     (allowed CPUs, context switches) when it ran or every
 *     status_every_passes; schedstat + sched (run delay, migrations: the
 *     "~40 µs per thread" of the sampling budget) when it ran or every
 *     expensive_every_passes, round-robin.
 *  4. Carried threads get their allowed CPUs re-read (status; taskset can
 *     narrow them without the thread running) spread over refresh_passes
 *     passes; name, policy and nice are re-read as soon as a thread runs.
 *  5. A process with many threads that stays idle is checked every 2, 4,
 *     8, 16 passes (the process clock walks all its threads); activity in
 *     a gap shows at the next check, averaged over the gap. One that is
 *     busy but explained by its hot threads has only those read, and its
 *     clock checked every account_every_passes against their sum.
 *  6. Listing /proc walks every PID in the kernel, threads included (2-5 ms
 *     with 10,000 threads here). With process events
 *     (sampler_set_process_events) new processes come from fork notes;
 *     without, from the PIDs handed out since the last pass (/proc/loadavg's
 *     last PID, probed one by one when few). /proc is then listed only every
 *     list_proc_every_passes.
 *
 * Rates are deltas over the actual time between the two readings of each
 * counter ("known up to" times advance while a thread is carried, because
 * its counters are then known unchanged). task->window_usec is the window
 * of util: the last pass, or the gap since its process was last checked
 * (5.), and 0 for a carried thread, meaning the snapshot's window. The
 * status and sched counters of a thread that just became active may span
 * more than one pass (a diluted first rate).
 *
 * Identity: a thread is (tid, start_time). A reused TID starts a new record
 * with no rates. A thread or process that disappears between the directory
 * listing and a read (ENOENT/ESRCH) is left out of the snapshot; that is
 * not an error.
 *
 * Every path goes through the root prefix (util_read_file_at), no globals.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "sample/snapshot.h"
#include "sample/topology.h"

struct sampler;

/* How a process is judged unchanged (see above). */
enum sampler_gate {
        SAMPLER_GATE_AUTO,   /* clock when the root is "/" and /proc is our PID namespace, else stat */
        SAMPLER_GATE_CLOCK,  /* clock_gettime(process CPU clock); only valid for the real /proc */
        SAMPLER_GATE_STAT,   /* utime+stime and num_threads from /proc/P/stat */
        SAMPLER_GATE_NONE,   /* read every thread every pass (benchmark baseline) */
        _SAMPLER_GATE_MAX,
};

/* Finding new processes without listing /proc and without process events:
 * follow the last PID the kernel handed out (/proc/loadavg). */
enum sampler_pid_probe {
        SAMPLER_PID_PROBE_AUTO,   /* where /proc is our PID namespace (the clock gate's condition) */
        SAMPLER_PID_PROBE_ON,     /* also below a fixture root (tests) */
        SAMPLER_PID_PROBE_OFF,
};

/* Tunables; 0 means "default". Defaults are in sample.c with their reasons. */
struct sampler_options {
        enum sampler_gate gate;
        enum sampler_pid_probe pid_probe;
        unsigned status_every_passes;     /* status of an idle thread in an active process */
        unsigned expensive_every_passes;  /* schedstat+sched of an idle thread in an active process */
        unsigned refresh_passes;          /* every carried thread re-read within this many passes */
        unsigned list_every_passes;       /* re-list /proc/P/task of an active process */
        unsigned hot_passes;              /* a thread stays "hot" this many passes after it ran */
        unsigned big_process_threads;     /* processes with this many threads back off when idle... */
        unsigned idle_gate_max_passes;    /* ...to one gate check every 2, 4, ... up to this many passes */
        unsigned list_proc_every_passes;  /* with process events or the PID probe: list /proc this often */
        unsigned max_search_reads;        /* cold threads read per pass to explain a clock delta */
        unsigned account_every_passes;    /* big process its hot threads explain: clock checked this often */
        unsigned kthread_every_passes;    /* kernel threads are checked every this many passes */
};

/* Per-pass figures, for `affctl status` and bench/sample-cost. */
struct sampler_stats {
        uint64_t passes;
        const char *gate;                 /* "clock", "stat", "none" */

        /* capabilities found (true until a read proves otherwise) */
        bool task_schedstat;              /* /proc/P/task/T/schedstat */
        bool task_sched;                  /* /proc/P/task/T/sched (se.nr_migrations) */
        bool cpu_schedstat;               /* /proc/schedstat */
        bool psi;                         /* /proc/pressure/cpu */

        /* last pass */
        uint64_t window_usec;             /* time since the previous pass */
        uint64_t wall_usec;               /* wall time the pass took */
        uint64_t cpu_usec;                /* CPU time the pass took (CLOCK_THREAD_CPUTIME_ID) */
        unsigned processes;               /* processes in the snapshot */
        unsigned processes_active;        /* gate moved: some thread ran */
        unsigned processes_listed;        /* /proc/P/task listed */
        unsigned processes_full;          /* every thread read (no accounting: stat gate, no schedstat) */
        unsigned processes_searched;      /* hot threads did not explain the clock: cold ones searched */
        unsigned processes_skipped;       /* big processes not checked this pass (idle, or explained) */
        bool proc_listed;                 /* /proc was listed (else: known + announced processes) */
        unsigned threads;                 /* threads in the snapshot */
        unsigned threads_read;            /* stat read this pass */
        unsigned threads_carried;         /* proven unchanged, not read */
        unsigned threads_refreshed;       /* carried threads re-read for their attributes */
        unsigned threads_new;
        unsigned threads_gone;            /* exited (or left) since the last pass */
        unsigned threads_vanished;        /* disappeared in the middle of being read */
        unsigned threads_untracked;       /* not recorded: max_threads reached */
        unsigned files_read;              /* every open+read */
        unsigned cheap_reads;             /* task stat + /proc/P/stat gates + per-CPU and PSI files */
        unsigned status_reads;
        unsigned expensive_reads;         /* task schedstat + sched */
        unsigned info_reads;              /* per-process exe/cmdline/cgroup/status for proc_info */
        unsigned gate_calls;              /* process CPU clock reads */
        unsigned errors;                  /* reads that failed other than by exit */

        /* since start */
        uint64_t total_wall_usec, total_cpu_usec;
        uint64_t total_files_read, total_expensive_reads;
        uint64_t events_silent;           /* passes that found PIDs handed out without any fork event */
};

/*
 * root: prefix for /proc and /sys ("/" or NULL = the real root).
 * topo: borrowed, must outlive the sampler or be replaced with
 * sampler_set_topology(). max_threads: records kept at most (MaxThreads=);
 * 0 = 65536. Never fails because a file is missing; only -ENOMEM/-EINVAL.
 */
int sampler_new(const char *root, const struct topology *topo, size_t max_threads, struct sampler **ret);
struct sampler *sampler_free(struct sampler *s);

/* Override tunables (tests, the benchmark). Call before the first pass. */
int sampler_set_options(struct sampler *s, const struct sampler_options *o);

/* MaxThreads= changed by a reload (0 = 65536): a higher limit holds from the
 * next pass; under a lower one the records kept stay until their threads
 * exit, and no new one is added until the count is under it. */
void sampler_set_max_threads(struct sampler *s, size_t max_threads);

/* The lowest WakeRate= of the enabled pair policies
 * (detect_pair_rate_floor(); <= 0: none): a thread switching that often,
 * or 100 times a second where that is lower, may be half of a pair, and
 * gets its io counters read, for the rate of bytes its pair is judged by.
 * A floor lowered for a slower host keeps the bytes of the pairs it lets
 * in; a raised one keeps 100. */
void sampler_set_pair_floor(struct sampler *s, double wake_rate_min_per_s);

/* CPU hotplug: the new topology replaces the old one at once (also in the last snapshot). */
void sampler_set_topology(struct sampler *s, const struct topology *topo);

/*
 * One pass. now_usec is CLOCK_MONOTONIC (util_now_usec()); rates cover the
 * time since the previous pass. *ret_snapshot belongs to the sampler and is
 * valid until the next sampler_sample() or sampler_set_topology(), or
 * sampler_free(); the caller may fill in its edges/wake_source fields.
 * Returns 0, or -errno when /proc itself cannot be listed.
 */
int sampler_sample(struct sampler *s, uint64_t now_usec, struct snapshot **ret_snapshot);

/*
 * Proc connector hints (proc-connector.h). All are optional: without them
 * the gate and the periodic listing find the same things a little later.
 * They only mark state for the next pass; the current snapshot is untouched.
 *   fork: pid is the (new or existing) process, tid the new thread.
 *   exec: re-read the process's proc_info (exe, cmdline, ...).
 *   exit: tid exited; pid == tid means the whole process may be gone.
 */
void sampler_note_fork(struct sampler *s, pid_t pid, pid_t tid);
/* A process's cgroup paths, as proc_info.cgroup and .cgroup_systemd, read now
 * from root's /proc ("" when unreadable); the caller frees both.
 * -ESRCH/-ENOENT: gone. */
int sample_read_cgroup(const char *root, pid_t pid, char **ret_cgroup, char **ret_systemd);
/* The process pid still runs in root's /proc: its stat is there, and not a
 * zombie's (exited, not yet reaped). */
bool sample_process_runs(const char *root, pid_t pid);
void sampler_note_exec(struct sampler *s, pid_t pid);
void sampler_note_exit(struct sampler *s, pid_t pid, pid_t tid);
/* Events were lost (proc_connector_dispatch() returned -ENOBUFS): list /proc next pass. */
void sampler_note_lost(struct sampler *s);
/*
 * The proc connector is (on) or is no longer (off) delivering events. While
 * on, and fed every fork through sampler_note_fork(), /proc is listed only
 * every list_proc_every_passes: listing it walks every PID in the kernel,
 * threads included. Off (the default): /proc is listed every pass.
 */
void sampler_set_process_events(struct sampler *s, bool on);

/*
 * The threads of this pass's wake-up edges of at least min_per_s (either
 * end; none if min_per_s < 0): read at the passes that follow, as long as
 * a thread that ran is (hot_passes), whatever their stat says, where their
 * process is active; a big process backed off as idle is checked at the
 * next pass. So a pair's members have their switch and io rates even on
 * little CPU. A server thread at a few hundred requests a second on a host
 * with cheap system calls may add no tick in a pass, and its time is under
 * the accounting's noise floor: cold, it read 0 switches a second and no
 * bytes, and its pair was judged by its partner alone. Once read, its own
 * count of runs keeps it read while it switches that often. Only marks
 * state for the next passes.
 */
void sampler_want_threads(struct sampler *s, const struct wake_edge *edges, size_t n, double min_per_s);

void sampler_get_stats(const struct sampler *s, struct sampler_stats *ret);

/* The stats as one JSON object (affctl status: "sampler"). */
int sampler_stats_to_json(const struct sampler *s, struct json_object **ret);

const char *sampler_gate_to_string(enum sampler_gate g);
