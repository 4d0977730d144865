/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The system-wide levers: cgroup CPU weight (libcgroup; cpu.weight on v2,
 * cpu.shares on v1), sched_features (debugfs) and scheduler sysctls /
 * debugfs tunables. Probing tells `affctl status` which levers work here
 * and, when one does not, why (lockdown, no debugfs, controller not
 * delegated). The get/set functions are the real backends behind
 * apply_ops_system (apply.h); only the applier calls the setters.
 *
 * Root prefix. Every path goes through the root given to levers_new().
 * libcgroup reads the real mount table (/proc/mounts) and cannot be pointed
 * at a fixture tree, so:
 *   root "/" (or "" / NULL): cgroup writes go through libcgroup, or through
 *       systemd (SetUnitProperties, runtime) when the cgroup is a unit's
 *       (path ends in .service/.scope/.slice) and a system bus is there;
 *   any other root (tests): a direct-file backend on <root>/sys/fs/cgroup/...
 *       with the same semantics (conversion, subtree_control, read-back).
 * levers_weight_last_path() says which of the three was used.
 *
 * Which cgroup hierarchy: <root>/proc/self/mountinfo when present (the
 * cgroup2 mount and the cgroup v1 mount whose options include "cpu"), else
 * the conventional places: <root>/sys/fs/cgroup/cgroup.controllers (v2),
 * <root>/sys/fs/cgroup/{cpu,cpu,cpuacct}/cpu.shares (v1),
 * <root>/sys/fs/cgroup/unified (the v2 half of a hybrid). The cpu controller
 * lives in exactly one of them: a v1 cpu mount wins (hybrid: v1 cpu plus a
 * controller-less v2 at /sys/fs/cgroup/unified, as on the development
 * machines); otherwise the v2 mount whose cgroup.controllers lists "cpu".
 * Cgroup paths are relative to that hierarchy's root ("/system.slice/x.service"),
 * as in /proc/PID/cgroup (the "cpu" line on v1, the "0::" line on v2).
 *
 * Names (validated here, never arbitrary files):
 *   sched_features: "NAME" as in the kernel's list, without "NO_"; the
 *       list is read from the kernel (/sys/kernel/debug/sched/features from
 *       5.13, /sys/kernel/debug/sched_features before).
 *   sysctls: "kernel.sched_autogroup_enabled", "kernel.sched_schedstats"
 *       (/proc/sys/kernel/...); debugfs scheduler tunables are written
 *       "debug:NAME" (migration_cost_ns, base_slice_ns, and the pre-6.6
 *       latency_ns, min_granularity_ns, wakeup_granularity_ns): they live in
 *       /sys/kernel/debug/sched/NAME from 5.13 and in
 *       /proc/sys/kernel/sched_NAME before, and the backend picks whichever
 *       this kernel has. Values are decimal integers; a policy's are held
 *       to the per-name range of the allow-list (levers_sysctl_check()),
 *       a restore writes back whatever decimal the kernel held.
 *
 * Return values: setters return 1 if they changed the value and 0 if it
 * already was what was asked (then nothing was written); on failure a
 * negative errno, and levers_last_error() names the cause in one line:
 *   -ENOENT  no such cgroup, or this kernel has no such feature / tunable;
 *   -ENODEV  the lever's home is missing: no cgroup cpu controller (or not
 *            delegated to the parent), debugfs not mounted;
 *   -EPERM   refused by the kernel (lockdown for debugfs, see the cause);
 *   -ERANGE, -EINVAL  value out of range, malformed name or path;
 *   -EBUSY   cgroup v2 parent has processes of its own (cannot enable +cpu);
 *   -EIO     written, but the kernel reads back something else.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct json_object;
struct policy;
struct config;
struct config_errors;

struct lever_caps {
        int cgroup_version;           /* 1, 2, or 0 if no cpu controller found */
        bool cgroup_hybrid;
        bool cgroup_cpu_writable;
        char cgroup_why[192];         /* "" if usable, else the cause */
        char features_path[128];      /* "" if not found */
        bool features_readable, features_writable;
        char features_why[192];
        bool schedstats_present;      /* /proc/schedstat */
        bool schedstats_enabled;      /* kernel.sched_schedstats = 1 */

        /* added by the levers module */
        char cgroup_mount[128];       /* cpu hierarchy mount point, e.g. "/sys/fs/cgroup/cpu" */
        char cgroup_backend[16];      /* "libcgroup" (root "/") or "file" (fixture roots) */
        bool systemd_bus;             /* unit cgroups go through SetUnitProperties */
        char kernel_release[64];      /* /proc/sys/kernel/osrelease */
        char lockdown[32];            /* "none", "integrity", "confidentiality", "" unknown */
        size_t features_count;        /* names in the kernel's list */
        bool autogroup_present;       /* kernel.sched_autogroup_enabled exists */
        bool debug_tunables_readable; /* debug:migration_cost_ns can be read */
        char sysctl_why[192];         /* cause when debug: tunables are unavailable */
        char schedstats_why[192];     /* cause when schedstats cannot be used */
};

struct levers;   /* backend state: root prefix, libcgroup init, feature list cache */

int levers_new(const char *root, struct levers **ret);
struct levers *levers_free(struct levers *l);

/*
 * Let the backend mount debugfs on /sys/kernel/debug (and securityfs on
 * /sys/kernel/security, to read the lockdown state) when they are missing.
 * Off by default; only ever done for the real root. Off, an unmounted
 * debugfs reads as "debugfs not mounted" and the lockdown state stays
 * unknown where securityfs is not mounted.
 */
void levers_set_allow_mount(struct levers *l, bool allow);

/*
 * Mount fstype on target as systemd's boot-time mount units do, whatever
 * levers_set_allow_mount() says: for a caller that decided it should (the
 * daemon's tracefs outside systemd). Only for the real root. 1 mounted,
 * 0 already mounted (or not the real root), -errno.
 */
int levers_mount(struct levers *l, const char *fstype, const char *target);

/*
 * Where unit cgroups are set through systemd. NULL (default): the system
 * bus, and only when root is "/" and systemd is PID 1 (sd_booted()).
 * An address ("unix:path=/x/sock", peer-to-peer, no Hello) is for tests: it
 * is used with any root. "" disables the systemd path.
 */
int levers_set_systemd_address(struct levers *l, const char *address);

/* Detect everything again (after a remount) and say what works. */
int levers_probe(struct levers *l, struct lever_caps *ret);
/*
 * The daemon's levers on root, as it starts and as `affinityd
 * --check-config` checks against them: levers_new() and a first
 * levers_probe() into ret_caps. They never mount debugfs or securityfs: a
 * mount is a change to the system that nothing would undo; where they are
 * missing, `affctl status` says so (systemd mounts both at boot).
 */
int levers_open(const char *root, struct lever_caps *ret_caps, struct levers **ret);
/* The caps as JSON for `affctl status` ("levers": {...}). */
int levers_caps_to_json(const struct lever_caps *caps, struct json_object **ret);

/* The kernel's own feature list ("NAME" or "NO_NAME" each); validation of policy names. */
int levers_features_list(struct levers *l, char ***ret_names, bool **ret_enabled, size_t *ret_n);
bool levers_feature_known(struct levers *l, const char *name);

/*
 * Validate one SchedFeatures= entry ("NAME" or "NO_NAME") against this
 * kernel's list. 0 if known; -ENOENT with why = e.g. "RUN_TO_PARITY: not
 * a sched feature of this kernel (6.1.0-18-amd64); it arrived in 6.6
 * (EEVDF)"; -EPERM/-ENODEV/... with why = the cause when the list cannot
 * be read (lockdown, no debugfs).
 */
int levers_feature_check(struct levers *l, const char *entry, char *why, size_t why_size);

/*
 * Validate one sysctl name and value (as split from a Sysctl=name=value
 * entry) against the allow-list. Pure: no I/O. value may be NULL to check
 * the name only. -ENOENT unknown name, -EINVAL not an integer, -ERANGE out
 * of range; why (may be NULL) gets a one-line reason.
 */
int levers_sysctl_check(const char *name, const char *value, char *why, size_t why_size);
/* Split "name=value" into its parts (no validation); -EINVAL without '='. */
int levers_sysctl_split(const char *entry, char *name, size_t name_size, char *value, size_t value_size);

/*
 * Check every lever entry of one policy against the allow-list and this
 * kernel (features). Returns the number of problems or -ENOMEM; each is
 * appended to errs at its key's line ("file:line: Key=entry: reason"), so
 * the journal's CONFIG_FILE=/CONFIG_LINE= point at it as a parse error's do.
 */
int levers_check_policy(struct levers *l, const struct policy *p, struct config_errors *errs);
/* levers_check_policy() for every enabled policy of c: the one check of a
 * configuration against this kernel, at start, on reload and in
 * `affinityd --check-config`. Returns the number of problems. */
int levers_check_config(struct levers *l, const struct config *c, struct config_errors *errs);

/* Backends for struct apply_ops (userdata is struct levers *). */
int levers_weight_get(void *userdata, const char *cgroup, uint64_t *ret);
int levers_weight_set(void *userdata, const char *cgroup, uint64_t weight);
int levers_feature_get(void *userdata, const char *name, bool *ret_enabled);
int levers_feature_set(void *userdata, const char *name, bool enable);
int levers_sysctl_get(void *userdata, const char *name, char *buf, size_t size);
int levers_sysctl_set(void *userdata, const char *name, const char *value);

/*
 * levers_weight_set() with flags. LEVERS_WEIGHT_NO_PARENTS: on cgroup v2,
 * do not enable "+cpu" in ancestors that lack it (fail with -ENODEV): the
 * applier enables them itself first, as journaled changes of their own
 * (levers_weight_prepare). levers_weight_set() (flags 0) enables them, for
 * levers-tool and direct callers that undo nothing.
 */
#define LEVERS_WEIGHT_NO_PARENTS 1u
int levers_weight_set_flags(struct levers *l, const char *cgroup, uint64_t weight, unsigned flags);

/*
 * The applier's weight hooks (apply_ops.weight_prepare/recall/restore).
 *
 * prepare, before the first change of cgroup to weight: ret_parents are the
 * ancestors (top down) whose cgroup.subtree_control lacks cpu, on v2, when
 * the weight will be written directly (for a unit's cgroup set through
 * systemd, systemd enables cpu on the way itself: empty). ret_restore is one
 * line of "key=value" words, journaled with the change:
 *   shares=S weight=W set_shares=S2 set_weight=W2    (cgroup v1: the exact
 *       cpu.shares before and after, so that a restore after a crash writes
 *       S, not the v2->v1 conversion of W)
 *   unit=U property=CPUWeight|CPUShares unit_original=N|unset
 *   dropin=PATH dropin_existed=0|1 dir_existed=0|1   (set through systemd:
 *       the unit's own property before, and the runtime drop-in systemd
 *       writes for SetUnitProperties(runtime=true): in systemd 252
 *       /run/systemd/transient/U.d/50-P.conf for a transient unit,
 *       /run/systemd/system.control/U.d/50-P.conf otherwise)
 * recall (replay after a crash) relearns the v1 pairs. restore puts weight
 * back: through systemd with the unit's original property (the "unset"
 * value when it had none), then, if the drop-in did not exist before and
 * holds exactly what that call wrote, removes it (and its directory if
 * that is new and empty); levers_flush() then has systemd reload its
 * units (once per batch of restores): measured in
 * the VM, without a reload `systemctl cat` then fails on the missing file
 * and NeedDaemonReload=yes; with it, CPUWeight, DropInPaths and
 * `systemctl cat` are as before. Else the exact v1 cpu.shares, else as
 * levers_weight_set_flags(NO_PARENTS).
 */
int levers_weight_prepare(void *userdata, const char *cgroup, uint64_t weight, char ***ret_parents,
                          char *ret_restore, size_t restore_size);
int levers_weight_recall(void *userdata, const char *cgroup, const char *restore);
int levers_weight_restore(void *userdata, const char *cgroup, uint64_t weight, const char *restore);
/*
 * After a batch of restores (apply_ops.flush): the systemd reload that
 * removed drop-ins need, once for all of them (measured in the VM: a reload
 * takes ~2 s under TCG, and a stop restores every weight). 0 if none was
 * needed, 1 after a reload, -errno (the cause in levers_last_error()).
 */
int levers_flush(void *userdata);

/*
 * cgroup v2 only (-EOPNOTSUPP otherwise): "cpu" in cgroup's
 * cgroup.subtree_control (cgroup "/" is the hierarchy root). Disabling
 * refuses with -EBUSY, the cause in levers_last_error(), when a child
 * hands cpu further down or has a cpu.weight other than 100 or a cpu.max
 * other than "max ..." (someone depends on it), or the kernel says EBUSY.
 */
int levers_subtree_get(void *userdata, const char *cgroup, bool *ret_enabled);
int levers_subtree_set(void *userdata, const char *cgroup, bool enable);

/*
 * One line naming the cause of the last failure of any backend above
 * (e.g. "lockdown: /sys/kernel/security/lockdown says [integrity]; EPERM on
 * /sys/kernel/debug/sched/features"), for the applier's log; "" if none.
 */
const char *levers_last_error(const struct levers *l);

/* How the last levers_weight_set() reached the cgroup. */
enum levers_weight_path {
        LEVERS_WEIGHT_PATH_NONE,
        LEVERS_WEIGHT_PATH_SYSTEMD,     /* SetUnitProperties(unit, runtime=true, CPUWeight (v2) | CPUShares (v1)) */
        LEVERS_WEIGHT_PATH_LIBCGROUP,   /* cgroup_modify_cgroup() on the real hierarchy */
        LEVERS_WEIGHT_PATH_FILE,        /* direct write: below a fixture root, or where libcgroup's
                                         * own mount table failed it (ECGROUPSUBSYSNOTMOUNTED, ...) */
};
const char *levers_weight_path_to_string(enum levers_weight_path p);
/*
 * ret_detail (may be NULL), one line, also set on failure: e.g.
 * "systemd: nginx.service CPUWeight=200",
 * "libcgroup: /sys/fs/cgroup/cpu/x/cpu.shares=2048 (weight 200)",
 * "enabled +cpu in /sys/fs/cgroup/x/cgroup.subtree_control; libcgroup: /sys/fs/cgroup/x/y/cpu.weight=50",
 * "systemd: SetUnitProperties(ghost.service, ...) failed: org.freedesktop.systemd1.NoSuchUnit; file: ...".
 *
 * Restores go through levers_weight_restore(), which also takes back the
 * runtime drop-in systemd wrote; "+cpu" in a v2 subtree_control is its
 * own change (levers_subtree_set), made and undone by the applier.
 */
enum levers_weight_path levers_weight_last_path(const struct levers *l, const char **ret_detail);

/* v1 cpu.shares (2..262144, default 1024) <-> v2 cpu.weight (1..10000, default 100), as systemd converts. */
uint64_t levers_weight_to_shares(uint64_t weight);
uint64_t levers_shares_to_weight(uint64_t shares);

#define LEVERS_WEIGHT_MIN     UINT64_C(1)
#define LEVERS_WEIGHT_MAX     UINT64_C(10000)
#define LEVERS_WEIGHT_DEFAULT UINT64_C(100)
#define LEVERS_SHARES_MIN     UINT64_C(2)
#define LEVERS_SHARES_MAX     UINT64_C(262144)
#define LEVERS_SHARES_DEFAULT UINT64_C(1024)
