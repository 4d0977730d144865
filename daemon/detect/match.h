/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Which policy governs a task: the full form of detect_policy_for()
 * (detect.h), for callers that know more than the detectors do.
 * Pure: no I/O, no logging.
 *
 * Order of the checks (the first that applies decides):
 *   1. an enabled Action=exclude policy for this detector (or Detector=always)
 *      matches                                → NULL, "excluded by policy NAME"
 *   2. kernel thread                          → NULL, "kernel thread"
 *   3. the daemon itself (pid == self_pid)    → NULL, "affinityd itself"
 *      a task outside [Daemon] Scope=          → NULL, "outside Scope="
 *   4. the enabled policy for this detector with the lowest Priority= that
 *      matches (ties: the one loaded first, i.e. the earlier file name);
 *      none                                   → NULL, "no policy matches"
 *   5. real-time task and the policy lacks AllowRealtime=yes
 *                                             → NULL, "real-time task"
 *   6. the task's allowed CPUs all belong to the kubelet's containers
 *      (snapshot coexist.kubelet_exclusive; skipped with MATCH_AFFINITY_OURS:
 *      the planners release our pins there as on any unusable CPU)
 *                                             → NULL, "on CPUs the kubelet gave a container"
 *   7. affinity narrowed by someone else and the policy lacks
 *      AllowNarrowed=yes (skipped with MATCH_AFFINITY_OURS)
 *                                             → NULL, "affinity narrowed by someone else"
 */

#include <stdbool.h>
#include <sys/types.h>

#include "config/config.h"
#include "sample/snapshot.h"

enum {
        /*
         * The task's affinity was set by affinityd (the applier's journal
         * says so), so its narrowed mask is ours, not an administrator's:
         * do not treat it as "narrowed by someone else". Without this a hog
         * we pinned would drop out of detection the next interval and its
         * pin would be released by hysteresis.
         */
        MATCH_AFFINITY_OURS = 1 << 0,
};

const struct policy *match_policy_for(const struct config *c, const struct snapshot *s, const struct task *t,
                                      enum detector kind, pid_t self_pid, unsigned flags, const char **ret_why);

/*
 * Is t in the daemon's Scope= (its process's cgroup path, or its path in
 * systemd's tree, matches one of the patterns)? The two differ on a
 * legacy or hybrid machine, where the v1 cpu controller's tree is not
 * systemd's: a slice or unit is found in either. Always with no Scope=.
 * Outside it a task is still seen (its load counts where the planners
 * place) but never changed.
 */
bool match_in_scope(const struct config *c, const struct task *t);
/* The same for the two paths (NULL: unknown). */
bool match_cgroup_in_scope(const struct config *c, const char *cgroup, const char *cgroup_systemd);

/* The first enabled exclusion for this detector that matches t, or NULL. */
const struct policy *match_exclusion_for(const struct config *c, const struct task *t, enum detector kind);

/*
 * Was t's affinity narrowed below the default? The default is every
 * usable CPU (snapshot_usable(): online, not isolated, not nohz_full, not
 * a kubelet container's) that the daemon itself
 * may use: when systemd's CPUAffinity= narrows every process, tasks that
 * inherit it are not "narrowed by someone else". false if s has no
 * topology (tests without one).
 */
bool match_affinity_narrowed(const struct snapshot *s, const struct task *t);
