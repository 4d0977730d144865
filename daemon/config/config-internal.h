/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Internals shared by config.c (objects, loading, cross-file checks),
 * config-parse.c (one file: the inih reader and handler, value parsers)
 * and config-print.c (printing, JSON). Value parsers and formatters are
 * here so tests/test-config.c can check them one by one.
 */

#include <stdarg.h>
#include <stddef.h>

#include "config/config.h"

/* What a file may contain, from its name (see config_load_files()). */
enum {
        CONFIG_ROLE_DAEMON = 1 << 0,   /* [Daemon] */
        CONFIG_ROLE_POLICY = 1 << 1,   /* [Policy] [Match] [Detect] [Action] */
};

/*
 * Longest line the parser takes and the printer writes. inih hands its
 * reader a buffer of INI_MAX_LINE (200) bytes: the text, '\n' and NUL.
 */
#define CONFIG_LINE_MAX 198

/* A file larger than this is refused (policy files are a few hundred bytes). */
#define CONFIG_FILE_MAX (1024 * 1024)

/* Stop reporting a file after this many errors (a binary file would produce thousands). */
#define CONFIG_FILE_ERRORS_MAX 50

/* More than this many globs in one list, policies in one config: refused. */
#define CONFIG_LIST_MAX 256
#define CONFIG_POLICIES_MAX 4096

/*
 * Parse one file's text into c, appending every error to errors. file is
 * the name used in messages, roles what the file may contain. Policies are
 * validated one by one here; checks between policies are config_validate().
 * Returns 0 (errors are in errors) or -ENOMEM.
 */
int config_parse_text(struct config *c, const char *file, const char *data, size_t size,
                      unsigned roles, struct config_errors *errors);

/* Checks between policies (duplicate names, conflicts). 0 or -ENOMEM. */
int config_validate(const struct config *c, struct config_errors *errors);

void policy_done(struct policy *p);

/*
 * Value parsers. Each returns 0, or -EINVAL/-ERANGE with a reason for the
 * message in reason (size at least 128). Ranges are inclusive.
 */
int config_parse_bool(const char *s, bool *ret);
int config_parse_duration(const char *s, uint64_t min_usec, uint64_t max_usec,
                          uint64_t *ret_usec, char *reason, size_t size);
/* "80%" → 0.80; at most 2 decimals; min/max in percent. */
int config_parse_percent(const char *s, double min_pct, double max_pct,
                         double *ret_frac, char *reason, size_t size);
/* "2000/s", "0.2/s"; at most 3 decimals. */
int config_parse_rate(const char *s, double min, double max, double *ret, char *reason, size_t size);
int config_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret, char *reason, size_t size);

/*
 * Split a list value into words at whitespace; a word may be quoted with
 * "..." or '...' to hold spaces (no escapes). Returns the number of words
 * (0 for an empty value, *ret = NULL) or -EINVAL with a reason.
 */
int config_split_words(const char *s, char ***ret, char *reason, size_t size);

/* Normalized forms, as printed. Return buf. */
char *config_format_duration(uint64_t usec, char *buf, size_t size);  /* largest exact unit: 90s, 10min, 1500ms */
char *config_format_percent(double frac, char *buf, size_t size);     /* 0.125 → "12.5%" */
char *config_format_rate(double r, char *buf, size_t size);           /* 0.2 → "0.2/s" */
/* A list word as it must be written to parse back: quoted if it holds spaces. */
char *config_format_word(const char *w, char *buf, size_t size);

/* Write one policy in the input format (config-print.c). */
int config_print_policy(const struct policy *p, FILE *f);
