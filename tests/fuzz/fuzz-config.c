/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for the configuration parser. Beyond "does not crash or
 * leak", it checks the two promises of config.h on every input:
 *  - every error message is "NAME:..." about the input it was given;
 *  - a configuration that parses prints in a form that parses again to
 *    the identical print (print → parse → print).
 * The input is parsed as a bundle ("fuzz.dump"): [Daemon] and policies.
 *
 * Built twice: with tests/fuzz/fuzz-replay.c (plain main, replays
 * tests/fuzz/corpus/config under `make check`) and, with
 * ./configure --enable-fuzzer CC=clang, as a libFuzzer binary:
 *   tests/fuzz/fuzz-config-libfuzzer -dict=tests/fuzz/fuzz-config.dict \
 *       -max_len=1024 CORPUS_COPY tests/fuzz/corpus/config
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *print(const struct config *c) {
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);

        if (!f)
                abort();
        if (config_print(c, f) < 0)
                abort();
        fclose(f);
        return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct config *c = NULL, *again = NULL;
        struct config_errors e = {};
        char *p1, *p2;
        int r;

        if (size > 64 * 1024)
                return 0;
        r = config_load_buffer("fuzz.dump", (const char *) data, size, &c, &e);
        for (size_t i = 0; i < e.n; i++)
                if (strncmp(e.items[i].message, "fuzz.dump:", 10) != 0) {
                        fprintf(stderr, "message without the file name: %s\n", e.items[i].message);
                        abort();
                }
        config_errors_clear(&e);
        if (r == -ENOMEM)
                return 0;
        if (r < 0) {
                if (c || r != -EINVAL)
                        abort();
                return 0;
        }

        p1 = print(c);
        r = config_load_buffer("fuzz.dump", p1, strlen(p1), &again, &e);
        if (r < 0) {
                fprintf(stderr, "printed configuration does not parse:\n%s", p1);
                for (size_t i = 0; i < e.n; i++)
                        fprintf(stderr, "%s\n", e.items[i].message);
                abort();
        }
        p2 = print(again);
        if (strcmp(p1, p2) != 0) {
                fprintf(stderr, "print is not stable:\n--- first\n%s--- second\n%s", p1, p2);
                abort();
        }
        free(p1);
        free(p2);
        config_free(again);
        config_free(c);
        return 0;
}
