/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * State shared by the levers backends (levers.c, levers-cgroup.c,
 * levers-features.c, levers-sysctl.c). Not part of the module's contract:
 * only levers*.c include it.
 */

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "apply/levers.h"

typedef struct sd_bus sd_bus;

/* What a cpu.shares value read on v1 was reported as, so a restore writes the exact original. */
struct levers_shares_memo {
        char *cgroup;
        uint64_t weight;   /* what levers_weight_get() reported */
        uint64_t shares;   /* what the file said */
};

struct levers {
        char *root;                    /* NULL for the real root */
        bool allow_mount;

        /* cgroup hierarchy (levers-cgroup.c) */
        bool cg_detected;
        int cg_version;                /* 1, 2, 0 = no cpu controller */
        bool cg_hybrid;
        char cg_mount[PATH_MAX];       /* mount point below root, e.g. "/sys/fs/cgroup/cpu" */
        char cg_why[192];
        bool use_libcgroup;            /* root "/" and cgroup_init() worked */
        int libcgroup_error;           /* ECG* from cgroup_init(), 0 if fine */

        /* systemd path */
        char *systemd_address;         /* NULL: system bus when booted with systemd; "": off */
        sd_bus *bus;

        struct levers_shares_memo *memo;
        size_t n_memo;
        bool reload_pending;           /* a drop-in was removed: systemd must reload (levers_flush) */

        enum levers_weight_path last_path;
        char last_detail[PATH_MAX + 128];

        char last_error[256];          /* cause of the last failure of any backend */

        /* sched_features (levers-features.c) */
        char features_path[128];       /* below root; "" if not found */
        char features_why[192];
        char **feature_names;          /* cached kernel list, without NO_ */
        bool *feature_enabled;
        size_t n_features;
        bool features_cached;
};

/*
 * snprintf() for the human lines (causes, details): truncation is fine
 * there, and going through vsnprintf() keeps -Wformat-truncation quiet
 * about it without hiding real overflows elsewhere.
 */
static inline void levers_fmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void levers_fmt(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;

        if (size == 0)
                return;
        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

static inline bool levers_real_root(const struct levers *l) {
        return !l->root;
}

/* levers.c */
void levers_set_error(struct levers *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int levers_read_kernel_release(struct levers *l, char *buf, size_t size);
int levers_read_lockdown(struct levers *l, char *buf, size_t size);
/* Mount fstype on target if allowed and root is real. 1 mounted, 0 not allowed, -errno. */
int levers_maybe_mount(struct levers *l, const char *fstype, const char *target);
bool levers_is_mountpoint(struct levers *l, const char *path, const char *fstype);
int levers_read_value(struct levers *l, const char *path, char *buf, size_t size);
/* The cause of an EPERM from debugfs: "lockdown: /sys/kernel/security/lockdown says [integrity]". */
void levers_explain_eperm(struct levers *l, const char *path, char *why, size_t size);
/* The debugfs sched directory, "" before 5.13 (flat files): fills dir ("/sys/kernel/debug/sched"). */
int levers_debugfs_sched_dir(struct levers *l, char *dir, size_t size, char *why, size_t why_size);

/* levers-cgroup.c */
int levers_cgroup_detect(struct levers *l);
void levers_cgroup_probe(struct levers *l, struct lever_caps *caps);
void levers_cgroup_done(struct levers *l);
void levers_cgroup_close_bus(struct levers *l);

/* levers-features.c */
int levers_features_refresh(struct levers *l);
void levers_features_probe(struct levers *l, struct lever_caps *caps);
void levers_features_done(struct levers *l);

/* levers-sysctl.c */
/* 0 if this kernel has the tunable; -ENOENT if it lacks it; -ENODEV if debugfs is unavailable (why says so). */
int levers_sysctl_exists(struct levers *l, const char *name, char *why, size_t why_size);
void levers_sysctl_probe(struct levers *l, struct lever_caps *caps);
