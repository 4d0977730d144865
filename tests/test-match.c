/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy_matches() and detect_policy_for() / match_policy_for(): pure
 * functions, tested with struct literals for tasks and topologies and
 * with configurations parsed from text (and the shipped policies/).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"
#include "detect/match.h"
#include "test-util.h"

static struct config *parse(const char *text) {
        struct config *c = NULL;
        struct config_errors e = {};

        if (config_load_buffer("test.dump", text, strlen(text), &c, &e) < 0) {
                for (size_t i = 0; i < e.n; i++)
                        fprintf(stderr, "%s\n", e.items[i].message);
                exit(1);
        }
        return c;
}

static struct proc_info proc(pid_t pid, const char *comm, const char *exe, const char *cmdline,
                             const char *cgroup, const char *unit, uid_t uid) {
        struct proc_info p = {
                .pid = pid,
                .exe = (char *) exe,
                .cmdline = (char *) cmdline,
                .cgroup = (char *) cgroup,
                .unit = (char *) unit,
                .uid = uid,
        };
        snprintf(p.comm, sizeof(p.comm), "%s", comm);
        return p;
}

static struct task task(const struct proc_info *pi, pid_t tid, const char *comm) {
        struct task t = {
                .id = { .pid = pi ? pi->pid : tid, .tid = tid, .start_time = 1000 },
                .proc = pi,
                .policy = TASK_SCHED_OTHER,
                .allowed = cpumask_first_n(4),
        };
        snprintf(t.comm, sizeof(t.comm), "%s", comm);
        return t;
}

static void test_policy_matches_literal(void) {
        char *comm[] = { (char *) "nginx", (char *) "php-*", NULL };
        char *exe[] = { (char *) "/usr/sbin/*", NULL };
        char *unit[] = { (char *) "*.service", NULL };
        char *user[] = { (char *) "www-data", NULL };
        uid_t uids[] = { 33 };
        struct policy p = {
                .name = (char *) "literal",
                .match = { .comm = comm, .kthreads = MATCH_ANY, .realtime = MATCH_ANY },
        };
        struct proc_info web = proc(100, "nginx", "/usr/sbin/nginx", "nginx: worker process",
                                    "/system.slice/nginx.service", "nginx.service", 33);
        struct proc_info php = proc(200, "php-fpm8.2", "/usr/sbin/php-fpm8.2", "php-fpm: pool www",
                                    "/system.slice/php.service", "php.service", 0);
        struct task t1 = task(&web, 100, "nginx"), t2 = task(&php, 201, "worker"), t3;
        struct policy empty = { .match = { .kthreads = MATCH_ANY, .realtime = MATCH_ANY } };

        /* Comm= matches the thread's name or the process's */
        ASSERT_TRUE(policy_matches(&p, &t1));
        ASSERT_TRUE(policy_matches(&p, &t2));
        t3 = task(NULL, 300, "php-cgi");
        ASSERT_TRUE(policy_matches(&p, &t3));
        t3 = task(NULL, 300, "apache2");
        ASSERT_TRUE(!policy_matches(&p, &t3));

        /* all non-empty lists must match */
        p.match.exe = exe;
        p.match.unit = unit;
        ASSERT_TRUE(policy_matches(&p, &t1));
        ASSERT_TRUE(policy_matches(&p, &t2));
        p.match.user = user;
        p.match.uids = uids;
        ASSERT_TRUE(policy_matches(&p, &t1));
        ASSERT_TRUE(!policy_matches(&p, &t2));   /* uid 0 */

        /* a list that needs the process's attributes cannot match without them */
        t3 = task(NULL, 100, "nginx");
        ASSERT_TRUE(!policy_matches(&p, &t3));
        web.exe = NULL;   /* kernel thread or unreadable /proc/PID/exe */
        ASSERT_TRUE(!policy_matches(&p, &t1));

        /* Kernel= and Realtime= are tri-state */
        ASSERT_TRUE(policy_matches(&empty, &t2));
        t2.kthread = true;
        ASSERT_TRUE(policy_matches(&empty, &t2));
        empty.match.kthreads = MATCH_NO;
        ASSERT_TRUE(!policy_matches(&empty, &t2));
        empty.match.kthreads = MATCH_YES;
        ASSERT_TRUE(policy_matches(&empty, &t2));
        t2.kthread = false;
        ASSERT_TRUE(!policy_matches(&empty, &t2));
        empty.match.kthreads = MATCH_ANY;
        empty.match.realtime = MATCH_YES;
        ASSERT_TRUE(!policy_matches(&empty, &t2));
        t2.policy = TASK_SCHED_DEADLINE;
        ASSERT_TRUE(policy_matches(&empty, &t2));
        empty.match.realtime = MATCH_NO;
        ASSERT_TRUE(!policy_matches(&empty, &t2));

        ASSERT_TRUE(!policy_matches(NULL, &t2));
        ASSERT_TRUE(!policy_matches(&empty, NULL));
}

static void test_globs_from_text(void) {
        struct config *c = parse("[Policy]\nName=java\nDetector=hog\nAction=report\n"
                                 "[Match]\nCmdline=\"*java * -jar app.jar*\"\nCgroup=/system.slice/*\n"
                                 "User=root 65534\n");
        struct proc_info pi = proc(10, "java", "/usr/bin/java", "/usr/bin/java -Xmx1g -jar app.jar --port 80",
                                   "/system.slice/app.service/main", "app.service", 65534);
        struct task t = task(&pi, 11, "GC Thread#0");

        /* '*' also matches '/' (fnmatch without FNM_PATHNAME): a slice glob covers nested cgroups */
        ASSERT_TRUE(policy_matches(&c->policies[0], &t));
        pi.uid = 1000;
        ASSERT_TRUE(!policy_matches(&c->policies[0], &t));
        pi.uid = 0;
        ASSERT_TRUE(policy_matches(&c->policies[0], &t));
        pi.cmdline = (char *) "/usr/bin/java -jar other.jar";
        ASSERT_TRUE(!policy_matches(&c->policies[0], &t));
        config_free(c);
}

static const char rules[] =
        "[Policy]\nName=no-pairs-for-db\nDetector=pair\nAction=exclude\n[Match]\nComm=postgres\n"
        "[Policy]\nName=never-backup\nAction=exclude\n[Match]\nComm=backup\n"
        "[Policy]\nName=hogs-late\nPriority=60\nDetector=hog\nAction=report\n"
        "[Policy]\nName=hogs\nDetector=hog\nAction=pin\n"
        "[Policy]\nName=hogs-tie\nDetector=hog\nAction=pin\n[Detect]\nUtil=90%\n"
        "[Policy]\nName=hogs-off\nEnabled=no\nPriority=1\nDetector=hog\nAction=report\n"
        "[Policy]\nName=rt-hogs\nPriority=10\nDetector=hog\nAction=pin\n[Match]\nComm=rt-*\n[Action]\nAllowRealtime=yes\n"
        "[Policy]\nName=tuned\nPriority=10\nDetector=hog\nAction=pin\n[Match]\nComm=tuned-*\n[Action]\nAllowNarrowed=yes\n"
        "[Policy]\nName=pairs\nDetector=pair\nAction=colocate\n";

static void test_policy_for(void) {
        struct config *c = parse(rules);
        struct topo_cpu cpus[4] = {};
        struct topology topo = {
                .n_cpus = 4,
                .cpus = cpus,
                .online = cpumask_first_n(4),
        };
        struct snapshot s = { .topo = &topo };
        struct proc_info pi = proc(500, "make", "/usr/bin/make", "make -j4", "/user.slice", NULL, 1000);
        struct task t = task(&pi, 501, "make");
        const struct policy *p;
        const char *why = "unset";

        /* lowest Priority= wins; among equals the first loaded; disabled ones do not count */
        p = detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why);
        ASSERT_TRUE(p);
        ASSERT_STREQ(p->name, "hogs");
        ASSERT_TRUE(why == NULL);
        p = detect_policy_for(c, &s, &t, DETECT_PAIR, 1, &why);
        ASSERT_STREQ(p->name, "pairs");
        p = detect_policy_for(c, &s, &t, DETECT_STEAL, 1, &why);
        ASSERT_TRUE(!p);
        ASSERT_STREQ(why, "no policy matches");

        /* an exclusion for one detector leaves the others */
        snprintf(t.comm, sizeof(t.comm), "postgres");
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_PAIR, 1, &why));
        ASSERT_STREQ(why, "excluded by policy no-pairs-for-db");
        ASSERT_STREQ(detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why)->name, "hogs");
        /* Detector=always (the default of Action=exclude) excludes from every detector */
        snprintf(t.comm, sizeof(t.comm), "backup");
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "excluded by policy never-backup");
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_PAIR, 1, NULL));
        snprintf(t.comm, sizeof(t.comm), "make");

        /* safety defaults: kernel threads, the daemon itself */
        t.kthread = true;
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "kernel thread");
        t.kthread = false;
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 500, &why));
        ASSERT_STREQ(why, "affinityd itself");
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 501, &why));

        /* real-time tasks only with AllowRealtime=yes */
        t.policy = TASK_SCHED_FIFO;
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "real-time task");
        snprintf(t.comm, sizeof(t.comm), "rt-audio");
        ASSERT_STREQ(detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why)->name, "rt-hogs");
        t.policy = TASK_SCHED_OTHER;
        snprintf(t.comm, sizeof(t.comm), "make");

        /* narrowed affinity: left alone unless AllowNarrowed=yes or the narrowing is ours */
        t.allowed = cpumask_of(2);
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "affinity narrowed by someone else");
        p = match_policy_for(c, &s, &t, DETECT_HOG, 1, MATCH_AFFINITY_OURS, &why);
        ASSERT_STREQ(p->name, "hogs");
        snprintf(t.comm, sizeof(t.comm), "tuned-x");
        ASSERT_STREQ(detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why)->name, "tuned");
        snprintf(t.comm, sizeof(t.comm), "make");

        /* The kubelet gave 2-3 to a container: its tasks are narrowed as
         * the matcher always saw them, and left alone even with AllowNarrowed=yes. */
        ASSERT_OK(cpumask_parse_list("2-3", &s.coexist.kubelet_exclusive));
        ASSERT_OK(cpumask_parse_list("2-3", &t.allowed));
        ASSERT_TRUE(match_affinity_narrowed(&s, &t));
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "on CPUs the kubelet gave a container");
        snprintf(t.comm, sizeof(t.comm), "tuned-x");
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "on CPUs the kubelet gave a container");
        snprintf(t.comm, sizeof(t.comm), "make");
        /* ... unless the mask is ours: the planners move our pins off such CPUs */
        ASSERT_STREQ(match_policy_for(c, &s, &t, DETECT_HOG, 1, MATCH_AFFINITY_OURS, &why)->name, "hogs");
        /* the shared pool (every other CPU) is the default now, and so is a task outside Kubernetes */
        ASSERT_OK(cpumask_parse_list("0-1", &t.allowed));
        ASSERT_TRUE(!match_affinity_narrowed(&s, &t));
        ASSERT_STREQ(detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why)->name, "hogs");
        t.allowed = cpumask_first_n(4);
        ASSERT_STREQ(detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why)->name, "hogs");
        /* partly on them: not the container's, the usual rules */
        ASSERT_OK(cpumask_parse_list("1-2", &t.allowed));
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "affinity narrowed by someone else");
        cpumask_zero(&s.coexist.kubelet_exclusive);

        /* the default is the usable CPUs: isolated and nohz_full CPUs do not count */
        t.allowed = cpumask_first_n(3);
        ASSERT_TRUE(match_affinity_narrowed(&s, &t));
        topo.isolated = cpumask_of(3);
        ASSERT_TRUE(!match_affinity_narrowed(&s, &t));
        ASSERT_STREQ(detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why)->name, "hogs");
        cpumask_zero(&topo.isolated);
        topo.nohz_full = cpumask_of(3);
        ASSERT_TRUE(!match_affinity_narrowed(&s, &t));
        cpumask_zero(&topo.nohz_full);
        /* ... nor CPUs the daemon itself may not use (systemd's CPUAffinity= narrows everyone) */
        topo.self_allowed = cpumask_first_n(2);
        t.allowed = cpumask_first_n(2);
        ASSERT_TRUE(!match_affinity_narrowed(&s, &t));
        t.allowed = cpumask_of(1);
        ASSERT_TRUE(match_affinity_narrowed(&s, &t));
        /* without a topology there is nothing to compare with */
        ASSERT_TRUE(!match_affinity_narrowed(NULL, &t));
        s.topo = NULL;
        ASSERT_TRUE(!match_affinity_narrowed(&s, &t));
        ASSERT_STREQ(detect_policy_for(c, NULL, &t, DETECT_HOG, 1, &why)->name, "hogs");

        ASSERT_TRUE(!detect_policy_for(NULL, NULL, &t, DETECT_HOG, 1, &why));
        ASSERT_TRUE(!detect_policy_for(c, NULL, NULL, DETECT_HOG, 1, NULL));
        config_free(c);
}

/* The shipped policies applied to tasks a real machine has. */
static void test_shipped(void) {
        const char *top = getenv("top_srcdir");
        char dir[PATH_MAX];
        struct config_paths paths = {};
        struct config *c = NULL;
        struct topo_cpu cpus[2] = {};
        struct topology topo = { .n_cpus = 2, .cpus = cpus, .online = cpumask_first_n(2) };
        struct snapshot s = { .topo = &topo };
        const char *why;
        struct proc_info journald = proc(300, "systemd-journal", "/usr/lib/systemd/systemd-journald",
                                         "/lib/systemd/systemd-journald", "/system.slice/systemd-journald.service",
                                         "systemd-journald.service", 0);
        struct proc_info udevw = proc(310, "(udev-worker)", "/usr/bin/udevadm", "(udev-worker)",
                                      "/system.slice/systemd-udevd.service/udev", "systemd-udevd.service", 0);
        struct proc_info init = proc(1, "systemd", "/usr/lib/systemd/systemd", "/sbin/init",
                                     "/init.scope", "init.scope", 0);
        struct proc_info dd = proc(4000, "dd", "/usr/bin/dd", "dd if=/dev/zero of=/dev/null",
                                   "/user.slice/user-1000.slice/session-3.scope", "session-3.scope", 1000);
        struct proc_info self = proc(777, "affinityd", "/usr/sbin/affinityd", "/usr/sbin/affinityd",
                                     "/system.slice/affinityd.service", "affinityd.service", 0);
        struct task t;

        snprintf(dir, sizeof(dir), "%s/policies", top ? top : TOP_SRCDIR);
        paths.dirs[0] = dir;
        ASSERT_OK(config_load(&paths, &c, NULL));

        t = task(&journald, 300, "systemd-journal");
        t.allowed = cpumask_first_n(2);
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "excluded by policy 10-exclude-systemd");
        t = task(&udevw, 311, "(udev-worker)");
        t.allowed = cpumask_first_n(2);
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_PAIR, 1, &why));
        ASSERT_STREQ(why, "excluded by policy 10-exclude-systemd-units");
        t = task(&init, 1, "systemd");
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        t = task(NULL, 15, "kworker/0:1");
        t.kthread = true;
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "excluded by policy 10-exclude-kernel");
        t = task(&self, 778, "affinityd");
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 0, &why));
        ASSERT_STREQ(why, "excluded by policy 10-exclude-self");

        t = task(&dd, 4000, "dd");
        t.allowed = cpumask_first_n(2);
        ASSERT_STREQ(detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why)->name, "50-hogs");
        ASSERT_STREQ(detect_policy_for(c, &s, &t, DETECT_PAIR, 1, &why)->name, "50-pingpong");
        /* the examples are disabled */
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_STEAL, 1, &why));
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_ALWAYS, 1, &why));
        ASSERT_STREQ(why, "no policy matches");
        /* real-time: excluded by policy before the safety default is even asked */
        t.policy = TASK_SCHED_RR;
        ASSERT_TRUE(!detect_policy_for(c, &s, &t, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "excluded by policy 10-exclude-realtime");
        config_free(c);
}

/* [Daemon] Scope=: only tasks in those cgroups are matched; an empty assignment resets. */
static void test_scope(void) {
        struct config *c = parse("[Daemon]\nScope=/affd-test.* /batch.slice/*\n"
                                 "[Policy]\nName=hogs\nDetector=hog\nAction=pin\n");
        struct topo_cpu cpus[4] = {};
        struct topology topo = { .n_cpus = 4, .cpus = cpus, .online = cpumask_first_n(4) };
        struct snapshot s = { .topo = &topo };
        struct proc_info in = proc(100, "spin", "/usr/bin/spin", "spin", "/affd-test.ab12", NULL, 0);
        struct proc_info below = proc(200, "spin", "/usr/bin/spin", "spin", "/batch.slice/job.scope", NULL, 0);
        struct proc_info out = proc(300, "make", "/usr/bin/make", "make", "/user.slice", NULL, 1000);
        struct task t1 = task(&in, 100, "spin"), t2 = task(&below, 200, "spin"), t3 = task(&out, 300, "make");
        struct proc_info hybrid = proc(500, "spin", "/usr/bin/spin", "spin", "/", NULL, 0);
        struct task orphan = task(NULL, 400, "spin"), t5;
        const char *why = NULL;

        ASSERT_TRUE(match_in_scope(c, &t1) && match_in_scope(c, &t2) && !match_in_scope(c, &t3));
        ASSERT_TRUE(!match_in_scope(c, &orphan));       /* no process attributes: cannot be shown to be in it */
        /* a hybrid machine: the cpu controller's tree says "/", systemd's tree has the scope */
        hybrid.cgroup_systemd = (char *) "/affd-test.ab12";
        t5 = task(&hybrid, 500, "spin");
        ASSERT_TRUE(match_in_scope(c, &t5));
        hybrid.cgroup_systemd = (char *) "/user.slice";
        ASSERT_TRUE(!match_in_scope(c, &t5));
        ASSERT_STREQ(detect_policy_for(c, &s, &t1, DETECT_HOG, 1, &why)->name, "hogs");
        ASSERT_STREQ(detect_policy_for(c, &s, &t2, DETECT_HOG, 1, &why)->name, "hogs");
        ASSERT_TRUE(!detect_policy_for(c, &s, &t3, DETECT_HOG, 1, &why));
        ASSERT_STREQ(why, "outside Scope=");
        config_free(c);

        /* unset, or reset by an empty assignment: every task */
        c = parse("[Daemon]\nScope=/affd-test.*\nScope=\n[Policy]\nName=hogs\nDetector=hog\nAction=pin\n");
        ASSERT_TRUE(!c->daemon.scope && match_in_scope(c, &t3));
        ASSERT_STREQ(detect_policy_for(c, &s, &t3, DETECT_HOG, 1, &why)->name, "hogs");
        config_free(c);
}

int main(void) {
        test_scope();
        test_policy_matches_literal();
        test_globs_from_text();
        test_policy_for();
        test_shipped();
        return 0;
}
