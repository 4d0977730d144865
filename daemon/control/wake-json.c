/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * JSON for affctl: the wake sampler's status (affctl status) and the pairs
 * the planner tracks (affctl pairs). Flat objects, so affctl's text mode
 * renders the pairs as one table.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/json-util.h"
#include "common/util.h"
#include "control/report-json.h"
#include "detect/detect.h"
#include "plan/plan.h"
#include "sample/wake.h"

static int status_to_json(const struct wake_status *st, struct json_object **ret) {
        struct json_object *o = json_object_new_object();
        int r = 0;

        if (!o)
                return -ENOMEM;
        r = r ?: json_add(o, "source", json_object_new_string(st->source));
        if (st->perf_error[0])
                r = r ?: json_add(o, "perf_unavailable", json_object_new_string(st->perf_error));
        if (st->perf) {
                r = r ?: json_add(o, "cpus", json_object_new_int((int) st->n_cpus));
                r = r ?: json_add(o, "sample_period", json_object_new_uint64(st->period));
                r = r ?: json_add(o, "adaptive", json_object_new_boolean(st->adaptive));
                r = r ?: json_add(o, "max_samples_per_s", json_object_new_uint64(st->max_samples_per_s));
                r = r ?: json_add(o, "events_per_s", json_object_new_double(st->events_per_s));
                r = r ?: json_add(o, "samples_per_s", json_object_new_double(st->samples_per_s));
                r = r ?: json_add(o, "samples", json_object_new_uint64(st->samples));
                r = r ?: json_add(o, "lost", json_object_new_uint64(st->lost));
                r = r ?: json_add(o, "throttled", json_object_new_uint64(st->throttled));
                r = r ?: json_add(o, "period_changes", json_object_new_uint64(st->period_changes));
                r = r ?: json_add(o, "drain_cpu_percent", json_object_new_double(st->drain_cpu_frac * 100));
                r = r ?: json_add(o, "burst_ms", json_object_new_uint64(st->burst_usec / USEC_PER_MSEC));
                r = r ?: json_add(o, "cadence_ms", json_object_new_uint64(st->cadence_usec / USEC_PER_MSEC));
                r = r ?: json_add(o, "duty_percent", json_object_new_double(st->duty_frac * 100));
                r = r ?: json_add(o, "bursts", json_object_new_uint64(st->bursts));
                r = r ?: json_add(o, "burst_open_errors", json_object_new_uint64(st->burst_open_errors));
                r = r ?: json_add(o, "events_enabled", json_object_new_boolean(st->on));
                r = r ?: json_add(o, "event_opens", json_object_new_uint64(st->event_opens));
                r = r ?: json_add(o, "events_parked", json_object_new_boolean(st->events_parked));
                r = r ?: json_add(o, "bursts_skipped_quiet", json_object_new_uint64(st->quiet_skips));
                r = r ?: json_add(o, "bursts_skipped_settled", json_object_new_uint64(st->settled_skips));
                r = r ?: json_add(o, "burst_every", json_object_new_uint64(st->burst_every));
                r = r ?: json_add(o, "switches_per_s", json_object_new_double(st->switches_per_s));
                r = r ?: json_add(o, "gate_floor_per_s", json_object_new_double(st->gate_floor_per_s));
        }
        r = r ?: json_add(o, "edges", json_object_new_uint64(st->n_edges));
        r = r ?: json_add(o, "edges_dropped", json_object_new_uint64(st->edges_dropped));
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

int wake_sampler_status_json(const struct wake_sampler *ws, struct json_object **ret) {
        struct wake_status st;

        if (!ret)
                return -EINVAL;
        wake_sampler_status(ws, &st);
        return status_to_json(&st, ret);
}

/*
 * One direction of the pair (waker to wakee) as name_<dir> members of o,
 * from one lookup of its edge: its wake-ups/s; its response time in µs,
 * null where not measured (a value here, not a failure); and its split
 * wake-ups that followed a split one and of them those unanswered
 * (wake_edge.split_next and split_unanswered, what the stream rule of
 * detect-pair.c weighs).
 */
static int direction_json(struct json_object *o, const struct snapshot *s, pid_t waker, pid_t wakee,
                          const char *dir) {
        const struct wake_edge *e = s ? snapshot_find_edge(s, waker, wakee) : NULL;
        char name[64];
        int r;

        snprintf(name, sizeof(name), "wakeups_%s_per_s", dir);
        r = json_add(o, name, json_object_new_double(e ? e->wakeups_per_s : 0));
        snprintf(name, sizeof(name), "response_%s_us", dir);
        if (r >= 0 && json_object_object_add(o, name, e && e->response_usec > 0
                                                           ? json_object_new_double(e->response_usec) : NULL) < 0)
                r = -ENOMEM;
        snprintf(name, sizeof(name), "split_next_%s", dir);
        r = r ?: json_add(o, name, json_object_new_int64(e ? e->split_next : 0));
        snprintf(name, sizeof(name), "split_unanswered_%s", dir);
        return r ?: json_add(o, name, json_object_new_int64(e ? e->split_unanswered : 0));
}

static int pair_json(struct json_object *arr, const struct finding *f, const struct plan_target_state *st,
                     const struct snapshot *s) {
        struct json_object *o = json_object_new_object();
        const struct task *t[2] = {};
        char key[128] = "";
        enum pair_role role[2] = { PAIR_ROLE_PEER, PAIR_ROLE_PEER };
        int r = 0;

        if (!o || json_object_array_add(arr, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        for (int k = 0; k < 2 && s; k++) {
                t[k] = snapshot_find_task(s, f->members[k].tid);
                if (t[k] && !task_id_equal(&t[k]->id, &f->members[k]))
                        t[k] = NULL;
        }
        if (st)
                snprintf(key, sizeof(key), "%s", st->key);
        else
                (void) finding_key(f, key, sizeof(key));

        r = r ?: json_add(o, "key", json_object_new_string(key));
        r = r ?: json_add(o, "state", json_object_new_string(st ? st->state : "new"));
        if (t[0] && t[1])
                detect_pair_roles(t[0], t[1], role);
        for (int k = 0; k < 2; k++) {
                char name[16];
                snprintf(name, sizeof(name), "role_%c", 'a' + k);
                r = r ?: json_add(o, name, json_object_new_string(pair_role_to_string(role[k])));
                snprintf(name, sizeof(name), "tid_%c", 'a' + k);
                r = r ?: json_add(o, name, json_object_new_int(f->members[k].tid));
                snprintf(name, sizeof(name), "pid_%c", 'a' + k);
                r = r ?: json_add(o, name, json_object_new_int(f->members[k].pid));
                snprintf(name, sizeof(name), "comm_%c", 'a' + k);
                r = r ?: json_add(o, name, json_object_new_string(t[k] ? t[k]->comm : "-"));
                snprintf(name, sizeof(name), "cpu_%c", 'a' + k);
                r = r ?: json_add(o, name, json_object_new_int(t[k] ? t[k]->last_cpu : -1));
                snprintf(name, sizeof(name), "cmdline_%c", 'a' + k);
                r = r ?: json_add(o, name, json_object_new_string(t[k] && t[k]->proc && t[k]->proc->cmdline
                                                                  ? t[k]->proc->cmdline : ""));
        }
        r = r ?: direction_json(o, s, f->members[0].tid, f->members[1].tid, "a_to_b");
        r = r ?: direction_json(o, s, f->members[1].tid, f->members[0].tid, "b_to_a");
        r = r ?: json_add(o, "wake_rate_per_s", json_object_new_double(f->wake_rate_per_s));
        /* A fraction only when measured from wake-ups; the fallback's verdicts
         * (and perf's on an anchored pair's moves) are "split", "together" or
         * "unknown" with their basis. */
        if (f->split_basis == SPLIT_BASIS_WAKEUPS)
                r = r ?: json_add(o, "split_fraction", json_object_new_double(f->split_fraction));
        else if (r >= 0 && json_object_object_add(o, "split_fraction", NULL) < 0)
                r = -ENOMEM;
        r = r ?: json_add(o, "split", json_object_new_string(f->split_fraction < 0 ? "unknown"
                                                             : f->split_fraction >= DETECT_PAIR_SPLIT_MIN ? "split"
                                                                                                         : "together"));
        r = r ?: json_add(o, "split_basis", json_object_new_string(split_basis_to_string(f->split_basis)));
        r = r ?: json_add(o, "migrations_per_s", json_object_new_double(f->migrations_per_s));
        r = r ?: json_add(o, "combined_util", json_object_new_double(f->combined_util));
        if (st) {
                r = r ?: json_add(o, "cpu", json_object_new_int(st->cpu));
                r = r ?: json_add(o, "policy", json_object_new_string(st->policy));
                r = r ?: json_add(o, "seen", json_object_new_int64(st->seen));
                r = r ?: json_add(o, "absent", json_object_new_int64(st->absent));
                r = r ?: json_add(o, "why", json_object_new_string(st->why));
        } else
                r = r ?: json_add(o, "policy",
                                  json_object_new_string(f->policy && f->policy->name ? f->policy->name : ""));
        r = r ?: json_add(o, "note", json_object_new_string(f->note));
        return r;
}

int pairs_to_json(const struct plan_state *ps, const struct findings *f, const struct snapshot *s,
                  const struct wake_sampler *ws, struct json_object **ret) {
        struct json_object *root, *pairs = NULL, *x = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        root = json_object_new_object();
        if (!root)
                return -ENOMEM;
        pairs = json_object_new_array();
        r = json_add(root, "pairs", pairs);

        /* What the planner tracks, with its state and why. */
        for (size_t i = 0; r >= 0 && ps && i < ps->n_targets; i++) {
                const struct plan_target_state *st = ps->targets[i];

                if (st->kind != DETECT_PAIR || st->last.n_members < 2)
                        continue;
                r = pair_json(pairs, &st->last, st, s);
        }
        /* Findings the planner has not seen yet (dry-run before the first plan, or no planner). */
        for (size_t i = 0; r >= 0 && f && i < f->n; i++) {
                const struct finding *fi = &f->items[i];
                char key[128];

                if (fi->kind != DETECT_PAIR || fi->n_members < 2)
                        continue;
                if (ps && finding_key(fi, key, sizeof(key)) && plan_state_find(ps, key))
                        continue;
                r = pair_json(pairs, fi, NULL, s);
        }
        if (r >= 0) {
                r = wake_sampler_status_json(ws, &x);
                if (r >= 0)
                        r = json_add(root, "wake_sampler", x);
        }
        if (r >= 0 && s)
                r = json_add(root, "wake_source", json_object_new_string(s->wake_source ? s->wake_source
                                                                         : wake_sampler_source(ws)));
        if (r < 0) {
                json_object_put(root);
                return r;
        }
        *ret = root;
        return 0;
}
