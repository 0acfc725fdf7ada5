#!/usr/bin/env python3
"""The file store's figures in one run, as ratios (docs/benchmarks/store-file.md).

1. Throughput: inletd with the memory store, inletd --database (file store) and Mailpit
   1.33.1 --database, in alternating order each round, under Postfix's smtp-source (50
   sessions, 9 KB, reused connections). Per run: messages/s and server CPU per message;
   after each run the store is counted through the API (every acknowledged message must
   be there: smtp-source fails on any non-250).
2. Bytes on disk per 9 KB message at each --compression level (0-3), inletd's file vs
   Mailpit's, the same messages (text with some variety, an attachment in every fifth),
   the files measured after a clean stop.
3. Over N stored messages (default 100,000; smtp-source fills them): server CPU ms per
   request for a listing (50 newest), a search that matches nothing (every message
   scanned), a search on a header field, and opening one message; memory store, file
   store and Mailpit.

    python3 bench/store-file/run.py --inletd build/bin/inletd --mailpit ~/go/bin/mailpit \
        [--rounds 3] [--messages 5000] [--stored 100000] [--json out.json]

Bounded: every client run has a message count and a timeout; servers are children
stopped by their own PID.
"""
import argparse
import json
import os
import random
import shutil
import smtplib
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "common"))
import harness  # noqa: E402

HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))
SIZE = 9 * 1024


def api(port, path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with HTTP.open(req, timeout=120) as r:
        return json.loads(r.read().decode())


def wait_api(port, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            return api(port, "/api/v1/messages?limit=1")
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("no API on port %d" % port)


def start(kind, a, tmp, extra=()):
    """inletd (memory or file store) or Mailpit, on free ports; returns (server, http_port)."""
    smtp, http = harness.free_port(), harness.free_port()
    db = os.path.join(tmp, f"{kind}.db")
    if kind == "mailpit":
        cmd = [a.mailpit, "--smtp", f"127.0.0.1:{smtp}", "--listen", f"127.0.0.1:{http}",
               "--database", db, "--max", "0", "--disable-version-check", "--quiet"]
    else:
        cmd = [a.inletd, "--smtp", f"127.0.0.1:{smtp}", "--listen", f"127.0.0.1:{http}",
               "--max", "0", "--max-store-bytes", str(8 << 30), "--quiet"]
        if kind == "file":
            cmd += ["--database", db]
    s = harness.Server(kind, list(cmd) + list(extra), smtp)
    if not s.ok:
        s.stop()
        raise RuntimeError(kind + " did not start")
    wait_api(http)
    s.db = db
    return s, http


def throughput(a, tmp):
    kinds = ["memory", "file"] + (["mailpit"] if a.mailpit else [])
    runs = {k: [] for k in kinds}
    for r in range(a.rounds):
        order = kinds if r % 2 == 0 else list(reversed(kinds))
        for k in order:
            d = tempfile.mkdtemp(dir=tmp)
            s, http = start(k, a, d)
            try:
                res = harness.measure(s, lambda: harness.smtp_source(s.port, 50, a.messages, SIZE,
                                                                     a.timeout))
                res["stored"] = api(http, "/api/v1/messages?limit=1")["total"]
            finally:
                s.stop()
                shutil.rmtree(d, ignore_errors=True)
            res["kind"], res["round"] = k, r
            runs[k].append(res)
            print(f"  round {r} {k:8s} {res['msgs_per_s']:8.0f} msg/s  "
                  f"{res['server_cpu_us_per_msg'] or 0:7.0f} us CPU/msg  stored {res['stored']}/"
                  f"{res['messages']}", flush=True)
    out = {}
    for k in kinds:
        med, lo, hi = harness.median_spread([x["msgs_per_s"] for x in runs[k]])
        cpu, _, _ = harness.median_spread([x["server_cpu_us_per_msg"] for x in runs[k]])
        out[k] = {"msgs_per_s_median": med, "min": lo, "max": hi, "server_cpu_us_per_msg": cpu,
                  "every_ack_stored": all(x["stored"] == x["messages"] == a.messages for x in runs[k])}
    # Ratios per round (same round, alternating order), then their median.
    def ratio(x, y):
        rs = [p["msgs_per_s"] / q["msgs_per_s"] for p, q in zip(runs[x], runs[y]) if q["msgs_per_s"]]
        return harness.median_spread(rs)
    out["file_vs_memory"] = ratio("file", "memory")
    if a.mailpit:
        out["file_vs_mailpit"] = ratio("file", "mailpit")
    return out, runs


WORDS = ("invoice order shipment delivery account payment customer support ticket update "
         "report meeting schedule project release build test deploy server database message "
         "quarterly review budget forecast team contract renewal service status incident").split()


def realistic(i, rnd):
    """A ~9 KB message: varied text lines; every fifth with a base64 attachment."""
    lines = []
    while sum(len(x) for x in lines) < (6 * 1024 if i % 5 == 0 else SIZE - 600):
        lines.append(" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(6, 11))) + f" {rnd.randint(1, 99999)}")
    body = "\r\n".join(lines)
    head = (f"From: Sender {i % 37} <sender{i % 37}@example.org>\r\nTo: rcpt{i % 11}@example.com\r\n"
            f"Subject: {rnd.choice(WORDS)} {rnd.choice(WORDS)} #{i}\r\nMessage-ID: <m{i}@bench>\r\n"
            "Date: Mon, 1 Jun 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n")
    if i % 5:
        return (head + "Content-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n").encode()
    att = "".join(rnd.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                  for _ in range(2400))
    att = "\r\n".join(att[k:k + 76] for k in range(0, len(att), 76))
    return (head + 'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\n'
            "Content-Type: text/plain\r\n\r\n" + body + "\r\n--b\r\nContent-Type: application/octet-stream\r\n"
            'Content-Disposition: attachment; filename="data.bin"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
            + att + "\r\n--b--\r\n").encode()


def send_all(port, msgs, threads=8):
    def worker(part):
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as s:
            for m in part:
                s.sendmail("load@example.org", ["rcpt@example.com"], m)
    ts = [threading.Thread(target=worker, args=(msgs[k::threads],)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=600)


def disk_bytes(db):
    return sum(os.path.getsize(db + sfx) for sfx in ("", "-wal", "-shm", "-journal")
               if os.path.exists(db + sfx))


def sizes(a, tmp):
    rnd = random.Random(7)
    msgs = [realistic(i, rnd) for i in range(a.size_messages)]
    raw = sum(len(m) for m in msgs) / len(msgs)
    out = {"raw_bytes_per_msg": raw}
    for level in range(4):
        for k in ["file"] + (["mailpit"] if a.mailpit else []):
            d = tempfile.mkdtemp(dir=tmp)
            s, http = start(k, a, d, ["--compression", str(level)])
            try:
                send_all(s.port, msgs)
                end = time.monotonic() + 120
                while api(http, "/api/v1/messages?limit=1")["total"] < len(msgs) and time.monotonic() < end:
                    time.sleep(0.2)
                stored = api(http, "/api/v1/messages?limit=1")["total"]
            finally:
                s.stop()
            per = disk_bytes(s.db) / len(msgs)
            out[f"{k}_level{level}"] = {"bytes_per_msg": per, "stored": stored}
            print(f"  compression {level} {k:8s} {per:8.0f} bytes/msg on disk (raw {raw:.0f})", flush=True)
            shutil.rmtree(d, ignore_errors=True)
        if a.mailpit:
            out[f"ratio_level{level}"] = out[f"file_level{level}"]["bytes_per_msg"] / \
                out[f"mailpit_level{level}"]["bytes_per_msg"]
    return out


def reads(a, tmp):
    kinds = ["memory", "file"] + (["mailpit"] if a.mailpit else [])
    out = {}
    for k in kinds:
        d = tempfile.mkdtemp(dir=tmp)
        s, http = start(k, a, d)
        try:
            fill = harness.smtp_source(s.port, 20, a.stored, SIZE, a.timeout * 20)
            end = time.monotonic() + 300
            while api(http, "/api/v1/messages?limit=1")["total"] < a.stored and time.monotonic() < end:
                time.sleep(0.5)
            total = api(http, "/api/v1/messages?limit=1")["total"]
            some = api(http, "/api/v1/messages?start=%d&limit=1" % (total // 2))["messages"][0]["ID"]
            res = {"stored": total, "fill_msgs_per_s": fill["messages"] / fill["seconds"] if fill["seconds"] else 0}
            cases = [("list_50", "/api/v1/messages?limit=50", a.requests),
                     ("search_no_match", "/api/v1/search?query=" + urllib.parse.quote("zzneedlezz") + "&limit=50",
                      max(3, a.requests // 20)),
                     ("search_from", "/api/v1/search?query=" + urllib.parse.quote("from:load@inlet.test") + "&limit=50",
                      max(3, a.requests // 20)),
                     ("open_one", f"/api/v1/message/{some}", a.requests)]
            for name, path, n in cases:
                api(http, path)  # warm (the memory store builds its search parts once)
                t0 = s.ticks()[0]
                w0 = time.monotonic()
                for _ in range(n):
                    api(http, path)
                wall = time.monotonic() - w0
                cpu = (s.ticks()[0] - t0) / harness.CLK_TCK
                res[name] = {"cpu_ms_per_request": 1000 * cpu / n, "wall_ms_per_request": 1000 * wall / n,
                             "requests": n}
                print(f"  {k:8s} {name:16s} {1000 * cpu / n:9.2f} ms CPU/request "
                      f"({1000 * wall / n:.2f} ms wall) over {total} messages", flush=True)
        finally:
            s.stop()
            shutil.rmtree(d, ignore_errors=True)
        out[k] = res
    for name in ("list_50", "search_no_match", "search_from", "open_one"):
        for ref in [r for r in ("memory", "mailpit") if r in out]:
            base = out[ref][name]["cpu_ms_per_request"]
            out[f"{name}_file_vs_{ref}"] = out["file"][name]["cpu_ms_per_request"] / base if base else None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--mailpit", default="")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=5000, help="per throughput run")
    ap.add_argument("--size-messages", type=int, default=1000)
    ap.add_argument("--stored", type=int, default=100000, help="messages for the read figures")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: throughput,sizes,reads")
    ap.add_argument("--json")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    tmp = tempfile.mkdtemp(prefix="inlet-bench-store-file-")
    result = {"machine": harness.machine(), "args": vars(a)}
    try:
        if "throughput" not in skip:
            print("throughput (smtp-source, 50 sessions, 9 KB):", flush=True)
            result["throughput"], result["throughput_runs"] = throughput(a, tmp)
        if "sizes" not in skip:
            print("bytes on disk per message:", flush=True)
            result["sizes"] = sizes(a, tmp)
        if "reads" not in skip:
            print(f"reads over {a.stored} messages:", flush=True)
            result["reads"] = reads(a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {k: v for k, v in result.items() if k not in ("throughput_runs", "machine", "args")}
    print(json.dumps(summary, indent=1))
    if a.json:
        result["args"]["mailpit"] = "mailpit" if a.mailpit else ""
        result["args"]["inletd"] = "inletd"
        harness.write_json(a.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
