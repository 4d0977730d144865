/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "common/states.h"
#include "common/util.h"

static const char *const plan_state_table[_PLAN_STATE_MAX] = {
        [PLAN_WATCHING] = "watching",
        [PLAN_PINNING] = "pinning",
        [PLAN_PINNED] = "pinned",
        [PLAN_SPREADING] = "spreading",
        [PLAN_SPREAD] = "spread",
        [PLAN_APPLIED] = "applied",
        [PLAN_RELEASED] = "released",
        [PLAN_GONE] = "gone",
        [PLAN_REPORT] = "report",
        [PLAN_BLOCKED] = "blocked",
        [PLAN_COOLDOWN] = "cooldown",
        [PLAN_LEFT_ALONE] = "left alone",
        [PLAN_LEFT_ALONE_PAIR] = "left alone: pair",
        [PLAN_SHORT_CONNECTIONS] = "short connections",
};

static const char *const pair_state_table[_PAIR_STATE_MAX] = {
        [PAIR_WATCHING] = "watching",
        [PAIR_COLOCATED] = "co-located",
        [PAIR_RELEASED] = "released",
        [PAIR_QUIET] = "quiet",
        [PAIR_GONE] = "gone",
        [PAIR_LEFT_ALONE_BLOCKED] = "left alone: blocked",
        [PAIR_LEFT_ALONE_HOG_CPU] = "left alone: hog's CPU",
        [PAIR_LEFT_ALONE_NO_FREE_CPU] = "left alone: no free CPU",
        [PAIR_LEFT_ALONE_HUB] = "left alone: hub",
        [PAIR_LEFT_ALONE_STREAM] = "left alone: stream",
        [PAIR_LEFT_ALONE_SHARED] = "left alone: shared",
        [PAIR_LEFT_ALONE_PINNED] = "left alone: pinned",
        [PAIR_LEFT_ALONE_NO_GAIN] = "left alone: no gain on this host",
        [PAIR_LEFT_ALONE_ONE_WAY] = "left alone: one-way",
};

const char *plan_state_to_string(enum plan_state_id s) {
        return (unsigned) s < _PLAN_STATE_MAX ? plan_state_table[s] : "unknown";
}

const char *pair_state_to_string(enum pair_state s) {
        return (unsigned) s < _PAIR_STATE_MAX ? pair_state_table[s] : "unknown";
}

bool state_is_known(const char *s) {
        for (unsigned i = 0; i < _PLAN_STATE_MAX; i++)
                if (streq(plan_state_table[i], s))
                        return true;
        for (unsigned i = 0; i < _PAIR_STATE_MAX; i++)
                if (streq(pair_state_table[i], s))
                        return true;
        return false;
}
