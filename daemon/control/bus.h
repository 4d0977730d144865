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

struct manager;
struct bus_server;

int bus_server_new(struct manager *m, const char *runtime_dir, struct bus_server **ret);
struct bus_server *bus_server_free(struct bus_server *b);

/* Connect to the system bus and take the well-known name; -errno if no bus runs. */
int bus_server_attach_system(struct bus_server *b);
