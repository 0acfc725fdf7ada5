"""What the benchmarks that run inletd beside Mailpit share (bench/mailpit, bench/pop3):
a maildir of test messages, starting either server the same way on loopback ports, and
the API's message count. Standard library only; servers are stopped by their callers.
"""
import json
import os
import subprocess
import time
import urllib.request

import harness

HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def make_maildir(root, n, subject, size=9000, stuff_every=0):
    """N messages of about `size` octets in root/new; every stuff_every-th body line
    begins with a dot (0: none), which POP3 and SMTP must stuff."""
    new = os.path.join(root, "new")
    os.makedirs(new)
    line = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod " * 2)[:76]
    body = "\n".join("." + line if stuff_every and i % stuff_every == 0 else line
                     for i in range(size // 77))
    for i in range(n):
        with open(os.path.join(new, f"{i:08d}.eml"), "w") as f:
            f.write(f"From: sender{i % 50}@example.org\nTo: box{i % 200}@example.com\n"
                    f"Subject: {subject} {i}\nMessage-ID: <{i}@bench.example>\n\n{body}\n")


def total(http_port):
    with HTTP.open(f"http://127.0.0.1:{http_port}/api/v1/messages?limit=1", timeout=10) as r:
        return json.loads(r.read())["total"]


def start(kind, binary, n, tmp, extra=(), poll=0.01, timeout=30):
    """inletd (memory store) or Mailpit (an SQLite file in tmp) with room for n messages,
    on free loopback ports plus `extra` arguments; waits until /readyz answers 200,
    polled every `poll` seconds the same way for both. Returns (process, smtp port,
    http port, seconds from spawn to ready)."""
    smtp, http = harness.free_port(), harness.free_port()
    common = ["--smtp", f"127.0.0.1:{smtp}", "--listen", f"127.0.0.1:{http}", *extra]
    if kind == "inletd":
        args = [binary, *common, "--max-messages", str(n + 10),
                "--max-store-bytes", str((n + 10) * 16384), "--max-connections", "1000", "-q"]
    else:
        args = [binary, *common, "-m", str(n + 10), "-d",
                os.path.join(tmp, f"mailpit-{smtp}.db"), "-q", "--disable-version-check"]
    t0 = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            with HTTP.open(f"http://127.0.0.1:{http}/readyz", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() - t0 > timeout or proc.poll() is not None:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"{kind} did not become ready")
        time.sleep(poll)
    return proc, smtp, http, time.monotonic() - t0
