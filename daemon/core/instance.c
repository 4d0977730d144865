/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "core/instance.h"

/* The lock file's "PID RUNTIME-DIR": *ret_pid 0 and dir "" when it holds none. */
static void read_holder(int fd, int *ret_pid, char *dir, size_t dir_size) {
        char buf[4200];
        ssize_t k = pread(fd, buf, sizeof(buf) - 1, 0);
        const char *sp;

        buf[k > 0 ? k : 0] = '\0';
        util_strip(buf);
        *ret_pid = 0;
        dir[0] = '\0';
        if (sscanf(buf, "%d", ret_pid) != 1 || *ret_pid <= 0) {
                *ret_pid = 0;
                return;
        }
        sp = strchr(buf, ' ');
        if (sp)
                snprintf(dir, dir_size, "%s", sp + 1);
}

int instance_lock(const char *root, const char *runtime_dir, uint64_t wait_usec, char *msg, size_t msg_size,
                  char *ret_prev_dir, size_t prev_size) {
        _cleanup_close_ int fd = -1;
        char path[4096], line[4200];
        uint64_t deadline = util_now_usec() + wait_usec;
        int n;

        msg[0] = '\0';
        if (ret_prev_dir && prev_size)
                ret_prev_dir[0] = '\0';
        n = snprintf(path, sizeof(path), "%s%s", streq(root, "/") ? "" : root, INSTANCE_LOCK_DIR);
        if (n < 0 || (size_t) n >= sizeof(path))
                return -ENAMETOOLONG;
        /* Only the last component: no <root>/run means no place to lock. */
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                int r = -errno;
                snprintf(msg, msg_size, "cannot create %s: %s", path, strerror(-r));
                return r;
        }
        if ((size_t) n + strlen("/" INSTANCE_LOCK_NAME) >= sizeof(path))
                return -ENAMETOOLONG;
        strcat(path, "/" INSTANCE_LOCK_NAME);
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
                int r = -errno;
                snprintf(msg, msg_size, "cannot open %s: %s", path, strerror(-r));
                return r;
        }
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                char dir[4096];
                int pid;

                if (errno == EINTR)
                        continue;
                if (errno != EWOULDBLOCK) {
                        int r = -errno;
                        snprintf(msg, msg_size, "cannot lock %s: %s", path, strerror(-r));
                        return r;
                }
                if (util_now_usec() < deadline) {
                        (void) nanosleep(&(struct timespec) { .tv_nsec = 50 * 1000 * 1000 }, NULL);
                        continue;
                }
                read_holder(fd, &pid, dir, sizeof(dir));
                if (pid > 0)
                        snprintf(msg, msg_size,
                                 "another affinityd is running on this machine: PID %d, runtime dir %s "
                                 "(%s); one instance per machine, they would act on the same tasks",
                                 pid, dir[0] ? dir : "?", path);
                else
                        snprintf(msg, msg_size, "another affinityd holds %s; one instance per machine", path);
                return -EBUSY;
        }
        /* Ours. The one before us (killed, or crashed) may have used another
         * runtime dir: its journal is there, for the caller to restore. */
        if (ret_prev_dir && prev_size) {
                int pid;

                read_holder(fd, &pid, ret_prev_dir, prev_size);
                if (pid == 0 || streq(ret_prev_dir, runtime_dir))
                        ret_prev_dir[0] = '\0';
        }
        /* Say who holds it, for the next one. */
        snprintf(line, sizeof(line), "%d %s\n", (int) getpid(), runtime_dir);
        if (ftruncate(fd, 0) < 0 || pwrite(fd, line, strlen(line), 0) < 0) {
                int r = -errno;
                snprintf(msg, msg_size, "cannot write %s: %s", path, strerror(-r));
                return r;
        }
        return TAKE_FD(fd);
}

int instance_forget(int fd) {
        if (fd < 0)
                return -EBADF;
        return ftruncate(fd, 0) < 0 ? -errno : 0;
}
