/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "apply/apply.h"
#include "control/bus.h"
#include "common/json-util.h"
#include "common/protocol.h"
#include "common/util.h"
#include "config/config.h"
#include "detect/detect.h"
#include "plan/effect.h"
#include "core/instance.h"
#include "apply/journal.h"
#include "common/metrics.h"
#include "apply/levers.h"
#include "core/log.h"
#include "core/manager.h"
#include "core/manager-internal.h"
#include "plan/plan.h"
#include "sample/proc-connector.h"
#include "sample/sample.h"
#include "sample/wake.h"


uint64_t manager_rusage_cpu_usec(void) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return (uint64_t) ru.ru_utime.tv_sec * USEC_PER_SEC + (uint64_t) ru.ru_utime.tv_usec +
               (uint64_t) ru.ru_stime.tv_sec * USEC_PER_SEC + (uint64_t) ru.ru_stime.tv_usec;
}

/*
 * A configuration without one enabled policy that acts (exclusions only
 * narrow the others) leaves the daemon running and doing nothing, which
 * looked exactly like "nothing to correct here": a build with another
 * prefix reads other directories. So it is a warning that names every
 * directory searched, at start and after each reload, and it is in status.
 */
static void check_nothing_to_do(struct manager *m) {
        struct config_paths p;
        size_t n_acting = 0, n_enabled = 0, off = 0;
        char dirs[384] = "";

        for (size_t i = 0; i < m->config->n_policies; i++) {
                const struct policy *pol = &m->config->policies[i];
                if (!pol->enabled)
                        continue;
                n_enabled++;
                if (pol->action != ACTION_EXCLUDE)
                        n_acting++;
        }
        m->idle_warning[0] = '\0';
        if (n_acting > 0)
                return;
        config_paths_from(m->config_dirs, &p);
        for (size_t i = 0; p.dirs[i] && off < sizeof(dirs); i++) {
                int w = snprintf(dirs + off, sizeof(dirs) - off, "%s%s/policies.d", i ? ", " : "", p.dirs[i]);
                if (w < 0)
                        break;
                off += (size_t) w;
        }
        if (m->config->n_policies == 0)
                snprintf(m->idle_warning, sizeof(m->idle_warning),
                         "no policies found in %s: nothing to do", dirs);
        else
                snprintf(m->idle_warning, sizeof(m->idle_warning),
                         "no enabled policy acts (%zu found, %zu enabled, exclusions only) in %s: nothing to do",
                         m->config->n_policies, n_enabled, dirs);
        log_fields(&m->log, LOG_WARNING, NULL, "%s", m->idle_warning);
}

static void log_config_errors(struct manager *m, const struct config_errors *e) {
        for (size_t i = 0; i < e->n; i++) {
                char f1[300], f2[32];
                const char *fields[] = { f1, f2, NULL };

                snprintf(f1, sizeof(f1), "CONFIG_FILE=%s", e->items[i].file ? e->items[i].file : "");
                snprintf(f2, sizeof(f2), "CONFIG_LINE=%u", e->items[i].line);
                log_fields(&m->log, LOG_ERR, fields, "%s", e->items[i].message);
        }
}

/* Settings that command line options override. */
static void apply_settings(struct manager *m) {
        const struct daemon_settings *d = &m->config->daemon;

        m->interval_usec = m->opts.interval_usec ? m->opts.interval_usec : d->interval_usec;
        m->dry_run = m->opts.dry_run || d->dry_run;
        m->log.max_level = m->opts.log_level >= 0 ? m->opts.log_level : d->log_level;
}

/* ---- the pipeline ---------------------------------------------------- */

static void log_action(struct manager *m, const struct action *a, int r, const char *what) {
        char key[160], mask[128] = "", f[6][200];
        const char *fields[7];
        size_t n = 0;

        action_target_key(a, key, sizeof(key));
        if (a->type == ACT_AFFINITY)
                cpumask_format_list(&a->mask, mask, sizeof(mask));
        snprintf(f[n], sizeof(f[n]), "ACTION=%s-%s", a->verb == VERB_SET ? "set" : "release",
                 action_type_to_string(a->type));
        fields[n] = f[n], n++;
        snprintf(f[n], sizeof(f[n]), "TARGET=%s", key);
        fields[n] = f[n], n++;
        snprintf(f[n], sizeof(f[n]), "POLICY=%s", a->policy);
        fields[n] = f[n], n++;
        snprintf(f[n], sizeof(f[n]), "REASON=%s", a->reason);
        fields[n] = f[n], n++;
        if (a->type == ACT_AFFINITY) {
                snprintf(f[n], sizeof(f[n]), "PID=%d", (int) a->task.pid);
                fields[n] = f[n], n++;
                snprintf(f[n], sizeof(f[n]), "TID=%d", (int) a->task.tid);
                fields[n] = f[n], n++;
        }
        fields[n] = NULL;

        if (r < 0)
                log_fields(&m->log, LOG_WARNING, fields, "%s %s %s%s%s failed: %s (%s)", what,
                           action_type_to_string(a->type), key, mask[0] ? " → " : "", mask,
                           strerror(-r), a->reason);
        else
                log_fields(&m->log, LOG_INFO, fields, "%s %s %s%s%s: %s [policy %s]", what,
                           action_type_to_string(a->type), key, mask[0] ? " → " : "", mask,
                           a->reason, a->policy);
}

/* The effect check's verdict (plan/effect.c) on one change of ours: kept
 * (its gain is logged and shown from now on), or undone and its retry
 * blocked for RetryAfter=: a change of ours never leaves its target slower. */
static void effect_verdict(const struct action *a, const struct effect_result *res, void *userdata) {
        struct manager *m = userdata;
        struct action undo = *a;
        char key[160], by[48] = "";
        int r;

        action_target_key(a, key, sizeof(key));
        /* a feeder is judged by the pair it feeds: say whose work that was */
        if (a->work_pair[0].tid)
                snprintf(by, sizeof(by), " (the pair it feeds, %d + %d)", (int) a->work_pair[0].tid,
                         (int) a->work_pair[1].tid);
        if (res->verdict != EFFECT_UNDO) {
                /* a keep by the response time also says what the round trips did */
                log_fields(&m->log, LOG_INFO, NULL, "effect check: %s kept: %s %+.0f %% (%.4g -> %.4g, median of %u%s%s)%s",
                           key, effect_measure_name(a->kind, res->basis), res->change * 100, res->before,
                           res->after, res->n, res->basis == EVIDENCE_RESPONSE ? "; " : "",
                           res->basis == EVIDENCE_RESPONSE ? res->why : "", by);
                return;
        }
        undo.verb = VERB_RELEASE;
        snprintf(undo.reason, sizeof(undo.reason), "effect check: %.110s%s", res->why, by);
        r = applier_apply(m->applier, &undo, util_now_usec(), m->dry_run);
        log_action(m, &undo, r, "undo");
        if (r >= 0) {
                m->actions_undone++;
                m->actions_looked_again += res->second_look;
        }
        /* a gain kept earlier for this thread is no longer in force */
        effect_gain_forget(&m->effects, &a->task);
        if (res->second_look)
                /* the verdict is the pair's: both members have had their look */
                (void) plan_state_second_look(m->plan, a, util_now_usec() + PLAN_SECOND_LOOK_USEC, undo.reason,
                                              res->after);
        else
                (void) plan_state_block(m->plan, plan_undo_key(a, key, sizeof(key)),
                                        util_now_usec() + m->config->daemon.retry_after_usec, undo.reason);
}

/*
 * A policy that was removed or disabled by a reload leaves no pin behind:
 * each of its pins is released, and only those (a thread of the same
 * process pinned by a policy still in force keeps its pin). Its levers
 * are plan-levers.c's to release, on the next pass.
 */
static void release_orphans(struct manager *m) {
        _cleanup_free_ struct action *orphans = NULL;
        const struct managed *mg;
        size_t n, k = 0;

        if (applier_list(m->applier, &mg, &n) < 0 || n == 0 || !(orphans = calloc(n, sizeof(*orphans))))
                return;
        /* the list changes as they are released: collect them first */
        for (size_t i = 0; i < n; i++) {
                const struct managed *e = &mg[i];
                const struct policy *p = config_find_policy(m->config, e->policy);

                if (e->type != ACT_AFFINITY || (p && p->enabled))
                        continue;
                orphans[k] = (struct action) { .type = ACT_AFFINITY, .verb = VERB_RELEASE, .task = e->task,
                                               .mask = e->mask, .partner = e->partner, .kind = e->kind };
                snprintf(orphans[k].policy, sizeof(orphans[k].policy), "%s", e->policy);
                snprintf(orphans[k].reason, sizeof(orphans[k].reason), "policy %s is gone", e->policy);
                k++;
        }
        for (size_t i = 0; i < k; i++) {
                int r = applier_apply(m->applier, &orphans[i], util_now_usec(), false);

                log_action(m, &orphans[i], r, "released");
        }
}

/* The applier never logs; what it saw happen reaches the journal here. */
static void on_applier_event(const struct applier_event *ev, void *userdata) {
        struct manager *m = userdata;
        char f[4][200];
        const char *fields[5] = {};
        size_t n = 0;
        int level;

        switch (ev->kind) {
        case APPLIER_EVENT_FOREIGN:
        case APPLIER_EVENT_JOURNAL:
                level = LOG_NOTICE;
                break;
        case APPLIER_EVENT_FAILED:
                level = LOG_WARNING;
                break;
        case APPLIER_EVENT_RESTORED:
                /* On stop, revert and crash replay nothing else says what came
                 * back (and which systemd drop-in was removed); a release in a
                 * pass is said twice, once as the plan's action. */
                level = LOG_INFO;
                break;
        default:
                level = LOG_DEBUG; /* set/gone: log_action() already said it */
                break;
        }
        /* Counted for the planner, which leaves a thread alone for good after
         * the second (plan_state_foreign()). m->plan is NULL during the crash
         * replay at start: those changes were made before this run. */
        if (ev->kind == APPLIER_EVENT_FOREIGN && ev->target && ev->target->type == ACT_AFFINITY && m->plan &&
            plan_state_foreign(m->plan, &ev->target->task) == PLAN_FOREIGN_MAX)
                log_fields(&m->log, LOG_NOTICE, NULL, "tid %d: %s", (int) ev->target->task.tid, PLAN_FOREIGN_WHY);

        snprintf(f[n], sizeof(f[n]), "EVENT=%s", applier_event_kind_to_string(ev->kind));
        fields[n] = f[n], n++;
        if (ev->target) {
                snprintf(f[n], sizeof(f[n]), "TARGET=%s", ev->target->key);
                fields[n] = f[n], n++;
                snprintf(f[n], sizeof(f[n]), "POLICY=%s", ev->target->policy);
                fields[n] = f[n], n++;
                if (ev->target->type == ACT_AFFINITY) {
                        snprintf(f[n], sizeof(f[n]), "PID=%d", (int) ev->target->task.pid);
                        fields[n] = f[n], n++;
                }
        }
        log_fields(&m->log, level, fields, "%s", ev->message ? ev->message : applier_event_kind_to_string(ev->kind));
}

/* What the topology could not read, at each (re)load: the daemon runs on what it has. */
static void log_topology_notes(struct manager *m, const struct topology *t) {
        for (int i = 0; i < t->n_notes; i++)
                log_fields(&m->log, LOG_WARNING, NULL, "topology: %s", t->notes[i]);
        if (t->n_notes_dropped > 0)
                log_fields(&m->log, LOG_WARNING, NULL, "topology: %d more file(s) not read", t->n_notes_dropped);
}

/*
 * Measure what co-location buys on this machine (calibrate.h), once at
 * start and again when the CPUs change, or where a free reading came from
 * busy CPUs (check_calibration()). keep_old (that re-measure): one that
 * fails, or is starved, keeps the doubtful one before, on the same CPUs;
 * at start and on hotplug a starved one is kept, to be measured again.
 * Not on a fixture tree (--root): its CPUs are not the ones the threads
 * would run on.
 */
static void calibrate_now(struct manager *m, bool keep_old) {
        struct calibration c;
        char buf[512];
        int r, n = 0;

        if (!util_root_is_real(m->root)) {
                m->calibration = (struct calibration) { .cpu = -1 };
                snprintf(m->calibration.why, sizeof(m->calibration.why), "not the running machine (--root)");
                return;
        }
        r = calibrate(m->topo, &m->topo->self_allowed, &m->calib_pending, &c);
        if (r < 0) {
                log_errno(&m->log, LOG_WARNING, r, "calibrating co-location failed; pairs are placed as the policies say");
                if (!keep_old) {
                        m->calibration = (struct calibration) { .cpu = -1 };
                        snprintf(m->calibration.why, sizeof(m->calibration.why), "failed: %s", strerror(-r));
                }
                return;
        }
        if (!c.done) {
                log_fields(&m->log, LOG_INFO, NULL, "co-location not calibrated: %s", c.why);
                if (!keep_old || !m->calibration.done)
                        m->calibration = c;
                return;
        }
        m->calibration = c;
        for (int i = 0; i < c.n_levels; i++) {
                n += snprintf(buf + n, sizeof(buf) - (size_t) MIN(n, (int) sizeof(buf)), "%s%s %.2fx",
                              i ? ", " : "", calib_level_to_string(c.levels[i].level), c.levels[i].gain);
                if (n >= (int) sizeof(buf))
                        break;
        }
        log_fields(&m->log, LOG_INFO, NULL,
                   "co-location buys on this host: %s (one CPU %.0f round trips/s; %u reading(s), %llu ms)", buf,
                   c.same_per_s, c.readings, (unsigned long long) c.cost_usec / USEC_PER_MSEC);
}

/*
 * A free reading is believed only from quiet CPUs (calibrate.h,
 * CALIB_BUSY_MAX): the first pass window next to a calibration, not
 * overlapping it, says how busy its CPUs were (calibration_step()). One
 * found doubtful, or starved of CPU time, is measured again after a pass
 * whose window found its CPUs quiet, at the end of that pass: its detect
 * and plan have a fresh snapshot, and that quiet window, just before the
 * new measurement, is the new one's check.
 */
static void check_calibration(struct manager *m) {
        const struct snapshot *s = m->snap;
        cpumask_t usable;
        double busy;

        m->calib_again = false;
        if (!s || s->window_usec == 0 || s->timestamp_usec < s->window_usec)
                return;
        usable = topology_usable(m->topo);
        usable = cpumask_and(&usable, &m->topo->self_allowed);
        busy = calibration_cpus_busy(&m->calibration, s->cpus, m->topo->n_cpus, &usable);
        switch (calibration_step(&m->calibration, s->timestamp_usec - s->window_usec, s->timestamp_usec, busy,
                                 m->calib_retry_usec)) {
        case CALIB_STEP_NOTE:
                calibration_note_busy(&m->calibration, busy);
                if (calibration_doubtful(&m->calibration))
                        log_fields(&m->log, LOG_NOTICE, NULL,
                                   "co-location calibrated with its CPUs %.0f %% busy: a level read as free is not "
                                   "believed; measured again when they are quiet", busy * 100);
                break;
        case CALIB_STEP_AGAIN:
                m->calib_again = true;
                m->calib_again_busy = busy;
                break;
        case CALIB_STEP_NONE:
                break;
        }
}

/* The end of a pass that found a doubtful calibration's CPUs quiet. */
static void calibrate_again(struct manager *m) {
        if (!m->calib_again)
                return;
        m->calib_again = false;
        m->calib_retry_usec = util_now_usec() + CALIB_RETRY_USEC;
        calibrate_now(m, true);
        if (!m->calibration.done || m->calibration.busy_known)
                return;
        calibration_note_busy(&m->calibration, m->calib_again_busy);
        if (calibration_reads_free(&m->calibration))
                log_fields(&m->log, LOG_INFO, NULL, "co-location measured again with its CPUs %.0f %% busy: "
                           "a level read as free is believed", m->calib_again_busy * 100);
}

static void check_hotplug(struct manager *m) {
        char online[sizeof(m->topo_online)];
        struct topology *t = NULL;
        int r;

        if (util_read_file_at(m->root, "/sys/devices/system/cpu/online", online, sizeof(online)) < 0)
                return;
        util_strip(online);
        if (streq(online, m->topo_online))
                return;
        r = topology_load(m->root, &t);
        if (r < 0) {
                log_errno(&m->log, LOG_WARNING, r, "CPU hotplug seen, re-reading topology failed");
                return;
        }
        log_fields(&m->log, LOG_NOTICE, NULL, "online CPUs changed: %s → %s", m->topo_online, online);
        log_topology_notes(m, t);
        snprintf(m->topo_online, sizeof(m->topo_online), "%s", online);
        sampler_set_topology(m->sampler, t);
        if (m->wake)
                (void) wake_sampler_set_topology(m->wake, t);
        topology_free(m->topo);
        m->topo = t;
        calibrate_now(m, false);
}

/* Say when another placer comes or goes, and a file it cannot use, once each. */
static void log_coexist(struct manager *m, const struct coexist *now) {
        struct coexist *was = &m->coexist_seen;
        char a[256], b[256];

        if (now->sched_ext != was->sched_ext)
                log_fields(&m->log, LOG_NOTICE, NULL, now->sched_ext ?
                           "sched_ext scheduler %s enabled: affinity changes stop and ours are released" :
                           "sched_ext scheduler %s no longer enabled: affinity planning resumes",
                           now->sched_ext ? (now->sched_ext_ops[0] ? now->sched_ext_ops : "?") :
                                            (was->sched_ext_ops[0] ? was->sched_ext_ops : "?"));
        if (!cpumask_equal(&now->kubelet_exclusive, &was->kubelet_exclusive))
                log_fields(&m->log, LOG_INFO, NULL, "kubelet exclusive CPUs: %s → %s (never a target)",
                           cpumask_format_list(&was->kubelet_exclusive, a, sizeof(a)) ?: "?",
                           cpumask_format_list(&now->kubelet_exclusive, b, sizeof(b)) ?: "?");
        if (now->note[0] && !streq(now->note, was->note))
                log_fields(&m->log, LOG_WARNING, NULL, "coexistence: %s", now->note);
        *was = *now;
}

/*
 * MetricsTextfile=: the metrics (metrics.c) for node_exporter's textfile
 * collector, replaced atomically (a temp file in the same directory, then
 * rename) so that a scrape never reads half a file. A failure is logged
 * once per cause, not each pass, and never stops the daemon.
 */
static void write_metrics(struct manager *m) {
        const char *path = m->config->daemon.metrics_textfile;
        _cleanup_free_ char *tmp = NULL;
        struct json_object *st = NULL, *pairs = NULL, *hogs = NULL;
        FILE *f = NULL;
        int r;

        if (!path[0])
                return;
        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return;
        r = manager_status_json(m, &st);
        if (r >= 0)
                (void) manager_pairs_json(m, &pairs);
        if (r >= 0)
                (void) manager_hogs_json(m, &hogs);
        if (r >= 0) {
                int fd;

                (void) unlink(tmp);   /* a leftover, or anything else put there: never followed */
                fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
                f = fd >= 0 ? fdopen(fd, "w") : NULL;
                if (!f) {
                        r = -errno;
                        if (fd >= 0)
                                close(fd);
                }
        }
        if (f) {
                r = metrics_render(st, pairs, hogs, f);
                if (fclose(f) != 0 && r >= 0)
                        r = -errno;
                if (r >= 0 && rename(tmp, path) < 0)
                        r = -errno;
                if (r < 0)
                        (void) unlink(tmp);
        }
        json_object_put(st);
        json_object_put(pairs);
        json_object_put(hogs);
        if (r < 0 && r != m->metrics_error)
                log_errno(&m->log, LOG_WARNING, r, "cannot write the metrics to %s", path);
        else if (r >= 0 && m->metrics_error)
                log_fields(&m->log, LOG_INFO, NULL, "metrics written to %s again", path);
        m->metrics_error = r < 0 ? r : 0;
}

/* The snapshot of this pass, with its wake-up edges and the other placers seen. */
static int pass_sample(struct manager *m, uint64_t t0) {
        int r;

        r = sampler_sample(m->sampler, t0, &m->snap);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "sampling failed");
        if (m->wake) {
                wake_sampler_set_tasks(m->wake, m->snap->tasks, m->snap->n_tasks);
                (void) wake_sampler_edges(m->wake, t0, &m->snap->edges, &m->snap->n_edges);
                m->snap->wake_source = wake_sampler_source(m->wake);
                m->snap->edges_kept = !wake_sampler_edges_fresh(m->wake);
                /* the pairs' threads: read at the next passes, however little they run */
                sampler_want_threads(m->sampler, m->snap->edges, m->snap->n_edges,
                                     detect_pair_rate_floor(m->config));
        } else
                m->snap->wake_source = m->wake_status;
        log_coexist(m, &m->snap->coexist);
        return 0;
}

/* What we set against what is there now, before anything is decided on it. */
static void pass_review_changes(struct manager *m) {
        const struct managed *managed;
        size_t n_managed;
        int r;

        /* Someone else changed what we set, or the target exited: stop managing it. */
        r = applier_reconcile(m->applier);
        if (r > 0)
                log_fields(&m->log, LOG_NOTICE, NULL,
                           "%d managed target(s) exited or were changed by someone else; no longer managed", r);

        /* under sched_ext this pass releases every affinity change: no verdict on them */
        if (m->snap->coexist.sched_ext)
                effect_forget_affinity(&m->effects);
        effect_check(&m->effects, m->snap, m->config->daemon.effect_tolerance, effect_verdict, m);

        /* Tasks whose mask we set are not "narrowed by someone else". */
        if (applier_list(m->applier, &managed, &n_managed) >= 0)
                for (size_t i = 0; i < n_managed; i++) {
                        struct task *t;
                        if (managed[i].type != ACT_AFFINITY)
                                continue;
                        t = (struct task *) snapshot_find_task(m->snap, managed[i].task.tid);
                        if (t && t->id.start_time == managed[i].task.start_time)
                                t->affinity_ours = true;
                }
}

static int pass_detect(struct manager *m, uint64_t t0) {
        const struct task *want[64];
        size_t n_want;
        int r;

        findings_clear(&m->findings);
        r = detect_all(m->snap, m->config, getpid(), &m->findings);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "detection failed");

        /* Where the memory of pairs about to be placed is (NUMA machines only; bounded, memnode.h). */
        n_want = detect_pair_tasks_to_place(&m->findings, m->snap, want, ELEMENTSOF(want));
        r = memnode_sample_tasks(m->memnodes, m->root, want, n_want, m->snap, t0);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "sampling the pairs' memory nodes failed");
        return 0;
}

/* ret_n_managed: how many changes were in force for the plan. */
static int pass_plan(struct manager *m, uint64_t t0, size_t *ret_n_managed) {
        const struct managed *managed;
        size_t n_managed;
        struct plan_input in;
        int r;

        r = applier_list(m->applier, &managed, &n_managed);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "listing managed targets failed");
        *ret_n_managed = n_managed;
        in = (struct plan_input) {
                .snap = m->snap,
                .config = m->config,
                .findings = &m->findings,
                .managed = managed,
                .n_managed = n_managed,
                .now_usec = t0,
                .self_pid = getpid(),
                .calibration = &m->calibration,
                .dry_run = m->dry_run,
        };
        action_list_clear(&m->actions);
        r = plan_run(m->plan, &in, &m->actions);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "planning failed");
        return 0;
}

static void pass_apply(struct manager *m, uint64_t t0) {
        for (size_t i = 0; i < m->actions.n; i++) {
                const struct action *a = &m->actions.items[i];
                int r;

                r = applier_apply(m->applier, a, t0, m->dry_run);
                log_action(m, a, r, m->dry_run ? "would" : a->verb == VERB_SET ? "set" : "released");
                if (r < 0) {
                        char key[160];
                        if (a->type != ACT_AFFINITY && m->levers && levers_last_error(m->levers))
                                log_fields(&m->log, LOG_WARNING, NULL, "%s", levers_last_error(m->levers));
                        m->actions_failed++;
                        /* A target we cannot change is not retried every interval. */
                        action_target_key(a, key, sizeof(key));
                        (void) plan_state_block(m->plan, key, t0 + m->config->daemon.cooldown_usec,
                                                strerror(-r));
                        continue;
                }
                if (r > 0) {
                        m->actions_applied++;
                        /* released or replaced: a verdict pending on the old change would judge this one */
                        if (a->type == ACT_AFFINITY)
                                effect_forget_task(&m->effects, &a->task);
                        if (a->verb == VERB_RELEASE && a->type == ACT_AFFINITY)
                                effect_gain_forget(&m->effects, &a->task);
                        if (m->config->daemon.effect_check)
                                (void) effect_track(&m->effects, a);
                }
        }
}

/*
 * With --log-level debug, one line a pass: when passes ran is what an
 * early pass or a slow fix is debugged with, and when the pass and the
 * last wake-up burst ran, on the clock a client's trace can use (boot
 * time), is what a client's slow requests are laid against
 * (bench/watch-cost.sh; the early pass's lines say when a pass was
 * planned for on the same clock). t0: when the pass started.
 */
static void log_pass(const struct manager *m, uint64_t t0) {
        uint64_t start, end;
        char burst[64] = "";

        if (wake_sampler_last_burst(m->wake, &start, &end))
                snprintf(burst, sizeof(burst), ", last burst %.6f-%.6f s", util_boottime_s_of(start),
                         util_boottime_s_of(end));
        log_fields(&m->log, LOG_DEBUG, NULL, "pass %" PRIu64 " at %.6f-%.6f s (boot): %zu tasks, %zu edges, "
                   "%zu findings, %zu actions, %" PRIu64 " µs%s",
                   m->passes, util_boottime_s_of(t0), util_boottime_s_of(t0 + m->last_pass_cost_usec),
                   m->snap->n_tasks, m->snap->n_edges, m->findings.n, m->actions.n, m->last_pass_cost_usec, burst);
}

/* The pass's own cost, the daemon's CPU share, and what it tells systemd and
 * the metrics. n_managed: the plan's count, said if listing fails now. */
static void pass_account(struct manager *m, uint64_t t0, size_t n_managed) {
        const struct managed *managed;
        uint64_t cpu_now;

        m->passes++;
        m->last_pass_cost_usec = util_now_usec() - t0;
        if (m->log.max_level >= LOG_DEBUG)
                log_pass(m, t0);

        cpu_now = manager_rusage_cpu_usec();
        if (m->self_wall_prev_usec && t0 > m->self_wall_prev_usec)
                m->self_cpu_frac = (double) (cpu_now - m->self_cpu_prev_usec) /
                                   (double) (t0 - m->self_wall_prev_usec);
        m->self_cpu_prev_usec = cpu_now;
        m->self_wall_prev_usec = t0;

        (void) applier_list(m->applier, &managed, &n_managed);
        sd_notifyf(false, "STATUS=%zu tasks, %zu findings, %zu actions in force%s",
                   m->snap->n_tasks, m->findings.n, n_managed, m->dry_run ? " (dry-run)" : "");
        write_metrics(m);
}

/* One pass: sample, review our changes, detect, plan, apply, account. */
static int manager_pass(struct manager *m) {
        uint64_t t0;
        size_t n_managed = 0;
        int r;

        /* before t0: a window stamped from t0 must not hold a hotplug's probe
         * (calibration_step()) */
        check_hotplug(m);
        t0 = util_now_usec();
        manager_drain_proc_connector(m);
        /* Listen between passes again once an early pass may come: a fresh
         * event then, not one that waited in the socket. */
        if (m->pc_source && t0 >= manager_early_next_allowed(m))
                (void) sd_event_source_set_enabled(m->pc_source, SD_EVENT_ON);

        r = pass_sample(m, t0);
        if (r < 0)
                return r;
        check_calibration(m);
        pass_review_changes(m);
        r = pass_detect(m, t0);
        if (r < 0)
                return r;
        r = pass_plan(m, t0, &n_managed);
        if (r < 0)
                return r;
        pass_apply(m, t0);
        pass_account(m, t0, n_managed);
        calibrate_again(m);
        return 0;
}

/*
 * The pass after one that held a new pair back (plan_recheck_soon()): a
 * window of /proc of the pair's own, for the effect check's "before",
 * without a wake-up burst. The pair was found in the burst before the
 * pass that held it, and its edges are kept; a burst in so short a window
 * would slow the pair for half of it (a burst costs a pair that wakes
 * itself 24 % of its round trips while on), and read its "before" low,
 * a co-location's gain high. At 300 ms with a burst, MariaDB and Redis
 * with one client (closed loop, or MariaDB at 1,000/s) were co-located
 * 0.62 s after the client started, the first pass coming 300 ms after
 * it (early-pass.c); at 200 ms without, 0.51-0.53 s. Not shorter: at
 * 150 ms a stream under stress-ng read 1.27e6 bytes/s in that window
 * where the kernel had it at 1.45-1.66e6 in others, and one CPU's
 * 1.39e6 was kept (1 of 5 runs, bench/pairs-load.sh).
 */
#define RECHECK_SOON_USEC (200 * USEC_PER_MSEC)
/* The passes after an early one: a new process's further looks. */
#define LOOK_USEC (250 * USEC_PER_MSEC)
#define LOOKS 2

/*
 * Time to the next pass: an interval, or less when a new process is still
 * being looked at. A pair held back only until its new member has a window
 * of its own is decided RECHECK_SOON_USEC later, never twice in a row (a
 * machine where processes are born all the time runs at most twice the
 * passes). After an early pass, LOOKS more come LOOK_USEC apart: a
 * client whose start-up outlasts the early pass's 300 ms (sysbench loads
 * its script, connects and prepares first) was found at the next pass and
 * co-located 1.33 s in when that was the regular one. With one look 500 ms
 * later, MariaDB with sysbench --rate=1000 (its threads already there at
 * the early pass, sending only after it) was co-located 0.83 s after the
 * client started, in every run, each request before that at stock's tail;
 * looks every 250 ms find it a quarter of a second sooner, and still cover
 * a start-up as long. Early passes are rate-limited, and so are these.
 */
static uint64_t next_pass_gap(struct manager *m, bool was_early) {
        uint64_t gap = m->interval_usec;

        if (was_early)
                m->looks_left = LOOKS;
        /* not where the interval's own burst would fall in the recheck's window */
        if (plan_recheck_soon(m->plan) && !m->recheck_was_last &&
            gap > RECHECK_SOON_USEC + wake_sampler_burst_lead_usec(m->wake)) {
                m->recheck_was_last = true;
                return RECHECK_SOON_USEC;
        }
        m->recheck_was_last = false;
        if (m->looks_left == 0)
                return gap;
        m->looks_left--;
        return MIN(gap, LOOK_USEC);
}

/*
 * Passes in a row that changed nothing, before the wake-up bursts thin out
 * to one pass in SETTLED_STRIDE (settled_stride()). A burst costs every wake-up on the
 * machine, the daemon's own clients included, and once every pair is
 * placed and every verdict in, a burst a pass only confirms it. Not
 * settled: a pass that planned a change (in --dry-run too, the first time
 * it reports it: dry_run_repeats()), a change waiting for the effect
 * check's verdict, a pair held back for a recheck, a busy thread of a
 * pair whose CPU mask someone changed (wake_sampler_hot_repinned(): an
 * operator who frees one member of a pinned pair leaves the kernel to
 * place it, and under load the kernel split such a pair in quarter-second
 * stretches that one burst does not catch). A new process does not unsettle it: its
 * early pass and looks get their bursts anyway (wake_sampler_expect_call()),
 * and on a machine that starts a process every few seconds (health checks,
 * cron, an operator's affctl) resetting here kept the stride from ever
 * applying. The sampler itself bursts again when /proc shows a thread
 * newly busy, and the pass is then brought forward (on_timer()), so a pair
 * that starts later among existing threads is still found within a look.
 *
 * Settled, the bursts thin out further as the placement holds: the gap
 * between two is half the time it has held so far (bursts 4, 5, 10 and
 * 20 passes apart), up to where they cover at most SETTLED_SAMPLED_SHARE
 * of the time, as a backoff does. A burst delays every wake-up it
 * samples: a Redis client at 2,000 GET/s was answered 1.23 times slower
 * at the median inside a burst than outside (bench/watch-cost.sh: 42 µs
 * against 34), and at one pass in 4 (100 ms of each 4 s) a client at a
 * fixed rate has one request in 40 sampled, more than the one in 100 its
 * p99 is made of; under one in 200, whatever a burst costs on a host, the
 * p99 is made of requests no burst touched. The gap had been 4 passes
 * for the first 30 settled ones: 3.9 % of that client's requests in a
 * 30 s run were in bursts, 3.2 % with the backoff (the rest are bursts
 * that /proc asked for, below; medians of 6 runs side by side).
 * What the long gap delays is only what /proc cannot show: a held pair
 * gone quiet is let go a burst later, within 20 s at the default
 * interval; anything /proc shows (a thread newly busy, a pair's side
 * moved) brings a burst at once (wake-hot.c).
 */
#define SETTLE_PASSES 3
#define SETTLED_STRIDE 4
#define SETTLED_SAMPLED_SHARE (1.0 / 200)

static unsigned settled_stride(const struct manager *m) {
        unsigned longest = MAX(SETTLED_STRIDE, wake_sampler_stride_for_share(m->wake, SETTLED_SAMPLED_SHARE));

        if (m->settled_passes < SETTLE_PASSES)
                return 1;
        return MIN(MAX(m->settled_passes / 2, SETTLED_STRIDE), longest);
}

/*
 * In --dry-run nothing is changed, so a change is planned again each time
 * its cool-down ends (Cooldown=): a change of the same target is news
 * once, whatever its value (the plan picks a pair's CPU by the load it
 * sees then: MariaDB's pair at 1,000/s came back for CPU 0 after CPU 1).
 * Counted as news at every repeat, it held a dry-run daemon's bursts at
 * one pass in SETTLED_STRIDE for as long as the pair lasted, where a
 * daemon that made the change thins out to SETTLED_SAMPLED_SHARE:
 * watching alone cost a fixed-rate client more than acting did. True when
 * every change of this pass was reported before; the new ones are kept.
 */
static bool dry_run_repeats(struct manager *m) {
        bool all = true;

        for (size_t i = 0; i < m->actions.n; i++) {
                uint64_t h = action_target_hash(&m->actions.items[i]);
                bool seen = false;

                for (size_t k = 0; k < m->n_would_seen && !seen; k++)
                        seen = m->would_seen[k] == h;
                if (seen)
                        continue;
                all = false;
                m->would_seen[m->would_seen_next] = h;
                m->would_seen_next = (m->would_seen_next + 1) % ELEMENTSOF(m->would_seen);
                m->n_would_seen = MIN(m->n_would_seen + 1, ELEMENTSOF(m->would_seen));
        }
        return all;
}

static void note_settled(struct manager *m) {
        bool news = m->actions.n > 0 && !(m->dry_run && dry_run_repeats(m));
        bool settled = !news && m->effects.n == 0 && !plan_recheck_soon(m->plan) &&
                       !wake_sampler_hot_repinned(m->wake);

        /* counted up past any stride settled_stride() gives (STRIDE_MAX, 10,000) */
        m->settled_passes = settled ? plan_count_up(m->settled_passes, UINT32_MAX / 2) : 0;
        wake_sampler_set_stride(m->wake, settled_stride(m));
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct manager *m = userdata;
        bool was_early = m->next_pass_early, look;
        uint64_t next, gap;

        m->in_pass = true;
        m->pass_hold_limit = 0;
        m->next_pass_early = false;
        m->passes_early += was_early;
        (void) manager_pass(m);
        m->in_pass = false;
        /* Next pass relative to now: a slow pass must not cause a burst of catch-up passes. */
        gap = next_pass_gap(m, was_early);
        /* asked before note_settled(), which may end the stride the burst
         * was skipped by (a repinned thread): the look is wanted all the same,
         * though not before the recheck pass, which takes no burst */
        look = wake_sampler_burst_wanted(m->wake);
        note_settled(m);
        if (look && !m->recheck_was_last)
                gap = MIN(gap, LOOK_USEC);
        next = util_now_usec() + gap;
        if (m->recheck_was_last)
                wake_sampler_expect_unsampled_call(m->wake);
        else if (gap < m->interval_usec && m->wake)
                wake_sampler_expect_call(m->wake, next);
        (void) sd_event_source_set_time(s, next);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct manager *m = userdata;

        if (si->ssi_signo == SIGHUP) {
                struct json_object *o = NULL;
                (void) manager_reload(m, &o);
                json_object_put(o);
                return 0;
        }
        log_fields(&m->log, LOG_INFO, NULL, "%s received, restoring and exiting",
                   strsignal((int) si->ssi_signo));
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* ---- setup ----------------------------------------------------------- */

/*
 * The perf wake-up source needs tracefs (the tracepoint's id and format).
 * systemd mounts it at boot (sys-kernel-tracing.mount); outside systemd (a
 * container, a minimal init) nothing may have, and the daemon would fall
 * back to the weaker signal on a machine where perf works. So as root,
 * outside systemd, on the real root, it is mounted the way systemd would,
 * said in the log, and left mounted on stop: other tools may use it by then,
 * as they would after boot. Under systemd a missing tracefs is someone's
 * choice (a masked unit) and is left alone.
 */
static void mount_tracefs(struct manager *m) {
        const char *target = "/sys/kernel/tracing";
        int r;

        if (m->opts.no_perf || !m->levers || !streq(m->root, "/") || geteuid() != 0) {
                snprintf(m->tracefs_status, sizeof(m->tracefs_status), "not mounted by affinityd");
                return;
        }
        if (sd_booted() > 0) {
                snprintf(m->tracefs_status, sizeof(m->tracefs_status), "left to systemd");
                return;
        }
        r = levers_mount(m->levers, "tracefs", target);
        if (r > 0) {
                snprintf(m->tracefs_status, sizeof(m->tracefs_status),
                         "mounted by affinityd on %s (not booted with systemd)", target);
                log_fields(&m->log, LOG_NOTICE, NULL,
                           "mounted tracefs on %s, as systemd does at boot (not booted with systemd; "
                           "the perf wake-up source needs it); it stays mounted on stop", target);
        } else if (r < 0) {
                snprintf(m->tracefs_status, sizeof(m->tracefs_status), "cannot mount on %s: %s", target,
                         strerror(-r));
                log_errno(&m->log, LOG_WARNING, r, "cannot mount tracefs on %s; wake-ups from the fallback",
                          target);
        } else
                snprintf(m->tracefs_status, sizeof(m->tracefs_status), "mounted");
}

static int setup_runtime_dir(struct manager *m) {
        if (mkdir(m->runtime_dir, 0755) < 0 && errno != EEXIST)
                return log_errno(&m->log, LOG_ERR, errno, "cannot create %s", m->runtime_dir);
        return 0;
}

/*
 * The instance before us ran with another runtime dir and did not stop
 * cleanly (its journal is still there): restore from that journal too, or
 * its changes would stay in force with nobody knowing their originals.
 * Returns its applier, recovered, for adopt_previous(); NULL without one.
 */
static struct applier *recover_previous(struct manager *m) {
        _cleanup_free_ char *path = NULL;
        struct applier *old = NULL;
        int r;

        if (!m->prev_runtime_dir[0] || asprintf(&path, "%s/" JOURNAL_FILE, m->prev_runtime_dir) < 0)
                return NULL;
        if (access(path, F_OK) < 0) {
                /* removed with its dir (it stopped, and someone cleaned up),
                 * or out of our sight (a unit's PrivateTmp=, another mount
                 * namespace): either way nothing here can restore from it */
                log_errno(&m->log, errno == ENOENT ? LOG_NOTICE : LOG_WARNING, errno,
                          "the previous instance ran with runtime dir %s; its journal %s cannot be read, "
                          "so any change it left in force stays", m->prev_runtime_dir, path);
                return NULL;
        }
        r = applier_new(m->prev_runtime_dir, &apply_ops_system, &m->sys, &old);
        if (r < 0) {
                log_errno(&m->log, LOG_WARNING, r, "the previous instance's journal %s cannot be opened; its changes "
                          "may still be in force", path);
                return NULL;
        }
        applier_set_event_handler(old, on_applier_event, m);
        r = applier_recover(old);
        if (r < 0) {
                log_errno(&m->log, LOG_WARNING, r, "cannot recover the previous instance's journal %s", path);
                return applier_free(old);
        }
        log_fields(&m->log, LOG_NOTICE, NULL, "the previous instance ran with runtime dir %s: %s",
                   m->prev_runtime_dir, applier_get_recover_report(old)->message);
        return old;
}

/*
 * What the previous instance's recovery could not restore becomes ours
 * (applier_adopt()): retried on our stop, and in our journal for our
 * successor, where the lock, which names our runtime dir from now on,
 * would have let it be forgotten.
 */
static void adopt_previous(struct manager *m, struct applier *old) {
        int r = applier_adopt(m->applier, old);

        if (r > 0)
                log_fields(&m->log, LOG_NOTICE, NULL, "%d change(s) the previous instance left in force and "
                           "could not be restored now are in our journal, retried on stop", r);
        else if (r < 0)
                log_errno(&m->log, LOG_WARNING, r, "cannot take over what the previous instance's journal in %s "
                          "still holds; it stays there", m->prev_runtime_dir);
        applier_free(old);
}

/* The options, with the strings they point to owned by the manager. */
static int setup_options(struct manager *m, const struct manager_options *o) {
        sigset_t ss;

        /* Blocked first: sd-event takes them only blocked, and a stop that
         * comes while a crash's journal is restored (up to 90 s waiting on
         * systemd for a weight) must wait for it, not cut it short. */
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        m->opts = *o;
        m->instance_fd = -1;
        log_target_init(&m->log, o->log_level >= 0 ? o->log_level : LOG_INFO);
        m->root = strdup(o->root ? o->root : "/");
        m->runtime_dir = strdup(o->runtime_dir ? o->runtime_dir : AFF_RUNTIME_DIR);
        m->config_dirs = o->config_dirs ? strv_copy(o->config_dirs) : NULL;
        if (!m->root || !m->runtime_dir || (o->config_dirs && !m->config_dirs))
                return -ENOMEM;
        m->opts.root = m->root;
        m->opts.runtime_dir = m->runtime_dir;
        m->opts.config_dirs = m->config_dirs;
        m->start_usec = util_now_usec();
        return 0;
}

/*
 * The configuration; one that is not valid, or that asks for a lever this
 * kernel lacks, stops the start. It is read after the journals are
 * recovered: a start that a bad file stops (exit 78, never restarted) must
 * not leave a crashed run's changes in force.
 */
static int setup_config(struct manager *m) {
        struct config_errors errs = {};
        struct config_paths paths;
        int r;

        config_paths_from(m->config_dirs, &paths);
        r = config_load(&paths, &m->config, &errs);
        if (r < 0) {
                log_config_errors(m, &errs);
                config_errors_clear(&errs);
                return log_errno(&m->log, LOG_ERR, r, "configuration is not valid, not starting");
        }
        if (levers_check_config(m->levers, m->config, &errs) > 0) {
                log_config_errors(m, &errs);
                config_errors_clear(&errs);
                return log_errno(&m->log, LOG_ERR, EINVAL, "configuration does not fit this kernel, not starting");
        }
        apply_settings(m);
        check_nothing_to_do(m);
        return 0;
}

/* The machine-wide instance lock: a second instance does not start. */
static int setup_instance_lock(struct manager *m) {
        char msg[512];
        int r;

        r = instance_lock(m->root, m->runtime_dir, INSTANCE_WAIT_USEC, msg, sizeof(msg), m->prev_runtime_dir,
                          sizeof(m->prev_runtime_dir));
        if (r == -ENOENT) {
                /* no <root>/run: a fixture tree, or a very bare container */
                log_fields(&m->log, streq(m->root, "/") ? LOG_WARNING : LOG_DEBUG, NULL,
                           "%s: not guarding against a second instance", msg);
                return 0;
        }
        if (r < 0) {
                log_fields(&m->log, LOG_ERR, NULL, "%s; not starting", msg);
                return r;
        }
        m->instance_fd = r;
        return 0;
}

/* The event loop, its signals and the watchdog. */
static int setup_event_loop(struct manager *m) {
        int r;

        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        /*
         * A write to a pipe whose reader is gone must fail with EPIPE, not
         * kill the daemon: the calibration's echo thread, starved on a CPU
         * a pinned pair fills, answers after its probe gave up (-ETIME) and
         * closed the read end. systemd ignores SIGPIPE for a service
         * (IgnoreSIGPIPE=yes); a container's or a shell's start does not,
         * and the daemon died silently there after "running" (the container
         * test, twice).
         */
        if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
                return -errno;
        if ((r = sd_event_add_signal(m->event, &m->sig_term, SIGTERM, on_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, &m->sig_int, SIGINT, on_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, &m->sig_hup, SIGHUP, on_signal, m)) < 0)
                return r;
        /* WATCHDOG=1 at half of WatchdogSec=, when systemd asked for it. */
        (void) sd_event_set_watchdog(m->event, true);
        return 0;
}

/* The topology and the samplers of /proc and of memory nodes. */
static int setup_sampling(struct manager *m) {
        int r;

        r = topology_load(m->root, &m->topo);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "cannot read the CPU topology below %s", m->root);
        log_topology_notes(m, m->topo);
        (void) util_read_file_at(m->root, "/sys/devices/system/cpu/online", m->topo_online,
                                 sizeof(m->topo_online));
        util_strip(m->topo_online);

        calibrate_now(m, false);
        r = sampler_new(m->root, m->topo, m->config->daemon.max_tracked_threads, &m->sampler);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "cannot set up sampling");
        sampler_set_pair_floor(m->sampler, detect_pair_rate_floor(m->config));
        r = memnode_memo_new(&m->memnodes);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "cannot set up sampling");
        return 0;
}

/* The system levers (optional): what this kernel lets us change. */
static void setup_levers(struct manager *m) {
        int r;

        r = levers_open(m->root, &m->caps, &m->levers);
        if (r < 0)
                log_errno(&m->log, LOG_WARNING, r, "system levers unavailable");
        m->sys = (struct apply_system) { .root = m->root, .levers = m->levers };
}

/* How long a restore may take: one wait for systemd's reload (90 s,
 * levers-cgroup.c) and the rest of the restores. More than a start's or a
 * stop's timeout, and a restore cut short by SIGKILL leaves changes in force. */
#define MANAGER_RESTORE_MAX_USEC (120 * USEC_PER_SEC)

/* The applier and its journal: a journal left by a crash (ours, or the
 * previous instance's elsewhere) is put back before anything new. */
static int setup_applier(struct manager *m) {
        struct applier *old;
        int r;

        r = applier_new(m->runtime_dir, &apply_ops_system, &m->sys, &m->applier);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "cannot open the journal in %s", m->runtime_dir);
        applier_set_event_handler(m->applier, on_applier_event, m);
        /* a crashed run's journals are restored before READY=1, each of
         * them perhaps waiting on systemd: the start's timeout extended
         * before each */
        sd_notifyf(false, "STATUS=recovering\nEXTEND_TIMEOUT_USEC=%" PRIu64, (uint64_t) MANAGER_RESTORE_MAX_USEC);
        old = recover_previous(m);
        sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%" PRIu64, (uint64_t) MANAGER_RESTORE_MAX_USEC);
        r = applier_recover(m->applier);
        if (r == -EPROTONOSUPPORT || r == -EBADMSG)
                /* Moved aside, a fresh journal started: nothing was touched. */
                log_fields(&m->log, LOG_ERR, NULL, "%s", applier_get_recover_report(m->applier)->message);
        else if (r < 0) {
                /* Without a writable journal nothing could be undone safely: do not start. */
                applier_free(old);
                return log_errno(&m->log, LOG_ERR, r, "cannot recover the journal in %s", m->runtime_dir);
        } else if (applier_get_recover_report(m->applier)->entries > 0)
                log_fields(&m->log, LOG_NOTICE, NULL, "%s", applier_get_recover_report(m->applier)->message);
        if (old)
                adopt_previous(m, old);
        return 0;
}

/* New processes are seen at once; without the connector the periodic scan finds them. */
static void setup_proc_connector(struct manager *m) {
        int r;

        r = proc_connector_new(&m->pc);
        if (r >= 0)
                r = sd_event_add_io(m->event, &m->pc_source, proc_connector_fd(m->pc), EPOLLIN,
                                    manager_on_proc_connector, m);
        if (r < 0) {
                snprintf(m->pc_status, sizeof(m->pc_status), "unavailable: %s; periodic scan only",
                         strerror(-r));
                log_errno(&m->log, LOG_NOTICE, r, "proc connector unavailable, using periodic scans only");
                return;
        }
        snprintf(m->pc_status, sizeof(m->pc_status), "listening");
        /* fork notes find new processes: /proc is listed only every DEFAULT_LIST_PROC_EVERY
         * (60) passes (sample.c) */
        sampler_set_process_events(m->sampler, true);
}

/* The wake-up sampler. Never fails for lack of perf: it falls back and
 * says why in its status; without any source, pairs are not seen. */
static void setup_wake_sampler(struct manager *m) {
        int r;

        mount_tracefs(m);
        r = wake_sampler_new(m->root, m->topo, m->config->daemon.wake_sample_period,
                             m->config->daemon.max_wake_events_per_s, &m->wake);
        if (r >= 0 && m->opts.no_perf)
                r = wake_sampler_disable_perf(m->wake, "disabled by --no-perf");
        if (r >= 0) {
                wake_sampler_set_floor(m->wake, detect_pair_rate_floor(m->config));
                r = wake_sampler_attach(m->wake, m->event);
        }
        if (r < 0) {
                snprintf(m->wake_status, sizeof(m->wake_status), "none: %s", strerror(-r));
                log_errno(&m->log, LOG_WARNING, r, "wake-up sampling unavailable");
                m->wake = wake_sampler_free(m->wake);
        } else if (strncmp(wake_sampler_source(m->wake), "perf", 4) != 0)
                log_fields(&m->log, LOG_NOTICE, NULL, "wake-up source: %s", wake_sampler_source(m->wake));
}

/*
 * The first pass before the socket exists, so that the first answer to
 * `affctl status` (and READY=1) has a snapshot. As a timer due "now" it
 * raced the first connection: sd-event may fire a timer up to its
 * accuracy late, and a status in that window had no coexistence, no tasks
 * (seen once in CI: daemon-coexist.sh read nulls right after the socket
 * came up).
 */
static void first_pass(struct manager *m) {
        sigset_t pending;

        /* A stop that came during the lock's wait or the recovery: the
         * loop takes it first, and a pass now would change what the stop
         * then has to undo. */
        if (sigpending(&pending) == 0 && (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1))
                return;
        m->in_pass = true;
        (void) manager_pass(m);
        m->in_pass = false;
}

/* What affctl's methods call: the reports (manager-reports.c) and the changes. */
static const struct bus_methods manager_bus_methods = {
        .status = manager_status_json,
        .tasks = manager_tasks_json,
        .actions = manager_actions_json,
        .explain = manager_explain_json,
        .pairs = manager_pairs_json,
        .hogs = manager_hogs_json,
        .reload = manager_reload,
        .revert = manager_revert,
        .set_dry_run = manager_set_dry_run,
};

/* The control socket (and the system bus name, when there is a bus). */
static int setup_bus(struct manager *m) {
        int r;

        r = bus_server_new(&manager_bus_methods, m, m->event, &m->log, m->runtime_dir, &m->bus);
        if (r < 0)
                return log_errno(&m->log, LOG_ERR, r, "cannot listen on %s/%s", m->runtime_dir, AFF_BUS_SOCKET);
        r = bus_server_attach_system(m->bus);
        if (r < 0)
                snprintf(m->bus_status, sizeof(m->bus_status), "private socket only (system bus: %s)",
                         strerror(-r));
        else
                snprintf(m->bus_status, sizeof(m->bus_status), "private socket + system bus name %s",
                         AFF_BUS_NAME);
        return 0;
}

/* The second pass an interval after the first (first_pass()), then every interval. */
static int setup_timer(struct manager *m) {
        int r;

        r = sd_event_add_time(m->event, &m->timer, CLOCK_MONOTONIC, util_now_usec() + m->interval_usec,
                              10 * USEC_PER_MSEC, on_timer, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(m->timer, SD_EVENT_ON);
        return 0;
}

/*
 * The daemon's setup, as steps in an order that matters:
 *  - the instance lock first, before the runtime dir and its journal: a
 *    second instance must not restore, or even tidy, anything;
 *  - the levers before the applier (its system ops use them), and the
 *    journals recovered before the configuration is read: a start that an
 *    invalid file stops (exit 78, not restarted) still puts back what a
 *    crashed run left in force; and before the first pass changes anything;
 *  - the first pass before the socket, so the first status has a snapshot;
 *  - the timer last: the second pass an interval after the first.
 */
int manager_new(const struct manager_options *o, struct manager **ret) {
        struct manager *m;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        r = setup_options(m, o);
        if (r >= 0)
                r = setup_instance_lock(m);
        if (r >= 0)
                r = setup_runtime_dir(m);
        if (r >= 0) {
                setup_levers(m);
                r = setup_applier(m);
        }
        if (r >= 0)
                r = setup_config(m);
        if (r >= 0)
                r = setup_event_loop(m);
        if (r >= 0)
                r = setup_sampling(m);
        if (r >= 0) {
                m->plan = plan_state_new();
                r = m->plan ? 0 : -ENOMEM;
        }
        if (r >= 0) {
                setup_proc_connector(m);
                setup_wake_sampler(m);
                first_pass(m);
                r = setup_bus(m);
        }
        if (r >= 0)
                r = setup_timer(m);
        if (r < 0) {
                /* the first pass may have changed things: a daemon that
                 * does not start leaves nothing behind (-ESTALE, ignored,
                 * when recovery never ran) */
                if (m->applier)
                        (void) applier_restore_all(m->applier);
                manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

int manager_run(struct manager *m) {
        int r;

        sd_notifyf(false, "READY=1\nSTATUS=running, interval %" PRIu64 " ms%s",
                   m->interval_usec / USEC_PER_MSEC, m->dry_run ? ", dry-run" : "");
        log_fields(&m->log, LOG_INFO, NULL, "running: interval %" PRIu64 " ms, %zu policies%s",
                   m->interval_usec / USEC_PER_MSEC, m->config->n_policies,
                   m->dry_run ? ", dry-run" : "");
        r = sd_event_loop(m->event);
        sd_notifyf(false, "STOPPING=1\nSTATUS=restoring\nEXTEND_TIMEOUT_USEC=%" PRIu64,
                   (uint64_t) MANAGER_RESTORE_MAX_USEC);
        int k = applier_restore_all(m->applier);
        if (k < 0) {
                /* not a clean stop: the journal keeps what is still in
                 * force, for the next start to restore */
                log_errno(&m->log, LOG_ERR, k, "restoring changes on stop failed");
                return r < 0 ? r : k;
        }
        log_fields(&m->log, LOG_INFO, NULL, "restored %d change(s) on stop", k);
        if (m->instance_fd >= 0)
                (void) instance_forget(m->instance_fd);
        return r;
}

struct manager *manager_free(struct manager *m) {
        if (!m)
                return NULL;
        bus_server_free(m->bus);
        sd_event_source_disable_unref(m->timer);
        sd_event_source_disable_unref(m->pc_rearm);
        sd_event_source_disable_unref(m->early_check);
        sd_event_source_disable_unref(m->sig_term);
        sd_event_source_disable_unref(m->sig_int);
        sd_event_source_disable_unref(m->sig_hup);
        sd_event_source_disable_unref(m->pc_source);
        wake_sampler_free(m->wake);
        proc_connector_free(m->pc);
        applier_free(m->applier);
        levers_free(m->levers);
        plan_state_free(m->plan);
        sampler_free(m->sampler);
        memnode_memo_free(m->memnodes);
        calib_job_unref(m->calib_pending);
        topology_free(m->topo);
        findings_clear(&m->findings);
        action_list_clear(&m->actions);
        effect_tracker_clear(&m->effects);
        config_free(m->config);
        sd_event_unref(m->event);
        strv_free(m->config_dirs);
        free(m->root);
        free(m->runtime_dir);
        /* last: the next instance may start once everything of ours is put back */
        if (m->instance_fd >= 0)
                close(m->instance_fd);
        free(m);
        return NULL;
}

/* A reply to affctl: o if every key went in (r >= 0), else freed and r. */
static int reply(struct json_object *o, int r, struct json_object **ret) {
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

int manager_reload(struct manager *m, struct json_object **ret) {
        struct config_errors errs = {};
        struct config_paths paths;
        struct config *c = NULL;
        struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
        int r, k;

        if (!o || !arr) {
                json_object_put(o);
                json_object_put(arr);
                return -ENOMEM;
        }
        config_paths_from(m->config_dirs, &paths);
        r = config_load(&paths, &c, &errs);
        if (r >= 0 && m->levers) {
                (void) levers_probe(m->levers, &m->caps);
                if (levers_check_config(m->levers, c, &errs) > 0) {
                        c = config_free(c);
                        r = -EINVAL;
                }
        }
        for (size_t i = 0; i < errs.n; i++)
                json_object_array_add(arr, json_object_new_string(errs.items[i].message));
        if (r < 0) {
                /* Keep running on the last good configuration. */
                log_config_errors(m, &errs);
                log_fields(&m->log, LOG_ERR, NULL, "reload failed (%zu error(s)); keeping the running configuration",
                           errs.n);
                if (errs.n == 0)
                        json_object_array_add(arr, json_object_new_string(strerror(-r)));
        } else {
                /* the last pass's findings point at the old policies, and
                 * affctl reads them until the next pass (explain, hogs,
                 * pairs): their readers show no policy for NULL */
                for (size_t i = 0; i < m->findings.n; i++)
                        m->findings.items[i].policy = NULL;
                config_free(m->config);
                m->config = c;
                apply_settings(m);
                if (m->sampler) {
                        sampler_set_max_threads(m->sampler, c->daemon.max_tracked_threads);
                        sampler_set_pair_floor(m->sampler, detect_pair_rate_floor(c));
                }
                if (m->wake) {
                        (void) wake_sampler_set_limits(m->wake, c->daemon.wake_sample_period,
                                                       c->daemon.max_wake_events_per_s);
                        wake_sampler_set_floor(m->wake, detect_pair_rate_floor(c));
                }
                log_fields(&m->log, LOG_INFO, NULL, "configuration reloaded: %zu policies", c->n_policies);
                m->n_would_seen = m->would_seen_next = 0;   /* new policies: what it reported is news again */
                check_nothing_to_do(m);
                release_orphans(m);
        }
        config_errors_clear(&errs);
        k = json_add(o, "ok", json_object_new_boolean(r >= 0));
        if (k >= 0)
                k = json_add(o, "errors", TAKE_PTR(arr));
        json_object_put(arr);   /* NULL once added */
        if (k >= 0 && r >= 0)
                k = json_add(o, AFF_RELOAD_POLICIES, json_object_new_int((int) m->config->n_policies));
        return reply(o, k, ret);
}

int manager_revert(struct manager *m, pid_t pid, struct json_object **ret) {
        struct json_object *o = json_object_new_object();
        int r = pid == 0 ? applier_restore_all(m->applier) : applier_restore_pid(m->applier, pid);
        int k = o ? 0 : -ENOMEM;

        k = k ?: json_add(o, "ok", json_object_new_boolean(r >= 0));
        k = k ?: json_add(o, "reverted", json_object_new_int(r >= 0 ? r : 0));
        if (r < 0)
                k = k ?: json_add(o, "error", json_object_new_string(strerror(-r)));
        log_fields(&m->log, LOG_NOTICE, NULL, "revert %s requested: %d change(s) undone",
                   pid == 0 ? "of everything" : "of one process", r >= 0 ? r : 0);
        return reply(o, k, ret);
}

int manager_set_dry_run(struct manager *m, bool on, struct json_object **ret) {
        struct json_object *o = json_object_new_object();
        int k;

        /* Entering dry-run keeps what is in force; it only stops new changes.
         * `affctl revert --all` is the way to undo. */
        m->dry_run = on;
        m->opts.dry_run = on;
        m->n_would_seen = m->would_seen_next = 0;   /* what it reported is news again */
        log_fields(&m->log, LOG_NOTICE, NULL, "dry-run %s", on ? "on" : "off");
        k = o ? 0 : -ENOMEM;
        k = k ?: json_add(o, "ok", json_object_new_boolean(true));
        k = k ?: json_add(o, "dry_run", json_object_new_boolean(on));
        return reply(o, k, ret);
}
