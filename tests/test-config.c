/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Configuration parser and printer.
 *
 *  - value parsers and their normalized forms, one by one;
 *  - golden tests: tests/config/golden/CASE/{usr,etc,run}/ are loaded as
 *    the vendor, admin and runtime directories, printed, and compared with
 *    CASE/expected.print; the printed text must parse back to the same print;
 *  - the shipped files (policies/) parse, print as tests/config/shipped.print
 *    and round-trip;
 *  - error tests: tests/config/errors/CASE/ must fail with exactly the
 *    messages in CASE/expected.err (paths relative to the case directory);
 *  - masking with /dev/null symlinks, explicit files, JSON, check_main.
 *
 * `test-config --load DIR...` prints what config_load() makes of DIRs (or
 * the errors): a tool for writing new golden cases, whose output must be
 * read before it is saved as expected.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "config/config-internal.h"
#include "test-util.h"

static char srcdir[PATH_MAX];

/* asprintf that cannot fail quietly (and keeps -Wformat-truncation out of path building) */
static char *pathf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *pathf(const char *fmt, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        ASSERT_TRUE(r >= 0);
        return s;
}

static char *print_to_string(const struct config *c) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ASSERT_TRUE(f);
        ASSERT_OK(config_print(c, f));
        ASSERT_TRUE(fclose(f) == 0);
        return buf;
}

static char *errors_to_string(const struct config_errors *e) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ASSERT_TRUE(f);
        for (size_t i = 0; i < e->n; i++)
                fprintf(f, "%s\n", e->items[i].message);
        ASSERT_TRUE(fclose(f) == 0);
        return buf;
}

static char *read_text(const char *path) {
        char *s = NULL;

        if (util_read_full_file_at(NULL, path, &s, NULL) < 0) {
                fprintf(stderr, "cannot read %s\n", path);
                exit(1);
        }
        return s;
}

/* Compare, and on a difference show both texts so the log says what changed. */
static void assert_text(const char *what, const char *got, const char *expected) {
        if (streq(got, expected))
                return;
        fprintf(stderr, "%s differs.\n--- expected\n%s--- got\n%s---\n", what, expected, got);
        exit(1);
}

/* The printed text parses back (as a bundle, any file name but .conf/.policy) to the same print. */
static void assert_round_trip(const char *what, const char *printed) {
        struct config *c = NULL;
        struct config_errors e = {};
        _cleanup_free_ char *again = NULL, *errs = NULL;
        int r;

        r = config_load_buffer("printed", printed, strlen(printed), &c, &e);
        if (r < 0) {
                errs = errors_to_string(&e);
                fprintf(stderr, "%s: printed config does not parse:\n%s\n%s", what, printed, errs);
                exit(1);
        }
        again = print_to_string(c);
        assert_text(what, again, printed);
        config_free(c);
}

/* The vendor, admin and runtime directories of a case, those that exist. */
static void case_paths(struct config_paths *p) {
        static const char *const names[] = { "usr", "etc", "run" };
        size_t n = 0;
        struct stat st;

        *p = (struct config_paths) {};
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (stat(names[i], &st) >= 0 && S_ISDIR(st.st_mode))
                        p->dirs[n++] = names[i];
}

/* Sorted subdirectories of dir. */
static char **list_cases(const char *dir) {
        _cleanup_strv_free_ char **l = NULL;
        DIR *d = opendir(dir);
        struct dirent *de;

        ASSERT_TRUE(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        ASSERT_OK(strv_push(&l, de->d_name));
        closedir(d);
        /* tiny lists: insertion sort keeps the output order stable */
        for (size_t i = 1; l && l[i]; i++)
                for (size_t j = i; j > 0 && strcmp(l[j - 1], l[j]) > 0; j--) {
                        char *t = l[j];
                        l[j] = l[j - 1];
                        l[j - 1] = t;
                }
        return TAKE_PTR(l);
}

static void chdir_to(const char *a, const char *b) {
        _cleanup_free_ char *p = pathf("%s/%s/%s", srcdir, a, b ? b : "");

        if (chdir(p) < 0) {
                fprintf(stderr, "chdir %s: %m\n", p);
                exit(1);
        }
}

/* ---- value parsers ---- */

static void test_durations(void) {
        char reason[160], b[64];
        uint64_t u;

        ASSERT_OK(config_parse_duration("1s", 0, UINT64_MAX, &u, reason, sizeof(reason)));
        ASSERT_EQ(u, 1000000);
        ASSERT_OK(config_parse_duration("1.5s", 0, UINT64_MAX, &u, reason, sizeof(reason)));
        ASSERT_EQ(u, 1500000);
        ASSERT_OK(config_parse_duration("0.1s", 0, UINT64_MAX, &u, reason, sizeof(reason)));
        ASSERT_EQ(u, 100000);
        ASSERT_OK(config_parse_duration("250 ms", 0, UINT64_MAX, &u, reason, sizeof(reason)));
        ASSERT_EQ(u, 250000);
        ASSERT_OK(config_parse_duration("10min", 0, UINT64_MAX, &u, reason, sizeof(reason)));
        ASSERT_EQ(u, 600000000);
        ASSERT_OK(config_parse_duration("7usec", 0, UINT64_MAX, &u, reason, sizeof(reason)));
        ASSERT_EQ(u, 7);
        ASSERT_OK(config_parse_duration("0s", 0, UINT64_MAX, &u, reason, sizeof(reason)));
        ASSERT_EQ(u, 0);

        ASSERT_EQ(config_parse_duration("5", 0, UINT64_MAX, &u, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "missing unit (us, ms, s, min, h, d), e.g. 5s");
        ASSERT_EQ(config_parse_duration("5 parsecs", 0, UINT64_MAX, &u, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "unknown unit \"parsecs\" (us, ms, s, min, h, d)");
        ASSERT_EQ(config_parse_duration("0.5us", 0, UINT64_MAX, &u, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "finer than 1us");
        ASSERT_EQ(config_parse_duration("-1s", 0, UINT64_MAX, &u, reason, sizeof(reason)), -EINVAL);
        ASSERT_EQ(config_parse_duration("1s 2s", 0, UINT64_MAX, &u, reason, sizeof(reason)), -EINVAL);
        ASSERT_EQ(config_parse_duration("1.s", 0, UINT64_MAX, &u, reason, sizeof(reason)), -EINVAL);
        ASSERT_EQ(config_parse_duration("99999999999999999999s", 0, UINT64_MAX, &u, reason, sizeof(reason)), -ERANGE);
        ASSERT_EQ(config_parse_duration("999999999999999999d", 0, UINT64_MAX, &u, reason, sizeof(reason)), -ERANGE);
        ASSERT_EQ(config_parse_duration("50ms", USEC_PER_SEC / 10, USEC_PER_SEC, &u, reason, sizeof(reason)), -ERANGE);
        ASSERT_STREQ(reason, "out of range (100ms..1s)");

        ASSERT_STREQ(config_format_duration(0, b, sizeof(b)), "0s");
        ASSERT_STREQ(config_format_duration(1500000, b, sizeof(b)), "1500ms");
        ASSERT_STREQ(config_format_duration(600000000, b, sizeof(b)), "10min");
        ASSERT_STREQ(config_format_duration(3600000000, b, sizeof(b)), "1h");
        ASSERT_STREQ(config_format_duration(90000000, b, sizeof(b)), "90s");
        ASSERT_STREQ(config_format_duration(86400000000, b, sizeof(b)), "1d");
        ASSERT_STREQ(config_format_duration(1, b, sizeof(b)), "1us");
}

static void test_percent_rate(void) {
        char reason[160], b[64];
        double d;

        ASSERT_OK(config_parse_percent("80%", 0, 100, &d, reason, sizeof(reason)));
        ASSERT_NEAR(d, 0.80, 1e-12);
        ASSERT_OK(config_parse_percent("12.5 %", 0, 100, &d, reason, sizeof(reason)));
        ASSERT_NEAR(d, 0.125, 1e-12);
        ASSERT_STREQ(config_format_percent(d, b, sizeof(b)), "12.5%");
        ASSERT_STREQ(config_format_percent(0.8, b, sizeof(b)), "80%");
        ASSERT_STREQ(config_format_percent(1.2, b, sizeof(b)), "120%");
        ASSERT_STREQ(config_format_percent(0.0001, b, sizeof(b)), "0.01%");
        ASSERT_EQ(config_parse_percent("80", 0, 100, &d, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "missing unit, write 80%");
        ASSERT_EQ(config_parse_percent("80/s", 0, 100, &d, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "unknown unit \"/s\" (expected %)");
        ASSERT_EQ(config_parse_percent("0.125%", 0, 100, &d, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "at most 2 decimals");
        ASSERT_EQ(config_parse_percent("101%", 0, 100, &d, reason, sizeof(reason)), -ERANGE);
        ASSERT_STREQ(reason, "out of range (0%..100%)");
        ASSERT_EQ(config_parse_percent("%", 0, 100, &d, reason, sizeof(reason)), -EINVAL);

        ASSERT_OK(config_parse_rate("2000/s", 1, 1e8, &d, reason, sizeof(reason)));
        ASSERT_NEAR(d, 2000, 1e-9);
        ASSERT_OK(config_parse_rate("0.2/sec", 0.001, 1e6, &d, reason, sizeof(reason)));
        ASSERT_NEAR(d, 0.2, 1e-12);
        ASSERT_STREQ(config_format_rate(d, b, sizeof(b)), "0.2/s");
        ASSERT_STREQ(config_format_rate(0.001, b, sizeof(b)), "0.001/s");
        ASSERT_EQ(config_parse_rate("2000", 1, 1e8, &d, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "missing unit, write 2000/s");
        ASSERT_EQ(config_parse_rate("1/min", 0.001, 1e6, &d, reason, sizeof(reason)), -EINVAL);
        ASSERT_EQ(config_parse_rate("0.0001/s", 0.001, 1e6, &d, reason, sizeof(reason)), -EINVAL);
        ASSERT_EQ(config_parse_rate("0/s", 0.001, 1e6, &d, reason, sizeof(reason)), -ERANGE);
        ASSERT_STREQ(reason, "out of range (0.001/s..1000000/s)");
}

static void test_uint_bool(void) {
        char reason[160];
        uint64_t u;
        bool b;

        ASSERT_OK(config_parse_uint("4", 1, 1000, &u, reason, sizeof(reason)));
        ASSERT_EQ(u, 4);
        ASSERT_EQ(config_parse_uint("0", 1, 1000, &u, reason, sizeof(reason)), -ERANGE);
        ASSERT_STREQ(reason, "out of range (1..1000)");
        ASSERT_EQ(config_parse_uint("4x", 1, 1000, &u, reason, sizeof(reason)), -EINVAL);
        ASSERT_EQ(config_parse_uint("-4", 1, 1000, &u, reason, sizeof(reason)), -EINVAL);
        ASSERT_EQ(config_parse_uint("99999999999999999999999", 1, 1000, &u, reason, sizeof(reason)), -ERANGE);

        ASSERT_OK(config_parse_bool("Yes", &b));
        ASSERT_TRUE(b);
        ASSERT_OK(config_parse_bool("off", &b));
        ASSERT_TRUE(!b);
        ASSERT_EQ(config_parse_bool("yep", &b), -EINVAL);
}

static void test_words(void) {
        char reason[160], b[256];
        char **l = NULL;

        ASSERT_EQ(config_split_words("  a b\tc ", &l, reason, sizeof(reason)), 3);
        ASSERT_STREQ(l[0], "a");
        ASSERT_STREQ(l[2], "c");
        strv_free(l);
        ASSERT_EQ(config_split_words("\"java -jar *\" 'say \"hi\"' x'y", &l, reason, sizeof(reason)), 3);
        ASSERT_STREQ(l[0], "java -jar *");
        ASSERT_STREQ(l[1], "say \"hi\"");
        ASSERT_STREQ(l[2], "x'y");
        ASSERT_STREQ(config_format_word(l[0], b, sizeof(b)), "\"java -jar *\"");
        ASSERT_STREQ(config_format_word(l[1], b, sizeof(b)), "'say \"hi\"'");
        ASSERT_STREQ(config_format_word(l[2], b, sizeof(b)), "x'y");
        strv_free(l);
        l = NULL;
        /* printed after another word, ";x" would be an inline comment: quoted */
        ASSERT_STREQ(config_format_word(";x", b, sizeof(b)), "\";x\"");
        ASSERT_STREQ(config_format_word(";\"x", b, sizeof(b)), "';\"x'");
        ASSERT_STREQ(config_format_word("#x", b, sizeof(b)), "#x");
        ASSERT_EQ(config_split_words("", &l, reason, sizeof(reason)), 0);
        ASSERT_TRUE(!l);
        ASSERT_EQ(config_split_words("\"open", &l, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "unbalanced quotes");
        ASSERT_EQ(config_split_words("\"a\"b", &l, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "text right after a closing quote");
        ASSERT_EQ(config_split_words("a \"\"", &l, reason, sizeof(reason)), -EINVAL);
        ASSERT_STREQ(reason, "empty entry \"\"");
}

static void test_defaults(void) {
        struct config *c = config_new();
        _cleanup_free_ char *s = NULL;

        ASSERT_TRUE(c);
        ASSERT_EQ(c->daemon.interval_usec, USEC_PER_SEC);
        ASSERT_EQ(c->daemon.log_level, LOGL_INFO);
        ASSERT_EQ(c->daemon.max_actions_per_interval, 4);
        ASSERT_EQ(c->daemon.hysteresis_intervals, 3);
        ASSERT_EQ(c->daemon.cooldown_usec, 30 * USEC_PER_SEC);
        ASSERT_TRUE(c->daemon.effect_check);
        ASSERT_NEAR(c->daemon.effect_tolerance, 0.10, 1e-12);
        ASSERT_EQ(c->daemon.retry_after_usec, 600 * USEC_PER_SEC);
        ASSERT_EQ(c->daemon.max_tracked_threads, 65536);
        ASSERT_EQ(c->daemon.wake_sample_period, 1);
        ASSERT_EQ(c->daemon.max_wake_events_per_s, 200000);
        ASSERT_EQ(c->n_policies, 0);
        s = print_to_string(c);
        assert_round_trip("defaults", s);
        config_free(c);
        ASSERT_TRUE(config_free(NULL) == NULL);
        config_errors_clear(NULL);
}

static void test_enums(void) {
        for (int d = 0; d < _DETECT_MAX; d++)
                ASSERT_EQ(detector_from_string(detector_to_string((enum detector) d)), d);
        for (int a = 0; a < _ACTION_MAX; a++)
                ASSERT_EQ(policy_action_from_string(policy_action_to_string((enum policy_action) a)), a);
        ASSERT_EQ(detector_from_string("HOG"), DETECT_HOG);
        ASSERT_EQ(detector_from_string("hogs"), _DETECT_INVALID);
        ASSERT_EQ(policy_action_from_string("co-locate"), _ACTION_INVALID);
        ASSERT_STREQ(detector_to_string(_DETECT_INVALID), "?");
}

/* ---- golden files ---- */

static unsigned test_golden(void) {
        _cleanup_strv_free_ char **cases = NULL;
        _cleanup_free_ char *dir = pathf("%s/tests/config/golden", srcdir);
        char p[PATH_MAX];
        unsigned n = 0;

        cases = list_cases(dir);
        for (char **k = cases; k && *k; k++) {
                struct config *c = NULL;
                struct config_errors e = {};
                struct config_paths paths;
                _cleanup_free_ char *got = NULL, *expected = NULL;
                int r;

                chdir_to("tests/config/golden", *k);
                case_paths(&paths);
                r = config_load(&paths, &c, &e);
                if (r < 0) {
                        _cleanup_free_ char *errs = errors_to_string(&e);
                        fprintf(stderr, "golden %s: load failed: %s\n%s", *k, strerror(-r), errs);
                        exit(1);
                }
                got = print_to_string(c);
                expected = read_text("expected.print");
                snprintf(p, sizeof(p), "golden %s", *k);
                assert_text(p, got, expected);
                assert_round_trip(p, got);
                config_free(c);
                n++;
        }
        ASSERT_TRUE(n >= 4);
        return n;
}

static unsigned test_errors(void) {
        _cleanup_strv_free_ char **cases = NULL;
        _cleanup_free_ char *dir = pathf("%s/tests/config/errors", srcdir);
        char p[PATH_MAX];
        unsigned n = 0;

        cases = list_cases(dir);
        for (char **k = cases; k && *k; k++) {
                struct config *c = NULL;
                struct config_errors e = {};
                struct config_paths paths;
                _cleanup_free_ char *got = NULL, *expected = NULL;

                chdir_to("tests/config/errors", *k);
                case_paths(&paths);
                ASSERT_EQ(config_load(&paths, &c, &e), -EINVAL);
                ASSERT_TRUE(!c);
                got = errors_to_string(&e);
                expected = read_text("expected.err");
                snprintf(p, sizeof(p), "errors %s", *k);
                assert_text(p, got, expected);
                for (size_t i = 0; i < e.n; i++) {
                        ASSERT_TRUE(e.items[i].file);
                        ASSERT_TRUE(strncmp(e.items[i].message, e.items[i].file, strlen(e.items[i].file)) == 0);
                }
                config_errors_clear(&e);
                n++;
        }
        ASSERT_TRUE(n >= 4);
        return n;
}

/* ---- the shipped files ---- */

static void test_shipped(void) {
        struct config *c = NULL;
        struct config_errors e = {};
        struct config_paths paths = {};
        _cleanup_free_ char *got = NULL, *expected = NULL, *errs = NULL, *dump = NULL;
        _cleanup_strv_free_ char **files = NULL;
        int r;

        chdir_to(".", NULL);
        paths.dirs[0] = "policies";
        r = config_load(&paths, &c, &e);
        errs = errors_to_string(&e);
        if (r < 0) {
                fprintf(stderr, "shipped configuration does not load:\n%s", errs);
                exit(1);
        }
        got = print_to_string(c);
        expected = read_text("tests/config/shipped.print");
        assert_text("shipped configuration", got, expected);
        assert_round_trip("shipped configuration", got);

        /* safe on any machine: everything that changes the system beyond affinity is off */
        for (size_t i = 0; i < c->n_policies; i++) {
                const struct policy *pol = &c->policies[i];
                if (pol->action == ACTION_FEATURES || pol->action == ACTION_SYSCTL || pol->action == ACTION_WEIGHT)
                        ASSERT_TRUE(!pol->enabled);
        }
        ASSERT_TRUE(config_find_policy(c, "10-exclude-kernel"));
        ASSERT_TRUE(config_find_policy(c, "10-exclude-systemd-units"));
        ASSERT_TRUE(config_find_policy(c, "50-hogs")->enabled);
        ASSERT_TRUE(!config_find_policy(c, "90-steal-time-cfs")->enabled);
        ASSERT_TRUE(!config_find_policy(c, "nope"));

        /* each file on its own, as `affctl check FILE` reads it */
        for (char **f = c->files; f && *f; f++) {
                struct config *one = NULL;
                char *list[] = { *f, NULL };

                ASSERT_OK(config_load_files(list, &one, NULL));
                config_free(one);
        }
        ASSERT_EQ(strv_length(c->files), 11);
        ASSERT_STREQ(c->files[0], "policies/affinityd.conf");

        /* and the print written to a file with a neutral name reads back via config_load_files */
        dump = pathf("/tmp/test-config-%d.dump", (int) getpid());
        {
                FILE *f = fopen(dump, "we");
                struct config *again = NULL;
                _cleanup_free_ char *again_s = NULL;

                ASSERT_TRUE(f);
                fputs(got, f);
                ASSERT_TRUE(fclose(f) == 0);
                ASSERT_OK(strv_push(&files, dump));
                ASSERT_OK(config_load_files(files, &again, NULL));
                again_s = print_to_string(again);
                assert_text("shipped via file", again_s, got);
                config_free(again);
                unlink(dump);
        }
        config_free(c);
}

/* ---- masking and precedence with real symlinks (not kept in git) ---- */

static void write_file(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *p = pathf("%s/%s", dir, name);
        FILE *f;

        f = fopen(p, "we");
        ASSERT_TRUE(f);
        fputs(text, f);
        ASSERT_TRUE(fclose(f) == 0);
}

static void test_masking(void) {
        char tmp[] = "/tmp/test-config-XXXXXX";
        _cleanup_free_ char *usr = NULL, *etc = NULL, *run = NULL, *p = NULL, *q = NULL, *rm = NULL;
        struct config *c = NULL;
        struct config_errors e = {};
        struct config_paths paths = {};
        static const char *const dirs[] = { "usr", "etc", "run", "usr/policies.d", "etc/policies.d",
                                            "run/policies.d", "etc/affinityd.conf.d" };

        ASSERT_TRUE(mkdtemp(tmp));
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *d = pathf("%s/%s", tmp, dirs[i]);
                ASSERT_TRUE(mkdir(d, 0755) == 0);
        }
        usr = pathf("%s/usr", tmp);
        etc = pathf("%s/etc", tmp);
        run = pathf("%s/run", tmp);

        write_file(usr, "affinityd.conf", "[Daemon]\nInterval=2s\n");
        write_file(usr, "policies.d/50-hogs.policy", "[Policy]\nDetector=hog\nAction=pin\n");
        write_file(usr, "policies.d/50-pairs.policy", "[Policy]\nDetector=pair\nAction=colocate\n");
        write_file(usr, "policies.d/60-report.policy", "[Policy]\nDetector=rundelay\nAction=report\n");
        /* a symlink to /dev/null masks the vendor's main file and a policy */
        p = pathf("%s/affinityd.conf", etc);
        ASSERT_TRUE(symlink("/dev/null", p) == 0);
        q = pathf("%s/policies.d/50-hogs.policy", etc);
        ASSERT_TRUE(symlink("/dev/null", q) == 0);
        write_file(etc, "affinityd.conf.d/x.conf", "[Daemon]\nDryRun=yes\n");
        /* runtime replaces the vendor's 50-pairs; an empty file masks 60-report */
        write_file(run, "policies.d/50-pairs.policy", "[Policy]\nDetector=pair\nAction=report\n");
        write_file(run, "policies.d/60-report.policy", "");

        paths.dirs[0] = usr;
        paths.dirs[1] = etc;
        paths.dirs[2] = run;
        ASSERT_OK(config_load(&paths, &c, &e));
        ASSERT_EQ(e.n, 0);
        ASSERT_EQ(c->daemon.interval_usec, USEC_PER_SEC);   /* vendor's 2s masked: default */
        ASSERT_TRUE(c->daemon.dry_run);
        ASSERT_EQ(c->n_policies, 1);
        ASSERT_STREQ(c->policies[0].name, "50-pairs");
        ASSERT_EQ(c->policies[0].action, ACTION_REPORT);
        ASSERT_EQ(strv_length(c->files), 2);   /* the drop-in and the runtime policy */
        config_free(c);

        /* a directory where a policy file should be is an error, named */
        free(p);
        p = pathf("%s/policies.d/70-dir.policy", run);
        ASSERT_TRUE(mkdir(p, 0755) == 0);
        ASSERT_EQ(config_load(&paths, &c, &e), -EINVAL);
        ASSERT_EQ(e.n, 1);
        ASSERT_TRUE(strstr(e.items[0].message, "70-dir.policy: not a regular file"));
        config_errors_clear(&e);

        rm = pathf("rm -rf '%s'", tmp);
        ASSERT_EQ(system(rm), 0);
}

/*
 * Names are unique among enabled policies only: a vendor's disabled
 * policy may share its Name= with the admin's enabled one, and a lookup by
 * name (the planner's, for a change that policy made) finds the enabled
 * one, wherever it sorts. Scope= prints as it reads back: quoted, and
 * split into lines of the parser's length.
 */
static void test_same_name_and_scope(void) {
        char tmp[] = "/tmp/test-config-XXXXXX";
        _cleanup_free_ char *rm = NULL, *got = NULL, *scope = NULL, *longer = NULL, *pd = NULL;
        struct config *c = NULL;
        struct config_errors e = {};
        struct config_paths paths = {};
        const struct policy *p;

        ASSERT_TRUE(mkdtemp(tmp));
        pd = pathf("%s/policies.d", tmp);
        ASSERT_TRUE(mkdir(pd, 0755) == 0);
        write_file(pd, "10-vendor.policy", "[Policy]\nName=tune\nEnabled=no\nDetector=hog\nAction=report\n");
        write_file(pd, "50-mine.policy", "[Policy]\nName=tune\nDetector=hog\nAction=pin\n");
        longer = strdup("/system.slice/a-unit-with-a-long-name-that-goes-on-and-on-and-on-and-on-and-on-and-on-"
                        "and-on-and-on.service");
        ASSERT_TRUE(longer);
        scope = pathf("[Daemon]\nScope=\"/x/a b\" %s\nScope=%s-2\n", longer, longer);
        write_file(tmp, "affinityd.conf", scope);
        paths.dirs[0] = tmp;
        ASSERT_OK(config_load(&paths, &c, &e));
        ASSERT_EQ(e.n, 0);
        ASSERT_EQ(c->n_policies, 2);
        p = config_find_policy(c, "tune");
        ASSERT_TRUE(p && p->enabled && p->action == ACTION_PIN);
        ASSERT_EQ(strv_length(c->daemon.scope), 3);
        ASSERT_STREQ(c->daemon.scope[0], "/x/a b");
        got = print_to_string(c);
        assert_round_trip("Scope= with a space and long patterns", got);
        config_free(c);

        /* disabled only: found, and says so */
        write_file(pd, "50-mine.policy", "");
        ASSERT_OK(config_load(&paths, &c, &e));
        p = config_find_policy(c, "tune");
        ASSERT_TRUE(p && !p->enabled);
        config_free(c);

        rm = pathf("rm -rf '%s'", tmp);
        ASSERT_EQ(system(rm), 0);
}

/* ---- explicit files and buffers ---- */

static void test_files_and_buffers(void) {
        struct config *c = NULL;
        struct config_errors e = {};
        static const char nul[] = "[Policy]\nDetector=hog\nAction=pin\nComm=a\0b\n";
        _cleanup_free_ char *errs = NULL;

        /* .conf: [Daemon] only; .policy: policies only; other names: both */
        ASSERT_EQ(config_load_buffer("x.conf", "[Policy]\nAction=exclude\n", 24, &c, &e), -EINVAL);
        ASSERT_STREQ(e.items[0].message,
                     "x.conf:1: [Policy]: not allowed in a .conf file (policies go in policies.d/NAME.policy)");
        config_errors_clear(&e);
        ASSERT_EQ(config_load_buffer("x.policy", "[daemon]\nInterval=1s\n", 21, &c, &e), -EINVAL);
        ASSERT_STREQ(e.items[0].message, "x.policy:1: [daemon]: not allowed in a .policy file (it belongs in affinityd.conf)");
        config_errors_clear(&e);
        ASSERT_OK(config_load_buffer("x.dump", "[daemon]\nInterval=2s\n[Policy]\nAction=exclude\n", 44, &c, &e));
        ASSERT_EQ(c->daemon.interval_usec, 2 * USEC_PER_SEC);
        ASSERT_STREQ(c->policies[0].name, "x");
        ASSERT_EQ(c->policies[0].detector, DETECT_ALWAYS);
        ASSERT_STREQ(c->policies[0].excluded_why, "excluded by policy x");
        config_free(c);

        /* a NUL byte is reported with its line, and the rest still parsed */
        ASSERT_EQ(config_load_buffer("n.policy", nul, sizeof(nul) - 1, &c, &e), -EINVAL);
        errs = errors_to_string(&e);
        assert_text("NUL byte", errs, "n.policy:4: NUL byte in line (not a text file?)\n");
        config_errors_clear(&e);

        /* a missing file is an error about the file */
        {
                char *l[] = { (char *) "/nonexistent/a.policy", NULL };
                ASSERT_EQ(config_load_files(l, &c, &e), -EINVAL);
                ASSERT_STREQ(e.items[0].message, "/nonexistent/a.policy: cannot read: No such file or directory");
                config_errors_clear(&e);
        }

        /* errors are appended to what ret_errors already holds */
        ASSERT_EQ(config_load_buffer("a.policy", "[Policy]\n", 9, &c, &e), -EINVAL);
        ASSERT_EQ(config_load_buffer("b.policy", "[Policy]\n", 9, &c, &e), -EINVAL);
        ASSERT_EQ(e.n, 2);
        ASSERT_STREQ(e.items[1].file, "b.policy");
        ASSERT_EQ(e.items[1].line, 1);
        config_errors_clear(&e);

        /* a binary file stops after CONFIG_FILE_ERRORS_MAX messages */
        {
                char junk[4096];
                for (size_t i = 0; i < sizeof(junk); i++)
                        junk[i] = (i % 7 == 0) ? '\n' : 'x';
                ASSERT_EQ(config_load_buffer("junk.policy", junk, sizeof(junk), &c, &e), -EINVAL);
                ASSERT_EQ(e.n, CONFIG_FILE_ERRORS_MAX + 1);
                ASSERT_TRUE(strstr(e.items[e.n - 1].message, "not reading the rest of this file"));
                config_errors_clear(&e);
        }
}

static void test_policy_same(void) {
        struct config *a = NULL, *b = NULL;
        static const char ta[] = "[Policy]\nDetector=hog\nAction=pin\n[Detect]\nUtil=80%\n";
        static const char tb[] = "\n\n[policy]\naction = pin\ndetector=HOG\n[Detect]\nUtil=80.00%\n";
        static const char tc[] = "[Policy]\nDetector=hog\nAction=pin\n[Detect]\nUtil=81%\n";

        ASSERT_OK(config_load_buffer("p.policy", ta, sizeof(ta) - 1, &a, NULL));
        ASSERT_OK(config_load_buffer("p.policy", tb, sizeof(tb) - 1, &b, NULL));
        ASSERT_TRUE(policy_same(&a->policies[0], &b->policies[0]));
        ASSERT_TRUE(a->policies[0].line == 1 && b->policies[0].line == 3);
        config_free(b);
        ASSERT_OK(config_load_buffer("p.policy", tc, sizeof(tc) - 1, &b, NULL));
        ASSERT_TRUE(!policy_same(&a->policies[0], &b->policies[0]));
        config_free(a);
        config_free(b);
}

static void test_check_main(void) {
        char *out = NULL, *err = NULL;
        size_t no = 0, ne = 0;
        FILE *fo, *fe;
        char good[PATH_MAX], bad[PATH_MAX];
        char *files[3] = { good, bad, NULL };

        chdir_to(".", NULL);
        snprintf(good, sizeof(good), "policies/policies.d/50-hogs.policy");
        snprintf(bad, sizeof(bad), "tests/config/errors/combos/usr/policies.d/colocate-hog.policy");

        fo = open_memstream(&out, &no);
        fe = open_memstream(&err, &ne);
        ASSERT_EQ(config_check_main(NULL, files + 1, true, fo, fe), 1);
        fclose(fo);
        fclose(fe);
        ASSERT_STREQ(out, "");
        ASSERT_TRUE(strstr(err, "colocate-hog.policy:3: Action=colocate: not possible with Detector=hog"));
        free(out);
        free(err);

        files[1] = NULL;
        fo = open_memstream(&out, &no);
        fe = open_memstream(&err, &ne);
        ASSERT_EQ(config_check_files_main(files, true, fo, fe), 0);
        fclose(fo);
        fclose(fe);
        ASSERT_STREQ(err, "");
        ASSERT_TRUE(strstr(out, "[Policy]\nName=50-hogs\n"));
        assert_round_trip("check_main print", out);
        free(out);
        free(err);
}

static int tool_load(char **dirs) {
        struct config *c = NULL;
        struct config_errors e = {};
        struct config_paths paths = {};
        size_t n = 0;
        int r;

        for (; *dirs && n < CONFIG_DIRS_MAX; dirs++)
                paths.dirs[n++] = *dirs;
        r = config_load(&paths, &c, &e);
        for (size_t i = 0; i < e.n; i++)
                printf("%s\n", e.items[i].message);
        if (r >= 0)
                config_print(c, stdout);
        config_errors_clear(&e);
        config_free(c);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        const char *top = getenv("top_srcdir");
        unsigned golden, errors;

        if (argc > 1 && streq(argv[1], "--load"))
                return tool_load(argv + 2);

        snprintf(srcdir, sizeof(srcdir), "%s", top ? top : TOP_SRCDIR);

        test_durations();
        test_percent_rate();
        test_uint_bool();
        test_words();
        test_defaults();
        test_enums();
        golden = test_golden();
        errors = test_errors();
        test_shipped();
        test_masking();
        test_same_name_and_scope();
        test_files_and_buffers();
        test_policy_same();
        test_check_main();
        printf("test-config: %u golden cases, %u error cases, shipped files OK\n", golden, errors);
        return 0;
}
