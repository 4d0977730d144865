/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The control interface on D-Bus (names in common/protocol.h).
 *
 * - Peer-to-peer: a unix socket <runtime-dir>/bus; each accepted
 *   connection becomes its own sd-bus server connection (no broker), which
 *   is how affctl talks to us.
 * - System bus: where one runs, we also own AFF_BUS_NAME there so busctl
 *   and other D-Bus tools see the same object.
 *
 * sd-bus refuses methods not marked SD_BUS_VTABLE_UNPRIVILEGED to callers
 * other than root, which is exactly the split we want: reads for all local
 * users, changes for root.
 */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

struct json_object;
struct log_target;
struct manager;
struct bus_server;

/*
 * The methods the server answers with, handed in by the manager that owns
 * them (core/), so that control/ calls into the manager without including
 * it. Each returns the reply's JSON in *ret, or -errno; explain's -ESRCH
 * means no such task.
 */
struct bus_methods {
        int (*status)(struct manager *m, struct json_object **ret);
        int (*tasks)(struct manager *m, unsigned limit, struct json_object **ret);
        int (*actions)(struct manager *m, struct json_object **ret);
        int (*explain)(struct manager *m, pid_t pid, struct json_object **ret);
        int (*pairs)(struct manager *m, struct json_object **ret);
        int (*hogs)(struct manager *m, struct json_object **ret);
        int (*reload)(struct manager *m, struct json_object **ret);
        int (*revert)(struct manager *m, pid_t pid, struct json_object **ret);
        int (*set_dry_run)(struct manager *m, bool on, struct json_object **ret);
};

int bus_server_new(const struct bus_methods *methods, struct manager *m, sd_event *event,
                   const struct log_target *log, const char *runtime_dir, struct bus_server **ret);
struct bus_server *bus_server_free(struct bus_server *b);

/* Connect to the system bus and take the well-known name; -errno if no bus runs. */
int bus_server_attach_system(struct bus_server *b);
