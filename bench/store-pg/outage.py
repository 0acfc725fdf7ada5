#!/usr/bin/env python3
"""Healthy-shard throughput while another shard is down: inletd over three shards (fsync
on), inlet-load sending to mailboxes that live on shards 0 and 1 for a fixed time, once
with every shard up and once while shard 2 is stopped (pg_ctl stop -m immediate, started
again after), rounds alternating. The figure is msgs/s during the outage over msgs/s
before it. A second inletd instance keeps an event stream open throughout and counts
the `new` events, which must match what the store holds (no phantom event for a
refused message).

    bench/store-pg/outage.sh [ROUNDS=3] [SECONDS=8]
Bounded: every load run has a duration and a timeout.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
from inlet_support import Inletd, api, pg_ctl  # noqa: E402


def mailboxes_on(build, shards, wanted, n):
    """n mailbox addresses whose buckets are on the wanted shards (inlet-pg-admin where)."""
    candidates = [f"user{i}@example.com" for i in range(400)]
    out = subprocess.run([os.path.join(build, "bin", "inlet-pg-admin")] +
                         [x for s in shards for x in ("--store", s)] + ["where"] + candidates,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    picked = [line.split()[0] for line in out.splitlines() if int(line.split()[-1]) in wanted]
    return picked[:n]


class NewEvents(threading.Thread):
    """Counts `new` events on an instance's SSE stream."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.count, self.stop = port, 0, False

    def run(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=600) as s:
            s.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            buf = b""
            while not self.stop:
                d = s.recv(65536)
                if not d:
                    return
                buf += d
                end = buf.rfind(b"\n\n")  # only whole events: the rest waits for its end
                if end >= 0:
                    self.count += buf[:end + 2].count(b"event: new\n")
                    buf = buf[end + 2:]


def load(build, port, boxes, seconds):
    out = subprocess.run([os.path.join(build, "bin", "inlet-load"), "--target", f"127.0.0.1:{port}",
                          "-c", "32", "--duration", str(seconds), "--size-mean", "9000", "--to", boxes[0],
                          "--json", "--quiet"],
                         capture_output=True, text=True, timeout=seconds + 120)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--out", default="docs/benchmarks/data/store-pg-outage.json")
    a = ap.parse_args()
    shards = os.environ["INLET_PG_SHARDS"].split()
    store = ["--store", shards[0]] + [x for s in shards[1:] for x in ("--shard", s)]
    writer, watcher = Inletd(os.path.join(a.build, "bin", "inletd"), store), \
        Inletd(os.path.join(a.build, "bin", "inletd"), store)
    writer.start()
    watcher.start()
    boxes = mailboxes_on(a.build, shards, {0, 1}, 1)
    events = NewEvents(watcher.http_port)
    events.start()
    runs = []
    try:
        for r in range(a.rounds):
            for phase in (("up", "outage") if r % 2 == 0 else ("outage", "up")):
                if phase == "outage":
                    assert pg_ctl(2, "stop -m immediate") == 0
                try:
                    res = load(a.build, writer.smtp_port, boxes, a.seconds)
                finally:
                    if phase == "outage":
                        assert pg_ctl(2, "start") == 0
                        time.sleep(2)  # the writers and the listener back
                rate = res["messages_per_s"]
                runs.append({"round": r, "phase": phase, "msgs_per_s": rate, "ok": res["messages_ok"],
                             "failed": res["messages_failed"], "errors": res["errors"]})
                print(f"round {r} {phase:7s} {rate:8.0f} msgs/s  ok {res['messages_ok']}  "
                      f"failed {res['messages_failed']}", flush=True)
        time.sleep(2)
        stored = api(watcher.http_port, "GET", "/api/v1/messages?limit=1")["messages_count"]
    finally:
        events.stop = True
        writer.stop()
        watcher.stop()
    acked = sum(x["ok"] for x in runs)
    ratios = []
    for r in range(a.rounds):
        up = [x for x in runs if x["round"] == r and x["phase"] == "up"][0]
        down = [x for x in runs if x["round"] == r and x["phase"] == "outage"][0]
        ratios.append(down["msgs_per_s"] / up["msgs_per_s"])
    print(f"\n| healthy-shard msgs/s during a one-shard outage / before | {statistics.median(ratios):.2f}x "
          f"(rounds {', '.join(f'{x:.2f}' for x in ratios)}) |")
    # inlet-load counts what was answered before its time was up; the store has those and
    # the last message of each connection: the events must match the store, not the count.
    print(f"acknowledged {acked}, stored {stored}, `new` events on the other instance {events.count}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"runs": runs, "ratios": ratios, "acknowledged": acked,
                       "stored": stored,
                       "new_events_other_instance": events.count}, f, indent=1)


if __name__ == "__main__":
    main()
