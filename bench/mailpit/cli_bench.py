#!/usr/bin/env python3
"""inletd's Mailpit subcommands against real Mailpit's, in one run (A B A B):

  ingest  `inletd ingest DIR` into inletd vs `mailpit ingest DIR` into Mailpit: a maildir of
          N messages of ~9 KB, messages/s (wall time of the ingest command, the server
          counting them all before the clock stops)
  startup spawn to `readyz` answering 200 (inletd readyz --wait vs mailpit readyz --wait)
  sendmail `inletd sendmail -S` vs `mailpit sendmail -S`, one process per message as PHP's
          mail() and cron run it: messages/s over --sendmail-runs runs, each message
          counted by the server before the clock stops

usage: bench/mailpit/cli_bench.py --inletd build/bin/inletd --mailpit PATH [--messages N]
       [--rounds R] [--json OUT]
Servers bind to 127.0.0.1; every run is bounded (each ingest by --timeout seconds).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import catchers  # noqa: E402


def start(kind, binary, n, tmp):
    # Polled every 5 ms, the same for both (each one's own `readyz --wait` polls at its
    # own interval, which would be measured instead).
    proc, smtp, http, ready = catchers.start(kind, binary, n, tmp, poll=0.005)
    # And each one's own readyz agrees.
    rc = subprocess.run([binary, "readyz", "--listen", f"127.0.0.1:{http}"],
                        capture_output=True).returncode
    if rc != 0:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"{kind} readyz says not ready")
    return proc, smtp, http, ready


def ingest(kind, binary, maildir, n, timeout, tmp):
    proc, smtp, http, ready = start(kind, binary, n, tmp)
    try:
        t0 = time.monotonic()
        r = subprocess.run([binary, "ingest", "-S", f"127.0.0.1:{smtp}", maildir],
                           capture_output=True, timeout=timeout)
        end = time.monotonic() + timeout
        while catchers.total(http) < n and time.monotonic() < end:
            time.sleep(0.05)
        secs = time.monotonic() - t0
        got = catchers.total(http)
        if got < n:
            raise RuntimeError(f"{kind}: {got} of {n} stored; ingest said {r.stdout[-300:]!r}")
        return n / secs, ready
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def sendmail(kind, binary, runs, timeout, tmp):
    proc, smtp, http, _ = start(kind, binary, runs, tmp)
    try:
        t0 = time.monotonic()
        for i in range(runs):
            msg = (f"From: app@example.org\nTo: user{i % 20}@example.com\n"
                   f"Subject: sendmail {i}\n\nrun {i}\n").encode()
            r = subprocess.run([binary, "sendmail", "-S", f"127.0.0.1:{smtp}", "-t",
                                f"user{i % 20}@example.com"], input=msg, capture_output=True,
                               timeout=timeout)
            if r.returncode != 0:
                raise RuntimeError(f"{kind} sendmail exited {r.returncode}: {r.stderr[-300:]!r}")
        end = time.monotonic() + timeout
        while catchers.total(http) < runs and time.monotonic() < end:
            time.sleep(0.01)
        secs = time.monotonic() - t0
        if catchers.total(http) < runs:
            raise RuntimeError(f"{kind}: sendmail messages missing")
        return runs / secs
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
    ap.add_argument("--sendmail-runs", type=int, default=500)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inlet-cli-bench.")
    try:
        maildir = os.path.join(tmp, "maildir")
        catchers.make_maildir(maildir, a.messages, "ingest")
        res = {"inletd": [], "mailpit": []}
        for r in range(a.rounds):
            for kind, binary in (("inletd", a.inletd), ("mailpit", a.mailpit)):
                rate, ready = ingest(kind, binary, maildir, a.messages, a.timeout, tmp)
                sm = sendmail(kind, binary, a.sendmail_runs, a.timeout, tmp)
                res[kind].append({"ingest_msgs_per_s": rate, "ready_s": ready,
                                  "sendmail_msgs_per_s": sm})
                print(f"round {r + 1} {kind:8s} ingest {rate:9.0f} msg/s   ready {ready * 1000:7.1f} ms"
                      f"   sendmail {sm:7.1f} msg/s", flush=True)
        ratios = [i["ingest_msgs_per_s"] / m["ingest_msgs_per_s"] for i, m in zip(res["inletd"], res["mailpit"])]
        ready_ratios = [i["ready_s"] / m["ready_s"] for i, m in zip(res["inletd"], res["mailpit"])]
        sm_ratios = [i["sendmail_msgs_per_s"] / m["sendmail_msgs_per_s"]
                     for i, m in zip(res["inletd"], res["mailpit"])]
        print(f"ingest inletd/mailpit: median {statistics.median(ratios):.2f}x "
              f"(rounds {', '.join(f'{x:.2f}' for x in ratios)})")
        print(f"start-up to ready inletd/mailpit: median {statistics.median(ready_ratios):.2f} "
              f"(rounds {', '.join(f'{x:.2f}' for x in ready_ratios)})")
        print(f"sendmail runs inletd/mailpit: median {statistics.median(sm_ratios):.2f}x "
              f"(rounds {', '.join(f'{x:.2f}' for x in sm_ratios)})")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"messages": a.messages, "rounds": res, "ingest_ratio": ratios,
                           "ready_ratio": ready_ratios, "sendmail_ratio": sm_ratios,
                           "sendmail_runs": a.sendmail_runs, "nproc": os.cpu_count()}, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
