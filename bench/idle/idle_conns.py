#!/usr/bin/env python3
"""Idle SMTP connections: RSS growth per connection of a server (bounded, loopback only).

Starts inletd itself (BIN_DIR/inletd, --store memory, 127.0.0.1, ephemeral ports) or measures
a running server given --port and --pid. Opens N connections spread over source addresses
127.0.0.2.., reads the greeting, sends EHLO, reads the full reply, then holds every connection
idle for --hold seconds (--tls: EHLO, STARTTLS, the TLS handshake, EHLO again over TLS, then
idle). Samples VmRSS of the server from /proc/PID/status before the first
connect, after all are open (after the hold), and reports (after - before) / N.
Every step is bounded: socket timeouts, --hold, and the server is stopped (SIGTERM, by PID).
usage: bench/idle/idle_conns.py [--bin-dir build/bin] [-n 10000] [--hold 5] [--io-model coro] [--tls]
"""
import argparse
import json
import os
import re
import resource
import signal
import socket
import ssl
import subprocess
import tempfile
import sys
import time


def vm(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return None


def read_reply(s):
    buf = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
        lines = buf.split(b"\r\n")
        if len(lines) >= 2 and re.match(rb"^\d{3} ", lines[-2]):
            return buf


def start_inletd(a):
    cmd = [os.path.join(a.bin_dir, "inletd"), "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
           "--store", "memory", "--max-connections", str(a.n + 100),
           "--max-connections-per-ip", str(a.n + 100), "--max-connections-per-subnet", "0",
           # what is measured is an idle connection's memory, not admission: no slot pressure
           "--pressure-at", "0", "--io-model", a.io_model] + a.inletd_args.split()
    if a.tls:
        cmd += ["--tls-cert", a.cert, "--tls-key", a.key]
    if a.cpu:
        cmd = ["taskset", "-c", a.cpu] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         start_new_session=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        m = re.search(r"smtp listening on 127\.0\.0\.1:(\d+)", line or "")
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
    p.kill()
    sys.exit("inletd did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default="build/bin")
    ap.add_argument("-n", type=int, default=10000, help="connections")
    ap.add_argument("--hold", type=float, default=5.0, help="seconds to hold them idle")
    ap.add_argument("--sources", type=int, default=8, help="source addresses 127.0.0.2..")
    ap.add_argument("--io-model", default="coro")
    ap.add_argument("--inletd-args", default="")
    ap.add_argument("--cpu", default="", help="taskset CPU list for inletd")
    ap.add_argument("--port", type=int, help="measure a running server instead")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--tls", action="store_true", help="hold connections idle after STARTTLS and EHLO")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.port and not a.pid:
        ap.error("--port needs --pid (the server process to sample)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, a.n + 256)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    proc = None
    tls_ctx = None
    if a.tls:
        tmp = tempfile.mkdtemp(prefix="inlet-idle-tls-")
        a.cert, a.key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", a.key, "-out", a.cert, "-days", "1", "-subj", "/CN=localhost"],
                       check=True, capture_output=True, timeout=30)
        tls_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        tls_ctx.check_hostname = False
        tls_ctx.verify_mode = ssl.CERT_NONE  # a throwaway self-signed certificate
    if a.port:
        port, pid = a.port, a.pid
    else:
        proc, port = start_inletd(a)
        pid = proc.pid
    socks, failed = [], 0
    try:
        time.sleep(0.5)
        rss0 = vm(pid, "VmRSS")
        t0 = time.monotonic()
        for i in range(a.n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(10)
            try:
                s.bind((f"127.0.0.{2 + i % a.sources}", 0))
                s.connect(("127.0.0.1", port))
                read_reply(s)
                s.sendall(b"EHLO idle.inlet.test\r\n")
                read_reply(s)
                if tls_ctx:
                    s.sendall(b"STARTTLS\r\n")
                    read_reply(s)
                    s = tls_ctx.wrap_socket(s)
                    s.sendall(b"EHLO idle.inlet.test\r\n")
                    read_reply(s)
                socks.append(s)
            except (OSError, ConnectionError):
                failed += 1
                s.close()
        open_s = time.monotonic() - t0
        rss_open = vm(pid, "VmRSS")
        time.sleep(a.hold)
        rss1 = vm(pid, "VmRSS")
        alive = 0
        for s in socks:  # still open? (a server timeout would have closed them)
            s.setblocking(False)
            try:
                alive += 0 if s.recv(1, socket.MSG_PEEK) == b"" else 1
            except (BlockingIOError, ssl.SSLWantReadError):
                alive += 1
            except ValueError:  # an SSL socket refuses MSG_PEEK: ask the kernel socket instead
                alive += 1 if s.fileno() >= 0 else 0
            except OSError:
                pass
        out = {"connections_requested": a.n, "connections_open": len(socks), "failed": failed,
               "alive_after_hold": alive, "open_seconds": round(open_s, 3), "hold_seconds": a.hold,
               "io_model": a.io_model, "tls": a.tls, "server_cpu": a.cpu or None, "rss_before_bytes": rss0,
               "rss_all_open_bytes": rss_open, "rss_after_hold_bytes": rss1,
               "rss_growth_per_conn_bytes": round((rss1 - rss0) / len(socks), 1) if socks else None,
               }
        with open(f"/proc/{pid}/status") as f:
            out["threads_after_hold"] = int(next(l for l in f if l.startswith("Threads:")).split()[1])
    finally:
        for s in socks:
            s.close()
        if proc:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
    print(json.dumps(out))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
