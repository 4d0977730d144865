/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The effective configuration: [daemon] settings from affinityd.conf (+
 * affinityd.conf.d/NAME.conf drop-ins) and the policies from policies.d/NAME.policy,
 * merged over the vendor (/usr/lib/affinityd), admin (/etc/affinityd) and
 * runtime (/run/affinityd) directories, systemd-style: a file with the same
 * name in a later directory replaces the earlier one.
 *
 * Defaults are set apart from parsing (config_new() fills them in), so a
 * reload is "new, parse, validate, swap" (systemd-oomd).
 */

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

enum log_level_setting {
        LOGL_ERR = 3,
        LOGL_WARNING = 4,
        LOGL_NOTICE = 5,
        LOGL_INFO = 6,
        LOGL_DEBUG = 7,
};

struct daemon_settings {
        uint64_t interval_usec;            /* Interval=1s, 100ms..60s */
        bool dry_run;                      /* DryRun=no */
        int log_level;                     /* LogLevel=info */
        unsigned max_actions_per_interval; /* MaxActionsPerInterval=4, 1..1000 */
        unsigned hysteresis_intervals;     /* Hysteresis=3, 1..100: a finding must persist (and clear) this long */
        uint64_t cooldown_usec;            /* Cooldown=30s, per target after a change */
        bool effect_check;                 /* EffectCheck=yes */
        double effect_tolerance;           /* EffectTolerance=10%: worse by more than this → undo */
        uint64_t retry_after_usec;         /* RetryAfter=10min after an undone action */
        unsigned max_tracked_threads;      /* MaxThreads=65536 */
        uint64_t wake_sample_period;       /* WakeSamplePeriod=1: perf sample_period start value */
        uint64_t max_wake_events_per_s;    /* MaxWakeEvents=200000/s: adaptive period keeps under this */
};

enum detector {
        DETECT_HOG,       /* busy thread that keeps migrating */
        DETECT_PAIR,      /* two threads waking each other, split across CPUs */
        DETECT_SPREAD,    /* group of part-busy threads that keep migrating */
        DETECT_RUNDELAY,  /* threads waiting runnable too long */
        DETECT_STEAL,     /* hypervisor steal time above threshold */
        DETECT_ALWAYS,    /* no detector: applies whenever the match matches */
        _DETECT_MAX,
};

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
};

/*
 * Which tasks a policy covers. Every list is a set of fnmatch(3) globs;
 * an empty list matches everything; all non-empty lists must match (AND),
 * any glob within one list may match (OR).
 */
struct policy_match {
        char **comm;     /* Comm=   thread or process name */
        char **exe;      /* Exe=    /proc/PID/exe path */
        char **cmdline;  /* Cmdline= whole command line, space separated */
        char **cgroup;   /* Cgroup= cgroup path, e.g. /system.slice/foo.service */
        char **unit;     /* Unit=   systemd unit, e.g. nginx.service */
        char **user;     /* User=   user name or numeric uid */
        bool kthreads;   /* Kernel=yes: match kernel threads (only exclusions use it) */
        bool realtime;   /* Realtime=yes: match SCHED_FIFO/RR/DEADLINE tasks only */
};

struct policy {
        char *name;           /* [Policy] Name=, default: file name without .policy */
        char *file;           /* file it came from (for messages) */
        unsigned line;        /* line of its [Policy] section */
        bool enabled;         /* Enabled=yes */
        int priority;         /* Priority=50: lower number wins on overlap */
        enum detector detector;
        enum policy_action action;
        struct policy_match match;

        /* [Detect] thresholds; a value < 0 (or 0 for _usec) means "detector default" */
        double util_min;              /* Util=80%            → 0.80 (fraction of one CPU) */
        double migrations_min_per_s;  /* Migrations=0.2/s */
        double wake_rate_min_per_s;   /* WakeRate=2000/s */
        double run_delay_min_ms_per_s;/* RunDelay=50ms (per second of wall time) */
        double steal_min;             /* Steal=10%           → 0.10 */
        double group_util_max;        /* MaxCombinedUtil=120% (pair: above this it is a stream) */
        uint64_t window_usec;         /* Window=5s */

        /* [Action] */
        int64_t cpu_weight;           /* CPUWeight=1..10000 (v2 scale), -1 unset */
        char **features;              /* SchedFeatures=NO_GENTLE_FAIR_SLEEPERS RUN_TO_PARITY */
        char **sysctls;               /* Sysctl=kernel.sched_autogroup_enabled=0 (repeatable) */
        char **cpus;                  /* CPUs=2-3 restrict placement (list format) as one string */
        bool allow_realtime;          /* AllowRealtime=no   override of the safety defaults */
        bool allow_narrowed;          /* AllowNarrowed=no   */
};

struct config {
        struct daemon_settings daemon;
        struct policy *policies;
        size_t n_policies;
        char **files;                 /* the files that were read, in order (for --print / status) */
};

/* Search path, later wins: vendor, admin, runtime. Each may be overridden for tests. */
struct config_paths {
        const char *dirs[4];          /* NULL-terminated */
};

/* One validation message: "file:line: key=value: reason". */
struct config_error {
        char *file;
        unsigned line;
        char *message;                /* already formatted "file:line: ..." */
};

struct config_errors {
        struct config_error *items;
        size_t n;
};

struct config *config_new(void);                 /* defaults, no policies */
struct config *config_free(struct config *c);
void config_errors_clear(struct config_errors *e);

/*
 * Load the merged configuration from the directories. Returns 0 and a new
 * config if there were no errors; -EINVAL with every error collected in
 * ret_errors otherwise (all errors of all files, not just the first).
 */
int config_load(const struct config_paths *paths, struct config **ret, struct config_errors *ret_errors);

/* Parse explicit files (affctl check FILE..., the fuzzer); same error contract. */
int config_load_files(char * const *files, struct config **ret, struct config_errors *ret_errors);

/* Print the effective configuration in the input format (round-trips). */
int config_print(const struct config *c, FILE *f);

const char *detector_to_string(enum detector d);
const char *policy_action_to_string(enum policy_action a);
