/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scheduler sysctls and debugfs tunables, by name from an allow-list:
 * affinityd never writes an arbitrary sysctl a policy names.
 *
 *   kernel.NAME   /proc/sys/kernel/NAME
 *   debug:NAME    /sys/kernel/debug/sched/NAME (5.13+, where the scheduler
 *                 moved its tunables), else /proc/sys/kernel/sched_NAME (the
 *                 sysctl they were before 5.13)
 *
 * Ranges: booleans are 0..1; the time tunables follow the bounds the kernel
 * itself enforced while they were sysctls (min_granularity/latency
 * 100 µs..1 s, wakeup_granularity and migration_cost 0..1 s); base_slice_ns
 * (6.6+, the EEVDF request size, successor of min_granularity) gets the
 * same bounds. Beyond a second every one of them stops meaning anything.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "apply/levers-internal.h"

struct sysctl_def {
        const char *name;
        uint64_t min, max;
        const char *history;   /* for "this kernel has no ..." */
};

static const struct sysctl_def sysctl_defs[] = {
        /* [wake-affine]: autogroup cut the ping-pong pair to 0.62x */
        { "kernel.sched_autogroup_enabled", 0, 1, "kernel without CONFIG_SCHED_AUTOGROUP" },
        /* affinityd may turn it on to see run delay per CPU (/proc/schedstat) */
        { "kernel.sched_schedstats", 0, 1, "kernel without CONFIG_SCHEDSTATS" },
        { "debug:migration_cost_ns", 0, NSEC_PER_SEC, NULL },
        { "debug:base_slice_ns", 100 * NSEC_PER_USEC, NSEC_PER_SEC, "base_slice_ns arrived in 6.6 (EEVDF)" },
        { "debug:min_granularity_ns", 100 * NSEC_PER_USEC, NSEC_PER_SEC,
          "min_granularity_ns left in 6.6 (EEVDF); base_slice_ns replaced it" },
        { "debug:latency_ns", 100 * NSEC_PER_USEC, NSEC_PER_SEC, "latency_ns left in 6.6 (EEVDF)" },
        { "debug:wakeup_granularity_ns", 0, NSEC_PER_SEC, "wakeup_granularity_ns left in 6.6 (EEVDF)" },
};

static const struct sysctl_def *sysctl_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(sysctl_defs); i++)
                if (streq(sysctl_defs[i].name, name))
                        return &sysctl_defs[i];
        return NULL;
}

static void setwhy(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setwhy(char *why, size_t size, const char *fmt, ...) {
        va_list ap;

        if (!why || size == 0)
                return;
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
}

int levers_sysctl_check(const char *name, const char *value, char *why, size_t why_size) {
        const struct sysctl_def *d;
        uint64_t v;
        int r;

        if (!name)
                return -EINVAL;
        d = sysctl_find(name);
        if (!d) {
                setwhy(why, why_size,
                       "%s: not an allowed scheduler tunable (allowed: kernel.sched_autogroup_enabled, "
                       "kernel.sched_schedstats, debug:migration_cost_ns, debug:base_slice_ns, "
                       "debug:min_granularity_ns, debug:latency_ns, debug:wakeup_granularity_ns)", name);
                return -ENOENT;
        }
        if (!value)
                return 0;
        r = util_parse_u64(value, &v);
        if (r < 0) {
                setwhy(why, why_size, "%s=%s: not a non-negative decimal integer", name, value);
                return -EINVAL;
        }
        if (v < d->min || v > d->max) {
                setwhy(why, why_size, "%s=%s: out of range %" PRIu64 "..%" PRIu64, name, value, d->min, d->max);
                return -ERANGE;
        }
        return 0;
}

int levers_sysctl_split(const char *entry, char *name, size_t name_size, char *value, size_t value_size) {
        const char *eq = strchr(entry, '='), *a, *b;
        size_t n;

        if (!eq)
                return -EINVAL;
        /* name: trim spaces on both sides */
        for (a = entry; a < eq && (*a == ' ' || *a == '\t'); a++)
                ;
        for (b = eq; b > a && (b[-1] == ' ' || b[-1] == '\t'); b--)
                ;
        n = (size_t) (b - a);
        if (n == 0 || n >= name_size)
                return -EINVAL;
        memcpy(name, a, n);
        name[n] = '\0';
        /* value */
        for (a = eq + 1; *a == ' ' || *a == '\t'; a++)
                ;
        for (b = a + strlen(a); b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\n'); b--)
                ;
        n = (size_t) (b - a);
        if (n == 0 || n >= value_size)
                return -EINVAL;
        memcpy(value, a, n);
        value[n] = '\0';
        return 0;
}

static bool exists_at(struct levers *l, const char *path) {
        char p[PATH_MAX];
        struct stat st;

        return util_path_at(p, sizeof(p), l->root, path) && stat(p, &st) >= 0;
}

/* The file behind an allowed name, below root. */
static int sysctl_resolve(struct levers *l, const struct sysctl_def *d, char *path, size_t size,
                          char *why, size_t why_size) {
        if (strncmp(d->name, "kernel.", 7) == 0) {
                levers_fmt(path, size, "/proc/sys/kernel/%s", d->name + 7);
                if (exists_at(l, path))
                        return 0;
                setwhy(why, why_size, "this kernel has no %s (%s)", path, d->history ? d->history : "");
                return -ENOENT;
        }

        /* debug:NAME */
        {
                const char *n = d->name + strlen("debug:");
                char dir[64], dwhy[128] = "", legacy[128];
                int r;

                levers_fmt(legacy, sizeof(legacy), "/proc/sys/kernel/sched_%s", n);
                r = levers_debugfs_sched_dir(l, dir, sizeof(dir), dwhy, sizeof(dwhy));
                if (r >= 0 && dir[0]) {
                        levers_fmt(path, size, "%s/%s", dir, n);
                        if (exists_at(l, path))
                                return 0;
                        setwhy(why, why_size, "this kernel has no %s%s%s", path, d->history ? "; " : "",
                               d->history ? d->history : "");
                        return -ENOENT;
                }
                /* before 5.13 (or no debugfs): the old sysctl */
                if (exists_at(l, legacy)) {
                        levers_fmt(path, size, "%s", legacy);
                        return 0;
                }
                if (r < 0) {
                        /* not "no such tunable": the place to look is missing */
                        setwhy(why, why_size, "%s: %s", d->name, dwhy);
                        return -ENODEV;
                }
                setwhy(why, why_size, "this kernel has no %s%s%s", legacy, d->history ? "; " : "",
                       d->history ? d->history : "");
                return -ENOENT;
        }
}

int levers_sysctl_exists(struct levers *l, const char *name, char *why, size_t why_size) {
        const struct sysctl_def *d = sysctl_find(name);
        char path[PATH_MAX];

        if (!d)
                return levers_sysctl_check(name, NULL, why, why_size);
        return sysctl_resolve(l, d, path, sizeof(path), why, why_size);
}

static int sysctl_io_error(struct levers *l, const char *path, int r, const char *what) {
        char why[200];

        if (r == -EPERM)
                levers_explain_eperm(l, path, why, sizeof(why));
        else
                levers_fmt(why, sizeof(why), "%s %s: %s", what, path, strerror(-r));
        levers_set_error(l, "%s", why);
        return r;
}

int levers_sysctl_get(void *userdata, const char *name, char *buf, size_t size) {
        struct levers *l = userdata;
        const struct sysctl_def *d;
        char path[PATH_MAX], why[256];
        int r;

        r = levers_sysctl_check(name, NULL, why, sizeof(why));
        if (r < 0) {
                levers_set_error(l, "%s", why);
                return r;
        }
        d = sysctl_find(name);
        r = sysctl_resolve(l, d, path, sizeof(path), why, sizeof(why));
        if (r < 0) {
                levers_set_error(l, "%s", why);
                return r;
        }
        r = levers_read_value(l, path, buf, size);
        if (r < 0)
                return sysctl_io_error(l, path, r, "cannot read");
        return 0;
}

int levers_sysctl_set(void *userdata, const char *name, const char *value) {
        struct levers *l = userdata;
        const struct sysctl_def *d;
        char path[PATH_MAX], why[256], cur[64];
        uint64_t want, have;
        int r;

        /* the name only: a restore writes back what the kernel held, which
         * an admin may have set outside our policies' range (a policy's
         * value is range-checked when it is loaded, levers_check_policy()) */
        r = levers_sysctl_check(name, NULL, why, sizeof(why));
        if (r < 0) {
                levers_set_error(l, "%s", why);
                return r;
        }
        if (!value || util_parse_u64(value, &want) < 0) {
                levers_set_error(l, "%s=%s: not a non-negative decimal integer", name, value ?: "");
                return -EINVAL;
        }
        d = sysctl_find(name);
        r = sysctl_resolve(l, d, path, sizeof(path), why, sizeof(why));
        if (r < 0) {
                levers_set_error(l, "%s", why);
                return r;
        }
        r = levers_read_value(l, path, cur, sizeof(cur));
        if (r < 0)
                return sysctl_io_error(l, path, r, "cannot read");
        if (util_parse_u64(cur, &have) >= 0 && have == want)
                return 0;

        r = util_write_file_at(l->root, path, value);
        if (r < 0)
                return sysctl_io_error(l, path, r, "cannot write");
        r = levers_read_value(l, path, cur, sizeof(cur));
        if (r < 0)
                return sysctl_io_error(l, path, r, "cannot read back");
        if (util_parse_u64(cur, &have) < 0 || have != want) {
                levers_set_error(l, "wrote %s to %s but it reads %s", value, path, cur);
                return -EIO;
        }
        return 1;
}

void levers_sysctl_probe(struct levers *l, struct lever_caps *c) {
        char buf[64], why[256] = "";
        int r;

        c->autogroup_present = exists_at(l, "/proc/sys/kernel/sched_autogroup_enabled");

        r = levers_sysctl_get(l, "debug:migration_cost_ns", buf, sizeof(buf));
        c->debug_tunables_readable = r >= 0;
        if (r < 0)
                levers_fmt(c->sysctl_why, sizeof(c->sysctl_why), "debug: tunables: %s", l->last_error);

        c->schedstats_present = exists_at(l, "/proc/schedstat");
        r = levers_read_value(l, "/proc/sys/kernel/sched_schedstats", buf, sizeof(buf));
        c->schedstats_enabled = r >= 0 && streq(buf, "1");
        if (!c->schedstats_present)
                levers_fmt(why, sizeof(why), "no /proc/schedstat (kernel without CONFIG_SCHEDSTATS)");
        else if (r < 0)
                levers_fmt(why, sizeof(why), "kernel.sched_schedstats unreadable: %s", strerror(-r));
        else if (!c->schedstats_enabled)
                levers_fmt(why, sizeof(why),
                         "kernel.sched_schedstats=0 (a policy may set Sysctl=kernel.sched_schedstats=1)");
        levers_fmt(c->schedstats_why, sizeof(c->schedstats_why), "%s", why);
        l->last_error[0] = '\0';
}
