/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The netlink process connector (NETLINK_CONNECTOR, CN_IDX_PROC): fork,
 * exec and exit events from the kernel as they happen, so a new process is
 * matched against the policies at once and an exited one forgotten. The
 * periodic scan stays the ground truth; events are hints (they can be lost
 * when the socket buffer overruns: -ENOBUFS).
 *
 * Needs CONFIG_PROC_EVENTS, the initial PID and user namespaces (the kernel
 * ignores subscriptions from others: -ETIMEDOUT here) and, before Linux
 * 6.6, CAP_NET_ADMIN (the kernel acks the subscription with EPERM: -EPERM;
 * 6.6+ lets anyone listen, checked on the 6.18 dev VM). Without the
 * connector (-EPROTONOSUPPORT) or with any other failure proc_connector_new()
 * returns -errno and the caller runs on periodic scans alone.
 *
 * Use from the manager's sd-event loop:
 *
 *   r = proc_connector_new(&pc);
 *   if (r >= 0)
 *           r = sd_event_add_io(e, &src, proc_connector_fd(pc), EPOLLIN, on_io, m);
 *   on_io: r = proc_connector_dispatch(pc, on_event, m);
 *          -EAGAIN never comes back (it means "drained" and is returned as 0);
 *          -ENOBUFS: events were lost, keep going (the next scan catches up);
 *          other < 0: stop watching the fd.
 *
 * The socket is non-blocking and close-on-exec. Dispatch reads at most
 * PROC_CONNECTOR_BATCH datagrams a call, so that a fork storm cannot hold
 * the loop: what is left stays readable, and the watch must be
 * level-triggered (sd-event's default) to be called again for it.
 */

#include <stdint.h>
#include <sys/types.h>

/* Names end in '_' so they never collide with <linux/cn_proc.h>'s PROC_EVENT_*. */
enum proc_event_type {
        PROC_EVENT_FORK_,   /* a new thread or process: pid = its process, tid = the new thread */
        PROC_EVENT_EXEC_,   /* pid exec'ed (tid = the thread that called exec, now the leader) */
        PROC_EVENT_EXIT_,   /* thread tid of process pid exited (pid == tid: the leader) */
        PROC_EVENT_COMM_,   /* thread tid renamed itself (prctl PR_SET_NAME); comm holds the name */
        _PROC_EVENT_TYPE_MAX,
};

struct proc_event {
        enum proc_event_type what;
        pid_t pid;                  /* process (thread group id) */
        pid_t tid;                  /* thread */
        pid_t parent_pid;           /* FORK: the parent process; 0 otherwise */
        uint64_t timestamp_ns;      /* CLOCK_MONOTONIC-like ns since boot, from the kernel */
        char comm[16];              /* COMM only */
};

/* Return < 0 to stop dispatching; that value is returned by proc_connector_dispatch(). */
typedef int (*proc_connector_handler_t)(const struct proc_event *ev, void *userdata);

struct proc_connector;

int proc_connector_new(struct proc_connector **ret);
/* Sends PROC_CN_MCAST_IGNORE and closes. NULL-tolerant. */
struct proc_connector *proc_connector_free(struct proc_connector *pc);

int proc_connector_fd(const struct proc_connector *pc);

/*
 * Read everything queued and call handler for each fork/exec/exit/comm
 * event. Returns the number of events handled (0 if none were queued),
 * -ENOBUFS if the kernel dropped events (the ones read are still handled),
 * a handler's negative return, or another -errno.
 */
int proc_connector_dispatch(struct proc_connector *pc, proc_connector_handler_t handler, void *userdata);

/* Counters for `affctl status`. */
struct proc_connector_stats {
        uint64_t events;            /* handled */
        uint64_t overruns;          /* ENOBUFS seen */
        uint64_t ignored;           /* other event kinds, foreign senders */
};
void proc_connector_get_stats(const struct proc_connector *pc, struct proc_connector_stats *ret);

const char *proc_event_type_to_string(enum proc_event_type t);
