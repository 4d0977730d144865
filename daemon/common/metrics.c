/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common/json-util.h"
#include "common/util.h"
#include "common/metrics.h"
#include "common/states.h"

static double num(struct json_object *o, const char *path) {
        struct json_object *v = json_path(o, path);
        return v ? json_object_get_double(v) : 0;
}

static void head(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value, escaped as the exposition format wants (\\, \", \n). */
static void label_value(FILE *f, const char *s) {
        for (; *s; s++)
                switch (*s) {
                case '\\': fputs("\\\\", f); break;
                case '"': fputs("\\\"", f); break;
                case '\n': fputs("\\n", f); break;
                default: fputc(*s, f); break;
                }
}

static void one(FILE *f, const char *name, const char *type, const char *help, double v) {
        head(f, name, type, help);
        fprintf(f, "%s %.17g\n", name, v);
}

/* A gauge per value of a label, from the members of object o (name → count). */
static void by_label(FILE *f, const char *name, const char *help, const char *label, struct json_object *o) {
        head(f, name, "gauge", help);
        if (!o || !json_object_is_type(o, json_type_object))
                return;
        json_object_object_foreach(o, k, v) {
                fprintf(f, "%s{%s=\"", name, label);
                label_value(f, k);
                if (json_object_is_type(v, json_type_double))
                        fprintf(f, "\"} %.6g\n", json_object_get_double(v));
                else
                        fprintf(f, "\"} %" PRId64 "\n", json_object_get_int64(v));
        }
}

/* Count the entries of array arr (member key of doc) by their "state". */
static struct json_object *count_states(struct json_object *doc, const char *key) {
        struct json_object *arr = json_path(doc, key), *counts = json_object_new_object();

        if (!counts)
                return NULL;
        if (arr && json_object_is_type(arr, json_type_array))
                for (size_t i = 0; i < json_object_array_length(arr); i++) {
                        struct json_object *st = json_path(json_object_array_get_idx(arr, i), "state"), *c;
                        char s[64];

                        /* a label's values must be a small fixed set: the states of
                         * common/states.h (the CPU is a field of its own) */
                        snprintf(s, sizeof(s), "%s",
                                 st && state_is_known(json_object_get_string(st)) ? json_object_get_string(st)
                                                                                  : "unknown");

                        if (json_object_object_get_ex(counts, s, &c))
                                json_object_set_int64(c, json_object_get_int64(c) + 1);
                        else
                                json_object_object_add(counts, s, json_object_new_int64(1));
                }
        return counts;
}

/* Member field of each calibration level, by the level's name (smt, core,
 * llc, node): the figures affctl status prints beside each level. */
static struct json_object *by_level(struct json_object *status, const char *field) {
        struct json_object *levels = json_path(status, "colocation.levels"), *o = json_object_new_object();

        if (!o || !levels || !json_object_is_type(levels, json_type_array))
                return o;
        for (size_t i = 0; i < json_object_array_length(levels); i++) {
                struct json_object *l = json_object_array_get_idx(levels, i), *name = json_path(l, "level"),
                                   *v = json_path(l, field);

                if (!name || !v)
                        continue;
                json_object_object_add(o, json_object_get_string(name),
                                       json_object_is_type(v, json_type_boolean)
                                               ? json_object_new_int64(json_object_get_boolean(v))
                                               : json_object_new_double(json_object_get_double(v)));
        }
        return o;
}

int metrics_render(struct json_object *status, struct json_object *pairs, struct json_object *hogs, FILE *f) {
        struct json_object *v, *c;

        if (!status || !f)
                return -EINVAL;

        head(f, "affinityd_build_info", "gauge", "affinityd's version; always 1.");
        fputs("affinityd_build_info{version=\"", f);
        v = json_path(status, "version");
        label_value(f, v ? json_object_get_string(v) : "");
        fputs("\"} 1\n", f);
        one(f, "affinityd_dry_run", "gauge", "1 while changes are only reported (dry-run), else 0.",
            num(status, "dry_run"));
        one(f, "affinityd_policies", "gauge", "Policies loaded.", num(status, "policies"));
        one(f, "affinityd_passes_total", "counter", "Passes (sample, detect, plan, apply) run.",
            num(status, "counts.passes"));
        by_label(f, "affinityd_changes_in_force", "Changes in force now, by the detector that asked for them.",
                 "kind", json_path(status, "counts.in_force_by_kind"));
        one(f, "affinityd_changes_applied_total", "counter", "Changes applied.", num(status, "counts.actions_applied"));
        one(f, "affinityd_changes_failed_total", "counter", "Changes that failed to apply.",
            num(status, "counts.actions_failed"));
        one(f, "affinityd_changes_undone_total", "counter", "Changes undone by the effect check.",
            num(status, "counts.actions_undone"));
        one(f, "affinityd_changes_second_look_total", "counter",
            "Of the changes undone, those released for a second look at the kernel's placement (no loss measured).",
            num(status, "counts.actions_second_look"));
        by_label(f, "affinityd_findings", "Findings of the last pass, by detector.", "kind",
                 json_path(status, "counts.findings_by_kind"));
        by_label(f, "affinityd_changes_gain_ratio",
                 "Mean measured gain (after / before, on the effect check's measure) of the changes in force that it kept, by detector.",
                 "kind", json_path(status, "counts.gain_by_kind"));
        v = json_path(status, "journal_kept_as");
        one(f, "affinityd_journal_damaged", "gauge",
            "1 when the journal found at start was damaged or unreadable and kept aside, until the next start.",
            v && json_object_get_string_len(v) > 0);

        c = pairs ? count_states(pairs, "pairs") : NULL;
        if (pairs)
                by_label(f, "affinityd_pairs", "Ping-pong pairs known, by state.", "state", c);
        json_object_put(c);
        c = hogs ? count_states(hogs, "hogs") : NULL;
        if (hogs)
                by_label(f, "affinityd_hogs", "CPU hogs known, by state.", "state", c);
        json_object_put(c);

        if (json_path(status, "colocation.measured") && json_object_get_boolean(json_path(status, "colocation.measured"))) {
                one(f, "affinityd_colocation_gain", "gauge",
                    "Round trips of a pipe ping-pong on one CPU over those split across CPUs, as last measured.",
                    num(status, "colocation.gain"));
                c = by_level(status, "gain");
                by_label(f, "affinityd_colocation_level_gain",
                         "The same ratio per topology level, for a pair split across it (smt, core, llc, node).",
                         "level", c);
                json_object_put(c);
                c = by_level(status, "free");
                by_label(f, "affinityd_colocation_level_free",
                         "1 where a split across that level costs nothing measurable (believed): a pair split "
                         "only there is left to the kernel.",
                         "level", c);
                json_object_put(c);
        }
        one(f, "affinityd_process_cpu_seconds_total", "counter", "CPU time the daemon used (user and system).",
            num(status, "self.cpu_us_total") / 1e6);
        one(f, "affinityd_process_resident_memory_bytes", "gauge", "The daemon's resident memory.",
            num(status, "self.rss_kib") * 1024);
        one(f, "affinityd_last_pass_duration_seconds", "gauge", "Wall time of the last pass.",
            num(status, "self.last_pass_us") / 1e6);
        if (json_path(status, "capabilities.wake_sampler")) {
                one(f, "affinityd_wake_samples_total", "counter", "Wake-up samples read from perf.",
                    num(status, "capabilities.wake_sampler.samples"));
                one(f, "affinityd_wake_samples_lost_total", "counter", "Wake-up samples perf lost (ring full).",
                    num(status, "capabilities.wake_sampler.lost"));
                one(f, "affinityd_wake_throttled_total", "counter", "Times the kernel throttled the wake-up events.",
                    num(status, "capabilities.wake_sampler.throttled"));
        }
        if (json_path(status, "capabilities.process_events")) {
                one(f, "affinityd_process_events_total", "counter", "Process events from the proc connector.",
                    num(status, "capabilities.process_events.events"));
                one(f, "affinityd_process_events_overruns_total", "counter", "Proc connector overruns (events lost).",
                    num(status, "capabilities.process_events.overruns"));
        }
        return ferror(f) ? -EIO : 0;
}
