/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Helpers shared by the C benchmarks (sample-cost.c, scale.c). */

#include <stdio.h>
#include <string.h>

#include "common/util.h"

/* A "Key:   N kB" line of /proc/self/status (VmRSS, VmHWM, ...) in KiB, or -1. */
static inline long status_kib(const char *key) {
        char buf[4096], *p;
        long v = -1;

        if (util_read_file_at(NULL, "/proc/self/status", buf, sizeof(buf)) < 0)
                return -1;
        p = strstr(buf, key);
        if (p)
                sscanf(p + strlen(key), ": %ld", &v);
        return v;
}
