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
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "common/bus-names.h"
#include "common/util.h"
#include "daemon/config.h"  /* not the autoconf header: that is build-config.h */

enum {
        EXIT_FAILED = 1,
        EXIT_USAGE = 2,
        EXIT_UNREACHABLE = 3,
        EXIT_DENIED = 4,
};

struct ctl {
        const char *runtime_dir;
        bool json;
};

static void usage(FILE *f) {
        fprintf(f,
                "Usage: affctl [OPTIONS] VERB [ARGS]\n"
                "\n"
                "Verbs:\n"
                "  status              daemon state, kernel capabilities, counts, own cost\n"
                "  tasks [N]           busiest threads (default 20)\n"
                "  actions             changes in force, with policy, reason and evidence\n"
                "  explain PID         what affinityd sees and does for each thread of PID\n"
                "  pairs               ping-pong pairs and their state\n"
                "  hogs                CPU hogs, spread groups and their state\n"
                "  reload              re-read the configuration (root)\n"
                "  revert PID|--all    undo changes now (root)\n"
                "  dry-run on|off      stop or resume applying (root)\n"
                "  check FILE...       validate policy/config files without a daemon\n"
                "\n"
                "Options:\n"
                "  --runtime-dir DIR   daemon runtime directory (default " AFF_RUNTIME_DIR ")\n"
                "  --json              print JSON\n"
                "  -h, --help          this text\n"
                "\n"
                "Exit: 0 ok, 1 failed, 2 usage, 3 daemon not reachable, 4 permission denied.\n");
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

/* Render a JSON value as indented "key: value" text. */
static void render(struct json_object *o, int indent, const char *key);

static bool is_table(struct json_object *a) {
        size_t n = json_object_array_length(a);
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!json_object_is_type(json_object_array_get_idx(a, i), json_type_object))
                        return false;
        return true;
}

static const char *scalar(struct json_object *v, char *buf, size_t size) {
        if (!v)
                return "-";
        switch (json_object_get_type(v)) {
        case json_type_double:
                snprintf(buf, size, "%.2f", json_object_get_double(v));
                return buf;
        case json_type_string:
                return json_object_get_string(v);
        case json_type_array: {
                /* short arrays of scalars inline */
                size_t off = 0, n = json_object_array_length(v);
                buf[0] = '\0';
                for (size_t i = 0; i < n && off < size; i++) {
                        char b2[64];
                        int w = snprintf(buf + off, size - off, "%s%s", i ? "," : "",
                                         scalar(json_object_array_get_idx(v, i), b2, sizeof(b2)));
                        if (w < 0)
                                break;
                        off += (size_t) w;
                }
                return buf;
        }
        default:
                return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
        }
}

/* Arrays of objects become a table, columns from the union of keys of the first rows. */
static void render_table(struct json_object *a, int indent) {
        size_t n = json_object_array_length(a), ncol = 0;
        const char *cols[24];
        int width[24];

        for (size_t i = 0; i < n && i < 4; i++) {
                json_object_object_foreach(json_object_array_get_idx(a, i), k, v) {
                        bool have = false;
                        if (json_object_is_type(v, json_type_object))
                                continue;
                        for (size_t c = 0; c < ncol; c++)
                                if (streq(cols[c], k))
                                        have = true;
                        if (!have && ncol < ELEMENTSOF(cols))
                                cols[ncol++] = k;
                }
        }
        for (size_t c = 0; c < ncol; c++) {
                width[c] = (int) strlen(cols[c]);
                for (size_t i = 0; i < n; i++) {
                        char b[256];
                        struct json_object *v = NULL;
                        json_object_object_get_ex(json_object_array_get_idx(a, i), cols[c], &v);
                        int w = (int) strlen(scalar(v, b, sizeof(b)));
                        if (w > width[c])
                                width[c] = MIN(w, 60);
                }
        }
        printf("%*s", indent, "");
        for (size_t c = 0; c < ncol; c++)
                printf("%-*s%s", width[c], cols[c], c + 1 < ncol ? "  " : "\n");
        for (size_t i = 0; i < n; i++) {
                printf("%*s", indent, "");
                for (size_t c = 0; c < ncol; c++) {
                        char b[256];
                        struct json_object *v = NULL;
                        json_object_object_get_ex(json_object_array_get_idx(a, i), cols[c], &v);
                        printf("%-*.*s%s", width[c], 60, scalar(v, b, sizeof(b)),
                               c + 1 < ncol ? "  " : "\n");
                }
        }
}

static void render(struct json_object *o, int indent, const char *key) {
        char b[1024];

        if (json_object_is_type(o, json_type_object)) {
                if (key)
                        printf("%*s%s:\n", indent, "", key);
                json_object_object_foreach(o, k, v)
                        render(v, key ? indent + 2 : indent, k);
        } else if (json_object_is_type(o, json_type_array) && is_table(o)) {
                if (key)
                        printf("%*s%s:\n", indent, "", key);
                render_table(o, key ? indent + 2 : indent);
        } else if (json_object_is_type(o, json_type_array) && json_object_array_length(o) == 0) {
                printf("%*s%s: (none)\n", indent, "", key ? key : "");
        } else
                printf("%*s%s%s%s\n", indent, "", key ? key : "", key ? ": " : "",
                       scalar(o, b, sizeof(b)));
}

static int exit_for_bus_error(const sd_bus_error *e, int r) {
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED) || r == -EPERM || r == -EACCES)
                return EXIT_DENIED;
        return EXIT_FAILED;
}

/* Call a method returning one JSON string; print it. */
static int call_json(const struct ctl *c, const char *method, const char *sig, ...) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL, *m = NULL;
        sd_bus *bus = NULL;
        struct json_object *o = NULL;
        const char *s;
        int r, ret = 0;
        va_list ap;

        r = connect_daemon(c, &bus);
        if (r < 0) {
                fprintf(stderr, "affctl: cannot reach affinityd at %s/%s: %s\n",
                        c->runtime_dir, AFF_BUS_SOCKET, strerror(-r));
                return EXIT_UNREACHABLE;
        }
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
        if (c->json)
                printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
        else
                render(o, 0, NULL);
        /* Verbs that report {"ok": false, ...} fail the command (reload with a broken policy). */
        {
                struct json_object *ok;
                if (json_object_object_get_ex(o, "ok", &ok) && !json_object_get_boolean(ok))
                        ret = EXIT_FAILED;
        }
out:
        json_object_put(o);
        sd_bus_error_free(&error);
        sd_bus_message_unref(m);
        sd_bus_message_unref(reply);
        sd_bus_flush_close_unref(bus);
        return ret;
}

static int parse_pid(const char *s, uint32_t *ret) {
        int v;
        if (util_parse_int(s, &v) < 0 || v <= 0) {
                fprintf(stderr, "affctl: not a PID: %s\n", s);
                return -EINVAL;
        }
        *ret = (uint32_t) v;
        return 0;
}

static int verb_check(const struct ctl *c, int argc, char **argv) {
        if (argc < 1) {
                fprintf(stderr, "affctl: check needs at least one FILE\n");
                return EXIT_USAGE;
        }
        return config_check_files_main(argv, false, stdout, stderr) == 0 ? 0 : EXIT_FAILED;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "runtime-dir", required_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { "all", no_argument, NULL, 'a' },
                {},
        };
        struct ctl c = { .runtime_dir = AFF_RUNTIME_DIR };
        bool all = false;
        const char *verb;
        uint32_t pid = 0;
        int opt;

        /* "+": stop at the verb, so "revert --all" and verb args are ours to read. */
        while ((opt = getopt_long(argc, argv, "+hj", options, NULL)) >= 0)
                switch (opt) {
                case 'r':
                        c.runtime_dir = optarg;
                        break;
                case 'j':
                        c.json = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'a':
                        all = true;
                        break;
                default:
                        usage(stderr);
                        return EXIT_USAGE;
                }
        if (optind >= argc) {
                usage(stderr);
                return EXIT_USAGE;
        }
        verb = argv[optind++];
        /* Accept options after the verb too (affctl status --json). */
        for (int i = optind; i < argc; i++) {
                if (streq(argv[i], "--json")) {
                        c.json = true;
                        memmove(&argv[i], &argv[i + 1], (size_t) (argc - i) * sizeof(char *));
                        argc--, i--;
                } else if (streq(argv[i], "--all")) {
                        all = true;
                        memmove(&argv[i], &argv[i + 1], (size_t) (argc - i) * sizeof(char *));
                        argc--, i--;
                }
        }
        int nargs = argc - optind;
        char **args = argv + optind;

        if (streq(verb, "status") && nargs == 0)
                return call_json(&c, "Status", NULL);
        if (streq(verb, "tasks") && nargs <= 1) {
                uint32_t n = 20;
                if (nargs == 1 && parse_pid(args[0], &n) < 0)
                        return EXIT_USAGE;
                return call_json(&c, "Tasks", "u", n);
        }
        if (streq(verb, "actions") && nargs == 0)
                return call_json(&c, "Actions", NULL);
        if (streq(verb, "pairs") && nargs == 0)
                return call_json(&c, "Pairs", NULL);
        if (streq(verb, "hogs") && nargs == 0)
                return call_json(&c, "Hogs", NULL);
        if (streq(verb, "explain") && nargs == 1) {
                if (parse_pid(args[0], &pid) < 0)
                        return EXIT_USAGE;
                return call_json(&c, "Explain", "u", pid);
        }
        if (streq(verb, "reload") && nargs == 0)
                return call_json(&c, "Reload", NULL);
        if (streq(verb, "revert") && ((nargs == 0 && all) || (nargs == 1 && !all))) {
                if (!all && parse_pid(args[0], &pid) < 0)
                        return EXIT_USAGE;
                return call_json(&c, "Revert", "u", all ? 0 : pid);
        }
        if (streq(verb, "dry-run") && nargs == 1 && (streq(args[0], "on") || streq(args[0], "off")))
                return call_json(&c, "SetDryRun", "b", (int) streq(args[0], "on"));
        if (streq(verb, "check"))
                return verb_check(&c, nargs, args);

        fprintf(stderr, "affctl: unknown verb or wrong arguments: %s\n", verb);
        usage(stderr);
        return EXIT_USAGE;
}
