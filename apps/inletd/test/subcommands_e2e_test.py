#!/usr/bin/env python3
"""Mailpit's subcommands driven as their users drive them: PHP's sendmail_path
(`sendmail -t -i < message`, and a binary named `sendmail`), a HEALTHCHECK loop with
`readyz --wait`, `dump` of a running server then `ingest` of the folder into a second one
with the same bytes back (also `dump --database` of a stopped server's file), `reindex`
of a file whose derived columns were cleared, `version`."""
import argparse
import hashlib
import json
import sqlite3
import urllib.parse
import urllib.request
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402
from e2e_test import DEADLINE, Inletd, wait_for  # noqa: E402


def run(*args, stdin=None, argv0=None):
    cmd = [argv0 or e2e_test.INLETD, *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=DEADLINE)


class Subcommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inlet-subcommands.")
        cls.srv = Inletd()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_version(self):
        r = run("version")
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"inletd", r.stdout)

    def test_php_sendmail_t_takes_recipients_from_the_headers_and_drops_bcc(self):
        msg = (b"From: Shop <shop@example.org>\nTo: Ann <ann@example.com>\n"
               b"Cc: cc@example.com\nBcc: audit@example.com\nSubject: order 1042\n\n"
               b"Thank you.\n.leading dot\n")
        r = run("sendmail", "-t", "-i", "-f", "shop@example.org", "-S",
                f"127.0.0.1:{self.srv.smtp_port}", stdin=msg)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = wait_for(lambda: self.srv.find("order 1042"), "the message listed")
        self.assertEqual([a["Address"] for a in m["Bcc"]], ["audit@example.com"])
        raw = self.srv.raw(m["ID"])
        self.assertNotIn(b"Bcc:", raw)
        self.assertIn(b"\r\n.leading dot\r\n", raw)  # dot-stuffing undone by the server
        env = self.srv.get_json(f"/api/v1/message/{m['ID']}")
        self.assertEqual(env["From"]["Address"], "shop@example.org")

    def test_a_binary_named_sendmail_is_the_subcommand(self):
        link = os.path.join(self.tmp, "sendmail")
        os.symlink(e2e_test.INLETD, link)
        r = run("-S", f"127.0.0.1:{self.srv.smtp_port}", "bob@example.com",
                stdin=b"Subject: named sendmail\n\nbody\n", argv0=link)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = wait_for(lambda: self.srv.find("named sendmail"), "the message listed")
        self.assertEqual([a["Address"] for a in m["Bcc"]], ["bob@example.com"])  # envelope only

    def test_sendmail_bs_speaks_smtp_on_stdin(self):
        script = (b"EHLO php\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<c@example.com>\r\nDATA\r\n"
                  b"Subject: bs mode\r\n\r\nx\r\n.\r\nQUIT\r\n")
        r = run("sendmail", "-bs", "-S", f"127.0.0.1:{self.srv.smtp_port}", stdin=script)
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"250 2.0.0", r.stdout)
        wait_for(lambda: self.srv.find("bs mode"), "the message listed")

    def test_readyz_as_a_healthcheck(self):
        self.assertEqual(run("readyz", "--listen", f"127.0.0.1:{self.srv.http_port}").returncode, 0)
        down = run("readyz", "--listen", "127.0.0.1:1", "--wait", "--timeout", "1s")
        self.assertEqual(down.returncode, 1)
        # --wait rides out a server that starts after it.
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            smtp_port = s.getsockname()[1]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            http_port = s.getsockname()[1]
        waiter = subprocess.Popen([e2e_test.INLETD, "readyz", "--listen", f"127.0.0.1:{http_port}",
                                   "--wait", "--timeout", "20s"])
        time.sleep(0.5)
        late = subprocess.Popen([e2e_test.INLETD, "--smtp", f"127.0.0.1:{smtp_port}", "--listen",
                                 f"127.0.0.1:{http_port}", "--max-connections", "100"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.assertEqual(waiter.wait(timeout=DEADLINE), 0)
        finally:
            late.terminate()
            late.wait(timeout=DEADLINE)

    def test_dump_then_ingest_gives_the_same_bytes(self):
        for i in range(3):
            msg = f"From: d@example.org\nTo: e{i}@example.com\nSubject: dump {i}\n\nbody {i}\n"
            self.assertEqual(run("sendmail", "-S", f"127.0.0.1:{self.srv.smtp_port}", "-t",
                                 stdin=msg.encode()).returncode, 0)
        for i in range(3):
            wait_for(lambda i=i: self.srv.find(f"dump {i}"), "dumped message listed")
        out = os.path.join(self.tmp, "dump")
        r = run("dump", "--http", f"http://127.0.0.1:{self.srv.http_port}/", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        files = sorted(os.listdir(out))
        self.assertGreaterEqual(len(files), 3)
        second = Inletd()
        try:
            r = run("ingest", "-S", f"127.0.0.1:{second.smtp_port}", out)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            want = {hashlib.sha256(open(os.path.join(out, f), "rb").read()).hexdigest() for f in files}
            def got():
                msgs = second.messages()["messages"]
                return len(msgs) == len(files) and {
                    hashlib.sha256(second.raw(m["ID"])).hexdigest() for m in msgs}
            self.assertEqual(wait_for(got, "every dumped message ingested"), want)
        finally:
            second.stop()

    def send(self, srv, subject, body, to="r@example.com"):
        msg = f"From: d@example.org\nTo: {to}\nSubject: {subject}\n\n{body}\n"
        r = run("sendmail", "-S", f"127.0.0.1:{srv.smtp_port}", "-t", stdin=msg.encode())
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_dump_database_then_ingest_gives_the_same_bytes(self):
        db = os.path.join(self.tmp, "dump.db")
        first = Inletd("--database", db)
        try:
            for i in range(3):
                self.send(first, f"file dump {i}", f"body {i}\n" + ("x" * 70 + "\n") * (i * 40))
            wait_for(lambda: len(first.messages()["messages"]) == 3, "three messages stored")
            ids = {m["ID"] for m in first.messages()["messages"]}
            want = {hashlib.sha256(first.raw(i)).hexdigest() for i in ids}
        finally:
            self.assertEqual(first.stop(), 0)
        # No server runs on the file now: dump reads it in place.
        out = os.path.join(self.tmp, "dump-db")
        before = open(db, "rb").read()
        r = run("dump", "--database", db, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(open(db, "rb").read(), before, "dump wrote to the database")
        self.assertEqual(sorted(os.listdir(out)), sorted(i + ".eml" for i in ids))
        second = Inletd()
        try:
            r = run("ingest", "-S", f"127.0.0.1:{second.smtp_port}", out)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            def got():
                msgs = second.messages()["messages"]
                return len(msgs) == 3 and {
                    hashlib.sha256(second.raw(m["ID"])).hexdigest() for m in msgs}
            self.assertEqual(wait_for(got, "every dumped message ingested"), want)
        finally:
            second.stop()
        # A file that is not a database: a clear error, non-zero.
        junk = os.path.join(self.tmp, "junk.db")
        with open(junk, "wb") as f:
            f.write(b"not sqlite" * 100)
        r = run("dump", "--database", junk, os.path.join(self.tmp, "dump-junk"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"junk.db", r.stderr)

    def test_reindex_rebuilds_search_and_keeps_tags_and_read_state(self):
        db = os.path.join(self.tmp, "reindex.db")
        words = ["aubergine", "brioche", "cardamom"]
        def put(srv, path, body):
            req = urllib.request.Request(srv.url(path), data=json.dumps(body).encode(),
                                         method="PUT",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=DEADLINE) as r:
                self.assertEqual(r.status, 200)
        def search(srv, q):
            return srv.get_json("/api/v1/search?query=" + urllib.parse.quote(q))["messages"]
        def state(srv):
            return {m["ID"]: (m["Subject"], m["Read"], sorted(m["Tags"]), m["Size"])
                    for m in srv.messages()["messages"]}
        srv = Inletd("--database", db)
        try:
            for i, w in enumerate(words):
                self.send(srv, f"reindex {i}", f"a {w} recipe", to=f"cook{i}@example.com")
            wait_for(lambda: len(srv.messages()["messages"]) == 3, "three messages stored")
            ids = sorted(m["ID"] for m in srv.messages()["messages"])
            put(srv, "/api/v1/messages", {"IDs": ids[:2], "Read": True})
            put(srv, "/api/v1/tags", {"IDs": ids[1:], "Tags": ["Kept", "two"]})
            before = state(srv)
            self.assertEqual(len(search(srv, "brioche")), 1)
        finally:
            self.assertEqual(srv.stop(), 0)
        # Clear what the store derives from the raw message.
        con = sqlite3.connect(db)
        con.execute("UPDATE inlet_messages SET search_text=x'', f_to=x'', f_from=x'', f_cc=x'',"
                    " f_bcc=x'', f_reply_to=x'', f_subject=x'', f_message_id=x'', tags_f=x''")
        con.commit()
        con.close()
        srv = Inletd("--database", db)
        try:
            self.assertEqual(search(srv, "brioche"), [])  # the clearing is what search reads
            self.assertEqual(search(srv, "subject:reindex"), [])
        finally:
            self.assertEqual(srv.stop(), 0)
        con = sqlite3.connect(db)
        con.execute("UPDATE inlet_messages SET meta=x'ff', size=1, attachments=7")
        con.commit()
        con.close()
        r = run("reindex", db)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(b"3 messages reindexed", r.stdout)
        srv = Inletd("--database", db)
        try:
            self.assertEqual(state(srv), before)
            for w in words:
                self.assertEqual(len(search(srv, w)), 1, w)
            self.assertEqual(len(search(srv, "subject:reindex")), 3)
            self.assertEqual(len(search(srv, "tag:kept")), 2)
            self.assertEqual(len(search(srv, "is:unread")), 1)
            self.assertEqual(len(search(srv, "to:cook1@example.com")), 1)
            m = srv.get_json(f"/api/v1/message/{ids[0]}")
            self.assertEqual(m["Attachments"], [])
        finally:
            self.assertEqual(srv.stop(), 0)
        r = run("reindex", os.path.join(self.tmp, "missing.db"))
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "missing.db")))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
