/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A plain main for libFuzzer-style targets: runs LLVMFuzzerTestOneInput on
 * every file named on the command line (directories: every file in them),
 * or, without arguments, on the target's corpus FUZZ_CORPUS below
 * $top_srcdir. `make check` runs it; a crash or abort() fails the test.
 * Any fuzz target can link it (fuzz_<name>_SOURCES = fuzz-<name>.c fuzz-replay.c).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
        FILE *f = fopen(path, "re");
        uint8_t *buf = NULL;
        size_t n = 0, alloc = 0;

        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        for (;;) {
                if (alloc - n < 4096) {
                        uint8_t *nb = realloc(buf, alloc ? alloc * 2 : 8192);
                        if (!nb)
                                abort();
                        buf = nb;
                        alloc = alloc ? alloc * 2 : 8192;
                }
                size_t k = fread(buf + n, 1, alloc - n, f);
                if (k == 0)
                        break;
                n += k;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
        return 0;
}

static int run_path(const char *path, unsigned *count) {
        struct stat st;
        struct dirent **names;
        int n, r = 0;

        if (stat(path, &st) < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
                (*count)++;
                return run_file(path);
        }
        n = scandir(path, &names, NULL, alphasort);
        if (n < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        for (int i = 0; i < n; i++) {
                char p[PATH_MAX];

                if (names[i]->d_name[0] != '.' &&
                    (size_t) snprintf(p, sizeof(p), "%s/%s", path, names[i]->d_name) < sizeof(p) &&
                    run_path(p, count) < 0)
                        r = -1;
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char **argv) {
        unsigned count = 0;
        int r = 0;

        if (argc > 1) {
                for (int i = 1; i < argc; i++)
                        if (run_path(argv[i], &count) < 0)
                                r = 1;
        } else {
                const char *top = getenv("top_srcdir");
                char p[PATH_MAX];

                snprintf(p, sizeof(p), "%s/%s", top ? top : TOP_SRCDIR, FUZZ_CORPUS);
                if (run_path(p, &count) < 0)
                        r = 1;
        }
        if (count == 0) {
                fprintf(stderr, "no inputs\n");
                return 1;
        }
        printf("%s: %u inputs replayed\n", argv[0], count);
        return r;
}
