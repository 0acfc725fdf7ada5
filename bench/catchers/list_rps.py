#!/usr/bin/env python3
"""Requests/s of MailHog's v2 list and MailDev's lists vs inletd's own /api/v1/messages,
over the same stored messages, in the same run (rounds alternate the paths A B C A B C).

    bench/catchers/list_rps.py --inletd build/bin/inletd [--messages 10000] [--rounds 3]
        [--seconds 3] [--clients 4] [--json out.json]

Each client is a process with one keep-alive connection (http.client), so the client
side costs the same per request whatever the path; the figure is the ratio of each path to
/api/v1/messages in the same round (median and range over the rounds). Both sides share
this machine's cores: read the ratios, not the absolute numbers. Everything is bounded:
the fill by --messages, each measurement by --seconds.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import re
import smtplib
import statistics
import subprocess
import sys
import threading
import time

PATHS = {
    "mailpit /api/v1/messages": "/api/v1/messages?limit=50",
    "mailhog /api/v2/messages": "/api/v2/messages?limit=50",
    "maildev /api/email/summary": "/api/email/summary?limit=50",
    "maildev /api/email?limit=50": "/api/email?limit=50&sort=desc",
}


def client(port, path, seconds, out):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit(f"{path}: HTTP {r.status}")
        n += 1
    out.put(n)


def measure(port, path, seconds, clients):
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=client, args=(port, path, seconds, q))
             for _ in range(clients)]
    t0 = time.monotonic()
    for p in procs:
        p.start()
    total = sum(q.get(timeout=seconds + 60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    return total / (time.monotonic() - t0)


def fill(port, n):
    line = ("word " * 15)[:74]
    body = "\r\n".join([line] * 115)  # ~9 KB messages, as the other benchmarks
    with smtplib.SMTP("127.0.0.1", port, timeout=60) as s:
        for i in range(n):
            msg = (f"From: Sender {i} <s{i}@sender.example>\r\nTo: r{i % 50}@inbox.example\r\n"
                   f"Subject: message {i}\r\nContent-Type: text/plain\r\n\r\n{body}\r\n")
            s.sendmail(f"s{i}@sender.example", [f"r{i % 50}@inbox.example"], msg.encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--messages", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--json")
    a = ap.parse_args()
    proc = subprocess.Popen([a.inletd, "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                             "--max-messages", str(a.messages + 10), "--max-connections", "200"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        smtp = web = None
        while smtp is None or web is None:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("inletd did not start")
            m = re.search(r"smtp listening on 127\.0\.0\.1:(\d+)", line)
            smtp = int(m.group(1)) if m else smtp
            m = re.search(r"http listening on 127\.0\.0\.1:(\d+)", line)
            web = int(m.group(1)) if m else web
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
        fill(smtp, a.messages)
        rates = {k: [] for k in PATHS}
        for _ in range(a.rounds):
            for name, path in PATHS.items():
                rates[name].append(measure(web, path, a.seconds, a.clients))
        base = rates["mailpit /api/v1/messages"]
        result = {"messages": a.messages, "rounds": a.rounds, "seconds": a.seconds,
                  "clients": a.clients, "load": os.getloadavg(), "paths": {}}
        print(f"{a.messages} messages, {a.rounds} rounds x {a.seconds}s, {a.clients} clients, "
              f"load {os.getloadavg()[0]:.1f}")
        print(f"{'path':32} {'req/s (median)':>15} {'ratio median':>13} {'ratio range':>14}")
        for name in PATHS:
            ratios = [r / b for r, b in zip(rates[name], base)]
            result["paths"][name] = {"rps": rates[name], "ratios": ratios}
            print(f"{name:32} {statistics.median(rates[name]):15.0f} "
                  f"{statistics.median(ratios):13.2f} {min(ratios):6.2f}-{max(ratios):.2f}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
