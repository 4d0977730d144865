/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The effective configuration in the input format (--check-config --print)
 * and as JSON (affctl). Every value is printed in one normalized form that
 * the parser reads back to the same value, so print → parse → print is
 * identical (tests/test-config.c and the fuzzer check this).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


#include "common/util.h"
#include "config/config-internal.h"

/* Key=w1 w2 ..., continued on a new Key= line before CONFIG_LINE_MAX (lists append). */
static void print_list(FILE *f, const char *key, char * const *l) {
        size_t len = 0;

        for (; l && *l; l++) {
                char w[CONFIG_LINE_MAX + 3];
                size_t n;

                config_format_word(*l, w, sizeof(w));
                n = strlen(w);
                if (len > 0 && len + 1 + n > CONFIG_LINE_MAX) {
                        fputc('\n', f);
                        len = 0;
                }
                if (len == 0)
                        len = (size_t) fprintf(f, "%s=%s", key, w);
                else
                        len += (size_t) fprintf(f, " %s", w);
        }
        if (len > 0)
                fputc('\n', f);
}

static bool match_empty(const struct policy_match *m) {
        return !m->comm && !m->exe && !m->cmdline && !m->cgroup && !m->unit && !m->user &&
               m->kthreads == MATCH_ANY && m->realtime == MATCH_ANY;
}

static bool detect_empty(const struct policy *p) {
        return p->util_min < 0 && p->migrations_min_per_s < 0 && p->wake_rate_min_per_s < 0 &&
               p->run_delay_min_ms_per_s < 0 && p->steal_min < 0 && p->group_util_max < 0 && p->window_usec == 0 &&
               p->pair_owners < 0;
}

static bool action_empty(const struct policy *p) {
        return p->cpu_weight < 0 && !p->features && !p->sysctls && !p->cpus && !p->allow_realtime &&
               !p->allow_narrowed && p->pair_span < 0 && !p->ignore_calibration;
}

int config_print_policy(const struct policy *p, FILE *f) {
        char b[64];

        fprintf(f, "[Policy]\nName=%s\nEnabled=%s\nPriority=%d\nDetector=%s\nAction=%s\n", p->name,
                p->enabled ? "yes" : "no", p->priority, detector_to_string(p->detector),
                policy_action_to_string(p->action));

        if (!match_empty(&p->match)) {
                fputs("\n[Match]\n", f);
                print_list(f, "Comm", p->match.comm);
                print_list(f, "Exe", p->match.exe);
                print_list(f, "Cmdline", p->match.cmdline);
                print_list(f, "Cgroup", p->match.cgroup);
                print_list(f, "Unit", p->match.unit);
                print_list(f, "User", p->match.user);
                if (p->match.kthreads != MATCH_ANY)
                        fprintf(f, "Kernel=%s\n", p->match.kthreads == MATCH_YES ? "yes" : "no");
                if (p->match.realtime != MATCH_ANY)
                        fprintf(f, "Realtime=%s\n", p->match.realtime == MATCH_YES ? "yes" : "no");
        }

        if (!detect_empty(p)) {
                fputs("\n[Detect]\n", f);
                if (p->util_min >= 0)
                        fprintf(f, "Util=%s\n", config_format_percent(p->util_min, b, sizeof(b)));
                if (p->migrations_min_per_s >= 0)
                        fprintf(f, "Migrations=%s\n", config_format_rate(p->migrations_min_per_s, b, sizeof(b)));
                if (p->wake_rate_min_per_s >= 0)
                        fprintf(f, "WakeRate=%s\n", config_format_rate(p->wake_rate_min_per_s, b, sizeof(b)));
                if (p->run_delay_min_ms_per_s >= 0)
                        fprintf(f, "RunDelay=%s\n",
                                config_format_duration((uint64_t) llround(p->run_delay_min_ms_per_s * 1000.0), b,
                                                       sizeof(b)));
                if (p->steal_min >= 0)
                        fprintf(f, "Steal=%s\n", config_format_percent(p->steal_min, b, sizeof(b)));
                if (p->group_util_max >= 0)
                        fprintf(f, "MaxCombinedUtil=%s\n", config_format_percent(p->group_util_max, b, sizeof(b)));
                if (p->pair_owners >= 0)
                        fprintf(f, "Owners=%s\n", pair_owners_to_string(p->pair_owners));
                if (p->window_usec > 0)
                        fprintf(f, "Window=%s\n", config_format_duration(p->window_usec, b, sizeof(b)));
        }

        if (!action_empty(p)) {
                fputs("\n[Action]\n", f);
                if (p->cpu_weight >= 0)
                        fprintf(f, "CPUWeight=%" PRIi64 "\n", p->cpu_weight);
                print_list(f, "SchedFeatures", p->features);
                for (char **s = p->sysctls; s && *s; s++)
                        fprintf(f, "Sysctl=%s\n", *s);
                if (p->cpus && p->cpus[0])
                        fprintf(f, "CPUs=%s\n", p->cpus[0]);
                if (p->allow_realtime)
                        fputs("AllowRealtime=yes\n", f);
                if (p->allow_narrowed)
                        fputs("AllowNarrowed=yes\n", f);
                if (p->pair_span >= 0)
                        fprintf(f, "Span=%s\n", pair_span_to_string(p->pair_span));
                if (p->ignore_calibration)
                        fputs("IgnoreCalibration=yes\n", f);
        }
        return 0;
}

int config_print_full(const struct config *c, FILE *f, unsigned flags) {
        const struct daemon_settings *d;
        char b1[64], b2[64], b3[64], b4[64];

        if (!c || !f)
                return -EINVAL;
        d = &c->daemon;
        fprintf(f,
                "[Daemon]\n"
                "Interval=%s\n"
                "DryRun=%s\n"
                "LogLevel=%s\n"
                "MaxActionsPerInterval=%u\n"
                "Hysteresis=%u\n"
                "Cooldown=%s\n"
                "EffectCheck=%s\n"
                "EffectTolerance=%s\n"
                "RetryAfter=%s\n"
                "MaxThreads=%u\n"
                "WakeSamplePeriod=%" PRIu64 "\n"
                "MaxWakeEvents=%" PRIu64 "/s\n"
                "MetricsTextfile=%s\n",
                config_format_duration(d->interval_usec, b1, sizeof(b1)), d->dry_run ? "yes" : "no",
                log_level_to_string(d->log_level), d->max_actions_per_interval, d->hysteresis_intervals,
                config_format_duration(d->cooldown_usec, b2, sizeof(b2)), d->effect_check ? "yes" : "no",
                config_format_percent(d->effect_tolerance, b3, sizeof(b3)),
                config_format_duration(d->retry_after_usec, b4, sizeof(b4)), d->max_tracked_threads,
                d->wake_sample_period, d->max_wake_events_per_s, d->metrics_textfile);
        /* quoted and split as the parser reads them back (each line adds) */
        if (d->scope && d->scope[0])
                print_list(f, "Scope", d->scope);
        else
                fputs("Scope=\n", f);

        for (size_t i = 0; i < c->n_policies; i++) {
                fputc('\n', f);
                if (flags & CONFIG_PRINT_SOURCES)
                        fprintf(f, "# %s:%u\n", c->policies[i].file ? c->policies[i].file : "?",
                                c->policies[i].line);
                config_print_policy(&c->policies[i], f);
        }
        return ferror(f) ? -EIO : 0;
}

int config_print(const struct config *c, FILE *f) {
        return config_print_full(c, f, 0);
}

bool policy_same(const struct policy *a, const struct policy *b) {
        char *ta = NULL, *tb = NULL;
        size_t na = 0, nb = 0;
        FILE *fa, *fb;
        bool same = false;

        if (!a || !b)
                return a == b;
        fa = open_memstream(&ta, &na);
        fb = open_memstream(&tb, &nb);
        if (fa && fb) {
                config_print_policy(a, fa);
                config_print_policy(b, fb);
        }
        if (fa)
                fclose(fa);
        if (fb)
                fclose(fb);
        same = ta && tb && na == nb && memcmp(ta, tb, na) == 0;
        free(ta);
        free(tb);
        return same;
}
