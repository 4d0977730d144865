/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <limits.h>
#include <time.h>

#include "common/util.h"

bool util_root_is_real(const char *root) {
        return !root || root[0] == '\0' || streq(root, "/");
}

char *util_path_at(char *buf, size_t size, const char *root, const char *path) {
        int n;

        if (util_root_is_real(root))
                n = snprintf(buf, size, "%s", path);
        else
                n = snprintf(buf, size, "%s%s%s", root,
                             path[0] == '/' ? "" : "/", path);
        if (n < 0 || (size_t) n >= size)
                return NULL;
        return buf;
}

int util_open_at(const char *root, const char *path, int flags) {
        char p[PATH_MAX];
        int fd;

        if (!util_path_at(p, sizeof(p), root, path))
                return -ENAMETOOLONG;
        fd = open(p, flags | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* read(2), again after EINTR; -errno on error. */
static ssize_t read_retry(int fd, char *buf, size_t size) {
        for (;;) {
                ssize_t n = read(fd, buf, size);
                if (n >= 0)
                        return n;
                if (errno != EINTR)
                        return -errno;
        }
}

ssize_t util_read_fd_into(int fd, char *buf, size_t size) {
        size_t have = 0;

        if (size == 0)
                return -EINVAL;
        while (have < size - 1) {
                ssize_t n = read_retry(fd, buf + have, size - 1 - have);
                if (n < 0)
                        return n;
                if (n == 0)
                        break;
                have += (size_t) n;
        }
        buf[have] = '\0';
        return (ssize_t) have;
}

static ssize_t read_file_at(const char *root, const char *path, char *buf, size_t size, bool one_record) {
        _cleanup_close_ int fd = -1;
        ssize_t have;
        char c;

        if (size == 0)
                return -EINVAL;
        fd = util_open_at(root, path, O_RDONLY);
        if (fd < 0)
                return fd;
        if (one_record) {
                have = read_retry(fd, buf, size - 1);
                if (have < 0)
                        return have;
                buf[have] = '\0';
        } else
                have = util_read_fd_into(fd, buf, size);
        /* Full buffer: is there more? */
        if (have == (ssize_t) size - 1 && read(fd, &c, 1) > 0)
                return -E2BIG;
        return have;
}

ssize_t util_read_file_at(const char *root, const char *path, char *buf, size_t size) {
        return read_file_at(root, path, buf, size, false);
}

ssize_t util_read_record_at(const char *root, const char *path, char *buf, size_t size) {
        return read_file_at(root, path, buf, size, true);
}

int util_read_fd(int fd, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t have = 0, alloc = 0;

        for (;;) {
                if (alloc - have < 4096) {
                        size_t na = alloc ? alloc * 2 : 8192;
                        char *nb;
                        if (alloc > max)
                                return -E2BIG;
                        nb = realloc(buf, na);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        alloc = na;
                }
                ssize_t n = read_retry(fd, buf + have, alloc - have - 1);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        break;
                have += (size_t) n;
        }
        if (have > max)
                return -E2BIG;
        if (!buf) {
                buf = strdup("");
                if (!buf)
                        return -ENOMEM;
        } else
                buf[have] = '\0';
        if (ret_size)
                *ret_size = have;
        *ret = TAKE_PTR(buf);
        return 0;
}

int util_read_full_file_at(const char *root, const char *path, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -1;

        fd = util_open_at(root, path, O_RDONLY);
        if (fd < 0)
                return fd;
        return util_read_fd(fd, 64u * 1024 * 1024, ret, ret_size);
}

int util_write_file_at(const char *root, const char *path, const char *value) {
        _cleanup_close_ int fd = -1;
        size_t len = strlen(value);
        ssize_t n;

        /*
         * O_TRUNC: kernfs, procfs and debugfs ignore it (it is what
         * `echo x > file` does), and in a fixture tree the file then holds
         * exactly the value written.
         */
        fd = util_open_at(root, path, O_WRONLY | O_TRUNC | O_NOCTTY);
        if (fd < 0)
                return fd;
        n = write(fd, value, len);
        if (n < 0)
                return -errno;
        if ((size_t) n != len)
                return -EIO;
        return 0;
}

int util_parse_u64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int util_parse_int(const char *s, int *ret) {
        long v;
        char *end;

        if (!s || *s == '\0')
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno == ERANGE || v > INT_MAX || v < INT_MIN)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = (int) v;
        return 0;
}

static bool is_blank(char c) {
        return c == '\n' || c == ' ' || c == '\t' || c == '\r';
}

char *util_strip(char *s) {
        size_t skip = 0, n = strlen(s);

        while (n > 0 && is_blank(s[n - 1]))
                s[--n] = '\0';
        while (skip < n && is_blank(s[skip]))
                skip++;
        /* Moved down rather than returning s + skip: callers that ignore the
         * return value (most do) must see the stripped text too. Linux 6.1
         * right-aligns nohz_full's "(null)" to the CPU count, so sysfs files
         * do have leading blanks. */
        if (skip > 0)
                memmove(s, s + skip, n - skip + 1);
        return s;
}

static uint64_t clock_usec(clockid_t id) {
        struct timespec ts;
        clock_gettime(id, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

uint64_t util_now_usec(void) {
        return clock_usec(CLOCK_MONOTONIC);
}

uint64_t util_boottime_usec(void) {
        return clock_usec(CLOCK_BOOTTIME);
}

double util_boottime_s_of(uint64_t mono_usec) {
        return ((double) mono_usec + (double) util_boottime_usec() - (double) util_now_usec()) / USEC_PER_SEC;
}

void strv_free(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}

size_t strv_length(char * const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

int strv_push(char ***l, const char *s) {
        size_t n = strv_length(*l);
        char *c, **nl;

        c = strdup(s);
        if (!c)
                return -ENOMEM;
        nl = realloc(*l, (n + 2) * sizeof(char *));
        if (!nl) {
                free(c);
                return -ENOMEM;
        }
        nl[n] = c;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

char **strv_copy(char * const *l) {
        char **r = calloc(strv_length(l) + 1, sizeof(char *));
        size_t i = 0;

        if (!r)
                return NULL;
        for (; l && l[i]; i++) {
                r[i] = strdup(l[i]);
                if (!r[i]) {
                        strv_free(r);
                        return NULL;
                }
        }
        return r;
}

bool strv_contains(char * const *l, const char *s) {
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

long util_clk_tck(void) {
        long t = sysconf(_SC_CLK_TCK);
        return t > 0 ? t : 100;
}
