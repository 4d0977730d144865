#!/usr/bin/python3
"""One end of a FIFO ping-pong: the echo end reads a byte from IN and
writes it to OUT; the client end writes to OUT and reads from IN, as fast
as it can, forever (till SIGTERM). Two processes, possibly of two users:
the shape of the adversarial probe (two world-writable FIFOs and an echo
loop owned by root). The proxy sits between a client and an echo end, as
a web proxy sits between its client and its backend: each byte from IN
goes to BOUT, the backend's answer from BIN back to OUT (a chain of three).
A fan is one client and two echo ends of one service: the fan client
writes to OUT1 and reads IN1, then OUT2 and IN2, as a pgbench thread
alternates between its two backends; echo2 serves both from two threads
of one process.
  fifo-pingpong.py echo|client IN OUT
  fifo-pingpong.py proxy IN OUT BIN BOUT
  fifo-pingpong.py echo2|fan IN1 OUT1 IN2 OUT2
With FIFO_PINGPONG_REPORT=SECONDS the client prints its round trips/s
every SECONDS to stdout, "t=EPOCH rate=R", so that a test can judge a
placement by the work done rather than by the daemon's own measure."""
import os
import sys
import threading
import time


def echo(fin, fout):
    r = os.open(fin, os.O_RDONLY)
    w = os.open(fout, os.O_WRONLY)
    while True:
        b = os.read(r, 1)
        if not b:
            return
        os.write(w, b)


def report(every, n, last):
    """Print the rate every EVERY s (the clock read once in 64 round
    trips: ~15k/s here, so ~4 ms apart); returns the new (n, last)."""
    if every and n % 64 == 0:
        now = time.time()
        if now - last >= every:
            print("t=%.3f rate=%.1f" % (now, n / (now - last)), flush=True)
            return 0, now
    return n, last


role, fin, fout = sys.argv[1], sys.argv[2], sys.argv[3]
every = float(os.environ.get("FIFO_PINGPONG_REPORT", "0"))
if role == "echo":
    echo(fin, fout)
    sys.exit(0)
elif role == "echo2":
    # both pairs' FIFOs are opened in the order the fan client opens them
    threads = [threading.Thread(target=echo, args=(fin, fout)),
               threading.Thread(target=echo, args=(sys.argv[4], sys.argv[5]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.exit(0)
elif role == "fan":
    ends = []
    for i, o in ((fin, fout), (sys.argv[4], sys.argv[5])):
        w = os.open(o, os.O_WRONLY)
        ends.append((os.open(i, os.O_RDONLY), w))
    n, last = 0, time.time()
    while True:
        for r, w in ends:
            os.write(w, b"x")
            if not os.read(r, 1):
                sys.exit(0)
        n += 1
        n, last = report(every, n, last)
elif role == "proxy":
    # the client's FIFOs first, in the order the client opens them
    r = os.open(fin, os.O_RDONLY)
    w = os.open(fout, os.O_WRONLY)
    bw = os.open(sys.argv[5], os.O_WRONLY)
    br = os.open(sys.argv[4], os.O_RDONLY)
    while True:
        b = os.read(r, 1)
        if not b:
            sys.exit(0)
        os.write(bw, b)
        b = os.read(br, 1)
        if not b:
            sys.exit(0)
        os.write(w, b)
else:
    w = os.open(fout, os.O_WRONLY)
    r = os.open(fin, os.O_RDONLY)
    n, last = 0, time.time()
    while True:
        os.write(w, b"x")
        if not os.read(r, 1):
            sys.exit(0)
        n += 1
        n, last = report(every, n, last)
