/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "sample/sample-internal.h"
#include "sample/sample.h"

/* Policies match Cmdline= globs; 4 KiB is more than any glob needs and bounds
 * memory with many processes (ps(1) truncates too). */
#define CMDLINE_MAX 4096

void sample_proc_info_done(struct proc_info *info) {
        free(info->exe);
        free(info->cmdline);
        free(info->cgroup);
        free(info->cgroup_systemd);
        free(info->unit);
        *info = (struct proc_info) {};
}

static int read_exe(const char *root, pid_t pid, char **ret) {
        char rel[64], path[PATH_MAX], target[PATH_MAX];
        ssize_t n;

        *ret = NULL;
        snprintf(rel, sizeof(rel), "/proc/%d/exe", (int) pid);
        if (!util_path_at(path, sizeof(path), root, rel))
                return -ENAMETOOLONG;
        n = readlink(path, target, sizeof(target) - 1);
        if (n < 0)
                return -errno;
        target[n] = '\0';
        *ret = strdup(target);
        return *ret ? 0 : -ENOMEM;
}

/* A command line this daemon may not read (EACCES under hidepid=, without
 * CAP_SYS_PTRACE) is "", as the header promises: the rest of the process's
 * info is still good. Other errors (EMFILE, EIO) fail the read, to be tried
 * again next pass, rather than leave "" for the process's life. */
static int cmdline_unreadable(int r, char **ret) {
        if (r != -EACCES && r != -EPERM)
                return r;
        *ret = strdup("");
        return *ret ? 0 : -ENOMEM;
}

static int read_cmdline(const char *root, pid_t pid, char **ret) {
        char rel[64], buf[CMDLINE_MAX];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        *ret = NULL;
        snprintf(rel, sizeof(rel), "/proc/%d/cmdline", (int) pid);
        fd = util_open_at(root, rel, O_RDONLY);
        if (fd < 0)
                return cmdline_unreadable(fd, ret);
        /* Not util_read_file_at(): a long command line is truncated, not an error. */
        n = util_read_fd_into(fd, buf, sizeof(buf));
        if (n < 0)
                return cmdline_unreadable((int) n, ret);
        sample_cmdline_to_string(buf, (size_t) n);
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

/*
 * Walk up through parents with the same comm while they started earlier,
 * lowering *start to theirs: one read of each ancestor's stat (its
 * field 4 names the next). Bounded: a chain of same-named processes
 * deeper than this is not a service's fork tree. Read once per process,
 * like the rest of proc_info; the common case (a parent of another name)
 * costs one read.
 */
#define LINEAGE_DEPTH_MAX 8

static void lineage_start(const char *root, pid_t ppid, const char *comm, uint64_t *start, unsigned *files_read) {
        for (int depth = 0; depth < LINEAGE_DEPTH_MAX && ppid > 1; depth++) {
                struct stat_fields pf;
                char rel[64], buf[4096];
                ssize_t k;

                (*files_read)++;
                snprintf(rel, sizeof(rel), "/proc/%d/stat", (int) ppid);
                k = util_read_file_at(root, rel, buf, sizeof(buf));
                if (k < 0 || sample_parse_stat(buf, &pf) < 0)
                        return;
                if (strcmp(pf.comm, comm) != 0 || pf.start_time > *start)
                        return;
                *start = pf.start_time;
                ppid = pf.ppid;
        }
}

int sample_proc_info_load(const char *root, pid_t pid, const struct stat_fields *leader,
                          struct proc_info *info, unsigned *files_read) {
        struct proc_info n = {
                .pid = pid,
                .start_time = leader->start_time,
                .kthread = leader->flags & SAMPLE_PF_KTHREAD,
        };
        struct status_fields st;
        char rel[64], buf[8192];
        ssize_t k;
        int r;

        snprintf(n.comm, sizeof(n.comm), "%s", leader->comm);

        if (!n.kthread) {
                (*files_read)++;
                r = read_exe(root, pid, &n.exe);
                if (r == -ENOMEM)
                        goto fail;
                /* ENOENT here is also a zombie leader or a process without mm; keep going,
                 * the cmdline read below tells whether the process is really gone. */
        }

        (*files_read)++;
        r = read_cmdline(root, pid, &n.cmdline);
        if (r < 0)
                goto fail;

        (*files_read)++;
        r = sample_read_cgroup_unit(root, pid, &n.cgroup, &n.cgroup_systemd, &n.unit);
        if (r < 0)
                goto fail;

        (*files_read)++;
        snprintf(rel, sizeof(rel), "/proc/%d/status", (int) pid);
        k = util_read_file_at(root, rel, buf, sizeof(buf));
        if (sample_gone((int) k)) {
                r = (int) k;
                goto fail;
        }
        if (k >= 0 && sample_parse_status(buf, &st) >= 0 && st.have_uid)
                n.uid = st.euid;
        else
                n.uid = (uid_t) -1;

        n.lineage_start_time = n.start_time;
        if (!n.kthread)
                lineage_start(root, leader->ppid, n.comm, &n.lineage_start_time, files_read);

        sample_proc_info_done(info);
        *info = n;
        return 0;
fail:
        sample_proc_info_done(&n);
        return r;
}

int sample_read_cgroup(const char *root, pid_t pid, char **ret_cgroup, char **ret_systemd) {
        _cleanup_free_ char *buf = NULL;
        char rel[64];
        int r;

        if (pid <= 0 || !ret_cgroup || !ret_systemd)
                return -EINVAL;
        snprintf(rel, sizeof(rel), "/proc/%d/cgroup", (int) pid);
        /* whole: on v1 every hierarchy has a line, and a container's nested
         * paths on a dozen of them pass 4 KiB; cut, the cpu line is lost */
        r = util_read_full_file_at(root, rel, &buf, NULL);
        if (sample_gone(r))
                return r;
        /* unreadable for another reason: no cgroup known ("") */
        return sample_parse_cgroup(r >= 0 ? buf : "", ret_cgroup, ret_systemd);
}

bool sample_process_runs(const char *root, pid_t pid) {
        _cleanup_free_ char *buf = NULL;
        struct stat_fields f;
        char rel[64];

        snprintf(rel, sizeof(rel), "/proc/%d/stat", (int) pid);
        if (pid <= 0 || util_read_full_file_at(root, rel, &buf, NULL) < 0)
                return false;
        /* a line we cannot parse is no proof it is gone */
        return sample_parse_stat(buf, &f) < 0 || (f.state != 'Z' && f.state != 'X');
}

int sample_read_cgroup_unit(const char *root, pid_t pid, char **ret_cgroup, char **ret_systemd, char **ret_unit) {
        _cleanup_free_ char *cg = NULL, *sd = NULL;
        int r;

        r = sample_read_cgroup(root, pid, &cg, &sd);
        if (r >= 0)
                r = sample_cgroup_unit(sd, ret_unit);
        if (r < 0)
                return r;
        *ret_cgroup = TAKE_PTR(cg);
        *ret_systemd = TAKE_PTR(sd);
        return 0;
}
