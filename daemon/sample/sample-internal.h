/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Internals of the sampler shared by sample*.c and tests/test-sample.c:
 * parsers of the /proc formats (pure: a string in, a struct out) and the
 * per-process helpers. Not for other modules; they use sample.h.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cpumask.h"
#include "sample/snapshot.h"

/* task->flags bit of kernel threads (include/linux/sched.h, stable since 2.6). */
#define SAMPLE_PF_KTHREAD 0x00200000u

/* What the sampler uses of /proc/P[/task/T]/stat (field numbers as in proc(5)). */
struct stat_fields {
        char comm[16];          /* (2) */
        char state;             /* (3) R S D Z T t X I ... */
        pid_t ppid;             /* (4) */
        unsigned flags;         /* (9) PF_* */
        uint64_t utime, stime;  /* (14) (15) clock ticks */
        int nice;               /* (19) */
        unsigned num_threads;   /* (20) threads in the whole process */
        uint64_t start_time;    /* (22) clock ticks after boot */
        int processor;          /* (39) CPU last run on */
        unsigned policy;        /* (41) SCHED_* */
};

/* Parse one stat line. The comm may hold spaces and ')' (it ends at the last ')'). */
int sample_parse_stat(const char *buf, struct stat_fields *ret);

struct status_fields {
        bool have_allowed, have_ctxt, have_uid, have_tgid;
        pid_t tgid;             /* Tgid: the thread group (process) */
        cpumask_t allowed;      /* Cpus_allowed_list */
        uint64_t nvcsw, nivcsw; /* voluntary_ctxt_switches, nonvoluntary_ctxt_switches */
        uid_t euid;             /* Uid: real effective saved fs → the effective one, as ps(1) shows */
};
int sample_parse_status(const char *buf, struct status_fields *ret);

/* /proc/P/task/T/schedstat: "run_ns wait_ns slices". */
int sample_parse_schedstat(const char *buf, uint64_t *ret_run_ns, uint64_t *ret_wait_ns, uint64_t *ret_slices);
/* /proc/PID/task/TID/io: bytes (rchar + wchar) and calls (syscr + syscw)
 * through read()/write() and their kin. -EINVAL if a line is missing. */
struct io_counts {
        uint64_t bytes, calls;
};
int sample_parse_io(const char *buf, struct io_counts *ret);
/* /proc/P/task/T/sched: the se.nr_migrations line. -ENODATA if absent. */
int sample_parse_sched_migrations(const char *buf, uint64_t *ret);

/* /proc/stat: cumulative jiffies of "cpuN" lines into cpus[N] (N < n_cpus).
 * present[N] is set for CPUs that had a line. Returns the number of lines. */
int sample_parse_proc_stat(const char *buf, struct cpu_sample *cpus, bool *present, int n_cpus);
/* /proc/schedstat "cpuN ..." lines: rq_cpu_time and run_delay (fields 7 and 8). */
int sample_parse_cpu_schedstat(const char *buf, struct cpu_sample *cpus, bool *present, int n_cpus);
/* /proc/pressure/cpu: the "some avg10=" value (percent). */
int sample_parse_psi_some_avg10(const char *buf, double *ret);

/*
 * /proc/P/cgroup. ret_cgroup: the path in the hierarchy that holds the cpu
 * controller, because that is where a CPU weight (cpu.weight on v2,
 * cpu.shares on v1) for this process would be set: the v1 line listing
 * "cpu" if there is one (legacy and hybrid), else the v2 "0::" line.
 * ret_systemd: the path systemd tracks units in (the "0::" line, else
 * "name=systemd"), for the unit name; on a hybrid machine the v1 cpu
 * path is often just "/" (no CPUAccounting=) while this one is not.
 * Both malloc'ed, "" if unknown.
 */
int sample_parse_cgroup(const char *buf, char **ret_cgroup, char **ret_systemd);

/*
 * The systemd unit of a cgroup path: the deepest component that names a
 * service, scope, socket, mount or swap unit ("/system.slice/nginx.service"
 * → nginx.service; "/user.slice/user-1000.slice/user@1000.service/app.slice/
 * app-foo.scope" → app-foo.scope; "/system.slice/foo.service/worker" (a
 * delegated subtree) → foo.service), else the deepest slice
 * ("/machine.slice" → machine.slice). NULL in *ret for "/" or no unit.
 * Returns 0 or -ENOMEM.
 */
int sample_cgroup_unit(const char *path, char **ret);
/* sample_read_cgroup() and the unit of its systemd path, at once: what a
 * process's info holds of its cgroup (read at first sight and again when
 * it may have moved). All three set, or none. */
int sample_read_cgroup_unit(const char *root, pid_t pid, char **ret_cgroup, char **ret_systemd, char **ret_unit);

/* Turn a /proc/P/cmdline buffer (NUL-separated, n bytes, room for n + 1) into one string with spaces. */
void sample_cmdline_to_string(char *buf, size_t n);

enum task_policy sample_policy_from_kernel(unsigned policy);

/*
 * Fill info for process pid from /proc/P/{exe,cmdline,cgroup,status} below
 * root; comm, start_time and kthread come from the leader's stat. Frees
 * what info held before (re-read after exec). files_read is incremented
 * per file opened. Returns 0, -ENOENT/-ESRCH if the process went away, or
 * -ENOMEM. Unreadable optional parts (exe of a kernel thread, EACCES)
 * are left NULL / "" rather than failing.
 */
int sample_proc_info_load(const char *root, pid_t pid, const struct stat_fields *leader,
                          struct proc_info *info, unsigned *files_read);
/* A read failed because the process or thread went away (not an error). */
static inline bool sample_gone(int r) {
        return r == -ENOENT || r == -ESRCH;
}
/* Free what sample_proc_info_load() allocated; info is zeroed. */
void sample_proc_info_done(struct proc_info *info);
