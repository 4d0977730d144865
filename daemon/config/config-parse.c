/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One configuration file → struct config, with every mistake reported as
 * "file:line: key=value: reason" and parsing carried on.
 *
 * inih (Debian 12: r55, built without INI_HANDLER_LINENO) splits
 * "Key = value" lines and strips inline comments; it does not report
 * section headers, tells the handler no line number, and reports syntax
 * errors only as the line of the first one. So our reader callback sees
 * every raw line first: it counts lines, handles [Section] headers itself,
 * rejects malformed lines with their line number, strips leading
 * whitespace (so inih's multi-line continuation never applies) and passes
 * only "Key=value" lines on to inih. The handler then runs before the next
 * line is read, so ctx->line is the line of the entry it gets.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "common/util.h"
#include "config/config-internal.h"

enum section {
        SEC_NONE,     /* before the first header */
        SEC_DAEMON,
        SEC_POLICY,
        SEC_MATCH,
        SEC_DETECT,
        SEC_ACTION,
        SEC_SKIP,     /* unknown or not allowed here: its keys are ignored (the header was reported) */
        _SEC_MAX,
};

static const char *const section_names[_SEC_MAX] = {
        [SEC_DAEMON] = "Daemon",
        [SEC_POLICY] = "Policy",
        [SEC_MATCH] = "Match",
        [SEC_DETECT] = "Detect",
        [SEC_ACTION] = "Action",
};

enum key {
        K_INTERVAL, K_DRY_RUN, K_LOG_LEVEL, K_MAX_ACTIONS, K_HYSTERESIS, K_COOLDOWN,
        K_EFFECT_CHECK, K_EFFECT_TOLERANCE, K_RETRY_AFTER, K_MAX_THREADS,
        K_WAKE_SAMPLE_PERIOD, K_MAX_WAKE_EVENTS, K_METRICS_TEXTFILE, K_SCOPE,

        K_NAME, K_ENABLED, K_PRIORITY, K_DETECTOR, K_ACTION,

        K_COMM, K_EXE, K_CMDLINE, K_CGROUP, K_UNIT, K_USER, K_KERNEL, K_REALTIME,

        K_UTIL, K_MIGRATIONS, K_WAKE_RATE, K_RUN_DELAY, K_STEAL, K_MAX_COMBINED_UTIL, K_WINDOW, K_OWNERS,

        K_CPU_WEIGHT, K_SCHED_FEATURES, K_SYSCTL, K_CPUS, K_ALLOW_REALTIME, K_ALLOW_NARROWED, K_SPAN,
        K_IGNORE_CALIBRATION,
        _K_MAX,
};

/*
 * How a key's value is read. Most keys are "one value, parsed with explicit
 * bounds, stored in one field": the table below says which parser, which
 * bounds and which field (offset into struct daemon_settings for [Daemon],
 * into struct policy for the others), and store_value() does the rest. Keys
 * whose logic differs (names, enums, lists with per-entry checks, CPUs,
 * sysctls, RunDelay, MaxWakeEvents, LogLevel, Scope) are V_CUSTOM and written out
 * in daemon_key() / policy_key().
 */
enum value_kind {
        V_CUSTOM,
        V_BOOL,       /* bool */
        V_TRISTATE,   /* int, enum match_tristate: yes → MATCH_YES, no → MATCH_NO */
        V_UINT,       /* unsigned, int, int64_t or uint64_t (field_size), within umin..umax */
        V_DURATION,   /* uint64_t µs, within umin..umax */
        V_PERCENT,    /* double fraction, dmin..dmax in percent */
        V_RATE,       /* double per second, within dmin..dmax */
        V_LIST,       /* char ** of words, checked per key by list_add() */
};

static const struct key_def {
        enum section section;
        const char *name;
        enum value_kind kind;
        size_t offset;
        size_t field_size;
        uint64_t umin, umax;
        double dmin, dmax;
} keys[_K_MAX] = {
#define FIELD(type, field) .offset = offsetof(type, field), .field_size = sizeof(((type *) NULL)->field)
#define DAEMON(n, k, f, ...)    { SEC_DAEMON, n, k, FIELD(struct daemon_settings, f), __VA_ARGS__ }
#define POLICY(s, n, k, f, ...) { s, n, k, FIELD(struct policy, f), __VA_ARGS__ }
        [K_INTERVAL]            = DAEMON("Interval", V_DURATION, interval_usec,
                                         .umin = 100 * USEC_PER_MSEC, .umax = 60 * USEC_PER_SEC),
        [K_DRY_RUN]             = DAEMON("DryRun", V_BOOL, dry_run),
        [K_LOG_LEVEL]           = { SEC_DAEMON, "LogLevel" },
        [K_MAX_ACTIONS]         = DAEMON("MaxActionsPerInterval", V_UINT, max_actions_per_interval,
                                         .umin = 1, .umax = 1000),
        [K_HYSTERESIS]          = DAEMON("Hysteresis", V_UINT, hysteresis_intervals, .umin = 1, .umax = 100),
        [K_COOLDOWN]            = DAEMON("Cooldown", V_DURATION, cooldown_usec,
                                         .umin = 0, .umax = 24 * 3600 * USEC_PER_SEC),
        [K_EFFECT_CHECK]        = DAEMON("EffectCheck", V_BOOL, effect_check),
        [K_EFFECT_TOLERANCE]    = DAEMON("EffectTolerance", V_PERCENT, effect_tolerance, .dmin = 0, .dmax = 100),
        [K_RETRY_AFTER]         = DAEMON("RetryAfter", V_DURATION, retry_after_usec,
                                         .umin = 0, .umax = 7 * 86400 * USEC_PER_SEC),
        /* 4194304 is PID_MAX_LIMIT on 64-bit */
        [K_MAX_THREADS]         = DAEMON("MaxThreads", V_UINT, max_tracked_threads, .umin = 64, .umax = 4194304),
        [K_WAKE_SAMPLE_PERIOD]  = DAEMON("WakeSamplePeriod", V_UINT, wake_sample_period,
                                         .umin = 1, .umax = 1000000),
        [K_MAX_WAKE_EVENTS]     = { SEC_DAEMON, "MaxWakeEvents" },
        [K_METRICS_TEXTFILE]    = { SEC_DAEMON, "MetricsTextfile" },
        [K_SCOPE]               = { SEC_DAEMON, "Scope" },

        [K_NAME]                = { SEC_POLICY, "Name" },
        [K_ENABLED]             = POLICY(SEC_POLICY, "Enabled", V_BOOL, enabled),
        [K_PRIORITY]            = POLICY(SEC_POLICY, "Priority", V_UINT, priority, .umin = 0, .umax = 999),
        [K_DETECTOR]            = { SEC_POLICY, "Detector" },
        [K_ACTION]              = { SEC_POLICY, "Action" },

        [K_COMM]                = POLICY(SEC_MATCH, "Comm", V_LIST, match.comm),
        [K_EXE]                 = POLICY(SEC_MATCH, "Exe", V_LIST, match.exe),
        [K_CMDLINE]             = POLICY(SEC_MATCH, "Cmdline", V_LIST, match.cmdline),
        [K_CGROUP]              = POLICY(SEC_MATCH, "Cgroup", V_LIST, match.cgroup),
        [K_UNIT]                = POLICY(SEC_MATCH, "Unit", V_LIST, match.unit),
        [K_USER]                = POLICY(SEC_MATCH, "User", V_LIST, match.user),
        [K_KERNEL]              = POLICY(SEC_MATCH, "Kernel", V_TRISTATE, match.kthreads),
        [K_REALTIME]            = POLICY(SEC_MATCH, "Realtime", V_TRISTATE, match.realtime),

        /* util is a fraction of one CPU: one thread cannot use more than 100 % */
        [K_UTIL]                = POLICY(SEC_DETECT, "Util", V_PERCENT, util_min, .dmin = 1, .dmax = 100),
        [K_MIGRATIONS]          = POLICY(SEC_DETECT, "Migrations", V_RATE, migrations_min_per_s,
                                         .dmin = 0.001, .dmax = 1000000),
        [K_WAKE_RATE]           = POLICY(SEC_DETECT, "WakeRate", V_RATE, wake_rate_min_per_s,
                                         .dmin = 1, .dmax = 100000000),
        [K_RUN_DELAY]           = { SEC_DETECT, "RunDelay" },
        [K_OWNERS]              = { SEC_DETECT, "Owners" },
        [K_STEAL]               = POLICY(SEC_DETECT, "Steal", V_PERCENT, steal_min, .dmin = 0.01, .dmax = 100),
        /* two threads together use at most two CPUs */
        [K_MAX_COMBINED_UTIL]   = POLICY(SEC_DETECT, "MaxCombinedUtil", V_PERCENT, group_util_max,
                                         .dmin = 1, .dmax = 200),
        [K_WINDOW]              = POLICY(SEC_DETECT, "Window", V_DURATION, window_usec,
                                         .umin = 100 * USEC_PER_MSEC, .umax = 3600 * USEC_PER_SEC),

        /* cgroup v2 cpu.weight range; levers converts to v1 cpu.shares */
        [K_CPU_WEIGHT]          = POLICY(SEC_ACTION, "CPUWeight", V_UINT, cpu_weight, .umin = 1, .umax = 10000),
        [K_SCHED_FEATURES]      = POLICY(SEC_ACTION, "SchedFeatures", V_LIST, features),
        [K_SYSCTL]              = { SEC_ACTION, "Sysctl" },
        [K_CPUS]                = { SEC_ACTION, "CPUs" },
        [K_ALLOW_REALTIME]      = POLICY(SEC_ACTION, "AllowRealtime", V_BOOL, allow_realtime),
        [K_ALLOW_NARROWED]      = POLICY(SEC_ACTION, "AllowNarrowed", V_BOOL, allow_narrowed),
        [K_SPAN]                = { SEC_ACTION, "Span" },
        [K_IGNORE_CALIBRATION]  = POLICY(SEC_ACTION, "IgnoreCalibration", V_BOOL, ignore_calibration),
#undef POLICY
#undef DAEMON
#undef FIELD
};

#define KBIT(k) (UINT64_C(1) << (k))

/*
 * What each detector measures ([Detect] keys it reads) and which actions
 * the planner carries out on its findings. One table, so relaxing a rule
 * when a planner learns something new is one line. Kept conservative: a
 * combination nothing implements would be a policy that silently does
 * nothing. Exclusions work with any detector (excluded from that one only;
 * Detector=always, the default for Action=exclude, means from all).
 */
static const struct detector_rules {
        uint64_t detect_keys;
        unsigned actions;
} detector_rules[_DETECT_MAX] = {
        [DETECT_HOG] = {
                KBIT(K_UTIL) | KBIT(K_MIGRATIONS) | KBIT(K_WINDOW),
                1u << ACTION_PIN | 1u << ACTION_REPORT | 1u << ACTION_EXCLUDE,
        },
        [DETECT_PAIR] = {
                KBIT(K_WAKE_RATE) | KBIT(K_MAX_COMBINED_UTIL) | KBIT(K_WINDOW) | KBIT(K_OWNERS),
                /* [wake-affine]: co-locate the pair; cgroup weight where group shares starve it */
                1u << ACTION_COLOCATE | 1u << ACTION_WEIGHT | 1u << ACTION_REPORT | 1u << ACTION_EXCLUDE,
        },
        [DETECT_SPREAD] = {
                KBIT(K_UTIL) | KBIT(K_MIGRATIONS) | KBIT(K_WINDOW),
                1u << ACTION_SPREAD | 1u << ACTION_REPORT | 1u << ACTION_EXCLUDE,
        },
        [DETECT_RUNDELAY] = {
                /* [select-idle]: the tail is easy to make worse; run delay is reported, not acted upon */
                KBIT(K_RUN_DELAY) | KBIT(K_WINDOW),
                1u << ACTION_REPORT | 1u << ACTION_EXCLUDE,
        },
        [DETECT_STEAL] = {
                /* [fair-sleepers]: sleeper fairness under steal time; machine-wide levers */
                KBIT(K_STEAL) | KBIT(K_WINDOW),
                1u << ACTION_FEATURES | 1u << ACTION_SYSCTL | 1u << ACTION_REPORT | 1u << ACTION_EXCLUDE,
        },
        [DETECT_ALWAYS] = {
                0,
                1u << ACTION_WEIGHT | 1u << ACTION_FEATURES | 1u << ACTION_SYSCTL | 1u << ACTION_EXCLUDE,
        },
};

#define AFFINITY_ACTIONS (1u << ACTION_PIN | 1u << ACTION_COLOCATE | 1u << ACTION_SPREAD)

struct key_origin {
        unsigned line;    /* 0: not written */
        char *value;      /* as written, for messages */
        bool bad;         /* the value was rejected (already reported) */
};

/* A policy being read, with where each key was written, until it is complete. */
struct pending {
        struct policy p;
        bool had_header;
        bool bad;
        struct key_origin origin[_K_MAX];
};

struct parse_ctx {
        struct config *config;
        struct config_errors *errors;
        const char *file;
        unsigned roles;

        /* reader */
        const char *data;
        size_t size, pos;
        unsigned line;

        enum section section;
        struct pending *cur;
        unsigned n_file_policies;
        unsigned n_errors;
        bool stop;
        int oom;
};

static void pending_free(struct pending *pd) {
        if (!pd)
                return;
        policy_done(&pd->p);
        for (size_t i = 0; i < _K_MAX; i++)
                free(pd->origin[i].value);
        free(pd);
}

static void ctx_errorv(struct parse_ctx *ctx, unsigned line, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));
static void ctx_errorv(struct parse_ctx *ctx, unsigned line, const char *fmt, va_list ap) {
        int r;

        if (ctx->stop)
                return;
        if (++ctx->n_errors > CONFIG_FILE_ERRORS_MAX) {
                r = config_errors_add(ctx->errors, ctx->file, 0,
                                      "more than %d errors, not reading the rest of this file",
                                      CONFIG_FILE_ERRORS_MAX);
                if (r < 0)
                        ctx->oom = r;
                ctx->stop = true;
                return;
        }
        r = config_errors_addv(ctx->errors, ctx->file, line, fmt, ap);
        if (r < 0) {
                ctx->oom = r;
                ctx->stop = true;
        }
}

static void ctx_error(struct parse_ctx *ctx, unsigned line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void ctx_error(struct parse_ctx *ctx, unsigned line, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        ctx_errorv(ctx, line, fmt, ap);
        va_end(ap);
}

static void ctx_oom(struct parse_ctx *ctx) {
        ctx->oom = -ENOMEM;
        ctx->stop = true;
}

/* ---- value parsers ---- */

int config_parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

/*
 * Unsigned decimal "123" or "12.5" → mantissa 125, 1 decimal. Fixed point
 * so that "0.1s" is exactly 100000 µs and printing never drifts. At most
 * 18 digits (fits in uint64_t). On error the reason is "number too large"
 * or "not a <what>".
 */
static int parse_decimal(const char *s, const char *what, uint64_t *ret_mant, unsigned *ret_dec,
                         const char **ret_rest, char *reason, size_t size) {
        uint64_t m = 0;
        unsigned digits = 0, dec = 0;
        bool dot = false;
        const char *p = s;

        for (;; p++) {
                if (*p >= '0' && *p <= '9') {
                        if (++digits > 18) {
                                snprintf(reason, size, "number too large");
                                return -ERANGE;
                        }
                        m = m * 10 + (uint64_t) (*p - '0');
                        if (dot)
                                dec++;
                } else if (*p == '.' && !dot) {
                        dot = true;
                } else
                        break;
        }
        if (digits == 0 || (dot && dec == 0)) {
                snprintf(reason, size, "not a %s", what);
                return -EINVAL;
        }
        *ret_mant = m;
        *ret_dec = dec;
        *ret_rest = p;
        return 0;
}

static uint64_t pow10u(unsigned n) {
        uint64_t r = 1;
        while (n-- > 0)
                r *= 10;
        return r;
}

static const char *skip_space(const char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        return s;
}

static const struct {
        const char *name;
        uint64_t usec;
} duration_units[] = {
        { "us", 1 },
        { "usec", 1 },
        { "ms", USEC_PER_MSEC },
        { "msec", USEC_PER_MSEC },
        { "s", USEC_PER_SEC },
        { "sec", USEC_PER_SEC },
        { "min", 60 * USEC_PER_SEC },
        { "h", 3600 * USEC_PER_SEC },
        { "d", 86400 * USEC_PER_SEC },
};

/* Canonical units for printing, largest first. */
static const struct {
        const char *name;
        uint64_t usec;
} duration_print_units[] = {
        { "d", 86400 * USEC_PER_SEC },
        { "h", 3600 * USEC_PER_SEC },
        { "min", 60 * USEC_PER_SEC },
        { "s", USEC_PER_SEC },
        { "ms", USEC_PER_MSEC },
        { "us", 1 },
};

char *config_format_duration(uint64_t usec, char *buf, size_t size) {
        for (size_t i = 0; i < ELEMENTSOF(duration_print_units); i++) {
                uint64_t u = duration_print_units[i].usec;

                if (usec % u == 0 && (usec > 0 || u == USEC_PER_SEC)) {
                        snprintf(buf, size, "%" PRIu64 "%s", usec / u, duration_print_units[i].name);
                        return buf;
                }
        }
        snprintf(buf, size, "%" PRIu64 "us", usec);
        return buf;
}

/* Parse "<decimal><spaces><unit>" where the unit is a duration unit; rest after the unit in *ret_rest. */
static int parse_duration_prefix(const char *s, const char *hint_unit, uint64_t *ret_usec, const char **ret_rest,
                                 char *reason, size_t size) {
        uint64_t m, v;
        unsigned dec;
        const char *rest, *u;
        size_t ulen;
        int r;

        r = parse_decimal(s, "duration (e.g. 500ms, 5s, 10min)", &m, &dec, &rest, reason, size);
        if (r < 0)
                return r;
        u = skip_space(rest);
        for (ulen = 0; isalpha((unsigned char) u[ulen]); ulen++)
                ;
        if (ulen == 0) {
                snprintf(reason, size, "missing unit (us, ms, s, min, h, d), e.g. %.*s%s",
                         (int) (rest - s), s, hint_unit);
                return -EINVAL;
        }
        for (size_t i = 0; i < ELEMENTSOF(duration_units); i++) {
                if (strlen(duration_units[i].name) != ulen || strncmp(u, duration_units[i].name, ulen) != 0)
                        continue;
                if (__builtin_mul_overflow(m, duration_units[i].usec, &v)) {
                        snprintf(reason, size, "number too large");
                        return -ERANGE;
                }
                if (v % pow10u(dec) != 0) {
                        snprintf(reason, size, "finer than 1us");
                        return -EINVAL;
                }
                *ret_usec = v / pow10u(dec);
                *ret_rest = u + ulen;
                return 0;
        }
        snprintf(reason, size, "unknown unit \"%.*s\" (us, ms, s, min, h, d)", (int) ulen, u);
        return -EINVAL;
}

int config_parse_duration(const char *s, uint64_t min_usec, uint64_t max_usec,
                          uint64_t *ret_usec, char *reason, size_t size) {
        const char *rest;
        uint64_t v;
        int r;

        r = parse_duration_prefix(s, "s", &v, &rest, reason, size);
        if (r < 0)
                return r;
        if (*skip_space(rest) != '\0') {
                snprintf(reason, size, "not a duration (e.g. 500ms, 5s, 10min)");
                return -EINVAL;
        }
        if (v < min_usec || v > max_usec) {
                char a[32], b[32];
                snprintf(reason, size, "out of range (%s..%s)",
                         config_format_duration(min_usec, a, sizeof(a)),
                         config_format_duration(max_usec, b, sizeof(b)));
                return -ERANGE;
        }
        *ret_usec = v;
        return 0;
}

/* A fixed-point number with at most max_dec decimals, followed by unit (required); → value * 10^max_dec. */
static int parse_fixed_unit(const char *s, unsigned max_dec, const char *unit, const char *what,
                            uint64_t *ret_scaled, char *reason, size_t size) {
        uint64_t m;
        unsigned dec;
        const char *rest;
        char kind[64];
        int r;

        snprintf(kind, sizeof(kind), "%s (e.g. %s)", what, streq(unit, "%") ? "80%" : "2000/s");
        r = parse_decimal(s, kind, &m, &dec, &rest, reason, size);
        if (r < 0)
                return r;
        if (dec > max_dec) {
                snprintf(reason, size, "at most %u decimals", max_dec);
                return -EINVAL;
        }
        rest = skip_space(rest);
        if (*rest == '\0') {
                snprintf(reason, size, "missing unit, write %s%s", s, unit);
                return -EINVAL;
        }
        if (strcmp(rest, unit) != 0 && !(streq(unit, "/s") && streq(rest, "/sec"))) {
                snprintf(reason, size, "unknown unit \"%s\" (expected %s)", rest, unit);
                return -EINVAL;
        }
        *ret_scaled = m * pow10u(max_dec - dec);   /* ≤ 10^18 * 10^3: see the digit limit below */
        return 0;
}

static void format_fixed(uint64_t v, unsigned dec, const char *unit, char *buf, size_t size) {
        uint64_t p = pow10u(dec), ip = v / p, fp = v % p;
        char frac[24];
        size_t n;

        if (fp == 0) {
                snprintf(buf, size, "%" PRIu64 "%s", ip, unit);
                return;
        }
        snprintf(frac, sizeof(frac), "%0*" PRIu64, (int) dec, fp);
        n = strlen(frac);
        while (n > 0 && frac[n - 1] == '0')
                frac[--n] = '\0';
        snprintf(buf, size, "%" PRIu64 ".%s%s", ip, frac, unit);
}

/*
 * parse_fixed_unit() with the range check: min and max are in the unit as
 * written, per_unit turns that into the stored value (100: "80%" → 0.80),
 * format prints a stored value for the "out of range" reason.
 */
static int parse_fixed_bounded(const char *s, unsigned dec, const char *unit, const char *what,
                               double min, double max, double per_unit,
                               char *(*format)(double, char *, size_t),
                               double *ret, char *reason, size_t size) {
        double scale = (double) pow10u(dec);
        uint64_t v;  /* value * 10^dec */
        int r;

        if (strlen(s) > 16) {
                snprintf(reason, size, "number too large");
                return -ERANGE;
        }
        r = parse_fixed_unit(s, dec, unit, what, &v, reason, size);
        if (r < 0)
                return r;
        if ((double) v < min * scale - 0.5 || (double) v > max * scale + 0.5) {
                char a[32], b[32];
                snprintf(reason, size, "out of range (%s..%s)",
                         format(min / per_unit, a, sizeof(a)), format(max / per_unit, b, sizeof(b)));
                return -ERANGE;
        }
        *ret = (double) v / (scale * per_unit);
        return 0;
}

int config_parse_percent(const char *s, double min_pct, double max_pct,
                         double *ret_frac, char *reason, size_t size) {
        return parse_fixed_bounded(s, 2, "%", "percentage", min_pct, max_pct, 100, config_format_percent,
                                   ret_frac, reason, size);
}

char *config_format_percent(double frac, char *buf, size_t size) {
        double x = round(frac * 10000.0);
        format_fixed(x > 0 ? (uint64_t) x : 0, 2, "%", buf, size);
        return buf;
}

int config_parse_rate(const char *s, double min, double max, double *ret, char *reason, size_t size) {
        return parse_fixed_bounded(s, 3, "/s", "rate", min, max, 1, config_format_rate, ret, reason, size);
}

char *config_format_rate(double r, char *buf, size_t size) {
        double x = round(r * 1000.0);
        format_fixed(x > 0 ? (uint64_t) x : 0, 3, "/s", buf, size);
        return buf;
}

int config_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret, char *reason, size_t size) {
        uint64_t v;
        int r;

        r = util_parse_u64(s, &v);
        if (r == -ERANGE || (r >= 0 && (v < min || v > max))) {
                snprintf(reason, size, "out of range (%" PRIu64 "..%" PRIu64 ")", min, max);
                return -ERANGE;
        }
        if (r < 0) {
                snprintf(reason, size, "not a whole number");
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

int config_split_words(const char *s, char ***ret, char *reason, size_t size) {
        _cleanup_strv_free_ char **l = NULL;
        int n = 0;

        for (;;) {
                const char *start, *end;
                char q = 0;
                _cleanup_free_ char *w = NULL;

                s += strspn(s, " \t");
                if (!*s)
                        break;
                if (*s == '"' || *s == '\'') {
                        q = *s++;
                        start = s;
                        end = strchr(s, q);
                        if (!end) {
                                snprintf(reason, size, "unbalanced quotes");
                                return -EINVAL;
                        }
                        s = end + 1;
                        if (*s && *s != ' ' && *s != '\t') {
                                snprintf(reason, size, "text right after a closing quote");
                                return -EINVAL;
                        }
                } else {
                        start = s;
                        end = s + strcspn(s, " \t");
                        s = end;
                }
                if (end == start) {
                        snprintf(reason, size, "empty entry \"\"");
                        return -EINVAL;
                }
                if (++n > CONFIG_LIST_MAX) {
                        snprintf(reason, size, "more than %d entries", CONFIG_LIST_MAX);
                        return -E2BIG;
                }
                w = strndup(start, (size_t) (end - start));
                if (!w || strv_push(&l, w) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return n;
}

char *config_format_word(const char *w, char *buf, size_t size) {
        /* a ';' after a space starts an inline comment (inih), so a word starting with one is quoted too */
        bool quote = w[0] == '\0' || w[0] == '"' || w[0] == '\'' || w[0] == ';' || strpbrk(w, " \t");

        if (!quote)
                snprintf(buf, size, "%s", w);
        else
                /* parsed from "..." it holds no '"', from '...' no '\'' (config_split_words) */
                snprintf(buf, size, strchr(w, '"') ? "'%s'" : "\"%s\"", w);
        return buf;
}

/* ---- per-key checks of list entries ---- */

static bool has_glob(const char *s) {
        return strpbrk(s, "*?[") != NULL;
}

/* A reason why the glob can never match, or NULL. */
static const char *check_glob(enum key k, const char *g, char *reason, size_t size) {
        switch (k) {
        case K_COMM:
                /* TASK_COMM_LEN is 16: the kernel truncates names to 15 bytes */
                if (!has_glob(g) && strlen(g) > 15) {
                        snprintf(reason, size, "longer than 15 characters, the kernel truncates comm: use \"%.15s\" or a glob", g);
                        return reason;
                }
                break;
        case K_EXE:
        case K_CGROUP:
                if (g[0] != '/' && g[0] != '*') {
                        snprintf(reason, size, "must be an absolute path or start with '*'");
                        return reason;
                }
                break;
        case K_UNIT:
                if (!strchr(g, '.') && !strchr(g, '*')) {
                        snprintf(reason, size, "no unit type, e.g. %s.service", g);
                        return reason;
                }
                break;
        default:
                break;
        }
        return NULL;
}

static bool valid_feature_name(const char *s) {
        const char *n = strncmp(s, "NO_", 3) == 0 ? s + 3 : s;

        if (!(*n >= 'A' && *n <= 'Z') || strlen(s) > 63)
                return false;
        for (; *n; n++)
                if (!((*n >= 'A' && *n <= 'Z') || (*n >= '0' && *n <= '9') || *n == '_'))
                        return false;
        return true;
}

static bool valid_name(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > POLICY_NAME_MAX || !isalnum((unsigned char) s[0]))
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char) *s) && !strchr("_-.@", *s))
                        return false;
        return true;
}

static bool valid_user_name(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 32 || s[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && !strchr("_.-", s[i]) && !(s[i] == '$' && i == n - 1))
                        return false;
        return true;
}

/*
 * "kernel.sched_autogroup_enabled" (also with '/') or "debug:NAME" for
 * the scheduler's debugfs tunables; normalized to dots into name.
 */
static int check_sysctl(const char *entry, char *name, size_t name_size, const char **ret_value,
                        char *reason, size_t size) {
        const char *eq = strchr(entry, '='), *v;
        size_t n;

        if (!eq || eq == entry) {
                snprintf(reason, size, "expected NAME=VALUE");
                return -EINVAL;
        }
        n = (size_t) (eq - entry);
        while (n > 0 && (entry[n - 1] == ' ' || entry[n - 1] == '\t'))
                n--;
        if (n >= name_size || n >= 96) {
                snprintf(reason, size, "name longer than 95 characters");
                return -EINVAL;
        }
        memcpy(name, entry, n);
        name[n] = '\0';
        v = skip_space(eq + 1);
        if (!*v) {
                snprintf(reason, size, "empty value");
                return -EINVAL;
        }
        if (strlen(v) > 63) {
                snprintf(reason, size, "value longer than 63 characters");
                return -EINVAL;
        }

        if (strncmp(name, "debug:", 6) == 0) {
                const char *t = name + 6;
                if (!*t)
                        goto bad_name;
                for (; *t; t++)
                        if (!islower((unsigned char) *t) && !isdigit((unsigned char) *t) && *t != '_')
                                goto bad_name;
        } else {
                bool dot = false, prev_sep = true;
                for (char *t = name; *t; t++) {
                        if (*t == '/')
                                *t = '.';
                        if (*t == '.') {
                                if (prev_sep)
                                        goto bad_name;
                                dot = true;
                                prev_sep = true;
                        } else if (islower((unsigned char) *t) || isdigit((unsigned char) *t) || *t == '_' || *t == '-')
                                prev_sep = false;
                        else
                                goto bad_name;
                }
                if (!dot || prev_sep)
                        goto bad_name;
        }
        *ret_value = v;
        return 0;

bad_name:
        snprintf(reason, size, "invalid name (e.g. kernel.sched_autogroup_enabled or debug:migration_cost_ns)");
        return -EINVAL;
}

/* ---- the handler ---- */

static int lookup_key(enum section sec, const char *name, enum key *ret_any_section) {
        int found = -1;

        for (int k = 0; k < _K_MAX; k++) {
                if (strcasecmp(keys[k].name, name) != 0)
                        continue;
                if (keys[k].section == sec)
                        return k;
                found = k;
        }
        if (found >= 0)
                *ret_any_section = (enum key) found;
        return -1;
}

/* The field keys[k] says k is stored in, in base (struct daemon_settings or struct policy). */
static void *key_field(enum key k, void *base) {
        return (uint8_t *) base + keys[k].offset;
}

/* V_UINT fields are unsigned, int (≤ 999 here), int64_t or uint64_t; the bounds fit all of them. */
_Static_assert(sizeof(unsigned) == sizeof(uint32_t) && sizeof(int) == sizeof(uint32_t), "32-bit int");

static void store_uint(void *field, size_t size, uint64_t u) {
        if (size == sizeof(uint32_t)) {
                uint32_t v = (uint32_t) u;
                memcpy(field, &v, sizeof(v));
        } else
                memcpy(field, &u, sizeof(u));
}

/*
 * Parse value for a key of the table (V_BOOL ... V_RATE) with its bounds
 * and store it in base. Returns 0, or -EINVAL/-ERANGE with a reason (the
 * field is left alone then).
 */
static int key_parse_store(enum key k, void *base, const char *value, char *reason, size_t size) {
        const struct key_def *kd = &keys[k];
        void *field = key_field(k, base);
        uint64_t u;
        bool b;
        int r;

        switch (kd->kind) {
        case V_BOOL:
        case V_TRISTATE:
                if (config_parse_bool(value, &b) < 0) {
                        snprintf(reason, size, "not a boolean (yes or no)");
                        return -EINVAL;
                }
                if (kd->kind == V_BOOL)
                        *(bool *) field = b;
                else
                        *(int *) field = b ? MATCH_YES : MATCH_NO;
                return 0;
        case V_UINT:
                r = config_parse_uint(value, kd->umin, kd->umax, &u, reason, size);
                if (r >= 0)
                        store_uint(field, kd->field_size, u);
                return r;
        case V_DURATION:
                return config_parse_duration(value, kd->umin, kd->umax, field, reason, size);
        case V_PERCENT:
                return config_parse_percent(value, kd->dmin, kd->dmax, field, reason, size);
        case V_RATE:
                return config_parse_rate(value, kd->dmin, kd->dmax, field, reason, size);
        default:
                /* V_CUSTOM and V_LIST are handled by their callers */
                snprintf(reason, size, "internal error: key %s has no parser", kd->name);
                return -EINVAL;
        }
}

/*
 * One word of a list key's value, checked as key k wants: a glob for the
 * match keys, a user name or uid for User= (its uid to *uid), a feature
 * name that does not contradict one already in *list for SchedFeatures=.
 * False when it is bad (reported, file:line).
 */
static bool list_word_ok(struct parse_ctx *ctx, enum key k, char **list, const char *w, uid_t *uid,
                         const char *name, const char *value) {
        char reason[160];

        if (k == K_COMM || k == K_EXE || k == K_CMDLINE || k == K_CGROUP || k == K_UNIT) {
                if (check_glob(k, w, reason, sizeof(reason))) {
                        ctx_error(ctx, ctx->line, "%s=%s: %s: %s", name, value, w, reason);
                        return false;
                }
        } else if (k == K_USER) {
                uint64_t u;

                if (util_parse_u64(w, &u) >= 0) {
                        if (u >= UINT32_MAX) {
                                ctx_error(ctx, ctx->line, "%s=%s: %s: uid out of range", name, value, w);
                                return false;
                        }
                        *uid = (uid_t) u;
                } else {
                        struct passwd pw, *res = NULL;
                        char buf[4096];
                        int r;

                        if (!valid_user_name(w)) {
                                ctx_error(ctx, ctx->line, "%s=%s: %s: not a user name or uid (globs are not supported here)",
                                          name, value, w);
                                return false;
                        }
                        r = getpwnam_r(w, &pw, buf, sizeof(buf), &res);
                        if (r != 0 || !res) {
                                ctx_error(ctx, ctx->line, "%s=%s: %s: no such user", name, value, w);
                                return false;
                        }
                        *uid = res->pw_uid;
                }
        } else if (k == K_SCHED_FEATURES) {
                const char *base = strncmp(w, "NO_", 3) == 0 ? w + 3 : w;
                char other[80];

                if (!valid_feature_name(w)) {
                        ctx_error(ctx, ctx->line,
                                  "%s=%s: %s: invalid feature name (upper-case letters, digits and '_', e.g. NO_PLACE_LAG)",
                                  name, value, w);
                        return false;
                }
                snprintf(other, sizeof(other), "%s%s", base == w ? "NO_" : "", base);
                if (strv_contains(list, other)) {
                        ctx_error(ctx, ctx->line, "%s=%s: %s: contradicts %s", name, value, w, other);
                        return false;
                }
        }
        return true;
}

/*
 * The words of a list key's value added to *list, each checked as key k
 * wants (globs, user names, feature names), duplicates once, at most
 * CONFIG_LIST_MAX; for User= also their uids to *uids. Every bad word is
 * reported (file:line) and skipped. True when one was.
 */
static bool list_add_words(struct parse_ctx *ctx, enum key k, char ***list, uid_t **uids, const char *name,
                           const char *value) {
        _cleanup_strv_free_ char **words = NULL;
        char reason[160];
        bool bad = false;
        int r;

        r = config_split_words(value, &words, reason, sizeof(reason));
        if (r == -ENOMEM) {
                ctx_oom(ctx);
                return false;
        }
        if (r < 0) {
                ctx_error(ctx, ctx->line, "%s=%s: %s", name, value, reason);
                return true;
        }
        if (r == 0) {
                /* an empty assignment resets the list (systemd) */
                strv_free(*list);
                *list = NULL;
                if (uids) {
                        free(*uids);
                        *uids = NULL;
                }
                return false;
        }

        for (char **w = words; *w; w++) {
                uid_t uid = 0;

                if (!list_word_ok(ctx, k, *list, *w, &uid, name, value)) {
                        bad = true;
                        continue;
                }
                if (strv_contains(*list, *w))
                        continue;
                if (strv_length(*list) >= CONFIG_LIST_MAX) {
                        ctx_error(ctx, ctx->line, "%s=%s: more than %d entries", name, value, CONFIG_LIST_MAX);
                        return true;
                }
                if (k == K_USER && uids) {
                        size_t n = strv_length(*list);
                        uid_t *nu = reallocarray(*uids, n + 1, sizeof(uid_t));
                        if (!nu) {
                                ctx_oom(ctx);
                                return bad;
                        }
                        nu[n] = uid;
                        *uids = nu;
                }
                if (strv_push(list, *w) < 0) {
                        ctx_oom(ctx);
                        return bad;
                }
        }
        return bad;
}

/* A policy's list key: a bad word marks the policy and the key bad. */
static void list_add(struct parse_ctx *ctx, struct pending *pd, enum key k, char ***list, const char *name,
                     const char *value) {
        if (list_add_words(ctx, k, list, k == K_USER ? &pd->p.match.uids : NULL, name, value))
                pd->bad = pd->origin[k].bad = true;
}

/*
 * The policy keys parsed by hand. Each returns 0, or a negative errno with
 * the reason filled for a bad value; out of memory is ctx_oom()'s and
 * returns 0 (nothing more to say about the value).
 */
static int policy_name_set(struct parse_ctx *ctx, struct policy *p, const char *value, char *reason, size_t size) {
        if (!valid_name(value)) {
                snprintf(reason, size,
                         "invalid name (letters, digits, '_', '-', '.', '@'; starts with a letter or digit; at most %d)",
                         POLICY_NAME_MAX);
                return -EINVAL;
        }
        free(p->name);
        p->name = strdup(value);
        if (!p->name) {
                ctx_oom(ctx);
                return 0;
        }
        p->name_line = ctx->line;
        return 0;
}

static int policy_detector_set(struct policy *p, const char *value, char *reason, size_t size) {
        p->detector = detector_from_string(value);
        if (p->detector == _DETECT_INVALID) {
                snprintf(reason, size, "unknown detector (hog, pair, spread, rundelay, steal, always)");
                return -EINVAL;
        }
        return 0;
}

static int policy_action_set(struct parse_ctx *ctx, struct policy *p, const char *value, char *reason,
                             size_t size) {
        p->action = policy_action_from_string(value);
        p->action_line = ctx->line;
        if (p->action == _ACTION_INVALID) {
                snprintf(reason, size, "unknown action (pin, colocate, spread, weight, features, sysctl, report, exclude)");
                return -EINVAL;
        }
        return 0;
}

/* A value of a key that names one of n choices (name(0..n-1)): its index
 * into *ret, or -EINVAL with the choices in reason. */
static int choice_set(const char *value, const char *(*name)(int), int n, int *ret, const char *choices,
                      char *reason, size_t size) {
        for (int v = 0; v < n; v++)
                if (streq(value, name(v))) {
                        *ret = v;
                        return 0;
                }
        snprintf(reason, size, "unknown value (%s)", choices);
        return -EINVAL;
}

/* ms of waiting per second of wall time: "50ms" (or "50ms/s"); at most all of it */
static int policy_run_delay_set(struct policy *p, const char *value, char *reason, size_t size) {
        const char *rest;
        uint64_t u;
        int r;

        r = parse_duration_prefix(value, "ms", &u, &rest, reason, size);
        if (r < 0)
                return r;
        rest = skip_space(rest);
        if (*rest && !streq(rest, "/s")) {
                snprintf(reason, size, "not a duration per second (e.g. 50ms)");
                return -EINVAL;
        }
        if (u < 1 || u > USEC_PER_SEC) {
                snprintf(reason, size, "out of range (1us..1s per second)");
                return -ERANGE;
        }
        p->run_delay_min_ms_per_s = (double) u / 1000.0;
        return 0;
}

/* One "name=value" more; an empty value empties the list. */
static int policy_sysctl_add(struct parse_ctx *ctx, struct policy *p, const char *value, char *reason, size_t size) {
        char sname[128], *entry;
        const char *sval;
        int r;

        if (!*value) {
                strv_free(p->sysctls);
                p->sysctls = NULL;
                return 0;
        }
        r = check_sysctl(value, sname, sizeof(sname), &sval, reason, size);
        if (r < 0)
                return r;
        for (char **e = p->sysctls; e && *e; e++) {
                size_t n = strcspn(*e, "=");
                if (n == strlen(sname) && strncmp(*e, sname, n) == 0) {
                        snprintf(reason, size, "%s is already set by this policy", sname);
                        return -EINVAL;
                }
        }
        if (strv_length(p->sysctls) >= CONFIG_LIST_MAX) {
                snprintf(reason, size, "more than %d entries", CONFIG_LIST_MAX);
                return -E2BIG;
        }
        if (asprintf(&entry, "%s=%s", sname, sval) < 0) {
                ctx_oom(ctx);
                return 0;
        }
        r = strv_push(&p->sysctls, entry);
        free(entry);
        if (r < 0)
                ctx_oom(ctx);
        return 0;
}

/* A CPU list, kept in its canonical form; an empty value clears it. */
static int policy_cpus_set(struct parse_ctx *ctx, struct policy *p, const char *value, char *reason, size_t size) {
        char buf[CONFIG_LINE_MAX + 1];
        cpumask_t m;
        int r;

        if (!*value) {
                strv_free(p->cpus);
                p->cpus = NULL;
                cpumask_zero(&p->cpus_mask);
                return 0;
        }
        r = cpumask_parse_list(value, &m);
        if (r == -E2BIG) {
                snprintf(reason, size, "CPU number above %d", CPUMASK_MAX - 1);
                return r;
        }
        if (r < 0) {
                snprintf(reason, size, "not a CPU list (e.g. 0-3,8)");
                return r;
        }
        if (!cpumask_format_list(&m, buf, sizeof(buf))) {
                snprintf(reason, size, "CPU list too long");
                return -E2BIG;
        }
        strv_free(p->cpus);
        p->cpus = NULL;
        if (strv_push(&p->cpus, buf) < 0) {
                ctx_oom(ctx);
                return 0;
        }
        p->cpus_mask = m;
        return 0;
}

static void policy_key(struct parse_ctx *ctx, struct pending *pd, enum key k, const char *name, const char *value) {
        struct policy *p = &pd->p;
        char reason[160] = "";
        int r;

        free(pd->origin[k].value);
        pd->origin[k].value = strdup(value);
        if (!pd->origin[k].value)
                return ctx_oom(ctx);
        pd->origin[k].line = ctx->line;
        pd->origin[k].bad = false;

        switch (k) {
        case K_NAME:
                r = policy_name_set(ctx, p, value, reason, sizeof(reason));
                break;
        case K_DETECTOR:
                r = policy_detector_set(p, value, reason, sizeof(reason));
                break;
        case K_ACTION:
                r = policy_action_set(ctx, p, value, reason, sizeof(reason));
                break;
        case K_OWNERS:
                r = choice_set(value, pair_owners_to_string, _PAIR_OWNERS_MAX, &p->pair_owners, "trusted, same, any",
                               reason, sizeof(reason));
                break;
        case K_SPAN:
                r = choice_set(value, pair_span_to_string, _PAIR_SPAN_MAX, &p->pair_span, "auto, cpu, core, llc",
                               reason, sizeof(reason));
                break;
        case K_RUN_DELAY:
                r = policy_run_delay_set(p, value, reason, sizeof(reason));
                break;
        case K_SYSCTL:
                r = policy_sysctl_add(ctx, p, value, reason, sizeof(reason));
                break;
        case K_CPUS:
                r = policy_cpus_set(ctx, p, value, reason, sizeof(reason));
                break;
        default:
                if (keys[k].kind == V_LIST)
                        return list_add(ctx, pd, k, key_field(k, p), name, value);
                r = key_parse_store(k, p, value, reason, sizeof(reason));
                break;
        }

        if (r < 0) {
                ctx_error(ctx, ctx->line, "%s=%s: %s", name, value, reason);
                pd->bad = pd->origin[k].bad = true;
        }
}

/*
 * Scope=: cgroup path patterns, as [Match] Cgroup= takes them; each
 * assignment adds, an empty one resets (systemd's rule for lists). A bad
 * pattern is reported and left out, the others kept: checked as a
 * policy's Cgroup= is.
 */
static void scope_add(struct parse_ctx *ctx, struct daemon_settings *d, const char *name, const char *value) {
        (void) list_add_words(ctx, K_CGROUP, &d->scope, NULL, name, value);
}

static void daemon_key(struct parse_ctx *ctx, enum key k, const char *name, const char *value) {
        struct daemon_settings *d = &ctx->config->daemon;
        char reason[160] = "";
        double x;
        int r = 0;

        switch (k) {
        case K_LOG_LEVEL: {
                int level = log_level_from_string(value);

                r = level < 0 ? level : 0;
                if (r >= 0)
                        d->log_level = level;
                else
                        snprintf(reason, sizeof(reason), "unknown level (err, warning, notice, info, debug)");
                break;
        }
        case K_MAX_WAKE_EVENTS:
                r = config_parse_rate(value, 100, 100000000, &x, reason, sizeof(reason));
                if (r >= 0 && x != floor(x)) {
                        snprintf(reason, sizeof(reason), "not a whole number of events per second");
                        r = -EINVAL;
                }
                if (r >= 0)
                        d->max_wake_events_per_s = (uint64_t) x;
                break;
        case K_METRICS_TEXTFILE: {
                size_t n = strlen(value);

                /* node_exporter's textfile collector reads *.prom only */
                r = -EINVAL;
                if (n == 0)
                        r = 0;   /* empty: off */
                else if (value[0] != '/')
                        snprintf(reason, sizeof(reason), "not an absolute path");
                else if (n < 6 || !streq(value + n - 5, ".prom"))
                        snprintf(reason, sizeof(reason), "must end in .prom (node_exporter's textfile collector reads only those)");
                else if (n >= sizeof(d->metrics_textfile))
                        snprintf(reason, sizeof(reason), "longer than %zu bytes", sizeof(d->metrics_textfile) - 1);
                else
                        r = 0;
                if (r >= 0)
                        snprintf(d->metrics_textfile, sizeof(d->metrics_textfile), "%s", value);
                break;
        }
        case K_SCOPE:
                scope_add(ctx, d, name, value);  /* reports its own errors, per pattern */
                return;
        default:
                r = key_parse_store(k, d, value, reason, sizeof(reason));
                break;
        }
        if (r < 0)
                ctx_error(ctx, ctx->line, "%s=%s: %s", name, value, reason);
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        struct parse_ctx *ctx = user;
        enum key other = _K_MAX;
        int k;

        if (ctx->stop)
                return 1;
        if (!value)
                value = "";
        if (!*name) {
                ctx_error(ctx, ctx->line, "=%s: missing key name", value);
                return 1;
        }
        if (ctx->section == SEC_SKIP)
                return 1;
        if (ctx->section == SEC_NONE) {
                ctx_error(ctx, ctx->line, "%s=%s: outside of any section (start with %s)", name, value,
                          ctx->roles & CONFIG_ROLE_POLICY ? "[Policy]" : "[Daemon]");
                return 1;
        }

        k = lookup_key(ctx->section, name, &other);
        if (k < 0) {
                if (other != _K_MAX)
                        ctx_error(ctx, ctx->line, "%s=%s: unknown key in [%s] (%s= belongs in [%s])", name, value,
                                  section_names[ctx->section], keys[other].name, section_names[keys[other].section]);
                else
                        ctx_error(ctx, ctx->line, "%s=%s: unknown key in [%s]", name, value,
                                  section_names[ctx->section]);
                if (ctx->cur && ctx->section != SEC_DAEMON)
                        ctx->cur->bad = true;
                return 1;
        }

        if (ctx->section == SEC_DAEMON)
                daemon_key(ctx, (enum key) k, name, value);
        else
                policy_key(ctx, ctx->cur, (enum key) k, name, value);
        return 1;
}

/* ---- policies: start, finish, validate ---- */

static void file_stem(const char *file, char *buf, size_t size) {
        const char *b = strrchr(file, '/'), *dot;
        size_t n;

        b = b ? b + 1 : file;
        dot = strrchr(b, '.');
        n = dot && dot != b ? (size_t) (dot - b) : strlen(b);
        if (n >= size)
                n = size - 1;
        memcpy(buf, b, n);
        buf[n] = '\0';
}

static const char *origin_value(const struct pending *pd, enum key k) {
        return pd->origin[k].value ? pd->origin[k].value : "";
}

/* Report at the line where k was written, as "Key=value: ...". */
static void key_error(struct parse_ctx *ctx, struct pending *pd, enum key k, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void key_error(struct parse_ctx *ctx, struct pending *pd, enum key k, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (r < 0)
                return ctx_oom(ctx);
        ctx_error(ctx, pd->origin[k].line ? pd->origin[k].line : pd->p.line, "%s=%s: %s", keys[k].name,
                  origin_value(pd, k), m);
        pd->bad = true;
}

static void format_allowed_actions(enum detector d, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = '\0';
        for (int a = 0; a < _ACTION_MAX; a++)
                if (detector_rules[d].actions & (1u << a))
                        n += (size_t) snprintf(buf + n, n < size ? size - n : 0, "%s%s", n ? ", " : "",
                                               policy_action_to_string((enum policy_action) a));
}

static void format_detect_keys(uint64_t mask, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = '\0';
        for (int k = 0; k < _K_MAX; k++)
                if (mask & KBIT(k))
                        n += (size_t) snprintf(buf + n, n < size ? size - n : 0, "%s%s=", n ? ", " : "",
                                               keys[k].name);
}

static void validate_pending(struct parse_ctx *ctx, struct pending *pd) {
        struct policy *p = &pd->p;
        bool action_ok = p->action != _ACTION_INVALID, detector_ok = p->detector != _DETECT_INVALID;
        char buf[160];

        /* Required keys; a key written with a bad value was reported already. */
        if (!pd->origin[K_ACTION].line) {
                ctx_error(ctx, p->line,
                          "Action=: missing; set one of pin, colocate, spread, weight, features, sysctl, report, exclude");
                pd->bad = true;
                action_ok = false;
        }
        if (!pd->origin[K_DETECTOR].line) {
                if (action_ok && p->action == ACTION_EXCLUDE) {
                        p->detector = DETECT_ALWAYS;
                        detector_ok = true;
                } else if (action_ok) {
                        ctx_error(ctx, p->line, "Detector=: missing; set one of hog, pair, spread, rundelay, steal, always");
                        pd->bad = true;
                        detector_ok = false;
                } else
                        detector_ok = false;
        }
        if (!action_ok || !detector_ok)
                return;  /* the combinations below would only repeat the same mistake */

        if (!(detector_rules[p->detector].actions & (1u << p->action))) {
                format_allowed_actions(p->detector, buf, sizeof(buf));
                key_error(ctx, pd, K_ACTION, "not possible with Detector=%s (it allows %s)",
                          detector_to_string(p->detector), buf);
        }

        for (int k = 0; k < _K_MAX; k++) {
                if (keys[k].section != SEC_DETECT || !pd->origin[k].line)
                        continue;
                if (p->action == ACTION_EXCLUDE)
                        key_error(ctx, pd, (enum key) k, "not used by Action=exclude");
                else if (!(detector_rules[p->detector].detect_keys & KBIT(k))) {
                        if (p->detector == DETECT_ALWAYS)
                                key_error(ctx, pd, (enum key) k, "not used by Detector=always (it has no thresholds)");
                        else {
                                format_detect_keys(detector_rules[p->detector].detect_keys, buf, sizeof(buf));
                                key_error(ctx, pd, (enum key) k, "not used by Detector=%s (it reads %s)",
                                          detector_to_string(p->detector), buf);
                        }
                }
        }

        /* [Action] keys belong to one action each. */
        if (p->action == ACTION_WEIGHT && !pd->origin[K_CPU_WEIGHT].line)
                key_error(ctx, pd, K_ACTION, "needs CPUWeight= in [Action]");
        if (p->action != ACTION_WEIGHT && pd->origin[K_CPU_WEIGHT].line)
                key_error(ctx, pd, K_CPU_WEIGHT, "only used by Action=weight");
        if (p->action == ACTION_FEATURES && !p->features && !pd->origin[K_SCHED_FEATURES].bad)
                key_error(ctx, pd, K_ACTION, "needs SchedFeatures= in [Action]");
        if (p->action != ACTION_FEATURES && pd->origin[K_SCHED_FEATURES].line)
                key_error(ctx, pd, K_SCHED_FEATURES, "only used by Action=features");
        if (p->action == ACTION_SYSCTL && !p->sysctls && !pd->origin[K_SYSCTL].bad)
                key_error(ctx, pd, K_ACTION, "needs Sysctl= in [Action]");
        if (p->action != ACTION_SYSCTL && pd->origin[K_SYSCTL].line)
                key_error(ctx, pd, K_SYSCTL, "only used by Action=sysctl");
        if (!(AFFINITY_ACTIONS & (1u << p->action)) && pd->origin[K_CPUS].line)
                key_error(ctx, pd, K_CPUS, "only used by Action=pin, colocate or spread");
        if (pd->origin[K_ALLOW_REALTIME].line &&
            (p->action == ACTION_EXCLUDE || p->action == ACTION_FEATURES || p->action == ACTION_SYSCTL))
                key_error(ctx, pd, K_ALLOW_REALTIME, "not used by Action=%s", policy_action_to_string(p->action));
        if (pd->origin[K_ALLOW_NARROWED].line &&
            (p->action == ACTION_EXCLUDE || p->action == ACTION_FEATURES || p->action == ACTION_SYSCTL))
                key_error(ctx, pd, K_ALLOW_NARROWED, "not used by Action=%s", policy_action_to_string(p->action));
        if (p->action != ACTION_COLOCATE && pd->origin[K_SPAN].line)
                key_error(ctx, pd, K_SPAN, "only used by Action=colocate");
        if (p->action != ACTION_COLOCATE && pd->origin[K_IGNORE_CALIBRATION].line)
                key_error(ctx, pd, K_IGNORE_CALIBRATION, "only used by Action=colocate");

        /* Match keys that would make the policy one that can never act. */
        if (p->match.kthreads == MATCH_YES && p->action != ACTION_EXCLUDE)
                key_error(ctx, pd, K_KERNEL, "kernel threads are never touched; only Action=exclude may match them");
        if (p->match.realtime == MATCH_YES && p->action != ACTION_EXCLUDE && !p->allow_realtime &&
            p->action != ACTION_FEATURES && p->action != ACTION_SYSCTL)
                key_error(ctx, pd, K_REALTIME, "real-time tasks are left alone unless the policy sets AllowRealtime=yes");
}

static void finish_policy(struct parse_ctx *ctx) {
        struct pending *pd = TAKE_PTR(ctx->cur);
        struct policy *p, *np;

        if (!pd)
                return;
        p = &pd->p;
        ctx->n_file_policies++;

        if (!p->name) {
                char stem[256];

                if (ctx->n_file_policies > 1) {
                        ctx_error(ctx, p->line,
                                  "[Policy]: Name= is required for the second and later policies of a file");
                        pd->bad = true;
                } else {
                        file_stem(ctx->file, stem, sizeof(stem));
                        if (!valid_name(stem)) {
                                ctx_error(ctx, p->line,
                                          "[Policy]: the file name \"%s\" is not a valid policy name; set Name=", stem);
                                pd->bad = true;
                        } else {
                                p->name = strdup(stem);
                                if (!p->name) {
                                        pending_free(pd);
                                        return ctx_oom(ctx);
                                }
                        }
                }
        }
        if (!p->name_line)
                p->name_line = p->line;
        if (!p->action_line)
                p->action_line = p->line;
        p->cpu_weight_line = pd->origin[K_CPU_WEIGHT].line ?: p->line;
        p->features_line = pd->origin[K_SCHED_FEATURES].line ?: p->line;
        p->sysctls_line = pd->origin[K_SYSCTL].line ?: p->line;

        validate_pending(ctx, pd);

        if (pd->bad || ctx->oom) {
                pending_free(pd);
                return;
        }
        if (ctx->config->n_policies >= CONFIG_POLICIES_MAX) {
                ctx_error(ctx, p->line, "[Policy]: more than %d policies", CONFIG_POLICIES_MAX);
                pending_free(pd);
                return;
        }
        if (p->action == ACTION_EXCLUDE && asprintf(&p->excluded_why, "excluded by policy %s", p->name) < 0) {
                pending_free(pd);
                return ctx_oom(ctx);
        }

        np = reallocarray(ctx->config->policies, ctx->config->n_policies + 1, sizeof(struct policy));
        if (!np) {
                pending_free(pd);
                return ctx_oom(ctx);
        }
        ctx->config->policies = np;
        np[ctx->config->n_policies++] = *p;
        memset(p, 0, sizeof(*p));      /* moved */
        pending_free(pd);
}

static void start_policy(struct parse_ctx *ctx, bool header) {
        struct pending *pd;

        pd = calloc(1, sizeof(*pd));
        if (!pd)
                return ctx_oom(ctx);
        pd->p = (struct policy) {
                .enabled = true,
                .priority = 50,
                .detector = _DETECT_INVALID,
                .action = _ACTION_INVALID,
                .match.kthreads = MATCH_ANY,
                .match.realtime = MATCH_ANY,
                .util_min = -1,
                .migrations_min_per_s = -1,
                .wake_rate_min_per_s = -1,
                .run_delay_min_ms_per_s = -1,
                .steal_min = -1,
                .group_util_max = -1,
                .pair_owners = -1,
                .cpu_weight = -1,
                .pair_span = -1,
                .line = ctx->line,
        };
        pd->had_header = header;
        pd->p.file = strdup(ctx->file);
        if (!pd->p.file) {
                pending_free(pd);
                return ctx_oom(ctx);
        }
        ctx->cur = pd;
}

static void section_start(struct parse_ctx *ctx, const char *name) {
        enum section s = SEC_NONE;

        for (int i = SEC_DAEMON; i <= SEC_ACTION; i++)
                if (strcasecmp(name, section_names[i]) == 0)
                        s = (enum section) i;

        if (s == SEC_NONE) {
                ctx_error(ctx, ctx->line, "[%s]: unknown section (expected %s)", name,
                          ctx->roles == CONFIG_ROLE_DAEMON ? "[Daemon]" :
                          ctx->roles == CONFIG_ROLE_POLICY ? "[Policy], [Match], [Detect] or [Action]" :
                                                              "[Daemon], [Policy], [Match], [Detect] or [Action]");
                if (ctx->cur && ctx->section != SEC_DAEMON && ctx->section != SEC_NONE)
                        ctx->cur->bad = true;
                ctx->section = SEC_SKIP;
                return;
        }
        if (s == SEC_DAEMON && !(ctx->roles & CONFIG_ROLE_DAEMON)) {
                ctx_error(ctx, ctx->line, "[%s]: not allowed in a .policy file (it belongs in affinityd.conf)", name);
                ctx->section = SEC_SKIP;
                return;
        }
        if (s != SEC_DAEMON && !(ctx->roles & CONFIG_ROLE_POLICY)) {
                ctx_error(ctx, ctx->line, "[%s]: not allowed in a .conf file (policies go in policies.d/NAME.policy)",
                          name);
                ctx->section = SEC_SKIP;
                return;
        }

        ctx->section = s;
        if (s == SEC_POLICY) {
                /* [Policy] starts a new policy, unless it heads the one [Match] etc. already began */
                if (ctx->cur && !ctx->cur->had_header) {
                        ctx->cur->had_header = true;
                        ctx->cur->p.line = ctx->line;
                        return;
                }
                finish_policy(ctx);
                start_policy(ctx, true);
        } else if (s != SEC_DAEMON && !ctx->cur)
                start_policy(ctx, false);
}

/* ---- the reader ---- */

/*
 * Returns 1 with a "Key=value\n" line in buf for inih, 0 for a line dealt
 * with here (blank, comment, section header, error).
 */
static int preprocess_line(struct parse_ctx *ctx, const char *s, size_t len, char *buf, int num) {
        size_t i = 0, max = num > 2 ? (size_t) num - 2 : 0;
        const char *e;

        if (ctx->line == 1 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
                s += 3;
                len -= 3;
        }
        if (len > 0 && s[len - 1] == '\r')
                len--;
        for (size_t j = 0; j < len; j++)
                if ((unsigned char) s[j] < 0x20 && s[j] != '\t') {
                        ctx_error(ctx, ctx->line, "control character 0x%02x in line", (unsigned char) s[j]);
                        return 0;
                }
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
                i++;
        s += i;
        len -= i;
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
                len--;

        if (len == 0 || s[0] == '#' || s[0] == ';')
                return 0;
        if (len > max || len > CONFIG_LINE_MAX) {
                ctx_error(ctx, ctx->line, "line too long (%zu characters, at most %zu; split lists over several lines)",
                          len, MIN(max, (size_t) CONFIG_LINE_MAX));
                return 0;
        }

        if (s[0] == '[') {
                char name[64];
                const char *end = memchr(s, ']', len);
                size_t n;

                if (!end) {
                        ctx_error(ctx, ctx->line, "%.*s: expected [Section]", (int) len, s);
                        return 0;
                }
                n = (size_t) (end - s - 1);
                e = end + 1;
                while (e < s + len && (*e == ' ' || *e == '\t'))
                        e++;
                if (e < s + len && *e != '#' && *e != ';') {
                        ctx_error(ctx, ctx->line, "%.*s: text after the section header", (int) len, s);
                        return 0;
                }
                if (n == 0 || n >= sizeof(name)) {
                        ctx_error(ctx, ctx->line, "%.*s: expected [Section]", (int) len, s);
                        return 0;
                }
                memcpy(name, s + 1, n);
                name[n] = '\0';
                section_start(ctx, name);
                return 0;
        }

        /* inih would also split at ':' (Python configparser); our keys never contain one.
         * s is not NUL-terminated (the last line of a buffer): search within len. */
        for (e = s; e < s + len && *e != '=' && *e != ':'; e++)
                ;
        if (e >= s + len || *e != '=') {
                ctx_error(ctx, ctx->line, "%.*s: expected Key=value%s", (int) len, s,
                          e < s + len ? " (':' is not a separator)" : "");
                return 0;
        }

        memcpy(buf, s, len);
        buf[len] = '\n';
        buf[len + 1] = '\0';
        return 1;
}

static char *reader(char *buf, int num, void *stream) {
        struct parse_ctx *ctx = stream;

        while (!ctx->stop && ctx->pos < ctx->size) {
                const char *start = ctx->data + ctx->pos;
                const char *nl = memchr(start, '\n', ctx->size - ctx->pos);
                size_t len = nl ? (size_t) (nl - start) : ctx->size - ctx->pos;

                ctx->pos += len + (nl ? 1 : 0);
                ctx->line++;
                if (memchr(start, '\0', len)) {
                        ctx_error(ctx, ctx->line, "NUL byte in line (not a text file?)");
                        continue;
                }
                if (preprocess_line(ctx, start, len, buf, num) > 0)
                        return buf;
        }
        return NULL;
}

int config_parse_text(struct config *c, const char *file, const char *data, size_t size,
                      unsigned roles, struct config_errors *errors) {
        struct parse_ctx ctx = {
                .config = c,
                .errors = errors,
                .file = file,
                .roles = roles,
                .data = data,
                .size = size,
                .section = SEC_NONE,
        };

        (void) ini_parse_stream(reader, &ctx, handler, &ctx);
        if (!ctx.stop)
                finish_policy(&ctx);
        pending_free(TAKE_PTR(ctx.cur));
        return ctx.oom;
}
