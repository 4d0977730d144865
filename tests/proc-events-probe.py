#!/usr/bin/env python3
"""Does this machine deliver process events (the kernel's proc connector)?

A check of the capability itself, independent of the daemon under test:
subscribe to the connector's process events (NETLINK_CONNECTOR, CN_IDX_PROC,
PROC_CN_MCAST_LISTEN), start /bin/true, and wait for its fork event.
Exit 0: delivered; 77: the capability is absent here (the socket, the
subscription or CAP_NET_ADMIN refused), with why on stdout; 1: subscribed
but no event for a process we started within the deadline.
"""
import errno
import os
import select
import socket
import struct
import sys
import time

NETLINK_CONNECTOR = 11
CN_IDX_PROC = CN_VAL_PROC = 1
PROC_CN_MCAST_LISTEN = 1
PROC_CN_MCAST_IGNORE = 2
NLMSG_DONE = 3
PROC_EVENT_FORK = 0x00000001


def send_op(s, op):
    # nlmsghdr + cn_msg (idx, val, seq, ack, len, flags) + the op
    cn = struct.pack("=IIIIHH", CN_IDX_PROC, CN_VAL_PROC, 0, 0, 4, 0) + struct.pack("=I", op)
    s.send(struct.pack("=IHHII", 16 + len(cn), NLMSG_DONE, 0, 0, os.getpid()) + cn)


def main():
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
        s.bind((os.getpid(), CN_IDX_PROC))
        send_op(s, PROC_CN_MCAST_LISTEN)
    except OSError as e:
        print(f"proc connector not available here: {e}")
        return 77
    try:
        return listen(s)
    finally:
        # before Linux 6.6 the kernel counts listeners: leave it as found
        try:
            send_op(s, PROC_CN_MCAST_IGNORE)
        except OSError:
            pass


def listen(s):
    overrun = False
    child = os.spawnv(os.P_NOWAIT, "/bin/true", ["/bin/true"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        try:
            data = s.recv(65536)
        except OSError as e:
            # ENOBUFS: subscribed, and events came faster than they were
            # read (fork churn next door): the connector works
            if e.errno == errno.ENOBUFS:
                overrun = True
                continue
            print(f"proc connector: recv failed: {e}")
            return 77
        off = 0
        while off + 16 <= len(data):
            nl_len = struct.unpack_from("=I", data, off)[0]
            body = data[off + 16: off + nl_len]
            if len(body) >= 20 + 16:
                what = struct.unpack_from("=I", body, 20)[0]
                if what == PROC_EVENT_FORK and len(body) >= 20 + 16 + 16:
                    _ppid, _ptgid, cpid, ctgid = struct.unpack_from("=IIII", body, 20 + 16)
                    if ctgid == child:
                        os.waitpid(child, 0)
                        print(f"proc connector: fork event of pid {child} delivered")
                        return 0
            if nl_len < 16:
                break
            off += (nl_len + 3) & ~3
    os.waitpid(child, 0)
    if overrun:
        # our child's event may be among those dropped; events came
        print(f"proc connector: events delivered (overrun, pid {child}'s perhaps among those dropped)")
        return 0
    print(f"proc connector: subscribed, but no fork event for pid {child} within 10 s")
    return 1


if __name__ == "__main__":
    sys.exit(main())
