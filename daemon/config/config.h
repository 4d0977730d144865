/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The effective configuration: [Daemon] settings from affinityd.conf (+
 * affinityd.conf.d/NAME.conf drop-ins) and the policies from
 * policies.d/NAME.policy, merged over the vendor (/usr/lib/affinityd),
 * admin (/etc/affinityd) and runtime (/run/affinityd) directories,
 * systemd-style: a file with the same name in a later directory replaces
 * the earlier one, and a file that is empty or a symlink to /dev/null masks
 * it. The format is documented in affinityd.conf(5) and affinityd.policy(5).
 *
 * Defaults are set apart from parsing (config_new() fills them in), so a
 * reload is "new, parse, validate, swap" (systemd-oomd). A config is
 * immutable once loaded; pointers into it (policies, names) stay valid
 * until config_free().
 *
 * Every mistake is reported as "file:line: key=value: reason" and parsing
 * goes on, so one run shows all errors of all files (OpenBSD ntpd).
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cpumask.h"

struct json_object;

enum log_level_setting {
        LOGL_ERR = 3,
        LOGL_WARNING = 4,
        LOGL_NOTICE = 5,
        LOGL_INFO = 6,
        LOGL_DEBUG = 7,
};

/* MaxThreads= default, also the sampler's when given none (sampler_new(..., 0, ...)). */
#define CONFIG_MAX_THREADS_DEFAULT 65536

struct daemon_settings {
        uint64_t interval_usec;            /* Interval=1s, 100ms..60s */
        bool dry_run;                      /* DryRun=no */
        int log_level;                     /* LogLevel=info (enum log_level_setting) */
        unsigned max_actions_per_interval; /* MaxActionsPerInterval=4, 1..1000 */
        unsigned hysteresis_intervals;     /* Hysteresis=3, 1..100: a finding must persist (and clear) this long */
        uint64_t cooldown_usec;            /* Cooldown=30s, 0..24h, per target after a change */
        bool effect_check;                 /* EffectCheck=yes */
        double effect_tolerance;           /* EffectTolerance=10%, 0..100%: worse by more than this → undo */
        uint64_t retry_after_usec;         /* RetryAfter=10min, 0..7d, after an undone action */
        unsigned max_tracked_threads;      /* MaxThreads=CONFIG_MAX_THREADS_DEFAULT, 64..4194304 */
        uint64_t wake_sample_period;       /* WakeSamplePeriod=1, 1..1000000: perf sample_period start value */
        uint64_t max_wake_events_per_s;    /* MaxWakeEvents=200000/s, 100..100000000: adaptive period keeps under this */
        char metrics_textfile[256];        /* MetricsTextfile= (off): a .prom file, replaced each pass (node_exporter) */
        char **scope;                      /* Scope= (unset: every task): cgroup patterns of the tasks it may change */
};

enum detector {
        DETECT_HOG,       /* busy thread that keeps migrating */
        DETECT_PAIR,      /* two threads waking each other, split across CPUs */
        DETECT_SPREAD,    /* group of part-busy threads that keep migrating */
        DETECT_RUNDELAY,  /* threads waiting runnable too long */
        DETECT_STEAL,     /* hypervisor steal time above threshold */
        DETECT_ALWAYS,    /* no detector: applies whenever the match matches */
        _DETECT_MAX,
        _DETECT_INVALID = -1,
};

/*
 * Whose tasks a pair policy may change for whose (affinityd(8), THREAT
 * MODEL). A pair's two members are both pinned to one CPU; a member owned
 * by another user than its partner is changed for that partner's sake.
 */
enum pair_owners {
        PAIR_OWNERS_TRUSTED,  /* same user, or both root or system accounts (pair_owner_is_system()) */
        PAIR_OWNERS_SAME,     /* same user only */
        PAIR_OWNERS_ANY,      /* anyone's with anyone's */
        _PAIR_OWNERS_MAX,
};
/* Debian's SYS_UID_MAX (login.defs): system accounts are below 1000 */
#define PAIR_OWNERS_SYSTEM_UID_MAX 999
/* systemd's DynamicUser= range (systemd's UIDS-GIDS.md: 61184-65519) and
 * nobody: identities only the system hands out, never a login user's */
#define PAIR_OWNERS_DYNAMIC_UID_MIN 61184
#define PAIR_OWNERS_DYNAMIC_UID_MAX 65519
#define PAIR_OWNERS_NOBODY_UID 65534
static inline bool pair_owner_is_system(uid_t uid) {
        return uid <= PAIR_OWNERS_SYSTEM_UID_MAX || uid == PAIR_OWNERS_NOBODY_UID ||
               (uid >= PAIR_OWNERS_DYNAMIC_UID_MIN && uid <= PAIR_OWNERS_DYNAMIC_UID_MAX);
}
const char *pair_owners_to_string(int o);

/*
 * Span= of a colocate policy: how far a co-located pair may spread. One
 * CPU is what a split costs nothing on; a core's SMT siblings or an LLC
 * leave the kernel room to balance the pair (and its other tasks) where
 * the calibration (sample/calibrate.h) measured a split there as cheap as
 * one CPU.
 */
enum pair_span {
        PAIR_SPAN_AUTO,       /* the widest of core and llc the calibration found free, else cpu */
        PAIR_SPAN_CPU,        /* one CPU */
        PAIR_SPAN_CORE,       /* the SMT siblings of one core */
        PAIR_SPAN_LLC,        /* the CPUs sharing one last-level cache */
        _PAIR_SPAN_MAX,
};
const char *pair_span_to_string(int s);

enum policy_action {
        ACTION_PIN,       /* hog: one CPU per hog */
        ACTION_COLOCATE,  /* pair: both on one CPU */
        ACTION_SPREAD,    /* group: one per CPU / balanced */
        ACTION_WEIGHT,    /* cgroup CPU weight */
        ACTION_FEATURES,  /* sched_features */
        ACTION_SYSCTL,    /* scheduler sysctls / debugfs tunables */
        ACTION_REPORT,    /* only report findings */
        ACTION_EXCLUDE,   /* never touch matching tasks */
        _ACTION_MAX,
        _ACTION_INVALID = -1,
};

/* Kernel= and Realtime= are tri-state: unset matches both kinds of task. */
enum match_tristate {
        MATCH_ANY = -1,   /* key not set */
        MATCH_NO = 0,     /* =no: only tasks that are not kernel threads / not real-time */
        MATCH_YES = 1,    /* =yes: only kernel threads / only real-time tasks */
};

/*
 * Which tasks a policy covers. Every list is a set of fnmatch(3) globs
 * (flags 0: '*' also matches '/'); NULL (an empty list) matches everything;
 * all non-empty lists must match (AND), any glob within one list may match
 * (OR). Lists are de-duplicated, in the order written.
 */
struct policy_match {
        char **comm;     /* Comm=    process name or thread name (either matches) */
        char **exe;      /* Exe=     /proc/PID/exe path; globs start with '/' or '*' */
        char **cmdline;  /* Cmdline= whole command line, NULs as spaces */
        char **cgroup;   /* Cgroup=  cgroup path, e.g. /system.slice/foo.service */
        char **unit;     /* Unit=    systemd unit, e.g. nginx.service */
        char **user;     /* User=    user names or numeric uids, as written (no globs) */
        uid_t *uids;     /* the users resolved at parse time (getpwnam), same order as user */
        int kthreads;    /* Kernel=   enum match_tristate; =yes only with Action=exclude */
        int realtime;    /* Realtime= enum match_tristate; SCHED_FIFO/RR/DEADLINE */
};

#define POLICY_NAME_MAX 63    /* fits struct action.policy[64] */

struct policy {
        char *name;           /* [Policy] Name=, default: file name without .policy */
        char *file;           /* file it came from (for messages) */
        unsigned line;        /* line of its [Policy] section (or its first section) */
        unsigned name_line;   /* line of Name=, or line if the name comes from the file name */
        unsigned action_line; /* line of Action= */
        /* the last line of CPUWeight=, SchedFeatures= and Sysctl=, or line:
         * where a check against this kernel points (levers_check_policy()) */
        unsigned cpu_weight_line, features_line, sysctls_line;
        bool enabled;         /* Enabled=yes */
        int priority;         /* Priority=50, 0..999: lower number wins among matching policies */
        enum detector detector;     /* Detector=; Action=exclude defaults to always */
        enum policy_action action;  /* Action=, required */
        struct policy_match match;

        /* [Detect] thresholds; a value < 0 (or 0 for _usec) means "detector default" */
        double util_min;              /* Util=80%            → 0.80 (fraction of one CPU) */
        double migrations_min_per_s;  /* Migrations=0.2/s */
        double wake_rate_min_per_s;   /* WakeRate=100/s */
        double run_delay_min_ms_per_s;/* RunDelay=50ms (per second of wall time) */
        double steal_min;             /* Steal=10%           → 0.10 */
        double group_util_max;        /* MaxCombinedUtil=120% (pair: above this it is a stream) */
        uint64_t window_usec;         /* Window=5s */
        int pair_owners;              /* Owners= (enum pair_owners), pair policies; -1 unset: trusted */

        /* [Action] */
        int64_t cpu_weight;           /* CPUWeight=1..10000 (v2 scale), -1 unset */
        char **features;              /* SchedFeatures=NO_GENTLE_FAIR_SLEEPERS RUN_TO_PARITY (syntax checked only) */
        char **sysctls;               /* Sysctl=kernel.sched_autogroup_enabled=0, "NAME=VALUE" each (repeatable) */
        char **cpus;                  /* CPUs=2-3: NULL, or one normalized list string ("0-3,8") */
        cpumask_t cpus_mask;          /* the same, parsed; empty if CPUs= is not set */
        bool allow_realtime;          /* AllowRealtime=no   override of the safety defaults */
        bool allow_narrowed;          /* AllowNarrowed=no   */
        int pair_span;                /* Span= (enum pair_span), colocate policies; -1 unset: auto */
        bool ignore_calibration;      /* IgnoreCalibration=no: co-locate where the host reads < CALIB_GAIN_MIN too */

        char *excluded_why;           /* Action=exclude: "excluded by policy NAME" (detect_policy_for's ret_why) */
};

struct config {
        struct daemon_settings daemon;
        struct policy *policies;      /* in load order: files sorted by name, then order within a file */
        size_t n_policies;
        char **files;                 /* the files that were read, in order (for --print / status) */
};

/* Search path, later wins: vendor, admin, runtime. Each may be overridden for tests. */
#define CONFIG_DIRS_MAX 8
struct config_paths {
        const char *dirs[CONFIG_DIRS_MAX + 1];  /* NULL-terminated */
};

/* One validation message: "file:line: key=value: reason". */
struct config_error {
        char *file;
        unsigned line;                /* 0 if the error is about the file as a whole */
        char *message;                /* already formatted "file:line: ..." */
};

struct config_errors {
        struct config_error *items;
        size_t n;
};

struct config *config_new(void);                 /* defaults, no policies */
struct config *config_free(struct config *c);
void config_errors_clear(struct config_errors *e);
/* Append "file:line: <fmt>" ("file: <fmt>" if line is 0), for the checks
 * outside this module that point at a policy's line too (the levers'
 * checks against this kernel). 0 or -ENOMEM. */
int config_errors_add(struct config_errors *e, const char *file, unsigned line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
int config_errors_addv(struct config_errors *e, const char *file, unsigned line, const char *fmt, va_list ap)
        __attribute__((format(printf, 4, 0)));

/* VENDORDIR, SYSCONFDIR "/affinityd", RUNSTATEDIR "/affinityd". */
void config_paths_default(struct config_paths *ret);
/* The directories given (--config-dir, in order; at most CONFIG_DIRS_MAX),
 * or the defaults when dirs is NULL or empty. The strings are borrowed. */
void config_paths_from(char * const *dirs, struct config_paths *ret);

/*
 * Load the merged configuration from the directories (paths NULL: the
 * defaults). Each directory may hold affinityd.conf ([Daemon] only),
 * affinityd.conf.d/NAME.conf drop-ins ([Daemon] only) and
 * policies.d/NAME.policy ([Policy], [Match], [Detect], [Action]). Missing
 * directories are fine. Returns 0 and a new config if there were no
 * errors; -EINVAL with every error collected in ret_errors otherwise (all
 * errors of all files, not just the first); -ENOMEM.
 * ret_errors may be NULL.
 */
int config_load(const struct config_paths *paths, struct config **ret, struct config_errors *ret_errors);

/*
 * Parse explicit files (affctl check FILE..., --print output fed back) in
 * the order given, as one configuration; same error contract. NAME.conf
 * may hold only [Daemon], NAME.policy only policy sections, any other
 * name (and "-" for stdin) both — that is what config_print() writes.
 */
int config_load_files(char * const *files, struct config **ret, struct config_errors *ret_errors);

/* The same for text in memory (the fuzzer, tests); name is used in messages and for the default policy name. */
int config_load_buffer(const char *name, const char *data, size_t size,
                       struct config **ret, struct config_errors *ret_errors);

/*
 * Print the effective configuration in the input format, every value
 * normalized, so that print → parse → print is identical. [Daemon] shows
 * every setting; each policy shows Name, Enabled, Priority, Detector,
 * Action and whatever else is set.
 */
int config_print(const struct config *c, FILE *f);

enum {
        CONFIG_PRINT_SOURCES = 1 << 0,   /* "# FILE:LINE" comment above each policy (not round-trip stable) */
};
int config_print_full(const struct config *c, FILE *f, unsigned flags);

/*
 * `affinityd --check-config [--print]` and `affctl check FILE...`: load
 * files if non-empty, else the directories in paths (NULL: defaults);
 * write every error, one per line, to err; on success with print, the
 * effective configuration to out. Returns 0 if valid, 1 if not, -errno on
 * failure to even try (-ENOMEM).
 */
int config_check_main(const struct config_paths *paths, char * const *files, bool print, FILE *out, FILE *err);
/*
 * The same, with machine_check (not NULL) run on a configuration the parser
 * accepted: the checks the daemon makes at start against the machine it
 * runs on (the levers' against this kernel), so that a file this check
 * passes is one the daemon starts with. It appends to errs and returns
 * the number of problems.
 */
typedef int (*config_machine_check_t)(const struct config *c, struct config_errors *errs, void *userdata);
int config_check_machine_main(const struct config_paths *paths, bool print, config_machine_check_t machine_check,
                              void *userdata, FILE *out, FILE *err);
int config_check_files_main(char **files, bool print, FILE *out, FILE *err);

/* Policy by name, NULL if none: the enabled one of that name, else the first
 * disabled one (names are unique among enabled policies only). */
const struct policy *config_find_policy(const struct config *c, const char *name);

/* Same settings (as printed), ignoring file/line: "did a reload change this policy?" */
bool policy_same(const struct policy *a, const struct policy *b);

const char *detector_to_string(enum detector d);
enum detector detector_from_string(const char *s);              /* _DETECT_INVALID if unknown */
const char *policy_action_to_string(enum policy_action a);
enum policy_action policy_action_from_string(const char *s);    /* _ACTION_INVALID if unknown */
/* LogLevel= / --log-level: "err", "warning", "notice", "info", "debug", also
 * "error", "warn", any case; -EINVAL otherwise. Printed: "err" .. "debug". */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);
