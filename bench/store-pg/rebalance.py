#!/usr/bin/env python3
"""Bucket moves while inletd runs, over four shards (fsync on); a cluster of three set up
first, the fourth added empty, as an operator adds a shard.

1. Rebalance time of empty buckets (1024 buckets: 256 move to the new shard), side by
   side: `inlet-pg-admin rebalance` (buckets between two shards in groups of 32, one
   transaction per step per group, one set of connections), `rebalance --group 1` (one
   bucket per step), and one `inlet-pg-admin move BUCKET SHARD` process per bucket (new
   connections and a transaction per step for every bucket: how a rebalance ran before).
   Between the runs the buckets go back to where they were.
2. Put latency during a rebalance under load: SMTP senders (smtplib, one connection each,
   ~9 KB messages, a third with a second recipient) for --seconds, then
   `inlet-pg-admin rebalance` under the same load, then a few seconds more. The figure is
   the p99 of messages sent while the rebalance ran over the p99 of those sent before it.
   A reader polls the global listing throughout: its `messages_count` must never drop
   (nothing is deleted), and no read may fail.
3. What noting changes costs the write path when nothing moves: store_pg_bench (128 puts
   in flight) with migration 3's triggers and index, and with both dropped.

    bench/store-pg/rebalance.sh [SECONDS=10]
Bounded: every phase has a duration, every process a timeout.
"""
import argparse
import json
import os
import smtplib
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
from inlet_support import Inletd, api, http_get  # noqa: E402


def admin(build, shards, *args, timeout=600):
    cmd = [os.path.join(build, "bin", "inlet-pg-admin")] + [x for s in shards for x in ("--store", s)] + \
        [str(a) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True).stdout


def planned(build, shards):
    """The moves a rebalance would make: (bucket, target shard)."""
    out = admin(build, shards, "rebalance", "--dry-run")
    moves = []
    for line in out.splitlines():
        if line.startswith("move "):
            p = line.split()
            moves.append((int(p[1]), int(p[-1])))
    return moves


def timed(fn):
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def move_back(build, shards, moves):
    # A fresh cluster of three puts bucket b on shard b % 3.
    for b, _ in moves:
        admin(build, shards, "move", b, b % 3)


class TimedSender(threading.Thread):
    def __init__(self, n, port, stop):
        super().__init__(daemon=True)
        self.n, self.port, self.stop = n, port, stop
        self.samples = []  # (start, seconds)
        self.failed = 0

    def run(self):
        smtp = None
        i = 0
        body_tail = ("moving " * 10 + "\r\n") * 120
        while not self.stop.is_set() and i < 1_000_000:
            i += 1
            rcpt = [f"user{(i * 37 + self.n) % 1000}@example.com"]
            if i % 3 == 0:
                rcpt.append(f"other{(i + self.n) % 500}@example.com")
            body = (f"Subject: m-{self.n}-{i}\r\nFrom: load@example.org\r\nTo: {rcpt[0]}\r\n\r\n" +
                    body_tail).encode()
            t0 = time.monotonic()
            try:
                if smtp is None:
                    smtp = smtplib.SMTP("127.0.0.1", self.port, timeout=30)
                if smtp.sendmail("load@example.org", rcpt, body):
                    self.failed += 1
                else:
                    self.samples.append((t0, time.monotonic() - t0))
            except (OSError, smtplib.SMTPException):
                self.failed += 1
                smtp = None
                time.sleep(0.05)
        if smtp is not None:
            try:
                smtp.quit()
            except Exception:
                pass


class Reader(threading.Thread):
    """Polls the global listing: failures, and drops of its total."""

    def __init__(self, port, stop, acked):
        super().__init__(daemon=True)
        self.port, self.stop, self.acked = port, stop, acked
        self.reads, self.failed, self.drops, self.last, self.worst_drop = 0, 0, 0, 0, 0
        self.below, self.above = 0, 0

    def run(self):
        i = 0
        while not self.stop.is_set() and i < 1_000_000:
            i += 1
            low = self.acked()
            status, body = http_get(self.port, "/api/v1/messages?limit=5", timeout=10)
            high = self.acked() + 64  # senders in flight, and the last message of each
            if status != 200:
                self.failed += 1
                continue
            total = json.loads(body)["messages_count"]
            self.reads += 1
            self.below += total < low
            self.above += total > high
            if total < self.last:
                self.drops += 1
                self.worst_drop = max(self.worst_drop, self.last - total)
            self.last = max(self.last, total)
            time.sleep(0.01)


def rereads(port):
    for line in http_get(port, "/metrics")[1].splitlines():
        if line.startswith("inlet_pg_list_rereads_total "):
            return int(float(line.split()[1]))
    return None


def write_bench(build, dsn, pgdata, seconds, fresh):
    out = "/tmp/inlet-rebalance-write-bench.json"
    cmd = [os.path.join(build, "bin", "store_pg_bench"), "--store", dsn, "--pgdata", pgdata,
           "--seconds", str(seconds), "--inflight", "128", "--json", out, "--label", "write"]
    if fresh:
        cmd.append("--fresh")
    subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 10 + 120, check=True)
    with open(out) as f:
        res = json.loads(f.read().strip().splitlines()[-1])
    os.remove(out)
    return res


def p99(xs):
    xs = sorted(xs)
    return xs[int(0.99 * (len(xs) - 1))] if xs else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--senders", type=int, default=16)
    ap.add_argument("--write-rounds", type=int, default=2)
    ap.add_argument("--write-seconds", type=float, default=6)
    ap.add_argument("--out", default="docs/benchmarks/data/store-pg-rebalance.json")
    a = ap.parse_args()
    shards = os.environ["INLET_PG_SHARDS"].split()
    inletd = os.path.join(a.build, "bin", "inletd")
    three = Inletd(inletd, ["--store", shards[0]] + [x for s in shards[1:3] for x in ("--shard", s)])
    three.start()
    three.stop()
    four = Inletd(inletd, ["--store", shards[0]] + [x for s in shards[1:] for x in ("--shard", s)])
    four.start()
    result = {}
    try:
        end = time.monotonic() + 60
        while http_get(four.http_port, "/readyz")[0] != 200 and time.monotonic() < end:
            time.sleep(0.1)

        # 1. Empty buckets.
        moves = planned(a.build, shards)
        n = len(moves)
        batched = timed(lambda: admin(a.build, shards, "rebalance"))
        back1 = timed(lambda: move_back(a.build, shards, moves))
        single = timed(lambda: admin(a.build, shards, "rebalance", "--group", "1"))
        back2 = timed(lambda: move_back(a.build, shards, moves))
        result["empty"] = {"buckets": n, "rebalance_s": batched, "rebalance_group1_s": single,
                           "move_per_process_s": [back1, back2]}
        print(f"| {n} empty buckets | rebalance (groups of 32) {batched:.2f} s "
              f"({1000 * batched / n:.1f} ms/bucket) | --group 1 {single:.2f} s "
              f"({1000 * single / n:.1f} ms/bucket) | one `move` process per bucket "
              f"{back1:.2f} / {back2:.2f} s ({1000 * back1 / n:.1f} ms/bucket) |", flush=True)

        # 2. Under load.
        stop = threading.Event()
        senders = [TimedSender(i, four.smtp_port, stop) for i in range(a.senders)]
        reader = Reader(four.http_port, stop, lambda: sum(len(s.samples) for s in senders))
        for s in senders:
            s.start()
        reader.start()
        time.sleep(a.seconds)
        t0 = time.monotonic()
        out = admin(a.build, shards, "rebalance")
        t1 = time.monotonic()
        time.sleep(3)
        stop.set()
        for s in senders:
            s.join(timeout=60)
        reader.join(timeout=60)
        samples = [x for s in senders for x in s.samples]
        warm = min(x[0] for x in samples) + 2.0
        before = [d for (t, d) in samples if warm <= t and t + d < t0]
        during = [d for (t, d) in samples if t0 <= t < t1 or (t < t0 < t + d)]
        pb, pd = p99(before), p99(during)
        summary = out.strip().splitlines()[-1]
        stored = api(four.http_port, "GET", "/api/v1/messages?limit=1")["messages_count"]
        acked = len(samples)
        result["under_load"] = {
            "rebalance_s": t1 - t0, "admin": summary, "put_p99_before_ms": 1000 * pb,
            "put_p99_during_ms": 1000 * pd, "ratio": pd / pb if pb else None,
            "max_during_ms": 1000 * max(during) if during else None,
            "puts_before": len(before), "puts_during": len(during),
            "failed_puts": sum(s.failed for s in senders), "reads": reader.reads,
            "failed_reads": reader.failed, "total_drops": reader.drops,
            "worst_drop": reader.worst_drop, "below_acknowledged": reader.below,
            "above_acknowledged": reader.above, "acknowledged": acked, "stored": stored,
            "list_rereads": rereads(four.http_port)}
        print(f"rebalance under load: {t1 - t0:.2f} s ({summary})")
        print(f"| put p99 during a rebalance / before | {pd / pb:.2f}x ({1000 * pd:.1f} ms / "
              f"{1000 * pb:.1f} ms; {len(during)} / {len(before)} puts; max during "
              f"{1000 * max(during) if during else 0:.1f} ms) |")
        print(f"reads {reader.reads}, failed {reader.failed}, total drops {reader.drops}, below the "
              f"acknowledged {reader.below}, above {reader.above}, listings read again "
              f"{result['under_load']['list_rereads']}; "
              f"failed puts {result['under_load']['failed_puts']}; acknowledged {acked}, stored {stored}")
    finally:
        four.stop()

    # 3. What noting costs the write path when nothing moves: the statement triggers of
    # migration 3 (a probe of mail.copying per statement) and its index on primary_bucket,
    # against the same schema with both dropped. store_pg_bench on one shard, rounds
    # alternating; each run after a 1 s warm-up on a fresh schema.
    dsn, pgdata = shards[3], os.environ["INLET_PG_SHARD3_DATA"]
    psql = os.path.join(os.environ.get("INLET_PG_BIN", "/usr/lib/postgresql/15/bin"), "psql")
    runs = []
    for r in range(a.write_rounds):
        for variant in (("with", "without") if r % 2 == 0 else ("without", "with")):
            write_bench(a.build, dsn, pgdata, 1, fresh=True)
            if variant == "without":
                subprocess.run([psql, dsn, "-q", "-v", "ON_ERROR_STOP=1", "-c",
                                "DROP TRIGGER message_moving_insert ON mail.message; "
                                "DROP TRIGGER message_moving_update ON mail.message; "
                                "DROP TRIGGER message_moving_delete ON mail.message; "
                                "DROP INDEX mail.message_primary_bucket"],
                               check=True, timeout=120, capture_output=True)
            res = write_bench(a.build, dsn, pgdata, a.write_seconds, fresh=False)
            res["variant"], res["round"] = variant, r
            runs.append(res)
            print(f"write path {variant:7s} noting: {res['msgs_per_s']:8.0f} msgs/s  p99 "
                  f"{res['put_p99_us'] / 1000:.1f} ms  server CPU "
                  f"{1e6 * res['server_cpu_s'] / max(res['messages'], 1):.0f} us/msg", flush=True)
    ratios = []
    for r in range(a.write_rounds):
        w = [x for x in runs if x["round"] == r and x["variant"] == "with"][0]
        wo = [x for x in runs if x["round"] == r and x["variant"] == "without"][0]
        ratios.append(w["msgs_per_s"] / wo["msgs_per_s"])
    if ratios:
        print(f"| write path with migration 3's triggers and index / without | "
              f"{statistics.median(ratios):.2f}x (rounds {', '.join(f'{x:.2f}' for x in ratios)}) |")
    result["write_path"] = {"runs": runs, "ratios": ratios}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
