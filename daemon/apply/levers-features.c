/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_features: the scheduler's debug switches, one word per feature,
 * "NAME" when on and "NO_NAME" when off, read and written as a whole list
 * at /sys/kernel/debug/sched/features (5.13+) or
 * /sys/kernel/debug/sched_features (before).
 *
 * Names are only ever validated against the list this kernel prints: the
 * set changes between releases ([fair-sleepers]: FAIR_SLEEPERS was removed and
 * asked back; 6.6 replaced CFS placement with EEVDF). The history table
 * below only makes the error message say why a name is missing.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "apply/levers-internal.h"

static const struct {
        const char *name;
        const char *history;
} feature_history[] = {
        /* [fair-sleepers]'s sleeper credit; EEVDF's lag-based placement replaced it */
        { "GENTLE_FAIR_SLEEPERS",   "it left in 6.6 (EEVDF); PLACE_LAG is the nearest switch there" },
        { "START_DEBIT",            "it left in 6.6 (EEVDF); PLACE_DEADLINE_INITIAL is the nearest" },
        { "LAST_BUDDY",             "it left in 6.6 (EEVDF)" },
        { "PLACE_LAG",              "it arrived in 6.6 (EEVDF)" },
        { "PLACE_DEADLINE_INITIAL", "it arrived in 6.6 (EEVDF)" },
        { "RUN_TO_PARITY",          "it arrived in 6.6 (EEVDF)" },
        { "PLACE_REL_DEADLINE",     "it arrived in 6.12" },
        { "PREEMPT_SHORT",          "it arrived in 6.12" },
        { "DELAY_DEQUEUE",          "it arrived in 6.12" },
        { "DELAY_ZERO",             "it arrived in 6.12" },
};

static const char *strip_no(const char *name, bool *ret_enable) {
        if (strncmp(name, "NO_", 3) == 0) {
                if (ret_enable)
                        *ret_enable = false;
                return name + 3;
        }
        if (ret_enable)
                *ret_enable = true;
        return name;
}

static bool feature_name_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
                        return false;
        return true;
}

static void features_clear(struct levers *l) {
        strv_free(l->feature_names);
        free(l->feature_enabled);
        l->feature_names = NULL;
        l->feature_enabled = NULL;
        l->n_features = 0;
        l->features_cached = false;
}

void levers_features_done(struct levers *l) {
        features_clear(l);
}

static int features_find_path(struct levers *l) {
        char dir[64];
        int r;

        l->features_path[0] = '\0';
        r = levers_debugfs_sched_dir(l, dir, sizeof(dir), l->features_why, sizeof(l->features_why));
        if (r == -ENOENT)
                return -ENODEV;   /* no file to look in, not "no such feature" */
        if (r < 0)
                return r;
        levers_fmt(l->features_path, sizeof(l->features_path), "%s",
                 dir[0] ? "/sys/kernel/debug/sched/features" : "/sys/kernel/debug/sched_features");
        return 0;
}

static int features_error(struct levers *l, int r) {
        if (r == -EPERM)
                levers_explain_eperm(l, l->features_path, l->features_why, sizeof(l->features_why));
        else if (r == -EACCES)
                levers_fmt(l->features_why, sizeof(l->features_why), "EACCES on %s (not root?)", l->features_path);
        else
                levers_fmt(l->features_why, sizeof(l->features_why), "cannot read %s: %s", l->features_path,
                         strerror(-r));
        return r;
}

int levers_features_refresh(struct levers *l) {
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ bool *enabled = NULL;
        size_t n = 0;
        char *tok, *save = NULL;
        int r;

        l->features_why[0] = '\0';
        r = features_find_path(l);
        if (r < 0) {
                features_clear(l);
                return r;
        }
        r = util_read_full_file_at(l->root, l->features_path, &text, NULL);
        if (r < 0) {
                features_clear(l);
                return features_error(l, r);
        }

        for (tok = strtok_r(text, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
                bool on;
                const char *name = strip_no(tok, &on);
                bool *ne;

                if (!feature_name_valid(name))
                        continue;
                r = strv_push(&names, name);
                if (r < 0)
                        return r;
                ne = realloc(enabled, (n + 1) * sizeof(bool));
                if (!ne)
                        return -ENOMEM;
                enabled = ne;
                enabled[n++] = on;
        }
        if (n == 0) {
                levers_fmt(l->features_why, sizeof(l->features_why), "%s lists no features", l->features_path);
                features_clear(l);
                return -ENODATA;
        }

        features_clear(l);
        l->feature_names = TAKE_PTR(names);
        l->feature_enabled = TAKE_PTR(enabled);
        l->n_features = n;
        l->features_cached = true;
        return 0;
}

static ssize_t features_index(struct levers *l, const char *name) {
        for (size_t i = 0; i < l->n_features; i++)
                if (streq(l->feature_names[i], name))
                        return (ssize_t) i;
        return -1;
}

int levers_features_list(struct levers *l, char ***ret_names, bool **ret_enabled, size_t *ret_n) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ bool *enabled = NULL;
        int r;

        r = levers_features_refresh(l);
        if (r < 0)
                return r;
        names = strv_copy(l->feature_names);
        enabled = malloc(l->n_features * sizeof(bool));
        if (!names || !enabled)
                return -ENOMEM;
        memcpy(enabled, l->feature_enabled, l->n_features * sizeof(bool));
        *ret_names = TAKE_PTR(names);
        *ret_enabled = TAKE_PTR(enabled);
        *ret_n = l->n_features;
        return 0;
}

bool levers_feature_known(struct levers *l, const char *name) {
        name = strip_no(name, NULL);
        if (!l->features_cached && levers_features_refresh(l) < 0)
                return false;
        return features_index(l, name) >= 0;
}

int levers_feature_check(struct levers *l, const char *entry, char *why, size_t why_size) {
        const char *name = strip_no(entry, NULL), *history = NULL;
        char rel[64] = "";
        int r;

        if (!feature_name_valid(name)) {
                levers_fmt(why, why_size, "%s: not a sched_features name (NAME or NO_NAME, A-Z 0-9 _)", entry);
                return -EINVAL;
        }
        if (!l->features_cached) {
                r = levers_features_refresh(l);
                if (r < 0) {
                        levers_fmt(why, why_size, "cannot check %s: %s", entry, l->features_why);
                        return r;
                }
        }
        if (features_index(l, name) >= 0)
                return 0;

        for (size_t i = 0; i < ELEMENTSOF(feature_history); i++)
                if (streq(feature_history[i].name, name))
                        history = feature_history[i].history;
        (void) levers_read_kernel_release(l, rel, sizeof(rel));
        levers_fmt(why, why_size, "%s: not a sched feature of this kernel (%s)%s%s", name,
                 rel[0] ? rel : "release unknown", history ? "; " : "", history ? history : "");
        return -ENOENT;
}

int levers_feature_get(void *userdata, const char *name, bool *ret_enabled) {
        struct levers *l = userdata;
        ssize_t i;
        int r;

        name = strip_no(name, NULL);
        if (!feature_name_valid(name))
                return -EINVAL;
        r = levers_features_refresh(l);
        if (r < 0) {
                levers_set_error(l, "%s", l->features_why);
                return r;
        }
        i = features_index(l, name);
        if (i < 0) {
                char why[256];
                (void) levers_feature_check(l, name, why, sizeof(why));
                levers_set_error(l, "%s", why);
                return -ENOENT;
        }
        *ret_enabled = l->feature_enabled[i];
        return 0;
}

int levers_feature_set(void *userdata, const char *name, bool enable) {
        struct levers *l = userdata;
        char word[80];
        bool now;
        ssize_t i;
        int r;

        r = levers_feature_get(l, name, &now);
        if (r < 0)
                return r;
        name = strip_no(name, NULL);
        if (now == enable)
                return 0;

        levers_fmt(word, sizeof(word), "%s%s", enable ? "" : "NO_", name);
        r = util_write_file_at(l->root, l->features_path, word);
        if (r < 0) {
                features_error(l, r);
                levers_set_error(l, "writing %s: %s", word, l->features_why);
                return r;
        }

        /* Read the kernel's list back: the write is only done when it says so. */
        r = levers_features_refresh(l);
        if (r < 0) {
                levers_set_error(l, "reading back after %s: %s", word, l->features_why);
                return r;
        }
        i = features_index(l, name);
        if (i < 0 || l->feature_enabled[i] != enable) {
                levers_set_error(l, "wrote %s to %s but the kernel still reports %s%s", word, l->features_path,
                                 enable ? "NO_" : "", name);
                return -EIO;
        }
        return 1;
}

void levers_features_probe(struct levers *l, struct lever_caps *c) {
        char p[PATH_MAX];
        int r;

        r = levers_features_refresh(l);
        levers_fmt(c->features_path, sizeof(c->features_path), "%s", l->features_path);
        c->features_readable = r >= 0;
        c->features_count = l->n_features;
        if (r >= 0) {
                /* Not a trial write: in a fixture it would replace the list, and on a
                 * kernel that lets us read (no lockdown) the file is root-writable. */
                c->features_writable = util_path_at(p, sizeof(p), l->root, l->features_path) &&
                                       access(p, W_OK) >= 0;
                if (!c->features_writable)
                        levers_fmt(c->features_why, sizeof(c->features_why), "%s not writable: %s",
                                 l->features_path, strerror(errno));
        } else
                levers_fmt(c->features_why, sizeof(c->features_why), "%s", l->features_why);
}
