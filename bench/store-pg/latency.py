#!/usr/bin/env python3
"""Group commit across a network: the PostgreSQL store's write path (store_pg_bench, a
closed loop of puts) with its shard behind delay_proxy at 0, 1 and 5 ms each way, at 32
and 128 puts in flight, rounds alternating. The figure is each delay's rate over the
0 ms rate at the same concurrency, per round, then the median.

    bench/store-pg/latency.sh [ROUNDS=3] [SECONDS=8] [--baseline OTHER_BUILD]
(runs this under store/test/with-pg-shards.sh 1 with fsync on). Bounded: each run has
its time and a timeout.

Also printed: where a put's time goes (means per copy, from the store's counters: route
and encode, queue, the batch's round trip and commit), and each proxy's own added
latency (a ping-pong through it to an echo server on loopback, minus the delay).
--baseline runs another build's store_pg_bench right after each run of this one, on the
same cluster and proxies (e.g. main's), for a same-run comparison.
--server-time also reads PostgreSQL's own execution time of the batches' statement
(pg_stat_statements, reset before each run; the commit's WAL flush is not in it), which
needs the module preloaded:
    INLET_PG_OPTS="-c shared_preload_libraries=pg_stat_statements" \
      bench/store-pg/latency.sh 3 6 --server-time
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse


def start_proxy(build, target, delay_ms):
    p = subprocess.Popen([os.path.join(build, "bin", "delay_proxy"), "--target", target,
                          "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline())
    return p, port


def echo_server():
    """A loopback echo server (one thread per connection) for the proxy check."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def serve(c):
        with c:
            while True:
                b = c.recv(64)
                if not b:
                    return
                c.sendall(b)

    def accept():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return srv


def proxy_overhead(build, delays, pings=200):
    """Median and p99 of a 1-byte ping-pong through delay_proxy, minus 2 x the delay (ms)."""
    srv = echo_server()
    out = {}
    try:
        for d in delays:
            proc, port = start_proxy(build, f"127.0.0.1:{srv.getsockname()[1]}", d)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    rtts = []
                    for _ in range(pings):
                        t0 = time.perf_counter()
                        c.sendall(b"x")
                        if c.recv(1) != b"x":
                            raise SystemExit("delay_proxy check: echo lost")
                        rtts.append((time.perf_counter() - t0) * 1000 - 2 * d)
                rtts.sort()
                out[d] = {"median_ms": statistics.median(rtts), "p99_ms": rtts[int(len(rtts) * 0.99) - 1]}
            finally:
                proc.kill()
                proc.wait()
    finally:
        srv.close()
    return out


def psql(dsn, sql):
    r = subprocess.run(["psql", dsn, "-qAtX", "-c", sql], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise SystemExit(f"psql failed: {r.stderr.strip()}")
    return r.stdout.strip()


def server_exec_ms(dsn):
    """Mean execution time of mail.put_v2 since the last reset (ms), from pg_stat_statements."""
    out = psql(dsn, "SELECT coalesce(sum(total_exec_time) / nullif(sum(calls), 0), 0) "
                    "FROM pg_stat_statements WHERE query LIKE '%mail.put_v2(%'")
    return float(out or 0)


def run_bench(build, dsn, pgdata, seconds, inflight, label, out, extra=()):
    cmd = [os.path.join(build, "bin", "store_pg_bench"), "--store", dsn, "--pgdata", pgdata,
           "--seconds", str(seconds), "--inflight", str(inflight), "--fresh", "--json", out,
           "--label", label, *extra]
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
    ap.add_argument("--baseline", help="another build dir: its store_pg_bench runs right after each run")
    ap.add_argument("--bench-arg", action="append", default=[], help="passed to store_pg_bench (repeat)")
    ap.add_argument("--server-time", action="store_true",
                    help="read put_v2's execution time from pg_stat_statements (preloaded)")
    a = ap.parse_args()
    dsn = os.environ["INLET_PG_SHARDS"].split()[0]
    pgdata = os.environ["INLET_PG_SHARD0_DATA"]
    u = urllib.parse.urlsplit(dsn)
    target = f"{u.hostname}:{u.port}"
    delays = [float(d) for d in a.delays.split(",")]
    inflights = [int(n) for n in a.inflight.split(",")]
    overhead = proxy_overhead(a.build, delays)
    for d, o in overhead.items():
        print(f"delay_proxy {d:g} ms: ping-pong minus 2 x {d:g} ms: median {o['median_ms']:.3f} ms, "
              f"p99 {o['p99_ms']:.3f} ms")
    if a.server_time:
        psql(dsn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    builds = [("branch", a.build)] + ([("baseline", a.baseline)] if a.baseline else [])
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
                    # With a baseline, which build goes first alternates too.
                    for name, build in (builds if r % 2 == 0 else list(reversed(builds))):
                        if a.server_time:
                            psql(dsn, "SELECT pg_stat_statements_reset()")
                        with tempfile.NamedTemporaryFile("r", suffix=".json") as tmp:
                            run_bench(build, proxies[d][1], pgdata, a.seconds, n,
                                      f"{name}-d{d:g}ms-c{n}", tmp.name,
                                      a.bench_arg if name == "branch" else ())
                            res = json.loads(tmp.read().strip().splitlines()[-1])
                        res.update({"round": r, "delay_ms": d, "build": name})
                        if a.server_time:
                            res["server_exec_ms"] = server_exec_ms(dsn)
                        runs.append(res)
    finally:
        for proc, _ in proxies.values():
            proc.kill()
            proc.wait()
    summary = []
    for name, _ in builds:
        print(f"\n{name}:\n")
        print("| puts in flight | one-way delay | msgs/s (median) | vs 0 ms (median of rounds) | put p50 ms "
              "| put p99 ms | mean batch | put mean ms = queue + round trip and commit + rest "
              "| batch's statement on the server ms |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n in inflights:
            for d in delays:
                mine = [x for x in runs if x["build"] == name and x["inflight"] == n and x["delay_ms"] == d]
                ratios = []
                for x in mine:
                    base = [y for y in runs if y["build"] == name and y["inflight"] == n
                            and y["delay_ms"] == delays[0] and y["round"] == x["round"]]
                    ratios.append(x["msgs_per_s"] / base[0]["msgs_per_s"])
                med = lambda k, scale=1.0: statistics.median(x.get(k, 0) for x in mine) / scale
                rate = med("msgs_per_s")
                batch = statistics.median(x["batch_messages"] / max(1, x["batches"]) for x in mine)
                ratio = statistics.median(ratios)
                row = {"build": name, "inflight": n, "delay_ms": d, "msgs_per_s": rate, "ratio": ratio,
                       "put_p50_ms": med("put_p50_us", 1000), "put_p99_ms": med("put_p99_us", 1000),
                       "mean_batch": batch}
                parts = ""
                if mine and "put_mean_us" in mine[0]:
                    row.update({"put_mean_ms": med("put_mean_us", 1000), "queue_ms": med("queue_ms"),
                                "commit_ms": med("commit_ms")})
                    rest = row["put_mean_ms"] - row["queue_ms"] - row["commit_ms"]
                    parts = (f"{row['put_mean_ms']:.1f} = {row['queue_ms']:.1f} + {row['commit_ms']:.1f} "
                             f"+ {rest:.1f}")
                server = ""
                if mine and "server_exec_ms" in mine[0]:
                    row["server_exec_ms"] = med("server_exec_ms")
                    server = f"{row['server_exec_ms']:.2f}"
                summary.append(row)
                print(f"| {n} | {d:g} ms | {rate:.0f} | {ratio:.2f}x | {row['put_p50_ms']:.1f} "
                      f"| {row['put_p99_ms']:.1f} | {batch:.1f} | {parts} | {server} |")
    if a.baseline:
        print("\nbranch / baseline (median of the rounds' ratios):\n")
        print("| puts in flight | one-way delay | branch / baseline |")
        print("|---|---|---|")
        for n in inflights:
            for d in delays:
                ratios = []
                for r in range(a.rounds):
                    pick = lambda b: [x for x in runs if x["build"] == b and x["inflight"] == n
                                      and x["delay_ms"] == d and x["round"] == r][0]["msgs_per_s"]
                    ratios.append(pick("branch") / pick("baseline"))
                print(f"| {n} | {d:g} ms | {statistics.median(ratios):.2f}x |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"runs": runs, "summary": summary,
                       "proxy_overhead": {f"{d:g}": o for d, o in overhead.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
