#!/usr/bin/env python3
"""inletd --database end to end: files it must refuse (exit 2, one line why, the file
left byte for byte as it was), and a database real Mailpit wrote, opened by inletd with
every message, ID, tag, read flag and date as Mailpit served them.

    python3 store/test/file_e2e_test.py --inletd build/bin/inletd [--mailpit PATH]

The Mailpit case needs Mailpit's binary (`go install github.com/axllent/mailpit@v1.33.1`
puts it in ~/go/bin); without one it is skipped, and says so.
"""
import argparse
import datetime
import json
import os
import shutil
import smtplib
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
from email.message import EmailMessage

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
import inlet_support as support  # noqa: E402
from inlet_support import DEADLINE, api, free_port, wait_http  # noqa: E402

INLETD = None
MAILPIT = None


class Server:
    """inletd or Mailpit on free 127.0.0.1 ports."""

    def __init__(self, argv):
        self.smtp_port, self.http_port = free_port(), free_port()
        self.proc = subprocess.Popen(argv + ["--smtp", f"127.0.0.1:{self.smtp_port}", "--listen",
                                             f"127.0.0.1:{self.http_port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http(self.http_port, self.proc, "/api/v1/messages?limit=1")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=DEADLINE)


def all_messages(port):
    return support.all_messages(port)[0]


def when(text):
    """An API date (RFC 3339, any fraction) as milliseconds since the epoch."""
    text = text.replace("Z", "+00:00")
    main, _, rest = text.partition(".")
    frac, zone = "", ""
    if rest:
        i = next((k for k, c in enumerate(rest) if c in "+-"), len(rest))
        frac, zone = rest[:i], rest[i:]
    elif "+" in main[10:] or "-" in main[10:]:
        i = max(main.rfind("+"), main.rfind("-"))
        main, zone = main[:i], main[i:]
    t = datetime.datetime.fromisoformat(main + (zone or "+00:00"))
    return int(t.timestamp()) * 1000 + int((frac + "000")[:3])


def slurp(path):
    with open(path, "rb") as f:
        return f.read()


class RefusedFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="inlet-file-e2e-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def refused(self, path, words):
        before = slurp(path)
        r = subprocess.run([INLETD, "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--database",
                            path], capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(path, r.stderr)
        self.assertIn(words, r.stderr)
        self.assertEqual(slurp(path), before, "the refused file changed")
        self.assertFalse(os.path.exists(path + "-wal"))

    def test_not_sqlite(self):
        path = os.path.join(self.dir, "notes.txt")
        with open(path, "w") as f:
            f.write("these are notes, not a database\n" * 100)
        self.refused(path, "not a SQLite database")

    def test_truncated_and_damaged(self):
        path = os.path.join(self.dir, "mail.db")
        srv = Server([INLETD, "--database", path, "--compression", "0", "--disable-wal"])
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                for i in range(30):
                    s.sendmail("a@example.org", ["b@example.com"],
                               (f"Subject: m{i}\r\n\r\n" + ("x" * 70 + "\r\n") * 70).encode())
        finally:
            srv.stop()
        full = slurp(path)
        with open(path, "wb") as f:
            f.write(full[: len(full) // 2])
        self.refused(path, "truncated")
        damaged = bytearray(full)
        for i in range(4096, 4 * 4096):
            damaged[i] = (i * 131 ^ 0x5A) & 0xFF
        with open(path, "wb") as f:
            f.write(damaged)
        self.refused(path, "damaged")

    def test_another_applications_database(self):
        path = os.path.join(self.dir, "app.db")
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL)")
        db.execute("INSERT INTO invoices(total) VALUES (12.5)")
        db.commit()
        db.close()
        self.refused(path, "invoices")


class MailpitDatabase(unittest.TestCase):
    def test_inletd_serves_what_mailpit_stored(self):
        if not MAILPIT:
            self.skipTest("no Mailpit binary (go install github.com/axllent/mailpit@v1.33.1)")
        tmp = tempfile.mkdtemp(prefix="inlet-mailpit-db-")
        try:
            self.run_with(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def run_with(self, tmp):
        path = os.path.join(tmp, "mailpit.db")
        mp = Server([MAILPIT, "--database", path, "--disable-version-check", "--quiet"])
        try:
            with smtplib.SMTP("127.0.0.1", mp.smtp_port, timeout=DEADLINE) as s:
                for i in range(12):
                    m = EmailMessage()
                    m["From"] = f"Sender {i} <sender{i}@example.org>"
                    m["To"] = f"rcpt{i % 3}@example.com"
                    if i % 4 == 0:
                        m["Cc"] = "Carol <carol@example.net>"
                    m["Subject"] = f"Mailpit message {i} \u00e4pfel"
                    m["Date"] = f"Mon, {i + 1:02d} Jun 2025 10:00:00 +0000"
                    m["Message-ID"] = f"<m{i}@example.org>"
                    m.set_content(f"Body {i} of a message Mailpit stored.\n" * 20)
                    if i % 5 == 0:
                        m.add_attachment(b"%PDF-1.4 fake" * 100, maintype="application",
                                         subtype="pdf", filename=f"file{i}.pdf")
                    s.send_message(m)
                    time.sleep(0.01)  # distinct received times
            end = time.monotonic() + DEADLINE
            while len(all_messages(mp.http_port)) < 12 and time.monotonic() < end:
                time.sleep(0.1)
            msgs = all_messages(mp.http_port)
            self.assertEqual(len(msgs), 12)
            ids = [m["ID"] for m in msgs]
            api(mp.http_port, "PUT", "/api/v1/tags", {"IDs": ids[:4], "Tags": ["Important", "from mailpit"]})
            api(mp.http_port, "PUT", "/api/v1/tags", {"IDs": ids[6:7], "Tags": ["Other"]})
            api(mp.http_port, "PUT", "/api/v1/messages", {"IDs": ids[2:8], "Read": True})
            want = {m["ID"]: m for m in all_messages(mp.http_port)}
            want_tags = api(mp.http_port, "GET", "/api/v1/tags")
        finally:
            mp.stop()

        srv = Server([INLETD, "--database", path, "--max", "0"])
        try:
            got = {m["ID"]: m for m in all_messages(srv.http_port)}
            self.assertEqual(sorted(got), sorted(want))
            self.assertEqual(list(got), list(want))  # the same order, newest first
            for i, w in want.items():
                g = got[i]
                with self.subTest(id=i, subject=w["Subject"]):
                    self.assertEqual(g["Subject"], w["Subject"])
                    self.assertEqual(g["Read"], w["Read"])
                    self.assertEqual(sorted(g["Tags"]), sorted(w["Tags"]))
                    self.assertEqual(when(g["Created"]), when(w["Created"]))
                    self.assertEqual(g["Size"], w["Size"])
                    self.assertEqual(g["From"]["Address"], w["From"]["Address"])
                    self.assertEqual([a["Address"] for a in g["To"]], [a["Address"] for a in w["To"]])
                    self.assertEqual(g["Attachments"], w["Attachments"])
                    self.assertEqual(g["MessageID"], w["MessageID"])
                    raw = api(srv.http_port, "GET", f"/api/v1/message/{i}/raw")
                    self.assertIn(w["Subject"].split()[2], raw)
            self.assertEqual(sorted(api(srv.http_port, "GET", "/api/v1/tags")), sorted(want_tags))
            search = api(srv.http_port, "GET", "/api/v1/search?query=tag:important%20is:read")
            self.assertEqual(search["messages_count"],
                             sum(1 for w in want.values() if "Important" in w["Tags"] and w["Read"]))
            # A new message goes on top of the imported ones; the import is not repeated.
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("a@example.org", ["b@example.com"], b"Subject: after\r\n\r\nnew\r\n")
        finally:
            srv.stop()
        srv = Server([INLETD, "--database", path, "--max", "0"])
        try:
            msgs = all_messages(srv.http_port)
            self.assertEqual(len(msgs), 13)
            self.assertEqual(msgs[0]["Subject"], "after")
        finally:
            srv.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--mailpit", default="")
    args, rest = ap.parse_known_args()
    INLETD = os.path.abspath(args.inletd)
    MAILPIT = args.mailpit or shutil.which("mailpit") or ""
    if not MAILPIT and os.path.exists(os.path.expanduser("~/go/bin/mailpit")):
        MAILPIT = os.path.expanduser("~/go/bin/mailpit")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
