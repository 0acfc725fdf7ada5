#!/usr/bin/env python3
"""End-to-end tests of inletd's POP3 server (Mailpit's --pop3, --pop3-auth-file,
--pop3-tls-cert/key) with real clients: Python's poplib and Debian's fetchmail, over
clear text, STLS (inletd's --pop3-stls) and implicit TLS (Mailpit's mode). Messages go in
with smtplib and are compared with the HTTP API's raw bytes.

    pop3_e2e_test.py --inletd build/bin/inletd [--store URI] [--io-model M] [unittest args]

With --store postgresql://... (under scripts/with-postgres.sh) the same tests run against
the PostgreSQL store: POP3 reads every store through its async interface.
"""
import argparse
import os
import poplib
import re
import smtplib
import ssl
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import DEADLINE, Inletd, make_cert, make_message, real_client, wait_for  # noqa: E402

TMP = tempfile.mkdtemp(prefix="inlet-pop3-e2e-")
STORE = []  # ["--store", URI] when given
MODEL = []  # ["--io-model", NAME] when given: POP3 runs on the SMTP server's I/O model
AUTH_FILE = os.path.join(TMP, "pop3-users")
with open(AUTH_FILE, "w") as f:
    # a plain entry and an APR1 one (openssl passwd -apr1 -salt inletsal secret2)
    f.write("alice:s3cret\n")
    apr1 = subprocess.run(["openssl", "passwd", "-apr1", "-salt", "inletsal", "secret2"],
                          capture_output=True, text=True, check=True).stdout.strip()
    f.write(f"bob:{apr1}\n")


def tls_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def cert_args():
    args = make_cert()  # ("--tls-cert", CERT, "--tls-key", KEY): reuse its files for POP3
    return ("--pop3-tls-cert", args[1], "--pop3-tls-key", args[3])


class Server(unittest.TestCase):
    args = ()
    mode = "clear text"

    @classmethod
    def setUpClass(cls):
        cls.srv = Inletd("--pop3", "127.0.0.1:0", "--pop3-auth-file", AUTH_FILE, *STORE,
                         *MODEL, *cls.args)
        line = wait_for(lambda: next((l for l in cls.srv.log if "pop3 listening" in l), None),
                        "the pop3 listener")
        m = re.search(r"pop3 listening on 127\.0\.0\.1:(\d+) \((.*)\)", line)
        cls.port = int(m.group(1))
        assert m.group(2) == cls.mode, line
        if STORE:  # the store named is the one serving
            assert any("(store: postgresql" in l for l in cls.srv.log), cls.srv.log

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop_clean()

    def setUp(self):
        self.srv.delete_all()

    def send(self, *messages):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            for subject, body in messages:
                c.sendmail("a@sender.example", ["b@inbox.test.example"],
                           make_message(subject, body).encode())
        wait_for(lambda: len(self.srv.messages()["messages"]) >= len(messages), "messages")

    def connect(self):
        return poplib.POP3("127.0.0.1", self.port, timeout=DEADLINE)


class ClearTextTest(Server):
    def test_list_retr_top_uidl_and_delete_on_quit(self):
        body = "first line\r\n.starts with a dot\r\n..two dots\r\n.\r\nlast\r\n"
        self.send(("pop one", body), ("pop two", "x\r\n"), ("pop three", "y\r\n"))
        api = self.srv.messages()["messages"]  # newest first, as POP3 numbers them
        p = self.connect()
        self.assertIn(b"inlet", p.getwelcome())
        caps = p.capa()
        for c in ("TOP", "USER", "UIDL"):
            self.assertIn(c, caps)
        self.assertNotIn("STLS", caps)
        p.user("alice")
        p.pass_("s3cret")
        count, size = p.stat()
        self.assertEqual(count, 3)
        sizes = [int(l.split()[1]) for l in p.list()[1]]
        self.assertEqual(sum(sizes), size)
        uids = [l.split()[1].decode() for l in p.uidl()[1]]
        self.assertEqual(uids, [m["ID"] for m in api])
        for i, m in enumerate(api, 1):
            raw = self.srv.raw(m["ID"])
            resp, lines, octets = p.retr(i)
            self.assertEqual(b"\r\n".join(lines) + b"\r\n", raw)  # poplib unstuffs
            self.assertEqual(octets - 2 * len(lines), len(raw) - 2 * raw.count(b"\r\n"))
            self.assertEqual(sizes[i - 1], len(raw))
        resp, lines, _ = p.top(3, 2)
        self.assertIn(b"Subject: pop one", lines)
        self.assertEqual(lines[-2:], [b"first line", b".starts with a dot"])
        p.dele(1)
        with self.assertRaises(poplib.error_proto):
            p.retr(1)
        p.rset()
        p.dele(2)
        self.assertIn(b"1 messages deleted", p.quit())
        left = [m["Subject"] for m in self.srv.messages()["messages"]]
        self.assertEqual(sorted(left), ["pop one", "pop three"])
        metrics = self.srv.get("/metrics")[2].decode()
        self.assertRegex(metrics, r"\ninlet_pop3_messages_deleted_total [1-9]")
        self.assertRegex(metrics, r"\ninlet_pop3_messages_retrieved_total [1-9]")

    def test_bad_credentials_and_commands(self):
        p = self.connect()
        with self.assertRaises(poplib.error_proto):
            p.stat()
        p.user("alice")
        with self.assertRaises(poplib.error_proto) as e:
            p.pass_("wrong")
        self.assertIn(b"[AUTH]", e.exception.args[0])
        p.user("bob")
        p.pass_("secret2")  # the APR1 entry
        with self.assertRaises(poplib.error_proto):
            p.retr(1)  # empty maildrop
        with self.assertRaises(poplib.error_proto):
            p._shortcmd("XYZZY")
        p.quit()

    def test_the_newest_100(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            for i in range(105):
                c.sendmail("a@sender.example", ["b@inbox.test.example"],
                           make_message(f"many {i}", "x\r\n").encode())
        wait_for(lambda: self.srv.messages(200)["messages_count"] >= 105, "105 messages")
        api = [m["ID"] for m in self.srv.messages(100)["messages"]]
        p = self.connect()
        p.user("alice")
        p.pass_("s3cret")
        self.assertEqual(p.stat()[0], 100)
        self.assertEqual([l.split()[1].decode() for l in p.uidl()[1]], api)
        p.quit()

    def test_fetchmail(self):
        fetch(self, self.srv, self.port, "sslproto ''", 3)


class StlsTest(Server):
    args = (*cert_args(), "--pop3-stls")
    mode = "STLS"

    def test_poplib_stls(self):
        self.send(("over stls", "secret text\r\n"))
        p = self.connect()
        self.assertIn("STLS", p.capa())
        p.stls(context=tls_context())
        self.assertNotIn("STLS", p.capa())
        p.user("alice")
        p.pass_("s3cret")
        lines = p.retr(1)[1]
        self.assertIn(b"Subject: over stls", lines)
        self.assertIn(b"secret text", lines)
        p.quit()

    def test_fetchmail(self):
        fetch(self, self.srv, self.port, "sslproto 'TLS1.2+' no sslcertck", 2)


class ImplicitTlsTest(Server):
    args = cert_args()
    mode = "implicit TLS"

    def test_poplib_pop3_ssl(self):
        self.send(("over tls", "tls text\r\n"))
        p = poplib.POP3_SSL("127.0.0.1", self.port, context=tls_context(), timeout=DEADLINE)
        self.assertIn(b"inlet", p.getwelcome())
        self.assertNotIn("STLS", p.capa())
        p.user("alice")
        p.pass_("s3cret")
        self.assertIn(b"tls text", p.retr(1)[1])
        p.dele(1)
        p.quit()
        wait_for(lambda: not self.srv.messages()["messages"], "the deletion")

    def test_clear_text_client_gets_no_greeting(self):
        with self.assertRaises(Exception):
            poplib.POP3("127.0.0.1", self.port, timeout=3).user("alice")

    def test_fetchmail(self):
        fetch(self, self.srv, self.port, "ssl no sslcertck", 2)


class SansCertificateTest(Server):
    """Mailpit's sans:NAME certificates work for POP3 too (made at start)."""
    args = ("--pop3-tls-cert", "sans:localhost,127.0.0.1", "--pop3-tls-key",
            "sans:localhost,127.0.0.1")
    mode = "implicit TLS"

    def test_poplib_pop3_ssl(self):
        self.send(("sans cert", "x\r\n"))
        p = poplib.POP3_SSL("127.0.0.1", self.port, context=tls_context(), timeout=DEADLINE)
        cert = p.sock.getpeercert(binary_form=True)
        self.assertTrue(cert)
        p.user("alice")
        p.pass_("s3cret")
        self.assertEqual(p.stat()[0], 1)
        p.quit()


class PerAddressLimitTest(Server):
    args = ("--pop3-max-connections-per-ip", "2")

    def test_third_connection_from_one_address_is_refused(self):
        a, b = self.connect(), self.connect()
        with self.assertRaises(poplib.error_proto) as e:
            self.connect()
        self.assertEqual(e.exception.args[0],
                         b"-ERR [SYS/TEMP] too many connections from your address")
        a.user("alice")
        a.pass_("s3cret")
        self.assertEqual(a.stat(), (0, 0))  # the two admitted are served on
        b.quit()
        a.quit()


class WithoutCredentialsTest(unittest.TestCase):
    def test_pop3_needs_credentials_as_in_mailpit(self):
        srv = Inletd("--pop3", "127.0.0.1:0")
        try:
            wait_for(lambda: any("without POP3 credentials" in l for l in srv.log), "the note")
            self.assertFalse(any("pop3 listening" in l for l in srv.log))
        finally:
            self.assertEqual(srv.stop(), 0)


class ProcessModelTest(unittest.TestCase):
    def test_pop3_is_refused_under_the_process_model(self):
        # Every other model serves POP3 (the SMTP server's drivers run it); a forked child
        # per connection could not remove from the parent's store.
        r = subprocess.run([e2e_test.INLETD, "--io-model", "process", "--store", "sink",
                            "--pop3", "127.0.0.1:0", "--pop3-auth-file", AUTH_FILE,
                            "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--pop3 is not served under --io-model process", r.stderr)


def fetch(test, srv, port, tls_options, n):
    """fetchmail retrieves every message into an mbox through an MDA and deletes them."""
    fetchmail = real_client(test, "fetchmail")
    test.send(*[(f"fetched {i}", f"body {i}\r\n.dot line\r\n") for i in range(n)])
    home = tempfile.mkdtemp(dir=TMP)
    mbox = os.path.join(home, "mbox")
    rc = os.path.join(home, "fetchmailrc")
    with open(rc, "w") as f:
        f.write(f'poll 127.0.0.1 service {port} protocol pop3 timeout 20\n'
                f'  user "alice" password "s3cret" {tls_options} nokeep fetchall\n'
                f'  mda "/usr/bin/tee -a {mbox}"\n')
    os.chmod(rc, 0o600)
    r = subprocess.run([fetchmail, "-f", rc, "--nodetach", "--nosyslog",
                        "--pidfile", os.path.join(home, "pid"), "-i", os.path.join(home, "ids")],
                       env={**os.environ, "HOME": home, "FETCHMAILHOME": home},
                       capture_output=True, text=True, timeout=120)
    test.assertEqual(r.returncode, 0, r.stdout + r.stderr)
    with open(mbox, "rb") as f:
        got = f.read()
    for i in range(n):
        test.assertIn(f"Subject: fetched {i}".encode(), got)
        test.assertIn(f"body {i}".encode(), got)
    test.assertIn(b"\n.dot line", got)  # unstuffed by fetchmail
    wait_for(lambda: not srv.messages()["messages"], "fetchmail's deletions")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--store")
    ap.add_argument("--io-model")
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    if args.store:
        STORE[:] = ["--store", args.store]
    if args.io_model:
        MODEL[:] = ["--io-model", args.io_model]
    try:
        unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
    finally:
        subprocess.run(["rm", "-rf", TMP])
