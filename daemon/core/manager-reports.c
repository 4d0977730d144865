/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control interface's reports (affctl status, tasks, actions, explain,
 * pairs, hogs): JSON built from the manager's state, read-only. The
 * manager owns them and hands them to the bus server (control/bus.h's
 * struct bus_methods).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "common/json-util.h"
#include "common/protocol.h"
#include "common/util.h"
#include "control/report-json.h"
#include "core/manager-internal.h"

/* The daemon's own RSS. This is about us, not the observed system, so it
 * reads the real /proc/self and not the --root prefix. */
static uint64_t self_rss_kib(void) {
        char buf[256];
        unsigned long long size, resident;
        long page = sysconf(_SC_PAGESIZE);

        if (util_read_file_at(NULL, "/proc/self/statm", buf, sizeof(buf)) < 0 ||
            sscanf(buf, "%llu %llu", &size, &resident) != 2)
                return 0;
        return resident * (uint64_t) page / 1024;
}

/* Five lines fit a first screen next to the rest of status. */
#define STATUS_CHANGES_MAX 5

static struct json_object *would_do_json(const struct manager *m, size_t max);

static const char *task_policy_name(enum task_policy p) {
        static const char *const n[] = { "other", "batch", "idle", "fifo", "rr", "deadline" };
        return (unsigned) p < ELEMENTSOF(n) ? n[p] : "?";
}

/* Add v to the array a, taking v over; -ENOMEM if v is NULL or the add fails. */
static int array_add(struct json_object *a, struct json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* o, or NULL (o freed) if a key did not go in. */
static struct json_object *json_or_null(struct json_object *o, int r) {
        if (r < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* A thread left alone for good after two foreign changes; NULL on -ENOMEM. */
static struct json_object *left_alone_json(struct manager *m, const struct plan_target_state *t) {
        const struct task *task = snapshot_find_id(m->snap, &t->task);
        struct json_object *e = json_object_new_object();
        int r = e ? 0 : -ENOMEM;

        r = r ?: json_add(e, "pid", json_object_new_int(t->task.pid));
        r = r ?: json_add(e, "tid", json_object_new_int(t->task.tid));
        r = r ?: json_add(e, "start_time", json_object_new_uint64(t->task.start_time));
        r = r ?: json_add(e, "comm", json_object_new_string(task ? task->comm : ""));
        r = r ?: json_add(e, "foreign_changes", json_object_new_int64(t->foreign_changes));
        r = r ?: json_add(e, "why", json_object_new_string(t->why));
        return json_or_null(e, r);
}

/*
 * `affctl status` "coexistence": what the last pass saw of other placers
 * (coexist_to_json()), whether affinity planning runs ("affinity":
 * "active" or "paused" with "why"), the CPUs plans may use, and the
 * threads left alone for good after two foreign changes.
 */
static int coexist_json(struct manager *m, struct json_object **ret) {
        struct json_object *o = NULL, *left;
        char buf[4096];
        cpumask_t usable;
        int r;

        if (!m->snap)
                return -ENODATA;
        r = coexist_to_json(&m->snap->coexist, &o);
        if (r < 0)
                return r;
        usable = snapshot_usable(m->snap);
        r = r ?: json_add(o, "affinity", json_object_new_string(m->snap->coexist.sched_ext ? "paused" : "active"));
        r = r ?: json_add(o, "why", json_object_new_string(m->snap->coexist.sched_ext ? COEXIST_SCHED_EXT_WHY : ""));
        r = r ?: json_add(o, "usable", json_object_new_string(cpumask_format_list(&usable, buf, sizeof(buf)) ?: ""));
        left = r < 0 ? NULL : json_object_new_array();
        for (size_t i = 0; left && m->plan && i < m->plan->n_targets; i++) {
                const struct plan_target_state *t = m->plan->targets[i];

                if (t->foreign_changes < PLAN_FOREIGN_MAX)
                        continue;
                r = array_add(left, left_alone_json(m, t));
                if (r < 0)
                        break;
        }
        r = r ?: json_add(o, "left_alone", TAKE_PTR(left));
        json_object_put(left);   /* NULL once added */
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}
/* Who and where: protocol, version, state, dry-run, interval, paths. */
static int status_identity(const struct manager *m, struct json_object *o) {
        int r = 0;

        r = r ?: json_add(o, AFF_STATUS_PROTOCOL, json_object_new_int(AFF_PROTOCOL_VERSION));
        r = r ?: json_add(o, AFF_STATUS_VERSION, json_object_new_string(PACKAGE_VERSION));
        r = r ?: json_add(o, AFF_STATUS_PID, json_object_new_int(getpid()));
        /* an enum for machines; dry-run is its own boolean (AFF_STATUS_DRY_RUN) */
        r = r ?: json_add(o, AFF_STATUS_STATE, json_object_new_string("running"));
        r = r ?: json_add(o, AFF_STATUS_DRY_RUN, json_object_new_boolean(m->dry_run));
        r = r ?: json_add(o, AFF_STATUS_INTERVAL_MS, json_object_new_int64((int64_t) (m->interval_usec / USEC_PER_MSEC)));
        r = r ?: json_add(o, AFF_STATUS_UPTIME_S,
                          json_object_new_int64((int64_t) ((util_now_usec() - m->start_usec) / USEC_PER_SEC)));
        r = r ?: json_add(o, "root", json_object_new_string(m->root));
        r = r ?: json_add(o, "runtime_dir", json_object_new_string(m->runtime_dir));
        r = r ?: json_add(o, "control", json_object_new_string(m->bus_status));
        return r;
}

/* The configuration files, the number of policies, and warnings for the operator. */
static int status_config(const struct manager *m, struct json_object *o) {
        const struct applier_recover_report *rep = m->applier ? applier_get_recover_report(m->applier) : NULL;
        struct json_object *files = json_object_new_array(), *w = json_object_new_array();
        int r;

        for (char **f = m->config->files; files && f && *f; f++)
                json_object_array_add(files, json_object_new_string(*f));
        r = json_add(o, AFF_STATUS_CONFIG_FILES, files);
        r = r ?: json_add(o, AFF_STATUS_POLICIES, json_object_new_int((int) m->config->n_policies));
        if (w && m->idle_warning[0])
                json_object_array_add(w, json_object_new_string(m->idle_warning));
        /* Until the next start: an operator may have changes to put back by hand. */
        if (w && rep && rep->moved_aside[0]) {
                char wbuf[700];
                snprintf(wbuf, sizeof(wbuf), "the journal found at start was damaged or unreadable: kept as %s "
                         "(see the log); check the changes it recorded by hand", rep->moved_aside);
                json_object_array_add(w, json_object_new_string(wbuf));
        }
        if (r < 0) {
                json_object_put(w);
                return r;
        }
        r = json_add(o, AFF_STATUS_WARNINGS, w);
        /* the same for machines (affinityd_journal_damaged): "" or the path */
        return r ?: json_add(o, "journal_kept_as", json_object_new_string(rep ? rep->moved_aside : ""));
}

/* What this machine lets us do: levers, wake-up source, tracefs, proc connector. */
static int status_capabilities(const struct manager *m, struct json_object *o) {
        struct json_object *caps = json_object_new_object(), *x = NULL;
        int r = caps ? 0 : -ENOMEM;

        if (r == 0 && m->levers) {
                if (levers_caps_to_json(&m->caps, &x) >= 0) {
                        json_object_object_foreach(x, k, v)
                                r = r ?: json_add(caps, k, json_object_get(v));
                }
                json_object_put(x);
                x = NULL;
        } else if (r == 0)
                r = json_add(caps, "levers", json_object_new_string("unavailable"));
        r = r ?: json_add(caps, "wake_source",
                          json_object_new_string(m->wake ? wake_sampler_source(m->wake) : m->wake_status));
        if (r == 0 && m->wake && wake_sampler_status_json(m->wake, &x) >= 0)
                r = json_add(caps, "wake_sampler", x);
        r = r ?: json_add(caps, "tracefs", json_object_new_string(m->tracefs_status));
        r = r ?: json_add(caps, "proc_connector", json_object_new_string(m->pc_status));
        if (r == 0 && m->pc) {
                struct proc_connector_stats pcs;

                proc_connector_get_stats(m->pc, &pcs);
                x = json_object_new_object();
                r = x ? 0 : -ENOMEM;
                r = r ?: json_add(x, "events", json_object_new_uint64(pcs.events));
                r = r ?: json_add(x, "overruns", json_object_new_uint64(pcs.overruns));
                if (r < 0)
                        json_object_put(x);
                r = r ?: json_add(caps, "process_events", x);
        }
        if (r < 0) {
                json_object_put(caps);
                return r;
        }
        return json_add(o, AFF_STATUS_CAPABILITIES, caps);
}

/* Changes in force by the detector that led to them ("other" for levers no
 * detector asked for, e.g. a policy's sysctl), and findings by detector. */
/* A task's comm beside its pid and tid, from the last snapshot: affctl
 * names a change's target as comm[pid/tid]. Left out for a task gone since. */
static int add_comm(const struct manager *m, struct json_object *e, const struct task_id *id) {
        const struct task *t = m->snap ? snapshot_find_id(m->snap, id) : NULL;

        return t && e ? json_add(e, "comm", json_object_new_string(t->comm)) : 0;
}

/* The measured gain of the change on task, if the effect check kept it:
 * gain (after / before, > 1 better), what it is of, and the two figures. */
static int add_gain(const struct manager *m, struct json_object *e, const struct task_id *task) {
        const struct effect_gain *g = effect_gain_of(&m->effects, task);
        int r = 0;

        if (!g || !e)
                return 0;
        r = r ?: json_add(e, "gain", json_object_new_double(g->gain));
        r = r ?: json_add(e, "gain_of", json_object_new_string(effect_measure_name(g->kind, g->basis)));
        r = r ?: json_add(e, "gain_before", json_object_new_double(g->before));
        r = r ?: json_add(e, "gain_after", json_object_new_double(g->after));
        return r;
}

/* The mean measured gain of the changes in force, by kind: one figure per detector for the metrics. */
static int status_gains(const struct manager *m, const struct managed *mg, size_t n_managed,
                        struct json_object *counts) {
        struct json_object *by = json_object_new_object();
        double sum[_DETECT_MAX] = {};
        unsigned n[_DETECT_MAX] = {};
        int r = by ? 0 : -ENOMEM;

        for (size_t i = 0; i < n_managed; i++) {
                const struct effect_gain *g = mg[i].type == ACT_AFFINITY ? effect_gain_of(&m->effects, &mg[i].task) : NULL;

                if (g && g->kind >= 0 && g->kind < _DETECT_MAX) {
                        sum[g->kind] += g->gain;
                        n[g->kind]++;
                }
        }
        for (int d = 0; r == 0 && d < _DETECT_MAX; d++)
                if (n[d] > 0)
                        r = json_add(by, detector_to_string((enum detector) d), json_object_new_double(sum[d] / n[d]));
        if (r < 0) {
                json_object_put(by);
                return r;
        }
        return json_add(counts, "gain_by_kind", by);
}

static int status_by_kind(const struct manager *m, const struct managed *mg, size_t n_managed,
                          struct json_object *counts) {
        struct json_object *in_force = json_object_new_object(), *found = json_object_new_object();
        int64_t by[_DETECT_MAX + 1] = {};
        int r = in_force && found ? 0 : -ENOMEM;

        for (size_t i = 0; i < n_managed; i++)
                by[mg[i].kind >= 0 && mg[i].kind < _DETECT_MAX ? mg[i].kind : _DETECT_MAX]++;
        for (int d = 0; r == 0 && d <= _DETECT_MAX; d++)
                if (by[d] > 0)
                        r = json_add(in_force, d < _DETECT_MAX ? detector_to_string((enum detector) d) : "other",
                                     json_object_new_int64(by[d]));
        for (int d = 0; r == 0 && d < _DETECT_MAX; d++) {
                int64_t n = 0;

                for (size_t i = 0; i < m->findings.n; i++)
                        n += m->findings.items[i].kind == (enum detector) d;
                if (n > 0)
                        r = json_add(found, detector_to_string((enum detector) d), json_object_new_int64(n));
        }
        if (r < 0) {
                json_object_put(in_force);
                json_object_put(found);
                return r;
        }
        r = json_add(counts, "in_force_by_kind", in_force);
        if (r < 0) {
                json_object_put(found);
                return r;
        }
        return json_add(counts, "findings_by_kind", found);
}

/* Passes, tasks, findings and changes counted. */
static int status_counts(const struct manager *m, const struct managed *mg, size_t n_managed,
                         struct json_object *o) {
        struct json_object *counts = json_object_new_object();
        int r = counts ? 0 : -ENOMEM;

        r = r ?: json_add(counts, "passes", json_object_new_int64((int64_t) m->passes));
        r = r ?: json_add(counts, "passes_early", json_object_new_int64((int64_t) m->passes_early));
        r = r ?: json_add(counts, "tasks", json_object_new_int64(m->snap ? (int64_t) m->snap->n_tasks : 0));
        r = r ?: json_add(counts, "findings", json_object_new_int64((int64_t) m->findings.n));
        r = r ?: json_add(counts, "actions_in_force", json_object_new_int64((int64_t) n_managed));
        r = r ?: json_add(counts, "actions_applied", json_object_new_int64((int64_t) m->actions_applied));
        r = r ?: json_add(counts, "actions_failed", json_object_new_int64((int64_t) m->actions_failed));
        r = r ?: json_add(counts, "actions_undone", json_object_new_int64((int64_t) m->actions_undone));
        r = r ?: json_add(counts, "actions_second_look",
                          json_object_new_int64((int64_t) m->actions_looked_again));
        r = r ?: status_by_kind(m, mg, n_managed, counts);
        r = r ?: status_gains(m, mg, n_managed, counts);
        if (r == 0 && m->dry_run)
                r = json_add(counts, "would_do", json_object_new_int64((int64_t) m->actions.n));
        if (r < 0) {
                json_object_put(counts);
                return r;
        }
        return json_add(o, "counts", counts);
}

/* The first screen of affctl status: the newest few changes in force
 * (affctl actions lists them all), and in dry-run what the last pass
 * would have done. */
/* Each change in force (applier_to_json(), in applier_list()'s order):
 * its task's comm and, once the effect check kept it, its gain. */
static int annotate_changes(const struct manager *m, struct json_object *x) {
        const struct managed *mg;
        size_t n_managed = 0;
        int r = 0;

        (void) applier_list(m->applier, &mg, &n_managed);
        for (size_t i = 0; r >= 0 && i < n_managed && i < json_object_array_length(x); i++)
                if (mg[i].type == ACT_AFFINITY) {
                        r = add_comm(m, json_object_array_get_idx(x, i), &mg[i].task);
                        r = r ?: add_gain(m, json_object_array_get_idx(x, i), &mg[i].task);
                }
        return r;
}

static int status_changes(const struct manager *m, struct json_object *o) {
        struct json_object *x = NULL;
        int r = 0;

        if (applier_to_json(m->applier, util_now_usec(), &x) >= 0) {
                struct json_object *top = json_object_new_array();
                size_t n = json_object_array_length(x);

                r = annotate_changes(m, x);

                for (size_t i = n; top && i > 0 && n - i < STATUS_CHANGES_MAX; i--)
                        json_object_array_add(top, json_object_get(json_object_array_get_idx(x, i - 1)));
                json_object_put(x);
                r = json_add(o, AFF_STATUS_CHANGES, top);
        }
        if (r == 0 && m->dry_run)
                r = json_add(o, AFF_STATUS_WOULD_DO, would_do_json(m, STATUS_CHANGES_MAX));
        return r;
}

/* The daemon's own cost, and its sampler's counters and NUMA maps. */
static int status_self(const struct manager *m, struct json_object *o) {
        struct json_object *self = json_object_new_object(), *x = NULL;
        int r = self ? 0 : -ENOMEM;

        r = r ?: json_add(self, "cpu_percent", json_object_new_double(m->self_cpu_frac * 100.0));
        r = r ?: json_add(self, "rss_kib", json_object_new_int64((int64_t) self_rss_kib()));
        r = r ?: json_add(self, "last_pass_us", json_object_new_int64((int64_t) m->last_pass_cost_usec));
        r = r ?: json_add(self, "cpu_us_total", json_object_new_int64((int64_t) manager_rusage_cpu_usec()));
        if (r < 0) {
                json_object_put(self);
                return r;
        }
        r = json_add(o, "self", self);
        if (r == 0 && sampler_stats_to_json(m->sampler, &x) >= 0)
                r = json_add(o, "sampler", x);
        if (r == 0 && memnode_memo_to_json(m->memnodes, &x) >= 0)
                r = json_add(o, "numa_maps", x);
        return r;
}

/* System-wide levers in force, with what they were: what a stop would put back. */
static int status_levers_changed(const struct managed *mg, size_t n_managed, struct json_object *o) {
        struct json_object *levers = json_object_new_array();
        int r = levers ? 0 : -ENOMEM;

        for (size_t i = 0; r == 0 && i < n_managed; i++) {
                struct json_object *e;

                if (mg[i].type == ACT_AFFINITY)
                        continue;
                e = json_object_new_object();
                r = e ? 0 : -ENOMEM;
                r = r ?: json_add(e, AFF_CHANGE_TYPE, json_object_new_string(action_type_to_string(mg[i].type)));
                r = r ?: json_add(e, AFF_CHANGE_TARGET, json_object_new_string(mg[i].key));
                r = r ?: json_add(e, AFF_CHANGE_ORIGINAL, json_object_new_string(mg[i].original));
                r = r ?: json_add(e, AFF_CHANGE_CURRENT, json_object_new_string(mg[i].current));
                r = r ?: json_add(e, AFF_CHANGE_POLICY, json_object_new_string(mg[i].policy));
                if (r < 0)
                        json_object_put(e);
                else
                        json_object_array_add(levers, e);
        }
        if (r < 0) {
                json_object_put(levers);
                return r;
        }
        return json_add(o, "levers_changed", levers);
}

/* Other placers seen, and the topology. */
/* What co-location buys here: per level, and the largest; why not, when not measured. */
static int calibration_json(const struct calibration *c, const struct topology *topo, struct json_object **ret) {
        struct json_object *o = json_object_new_object(), *levels = json_object_new_array();
        int r = o && levels ? 0 : -ENOMEM;

        r = r ?: json_add(o, "measured", json_object_new_boolean(c->done));
        if (!c->done)
                r = r ?: json_add(o, "why", json_object_new_string(c->why));
        r = r ?: json_add(o, "gain", json_object_new_double(c->gain_max));
        r = r ?: json_add(o, "gain_min", json_object_new_double(CALIB_GAIN_MIN));
        /* how busy its CPUs were next to it (absent: not checked yet); a
         * level read free is believed only from quiet ones (calibrate.h) */
        if (c->busy_known)
                r = r ?: json_add(o, "cpus_busy", json_object_new_double(c->busy));
        r = r ?: json_add(o, "cpus_busy_max", json_object_new_double(CALIB_BUSY_MAX));
        r = r ?: json_add(o, "reads_free", json_object_new_boolean(calibration_reads_free(c)));
        r = r ?: json_add(o, "believed",
                          json_object_new_boolean(c->done && (!calibration_reads_free(c) || calibration_quiet(c))));
        /* the verdicts the pair planner acts on, so that no reader judges
         * the gains again: every pair left to the kernel (the largest gain
         * free), and per level below, a pair split only there */
        r = r ?: json_add(o, "free", json_object_new_boolean(calibration_free_between(c, topo, -1, -1)));
        r = r ?: json_add(o, "same_cpu_round_trips_per_s", json_object_new_double(c->same_per_s));
        /* what a pair policy's Span=auto spreads a pair over here */
        r = r ?: json_add(o, "span", json_object_new_string(pair_span_to_string(plan_pair_auto_span(c, topo))));
        for (int i = 0; r >= 0 && i < c->n_levels; i++) {
                struct json_object *l = json_object_new_object();
                int k = l ? 0 : -ENOMEM;

                k = k ?: json_add(l, "level", json_object_new_string(calib_level_to_string(c->levels[i].level)));
                if (k >= 0) {
                        char cpus[32];
                        snprintf(cpus, sizeof(cpus), "%d/%d", c->levels[i].cpu_a, c->levels[i].cpu_b);
                        k = json_add(l, "cpus", json_object_new_string(cpus));
                }
                k = k ?: json_add(l, "split_round_trips_per_s", json_object_new_double(c->levels[i].split_per_s));
                k = k ?: json_add(l, "gain", json_object_new_double(c->levels[i].gain));
                k = k ?: json_add(l, "free", json_object_new_boolean(calibration_free_at(c, c->levels[i].level)));
                r = array_add(levels, json_or_null(l, k));
        }
        r = r ?: json_add(o, "levels", TAKE_PTR(levels));
        json_object_put(levels);
        r = r ?: json_add(o, "cost_ms", json_object_new_double((double) c->cost_usec / USEC_PER_MSEC));
        /* two where a level read free: such a reading is measured again (calibrate.h) */
        r = r ?: json_add(o, "readings", json_object_new_int((int) c->readings));
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

static int status_machine(struct manager *m, struct json_object *o) {
        struct json_object *x = NULL;
        int r = 0;

        if (calibration_json(&m->calibration, m->topo, &x) >= 0)
                r = json_add(o, "colocation", x);
        if (coexist_json(m, &x) >= 0)
                r = json_add(o, "coexistence", x);
        r = r ?: json_add(o, "online_cpus", json_object_new_string(m->topo_online));
        if (r == 0 && topology_to_json(m->topo, &x) >= 0)
                r = json_add(o, "topology", x);
        return r;
}

int manager_status_json(struct manager *m, struct json_object **ret) {
        struct json_object *o = json_object_new_object();
        const struct managed *mg;
        size_t n_managed = 0;
        int r;

        if (!o)
                return -ENOMEM;
        (void) applier_list(m->applier, &mg, &n_managed);
        r = status_identity(m, o);
        r = r ?: status_config(m, o);
        r = r ?: status_capabilities(m, o);
        r = r ?: status_counts(m, mg, n_managed, o);
        r = r ?: status_changes(m, o);
        r = r ?: status_self(m, o);
        r = r ?: status_levers_changed(mg, n_managed, o);
        r = r ?: status_machine(m, o);
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

/* A thread's row of affctl tasks and explain; NULL on -ENOMEM. */
static struct json_object *task_json(const struct task *t) {
        struct json_object *o = json_object_new_object();
        int r = o ? 0 : -ENOMEM;
        char mask[256];

        r = r ?: json_add(o, "pid", json_object_new_int(t->id.pid));
        r = r ?: json_add(o, "tid", json_object_new_int(t->id.tid));
        r = r ?: json_add(o, "comm", json_object_new_string(t->comm));
        r = r ?: json_add(o, "util_pct", json_object_new_double(t->util * 100.0));
        r = r ?: json_add(o, "migrations_per_s", json_object_new_double(t->migrations_per_s));
        r = r ?: json_add(o, "run_delay_ms_per_s", json_object_new_double(t->run_delay_ms_per_s));
        /* bytes through read()/write(): read only for threads that switch often (-1: not read) */
        r = r ?: json_add(o, "io_bytes_per_s", json_object_new_double(t->have_io_rate ? t->io_bytes_per_s : -1));
        r = r ?: json_add(o, "cpu", json_object_new_int(t->last_cpu));
        r = r ?: json_add(o, "allowed",
                          json_object_new_string(cpumask_format_list(&t->allowed, mask, sizeof(mask)) ?: "?"));
        r = r ?: json_add(o, "policy", json_object_new_string(task_policy_name(t->policy)));
        return json_or_null(o, r);
}
static int cmp_util_desc(const void *a, const void *b) {
        const struct task *const *x = a, *const *y = b;
        return (*x)->util < (*y)->util ? 1 : (*x)->util > (*y)->util ? -1 : 0;
}

int manager_tasks_json(struct manager *m, unsigned limit, struct json_object **ret) {
        struct json_object *o, *arr;
        _cleanup_free_ const struct task **v = NULL;
        size_t n = m->snap ? m->snap->n_tasks : 0;
        int r;

        if (limit == 0)
                limit = 20;
        v = calloc(n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                v[i] = &m->snap->tasks[i];
        qsort_safe(v, n, sizeof(*v), cmp_util_desc);

        o = json_object_new_object();
        arr = json_object_new_array();
        r = o && arr ? 0 : -ENOMEM;
        for (size_t i = 0; i < n && i < limit; i++)
                r = r ?: array_add(arr, task_json(v[i]));
        r = r ?: json_add(o, "tasks", TAKE_PTR(arr));
        json_object_put(arr);   /* NULL once added */
        r = r ?: json_add(o, "total", json_object_new_int64((int64_t) n));
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}


/* What the last pass would have done (dry-run: nothing is in force), at most max (0: all). */
static struct json_object *would_do_json(const struct manager *m, size_t max) {
        struct json_object *w = json_object_new_array();
        int r = w ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < m->actions.n && (max == 0 || i < max); i++) {
                const struct action *a = &m->actions.items[i];
                struct json_object *e = json_object_new_object();
                char key[160], mask[128] = "";
                int k = e ? 0 : -ENOMEM;

                action_target_key(a, key, sizeof(key));
                if (a->type == ACT_AFFINITY)
                        cpumask_format_list(&a->mask, mask, sizeof(mask));
                k = k ?: json_add(e, AFF_CHANGE_VERB, json_object_new_string(a->verb == VERB_SET ? "set" : "release"));
                k = k ?: json_add(e, AFF_CHANGE_TYPE, json_object_new_string(action_type_to_string(a->type)));
                k = k ?: json_add(e, AFF_CHANGE_TARGET, json_object_new_string(key));
                if (a->type == ACT_AFFINITY) {
                        k = k ?: json_add(e, "pid", json_object_new_int(a->task.pid));
                        k = k ?: json_add(e, "tid", json_object_new_int(a->task.tid));
                        k = k ?: add_comm(m, e, &a->task);
                }
                k = k ?: json_add(e, AFF_CHANGE_VALUE, json_object_new_string(mask[0] ? mask : a->value));
                k = k ?: json_add(e, AFF_CHANGE_POLICY, json_object_new_string(a->policy));
                k = k ?: json_add(e, AFF_CHANGE_REASON, json_object_new_string(a->reason));
                r = array_add(w, json_or_null(e, k));
        }
        return json_or_null(w, r);
}

int manager_actions_json(struct manager *m, struct json_object **ret) {
        struct json_object *o = json_object_new_object(), *x = NULL;
        int r = applier_to_json(m->applier, util_now_usec(), &x);

        if (r >= 0 && !o)
                r = -ENOMEM;
        if (r < 0) {
                json_object_put(x);
                json_object_put(o);
                return r;
        }
        /* added first: o owns x, so a failed annotation leaks nothing */
        r = json_add(o, "actions", x);
        r = r ?: annotate_changes(m, x);
        r = r ?: json_add(o, "dry_run", json_object_new_boolean(m->dry_run));
        if (m->dry_run)
                r = r ?: json_add(o, "would_do", would_do_json(m, 0));
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}
static const enum detector explain_detectors[] = { DETECT_HOG, DETECT_PAIR, DETECT_SPREAD };

/* "server of sysbench 9709/9712 (client: sysbench --db-driver=...); ": who
 * the thread t is paired with, for people reading explain. */
static void pair_partner_text(const struct snapshot *s, const struct task *t, const struct task_id *other,
                              char *buf, size_t size) {
        const struct task *o = snapshot_find_id(s, other);
        enum pair_role role[2];

        if (!o)
                return;
        detect_pair_roles(t, o, role);
        snprintf(buf, size, "%s of %s %d/%d (%s: %.80s); ", pair_role_to_string(role[0]), o->comm,
                 (int) o->id.pid, (int) o->id.tid, pair_role_to_string(role[1]),
                 o->proc && o->proc->cmdline ? o->proc->cmdline : "?");
}

/* explain "coexistence": why another placer's claim keeps affinityd off this thread. */
static struct json_object *coexist_task_json(struct manager *m, const struct task *t) {
        struct json_object *a = json_object_new_array();
        const struct coexist *c = &m->snap->coexist;
        char key[128], b[320], cpus[256];
        const struct plan_target_state *ts;
        int r = a ? 0 : -ENOMEM;

        if (c->sched_ext) {
                snprintf(b, sizeof(b), "%s (%s): affinityd changes no affinity", COEXIST_SCHED_EXT_WHY,
                         c->sched_ext_ops[0] ? c->sched_ext_ops : "scheduler name unknown");
                r = r ?: array_add(a, json_object_new_string(b));
        }
        if (!cpumask_empty(&c->kubelet_exclusive) && !cpumask_empty(&t->allowed) &&
            cpumask_subset(&t->allowed, &c->kubelet_exclusive)) {
                snprintf(b, sizeof(b), "on CPUs the kubelet gave a container (%s): never touched",
                         cpumask_format_list(&t->allowed, cpus, sizeof(cpus)) ?: "?");
                r = r ?: array_add(a, json_object_new_string(b));
        }
        snprintf(key, sizeof(key), "task:%d:%" PRIu64, (int) t->id.tid, t->id.start_time);
        ts = plan_state_find(m->plan, key);
        if (ts && ts->foreign_changes >= PLAN_FOREIGN_MAX)
                r = r ?: array_add(a, json_object_new_string(PLAN_FOREIGN_WHY));
        else if (ts && ts->foreign_changes > 0) {
                snprintf(b, sizeof(b), "its affinity was changed by someone else %u time(s); at %d it is left "
                         "alone for good", ts->foreign_changes, PLAN_FOREIGN_MAX);
                r = r ?: array_add(a, json_object_new_string(b));
        }
        return json_or_null(a, r);
}
/* explain "policies": which policy would govern the thread for each detector, and if none, why not. */
static struct json_object *explain_policies(struct manager *m, const struct task *t) {
        struct json_object *pol = json_object_new_object();
        int r = pol ? 0 : -ENOMEM;

        for (size_t d = 0; d < ELEMENTSOF(explain_detectors); d++) {
                const char *why = NULL;
                const struct policy *p = detect_policy_for(m->config, m->snap, t, explain_detectors[d],
                                                           getpid(), &why);
                char b[256];
                snprintf(b, sizeof(b), "%s", p ? p->name : why ? why : "no policy matches");
                r = r ?: json_add(pol, detector_to_string(explain_detectors[d]), json_object_new_string(b));
        }
        return json_or_null(pol, r);
}

/* explain "findings": the last pass's findings the thread is a member of. */
static struct json_object *explain_findings(struct manager *m, const struct task *t) {
        struct json_object *fnd = json_object_new_array();
        int r = fnd ? 0 : -ENOMEM;

        for (size_t f = 0; f < m->findings.n; f++)
                for (size_t k = 0; k < m->findings.items[f].n_members; k++)
                        if (m->findings.items[f].members[k].tid == t->id.tid) {
                                const struct finding *fi = &m->findings.items[f];
                                char b[320], with[200] = "";

                                if (fi->kind == DETECT_PAIR && fi->n_members == 2)
                                        pair_partner_text(m->snap, t, &fi->members[1 - k], with, sizeof(with));
                                snprintf(b, sizeof(b), "%s (policy %s): %sutil %.0f%%, %.2f migrations/s, wake %.0f/s%s%s",
                                         detector_to_string(fi->kind), fi->policy ? fi->policy->name : "-",
                                         with, fi->util * 100, fi->migrations_per_s, fi->wake_rate_per_s,
                                         fi->note[0] ? "; " : "", fi->note);
                                r = r ?: array_add(fnd, json_object_new_string(b));
                        }
        return json_or_null(fnd, r);
}

/* explain "actions": its affinity changes in force, and in dry-run the last pass's. */
static struct json_object *explain_actions(struct manager *m, const struct task *t, const struct managed *mg,
                                           size_t n_managed) {
        struct json_object *done = json_object_new_array();
        int r = done ? 0 : -ENOMEM;

        for (size_t k = 0; k < n_managed; k++)
                if (mg[k].type == ACT_AFFINITY && mg[k].task.tid == t->id.tid) {
                        const struct effect_gain *g = effect_gain_of(&m->effects, &mg[k].task);
                        char b[400], gain[96] = "";

                        if (g)
                                snprintf(gain, sizeof(gain), "; measured: %s %+.0f %% (%.4g -> %.4g)",
                                         effect_measure_name(g->kind, g->basis), (g->gain - 1) * 100, g->before,
                                         g->after);
                        snprintf(b, sizeof(b), "%s %s (was %s) by policy %s: %s%s",
                                 m->dry_run ? "would set" : "set", mg[k].current, mg[k].original,
                                 mg[k].policy, mg[k].reason, gain);
                        r = r ?: array_add(done, json_object_new_string(b));
                }
        for (size_t k = 0; m->dry_run && k < m->actions.n; k++)
                if (m->actions.items[k].type == ACT_AFFINITY &&
                    m->actions.items[k].task.tid == t->id.tid) {
                        char b[400];
                        snprintf(b, sizeof(b), "would %s: %s",
                                 m->actions.items[k].verb == VERB_SET ? "set" : "release",
                                 m->actions.items[k].reason);
                        r = r ?: array_add(done, json_object_new_string(b));
                }
        return json_or_null(done, r);
}

/* One thread of explain: its row, policies, findings, actions, coexistence and the planner's last word. */
static struct json_object *explain_thread(struct manager *m, const struct task *t, const struct managed *mg,
                                          size_t n_managed) {
        struct json_object *e = task_json(t);
        int r = e ? 0 : -ENOMEM;

        r = r ?: json_add(e, "policies", explain_policies(m, t));
        r = r ?: json_add(e, "findings", explain_findings(m, t));
        r = r ?: json_add(e, "actions", explain_actions(m, t, mg, n_managed));
        r = r ?: json_add(e, "coexistence", coexist_task_json(m, t));

        /* The planner's last word on any target involving this thread. */
        for (size_t k = 0; m->plan && k < m->plan->n_targets; k++) {
                const struct plan_target_state *ts = m->plan->targets[k];
                if (plan_target_involves(ts, t->id.tid)) {
                        char b[400];
                        snprintf(b, sizeof(b), "%s: %s%s%s", ts->key, ts->state,
                                 ts->why[0] ? " — " : "", ts->why);
                        r = r ?: json_add(e, "planner", json_object_new_string(b));
                }
        }
        return json_or_null(e, r);
}

int manager_explain_json(struct manager *m, pid_t pid, struct json_object **ret) {
        struct json_object *o, *threads;
        const struct managed *mg;
        size_t n_managed = 0;
        bool any = false;
        int r;

        if (!m->snap)
                return -ESRCH;
        (void) applier_list(m->applier, &mg, &n_managed);
        o = json_object_new_object();
        threads = json_object_new_array();
        r = o && threads ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < m->snap->n_tasks; i++) {
                const struct task *t = &m->snap->tasks[i];

                if (t->id.pid != pid)
                        continue;
                any = true;
                r = array_add(threads, explain_thread(m, t, mg, n_managed));
        }
        if (r >= 0 && !any)
                r = -ESRCH;
        r = r ?: json_add(o, "pid", json_object_new_int(pid));
        r = r ?: json_add(o, "dry_run", json_object_new_boolean(m->dry_run));
        r = r ?: json_add(o, "threads", TAKE_PTR(threads));
        json_object_put(threads);   /* NULL once added */
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}
/* A pair's gain: the measured gain of the change on either member (both
 * were judged by the pair's one proxy). */
static int pairs_add_gains(const struct manager *m, struct json_object *o) {
        struct json_object *pairs = json_path(o, "pairs");
        int r = 0;

        for (size_t i = 0; r >= 0 && pairs && i < json_object_array_length(pairs); i++) {
                struct json_object *p = json_object_array_get_idx(pairs, i);
                const char *keys[] = { "tid_a", "tid_b" };

                for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                        struct json_object *tid = json_path(p, keys[k]);
                        const struct task *t = tid ? snapshot_find_task(m->snap, json_object_get_int(tid)) : NULL;

                        if (t && effect_gain_of(&m->effects, &t->id)) {
                                r = add_gain(m, p, &t->id);
                                break;
                        }
                }
        }
        return r;
}

int manager_pairs_json(struct manager *m, struct json_object **ret) {
        int r = pairs_to_json(m->plan, &m->findings, m->snap, m->wake, ret);

        /* the pass this list is of: a caller that follows a pair pass by
         * pass reads both in one answer, not across a pass boundary */
        if (r >= 0 && (pairs_add_gains(m, *ret) < 0 ||
                       json_add(*ret, "passes", json_object_new_int64((int64_t) m->passes)) < 0)) {
                json_object_put(*ret);
                *ret = NULL;
                return -ENOMEM;
        }
        return r;
}

int manager_hogs_json(struct manager *m, struct json_object **ret) {
        return hogs_to_json(m->plan, &m->findings, ret);
}

