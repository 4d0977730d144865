/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * affinityd: parse arguments and start the manager (systemd-oomd's oomd.c
 * is the model: main does nothing else).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/un.h>
#include <unistd.h>

#include "apply/levers.h"
#include "common/protocol.h"
#include "common/util.h"
#include "config/config.h"
#include "core/log.h"
#include "core/manager.h"

/* sysexits.h EX_CONFIG: the configuration is invalid. */
#define EXIT_CONFIG 78

static void usage(FILE *f) {
        fprintf(f,
                "Usage: affinityd [OPTIONS]\n"
                "\n"
                "Watch how the scheduler places tasks and correct the placements known to\n"
                "cost throughput or latency. See affinityd(8), affinityd.policy(5).\n"
                "\n"
                "  --root DIR          prefix for every /proc and /sys path (tests)\n"
                "  --runtime-dir DIR   journal and control socket (default " AFF_RUNTIME_DIR ")\n"
                "  --config-dir DIR    read configuration from DIR only; repeat to layer\n"
                "                      (default: " VENDORDIR ", " SYSCONFDIR "/affinityd, " RUNSTATEDIR "/affinityd)\n"
                "  --interval MS       sampling interval, overrides Interval=\n"
                "  --dry-run           detect and plan, change nothing\n"
                "  --log-level LEVEL   err, warning, notice, info, debug\n"
                "  --no-perf           do not use perf tracepoints (use the fallback wake signal)\n"
                "  --check-config      validate the configuration and exit (0 valid, 1 errors)\n"
                "  --print             with --check-config: print the effective configuration\n"
                "  -h, --help          this text\n"
                "  --version           print the version\n");
}

/* The daemon's start-up check against this kernel (levers_check_config()):
 * levers that cannot be read are no error here, as at start. */
static int check_kernel(const struct config *c, struct config_errors *errs, void *userdata) {
        struct lever_caps caps;
        struct levers *l = NULL;
        int n;

        if (levers_open(userdata, &caps, &l) < 0)
                return 0;
        n = levers_check_config(l, c, errs);
        levers_free(l);
        return n;
}

/* --check-config [--print]: the check mode of config.h, on the daemon's
 * directories, with the kernel checks the daemon makes when it starts. */
static int check_config(const char *root, char **dirs, bool print) {
        struct config_paths paths;
        int r;

        config_paths_from(dirs, &paths);
        r = config_check_machine_main(&paths, print, check_kernel, (void *) root, stdout, stderr);
        if (r < 0)
                fprintf(stderr, "affinityd: cannot load configuration: %s\n", strerror(-r));
        return r == 0 ? 0 : 1;
}

/* --runtime-dir as an absolute path: the instance lock records it for the
 * next instance to restore from, and that one may start elsewhere (a unit's
 * working directory is /). NULL on failure, said. */
static char *absolute_path(const char *dir) {
        _cleanup_free_ char *cwd = NULL;
        char *ret = NULL;

        if (dir[0] == '/')
                ret = strdup(dir);
        else if ((cwd = getcwd(NULL, 0)) && asprintf(&ret, "%s/%s", cwd, dir) < 0)
                ret = NULL;
        if (!ret)
                fprintf(stderr, "affinityd: --runtime-dir %s: %s\n", dir, strerror(errno));
        return ret;
}

/* --runtime-dir: its control socket's path must fit a socket address, or
 * every start would fail the same way after the first pass's changes. */
static bool runtime_dir_fits(const char *dir) {
        struct sockaddr_un sa;

        if (strlen(dir) + 1 + strlen(AFF_BUS_SOCKET) < sizeof(sa.sun_path))
                return true;
        fprintf(stderr, "affinityd: --runtime-dir: too long for its socket %s/%s (at most %zu characters)\n", dir,
                AFF_BUS_SOCKET, sizeof(sa.sun_path) - 2 - strlen(AFF_BUS_SOCKET));
        return false;
}

/* --interval: the same bounds as Interval= (affinityd.policy(5)). */
static bool parse_interval(const char *arg, uint64_t *ret_usec) {
        uint64_t ms;

        if (util_parse_u64(arg, &ms) < 0 || ms < 100 || ms > 60000) {
                fprintf(stderr, "affinityd: --interval: not a number of milliseconds in 100..60000: %s\n", arg);
                return false;
        }
        *ret_usec = ms * USEC_PER_MSEC;
        return true;
}

/* --config-dir: 0, or the exit status. The last one given wins, so one
 * dropped for want of room would lose the operator's own override. */
static int push_config_dir(char ***dirs, const char *dir) {
        if (strv_length(*dirs) >= CONFIG_DIRS_MAX) {
                fprintf(stderr, "affinityd: --config-dir: at most %d directories\n", CONFIG_DIRS_MAX);
                return 2;
        }
        return strv_push(dirs, dir) < 0 ? EXIT_FAILURE : 0;
}

int main(int argc, char **argv) {
        enum { OPT_ROOT = 0x100, OPT_RUNTIME_DIR, OPT_CONFIG_DIR, OPT_INTERVAL, OPT_DRY_RUN,
               OPT_LOG_LEVEL, OPT_CHECK, OPT_PRINT, OPT_VERSION, OPT_NO_PERF };
        static const struct option options[] = {
                { "root", required_argument, NULL, OPT_ROOT },
                { "runtime-dir", required_argument, NULL, OPT_RUNTIME_DIR },
                { "config-dir", required_argument, NULL, OPT_CONFIG_DIR },
                { "interval", required_argument, NULL, OPT_INTERVAL },
                { "dry-run", no_argument, NULL, OPT_DRY_RUN },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "no-perf", no_argument, NULL, OPT_NO_PERF },
                { "check-config", no_argument, NULL, OPT_CHECK },
                { "print", no_argument, NULL, OPT_PRINT },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        struct manager_options o = { .root = "/", .runtime_dir = AFF_RUNTIME_DIR, .log_level = -1 };
        _cleanup_strv_free_ char **dirs = NULL;
        _cleanup_free_ char *runtime_dir = NULL;
        bool check = false, print = false;
        struct manager *m = NULL;
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (opt) {
                case OPT_ROOT:
                        o.root = optarg;
                        break;
                case OPT_RUNTIME_DIR:
                        free(runtime_dir);
                        runtime_dir = absolute_path(optarg);
                        if (!runtime_dir || !runtime_dir_fits(runtime_dir))
                                return 2;
                        o.runtime_dir = runtime_dir;
                        break;
                case OPT_CONFIG_DIR:
                        r = push_config_dir(&dirs, optarg);
                        if (r != 0)
                                return r;
                        break;
                case OPT_INTERVAL:
                        if (!parse_interval(optarg, &o.interval_usec))
                                return 2;
                        break;
                case OPT_DRY_RUN:
                        o.dry_run = true;
                        break;
                case OPT_LOG_LEVEL:
                        o.log_level = log_level_from_string(optarg);
                        if (o.log_level < 0) {
                                fprintf(stderr, "affinityd: --log-level: unknown level: %s\n", optarg);
                                return 2;
                        }
                        break;
                case OPT_NO_PERF:
                        o.no_perf = true;
                        break;
                case OPT_CHECK:
                        check = true;
                        break;
                case OPT_PRINT:
                        print = true;
                        break;
                case OPT_VERSION:
                        printf("affinityd %s\n", PACKAGE_VERSION);
                        return 0;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        if (optind < argc) {
                fprintf(stderr, "affinityd: unexpected argument: %s\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        if (print && !check) {
                fprintf(stderr, "affinityd: --print needs --check-config\n");
                return 2;
        }
        if (check)
                return check_config(o.root, dirs, print);

        o.config_dirs = dirs;
        r = manager_new(&o, &m);
        if (r < 0) {
                fprintf(stderr, "affinityd: cannot start: %s\n", strerror(-r));
                /* A broken configuration stays broken on restart: the unit's
                 * RestartPreventExitStatus= stops systemd from looping. */
                return r == -EINVAL ? EXIT_CONFIG : EXIT_FAILURE;
        }
        r = manager_run(m);
        manager_free(m);
        return r < 0 ? EXIT_FAILURE : 0;
}
