#!/usr/bin/env python3
# Keep-alive client for test_serve.sh: two /metrics scrapes GAP seconds apart on one connection; prints "same" or "new".
import http.client
import socket
import sys
import time

port, gap = int(sys.argv[1]), float(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
c.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
r = c.getresponse()
r.read()
if c.sock is None:  # the server said Connection: close
    print("closed after the first")
    sys.exit(0)
first = c.sock.getsockname()
time.sleep(gap)
try:
    c.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
    r = c.getresponse()
    r.read()
    # http.client reconnects by itself only when the server closed with Connection: close
    print("same" if c.sock.getsockname() == first and r.status == 200 else "new")
except (http.client.HTTPException, socket.error) as e:
    print("closed:" + type(e).__name__)
