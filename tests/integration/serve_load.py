# Concurrent scrapers for the serve robustness test: bursts of parallel /metrics requests, and a watcher of one counter.
import base64
import http.client
import re
import sys
import threading
import time

ACCEPTS = [
    "text/plain;version=0.0.4",
    "application/openmetrics-text;version=1.0.0",
    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
]


def get(port, path, accept, auth=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    headers = {"Accept": accept}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
    try:
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        body = r.read()
        return r.status, body
    finally:
        c.close()


def burst(port, threads, rounds):
    """THREADS scrapers at once, ROUNDS times each, in all three formats; prints status counts."""
    counts = {}
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def one(i):
        start.wait()
        for k in range(rounds):
            try:
                status, body = get(port, "/metrics", ACCEPTS[(i + k) % 3])
                key = str(status) if body else f"{status}-empty"
            except Exception as e:  # a reset or timeout is as bad as a 5xx
                key = "error:" + type(e).__name__
            with lock:
                counts[key] = counts.get(key, 0) + 1

    ts = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(" ".join(f"{k}:{v}" for k, v in sorted(counts.items())))


def watch(port, seconds, auth, pattern):
    """Scrapes (text) for SECONDS with 4 threads; prints scrapes, failures, decreases of the series PATTERN, last value."""
    rx = re.compile(("^" + re.escape(pattern) + r" (\S+)$").encode(), re.M)
    end = time.time() + seconds
    lock = threading.Lock()
    st = {"scrapes": 0, "failed": 0, "decreases": 0, "last": 0.0}

    def one():
        prev = 0.0
        while time.time() < end:
            try:
                status, body = get(port, "/metrics", ACCEPTS[0], auth)
            except Exception:
                status, body = 0, b""
            m = rx.search(body) if status == 200 else None
            with lock:
                st["scrapes"] += 1
                if status != 200:
                    st["failed"] += 1
                if m:
                    v = float(m.group(1))
                    if v < prev:
                        st["decreases"] += 1
                    prev = v
                    st["last"] = max(st["last"], v)

    ts = [threading.Thread(target=one) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(f"scrapes={st['scrapes']} failed={st['failed']} decreases={st['decreases']} last={st['last']:.0f}")


if __name__ == "__main__":
    if sys.argv[1] == "burst":
        burst(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        watch(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] or None, sys.argv[5])
