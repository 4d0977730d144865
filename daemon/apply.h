/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The apply stage: the only code that changes the system.
 *
 * Every change goes through struct applier:
 *   1. read the current (original) value through the ops table,
 *   2. append a journal record (write-ahead, fsync'ed) with the original,
 *      the target's identity, the policy and the reason,
 *   3. apply through the ops table,
 *   4. append "applied".
 * Release and stop restore originals in reverse order. On start, a journal
 * left by a crash is replayed to restore.
 *
 * The ops table is what tests replace with a recorder; the real ops are
 * apply_ops_system (affinity through a pidfd + start-time check; cgroup
 * weight via libcgroup; sched_features via debugfs; sysctls via /proc/sys).
 */

#include <stdbool.h>
#include <stdint.h>

#include "action.h"
#include "levers.h"
#include "plan.h"

struct apply_ops {
        /* affinity of one thread; must fail with -ESRCH if id no longer names the same thread */
        int (*affinity_get)(void *userdata, const struct task_id *id, cpumask_t *ret);
        int (*affinity_set)(void *userdata, const struct task_id *id, const cpumask_t *mask);
        /* cgroup CPU weight on the v2 scale (1..10000); v1 backends convert cpu.shares */
        int (*weight_get)(void *userdata, const char *cgroup, uint64_t *ret);
        int (*weight_set)(void *userdata, const char *cgroup, uint64_t weight);
        /* one sched_features name */
        int (*feature_get)(void *userdata, const char *name, bool *ret_enabled);
        int (*feature_set)(void *userdata, const char *name, bool enable);
        /* sysctl "kernel.x" or debugfs tunable "debug:migration_cost_ns" */
        int (*sysctl_get)(void *userdata, const char *name, char *buf, size_t size);
        int (*sysctl_set)(void *userdata, const char *name, const char *value);
};

/* Real ops; userdata is a struct apply_system. */
struct apply_system {
        const char *root;              /* prefix for /proc and /sys */
        struct levers *levers;         /* levers.h backends for weight/features/sysctls */
};
extern const struct apply_ops apply_ops_system;

struct applier;

int applier_new(const char *runtime_dir, const struct apply_ops *ops, void *userdata,
                struct applier **ret);
struct applier *applier_free(struct applier *a);

/* Replay a journal left by a crash: restore everything it lists, then truncate. */
int applier_recover(struct applier *a);

/*
 * Carry out one action (SET or RELEASE). dry_run: record nothing, change
 * nothing, return 0. Returns 1 if something was changed, 0 if nothing to do,
 * -errno on failure (the journal stays consistent).
 */
int applier_apply(struct applier *a, const struct action *act, uint64_t now_usec, bool dry_run);

/* Undo everything, newest first (stop, affctl revert --all). */
int applier_restore_all(struct applier *a);
/* Undo every change on one process (affctl revert PID). */
int applier_restore_pid(struct applier *a, pid_t pid);

/*
 * Check the targets we manage against the live values: a target that
 * exited is forgotten; a value someone else changed since (a user ran
 * taskset) is left as they set it and the target is no longer managed.
 * Returns the number of targets dropped.
 */
int applier_reconcile(struct applier *a);

/* What is in force, for the planner and for `affctl actions`. */
int applier_list(struct applier *a, const struct managed **ret, size_t *ret_n);
