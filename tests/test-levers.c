/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * levers: cgroup CPU weight on fixture trees (v1, v2, hybrid, no cpu
 * controller, no mountinfo), the weight <-> shares conversion, v2
 * subtree_control, exact v1 restore, the systemd path against a fake
 * systemd on a private socket, and the caps for `affctl status`.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "common/util.h"
#include "apply/levers.h"
#include "test-levers-util.h"

#define V1_CPU "/sys/fs/cgroup/cpu,cpuacct"

static void test_conversion(void) {
        /* systemd's formulas: shares = weight*1024/100 in 2..262144, weight = shares*100/1024 in 1..10000 */
        ASSERT_EQ(levers_weight_to_shares(100), 1024);
        ASSERT_EQ(levers_weight_to_shares(1), 10);
        ASSERT_EQ(levers_weight_to_shares(0), 2);
        ASSERT_EQ(levers_weight_to_shares(97), 993);
        ASSERT_EQ(levers_weight_to_shares(200), 2048);
        ASSERT_EQ(levers_weight_to_shares(10000), 102400);
        ASSERT_EQ(levers_weight_to_shares(UINT64_MAX), 102400);
        ASSERT_EQ(levers_shares_to_weight(1024), 100);
        ASSERT_EQ(levers_shares_to_weight(2), 1);
        ASSERT_EQ(levers_shares_to_weight(1000), 97);
        ASSERT_EQ(levers_shares_to_weight(993), 96);    /* why v1 needs the memo */
        ASSERT_EQ(levers_shares_to_weight(262144), 10000);
        ASSERT_EQ(levers_shares_to_weight(UINT64_MAX), 10000);
        for (uint64_t w = 1; w <= 10000; w++) {
                uint64_t s = levers_weight_to_shares(w);
                ASSERT_TRUE(s >= 2 && s <= 262144);
                ASSERT_TRUE(levers_shares_to_weight(s) <= w);
        }
}

static void probe(const char *fixture, struct lever_caps *caps) {
        char *root = levers_fixture_copy(fixture);
        struct levers *l;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_probe(l, caps));
        levers_free(l);
        levers_fixture_remove(root);
}

static void test_detect(void) {
        struct lever_caps c;

        probe("v1", &c);
        ASSERT_EQ(c.cgroup_version, 1);
        ASSERT_TRUE(!c.cgroup_hybrid);
        ASSERT_STREQ(c.cgroup_mount, V1_CPU);
        ASSERT_STREQ(c.cgroup_backend, "file");
        ASSERT_TRUE(c.cgroup_cpu_writable);
        ASSERT_STREQ(c.cgroup_why, "");
        ASSERT_TRUE(!c.systemd_bus);
        ASSERT_STREQ(c.kernel_release, "5.10.0-28-amd64");

        probe("v2", &c);
        ASSERT_EQ(c.cgroup_version, 2);
        ASSERT_TRUE(!c.cgroup_hybrid);
        ASSERT_STREQ(c.cgroup_mount, "/sys/fs/cgroup");
        ASSERT_STREQ(c.cgroup_why, "");
        ASSERT_STREQ(c.lockdown, "none");

        /* systemd's hybrid layout: cpu on v1, a controller-less v2 at unified */
        probe("hybrid", &c);
        ASSERT_EQ(c.cgroup_version, 1);
        ASSERT_TRUE(c.cgroup_hybrid);
        ASSERT_STREQ(c.cgroup_mount, V1_CPU);

        /* hybrid, but cpu is not bound to v1: it is the unified hierarchy's */
        probe("hybrid-v2cpu", &c);
        ASSERT_EQ(c.cgroup_version, 2);
        ASSERT_TRUE(c.cgroup_hybrid);
        ASSERT_STREQ(c.cgroup_mount, "/sys/fs/cgroup/unified");

        /* no /proc/self/mountinfo: the conventional places */
        probe("eevdf", &c);
        ASSERT_EQ(c.cgroup_version, 2);
        ASSERT_STREQ(c.cgroup_mount, "/sys/fs/cgroup");

        probe("nocpu", &c);
        ASSERT_EQ(c.cgroup_version, 0);
        ASSERT_TRUE(!c.cgroup_cpu_writable);
        ASSERT_CONTAINS(c.cgroup_why, "no cpu controller");
}

static void test_v1_weight(void) {
        char *root = levers_fixture_copy("v1");
        const char *detail;
        struct levers *l;
        uint64_t w;

        ASSERT_OK(levers_new(root, &l));

        /* shares 1000 reads as weight 97 */
        ASSERT_OK(levers_weight_get(l, "/system.slice/web.service", &w));
        ASSERT_EQ(w, 97);
        ASSERT_EQ(levers_weight_set(l, "/system.slice/web.service", 200), 1);
        ASSERT_STREQ(levers_slurp(root, V1_CPU "/system.slice/web.service/cpu.shares"), "2048");
        ASSERT_EQ(levers_weight_last_path(l, &detail), LEVERS_WEIGHT_PATH_FILE);
        ASSERT_CONTAINS(detail, "cpu.shares=2048");
        ASSERT_CONTAINS(detail, "(weight 200)");
        ASSERT_OK(levers_weight_get(l, "/system.slice/web.service", &w));
        ASSERT_EQ(w, 200);
        /* restore puts the exact original back, not 97*1024/100 = 993 */
        ASSERT_EQ(levers_weight_set(l, "/system.slice/web.service", 97), 1);
        ASSERT_STREQ(levers_slurp(root, V1_CPU "/system.slice/web.service/cpu.shares"), "1000");

        /* already there: nothing written */
        ASSERT_OK(levers_weight_get(l, "/batch", &w));
        ASSERT_EQ(w, 200);
        ASSERT_EQ(levers_weight_set(l, "/batch", 200), 0);

        /* what we wrote reads back as what we set (993 would otherwise read as 96) */
        ASSERT_EQ(levers_weight_set(l, "/batch", 97), 1);
        ASSERT_STREQ(levers_slurp(root, V1_CPU "/batch/cpu.shares"), "993");
        ASSERT_OK(levers_weight_get(l, "/batch", &w));
        ASSERT_EQ(w, 97);
        ASSERT_EQ(levers_weight_set(l, "/batch", 200), 1);
        ASSERT_STREQ(levers_slurp(root, V1_CPU "/batch/cpu.shares"), "2048");

        /* refusals */
        ASSERT_EQ(levers_weight_set(l, "/batch", 0), -ERANGE);
        ASSERT_EQ(levers_weight_set(l, "/batch", 10001), -ERANGE);
        ASSERT_EQ(levers_weight_set(l, "/", 100), -EINVAL);
        ASSERT_EQ(levers_weight_set(l, "batch", 100), -EINVAL);
        ASSERT_EQ(levers_weight_set(l, "/batch/../../etc", 100), -EINVAL);
        ASSERT_EQ(levers_weight_set(l, "/nope", 100), -ENOENT);
        ASSERT_CONTAINS(levers_last_error(l), "does not exist");
        ASSERT_EQ(levers_weight_get(l, "/nope", &w), -ENOENT);

        levers_free(l);
        levers_fixture_remove(root);
}

static void test_v2_weight(void) {
        char *root = levers_fixture_copy("v2");
        const char *detail;
        struct levers *l;
        uint64_t w;

        ASSERT_OK(levers_new(root, &l));

        ASSERT_OK(levers_weight_get(l, "/system.slice/web.service", &w));
        ASSERT_EQ(w, 100);
        ASSERT_EQ(levers_weight_set(l, "/system.slice/web.service", 300), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/fs/cgroup/system.slice/web.service/cpu.weight"), "300");
        ASSERT_EQ(levers_weight_last_path(l, &detail), LEVERS_WEIGHT_PATH_FILE);
        ASSERT_TRUE(!strstr(detail, "enabled +cpu"));
        ASSERT_STREQ(levers_slurp(root, "/sys/fs/cgroup/cgroup.subtree_control"), "cpu memory pids");

        /* a group whose parent does not hand cpu down has no cpu.weight: it weighs the default */
        ASSERT_OK(levers_weight_get(l, "/app.slice/api.service", &w));
        ASSERT_EQ(w, 100);

        /* +cpu is enabled in every ancestor that lacks it, from the top down */
        ASSERT_EQ(levers_weight_set(l, "/app.slice/deep.slice/worker.service", 400), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/fs/cgroup/app.slice/deep.slice/worker.service/cpu.weight"), "400");
        ASSERT_STREQ(levers_slurp(root, "/sys/fs/cgroup/app.slice/cgroup.subtree_control"), "memory pids cpu");
        ASSERT_STREQ(levers_slurp(root, "/sys/fs/cgroup/app.slice/deep.slice/cgroup.subtree_control"), "cpu");
        ASSERT_STREQ(levers_slurp(root, "/sys/fs/cgroup/cgroup.subtree_control"), "cpu memory pids");
        levers_weight_last_path(l, &detail);
        ASSERT_CONTAINS(detail, "enabled +cpu in /sys/fs/cgroup/app.slice/cgroup.subtree_control");
        ASSERT_CONTAINS(detail, "enabled +cpu in /sys/fs/cgroup/app.slice/deep.slice/cgroup.subtree_control");

        /* the kernel would now create api.service/cpu.weight; a fixture cannot */
        ASSERT_EQ(levers_weight_set(l, "/app.slice/api.service", 50), -ENOENT);

        /* parent without cpu in cgroup.controllers: not delegated, said so */
        ASSERT_EQ(levers_weight_set(l, "/nocpu.slice/x.service", 50), -ENODEV);
        ASSERT_CONTAINS(levers_last_error(l), "cpu controller not delegated to /nocpu.slice");
        ASSERT_STREQ(levers_slurp(root, "/sys/fs/cgroup/nocpu.slice/x.service/cpu.weight"), "100");

        levers_free(l);

        /* cpu on the unified half of a hybrid */
        levers_fixture_remove(root);
        root = levers_fixture_copy("hybrid-v2cpu");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_weight_get(l, "/app.slice", &w));
        ASSERT_EQ(w, 250);
        ASSERT_EQ(levers_weight_set(l, "/app.slice", 100), 1);
        ASSERT_STREQ(levers_slurp(root, "/sys/fs/cgroup/unified/app.slice/cpu.weight"), "100");
        levers_free(l);
        levers_fixture_remove(root);
}

/* ---- a fake systemd: SetUnitProperties on a private socket ---- */

struct fake_systemd {
        const char *root;
        const char *unit_file;   /* web.service's weight file below root */
        const char *log;         /* one line per call: "UNIT RUNTIME PROP=VALUE" */
};

static int fake_set_unit_properties(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        struct fake_systemd *f = userdata;
        const char *unit, *prop = NULL;
        uint64_t value = 0;
        int runtime, r;
        FILE *log;

        r = sd_bus_message_read(m, "sb", &unit, &runtime);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &prop);
                if (r < 0)
                        return r;
                r = sd_bus_message_read(m, "v", "t", &value);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;

        log = fopen(f->log, "ae");
        if (log) {
                fprintf(log, "%s %d %s=%" PRIu64 "\n", unit, runtime, prop ? prop : "?", value);
                fclose(log);
        }
        if (streq(unit, "web.service")) {
                char p[PATH_MAX], v[32];
                FILE *w;

                snprintf(p, sizeof(p), "%s%s", f->root, f->unit_file);
                snprintf(v, sizeof(v), "%" PRIu64, value);
                w = fopen(p, "we");
                if (w) {
                        fputs(v, w);
                        fclose(w);
                }
                return sd_bus_reply_method_return(m, NULL);
        }
        if (streq(unit, "lazy.service"))   /* accepts, never applies */
                return sd_bus_reply_method_return(m, NULL);
        return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", unit);
}

static const sd_bus_vtable fake_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("SetUnitProperties", "sba(sv)", "", fake_set_unit_properties, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static _Noreturn void fake_serve(const char *sock, struct fake_systemd *f) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int lfd;

        /* bind and listen under another name, then rename: the parent waits for the
         * name and must not connect before listen() */
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.tmp", sock);
        if (lfd < 0 || bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0 ||
            rename(sa.sun_path, sock) < 0)
                _exit(2);
        for (;;) {
                sd_bus *bus = NULL;
                sd_id128_t id;
                int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

                if (fd < 0)
                        _exit(3);
                if (sd_bus_new(&bus) < 0 || sd_bus_set_fd(bus, fd, fd) < 0 || sd_id128_randomize(&id) < 0 ||
                    sd_bus_set_server(bus, 1, id) < 0 || sd_bus_set_anonymous(bus, 1) < 0 ||
                    sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1",
                                             "org.freedesktop.systemd1.Manager", fake_vtable, f) < 0 ||
                    sd_bus_start(bus) < 0) {
                        sd_bus_unref(bus);
                        close(fd);
                        continue;
                }
                for (;;) {
                        int r = sd_bus_process(bus, NULL);
                        if (r < 0)
                                break;
                        if (r > 0)
                                continue;
                        if (sd_bus_wait(bus, UINT64_MAX) < 0)
                                break;
                }
                sd_bus_flush_close_unref(bus);
        }
}

static pid_t fake_start(const char *sock, struct fake_systemd *f) {
        uint64_t deadline = util_now_usec() + 5 * USEC_PER_SEC;
        struct stat st;
        pid_t pid;

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                /* a failed assertion in the parent exits without fake_stop(): go with it */
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() == 1)
                        _exit(4);
                fake_serve(sock, f);
        }
        while (stat(sock, &st) < 0) {
                ASSERT_TRUE(util_now_usec() < deadline);
                usleep(10 * 1000);
        }
        return pid;
}

static void fake_stop(pid_t pid) {
        int status;

        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
}

static void test_systemd_path(void) {
        char *root = levers_fixture_copy("v1"), sock[PATH_MAX], addr[PATH_MAX + 16], log[PATH_MAX], p[PATH_MAX];
        struct fake_systemd f = {
                .root = root, .unit_file = V1_CPU "/system.slice/web.service/cpu.shares", .log = log,
        };
        struct lever_caps caps;
        const char *detail;
        struct levers *l;
        uint64_t w;
        pid_t pid;

        snprintf(sock, sizeof(sock), "%s/systemd.sock", root);
        snprintf(addr, sizeof(addr), "unix:path=%s", sock);
        snprintf(log, sizeof(log), "%s/systemd.log", root);
        /* two more units: one systemd does not know, one it accepts and never applies */
        snprintf(p, sizeof(p), "mkdir -p '%s%s/system.slice/ghost.service' '%s%s/system.slice/lazy.service' && "
                 "echo 1024 > '%s%s/system.slice/ghost.service/cpu.shares' && "
                 "echo 1024 > '%s%s/system.slice/lazy.service/cpu.shares'",
                 root, V1_CPU, root, V1_CPU, root, V1_CPU, root, V1_CPU);
        ASSERT_EQ(system(p), 0);

        pid = fake_start(sock, &f);
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_set_systemd_address(l, addr));
        ASSERT_OK(levers_probe(l, &caps));
        ASSERT_TRUE(caps.systemd_bus);

        /* a unit's cgroup goes through systemd; on v1 as CPUShares=, exact */
        ASSERT_OK(levers_weight_get(l, "/system.slice/web.service", &w));
        ASSERT_EQ(w, 97);
        ASSERT_EQ(levers_weight_set(l, "/system.slice/web.service", 200), 1);
        ASSERT_EQ(levers_weight_last_path(l, &detail), LEVERS_WEIGHT_PATH_SYSTEMD);
        ASSERT_CONTAINS(detail, "systemd: web.service CPUShares=2048");
        ASSERT_STREQ(levers_slurp(root, V1_CPU "/system.slice/web.service/cpu.shares"), "2048");
        ASSERT_EQ(levers_weight_set(l, "/system.slice/web.service", 97), 1);
        ASSERT_STREQ(levers_slurp(root, V1_CPU "/system.slice/web.service/cpu.shares"), "1000");
        ASSERT_CONTAINS(levers_slurp(root, "/systemd.log"), "web.service 1 CPUShares=2048\nweb.service 1 CPUShares=1000");

        /* not a unit: no systemd */
        ASSERT_EQ(levers_weight_set(l, "/batch", 300), 1);
        ASSERT_EQ(levers_weight_last_path(l, NULL), LEVERS_WEIGHT_PATH_FILE);

        /* a unit of a container's own systemd (below a unit of the host's):
         * not the host's web.service, which must not be asked */
        snprintf(p, sizeof(p), "mkdir -p '%s%s/machine.slice/machine-c.scope/payload/system.slice/web.service' && "
                 "echo 1024 > '%s%s/machine.slice/machine-c.scope/payload/system.slice/web.service/cpu.shares'",
                 root, V1_CPU, root, V1_CPU);
        ASSERT_EQ(system(p), 0);
        ASSERT_EQ(levers_weight_set(l, "/machine.slice/machine-c.scope/payload/system.slice/web.service", 300), 1);
        ASSERT_EQ(levers_weight_last_path(l, NULL), LEVERS_WEIGHT_PATH_FILE);
        ASSERT_STREQ(levers_slurp(root, "/systemd.log"), "web.service 1 CPUShares=2048\nweb.service 1 CPUShares=1000");

        /* systemd refuses: written directly, and the detail says why */
        ASSERT_EQ(levers_weight_set(l, "/system.slice/ghost.service", 50), 1);
        ASSERT_EQ(levers_weight_last_path(l, &detail), LEVERS_WEIGHT_PATH_FILE);
        ASSERT_CONTAINS(detail, "org.freedesktop.systemd1.NoSuchUnit");
        ASSERT_STREQ(levers_slurp(root, V1_CPU "/system.slice/ghost.service/cpu.shares"), "512");

        /* systemd accepts but does not apply within its second: written directly */
        ASSERT_EQ(levers_weight_set(l, "/system.slice/lazy.service", 50), 1);
        ASSERT_EQ(levers_weight_last_path(l, &detail), LEVERS_WEIGHT_PATH_FILE);
        ASSERT_CONTAINS(detail, "systemd did not apply it");
        ASSERT_STREQ(levers_slurp(root, V1_CPU "/system.slice/lazy.service/cpu.shares"), "512");

        /* "" turns the systemd path off */
        ASSERT_OK(levers_set_systemd_address(l, ""));
        ASSERT_EQ(levers_weight_set(l, "/system.slice/web.service", 300), 1);
        ASSERT_EQ(levers_weight_last_path(l, NULL), LEVERS_WEIGHT_PATH_FILE);
        levers_free(l);
        fake_stop(pid);
        levers_fixture_remove(root);

        /* v2: CPUWeight= */
        root = levers_fixture_copy("v2");
        f.root = root;
        f.unit_file = "/sys/fs/cgroup/system.slice/web.service/cpu.weight";
        snprintf(sock, sizeof(sock), "%s/systemd.sock", root);
        snprintf(addr, sizeof(addr), "unix:path=%s", sock);
        snprintf(log, sizeof(log), "%s/systemd.log", root);
        pid = fake_start(sock, &f);
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_set_systemd_address(l, addr));
        ASSERT_EQ(levers_weight_set(l, "/system.slice/web.service", 300), 1);
        ASSERT_EQ(levers_weight_last_path(l, &detail), LEVERS_WEIGHT_PATH_SYSTEMD);
        ASSERT_CONTAINS(detail, "systemd: web.service CPUWeight=300");
        ASSERT_STREQ(levers_slurp(root, "/systemd.log"), "web.service 1 CPUWeight=300");
        levers_free(l);
        fake_stop(pid);
        levers_fixture_remove(root);
}

static void test_caps_json(void) {
        char *root = levers_fixture_copy("v2");
        struct json_object *o = NULL, *cg, *f, *v;
        struct lever_caps caps;
        struct levers *l;

        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_probe(l, &caps));
        ASSERT_OK(levers_caps_to_json(&caps, &o));
        ASSERT_TRUE(json_object_object_get_ex(o, "cgroup", &cg));
        ASSERT_TRUE(json_object_object_get_ex(cg, "version", &v));
        ASSERT_EQ(json_object_get_int(v), 2);
        ASSERT_TRUE(json_object_object_get_ex(cg, "available", &v));
        ASSERT_TRUE(json_object_get_boolean(v));
        ASSERT_TRUE(json_object_object_get_ex(o, "features", &f));
        ASSERT_TRUE(json_object_object_get_ex(f, "path", &v));
        ASSERT_STREQ(json_object_get_string(v), "/sys/kernel/debug/sched/features");
        ASSERT_TRUE(json_object_object_get_ex(f, "why", &v));
        ASSERT_STREQ(json_object_get_string(v), "");
        ASSERT_TRUE(json_object_object_get_ex(o, "sysctl", &v));
        ASSERT_TRUE(json_object_object_get_ex(o, "schedstats", &v));
        ASSERT_TRUE(json_object_object_get_ex(o, "lockdown", &v));
        ASSERT_STREQ(json_object_get_string(v), "none");
        json_object_put(o);
        levers_free(l);
        levers_fixture_remove(root);

        /* an unavailable lever carries its cause */
        root = levers_fixture_copy("nocpu");
        ASSERT_OK(levers_new(root, &l));
        ASSERT_OK(levers_probe(l, &caps));
        ASSERT_OK(levers_caps_to_json(&caps, &o));
        ASSERT_TRUE(json_object_object_get_ex(o, "cgroup", &cg));
        ASSERT_TRUE(json_object_object_get_ex(cg, "available", &v));
        ASSERT_TRUE(!json_object_get_boolean(v));
        ASSERT_TRUE(json_object_object_get_ex(cg, "why", &v));
        ASSERT_CONTAINS(json_object_get_string(v), "no cpu controller");
        json_object_put(o);
        levers_free(l);
        levers_fixture_remove(root);
}

int main(void) {
        test_conversion();
        test_detect();
        test_v1_weight();
        test_v2_weight();
        test_systemd_path();
        test_caps_json();
        return 0;
}
