#!/usr/bin/python3
"""One end of a FIFO ping-pong: the echo end reads a byte from IN and
writes it to OUT; the client end writes to OUT and reads from IN, as fast
as it can, forever (till SIGTERM). Two processes, possibly of two users:
the shape of the adversarial probe (two world-writable FIFOs and an echo
loop owned by root).  fifo-pingpong.py echo|client IN OUT"""
import os
import sys

role, fin, fout = sys.argv[1], sys.argv[2], sys.argv[3]
if role == "echo":
    r = os.open(fin, os.O_RDONLY)
    w = os.open(fout, os.O_WRONLY)
    while True:
        b = os.read(r, 1)
        if not b:
            sys.exit(0)
        os.write(w, b)
else:
    w = os.open(fout, os.O_WRONLY)
    r = os.open(fin, os.O_RDONLY)
    while True:
        os.write(w, b"x")
        if not os.read(r, 1):
            sys.exit(0)
