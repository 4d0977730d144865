/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Helpers for the levers tests: the fixture trees under
 * tests/fixtures/levers/ are copied to a temporary directory before a test
 * writes to them (the source tree is never written), and small file
 * readers for the assertions.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-util.h"

/* Copy fixture tests/fixtures/levers/<name> to a new temporary directory; returns it (free with levers_fixture_remove). */
static inline char *levers_fixture_copy(const char *name) {
        char src[PATH_MAX], rel[128], cmd[3 * PATH_MAX];
        const char *tmp = getenv("TMPDIR");
        char *dir;

        snprintf(rel, sizeof(rel), "levers/%s", name);
        test_fixture(src, sizeof(src), rel);
        if (asprintf(&dir, "%s/test-levers-XXXXXX", tmp && tmp[0] ? tmp : "/tmp") < 0 || !mkdtemp(dir)) {
                fprintf(stderr, "cannot make a temporary directory\n");
                exit(1);
        }
        snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", src, dir);
        if (system(cmd) != 0) {
                fprintf(stderr, "cannot copy fixture %s\n", src);
                exit(1);
        }
        return dir;
}

static inline void levers_fixture_remove(char *dir) {
        char cmd[PATH_MAX + 32];

        if (!dir)
                return;
        if (strncmp(dir, "/", 1) == 0 && strstr(dir, "/test-levers-")) {
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
                (void) system(cmd);
        }
        free(dir);
}

/* Contents of <root>/<path>, trailing newline stripped, in a static buffer ("<missing>" if unreadable). */
static inline const char *levers_slurp(const char *root, const char *path) {
        static char buf[4096];
        char p[PATH_MAX];
        FILE *f;
        size_t n;

        snprintf(p, sizeof(p), "%s%s", root, path);
        f = fopen(p, "re");
        if (!f)
                return "<missing>";
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return buf;
}

#define ASSERT_CONTAINS(hay, needle)                                                         \
        do {                                                                                 \
                const char *_h = (hay), *_n = (needle);                                      \
                if (!_h || !strstr(_h, _n)) {                                                \
                        fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, \
                                __LINE__, _h ? _h : "(null)", _n);                           \
                        exit(1);                                                             \
                }                                                                            \
        } while (0)
