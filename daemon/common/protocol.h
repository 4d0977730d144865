/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The control protocol, defined once for affinityd and affctl (chrony's
 * candm.h: one versioned header for daemon and client): names, method
 * signatures, error names, the version and its history, and the JSON keys
 * both sides rely on.
 *
 * affctl talks to the daemon peer-to-peer over AFF_BUS_SOCKET in the
 * runtime directory, so it works without a bus broker. Where a system bus
 * runs, the daemon also owns AFF_BUS_NAME there
 * (unit-files/org.affinityd1.conf lists the unprivileged methods).
 *
 * Every method but Protocol returns one JSON document as a string "s", so
 * affctl can print it as is with --json or render it as text (json-c on
 * both sides). Values in it are for machines (numbers, enum names); keys
 * named "why", "reason", "message" or "warnings" hold sentences for people.
 */

#define AFF_BUS_NAME      "org.affinityd1"
#define AFF_BUS_PATH      "/org/affinityd1"
#define AFF_BUS_INTERFACE "org.affinityd1.Manager"
#define AFF_BUS_SOCKET    "bus"
#define AFF_RUNTIME_DIR   "/run/affinityd"

/*
 * The version, bumped when a method or its JSON changes incompatibly.
 * affctl asks Protocol() before any other method and refuses a daemon of
 * another version, saying which two differ (it would misread the reply).
 * History:
 *   1  the methods below but Protocol; Status's "protocol" key
 *   2  Protocol() added; affctl checks it
 */
#define AFF_PROTOCOL_VERSION 2

/* Methods: name, input signature (output "s" = JSON, Protocol "u"). */
#define AFF_METHOD_PROTOCOL    "Protocol"   /* ()        -> u  unprivileged: AFF_PROTOCOL_VERSION */
#define AFF_SIG_PROTOCOL       ""
#define AFF_METHOD_STATUS      "Status"     /* ()        -> s  unprivileged */
#define AFF_SIG_STATUS         ""
#define AFF_METHOD_TASKS       "Tasks"      /* (u limit) -> s  unprivileged */
#define AFF_SIG_TASKS          "u"
#define AFF_METHOD_ACTIONS     "Actions"    /* ()        -> s  unprivileged */
#define AFF_SIG_ACTIONS        ""
#define AFF_METHOD_EXPLAIN     "Explain"    /* (u pid)   -> s  unprivileged; AFF_BUS_ERROR_NO_SUCH_TASK */
#define AFF_SIG_EXPLAIN        "u"
#define AFF_METHOD_PAIRS       "Pairs"      /* ()        -> s  unprivileged */
#define AFF_SIG_PAIRS          ""
#define AFF_METHOD_HOGS        "Hogs"       /* ()        -> s  unprivileged */
#define AFF_SIG_HOGS           ""
#define AFF_METHOD_RELOAD      "Reload"     /* ()        -> s  root: {"ok":bool,"errors":[...]} */
#define AFF_SIG_RELOAD         ""
#define AFF_METHOD_REVERT      "Revert"     /* (u pid)   -> s  root: pid 0 = all */
#define AFF_SIG_REVERT         "u"
#define AFF_METHOD_SET_DRY_RUN "SetDryRun"  /* (b on)    -> s  root */
#define AFF_SIG_SET_DRY_RUN    "b"

/* D-Bus error names for failures the client should show as they are. */
#define AFF_BUS_ERROR_INVALID_CONFIG "org.affinityd1.InvalidConfig"
#define AFF_BUS_ERROR_NO_SUCH_TASK   "org.affinityd1.NoSuchTask"

/*
 * JSON keys affctl reads, one constant for both sides: those of Status
 * (dotted: json_path()), of one change, of a capability, of Reload's reply.
 * The other reports (Tasks, Pairs, Hogs, Explain) affctl prints as they
 * come, as tables by their keys (ctl/views.c names the columns it shows
 * first; a key it does not know is shown under --wide); those keys are
 * documented with the function that builds them (control/report-json.h,
 * core/manager-reports.c).
 */
#define AFF_STATUS_PROTOCOL          "protocol"
#define AFF_STATUS_VERSION           "version"
#define AFF_STATUS_STATE             "state"
#define AFF_STATUS_PID               "pid"
#define AFF_STATUS_UPTIME_S          "uptime_s"
#define AFF_STATUS_INTERVAL_MS       "interval_ms"
#define AFF_STATUS_DRY_RUN           "dry_run"
#define AFF_STATUS_POLICIES          "policies"
#define AFF_STATUS_CONFIG_FILES      "config_files"
#define AFF_STATUS_WARNINGS          "warnings"
#define AFF_STATUS_CHANGES           "changes"
#define AFF_STATUS_WOULD_DO          "would_do"
#define AFF_STATUS_CAPABILITIES      "capabilities"

/*
 * Keys of one change, as affctl prints it: the entries of Status
 * "changes" and of Actions (applier_to_json: in force, with "current" and
 * "age_s"), and of Status "would_do" (planned in dry-run, with "verb" and
 * "value").
 */
#define AFF_CHANGE_TARGET            "target"
#define AFF_CHANGE_TYPE              "type"
#define AFF_CHANGE_POLICY            "policy"
#define AFF_CHANGE_REASON            "reason"
#define AFF_CHANGE_ORIGINAL          "original"
#define AFF_CHANGE_CURRENT           "current"
#define AFF_CHANGE_AGE_S             "age_s"
#define AFF_CHANGE_VERB              "verb"
#define AFF_CHANGE_VALUE             "value"

/* Each capability object of Status "capabilities" (levers_status_json):
 * "" when the lever works, else one line naming the cause. */
#define AFF_CAPABILITY_WHY           "why"

/* The reply of Reload: how many policies are now in force. */
#define AFF_RELOAD_POLICIES          "policies"
