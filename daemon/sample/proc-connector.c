/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sample/proc-connector.h"

/* <linux/cn_proc.h> names its struct proc_event too; rename the kernel's. */
#define proc_event kernel_proc_event
#include <linux/cn_proc.h>
#undef proc_event
#include <linux/connector.h>
#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "common/util.h"

/* A fork storm (a build with -j, hackbench) makes tens of thousands of events
 * per second; 4 MiB holds a few seconds of them. Needs SO_RCVBUFFORCE (root);
 * otherwise the kernel's rmem_max applies. */
#define PROC_CONNECTOR_RCVBUF (4 * 1024 * 1024)
/* Datagrams handled per dispatch before returning to the loop, so a storm
 * cannot starve the timer; the fd stays readable and the loop calls again. */
#define PROC_CONNECTOR_BATCH 4096
#define PROC_CONNECTOR_ACK_TIMEOUT_MS 1000

struct proc_connector {
        struct nl_sock *sk;
        uint32_t seq;
        struct proc_connector_stats stats;
};

/* libnl returns its own codes (-NLE_*); callers here speak -errno. */
static int nlerr_to_errno(int e) {
        switch (e < 0 ? -e : e) {
        case NLE_PERM:
                return -EPERM;
        case NLE_NOACCESS:
                return -EACCES;
        case NLE_NOMEM:
                return -ENOMEM;
        case NLE_AGAIN:
                return -EAGAIN;
        case NLE_INTR:
                return -EINTR;
        case NLE_INVAL:
                return -EINVAL;
        case NLE_OPNOTSUPP:
                return -EOPNOTSUPP;
        case NLE_AF_NOSUPPORT:
                return -EAFNOSUPPORT;
        case NLE_PROTO_MISMATCH:
                return -EPROTONOSUPPORT;
        case NLE_BAD_SOCK:
                return -EBADF;
        case NLE_NODEV:
                return -ENODEV;
        default:
                return -EIO;
        }
}

const char *proc_event_type_to_string(enum proc_event_type t) {
        static const char *const names[_PROC_EVENT_TYPE_MAX] = {
                [PROC_EVENT_FORK_] = "fork",
                [PROC_EVENT_EXEC_] = "exec",
                [PROC_EVENT_EXIT_] = "exit",
                [PROC_EVENT_COMM_] = "comm",
        };
        return t >= 0 && t < _PROC_EVENT_TYPE_MAX ? names[t] : "unknown";
}

static int send_op(struct proc_connector *pc, enum proc_cn_mcast_op op) {
        char buf[sizeof(struct cn_msg) + sizeof(enum proc_cn_mcast_op)] __attribute__((aligned(8)));
        struct cn_msg *cn = (struct cn_msg *) buf;
        int r;

        memset(buf, 0, sizeof(buf));
        cn->id.idx = CN_IDX_PROC;
        cn->id.val = CN_VAL_PROC;
        cn->seq = ++pc->seq;
        cn->ack = 0;
        cn->len = sizeof(op);
        memcpy(cn->data, &op, sizeof(op));
        /* The connector takes a plain NLMSG_DONE message; no netlink ack. */
        r = nl_send_simple(pc->sk, NLMSG_DONE, 0, buf, sizeof(buf));
        return r < 0 ? nlerr_to_errno(r) : 0;
}

/*
 * Receive one datagram from the kernel into buf. Returns its length, 0 when
 * the socket is empty, -ENOBUFS on overrun, or -errno. Not nl_recv(): it
 * folds ENOBUFS into NLE_NOMEM, and an overrun must be told apart.
 */
static ssize_t recv_one(struct proc_connector *pc, char *buf, size_t size) {
        struct sockaddr_nl from;
        socklen_t len = sizeof(from);
        ssize_t n;

        for (;;) {
                n = recvfrom(nl_socket_get_fd(pc->sk), buf, size, MSG_DONTWAIT, (struct sockaddr *) &from, &len);
                if (n >= 0)
                        break;
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN)
                        return 0;
                return -errno;
        }
        if (len != sizeof(from) || from.nl_pid != 0) {
                /* Only the kernel speaks for CN_IDX_PROC. */
                pc->stats.ignored++;
                return -EAGAIN;
        }
        return n;
}

/*
 * Walk the netlink messages of one datagram; for each proc connector event
 * call f. Returns 0 or f's negative return.
 */
static int for_each_event(struct proc_connector *pc, const char *buf, size_t n,
                          int (*f)(struct proc_connector *pc, const struct kernel_proc_event *ev, void *u),
                          void *u) {
        for (const struct nlmsghdr *h = (const struct nlmsghdr *) buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
                const struct cn_msg *cn;

                if (h->nlmsg_type == NLMSG_NOOP || h->nlmsg_type == NLMSG_ERROR)
                        continue;
                if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg)))
                        continue;
                cn = NLMSG_DATA(h);
                if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC ||
                    cn->len < offsetof(struct kernel_proc_event, event_data) ||
                    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg) + cn->len)) {
                        pc->stats.ignored++;
                        continue;
                }
                /* The kernel pads the union to its full size; copy to be safe on alignment. */
                struct kernel_proc_event ev = {};
                memcpy(&ev, cn->data, MIN((size_t) cn->len, sizeof(ev)));
                int r = f(pc, &ev, u);
                if (r < 0)
                        return r;
        }
        return 0;
}

struct ack_wait {
        bool got;
        int err;
};

static int check_ack(struct proc_connector *pc, const struct kernel_proc_event *ev, void *u) {
        struct ack_wait *w = u;

        if (ev->what == PROC_EVENT_NONE && !w->got) {
                w->got = true;
                w->err = (int) ev->event_data.ack.err;
        }
        return 0;
}

static int wait_for_ack(struct proc_connector *pc) {
        uint64_t deadline = util_now_usec() + PROC_CONNECTOR_ACK_TIMEOUT_MS * USEC_PER_MSEC;
        char buf[8192] __attribute__((aligned(8)));

        for (;;) {
                struct pollfd p = { .fd = nl_socket_get_fd(pc->sk), .events = POLLIN };
                uint64_t now = util_now_usec();
                ssize_t n;

                if (now >= deadline)
                        return -ETIMEDOUT;
                if (poll(&p, 1, (int) ((deadline - now + 999) / 1000)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                n = recv_one(pc, buf, sizeof(buf));
                if (n == -EAGAIN || n == 0)
                        continue;
                if (n == -ENOBUFS)
                        continue;   /* events before the ack were lost; the ack may still come */
                if (n < 0)
                        return (int) n;

                /* The ack: PROC_EVENT_NONE with ack = our ack + 1. Its seq is not
                 * ours (since Linux 6.6 send_msg() numbers every message per CPU),
                 * so another listener subscribing in the same instant could be
                 * mistaken for us; both are root, and its err is as good. */
                size_t left = (size_t) n;
                for (const struct nlmsghdr *h = (const struct nlmsghdr *) buf; NLMSG_OK(h, left);
                     h = NLMSG_NEXT(h, left)) {
                        const struct cn_msg *cn;
                        struct ack_wait w = {};

                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg)))
                                continue;
                        cn = NLMSG_DATA(h);
                        if (cn->ack != 1)
                                continue;
                        (void) for_each_event(pc, (const char *) h, h->nlmsg_len, check_ack, &w);
                        if (w.got)
                                return w.err ? -w.err : 0;
                }
        }
}

int proc_connector_new(struct proc_connector **ret) {
        struct proc_connector *pc;
        int r, fd, size = PROC_CONNECTOR_RCVBUF;

        pc = calloc(1, sizeof(*pc));
        if (!pc)
                return -ENOMEM;
        pc->sk = nl_socket_alloc();
        if (!pc->sk) {
                free(pc);
                return -ENOMEM;
        }
        nl_socket_disable_seq_check(pc->sk);
        nl_socket_disable_auto_ack(pc->sk);

        r = nl_connect(pc->sk, NETLINK_CONNECTOR);
        if (r < 0) {
                r = nlerr_to_errno(r);
                goto fail;
        }
        fd = nl_socket_get_fd(pc->sk);
        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void) nl_socket_set_buffer_size(pc->sk, size, 0);

        /* Before Linux 6.6 this (or the LISTEN below) needs CAP_NET_ADMIN. */
        r = nl_socket_add_membership(pc->sk, CN_IDX_PROC);
        if (r < 0) {
                r = nlerr_to_errno(r);
                goto fail;
        }
        r = nl_socket_set_nonblocking(pc->sk);
        if (r < 0) {
                r = nlerr_to_errno(r);
                goto fail;
        }
        r = send_op(pc, PROC_CN_MCAST_LISTEN);
        if (r < 0)
                goto fail;
        r = wait_for_ack(pc);
        if (r < 0) {
                /* the LISTEN may have counted us all the same (an ack lost
                 * in an overrun): before 6.6 the kernel's listener count
                 * stays raised, and it builds every event for nobody */
                (void) send_op(pc, PROC_CN_MCAST_IGNORE);
                goto fail;
        }

        *ret = pc;
        return 0;
fail:
        nl_socket_free(pc->sk);
        free(pc);
        return r;
}

struct proc_connector *proc_connector_free(struct proc_connector *pc) {
        if (!pc)
                return NULL;
        /* The kernel counts listeners and skips building events when there are none. */
        (void) send_op(pc, PROC_CN_MCAST_IGNORE);
        nl_socket_free(pc->sk);
        free(pc);
        return NULL;
}

int proc_connector_fd(const struct proc_connector *pc) {
        return pc ? nl_socket_get_fd(pc->sk) : -EBADF;
}

struct dispatch {
        proc_connector_handler_t handler;
        void *userdata;
        int handled;
};

static int dispatch_one(struct proc_connector *pc, const struct kernel_proc_event *k, void *u) {
        struct dispatch *d = u;
        struct proc_event ev = { .timestamp_ns = k->timestamp_ns };
        int r;

        switch (k->what) {
        case PROC_EVENT_FORK:
                ev.what = PROC_EVENT_FORK_;
                ev.pid = k->event_data.fork.child_tgid;
                ev.tid = k->event_data.fork.child_pid;
                ev.parent_pid = k->event_data.fork.parent_tgid;
                break;
        case PROC_EVENT_EXEC:
                ev.what = PROC_EVENT_EXEC_;
                ev.pid = k->event_data.exec.process_tgid;
                ev.tid = k->event_data.exec.process_pid;
                break;
        case PROC_EVENT_EXIT:
                ev.what = PROC_EVENT_EXIT_;
                ev.pid = k->event_data.exit.process_tgid;
                ev.tid = k->event_data.exit.process_pid;
                break;
        case PROC_EVENT_COMM:
                ev.what = PROC_EVENT_COMM_;
                ev.pid = k->event_data.comm.process_tgid;
                ev.tid = k->event_data.comm.process_pid;
                memcpy(ev.comm, k->event_data.comm.comm, sizeof(ev.comm));
                ev.comm[sizeof(ev.comm) - 1] = '\0';
                break;
        default:
                pc->stats.ignored++;
                return 0;
        }
        pc->stats.events++;
        d->handled++;
        r = d->handler(&ev, d->userdata);
        return r < 0 ? r : 0;
}

int proc_connector_dispatch(struct proc_connector *pc, proc_connector_handler_t handler, void *userdata) {
        struct dispatch d = { .handler = handler, .userdata = userdata };
        char buf[8192] __attribute__((aligned(8)));
        bool overrun = false;

        if (!pc || !handler)
                return -EINVAL;
        for (unsigned i = 0; i < PROC_CONNECTOR_BATCH; i++) {
                ssize_t n = recv_one(pc, buf, sizeof(buf));
                int r;

                if (n == 0)
                        break;
                if (n == -EAGAIN)
                        continue;
                if (n == -ENOBUFS) {
                        /* Events were dropped; the socket stays usable. */
                        pc->stats.overruns++;
                        overrun = true;
                        continue;
                }
                if (n < 0)
                        return (int) n;
                r = for_each_event(pc, buf, (size_t) n, dispatch_one, &d);
                if (r < 0)
                        return r;
        }
        return overrun ? -ENOBUFS : d.handled;
}

void proc_connector_get_stats(const struct proc_connector *pc, struct proc_connector_stats *ret) {
        *ret = pc ? pc->stats : (struct proc_connector_stats) {};
}
