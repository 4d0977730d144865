/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for the /proc parsers (daemon/sample/sample-parse.c): what a
 * hostile or odd kernel text can make of them. The first byte picks the
 * parser, the rest is the file's text. Beyond "does not crash or overrun"
 * (ASan, UBSan), each parser's promises: a stat line that parses has a
 * comm that fits; a CPU-line parser never reports more lines than CPUs it
 * was given room for; cgroup paths come back as strings (never NULL on
 * success); a unit name, when found, ends in a unit suffix.
 *
 * Built like fuzz-config: with fuzz-replay.c under make check over
 * tests/fuzz/corpus/proc, and for libFuzzer with --enable-fuzzer CC=clang.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sample-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { P_STAT, P_STATUS, P_SCHEDSTAT, P_SCHED, P_PROC_STAT, P_CPU_SCHEDSTAT, P_PSI, P_CGROUP, P_UNIT, P_CMDLINE, P_MAX };

static bool has_unit_suffix(const char *s) {
        static const char *const suffixes[] = { ".service", ".scope", ".socket", ".mount", ".swap", ".slice" };
        size_t n = strlen(s);

        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
                size_t k = strlen(suffixes[i]);
                if (n > k && strcmp(s + n - k, suffixes[i]) == 0)
                        return true;
        }
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf;
        int which, r;

        if (size < 1 || size > 64 * 1024)
                return 0;
        which = data[0] % P_MAX;
        /* the parsers read NUL-terminated text, as read_file gives them */
        buf = malloc(size);
        if (!buf)
                return 0;
        memcpy(buf, data + 1, size - 1);
        buf[size - 1] = '\0';

        switch (which) {
        case P_STAT: {
                struct stat_fields f;
                r = sample_parse_stat(buf, &f);
                if (r >= 0 && strnlen(f.comm, sizeof(f.comm)) >= sizeof(f.comm))
                        abort();
                break;
        }
        case P_STATUS: {
                struct status_fields f;
                (void) sample_parse_status(buf, &f);
                break;
        }
        case P_SCHEDSTAT: {
                uint64_t a, b, c;
                (void) sample_parse_schedstat(buf, &a, &b, &c);
                break;
        }
        case P_SCHED: {
                uint64_t m;
                (void) sample_parse_sched_migrations(buf, &m);
                break;
        }
        case P_PROC_STAT:
        case P_CPU_SCHEDSTAT: {
                struct cpu_sample cpus[4] = {};
                bool present[4] = {};
                r = which == P_PROC_STAT ? sample_parse_proc_stat(buf, cpus, present, 4)
                                         : sample_parse_cpu_schedstat(buf, cpus, present, 4);
                if (r > 0) {
                        int n = 0;
                        for (int i = 0; i < 4; i++)
                                n += present[i];
                        if (n > r)
                                abort();
                }
                break;
        }
        case P_PSI: {
                double v;
                (void) sample_parse_psi_some_avg10(buf, &v);
                break;
        }
        case P_CGROUP: {
                char *cg = NULL, *sd = NULL;
                r = sample_parse_cgroup(buf, &cg, &sd);
                if (r >= 0 && (!cg || !sd))
                        abort();
                free(cg);
                free(sd);
                break;
        }
        case P_UNIT: {
                char *u = NULL;
                r = sample_cgroup_unit(buf, &u);
                if (r >= 0 && u && !has_unit_suffix(u)) {
                        fprintf(stderr, "unit '%s' of '%s' has no unit suffix\n", u, buf);
                        abort();
                }
                free(u);
                break;
        }
        case P_CMDLINE: {
                /* cmdline: NUL-separated, room for one more byte */
                char *cl = malloc(size);
                if (cl) {
                        memcpy(cl, data + 1, size - 1);
                        sample_cmdline_to_string(cl, size - 1);
                        /* one line: no newline left, and it ends where the last argument did */
                        if (strchr(cl, '\n') || strlen(cl) > size - 1)
                                abort();
                        free(cl);
                }
                break;
        }
        }
        free(buf);
        return 0;
}
