/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The levers object, probing for `affctl status`, and the helpers the
 * three backends share: root-prefixed reads and writes, mounting debugfs
 * when allowed, and naming the cause of an EPERM (kernel lockdown).
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/json-util.h"
#include "common/protocol.h"
#include "common/util.h"
#include "config/config.h"
#include "apply/levers-internal.h"

int levers_new(const char *root, struct levers **ret) {
        _cleanup_free_ struct levers *l = NULL;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        if (!util_root_is_real(root)) {
                l->root = strdup(root);
                if (!l->root)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

struct levers *levers_free(struct levers *l) {
        if (!l)
                return NULL;
        levers_cgroup_done(l);
        levers_features_done(l);
        free(l->systemd_address);
        free(l->root);
        free(l);
        return NULL;
}

void levers_set_allow_mount(struct levers *l, bool allow) {
        l->allow_mount = allow;
}

int levers_set_systemd_address(struct levers *l, const char *address) {
        char *a = NULL;

        if (address) {
                a = strdup(address);
                if (!a)
                        return -ENOMEM;
        }
        free(l->systemd_address);
        l->systemd_address = a;
        levers_cgroup_close_bus(l);  /* drop a bus opened for the old address */
        return 0;
}

/* ---- shared helpers ---- */

void levers_set_error(struct levers *l, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(l->last_error, sizeof(l->last_error), fmt, ap);
        va_end(ap);
}

const char *levers_last_error(const struct levers *l) {
        return l->last_error;
}

int levers_read_value(struct levers *l, const char *path, char *buf, size_t size) {
        ssize_t n;

        n = util_read_file_at(l->root, path, buf, size);
        if (n < 0)
                return (int) n;
        util_strip(buf);
        return 0;
}

int levers_read_kernel_release(struct levers *l, char *buf, size_t size) {
        return levers_read_value(l, "/proc/sys/kernel/osrelease", buf, size);
}

bool levers_is_mountpoint(struct levers *l, const char *path, const char *fstype) {
        _cleanup_free_ char *mi = NULL;
        char *line, *save = NULL;

        if (util_read_full_file_at(l->root, "/proc/self/mountinfo", &mi, NULL) < 0)
                return false;
        for (line = strtok_r(mi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char mnt[PATH_MAX], type[64];
                const char *dash;

                /* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
                        continue;
                dash = strstr(line, " - ");
                if (!dash || sscanf(dash + 3, "%63s", type) != 1)
                        continue;
                if (streq(mnt, path) && streq(type, fstype))
                        return true;
        }
        return false;
}

int levers_mount(struct levers *l, const char *fstype, const char *target) {
        if (!l || !levers_real_root(l))
                return 0;
        if (levers_is_mountpoint(l, target, fstype))
                return 0;
        /* the flags systemd's sys-kernel-*.mount units use */
        if (mount(fstype, target, fstype, MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return -errno;
        return 1;
}

int levers_maybe_mount(struct levers *l, const char *fstype, const char *target) {
        if (!l->allow_mount)
                return 0;
        return levers_mount(l, fstype, target);
}

int levers_read_lockdown(struct levers *l, char *buf, size_t size) {
        char raw[128];
        const char *a, *b;
        int r;

        r = levers_read_value(l, "/sys/kernel/security/lockdown", raw, sizeof(raw));
        if (r == -ENOENT && levers_maybe_mount(l, "securityfs", "/sys/kernel/security") > 0)
                r = levers_read_value(l, "/sys/kernel/security/lockdown", raw, sizeof(raw));
        if (r < 0)
                return r;
        /* "none [integrity] confidentiality": the bracketed word is in force. */
        a = strchr(raw, '[');
        b = a ? strchr(a, ']') : NULL;
        if (!a || !b || (size_t) (b - a - 1) >= size)
                return -EINVAL;
        memcpy(buf, a + 1, b - a - 1);
        buf[b - a - 1] = '\0';
        return 0;
}

void levers_explain_eperm(struct levers *l, const char *path, char *why, size_t size) {
        char state[32];
        int r;

        r = levers_read_lockdown(l, state, sizeof(state));
        if (r >= 0 && !streq(state, "none"))
                levers_fmt(why, size, "lockdown: /sys/kernel/security/lockdown says [%s]; EPERM on %s",
                         state, path);
        else if (r >= 0)
                levers_fmt(why, size, "EPERM on %s (lockdown none%s)", path,
                         geteuid() != 0 ? "; not root" : "");
        else
                levers_fmt(why, size, "EPERM on %s: kernel lockdown likely (lockdown state unreadable: %s)",
                         path, strerror(-r));
}

int levers_debugfs_sched_dir(struct levers *l, char *dir, size_t size, char *why, size_t why_size) {
        char p[PATH_MAX];
        struct stat st;
        int r;

        for (int attempt = 0; attempt < 2; attempt++) {
                if (!util_path_at(p, sizeof(p), l->root, "/sys/kernel/debug/sched"))
                        return -ENAMETOOLONG;
                if (stat(p, &st) >= 0 && S_ISDIR(st.st_mode)) {
                        levers_fmt(dir, size, "/sys/kernel/debug/sched");
                        return 0;
                }
                if (!util_path_at(p, sizeof(p), l->root, "/sys/kernel/debug/sched_features"))
                        return -ENAMETOOLONG;
                if (stat(p, &st) >= 0) {
                        /* before 5.13: flat debugfs files, tunables still sysctls */
                        dir[0] = '\0';
                        return 0;
                }
                if (attempt > 0)
                        break;
                r = levers_maybe_mount(l, "debugfs", "/sys/kernel/debug");
                if (r < 0) {
                        levers_fmt(why, why_size, "debugfs not mounted; mounting it on /sys/kernel/debug failed: %s",
                                 strerror(-r));
                        return r;
                }
                if (r == 0)
                        break;
        }
        if (!levers_is_mountpoint(l, "/sys/kernel/debug", "debugfs"))
                levers_fmt(why, why_size, "debugfs not mounted on /sys/kernel/debug%s",
                         levers_real_root(l) && !l->allow_mount ? " (mounting not allowed)" : "");
        else
                levers_fmt(why, why_size, "no scheduler files in debugfs (kernel without CONFIG_SCHED_DEBUG?)");
        return -ENOENT;
}

/* ---- probe ---- */

int levers_probe(struct levers *l, struct lever_caps *ret) {
        struct lever_caps c = {};
        char state[32];

        if (levers_read_kernel_release(l, c.kernel_release, sizeof(c.kernel_release)) < 0)
                c.kernel_release[0] = '\0';
        if (levers_read_lockdown(l, state, sizeof(state)) >= 0)
                levers_fmt(c.lockdown, sizeof(c.lockdown), "%s", state);

        l->cg_detected = false;
        levers_cgroup_probe(l, &c);
        levers_features_probe(l, &c);
        levers_sysctl_probe(l, &c);

        *ret = c;
        return 0;
}

int levers_open(const char *root, struct lever_caps *ret_caps, struct levers **ret) {
        struct levers *l = NULL;
        int r;

        r = levers_new(root, &l);
        if (r < 0)
                return r;
        levers_set_allow_mount(l, false);
        (void) levers_probe(l, ret_caps);
        *ret = l;
        return 0;
}

static int json_add_string(struct json_object *o, const char *k, const char *v) {
        return json_add(o, k, json_object_new_string(v));
}

static int json_add_bool(struct json_object *o, const char *k, bool v) {
        return json_add(o, k, json_object_new_boolean(v));
}

static int json_add_int(struct json_object *o, const char *k, int64_t v) {
        return json_add(o, k, json_object_new_int64(v));
}

static void json_putp(struct json_object **o) {
        if (*o)
                json_object_put(*o);
}

/*
 * {"kernel": "...", "lockdown": "...",
 *  "cgroup":     {"available", "version", "hybrid", "mount", "backend", "systemd", "why"},
 *  "features":   {"available", "path", "readable", "writable", "count", "why"},
 *  "sysctl":     {"available", "autogroup", "debug_tunables", "why"},
 *  "schedstats": {"available", "present", "enabled", "why"}}
 * "why" is "" when the lever works, else one line naming the cause.
 */
int levers_caps_to_json(const struct lever_caps *c, struct json_object **ret) {
        _cleanup_(json_putp) struct json_object *o = NULL;
        struct json_object *cg = NULL, *f = NULL, *sy = NULL, *ss = NULL;
        int r = 0;

        o = json_object_new_object();
        cg = json_object_new_object();
        f = json_object_new_object();
        sy = json_object_new_object();
        ss = json_object_new_object();
        if (!o || !cg || !f || !sy || !ss) {
                json_putp(&cg);
                json_putp(&f);
                json_putp(&sy);
                json_putp(&ss);
                return -ENOMEM;
        }
        json_object_object_add(o, "cgroup", cg);
        json_object_object_add(o, "features", f);
        json_object_object_add(o, "sysctl", sy);
        json_object_object_add(o, "schedstats", ss);

        r |= json_add_string(o, "kernel", c->kernel_release);
        r |= json_add_string(o, "lockdown", c->lockdown);

        r |= json_add_bool(cg, "available", c->cgroup_version > 0 && c->cgroup_cpu_writable);
        r |= json_add_int(cg, "version", c->cgroup_version);
        r |= json_add_bool(cg, "hybrid", c->cgroup_hybrid);
        r |= json_add_string(cg, "mount", c->cgroup_mount);
        r |= json_add_bool(cg, "writable", c->cgroup_cpu_writable);
        r |= json_add_string(cg, "backend", c->cgroup_backend);
        r |= json_add_bool(cg, "systemd", c->systemd_bus);
        r |= json_add_string(cg, AFF_CAPABILITY_WHY, c->cgroup_why);

        r |= json_add_bool(f, "available", c->features_readable && c->features_writable);
        r |= json_add_string(f, "path", c->features_path);
        r |= json_add_bool(f, "readable", c->features_readable);
        r |= json_add_bool(f, "writable", c->features_writable);
        r |= json_add_int(f, "count", (int64_t) c->features_count);
        r |= json_add_string(f, AFF_CAPABILITY_WHY, c->features_why);

        r |= json_add_bool(sy, "available", c->autogroup_present || c->debug_tunables_readable);
        r |= json_add_bool(sy, "autogroup", c->autogroup_present);
        r |= json_add_bool(sy, "debug_tunables", c->debug_tunables_readable);
        r |= json_add_string(sy, AFF_CAPABILITY_WHY, c->sysctl_why);

        r |= json_add_bool(ss, "available", c->schedstats_present);
        r |= json_add_bool(ss, "present", c->schedstats_present);
        r |= json_add_bool(ss, "enabled", c->schedstats_enabled);
        r |= json_add_string(ss, AFF_CAPABILITY_WHY, c->schedstats_why);
        if (r)
                return -ENOMEM;

        *ret = TAKE_PTR(o);
        return 0;
}

/* ---- policy validation ---- */

static int push_error(struct config_errors *errs, const struct policy *p, unsigned line, const char *key,
                      const char *entry, const char *why) {
        return config_errors_add(errs, p->file ?: "?", line ?: p->line, "%s=%s: %s", key, entry, why);
}

int levers_check_policy(struct levers *l, const struct policy *p, struct config_errors *errs) {
        char why[256];
        int n = 0, r;

        if (p->action == ACTION_WEIGHT &&
            (p->cpu_weight < (int64_t) LEVERS_WEIGHT_MIN || p->cpu_weight > (int64_t) LEVERS_WEIGHT_MAX)) {
                char v[32];
                levers_fmt(v, sizeof(v), "%" PRIi64, p->cpu_weight);
                r = push_error(errs, p, p->cpu_weight_line, "CPUWeight", v,
                                 p->cpu_weight < 0 ? "Action=weight needs CPUWeight=1..10000"
                                                   : "out of range 1..10000");
                if (r < 0)
                        return r;
                n++;
        }

        for (char **e = p->features; e && *e; e++) {
                r = levers_feature_check(l, *e, why, sizeof(why));
                /* Only a name the kernel's list lacks is the policy's fault;
                 * an unreadable list (lockdown) is shown by `affctl status`. */
                if (r != -ENOENT || !l->features_cached)
                        continue;
                r = push_error(errs, p, p->features_line, "SchedFeatures", *e, why);
                if (r < 0)
                        return r;
                n++;
        }

        for (char **e = p->sysctls; e && *e; e++) {
                char name[96], value[64];

                if (levers_sysctl_split(*e, name, sizeof(name), value, sizeof(value)) < 0)
                        levers_fmt(why, sizeof(why), "expected NAME=VALUE");
                else if (levers_sysctl_check(name, value, why, sizeof(why)) >= 0 &&
                         levers_sysctl_exists(l, name, why, sizeof(why)) != -ENOENT)
                        continue;   /* allowed, and this kernel has it (or cannot tell: no debugfs) */
                r = push_error(errs, p, p->sysctls_line, "Sysctl", *e, why);
                if (r < 0)
                        return r;
                n++;
        }
        return n;
}

int levers_check_config(struct levers *l, const struct config *c, struct config_errors *errs) {
        int n = 0;

        if (!l || !c)
                return 0;
        for (size_t i = 0; i < c->n_policies; i++)
                if (c->policies[i].enabled)
                        n += MAX(levers_check_policy(l, &c->policies[i], errs), 0);
        return n;
}
