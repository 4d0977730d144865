/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Other CPU placers affinityd must not fight ("Coexistence"),
 * as the sampler saw them this pass:
 *
 *  - a sched_ext BPF scheduler: while /sys/kernel/sched_ext/state says
 *    "enabled", placement is the BPF scheduler's; plan_run() changes no
 *    affinity and gives back the affinity it set (the cgroup weight,
 *    sched_features and sysctl levers go on: they set no placement);
 *  - the kubelet's static CPU manager: the CPUs of the entries in
 *    /var/lib/kubelet/cpu_manager_state belong to one container each;
 *    snapshot_usable() leaves them out, so no plan targets them, and the
 *    matcher leaves alone a task whose allowed CPUs lie within them.
 *
 * Both files are read every pass below the root prefix (a pod can start
 * at any time; the reads cost ~25 µs a pass, see coexist_read()). A file
 * that is absent means "no such placer"; one that cannot be parsed is
 * ignored and leaves a note, which the daemon logs and `affctl status`
 * shows. Parsing is pure, so tests and the fuzzer feed it strings.
 */

#include <stdbool.h>
#include <stddef.h>

#include "common/cpumask.h"

#define COEXIST_SCHED_EXT_STATE "/sys/kernel/sched_ext/state"
#define COEXIST_SCHED_EXT_OPS   "/sys/kernel/sched_ext/root/ops"
#define COEXIST_KUBELET_STATE   "/var/lib/kubelet/cpu_manager_state"

#define COEXIST_NOTE_MAX 200

/* The one reason given for every affinity change sched_ext stops (releases, status, explain). */
#define COEXIST_SCHED_EXT_WHY "sched_ext scheduler active: placement is the BPF scheduler's"

struct coexist {
        /* sched_ext */
        char sched_ext_state[16];      /* as read ("enabled", "disabled", ...), "" if the file is absent */
        char sched_ext_ops[64];        /* the BPF scheduler's name (root/ops), "" if not known */
        bool sched_ext;                /* sched_ext_state is "enabled": no affinity changes */

        /* kubelet static CPU manager */
        bool kubelet_present;          /* the state file exists */
        char kubelet_policy[32];       /* policyName, "" if the file was ignored */
        cpumask_t kubelet_exclusive;   /* CPUs of its entries: never a plan's target */
        unsigned kubelet_containers;   /* containers with exclusive CPUs */

        char note[COEXIST_NOTE_MAX];   /* "" or why a file was ignored ("<path>: malformed: ...; ignored"),
                                        * both files' reasons when both were */
};

/*
 * Read both files below root into *ret (zeroed first). Never fails for
 * a missing or malformed file (see note); returns 0 or -ENOMEM.
 */
int coexist_read(const char *root, struct coexist *ret);

/*
 * Parse the kubelet's cpu_manager_state: {"policyName":"static",
 * "defaultCpuSet":"0-1,6-7","entries":{"<podUID>":{"<container>":"2-5"}},
 * "checksum":N}. The format before kubelet 1.18 (entries keyed by
 * container ID, each a CPU list) is read too. Policy "none" has no
 * exclusive CPUs. The checksum is not verified (the kubelet's is a hash
 * of Go's own printing of the struct) and is not required.
 * Returns 0, or -EINVAL with the reason in why (one line).
 */
int coexist_parse_kubelet(const char *json, cpumask_t *ret_exclusive, unsigned *ret_containers,
                          char *ret_policy, size_t policy_size, char *why, size_t why_size);

/* For `affctl status`: "coexistence" minus what the manager adds. */
struct json_object;
int coexist_to_json(const struct coexist *c, struct json_object **ret);
