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

Two figures per path, since the answers differ in what they hold:
- requests/s, the issue's figure; a MailHog or MailDev message is the whole message
  (MailHog's twice its raw size), a Mailpit one a summary, so the answers are 20-40 times
  larger;
- messages/s (requests/s x messages per answer): MailDev's `/email` without a limit, as
  its 2.x helpers (cypress-maildev) call it, answers every message (inletd: at most
  --max-limit), so a per-request ratio against a 50-message page says little.
"Newest page" paths ask the same first page each time: after the first request inletd
answers from its render cache (every message is immutable). "Spread" paths walk the pages
of all messages, each client from its own offset, so the cache (64 MiB, smaller than
10,000 rendered messages) misses: that is the cost of rendering.
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

# name: (path, baseline). A path with {start} walks pages (start = 0, 50, 100, ...).
PATHS = {
    "mailpit /api/v1/messages": ("/api/v1/messages?limit=50", None),
    "mailhog /api/v2/messages": ("/api/v2/messages?limit=50", "mailpit /api/v1/messages"),
    "maildev /api/email/summary": ("/api/email/summary?limit=50", "mailpit /api/v1/messages"),
    "maildev /api/email?limit=50": ("/api/email?limit=50&sort=desc", "mailpit /api/v1/messages"),
    "maildev /email (every message)": ("/email", "mailpit /api/v1/messages"),
    "mailpit spread": ("/api/v1/messages?limit=50&start={start}", None),
    "mailhog v2 spread": ("/api/v2/messages?limit=50&start={start}", "mailpit spread"),
    "maildev /api/email spread": ("/api/email?limit=50&sort=desc&skip={start}", "mailpit spread"),
}


def client(port, path, seconds, out, index, pages):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    n = 0
    end = time.monotonic() + seconds
    page = index * pages // 4
    while time.monotonic() < end:
        conn.request("GET", path.format(start=(page % pages) * 50))
        page += 1
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit(f"{path}: HTTP {r.status}")
        n += 1
    out.put(n)


def items(port, path):
    """Messages in one answer of `path` (its first page)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path.format(start=0))
    r = conn.getresponse()
    body = json.loads(r.read())
    if isinstance(body, list):
        return len(body), None
    for key in ("messages", "items"):
        if key in body:
            return len(body[key]), None
    raise SystemExit(f"{path}: no list in the answer")


def measure(port, path, seconds, clients, pages):
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=client, args=(port, path, seconds, q, i, pages))
             for i in range(clients)]
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
        pages = max(1, a.messages // 50)
        per_answer = {k: items(web, p)[0] for k, (p, _) in PATHS.items()}
        rates = {k: [] for k in PATHS}
        for _ in range(a.rounds):
            for name, (path, _) in PATHS.items():
                rates[name].append(measure(web, path, a.seconds, a.clients, pages))
        result = {"messages": a.messages, "rounds": a.rounds, "seconds": a.seconds,
                  "clients": a.clients, "load": os.getloadavg(), "paths": {}}
        print(f"{a.messages} messages, {a.rounds} rounds x {a.seconds}s, {a.clients} clients, "
              f"load {os.getloadavg()[0]:.1f}")
        print(f"{'path':32} {'msgs/answer':>11} {'req/s':>8} {'req ratio':>10} "
              f"{'range':>11} {'msg/s':>9} {'msg ratio':>10}")
        for name, (path, base_name) in PATHS.items():
            base = rates[base_name or name]
            n = per_answer[name]
            nb = per_answer[base_name or name]
            ratios = [r / b for r, b in zip(rates[name], base)]
            msg_ratios = [r * n / (b * nb) for r, b in zip(rates[name], base)]
            result["paths"][name] = {"path": path, "baseline": base_name or name,
                                     "messages_per_answer": n, "rps": rates[name],
                                     "ratios": ratios, "message_ratios": msg_ratios}
            print(f"{name:32} {n:11d} {statistics.median(rates[name]):8.0f} "
                  f"{statistics.median(ratios):10.3f} {min(ratios):5.2f}-{max(ratios):<5.2f} "
                  f"{statistics.median(rates[name]) * n:9.0f} {statistics.median(msg_ratios):10.3f}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
