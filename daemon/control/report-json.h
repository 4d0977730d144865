/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The JSON reports built from the stages' public state, for the control
 * interface (core/manager-reports.c) and for tests: each reads, none changes anything.
 */

struct findings;
struct json_object;
struct plan_state;
struct snapshot;
struct wake_sampler;

/* For affctl status ("capabilities.wake_sampler"). wake-json.c */
int wake_sampler_status_json(const struct wake_sampler *ws, struct json_object **ret);

/*
 * For affctl pairs: every pair the planner tracks (key "pair:..."), with
 * members, comms, CPUs, wake rates both ways, split fraction, combined util,
 * state and why; plus the current findings the planner has no state for
 * yet, and the sampler's status. Any argument but ret may be NULL.
 * wake-json.c
 */
int pairs_to_json(const struct plan_state *ps, const struct findings *f, const struct snapshot *s,
                  const struct wake_sampler *ws, struct json_object **ret);

/*
 * `affctl hogs`: hogs and spread groups the planner tracks, with state, why
 * and evidence, plus this interval's run-delay findings (report only).
 * findings may be NULL. Returns 0 or -ENOMEM. hogs-json.c
 */
int hogs_to_json(const struct plan_state *state, const struct findings *findings, struct json_object **ret);
