/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * levers-tool: drive the levers backends from the integration scripts
 * (tests/levers-*.sh) on the real machine or a fixture root.
 *
 *   levers-tool [--root DIR] [--allow-mount] [--systemd ADDRESS] VERB ARGS
 *     probe                      caps as key=value lines (and the JSON last)
 *     weight-get CGROUP          v2-scale weight
 *     weight-set CGROUP WEIGHT   prints "changed|unchanged path=PATH detail=DETAIL"
 *     roundtrip CGROUP WEIGHT    get, set WEIGHT, set the original back (one process)
 *     features                   the kernel's list, one "NAME on|off" a line
 *     feature-get NAME | feature-set NAME on|off
 *     sysctl-get NAME | sysctl-set NAME VALUE
 * Exit 0 on success, 1 on failure with "error: STRERROR: CAUSE" on stderr,
 * 2 on bad usage.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "common/util.h"
#include "apply/levers.h"

static int fail(struct levers *l, int r) {
        fprintf(stderr, "error: %s: %s\n", strerror(-r), l ? levers_last_error(l) : "");
        return 1;
}

static int print_set(struct levers *l, int r) {
        const char *detail;
        enum levers_weight_path p = levers_weight_last_path(l, &detail);

        if (r < 0)
                return fail(l, r);
        printf("%s path=%s detail=%s\n", r > 0 ? "changed" : "unchanged", levers_weight_path_to_string(p), detail);
        return 0;
}

static void usage(void) {
        fprintf(stderr, "usage: levers-tool [--root DIR] [--allow-mount] [--systemd ADDRESS] VERB [ARGS]\n");
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "root", required_argument, NULL, 'r' },
                { "allow-mount", no_argument, NULL, 'm' },
                { "systemd", required_argument, NULL, 's' },
                {}
        };
        const char *root = "/", *systemd = NULL, *verb;
        bool allow_mount = false;
        struct levers *l = NULL;
        int c, r, ret = 0;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 'r':
                        root = optarg;
                        break;
                case 'm':
                        allow_mount = true;
                        break;
                case 's':
                        systemd = optarg;
                        break;
                default:
                        usage();
                        return 2;
                }
        if (optind >= argc) {
                usage();
                return 2;
        }
        verb = argv[optind];
        argv += optind + 1;
        argc -= optind + 1;

        r = levers_new(root, &l);
        if (r < 0)
                return fail(NULL, r);
        levers_set_allow_mount(l, allow_mount);
        if (systemd)
                (void) levers_set_systemd_address(l, systemd);

        if (streq(verb, "probe")) {
                struct lever_caps caps;
                struct json_object *o;

                r = levers_probe(l, &caps);
                if (r < 0)
                        ret = fail(l, r);
                else {
                        printf("cgroup.version=%d\ncgroup.hybrid=%d\ncgroup.mount=%s\ncgroup.writable=%d\n"
                               "cgroup.backend=%s\ncgroup.systemd=%d\ncgroup.why=%s\n",
                               caps.cgroup_version, caps.cgroup_hybrid, caps.cgroup_mount, caps.cgroup_cpu_writable,
                               caps.cgroup_backend, caps.systemd_bus, caps.cgroup_why);
                        printf("features.path=%s\nfeatures.readable=%d\nfeatures.writable=%d\nfeatures.count=%zu\n"
                               "features.why=%s\n",
                               caps.features_path, caps.features_readable, caps.features_writable,
                               caps.features_count, caps.features_why);
                        printf("sysctl.autogroup=%d\nsysctl.debug_tunables=%d\nsysctl.why=%s\n",
                               caps.autogroup_present, caps.debug_tunables_readable, caps.sysctl_why);
                        printf("schedstats.present=%d\nschedstats.enabled=%d\nschedstats.why=%s\n",
                               caps.schedstats_present, caps.schedstats_enabled, caps.schedstats_why);
                        printf("kernel=%s\nlockdown=%s\n", caps.kernel_release, caps.lockdown);
                        if (levers_caps_to_json(&caps, &o) >= 0) {
                                printf("json=%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
                                json_object_put(o);
                        }
                }
        } else if (streq(verb, "weight-get") && argc == 1) {
                uint64_t w;

                r = levers_weight_get(l, argv[0], &w);
                if (r < 0)
                        ret = fail(l, r);
                else
                        printf("%" PRIu64 "\n", w);
        } else if (streq(verb, "weight-set") && argc == 2) {
                uint64_t w;

                if (util_parse_u64(argv[1], &w) < 0) {
                        usage();
                        ret = 2;
                } else
                        ret = print_set(l, levers_weight_set(l, argv[0], w));
        } else if (streq(verb, "roundtrip") && argc == 2) {
                uint64_t w, orig;

                if (util_parse_u64(argv[1], &w) < 0) {
                        usage();
                        ret = 2;
                } else if ((r = levers_weight_get(l, argv[0], &orig)) < 0)
                        ret = fail(l, r);
                else {
                        printf("original %" PRIu64 "\n", orig);
                        ret = print_set(l, levers_weight_set(l, argv[0], w));
                        if (ret == 0)
                                ret = print_set(l, levers_weight_set(l, argv[0], orig));
                }
        } else if (streq(verb, "features") && argc == 0) {
                char **names = NULL;
                bool *on = NULL;
                size_t n = 0;

                r = levers_features_list(l, &names, &on, &n);
                if (r < 0)
                        ret = fail(l, r);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        printf("%s %s\n", names[i], on[i] ? "on" : "off");
                strv_free(names);
                free(on);
        } else if (streq(verb, "feature-get") && argc == 1) {
                bool on;

                r = levers_feature_get(l, argv[0], &on);
                if (r < 0)
                        ret = fail(l, r);
                else
                        printf("%s\n", on ? "on" : "off");
        } else if (streq(verb, "feature-set") && argc == 2) {
                r = levers_feature_set(l, argv[0], streq(argv[1], "on"));
                if (r < 0)
                        ret = fail(l, r);
                else
                        printf("%s\n", r > 0 ? "changed" : "unchanged");
        } else if (streq(verb, "sysctl-get") && argc == 1) {
                char buf[64];

                r = levers_sysctl_get(l, argv[0], buf, sizeof(buf));
                if (r < 0)
                        ret = fail(l, r);
                else
                        printf("%s\n", buf);
        } else if (streq(verb, "sysctl-set") && argc == 2) {
                r = levers_sysctl_set(l, argv[0], argv[1]);
                if (r < 0)
                        ret = fail(l, r);
                else
                        printf("%s\n", r > 0 ? "changed" : "unchanged");
        } else {
                usage();
                ret = 2;
        }

        levers_free(l);
        return ret;
}
