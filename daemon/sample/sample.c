/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "config/config.h"
#include "sample/sample-internal.h"
#include "sample/sample-table.h"
#include "sample/sample.h"

/*
 * Defaults. Costs are the measurements quoted in sample.h (2-CPU VM):
 * stat ~5 µs, status ~7 µs, schedstat+sched ~10-15 µs per thread here (the
 * ~40 µs of the sampling budget on a busier machine), getdents ~1 µs per task entry.
 */
/* An idle thread in an active process: allowed CPUs and switch counts are
 * only interesting once it runs, which re-reads them at once. */
#define DEFAULT_STATUS_EVERY 30
#define DEFAULT_EXPENSIVE_EVERY 60
/* Carried threads' allowed CPUs re-read within 1800 passes (30 min at 1 s):
 * for 10,000 idle threads that is ~6 status reads per pass. Nothing acts on
 * an idle thread's mask (it is re-read the moment the thread runs, and the
 * applier checks the masks it set live), so this only keeps `affctl tasks`
 * honest; at 300 passes the 34 reads a pass were a sixth of the daemon's CPU
 * time with 10,000 idle threads (path lookups in a 10,000-entry directory). */
#define DEFAULT_REFRESH_PASSES 1800
/* Re-list /proc/P/task of an active process every 60 passes even if its
 * thread count looks unchanged (one exit + one clone in a window): 10 ms for
 * 10,000 threads, 0.17 ms per pass on average. */
#define DEFAULT_LIST_EVERY 60
/* A thread that ran stays "hot" (read every pass its process is active) for
 * 3 passes: a pair or a hog that pauses for one window is not lost. */
#define DEFAULT_HOT_PASSES 3
/* The process clock walks all threads of a process: 0.6 ms for 10,000 idle
 * threads on a quiet VM, 3 ms on the busy shared one (cache misses), more
 * than everything else in a pass. A process with at least 256 threads that
 * stays idle for two checks is then checked every 2, 4, 8, then 16 passes
 * (idle_gate_max_passes). Nothing is lost:
 * the clock covers the whole gap, so activity in it is seen at the next
 * check (at most 16 s late at 1 s), its rates averaged over the gap. */
#define DEFAULT_BIG_PROCESS_THREADS 256
#define DEFAULT_IDLE_GATE_MAX 16
/* The same cost for a big process that is busy: once its hot threads have
 * explained its clock at two checks in a row, only they are read, and the
 * clock is checked every 4th pass against the sum of their run-time deltas
 * since the last check. A cold thread that starts running is found at the
 * next check (at most 3 passes late, its rate averaged since its last read). */
#define DEFAULT_ACCOUNT_EVERY 4
/* Kernel threads are checked every 4th pass, a quarter of them each pass.
 * On an idle machine they are most of the processes and most of the active
 * ones (rcu, ksoftirqd, kworkers, kdamond: 11 of 14 here), so most of a
 * pass; and nothing acts on them: a busy one only counts in its CPU's
 * load, which /proc/stat gives every pass. As with the big-process back-off
 * nothing is lost: the next check's rates cover the whole gap. */
#define DEFAULT_KTHREAD_EVERY 4
/* With fork/exec/exit events (proc connector) new processes are visited from
 * the events and /proc itself is listed every 60 passes only: listing walks
 * every PID in the kernel, threads included (~1.5 ms with 10,000 threads).
 * Lost events (ENOBUFS) list it at once, so this is only a safety net. */
#define DEFAULT_LIST_PROC_EVERY 60
#define PENDING_MAX 4096
/* Without events: /proc/loadavg's last field is the last PID the kernel
 * handed out. Unchanged: nothing was created, /proc need not be listed.
 * Moved by at most 128: those PIDs are probed one by one (status, ~7 µs
 * each, < 1 ms), else /proc is listed. */
#define PID_PROBE_MAX 128
/* cpus_seen covers the last 4 windows. */
#define CPUS_SEEN_WINDOWS 4
/* Accounting: an active process's clock delta not explained by its hot
 * threads' schedstat deltas means a cold thread ran. Below 5 ms (0.5 % of a
 * 1 s window) or 1 % of the window it is noise: the two are read microseconds
 * to milliseconds apart while threads run, and a thread using less than 1 %
 * of a CPU is of no interest to any detector. */
#define UNEXPLAINED_MIN_NS (5 * NSEC_PER_MSEC)
#define UNEXPLAINED_WINDOW_FRACTION 0.01
/* When they do not explain it, the cold threads are searched round-robin,
 * least recently searched first, until the delta is explained or 1,000
 * threads (~10-20 ms) were read in this pass; the search goes on from there
 * next pass. Without the cap, a 10,000-thread pool where random threads
 * wake now and then would cost ~250 ms per pass. */
#define DEFAULT_MAX_SEARCH_READS 1000

#define READ_BUF_SIZE 16384
#define DENTS_MIN 32768
/* getdents of /proc/P/task restarts its walk of the thread list on every
 * call (O(n) each), so a big task directory is read with a big buffer. */
#define DENTS_MAX (1024 * 1024)
#define BIG_BUF_MIN 65536
#define BIG_BUF_MAX (4 * 1024 * 1024)

#define NO_SLOT UINT32_MAX

enum proc_mode {
        MODE_SKIP,      /* not checked this pass (big, idle): its threads stay as they are */
        MODE_CARRY,     /* checked, nothing ran: its threads are carried */
        MODE_TRUSTED,   /* not checked this pass (big, explained): its hot threads are read */
        MODE_ACCOUNT,   /* read hot threads; carry the cold if the clock delta is explained */
        MODE_FULL,      /* read every thread */
};

/*
 * "Known up to": each counter group of a thread has the time at which its
 * cumulative values were last known to be what the record holds; a rate
 * is the delta over now minus that time. A process checked unchanged makes
 * every counter that was known when it was last active known up to the
 * check, without touching its threads: the effective time of a counter is
 *
 *      upto >= p->active_usec ? p->known_usec : upto
 *
 * and is written back (materialized) only when the process is active again.
 */
struct proc_rec {
        struct proc_info info;        /* what tasks point to (task->proc) */
        uint32_t slot;                /* index in s->procs */
        uint32_t generation;          /* bumped on PID reuse: older thread records are dropped */
        uint64_t seen_pass;

        uint32_t first, last;         /* its thread records: a list through thread_priv.next/prev */
        unsigned n_threads;

        uint64_t gate_value;          /* clock ns, or utime+stime ticks */
        unsigned gate_threads;        /* stat gate: num_threads */
        bool gate_valid;
        uint64_t gate_delta;          /* this pass, MODE_ACCOUNT: clock ns delta */

        uint64_t active_usec;         /* last check that found it active (or first seen) */
        uint64_t known_usec;          /* last check */
        unsigned idle_checks;         /* checks without change since */
        uint64_t next_check_pass;     /* big and idle: next pass the gate is checked */
        unsigned explained_checks;    /* MODE_ACCOUNT checks in a row the hot threads explained */
        uint64_t next_account_pass;   /* big and explained: next pass the gate is checked */

        enum proc_mode mode;          /* this pass */
        bool list;                    /* list /proc/P/task this pass */
        bool info_valid, exec_noted, dirty, untracked;
        uint64_t next_list_pass;
        uint64_t cgroup_pass;         /* when info.cgroup was last read */

        struct stat_fields leader;    /* this pass (active processes) */
        uint64_t explained_ns;        /* Σ schedstat run deltas of threads read since the last check */
        bool explained_partial;       /* a thread was read without schedstat since then */
        bool unexplained;             /* MODE_ACCOUNT: the search ran out of budget */
};

struct thread_priv {
        struct proc_rec *proc;
        uint32_t next, prev;          /* in proc->first's list */
        uint32_t generation;
        uint64_t seen_pass;           /* read this pass */
        uint64_t listed_pass;
        uint64_t failed_pass;         /* vanished while being read */
        uint64_t carried_pass;
        uint64_t remove_pass;
        uint64_t last_ran_pass;
        uint64_t wanted_pass;         /* named by a wake-up edge then (sampler_want_threads()) */
        uint64_t active_pass;         /* already put in this pass's active list */
        uint64_t stat_upto, status_upto, schedstat_upto, sched_upto, io_upto;
        uint64_t runs_upto;           /* its count of runs (schedstat) known up to: no thread carry moves it */
        uint64_t next_status_pass, next_expensive_pass;
        int16_t cpu_hist[CPUS_SEEN_WINDOWS];
        uint8_t cpu_hist_pos;
};

/* Threads switching at least pair_floor_per_s (voluntary + involuntary, as
 * last seen) get their io counters read: a ping-pong or a stream switches
 * thousands of times a second, the idle rest of a machine far less, and a
 * pair is found among the former only. One small read a pass for each.
 * This is WakeRate='s default (a side of a pair at that many wake-ups a
 * second switches as often); a lower WakeRate= lowers it
 * (sampler_set_pair_floor()), a higher one does not raise it. */
#define SAMPLE_IO_SWITCHES_MIN_PER_S 100.0

struct sampler {
        char *root;
        const struct topology *topo;
        struct coexist coexist;       /* this pass's other placers, copied into the snapshot */
        size_t max_threads;
        double pair_floor_per_s;      /* switches/s from which a thread may be half of a pair (sampler_set_pair_floor()) */
        struct sampler_options opt;
        enum sampler_gate gate;       /* resolved: CLOCK, STAT or NONE */
        long clk_tck;

        uint64_t pass;
        uint64_t now_usec;            /* time of this pass */
        uint64_t boot_now_usec;       /* CLOCK_BOOTTIME of this pass (start_time's clock); 0: fixture root */
        uint64_t last_usec;           /* time of the previous pass, 0 before the first */

        /* threads: two dense arrays with the same index, tid → index */
        struct task *tasks;
        struct thread_priv *priv;
        size_t n_tasks, allocated;
        struct sample_table tids;
        size_t refresh_cursor;
        uint32_t *doomed;             /* records to drop at the end of the pass ("allocated" entries) */
        unsigned search_budget;       /* cold-thread reads left in this pass */
        size_t n_doomed;

        /* processes: records allocated one by one (task->proc pointers stay valid) */
        struct proc_rec **procs;
        size_t n_procs, allocated_procs;
        struct sample_table pids;

        /* per CPU: CPUMASK_MAX entries, so a hotplug never needs to reallocate
         * (~130 KiB of address space, only the pages of present CPUs touched) */
        struct cpu_sample *cpus, *cpus_prev;
        bool *cpu_have_prev, *cpu_present, *cpu_have_schedstat;

        bool cap_task_schedstat, cap_task_sched, cap_cpu_schedstat, cap_psi, cap_task_io;

        /* process events (proc connector) */
        bool events;                  /* fork/exec/exit events arrive: /proc need not be listed every pass */
        bool events_lost;             /* some were dropped: list /proc on the next pass */
        uint64_t next_proc_list_pass;
        pid_t *pending;               /* new processes announced by fork events */
        size_t n_pending;
        pid_t *visit;                 /* pids to visit when /proc is not listed */
        size_t allocated_visit;
        unsigned forks_noted;         /* fork notes (processes and threads) since the last pass */
        bool pid_probe;               /* no events: follow /proc/loadavg's last PID instead of listing */
        bool last_pid_valid;
        unsigned last_pid, pid_max;

        /* snapshot->active: the threads with non-zero rates, so that nothing
         * downstream walks 10,000 idle threads (one cache miss each, ~1 ms a
         * pass). Rates become non-zero only in thread_read() and zero only in
         * thread_carry(), so this pass's list is drawn from the last one plus
         * the threads read in this pass, by TID (records move when others are
         * removed). */
        pid_t *active_tids;           /* last pass's list, then this pass's reads appended */
        size_t n_active_tids, allocated_active_tids;
        const struct task **active;
        size_t n_active, allocated_active;
        bool active_failed;           /* out of memory: no list, every task is walked */

        struct snapshot snap;
        struct sampler_stats stats;

        char *dents;
        size_t dents_size;
        char *big;
        size_t big_size;
        char buf[READ_BUF_SIZE];
};

static int16_t cpu16(int cpu) {
        return (int16_t) (cpu >= 0 && cpu < CPUMASK_MAX ? cpu : -1);
}

/* ---- setup ----------------------------------------------------------- */

const char *sampler_gate_to_string(enum sampler_gate g) {
        static const char *const names[_SAMPLER_GATE_MAX] = {
                [SAMPLER_GATE_AUTO] = "auto",
                [SAMPLER_GATE_CLOCK] = "clock",
                [SAMPLER_GATE_STAT] = "stat",
                [SAMPLER_GATE_NONE] = "none",
        };
        return g >= 0 && g < _SAMPLER_GATE_MAX ? names[g] : "unknown";
}

/* The process CPU clock of pid (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) in
 * the kernel): the sum_exec_runtime of all its threads, live and dead. Any
 * process may read it; no file is opened. */
static clockid_t process_cpu_clock(pid_t pid) {
        return (clockid_t) ((~(unsigned) pid << 3) | 2u);
}

static int read_process_clock(pid_t pid, uint64_t *ret_ns) {
        struct timespec ts;

        if (clock_gettime(process_cpu_clock(pid), &ts) < 0)
                return errno == EINVAL ? -ESRCH : -errno;
        *ret_ns = (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
        return 0;
}

/* The clock gate names processes by our PID namespace; it is only right for
 * the real /proc, and only if that /proc is our namespace's. */
static bool clock_gate_usable(const char *root) {
        char target[32];
        ssize_t n;
        uint64_t ns;
        int self;

        if (!util_root_is_real(root))
                return false;
        n = readlink("/proc/self", target, sizeof(target) - 1);
        if (n <= 0)
                return false;
        target[n] = '\0';
        if (util_parse_int(target, &self) < 0 || self != getpid())
                return false;
        return read_process_clock(getpid(), &ns) >= 0;
}

static int alloc_cpus(struct sampler *s) {
        s->cpus = calloc(CPUMASK_MAX, sizeof(*s->cpus));
        s->cpus_prev = calloc(CPUMASK_MAX, sizeof(*s->cpus_prev));
        s->cpu_have_prev = calloc(CPUMASK_MAX, sizeof(bool));
        s->cpu_present = calloc(CPUMASK_MAX, sizeof(bool));
        s->cpu_have_schedstat = calloc(CPUMASK_MAX, sizeof(bool));
        if (!s->cpus || !s->cpus_prev || !s->cpu_have_prev || !s->cpu_present || !s->cpu_have_schedstat)
                return -ENOMEM;
        return 0;
}

int sampler_set_options(struct sampler *s, const struct sampler_options *o) {
        struct sampler_options d = *o;

        if (!s || (unsigned) o->gate >= _SAMPLER_GATE_MAX)
                return -EINVAL;
        if (!d.status_every_passes)
                d.status_every_passes = DEFAULT_STATUS_EVERY;
        if (!d.expensive_every_passes)
                d.expensive_every_passes = DEFAULT_EXPENSIVE_EVERY;
        if (!d.refresh_passes)
                d.refresh_passes = DEFAULT_REFRESH_PASSES;
        if (!d.list_every_passes)
                d.list_every_passes = DEFAULT_LIST_EVERY;
        if (!d.hot_passes)
                d.hot_passes = DEFAULT_HOT_PASSES;
        if (!d.big_process_threads)
                d.big_process_threads = DEFAULT_BIG_PROCESS_THREADS;
        if (!d.idle_gate_max_passes)
                d.idle_gate_max_passes = DEFAULT_IDLE_GATE_MAX;
        if (!d.list_proc_every_passes)
                d.list_proc_every_passes = DEFAULT_LIST_PROC_EVERY;
        if (!d.max_search_reads)
                d.max_search_reads = DEFAULT_MAX_SEARCH_READS;
        if (!d.account_every_passes)
                d.account_every_passes = DEFAULT_ACCOUNT_EVERY;
        if (!d.kthread_every_passes)
                d.kthread_every_passes = DEFAULT_KTHREAD_EVERY;

        /* loadavg's last PID is in the reader's PID namespace: only where /proc is ours
         * (the clock gate's condition), unless a test asks for it on a fixture. */
        s->pid_probe = d.pid_probe == SAMPLER_PID_PROBE_ON ||
                       (d.pid_probe == SAMPLER_PID_PROBE_AUTO && clock_gate_usable(s->root));
        s->last_pid_valid = false;

        switch (d.gate) {
        case SAMPLER_GATE_AUTO:
                s->gate = clock_gate_usable(s->root) ? SAMPLER_GATE_CLOCK : SAMPLER_GATE_STAT;
                break;
        case SAMPLER_GATE_CLOCK:
                if (!clock_gate_usable(s->root))
                        return -EOPNOTSUPP;
                s->gate = SAMPLER_GATE_CLOCK;
                break;
        default:
                s->gate = d.gate;
                break;
        }
        s->opt = d;
        return 0;
}

int sampler_new(const char *root, const struct topology *topo, size_t max_threads, struct sampler **ret) {
        struct sampler *s;
        int r;

        if (!topo || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->root = strdup(root && root[0] ? root : "/");
        if (!s->root) {
                free(s);
                return -ENOMEM;
        }
        {
                char b[32];
                int v;
                s->pid_max = util_read_file_at(s->root, "/proc/sys/kernel/pid_max", b, sizeof(b)) > 0 &&
                                             util_parse_int(util_strip(b), &v) >= 0 && v > 0
                                     ? (unsigned) v
                                     : 4194304;   /* the kernel's limit for pid_max */
        }
        s->topo = topo;
        s->max_threads = max_threads ? max_threads : CONFIG_MAX_THREADS_DEFAULT;
        s->pair_floor_per_s = SAMPLE_IO_SWITCHES_MIN_PER_S;
        s->clk_tck = util_clk_tck();
        s->cap_task_schedstat = s->cap_task_sched = s->cap_cpu_schedstat = s->cap_psi = s->cap_task_io = true;
        s->snap.psi_cpu_some_avg10 = -1;

        r = sampler_set_options(s, &(struct sampler_options) {});
        if (r >= 0)
                r = alloc_cpus(s);
        if (r < 0) {
                sampler_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

struct sampler *sampler_free(struct sampler *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_procs; i++) {
                sample_proc_info_done(&s->procs[i]->info);
                free(s->procs[i]);
        }
        free(s->procs);
        sample_table_done(&s->pids);
        free(s->tasks);
        free(s->priv);
        sample_table_done(&s->tids);
        free(s->cpus);
        free(s->cpus_prev);
        free(s->cpu_have_prev);
        free(s->cpu_present);
        free(s->cpu_have_schedstat);
        free(s->dents);
        free(s->big);
        free(s->pending);
        free(s->visit);
        free(s->doomed);
        free(s->active_tids);
        free(s->active);
        free(s->root);
        free(s);
        return NULL;
}

/* Only ever lower: a stream co-located on one CPU switches less than it
 * did split, and is judged by the bytes read here; under a raised floor
 * (WakeRate=2000/s) it would lose them at its first windows. */
void sampler_set_pair_floor(struct sampler *s, double wake_rate_min_per_s) {
        if (s)
                s->pair_floor_per_s = wake_rate_min_per_s > 0
                                              ? MIN(wake_rate_min_per_s, SAMPLE_IO_SWITCHES_MIN_PER_S)
                                              : SAMPLE_IO_SWITCHES_MIN_PER_S;
}

void sampler_set_max_threads(struct sampler *s, size_t max_threads) {
        s->max_threads = max_threads ? max_threads : CONFIG_MAX_THREADS_DEFAULT;
}

void sampler_set_topology(struct sampler *s, const struct topology *topo) {
        if (!s || !topo || topo->n_cpus > CPUMASK_MAX)
                return;
        /* CPUs that went away keep their counters; they are simply not read. */
        s->topo = topo;
        s->snap.topo = topo;
}

/* ---- reading helpers ------------------------------------------------- */

/* Read a small /proc file into s->buf. Returns length or -errno. Every
 * caller's file is a seq_file of one record (util_read_record_at()). */
static ssize_t read_small(struct sampler *s, const char *rel) {
        ssize_t n = util_read_record_at(s->root, rel, s->buf, sizeof(s->buf));

        s->stats.files_read++;
        if (n < 0 && !sample_gone((int) n))
                s->stats.errors++;
        return n;
}

/* Read a possibly large file (/proc/stat with its intr line) into s->big. */
static ssize_t read_big(struct sampler *s, const char *rel) {
        for (;;) {
                ssize_t n;

                if (!s->big) {
                        s->big = malloc(BIG_BUF_MIN);
                        if (!s->big)
                                return -ENOMEM;
                        s->big_size = BIG_BUF_MIN;
                }
                n = util_read_file_at(s->root, rel, s->big, s->big_size);
                s->stats.files_read++;
                if (n != -E2BIG || s->big_size >= BIG_BUF_MAX)
                        return n;
                free(s->big);
                s->big_size *= 4;
                s->big = malloc(s->big_size);
                if (!s->big)
                        return -ENOMEM;
        }
}

/*
 * Call f(s, id, userdata) for each numeric entry of a /proc directory,
 * read with getdents64 into a buffer that grows when a directory fills it
 * (fewer calls; see DENTS_MAX).
 */
static int for_each_pid_entry(struct sampler *s, const char *rel,
                              void (*f)(struct sampler *s, pid_t id, void *userdata), void *userdata) {
        _cleanup_close_ int fd = -1;
        bool filled = false;

        fd = util_open_at(s->root, rel, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return fd;
        if (!s->dents) {
                s->dents = malloc(DENTS_MIN);
                if (!s->dents)
                        return -ENOMEM;
                s->dents_size = DENTS_MIN;
        }
        for (;;) {
                long n = syscall(SYS_getdents64, fd, s->dents, s->dents_size);

                if (n < 0)
                        return errno == ENOENT ? -ENOENT : -errno;
                if (n == 0)
                        break;
                if ((size_t) n > s->dents_size / 2)
                        filled = true;
                for (long off = 0; off < n;) {
                        struct dirent64 *de = (struct dirent64 *) (s->dents + off);
                        const char *name = de->d_name;
                        long v = 0;

                        off += de->d_reclen;
                        if (*name < '1' || *name > '9')
                                continue;
                        for (; *name >= '0' && *name <= '9' && v <= INT32_MAX; name++)
                                v = v * 10 + (*name - '0');
                        if (*name == '\0' && v <= INT32_MAX)
                                f(s, (pid_t) v, userdata);
                }
        }
        if (filled && s->dents_size < DENTS_MAX) {
                char *b = malloc(s->dents_size * 4);
                if (b) {
                        free(s->dents);
                        s->dents = b;
                        s->dents_size *= 4;
                }
        }
        return 0;
}

/* Is /proc/P/task/T still there? Tells "file not supported" from "thread exited". */
static bool thread_dir_exists(struct sampler *s, pid_t pid, pid_t tid) {
        char rel[64], path[PATH_MAX];

        snprintf(rel, sizeof(rel), "/proc/%d/task/%d", (int) pid, (int) tid);
        return util_path_at(path, sizeof(path), s->root, rel) && access(path, F_OK) == 0;
}

/* ---- per CPU ---------------------------------------------------------- */

static void sample_cpus(struct sampler *s, uint64_t window_usec) {
        int n = s->topo->n_cpus;
        struct cpu_sample *prev = s->cpus_prev;
        ssize_t k;

        memcpy(prev, s->cpus, (size_t) n * sizeof(*prev));
        memset(s->cpu_present, 0, (size_t) n * sizeof(bool));

        k = read_big(s, "/proc/stat");
        s->stats.cheap_reads++;
        if (k >= 0)
                (void) sample_parse_proc_stat(s->big, s->cpus, s->cpu_present, n);
        for (int c = 0; c < n; c++) {
                struct cpu_sample *a = &prev[c], *b = &s->cpus[c];
                uint64_t d[8], total = 0;

                b->busy = b->idle_frac = b->iowait_frac = b->steal_frac = 0;
                if (!s->cpu_present[c])
                        continue;   /* offline: fractions 0, counters kept */
                if (!s->cpu_have_prev[c]) {
                        s->cpu_have_prev[c] = true;
                        continue;
                }
                /* iowait can go backwards on NOHZ kernels; clamp each delta at 0. */
#define DELTA(i, f) d[i] = b->f > a->f ? b->f - a->f : 0, total += d[i]
                DELTA(0, user);
                DELTA(1, nice);
                DELTA(2, system);
                DELTA(3, idle);
                DELTA(4, iowait);
                DELTA(5, irq);
                DELTA(6, softirq);
                DELTA(7, steal);
#undef DELTA
                if (total == 0)
                        continue;
                b->busy = (double) (d[0] + d[1] + d[2] + d[5] + d[6]) / (double) total;
                b->idle_frac = (double) d[3] / (double) total;
                b->iowait_frac = (double) d[4] / (double) total;
                b->steal_frac = (double) d[7] / (double) total;
        }

        if (s->cap_cpu_schedstat) {
                bool *have = s->cpu_have_schedstat;

                memset(have, 0, (size_t) n * sizeof(bool));
                k = read_big(s, "/proc/schedstat");
                s->stats.cheap_reads++;
                if (k == -ENOENT)
                        s->cap_cpu_schedstat = false;
                else if (k >= 0) {
                        (void) sample_parse_cpu_schedstat(s->big, s->cpus, have, n);
                        for (int c = 0; c < n; c++) {
                                struct cpu_sample *b = &s->cpus[c];

                                b->run_delay_ms_per_s = 0;
                                if (have[c] && b->have_schedstat && window_usec > 0 &&
                                    b->run_delay_ns >= prev[c].run_delay_ns)
                                        /* ns per µs is ms per s */
                                        b->run_delay_ms_per_s = (double) (b->run_delay_ns - prev[c].run_delay_ns) /
                                                                (double) window_usec;
                                b->have_schedstat = have[c];
                        }
                }
        }

        s->snap.psi_cpu_some_avg10 = -1;
        if (s->cap_psi) {
                double v;

                k = read_small(s, "/proc/pressure/cpu");
                s->stats.cheap_reads++;
                /* Absent without CONFIG_PSI; EOPNOTSUPP with psi=0 on the command line. */
                if (k == -ENOENT || k == -EOPNOTSUPP)
                        s->cap_psi = false;
                else if (k >= 0 && sample_parse_psi_some_avg10(s->buf, &v) >= 0)
                        s->snap.psi_cpu_some_avg10 = v;
        }
}

/* ---- thread records -------------------------------------------------- */

static void cpu_hist_push(struct thread_priv *q, struct task *t, int cpu) {
        int16_t c = cpu16(cpu);
        bool same = true;

        for (unsigned i = 0; i < CPUS_SEEN_WINDOWS; i++)
                if (q->cpu_hist[i] != c)
                        same = false;
        if (same)
                return;   /* steady state: nothing to rebuild */
        q->cpu_hist[q->cpu_hist_pos] = c;
        q->cpu_hist_pos = (uint8_t) ((q->cpu_hist_pos + 1) % CPUS_SEEN_WINDOWS);
        cpumask_zero(&t->cpus_seen);
        for (unsigned i = 0; i < CPUS_SEEN_WINDOWS; i++)
                if (q->cpu_hist[i] >= 0)
                        cpumask_set(&t->cpus_seen, q->cpu_hist[i]);
}

/* New records go first: a search examines them before older ones. */
static void list_add(struct sampler *s, struct proc_rec *p, uint32_t i) {
        struct thread_priv *q = &s->priv[i];

        q->proc = p;
        q->prev = NO_SLOT;
        q->next = p->first;
        if (p->first != NO_SLOT)
                s->priv[p->first].prev = i;
        else
                p->last = i;
        p->first = i;
        p->n_threads++;
}

static void list_add_tail(struct sampler *s, struct proc_rec *p, uint32_t i) {
        struct thread_priv *q = &s->priv[i];

        q->proc = p;
        q->next = NO_SLOT;
        q->prev = p->last;
        if (p->last != NO_SLOT)
                s->priv[p->last].next = i;
        else
                p->first = i;
        p->last = i;
        p->n_threads++;
}

static void list_del(struct sampler *s, uint32_t i) {
        struct thread_priv *q = &s->priv[i];
        struct proc_rec *p = q->proc;

        if (!p)
                return;
        if (q->prev != NO_SLOT)
                s->priv[q->prev].next = q->next;
        else
                p->first = q->next;
        if (q->next != NO_SLOT)
                s->priv[q->next].prev = q->prev;
        else
                p->last = q->prev;
        p->n_threads--;
        q->proc = NULL;
}

/* Record i now lives at slot to (swap-remove): fix the links that point at it. */
static void list_moved(struct sampler *s, uint32_t to) {
        struct thread_priv *q = &s->priv[to];

        if (q->prev != NO_SLOT)
                s->priv[q->prev].next = to;
        else if (q->proc)
                q->proc->first = to;
        if (q->next != NO_SLOT)
                s->priv[q->next].prev = to;
        else if (q->proc)
                q->proc->last = to;
}

/* Make record i a new thread of p (new TID, or a reused one): no history. */
static void thread_reset(struct sampler *s, uint32_t i, struct proc_rec *p, pid_t tid) {
        struct thread_priv *q = &s->priv[i];

        if (q->proc != p) {
                list_del(s, i);
                list_add(s, p, i);
        }
        s->tasks[i] = (struct task) { .id.tid = tid, .last_cpu = -1 };
        *q = (struct thread_priv) { .proc = p, .next = q->next, .prev = q->prev, .generation = p->generation };
        for (unsigned k = 0; k < CPUS_SEEN_WINDOWS; k++)
                q->cpu_hist[k] = -1;
}

static int thread_append(struct sampler *s, struct proc_rec *p, pid_t tid, uint32_t *ret) {
        uint32_t i;
        int r;

        if (s->n_tasks >= s->max_threads)
                return -ENOSPC;
        if (s->n_tasks == s->allocated) {
                size_t na = MIN(MAX(s->allocated * 2, (size_t) 256), s->max_threads);
                struct task *t = realloc(s->tasks, na * sizeof(*t));
                if (!t)
                        return -ENOMEM;
                s->tasks = t;
                struct thread_priv *q = realloc(s->priv, na * sizeof(*q));
                if (!q)
                        return -ENOMEM;
                s->priv = q;
                /* room to doom every record: removal never fails for lack of memory */
                uint32_t *d = realloc(s->doomed, na * sizeof(*d));
                if (!d)
                        return -ENOMEM;
                s->doomed = d;
                s->allocated = na;
        }
        i = (uint32_t) s->n_tasks;
        r = sample_table_put(&s->tids, tid, i);
        if (r < 0)
                return r;
        s->priv[i] = (struct thread_priv) {};
        s->n_tasks++;
        thread_reset(s, i, p, tid);
        *ret = i;
        return 0;
}

static void thread_remove(struct sampler *s, uint32_t i) {
        uint32_t last = (uint32_t) s->n_tasks - 1;

        sample_table_remove(&s->tids, s->tasks[i].id.tid);
        list_del(s, i);
        if (i != last) {
                s->tasks[i] = s->tasks[last];
                s->priv[i] = s->priv[last];
                list_moved(s, i);
                (void) sample_table_put(&s->tids, s->tasks[i].id.tid, i);
        }
        s->n_tasks--;
}

static void doom(struct sampler *s, uint32_t i) {
        if (s->priv[i].remove_pass == s->pass)
                return;
        s->priv[i].remove_pass = s->pass;
        s->doomed[s->n_doomed++] = i;
}

static int cmp_desc(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? 1 : x > y ? -1 : 0;
}

/* Highest index first: a swap-remove only ever moves a record that is kept. */
static void remove_doomed(struct sampler *s) {
        qsort_safe(s->doomed, s->n_doomed, sizeof(*s->doomed), cmp_desc);
        for (size_t k = 0; k < s->n_doomed; k++) {
                thread_remove(s, s->doomed[k]);
                s->stats.threads_gone++;
        }
        s->n_doomed = 0;
}

/* A mark made at pass (0: never) still holds: within hot_passes of it. */
static bool within_hot_passes(const struct sampler *s, uint64_t pass) {
        return pass && pass + s->opt.hot_passes > s->pass;
}

static bool thread_is_hot(const struct sampler *s, const struct thread_priv *q) {
        return within_hot_passes(s, q->last_ran_pass);
}

/* Named by a wake-up edge lately (sampler_want_threads()). */
static bool thread_is_wanted(const struct sampler *s, const struct thread_priv *q) {
        return within_hot_passes(s, q->wanted_pass);
}

static uint64_t effective_upto(const struct proc_rec *p, uint64_t upto) {
        return upto && upto >= p->active_usec ? MAX(upto, p->known_usec) : upto;
}

/* The process is active again: write the lazily advanced times into its threads. */
static void materialize(struct sampler *s, struct proc_rec *p) {
        for (uint32_t i = p->first; i != NO_SLOT; i = s->priv[i].next) {
                struct thread_priv *q = &s->priv[i];
                q->stat_upto = effective_upto(p, q->stat_upto);
                q->status_upto = effective_upto(p, q->status_upto);
                q->schedstat_upto = effective_upto(p, q->schedstat_upto);
                q->sched_upto = effective_upto(p, q->sched_upto);
                /* its count of runs too where the process clock stood still:
                 * then no thread came onto a CPU (a thread carried while its
                 * process ran is another matter: thread_ran_by_clock()). Not
                 * where the gate is the stat's ticks, which a thread may
                 * switch thousands of times without adding. */
                if (s->gate == SAMPLER_GATE_CLOCK)
                        q->runs_upto = effective_upto(p, q->runs_upto);
        }
}

/* Read an optional expensive file of a thread. Returns length, 0 if the
 * kernel does not have it (*cap cleared), or -ESRCH if the thread is gone. */
static ssize_t read_expensive(struct sampler *s, pid_t pid, pid_t tid, const char *file, bool *cap) {
        char rel[96];
        ssize_t n;

        snprintf(rel, sizeof(rel), "/proc/%d/task/%d/%s", (int) pid, (int) tid, file);
        n = read_small(s, rel);
        s->stats.expensive_reads++;
        if (n >= 0)
                return n;
        if (n == -ENOENT && thread_dir_exists(s, pid, tid)) {
                /* The thread is there, the file is not: the kernel lacks it
                 * (CONFIG_SCHED_INFO / CONFIG_SCHED_DEBUG). */
                *cap = false;
                return 0;
        }
        return sample_gone((int) n) ? -ESRCH : n;
}

/*
 * A thread born since the last pass has every counter from this window: its
 * rates over its life are as good as a delta, so a new ping-pong pair can be
 * co-located at the first pass that sees it instead of the second (measured:
 * `perf bench sched pipe` split for 1-2 s was 0.88x pinned over a 16 s run).
 * Only on the real /proc (start_time counts CLOCK_BOOTTIME in clock ticks)
 * and for a thread that lived long enough for a rate: ticks are 10 ms, and
 * a life under 100 ms says more about start-up than about the thread.
 * Returns its age in µs, or 0.
 */
#define BORN_RATES_MIN_USEC (100 * USEC_PER_MSEC)

/* A thread's age in µs at this pass, to a clock tick (0: started in this
 * tick). False where unknown: a fixture root, or no clock tick rate. */
static bool thread_age_usec(const struct sampler *s, uint64_t start_ticks, uint64_t *ret) {
        uint64_t born;

        if (!s->boot_now_usec || s->clk_tck <= 0)
                return false;
        born = start_ticks * USEC_PER_SEC / (uint64_t) s->clk_tck;
        *ret = born < s->boot_now_usec ? s->boot_now_usec - born : 0;
        return true;
}

static uint64_t born_in_window_usec(const struct sampler *s, uint64_t start_ticks) {
        uint64_t age;

        if (!s->last_usec || !thread_age_usec(s, start_ticks, &age) || age == 0)
                return 0;
        if (age < BORN_RATES_MIN_USEC || age >= s->now_usec - s->last_usec)
                return 0;
        return age;
}

/*
 * Read one thread of p. pre: its stat if already read (the leader). Sets
 * its record up to date, creating it if new. A thread that vanishes midway
 * is marked failed (dropped by the sweep). Returns 1 if read, 0 if not.
 */
static bool task_has_activity(const struct task *t) {
        return t->have_rates && (t->util > 0 || t->run_delay_ms_per_s > 0);
}

static void active_note(struct sampler *s, pid_t tid) {
        if (s->n_active_tids == s->allocated_active_tids) {
                size_t n = s->allocated_active_tids ? 2 * s->allocated_active_tids : 64;
                pid_t *a = realloc(s->active_tids, n * sizeof(*a));
                if (!a) {
                        s->active_failed = true;
                        return;
                }
                s->active_tids = a;
                s->allocated_active_tids = n;
        }
        s->active_tids[s->n_active_tids++] = tid;
}

static int cmp_task_ptr(const void *a, const void *b) {
        const struct task *x = *(const struct task *const *) a, *y = *(const struct task *const *) b;
        return x < y ? -1 : x > y;
}

/* End of pass: the candidates that still have non-zero rates, in task order
 * (as a walk of every task would list them), become the snapshot's list and
 * the next pass's candidates. */
static void active_build(struct sampler *s) {
        size_t n = 0;

        if (s->active_failed || s->allocated_active < s->n_active_tids || !s->active) {
                const struct task **a = s->active_failed ? NULL :
                        realloc(s->active, MAX(s->n_active_tids, (size_t) 64) * sizeof(*a));
                if (!a) {
                        /* lost track: walk everything once and start again from the reads */
                        s->active_failed = false;
                        s->n_active = s->n_active_tids = 0;
                        for (size_t i = 0; i < s->n_tasks; i++)
                                if (task_has_activity(&s->tasks[i]))
                                        active_note(s, s->tasks[i].id.tid);
                        s->snap.active = NULL;
                        s->snap.n_active = 0;
                        return;
                }
                s->active = a;
                s->allocated_active = MAX(s->n_active_tids, (size_t) 64);
        }
        for (size_t k = 0; k < s->n_active_tids; k++) {
                uint32_t i;
                if (!sample_table_get(&s->tids, s->active_tids[k], &i) || s->priv[i].active_pass == s->pass ||
                    !task_has_activity(&s->tasks[i]))
                        continue;
                s->priv[i].active_pass = s->pass;
                s->active[n++] = &s->tasks[i];
        }
        qsort_safe(s->active, n, sizeof(*s->active), cmp_task_ptr);
        for (size_t k = 0; k < n; k++)
                s->active_tids[k] = s->active[k]->id.tid;
        s->n_active = s->n_active_tids = n;
        s->snap.active = s->active;
        s->snap.n_active = n;
}

/*
 * sched is the dearest file (~2 KiB of text formatted per read) and only its
 * migration count is used, by detectors of busy threads (hogs, spread
 * groups: tens of % of a CPU). A thread that ran for a moment (a daemon
 * waking up, most of what runs on an ordinary machine) has it read at its
 * periodic expensive read instead; the count is cumulative, so nothing is
 * lost, its rate is spread over the longer gap.
 */
#define SCHED_UTIL_MIN 0.01
static bool busy_enough_for_sched(const struct sampler *s, const struct task *t, const struct thread_priv *q,
                                  const struct stat_fields *f, bool got_schedstat, uint64_t run_ns, uint64_t now) {
        if (got_schedstat && t->have_schedstat && run_ns >= t->run_ns && now > q->schedstat_upto)
                return (double) (run_ns - t->run_ns) >= SCHED_UTIL_MIN * (double) (now - q->schedstat_upto) * 1000.0;
        if (now <= q->stat_upto || s->clk_tck <= 0)
                return true;
        return (double) (f->utime + f->stime - t->utime_ticks - t->stime_ticks) * (double) USEC_PER_SEC /
               (double) s->clk_tck >= SCHED_UTIL_MIN * (double) (now - q->stat_upto);
}

/* What one pass read of one thread. */
struct thread_sample {
        struct stat_fields f;
        struct status_fields st;
        uint64_t run_ns, wait_ns, slices, migrations;
        struct io_counts io;
        bool fresh;             /* first sight (or a new task in the slot) */
        bool ran;               /* ran since the last read */
        bool need_status, need_schedstat, need_sched, need_io;
        bool got_status, got_schedstat, got_sched, got_io;
};

/* The thread's stat, or pre when the caller read it already. False: not
 * read (vanished or broken), counted. */
static bool thread_read_stat(struct sampler *s, pid_t pid, pid_t tid, const struct stat_fields *pre,
                             struct stat_fields *ret) {
        char rel[96];
        uint32_t slot;
        ssize_t n;

        if (pre) {
                *ret = *pre;
                return true;
        }
        snprintf(rel, sizeof(rel), "/proc/%d/task/%d/stat", (int) pid, (int) tid);
        n = read_small(s, rel);
        s->stats.cheap_reads++;
        if (n >= 0 && sample_parse_stat(s->buf, ret) >= 0)
                return true;
        if (sample_table_get(&s->tids, tid, &slot))
                s->priv[slot].failed_pass = s->pass;
        if (n < 0 && sample_gone((int) n))
                s->stats.threads_vanished++;
        else if (n >= 0)
                s->stats.errors++;
        return false;
}

/* The thread's slot: its own, a new one, or its own reset for a new task
 * in it (ts->fresh). False: no room to track it. */
static bool thread_slot(struct sampler *s, struct proc_rec *p, pid_t tid, struct thread_sample *ts,
                        uint32_t *ret) {
        uint32_t i;

        if (!sample_table_get(&s->tids, tid, &i)) {
                if (thread_append(s, p, tid, &i) < 0) {
                        s->stats.threads_untracked++;
                        p->untracked = true;
                        return false;
                }
                ts->fresh = true;
        } else if (s->priv[i].proc != p || s->priv[i].generation != p->generation ||
                   s->tasks[i].id.start_time != ts->f.start_time || s->priv[i].seen_pass == 0 ||
                   s->priv[i].remove_pass == s->pass) {
                thread_reset(s, i, p, tid);
                ts->fresh = true;
        }
        *ret = i;
        return true;
}

/*
 * Whether the thread ran since its record was read, by a stat of it read
 * now: its ticks, its CPU, or running now. A thread that runs a little at
 * a time can look idle by all three: a pipe peer that switches 3,000 times
 * a second on 1 % of a CPU stays on its CPU and adds a 10 ms tick about
 * once a second. Where its schedstat is read as well (every pass of a
 * process gated by its clock), its count of runs tells a chatty one:
 * thread_ran_by_clock().
 */
static bool stat_shows_run(const struct task *t, const struct stat_fields *f) {
        return f->utime + f->stime != t->utime_ticks + t->stime_ticks || f->processor != t->last_cpu ||
               f->state == 'R';
}

/* Which of status, schedstat, sched and io this pass reads, for ts->ran. */
static void thread_plan_reads(const struct sampler *s, const struct proc_rec *p, const struct task *t,
                              const struct thread_priv *q, struct thread_sample *ts) {
        ts->need_status = ts->fresh || ts->ran || s->pass >= q->next_status_pass;
        /* MODE_ACCOUNT needs every read thread's run time to judge the cold ones. */
        ts->need_schedstat = s->cap_task_schedstat &&
                             (ts->fresh || ts->ran || p->mode == MODE_ACCOUNT || p->mode == MODE_TRUSTED ||
                              s->pass >= q->next_expensive_pass);
        ts->need_sched = s->cap_task_sched && (ts->fresh || ts->ran || s->pass >= q->next_expensive_pass);
        /* with status, so both rates cover one window; a thread seen for the
         * first time is asked once its status is read (thread_read_status()),
         * and one with no rates yet (too young at its first pass) whose io
         * was read then is asked again, for its first rate of bytes */
        ts->need_io = s->cap_task_io && ts->need_status && !ts->fresh &&
                      (task_switches_per_s(t) >= s->pair_floor_per_s ||
                       (!t->have_rates && q->io_upto));
}

/*
 * A thread seen for the first time: its io counters too when it has
 * switched pair_floor_per_s times a second over its life (for
 * one older than a second: that many times in all), so that a pair of new
 * threads has a rate of bytes at the pass that first sees it switching
 * (since birth, as its other rates: rates_since_birth()) and the change
 * made then is judged by its bytes. A new stream co-located at its second
 * pass was otherwise judged by its switches; and a pipe ping-pong seen by
 * a pass brought forward for its fork, a few ms old and under 100
 * switches, had no io read there nor at the next pass (its young rates are
 * none, BORN_RATES_MIN_USEC), and was judged by its switches (a CI run of
 * tests/daemon-metrics.sh under ASan).
 */
static bool fresh_needs_io(const struct sampler *s, const struct thread_sample *ts) {
        uint64_t age;
        double n;

        if (!s->cap_task_io || !ts->fresh || !ts->got_status || !ts->st.have_ctxt)
                return false;
        n = (double) (ts->st.nvcsw + ts->st.nivcsw);
        if (n >= s->pair_floor_per_s)
                return true;
        /* younger than a second: its switches over its age, a tick at least */
        return thread_age_usec(s, ts->f.start_time, &age) && age < USEC_PER_SEC &&
               n >= s->pair_floor_per_s *
                            MAX((double) age / (double) USEC_PER_SEC, 1.0 / (double) s->clk_tck);
}

/*
 * Its stat said it did not run, but it came onto a CPU at least
 * pair_floor_per_s times a second since its count of runs
 * (schedstat) was last read: a chatty thread, read as one that ran, its
 * status and io with it. Else, on a fast host, a pipe peer on 1 % of a CPU
 * had its switches read every status_every_passes only, read 0 switches a
 * second at the passes between, and had no rate of bytes for its pair to
 * be judged by (a CI host where tests/test-sample-born.c's chatter
 * switched 3,000 times a second). Not for any run at all: 1,000 threads
 * that each wake 10 times a second were then all read in full every pass,
 * 3.9 % of a CPU against 1.3 %. Nor for kernel threads, which nothing acts
 * on. The window is runs_upto's, which a thread's carry does not move: a
 * pool thread carried for ten passes at 10 runs a second would otherwise
 * read as 100 a second. Its process's idle checks do (materialize()): a
 * thread that starts chatting after idle seconds is counted from the last
 * of them, not diluted over them.
 */
static void thread_ran_by_clock(const struct sampler *s, const struct proc_rec *p, const struct task *t,
                                const struct thread_priv *q, struct thread_sample *ts, uint64_t now) {
        double runs_per_s;

        if (ts->fresh || ts->ran || (ts->f.flags & SAMPLE_PF_KTHREAD) || !ts->got_schedstat || !t->have_schedstat ||
            !q->runs_upto || now <= q->runs_upto || ts->slices < t->slices)
                return;
        runs_per_s = (double) (ts->slices - t->slices) * (double) USEC_PER_SEC / (double) (now - q->runs_upto);
        if (runs_per_s < s->pair_floor_per_s)
                return;
        ts->ran = true;
        thread_plan_reads(s, p, t, q, ts);
        /* the io threshold is met by its runs: its switch rate as last seen may be 0 */
        ts->need_io = s->cap_task_io && ts->need_status;
}

/* Its status, and whether that asks for its io. False: the thread is gone (counted). */
static bool thread_read_status(struct sampler *s, pid_t pid, pid_t tid, struct thread_priv *q,
                               struct thread_sample *ts) {
        char rel[96];
        ssize_t n;

        snprintf(rel, sizeof(rel), "/proc/%d/task/%d/status", (int) pid, (int) tid);
        n = read_small(s, rel);
        s->stats.status_reads++;
        if (n < 0) {
                /* status exists on every kernel: ENOENT means the thread is gone */
                q->failed_pass = s->pass;
                if (sample_gone((int) n))
                        s->stats.threads_vanished++;
                return false;
        }
        ts->got_status = sample_parse_status(s->buf, &ts->st) >= 0;
        ts->need_io = ts->need_io || fresh_needs_io(s, ts);
        return true;
}

/* Read what thread_plan_reads() chose. False: the thread is gone (counted). */
static bool thread_read_files(struct sampler *s, const struct proc_rec *p, pid_t tid, const struct task *t,
                              struct thread_priv *q, struct thread_sample *ts, uint64_t now) {
        pid_t pid = p->info.pid;
        bool status_read = ts->need_status;
        ssize_t n;

        /* status first: it is there on every kernel, so a thread without it is gone */
        if (status_read && !thread_read_status(s, pid, tid, q, ts))
                return false;
        if (ts->need_schedstat) {
                n = read_expensive(s, pid, tid, "schedstat", &s->cap_task_schedstat);
                if (n < 0)
                        goto vanished;
                ts->got_schedstat = n > 0 &&
                                    sample_parse_schedstat(s->buf, &ts->run_ns, &ts->wait_ns, &ts->slices) >= 0;
                thread_ran_by_clock(s, p, t, q, ts, now);
        }
        if (ts->need_status && !status_read && !thread_read_status(s, pid, tid, q, ts))
                return false;
        if (ts->need_sched && ts->ran && s->pass < q->next_expensive_pass &&
            !busy_enough_for_sched(s, t, q, &ts->f, ts->got_schedstat, ts->run_ns, now))
                ts->need_sched = false;
        if (ts->need_sched) {
                n = read_expensive(s, pid, tid, "sched", &s->cap_task_sched);
                if (n < 0)
                        goto vanished;
                ts->got_sched = n > 0 && sample_parse_sched_migrations(s->buf, &ts->migrations) >= 0;
        }
        if (ts->need_io) {
                n = read_expensive(s, pid, tid, "io", &s->cap_task_io);
                if (n < 0 && n != -ESRCH) {
                        /* another user's thread without ptrace access: no figure, not an error */
                        n = 0;
                } else if (n < 0)
                        goto vanished;
                ts->got_io = n > 0 && sample_parse_io(s->buf, &ts->io) >= 0;
        }
        return true;

vanished:
        q->failed_pass = s->pass;
        s->stats.threads_vanished++;
        return false;
}

/* Rates over the window since the last read of a thread seen before. */
static void rates_since_last(const struct sampler *s, struct task *t, const struct thread_priv *q,
                             const struct thread_sample *ts, uint64_t now) {
        const struct stat_fields *f = &ts->f;
        const struct status_fields *st = &ts->st;
        uint64_t w = now > q->stat_upto ? now - q->stat_upto : 0;

        t->window_usec = w;
        t->rates_since_birth = false;
        t->util = 0;
        if (w > 0) {
                if (ts->got_schedstat && t->have_schedstat && q->schedstat_upto == q->stat_upto &&
                    ts->run_ns >= t->run_ns)
                        /* ns-precise when both ends of the window have schedstat */
                        t->util = (double) (ts->run_ns - t->run_ns) / ((double) w * 1000.0);
                else
                        t->util = (double) (f->utime + f->stime - t->utime_ticks - t->stime_ticks) *
                                  (double) USEC_PER_SEC / (double) s->clk_tck / (double) w;
        }
        t->util = t->util < 0 ? 0 : t->util > 1.0 ? 1.0 : t->util;

        t->nvcsw_per_s = t->nivcsw_per_s = 0;
        if (ts->got_status && st->have_ctxt && q->status_upto && now > q->status_upto &&
            st->nvcsw >= t->nvcsw && st->nivcsw >= t->nivcsw) {
                double dt = (double) (now - q->status_upto) / (double) USEC_PER_SEC;
                t->nvcsw_per_s = (double) (st->nvcsw - t->nvcsw) / dt;
                t->nivcsw_per_s = (double) (st->nivcsw - t->nivcsw) / dt;
        }
        t->run_delay_ms_per_s = 0;
        if (ts->got_schedstat && t->have_schedstat && q->schedstat_upto && now > q->schedstat_upto &&
            ts->wait_ns >= t->wait_ns)
                t->run_delay_ms_per_s = (double) (ts->wait_ns - t->wait_ns) / (double) (now - q->schedstat_upto);
        t->migrations_per_s = 0;
        t->migrations_window_usec = 0;
        if (ts->got_sched && t->have_migrations && q->sched_upto && now > q->sched_upto &&
            ts->migrations >= t->nr_migrations) {
                t->migrations_window_usec = now - q->sched_upto;
                t->migrations_per_s = (double) (ts->migrations - t->nr_migrations) * (double) USEC_PER_SEC /
                                      (double) t->migrations_window_usec;
        }
        t->have_io_rate = ts->got_io && t->have_io && q->io_upto && now > q->io_upto && ts->io.bytes >= t->io_bytes &&
                          ts->io.calls >= t->io_calls;
        t->io_bytes_per_s = t->io_calls_per_s = 0;
        if (t->have_io_rate) {
                double per_s = (double) USEC_PER_SEC / (double) (now - q->io_upto);

                t->io_bytes_per_s = (double) (ts->io.bytes - t->io_bytes) * per_s;
                t->io_calls_per_s = (double) (ts->io.calls - t->io_calls) * per_s;
        }
}

/* A thread born in this window: rates over its whole life. */
static void rates_since_birth(const struct sampler *s, struct task *t, const struct thread_sample *ts,
                              uint64_t born_usec) {
        double age_s = (double) born_usec / (double) USEC_PER_SEC;
        bool ctxt = ts->got_status && ts->st.have_ctxt;

        t->window_usec = born_usec;
        t->rates_since_birth = true;
        /* a new thread's io counters start at 0 */
        t->have_io_rate = ts->got_io;
        t->io_bytes_per_s = ts->got_io ? (double) ts->io.bytes / age_s : 0;
        t->io_calls_per_s = ts->got_io ? (double) ts->io.calls / age_s : 0;
        t->util = ts->got_schedstat ? (double) ts->run_ns / ((double) born_usec * 1000.0)
                                    : (double) (ts->f.utime + ts->f.stime) / (double) s->clk_tck / age_s;
        t->util = t->util < 0 ? 0 : t->util > 1.0 ? 1.0 : t->util;
        t->nvcsw_per_s = ctxt ? (double) ts->st.nvcsw / age_s : 0;
        t->nivcsw_per_s = ctxt ? (double) ts->st.nivcsw / age_s : 0;
        t->run_delay_ms_per_s = ts->got_schedstat ? (double) ts->wait_ns / (double) born_usec : 0;
        t->migrations_per_s = ts->got_sched ? (double) ts->migrations / age_s : 0;
}

/* The counters read become the record's, and the next reads are scheduled. */
static void counters_keep(const struct sampler *s, struct proc_rec *p, pid_t tid, struct task *t,
                          struct thread_priv *q, const struct thread_sample *ts, uint64_t now) {
        if (ts->got_schedstat) {
                if (!p->explained_partial)
                        p->explained_ns += ts->fresh || !t->have_schedstat || ts->run_ns < t->run_ns
                                                   ? ts->run_ns : ts->run_ns - t->run_ns;
                t->run_ns = ts->run_ns;
                t->wait_ns = ts->wait_ns;
                t->slices = ts->slices;
                t->have_schedstat = true;
                q->schedstat_upto = q->runs_upto = now;
        } else
                p->explained_partial = true;
        if (ts->got_sched) {
                t->nr_migrations = ts->migrations;
                t->have_migrations = true;
                q->sched_upto = now;
        }
        /* a counter not read this time is stale: the next rate needs a fresh pair */
        t->have_io = ts->got_io;
        if (ts->got_io) {
                t->io_bytes = ts->io.bytes;
                t->io_calls = ts->io.calls;
                q->io_upto = now;
        }
        if (ts->need_schedstat || ts->need_sched)
                q->next_expensive_pass = s->pass + (ts->fresh ? 1 + (unsigned) tid % s->opt.expensive_every_passes
                                                              : s->opt.expensive_every_passes);
        if (ts->got_status) {
                if (ts->st.have_allowed)
                        t->allowed = ts->st.allowed;
                if (ts->st.have_ctxt) {
                        t->nvcsw = ts->st.nvcsw;
                        t->nivcsw = ts->st.nivcsw;
                        q->status_upto = now;
                }
        }
        if (ts->need_status)
                q->next_status_pass = s->pass + (ts->fresh ? 1 + (unsigned) tid % s->opt.status_every_passes
                                                           : s->opt.status_every_passes);
}

/* Identity and the stat fields, as of this read. */
static void identity_keep(struct proc_rec *p, pid_t tid, struct task *t, const struct stat_fields *f) {
        t->id = (struct task_id) { .pid = p->info.pid, .tid = tid, .start_time = f->start_time };
        t->proc = &p->info;
        memcpy(t->comm, f->comm, sizeof(t->comm));
        t->kthread = f->flags & SAMPLE_PF_KTHREAD;
        t->policy = sample_policy_from_kernel(f->policy);
        t->nice = f->nice;
        t->last_cpu = f->processor;
        t->utime_ticks = f->utime;
        t->stime_ticks = f->stime;
}

/* One thread of process p: read it, update its record and rates. 1: read;
 * 0: not (gone, broken, or no room), counted in s->stats. */
static int thread_read(struct sampler *s, struct proc_rec *p, pid_t tid, const struct stat_fields *pre,
                       uint64_t now) {
        struct thread_sample ts = {};
        uint64_t born_usec = 0;
        struct thread_priv *q;
        struct task *t;
        uint32_t i;

        if (!thread_read_stat(s, p->info.pid, tid, pre, &ts.f))
                return 0;
        s->stats.threads_read++;
        if (!thread_slot(s, p, tid, &ts, &i))
                return 0;
        t = &s->tasks[i];
        q = &s->priv[i];
        ts.ran = !ts.fresh && stat_shows_run(t, &ts.f);
        thread_plan_reads(s, p, t, q, &ts);
        if (!thread_read_files(s, p, tid, t, q, &ts, now))
                return 0;

        /* Everything read: update the record. */
        if (!ts.fresh)
                rates_since_last(s, t, q, &ts, now);
        else if ((born_usec = born_in_window_usec(s, ts.f.start_time)) > 0)
                rates_since_birth(s, t, &ts, born_usec);
        counters_keep(s, p, tid, t, q, &ts, now);
        identity_keep(p, tid, t, &ts.f);
        t->have_rates = !ts.fresh || born_usec > 0;
        q->stat_upto = now;
        /* At first sight, a thread that has used CPU before (1 ms, or a tick) is
         * treated as recently active: in a big pool it is the likely one to run. */
        if (ts.fresh && (ts.got_schedstat ? ts.run_ns >= NSEC_PER_MSEC : ts.f.utime + ts.f.stime > 0))
                ts.ran = true;
        if (ts.ran) {
                q->last_ran_pass = s->pass;
                /* Most recently active first: a search for unexplained CPU time finds
                 * a thread that was busy a while ago before the ones that never ran.
                 * (Callers that walk this list saved their next already.) */
                if (p->first != i) {
                        list_del(s, i);
                        list_add(s, p, i);
                }
        }
        cpu_hist_push(q, t, ts.f.processor);
        q->seen_pass = s->pass;
        if (ts.fresh)
                s->stats.threads_new++;
        if (task_has_activity(t))
                active_note(s, tid);
        return 1;
}

/*
 * A thread not read this pass whose process is known idle since its last
 * check (or, for a cold thread of an active process, whose share of the
 * process clock is below the noise): rates 0 over the pass. window_usec 0
 * means "the snapshot's window" (snapshot.h). Threads of a process carried
 * this many times in a row are already in this state and are not touched.
 */
static void thread_carry(struct sampler *s, uint32_t i) {
        struct task *t = &s->tasks[i];
        struct thread_priv *q = &s->priv[i];

        t->util = t->nvcsw_per_s = t->nivcsw_per_s = t->run_delay_ms_per_s = t->migrations_per_s = 0;
        t->migrations_window_usec = 0;
        t->io_bytes_per_s = t->io_calls_per_s = 0;
        t->have_io_rate = false;
        t->have_rates = true;
        t->window_usec = 0;
        t->rates_since_birth = false;
        cpu_hist_push(q, t, t->last_cpu);
        q->carried_pass = s->pass;
}

/* A cold thread of an active process: carried, and since its process ran,
 * its "known up to" times are moved by hand (only those known at the last check). */
static void thread_carry_active(struct sampler *s, uint32_t i, uint64_t prev_known) {
        struct thread_priv *q = &s->priv[i];
        uint64_t now = s->now_usec;

        thread_carry(s, i);
        if (q->stat_upto >= prev_known)
                q->stat_upto = now;
        if (q->status_upto >= prev_known)
                q->status_upto = now;
        if (q->schedstat_upto >= prev_known)
                q->schedstat_upto = now;
        if (q->sched_upto >= prev_known)
                q->sched_upto = now;
        /* a thread that did not run made no read() or write() either: else
         * its next calls per second would span two windows against one for
         * its switches, and a stream would read as half one */
        if (q->io_upto >= prev_known)
                q->io_upto = now;
}

/* Re-read a carried thread's allowed CPUs (status): someone may narrow them
 * (taskset) without the thread running. Name, policy and nice are re-read
 * from stat as soon as it runs; nothing acts on an idle thread. */
static void thread_refresh(struct sampler *s, uint32_t i) {
        struct task *t = &s->tasks[i];
        struct status_fields st;
        char rel[96];
        ssize_t n;

        snprintf(rel, sizeof(rel), "/proc/%d/task/%d/status", (int) t->id.pid, (int) t->id.tid);
        n = read_small(s, rel);
        s->stats.status_reads++;
        if (n < 0) {
                doom(s, i);   /* exited; a reused TID is found by its process's listing */
                s->stats.threads_carried--;   /* it was counted as carried */
                return;
        }
        /* Allowed CPUs only. The counters stay as last read with their "known up
         * to" times, so whatever they moved by is counted when next read. */
        if (sample_parse_status(s->buf, &st) >= 0 && st.have_allowed)
                t->allowed = st.allowed;
        s->stats.threads_refreshed++;
}

/* ---- processes -------------------------------------------------------- */

static struct proc_rec *proc_lookup(struct sampler *s, pid_t pid) {
        uint32_t slot;
        return sample_table_get(&s->pids, pid, &slot) ? s->procs[slot] : NULL;
}

static struct proc_rec *proc_add(struct sampler *s, pid_t pid) {
        struct proc_rec *p;

        if (s->n_procs == s->allocated_procs) {
                size_t na = MAX(s->allocated_procs * 2, (size_t) 256);
                struct proc_rec **n = realloc(s->procs, na * sizeof(*n));
                if (!n)
                        return NULL;
                s->procs = n;
                s->allocated_procs = na;
        }
        p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        if (sample_table_put(&s->pids, pid, (uint32_t) s->n_procs) < 0) {
                free(p);
                return NULL;
        }
        p->info.pid = pid;
        p->first = p->last = NO_SLOT;
        p->slot = (uint32_t) s->n_procs;
        s->procs[s->n_procs++] = p;
        return p;
}

/* Its threads must be gone already. */
static void proc_remove(struct sampler *s, struct proc_rec *p) {
        size_t last = s->n_procs - 1, slot = p->slot;

        sample_table_remove(&s->pids, p->info.pid);
        if (slot != last) {
                s->procs[slot] = s->procs[last];
                s->procs[slot]->slot = (uint32_t) slot;
                (void) sample_table_put(&s->pids, s->procs[slot]->info.pid, (uint32_t) slot);
        }
        s->n_procs--;
        sample_proc_info_done(&p->info);
        free(p);
}

/* The gate: 1 if p (known) is unchanged since its last check, 0 if active,
 * -ESRCH if the process is gone. *whole gets /proc/P/stat with the stat gate. */
static int proc_gate(struct sampler *s, pid_t pid, struct proc_rec *p, uint64_t *ret_value,
                     unsigned *ret_threads, struct stat_fields *whole, bool *have_whole) {
        char rel[64];
        ssize_t n;
        int r;

        *have_whole = false;
        *ret_threads = 0;
        switch (s->gate) {
        case SAMPLER_GATE_CLOCK:
                s->stats.gate_calls++;
                r = read_process_clock(pid, ret_value);
                if (r < 0)
                        return r;
                break;
        case SAMPLER_GATE_STAT:
                snprintf(rel, sizeof(rel), "/proc/%d/stat", (int) pid);
                n = read_small(s, rel);
                s->stats.cheap_reads++;
                if (n < 0)
                        return sample_gone((int) n) ? -ESRCH : (int) n;
                if (sample_parse_stat(s->buf, whole) < 0) {
                        s->stats.errors++;
                        return -EINVAL;
                }
                *have_whole = true;
                *ret_value = whole->utime + whole->stime;
                *ret_threads = whole->num_threads;
                break;
        default:
                *ret_value = 0;
                return 0;
        }
        if (!p || !p->gate_valid || p->dirty || p->exec_noted)
                return 0;
        if (*have_whole && whole->start_time != p->info.start_time)
                return 0;
        return *ret_value == p->gate_value && *ret_threads == p->gate_threads;
}

/* A kernel thread's next check: the passes where (pass + pid) % every is 0,
 * so they spread evenly over the passes. Only with the clock gate, whose
 * kill(pid, 0) drops an exited one at once while it is not checked (with
 * the stat gate that read is the check: nothing would be saved). */
static void kthread_back_off(struct sampler *s, struct proc_rec *p) {
        unsigned every = s->opt.kthread_every_passes;

        if (every > 1 && s->gate == SAMPLER_GATE_CLOCK && p->info_valid && p->info.kthread)
                p->next_check_pass = MAX(p->next_check_pass,
                                         s->pass + every - (s->pass + (unsigned) p->info.pid) % every);
}

/* Steady: carried so many times in a row that its threads' rates are 0 and
 * their cpus_seen has decayed to one CPU; nothing per thread changes. */
static bool proc_steady(const struct proc_rec *p) {
        return p->idle_checks > CPUS_SEEN_WINDOWS;
}

/* Not read this pass: visited already, exited, or not due (the gate's
 * back-off). Returns true if the visit ends here. */
static bool proc_not_due(struct sampler *s, struct proc_rec *p, pid_t pid) {
        if (!p)
                return false;
        if (p->seen_pass == s->pass)
                return true;   /* visited already (a pending pid that was also listed) */
        /* Skipping the gate must not keep an exited process: with the clock gate
         * PIDs are ours, and kill(pid, 0) tells cheaply that it is gone. */
        if (s->gate == SAMPLER_GATE_CLOCK && (s->pass < p->next_check_pass || s->pass < p->next_account_pass) &&
            kill(pid, 0) < 0 && errno == ESRCH)
                return true;
        if (!p->gate_valid || p->dirty || p->exec_noted)
                return false;
        if (s->pass < p->next_check_pass)
                /* Big and idle, or a kernel thread: not checked this pass. */
                p->mode = MODE_SKIP;
        else if (s->pass < p->next_account_pass)
                /* Big and busy, its hot threads explain it: read them, check later. */
                p->mode = MODE_TRUSTED;
        else
                return false;
        p->list = false;
        p->seen_pass = s->pass;
        s->stats.processes_skipped++;
        return true;
}

/* The gate says nothing ran: carry it, and back off a big one. */
static void proc_carry(struct sampler *s, struct proc_rec *p) {
        p->mode = MODE_CARRY;
        p->list = false;
        p->seen_pass = s->pass;
        p->known_usec = s->now_usec;
        p->idle_checks++;
        p->explained_checks = 0;
        p->next_account_pass = 0;
        p->explained_ns = 0;
        p->explained_partial = false;
        /* Back off after two idle checks: 2, 4, 8, 16 passes. (cpus_seen of its
         * threads then decays per check, not per pass; they are idle.) */
        if (p->idle_checks >= 2 && p->n_threads >= s->opt.big_process_threads) {
                unsigned k = MIN(p->idle_checks - 1, 16u);
                p->next_check_pass = s->pass + MIN(1u << k, s->opt.idle_gate_max_passes);
        }
        kthread_back_off(s, p);
}

/* The leader's own stat: start time (PID reuse), thread count, name. */
static int proc_leader_read(struct sampler *s, pid_t pid, struct stat_fields *ret) {
        char rel[64];
        ssize_t n;

        snprintf(rel, sizeof(rel), "/proc/%d/task/%d/stat", (int) pid, (int) pid);
        n = read_small(s, rel);
        s->stats.cheap_reads++;
        if (n < 0 || sample_parse_stat(s->buf, ret) < 0) {
                if (n >= 0)
                        s->stats.errors++;
                return -ENOENT;
        }
        return 0;
}

/* The record of the process the leader belongs to: a reused PID starts over. */
static struct proc_rec *proc_rec_for(struct sampler *s, struct proc_rec *p, pid_t pid,
                                     const struct stat_fields *leader, bool *ret_fresh) {
        *ret_fresh = false;
        if (p && p->info.start_time != leader->start_time) {
                /* PID reused: a different process. Its old threads are dropped by
                 * generation; nothing carries over. */
                sample_proc_info_done(&p->info);
                p->info.pid = pid;
                p->generation++;
                p->info_valid = p->gate_valid = false;
        }
        if (!p) {
                p = proc_add(s, pid);
                if (!p) {
                        s->stats.errors++;
                        return NULL;
                }
                *ret_fresh = true;
        }
        return p;
}

/*
 * An active process's cgroup is read again every this many passes: one
 * moved without an exec (a desktop launcher's app scope, an admin's write
 * to cgroup.procs, a service moving its workers into child groups) would
 * keep its old path for its life, and Cgroup=, Unit= and Scope= would
 * match where it was. One small file per active process.
 */
#define PROC_CGROUP_RECHECK_PASSES 10

static void proc_cgroup_refresh(struct sampler *s, struct proc_rec *p, pid_t pid) {
        _cleanup_free_ char *cg = NULL, *sd = NULL, *unit = NULL;
        int r;

        p->cgroup_pass = s->pass;
        s->stats.files_read++;
        r = sample_read_cgroup_unit(s->root, pid, &cg, &sd, &unit);
        if (r < 0) {
                if (!sample_gone(r))
                        s->stats.errors++;
                return;
        }
        if (streq_ptr(cg, p->info.cgroup) && streq_ptr(sd, p->info.cgroup_systemd))
                return;
        free(p->info.cgroup);
        free(p->info.cgroup_systemd);
        free(p->info.unit);
        p->info.cgroup = TAKE_PTR(cg);
        p->info.cgroup_systemd = TAKE_PTR(sd);
        p->info.unit = TAKE_PTR(unit);
}

/* New, exec'ed (connector), or renamed: exec changes the name, so this
 * catches exec without the connector too. */
static void proc_info_refresh(struct sampler *s, struct proc_rec *p, pid_t pid, const struct stat_fields *leader) {
        int r;

        if (p->info_valid && !p->exec_noted && streq(p->info.comm, leader->comm)) {
                if (!p->info.kthread && s->pass - p->cgroup_pass >= PROC_CGROUP_RECHECK_PASSES)
                        proc_cgroup_refresh(s, p, pid);
                return;
        }
        p->cgroup_pass = s->pass;
        s->stats.info_reads++;
        r = sample_proc_info_load(s->root, pid, leader, &p->info, &s->stats.files_read);
        if (r < 0 && !sample_gone(r))
                s->stats.errors++;
        p->info_valid = r >= 0;
        if (r < 0) {
                /* nothing of the program before (an exec's re-read failed):
                 * matched by its old exe or cmdline under its new name, it
                 * would take the old program's policies */
                sample_proc_info_done(&p->info);
                p->info.pid = pid;
                p->info.start_time = p->info.lineage_start_time = leader->start_time;
                p->info.uid = (uid_t) -1;   /* unknown: no owner's rule takes it for root's */
                snprintf(p->info.comm, sizeof(p->info.comm), "%s", leader->comm);
                p->info.kthread = leader->flags & SAMPLE_PF_KTHREAD;
        }
}

/* How its threads are read this pass, whether they are listed, and the gate's new value. */
static void proc_mode_set(struct sampler *s, struct proc_rec *p, pid_t pid, uint64_t value, unsigned threads,
                          bool fresh) {
        if (s->gate == SAMPLER_GATE_CLOCK && s->cap_task_schedstat && p->gate_valid && !fresh) {
                p->mode = MODE_ACCOUNT;
                p->gate_delta = value >= p->gate_value ? value - p->gate_value : 0;
        } else {
                p->mode = MODE_FULL;
                p->explained_ns = 0;
                p->explained_partial = false;
        }

        p->list = p->mode == MODE_FULL || p->dirty || s->pass >= p->next_list_pass ||
                  (!p->untracked && p->leader.num_threads != p->n_threads);
        if (p->list)
                p->next_list_pass = s->pass + (p->next_list_pass ? s->opt.list_every_passes
                                                                 : 1 + (unsigned) pid % s->opt.list_every_passes);
        p->dirty = false;
        p->gate_value = value;
        p->gate_threads = threads;
        p->gate_valid = true;
}

static void proc_visit(struct sampler *s, pid_t pid, void *userdata) {
        struct proc_rec *p = proc_lookup(s, pid);
        struct stat_fields whole, leader;
        bool have_whole, fresh;
        uint64_t value;
        unsigned threads;
        int r;

        if (proc_not_due(s, p, pid))
                return;

        r = proc_gate(s, pid, p, &value, &threads, &whole, &have_whole);
        if (r < 0)
                return;   /* gone: not seen, its records are swept */
        if (r > 0)
                return proc_carry(s, p);

        /* Active. */
        if (proc_leader_read(s, pid, &leader) < 0)
                return;
        p = proc_rec_for(s, p, pid, &leader, &fresh);
        if (!p)
                return;
        p->seen_pass = s->pass;
        p->leader = leader;
        p->unexplained = false;
        p->next_account_pass = 0;

        proc_info_refresh(s, p, pid, &leader);
        p->exec_noted = false;
        proc_mode_set(s, p, pid, value, threads, fresh);

        /* Bring the lazily advanced times of its threads up to date; from here on
         * the pass sets them one by one. known_usec keeps the previous check for
         * the cold-thread rule in the sweep. */
        materialize(s, p);
        p->active_usec = s->now_usec;
        p->idle_checks = 0;
        p->next_check_pass = 0;
        kthread_back_off(s, p);
        s->stats.processes_active++;
}

static void note_new_process(struct sampler *s, pid_t pid);

/* The last PID handed out, from /proc/loadavg ("0.20 0.18 0.12 1/80 11206"). */
static int read_last_pid(struct sampler *s, unsigned *ret) {
        const char *p;
        ssize_t n;
        int v;

        n = read_small(s, "/proc/loadavg");
        s->stats.cheap_reads++;
        if (n < 0)
                return (int) n;
        util_strip(s->buf);
        p = strrchr(s->buf, ' ');
        if (!p || util_parse_int(p + 1, &v) < 0 || v < 0)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* PIDs handed out since the last pass: the processes among them (not threads) are new. */
static void probe_pids(struct sampler *s, unsigned from, unsigned to) {
        unsigned pid = from;

        for (unsigned k = 0; k <= PID_PROBE_MAX && pid != to; k++) {
                struct status_fields st;
                char rel[64];

                pid = pid + 1 >= s->pid_max ? 300 : pid + 1;   /* the kernel wraps to 300 (RESERVED_PIDS) */
                if (proc_lookup(s, (pid_t) pid))
                        continue;
                snprintf(rel, sizeof(rel), "/proc/%u/status", pid);
                if (read_small(s, rel) < 0)
                        continue;   /* already gone */
                s->stats.status_reads++;
                /* /proc/TID of a thread exists too (not listed): only thread group leaders */
                if (sample_parse_status(s->buf, &st) >= 0 && st.have_tgid && st.tgid == (pid_t) pid)
                        note_new_process(s, (pid_t) pid);
        }
}

/*
 * Visit every process. /proc is listed (which walks every PID in the kernel,
 * threads included) unless we know of every new process another way: fork
 * events, or the last PID handed out (pid_probe). Either way it is listed
 * every list_proc_every_passes, and after lost events.
 */
static int visit_processes(struct sampler *s) {
        bool list = true, have_last = false;
        unsigned last = 0;
        size_t n = 0;

        if (s->pid_probe || s->events)
                have_last = read_last_pid(s, &last) >= 0;
        /*
         * Events on, PIDs handed out, and not one fork note: the kernel has
         * stopped telling us (seen in the test suite after many connector
         * listeners came and went: no event reached a new daemon at all).
         * Listed now rather than at the next safety-net listing.
         */
        if (s->events && have_last && s->last_pid_valid && last != s->last_pid && s->forks_noted == 0) {
                s->events_lost = true;
                s->stats.events_silent++;
        }
        s->forks_noted = 0;
        if (!s->events_lost && s->pass < s->next_proc_list_pass) {
                if (s->events)
                        list = false;
                else if (have_last && s->last_pid_valid) {
                        /* after pid_max the kernel goes on from 300 (RESERVED_PIDS) */
                        unsigned d = last >= s->last_pid ? last - s->last_pid
                                                         : s->pid_max - s->last_pid + (last > 300 ? last - 300 : 0);
                        if (d <= PID_PROBE_MAX) {
                                probe_pids(s, s->last_pid, last);
                                list = false;
                        }
                }
        }
        /* Read before listing: a PID handed out during the listing is probed next pass. */
        s->last_pid = last;
        s->last_pid_valid = have_last;

        if (list) {
                int r = for_each_pid_entry(s, "/proc", proc_visit, NULL);
                if (r < 0)
                        return r;
                s->events_lost = false;
                s->n_pending = 0;
                s->next_proc_list_pass = s->pass + s->opt.list_proc_every_passes;
                s->stats.proc_listed = true;
                return 0;
        }

        /* proc_visit() may add records: work on a copy of the pids. */
        if (s->allocated_visit < s->n_procs + s->n_pending) {
                size_t na = MAX(s->n_procs + s->n_pending, (size_t) 256) * 2;
                pid_t *v = realloc(s->visit, na * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                s->visit = v;
                s->allocated_visit = na;
        }
        for (size_t k = 0; k < s->n_procs; k++)
                s->visit[n++] = s->procs[k]->info.pid;
        for (size_t k = 0; k < s->n_pending; k++)
                s->visit[n++] = s->pending[k];
        s->n_pending = 0;
        for (size_t k = 0; k < n; k++)
                proc_visit(s, s->visit[k], NULL);
        return 0;
}

static void task_visit(struct sampler *s, pid_t tid, void *userdata) {
        struct proc_rec *p = userdata;
        uint32_t slot;

        if (sample_table_get(&s->tids, tid, &slot)) {
                struct thread_priv *q = &s->priv[slot];
                if (q->proc == p && q->generation == p->generation) {
                        q->listed_pass = s->pass;
                        if (q->seen_pass == s->pass || q->failed_pass == s->pass)
                                return;
                        /* A known cold thread of an accounted process: the accounting decides. */
                        if (p->mode == MODE_ACCOUNT && !thread_is_hot(s, q) && tid != p->info.pid)
                                return;
                }
        }
        if (thread_read(s, p, tid, tid == p->info.pid ? &p->leader : NULL, s->now_usec) > 0 &&
            sample_table_get(&s->tids, tid, &slot))
                s->priv[slot].listed_pass = s->pass;
}

/* Should record i (of an active process) be read now? */
static bool want_read(struct sampler *s, uint32_t i) {
        const struct thread_priv *q = &s->priv[i];
        const struct proc_rec *p = q->proc;
        const struct task *t = &s->tasks[i];

        if (p->mode == MODE_FULL || thread_is_hot(s, q) || thread_is_wanted(s, q))
                return true;
        if (p->mode == MODE_TRUSTED)
                return false;   /* the leader's stat was not read this pass */
        if (t->id.tid == p->info.pid)
                /* The leader's stat is already here: read on if it shows
                 * activity. Alone in its process, it is what moved the
                 * process clock (a thread on 1 % of a CPU may add no tick
                 * in a pass, and its delta is under the accounting's noise
                 * floor). Not a kernel thread: nothing acts on one that
                 * runs that little. */
                return (p->leader.num_threads == 1 && !(p->leader.flags & SAMPLE_PF_KTHREAD)) ||
                       stat_shows_run(t, &p->leader);
        return false;
}

/* The known threads of the active processes: the hot ones (all with MODE_FULL). */
static void read_active_threads(struct sampler *s) {
        for (size_t k = 0; k < s->n_procs; k++) {
                struct proc_rec *p = s->procs[k];
                uint32_t next;

                if (p->seen_pass != s->pass || p->mode <= MODE_CARRY)
                        continue;
                /* thread_read() may move the record to the head of this list; next is saved first. */
                for (uint32_t i = p->first; i != NO_SLOT; i = next) {
                        struct thread_priv *q = &s->priv[i];
                        pid_t tid;

                        next = q->next;
                        if (q->seen_pass == s->pass || q->failed_pass == s->pass || q->generation != p->generation)
                                continue;
                        if (!want_read(s, i))
                                continue;
                        tid = s->tasks[i].id.tid;
                        /* a trusted process's leader stat is of its last check, up to
                         * passes old: a hot leader's CPU and ticks are read afresh */
                        (void) thread_read(s, p, tid, tid == p->info.pid && p->mode != MODE_TRUSTED ? &p->leader : NULL,
                                           s->now_usec);
                }
        }
}

static void list_threads(struct sampler *s) {
        for (size_t k = 0; k < s->n_procs; k++) {
                struct proc_rec *p = s->procs[k];
                char rel[64];
                int r;

                if (p->seen_pass != s->pass || !p->list)
                        continue;
                snprintf(rel, sizeof(rel), "/proc/%d/task", (int) p->info.pid);
                s->stats.processes_listed++;
                /* set again by thread_slot() only if there is still no room
                 * (MaxThreads= raised by a reload, records freed): kept, a
                 * change in its thread count never listed it again */
                p->untracked = false;
                r = for_each_pid_entry(s, rel, task_visit, p);
                if (r < 0) {
                        /* Gone between the gate and here: drop it this pass. */
                        p->seen_pass = 0;
                        if (!sample_gone(r))
                                s->stats.errors++;
                }
        }
}

/*
 * MODE_ACCOUNT processes whose clock moved more than their hot threads
 * explain: search the cold threads in list order (most recently active
 * first, see thread_read(); each one searched goes to the end, so the
 * search goes round), until the delta is explained or
 * the pass's budget is spent. What is left unexplained stays unknown: the
 * unread threads keep their "known up to" times (sweep), so their CPU time
 * shows when they are read. Returns how many processes were searched.
 */
static unsigned account(struct sampler *s, uint64_t window_usec) {
        unsigned searched = 0;

        for (size_t k = 0; k < s->n_procs; k++) {
                struct proc_rec *p = s->procs[k];
                /* the delta spans every pass since the last check */
                uint64_t span = p->known_usec && s->now_usec > p->known_usec ? s->now_usec - p->known_usec : window_usec;
                uint64_t threshold = MAX(UNEXPLAINED_MIN_NS,
                                         (uint64_t) ((double) span * NSEC_PER_USEC * UNEXPLAINED_WINDOW_FRACTION));
                unsigned n;

                if (p->seen_pass != s->pass || p->mode != MODE_ACCOUNT)
                        continue;
                if (!p->explained_partial && p->gate_delta <= p->explained_ns + threshold) {
                        /* explained: a big process is trusted for a few passes after two in a row */
                        if (++p->explained_checks >= 2 && p->n_threads >= s->opt.big_process_threads)
                                p->next_account_pass = s->pass + s->opt.account_every_passes;
                        p->explained_ns = 0;
                        continue;
                }
                p->explained_checks = 0;
                searched++;
                /* One walk of the list, next saved first: a thread read that
                 * ran goes to the head (thread_read()) and one searched to the
                 * end, and neither is taken again. Taking the head at each
                 * step took a thread just found again and spent the step. */
                n = p->n_threads;
                for (uint32_t i = p->first, next; i != NO_SLOT && n > 0; i = next, n--) {
                        struct thread_priv *q = &s->priv[i];
                        pid_t tid;

                        next = q->next;
                        if (!p->explained_partial && p->gate_delta <= p->explained_ns + threshold)
                                break;
                        if (s->search_budget == 0)
                                break;
                        if (q->seen_pass == s->pass || q->failed_pass == s->pass || q->generation != p->generation)
                                continue;
                        list_del(s, i);
                        list_add_tail(s, p, i);
                        tid = s->tasks[i].id.tid;
                        s->search_budget--;
                        (void) thread_read(s, p, tid, tid == p->info.pid ? &p->leader : NULL, s->now_usec);
                }
                p->unexplained = p->explained_partial || p->gate_delta > p->explained_ns + threshold;
                p->explained_ns = 0;
                p->explained_partial = false;
        }
        return searched;
}

/* End of pass: drop what is gone, carry what did not run, refresh a few. */
static void sweep(struct sampler *s) {
        size_t n, budget;

        for (size_t k = 0; k < s->n_procs; k++) {
                struct proc_rec *p = s->procs[k];
                bool seen = p->seen_pass == s->pass;

                if (seen && (p->mode == MODE_SKIP || (p->mode == MODE_CARRY && proc_steady(p)))) {
                        /* nothing per thread: the lazy "known up to" covers them */
                        s->stats.threads_carried += p->n_threads;
                        continue;
                }
                for (uint32_t i = p->first; i != NO_SLOT; i = s->priv[i].next) {
                        struct thread_priv *q = &s->priv[i];

                        if (!seen || q->generation != p->generation || q->failed_pass == s->pass ||
                            (p->list && q->listed_pass != s->pass)) {
                                doom(s, i);
                                if (p->mode == MODE_TRUSTED)
                                        p->dirty = true;   /* a thread went away: check it next pass */
                        }
                        else if (q->seen_pass == s->pass)
                                continue;
                        else if (p->mode == MODE_TRUSTED)
                                s->stats.threads_carried++;   /* cold: left as they were until the check */
                        else if (p->mode == MODE_CARRY) {
                                thread_carry(s, i);
                                s->stats.threads_carried++;
                        } else if (p->mode == MODE_FULL)
                                doom(s, i);   /* its read failed quietly */
                        else if (p->unexplained) {
                                /* not reached by the search: unknown, counted when read */
                                thread_carry(s, i);
                                s->stats.threads_carried++;
                        } else {
                                thread_carry_active(s, i, p->known_usec);
                                s->stats.threads_carried++;
                        }
                }
        }

        /* Refresh a slice of the threads that were not read, round-robin. */
        n = s->n_tasks;
        budget = (n + s->opt.refresh_passes - 1) / s->opt.refresh_passes;
        for (size_t k = 0; k < budget && n > 0; k++) {
                uint32_t i = (uint32_t) ((s->refresh_cursor + k) % n);
                const struct thread_priv *q = &s->priv[i];
                if (q->proc && q->proc->seen_pass == s->pass && q->proc->mode <= MODE_CARRY &&
                    q->seen_pass != s->pass && q->remove_pass != s->pass)
                        thread_refresh(s, i);
        }
        s->refresh_cursor = n ? (s->refresh_cursor + budget) % n : 0;

        remove_doomed(s);

        for (size_t k = s->n_procs; k > 0; k--) {
                struct proc_rec *p = s->procs[k - 1];
                if (p->seen_pass != s->pass) {
                        /* its threads were doomed above */
                        p->first = NO_SLOT;
                        proc_remove(s, p);
                } else if (p->mode >= MODE_ACCOUNT)
                        /* cold threads were carried from the previous check to now */
                        p->known_usec = s->now_usec;
        }
}

/* CPU time of this thread. Not getrusage(RUSAGE_THREAD): that is scaled from
 * ticks and reads 0 for most passes of a few hundred µs. */
static uint64_t thread_cpu_usec(void) {
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

int sampler_sample(struct sampler *s, uint64_t now_usec, struct snapshot **ret_snapshot) {
        uint64_t wall0, cpu0, window;
        struct sampler_stats *st;
        int r;

        if (!s || !ret_snapshot)
                return -EINVAL;
        wall0 = util_now_usec();
        cpu0 = thread_cpu_usec();
        st = &s->stats;
        if (s->last_usec && now_usec <= s->last_usec)
                now_usec = s->last_usec + 1;   /* rates need time to pass */
        window = s->last_usec ? now_usec - s->last_usec : 0;
        s->pass++;
        s->now_usec = now_usec;
        s->boot_now_usec = 0;
        if (util_root_is_real(s->root)) {
                struct timespec ts;
                if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
                        s->boot_now_usec = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
        }

        /* per-pass figures start from zero; totals and capabilities stay */
        st->window_usec = window;
        st->processes = st->processes_active = st->processes_listed = st->processes_full = 0;
        st->processes_skipped = st->processes_searched = 0;
        st->proc_listed = false;
        st->threads = st->threads_read = st->threads_carried = st->threads_refreshed = 0;
        st->threads_new = st->threads_gone = st->threads_vanished = st->threads_untracked = 0;
        st->files_read = st->cheap_reads = st->status_reads = st->expensive_reads = 0;
        st->info_reads = st->gate_calls = st->errors = 0;

        sample_cpus(s, window);
        /* Who else places tasks this pass (coexist.h): two small files. */
        r = coexist_read(s->root, &s->coexist);
        if (r < 0) {
                s->pass--;
                return r;
        }

        r = visit_processes(s);
        if (r < 0) {
                s->pass--;
                return r;
        }
        read_active_threads(s);
        list_threads(s);
        s->search_budget = s->opt.max_search_reads;
        st->processes_searched = account(s, window);
        sweep(s);

        for (size_t k = 0; k < s->n_procs; k++)
                if (s->procs[k]->mode == MODE_FULL)
                        st->processes_full++;
        st->processes = (unsigned) s->n_procs;
        st->threads = (unsigned) s->n_tasks;

        s->snap = (struct snapshot) {
                .timestamp_usec = now_usec,
                .window_usec = window,
                .topo = s->topo,
                .tasks = s->tasks,
                .n_tasks = s->n_tasks,
                .cpus = s->cpus,
                .psi_cpu_some_avg10 = s->snap.psi_cpu_some_avg10,
                .wake_source = "none",
                .task_index = &s->tids,
                .coexist = s->coexist,
        };
        active_build(s);
        s->last_usec = now_usec;

        st->passes = s->pass;
        st->gate = sampler_gate_to_string(s->gate);
        st->task_schedstat = s->cap_task_schedstat;
        st->task_sched = s->cap_task_sched;
        st->cpu_schedstat = s->cap_cpu_schedstat;
        st->psi = s->cap_psi;
        st->wall_usec = util_now_usec() - wall0;
        st->cpu_usec = thread_cpu_usec() - cpu0;
        st->total_wall_usec += st->wall_usec;
        st->total_cpu_usec += st->cpu_usec;
        st->total_files_read += st->files_read;
        st->total_expensive_reads += st->expensive_reads;

        *ret_snapshot = &s->snap;
        return 0;
}

/* ---- wake-up hints ---------------------------------------------------- */

void sampler_want_threads(struct sampler *s, const struct wake_edge *edges, size_t n, double min_per_s) {
        /* no floor (no pair policy enabled): nothing would use the reads */
        if (!s || !edges || min_per_s < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                pid_t tid[2] = { edges[i].waker_tid, edges[i].wakee_tid };

                if (!(edges[i].wakeups_per_s >= min_per_s))
                        continue;
                for (int k = 0; k < 2; k++) {
                        uint32_t slot;

                        /* a thread not known yet is read at first sight anyway;
                         * a kernel thread is no pair's member (detect-pair.c) */
                        if (!sample_table_get(&s->tids, tid[k], &slot) || task_is_kthread(&s->tasks[slot]))
                                continue;
                        s->priv[slot].wanted_pass = s->pass;
                        /* a big process backed off as idle is checked at the
                         * next pass: it is not idle */
                        if (s->priv[slot].proc)
                                s->priv[slot].proc->next_check_pass = 0;
                }
        }
}

/* ---- connector hints -------------------------------------------------- */

static void note_new_process(struct sampler *s, pid_t pid) {
        if (!s->events && !s->pid_probe)
                return;   /* /proc is listed every pass anyway */
        if (!s->pending) {
                s->pending = malloc(PENDING_MAX * sizeof(*s->pending));
                if (!s->pending) {
                        s->events_lost = true;
                        return;
                }
        }
        if (s->n_pending >= PENDING_MAX) {
                s->events_lost = true;   /* a fork storm: list /proc instead */
                return;
        }
        s->pending[s->n_pending++] = pid;
}

void sampler_note_fork(struct sampler *s, pid_t pid, pid_t tid) {
        struct proc_rec *p;

        if (!s || pid <= 0)
                return;
        s->forks_noted++;
        p = proc_lookup(s, pid);
        if (p)
                p->dirty = true;   /* a new thread: re-list its threads on the next pass */
        else if (pid == tid)
                note_new_process(s, pid);
}

void sampler_note_exec(struct sampler *s, pid_t pid) {
        struct proc_rec *p;

        if (!s || pid <= 0)
                return;
        p = proc_lookup(s, pid);
        if (p) {
                p->exec_noted = true;
                p->dirty = true;   /* exec from a non-leader thread kills all the others */
        } else
                note_new_process(s, pid);
}

void sampler_note_exit(struct sampler *s, pid_t pid, pid_t tid) {
        struct proc_rec *p;

        if (!s || pid <= 0)
                return;
        p = proc_lookup(s, pid);
        if (p)
                p->dirty = true;   /* checked (not skipped) on the next pass */
        else if (pid == tid)
                /* Born and gone between two passes (a compiler in a build):
                 * nothing to read and nothing any policy could act on. */
                for (size_t k = s->n_pending; k > 0; k--)
                        if (s->pending[k - 1] == pid) {
                                s->pending[k - 1] = s->pending[--s->n_pending];
                                break;
                        }
        /* The snapshot handed out stays as it is until the next pass, which
         * drops the thread (its read fails or the listing lacks it). */
}

void sampler_note_lost(struct sampler *s) {
        if (s)
                s->events_lost = true;
}

void sampler_set_process_events(struct sampler *s, bool on) {
        if (!s)
                return;
        if (on && !s->events)
                s->events_lost = true;   /* start from a full listing */
        s->events = on;
        s->n_pending = 0;
}

/* ---- stats ------------------------------------------------------------ */

void sampler_get_stats(const struct sampler *s, struct sampler_stats *ret) {
        *ret = s->stats;
        ret->gate = sampler_gate_to_string(s->gate);
        ret->task_schedstat = s->cap_task_schedstat;
        ret->task_sched = s->cap_task_sched;
        ret->cpu_schedstat = s->cap_cpu_schedstat;
        ret->psi = s->cap_psi;
}

int sampler_stats_to_json(const struct sampler *s, struct json_object **ret) {
        struct json_object *o, *caps, *last, *total;
        struct sampler_stats st;

        if (!s || !ret)
                return -EINVAL;
        sampler_get_stats(s, &st);
        o = json_object_new_object();
        caps = json_object_new_object();
        last = json_object_new_object();
        total = json_object_new_object();
        if (!o || !caps || !last || !total) {
                json_object_put(o);
                json_object_put(caps);
                json_object_put(last);
                json_object_put(total);
                return -ENOMEM;
        }
#define ADD(obj, k, v) json_object_object_add((obj), (k), (v))
#define U(v) json_object_new_int64((int64_t) (v))
        ADD(o, "passes", U(st.passes));
        ADD(o, "gate", json_object_new_string(st.gate));
        ADD(o, "max_threads", U(s->max_threads));
        ADD(o, "process_events", json_object_new_boolean(s->events));

        ADD(caps, "task_schedstat", json_object_new_boolean(st.task_schedstat));
        ADD(caps, "task_sched", json_object_new_boolean(st.task_sched));
        ADD(caps, "cpu_schedstat", json_object_new_boolean(st.cpu_schedstat));
        ADD(caps, "psi", json_object_new_boolean(st.psi));
        ADD(o, "kernel", caps);

        ADD(last, "window_us", U(st.window_usec));
        ADD(last, "wall_us", U(st.wall_usec));
        ADD(last, "cpu_us", U(st.cpu_usec));
        ADD(last, "processes", U(st.processes));
        ADD(last, "processes_active", U(st.processes_active));
        ADD(last, "processes_listed", U(st.processes_listed));
        ADD(last, "processes_full", U(st.processes_full));
        ADD(last, "processes_skipped", U(st.processes_skipped));
        ADD(last, "processes_searched", U(st.processes_searched));
        ADD(last, "proc_listed", json_object_new_boolean(st.proc_listed));
        ADD(last, "threads", U(st.threads));
        ADD(last, "threads_read", U(st.threads_read));
        ADD(last, "threads_carried", U(st.threads_carried));
        ADD(last, "threads_refreshed", U(st.threads_refreshed));
        ADD(last, "threads_new", U(st.threads_new));
        ADD(last, "threads_gone", U(st.threads_gone));
        ADD(last, "threads_vanished", U(st.threads_vanished));
        ADD(last, "threads_untracked", U(st.threads_untracked));
        ADD(last, "files_read", U(st.files_read));
        ADD(last, "cheap_reads", U(st.cheap_reads));
        ADD(last, "status_reads", U(st.status_reads));
        ADD(last, "expensive_reads", U(st.expensive_reads));
        ADD(last, "info_reads", U(st.info_reads));
        ADD(last, "gate_calls", U(st.gate_calls));
        ADD(last, "errors", U(st.errors));
        ADD(o, "last_pass", last);

        ADD(total, "wall_us", U(st.total_wall_usec));
        ADD(total, "cpu_us", U(st.total_cpu_usec));
        ADD(total, "files_read", U(st.total_files_read));
        ADD(total, "expensive_reads", U(st.total_expensive_reads));
        ADD(total, "process_events_silent", U(st.events_silent));
        ADD(o, "total", total);
#undef U
#undef ADD
        *ret = o;
        return 0;
}
