#!/usr/bin/python3
"""Open N connections to a unix socket and hold them without a byte (never
authenticating), as the user this runs as; print how many the server
accepted and kept; hold until SIGTERM.  bus-flood.py SOCKET N READY-FILE"""
import os
import signal
import socket
import sys
import time

path, n, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        continue
    socks.append(s)
with open(ready + ".tmp", "w") as f:
    f.write(f"{len(socks)}\n")
os.rename(ready + ".tmp", ready)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    time.sleep(3600)
