/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * affctl: ask and steer affinityd.
 *
 * affctl reaches the daemon peer-to-peer over the unix socket
 * <runtime-dir>/bus, so it needs no bus broker (containers, early boot,
 * tests). Every read verb is one D-Bus method returning a JSON document;
 * --json prints it as is, otherwise it is rendered as text. Verbs that
 * change state are root-only; sd-bus refuses them to others.
 *
 * Exit codes: 0 ok; 1 the daemon answered with a failure (e.g. reload
 * with a broken policy, check found errors); 2 usage; 3 daemon not
 * reachable; 4 permission denied.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "common/protocol.h"
#include "common/json-util.h"
#include "common/util.h"
#include "config/config.h"
#include "common/metrics.h"
#include "ctl/table.h"
#include "ctl/views.h"

enum {
        EXIT_FAILED = 1,
        EXIT_USAGE = 2,
        EXIT_UNREACHABLE = 3,
        EXIT_DENIED = 4,
        EXIT_PROTOCOL = 5,
};

/* The version this affctl speaks; a test builds one of another version. */
#ifndef AFFCTL_PROTOCOL_VERSION
#define AFFCTL_PROTOCOL_VERSION AFF_PROTOCOL_VERSION
#endif

struct ctl {
        const char *runtime_dir;
        bool json;
        bool verbose;
        bool all;                  /* revert --all */
        /* non-NULL: the reply is read from this file (a saved --json), not asked */
        const char *from_json;
        /* the text form's tables: the verb's columns, the width to fit, --wide */
        struct table_opts table;
        /* non-NULL: the reply is kept here, not printed (affctl metrics) */
        struct json_object **keep;
        /* text output of this verb; NULL: the generic rendering */
        void (*print)(struct json_object *o, const struct ctl *c);
};

static void usage(FILE *f) {
        fprintf(f,
                "Usage: affctl [OPTIONS] VERB [ARGS]\n"
                "\n"
                "Verbs:\n"
                "  status [--verbose]  running or not, dry-run, what it changes, what it cannot\n"
                "                      do here and why, own cost (--verbose: everything)\n"
                "  tasks [N]           busiest threads (default 20)\n"
                "  actions             changes in force, with policy, reason and evidence\n"
                "  explain PID         what affinityd sees and does for each thread of PID\n"
                "  pairs               ping-pong pairs and their state\n"
                "  hogs                CPU hogs, spread groups and their state\n"
                "  reload              re-read the configuration (root)\n"
                "  revert PID|--all    undo changes now (root)\n"
                "  dry-run on|off      stop or resume applying (root)\n"
                "  metrics             the state as Prometheus text (counts, own cost)\n"
                "  check FILE...       validate policy/config files without a daemon\n"
                "\n"
                "Options:\n"
                "  --runtime-dir DIR   daemon runtime directory (default " AFF_RUNTIME_DIR ")\n"
                "  --json              print JSON\n"
                "  --wide              tables: every field, nothing cut to the terminal's width\n"
                "  --from-json FILE    show FILE (a reply saved with --json) instead of asking the\n"
                "                      daemon (status, tasks, actions, explain, pairs, hogs)\n"
                "  -v, --verbose       status: everything, the sampler's counters included\n"
                "  -h, --help          this text\n"
                "\n"
                "Exit: 0 ok, 1 failed, 2 usage, 3 daemon not reachable, 4 permission denied,\n"
                "      5 daemon and affctl speak different protocol versions.\n");
}

static int connect_daemon(const struct ctl *c, sd_bus **ret) {
        _cleanup_free_ char *addr = NULL;
        sd_bus *bus = NULL;
        int r;

        if (asprintf(&addr, "unix:path=%s/%s", c->runtime_dir, AFF_BUS_SOCKET) < 0)
                return -ENOMEM;
        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, addr);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

static int exit_for_bus_error(const sd_bus_error *e, int r) {
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED) || r == -EPERM || r == -EACCES)
                return EXIT_DENIED;
        /* accepted, then closed: a daemon at its connection limit, or stopping */
        if (r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE || r == -ETIMEDOUT)
                return EXIT_UNREACHABLE;
        return EXIT_FAILED;
}

/*
 * Ask the daemon's protocol version before anything else: a reply of
 * another version would be misread or rendered wrongly. A daemon without
 * Protocol() is older than version 2. 0 if they match, else EXIT_PROTOCOL
 * or EXIT_FAILED, having said why.
 */
static int check_protocol(sd_bus *bus) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        uint32_t v = 0;
        int r, ret = 0;

        r = sd_bus_call_method(bus, NULL, AFF_BUS_PATH, AFF_BUS_INTERFACE, AFF_METHOD_PROTOCOL, &error,
                               &reply, AFF_SIG_PROTOCOL);
        if (r < 0 && sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                fprintf(stderr, "affctl: affinityd speaks an older protocol than this affctl (%d): "
                        "it has no %s method; restart affinityd or use the affctl built with it\n",
                        AFFCTL_PROTOCOL_VERSION, AFF_METHOD_PROTOCOL);
                ret = EXIT_PROTOCOL;
        } else if (r < 0) {
                fprintf(stderr, "affctl: %s: %s\n", AFF_METHOD_PROTOCOL,
                        error.message ? error.message : strerror(-r));
                ret = exit_for_bus_error(&error, r);
        } else if ((r = sd_bus_message_read(reply, "u", &v)) < 0) {
                fprintf(stderr, "affctl: %s: bad reply: %s\n", AFF_METHOD_PROTOCOL, strerror(-r));
                ret = EXIT_FAILED;
        } else if (v != AFFCTL_PROTOCOL_VERSION) {
                fprintf(stderr, "affctl: affinityd speaks protocol version %" PRIu32 ", this affctl %d: "
                        "use the affctl built with the running affinityd, or restart affinityd\n",
                        v, AFFCTL_PROTOCOL_VERSION);
                ret = EXIT_PROTOCOL;
        }
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        return ret;
}

/* The reply, as --json, a verb's own text or the tables; EXIT_FAILED for
 * {"ok": false, ...} (reload with a broken policy). */
static int show_reply(const struct ctl *c, struct json_object *o) {
        struct json_object *ok;

        if (c->keep)
                *c->keep = json_object_get(o);
        else if (c->json)
                printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
        else if (c->print)
                c->print(o, c);
        else
                table_render(o, &c->table, stdout);
        if (json_object_object_get_ex(o, "ok", &ok) && !json_object_get_boolean(ok))
                return EXIT_FAILED;
        return 0;
}

/* --from-json: a reply saved earlier, shown as the daemon's would be. */
static int show_saved(const struct ctl *c) {
        struct json_object *o = json_object_from_file(c->from_json);
        int ret;

        if (!o) {
                const char *why = json_util_get_last_err();

                /* json-c's message may end in a newline */
                fprintf(stderr, "affctl: %s: %.*s\n", c->from_json, why ? (int) strcspn(why, "\n") : 8,
                        why ?: "not JSON");
                return EXIT_FAILED;
        }
        ret = show_reply(c, o);
        json_object_put(o);
        return ret;
}

/* Call a method returning one JSON string; show it. */
static int call_json(const struct ctl *c, const char *method, const char *sig, ...) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL, *m = NULL;
        sd_bus *bus = NULL;
        struct json_object *o = NULL;
        const char *s;
        int r, ret = 0;
        va_list ap;

        if (c->from_json)
                return show_saved(c);
        r = connect_daemon(c, &bus);
        if (r < 0) {
                /* status answers "is it running?": the answer goes to stdout */
                if (streq(method, AFF_METHOD_STATUS) && !c->json)
                        printf("affinityd is not running: no answer on %s/%s (%s)\n", c->runtime_dir,
                               AFF_BUS_SOCKET, strerror(-r));
                else
                        fprintf(stderr, "affctl: cannot reach affinityd at %s/%s: %s\n",
                                c->runtime_dir, AFF_BUS_SOCKET, strerror(-r));
                return r == -EACCES || r == -EPERM ? EXIT_DENIED : EXIT_UNREACHABLE;
        }
        ret = check_protocol(bus);
        if (ret != 0)
                goto out;
        r = sd_bus_message_new_method_call(bus, &m, NULL, AFF_BUS_PATH, AFF_BUS_INTERFACE, method);
        if (r >= 0 && sig) {
                va_start(ap, sig);
                r = sd_bus_message_appendv(m, sig, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_call(bus, m, 30 * USEC_PER_SEC, &error, &reply);
        if (r < 0) {
                fprintf(stderr, "affctl: %s: %s\n", method,
                        error.message ? error.message : strerror(-r));
                ret = exit_for_bus_error(&error, r);
                goto out;
        }
        r = sd_bus_message_read(reply, "s", &s);
        if (r < 0) {
                fprintf(stderr, "affctl: %s: bad reply: %s\n", method, strerror(-r));
                ret = EXIT_FAILED;
                goto out;
        }
        o = json_tokener_parse(s);
        if (!o) {
                fprintf(stderr, "affctl: %s: reply is not JSON\n", method);
                ret = EXIT_FAILED;
                goto out;
        }
        ret = show_reply(c, o);
out:
        json_object_put(o);
        sd_bus_error_free(&error);
        sd_bus_message_unref(m);
        sd_bus_message_unref(reply);
        sd_bus_flush_close_unref(bus);
        return ret;
}

/* ---- affctl status, for people ---------------------------------------- */

static const char *jstr(struct json_object *o, const char *path) {
        struct json_object *v = json_path(o, path);
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

static int64_t jint(struct json_object *o, const char *path) {
        struct json_object *v = json_path(o, path);
        return v ? json_object_get_int64(v) : 0;
}

static double jdouble(struct json_object *o, const char *path) {
        struct json_object *v = json_path(o, path);
        return v ? json_object_get_double(v) : 0;
}

/* The labels line up on their colons, as systemctl status's do. */
#define LABEL_WIDTH 9

static void line(const char **label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(const char **label, const char *fmt, ...) {
        va_list ap;

        printf("%*s%s ", LABEL_WIDTH, *label, **label ? ":" : " ");
        *label = "";      /* continuation lines of the same label stay blank */
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
}

/* One change (in force or, in dry-run, would-be): what, where, why, in one line. */
static void print_change(const char **label, struct json_object *e, bool in_force) {
        const char *reason = jstr(e, AFF_CHANGE_REASON);
        char age[32] = "", gain[64] = "";

        if (in_force)
                view_duration(jdouble(e, AFF_CHANGE_AGE_S), age, sizeof(age));
        /* the effect check's measured gain, once it kept the change */
        if (json_path(e, "gain"))
                snprintf(gain, sizeof(gain), " (%+.0f %% %s)", (jdouble(e, "gain") - 1) * 100, jstr(e, "gain_of"));
        line(label, "%s%s %s → %s%s: %.80s%s [%s%s%s]", in_force ? "" : "would ",
             in_force ? jstr(e, AFF_CHANGE_TYPE) : jstr(e, AFF_CHANGE_VERB), jstr(e, AFF_CHANGE_TARGET),
             in_force ? jstr(e, AFF_CHANGE_CURRENT) : jstr(e, AFF_CHANGE_VALUE), gain, reason,
             strlen(reason) > 80 ? "…" : "", jstr(e, AFF_CHANGE_POLICY), age[0] ? ", " : "", age);
}

/* What this kernel or setup does not allow, with why: every capability whose
 * "why" says something, the wake-up source when it is not perf, the proc
 * connector when it is not listening, topology files that could not be read. */
static void print_cannot(struct json_object *o) {
        struct json_object *caps = json_path_of(o, AFF_STATUS_CAPABILITIES, json_type_object);
        const char *label = "Cannot", *s;
        int64_t notes;

        if (caps) {
                json_object_object_foreach(caps, k, v) {
                        const char *why = json_object_is_type(v, json_type_object) ? jstr(v, AFF_CAPABILITY_WHY) : "";
                        /* the lever's name as an operator knows it */
                        const char *name = streq(k, "features") ? "sched_features" : streq(k, "sysctl") ? "sysctls" : k;
                        if (why[0])
                                line(&label, "%s: %s", name, why);
                }
        }
        s = jstr(o, "capabilities.wake_sampler.perf_unavailable");
        if (s[0])
                line(&label, "perf wake-ups: %s; pairs found by %s", s, jstr(o, "capabilities.wake_source"));
        s = jstr(o, "capabilities.proc_connector");
        if (s[0] && !streq(s, "listening"))
                line(&label, "process events: %s", s);
        s = jstr(o, "capabilities.tracefs");
        if (strncmp(s, "cannot", 6) == 0)
                line(&label, "tracefs: %s", s);
        notes = jint(o, "topology.notes_dropped") + (int64_t) json_array_length_at(o, "topology.notes");
        if (notes > 0)
                line(&label, "topology: %" PRId64 " file(s) not read (affctl status --verbose)", notes);
        if (label[0])
                line(&label, "nothing missing");
}

/* Where one level is free and another pays: the free ones by name (the
 * daemon's own verdict per level), for the pairs split only there, which
 * it leaves to the kernel. */
static const char *free_levels(struct json_object *levels, char *buf, size_t size) {
        size_t off = 0;
        int n;

        buf[0] = 0;
        for (size_t i = 0; levels && i < json_object_array_length(levels); i++) {
                struct json_object *l = json_object_array_get_idx(levels, i);

                if (!json_object_get_boolean(json_path(l, "free")))
                        continue;
                n = snprintf(buf + off, size - off, "%s%s", off ? ", " : "; a pair split only within ",
                             jstr(l, "level"));
                if (n < 0 || (size_t) n >= size - off)
                        return "";
                off += (size_t) n;
        }
        if (off == 0)
                return "";
        n = snprintf(buf + off, size - off,
                     " is left to the kernel: a split there costs nothing measurable (unless its policy sets "
                     "IgnoreCalibration=yes)");
        return n < 0 || (size_t) n >= size - off ? "" : buf;
}

/* What co-location buys on this host, as the daemon last measured it, and
 * whether a level read free is believed (calibrate.h). */
static void print_colocation(struct json_object *o) {
        struct json_object *levels = json_path_of(o, "colocation.levels", json_type_array);
        const char *label = "Co-location", *span, *why;
        char buf[256] = "", busy[192];
        size_t off = 0;

        if (!json_path(o, "colocation"))
                return;
        if (!json_object_get_boolean(json_path(o, "colocation.measured"))) {
                line(&label, "not measured: %s", jstr(o, "colocation.why"));
                return;
        }
        for (size_t i = 0; levels && i < json_object_array_length(levels); i++) {
                struct json_object *l = json_object_array_get_idx(levels, i);
                int n = snprintf(buf + off, sizeof(buf) - off, "%s%s %.2fx", off ? ", " : "", jstr(l, "level"),
                                 jdouble(l, "gain"));

                if (n < 0 || (size_t) n >= sizeof(buf) - off)
                        break;
                off += (size_t) n;
        }
        /* a level read free is believed only from quiet CPUs (the daemon's "believed") */
        if (!json_object_get_boolean(json_path(o, "colocation.reads_free")))
                why = "";
        else if (json_object_get_boolean(json_path(o, "colocation.believed")))
                why = json_object_get_boolean(json_path(o, "colocation.free"))
                              ? "; under the threshold: pairs are left to the kernel (unless their policy sets "
                                "IgnoreCalibration=yes)"
                              : free_levels(levels, busy, sizeof(busy));
        else if (json_path(o, "colocation.cpus_busy")) {
                snprintf(busy, sizeof(busy),
                         "; read with its CPUs %.0f %% busy (%.0f %% or more): a level under the threshold is not "
                         "believed, and is measured again once they are quiet",
                         jdouble(o, "colocation.cpus_busy") * 100, jdouble(o, "colocation.cpus_busy_max") * 100);
                why = busy;
        } else
                why = "; a level under the threshold is believed once a pass finds its CPUs quiet (not checked yet)";
        line(&label, "buys %s on this host (a pipe ping-pong on one CPU: %.0f round trips/s)%s", buf,
             jdouble(o, "colocation.same_cpu_round_trips_per_s"), why);
        /* one CPU is the rule; a wider span is news (affinityd.policy(5) Span=) */
        span = jstr(o, "colocation.span");
        if (!streq(span, "cpu") && !streq(span, ""))
                line(&label, "a pair's Span=auto is %s: a split there costs nothing here",
                     streq(span, "core") ? "its core's SMT siblings" : "its last-level cache");
}

static void print_status(struct json_object *o, const struct ctl *c) {
        struct json_object *changes = json_path_of(o, AFF_STATUS_CHANGES, json_type_array),
                           *would = json_path_of(o, AFF_STATUS_WOULD_DO, json_type_array), *w, *k;
        bool dry = json_object_get_boolean(json_path(o, AFF_STATUS_DRY_RUN));
        const char *label;
        char up[32], kinds[256] = "", looks[48] = "";
        size_t off = 0;

        view_duration(jdouble(o, AFF_STATUS_UPTIME_S), up, sizeof(up));
        printf("affinityd %s: %s, pid %" PRId64 ", up %s, a pass every %" PRId64 " ms\n", jstr(o, AFF_STATUS_VERSION),
               jstr(o, AFF_STATUS_STATE), jint(o, AFF_STATUS_PID), up, jint(o, AFF_STATUS_INTERVAL_MS));

        label = "Dry run";
        line(&label, "%s", dry ? "yes: detecting and planning, changing nothing (affctl dry-run off)"
                               : "no: changes are applied");

        label = "Changing";
        if (jint(o, "counts.actions_second_look") > 0)
                snprintf(looks, sizeof(looks), " (%" PRId64 " of them for a second look)",
                         jint(o, "counts.actions_second_look"));
        line(&label, "%" PRId64 " in force; %" PRId64 " applied, %" PRId64 " failed, %" PRId64 " undone%s since start",
             jint(o, "counts.actions_in_force"), jint(o, "counts.actions_applied"),
             jint(o, "counts.actions_failed"), jint(o, "counts.actions_undone"), looks);
        for (size_t i = 0; changes && i < json_object_array_length(changes); i++)
                print_change(&label, json_object_array_get_idx(changes, i), true);
        if (changes && (int64_t) json_object_array_length(changes) < jint(o, "counts.actions_in_force"))
                line(&label, "... (affctl actions lists all)");
        if (dry) {
                label = "Would";
                line(&label, "%" PRId64 " change(s) at the last pass", jint(o, "counts.would_do"));
                for (size_t i = 0; would && i < json_object_array_length(would); i++)
                        print_change(&label, json_object_array_get_idx(would, i), false);
        }

        k = json_path_of(o, "counts.findings_by_kind", json_type_object);
        if (k) {
                json_object_object_foreach(k, name, n) {
                        int w2 = snprintf(kinds + off, sizeof(kinds) - off, "%s%" PRId64 " %s", off ? ", " : "",
                                          json_object_get_int64(n), name);
                        if (w2 < 0 || (size_t) w2 >= sizeof(kinds) - off)
                                break;
                        off += (size_t) w2;
                }
        }
        label = "Watching";
        line(&label, "%" PRId64 " threads; findings: %s", jint(o, "counts.tasks"), kinds[0] ? kinds : "none");
        label = "Wake-ups";
        line(&label, "%s", jstr(o, "capabilities.wake_source"));
        print_colocation(o);

        print_cannot(o);

        w = json_path_of(o, AFF_STATUS_WARNINGS, json_type_array);
        label = "Warning";
        for (size_t i = 0; w && i < json_object_array_length(w); i++)
                line(&label, "%s", json_object_get_string(json_object_array_get_idx(w, i)));

        label = "Policies";
        line(&label, "%" PRId64 " from %zu file(s)", jint(o, AFF_STATUS_POLICIES),
             json_array_length_at(o, AFF_STATUS_CONFIG_FILES));
        label = "Own cost";
        line(&label, "%.2f %% of a CPU, %.1f MiB, last pass %.1f ms", jdouble(o, "self.cpu_percent"),
             (double) jint(o, "self.rss_kib") / 1024, (double) jint(o, "self.last_pass_us") / 1000);

        if (c->verbose) {
                /* everything, the sampler's counters included */
                putchar('\n');
                table_render(o, &c->table, stdout);
        }
}

/* A positive number: a PID (what = "PID") or a count (what = "count"). */
static int parse_positive(const char *what, const char *s, uint32_t *ret) {
        int v;

        if (util_parse_int(s, &v) < 0) {
                fprintf(stderr, "affctl: not a %s: %s\n", what, s);
                return -EINVAL;
        }
        if (v <= 0) {
                fprintf(stderr, "affctl: a %s is a number of 1 or more, not %s\n", what, s);
                return -EINVAL;
        }
        *ret = (uint32_t) v;
        return 0;
}

/* affctl reload: what changed, or each error on a line of its own. */
static void print_reload(struct json_object *o, const struct ctl *c) {
        struct json_object *errs = json_path(o, "errors"), *ok = json_path(o, "ok");
        size_t n = errs && json_object_is_type(errs, json_type_array) ? json_object_array_length(errs) : 0;

        (void) c;
        if (ok && json_object_get_boolean(ok)) {
                printf("reloaded: %" PRId64 " policies\n", jint(o, AFF_RELOAD_POLICIES));
                return;
        }
        fprintf(stderr, "affctl: reload failed (%zu error%s); the daemon keeps its running configuration:\n", n,
                n == 1 ? "" : "s");
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, "  %s\n", json_object_get_string(json_object_array_get_idx(errs, i)));
}

static int verb_check(struct ctl *c, int argc, char **argv) {
        (void) c;
        return config_check_files_main(argv, false, stdout, stderr) == 0 ? 0 : EXIT_FAILED;
}

static int verb_status(struct ctl *c, int argc, char **argv) {
        (void) argc, (void) argv;
        c->print = print_status;
        return call_json(c, AFF_METHOD_STATUS, NULL);
}

static int verb_tasks(struct ctl *c, int argc, char **argv) {
        uint32_t n = 20;

        if (argc == 1 && parse_positive("count", argv[0], &n) < 0)
                return EXIT_USAGE;
        c->table.views = view_tasks;
        return call_json(c, AFF_METHOD_TASKS, AFF_SIG_TASKS, n);
}

static int verb_actions(struct ctl *c, int argc, char **argv) {
        (void) argc, (void) argv;
        c->table.views = view_actions;
        return call_json(c, AFF_METHOD_ACTIONS, NULL);
}

static int verb_pairs(struct ctl *c, int argc, char **argv) {
        (void) argc, (void) argv;
        c->table.views = view_pairs;
        return call_json(c, AFF_METHOD_PAIRS, NULL);
}

static int verb_hogs(struct ctl *c, int argc, char **argv) {
        (void) argc, (void) argv;
        c->table.views = view_hogs;
        return call_json(c, AFF_METHOD_HOGS, NULL);
}

static int verb_explain(struct ctl *c, int argc, char **argv) {
        uint32_t pid;

        (void) argc;
        if (parse_positive("PID", argv[0], &pid) < 0)
                return EXIT_USAGE;
        return call_json(c, AFF_METHOD_EXPLAIN, AFF_SIG_EXPLAIN, pid);
}

static int verb_reload(struct ctl *c, int argc, char **argv) {
        (void) argc, (void) argv;
        c->print = print_reload;
        return call_json(c, AFF_METHOD_RELOAD, NULL);
}

static int verb_revert(struct ctl *c, int argc, char **argv) {
        uint32_t pid = 0;

        if (c->all == (argc == 1)) {
                fprintf(stderr, "affctl: revert takes one PID or --all\n");
                return EXIT_USAGE;
        }
        if (argc == 1 && parse_positive("PID", argv[0], &pid) < 0)
                return EXIT_USAGE;
        return call_json(c, AFF_METHOD_REVERT, AFF_SIG_REVERT, pid);   /* 0: all */
}

static int verb_dry_run(struct ctl *c, int argc, char **argv) {
        (void) argc;
        if (!streq(argv[0], "on") && !streq(argv[0], "off")) {
                fprintf(stderr, "affctl: dry-run takes on or off, not %s\n", argv[0]);
                return EXIT_USAGE;
        }
        return call_json(c, AFF_METHOD_SET_DRY_RUN, AFF_SIG_SET_DRY_RUN, (int) streq(argv[0], "on"));
}

/* Prometheus text, from the same documents as status, pairs and hogs (metrics.c). */
static int verb_metrics(struct ctl *c, int argc, char **argv) {
        struct json_object *st = NULL, *pairs = NULL, *hogs = NULL;
        int ret;

        (void) argc, (void) argv;
        c->keep = &st;
        ret = call_json(c, AFF_METHOD_STATUS, NULL);
        if (ret == 0) {
                c->keep = &pairs;
                ret = call_json(c, AFF_METHOD_PAIRS, NULL);
        }
        if (ret == 0) {
                c->keep = &hogs;
                ret = call_json(c, AFF_METHOD_HOGS, NULL);
        }
        c->keep = NULL;
        if (ret == 0 && metrics_render(st, pairs, hogs, stdout) < 0)
                ret = EXIT_FAILED;
        json_object_put(st);
        json_object_put(pairs);
        json_object_put(hogs);
        return ret;
}

/*
 * The verbs, the one place that says which exist and what arguments each
 * takes; usage() is the one that says it to people. "args" is shown in
 * the error when the count is wrong. "saved": one read-only method's
 * reply, so --from-json can stand in for it.
 */
static const struct verb {
        const char *name;
        int min_args, max_args;
        const char *args;
        bool saved;
        int (*run)(struct ctl *c, int argc, char **argv);
} verbs[] = {
        { "status",  0, 0,       "",           true,  verb_status },
        { "tasks",   0, 1,       "[N]",        true,  verb_tasks },
        { "actions", 0, 0,       "",           true,  verb_actions },
        { "explain", 1, 1,       "PID",        true,  verb_explain },
        { "pairs",   0, 0,       "",           true,  verb_pairs },
        { "hogs",    0, 0,       "",           true,  verb_hogs },
        { "reload",  0, 0,       "",           false, verb_reload },
        { "revert",  0, 1,       "PID|--all",  false, verb_revert },
        { "dry-run", 1, 1,       "on|off",     false, verb_dry_run },
        { "metrics", 0, 0,       "",           false, verb_metrics },
        { "check",   1, INT_MAX, "FILE...",    false, verb_check },
};

/* --all, before or after the verb: once. */
static int set_all(struct ctl *c) {
        if (c->all) {
                fprintf(stderr, "affctl: --all given twice\n");
                return -EINVAL;
        }
        c->all = true;
        return 0;
}

/* Drop argv[i] and the n-1 after it. */
static void args_drop(int *argc, char **argv, int i, int n) {
        memmove(&argv[i], &argv[i + n], (size_t) (*argc - i - n + 1) * sizeof(char *));
        *argc -= n;
}

/*
 * Options after the verb too (affctl status --json): taken out of argv so
 * that what is left is the verb's arguments. Returns 0, or EXIT_USAGE.
 */
static int options_after_verb(struct ctl *c, int *argc, char **argv, int first) {
        for (int i = first; i < *argc; i++) {
                const char *a = argv[i];

                if (streq(a, "--json"))
                        c->json = true;
                else if (streq(a, "--verbose") || streq(a, "-v"))
                        c->verbose = true;
                else if (streq(a, "--wide"))
                        c->table.wide = true;
                else if (streq(a, "--all")) {
                        if (set_all(c) < 0)
                                return EXIT_USAGE;
                } else if (streq(a, "--from-json") || strncmp(a, "--from-json=", 12) == 0) {
                        int n = a[11] == '=' ? 1 : 2;

                        if (n == 2 && i + 1 >= *argc) {
                                fprintf(stderr, "affctl: --from-json takes a FILE\n");
                                return EXIT_USAGE;
                        }
                        c->from_json = n == 1 ? a + 12 : argv[i + 1];
                        args_drop(argc, argv, i--, n);
                        continue;
                } else
                        continue;
                args_drop(argc, argv, i--, 1);
        }
        return 0;
}

/* Options before the verb. Returns -1 to go on, else the exit code. */
static int options_before_verb(struct ctl *c, int argc, char **argv) {
        static const struct option options[] = {
                { "runtime-dir", required_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { "all", no_argument, NULL, 'a' },
                { "verbose", no_argument, NULL, 'v' },
                { "wide", no_argument, NULL, 'w' },
                { "from-json", required_argument, NULL, 'f' },
                {},
        };
        int opt;

        /* "+": stop at the verb, so "revert --all" and verb args are ours to read. */
        while ((opt = getopt_long(argc, argv, "+hjv", options, NULL)) >= 0)
                switch (opt) {
                case 'v':
                        c->verbose = true;
                        break;
                case 'r':
                        c->runtime_dir = optarg;
                        break;
                case 'j':
                        c->json = true;
                        break;
                case 'w':
                        c->table.wide = true;
                        break;
                case 'f':
                        c->from_json = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'a':
                        if (set_all(c) < 0)
                                return EXIT_USAGE;
                        break;
                default:
                        usage(stderr);
                        return EXIT_USAGE;
                }
        if (optind >= argc) {
                usage(stderr);
                return EXIT_USAGE;
        }
        return -1;
}

/* Run the verb named with its arguments, after checking what it takes. */
static int run_verb(struct ctl *c, const char *verb, int nargs, char **args) {
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
                const struct verb *v = &verbs[i];

                if (!streq(verb, v->name))
                        continue;
                if (nargs < v->min_args || nargs > v->max_args) {
                        if (v->max_args == 0)
                                fprintf(stderr, "affctl: %s takes no arguments\n", v->name);
                        else
                                fprintf(stderr, "affctl: usage: affctl %s %s\n", v->name, v->args);
                        return EXIT_USAGE;
                }
                if (c->all && !streq(v->name, "revert")) {
                        fprintf(stderr, "affctl: --all is for revert, not %s\n", v->name);
                        return EXIT_USAGE;
                }
                if (c->from_json && !v->saved) {
                        fprintf(stderr, "affctl: --from-json is for status, tasks, actions, explain, pairs "
                                "and hogs, not %s\n", v->name);
                        return EXIT_USAGE;
                }
                return v->run(c, nargs, args);
        }
        fprintf(stderr, "affctl: unknown verb: %s\n", verb);
        usage(stderr);
        return EXIT_USAGE;
}

int main(int argc, char **argv) {
        struct ctl c = { .runtime_dir = AFF_RUNTIME_DIR, .table.width = table_terminal_width() };
        const char *verb;
        int r;

        r = options_before_verb(&c, argc, argv);
        if (r >= 0)
                return r;
        verb = argv[optind++];
        r = options_after_verb(&c, &argc, argv, optind);
        if (r != 0)
                return r;
        return run_verb(&c, verb, argc - optind, argv + optind);
}
