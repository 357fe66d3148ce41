#!/usr/bin/env python3
# Robustness client for test_serve.sh and test_serve_robust.sh: malformed/oversized requests (expects 4xx each), idle half-open connections, slow-header floods.
import resource
import selectors
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
        b"GET /metrics%00.html HTTP/1.1\r\nHost: x\r\n\r\n",  # a NUL in the path
        b"GET /metrics?format=text%00x HTTP/1.1\r\nHost: x\r\n\r\n",  # a NUL in the query
    ]
    ok, bad = 0, {}
    for i in range(n):
        st = status_of(port, kinds[i % len(kinds)])
        if 400 <= st < 500:
            ok += 1
        else:
            bad[(i % len(kinds), st)] = bad.get((i % len(kinds), st), 0) + 1
    print(ok, " ".join("kind%d:%d=%d" % (k, s, c) for (k, s), c in sorted(bad.items())))


def sources(spec):
    """"A.B.C.D" or "A.B.C.D+K": K loopback source addresses from A.B.C.D on (the last byte counts up)."""
    base, _, k = spec.partition("+")
    a, b, c, d = (int(x) for x in base.split("."))
    return ["%d.%d.%d.%d" % (a, b, c, d + i) for i in range(int(k or 1))]


def connect_from(src, port):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


def more_fds(n):
    """Raises the soft fd limit to the hard one (no privilege needed); exits when @n fds will not fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard != resource.RLIM_INFINITY and hard < n + 64:
        sys.exit("fd limit %d: too low for %d connections" % (hard, n))


def halfopen(port, n, hold, src="127.0.0.1"):
    """Opens @n connections (from the addresses @src names, in turn) that send half a request and stay idle for @hold seconds."""
    socks = []
    addrs = sources(src)
    more_fds(n)
    for i in range(n):
        s = connect_from(addrs[i % len(addrs)], port)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    print("open", len(socks), flush=True)
    time.sleep(hold)
    for s in socks:
        s.close()


def slow(port, n, src, hold, lo=0.0, hi=0.0, every=2.0):
    """
    @n connections from the addresses @src names, in turn, each sending a request
    line and then one header line every @every seconds, never the end of the header,
    for at most @hold seconds.  Prints "open N" once all are connected, then, when
    all are closed or @hold is up: "early E reaped R within W max T open O": E closed
    by the server within 1 s of their connect (refused), R later, W of those between
    @lo and @hi seconds after their connect, the latest after T seconds, O still open.
    """
    more_fds(n)
    addrs = sources(src)
    sel = selectors.DefaultSelector()
    born = {}
    for i in range(n):
        s = connect_from(addrs[i % len(addrs)], port)
        s.setblocking(False)
        try:
            s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            pass
        born[s] = time.monotonic()
        sel.register(s, selectors.EVENT_READ)
    print("open", n, flush=True)
    early = reaped = within = 0
    latest = 0.0
    end = time.monotonic() + hold
    tick = time.monotonic() + every
    line = 0
    while born and time.monotonic() < end:
        now = time.monotonic()
        if now >= tick:
            line += 1
            for s in list(born):
                try:
                    s.send(b"X-Slow-%d: x\r\n" % line)
                except OSError:
                    pass  # closed: the read below sees it
            tick = now + every
        for key, _ in sel.select(timeout=max(0.0, min(tick, end) - time.monotonic())):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data:
                continue  # an answer (a 4xx): the close follows
            life = time.monotonic() - born.pop(s)
            sel.unregister(s)
            s.close()
            if life < 1.0:
                early += 1
            else:
                reaped += 1
                within += lo <= life <= hi
                latest = max(latest, life)
    print("early %d reaped %d within %d max %.1f open %d" % (early, reaped, within, latest, len(born)), flush=True)


if __name__ == "__main__":
    port = int(sys.argv[2])
    if sys.argv[1] == "malformed":
        malformed(port, int(sys.argv[3]))
    elif sys.argv[1] == "slow":
        slow(port, int(sys.argv[3]), sys.argv[4], *(float(a) for a in sys.argv[5:8]))
    else:
        halfopen(port, int(sys.argv[3]), float(sys.argv[4]), *sys.argv[5:])
