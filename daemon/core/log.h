/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Logging for the top of the daemon only: collecting, detecting and
 * planning code returns errors and evidence; only the manager decides
 * what to log. Under systemd (JOURNAL_STREAM names our stderr) messages
 * go to the journal with structured fields; otherwise to stderr.
 *
 * The target is a value the manager owns, not a global.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <syslog.h>

struct log_target {
        int max_level;      /* LOG_ERR .. LOG_DEBUG */
        bool journal;       /* send to the journal with fields */
};

void log_target_init(struct log_target *t, int max_level);

/* Levels are syslog's LOG_ERR .. LOG_DEBUG; their names (log_level_from_string,
 * log_level_to_string) are config.h's, shared with LogLevel=. */

/*
 * Log a message with optional structured fields. fields is a
 * NULL-terminated list of "KEY=value" strings (already formatted), e.g.
 * {"PID=123", "ACTION=pin", NULL}; may be NULL.
 */
void log_fields(const struct log_target *t, int level, const char *const *fields,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define log_at(t, level, ...) log_fields((t), (level), NULL, __VA_ARGS__)

/* Log with errno text appended; returns -|err| so callers can `return log_errno(...)`. */
int log_errno(const struct log_target *t, int level, int err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
