/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration object, the search path and its merge rules, checks
 * between policies, and the entry point of `--check-config` / `affctl
 * check`. One file's syntax and values are config-parse.c; printing and
 * JSON are config-print.c.
 *
 * Merge rules (systemd's conf-files, see affinityd.conf(5)): the
 * directories are read in order, vendor → admin → runtime; affinityd.conf
 * is taken from the last directory that has one; drop-ins
 * (affinityd.conf.d/NAME.conf) and policies (policies.d/NAME.policy) are
 * merged by file name, a later directory replacing an earlier file of the
 * same name, and read sorted by name. A file that is empty or a symlink to
 * /dev/null masks the earlier ones of its name.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/util.h"
#include "config/config-internal.h"

#ifndef VENDORDIR
#define VENDORDIR "/usr/lib/affinityd"
#endif
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef RUNSTATEDIR
#define RUNSTATEDIR "/run"
#endif

static const char *const detector_table[_DETECT_MAX] = {
        [DETECT_HOG] = "hog",
        [DETECT_PAIR] = "pair",
        [DETECT_SPREAD] = "spread",
        [DETECT_RUNDELAY] = "rundelay",
        [DETECT_STEAL] = "steal",
        [DETECT_ALWAYS] = "always",
};

static const char *const action_table[_ACTION_MAX] = {
        [ACTION_PIN] = "pin",
        [ACTION_COLOCATE] = "colocate",
        [ACTION_SPREAD] = "spread",
        [ACTION_WEIGHT] = "weight",
        [ACTION_FEATURES] = "features",
        [ACTION_SYSCTL] = "sysctl",
        [ACTION_REPORT] = "report",
        [ACTION_EXCLUDE] = "exclude",
};

static const char *const pair_owners_table[_PAIR_OWNERS_MAX] = {
        [PAIR_OWNERS_TRUSTED] = "trusted",
        [PAIR_OWNERS_SAME] = "same",
        [PAIR_OWNERS_ANY] = "any",
};

const char *pair_owners_to_string(int o) {
        return o >= 0 && o < _PAIR_OWNERS_MAX ? pair_owners_table[o] : "trusted";
}

static const char *const pair_span_table[_PAIR_SPAN_MAX] = {
        [PAIR_SPAN_AUTO] = "auto",
        [PAIR_SPAN_CPU] = "cpu",
        [PAIR_SPAN_CORE] = "core",
        [PAIR_SPAN_LLC] = "llc",
};

const char *pair_span_to_string(int s) {
        return s >= 0 && s < _PAIR_SPAN_MAX ? pair_span_table[s] : "auto";
}

const char *detector_to_string(enum detector d) {
        return d >= 0 && d < _DETECT_MAX ? detector_table[d] : "?";
}

enum detector detector_from_string(const char *s) {
        for (int i = 0; i < _DETECT_MAX; i++)
                if (strcasecmp(s, detector_table[i]) == 0)
                        return (enum detector) i;
        return _DETECT_INVALID;
}

const char *policy_action_to_string(enum policy_action a) {
        return a >= 0 && a < _ACTION_MAX ? action_table[a] : "?";
}

enum policy_action policy_action_from_string(const char *s) {
        for (int i = 0; i < _ACTION_MAX; i++)
                if (strcasecmp(s, action_table[i]) == 0)
                        return (enum policy_action) i;
        return _ACTION_INVALID;
}

/* LogLevel= and --log-level: the names of affinityd.conf(5); the first name of a level is the one printed. */
static const struct {
        const char *name;
        int level;
} log_levels[] = {
        { "err", LOGL_ERR }, { "warning", LOGL_WARNING }, { "notice", LOGL_NOTICE },
        { "info", LOGL_INFO }, { "debug", LOGL_DEBUG },
        { "error", LOGL_ERR }, { "warn", LOGL_WARNING },
};

int log_level_from_string(const char *s) {
        for (size_t i = 0; s && i < ELEMENTSOF(log_levels); i++)
                if (strcasecmp(s, log_levels[i].name) == 0)
                        return log_levels[i].level;
        return -EINVAL;
}

const char *log_level_to_string(int level) {
        for (size_t i = 0; i < ELEMENTSOF(log_levels); i++)
                if (log_levels[i].level == level)
                        return log_levels[i].name;
        return "unknown";
}

/* ---- objects ---- */

struct config *config_new(void) {
        struct config *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->daemon = (struct daemon_settings) {
                .interval_usec = USEC_PER_SEC,
                .dry_run = false,
                .log_level = LOGL_INFO,
                .max_actions_per_interval = 4,
                .hysteresis_intervals = 3,
                .cooldown_usec = 30 * USEC_PER_SEC,
                .effect_check = true,
                .effect_tolerance = 0.10,
                .retry_after_usec = 600 * USEC_PER_SEC,
                .max_tracked_threads = CONFIG_MAX_THREADS_DEFAULT,
                .wake_sample_period = 1,
                .max_wake_events_per_s = 200000,
        };
        return c;
}

void policy_done(struct policy *p) {
        if (!p)
                return;
        free(p->name);
        free(p->file);
        strv_free(p->match.comm);
        strv_free(p->match.exe);
        strv_free(p->match.cmdline);
        strv_free(p->match.cgroup);
        strv_free(p->match.unit);
        strv_free(p->match.user);
        free(p->match.uids);
        strv_free(p->features);
        strv_free(p->sysctls);
        strv_free(p->cpus);
        free(p->excluded_why);
        memset(p, 0, sizeof(*p));
}

struct config *config_free(struct config *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_policies; i++)
                policy_done(&c->policies[i]);
        free(c->policies);
        strv_free(c->files);
        strv_free(c->daemon.scope);
        free(c);
        return NULL;
}

static void config_freep(struct config **c) {
        config_free(*c);
}

void config_errors_clear(struct config_errors *e) {
        if (!e)
                return;
        for (size_t i = 0; i < e->n; i++) {
                free(e->items[i].file);
                free(e->items[i].message);
        }
        free(e->items);
        e->items = NULL;
        e->n = 0;
}

int config_errors_addv(struct config_errors *e, const char *file, unsigned line, const char *fmt, va_list ap) {
        _cleanup_free_ char *body = NULL, *msg = NULL, *f = NULL;
        struct config_error *n;

        if (!e)
                return 0;
        if (vasprintf(&body, fmt, ap) < 0)
                return -ENOMEM;
        if (line > 0 ? asprintf(&msg, "%s:%u: %s", file, line, body) < 0
                     : asprintf(&msg, "%s: %s", file, body) < 0)
                return -ENOMEM;
        f = strdup(file);
        if (!f)
                return -ENOMEM;
        n = reallocarray(e->items, e->n + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        e->items = n;
        e->items[e->n++] = (struct config_error) {
                .file = TAKE_PTR(f),
                .line = line,
                .message = TAKE_PTR(msg),
        };
        return 0;
}

int config_errors_add(struct config_errors *e, const char *file, unsigned line, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = config_errors_addv(e, file, line, fmt, ap);
        va_end(ap);
        return r;
}

void config_paths_default(struct config_paths *ret) {
        *ret = (struct config_paths) {
                .dirs = { VENDORDIR, SYSCONFDIR "/affinityd", RUNSTATEDIR "/affinityd", NULL },
        };
}

void config_paths_from(char * const *dirs, struct config_paths *ret) {
        size_t n = 0;

        if (!dirs || !dirs[0]) {
                config_paths_default(ret);
                return;
        }
        *ret = (struct config_paths) {};
        for (; *dirs && n < ELEMENTSOF(ret->dirs) - 1; dirs++)
                ret->dirs[n++] = *dirs;
}

const struct policy *config_find_policy(const struct config *c, const char *name) {
        const struct policy *disabled = NULL;

        if (!c || !name || !name[0])
                return NULL;
        /* Names are unique among enabled policies only (config_validate()):
         * a vendor's disabled policy may share its name with the admin's
         * enabled one, which is the one that acts and owns its changes. */
        for (size_t i = 0; i < c->n_policies; i++)
                if (c->policies[i].name && streq(c->policies[i].name, name)) {
                        if (c->policies[i].enabled)
                                return &c->policies[i];
                        disabled = disabled ?: &c->policies[i];
                }
        return disabled;
}

/* ---- checks between policies ---- */

static bool strv_same_set(char * const *a, char * const *b) {
        if (strv_length(a) != strv_length(b))
                return false;
        for (; a && *a; a++)        /* lists are de-duplicated at parse time */
                if (!strv_contains(b, *a))
                        return false;
        return true;
}

static bool uids_same_set(const struct policy_match *a, const struct policy_match *b) {
        size_t n = strv_length(a->user);

        if (n != strv_length(b->user))
                return false;
        for (size_t i = 0; i < n; i++) {
                bool found = false;
                for (size_t j = 0; j < n && !found; j++)
                        found = a->uids[i] == b->uids[j];
                if (!found)
                        return false;
        }
        return true;
}

static bool match_same(const struct policy_match *a, const struct policy_match *b) {
        return strv_same_set(a->comm, b->comm) && strv_same_set(a->exe, b->exe) &&
               strv_same_set(a->cmdline, b->cmdline) && strv_same_set(a->cgroup, b->cgroup) &&
               strv_same_set(a->unit, b->unit) && uids_same_set(a, b) &&
               a->kthreads == b->kthreads && a->realtime == b->realtime;
}

int config_validate(const struct config *c, struct config_errors *errors) {
        int r;

        for (size_t i = 0; i < c->n_policies; i++) {
                const struct policy *p = &c->policies[i];

                if (!p->enabled)
                        continue;
                for (size_t j = 0; j < i; j++) {
                        const struct policy *q = &c->policies[j];

                        if (!q->enabled)
                                continue;
                        /* Names key the journal and `affctl explain`; two enabled policies cannot share one. */
                        if (streq(p->name, q->name)) {
                                r = config_errors_add(errors, p->file, p->name_line,
                                                      "Name=%s: already used by the policy in %s:%u",
                                                      p->name, q->file, q->name_line);
                                if (r < 0)
                                        return r;
                                break;
                        }
                        /*
                         * Same detector, same priority, same tasks, different action:
                         * which one wins would depend on file order. Exclusions always
                         * win over everything, so they never conflict.
                         */
                        if (p->action != ACTION_EXCLUDE && q->action != ACTION_EXCLUDE &&
                            p->detector == q->detector && p->priority == q->priority &&
                            p->action != q->action && match_same(&p->match, &q->match)) {
                                r = config_errors_add(errors, p->file, p->action_line,
                                                      "Action=%s: conflicts with policy %s (%s:%u): same Detector=%s, "
                                                      "Priority=%d and [Match] but Action=%s; give one a different Priority=",
                                                      policy_action_to_string(p->action), q->name, q->file, q->line,
                                                      detector_to_string(p->detector), p->priority,
                                                      policy_action_to_string(q->action));
                                if (r < 0)
                                        return r;
                                break;
                        }
                }
        }
        return 0;
}

/* ---- reading files ---- */

static unsigned roles_for_file(const char *path) {
        size_t n = strlen(path);

        if (n > 5 && streq(path + n - 5, ".conf"))
                return CONFIG_ROLE_DAEMON;
        if (n > 7 && streq(path + n - 7, ".policy"))
                return CONFIG_ROLE_POLICY;
        return CONFIG_ROLE_DAEMON | CONFIG_ROLE_POLICY;
}

static int read_fd(int fd, char **ret, size_t *ret_size) {
        int r = util_read_fd(fd, CONFIG_FILE_MAX, ret, ret_size);
        return r == -E2BIG ? -EFBIG : r;
}

/* Parse one file; errors reading it become messages. Returns 0 or -ENOMEM. */
static int parse_file(struct config *c, const char *path, unsigned roles, struct config_errors *errors) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r;

        if (streq(path, "-")) {
                r = read_fd(STDIN_FILENO, &data, &size);
                path = "<stdin>";
        } else {
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                r = fd < 0 ? -errno : read_fd(fd, &data, &size);
        }
        if (r == -ENOMEM)
                return r;
        if (r == -EFBIG)
                return config_errors_add(errors, path, 0, "larger than %d bytes, not a configuration file",
                                         CONFIG_FILE_MAX);
        if (r < 0)
                return config_errors_add(errors, path, 0, "cannot read: %s", strerror(-r));

        r = strv_push(&c->files, path);
        if (r < 0)
                return r;
        return config_parse_text(c, path, data, size, roles, errors);
}

/* Empty, or a symlink to /dev/null (systemd's null_or_empty). 1 masked, 0 not, <0 cannot tell. */
static int file_masked(const char *path, struct stat *st) {
        char target[16];
        ssize_t n;

        n = readlink(path, target, sizeof(target) - 1);
        if (n > 0) {
                target[n] = '\0';
                if (streq(target, "/dev/null"))
                        return 1;
        }
        if (stat(path, st) < 0)
                return -errno;
        if (S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3))
                return 1;
        if (S_ISREG(st->st_mode) && st->st_size == 0)
                return 1;
        return 0;
}

struct dir_entry {
        char *name;
        char *path;
};

struct dir_entries {
        struct dir_entry *items;
        size_t n;
};

static void dir_entries_clear(struct dir_entries *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].path);
        }
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

static int dir_entry_cmp(const void *a, const void *b) {
        return strcmp(((const struct dir_entry *) a)->name, ((const struct dir_entry *) b)->name);
}

/* Add or replace name → path (a later directory replaces an earlier file of the same name). */
static int dir_entries_put(struct dir_entries *l, const char *name, const char *path) {
        struct dir_entry *n;
        char *p;

        p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].name, name)) {
                        free(l->items[i].path);
                        l->items[i].path = p;
                        return 0;
                }
        n = reallocarray(l->items, l->n + 1, sizeof(*n));
        if (!n) {
                free(p);
                return -ENOMEM;
        }
        l->items = n;
        l->items[l->n].name = strdup(name);
        if (!l->items[l->n].name) {
                free(p);
                return -ENOMEM;
        }
        l->items[l->n++].path = p;
        return 0;
}

static int collect_dir(const char *dir, const char *sub, const char *suffix, struct dir_entries *l,
                       struct config_errors *errors) {
        _cleanup_free_ char *d = NULL;
        DIR *dp;
        struct dirent *de;
        size_t sl = strlen(suffix);
        int r = 0;

        if (asprintf(&d, "%s/%s", dir, sub) < 0)
                return -ENOMEM;
        dp = opendir(d);
        if (!dp) {
                if (errno == ENOENT || errno == ENOTDIR)
                        return 0;
                return config_errors_add(errors, d, 0, "cannot open directory: %s", strerror(errno));
        }
        while ((de = readdir(dp))) {
                _cleanup_free_ char *path = NULL;
                size_t n = strlen(de->d_name);

                if (de->d_name[0] == '.' || n <= sl || !streq(de->d_name + n - sl, suffix))
                        continue;
                if (asprintf(&path, "%s/%s", d, de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = dir_entries_put(l, de->d_name, path);
                if (r < 0)
                        break;
        }
        closedir(dp);
        return r;
}

/* Parse path unless masked; not-regular and unreadable files are errors. */
static int load_one(struct config *c, const char *path, unsigned roles, struct config_errors *errors) {
        struct stat st;
        int r;

        r = file_masked(path, &st);
        if (r > 0)
                return 0;
        if (r < 0)
                return config_errors_add(errors, path, 0, "cannot read: %s", strerror(-r));
        if (!S_ISREG(st.st_mode))
                return config_errors_add(errors, path, 0, "not a regular file");
        return parse_file(c, path, roles, errors);
}

static int finish_load(struct config **c, struct config **ret, struct config_errors *errors, size_t n_before) {
        int r;

        r = config_validate(*c, errors);
        if (r < 0)
                return r;
        if (errors->n > n_before)
                return -EINVAL;
        *ret = TAKE_PTR(*c);
        return 0;
}

int config_load(const struct config_paths *paths, struct config **ret, struct config_errors *ret_errors) {
        _cleanup_(config_freep) struct config *c = NULL;
        struct config_errors local = {}, *errors = ret_errors ? ret_errors : &local;
        struct dir_entries dropins = {}, policies = {};
        struct config_paths def;
        _cleanup_free_ char *main_conf = NULL;
        size_t n_before = errors->n;
        int r = 0;

        if (!paths) {
                config_paths_default(&def);
                paths = &def;
        }
        c = config_new();
        if (!c)
                return -ENOMEM;

        for (size_t i = 0; i < ELEMENTSOF(paths->dirs) && paths->dirs[i]; i++) {
                const char *dir = paths->dirs[i];
                _cleanup_free_ char *p = NULL;
                struct stat st;

                if (asprintf(&p, "%s/affinityd.conf", dir) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
                if (lstat(p, &st) >= 0) {
                        free(main_conf);
                        main_conf = TAKE_PTR(p);
                }
                r = collect_dir(dir, "affinityd.conf.d", ".conf", &dropins, errors);
                if (r < 0)
                        goto finish;
                r = collect_dir(dir, "policies.d", ".policy", &policies, errors);
                if (r < 0)
                        goto finish;
        }
        qsort_safe(dropins.items, dropins.n, sizeof(*dropins.items), dir_entry_cmp);
        qsort_safe(policies.items, policies.n, sizeof(*policies.items), dir_entry_cmp);

        if (main_conf) {
                r = load_one(c, main_conf, CONFIG_ROLE_DAEMON, errors);
                if (r < 0)
                        goto finish;
        }
        for (size_t i = 0; i < dropins.n; i++) {
                r = load_one(c, dropins.items[i].path, CONFIG_ROLE_DAEMON, errors);
                if (r < 0)
                        goto finish;
        }
        for (size_t i = 0; i < policies.n; i++) {
                r = load_one(c, policies.items[i].path, CONFIG_ROLE_POLICY, errors);
                if (r < 0)
                        goto finish;
        }
        r = finish_load(&c, ret, errors, n_before);

finish:
        dir_entries_clear(&dropins);
        dir_entries_clear(&policies);
        config_errors_clear(&local);
        return r;
}

int config_load_files(char * const *files, struct config **ret, struct config_errors *ret_errors) {
        _cleanup_(config_freep) struct config *c = NULL;
        struct config_errors local = {}, *errors = ret_errors ? ret_errors : &local;
        size_t n_before = errors->n;
        int r = 0;

        c = config_new();
        if (!c)
                return -ENOMEM;
        for (; files && *files; files++) {
                r = streq(*files, "-") ? parse_file(c, *files, CONFIG_ROLE_DAEMON | CONFIG_ROLE_POLICY, errors)
                                       : load_one(c, *files, roles_for_file(*files), errors);
                if (r < 0)
                        goto finish;
        }
        r = finish_load(&c, ret, errors, n_before);
finish:
        config_errors_clear(&local);
        return r;
}

int config_load_buffer(const char *name, const char *data, size_t size,
                       struct config **ret, struct config_errors *ret_errors) {
        _cleanup_(config_freep) struct config *c = NULL;
        struct config_errors local = {}, *errors = ret_errors ? ret_errors : &local;
        size_t n_before = errors->n;
        int r;

        c = config_new();
        if (!c)
                return -ENOMEM;
        r = strv_push(&c->files, name);
        if (r >= 0)
                r = config_parse_text(c, name, data, size, roles_for_file(name), errors);
        if (r >= 0)
                r = finish_load(&c, ret, errors, n_before);
        config_errors_clear(&local);
        return r;
}

static int check_main(const struct config_paths *paths, char * const *files, bool print,
                      config_machine_check_t machine_check, void *userdata, FILE *out, FILE *err) {
        _cleanup_(config_freep) struct config *c = NULL;
        struct config_errors errors = {};
        int r;

        r = files && files[0] ? config_load_files(files, &c, &errors) : config_load(paths, &c, &errors);
        if (r >= 0 && machine_check && machine_check(c, &errors, userdata) > 0)
                r = -EINVAL;
        for (size_t i = 0; i < errors.n; i++)
                fprintf(err, "%s\n", errors.items[i].message);
        config_errors_clear(&errors);
        if (r == -EINVAL)
                return 1;
        if (r < 0)
                return r;
        if (print) {
                r = config_print(c, out);
                if (r < 0)
                        return r;
        }
        return 0;
}

int config_check_main(const struct config_paths *paths, char * const *files, bool print, FILE *out, FILE *err) {
        return check_main(paths, files, print, NULL, NULL, out, err);
}

int config_check_machine_main(const struct config_paths *paths, bool print, config_machine_check_t machine_check,
                              void *userdata, FILE *out, FILE *err) {
        return check_main(paths, NULL, print, machine_check, userdata, out, err);
}

int config_check_files_main(char **files, bool print, FILE *out, FILE *err) {
        return config_check_main(NULL, files, print, out, err);
}
