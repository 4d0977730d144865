/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The real ops table: the last line of defence before a syscall changes
 * somebody's thread. Whatever the planner decided, this refuses kernel
 * threads, the daemon itself and masks outside the task's cpuset, and it
 * makes sure the TID still names the thread the planner saw.
 *
 * PID reuse. sched_setaffinity() takes a TID, not a pidfd, so the guard is:
 *   1. pidfd_open(tid, PIDFD_THREAD) (Linux >= 6.9; a pidfd on one thread)
 *      or, on older kernels, pidfd_open(pid) on the thread group;
 *   2. check /proc/TID/stat start time (field 22) == the recorded one: now
 *      the pidfd is known to refer to our thread;
 *   3. sched_getaffinity(tid) → the mask we are about to overwrite;
 *   4. sched_setaffinity(tid);
 *   5. check again: the pidfd has not signalled exit (a thread that has not
 *      exited keeps its TID, so step 4 hit it) and the start time still
 *      matches (the only check on kernels without PIDFD_THREAD, where the
 *      pidfd covers the process, not the thread).
 * If step 5 fails, the TID may have been reused between 2 and 4: the mask
 * from step 3 is put back at once and -ESRCH returned.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <sys/syscall.h>

#include "apply/apply.h"
#include "common/util.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL   /* include/uapi/linux/pidfd.h, Linux 6.9 */
#endif

/* include/linux/sched.h: I am a kernel thread */
#define PF_KTHREAD 0x00200000u

struct task_stat {
        uint64_t start_time;   /* field 22, clock ticks after boot */
        unsigned flags;        /* field 9 */
        pid_t tgid;            /* from status, 0 if unknown */
};

/* Fields of /proc/TID/stat after the comm, which may contain spaces and ')'. */
static int read_task_stat(const char *root, pid_t tid, struct task_stat *ret) {
        char path[64], buf[8192], *p, *save = NULL, *tok;
        uint64_t v;
        ssize_t n;
        int field;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) tid);
        n = util_read_file_at(root, path, buf, sizeof(buf));
        if (n == -ENOENT || n == -ESRCH)
                return -ESRCH;
        if (n < 0)
                return (int) n;
        p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        *ret = (struct task_stat) {};
        /* p + 1 starts with " S ...": field 3 is the state */
        for (field = 3, tok = strtok_r(p + 1, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), field++) {
                if (field == 9) {
                        if (util_parse_u64(tok, &v) < 0)
                                return -EIO;
                        ret->flags = (unsigned) v;
                } else if (field == 22) {
                        if (util_parse_u64(tok, &v) < 0)
                                return -EIO;
                        ret->start_time = v;
                        break;
                }
        }
        if (field != 22)
                return -EIO;

        /* Tgid: to recognise ourselves and to open a process pidfd on old kernels. */
        snprintf(path, sizeof(path), "/proc/%d/status", (int) tid);
        n = util_read_file_at(root, path, buf, sizeof(buf));
        if (n == -E2BIG || n >= 0) {
                /* Tgid is on line 4: a truncated read still has it. */
                buf[sizeof(buf) - 1] = '\0';
                p = strstr(buf, "\nTgid:");
                if (p)
                        ret->tgid = (pid_t) strtol(p + 6, NULL, 10);
        } else if (n == -ENOENT || n == -ESRCH)
                return -ESRCH;
        return 0;
}

/* Same thread as recorded? -ESRCH if not (exited or TID reused). */
static int check_identity(const char *root, const struct task_id *id, struct task_stat *ret) {
        struct task_stat st;
        int r;

        r = read_task_stat(root, id->tid, &st);
        if (r < 0)
                return r;
        if (st.start_time != id->start_time)
                return -ESRCH;
        if (id->pid > 0 && st.tgid > 0 && st.tgid != id->pid)
                return -ESRCH;
        if (ret)
                *ret = st;
        return 0;
}

static int pidfd_open_sys(pid_t pid, unsigned flags) {
        int fd = (int) syscall(SYS_pidfd_open, pid, flags);
        return fd < 0 ? -errno : fd;
}

/* A pidfd on the thread, or on its process on kernels before 6.9. */
static int guard_open(const struct apply_system *sys, const struct task_id *id, pid_t tgid) {
        int fd;

        if (!sys->no_thread_pidfd) {
                fd = pidfd_open_sys(id->tid, PIDFD_THREAD);
                if (fd >= 0)
                        return fd;
                if (fd == -ESRCH)
                        return -ESRCH;
        }
        /* -EINVAL: PIDFD_THREAD unknown, or tid not a thread-group leader
         * (pre-6.9 pidfd_open only takes leaders). */
        fd = pidfd_open_sys(tgid > 0 ? tgid : id->tid, 0);
        if (fd == -EINVAL || fd == -ENOENT)
                return -ESRCH;
        return fd;
}

/* True if the task behind the pidfd has exited. */
static bool guard_exited(int pidfd) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int n;

        do
                n = poll(&p, 1, 0);
        while (n < 0 && errno == EINTR);
        return n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

/* Open the guard and confirm it refers to the recorded thread. */
static int guard_acquire(const struct apply_system *sys, const struct task_id *id, struct task_stat *ret_st) {
        const char *root = sys->root;
        struct task_stat st;
        int fd, r;

        if (id->tid <= 0)
                return -EINVAL;
        /* Identity first for the tgid; again after opening the pidfd, so
         * the pidfd is known to be on the same thread. */
        r = check_identity(root, id, &st);
        if (r < 0)
                return r;
        fd = guard_open(sys, id, id->pid > 0 ? id->pid : st.tgid);
        if (fd < 0)
                return fd;
        r = check_identity(root, id, &st);
        if (r >= 0 && guard_exited(fd))
                r = -ESRCH;
        if (r < 0) {
                close(fd);
                return r;
        }
        *ret_st = st;
        return fd;
}

static int guard_verify(const char *root, int pidfd, const struct task_id *id) {
        if (guard_exited(pidfd))
                return -ESRCH;
        return check_identity(root, id, NULL);
}

static int sys_affinity_get(void *userdata, const struct task_id *id, cpumask_t *ret) {
        const struct apply_system *sys = userdata;
        _cleanup_close_ int fd = -1;
        struct task_stat st;
        cpu_set_t set;
        int r;

        fd = guard_acquire(sys, id, &st);
        if (fd < 0)
                return fd;
        CPU_ZERO(&set);
        if (sched_getaffinity(id->tid, sizeof(set), &set) < 0)
                return -errno;
        r = guard_verify(sys->root, fd, id);
        if (r < 0)
                return r;
        cpumask_from_cpu_set(&set, ret);
        return 0;
}

static int read_list_file(const char *root, const char *path, cpumask_t *ret) {
        char buf[4096];
        ssize_t n;

        n = util_read_file_at(root, path, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        return cpumask_parse_list(util_strip(buf), ret);
}

/*
 * The CPUs the task's cpuset lets it run on. /proc/TID/cpuset names the
 * cpuset (v1 hierarchy when mounted, else v2). On v2 a cgroup without the
 * cpuset controller has no cpuset.cpus.effective: its nearest ancestor's
 * applies, so walk up.
 */
int apply_system_allowed_cpus(const char *root, pid_t tid, cpumask_t *ret) {
        char path[PATH_MAX], cs[PATH_MAX - 64], file[PATH_MAX];
        ssize_t n;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/cpuset", (int) tid);
        n = util_read_file_at(root, path, cs, sizeof(cs));
        if (n >= 0) {
                util_strip(cs);
                if (cs[0] != '/')
                        cs[0] = '\0';
                /* v1 */
                snprintf(file, sizeof(file), "/sys/fs/cgroup/cpuset%s/cpuset.effective_cpus",
                         streq(cs, "/") ? "" : cs);
                r = read_list_file(root, file, ret);
                if (r >= 0 && !cpumask_empty(ret))
                        return 0;
                /* v2, walking up */
                for (;;) {
                        snprintf(file, sizeof(file), "/sys/fs/cgroup%s/cpuset.cpus.effective",
                                 streq(cs, "/") ? "" : cs);
                        r = read_list_file(root, file, ret);
                        if (r >= 0 && !cpumask_empty(ret))
                                return 0;
                        char *slash = strrchr(cs, '/');
                        if (!slash || slash == cs) {
                                if (streq(cs, "/") || cs[0] == '\0')
                                        break;
                                strcpy(cs, "/");
                                continue;
                        }
                        *slash = '\0';
                }
        } else if (n == -ESRCH) {
                return -ESRCH;
        } else if (n == -ENOENT) {
                /* gone, or a kernel without cpusets (CONFIG_CPUSETS=n), which has no such file */
                _cleanup_close_ int fd = -1;

                snprintf(path, sizeof(path), "/proc/%d/stat", (int) tid);
                fd = util_open_at(root, path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return -ESRCH;
        }

        /* No cpuset (CONFIG_CPUSETS=n): every online CPU. */
        return read_list_file(root, "/sys/devices/system/cpu/online", ret);
}

static int sys_affinity_set(void *userdata, const struct task_id *id, const cpumask_t *mask) {
        const struct apply_system *sys = userdata;
        _cleanup_close_ int fd = -1;
        struct task_stat st;
        cpumask_t allowed;
        cpu_set_t set, prev;
        int r;

        if (cpumask_empty(mask))
                return -EINVAL;
        fd = guard_acquire(sys, id, &st);
        if (fd < 0)
                return fd;

        /* Respect, whatever the planner said. */
        if (st.flags & PF_KTHREAD)
                return -EPERM;
        if ((st.tgid > 0 && st.tgid == getpid()) || id->pid == getpid() || id->tid == getpid())
                return -EPERM;
        r = apply_system_allowed_cpus(sys->root, id->tid, &allowed);
        if (r == -ESRCH)
                return r;
        /* The kernel silently narrows a mask to the cpuset (and refuses
         * only an empty intersection): refuse any CPU outside it here. */
        if (r >= 0 && !cpumask_subset(mask, &allowed))
                return -EINVAL;

        CPU_ZERO(&prev);
        if (sched_getaffinity(id->tid, sizeof(prev), &prev) < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        cpumask_to_cpu_set(mask, &set);
        if (sched_setaffinity(id->tid, sizeof(set), &set) < 0)
                return -errno;   /* EINVAL: outside the cpuset / offline; EPERM; ESRCH */

        r = guard_verify(sys->root, fd, id);
        if (r < 0) {
                /* The TID may now name someone else, who just got our mask:
                 * give back the mask we overwrote. */
                (void) sched_setaffinity(id->tid, sizeof(prev), &prev);
                /* only a thread gone is "gone": a check that could not be
                 * made (EMFILE, ENOMEM) leaves a live entry to ask again */
                return r == -ESRCH || r == -ENOENT ? -ESRCH : r;
        }
        return 0;
}

static int sys_affinity_allowed(void *userdata, const struct task_id *id, cpumask_t *ret) {
        const struct apply_system *sys = userdata;
        _cleanup_close_ int fd = -1;
        struct task_stat st;
        int r;

        fd = guard_acquire(sys, id, &st);
        if (fd < 0)
                return fd;
        r = apply_system_allowed_cpus(sys->root, id->tid, ret);
        if (r < 0)
                return r;
        return guard_verify(sys->root, fd, id);
}

static int sys_boot_id(void *userdata, char *buf, size_t size) {
        const struct apply_system *sys = userdata;
        ssize_t n;

        n = util_read_file_at(sys->root, "/proc/sys/kernel/random/boot_id", buf, size);
        if (n < 0)
                return (int) n;
        util_strip(buf);
        return 0;
}

/* weight / features / sysctls: levers.c is the backend (userdata there is struct levers). */
static int sys_weight_get(void *userdata, const char *cgroup, uint64_t *ret) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_weight_get(sys->levers, cgroup, ret) : -EOPNOTSUPP;
}

/* The applier enables (and journals) "+cpu" in the parents itself: see weight_prepare. */
static int sys_weight_set(void *userdata, const char *cgroup, uint64_t weight) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_weight_set_flags(sys->levers, cgroup, weight, LEVERS_WEIGHT_NO_PARENTS)
                           : -EOPNOTSUPP;
}

static int sys_weight_prepare(void *userdata, const char *cgroup, uint64_t weight, char ***ret_parents,
                              char *ret_restore, size_t restore_size) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_weight_prepare(sys->levers, cgroup, weight, ret_parents, ret_restore, restore_size)
                           : -EOPNOTSUPP;
}

static int sys_weight_recall(void *userdata, const char *cgroup, const char *restore) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_weight_recall(sys->levers, cgroup, restore) : -EOPNOTSUPP;
}

static int sys_weight_restore(void *userdata, const char *cgroup, uint64_t weight, const char *restore) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_weight_restore(sys->levers, cgroup, weight, restore) : -EOPNOTSUPP;
}

static int sys_subtree_get(void *userdata, const char *cgroup, bool *ret_enabled) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_subtree_get(sys->levers, cgroup, ret_enabled) : -EOPNOTSUPP;
}

static int sys_subtree_set(void *userdata, const char *cgroup, bool enable) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_subtree_set(sys->levers, cgroup, enable) : -EOPNOTSUPP;
}

static const char *sys_last_error(void *userdata) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_last_error(sys->levers) : NULL;
}

static int sys_flush(void *userdata) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_flush(sys->levers) : 0;
}

static const char *sys_last_detail(void *userdata) {
        const struct apply_system *sys = userdata;
        const char *d = NULL;

        if (sys->levers)
                (void) levers_weight_last_path(sys->levers, &d);
        return d;
}

static int sys_feature_get(void *userdata, const char *name, bool *ret_enabled) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_feature_get(sys->levers, name, ret_enabled) : -EOPNOTSUPP;
}

static int sys_feature_set(void *userdata, const char *name, bool enable) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_feature_set(sys->levers, name, enable) : -EOPNOTSUPP;
}

static int sys_sysctl_get(void *userdata, const char *name, char *buf, size_t size) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_sysctl_get(sys->levers, name, buf, size) : -EOPNOTSUPP;
}

static int sys_sysctl_set(void *userdata, const char *name, const char *value) {
        const struct apply_system *sys = userdata;
        return sys->levers ? levers_sysctl_set(sys->levers, name, value) : -EOPNOTSUPP;
}

const struct apply_ops apply_ops_system = {
        .affinity_get = sys_affinity_get,
        .affinity_set = sys_affinity_set,
        .affinity_allowed = sys_affinity_allowed,
        .weight_get = sys_weight_get,
        .weight_set = sys_weight_set,
        .weight_prepare = sys_weight_prepare,
        .weight_recall = sys_weight_recall,
        .weight_restore = sys_weight_restore,
        .subtree_get = sys_subtree_get,
        .subtree_set = sys_subtree_set,
        .last_error = sys_last_error,
        .last_detail = sys_last_detail,
        .flush = sys_flush,
        .feature_get = sys_feature_get,
        .feature_set = sys_feature_set,
        .sysctl_get = sys_sysctl_get,
        .sysctl_set = sys_sysctl_set,
        .boot_id = sys_boot_id,
};
