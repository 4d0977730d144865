/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "apply/action.h"

char *action_target_key(const struct action *a, char *buf, size_t size) {
        int n = -1;

        switch (a->type) {
        case ACT_AFFINITY:
                n = snprintf(buf, size, "task:%d:%" PRIu64, (int) a->task.tid, a->task.start_time);
                break;
        case ACT_CGROUP_WEIGHT:
                n = snprintf(buf, size, "cgroup:%s", a->cgroup);
                break;
        case ACT_SCHED_FEATURE:
                n = snprintf(buf, size, "feature:%s", a->name);
                break;
        case ACT_SYSCTL:
                n = snprintf(buf, size, "sysctl:%s", a->name);
                break;
        case ACT_CGROUP_SUBTREE:
                n = snprintf(buf, size, "subtree:%s", a->cgroup);
                break;
        default:
                break;
        }
        if (n < 0 || (size_t) n >= size)
                return NULL;
        return buf;
}

uint64_t action_target_hash(const struct action *a) {
        /* the longest key: a cgroup path and its prefix */
        char key[sizeof(a->cgroup) + sizeof(a->name) + 32];
        uint64_t h = 14695981039346656037ULL;   /* FNV-1a */

        if (!action_target_key(a, key, sizeof(key)))
                key[0] = '\0';
        h = (h ^ (uint64_t) a->type) * 1099511628211ULL;
        h = (h ^ (uint64_t) a->verb) * 1099511628211ULL;
        for (const char *c = key; *c; c++)
                h = (h ^ (uint8_t) *c) * 1099511628211ULL;
        return h;
}

const char *action_type_to_string(enum action_type t) {
        static const char *const names[_ACT_TYPE_MAX] = {
                [ACT_AFFINITY] = "affinity",
                [ACT_CGROUP_WEIGHT] = "cgroup-weight",
                [ACT_SCHED_FEATURE] = "sched-feature",
                [ACT_SYSCTL] = "sysctl",
                [ACT_CGROUP_SUBTREE] = "cgroup-subtree",
        };
        return t >= 0 && t < _ACT_TYPE_MAX ? names[t] : "unknown";
}
