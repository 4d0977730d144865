/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The columns of affctl tasks, actions, pairs and hogs (views.h). The keys
 * are those of the daemon's reports: control/reports.c (tasks, actions),
 * control/wake-json.c (pairs), control/hogs-json.c (hogs).
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "common/json-util.h"
#include "common/protocol.h"
#include "common/util.h"
#include "ctl/views.h"

/* Cut to by a narrow terminal, never below: a name still tells whose, a
 * reason still starts with its detector ("pair: ", "hog: "). */
#define MIN_NAME   12
#define MIN_PAIR   18
#define MIN_WHY    14
#define MIN_POLICY 8
#define MIN_VALUE  5

void view_duration(double s, char *buf, size_t size) {
        if (s < 120)
                snprintf(buf, size, "%.0f s", s);
        else if (s < 2 * 3600)
                snprintf(buf, size, "%.0f min", s / 60);
        else if (s < 2 * 86400)
                snprintf(buf, size, "%.1f h", s / 3600);
        else
                snprintf(buf, size, "%.1f days", s / 86400);
}

static struct json_object *get(struct json_object *row, const char *key) {
        struct json_object *v = NULL;

        return json_object_object_get_ex(row, key, &v) ? v : NULL;
}

static const char *str(struct json_object *row, const char *key) {
        struct json_object *v = get(row, key);

        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

/* "comm[pid]", or "comm[pid/tid]" for a thread that is not its process's
 * main one (what taskset -p and explain take); "" without a pid. */
static const char *task_name(struct json_object *row, const char *comm, const char *pid, const char *tid,
                             char *buf, size_t size) {
        struct json_object *p = get(row, pid), *t = get(row, tid);
        int64_t pv = p ? json_object_get_int64(p) : 0, tv = t ? json_object_get_int64(t) : pv;

        if (!p)
                return "";
        if (tv == pv)
                snprintf(buf, size, "%s[%" PRId64 "]", str(row, comm)[0] ? str(row, comm) : "?", pv);
        else
                snprintf(buf, size, "%s[%" PRId64 "/%" PRId64 "]", str(row, comm)[0] ? str(row, comm) : "?", pv, tv);
        return buf;
}

/* key's number times scale, with decimals and a unit ("%"); "-" when absent. */
static const char *fmt_double(struct json_object *row, const char *key, int decimals, double scale,
                              const char *unit, char *buf, size_t size) {
        struct json_object *v = get(row, key);

        if (!v || json_object_is_type(v, json_type_null))
                return "-";
        snprintf(buf, size, "%.*f%s", decimals, json_object_get_double(v) * scale, unit);
        return buf;
}

/* A rate for people: 950, 12.4k, 1.2M. */
static const char *fmt_rate(struct json_object *row, const char *key, char *buf, size_t size) {
        struct json_object *v = get(row, key);
        double r = v ? json_object_get_double(v) : 0;

        if (!v)
                return "-";
        if (r < 1e3)
                snprintf(buf, size, "%.0f", r);
        else if (r < 1e6)
                snprintf(buf, size, "%.1fk", r / 1e3);
        else
                snprintf(buf, size, "%.1fM", r / 1e6);
        return buf;
}

static const char *fmt_cpu(struct json_object *row, const char *key, char *buf, size_t size) {
        struct json_object *v = get(row, key);

        if (!v || json_object_get_int64(v) < 0)
                return "-";
        snprintf(buf, size, "%" PRId64, json_object_get_int64(v));
        return buf;
}

/* ---- tasks ------------------------------------------------------------- */

static const char *task_cell(struct json_object *row, char *buf, size_t size) {
        return task_name(row, "comm", "pid", "tid", buf, size);
}

static const char *task_util(struct json_object *row, char *buf, size_t size) {
        return fmt_double(row, "util_pct", 0, 1, "%", buf, size);
}

static const char *task_migrations(struct json_object *row, char *buf, size_t size) {
        return fmt_double(row, "migrations_per_s", 2, 1, "", buf, size);
}

static const char *task_delay(struct json_object *row, char *buf, size_t size) {
        return fmt_double(row, "run_delay_ms_per_s", 1, 1, "", buf, size);
}

static const struct table_column task_columns[] = {
        { "TASK", .cell = task_cell, .covers = "comm pid tid", .min_width = MIN_NAME },
        { "UTIL", .cell = task_util, .covers = "util_pct", .right = true },
        { "MIGR/S", .cell = task_migrations, .covers = "migrations_per_s", .right = true },
        { "DELAY ms/s", .cell = task_delay, .covers = "run_delay_ms_per_s", .right = true },
        { "CPU", .key = "cpu", .right = true },
        { "ALLOWED", .key = "allowed", .min_width = MIN_VALUE },
        { "SCHED", .key = "policy" },
        {},
};

const struct table_view view_tasks[] = {
        { "tasks", task_columns },
        {},
};

/* ---- actions ----------------------------------------------------------- */

/* The measured gain of a change the effect check kept, as a change in
 * percent ("+31%"); "-" until there is one. */
static const char *gain_cell(struct json_object *row, char *buf, size_t size) {
        struct json_object *v = get(row, "gain");

        if (!v)
                return "-";
        snprintf(buf, size, "%+.0f%%", (json_object_get_double(v) - 1) * 100);
        return buf;
}

/* A task's change by comm[pid/tid]; a lever's by its name, else its key. */
static const char *action_target(struct json_object *row, char *buf, size_t size) {
        if (get(row, "pid"))
                return task_name(row, "comm", "pid", "tid", buf, size);
        return str(row, "name")[0] ? str(row, "name") : str(row, AFF_CHANGE_TARGET);
}

static const char *action_age(struct json_object *row, char *buf, size_t size) {
        struct json_object *v = get(row, AFF_CHANGE_AGE_S);

        if (!v)
                return "-";
        view_duration(json_object_get_double(v), buf, size);
        return buf;
}

static const struct table_column action_columns[] = {
        { "TARGET", .cell = action_target, .covers = "comm pid tid name " AFF_CHANGE_TARGET, .min_width = MIN_NAME },
        { "KIND", .key = AFF_CHANGE_TYPE },
        { "VALUE", .key = AFF_CHANGE_CURRENT, .min_width = MIN_VALUE },
        { "GAIN", .cell = gain_cell, .covers = "gain gain_of gain_before gain_after", .right = true },
        { "POLICY", .key = AFF_CHANGE_POLICY, .min_width = MIN_POLICY },
        { "AGE", .cell = action_age, .covers = AFF_CHANGE_AGE_S, .right = true },
        { "REASON", .key = AFF_CHANGE_REASON, .min_width = MIN_WHY },
        {},
};

/* In dry-run: what the last pass would have done. */
static const struct table_column would_columns[] = {
        { "TARGET", .cell = action_target, .covers = "comm pid tid name " AFF_CHANGE_TARGET, .min_width = MIN_NAME },
        { "WOULD", .key = AFF_CHANGE_VERB },
        { "KIND", .key = AFF_CHANGE_TYPE },
        { "VALUE", .key = AFF_CHANGE_VALUE, .min_width = MIN_VALUE },
        { "GAIN", .cell = gain_cell, .covers = "gain gain_of gain_before gain_after", .right = true },
        { "POLICY", .key = AFF_CHANGE_POLICY, .min_width = MIN_POLICY },
        { "REASON", .key = AFF_CHANGE_REASON, .min_width = MIN_WHY },
        {},
};

const struct table_view view_actions[] = {
        { "actions", action_columns },
        { "would_do", would_columns },
        {},
};

/* ---- pairs ------------------------------------------------------------- */

/* The client first, as "who <-> whom" reads: the member a started first
 * is the server (role_a/role_b, wake-json.c). */
static bool pair_b_first(struct json_object *row) {
        return streq(str(row, "role_a"), "server") && streq(str(row, "role_b"), "client");
}

static const char *pair_who(struct json_object *row, char *buf, size_t size) {
        char a[128], b[128];
        bool swap = pair_b_first(row);

        task_name(row, "comm_a", "pid_a", "tid_a", a, sizeof(a));
        task_name(row, "comm_b", "pid_b", "tid_b", b, sizeof(b));
        snprintf(buf, size, "%s <-> %s", swap ? b : a, swap ? a : b);
        return buf;
}

/* Where each member last ran, in pair_who()'s order: "1/1" together. */
static const char *pair_cpus(struct json_object *row, char *buf, size_t size) {
        char a_buf[16], b_buf[16];
        bool swap = pair_b_first(row);
        /* fmt_cpu() returns "-" for a member gone, without writing its buffer */
        const char *a = fmt_cpu(row, "cpu_a", a_buf, sizeof(a_buf));
        const char *b = fmt_cpu(row, "cpu_b", b_buf, sizeof(b_buf));

        snprintf(buf, size, "%s/%s", swap ? b : a, swap ? a : b);
        return buf;
}

static const char *pair_rate(struct json_object *row, char *buf, size_t size) {
        return fmt_rate(row, "wake_rate_per_s", buf, size);
}

/* The planner's why, or the finding's note for a pair it has no state for yet. */
static const char *why_or_note(struct json_object *row, char *buf, size_t size) {
        (void) buf, (void) size;
        return str(row, "why")[0] ? str(row, "why") : str(row, "note");
}

static const struct table_column pair_columns[] = {
        { "PAIR", .cell = pair_who, .covers = "comm_a pid_a tid_a comm_b pid_b tid_b", .min_width = MIN_PAIR },
        { "WAKE/S", .cell = pair_rate, .covers = "wake_rate_per_s", .right = true },
        { "GAIN", .cell = gain_cell, .covers = "gain gain_of gain_before gain_after", .right = true },
        { "STATE", .key = "state" },
        { "CPU", .cell = pair_cpus, .covers = "cpu_a cpu_b" },
        { "WHY", .cell = why_or_note, .covers = "why note", .min_width = MIN_WHY },
        {},
};

const struct table_view view_pairs[] = {
        { "pairs", pair_columns },
        {},
};

/* ---- hogs -------------------------------------------------------------- */

static const char *hog_util(struct json_object *row, char *buf, size_t size) {
        return fmt_double(row, "util", 0, 100, "%", buf, size);
}

/* Over the policy's window, what the planner judges by; the last
 * interval's for a finding without planner state. */
static const char *hog_migrations(struct json_object *row, char *buf, size_t size) {
        const char *k = get(row, "migrations_window_per_s") ? "migrations_window_per_s" : "migrations_per_s";
        return fmt_double(row, k, 2, 1, "", buf, size);
}

static const char *hog_cpu(struct json_object *row, char *buf, size_t size) {
        return fmt_cpu(row, "last_cpu", buf, size);
}

static const char *group_who(struct json_object *row, char *buf, size_t size) {
        struct json_object *m = get(row, "members");
        size_t n = m && json_object_is_type(m, json_type_array) ? json_object_array_length(m) : 0;

        snprintf(buf, size, "%s ×%zu", str(row, "comm")[0] ? str(row, "comm") : "?", n);
        return buf;
}

static const char *group_util(struct json_object *row, char *buf, size_t size) {
        return fmt_double(row, "combined_util", 0, 100, "%", buf, size);
}

static const char *rundelay_delay(struct json_object *row, char *buf, size_t size) {
        return fmt_double(row, "run_delay_ms_per_s", 1, 1, "", buf, size);
}

static const struct table_column hog_columns[] = {
        { "HOG", .cell = task_cell, .covers = "comm pid tid", .min_width = MIN_NAME },
        { "UTIL", .cell = hog_util, .covers = "util", .right = true },
        { "MIGR/S", .cell = hog_migrations, .covers = "migrations_window_per_s", .right = true },
        { "STATE", .key = "state" },
        { "CPU", .cell = hog_cpu, .covers = "last_cpu", .right = true },
        { "WHY", .key = "why", .min_width = MIN_WHY },
        {},
};

static const struct table_column group_columns[] = {
        { "GROUP", .cell = group_who, .covers = "comm members", .min_width = MIN_NAME },
        { "UTIL", .cell = group_util, .covers = "combined_util", .right = true },
        { "MIGR/S", .cell = hog_migrations, .covers = "migrations_per_s", .right = true },
        { "STATE", .key = "state" },
        { "CPUS", .key = "cpus", .min_width = MIN_VALUE },
        { "WHY", .key = "why", .min_width = MIN_WHY },
        {},
};

static const struct table_column rundelay_columns[] = {
        { "TASK", .cell = task_cell, .covers = "comm pid tid", .min_width = MIN_NAME },
        { "DELAY ms/s", .cell = rundelay_delay, .covers = "run_delay_ms_per_s", .right = true },
        { "UTIL", .cell = hog_util, .covers = "util", .right = true },
        { "CPU", .cell = hog_cpu, .covers = "last_cpu", .right = true },
        { "POLICY", .key = "policy", .min_width = MIN_POLICY },
        { "NOTE", .key = "note", .min_width = MIN_WHY },
        {},
};

const struct table_view view_hogs[] = {
        { "hogs", hog_columns },
        { "groups", group_columns },
        { "rundelay", rundelay_columns },
        {},
};
