#!/usr/bin/env python3
"""Probes inletd's HTTP side under three cheap attacks, on loopback, bounded in time.

  heavy   p50/p99 of a small API request alone, then while one client fetches a 30 MB
          raw message over and over.
  lists   N messages with 80,000 addresses in To:, then GET /api/v1/messages?limit=1000:
          answer bytes and inletd's RSS.
  pages   1,000 messages with 100 To: and 100 Cc: addresses of long names (each summary
          ~40 KB of JSON), then GET /api/v1/messages?limit=1000 (an 8 MiB page) five times:
          answer bytes and inletd's RSS peak during the requests, sampled every 2 ms.
  waves   8 waves of 3,000 connections sending half a header then closing; RSS before,
          after each wave (3 s later) and at the end.

usage: hardening_probe.py INLETD [heavy|lists|pages|waves ...]
"""
import os, socket, smtplib, subprocess, sys, tempfile, threading, time, http.client

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0

class Inletd:
    def __init__(self, exe, *extra):
        self.smtp, self.http = free_port(), free_port()
        self.p = subprocess.Popen([exe, "--smtp", f"127.0.0.1:{self.smtp}", "--listen",
                                   f"127.0.0.1:{self.http}", "--max-message-bytes", "40000000",
                                   "--quiet", *extra],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.http), 0.2).close(); return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("inletd did not start")
    def stop(self):
        self.p.terminate()
        try: self.p.wait(10)
        except subprocess.TimeoutExpired: self.p.kill(); self.p.wait()
    def send(self, raw, rcpt="box@example.com"):
        with smtplib.SMTP("127.0.0.1", self.smtp, timeout=60) as s:
            s.sendmail("a@example.org", [rcpt], raw)
    def get(self, path, conn=None):
        c = conn or http.client.HTTPConnection("127.0.0.1", self.http, timeout=60)
        c.request("GET", path, headers={"Host": "localhost"})
        r = c.getresponse(); body = r.read()
        if conn is None: c.close()
        return r.status, body

def pct(v, q):
    v = sorted(v); return v[min(len(v) - 1, int(q * len(v)))]

def latencies(d, n):
    c = http.client.HTTPConnection("127.0.0.1", d.http, timeout=30)
    out = []
    for _ in range(n):
        t = time.perf_counter(); d.get("/api/v1/messages?limit=1", c); out.append((time.perf_counter() - t) * 1000)
    c.close(); return out

def heavy(exe):
    d = Inletd(exe)
    try:
        big = b"Subject: big\r\n\r\n" + (b"x" * 998 + b"\r\n") * 30000  # 30 MB
        d.send(big)
        st, body = d.get("/api/v1/messages?limit=1")
        mid = body.split(b'"ID":"')[1].split(b'"')[0].decode()
        base = latencies(d, 400)
        stop = time.time() + 20; fetched = [0]
        def reader():
            c = http.client.HTTPConnection("127.0.0.1", d.http, timeout=60)
            while time.time() < stop:
                d.get(f"/api/v1/message/{mid}/raw", c); fetched[0] += 1
        t = threading.Thread(target=reader); t.start(); time.sleep(0.5)
        loaded = latencies(d, 400)
        stop = 0; t.join()
        print(f"heavy: alone p50 {pct(base,.5):.2f} ms p99 {pct(base,.99):.2f} ms; "
              f"beside a 30 MB reader ({fetched[0]} fetches) p50 {pct(loaded,.5):.2f} ms "
              f"p99 {pct(loaded,.99):.2f} ms")
    finally:
        d.stop()

def lists(exe, n=20):
    d = Inletd(exe, "--max-store-bytes", str(200 << 20))
    try:
        to = ",\r\n ".join(f"u{i}@example.com" for i in range(80000))  # folded
        raw = f"From: a@example.org\r\nTo: {to}\r\nSubject: list\r\n\r\nbody\r\n".encode()
        before = rss_mb(d.p.pid)
        for _ in range(n): d.send(raw)
        stored = rss_mb(d.p.pid)
        st, body = d.get("/api/v1/messages?limit=1000")
        after = rss_mb(d.p.pid)
        print(f"lists: {n} messages of {len(raw)//1024} KB with 80,000 To: addresses; "
              f"GET limit=1000 -> {st}, {len(body)} bytes; RSS {before:.0f} -> {stored:.0f} "
              f"(stored) -> {after:.0f} MB (after the listing)")
    finally:
        d.stop()

class PeakRss:
    """RSS of a process sampled every 2 ms while the block runs; .peak in MB."""
    def __init__(self, pid): self.pid, self.peak, self.stop = pid, 0.0, False
    def __enter__(self):
        def run():
            while not self.stop:
                self.peak = max(self.peak, rss_mb(self.pid)); time.sleep(0.002)
        self.t = threading.Thread(target=run); self.t.start(); return self
    def __exit__(self, *a):
        self.stop = True; self.t.join()

def pages(exe, n=1000, reps=5):
    d = Inletd(exe, "--max-store-bytes", str(512 << 20))
    try:
        def lst(tag, k):
            return ",\r\n ".join(f'"{tag} {i:03d} ' + "n" * 150 + f'" <{tag}{i}@example.com>'
                                   for i in range(k))
        raw = (f"From: a@example.org\r\nTo: {lst('to', 100)}\r\nCc: {lst('cc', 100)}\r\n"
               "Subject: page\r\n\r\nbody\r\n").encode()
        with smtplib.SMTP("127.0.0.1", d.smtp, timeout=60) as s:
            for _ in range(n): s.sendmail("a@example.org", ["box@example.com"], raw)
        time.sleep(1)
        stored = rss_mb(d.p.pid); sizes = []
        with PeakRss(d.p.pid) as pk:
            for _ in range(reps):
                st, body = d.get("/api/v1/messages?limit=1000"); sizes.append(len(body))
        print(f"pages: {n} messages of {len(raw)//1024} KB (100 To, 100 Cc); GET limit=1000 "
              f"x{reps} -> {st}, {sizes[0]} bytes; RSS {stored:.1f} MB stored, peak "
              f"{pk.peak:.1f} MB during the requests (+{pk.peak - stored:.1f})")
    finally:
        d.stop()

def waves(exe, waves=8, per_wave=3000):
    d = Inletd(exe)
    try:
        time.sleep(1); start = rss_mb(d.p.pid); seen = []
        for w in range(waves):
            socks = []
            for _ in range(per_wave):
                try:
                    s = socket.create_connection(("127.0.0.1", d.http), 5)
                    s.sendall(b"GET /api/v1/messages HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
                    socks.append(s)
                except OSError:
                    break
            peak = rss_mb(d.p.pid)
            for s in socks: s.close()
            time.sleep(3)
            seen.append((len(socks), peak, rss_mb(d.p.pid)))
        print(f"waves: RSS at start {start:.1f} MB; per wave (connections, peak, 3 s after): " +
              ", ".join(f"({n}, {p:.1f}, {a:.1f})" for n, p, a in seen))
    finally:
        d.stop()

if __name__ == "__main__":
    exe = sys.argv[1]
    for what in sys.argv[2:] or ["heavy", "lists", "pages", "waves"]:
        {"heavy": heavy, "lists": lists, "pages": pages, "waves": waves}[what](exe)
