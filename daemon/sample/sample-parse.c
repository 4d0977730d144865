/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sample/sample-internal.h"

static int next_u64(const char **p, uint64_t *ret) {
        const char *s = *p;
        char *end;
        unsigned long long v;

        while (*s == ' ' || *s == '\t')
                s++;
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno)
                return -errno;
        *ret = v;
        *p = end;
        return 0;
}

/* A stat field: unsigned 64-bit (rsslim is 2^64-1) or negative (tpgid, nice);
 * negative values come back as their two's complement. */
static int next_field(const char **p, int64_t *ret) {
        const char *s = *p;
        bool neg = false;
        uint64_t v;
        int r;

        while (*s == ' ' || *s == '\t')
                s++;
        if (*s == '-') {
                neg = true;
                s++;
        }
        r = next_u64(&s, &v);
        if (r < 0)
                return r;
        *ret = neg ? -(int64_t) v : (int64_t) v;
        *p = s;
        return 0;
}

int sample_parse_stat(const char *buf, struct stat_fields *ret) {
        const char *open, *close, *p;
        struct stat_fields f = {};
        size_t len;

        open = strchr(buf, '(');
        close = strrchr(buf, ')');
        if (!open || !close || close < open)
                return -EINVAL;
        len = MIN((size_t) (close - open - 1), sizeof(f.comm) - 1);
        memcpy(f.comm, open + 1, len);
        f.comm[len] = '\0';

        p = close + 1;
        while (*p == ' ')
                p++;
        if (!*p)
                return -EINVAL;
        f.state = *p++;

        /* Fields 4.. as signed numbers (some are -1, e.g. tty_pgrp). */
        for (int field = 4; field <= 41; field++) {
                int64_t v = 0;
                int r = next_field(&p, &v);
                if (r < 0)
                        return r;
                switch (field) {
                case 4:
                        f.ppid = (pid_t) v;
                        break;
                case 9:
                        f.flags = (unsigned) v;
                        break;
                case 14:
                        f.utime = (uint64_t) v;
                        break;
                case 15:
                        f.stime = (uint64_t) v;
                        break;
                case 19:
                        f.nice = (int) v;
                        break;
                case 20:
                        f.num_threads = (unsigned) v;
                        break;
                case 22:
                        f.start_time = (uint64_t) v;
                        break;
                case 39:
                        f.processor = (int) v;
                        break;
                case 41:
                        f.policy = (unsigned) v;
                        break;
                default:
                        break;
                }
        }
        *ret = f;
        return 0;
}

/* "Key:\tvalue" lines; returns the value of key or NULL. */
static const char *status_value(const char *line, const char *key) {
        size_t n = strlen(key);

        if (strncmp(line, key, n) != 0 || line[n] != ':')
                return NULL;
        line += n + 1;
        while (*line == ' ' || *line == '\t')
                line++;
        return line;
}

int sample_parse_status(const char *buf, struct status_fields *ret) {
        struct status_fields f = {};
        bool have_nv = false, have_niv = false;

        for (const char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                const char *v;

                switch (line[0]) {
                case 'C':
                        /* cpumask_parse_list() stops at the newline. */
                        if ((v = status_value(line, "Cpus_allowed_list")) &&
                            cpumask_parse_list(v, &f.allowed) >= 0)
                                f.have_allowed = true;
                        break;
                case 'U':
                        if ((v = status_value(line, "Uid"))) {
                                uint64_t real, eff;
                                if (next_u64(&v, &real) >= 0 && next_u64(&v, &eff) >= 0) {
                                        f.euid = (uid_t) eff;
                                        f.have_uid = true;
                                }
                        }
                        break;
                case 'T':
                        if ((v = status_value(line, "Tgid"))) {
                                uint64_t tg;
                                if (next_u64(&v, &tg) >= 0 && tg > 0 && tg <= INT32_MAX) {
                                        f.tgid = (pid_t) tg;
                                        f.have_tgid = true;
                                }
                        }
                        break;
                case 'v':
                        if ((v = status_value(line, "voluntary_ctxt_switches")))
                                have_nv = next_u64(&v, &f.nvcsw) >= 0;
                        break;
                case 'n':
                        if ((v = status_value(line, "nonvoluntary_ctxt_switches")))
                                have_niv = next_u64(&v, &f.nivcsw) >= 0;
                        break;
                default:
                        break;
                }
        }
        f.have_ctxt = have_nv && have_niv;
        *ret = f;
        return f.have_allowed || f.have_ctxt || f.have_uid || f.have_tgid ? 0 : -EINVAL;
}

int sample_parse_io(const char *buf, struct io_counts *ret) {
        static const char *const keys[] = { "rchar:", "wchar:", "syscr:", "syscw:" };
        unsigned long long v[ELEMENTSOF(keys)] = {};
        unsigned have = 0;

        for (const char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
                for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                        if (strncmp(l, keys[k], 6) == 0 && sscanf(l + 6, "%llu", &v[k]) == 1)
                                have |= 1u << k;
        if (have != (1u << ELEMENTSOF(keys)) - 1)
                return -EINVAL;
        *ret = (struct io_counts) { .bytes = v[0] + v[1], .calls = v[2] + v[3] };
        return 0;
}

int sample_parse_schedstat(const char *buf, uint64_t *ret_run_ns, uint64_t *ret_wait_ns, uint64_t *ret_slices) {
        const char *p = buf;
        uint64_t a, b, c;

        if (next_u64(&p, &a) < 0 || next_u64(&p, &b) < 0 || next_u64(&p, &c) < 0)
                return -EINVAL;
        *ret_run_ns = a;
        *ret_wait_ns = b;
        *ret_slices = c;
        return 0;
}

int sample_parse_sched_migrations(const char *buf, uint64_t *ret) {
        const char *p = strstr(buf, "\nse.nr_migrations");

        if (!p)
                return -ENODATA;
        p = strchr(p, ':');
        if (!p)
                return -EINVAL;
        p++;
        return next_u64(&p, ret);
}

/* "cpuN" at the start of line; returns N or -1 (also for the "cpu " total line). */
static int cpu_line(const char *line, const char **ret_rest) {
        const char *p = line + 3;
        int n = 0;

        if (strncmp(line, "cpu", 3) != 0 || !isdigit((unsigned char) *p))
                return -1;
        for (; isdigit((unsigned char) *p); p++) {
                n = n * 10 + (*p - '0');
                if (n >= CPUMASK_MAX)
                        return -1;
        }
        *ret_rest = p;
        return n;
}

int sample_parse_proc_stat(const char *buf, struct cpu_sample *cpus, bool *present, int n_cpus) {
        int lines = 0;

        for (const char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                uint64_t v[8] = {};
                const char *p;
                int cpu = cpu_line(line, &p), i;

                if (cpu < 0 || cpu >= n_cpus)
                        continue;
                /* user nice system idle iowait irq softirq steal [guest guest_nice]; old
                 * kernels have fewer columns and the missing ones stay 0. guest time is
                 * already part of user/nice, so it is not added again. */
                for (i = 0; i < 8; i++)
                        if (next_u64(&p, &v[i]) < 0)
                                break;
                if (i < 4)
                        continue;
                cpus[cpu].user = v[0];
                cpus[cpu].nice = v[1];
                cpus[cpu].system = v[2];
                cpus[cpu].idle = v[3];
                cpus[cpu].iowait = v[4];
                cpus[cpu].irq = v[5];
                cpus[cpu].softirq = v[6];
                cpus[cpu].steal = v[7];
                present[cpu] = true;
                lines++;
        }
        return lines;
}

int sample_parse_cpu_schedstat(const char *buf, struct cpu_sample *cpus, bool *present, int n_cpus) {
        int lines = 0;

        /* Versions 15-17: "cpuN yld 0 sched_count sched_goidle ttwu ttwu_local
         * rq_cpu_time run_delay pcount"; the domain lines are skipped. */
        for (const char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                uint64_t v[9];
                const char *p;
                int cpu = cpu_line(line, &p), i;

                if (cpu < 0 || cpu >= n_cpus)
                        continue;
                for (i = 0; i < 9; i++)
                        if (next_u64(&p, &v[i]) < 0)
                                break;
                if (i < 8)
                        continue;
                cpus[cpu].rq_cpu_time_ns = v[6];
                cpus[cpu].run_delay_ns = v[7];
                present[cpu] = true;
                lines++;
        }
        return lines;
}

int sample_parse_psi_some_avg10(const char *buf, double *ret) {
        const char *p;
        char *end;
        double v;

        if (strncmp(buf, "some ", 5) != 0)
                return -EINVAL;
        p = strstr(buf, "avg10=");
        if (!p)
                return -EINVAL;
        errno = 0;
        v = strtod(p + 6, &end);
        if (errno || end == p + 6 || v < 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

static bool has_token(const char *list, size_t len, const char *token) {
        size_t tl = strlen(token);
        const char *p = list, *end = list + len;

        while (p < end) {
                const char *comma = memchr(p, ',', (size_t) (end - p));
                size_t n = comma ? (size_t) (comma - p) : (size_t) (end - p);
                if (n == tl && strncmp(p, token, n) == 0)
                        return true;
                if (!comma)
                        break;
                p = comma + 1;
        }
        return false;
}

int sample_parse_cgroup(const char *buf, char **ret_cgroup, char **ret_systemd) {
        const char *v2 = NULL, *v1cpu = NULL, *named = NULL;
        size_t v2_len = 0, v1cpu_len = 0, named_len = 0;
        const char *cg, *sd;
        size_t cg_len, sd_len;
        char *a, *b;

        for (const char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                const char *c1 = strchr(line, ':'), *c2, *eol = strchr(line, '\n');
                size_t plen;

                if (!eol)
                        eol = line + strlen(line);
                if (!c1 || c1 > eol)
                        continue;
                c2 = memchr(c1 + 1, ':', (size_t) (eol - c1 - 1));
                if (!c2)
                        continue;
                plen = (size_t) (eol - c2 - 1);
                if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
                        v2 = c2 + 1;
                        v2_len = plen;
                } else if (has_token(c1 + 1, (size_t) (c2 - c1 - 1), "cpu")) {
                        v1cpu = c2 + 1;
                        v1cpu_len = plen;
                } else if (has_token(c1 + 1, (size_t) (c2 - c1 - 1), "name=systemd")) {
                        named = c2 + 1;
                        named_len = plen;
                }
        }

        cg = v1cpu ? v1cpu : v2;
        cg_len = v1cpu ? v1cpu_len : v2_len;
        /* In legacy mode the kernel still prints "0::/": prefer a path that says something. */
        if (v2 && !(v2_len == 1 && v2[0] == '/'))
                sd = v2, sd_len = v2_len;
        else if (named)
                sd = named, sd_len = named_len;
        else
                sd = cg, sd_len = cg_len;

        a = strndup(cg ? cg : "", cg ? cg_len : 0);
        b = strndup(sd ? sd : "", sd ? sd_len : 0);
        if (!a || !b) {
                free(a);
                free(b);
                return -ENOMEM;
        }
        *ret_cgroup = a;
        *ret_systemd = b;
        return 0;
}

static bool ends_with(const char *s, size_t n, const char *suffix) {
        size_t k = strlen(suffix);
        return n > k && strncmp(s + n - k, suffix, k) == 0;
}

int sample_cgroup_unit(const char *path, char **ret) {
        const char *unit = NULL, *slice = NULL;
        size_t unit_len = 0, slice_len = 0;
        static const char *const kinds[] = { ".service", ".scope", ".socket", ".mount", ".swap" };

        for (const char *p = path; p && *p;) {
                const char *slash;
                size_t n;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                slash = strchr(p, '/');
                n = slash ? (size_t) (slash - p) : strlen(p);
                for (size_t k = 0; k < ELEMENTSOF(kinds); k++)
                        if (ends_with(p, n, kinds[k])) {
                                unit = p;
                                unit_len = n;
                        }
                if (ends_with(p, n, ".slice")) {
                        slice = p;
                        slice_len = n;
                }
                p += n;
        }
        if (!unit) {
                unit = slice;
                unit_len = slice_len;
        }
        if (!unit) {
                *ret = NULL;
                return 0;
        }
        *ret = strndup(unit, unit_len);
        return *ret ? 0 : -ENOMEM;
}

void sample_cmdline_to_string(char *buf, size_t n) {
        while (n > 0 && buf[n - 1] == '\0')
                n--;
        for (size_t i = 0; i < n; i++)
                if (buf[i] == '\0' || buf[i] == '\n')
                        buf[i] = ' ';
        buf[n] = '\0';
}

enum task_policy sample_policy_from_kernel(unsigned policy) {
        switch (policy) {
        case SCHED_FIFO:
                return TASK_SCHED_FIFO;
        case SCHED_RR:
                return TASK_SCHED_RR;
        case SCHED_BATCH:
                return TASK_SCHED_BATCH;
        case SCHED_IDLE:
                return TASK_SCHED_IDLE;
        case 6: /* SCHED_DEADLINE; not in every libc's <sched.h> */
                return TASK_SCHED_DEADLINE;
        default:
                return TASK_SCHED_OTHER;
        }
}
