#!/usr/bin/env python3
# Robustness client for test_serve.sh: malformed/oversized requests (expects 4xx each), idle half-open connections.
import socket
import sys
import time


def status_of(port, payload):
    """Sends @payload raw, returns the status code of the answer (0: closed without one)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(payload)
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        return 0
    finally:
        s.close()
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def malformed(port, n):
    """@n bad requests of ten kinds; prints how many got a 4xx and the others' statuses."""
    big = b"X-Big: " + b"a" * 40000 + b"\r\n"
    kinds = [
        b"GARBAGE GARBAGE\r\n\r\n",
        b"GET / FOO\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n",
        b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nBad Header Without Colon\r\n\r\n",
        b"GET /metrics?format=bogus HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\n\r\n",  # HTTP/1.1 without Host
    ]
    ok, bad = 0, {}
    for i in range(n):
        st = status_of(port, kinds[i % len(kinds)])
        if 400 <= st < 500:
            ok += 1
        else:
            bad[(i % len(kinds), st)] = bad.get((i % len(kinds), st), 0) + 1
    print(ok, " ".join("kind%d:%d=%d" % (k, s, c) for (k, s), c in sorted(bad.items())))


def halfopen(port, n, hold):
    """Opens @n connections that send half a request and stay idle for @hold seconds."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    print("open", len(socks), flush=True)
    time.sleep(hold)
    for s in socks:
        s.close()


if __name__ == "__main__":
    port = int(sys.argv[2])
    if sys.argv[1] == "malformed":
        malformed(port, int(sys.argv[3]))
    else:
        halfopen(port, int(sys.argv[3]), float(sys.argv[4]))
