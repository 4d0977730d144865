/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The applier against a recorder ops table: a fake system of tasks,
 * cgroup weights, features and sysctls that logs every set in order.
 * Covers restore order, foreign changes, exited targets, reused PIDs,
 * dry-run, supersede, crash replay (incl. BEGIN without APPLIED),
 * another boot, failures kept for retry, the lock and the JSON.
 */
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "apply/apply.h"
#include "common/util.h"
#include "apply/journal.h"
#include "test-fixtures.h"
#include "test-util.h"

/* ---- the fake system ---- */

struct fake_task {
        struct task_id id;
        cpumask_t mask;
        cpumask_t allowed;        /* cpuset ∩ online; a set outside it is -EINVAL */
        bool alive;
};

struct fake {
        struct fake_task tasks[16];
        size_t n_tasks;
        uint64_t weight;           /* cgroup "/app" */
        bool app_removed;          /* "/app" was removed (rmdir): its files are gone */
        bool feature;              /* "GENTLE_FAIR_SLEEPERS" */
        char sysctl[64];           /* "kernel.sched_autogroup_enabled" */
        char boot_id[40];
        int fail_set;              /* inject: every set returns this if != 0 */
        char log[64][96];          /* set calls, in order */
        size_t n_log;
        unsigned n_get;
};

static void logf_(struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct fake *f, const char *fmt, ...) {
        va_list ap;
        ASSERT_TRUE(f->n_log < ELEMENTSOF(f->log));
        va_start(ap, fmt);
        vsnprintf(f->log[f->n_log++], sizeof(f->log[0]), fmt, ap);
        va_end(ap);
}

static struct fake_task *fake_find(struct fake *f, const struct task_id *id) {
        for (size_t i = 0; i < f->n_tasks; i++) {
                struct fake_task *t = &f->tasks[i];
                /* the live task with this TID must be the one recorded */
                if (t->alive && t->id.tid == id->tid)
                        return t->id.start_time == id->start_time ? t : NULL;
        }
        return NULL;
}

static int f_aff_get(void *ud, const struct task_id *id, cpumask_t *ret) {
        struct fake *f = ud;
        struct fake_task *t = fake_find(f, id);
        f->n_get++;
        if (!t)
                return -ESRCH;
        *ret = t->mask;
        return 0;
}

static int f_aff_set(void *ud, const struct task_id *id, const cpumask_t *mask) {
        struct fake *f = ud;
        struct fake_task *t = fake_find(f, id);
        char buf[64];
        if (!t)
                return -ESRCH;
        if (f->fail_set)
                return f->fail_set;
        if (!cpumask_subset(mask, &t->allowed))
                return -EINVAL;
        t->mask = *mask;
        logf_(f, "aff %d %s", (int) id->tid, cpumask_format_list(mask, buf, sizeof(buf)));
        return 0;
}

static int f_aff_allowed(void *ud, const struct task_id *id, cpumask_t *ret) {
        struct fake_task *t = fake_find(ud, id);
        if (!t)
                return -ESRCH;
        *ret = t->allowed;
        return 0;
}

static int f_weight_get(void *ud, const char *cg, uint64_t *ret) {
        struct fake *f = ud;
        if (!streq(cg, "/app") || f->app_removed)
                return -ENOENT;
        *ret = f->weight;
        return 0;
}

static int f_weight_set(void *ud, const char *cg, uint64_t w) {
        struct fake *f = ud;
        if (!streq(cg, "/app") || f->app_removed)
                return -ENOENT;
        if (f->fail_set)
                return f->fail_set;
        f->weight = w;
        logf_(f, "weight %s %d", cg, (int) w);
        return 0;
}

static int f_feature_get(void *ud, const char *name, bool *ret) {
        struct fake *f = ud;
        if (!streq(name, "GENTLE_FAIR_SLEEPERS"))
                return -ENOENT;
        *ret = f->feature;
        return 0;
}

static int f_feature_set(void *ud, const char *name, bool on) {
        struct fake *f = ud;
        if (!streq(name, "GENTLE_FAIR_SLEEPERS"))
                return -ENOENT;
        if (f->fail_set)
                return f->fail_set;
        f->feature = on;
        logf_(f, "feature %s%s", on ? "" : "NO_", name);
        return 0;
}

static int f_sysctl_get(void *ud, const char *name, char *buf, size_t size) {
        struct fake *f = ud;
        if (!streq(name, "kernel.sched_autogroup_enabled"))
                return -ENOENT;
        snprintf(buf, size, "%s\n", f->sysctl);   /* as /proc/sys prints it */
        return 0;
}

static int f_sysctl_set(void *ud, const char *name, const char *value) {
        struct fake *f = ud;
        if (!streq(name, "kernel.sched_autogroup_enabled"))
                return -ENOENT;
        if (f->fail_set)
                return f->fail_set;
        snprintf(f->sysctl, sizeof(f->sysctl), "%s", value);
        logf_(f, "sysctl %s=%s", name, value);
        return 0;
}

static int f_boot_id(void *ud, char *buf, size_t size) {
        struct fake *f = ud;
        snprintf(buf, size, "%s\n", f->boot_id);
        return 0;
}

static const struct apply_ops recorder_ops = {
        .affinity_get = f_aff_get,
        .affinity_set = f_aff_set,
        .affinity_allowed = f_aff_allowed,
        .weight_get = f_weight_get,
        .weight_set = f_weight_set,
        .feature_get = f_feature_get,
        .feature_set = f_feature_set,
        .sysctl_get = f_sysctl_get,
        .sysctl_set = f_sysctl_set,
        .boot_id = f_boot_id,
};

static void fake_init(struct fake *f) {
        *f = (struct fake) { .weight = 100, .feature = true };
        snprintf(f->sysctl, sizeof(f->sysctl), "1");
        snprintf(f->boot_id, sizeof(f->boot_id), "aaaaaaaa-0000-0000-0000-000000000001");
        for (int i = 0; i < 4; i++)
                f->tasks[f->n_tasks++] = (struct fake_task) {
                        .id = { .pid = 100 + i, .tid = 100 + i, .start_time = 5000 + (uint64_t) i },
                        .mask = cpumask_first_n(4),
                        .allowed = cpumask_first_n(4),
                        .alive = true,
                };
}

static void fake_clear_log(struct fake *f) {
        f->n_log = 0;
}

/* ---- events ---- */

struct events {
        unsigned count[APPLIER_EVENT_JOURNAL + 1];
        char last[512];
};

static void on_event(const struct applier_event *ev, void *ud) {
        struct events *e = ud;
        e->count[ev->kind]++;
        snprintf(e->last, sizeof(e->last), "%s", ev->message);
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "event %s: %s\n", applier_event_kind_to_string(ev->kind), ev->message);
}

/* ---- helpers ---- */

static char dir[256];

static struct applier *new_applier(struct fake *f, struct events *ev) {
        struct applier *a;
        ASSERT_OK(applier_new(dir, &recorder_ops, f, &a));
        if (ev)
                applier_set_event_handler(a, on_event, ev);
        return a;
}

static struct applier *new_recovered(struct fake *f, struct events *ev) {
        struct applier *a = new_applier(f, ev);
        ASSERT_OK(applier_recover(a));
        return a;
}

static struct action pin(const struct fake *f, int i, const char *cpus) {
        struct action act = {
                .type = ACT_AFFINITY,
                .verb = VERB_SET,
                .task = f->tasks[i].id,
                .evidence_before = 0.9,
        };
        ASSERT_OK(cpumask_parse_list(cpus, &act.mask));
        snprintf(act.policy, sizeof(act.policy), "hogs");
        snprintf(act.reason, sizeof(act.reason), "hog: util 98%% migrations 0.6/s");
        return act;
}

static struct action release_of(struct action act) {
        act.verb = VERB_RELEASE;
        return act;
}

static const char *mask_of(const struct fake *f, int i) {
        static char buf[64];
        return cpumask_format_list(&f->tasks[i].mask, buf, sizeof(buf));
}

static uint64_t file_size(const char *path) {
        struct stat st;
        ASSERT_OK(stat(path, &st));
        return (uint64_t) st.st_size;
}

static size_t n_managed(struct applier *a) {
        const struct managed *m;
        size_t n;
        ASSERT_OK(applier_list(a, &m, &n));
        return n;
}

/* ---- tests ---- */

static void test_set_and_restore_order(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct action acts[3];
        struct apply_outcome o;

        fake_init(&f);
        a = new_recovered(&f, &ev);
        acts[0] = pin(&f, 0, "0");
        acts[1] = pin(&f, 1, "1");
        acts[2] = pin(&f, 2, "2");
        for (int i = 0; i < 3; i++)
                ASSERT_EQ(applier_apply_full(a, &acts[i], 1000 + (uint64_t) i, false, &o), APPLY_CHANGED);
        ASSERT_STREQ(o.before, "0-3");
        ASSERT_STREQ(o.after, "2");
        ASSERT_EQ(ev.count[APPLIER_EVENT_SET], 3);
        ASSERT_EQ(f.n_log, 3);
        ASSERT_STREQ(mask_of(&f, 0), "0");

        const struct managed *m;
        size_t n;
        ASSERT_OK(applier_list(a, &m, &n));
        ASSERT_EQ(n, 3);
        ASSERT_STREQ(m[0].original, "0-3");
        ASSERT_STREQ(m[0].current, "0");
        ASSERT_STREQ(m[0].policy, "hogs");
        ASSERT_STREQ(m[0].reason, "hog: util 98% migrations 0.6/s");
        ASSERT_EQ(m[0].since_usec, 1000);
        ASSERT_EQ(m[0].type, ACT_AFFINITY);
        ASSERT_EQ(m[0].task.tid, 100);
        ASSERT_TRUE(cpumask_equal(&m[0].mask, &acts[0].mask));

        double ev_before;
        uint64_t since;
        ASSERT_OK(applier_get_evidence(a, m[1].key, &ev_before, &since));
        ASSERT_NEAR(ev_before, 0.9, 1e-9);
        ASSERT_EQ(since, 1001);
        ASSERT_EQ(applier_get_evidence(a, "task:1:1", NULL, NULL), -ENOENT);

        /* already as wanted: nothing, no set, no journal growth */
        uint64_t size = file_size(applier_journal_path(a));
        fake_clear_log(&f);
        ASSERT_EQ(applier_apply(a, &acts[1], 2000, false), APPLY_NOTHING);
        ASSERT_EQ(f.n_log, 0);
        ASSERT_EQ(file_size(applier_journal_path(a)), size);

        /* stop: newest first */
        ASSERT_EQ(applier_restore_all(a), 3);
        ASSERT_EQ(f.n_log, 3);
        ASSERT_STREQ(f.log[0], "aff 102 0-3");
        ASSERT_STREQ(f.log[1], "aff 101 0-3");
        ASSERT_STREQ(f.log[2], "aff 100 0-3");
        ASSERT_EQ(ev.count[APPLIER_EVENT_RESTORED], 3);
        ASSERT_EQ(n_managed(a), 0);
        /* everything released: compacted to the header */
        ASSERT_TRUE(file_size(applier_journal_path(a)) < 200);
        applier_free(a);
        test_clean_dir(dir);
}

static void test_unchanged_target_not_journaled(void) {
        struct fake f;
        struct applier *a;
        struct action act;
        uint64_t size;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        act = pin(&f, 0, "0-3");   /* already its mask */
        size = file_size(applier_journal_path(a));
        ASSERT_EQ(applier_apply(a, &act, 1, false), APPLY_NOTHING);
        ASSERT_EQ(f.n_log, 0);
        ASSERT_EQ(n_managed(a), 0);
        ASSERT_EQ(file_size(applier_journal_path(a)), size);
        applier_free(a);
        test_clean_dir(dir);
}

static void test_dry_run(void) {
        struct fake f;
        struct applier *a;
        struct action act;
        struct apply_outcome o;
        uint64_t size;

        fake_init(&f);
        /* dry-run works even before recovery: it records nothing */
        a = new_applier(&f, NULL);
        act = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply_full(a, &act, 1, true, &o), 0);
        ASSERT_EQ(applier_apply(a, &act, 1, false), -ESTALE);
        ASSERT_OK(applier_recover(a));
        size = file_size(applier_journal_path(a));

        ASSERT_EQ(applier_apply_full(a, &act, 1, true, &o), 0);
        ASSERT_EQ(o.result, APPLY_NOTHING);
        ASSERT_TRUE(strstr(o.message, "would set"));
        ASSERT_STREQ(o.before, "0-3");
        ASSERT_STREQ(o.after, "0");
        ASSERT_EQ(f.n_log, 0);
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        ASSERT_EQ(n_managed(a), 0);
        ASSERT_EQ(file_size(applier_journal_path(a)), size);

        /* a dry-run release of something managed changes nothing either */
        ASSERT_EQ(applier_apply(a, &act, 1, false), APPLY_CHANGED);
        fake_clear_log(&f);
        size = file_size(applier_journal_path(a));
        struct action rel = release_of(act);
        ASSERT_EQ(applier_apply_full(a, &rel, 2, true, &o), 0);
        ASSERT_TRUE(strstr(o.message, "would restore"));
        ASSERT_EQ(f.n_log, 0);
        ASSERT_EQ(n_managed(a), 1);
        ASSERT_EQ(file_size(applier_journal_path(a)), size);
        ASSERT_EQ(applier_apply_full(a, &rel, 3, false, &o), APPLY_CHANGED);
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        applier_free(a);
        test_clean_dir(dir);
}

static void test_foreign_change(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct action a0, a1;
        struct apply_outcome o;
        cpumask_t user;

        fake_init(&f);
        a = new_recovered(&f, &ev);
        a0 = pin(&f, 0, "0");
        a1 = pin(&f, 1, "1");
        ASSERT_EQ(applier_apply(a, &a0, 1, false), APPLY_CHANGED);
        ASSERT_EQ(applier_apply(a, &a1, 1, false), APPLY_CHANGED);

        /* the user runs taskset on both */
        ASSERT_OK(cpumask_parse_list("2-3", &user));
        f.tasks[0].mask = user;
        f.tasks[1].mask = user;
        fake_clear_log(&f);

        /* release of task 0: left as the user set it */
        struct action rel = release_of(a0);
        ASSERT_EQ(applier_apply_full(a, &rel, 2, false, &o), 0);
        ASSERT_EQ(o.result, APPLY_FOREIGN);
        ASSERT_STREQ(o.before, "2-3");
        ASSERT_STREQ(mask_of(&f, 0), "2-3");
        ASSERT_EQ(ev.count[APPLIER_EVENT_FOREIGN], 1);

        /* reconcile drops task 1; restore does not overwrite */
        ASSERT_EQ(applier_reconcile(a), 1);
        ASSERT_EQ(n_managed(a), 0);
        ASSERT_EQ(applier_restore_all(a), 0);
        ASSERT_EQ(f.n_log, 0);
        ASSERT_STREQ(mask_of(&f, 1), "2-3");
        ASSERT_EQ(ev.count[APPLIER_EVENT_FOREIGN], 2);

        /* a new SET on a target whose value someone changed: also left alone */
        a0 = pin(&f, 2, "0");
        ASSERT_EQ(applier_apply(a, &a0, 3, false), APPLY_CHANGED);
        f.tasks[2].mask = user;
        fake_clear_log(&f);
        a0 = pin(&f, 2, "1");
        ASSERT_EQ(applier_apply_full(a, &a0, 4, false, &o), 0);
        ASSERT_EQ(o.result, APPLY_FOREIGN);
        ASSERT_EQ(f.n_log, 0);
        ASSERT_STREQ(mask_of(&f, 2), "2-3");
        ASSERT_EQ(n_managed(a), 0);
        applier_free(a);
        test_clean_dir(dir);
}

static void test_exited_and_reused(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct action a0, a1, a2;
        struct apply_outcome o;

        fake_init(&f);
        a = new_recovered(&f, &ev);
        a0 = pin(&f, 0, "0");
        a1 = pin(&f, 1, "1");
        a2 = pin(&f, 2, "1");
        ASSERT_EQ(applier_apply(a, &a0, 1, false), APPLY_CHANGED);
        ASSERT_EQ(applier_apply(a, &a1, 1, false), APPLY_CHANGED);
        ASSERT_EQ(applier_apply(a, &a2, 1, false), APPLY_CHANGED);

        /* task 0 exits; task 1's PID is reused by a new process with,
         * worst case, exactly the mask we had set */
        f.tasks[0].alive = false;
        f.tasks[1].id.start_time = 9999;
        fake_clear_log(&f);

        struct action rel = release_of(a0);
        ASSERT_EQ(applier_apply_full(a, &rel, 2, false, &o), 0);
        ASSERT_EQ(o.result, APPLY_GONE);
        ASSERT_EQ(f.n_log, 0);
        /* stop: a2 restored, a1's PID now names another process: never touched */
        ASSERT_EQ(applier_restore_all(a), 1);
        ASSERT_EQ(f.n_log, 1);
        ASSERT_STREQ(f.log[0], "aff 102 0-3");
        ASSERT_STREQ(mask_of(&f, 1), "1");
        ASSERT_EQ(ev.count[APPLIER_EVENT_GONE], 2);
        ASSERT_EQ(n_managed(a), 0);
        applier_free(a);
        test_clean_dir(dir);
}

/* CPU 3 goes offline while task 0 is pinned, CPUs 0-2 while task 1 is: never left pinned. */
static void test_restore_after_hotplug(void) {
        struct fake f;
        struct applier *a;
        struct action x;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        x = pin(&f, 1, "3");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        ASSERT_OK(cpumask_parse_list("0-2", &f.tasks[0].allowed));
        ASSERT_OK(cpumask_parse_list("3", &f.tasks[1].allowed));
        /* a pin outside the allowed set is refused by the ops */
        x = pin(&f, 0, "3");
        ASSERT_EQ(applier_apply(a, &x, 1, false), -EINVAL);
        fake_clear_log(&f);
        ASSERT_EQ(applier_restore_all(a), 2);
        ASSERT_STREQ(mask_of(&f, 0), "0-2");
        ASSERT_STREQ(mask_of(&f, 1), "3");     /* original 0-3 ∩ {3} */
        ASSERT_EQ(n_managed(a), 0);
        applier_free(a);
        test_clean_dir(dir);
}

/*
 * A pin reads back narrowed to the CPUs online (sched_getaffinity() gives
 * the mask and the active CPUs): CPU 3 going offline under a pin of 2-3
 * leaves it ours, not someone else's change. Taken for foreign, it was
 * forgotten, and the thread stayed pinned after the daemon stopped.
 */
static void test_pin_narrowed_by_hotplug(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct action x;

        fake_init(&f);
        a = new_recovered(&f, &ev);
        x = pin(&f, 2, "2-3");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        ASSERT_OK(cpumask_parse_list("0-2", &f.tasks[2].allowed));
        ASSERT_OK(cpumask_parse_list("2", &f.tasks[2].mask));
        ASSERT_EQ(applier_reconcile(a), 0);
        ASSERT_EQ(ev.count[APPLIER_EVENT_FOREIGN], 0);
        ASSERT_EQ(n_managed(a), 1);
        /* someone else's mask within the CPUs online is still theirs */
        ASSERT_OK(cpumask_parse_list("0", &f.tasks[2].mask));
        ASSERT_EQ(applier_reconcile(a), 1);
        ASSERT_EQ(ev.count[APPLIER_EVENT_FOREIGN], 1);
        applier_free(a);
        test_clean_dir(dir);

        /* and a stop restores it, narrowed as the kernel would */
        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 2, "2-3");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        ASSERT_OK(cpumask_parse_list("0-2", &f.tasks[2].allowed));
        ASSERT_OK(cpumask_parse_list("2", &f.tasks[2].mask));
        ASSERT_EQ(applier_restore_all(a), 1);
        ASSERT_STREQ(mask_of(&f, 2), "0-2");
        ASSERT_EQ(n_managed(a), 0);
        applier_free(a);
        test_clean_dir(dir);
}

static void test_restore_pid(void) {
        struct fake f;
        struct applier *a;
        struct action x, y;

        fake_init(&f);
        /* two threads of process 100 and one other process */
        f.tasks[1].id.pid = 100;
        a = new_recovered(&f, NULL);
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        y = pin(&f, 1, "1");
        ASSERT_EQ(applier_apply(a, &y, 1, false), APPLY_CHANGED);
        x = pin(&f, 2, "2");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        fake_clear_log(&f);

        ASSERT_EQ(applier_restore_pid(a, 100), 2);
        ASSERT_EQ(f.n_log, 2);
        ASSERT_STREQ(f.log[0], "aff 101 0-3");
        ASSERT_STREQ(f.log[1], "aff 100 0-3");
        ASSERT_STREQ(mask_of(&f, 2), "2");
        ASSERT_EQ(n_managed(a), 1);
        ASSERT_EQ(applier_restore_pid(a, 100), -ENOENT);
        ASSERT_EQ(applier_restore_pid(a, 0), -EINVAL);
        ASSERT_EQ(applier_restore_all(a), 1);
        applier_free(a);
        test_clean_dir(dir);
}

static void test_supersede(void) {
        struct fake f;
        struct applier *a;
        struct action x;
        const struct managed *m;
        size_t n;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        x = pin(&f, 0, "1");       /* the hog moves */
        ASSERT_EQ(applier_apply(a, &x, 2, false), APPLY_CHANGED);
        ASSERT_OK(applier_list(a, &m, &n));
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(m[0].original, "0-3");   /* the true original is kept */
        ASSERT_STREQ(m[0].current, "1");

        /* a crash now replays to the true original */
        applier_free(a);
        fake_clear_log(&f);
        a = new_applier(&f, NULL);
        ASSERT_EQ(applier_recover(a), 1);
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        ASSERT_EQ(f.n_log, 1);

        /* setting the original again is a release */
        x = pin(&f, 0, "2");
        ASSERT_EQ(applier_apply(a, &x, 3, false), APPLY_CHANGED);
        x = pin(&f, 0, "0-3");
        ASSERT_EQ(applier_apply(a, &x, 4, false), APPLY_CHANGED);
        ASSERT_EQ(n_managed(a), 0);
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        applier_free(a);
        test_clean_dir(dir);
}

static void test_other_types(void) {
        struct fake f;
        struct applier *a;
        struct action w = { .type = ACT_CGROUP_WEIGHT, .cgroup = "/app", .weight = 500 };
        struct action ft = { .type = ACT_SCHED_FEATURE, .name = "GENTLE_FAIR_SLEEPERS", .enable = false };
        struct action sc = { .type = ACT_SYSCTL, .name = "kernel.sched_autogroup_enabled", .value = "0" };
        struct action bad = { .type = ACT_CGROUP_WEIGHT, .cgroup = "/app", .weight = 0 };
        const struct managed *m;
        size_t n;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        ASSERT_EQ(applier_apply(a, &bad, 1, false), -EINVAL);
        ASSERT_EQ(applier_apply(a, &w, 1, false), APPLY_CHANGED);
        ASSERT_EQ(applier_apply(a, &ft, 1, false), APPLY_CHANGED);
        ASSERT_EQ(applier_apply(a, &sc, 1, false), APPLY_CHANGED);
        ASSERT_EQ(applier_apply(a, &sc, 1, false), APPLY_NOTHING);  /* "0\n" == "0" */
        ASSERT_EQ(f.weight, 500);
        ASSERT_TRUE(!f.feature);
        ASSERT_STREQ(f.sysctl, "0");
        ASSERT_OK(applier_list(a, &m, &n));
        ASSERT_EQ(n, 3);
        ASSERT_STREQ(m[0].key, "cgroup:/app");
        ASSERT_STREQ(m[0].original, "100");
        ASSERT_STREQ(m[1].original, "GENTLE_FAIR_SLEEPERS");
        ASSERT_STREQ(m[1].current, "NO_GENTLE_FAIR_SLEEPERS");
        ASSERT_STREQ(m[2].original, "1");

        /* crash and replay: all three back, newest first */
        applier_free(a);
        fake_clear_log(&f);
        a = new_applier(&f, NULL);
        ASSERT_EQ(applier_recover(a), 3);
        ASSERT_STREQ(f.log[0], "sysctl kernel.sched_autogroup_enabled=1");
        ASSERT_STREQ(f.log[1], "feature GENTLE_FAIR_SLEEPERS");
        ASSERT_STREQ(f.log[2], "weight /app 100");
        applier_free(a);
        test_clean_dir(dir);
}

/*
 * A cgroup removed while it has our weight is gone, as an exited thread
 * is: forgotten by the next reconcile and by a stop, nothing written. Kept,
 * its entry failed every restore, and a weight's held its parents' +cpu
 * for as long as the daemon lived.
 */
static void test_cgroup_removed(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct action w = { .type = ACT_CGROUP_WEIGHT, .cgroup = "/app", .weight = 500 };

        for (int stop = 0; stop < 2; stop++) {
                fake_init(&f);
                ev = (struct events) {};
                a = new_recovered(&f, &ev);
                ASSERT_EQ(applier_apply(a, &w, 1, false), APPLY_CHANGED);
                f.app_removed = true;
                fake_clear_log(&f);
                if (stop)
                        ASSERT_EQ(applier_restore_all(a), 0);
                else
                        ASSERT_EQ(applier_reconcile(a), 1);
                ASSERT_EQ(n_managed(a), 0);
                ASSERT_EQ(f.n_log, 0);
                ASSERT_EQ(ev.count[APPLIER_EVENT_GONE], 1);
                ASSERT_TRUE(strstr(ev.last, "cgroup removed"));
                ASSERT_EQ(ev.count[APPLIER_EVENT_FAILED], 0);
                applier_free(a);
                test_clean_dir(dir);
        }
}

static void test_set_failure(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct action x;
        struct journal_contents c = {};

        fake_init(&f);
        a = new_recovered(&f, &ev);
        x = pin(&f, 0, "0");
        f.fail_set = -EPERM;
        ASSERT_EQ(applier_apply(a, &x, 1, false), -EPERM);
        ASSERT_EQ(n_managed(a), 0);
        ASSERT_EQ(ev.count[APPLIER_EVENT_FAILED], 1);
        /* the journal says: begun, then released as failed */
        ASSERT_OK(journal_read(applier_journal_path(a), &c));
        ASSERT_EQ(c.n_entries, 0);
        ASSERT_EQ(c.n_records, 2);
        journal_contents_clear(&c);

        /* exited target */
        f.fail_set = 0;
        f.tasks[1].alive = false;
        x = pin(&f, 1, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), -ESRCH);
        ASSERT_EQ(n_managed(a), 0);
        applier_free(a);
        test_clean_dir(dir);
}

static void test_crash_replay(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct applier_recover_report rep;
        struct action x;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        for (int i = 0; i < 4; i++) {
                x = pin(&f, i, i % 2 ? "1" : "0");
                ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        }
        /* crash: no restore */
        applier_free(a);

        /* meanwhile: task 0 exited, task 1's PID reused, a user changed task 2 */
        f.tasks[0].alive = false;
        f.tasks[1].id.start_time = 4242;
        ASSERT_OK(cpumask_parse_list("3", &f.tasks[2].mask));
        fake_clear_log(&f);

        a = new_applier(&f, &ev);
        /* nothing goes before recovery */
        ASSERT_EQ(applier_restore_all(a), -ESTALE);
        ASSERT_EQ(applier_reconcile(a), -ESTALE);
        ASSERT_EQ(applier_recover(a), 1);
        rep = *applier_get_recover_report(a);
        ASSERT_EQ(applier_recover(a), -EALREADY);
        ASSERT_EQ(rep.entries, 4);
        ASSERT_EQ(rep.restored, 1);
        ASSERT_EQ(rep.gone, 2);
        ASSERT_EQ(rep.foreign, 1);
        ASSERT_EQ(rep.failed, 0);
        ASSERT_EQ(f.n_log, 1);
        ASSERT_STREQ(f.log[0], "aff 103 0-3");
        ASSERT_STREQ(mask_of(&f, 1), "1");   /* reused PID: never touched */
        ASSERT_STREQ(mask_of(&f, 2), "3");   /* the user's choice */
        ASSERT_EQ(n_managed(a), 0);
        ASSERT_TRUE(strstr(rep.message, "1 restored"));
        ASSERT_TRUE(file_size(applier_journal_path(a)) < 200);

        /* sequence numbers continue after the old ones */
        x = pin(&f, 3, "2");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        struct journal_contents c = {};
        ASSERT_OK(journal_read(applier_journal_path(a), &c));
        ASSERT_EQ(c.n_entries, 1);
        ASSERT_EQ(c.entries[0].begin.seq, 5);
        journal_contents_clear(&c);
        applier_free(a);
        test_clean_dir(dir);
}

/* A crash between BEGIN and APPLIED: the change may or may not have happened. */
static void test_replay_begin_without_applied(void) {
        struct fake f;
        struct journal *j;
        struct journal_entry e[3] = {};
        struct applier *a;
        struct applier_recover_report rep;

        fake_init(&f);
        for (int i = 0; i < 3; i++) {
                struct journal_record *r = &e[i].begin;
                r->rec = JREC_BEGIN;
                r->seq = (uint64_t) i + 1;
                r->type = ACT_AFFINITY;
                r->task = f.tasks[i].id;
                snprintf(r->key, sizeof(r->key), "task:%d:%d", (int) r->task.tid, (int) r->task.start_time);
                snprintf(r->original, sizeof(r->original), "0-3");
                snprintf(r->target, sizeof(r->target), "1");
                e[i].applied = false;
        }
        /* task 0: set never happened (live = original); task 1: it did
         * (live = target); task 2: neither (someone else) */
        ASSERT_OK(cpumask_parse_list("1", &f.tasks[1].mask));
        ASSERT_OK(cpumask_parse_list("2", &f.tasks[2].mask));
        ASSERT_OK(journal_new(dir, f.boot_id, &j));
        ASSERT_OK(journal_rewrite(j, e, 3));
        journal_free(j);

        a = new_applier(&f, NULL);
        ASSERT_EQ(applier_recover(a), 1);
        rep = *applier_get_recover_report(a);
        ASSERT_EQ(rep.unchanged, 1);
        ASSERT_EQ(rep.restored, 1);
        ASSERT_EQ(rep.foreign, 1);
        ASSERT_EQ(f.n_log, 1);
        ASSERT_STREQ(f.log[0], "aff 101 0-3");
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        ASSERT_STREQ(mask_of(&f, 2), "2");
        applier_free(a);
        test_clean_dir(dir);
}

/* A crash between a superseding BEGIN and its change. */
static void test_replay_superseded(void) {
        struct fake f;
        struct journal *j;
        struct journal_entry e[2] = {};
        struct applier *a;
        struct applier_recover_report rep;

        fake_init(&f);
        for (int i = 0; i < 2; i++) {
                struct journal_record *r = &e[i].begin;
                r->rec = JREC_BEGIN;
                r->seq = (uint64_t) i + 1;
                r->type = ACT_AFFINITY;
                r->task = f.tasks[0].id;
                snprintf(r->key, sizeof(r->key), "task:100:5000");
                snprintf(r->original, sizeof(r->original), "0-3");
                snprintf(r->target, sizeof(r->target), "%d", i);
        }
        e[0].applied = true;      /* pinned to 0 */
        e[1].applied = false;     /* moving to 1 was begun, not done */
        ASSERT_OK(cpumask_parse_list("0", &f.tasks[0].mask));
        ASSERT_OK(journal_new(dir, f.boot_id, &j));
        ASSERT_OK(journal_rewrite(j, e, 2));
        journal_free(j);

        a = new_applier(&f, NULL);
        ASSERT_EQ(applier_recover(a), 1);
        rep = *applier_get_recover_report(a);
        ASSERT_EQ(rep.foreign, 0);
        ASSERT_EQ(f.n_log, 1);
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        applier_free(a);
        test_clean_dir(dir);
}

static void test_replay_other_boot(void) {
        struct fake f;
        struct applier *a;
        struct applier_recover_report rep;
        struct action x;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        applier_free(a);

        /* "reboot": same PIDs and start times by coincidence, live = target */
        snprintf(f.boot_id, sizeof(f.boot_id), "bbbbbbbb-0000-0000-0000-000000000002");
        fake_clear_log(&f);
        a = new_applier(&f, NULL);
        ASSERT_EQ(applier_recover(a), 0);
        rep = *applier_get_recover_report(a);
        ASSERT_EQ(rep.stale_boot, 1);
        ASSERT_EQ(f.n_log, 0);
        ASSERT_EQ(f.n_get, 1);   /* only the one get of the earlier apply: nothing was even read */
        ASSERT_STREQ(mask_of(&f, 0), "0");
        applier_free(a);
        test_clean_dir(dir);
}

static void test_replay_failure_kept(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct applier_recover_report rep;
        struct action x;
        struct journal_contents c = {};

        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        applier_free(a);

        f.fail_set = -EIO;
        a = new_applier(&f, &ev);
        ASSERT_EQ(applier_recover(a), 0);
        rep = *applier_get_recover_report(a);
        ASSERT_EQ(rep.failed, 1);
        ASSERT_EQ(ev.count[APPLIER_EVENT_FAILED], 1);
        ASSERT_EQ(n_managed(a), 1);                /* still ours, retried on stop */
        ASSERT_OK(journal_read(applier_journal_path(a), &c));
        ASSERT_EQ(c.n_entries, 1);                 /* and still in the journal */
        ASSERT_TRUE(c.entries[0].applied);
        journal_contents_clear(&c);
        ASSERT_EQ(applier_restore_all(a), -EIO);
        f.fail_set = 0;
        ASSERT_EQ(applier_restore_all(a), 1);
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        applier_free(a);
        test_clean_dir(dir);
}

/* An applier on d whose recovery fails its one entry's restore (kept). */
static struct applier *recovered_failing(struct fake *f, const char *d) {
        struct applier *a;

        f->fail_set = -EIO;
        ASSERT_OK(applier_new(d, &recorder_ops, f, &a));
        ASSERT_EQ(applier_recover(a), 0);
        ASSERT_EQ(applier_get_recover_report(a)->failed, 1);
        return a;
}

static void expect_journal_entries(const struct applier *a, size_t n) {
        struct journal_contents c = {};

        ASSERT_OK(journal_read(applier_journal_path(a), &c));
        ASSERT_EQ(c.n_entries, n);
        for (size_t i = 0; i < c.n_entries; i++)
                ASSERT_TRUE(c.entries[i].applied);
        journal_contents_clear(&c);
}

/* Adopted into a (its journal holds n), out of old's, restored on a's stop. */
static void expect_adopted(struct fake *f, struct applier *a, struct applier *old, int adopted, size_t n,
                           char *prev) {
        ASSERT_EQ(applier_adopt(a, old), adopted);
        ASSERT_EQ(applier_adopt(a, old), 0);       /* nothing left there */
        ASSERT_EQ(n_managed(a), n);
        expect_journal_entries(old, 0);
        expect_journal_entries(a, n);
        applier_free(old);
        ASSERT_STREQ(mask_of(f, 0), "0");

        f->fail_set = 0;                           /* our stop puts it back */
        ASSERT_EQ(applier_restore_all(a), (int) n);
        ASSERT_STREQ(mask_of(f, 0), "0-3");
        applier_free(a);
        test_clean_dir(dir);
        test_clean_dir(prev);
        ASSERT_OK(rmdir(prev));
}

/* What a predecessor's recovery (its own runtime dir) could not restore is
 * taken over: into our journal and out of its, and restored on our stop. */
static void test_adopt(void) {
        struct fake f;
        struct applier *a, *old;
        struct action x;
        char prev[] = "/tmp/test-apply-prev.XXXXXX";

        ASSERT_TRUE(mkdtemp(prev) != NULL);
        fake_init(&f);
        ASSERT_OK(applier_new(prev, &recorder_ops, &f, &old));
        ASSERT_OK(applier_recover(old));
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(old, &x, 1, false), APPLY_CHANGED);
        applier_free(old);                         /* it crashed */

        old = recovered_failing(&f, prev);         /* and its pin cannot be undone at our start */
        a = new_recovered(&f, NULL);
        ASSERT_EQ(n_managed(a), 0);
        expect_adopted(&f, a, old, 1, 1, prev);
}

/* copy file from to path to (small files: a journal) */
static void copy_file(const char *from, const char *to) {
        char buf[65536];
        int in = open(from, O_RDONLY | O_CLOEXEC), out;
        ssize_t n;

        ASSERT_TRUE(in >= 0);
        out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ASSERT_TRUE(out >= 0);
        while ((n = read(in, buf, sizeof(buf))) > 0)
                ASSERT_EQ(write(out, buf, (size_t) n), n);
        ASSERT_EQ(n, 0);
        close(in);
        close(out);
}

/* Both journals hold the same change (a kill between the adoption's two
 * rewrites): ours stays the one entry, theirs is emptied, and the stop
 * restores it once. */
static void test_adopt_same(void) {
        struct fake f;
        struct applier *a, *old;
        struct action x;
        char prev[] = "/tmp/test-apply-prev.XXXXXX", from[600], to[600];

        ASSERT_TRUE(mkdtemp(prev) != NULL);
        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        snprintf(from, sizeof(from), "%s", applier_journal_path(a));
        applier_free(a);
        snprintf(to, sizeof(to), "%s/" JOURNAL_FILE, prev);
        copy_file(from, to);

        old = recovered_failing(&f, prev);
        a = recovered_failing(&f, dir);
        expect_adopted(&f, a, old, 0, 1, prev);    /* the same change: nothing added */
}

static void test_replay_bad_journal(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct applier_recover_report rep;
        char path[512];
        const char *v9 = JOURNAL_MAGIC " 9 boot_id=aaaaaaaa-0000-0000-0000-000000000001\n"
                         "whatever the future holds\n";
        struct stat st;
        int fd;

        fake_init(&f);
        snprintf(path, sizeof(path), "%s/journal", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, v9, strlen(v9)), (ssize_t) strlen(v9));
        close(fd);

        a = new_applier(&f, &ev);
        ASSERT_EQ(applier_recover(a), -EPROTONOSUPPORT);
        rep = *applier_get_recover_report(a);
        ASSERT_TRUE(strstr(rep.message, "version 9"));
        ASSERT_TRUE(strstr(rep.moved_aside, "journal.bad-"));
        ASSERT_OK(stat(rep.moved_aside, &st));
        ASSERT_EQ((size_t) st.st_size, strlen(v9));      /* kept as it was */
        ASSERT_EQ(ev.count[APPLIER_EVENT_JOURNAL], 1);
        ASSERT_EQ(f.n_get + f.n_log, 0);                  /* nothing read or touched */
        /* usable afterwards, with a fresh journal */
        struct action x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        ASSERT_EQ(applier_restore_all(a), 1);
        applier_free(a);
        test_clean_dir(dir);
}

/* A torn last record: the change it announced is still restored from the earlier ones. */
static void test_replay_torn(void) {
        struct fake f;
        struct applier *a;
        struct applier_recover_report rep;
        struct action x;
        char path[512];

        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        x = pin(&f, 1, "1");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        snprintf(path, sizeof(path), "%s", applier_journal_path(a));
        applier_free(a);
        /* cut the last line (APPLIED of task 1) in half */
        ASSERT_OK(truncate(path, (off_t) file_size(path) - 20));
        fake_clear_log(&f);

        a = new_applier(&f, NULL);
        ASSERT_EQ(applier_recover(a), 2);
        rep = *applier_get_recover_report(a);
        ASSERT_EQ(rep.torn, 1);
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        ASSERT_STREQ(mask_of(&f, 1), "0-3");
        /* the rewrite dropped the torn tail: appends work */
        x = pin(&f, 2, "2");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        struct journal_contents c = {};
        ASSERT_OK(journal_read(path, &c));
        ASSERT_EQ(c.n_torn + c.n_corrupt, 0);
        ASSERT_EQ(c.n_entries, 1);
        journal_contents_clear(&c);
        applier_free(a);
        test_clean_dir(dir);
}

/* A damaged record in the middle: the good ones are restored, and the
 * journal is kept as it was (moved aside), not rewritten without it. */
static void test_replay_damaged_kept(void) {
        struct fake f;
        struct events ev = {};
        struct applier *a;
        struct applier_recover_report rep;
        struct action x;
        char path[512], *text, *p;
        size_t size, size2;
        struct stat st;
        int fd;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 0, "0");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        x = pin(&f, 1, "1");
        ASSERT_EQ(applier_apply(a, &x, 1, false), APPLY_CHANGED);
        snprintf(path, sizeof(path), "%s", applier_journal_path(a));
        applier_free(a);
        /* damage task 0's begin record (its checksum no longer matches) */
        ASSERT_OK(util_read_full_file_at(NULL, path, &text, &size));
        p = strstr(text, "\"original\":\"");
        ASSERT_TRUE(p);
        p[12] = p[12] == '9' ? '8' : '9';
        fd = open(path, O_WRONLY | O_TRUNC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, text, size), (ssize_t) size);
        close(fd);
        fake_clear_log(&f);

        a = new_applier(&f, &ev);
        ASSERT_EQ(applier_recover(a), 1);
        rep = *applier_get_recover_report(a);
        ASSERT_EQ(rep.corrupt, 1);
        ASSERT_STREQ(mask_of(&f, 1), "0-3");        /* the good record: restored */
        ASSERT_STREQ(mask_of(&f, 0), "0");          /* the damaged one's change: its original is unknown */
        ASSERT_TRUE(strstr(rep.moved_aside, "journal.bad-"));
        ASSERT_TRUE(strstr(rep.message, rep.moved_aside));
        ASSERT_OK(stat(rep.moved_aside, &st));
        size2 = (size_t) st.st_size;
        ASSERT_EQ(size2, size);                     /* kept byte for byte */
        ASSERT_TRUE(ev.count[APPLIER_EVENT_JOURNAL] >= 2);  /* the record, and where the file is */
        free(text);
        applier_free(a);
        test_clean_dir(dir);
}

static void test_compaction_by_size(void) {
        struct fake f;
        struct applier *a;
        struct action keep, x;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        keep = pin(&f, 3, "3");
        ASSERT_EQ(applier_apply(a, &keep, 1, false), APPLY_CHANGED);
        for (int i = 0; i < 300; i++) {
                x = pin(&f, 0, i % 2 ? "1" : "0");
                fake_clear_log(&f);
                ASSERT_TRUE(applier_apply(a, &x, 1, false) == APPLY_CHANGED);
                ASSERT_TRUE(file_size(applier_journal_path(a)) < JOURNAL_COMPACT_BYTES + 4096);
        }
        ASSERT_EQ(n_managed(a), 2);
        applier_free(a);
        fake_clear_log(&f);
        a = new_applier(&f, NULL);
        ASSERT_EQ(applier_recover(a), 2);
        ASSERT_STREQ(mask_of(&f, 0), "0-3");
        ASSERT_STREQ(mask_of(&f, 3), "0-3");
        applier_free(a);
        test_clean_dir(dir);
}

static void test_lock(void) {
        struct fake f;
        struct applier *a, *b;

        fake_init(&f);
        a = new_applier(&f, NULL);
        ASSERT_EQ(applier_new(dir, &recorder_ops, &f, &b), -EBUSY);
        applier_free(a);
        b = new_applier(&f, NULL);
        applier_free(b);
        test_clean_dir(dir);
}

static void test_json(void) {
        struct fake f;
        struct applier *a;
        struct action x;
        struct json_object *arr, *o, *v;

        fake_init(&f);
        a = new_recovered(&f, NULL);
        x = pin(&f, 1, "1");
        x.evidence_before = 0.75;
        ASSERT_EQ(applier_apply(a, &x, 10 * USEC_PER_SEC, false), APPLY_CHANGED);
        ASSERT_OK(applier_to_json(a, 25 * USEC_PER_SEC, &arr));
        ASSERT_EQ(json_object_array_length(arr), 1);
        o = json_object_array_get_idx(arr, 0);
        ASSERT_TRUE(json_object_object_get_ex(o, "target", &v));
        ASSERT_STREQ(json_object_get_string(v), "task:101:5001");
        ASSERT_TRUE(json_object_object_get_ex(o, "type", &v));
        ASSERT_STREQ(json_object_get_string(v), "affinity");
        ASSERT_TRUE(json_object_object_get_ex(o, "original", &v));
        ASSERT_STREQ(json_object_get_string(v), "0-3");
        ASSERT_TRUE(json_object_object_get_ex(o, "current", &v));
        ASSERT_STREQ(json_object_get_string(v), "1");
        ASSERT_TRUE(json_object_object_get_ex(o, "policy", &v));
        ASSERT_STREQ(json_object_get_string(v), "hogs");
        ASSERT_TRUE(json_object_object_get_ex(o, "reason", &v));
        ASSERT_TRUE(json_object_object_get_ex(o, "evidence", &v));
        ASSERT_NEAR(json_object_get_double(v), 0.75, 1e-9);
        ASSERT_TRUE(json_object_object_get_ex(o, "age_s", &v));
        ASSERT_NEAR(json_object_get_double(v), 15.0, 1e-9);
        ASSERT_TRUE(json_object_object_get_ex(o, "pid", &v));
        ASSERT_EQ(json_object_get_int(v), 101);
        json_object_put(arr);
        applier_free(a);
        test_clean_dir(dir);
}

/* apply_system_allowed_cpus on a made-up /proc + /sys under a root prefix. */
static void put(const char *root, const char *path, const char *text) {
        char p[512], d[512];
        FILE *f;

        snprintf(p, sizeof(p), "%s%s", root, path);
        snprintf(d, sizeof(d), "mkdir -p '%.*s'", (int) (strrchr(p, '/') - p), p);
        ASSERT_EQ(system(d), 0);
        f = fopen(p, "w");
        ASSERT_TRUE(f);
        fputs(text, f);
        fclose(f);
}

static void test_allowed_cpus_fixture(void) {
        char root[300], cmd[400], buf[64];
        cpumask_t m;

        snprintf(root, sizeof(root), "%s/root", dir);
        put(root, "/sys/devices/system/cpu/online", "0-7\n");
        /* v2: /a/b has no cpuset controller, /a does */
        put(root, "/proc/42/cpuset", "/a/b\n");
        put(root, "/sys/fs/cgroup/a/cpuset.cpus.effective", "2-3\n");
        put(root, "/sys/fs/cgroup/cpuset.cpus.effective", "0-7\n");
        ASSERT_OK(apply_system_allowed_cpus(root, 42, &m));
        ASSERT_STREQ(cpumask_format_list(&m, buf, sizeof(buf)), "2-3");
        /* v1 cpuset hierarchy wins when mounted */
        put(root, "/sys/fs/cgroup/cpuset/a/b/cpuset.effective_cpus", "1\n");
        ASSERT_OK(apply_system_allowed_cpus(root, 42, &m));
        ASSERT_STREQ(cpumask_format_list(&m, buf, sizeof(buf)), "1");
        /* the root cpuset, v2, nothing below */
        put(root, "/proc/43/cpuset", "/\n");
        ASSERT_OK(apply_system_allowed_cpus(root, 43, &m));
        ASSERT_STREQ(cpumask_format_list(&m, buf, sizeof(buf)), "0-7");
        /* no cpuset file for the task at all: exited */
        ASSERT_EQ(apply_system_allowed_cpus(root, 44, &m), -ESRCH);
        /* no cpuset anywhere (CONFIG_CPUSETS=n, but /proc/PID/cpuset absent too): online CPUs */
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/sys/fs/cgroup'", root);
        ASSERT_EQ(system(cmd), 0);
        ASSERT_OK(apply_system_allowed_cpus(root, 42, &m));
        ASSERT_STREQ(cpumask_format_list(&m, buf, sizeof(buf)), "0-7");
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        ASSERT_EQ(system(cmd), 0);
}

/* One target of one verb (what a dry-run daemon reports once) has one
 * hash: the value, reason and policy do not count; a cgroup's long path does. */
static void test_target_hash(void) {
        struct fake f;
        struct action a, b;

        fake_init(&f);
        a = pin(&f, 0, "1");
        b = pin(&f, 0, "0");
        snprintf(b.reason, sizeof(b.reason), "pair: co-locate, another reason");
        ASSERT_TRUE(action_target_hash(&a) == action_target_hash(&b));
        b = pin(&f, 1, "1");
        ASSERT_TRUE(action_target_hash(&a) != action_target_hash(&b));   /* another task */
        b = release_of(a);
        ASSERT_TRUE(action_target_hash(&a) != action_target_hash(&b));   /* another verb */
        a = (struct action) { .type = ACT_CGROUP_WEIGHT, .verb = VERB_SET, .weight = 200 };
        memset(a.cgroup, 'x', sizeof(a.cgroup) - 2);
        b = a;
        b.weight = 300;
        ASSERT_TRUE(action_target_hash(&a) == action_target_hash(&b));
        b.cgroup[sizeof(b.cgroup) - 3] = 'y';                               /* differs at its end */
        ASSERT_TRUE(action_target_hash(&a) != action_target_hash(&b));
}

int main(void) {
        test_mkdtemp(dir, sizeof(dir), "test-apply-");
        test_target_hash();
        test_allowed_cpus_fixture();
        test_set_and_restore_order();
        test_unchanged_target_not_journaled();
        test_dry_run();
        test_foreign_change();
        test_exited_and_reused();
        test_restore_after_hotplug();
        test_pin_narrowed_by_hotplug();
        test_restore_pid();
        test_supersede();
        test_other_types();
        test_cgroup_removed();
        test_set_failure();
        test_crash_replay();
        test_replay_begin_without_applied();
        test_replay_superseded();
        test_replay_other_boot();
        test_replay_failure_kept();
        test_replay_bad_journal();
        test_replay_torn();
        test_replay_damaged_kept();
        test_adopt();
        test_adopt_same();
        test_compaction_by_size();
        test_lock();
        test_json();
        test_clean_dir(dir);
        rmdir(dir);
        return 0;
}
