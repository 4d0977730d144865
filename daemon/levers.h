/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The system-wide levers: cgroup CPU weight (libcgroup; cpu.weight on v2,
 * cpu.shares on v1), sched_features (debugfs) and scheduler sysctls /
 * debugfs tunables. Probing tells `affctl status` which levers work here
 * and, when one does not, why (lockdown, no debugfs, controller not
 * delegated). The get/set functions are the real backends behind
 * apply_ops_system (apply.h); only the applier calls the setters.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct lever_caps {
        int cgroup_version;           /* 1, 2, or 0 if no cpu controller found */
        bool cgroup_hybrid;
        bool cgroup_cpu_writable;
        char cgroup_why[128];         /* "" if usable, else the cause */
        char features_path[128];      /* "" if not found */
        bool features_readable, features_writable;
        char features_why[128];
        bool schedstats_present;      /* /proc/schedstat */
        bool schedstats_enabled;      /* kernel.sched_schedstats = 1 */
};

struct levers;   /* backend state: root prefix, libcgroup init, feature list cache */

int levers_new(const char *root, struct levers **ret);
struct levers *levers_free(struct levers *l);
int levers_probe(struct levers *l, struct lever_caps *ret);

/* The kernel's own feature list ("NAME" or "NO_NAME" each); validation of policy names. */
int levers_features_list(struct levers *l, char ***ret_names, bool **ret_enabled, size_t *ret_n);
bool levers_feature_known(struct levers *l, const char *name);

/* Backends for struct apply_ops (userdata is struct levers *). */
int levers_weight_get(void *userdata, const char *cgroup, uint64_t *ret);
int levers_weight_set(void *userdata, const char *cgroup, uint64_t weight);
int levers_feature_get(void *userdata, const char *name, bool *ret_enabled);
int levers_feature_set(void *userdata, const char *name, bool enable);
int levers_sysctl_get(void *userdata, const char *name, char *buf, size_t size);
int levers_sysctl_set(void *userdata, const char *name, const char *value);

/* v1 cpu.shares (2..262144, default 1024) <-> v2 cpu.weight (1..10000, default 100), as systemd converts. */
uint64_t levers_weight_to_shares(uint64_t weight);
uint64_t levers_shares_to_weight(uint64_t shares);
