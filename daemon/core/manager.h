/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The manager owns the one sd-event loop and all state (systemd-oomd's
 * oomd-manager.c is the model): the sampling timer, the proc connector,
 * the perf wake sampler, signals, the control interface, sd_notify.
 * Each interval it runs the pipeline sample → detect → plan → apply and
 * is the only place that decides what gets logged.
 */

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>
#include <systemd/sd-event.h>

struct log_target;

struct manager_options {
        const char *root;             /* prefix for /proc and /sys, "/" normally */
        const char *runtime_dir;      /* journal and bus socket */
        char **config_dirs;           /* NULL: vendor, admin, runtime defaults */
        uint64_t interval_usec;       /* 0: from the configuration */
        bool dry_run;                 /* forced on by --dry-run */
        int log_level;                /* -1: from the configuration */
        bool no_perf;                 /* disable the perf wake sampler (tests of the fallback) */
};

struct manager;

int manager_new(const struct manager_options *o, struct manager **ret);
struct manager *manager_free(struct manager *m);
/* Run until SIGTERM/SIGINT; restores every change before returning. */
int manager_run(struct manager *m);

/* The control interface's methods (manager-reports.c and manager.c), handed
 * to the bus server as its struct bus_methods. Each returns a new JSON object. */
int manager_status_json(struct manager *m, struct json_object **ret);
int manager_tasks_json(struct manager *m, unsigned limit, struct json_object **ret);
int manager_actions_json(struct manager *m, struct json_object **ret);
int manager_explain_json(struct manager *m, pid_t pid, struct json_object **ret);
int manager_pairs_json(struct manager *m, struct json_object **ret);
int manager_hogs_json(struct manager *m, struct json_object **ret);
/* Parse everything anew; swap only if valid. {"ok":bool,"errors":[...]} */
int manager_reload(struct manager *m, struct json_object **ret);
int manager_revert(struct manager *m, pid_t pid, struct json_object **ret);
int manager_set_dry_run(struct manager *m, bool on, struct json_object **ret);
