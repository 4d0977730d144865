/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The `affctl hogs` report: the planner's hog, spread-group and run-delay
 * targets with the evidence of their last finding. It reads only the
 * planner's public state (plan.h), like the pairs report (wake-json.c).
 */
#include <errno.h>
#include <stdio.h>

#include <json-c/json.h>

#include "common/cpumask.h"
#include "common/json-util.h"
#include "common/util.h"
#include "control/report-json.h"
#include "detect/detect.h"
#include "plan/plan.h"

static struct json_object *json_cpumask(const cpumask_t *m) {
        char buf[256];

        return json_object_new_string(cpumask_format_list(m, buf, sizeof(buf)) ?: "");
}

static int json_finding_evidence(struct json_object *o, const struct finding *f) {
        int r = 0;

        r = r ?: json_add(o, "comm", json_object_new_string(f->comm));
        r = r ?: json_add(o, "util", json_object_new_double(f->util));
        r = r ?: json_add(o, "demand", json_object_new_double(f->demand));
        r = r ?: json_add(o, "migrations_per_s", json_object_new_double(f->migrations_per_s));
        r = r ?: json_add(o, "run_delay_ms_per_s", json_object_new_double(f->run_delay_ms_per_s));
        r = r ?: json_add(o, "cpus_seen", json_cpumask(&f->cpus_seen));
        r = r ?: json_add(o, "last_cpu", json_object_new_int(f->last_cpu));
        return r;
}

static int json_members(struct json_object *o, const struct finding *f) {
        struct json_object *a = json_object_new_array();
        int r;

        r = json_add(o, "members", a);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_members; i++) {
                struct json_object *m = json_object_new_object();

                if (!m || json_object_array_add(a, m) < 0) {
                        json_object_put(m);
                        return -ENOMEM;
                }
                r = json_add(m, "pid", json_object_new_int(f->members[i].pid));
                r = r ?: json_add(m, "tid", json_object_new_int(f->members[i].tid));
                r = r ?: json_add(m, "start_time", json_object_new_uint64(f->members[i].start_time));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int json_target(struct json_object *arr, const struct plan_target_state *st) {
        struct json_object *o = json_object_new_object();
        int r;

        if (!o || json_object_array_add(arr, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        r = json_add(o, "key", json_object_new_string(st->key));
        r = r ?: json_add(o, "policy", json_object_new_string(st->policy));
        r = r ?: json_add(o, "state", json_object_new_string(st->state));
        r = r ?: json_add(o, "why", json_object_new_string(st->why));
        r = r ?: json_add(o, "seen", json_object_new_int64(st->seen));
        r = r ?: json_add(o, "absent", json_object_new_int64(st->absent));
        r = r ?: json_add(o, "cooldown_until_usec", json_object_new_uint64(st->cooldown_until_usec));
        r = r ?: json_add(o, "no_retry_until_usec", json_object_new_uint64(st->no_retry_until_usec));
        if (r < 0)
                return r;
        if (st->kind == DETECT_HOG) {
                const struct task_id *id = &st->last.members[0];
                r = json_add(o, "pid", json_object_new_int(id->pid));
                r = r ?: json_add(o, "tid", json_object_new_int(id->tid));
                r = r ?: json_add(o, "start_time", json_object_new_uint64(id->start_time));
                r = r ?: json_add(o, "cpu", json_object_new_int(st->cpu));
                r = r ?: json_add(o, "migrations_window_per_s", json_object_new_double(st->migrations_window_per_s));
        } else {
                r = json_add(o, "cpus", json_cpumask(&st->last.cpus_seen));
                r = r ?: json_add(o, "combined_util", json_object_new_double(st->last.combined_util));
                r = r ?: json_members(o, &st->last);
        }
        r = r ?: json_finding_evidence(o, &st->last);
        return r;
}

int hogs_to_json(const struct plan_state *state, const struct findings *findings, struct json_object **ret) {
        struct json_object *root = NULL, *hogs, *groups, *rundelay, *oc;
        int r;

        if (!ret)
                return -EINVAL;

        root = json_object_new_object();
        if (!root)
                return -ENOMEM;
        hogs = json_object_new_array();
        groups = json_object_new_array();
        rundelay = json_object_new_array();
        oc = json_object_new_object();
        r = json_add(root, "hogs", hogs);
        r = r ?: json_add(root, "groups", groups);
        r = r ?: json_add(root, "rundelay", rundelay);
        r = r ?: json_add(root, "overcommit", oc);
        if (r < 0)
                goto fail;

        if (state) {
                r = json_add(oc, "hogs", json_object_new_int64(state->hog_overcommit_hogs));
                r = r ?: json_add(oc, "cpus", json_object_new_int64(state->hog_overcommit_cpus));
                r = r ?: json_add(oc, "intervals", json_object_new_int64(state->hog_overcommit_seen));
                if (r < 0)
                        goto fail;

                for (size_t i = 0; i < state->n_targets; i++) {
                        const struct plan_target_state *st = state->targets[i];

                        if (st->kind == DETECT_HOG && st->last.n_members > 0)
                                r = json_target(hogs, st);
                        else if (st->kind == DETECT_SPREAD)
                                r = json_target(groups, st);
                        else
                                continue;
                        if (r < 0)
                                goto fail;
                }
        }

        for (size_t i = 0; findings && i < findings->n; i++) {
                const struct finding *f = &findings->items[i];
                struct json_object *o;

                if (f->kind != DETECT_RUNDELAY || f->n_members < 1)
                        continue;
                o = json_object_new_object();
                if (!o || json_object_array_add(rundelay, o) < 0) {
                        json_object_put(o);
                        r = -ENOMEM;
                        goto fail;
                }
                r = json_add(o, "pid", json_object_new_int(f->members[0].pid));
                r = r ?: json_add(o, "tid", json_object_new_int(f->members[0].tid));
                r = r ?: json_add(o, "policy", json_object_new_string(f->policy && f->policy->name ? f->policy->name : ""));
                r = r ?: json_add(o, "note", json_object_new_string(f->note));
                r = r ?: json_finding_evidence(o, f);
                if (r < 0)
                        goto fail;
        }

        *ret = root;
        return 0;

fail:
        json_object_put(root);
        return r;
}
