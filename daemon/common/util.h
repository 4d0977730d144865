/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Small helpers shared by affinityd and affctl: cleanup attributes, reading
 * files below a root prefix, number parsing and clocks.
 *
 * Every /proc and /sys path the project reads or writes goes through
 * util_path_at() so that tests can point the whole program at a fixture
 * tree (tests/fixtures/): no path is read without the root prefix.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define streq(a, b) (strcmp((a), (b)) == 0)
/* streq() where either may be NULL (equal when both are) */
#define streq_ptr(a, b) ((a) && (b) ? streq((a), (b)) : (a) == (b))

#define USEC_PER_SEC  UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_SEC  UINT64_C(1000000000)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)

static inline void freep(void *p) {
        free(*(void **) p);
}
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
/* qsort() with nothing to sort: base may then be NULL, which qsort()'s
 * nonnull contract (and UBSan) forbids. systemd's qsort_safe(). */
static inline void qsort_safe(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
        if (n > 1)
                qsort(base, n, size, cmp);
}
/* bsearch() in nothing finds nothing, whatever base is (the same contract). */
static inline void *bsearch_safe(const void *key, const void *base, size_t n, size_t size,
                                 int (*cmp)(const void *, const void *)) {
        return n > 0 ? bsearch(key, base, n, size, cmp) : NULL;
}
void strv_free(char **l);
static inline void strv_freep(char ***l) {
        strv_free(*l);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Hand ownership out of a cleanup variable. */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

/*
 * Build "<root>/<path>" into buf. root may be NULL, "" or "/" for the real
 * root. Returns buf, or NULL if it does not fit (callers treat that as
 * -ENAMETOOLONG).
 */
char *util_path_at(char *buf, size_t size, const char *root, const char *path);
/* Is root the real one (NULL, "" or "/"), not a fixture tree? */
bool util_root_is_real(const char *root);

/* Open a file below root; returns an fd or -errno. */
int util_open_at(const char *root, const char *path, int flags);

/*
 * Read a whole (small, virtual) file below root into buf, NUL-terminated.
 * Returns the number of bytes read, or -errno. -E2BIG if it did not fit.
 * /proc files are read with one read() per call, so the content is
 * consistent as the kernel produced it.
 */
ssize_t util_read_file_at(const char *root, const char *path, char *buf, size_t size);

/*
 * The same for a file the kernel makes whole at each read (a seq_file of
 * one record: /proc/PID/{stat,status,io,sched,schedstat}, /proc/loadavg,
 * /proc/pressure/cpu) or a small local file: one read returns all of it
 * when it fits, so the read that would only say "end of file" is not
 * made. It was a quarter of the daemon's syscalls beside 2,000 threads
 * that each wake every 50 ms (each one's stat and status every pass).
 * Not for a file of many records (cgroup.procs, /proc/schedstat,
 * mountinfo): a seq_file hands those out a page at a time.
 */
ssize_t util_read_record_at(const char *root, const char *path, char *buf, size_t size);

/* Read an fd to its end into a malloc'ed, NUL-terminated string; -E2BIG past max bytes. */
int util_read_fd(int fd, size_t max, char **ret, size_t *ret_size);
/* Read fd into buf until EOF or size - 1 bytes, NUL-terminated; the length. */
ssize_t util_read_fd_into(int fd, char *buf, size_t size);

/* Read a file below root into a malloc'ed, NUL-terminated string (at most 64 MiB). */
int util_read_full_file_at(const char *root, const char *path, char **ret, size_t *ret_size);

/* Write a string to a file below root (no O_CREAT; O_TRUNC, which kernfs, procfs
 * and debugfs ignore, so a fixture file holds exactly the value written). */
int util_write_file_at(const char *root, const char *path, const char *value);

/* Strict decimal parsers: whole string, no sign for unsigned, range checked. */
int util_parse_u64(const char *s, uint64_t *ret);
int util_parse_int(const char *s, int *ret);

/* Strip leading and trailing blanks and newlines in place (the text moves to s); returns s. */
char *util_strip(char *s);

/* Monotonic and boot-time clocks in µs. */
uint64_t util_now_usec(void);
uint64_t util_boottime_usec(void);
/* A CLOCK_MONOTONIC time as seconds of CLOCK_BOOTTIME: the clock of the
 * daemon's debug lines (when a pass was planned for and when it ran), the
 * one a client's trace lays its requests on. */
double util_boottime_s_of(uint64_t mono_usec);

/* NULL-terminated string vectors. */
size_t strv_length(char * const *l);
int strv_push(char ***l, const char *s);     /* copies s */
char **strv_copy(char * const *l);
bool strv_contains(char * const *l, const char *s);

/* Clock ticks per second for /proc/<pid>/stat times (sysconf(_SC_CLK_TCK)). */
long util_clk_tck(void);
