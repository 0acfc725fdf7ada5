#!/usr/bin/env python3
"""No acknowledged message is lost, none is stored twice: inletd with the file store
(--database on a temporary file) under load from SENDERS smtplib clients, killed with
SIGKILL and started again on the same file, twice; then tags and read flags set through
the HTTP API survive a restart.

    python3 store/test/file_durability.py --inletd build/bin/inletd --seconds 10

Each sender keeps an SMTP session open and sends numbered messages (a unique token in
the subject), logging every token acknowledged with 250 and every one refused or lost
with its connection. At the end inletd is started once more and every message is read
through the HTTP API: each acknowledged token must be there exactly once; an
unacknowledged one may be there (its commit made it, the reply did not) but never
twice. Prints the counts as JSON and exits 1 on any loss or double. Bounded: --seconds
of load, --max-messages per sender, every wait capped.
"""
import argparse
import json
import os
import shutil
import smtplib
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

DEADLINE = 60.0
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with HTTP.open(req, timeout=30) as r:
        text = r.read().decode()
        return json.loads(text) if text.startswith(("{", "[")) else text


class Inletd:
    def __init__(self, binary, database, extra):
        self.binary, self.database, self.extra = binary, database, extra
        self.smtp_port, self.http_port = free_port(), free_port()
        self.proc = None

    def start(self):
        args = [self.binary, "--smtp", f"127.0.0.1:{self.smtp_port}", "--listen",
                f"127.0.0.1:{self.http_port}", "--database", self.database, "--max", "0",
                "--quiet"] + self.extra
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            line = self.proc.stdout.readline()
            if not line:
                break
            if "smtp listening" in line:
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # drain
                return
        raise RuntimeError("inletd did not start: " + (self.proc.stdout.read() or ""))

    def kill9(self):
        self.proc.kill()  # SIGKILL, this process only
        self.proc.wait(timeout=DEADLINE)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=DEADLINE)


class Sender(threading.Thread):
    """One SMTP client: numbered messages, every outcome logged."""

    def __init__(self, n, inletd, run_id, stop, limit):
        super().__init__(daemon=True)
        self.n, self.inletd, self.run_id, self.stop_flag, self.limit = n, inletd, run_id, stop, limit
        self.acked, self.refused, self.lost = [], [], []

    def run(self):
        smtp = None
        for i in range(self.limit):
            if self.stop_flag.is_set():
                break
            token = f"{self.run_id}-{self.n}-{i}"
            rcpt = [f"box{(self.n + i) % 8}@example.com"]
            body = (f"Subject: {token}\r\nFrom: load@example.org\r\nTo: {rcpt[0]}\r\n\r\n" +
                    ("durable " * 9 + "\r\n") * 120).encode()  # ~9 KB in 74-byte lines
            try:
                if smtp is None:
                    smtp = smtplib.SMTP("127.0.0.1", self.inletd.smtp_port, timeout=30)
                refused = smtp.sendmail("load@example.org", rcpt, body)
                (self.refused if refused else self.acked).append(token)
            except (smtplib.SMTPResponseException, smtplib.SMTPRecipientsRefused):
                self.refused.append(token)
            except (OSError, smtplib.SMTPException):
                self.lost.append(token)  # the connection went away before the reply
                try:
                    if smtp is not None:
                        smtp.close()
                except Exception:
                    pass
                smtp = None
                time.sleep(0.05)
        if smtp is not None:
            try:
                smtp.quit()
            except Exception:
                pass


def all_messages(port):
    out, start = [], 0
    while True:
        page = api(port, "GET", f"/api/v1/messages?start={start}&limit=1000")
        out += page["messages"]
        start += len(page["messages"])
        if not page["messages"] or start >= page["messages_count"]:
            return out, page


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--seconds", type=float, default=10, help="load duration (two kills spread over it)")
    ap.add_argument("--senders", type=int, default=16)
    ap.add_argument("--max-messages", type=int, default=2000, help="per sender")
    ap.add_argument("--json", help="write the counts here")
    ap.add_argument("--extra", default="", help="more inletd flags (e.g. '--disable-wal')")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inlet-file-durability-")
    try:
        return run(a, os.path.join(tmp, "mail.db"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(a, database):
    d = Inletd(a.inletd, database, a.extra.split())
    d.start()
    run_id = f"r{int(time.time())}"
    stop = threading.Event()
    senders = [Sender(n, d, run_id, stop, a.max_messages) for n in range(a.senders)]
    for s in senders:
        s.start()
    faults = []
    step = a.seconds / 3
    for _ in range(2):
        time.sleep(step)
        faults.append(("kill -9 inletd", sum(len(s.acked) for s in senders)))
        d.kill9()
        d.start()  # same ports: the senders reconnect
    time.sleep(step)
    stop.set()
    for s in senders:
        s.join(timeout=DEADLINE)
    d.kill9()

    acked = [t for s in senders for t in s.acked]
    refused = [t for s in senders for t in s.refused]
    lost = [t for s in senders for t in s.lost]
    d.start()
    try:
        messages, page = all_messages(d.http_port)
        present = {}
        for m in messages:
            if m["Subject"].startswith(run_id + "-"):
                present[m["Subject"]] = present.get(m["Subject"], 0) + 1
        missing = [t for t in acked if present.get(t, 0) == 0]
        doubled = [t for t, n in present.items() if n > 1]
        unacked_present = [t for t in refused + lost if present.get(t, 0) > 0]

        # Tags and read flags set through the API survive a restart.
        ids = [m["ID"] for m in messages[:10]]
        api(d.http_port, "PUT", "/api/v1/tags", {"IDs": ids[:5], "Tags": ["Kept", "durable tag"]})
        api(d.http_port, "PUT", "/api/v1/messages", {"IDs": ids[3:8], "Read": True})
        before = {m["ID"]: (m["Read"], sorted(m["Tags"])) for m in all_messages(d.http_port)[0]
                  if m["ID"] in ids}
        d.stop()
        d.start()
        after = {m["ID"]: (m["Read"], sorted(m["Tags"])) for m in all_messages(d.http_port)[0]
                 if m["ID"] in ids}
        tags_after = api(d.http_port, "GET", "/api/v1/tags")
    finally:
        d.stop()
    flags_kept = (before == after and all(after[i][1] == ["Kept", "durable tag"] for i in ids[:5])
                  and all(after[i][0] for i in ids[3:8]) and not after[ids[9]][0])
    result = {
        "sent": len(acked) + len(refused) + len(lost),
        "acknowledged": len(acked),
        "refused": len(refused),
        "connection_lost": len(lost),
        "present": len(present),
        "acknowledged_missing": len(missing),
        "present_twice_or_more": len(doubled),
        "unacknowledged_but_present": len(unacked_present),
        "tags_and_read_flags_kept": flags_kept,
        "tags_after_restart": tags_after,
        "faults": [{"fault": f, "acknowledged_before": n} for f, n in faults],
    }
    print(json.dumps(result, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    if missing:
        print("LOST:", missing[:20], file=sys.stderr)
    if doubled:
        print("DOUBLED:", doubled[:20], file=sys.stderr)
    ok = not missing and not doubled and len(acked) > 0 and flags_kept and \
        all(n > 0 for _, n in faults)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
