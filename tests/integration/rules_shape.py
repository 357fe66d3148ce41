# The input series of a promtool rules test against what a real Prometheus scraping ksight serve stores: names, label names, and the values ksight itself enumerates.
import json
import re
import sys
import urllib.parse
import urllib.request

# label values ksight writes from its own lists; the others (comm, syscall, disk, dev) are the host's
ENUMERATED = ("le", "collector", "cause")
# series Prometheus makes itself, not scraped from ksight
SYNTHETIC = ("up",)


def parse(series):
    m = re.fullmatch(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s*", series)
    if not m:
        raise ValueError("cannot parse series %r" % series)
    labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"', m.group(2) or ""))
    return m.group(1), labels


def served(port, name):
    q = urllib.parse.urlencode({"match[]": '{__name__="%s"}' % name})
    with urllib.request.urlopen("http://127.0.0.1:%s/api/v1/series?%s" % (port, q), timeout=10) as r:
        return json.load(r)["data"]


def main():
    port, test_file = sys.argv[1], sys.argv[2]
    bad = checked = 0
    cache = {}
    with open(test_file) as f:
        wanted = re.findall(r"^\s*- series:\s*'([^']*)'", f.read(), re.M)
    for s in wanted:
        name, labels = parse(s)
        if name in SYNTHETIC:
            continue
        checked += 1
        if name not in cache:
            cache[name] = served(port, name)
        keys = set(labels) | {"__name__"}
        same = [
            x
            for x in cache[name]
            if set(x) == keys and all(x[k] == labels[k] for k in ENUMERATED if k in labels)
        ]
        if not same:
            bad += 1
            shapes = sorted({",".join(sorted(set(x) - {"__name__"})) for x in cache[name]})
            print("not served: %s (served label sets of %s: %s)" % (s, name, "; ".join(shapes) or "none"))
    print("%d of %d input series shaped as served" % (checked - bad, checked))
    return 1 if bad or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
