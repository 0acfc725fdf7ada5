#!/usr/bin/env python3
"""Group commit across a network: the PostgreSQL store's write path (store_pg_bench, a
closed loop of puts) with its shard behind delay_proxy at 0, 1 and 5 ms each way, at 32
and 128 puts in flight, rounds alternating. The figure is each delay's rate over the
0 ms rate at the same concurrency, per round, then the median.

    bench/store-pg/latency.sh [ROUNDS=3] [SECONDS=8]
(runs this under store/test/with-pg-shards.sh 1 with fsync on). Bounded: each run has
its time and a timeout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import urllib.parse


def start_proxy(build, target, delay_ms):
    p = subprocess.Popen([os.path.join(build, "bin", "delay_proxy"), "--target", target,
                          "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline())
    return p, port


def run_bench(build, dsn, pgdata, seconds, inflight, label, out):
    cmd = [os.path.join(build, "bin", "store_pg_bench"), "--store", dsn, "--pgdata", pgdata,
           "--seconds", str(seconds), "--inflight", str(inflight), "--fresh", "--json", out,
           "--label", label]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 10 + 120)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        raise SystemExit(f"store_pg_bench failed: {label}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--delays", default="0,1,5", help="one-way delays in ms")
    ap.add_argument("--inflight", default="32,128")
    ap.add_argument("--out", default="docs/benchmarks/data/store-pg-latency.json")
    a = ap.parse_args()
    dsn = os.environ["INLET_PG_SHARDS"].split()[0]
    pgdata = os.environ["INLET_PG_SHARD0_DATA"]
    u = urllib.parse.urlsplit(dsn)
    target = f"{u.hostname}:{u.port}"
    delays = [float(d) for d in a.delays.split(",")]
    inflights = [int(n) for n in a.inflight.split(",")]
    proxies = {}
    try:
        for d in delays:
            proc, port = start_proxy(a.build, target, d)
            proxies[d] = (proc, u._replace(netloc=f"{u.username + '@' if u.username else ''}127.0.0.1:{port}").geturl())
        runs = []
        for r in range(a.rounds):
            order = delays if r % 2 == 0 else list(reversed(delays))
            for n in inflights:
                for d in order:
                    with tempfile.NamedTemporaryFile("r", suffix=".json") as tmp:
                        run_bench(a.build, proxies[d][1], pgdata, a.seconds, n, f"d{d:g}ms-c{n}", tmp.name)
                        res = json.loads(tmp.read().strip().splitlines()[-1])
                    res.update({"round": r, "delay_ms": d})
                    runs.append(res)
    finally:
        for proc, _ in proxies.values():
            proc.kill()
            proc.wait()
    print("\n| puts in flight | one-way delay | msgs/s (median) | vs 0 ms (median of rounds) | put p99 ms | mean batch |")
    print("|---|---|---|---|---|---|")
    summary = []
    for n in inflights:
        for d in delays:
            mine = [x for x in runs if x["inflight"] == n and x["delay_ms"] == d]
            ratios = []
            for x in mine:
                base = [y for y in runs if y["inflight"] == n and y["delay_ms"] == delays[0] and y["round"] == x["round"]]
                ratios.append(x["msgs_per_s"] / base[0]["msgs_per_s"])
            rate = statistics.median(x["msgs_per_s"] for x in mine)
            p99 = statistics.median(x["put_p99_us"] for x in mine) / 1000
            batch = statistics.median(x["batch_messages"] / max(1, x["batches"]) for x in mine)
            ratio = statistics.median(ratios)
            summary.append({"inflight": n, "delay_ms": d, "msgs_per_s": rate, "ratio": ratio,
                            "put_p99_ms": p99, "mean_batch": batch})
            print(f"| {n} | {d:g} ms | {rate:.0f} | {ratio:.2f}x | {p99:.1f} | {batch:.1f} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"runs": runs, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
