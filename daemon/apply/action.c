/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

bool action_same_target(const struct action *x, const struct action *y) {
        char kx[160], ky[160];

        return x->type == y->type && x->verb == y->verb && action_target_key(x, kx, sizeof(kx)) &&
               action_target_key(y, ky, sizeof(ky)) && strcmp(kx, ky) == 0;
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
