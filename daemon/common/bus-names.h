/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The control interface, defined once for affinityd and affctl
 * (chrony's candm.h: one protocol header for daemon and client).
 *
 * affctl talks to the daemon peer-to-peer over AFF_BUS_SOCKET in the
 * runtime directory, so it works without a bus broker. Where a system bus
 * runs, the daemon also owns AFF_BUS_NAME there.
 *
 * Methods (all return one JSON document as a string "s", so affctl can
 * print it as is with --json or render it as text; json-c on both sides):
 *   Status()            -> s   unprivileged
 *   Tasks(u limit)      -> s   unprivileged
 *   Actions()           -> s   unprivileged
 *   Explain(u pid)      -> s   unprivileged
 *   Pairs()             -> s   unprivileged
 *   Hogs()              -> s   unprivileged
 *   Reload()            -> s   root: {"ok":bool,"errors":[...]}
 *   Revert(u pid)       -> s   root: pid 0 = all
 *   SetDryRun(b on)     -> s   root
 */

#define AFF_BUS_NAME      "org.affinityd1"
#define AFF_BUS_PATH      "/org/affinityd1"
#define AFF_BUS_INTERFACE "org.affinityd1.Manager"
#define AFF_BUS_SOCKET    "bus"
#define AFF_RUNTIME_DIR   "/run/affinityd"

/* Bumped when a method's JSON changes incompatibly; both sides report it. */
#define AFF_PROTOCOL_VERSION 1

/* D-Bus error names for failures the client should show as they are. */
#define AFF_BUS_ERROR_INVALID_CONFIG "org.affinityd1.InvalidConfig"
#define AFF_BUS_ERROR_NO_SUCH_TASK   "org.affinityd1.NoSuchTask"
