/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * "+cpu" in a cgroup v2 subtree_control as a change of its own: the
 * applier with the real backends (apply_ops_system, levers on the v2
 * fixture tree) journals it before writing it, takes it back after the
 * weight on stop and on replay after a crash, and leaves it, saying why,
 * when someone else depends on it by then.
 */

#include <errno.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/apply.h"
#include "apply/journal.h"
#include "apply/levers.h"
#include "test-levers-util.h"

#define WORKER "/app.slice/deep.slice/worker.service"
#define CG "/sys/fs/cgroup"

struct events {
        unsigned foreign, restored, failed;
        char last_foreign[512];
};

static void on_event(const struct applier_event *ev, void *userdata) {
        struct events *e = userdata;

        fprintf(stderr, "  event %s: %s\n", applier_event_kind_to_string(ev->kind), ev->message);
        if (ev->kind == APPLIER_EVENT_FOREIGN) {
                e->foreign++;
                snprintf(e->last_foreign, sizeof(e->last_foreign), "%s", ev->message);
        } else if (ev->kind == APPLIER_EVENT_RESTORED)
                e->restored++;
        else if (ev->kind == APPLIER_EVENT_FAILED)
                e->failed++;
}

struct setup {
        char *root;
        char rundir[PATH_MAX];
        struct levers *l;
        struct apply_system sys;
        struct applier *a;
        struct events ev;
};

static void start(struct setup *s) {
        ASSERT_OK(levers_new(s->root, &s->l));
        ASSERT_OK(levers_set_systemd_address(s->l, ""));   /* no systemd: the direct-write path */
        s->sys = (struct apply_system) { .root = s->root, .levers = s->l };
        ASSERT_OK(applier_new(s->rundir, &apply_ops_system, &s->sys, &s->a));
        applier_set_event_handler(s->a, on_event, &s->ev);
        ASSERT_TRUE(applier_recover(s->a) >= 0);
}

static void stop(struct setup *s, bool restore) {
        if (restore)
                ASSERT_TRUE(applier_restore_all(s->a) >= 0);
        s->a = applier_free(s->a);
        s->l = levers_free(s->l);
}

static void setup_new(struct setup *s) {
        *s = (struct setup) { .root = levers_fixture_copy("v2") };
        snprintf(s->rundir, sizeof(s->rundir), "%s/run", s->root);
        ASSERT_OK(mkdir(s->rundir, 0755) < 0 ? -errno : 0);
        start(s);
}

static void setup_free(struct setup *s) {
        if (s->a)
                stop(s, false);
        levers_fixture_remove(s->root);
}

static int set_weight(struct setup *s, const char *cgroup, uint64_t w) {
        struct action act = { .type = ACT_CGROUP_WEIGHT, .verb = VERB_SET, .weight = w };

        snprintf(act.cgroup, sizeof(act.cgroup), "%s", cgroup);
        snprintf(act.policy, sizeof(act.policy), "test");
        snprintf(act.reason, sizeof(act.reason), "test weight");
        return applier_apply(s->a, &act, 1, false);
}

static void write_file(const char *root, const char *path, const char *value) {
        char p[PATH_MAX];
        FILE *f;

        snprintf(p, sizeof(p), "%s%s", root, path);
        f = fopen(p, "we");
        ASSERT_TRUE(f);
        fputs(value, f);
        fclose(f);
}

/* The journal's live entries, in order, as "type:name:original->target". */
static void journal_entries(struct setup *s, char *buf, size_t size) {
        struct journal_contents c = {};
        char p[PATH_MAX];

        snprintf(p, sizeof(p), "%s/" JOURNAL_FILE, s->rundir);
        ASSERT_OK(journal_read(p, &c));
        buf[0] = '\0';
        for (size_t i = 0; i < c.n_entries; i++) {
                const struct journal_record *r = &c.entries[i].begin;
                size_t n = strlen(buf);

                snprintf(buf + n, size - n, "%s%s:%s:%s->%s", n ? " " : "", action_type_to_string(r->type), r->name,
                         r->original, r->target);
        }
        journal_contents_clear(&c);
}

static void test_enable_journal_restore(void) {
        struct setup s;
        char j[2048];
        const struct managed *m;
        size_t n;
        struct apply_outcome o;
        struct action dry = { .type = ACT_CGROUP_WEIGHT, .verb = VERB_SET, .weight = 400 };

        setup_new(&s);
        /* a dry run says which controllers it would enable, and writes nothing */
        snprintf(dry.cgroup, sizeof(dry.cgroup), "%s", WORKER);
        snprintf(dry.policy, sizeof(dry.policy), "test");
        snprintf(dry.reason, sizeof(dry.reason), "test weight");
        ASSERT_EQ(applier_apply_full(s.a, &dry, 1, true, &o), 0);
        fprintf(stderr, "  dry run: %s\n", o.message);
        ASSERT_TRUE(strstr(o.message, ", and +cpu in the cgroup.subtree_control of /app.slice, /app.slice/deep.slice"));
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/cgroup.subtree_control"), "memory pids");

        /* /app.slice hands down memory and pids, not cpu; deep.slice nothing */
        ASSERT_EQ(set_weight(&s, WORKER, 400), 1);
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/cgroup.subtree_control"), "memory pids cpu");
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/deep.slice/cgroup.subtree_control"), "cpu");
        ASSERT_STREQ(levers_slurp(s.root, CG WORKER "/cpu.weight"), "400");

        /* journaled before the weight, top down, each with its original */
        journal_entries(&s, j, sizeof(j));
        ASSERT_STREQ(j, "cgroup-subtree:/app.slice:-cpu->+cpu cgroup-subtree:/app.slice/deep.slice:-cpu->+cpu "
                        "cgroup-weight:" WORKER ":100->400");

        /* affctl status lists them (levers_changed: every non-affinity entry) */
        ASSERT_OK(applier_list(s.a, &m, &n));
        ASSERT_EQ(n, 3);
        ASSERT_STREQ(m[0].key, "subtree:/app.slice");
        ASSERT_STREQ(m[0].original, "-cpu");
        ASSERT_STREQ(m[0].current, "+cpu");

        /* stop: weight first, then the controllers, deepest first */
        stop(&s, true);
        ASSERT_STREQ(levers_slurp(s.root, CG WORKER "/cpu.weight"), "100");
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/deep.slice/cgroup.subtree_control"), "");
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/cgroup.subtree_control"), "memory pids");
        ASSERT_EQ(s.ev.restored, 3);
        ASSERT_EQ(s.ev.foreign, 0);
        journal_entries(&s, j, sizeof(j));
        ASSERT_STREQ(j, "");
        setup_free(&s);
}

static void test_replay_after_crash(void) {
        struct setup s;
        char j[2048];

        setup_new(&s);
        ASSERT_EQ(set_weight(&s, WORKER, 400), 1);
        stop(&s, false);   /* a crash: nothing restored, the journal stays */
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/deep.slice/cgroup.subtree_control"), "cpu");

        start(&s);         /* replay */
        ASSERT_EQ(applier_get_recover_report(s.a)->restored, 3);
        ASSERT_STREQ(levers_slurp(s.root, CG WORKER "/cpu.weight"), "100");
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/deep.slice/cgroup.subtree_control"), "");
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/cgroup.subtree_control"), "memory pids");
        journal_entries(&s, j, sizeof(j));
        ASSERT_STREQ(j, "");
        setup_free(&s);
}

static void test_in_use_left(void) {
        struct setup s;

        setup_new(&s);
        ASSERT_EQ(set_weight(&s, WORKER, 400), 1);
        /* meanwhile someone else weights a sibling below /app.slice (as systemd
         * does for a unit with CPUWeight=): taking cpu away would reset it */
        write_file(s.root, CG "/app.slice/api.service/cpu.weight", "250\n");

        stop(&s, true);
        ASSERT_STREQ(levers_slurp(s.root, CG WORKER "/cpu.weight"), "100");
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/deep.slice/cgroup.subtree_control"), "");
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/cgroup.subtree_control"), "memory pids cpu");
        ASSERT_EQ(s.ev.foreign, 1);
        ASSERT_CONTAINS(s.ev.last_foreign, "cpu in cgroup.subtree_control of /app.slice enabled: in use now");
        ASSERT_CONTAINS(s.ev.last_foreign, "/app.slice/api.service/cpu.weight has cpu.weight 250");
        setup_free(&s);

        /* a child that hands cpu further down (the kernel's EBUSY case) */
        setup_new(&s);
        ASSERT_EQ(set_weight(&s, WORKER, 400), 1);
        write_file(s.root, CG "/app.slice/api.service/cgroup.subtree_control", "cpu\n");
        stop(&s, true);
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/cgroup.subtree_control"), "memory pids cpu");
        ASSERT_CONTAINS(s.ev.last_foreign, "/app.slice/api.service hands cpu down further");
        setup_free(&s);
}

static void test_release_when_weight_released(void) {
        struct setup s;
        struct action rel = { .type = ACT_CGROUP_WEIGHT, .verb = VERB_RELEASE };
        const struct managed *m;
        size_t n;

        setup_new(&s);
        ASSERT_EQ(set_weight(&s, WORKER, 400), 1);
        /* the planner releases the weight (policy gone): the controllers go with it */
        snprintf(rel.cgroup, sizeof(rel.cgroup), "%s", WORKER);
        ASSERT_EQ(applier_apply(s.a, &rel, 2, false), 1);
        ASSERT_OK(applier_list(s.a, &m, &n));
        ASSERT_EQ(n, 0);
        ASSERT_STREQ(levers_slurp(s.root, CG "/app.slice/cgroup.subtree_control"), "memory pids");

        /* a parent that already hands cpu down is not ours to take back */
        ASSERT_EQ(set_weight(&s, "/system.slice/web.service", 300), 1);
        ASSERT_OK(applier_list(s.a, &m, &n));
        ASSERT_EQ(n, 1);
        stop(&s, true);
        ASSERT_STREQ(levers_slurp(s.root, CG "/system.slice/cgroup.subtree_control"), "cpu memory pids");
        setup_free(&s);
}

int main(void) {
        test_enable_journal_restore();
        test_replay_after_crash();
        test_in_use_left();
        test_release_when_weight_released();
        return 0;
}
