#!/usr/bin/env python3
"""End-to-end tests of SMTP AUTH and SMTP chaos triggers with real clients (smtplib, swaks).

inletd is configured as Mailpit is (--smtp-auth-file, MP_SMTP_AUTH, --smtp-auth-accept-any,
--smtp-auth-allow-insecure, --enable-chaos); the server is the one e2e_test.py starts
(loopback, kernel-chosen ports).

    smtp_auth_e2e_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import json
import os
import smtplib
import ssl
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import DEADLINE, HTTP, Inletd, make_cert, make_message, real_client, wait_for  # noqa: E402

# alice: "secret" (Apache APR1 MD5); bob: "p a:ss" in plain text.
PASSWORDS = "alice:$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/\nbob:p a:ss\n"


def tls_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class PasswordFileTest(unittest.TestCase):
    """--smtp-auth-file + --smtp-auth-allow-insecure: AUTH offered in plain text, required."""

    @classmethod
    def setUpClass(cls):
        with tempfile.NamedTemporaryFile("w", suffix=".htpasswd", delete=False) as f:
            f.write(PASSWORDS)
            cls.path = f.name
        cls.srv = Inletd("--smtp-auth-file", cls.path, "--smtp-auth-allow-insecure")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.srv.stop_clean()
        finally:
            os.unlink(cls.path)

    def setUp(self):
        self.srv.delete_all()

    def detail(self, subject):
        m = wait_for(lambda: self.srv.find(subject), subject)
        return m, self.srv.get_json(f"/api/v1/message/{m['ID']}")

    def test_login_with_each_mechanism_records_the_user(self):
        for mech, user, password in (("PLAIN", "alice", "secret"), ("LOGIN", "bob", "p a:ss")):
            subject = f"auth {mech}"
            with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
                c.ehlo("client.example")
                self.assertEqual(sorted(c.esmtp_features["auth"].split()), ["LOGIN", "PLAIN"])
                c.user, c.password = user, password
                code, _ = c.auth(mech, getattr(c, "auth_" + mech.lower()),
                                 initial_response_ok=(mech == "PLAIN"))
                self.assertEqual(code, 235)
                c.sendmail("a@sender.example", ["b@inbox.test.example"],
                           make_message(subject, "x\r\n").encode())
            summary, full = self.detail(subject)
            self.assertEqual(summary["Username"], user)
            self.assertEqual(full["Username"], user)
            self.assertEqual(full["Envelope"]["Protocol"], "ESMTPA")  # RFC 3848

    def test_mail_without_auth_is_530(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            with self.assertRaises(smtplib.SMTPSenderRefused) as e:
                c.sendmail("a@sender.example", ["b@inbox.test.example"], b"Subject: x\r\n\r\nx\r\n")
            self.assertEqual(e.exception.smtp_code, 530)
            self.assertIn(b"5.7.0", e.exception.smtp_error)

    def test_wrong_password_is_535_and_three_failures_close(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo()
            with self.assertRaises(smtplib.SMTPAuthenticationError) as e:
                c.login("alice", "wrong")  # smtplib tries PLAIN, then LOGIN: two failures
            self.assertEqual(e.exception.smtp_code, 535)
            self.assertIn(b"5.7.8", e.exception.smtp_error)
            code, msg = c.docmd("AUTH", "PLAIN AGFsaWNlAHdyb25n")  # \0alice\0wrong
            self.assertEqual(code, 535)
            self.assertEqual(c.getreply()[0], 421)  # the third: 421 4.7.0, then closed
            with self.assertRaises(smtplib.SMTPServerDisconnected):
                c.noop()

    def test_swaks_auth(self):
        swaks = real_client(self, "swaks")
        for mech in ("PLAIN", "LOGIN"):
            r = subprocess.run([swaks, "--server", f"127.0.0.1:{self.srv.smtp_port}",
                                "--auth", mech, "--auth-user", "alice", "--auth-password", "secret",
                                "--to", "someone@inbox.test.example", "--from", "swaks@sender.example",
                                "--header", f"Subject: swaks auth {mech}"],
                               capture_output=True, text=True, timeout=DEADLINE)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("235 2.7.0 Authentication successful", r.stdout)
            self.assertEqual(self.detail(f"swaks auth {mech}")[0]["Username"], "alice")
        r = subprocess.run([swaks, "--server", f"127.0.0.1:{self.srv.smtp_port}",
                            "--auth", "PLAIN", "--auth-user", "alice", "--auth-password", "nope",
                            "--to", "someone@inbox.test.example", "--from", "swaks@sender.example"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("535 5.7.8", r.stdout)

    def test_cancel_and_bad_base64(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo()
            self.assertEqual(c.docmd("AUTH", "LOGIN"), (334, b"VXNlcm5hbWU6"))
            self.assertEqual(c.docmd("*")[0], 501)
            self.assertEqual(c.docmd("AUTH", "PLAIN not-base64!")[0], 501)
            self.assertEqual(c.docmd("AUTH", "CRAM-MD5")[0], 504)
            c.login("alice", "secret")
            self.assertEqual(c.docmd("AUTH", "PLAIN AGFsaWNlAHNlY3JldA==")[0], 503)


class StartTlsTest(unittest.TestCase):
    """With a certificate and without --smtp-auth-allow-insecure, AUTH comes after STARTTLS."""

    def test_auth_offered_only_over_tls(self):
        with e2e_test_env(MP_SMTP_AUTH="alice:secret carol:pw"):
            srv = Inletd(*make_cert())
        try:
            msg = make_message("auth over tls", "x\r\n").encode()
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                c.ehlo()
                self.assertFalse(c.has_extn("auth"))
                self.assertEqual(c.docmd("AUTH", "PLAIN AGFsaWNlAHNlY3JldA==")[0], 538)
                c.starttls(context=tls_context())
                c.ehlo()
                self.assertEqual(sorted(c.esmtp_features["auth"].split()), ["LOGIN", "PLAIN"])
                c.login("carol", "pw")
                c.sendmail("a@sender.example", ["b@inbox.test.example"], msg)
            m = wait_for(lambda: srv.find("auth over tls"), "message")
            self.assertEqual(m["Username"], "carol")
        finally:
            self.assertEqual(srv.stop(), 0)


class AcceptAnyAndStartupTest(unittest.TestCase):
    def test_accept_any_takes_any_credentials_and_does_not_require_them(self):
        srv = Inletd("--smtp-auth-accept-any", "--smtp-auth-allow-insecure")
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                c.login("whoever", "whatever")
                c.sendmail("a@sender.example", ["b@inbox.test.example"],
                           make_message("any user", "x\r\n").encode())
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                c.sendmail("a@sender.example", ["b@inbox.test.example"],
                           make_message("no user", "x\r\n").encode())
            self.assertEqual(wait_for(lambda: srv.find("any user"), "any")["Username"], "whoever")
            self.assertEqual(wait_for(lambda: srv.find("no user"), "none")["Username"], "")
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_refused_as_mailpit_refuses(self):
        def start(*args, env=None):
            return subprocess.run([e2e_test.INLETD, "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                                   *args], capture_output=True, text=True, timeout=DEADLINE,
                                  env=dict(os.environ, **(env or {})))
        r = start("--smtp-auth-accept-any")  # no TLS, not allowed insecure
        self.assertEqual(r.returncode, 2)
        self.assertIn("--smtp-auth-allow-insecure", r.stderr)
        r = start("--smtp-auth-accept-any", "--smtp-auth-allow-insecure",
                  env={"MP_SMTP_AUTH": "a:b"})
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot use both", r.stderr)
        r = start("--smtp-auth-file", "/nonexistent/passwords", "--smtp-auth-allow-insecure")
        self.assertNotEqual(r.returncode, 0)


class ChaosTest(unittest.TestCase):
    """--enable-chaos: triggers set through PUT /api/v1/chaos fail SMTP commands."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Inletd("--enable-chaos", "--smtp-auth-accept-any", "--smtp-auth-allow-insecure")

    @classmethod
    def tearDownClass(cls):
        cls.put({})
        rc = cls.srv.stop()
        if rc != 0:
            raise AssertionError(f"inletd exited {rc}:\n" + "".join(cls.srv.log))

    @classmethod
    def put(cls, triggers):
        req = urllib.request.Request(cls.srv.url("/api/v1/chaos"), method="PUT",
                                     data=json.dumps(triggers).encode())
        with HTTP.open(req, timeout=DEADLINE) as r:
            return json.loads(r.read())

    def tearDown(self):
        self.put({})

    def test_sender_recipient_and_authentication_triggers(self):
        msg = make_message("chaos", "x\r\n").encode()
        self.put({"Sender": {"ErrorCode": 451, "Probability": 100}})
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            with self.assertRaises(smtplib.SMTPSenderRefused) as e:
                c.sendmail("a@sender.example", ["b@inbox.test.example"], msg)
            self.assertEqual(e.exception.smtp_code, 451)
            self.assertIn(b"Chaos sender error", e.exception.smtp_error)
        self.put({"Recipient": {"ErrorCode": 550, "Probability": 100}})
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            with self.assertRaises(smtplib.SMTPRecipientsRefused) as e:
                c.sendmail("a@sender.example", ["b@inbox.test.example"], msg)
            self.assertEqual(e.exception.recipients["b@inbox.test.example"][0], 550)
        self.put({"Authentication": {"ErrorCode": 454, "Probability": 100}})
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            with self.assertRaises(smtplib.SMTPAuthenticationError) as e:
                c.login("u", "p")
            self.assertEqual(e.exception.smtp_code, 454)
            self.assertIn(b"Chaos authentication error", e.exception.smtp_error)
        # Triggers off again: the same client gets through, and nothing was stored before.
        self.put({})
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.login("u", "p")
            c.sendmail("a@sender.example", ["b@inbox.test.example"], msg)
        wait_for(lambda: self.srv.find("chaos"), "message after chaos")
        self.assertEqual(self.srv.messages()["messages_count"], 1)

    def test_probability_zero_never_fails(self):
        self.put({"Sender": {"ErrorCode": 451, "Probability": 0}})
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo()
            for _ in range(20):
                self.assertEqual(c.mail("a@sender.example")[0], 250)
                c.rset()


class e2e_test_env:
    """Extra environment variables for a child inletd started inside the block."""

    def __init__(self, **env):
        self.env = env

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
