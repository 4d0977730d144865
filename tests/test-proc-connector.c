/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The netlink proc connector with a real fork + exec + exit: all three
 * events for our child must arrive within a deadline. Needs root
 * (CAP_NET_ADMIN) and CONFIG_PROC_EVENTS; skips (77) with the reason
 * otherwise, asked of the kernel directly (capability_absent()), so that
 * an error of the code under test (a subscription whose ack it does not
 * match: -ETIMEDOUT) fails instead of skipping.
 */
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "sample/proc-connector.h"
#include "test-util.h"

struct seen {
        pid_t child;
        bool fork, exec, exit;
        pid_t fork_parent;
        unsigned total;
};

static int on_event(const struct proc_event *ev, void *userdata) {
        struct seen *s = userdata;

        s->total++;
        if (ev->pid != s->child)
                return 0;
        switch (ev->what) {
        case PROC_EVENT_FORK_:
                ASSERT_EQ(ev->tid, s->child);
                s->fork = true;
                s->fork_parent = ev->parent_pid;
                break;
        case PROC_EVENT_EXEC_:
                ASSERT_EQ(ev->tid, s->child);
                s->exec = true;
                break;
        case PROC_EVENT_EXIT_:
                if (ev->tid == s->child)
                        s->exit = true;
                break;
        default:
                break;
        }
        return 0;
}

/* A handler's error stops dispatching and comes back as is. */
static int on_event_fail(const struct proc_event *ev, void *userdata) {
        return -ECANCELED;
}

/* Can this process join the proc connector's group at all? A plain socket
 * and bind, none of proc-connector.c: NULL if so, else why not. */
static const char *capability_absent(char *buf, size_t size) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
        int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);

        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                snprintf(buf, size, "proc connector not available: %s %s%s", fd < 0 ? "socket:" : "bind:",
                         strerror(errno), geteuid() != 0 ? " (not root)" : "");
                if (fd >= 0)
                        close(fd);
                return buf;
        }
        close(fd);
        return NULL;
}

int main(void) {
        struct proc_connector *pc = NULL;
        struct seen seen = {};
        uint64_t deadline;
        int r, fd, status;
        char reason[128];

        if (capability_absent(reason, sizeof(reason)))
                TEST_SKIP(reason);
        ASSERT_OK(proc_connector_new(&pc));
        fd = proc_connector_fd(pc);
        ASSERT_TRUE(fd >= 0);

        /* Nothing of ours queued yet: dispatch of an idle socket is not an error. */
        r = proc_connector_dispatch(pc, on_event, &seen);
        ASSERT_TRUE(r >= 0 || r == -ENOBUFS);

        /* Other processes on the machine fork too: an overrun (ENOBUFS) in
         * the few ms this takes may lose ours, and the child is run again,
         * at most 3 times in all, said; a fourth is a failure. */
        for (int attempt = 1;; attempt++) {
                seen = (struct seen) {};
                seen.child = fork();
                ASSERT_TRUE(seen.child >= 0);
                if (seen.child == 0) {
                        execl("/bin/true", "true", (char *) NULL);
                        _exit(127);
                }
                ASSERT_EQ(waitpid(seen.child, &status, 0), seen.child);
                ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

                deadline = util_now_usec() + 5 * USEC_PER_SEC;
                r = 0;
                while (r >= 0 && !(seen.fork && seen.exec && seen.exit)) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        uint64_t now = util_now_usec();

                        ASSERT_TRUE(now < deadline);
                        r = poll(&p, 1, (int) ((deadline - now) / 1000) + 1);
                        ASSERT_TRUE(r >= 0 || errno == EINTR);
                        r = proc_connector_dispatch(pc, on_event, &seen);
                }
                if (r >= 0 || (seen.fork && seen.exec && seen.exit))
                        break;
                ASSERT_TRUE(r == -ENOBUFS && attempt < 3);
                fprintf(stderr, "events lost to an overrun (attempt %d): the child runs again\n", attempt);
        }
        ASSERT_EQ(seen.fork_parent, getpid());
        fprintf(stderr, "fork/exec/exit of %d seen (%u events in all)\n", (int) seen.child, seen.total);

        /* A handler error is returned. */
        pid_t c = fork();
        ASSERT_TRUE(c >= 0);
        if (c == 0)
                _exit(0);
        ASSERT_EQ(waitpid(c, &status, 0), c);
        deadline = util_now_usec() + 5 * USEC_PER_SEC;
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ASSERT_TRUE(util_now_usec() < deadline);
                (void) poll(&p, 1, 100);
                r = proc_connector_dispatch(pc, on_event_fail, NULL);
                if (r != 0)
                        break;
        }
        ASSERT_EQ(r, -ECANCELED);

        struct proc_connector_stats st;
        proc_connector_get_stats(pc, &st);
        ASSERT_TRUE(st.events >= 3);
        ASSERT_STREQ(proc_event_type_to_string(PROC_EVENT_EXEC_), "exec");

        proc_connector_free(pc);
        ASSERT_TRUE(proc_connector_free(NULL) == NULL);
        return 0;
}
