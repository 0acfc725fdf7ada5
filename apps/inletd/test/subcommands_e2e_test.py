#!/usr/bin/env python3
"""Mailpit's subcommands driven as their users drive them: PHP's sendmail_path
(`sendmail -t -i < message`, and a binary named `sendmail`), a HEALTHCHECK loop with
`readyz --wait`, `dump` of a running server then `ingest` of the folder into a second one
with the same bytes back, `version`."""
import argparse
import hashlib
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


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
