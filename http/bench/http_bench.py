#!/usr/bin/env python3
"""Requests per second of inletd's list, message and search endpoints with keep-alive
clients (wrk), two binaries side by side in one run: A (this tree) and B (a reference
build, e.g. main's), alternating A B A B.

Each inletd runs on loopback with its own kernel-chosen ports, pinned to CPU 0; wrk runs
pinned to CPU 1 with one thread and C keep-alive connections for D seconds per round.
Both are filled with the same N messages over SMTP (inlet-load's synthetic 9 KB text
messages), then every endpoint is measured in turn. Every run is bounded: wrk --duration,
the fill by inlet-load --count, the servers stopped by PID.

    http/bench/http_bench.py --a build/bin --b /path/to/main/build/bin \\
        [--messages 2000] [--rounds 3] [--duration 5] [--connections 32] [--json out.json]

Endpoints a binary does not have (search on an old build) are measured for A only.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Server:
    def __init__(self, bin_dir, label):
        self.label = label
        args = ["taskset", "-c", "0", os.path.join(bin_dir, "inletd"), "--smtp", "127.0.0.1:0", "--listen",
                "127.0.0.1:0", "--max-messages", "100000"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.smtp = self.http = None
        end = time.monotonic() + 30
        while time.monotonic() < end and (self.smtp is None or self.http is None):
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"smtp listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.smtp = int(m.group(1))
            m = re.search(r"http listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.http = int(m.group(1))
        if self.smtp is None or self.http is None:
            self.stop()
            raise RuntimeError(f"{label}: inletd did not start")

    def url(self, path):
        return f"http://127.0.0.1:{self.http}{path}"

    def get(self, path):
        with HTTP.open(self.url(path), timeout=30) as r:
            return r.status, r.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def fill(load, server, n):
    subprocess.run(["taskset", "-c", "1", load, "--target", f"127.0.0.1:{server.smtp}", "--count", str(n),
                    "--connections", "4", "--duration", "120", "--quiet"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=180)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        total = json.loads(server.get("/api/v1/messages?limit=1")[1])["total"]
        if total >= n:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{server.label}: only {total} of {n} messages stored")


def wrk(url, duration, connections):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", url],
                         capture_output=True, text=True, timeout=duration + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    return {"rps": rps, "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "p99_ms": float(p99.group(1)) * scale[p99.group(2)] if p99 else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="bin dir of build A (this tree)")
    ap.add_argument("--b", required=True, help="bin dir of build B (the reference)")
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--json")
    a = ap.parse_args()
    load = os.path.join(a.a, "inlet-load")
    servers = {"A": Server(a.a, "A"), "B": Server(a.b, "B")}
    try:
        for s in servers.values():
            fill(load, s, a.messages)
        ids = {k: json.loads(s.get("/api/v1/messages?limit=1")[1])["messages"][0]["ID"] for k, s in servers.items()}
        subject = json.loads(servers["A"].get("/api/v1/messages?limit=1")[1])["messages"][0]["Subject"]
        endpoints = [
            ("list 50", lambda k: "/api/v1/messages?limit=50"),
            ("message", lambda k: f"/api/v1/message/{ids[k]}"),
            ("raw", lambda k: f"/api/v1/message/{ids[k]}/raw"),
            ("search subject", lambda k: "/api/v1/search?query=" + urllib.request.quote(f'subject:"{subject}"')),
            ("search word", lambda k: "/api/v1/search?query=zanzibar&limit=50"),
        ]
        results = {}
        for name, path in endpoints:
            have = {k for k, s in servers.items() if _ok(s, path(k))}
            runs = {k: [] for k in have}
            for _ in range(a.rounds):
                for k in ("A", "B"):
                    if k in have:
                        runs[k].append(wrk(servers[k].url(path(k)), a.duration, a.connections))
            row = {k: {"rps_median": statistics.median(r["rps"] for r in v), "runs": v} for k, v in runs.items()}
            if "A" in row and "B" in row:
                ratios = [x["rps"] / y["rps"] for x, y in zip(runs["A"], runs["B"])]
                row["ratio_median"] = statistics.median(ratios)
                row["ratio_min"], row["ratio_max"] = min(ratios), max(ratios)
            results[name] = row
        print(f"{a.messages} messages, {a.connections} keep-alive connections, {a.rounds} rounds of {a.duration} s, "
              f"inletd on CPU 0, wrk on CPU 1\n")
        print("| endpoint | A req/s | B req/s | A/B median | min | max |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, row in results.items():
            ra = f"{row['A']['rps_median']:,.0f}" if "A" in row else "-"
            rb = f"{row['B']['rps_median']:,.0f}" if "B" in row else "-"
            rr = (f"{row['ratio_median']:.2f} | {row['ratio_min']:.2f} | {row['ratio_max']:.2f}"
                  if "ratio_median" in row else "- | - | -")
            print(f"| {name} | {ra} | {rb} | {rr} |")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"params": vars(a), "results": results}, f, indent=1)
    finally:
        for s in servers.values():
            s.stop()


def _ok(server, path):
    try:
        return server.get(path)[0] == 200
    except Exception:
        return False


if __name__ == "__main__":
    sys.exit(main())
