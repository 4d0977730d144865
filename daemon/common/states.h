/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The planner's target states: the "state" of every target in `affctl
 * hogs` and `affctl pairs`, and the label values of the metrics that count
 * them (metrics.c). Each enum has one string table (states.c); the strings
 * are the protocol's, so affctl and the metrics read them as they are.
 * The details ("pinned to 3", "watching 2/3") go in the target's "why".
 */

#include <stdbool.h>

/* States of hog, spread-group, run-delay and lever targets. */
enum plan_state_id {
        PLAN_WATCHING,
        PLAN_PINNING,
        PLAN_PINNED,
        PLAN_SPREADING,
        PLAN_SPREAD,
        PLAN_APPLIED,
        PLAN_RELEASED,
        PLAN_GONE,
        PLAN_REPORT,
        PLAN_BLOCKED,
        PLAN_COOLDOWN,
        PLAN_LEFT_ALONE,
        PLAN_LEFT_ALONE_PAIR,   /* a hog that is a ping-pong pair's member */
        PLAN_SHORT_CONNECTIONS, /* a process of short pairs (plan-pair.c's churn) */
        _PLAN_STATE_MAX,
};

/* States of ping-pong pairs (plan-pair.c). */
enum pair_state {
        PAIR_WATCHING,
        PAIR_COLOCATED,
        PAIR_RELEASED,
        PAIR_QUIET,
        PAIR_GONE,
        PAIR_LEFT_ALONE_BLOCKED,
        PAIR_LEFT_ALONE_HOG_CPU,
        PAIR_LEFT_ALONE_NO_FREE_CPU,
        PAIR_LEFT_ALONE_HUB,
        PAIR_LEFT_ALONE_STREAM,
        PAIR_LEFT_ALONE_SHARED,
        PAIR_LEFT_ALONE_PINNED,
        PAIR_LEFT_ALONE_NO_GAIN,   /* co-location buys nothing measurable on this host (calibrate.h) */
        PAIR_LEFT_ALONE_ONE_WAY,   /* a feeder (detect.h) whose pair is not held on one CPU */
        _PAIR_STATE_MAX,
};

const char *plan_state_to_string(enum plan_state_id s);
const char *pair_state_to_string(enum pair_state s);
/* s is one of the strings of either table. */
bool state_is_known(const char *s);
