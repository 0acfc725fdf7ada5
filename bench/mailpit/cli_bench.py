#!/usr/bin/env python3
"""inletd's Mailpit subcommands against real Mailpit's, in one run (A B A B):

  ingest  `inletd ingest DIR` into inletd vs `mailpit ingest DIR` into Mailpit: a maildir of
          N messages of ~9 KB, messages/s (wall time of the ingest command, the server
          counting them all before the clock stops)
  startup spawn to `readyz` answering 200 (inletd readyz --wait vs mailpit readyz --wait)

usage: bench/mailpit/cli_bench.py --inletd build/bin/inletd --mailpit PATH [--messages N]
       [--rounds R] [--json OUT]
Servers bind to 127.0.0.1; every run is bounded (each ingest by --timeout seconds).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_maildir(root, n, size=9000):
    new = os.path.join(root, "new")
    os.makedirs(new)
    line = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod " * 2)[:76]
    body = "\n".join([line] * (size // 77))
    for i in range(n):
        with open(os.path.join(new, f"{i:08d}.eml"), "w") as f:
            f.write(f"From: sender{i % 50}@example.org\nTo: box{i % 200}@example.com\n"
                    f"Subject: ingest {i}\nMessage-ID: <{i}@bench.example>\n\n{body}\n")


def total(http_port):
    with HTTP.open(f"http://127.0.0.1:{http_port}/api/v1/messages?limit=1", timeout=10) as r:
        return json.loads(r.read())["total"]


def start(kind, binary, n, tmp):
    smtp, http = free_port(), free_port()
    if kind == "inletd":
        args = [binary, "--smtp", f"127.0.0.1:{smtp}", "--listen", f"127.0.0.1:{http}",
                "--max-messages", str(n + 10), "--max-store-bytes", str((n + 10) * 16384),
                "--max-connections", "1000", "-q"]
    else:
        args = [binary, "--smtp", f"127.0.0.1:{smtp}", "--listen", f"127.0.0.1:{http}",
                "-m", str(n + 10), "-d", os.path.join(tmp, f"mailpit-{smtp}.db"), "-q",
                "--disable-version-check"]
    t0 = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Polled every 5 ms by the harness, the same for both (each one's own `readyz --wait`
    # polls at its own interval, which would be measured instead).
    while True:
        try:
            with HTTP.open(f"http://127.0.0.1:{http}/readyz", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() - t0 > 30:
            proc.kill()
            raise RuntimeError(f"{kind} did not become ready")
        time.sleep(0.005)
    ready = time.monotonic() - t0
    # And each one's own readyz agrees.
    rc = subprocess.run([binary, "readyz", "--listen", f"127.0.0.1:{http}"], capture_output=True).returncode
    if rc != 0:
        proc.kill()
        raise RuntimeError(f"{kind} readyz says not ready")
    return proc, smtp, http, ready


def ingest(kind, binary, maildir, n, timeout, tmp):
    proc, smtp, http, ready = start(kind, binary, n, tmp)
    try:
        t0 = time.monotonic()
        r = subprocess.run([binary, "ingest", "-S", f"127.0.0.1:{smtp}", maildir],
                           capture_output=True, timeout=timeout)
        end = time.monotonic() + timeout
        while total(http) < n and time.monotonic() < end:
            time.sleep(0.05)
        secs = time.monotonic() - t0
        got = total(http)
        if got < n:
            raise RuntimeError(f"{kind}: {got} of {n} stored; ingest said {r.stdout[-300:]!r}")
        return n / secs, ready
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--mailpit", required=True)
    ap.add_argument("--messages", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inlet-cli-bench.")
    try:
        maildir = os.path.join(tmp, "maildir")
        make_maildir(maildir, a.messages)
        res = {"inletd": [], "mailpit": []}
        for r in range(a.rounds):
            for kind, binary in (("inletd", a.inletd), ("mailpit", a.mailpit)):
                rate, ready = ingest(kind, binary, maildir, a.messages, a.timeout, tmp)
                res[kind].append({"ingest_msgs_per_s": rate, "ready_s": ready})
                print(f"round {r + 1} {kind:8s} ingest {rate:9.0f} msg/s   ready {ready * 1000:7.1f} ms",
                      flush=True)
        ratios = [i["ingest_msgs_per_s"] / m["ingest_msgs_per_s"] for i, m in zip(res["inletd"], res["mailpit"])]
        ready_ratios = [i["ready_s"] / m["ready_s"] for i, m in zip(res["inletd"], res["mailpit"])]
        print(f"ingest inletd/mailpit: median {statistics.median(ratios):.2f}x "
              f"(rounds {', '.join(f'{x:.2f}' for x in ratios)})")
        print(f"start-up to ready inletd/mailpit: median {statistics.median(ready_ratios):.2f} "
              f"(rounds {', '.join(f'{x:.2f}' for x in ready_ratios)})")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"messages": a.messages, "rounds": res, "ingest_ratio": ratios,
                           "ready_ratio": ready_ratios, "nproc": os.cpu_count()}, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
