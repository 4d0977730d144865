/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup CPU weight: cpu.weight (v2) or cpu.shares (v1) of one cgroup.
 *
 * Three ways to the same file, picked per call (levers.h explains why):
 *   systemd   SetUnitProperties(unit, runtime=true, [CPUWeight | CPUShares]) when the
 *             cgroup is a unit's and a bus is there, so a daemon-reload or a
 *             unit restart does not put the old value back;
 *   libcgroup cgroup_modify_cgroup() on the real hierarchy (root "/");
 *   file      a direct write below a fixture root (tests).
 * Whatever the way, the value is read back before success is reported.
 *
 * v1 round trips: the ops table speaks the v2 scale, and the systemd
 * conversion (shares = weight*1024/100, weight = shares*100/1024) loses
 * precision both ways (shares 1000 -> weight 97 -> shares 993; weight 97 ->
 * shares 993 -> weight 96). A small memo of (cgroup, weight, shares) pairs
 * that this process read or wrote makes restore write the exact original
 * shares and makes our own value read back as the weight we set, so the
 * applier's reconcile does not mistake it for someone else's change. After
 * a crash the memo is gone and a restore may be off by < 1 % of the value.
 */

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libcgroup.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "common/util.h"
#include "apply/levers-internal.h"

/* How long systemd may take to realize a property it accepted (it applies
 * cgroup attributes from its event loop, after the method returns). */
#define SYSTEMD_APPLY_TIMEOUT_USEC (1 * USEC_PER_SEC)
#define SYSTEMD_CALL_TIMEOUT_USEC  (2 * USEC_PER_SEC)

uint64_t levers_weight_to_shares(uint64_t weight) {
        if (weight > LEVERS_WEIGHT_MAX)
                weight = LEVERS_WEIGHT_MAX;
        return MAX(MIN(weight * LEVERS_SHARES_DEFAULT / LEVERS_WEIGHT_DEFAULT, LEVERS_SHARES_MAX),
                   LEVERS_SHARES_MIN);
}

uint64_t levers_shares_to_weight(uint64_t shares) {
        if (shares > LEVERS_SHARES_MAX)
                shares = LEVERS_SHARES_MAX;
        return MAX(MIN(shares * LEVERS_WEIGHT_DEFAULT / LEVERS_SHARES_DEFAULT, LEVERS_WEIGHT_MAX),
                   LEVERS_WEIGHT_MIN);
}

const char *levers_weight_path_to_string(enum levers_weight_path p) {
        switch (p) {
        case LEVERS_WEIGHT_PATH_SYSTEMD:
                return "systemd";
        case LEVERS_WEIGHT_PATH_LIBCGROUP:
                return "libcgroup";
        case LEVERS_WEIGHT_PATH_FILE:
                return "file";
        default:
                return "none";
        }
}

enum levers_weight_path levers_weight_last_path(const struct levers *l, const char **ret_detail) {
        if (ret_detail)
                *ret_detail = l->last_detail;
        return l->last_path;
}

static void detail(struct levers *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void detail(struct levers *l, const char *fmt, ...) {
        size_t len = strlen(l->last_detail);
        va_list ap;

        if (len >= sizeof(l->last_detail) - 1)
                return;
        va_start(ap, fmt);
        vsnprintf(l->last_detail + len, sizeof(l->last_detail) - len, fmt, ap);
        va_end(ap);
}

/* ---- hierarchy detection ---- */

static bool has_token(const char *list, const char *sep, const char *word) {
        size_t n = strlen(word);

        for (const char *p = list; *p; ) {
                size_t k;

                p += strspn(p, sep);
                k = strcspn(p, sep);
                if (k == 0)
                        break;
                /* fixture files may hold "+cpu" as written; the kernel shows "cpu" */
                if (p[0] == '+' && k - 1 == n && strncmp(p + 1, word, n) == 0)
                        return true;
                if (k == n && strncmp(p, word, n) == 0)
                        return true;
                p += k;
        }
        return false;
}

static bool file_exists_at(struct levers *l, const char *path) {
        char p[PATH_MAX];
        struct stat st;

        return util_path_at(p, sizeof(p), l->root, path) && stat(p, &st) >= 0;
}

struct cg_mounts {
        char v1_cpu[PATH_MAX];
        bool v1_cpu_ro;
        char v2[PATH_MAX];
        bool v2_ro;
        bool any_v1;
};

static void scan_mountinfo(struct levers *l, struct cg_mounts *m, bool *ret_found) {
        _cleanup_free_ char *mi = NULL;
        char *line, *save = NULL;

        *ret_found = false;
        if (util_read_full_file_at(l->root, "/proc/self/mountinfo", &mi, NULL) < 0)
                return;
        *ret_found = true;
        for (line = strtok_r(mi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char mnt[PATH_MAX], opts[256], type[32], super[512];
                const char *dash;

                if (sscanf(line, "%*s %*s %*s %*s %4095s %255s", mnt, opts) != 2)
                        continue;
                dash = strstr(line, " - ");
                if (!dash || sscanf(dash + 3, "%31s %*s %511s", type, super) != 2)
                        continue;
                if (streq(type, "cgroup")) {
                        m->any_v1 = true;
                        if (has_token(super, ",", "cpu") && !m->v1_cpu[0]) {
                                levers_fmt(m->v1_cpu, sizeof(m->v1_cpu), "%s", mnt);
                                m->v1_cpu_ro = has_token(opts, ",", "ro");
                        }
                } else if (streq(type, "cgroup2")) {
                        /* prefer the unified root over extra cgroup2 mounts elsewhere */
                        if (!m->v2[0] || streq(mnt, "/sys/fs/cgroup")) {
                                levers_fmt(m->v2, sizeof(m->v2), "%s", mnt);
                                m->v2_ro = has_token(opts, ",", "ro");
                        }
                }
        }
}

static void scan_conventional(struct levers *l, struct cg_mounts *m) {
        static const char *const v1[] = {
                "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu",
        };
        char p[PATH_MAX];

        for (size_t i = 0; i < ELEMENTSOF(v1); i++) {
                levers_fmt(p, sizeof(p), "%s/cpu.shares", v1[i]);
                if (file_exists_at(l, p)) {
                        levers_fmt(m->v1_cpu, sizeof(m->v1_cpu), "%s", v1[i]);
                        m->any_v1 = true;
                        break;
                }
        }
        if (file_exists_at(l, "/sys/fs/cgroup/cgroup.controllers"))
                levers_fmt(m->v2, sizeof(m->v2), "/sys/fs/cgroup");
        else if (file_exists_at(l, "/sys/fs/cgroup/unified/cgroup.controllers"))
                levers_fmt(m->v2, sizeof(m->v2), "/sys/fs/cgroup/unified");
        if (!m->any_v1 && file_exists_at(l, "/sys/fs/cgroup/systemd/cgroup.procs"))
                m->any_v1 = true;
}

static void libcgroup_quiet(void *userdata, int level, const char *fmt, va_list ap) {
        /* libcgroup logs to stdout by default; errors come back as return codes. */
}

int levers_cgroup_detect(struct levers *l) {
        struct cg_mounts m = {};
        bool have_mountinfo;

        if (l->cg_detected)
                return l->cg_version > 0 ? 0 : -ENODEV;

        l->cg_version = 0;
        l->cg_hybrid = false;
        l->cg_mount[0] = '\0';
        l->cg_why[0] = '\0';
        l->use_libcgroup = false;
        l->libcgroup_error = 0;

        scan_mountinfo(l, &m, &have_mountinfo);
        if (!have_mountinfo)
                scan_conventional(l, &m);

        if (m.v1_cpu[0]) {
                l->cg_version = 1;
                l->cg_hybrid = m.v2[0] != '\0';
                levers_fmt(l->cg_mount, sizeof(l->cg_mount), "%s", m.v1_cpu);
                if (m.v1_cpu_ro)
                        levers_fmt(l->cg_why, sizeof(l->cg_why), "cgroup v1 cpu hierarchy %s is mounted read-only",
                                 m.v1_cpu);
        } else if (m.v2[0]) {
                char p[PATH_MAX], ctl[512];

                levers_fmt(p, sizeof(p), "%s/cgroup.controllers", m.v2);
                if (levers_read_value(l, p, ctl, sizeof(ctl)) >= 0 && has_token(ctl, " ", "cpu")) {
                        l->cg_version = 2;
                        l->cg_hybrid = m.any_v1;
                        levers_fmt(l->cg_mount, sizeof(l->cg_mount), "%s", m.v2);
                        if (m.v2_ro)
                                levers_fmt(l->cg_why, sizeof(l->cg_why),
                                         "cgroup v2 hierarchy %s is mounted read-only (not delegated?)", m.v2);
                } else
                        levers_fmt(l->cg_why, sizeof(l->cg_why),
                                 "cgroup v2 at %s has no cpu controller (not delegated, or bound to v1)", m.v2);
        } else
                levers_fmt(l->cg_why, sizeof(l->cg_why), "no cgroup cpu controller mounted");

        if (l->cg_version > 0 && levers_real_root(l)) {
                int r;

                cgroup_set_logger(libcgroup_quiet, CGROUP_LOG_ERROR, NULL);
                r = cgroup_init();
                if (r == 0)
                        l->use_libcgroup = true;
                else
                        l->libcgroup_error = r;
        }
        l->cg_detected = true;
        return l->cg_version > 0 ? 0 : -ENODEV;
}

/* ---- paths ---- */

/* A cgroup path relative to the hierarchy: absolute, no "..", no empty tricks. */
static int cgroup_path_check(const char *cgroup) {
        if (!cgroup || cgroup[0] != '/' || strlen(cgroup) >= 256)
                return -EINVAL;
        for (const char *p = cgroup; *p; ) {
                size_t k;

                p += strspn(p, "/");
                k = strcspn(p, "/");
                if ((k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
                        return -EINVAL;
                p += k;
        }
        return 0;
}

static bool cgroup_is_root(const char *cgroup) {
        return cgroup[strspn(cgroup, "/")] == '\0';
}

/* A valid path on a detected hierarchy: what every backend checks first. */
static int cgroup_usable(struct levers *l, const char *cgroup) {
        int r = cgroup_path_check(cgroup);

        return r < 0 ? r : levers_cgroup_detect(l);
}

static int cg_file(struct levers *l, const char *cgroup, const char *file, char *buf, size_t size) {
        int n;

        n = snprintf(buf, size, "%s%s%s%s", l->cg_mount,
                     cgroup_is_root(cgroup) ? "" : cgroup,
                     file ? "/" : "", file ? file : "");
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        return 0;
}

static const char *cg_value_name(struct levers *l) {
        return l->cg_version == 2 ? "cpu.weight" : "cpu.shares";
}

/* ---- the memo (see top of file) ---- */

static const struct levers_shares_memo *memo_by_shares(struct levers *l, const char *cgroup, uint64_t shares) {
        for (size_t i = 0; i < l->n_memo; i++)
                if (l->memo[i].shares == shares && streq(l->memo[i].cgroup, cgroup))
                        return &l->memo[i];
        return NULL;
}

static const struct levers_shares_memo *memo_by_weight(struct levers *l, const char *cgroup, uint64_t weight) {
        for (size_t i = 0; i < l->n_memo; i++)
                if (l->memo[i].weight == weight && streq(l->memo[i].cgroup, cgroup))
                        return &l->memo[i];
        return NULL;
}

static int memo_put(struct levers *l, const char *cgroup, uint64_t weight, uint64_t shares) {
        struct levers_shares_memo *n;
        char *c;

        /* one pair per weight and per shares value of a cgroup */
        for (size_t i = 0; i < l->n_memo; ) {
                if (streq(l->memo[i].cgroup, cgroup) &&
                    (l->memo[i].weight == weight || l->memo[i].shares == shares)) {
                        free(l->memo[i].cgroup);
                        l->memo[i] = l->memo[--l->n_memo];
                } else
                        i++;
        }
        c = strdup(cgroup);
        if (!c)
                return -ENOMEM;
        n = realloc(l->memo, (l->n_memo + 1) * sizeof(*n));
        if (!n) {
                free(c);
                return -ENOMEM;
        }
        l->memo = n;
        l->memo[l->n_memo++] = (struct levers_shares_memo) { .cgroup = c, .weight = weight, .shares = shares };
        return 0;
}

/* ---- raw read/write through libcgroup or the file ---- */

static int libcgroup_errno(int ecg) {
        switch (ecg) {
        case 0:
                return 0;
        case ECGROUPNOTEXIST:
        case ECGROUPVALUENOTEXIST:
                return -ENOENT;
        case ECGROUPNOTALLOWED:
        case ECGROUPNOTOWNER:
                return -EACCES;
        case ECGROUPNOTMOUNTED:
        case ECGROUPSUBSYSNOTMOUNTED:
                return -ENODEV;
        case ECGOTHER: {
                int e = cgroup_get_last_errno();
                return e > 0 ? -e : -EIO;
        }
        default:
                return -EIO;
        }
}

/*
 * Failures of libcgroup's own bookkeeping (what it thinks is mounted),
 * as opposed to the kernel refusing the write: for these the direct write
 * to the same file is worth trying.
 */
static bool libcgroup_own_failure(int ecg) {
        switch (ecg) {
        case ECGROUPNOTMOUNTED:
        case ECGROUPSUBSYSNOTMOUNTED:
        case ECGROUPNOTINITIALIZED:
        case ECGROUPNOTCOMPILED:
        case ECGFAIL:
        case ECGINVAL:
        case ECGROUPUNSUPP:
                return true;
        default:
                return false;
        }
}

static int raw_read(struct levers *l, const char *cgroup, uint64_t *ret) {
        char p[PATH_MAX], buf[64];
        int r;

        if (l->use_libcgroup) {
                struct cgroup *cg;
                struct cgroup_controller *ctrl;
                u_int64_t v;

                cg = cgroup_new_cgroup(cgroup);
                if (!cg)
                        return -ENOMEM;
                r = cgroup_get_cgroup(cg);
                if (r == 0) {
                        ctrl = cgroup_get_controller(cg, "cpu");
                        if (!ctrl)
                                r = ECGROUPVALUENOTEXIST;
                        else
                                r = cgroup_get_value_uint64(ctrl, cg_value_name(l), &v);
                }
                cgroup_free(&cg);
                if (r == 0) {
                        *ret = v;
                        return 0;
                }
                /* The group exists but libcgroup could not read it (on v2 it may
                 * stumble over controllers the group lacks): read the file. */
                if (r == ECGROUPNOTEXIST)
                        return -ENOENT;
        }

        r = cg_file(l, cgroup, cg_value_name(l), p, sizeof(p));
        if (r < 0)
                return r;
        r = levers_read_value(l, p, buf, sizeof(buf));
        if (r < 0)
                return r;
        return util_parse_u64(buf, ret);
}

static int raw_write(struct levers *l, const char *cgroup, uint64_t value) {
        char p[PATH_MAX], buf[32];
        int r;

        r = cg_file(l, cgroup, cg_value_name(l), p, sizeof(p));
        if (r < 0)
                return r;

        if (l->use_libcgroup) {
                struct cgroup *cg;
                struct cgroup_controller *ctrl;

                /* A fresh struct with one value: cgroup_modify_cgroup() writes only what was added. */
                cg = cgroup_new_cgroup(cgroup);
                if (!cg)
                        return -ENOMEM;
                ctrl = cgroup_add_controller(cg, "cpu");
                r = ctrl ? cgroup_add_value_uint64(ctrl, cg_value_name(l), value) : ECGFAIL;
                if (r == 0)
                        r = cgroup_modify_cgroup(cg);
                cgroup_free(&cg);
                if (!libcgroup_own_failure(r)) {
                        l->last_path = LEVERS_WEIGHT_PATH_LIBCGROUP;
                        detail(l, "libcgroup: %s=%" PRIu64, p, value);
                        if (r != 0)
                                detail(l, " failed: %s", cgroup_strerror(r));
                        return libcgroup_errno(r);
                }
                /* libcgroup itself stumbled (its mount table, not the kernel): the file is right there */
                detail(l, "libcgroup could not (%s), writing the file; ", cgroup_strerror(r));
        }

        levers_fmt(buf, sizeof(buf), "%" PRIu64, value);
        l->last_path = LEVERS_WEIGHT_PATH_FILE;
        detail(l, "file: %s=%s", p, buf);
        r = util_write_file_at(l->root, p, buf);
        if (r < 0)
                detail(l, " failed: %s", strerror(-r));
        return r;
}

/* ---- cgroup v2: the parent must hand the cpu controller down ---- */

static int subtree_read(struct levers *l, const char *cgroup, bool *ret) {
        char p[PATH_MAX], buf[512];
        int r;

        r = cg_file(l, cgroup, "cgroup.subtree_control", p, sizeof(p));
        if (r < 0)
                return r;
        r = levers_read_value(l, p, buf, sizeof(buf));
        if (r < 0) {
                detail(l, "cannot read %s: %s; ", p, strerror(-r));
                return r;
        }
        *ret = has_token(buf, " ", "cpu");
        return 0;
}

/*
 * Write "+cpu" / "-cpu". The kernel takes the one token and keeps the
 * rest; a fixture file is rewritten with the resulting list instead, so
 * that it reads like the kernel's file afterwards.
 */
static int subtree_write(struct levers *l, const char *path, bool enable) {
        char buf[512], out[512] = "";
        int r;

        if (levers_real_root(l))
                return util_write_file_at(l->root, path, enable ? "+cpu" : "-cpu");
        r = levers_read_value(l, path, buf, sizeof(buf));
        if (r < 0)
                return r;
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                if (t[0] == '+')
                        t++;
                if (streq(t, "cpu") || t[0] == '-')
                        continue;
                levers_fmt(out + strlen(out), sizeof(out) - strlen(out), "%s%s", out[0] ? " " : "", t);
        }
        if (enable)
                levers_fmt(out + strlen(out), sizeof(out) - strlen(out), "%scpu", out[0] ? " " : "");
        return util_write_file_at(l->root, path, out);
}

static int v2_enable_cpu_in(struct levers *l, const char *parent) {
        char p[PATH_MAX], buf[512];
        bool on;
        int r;

        r = subtree_read(l, parent, &on);
        if (r < 0)
                return r;
        if (on)
                return 0;

        r = cg_file(l, parent, "cgroup.controllers", p, sizeof(p));
        if (r < 0)
                return r;
        if (levers_read_value(l, p, buf, sizeof(buf)) < 0 || !has_token(buf, " ", "cpu")) {
                detail(l, "cpu controller not delegated to %s (cgroup.controllers lacks cpu); ", parent);
                return -ENODEV;
        }
        r = cg_file(l, parent, "cgroup.subtree_control", p, sizeof(p));
        if (r < 0)
                return r;
        r = subtree_write(l, p, true);
        if (r == -EBUSY) {
                detail(l, "cannot enable +cpu in %s: it has processes of its own "
                          "(cgroup v2 no-internal-process rule); ", p);
                return r;
        }
        if (r < 0) {
                detail(l, "cannot enable +cpu in %s: %s; ", p, strerror(-r));
                return r;
        }
        detail(l, "enabled +cpu in %s; ", p);
        return 1;
}

/*
 * A new child has no cpu.weight until its parent lists cpu in
 * cgroup.subtree_control (shared/vm/README.md, measured in the VM), and a
 * group can only hand cpu down if its own parent did: the ancestors from
 * the hierarchy root down to the parent that lack it, top down.
 */
static int v2_missing_parents(struct levers *l, const char *cgroup, char ***ret) {
        char **list = NULL, anc[256];
        size_t len = strlen(cgroup);
        bool on;
        int r;

        while (len > 1 && cgroup[len - 1] == '/')
                len--;
        for (size_t i = 0; i < len; i++) {
                if (i > 0 && (cgroup[i] != '/' || cgroup[i - 1] == '/'))
                        continue;
                levers_fmt(anc, sizeof(anc), "%.*s", i == 0 ? 1 : (int) i, cgroup);
                r = subtree_read(l, anc, &on);
                if (r < 0) {
                        strv_free(list);
                        return r;
                }
                if (!on && strv_push(&list, anc) < 0) {
                        strv_free(list);
                        return -ENOMEM;
                }
        }
        *ret = list;
        return 0;
}

static int v2_enable_cpu(struct levers *l, const char *cgroup, bool may_enable) {
        _cleanup_strv_free_ char **missing = NULL;
        int r;

        r = v2_missing_parents(l, cgroup, &missing);
        if (r < 0)
                return r;
        for (char **p = missing; p && *p; p++) {
                if (!may_enable) {
                        /* The applier enables (and journals) these before the weight. */
                        detail(l, "cpu is not enabled in %s's cgroup.subtree_control (not recorded, "
                                  "so not enabled here); ", *p);
                        return -ENODEV;
                }
                r = v2_enable_cpu_in(l, *p);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * Does anyone depend on cpu being handed down from cgroup now? A child
 * that hands it further down (the kernel refuses -cpu then anyway), or one
 * whose cpu files say something other than the defaults: taking cpu away
 * would silently reset them (a weight set by systemd for another unit, by
 * an administrator, by another tool). why gets the first such child.
 */
static bool subtree_in_use(struct levers *l, const char *cgroup, char *why, size_t size) {
        char dir[PATH_MAX], p[PATH_MAX], buf[512], child[PATH_MAX];
        DIR *d;
        struct dirent *de;
        bool busy = false;

        if (cg_file(l, cgroup, NULL, dir, sizeof(dir)) < 0 || !util_path_at(p, sizeof(p), l->root, dir))
                return false;
        d = opendir(p);
        if (!d)
                return false;
        while (!busy && (de = readdir(d))) {
                bool on;

                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                levers_fmt(child, sizeof(child), "%s/%s", cgroup_is_root(cgroup) ? "" : cgroup, de->d_name);
                if (subtree_read(l, child, &on) >= 0 && on) {
                        levers_fmt(why, size, "%s%s hands cpu down further", l->cg_mount, child);
                        busy = true;
                        break;
                }
                if (cg_file(l, child, "cpu.weight", p, sizeof(p)) >= 0 && levers_read_value(l, p, buf, sizeof(buf)) >= 0 &&
                    !streq(buf, "100")) {
                        levers_fmt(why, size, "%s has cpu.weight %s", p, buf);
                        busy = true;
                } else if (cg_file(l, child, "cpu.max", p, sizeof(p)) >= 0 &&
                           levers_read_value(l, p, buf, sizeof(buf)) >= 0 && strncmp(buf, "max", 3) != 0) {
                        levers_fmt(why, size, "%s is %s", p, buf);
                        busy = true;
                }
        }
        closedir(d);
        return busy;
}

int levers_subtree_get(void *userdata, const char *cgroup, bool *ret_enabled) {
        struct levers *l = userdata;
        int r;

        r = cgroup_usable(l, cgroup);
        if (r < 0)
                return r;
        if (l->cg_version != 2)
                return -EOPNOTSUPP;
        return subtree_read(l, cgroup, ret_enabled);
}

int levers_subtree_set(void *userdata, const char *cgroup, bool enable) {
        struct levers *l = userdata;
        char p[PATH_MAX], why[PATH_MAX + 64];
        bool on;
        int r;

        l->last_detail[0] = '\0';
        r = levers_subtree_get(l, cgroup, &on);
        if (r < 0) {
                levers_set_error(l, "%s: cgroup.subtree_control: %s", cgroup, strerror(-r));
                return r;
        }
        if (on == enable)
                return 0;
        if (enable) {
                r = v2_enable_cpu_in(l, cgroup);
                if (r < 0)
                        levers_set_error(l, "%s", l->last_detail);
                return r < 0 ? r : 1;
        }
        if (subtree_in_use(l, cgroup, why, sizeof(why))) {
                levers_set_error(l, "%s", why);
                return -EBUSY;
        }
        r = cg_file(l, cgroup, "cgroup.subtree_control", p, sizeof(p));
        if (r < 0)
                return r;
        r = subtree_write(l, p, false);
        if (r == -EBUSY) {
                levers_set_error(l, "the kernel refuses -cpu in %s: a child cgroup still uses it", p);
                return r;
        }
        if (r < 0) {
                levers_set_error(l, "cannot write -cpu to %s: %s", p, strerror(-r));
                return r;
        }
        detail(l, "disabled cpu in %s", p);
        return 1;
}

/* ---- systemd ---- */

/* Does the component of length n at c end in suffix? */
static bool component_ends(const char *c, size_t n, const char *suffix) {
        size_t k = strlen(suffix);

        return n > k && strncmp(c + n - k, suffix, k) == 0;
}

/*
 * "foo.service" for "/system.slice/foo.service", NULL if the last component
 * is not a unit of the system manager: every component before it must be a
 * slice. Below a unit (a container's own systemd, a user manager's
 * user@1000.service) the same name is another manager's unit, and the
 * system manager's namesake on the host would get the weight.
 */
static const char *unit_of_cgroup(const char *cgroup, char *buf, size_t size) {
        static const char *const suffixes[] = { ".service", ".scope", ".slice" };
        const char *last = strrchr(cgroup, '/');
        size_t n;

        for (const char *c = cgroup; last && c < last;) {
                const char *start = c + (*c == '/');
                size_t len = strcspn(start, "/");

                if (len > 0 && !component_ends(start, len, ".slice"))
                        return NULL;
                c = start + len;
        }
        last = last ? last + 1 : cgroup;
        n = strlen(last);
        if (n == 0 || n >= size)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t k = strlen(suffixes[i]);
                if (n > k && streq(last + n - k, suffixes[i])) {
                        memcpy(buf, last, n + 1);
                        return buf;
                }
        }
        return NULL;
}

static int systemd_bus(struct levers *l, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        if (l->bus) {
                *ret = l->bus;
                return 0;
        }
        if (l->systemd_address && !l->systemd_address[0])
                return -EOPNOTSUPP;
        if (!l->systemd_address) {
                /* The real systemd only manages the real root. */
                if (!levers_real_root(l) || sd_booted() <= 0)
                        return -EOPNOTSUPP;
                r = sd_bus_open_system(&bus);
                if (r < 0)
                        return r;
        } else {
                r = sd_bus_new(&bus);
                if (r < 0)
                        return r;
                r = sd_bus_set_address(bus, l->systemd_address);
                if (r >= 0)
                        r = sd_bus_start(bus);
                if (r < 0) {
                        sd_bus_unref(bus);
                        return r;
                }
        }
        l->bus = bus;
        *ret = bus;
        return 0;
}

/*
 * One method of systemd's Manager: the arguments are "sb" unit + runtime and
 * "a(sv)" one uint64 property (SetUnitProperties), or none (unit NULL).
 */
static int systemd_manager_call(struct levers *l, const char *member, const char *unit, const char *property,
                                uint64_t value, uint64_t timeout_usec, sd_bus_error *error) {
        sd_bus_message *m = NULL, *reply = NULL;
        sd_bus *bus;
        int r;

        r = systemd_bus(l, &bus);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", member);
        if (r >= 0 && unit)
                r = sd_bus_message_append(m, "sb", unit, 1);
        if (r >= 0 && unit)
                r = sd_bus_message_append(m, "a(sv)", 1, property, "t", value);
        if (r >= 0)
                r = sd_bus_call(bus, m, timeout_usec, error, &reply);
        if (r < 0 && !sd_bus_is_open(bus)) {
                sd_bus_flush_close_unref(l->bus);
                l->bus = NULL;
        }
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
        return r;
}

static int systemd_set(struct levers *l, const char *unit, const char *property, uint64_t value) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = systemd_manager_call(l, "SetUnitProperties", unit, property, value, SYSTEMD_CALL_TIMEOUT_USEC, &error);
        if (r < 0)
                detail(l, "systemd: SetUnitProperties(%s, %s=%" PRIu64 ") failed: %s; ", unit, property, value,
                       error.name ? error.name : strerror(-r));
        sd_bus_error_free(&error);
        return r;
}

/* ---- the backends ---- */

int levers_weight_get(void *userdata, const char *cgroup, uint64_t *ret) {
        struct levers *l = userdata;
        const struct levers_shares_memo *mm;
        uint64_t v;
        int r;

        r = cgroup_usable(l, cgroup);
        if (r < 0)
                return r;

        r = raw_read(l, cgroup, &v);
        if (r == -ENOENT && l->cg_version == 2) {
                char p[PATH_MAX];

                /* The group exists but its parent does not hand down cpu: it has
                 * no weight file yet. 100 is what the file says once enabled. */
                if (cg_file(l, cgroup, NULL, p, sizeof(p)) >= 0 && file_exists_at(l, p)) {
                        *ret = LEVERS_WEIGHT_DEFAULT;
                        return 0;
                }
        }
        if (r < 0)
                return r;

        if (l->cg_version == 2) {
                *ret = v;
                return 0;
        }
        mm = memo_by_shares(l, cgroup, v);
        if (mm) {
                *ret = mm->weight;
                return 0;
        }
        *ret = levers_shares_to_weight(v);
        r = memo_put(l, cgroup, *ret, v);
        return r < 0 ? r : 0;
}

static int read_back(struct levers *l, const char *cgroup, uint64_t want, uint64_t timeout_usec) {
        uint64_t deadline = util_now_usec() + timeout_usec, v = 0;
        int r;

        for (;;) {
                r = raw_read(l, cgroup, &v);
                if (r >= 0 && v == want)
                        return 0;
                if (util_now_usec() >= deadline)
                        break;
                usleep(20 * USEC_PER_MSEC);
        }
        if (r < 0)
                detail(l, "; read-back failed: %s", strerror(-r));
        else
                detail(l, "; read back %" PRIu64 ", not %" PRIu64, v, want);
        return r < 0 ? r : -EIO;
}

static int weight_set(struct levers *l, const char *cgroup, uint64_t weight, unsigned flags) {
        const struct levers_shares_memo *mm;
        char unit_buf[256], p[PATH_MAX];
        const char *unit;
        uint64_t value, cur;
        int r;

        l->last_path = LEVERS_WEIGHT_PATH_NONE;
        l->last_detail[0] = '\0';

        if (weight < LEVERS_WEIGHT_MIN || weight > LEVERS_WEIGHT_MAX) {
                detail(l, "weight %" PRIu64 " out of range 1..10000", weight);
                return -ERANGE;
        }
        r = cgroup_path_check(cgroup);
        if (r < 0) {
                detail(l, "invalid cgroup path");
                return r;
        }
        if (cgroup_is_root(cgroup)) {
                detail(l, "the root cgroup has no CPU weight");
                return -EINVAL;
        }
        r = levers_cgroup_detect(l);
        if (r < 0) {
                detail(l, "%s", l->cg_why);
                return r;
        }
        r = cg_file(l, cgroup, NULL, p, sizeof(p));
        if (r < 0)
                return r;
        if (!file_exists_at(l, p)) {
                detail(l, "cgroup %s does not exist", p);
                return -ENOENT;
        }

        r = levers_weight_get(l, cgroup, &cur);
        if (r >= 0 && cur == weight) {
                detail(l, "%s already has weight %" PRIu64, cgroup, weight);
                return 0;
        }

        if (l->cg_version == 1) {
                mm = memo_by_weight(l, cgroup, weight);
                value = mm ? mm->shares : levers_weight_to_shares(weight);
        } else
                value = weight;

        unit = unit_of_cgroup(cgroup, unit_buf, sizeof(unit_buf));
        if (unit) {
                /* systemd knows CPUShares= on v1 (exact) and CPUWeight= on v2. */
                r = systemd_set(l, unit, l->cg_version == 1 ? "CPUShares" : "CPUWeight", value);
                if (r >= 0) {
                        l->last_path = LEVERS_WEIGHT_PATH_SYSTEMD;
                        detail(l, "systemd: %s %s=%" PRIu64, unit,
                               l->cg_version == 1 ? "CPUShares" : "CPUWeight", value);
                        r = read_back(l, cgroup, value, SYSTEMD_APPLY_TIMEOUT_USEC);
                        if (r >= 0)
                                goto done;
                        detail(l, "; systemd did not apply it, writing directly; ");
                }
        }

        if (l->cg_version == 2) {
                r = v2_enable_cpu(l, cgroup, !(flags & LEVERS_WEIGHT_NO_PARENTS));
                if (r < 0)
                        return r;
        }
        r = raw_write(l, cgroup, value);
        if (r < 0)
                return r;
        r = read_back(l, cgroup, value, 0);
        if (r < 0)
                return r;
done:
        if (l->cg_version == 1) {
                detail(l, " (weight %" PRIu64 ")", weight);
                r = memo_put(l, cgroup, weight, value);
                if (r < 0)
                        return r;
        }
        return 1;
}

int levers_weight_set_flags(struct levers *l, const char *cgroup, uint64_t weight, unsigned flags) {
        int r;

        r = weight_set(l, cgroup, weight, flags);
        if (r < 0)
                levers_set_error(l, "%s", l->last_detail[0] ? l->last_detail : strerror(-r));
        return r;
}

int levers_weight_set(void *userdata, const char *cgroup, uint64_t weight) {
        return levers_weight_set_flags(userdata, cgroup, weight, 0);
}

/* ---- exact restore: what the applier journals with a weight change ---- */

#define SYSTEMD_RELOAD_TIMEOUT_USEC (90 * USEC_PER_SEC)   /* a reload under QEMU/TCG takes seconds */

struct restore_info {
        bool have_shares, have_set;
        uint64_t shares, weight, set_shares, set_weight;
        char unit[256];
        char property[32];
        bool unit_original_unset;
        uint64_t unit_original;
        char dropin[PATH_MAX];
        bool dropin_existed, dir_existed;
};

/* "key=value" words; unknown keys are ignored (a newer daemon may add some). */
static void restore_parse(const char *s, struct restore_info *ri) {
        char buf[1024];

        *ri = (struct restore_info) { .dropin_existed = true, .dir_existed = true };
        levers_fmt(buf, sizeof(buf), "%s", s ? s : "");
        for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                char *v = strchr(w, '=');

                if (!v)
                        continue;
                *v++ = '\0';
                if (streq(w, "shares"))
                        ri->have_shares = util_parse_u64(v, &ri->shares) >= 0;
                else if (streq(w, "weight"))
                        (void) util_parse_u64(v, &ri->weight);
                else if (streq(w, "set_shares"))
                        ri->have_set = util_parse_u64(v, &ri->set_shares) >= 0;
                else if (streq(w, "set_weight"))
                        (void) util_parse_u64(v, &ri->set_weight);
                else if (streq(w, "unit"))
                        levers_fmt(ri->unit, sizeof(ri->unit), "%s", v);
                else if (streq(w, "property"))
                        levers_fmt(ri->property, sizeof(ri->property), "%s", v);
                else if (streq(w, "unit_original")) {
                        ri->unit_original_unset = streq(v, "unset");
                        if (!ri->unit_original_unset && util_parse_u64(v, &ri->unit_original) < 0)
                                ri->unit[0] = '\0';   /* unusable: restore without systemd */
                } else if (streq(w, "dropin"))
                        levers_fmt(ri->dropin, sizeof(ri->dropin), "%s", v);
                else if (streq(w, "dropin_existed"))
                        ri->dropin_existed = !streq(v, "0");
                else if (streq(w, "dir_existed"))
                        ri->dir_existed = !streq(v, "0");
        }
        if (!ri->property[0] || !ri->dropin[0])
                ri->unit[0] = '\0';
}

static const char *unit_section(const char *unit) {
        const char *dot = strrchr(unit, '.');

        if (dot && streq(dot, ".slice"))
                return "Slice";
        if (dot && streq(dot, ".scope"))
                return "Scope";
        return "Service";
}

/* The unit's own property (UINT64_MAX: not set) and whether it is transient. */
static int systemd_unit_info(struct levers *l, const char *unit, const char *property, uint64_t *ret_value,
                             bool *ret_transient) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        char iface[64];
        const char *path;
        _cleanup_free_ char *obj = NULL;
        sd_bus *bus;
        int transient = 0, r;

        r = systemd_bus(l, &bus);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "GetUnit", &error, &reply, "s", unit);
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0) {
                obj = strdup(path);
                if (!obj)
                        r = -ENOMEM;
        }
        sd_bus_message_unref(reply);
        if (r >= 0) {
                levers_fmt(iface, sizeof(iface), "org.freedesktop.systemd1.%s", unit_section(unit));
                r = sd_bus_get_property_trivial(bus, "org.freedesktop.systemd1", obj, iface, property, &error, 't',
                                                ret_value);
        }
        if (r >= 0)
                r = sd_bus_get_property_trivial(bus, "org.freedesktop.systemd1", obj, "org.freedesktop.systemd1.Unit",
                                                "Transient", &error, 'b', &transient);
        if (r < 0)
                detail(l, "systemd: cannot read %s of %s: %s; ", property, unit,
                       error.name ? error.name : strerror(-r));
        sd_bus_error_free(&error);
        *ret_transient = transient;
        return r;
}

int levers_weight_prepare(void *userdata, const char *cgroup, uint64_t weight, char ***ret_parents,
                          char *ret_restore, size_t restore_size) {
        struct levers *l = userdata;
        char unit_buf[256], p[PATH_MAX], full[PATH_MAX];
        const char *unit;
        bool via_systemd = false;
        size_t len;
        int r;

        *ret_parents = NULL;
        ret_restore[0] = '\0';
        l->last_detail[0] = '\0';
        r = cgroup_usable(l, cgroup);
        if (r < 0)
                return r;

        if (l->cg_version == 1) {
                const struct levers_shares_memo *mm;
                uint64_t shares, set_shares;

                if (raw_read(l, cgroup, &shares) >= 0) {
                        mm = memo_by_weight(l, cgroup, weight);
                        set_shares = mm ? mm->shares : levers_weight_to_shares(weight);
                        mm = memo_by_shares(l, cgroup, shares);
                        levers_fmt(ret_restore, restore_size,
                                   "shares=%" PRIu64 " weight=%" PRIu64 " set_shares=%" PRIu64 " set_weight=%" PRIu64,
                                   shares, mm ? mm->weight : levers_shares_to_weight(shares), set_shares, weight);
                }
        }

        unit = unit_of_cgroup(cgroup, unit_buf, sizeof(unit_buf));
        if (unit) {
                const char *property = l->cg_version == 1 ? "CPUShares" : "CPUWeight";
                uint64_t orig;
                bool transient;
                struct stat st;

                if (systemd_unit_info(l, unit, property, &orig, &transient) >= 0) {
                        bool dropin_existed, dir_existed;
                        char orig_s[24];

                        via_systemd = true;
                        levers_fmt(p, sizeof(p), "%s/%s.d/50-%s.conf",
                                   transient ? "/run/systemd/transient" : "/run/systemd/system.control", unit, property);
                        if (!util_path_at(full, sizeof(full), l->root, p))
                                return -ENAMETOOLONG;
                        dropin_existed = lstat(full, &st) >= 0;
                        *strrchr(full, '/') = '\0';
                        dir_existed = lstat(full, &st) >= 0;
                        if (orig == UINT64_MAX)
                                levers_fmt(orig_s, sizeof(orig_s), "unset");
                        else
                                levers_fmt(orig_s, sizeof(orig_s), "%" PRIu64, orig);
                        len = strlen(ret_restore);
                        levers_fmt(ret_restore + len, restore_size - len,
                                   "%sunit=%s property=%s unit_original=%s dropin=%s dropin_existed=%d dir_existed=%d",
                                   len ? " " : "", unit, property, orig_s, p, dropin_existed, dir_existed);
                }
        }

        /* systemd enables cpu along the way for a unit it sets CPUWeight= on */
        if (l->cg_version == 2 && !via_systemd) {
                r = v2_missing_parents(l, cgroup, ret_parents);
                if (r < 0)
                        return r;
        }
        return 0;
}

int levers_weight_recall(void *userdata, const char *cgroup, const char *restore) {
        struct levers *l = userdata;
        struct restore_info ri;
        int r = 0;

        restore_parse(restore, &ri);
        if (cgroup_path_check(cgroup) < 0)
                return -EINVAL;
        if (ri.have_set)
                r = memo_put(l, cgroup, ri.set_weight, ri.set_shares);
        if (r >= 0 && ri.have_shares)
                r = memo_put(l, cgroup, ri.weight, ri.shares);
        return r;
}

/* The drop-in holds exactly "[Section]" and "Property=value" besides comments: what our call wrote. */
static bool dropin_is_ours(const char *text, const char *section, const char *property, const char *value) {
        char want_section[48], want_line[96];
        int seen = 0;
        _cleanup_free_ char *copy = strdup(text);

        if (!copy)
                return false;
        levers_fmt(want_section, sizeof(want_section), "[%s]", section);
        levers_fmt(want_line, sizeof(want_line), "%s=%s", property, value);
        for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                util_strip(line);
                if (line[0] == '\0' || line[0] == '#' || line[0] == ';')
                        continue;
                if (seen == 0 && streq(line, want_section))
                        seen = 1;
                else if (seen == 1 && streq(line, want_line))
                        seen = 2;
                else
                        return false;
        }
        return seen == 2;
}

static int systemd_reload(struct levers *l) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = systemd_manager_call(l, "Reload", NULL, NULL, 0, SYSTEMD_RELOAD_TIMEOUT_USEC, &error);
        if (r < 0)
                detail(l, "; daemon-reload failed: %s", error.name ? error.name : strerror(-r));
        sd_bus_error_free(&error);
        return r;
}

/* Take back the drop-in SetUnitProperties left, if it is still exactly ours. */
static void dropin_cleanup(struct levers *l, const struct restore_info *ri, const char *value) {
        _cleanup_free_ char *text = NULL;
        char full[PATH_MAX], dir[PATH_MAX];
        int r;

        if (ri->dropin_existed)
                return;   /* someone's before us: the restore call wrote their value back into it */
        r = util_read_full_file_at(l->root, ri->dropin, &text, NULL);
        if (r == -ENOENT)
                return;
        if (r < 0) {
                detail(l, "; cannot read drop-in %s: %s", ri->dropin, strerror(-r));
                return;
        }
        if (!dropin_is_ours(text, unit_section(ri->unit), ri->property, value)) {
                detail(l, "; drop-in %s changed by someone else: left", ri->dropin);
                return;
        }
        if (!util_path_at(full, sizeof(full), l->root, ri->dropin) || unlink(full) < 0) {
                detail(l, "; cannot remove drop-in %s: %s", ri->dropin, strerror(errno));
                return;
        }
        detail(l, "; removed drop-in %s", ri->dropin);
        levers_fmt(dir, sizeof(dir), "%s", full);
        *strrchr(dir, '/') = '\0';
        if (!ri->dir_existed && rmdir(dir) >= 0)
                detail(l, " and its directory");
        /* Without a reload systemd keeps listing the file (DropInPaths,
         * NeedDaemonReload=yes, `systemctl cat` fails on it): measured in the
         * VM. One reload for a whole stop: levers_flush(). */
        l->reload_pending = true;
}

int levers_flush(void *userdata) {
        struct levers *l = userdata;
        int r;

        if (!l->reload_pending)
                return 0;
        l->reload_pending = false;
        l->last_detail[0] = '\0';
        r = systemd_reload(l);
        if (r < 0) {
                levers_set_error(l, "systemd: daemon-reload after removing runtime drop-ins failed%s", l->last_detail);
                return r;
        }
        return 1;
}

static int read_back_or_default(struct levers *l, const char *cgroup, uint64_t want, uint64_t timeout_usec) {
        uint64_t deadline = util_now_usec() + timeout_usec;
        char p[PATH_MAX];

        for (;;) {
                uint64_t v;
                int r = raw_read(l, cgroup, &v);

                if (r >= 0 && v == want)
                        return 0;
                /* systemd trimmed cpu from the parent: no file is the default */
                if (r == -ENOENT && l->cg_version == 2 && want == LEVERS_WEIGHT_DEFAULT &&
                    cg_file(l, cgroup, NULL, p, sizeof(p)) >= 0 && file_exists_at(l, p))
                        return 0;
                if (util_now_usec() >= deadline)
                        return read_back(l, cgroup, want, 0);
                usleep(20 * USEC_PER_MSEC);
        }
}

static int weight_restore(struct levers *l, const char *cgroup, uint64_t weight, const struct restore_info *ri) {
        char value_s[24];
        uint64_t value, want;
        int r;

        l->last_path = LEVERS_WEIGHT_PATH_NONE;
        l->last_detail[0] = '\0';
        if (ri->have_shares) {
                /* the exact v1 value, whatever the memo of this process knows */
                r = memo_put(l, cgroup, weight, ri->shares);
                if (r < 0)
                        return r;
        }
        if (!ri->unit[0] || cgroup_path_check(cgroup) < 0 || levers_cgroup_detect(l) < 0)
                return weight_set(l, cgroup, weight, LEVERS_WEIGHT_NO_PARENTS);

        value = ri->unit_original_unset ? UINT64_MAX : ri->unit_original;
        r = systemd_set(l, ri->unit, ri->property, value);
        if (r < 0) {
                detail(l, "restoring without systemd; ");
                return weight_set(l, cgroup, weight, LEVERS_WEIGHT_NO_PARENTS);
        }
        if (ri->unit_original_unset)
                value_s[0] = '\0';
        else
                levers_fmt(value_s, sizeof(value_s), "%" PRIu64, value);
        l->last_path = LEVERS_WEIGHT_PATH_SYSTEMD;
        detail(l, "systemd: %s %s=%s", ri->unit, ri->property, ri->unit_original_unset ? "(unset)" : value_s);

        want = l->cg_version == 1 ? (ri->have_shares ? ri->shares : levers_weight_to_shares(weight)) : weight;
        r = read_back_or_default(l, cgroup, want, SYSTEMD_APPLY_TIMEOUT_USEC);
        if (r < 0) {
                detail(l, "; systemd did not apply it, writing directly; ");
                r = weight_set(l, cgroup, weight, LEVERS_WEIGHT_NO_PARENTS);
                if (r < 0)
                        return r;
        }
        dropin_cleanup(l, ri, value_s);
        return 1;
}

int levers_weight_restore(void *userdata, const char *cgroup, uint64_t weight, const char *restore) {
        struct levers *l = userdata;
        struct restore_info ri;
        int r;

        restore_parse(restore, &ri);
        r = weight_restore(l, cgroup, weight, &ri);
        if (r < 0)
                levers_set_error(l, "%s", l->last_detail[0] ? l->last_detail : strerror(-r));
        return r;
}

/* ---- probe ---- */

void levers_cgroup_probe(struct levers *l, struct lever_caps *c) {
        char p[PATH_MAX];
        int r;

        r = levers_cgroup_detect(l);
        c->cgroup_version = l->cg_version;
        c->cgroup_hybrid = l->cg_hybrid;
        levers_fmt(c->cgroup_mount, sizeof(c->cgroup_mount), "%s", l->cg_mount);
        levers_fmt(c->cgroup_backend, sizeof(c->cgroup_backend), "%s",
                 l->cg_version == 0 ? "" : l->use_libcgroup ? "libcgroup" : "file");
        if (r < 0) {
                levers_fmt(c->cgroup_why, sizeof(c->cgroup_why), "%s", l->cg_why);
                return;
        }
        if (l->cg_why[0]) {
                levers_fmt(c->cgroup_why, sizeof(c->cgroup_why), "%s", l->cg_why);
                c->cgroup_cpu_writable = false;
        } else {
                /* Creating and writing groups needs write access to the hierarchy. */
                c->cgroup_cpu_writable = util_path_at(p, sizeof(p), l->root, l->cg_mount) &&
                                         access(p, W_OK) >= 0;
                if (!c->cgroup_cpu_writable)
                        levers_fmt(c->cgroup_why, sizeof(c->cgroup_why),
                                 "cgroup cpu hierarchy %s not writable: %s", l->cg_mount, strerror(errno));
        }
        if (levers_real_root(l) && !l->use_libcgroup && l->libcgroup_error)
                levers_fmt(c->cgroup_why + strlen(c->cgroup_why), sizeof(c->cgroup_why) - strlen(c->cgroup_why),
                         "%slibcgroup: %s (writing files directly)", c->cgroup_why[0] ? "; " : "",
                         cgroup_strerror(l->libcgroup_error));

        {
                sd_bus *bus;
                c->systemd_bus = systemd_bus(l, &bus) >= 0;
        }
}

void levers_cgroup_close_bus(struct levers *l) {
        if (l->bus) {
                sd_bus_flush_close_unref(l->bus);
                l->bus = NULL;
        }
}

void levers_cgroup_done(struct levers *l) {
        for (size_t i = 0; i < l->n_memo; i++)
                free(l->memo[i].cgroup);
        free(l->memo);
        l->memo = NULL;
        l->n_memo = 0;
        levers_cgroup_close_bus(l);
}
