/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The apply stage: the only code that changes the system.
 *
 * Every change goes through struct applier:
 *   1. read the current (original) value through the ops table; if it
 *      already is the target, do nothing;
 *   2. append a BEGIN record to the journal (journal.h; write-ahead,
 *      fdatasync'ed) with the original, the target's identity, the policy
 *      and the reason;
 *   3. apply through the ops table;
 *   4. append APPLIED.
 * A release first checks that the live value is still the one we set: if
 * someone else changed it since (a user ran taskset), it is left as they
 * set it and the target is no longer managed. Otherwise the original is
 * put back and RELEASED appended. Stop restores in reverse order. On
 * start, a journal left by a crash is replayed to restore.
 *
 * The ops table is what tests replace with a recorder; the real ops are
 * apply_ops_system (affinity through a pidfd + start-time check; cgroup
 * weight, sched_features and sysctls through levers.h).
 *
 * Lifecycle for the manager:
 *
 *   applier_new(runtime_dir, &apply_ops_system, &sys, &a)   at start
 *   applier_set_event_handler(a, log_fn, m)                  to log events
 *   applier_recover(a) + applier_get_recover_report(a)       once, before anything else
 *   every interval:
 *     applier_reconcile(a)           forget exited targets, respect foreign changes
 *     applier_list(a, &managed, &n)  → plan_input.managed
 *     applier_apply(a, act, now, dry_run) for each planned action
 *     effect check (effect.h) → on EFFECT_UNDO: applier_apply(RELEASE) + plan_state_block()
 *   affctl revert PID / --all: applier_restore_pid / applier_restore_all
 *   affctl actions: applier_to_json
 *   SIGTERM: applier_restore_all(a), then applier_free(a)
 *
 * applier_free() does NOT restore: a daemon that stops without calling
 * applier_restore_all() leaves the journal behind and the next start
 * restores from it, like after a crash.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "apply/action.h"
#include "apply/levers.h"

struct json_object;

/*
 * Error contract of the ops (and so of applier_apply):
 *   -ESRCH   the task exited, or its TID now names another task (start
 *            time differs): nothing was changed on anyone;
 *   -EPERM   refused: a kernel thread, the daemon itself, or no privilege;
 *   -EINVAL  the mask is not within the task's cpuset-allowed online CPUs
 *            (the kernel would narrow it or refuse), or a bad value;
 *   -ENOENT  cgroup / feature / sysctl does not exist;
 *   other    as the backend reports (-EIO, -EROFS, -EOPNOTSUPP, ...).
 */
struct apply_ops {
        /* affinity of one thread; must fail with -ESRCH if id no longer names the same thread */
        int (*affinity_get)(void *userdata, const struct task_id *id, cpumask_t *ret);
        int (*affinity_set)(void *userdata, const struct task_id *id, const cpumask_t *mask);
        /* optional: the CPUs the thread may use now (cpuset ∩ online). A restore
         * whose original no longer fits (a CPU went offline) is narrowed to it,
         * as the kernel would, rather than leaving the task pinned. */
        int (*affinity_allowed)(void *userdata, const struct task_id *id, cpumask_t *ret);
        /* cgroup CPU weight on the v2 scale (1..10000); v1 backends convert cpu.shares */
        int (*weight_get)(void *userdata, const char *cgroup, uint64_t *ret);
        int (*weight_set)(void *userdata, const char *cgroup, uint64_t weight);
        /*
         * Optional, cgroup weight only. weight_prepare is called before the
         * BEGIN record of a new weight change (not for a managed cgroup whose
         * target changes):
         *   ret_parents: strv (may be NULL/empty) of the ancestors, top down,
         *       whose cgroup.subtree_control must hand "cpu" down before
         *       weight_set can write this cgroup's weight. The applier enables
         *       each through subtree_set as its own journaled change
         *       (ACT_CGROUP_SUBTREE) before the weight, so that a stop, a
         *       revert or a replay takes it back (newest first: after the
         *       weight). weight_set itself must then not enable anything.
         *   ret_restore: one line (may be "") the backend needs to undo the
         *       change exactly, journaled with it ("restore") and handed back
         *       to weight_recall/weight_restore: e.g. the unit property and
         *       drop-in of a weight set through systemd, the exact cgroup v1
         *       cpu.shares.
         * weight_recall is called at replay for each weight entry before any
         * restore (a v1 backend relearns which cpu.shares are ours);
         * weight_restore (else weight_set) puts the original back.
         */
        int (*weight_prepare)(void *userdata, const char *cgroup, uint64_t weight, char ***ret_parents,
                              char *ret_restore, size_t restore_size);
        int (*weight_recall)(void *userdata, const char *cgroup, const char *restore);
        int (*weight_restore)(void *userdata, const char *cgroup, uint64_t weight, const char *restore);
        /*
         * cgroup v2: "cpu" in cgroup's cgroup.subtree_control. Disabling must
         * refuse with -EBUSY when someone depends on it now (a child hands cpu
         * further down, or has a non-default cpu.weight/cpu.max; the kernel's
         * own EBUSY): the applier then leaves it and says why (last_error).
         */
        int (*subtree_get)(void *userdata, const char *cgroup, bool *ret_enabled);
        int (*subtree_set)(void *userdata, const char *cgroup, bool enable);
        /* optional: one line naming the cause of the last failure, and how
         * the last weight change or restore went (systemd, drop-in removed,
         * exact cpu.shares), for event messages */
        const char *(*last_error)(void *userdata);
        const char *(*last_detail)(void *userdata);
        /* optional: after a batch of restores (stop, revert, replay, one
         * apply), finish what the backend deferred (systemd: one reload for
         * the drop-ins weight_restore removed). */
        int (*flush)(void *userdata);
        /* one sched_features name */
        int (*feature_get)(void *userdata, const char *name, bool *ret_enabled);
        int (*feature_set)(void *userdata, const char *name, bool enable);
        /* sysctl "kernel.x" or debugfs tunable "debug:migration_cost_ns" */
        int (*sysctl_get)(void *userdata, const char *name, char *buf, size_t size);
        int (*sysctl_set)(void *userdata, const char *name, const char *value);
        /* this boot's id (/proc/sys/kernel/random/boot_id): a journal from
         * another boot describes kernel state that no longer exists */
        int (*boot_id)(void *userdata, char *buf, size_t size);
};

/* Real ops; userdata is a struct apply_system. */
struct apply_system {
        const char *root;              /* prefix for /proc and /sys */
        struct levers *levers;         /* levers.h backends for weight/features/sysctls; may be NULL (-EOPNOTSUPP) */
        bool no_thread_pidfd;          /* tests: guard as on kernels < 6.9 (process pidfd + start time) */
};
extern const struct apply_ops apply_ops_system;

/* The cpuset-allowed online CPUs of a thread (cpuset v1 effective_cpus or
 * v2 cpuset.cpus.effective, else the online CPUs). Used by affinity_set. */
int apply_system_allowed_cpus(const char *root, pid_t tid, cpumask_t *ret);

struct applier;

int applier_new(const char *runtime_dir, const struct apply_ops *ops, void *userdata,
                struct applier **ret);
struct applier *applier_free(struct applier *a);

/* ---- events, for the log (the applier itself never logs) ---- */

enum applier_event_kind {
        APPLIER_EVENT_SET,        /* changed a value (journal BEGIN + APPLIED) */
        APPLIER_EVENT_RESTORED,   /* put the original back */
        APPLIER_EVENT_FOREIGN,    /* someone else changed the value since (or, for a subtree_control
                                   * change, depends on it now): left as is, no longer managed */
        APPLIER_EVENT_GONE,       /* target exited or its PID was reused: forgotten, nothing touched */
        APPLIER_EVENT_FAILED,     /* a set or restore failed (error) */
        APPLIER_EVENT_JOURNAL,    /* journal trouble: torn/unknown records, write error, moved aside */
};

struct applier_event {
        enum applier_event_kind kind;
        const struct managed *target;   /* NULL for APPLIER_EVENT_JOURNAL */
        int error;                      /* -errno for FAILED / JOURNAL, else 0 */
        const char *message;            /* one line, e.g. "pinned tid 1234 (hog) 0-1 -> 0" */
};

typedef void (*applier_event_fn)(const struct applier_event *ev, void *userdata);
void applier_set_event_handler(struct applier *a, applier_event_fn fn, void *userdata);
const char *applier_event_kind_to_string(enum applier_event_kind k);

/* ---- start: crash recovery ---- */

struct applier_recover_report {
        unsigned entries;        /* unreleased entries found in the journal */
        unsigned restored;       /* original put back */
        unsigned unchanged;      /* live value already the original: nothing to do */
        unsigned foreign;        /* changed by someone else since: left alone */
        unsigned gone;           /* target exited / PID reused: not touched */
        unsigned failed;         /* restore failed: kept, managed, retried on stop */
        unsigned stale_boot;     /* entries from another boot: dropped unread */
        unsigned torn, corrupt, unknown;  /* journal lines ignored (see journal.h) */
        char moved_aside[512];   /* "" or where an unusable journal was moved */
        char message[1024];      /* one-line summary for the log */
};

/*
 * Replay a journal left by a crash (or by a stop that did not restore):
 * for every entry BEGIN'd and not RELEASED, newest first, restore the
 * original if the live value is still what we set (or, for a BEGIN
 * without APPLIED, leave it if it is still the original); a target that
 * exited or whose PID now names another task is never touched; a value
 * someone else changed is left alone. Then the journal is rewritten with
 * only what could not be restored (those stay managed and are retried on
 * stop). Must be called once after applier_new() and before anything
 * else; applier_apply() and friends return -ESTALE until it succeeded.
 *
 * Returns the number of values restored (>= 0), or:
 *   -EPROTONOSUPPORT  journal of another version: moved aside (see the
 *                     report), nothing restored from it;
 *   -EBADMSG          not a journal: likewise moved aside;
 * in both cases a fresh journal was started and the applier is usable:
 * log the report's message at error level and carry on. Any other
 * -errno: the journal cannot be written, so nothing could be undone
 * safely; the applier stays unusable (-ESTALE) — treat it as fatal.
 * -EALREADY if called twice.
 */
int applier_recover(struct applier *a);

/* What the last applier_recover() found and did (zeroes before it ran). */
const struct applier_recover_report *applier_get_recover_report(struct applier *a);

/*
 * Take over what another applier still holds after its recovery (a
 * predecessor's journal, in the runtime dir it ran with): its entries
 * become ours, in our journal, and its journal is emptied. What could not
 * be restored at start is then retried on our stop and, after a crash of
 * ours, found by our successor in our journal (the instance lock names one
 * runtime dir). For a target we hold too, ours keeps its original and
 * takes their later value as the one in force. Both must be recovered.
 * Returns how many entries were added (>= 0), or -errno with ours as they
 * were (their journal untouched; ours may hold them too, if its rewrite
 * failed only after it landed: restored twice, the second finds the
 * original).
 */
int applier_adopt(struct applier *a, struct applier *from);

/* ---- changing things ---- */

/* What applier_apply_full() did, in more detail than its return value. */
enum apply_result {
        APPLY_NOTHING = 0,   /* already as wanted, not managed, or dry run */
        APPLY_CHANGED = 1,   /* the system was changed (set or restored) */
        APPLY_FOREIGN = 2,   /* someone else changed it since we set it: left alone, no longer managed */
        APPLY_GONE = 3,      /* the target exited (or its PID was reused): forgotten, nothing touched */
};

struct apply_outcome {
        enum apply_result result;
        char key[128];
        char before[64];     /* live value found ("" if unknown) */
        char after[64];      /* value set / that would be set / restored */
        char message[512];   /* "would set affinity of pid 1234: 0-1 -> 0", "... changed by someone else to 1: left alone" */
};

/*
 * Carry out one action.
 *
 * SET: if the live value already equals the target, nothing. If the
 * target is already managed (a pinned hog moved to another CPU) the
 * recorded original is kept and only the target changes — unless the live
 * value is no longer ours: then it is someone else's, left alone and no
 * longer managed (APPLY_FOREIGN). A SET back to the recorded original is
 * a release.
 * RELEASE: restore the original if the live value is still ours; if
 * someone else changed it, leave it (APPLY_FOREIGN); if the target
 * exited, forget it (APPLY_GONE); nothing if the target is not managed.
 *
 * dry_run: change nothing, record nothing (works before recovery too);
 * reads the live value to say what would happen; returns 0.
 *
 * Returns 1 if the system was changed, 0 if not (nothing to do, dry run,
 * foreign, gone), -errno on failure (see struct apply_ops; -ESTALE before
 * applier_recover()), in which case nothing is in force that the journal
 * does not cover. FOREIGN and GONE also raise an event for the log.
 */
int applier_apply(struct applier *a, const struct action *act, uint64_t now_usec, bool dry_run);
/* The same, and says what happened (or would happen) in ret_outcome (may be NULL). */
int applier_apply_full(struct applier *a, const struct action *act, uint64_t now_usec, bool dry_run,
                       struct apply_outcome *ret_outcome);

/*
 * Undo everything, newest first (stop, affctl revert --all). Values
 * someone else changed are left; exited targets are forgotten. Returns
 * the number restored, or the first -errno after trying them all (the
 * failed ones stay managed and in the journal).
 */
int applier_restore_all(struct applier *a);
/* Undo every change on one process (affctl revert PID): same contract;
 * -ENOENT if nothing of that PID is managed. */
int applier_restore_pid(struct applier *a, pid_t pid);

/*
 * Check the targets we manage against the live values: a target that
 * exited is forgotten; a value someone else changed since (a user ran
 * taskset) is left as they set it and the target is no longer managed.
 * Returns the number of targets dropped.
 */
int applier_reconcile(struct applier *a);

/*
 * What is in force, for the planner and for `affctl actions`. The array
 * is owned by the applier and valid until the next call that changes
 * anything (apply, restore, reconcile, recover).
 */
int applier_list(struct applier *a, const struct managed **ret, size_t *ret_n);

/* Evidence recorded with the change in force on key (action_target_key()),
 * for the effect check: 0, or -ENOENT if key is not managed. */
int applier_get_evidence(struct applier *a, const char *key, double *ret_evidence_before,
                         uint64_t *ret_since_usec);

/*
 * `affctl actions`: a JSON array, one object per change in force, oldest
 * first: {"target","type","pid","tid","policy","reason","evidence",
 * "original","current","since_usec","age_s"}. now_usec is CLOCK_MONOTONIC
 * (the clock the caller passes to applier_apply).
 */
int applier_to_json(struct applier *a, uint64_t now_usec, struct json_object **ret);

/* Path of the journal file, for `affctl status`. */
const char *applier_journal_path(struct applier *a);
