/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The applier with the real ops table (apply_ops_system) on real child
 * processes of this test: pin and restore, a non-leader thread, crash
 * recovery from a process that _exit()s without restoring, a journal
 * entry whose start time names a different process (PID reuse), a user's
 * taskset after our change, and the refusals (kernel thread, ourselves,
 * outside the cpuset, exited and zombie tasks).
 *
 * Needs at least two CPUs in our own affinity mask (skip otherwise). Root
 * is not needed for our own children. Children die with us
 * (PR_SET_PDEATHSIG), so a failed assertion leaves nothing running.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "apply/apply.h"
#include "common/util.h"
#include "apply/journal.h"
#include "test-fixtures.h"
#include "test-util.h"

static char dir[256];
static int cpu_a = -1, cpu_b = -1;       /* two CPUs we may use */
static char orig_list[256];              /* our own (and so the children's) mask */
static struct apply_system sys = { .root = "/" };

/* ---- children ---- */

static void child_setup(pid_t parent) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(0);
}

static pid_t spawn_sleeper(void) {
        pid_t parent = getpid(), pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                child_setup(parent);
                for (;;)
                        pause();
        }
        return pid;
}

static pid_t spawn_busy(void) {
        pid_t parent = getpid(), pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                volatile unsigned long x = 0;
                child_setup(parent);
                for (;;)
                        x++;
        }
        return pid;
}

static void *thread_pause(void *arg) {
        int fd = *(int *) arg;
        pid_t tid = (pid_t) syscall(SYS_gettid);
        (void) !write(fd, &tid, sizeof(tid));
        for (;;)
                pause();
        return NULL;
}

/* A process with a second thread; returns the pid, *ret_tid the thread. */
static pid_t spawn_threaded(pid_t *ret_tid) {
        pid_t parent = getpid(), pid;
        int p[2];

        ASSERT_OK(pipe(p));
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                pthread_t t;
                child_setup(parent);
                close(p[0]);
                if (pthread_create(&t, NULL, thread_pause, &p[1]) != 0)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(p[1]);
        ASSERT_EQ(read(p[0], ret_tid, sizeof(*ret_tid)), (ssize_t) sizeof(*ret_tid));
        close(p[0]);
        return pid;
}

static void reap(pid_t pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* ---- /proc ---- */

static struct task_id task_id_of(pid_t pid, pid_t tid) {
        char path[128], buf[2048], *p, *save = NULL, *tok;
        struct task_id id = { .pid = pid, .tid = tid };
        int field;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int) pid, (int) tid);
        ASSERT_TRUE(util_read_file_at("/", path, buf, sizeof(buf)) > 0);
        p = strrchr(buf, ')');
        ASSERT_TRUE(p);
        for (field = 3, tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++)
                if (field == 22) {
                        ASSERT_OK(util_parse_u64(tok, &id.start_time));
                        return id;
                }
        ASSERT_TRUE(!"no start time");
        return id;
}

static const char *allowed_list(pid_t pid, pid_t tid) {
        static char out[256];
        char path[128], buf[8192], *p;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int) pid, (int) tid);
        ASSERT_TRUE(util_read_file_at("/", path, buf, sizeof(buf)) > 0);
        p = strstr(buf, "Cpus_allowed_list:");
        ASSERT_TRUE(p);
        p += strlen("Cpus_allowed_list:");
        while (*p == ' ' || *p == '\t')
                p++;
        snprintf(out, sizeof(out), "%.*s", (int) strcspn(p, "\n"), p);
        return out;
}

static int last_cpu(pid_t pid) {
        char path[64], buf[2048], *p, *save = NULL, *tok;
        int field;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        if (util_read_file_at("/", path, buf, sizeof(buf)) <= 0)
                return -1;
        p = strrchr(buf, ')');
        for (field = 3, tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++)
                if (field == 39)
                        return atoi(tok);
        return -1;
}

/* ---- applier ---- */

static struct applier *new_applier(struct applier_recover_report *rep) {
        struct applier *a;
        ASSERT_OK(applier_new(dir, &apply_ops_system, &sys, &a));
        ASSERT_OK(applier_recover(a));
        if (rep)
                *rep = *applier_get_recover_report(a);
        return a;
}

static struct action pin(struct task_id id, int cpu) {
        struct action act = {
                .type = ACT_AFFINITY,
                .verb = VERB_SET,
                .task = id,
                .mask = cpumask_of(cpu),
                .policy = "test-live",
                .reason = "hog: test",
                .evidence_before = 1.0,
        };
        return act;
}

static size_t n_managed(struct applier *a) {
        const struct managed *m;
        size_t n;
        ASSERT_OK(applier_list(a, &m, &n));
        return n;
}

static const char *cpu_str(int cpu) {
        static char b[16];
        snprintf(b, sizeof(b), "%d", cpu);
        return b;
}

/* ---- tests ---- */

static void test_pin_and_restore(void) {
        pid_t pid = spawn_sleeper();
        struct task_id id = task_id_of(pid, pid);
        struct action act = pin(id, cpu_a);
        struct apply_outcome o;
        struct applier *a = new_applier(NULL);

        ASSERT_EQ(applier_apply_full(a, &act, util_now_usec(), false, &o), APPLY_CHANGED);
        ASSERT_STREQ(o.before, orig_list);
        ASSERT_STREQ(allowed_list(pid, pid), cpu_str(cpu_a));
        /* the same again: nothing */
        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), APPLY_NOTHING);
        ASSERT_EQ(applier_restore_all(a), 1);
        ASSERT_STREQ(allowed_list(pid, pid), orig_list);
        applier_free(a);
        reap(pid);
        test_clean_dir(dir);
}

/* The pin takes effect in scheduling, not just in the mask. */
static void test_busy_child_runs_where_pinned(void) {
        pid_t pid = spawn_busy();
        struct task_id id = task_id_of(pid, pid);
        struct action act = pin(id, cpu_b);
        struct applier *a = new_applier(NULL);
        uint64_t deadline;
        int cpu = -1;

        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), APPLY_CHANGED);
        deadline = util_now_usec() + 2 * USEC_PER_SEC;
        while (util_now_usec() < deadline) {
                cpu = last_cpu(pid);
                if (cpu == cpu_b)
                        break;
                usleep(10000);
        }
        ASSERT_EQ(cpu, cpu_b);
        ASSERT_EQ(applier_restore_all(a), 1);
        ASSERT_STREQ(allowed_list(pid, pid), orig_list);
        applier_free(a);
        reap(pid);
        test_clean_dir(dir);
}

/* A non-leader thread: PIDFD_THREAD on >= 6.9, the process pidfd + start time before. */
static void test_thread(void) {
        pid_t tid, pid = spawn_threaded(&tid);
        struct task_id id = task_id_of(pid, tid);
        struct action act = pin(id, cpu_a);
        struct applier *a = new_applier(NULL);

        ASSERT_TRUE(tid != pid);
        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), APPLY_CHANGED);
        ASSERT_STREQ(allowed_list(pid, tid), cpu_str(cpu_a));
        ASSERT_STREQ(allowed_list(pid, pid), orig_list);   /* the leader untouched */
        ASSERT_EQ(applier_restore_pid(a, pid), 1);
        ASSERT_STREQ(allowed_list(pid, tid), orig_list);

        /* the wrong pid for this tid is not our thread */
        struct task_id wrong = id;
        wrong.pid = tid;
        act = pin(wrong, cpu_a);
        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), -ESRCH);
        applier_free(a);
        reap(pid);
        test_clean_dir(dir);
}

/* A daemon that dies without restoring: the next one restores from the journal. */
static void test_crash_recover(void) {
        pid_t target = spawn_sleeper(), c;
        struct task_id id = task_id_of(target, target);
        struct applier_recover_report rep;
        struct applier *a;
        int status;

        c = fork();
        ASSERT_TRUE(c >= 0);
        if (c == 0) {
                struct applier *ca;
                struct action act = pin(id, cpu_a);
                if (applier_new(dir, &apply_ops_system, &sys, &ca) < 0 ||
                    applier_recover(ca) < 0 ||
                    applier_apply(ca, &act, util_now_usec(), false) != APPLY_CHANGED)
                        _exit(1);
                _exit(0);   /* "crash": no restore, no free */
        }
        ASSERT_EQ(waitpid(c, &status, 0), c);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ASSERT_STREQ(allowed_list(target, target), cpu_str(cpu_a));

        a = new_applier(&rep);
        ASSERT_EQ(rep.entries, 1);
        ASSERT_EQ(rep.restored, 1);
        ASSERT_STREQ(allowed_list(target, target), orig_list);
        applier_free(a);
        reap(target);
        test_clean_dir(dir);
}

/*
 * PID reuse, constructed: a journal entry names a live PID but with a
 * different start time (the process that had the PID before). Worst
 * case: the live mask even equals the recorded target. Never touched.
 */
static void test_reused_pid_never_touched(void) {
        pid_t pid = spawn_sleeper();
        struct task_id id = task_id_of(pid, pid);
        struct journal_entry e = { .applied = true };
        struct applier_recover_report rep;
        struct journal *j;
        struct applier *a;
        char boot[64];
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu_a, &set);
        ASSERT_OK(sched_setaffinity(pid, sizeof(set), &set));

        e.begin.rec = JREC_BEGIN;
        e.begin.seq = 1;
        e.begin.type = ACT_AFFINITY;
        e.begin.task = id;
        e.begin.task.start_time = id.start_time - 1;
        snprintf(e.begin.key, sizeof(e.begin.key), "task:%d:%llu", (int) pid,
                 (unsigned long long) e.begin.task.start_time);
        snprintf(e.begin.original, sizeof(e.begin.original), "%s", orig_list);
        snprintf(e.begin.target, sizeof(e.begin.target), "%d", cpu_a);
        ASSERT_OK(apply_ops_system.boot_id(&sys, boot, sizeof(boot)));
        ASSERT_OK(journal_new(dir, boot, &j));
        ASSERT_OK(journal_rewrite(j, &e, 1));
        journal_free(j);

        a = new_applier(&rep);
        ASSERT_EQ(rep.entries, 1);
        ASSERT_EQ(rep.gone, 1);
        ASSERT_EQ(rep.restored, 0);
        ASSERT_STREQ(allowed_list(pid, pid), cpu_str(cpu_a));

        /* the same entry with the right start time is restored */
        applier_free(a);
        e.begin.task.start_time = id.start_time;
        ASSERT_OK(journal_new(dir, boot, &j));
        ASSERT_OK(journal_rewrite(j, &e, 1));
        journal_free(j);
        a = new_applier(&rep);
        ASSERT_EQ(rep.restored, 1);
        ASSERT_STREQ(allowed_list(pid, pid), orig_list);
        applier_free(a);
        reap(pid);
        test_clean_dir(dir);
}

/* The user runs taskset after our change: theirs stays. */
static void test_user_taskset_respected(void) {
        pid_t pid = spawn_sleeper();
        struct task_id id = task_id_of(pid, pid);
        struct action act = pin(id, cpu_a);
        struct applier *a = new_applier(NULL);
        char cmd[128];
        int r;

        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), APPLY_CHANGED);
        snprintf(cmd, sizeof(cmd), "taskset -p -c %d %d >/dev/null 2>&1", cpu_b, (int) pid);
        r = system(cmd);
        if (r != 0) {
                /* no taskset(1): do what it does */
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(cpu_b, &set);
                ASSERT_OK(sched_setaffinity(pid, sizeof(set), &set));
        }
        ASSERT_STREQ(allowed_list(pid, pid), cpu_str(cpu_b));
        ASSERT_EQ(applier_reconcile(a), 1);
        ASSERT_EQ(applier_restore_all(a), 0);
        ASSERT_STREQ(allowed_list(pid, pid), cpu_str(cpu_b));
        applier_free(a);
        reap(pid);
        test_clean_dir(dir);
}

static pid_t find_kthread(void) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        pid_t found = 0;

        if (!d)
                return 0;
        while (!found && (de = readdir(d))) {
                char path[64], buf[2048], *p, *save = NULL, *tok;
                int field, pid = atoi(de->d_name);

                if (pid <= 0)
                        continue;
                snprintf(path, sizeof(path), "/proc/%d/stat", pid);
                if (util_read_file_at("/", path, buf, sizeof(buf)) <= 0)
                        continue;
                p = strrchr(buf, ')');
                if (!p)
                        continue;
                for (field = 3, tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++)
                        if (field == 9) {
                                if (strtoul(tok, NULL, 10) & 0x00200000u)
                                        found = pid;
                                break;
                        }
        }
        closedir(d);
        return found;
}

static void test_refusals(void) {
        struct applier *a = new_applier(NULL);
        struct action act;
        pid_t kt, pid;
        cpumask_t allowed;

        /* ourselves, and our other threads */
        act = pin(task_id_of(getpid(), getpid()), cpu_a);
        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), -EPERM);
        ASSERT_STREQ(allowed_list(getpid(), getpid()), orig_list);

        /* a kernel thread */
        kt = find_kthread();
        if (kt > 0) {
                act = pin(task_id_of(kt, kt), cpu_a);
                ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), -EPERM);
        } else
                fprintf(stderr, "note: no kernel thread visible in /proc, that check skipped\n");

        /* outside the cpuset: a CPU that is not there */
        pid = spawn_sleeper();
        ASSERT_OK(apply_system_allowed_cpus("/", pid, &allowed));
        ASSERT_TRUE(cpumask_test(&allowed, cpu_a) && cpumask_test(&allowed, cpu_b));
        act = pin(task_id_of(pid, pid), CPUMASK_MAX - 1);
        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), -EINVAL);
        /* partly outside: refused too, rather than silently narrowed by the kernel */
        act.mask = cpumask_of(cpu_a);
        cpumask_set(&act.mask, CPUMASK_MAX - 1);
        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), -EINVAL);
        ASSERT_STREQ(allowed_list(pid, pid), orig_list);

        /* a zombie: exited, not reaped; /proc still shows it with the same start time */
        struct task_id id = task_id_of(pid, pid);
        kill(pid, SIGKILL);
        for (uint64_t deadline = util_now_usec() + 2 * USEC_PER_SEC; util_now_usec() < deadline;) {
                char path[64], buf[1024];
                snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
                if (util_read_file_at("/", path, buf, sizeof(buf)) > 0 && strstr(buf, ") Z "))
                        break;
                usleep(5000);
        }
        act = pin(id, cpu_a);
        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), -ESRCH);
        /* and gone */
        waitpid(pid, NULL, 0);
        ASSERT_EQ(applier_apply(a, &act, util_now_usec(), false), -ESRCH);
        ASSERT_EQ(n_managed(a), 0);
        applier_free(a);
        test_clean_dir(dir);
}

static void test_dry_run_live(void) {
        pid_t pid = spawn_sleeper();
        struct action act = pin(task_id_of(pid, pid), cpu_a);
        struct applier *a = new_applier(NULL);
        struct apply_outcome o;

        ASSERT_EQ(applier_apply_full(a, &act, util_now_usec(), true, &o), 0);
        ASSERT_STREQ(o.before, orig_list);
        ASSERT_STREQ(allowed_list(pid, pid), orig_list);
        applier_free(a);
        reap(pid);
        test_clean_dir(dir);
}

int main(void) {
        cpu_set_t set;
        cpumask_t mine;

        CPU_ZERO(&set);
        ASSERT_OK(sched_getaffinity(0, sizeof(set), &set));
        cpumask_from_cpu_set(&set, &mine);
        if (cpumask_weight(&mine) < 2)
                TEST_SKIP("needs at least two CPUs in this test's affinity mask");
        cpu_a = cpumask_next(&mine, 0);
        cpu_b = cpumask_next(&mine, cpu_a + 1);
        ASSERT_TRUE(cpumask_format_list(&mine, orig_list, sizeof(orig_list)));

        test_mkdtemp(dir, sizeof(dir), "test-apply-live-");

        test_pin_and_restore();
        test_busy_child_runs_where_pinned();
        test_thread();
        test_crash_recover();
        test_reused_pid_never_touched();
        test_user_taskset_respected();
        test_refusals();
        test_dry_run_live();

        /* again with the guard of kernels before 6.9: a pidfd on the process, start times on the thread */
        sys.no_thread_pidfd = true;
        test_pin_and_restore();
        test_thread();
        test_crash_recover();
        test_reused_pid_never_touched();
        test_refusals();

        test_clean_dir(dir);
        rmdir(dir);
        return 0;
}
