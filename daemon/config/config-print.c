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

#include <json-c/json.h>

#include "common/json-util.h"
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
               !p->allow_narrowed;
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

/* ---- JSON ---- */

static void json_putp(struct json_object **o) {
        if (*o)
                json_object_put(*o);
}

static struct json_object *json_strv(char * const *l) {
        struct json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (; l && *l; l++) {
                struct json_object *s = json_object_new_string(*l);
                if (!s || json_object_array_add(a, s) < 0) {
                        json_object_put(s);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

static const char *tristate_str(int t) {
        return t == MATCH_YES ? "yes" : t == MATCH_NO ? "no" : "any";
}

static int policy_to_json(const struct policy *p, struct json_object **ret) {
        _cleanup_(json_putp) struct json_object *o = NULL;
        struct json_object *m, *d, *a;
        int r = 0;

        o = json_object_new_object();
        m = json_object_new_object();
        d = json_object_new_object();
        a = json_object_new_object();
        if (!o || json_add(o, "match", m) < 0 || json_add(o, "detect", d) < 0 || json_add(o, "action_settings", a) < 0)
                return -ENOMEM;

        r |= json_add(o, "name", json_object_new_string(p->name));
        r |= json_add(o, "file", json_object_new_string(p->file ? p->file : ""));
        r |= json_add(o, "line", json_object_new_int((int) p->line));
        r |= json_add(o, "enabled", json_object_new_boolean(p->enabled));
        r |= json_add(o, "priority", json_object_new_int(p->priority));
        r |= json_add(o, "detector", json_object_new_string(detector_to_string(p->detector)));
        r |= json_add(o, "action", json_object_new_string(policy_action_to_string(p->action)));

        r |= json_add(m, "comm", json_strv(p->match.comm));
        r |= json_add(m, "exe", json_strv(p->match.exe));
        r |= json_add(m, "cmdline", json_strv(p->match.cmdline));
        r |= json_add(m, "cgroup", json_strv(p->match.cgroup));
        r |= json_add(m, "unit", json_strv(p->match.unit));
        r |= json_add(m, "user", json_strv(p->match.user));
        r |= json_add(m, "kernel", json_object_new_string(tristate_str(p->match.kthreads)));
        r |= json_add(m, "realtime", json_object_new_string(tristate_str(p->match.realtime)));

        /* only what the policy sets: the rest is the detector's default */
        if (p->util_min >= 0)
                r |= json_add(d, "util_min", json_object_new_double(p->util_min));
        if (p->migrations_min_per_s >= 0)
                r |= json_add(d, "migrations_min_per_s", json_object_new_double(p->migrations_min_per_s));
        if (p->wake_rate_min_per_s >= 0)
                r |= json_add(d, "wake_rate_min_per_s", json_object_new_double(p->wake_rate_min_per_s));
        if (p->run_delay_min_ms_per_s >= 0)
                r |= json_add(d, "run_delay_min_ms_per_s", json_object_new_double(p->run_delay_min_ms_per_s));
        if (p->steal_min >= 0)
                r |= json_add(d, "steal_min", json_object_new_double(p->steal_min));
        if (p->group_util_max >= 0)
                r |= json_add(d, "group_util_max", json_object_new_double(p->group_util_max));
        if (p->pair_owners >= 0)
                r |= json_add(d, "owners", json_object_new_string(pair_owners_to_string(p->pair_owners)));
        if (p->window_usec > 0)
                r |= json_add(d, "window_usec", json_object_new_int64((int64_t) p->window_usec));

        if (p->cpu_weight >= 0)
                r |= json_add(a, "cpu_weight", json_object_new_int64(p->cpu_weight));
        r |= json_add(a, "sched_features", json_strv(p->features));
        r |= json_add(a, "sysctls", json_strv(p->sysctls));
        r |= json_add(a, "cpus", json_object_new_string(p->cpus && p->cpus[0] ? p->cpus[0] : ""));
        r |= json_add(a, "allow_realtime", json_object_new_boolean(p->allow_realtime));
        r |= json_add(a, "allow_narrowed", json_object_new_boolean(p->allow_narrowed));
        if (r)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

int config_to_json(const struct config *c, struct json_object **ret) {
        _cleanup_(json_putp) struct json_object *o = NULL;
        struct json_object *d, *pl;
        const struct daemon_settings *s;
        int r = 0;

        if (!c || !ret)
                return -EINVAL;
        s = &c->daemon;
        o = json_object_new_object();
        d = json_object_new_object();
        pl = json_object_new_array();
        if (!o || json_add(o, "daemon", d) < 0 || json_add(o, "policies", pl) < 0)
                return -ENOMEM;

        r |= json_add(d, "interval_usec", json_object_new_int64((int64_t) s->interval_usec));
        r |= json_add(d, "dry_run", json_object_new_boolean(s->dry_run));
        r |= json_add(d, "log_level", json_object_new_string(log_level_to_string(s->log_level)));
        r |= json_add(d, "max_actions_per_interval", json_object_new_int64(s->max_actions_per_interval));
        r |= json_add(d, "hysteresis_intervals", json_object_new_int64(s->hysteresis_intervals));
        r |= json_add(d, "cooldown_usec", json_object_new_int64((int64_t) s->cooldown_usec));
        r |= json_add(d, "effect_check", json_object_new_boolean(s->effect_check));
        r |= json_add(d, "effect_tolerance", json_object_new_double(s->effect_tolerance));
        r |= json_add(d, "retry_after_usec", json_object_new_int64((int64_t) s->retry_after_usec));
        r |= json_add(d, "max_tracked_threads", json_object_new_int64(s->max_tracked_threads));
        r |= json_add(d, "wake_sample_period", json_object_new_int64((int64_t) s->wake_sample_period));
        r |= json_add(d, "max_wake_events_per_s", json_object_new_int64((int64_t) s->max_wake_events_per_s));
        r |= json_add(d, "metrics_textfile", json_object_new_string(s->metrics_textfile));
        if (r)
                return -ENOMEM;

        for (size_t i = 0; i < c->n_policies; i++) {
                struct json_object *p = NULL;

                r = policy_to_json(&c->policies[i], &p);
                if (r < 0)
                        return r;
                if (json_object_array_add(pl, p) < 0) {
                        json_object_put(p);
                        return -ENOMEM;
                }
        }
        r = json_add(o, "files", json_strv(c->files));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}
