#!/usr/bin/env python3
"""Benchmark: what the SDK adds to a run over raw HTTP in Python.

Against the server of CRUCIBLE_URL (key CRUCIBLE_API_KEY), after a warm-up,
times N runs of ``print(1)`` through ``crucible.Client.run`` and N through
raw HTTP, interleaved (SDK, urllib, http.client, SDK, ...) so that the
server's load affects each alike, and prints one line starting
``sdk-bench:`` with the medians, the difference and the ratio. The raw
baselines are ``urllib.request.urlopen`` (what most code uses; a new
connection per request) and ``http.client`` on one kept-alive connection
(the leanest Python can do; the SDK also keeps connections alive).

    CRUCIBLE_URL=... CRUCIBLE_API_KEY=... /usr/bin/python3 sdk/python/bench.py [-n 200]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import crucible  # noqa: E402

BODY = json.dumps({"language": "python", "code": "print(1)"}).encode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=200, help="timed runs of each kind (default 200)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed runs of each kind first (default 20)")
    args = ap.parse_args()
    url = os.environ.get("CRUCIBLE_URL")
    if not url:
        print("sdk-bench: CRUCIBLE_URL is not set", file=sys.stderr)
        return 2
    key = os.environ.get("CRUCIBLE_API_KEY", "")
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    client = crucible.Client(url, key or None)
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=60)

    def sdk() -> None:
        res = client.run("print(1)")
        assert res.stdout == "1\n", res

    def raw_urllib() -> None:
        req = urllib.request.Request(url.rstrip("/") + "/v1/runs", data=BODY, headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=60) as resp:
            doc = json.loads(resp.read())
        assert doc["stdout"] == "1\n", doc

    def raw_keepalive() -> None:
        conn.request("POST", u.path.rstrip("/") + "/v1/runs", body=BODY, headers=headers)
        resp = conn.getresponse()
        doc = json.loads(resp.read())
        assert resp.status == 200 and doc["stdout"] == "1\n", doc

    kinds = {"sdk": sdk, "urllib": raw_urllib, "keepalive": raw_keepalive}
    times = {k: [] for k in kinds}
    for i in range(args.warmup + args.n):
        for name, fn in kinds.items():
            t0 = time.perf_counter()
            fn()
            if i >= args.warmup:
                times[name].append((time.perf_counter() - t0) * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"sdk-bench: python n={args.n} sdk_median_ms={med['sdk']:.3f} raw_urllib_median_ms={med['urllib']:.3f} "
          f"diff_ms={med['sdk'] - med['urllib']:+.3f} ratio={med['sdk'] / med['urllib']:.3f} "
          f"raw_keepalive_median_ms={med['keepalive']:.3f} diff_keepalive_ms={med['sdk'] - med['keepalive']:+.3f} "
          f"ratio_keepalive={med['sdk'] / med['keepalive']:.3f} target_diff_ms<=0.5")
    return 0


if __name__ == "__main__":
    sys.exit(main())
