#!/usr/bin/env python3
"""Deep pages of the global listing over three shards: every page (start = 0, 50, ...) read
in order twice, once as it is (each page continues from the cursor its predecessor
left: limit rows per shard) and once with a change before each page (a read flag, not
timed), which retires every cursor: each page is then read by offset, start + limit rows
per shard. Alternating rounds; the figures are the time and the PostgreSQL CPU per page.

    bench/store-pg/deep_pages.sh [ROUNDS=3] [MESSAGES=20000]
(runs this under store/test/with-pg-shards.sh 3). Bounded: the load has a count and a
timeout, every request a timeout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
from inlet_support import HTTP, Inletd  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import harness  # noqa: E402


def clusters_cpu(datas):
    return sum(harness.cluster_cpu(d) for d in datas)


def page(port, start, limit):
    with HTTP.open(f"http://127.0.0.1:{port}/api/v1/messages?start={start}&limit={limit}", timeout=60) as r:
        return json.loads(r.read())


def touch(port, mid, flag):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/messages", method="PUT",
                                 data=json.dumps({"IDs": [mid], "Read": flag}).encode(),
                                 headers={"Content-Type": "application/json"})
    HTTP.open(req, timeout=60).read()


def read_pages(port, starts, limit, retire=None):
    """Mean wall and PostgreSQL CPU seconds per page; `retire(i)`, when given, runs before
    page i outside the measured time (a change that retires every cursor)."""
    datas = [os.environ[f"INLET_PG_SHARD{i}_DATA"] for i in range(3)]
    wall = cpu = 0.0
    for i, s in enumerate(starts):
        if retire:
            retire(i)
        cpu0, t0 = clusters_cpu(datas), time.perf_counter()
        p = page(port, s, limit)
        wall += time.perf_counter() - t0
        cpu += clusters_cpu(datas) - cpu0
        assert p["start"] == s and len(p["messages"]) == min(limit, p["messages_count"] - s), s
    return wall / len(starts), cpu / len(starts)


def metric(port, name):
    with HTTP.open(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--out", default="docs/benchmarks/data/store-pg-deep-pages.json")
    a = ap.parse_args()
    shards = os.environ["INLET_PG_SHARDS"].split()
    d = Inletd(os.path.join(a.build, "bin", "inletd"),
               ["--store", shards[0], "--max-messages", str(a.messages * 2)] +
               [x for s in shards[1:] for x in ("--shard", s)])
    d.start()
    try:
        subprocess.run([os.path.join(a.build, "bin", "inlet-load"), "--target", f"127.0.0.1:{d.smtp_port}",
                        "-c", "32", "--count", str(a.messages), "--duration", "600", "--size-mean", "2000",
                        "--to", "user{n}@example.com", "--to-count", "1000", "--quiet"],
                       check=True, timeout=900, stdout=subprocess.DEVNULL)
        total = page(d.http_port, 0, 1)["messages_count"]
        starts = list(range(0, total, a.limit))
        one = page(d.http_port, 0, 1)["messages"][0]["ID"]
        runs = []
        for r in range(a.rounds):
            for order in (("cursor", "offset") if r % 2 == 0 else ("offset", "cursor")):
                # The same pages in the same order; "offset" changes a read flag (untimed)
                # before each page, so that no page finds a cursor.
                retire = (lambda i: touch(d.http_port, one, i % 2 == 0)) if order == "offset" else None
                touch(d.http_port, one, False)
                before = metric(d.http_port, "inlet_pg_list_cursor_pages_total")
                per_page, pg_cpu = read_pages(d.http_port, starts, a.limit, retire)
                cursors = metric(d.http_port, "inlet_pg_list_cursor_pages_total") - before
                runs.append({"round": r, "order": order, "pages": len(starts), "ms_per_page": per_page * 1000,
                             "pg_cpu_ms_per_page": pg_cpu * 1000, "cursor_pages": cursors})
                print(f"round {r} {order:7s} {len(starts)} pages  {per_page * 1000:7.2f} ms/page  "
                      f"PostgreSQL {pg_cpu * 1000:7.2f} CPU ms/page  cursor pages {cursors:.0f}")
    finally:
        d.stop()
    med = {o: (statistics.median(x["ms_per_page"] for x in runs if x["order"] == o),
               statistics.median(x["pg_cpu_ms_per_page"] for x in runs if x["order"] == o))
           for o in ("cursor", "offset")}
    print(f"\n| {total} messages, 3 shards, limit {a.limit} | ms per page | PostgreSQL CPU ms per page |")
    print("|---|---|---|")
    for o in ("cursor", "offset"):
        print(f"| every page, {o} | {med[o][0]:.2f} | {med[o][1]:.2f} |")
    print(f"| cursor / offset | {med['cursor'][0] / med['offset'][0]:.2f}x | "
          f"{med['cursor'][1] / max(med['offset'][1], 1e-9):.2f}x |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"messages": total, "limit": a.limit, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
