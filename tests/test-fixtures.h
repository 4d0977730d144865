/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Fixtures shared by the module tests: policy literals, temporary
 * directories and files written under a fake root. Header-only (static
 * inline, like test-util.h), so a test uses them by including this file
 * and its _SOURCES in the module's .am fragment stay as they are.
 */

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/util.h"
#include "test-util.h"

/*
 * A struct policy initializer as the parser leaves a policy that sets only
 * Name=, Detector= and Action= (config-parse.c start_policy()): enabled,
 * priority 50, both match tri-states unset, every threshold "detector
 * default". Usable in static initializers and as (struct policy) TEST_POLICY(...).
 * Needs config/config.h, from the module's header (plan.h, detect.h, ...).
 */
#define TEST_POLICY(name_, detector_, action_)                                          \
        {                                                                               \
                .name = (char *) (name_),                                               \
                .enabled = true,                                                        \
                .priority = 50,                                                         \
                .detector = (detector_),                                                \
                .action = (action_),                                                    \
                .match = { .kthreads = MATCH_ANY, .realtime = MATCH_ANY },              \
                .util_min = -1, .migrations_min_per_s = -1, .wake_rate_min_per_s = -1, \
                .run_delay_min_ms_per_s = -1, .steal_min = -1, .group_util_max = -1,    \
                .pair_owners = -1,                                                      \
                .cpu_weight = -1,                                                       \
                .pair_span = -1,                                                        \
        }

/* A new empty directory $TMPDIR/<prefix>XXXXXX (/tmp without TMPDIR) in buf. */
static inline const char *test_mkdtemp(char *buf, size_t size, const char *prefix) {
        const char *tmp = getenv("TMPDIR");

        snprintf(buf, size, "%s/%sXXXXXX", tmp ? tmp : "/tmp", prefix);
        ASSERT_TRUE(mkdtemp(buf));
        return buf;
}

/*
 * As test_mkdtemp(), for trees of thousands of files (tests/machines.c): in
 * /dev/shm when TMPDIR is not set and /dev/shm is writable with 256 MiB
 * free. A 256-CPU tree is about 3,900 files; on the development VM's ext4
 * /tmp creating them took 2 s, on tmpfs 0.1 s. The 1,024-CPU tree takes
 * 62 MiB of tmpfs (a page a file), more than a container's default 64 MiB
 * /dev/shm leaves. tests/daemon-machines.sh picks its directory the same way.
 */
static inline const char *test_mkdtemp_tree(char *buf, size_t size, const char *prefix) {
        struct statvfs sv;

        if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0 && statvfs("/dev/shm", &sv) == 0 &&
            (uint64_t) sv.f_bavail * sv.f_frsize >= UINT64_C(256) << 20) {
                snprintf(buf, size, "/dev/shm/%sXXXXXX", prefix);
                if (mkdtemp(buf))
                        return buf;
        }
        return test_mkdtemp(buf, size, prefix);
}

/* Remove the files directly in dir (state directories hold no subdirectories), keep dir. */
static inline void test_clean_dir(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;
        char p[PATH_MAX];

        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
                        unlink(p);
                }
        closedir(d);
}

static inline int test_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

/* rm -rf path, without following links. */
static inline void test_rm_tree(const char *path) {
        (void) nftw(path, test_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * A fresh writable copy of tests/fixtures/<name> in a new temporary
 * directory test_mkdtemp(root, size, prefix). u+w: under make distcheck
 * the source tree is read-only, and tests write into the copy.
 */
static inline const char *test_copy_fixture(char *root, size_t size, const char *prefix, const char *name) {
        char src[PATH_MAX], cmd[4 * PATH_MAX];

        test_mkdtemp(root, size, prefix);
        test_fixture(src, sizeof(src), name);
        snprintf(cmd, sizeof(cmd), "cp -R '%s/.' '%s/' && chmod -R u+w '%s'", src, root, root);
        ASSERT_EQ(system(cmd), 0);
        return root;
}

/* Write n bytes (may hold NULs, as /proc/PID/cmdline) to root/rel, through the root prefix. */
static inline void test_write_bytes_at(const char *root, const char *rel, const char *content, size_t n) {
        char path[PATH_MAX];
        FILE *f;

        ASSERT_TRUE(util_path_at(path, sizeof(path), root, rel));
        f = fopen(path, "we");
        ASSERT_TRUE(f);
        ASSERT_EQ(fwrite(content, 1, n, f), n);
        ASSERT_EQ(fclose(f), 0);
}

static inline void test_write_at(const char *root, const char *rel, const char *content) {
        test_write_bytes_at(root, rel, content, strlen(content));
}

/* rm -rf root/rel. */
static inline void test_remove_at(const char *root, const char *rel) {
        char path[PATH_MAX];

        ASSERT_TRUE(util_path_at(path, sizeof(path), root, rel));
        test_rm_tree(path);
}
