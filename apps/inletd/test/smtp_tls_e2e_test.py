#!/usr/bin/env python3
"""End-to-end tests of Mailpit's SMTP rules with real clients (smtplib, swaks, openssl):
--smtp-require-tls with a `sans:` certificate (SMTPS: TLS from the first byte),
--smtp-require-starttls (530 5.7.0 in clear text, accepted after STARTTLS),
--smtp-allowed-recipients (550 5.1.0) and --smtp-ignore-rejected-recipients (250, dropped).

    smtp_tls_e2e_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import os
import smtplib
import ssl
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import DEADLINE, Inletd, make_cert, make_message, real_client, wait_for  # noqa: E402


def tls_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Server(unittest.TestCase):
    args = ()

    @classmethod
    def setUpClass(cls):
        cls.srv = Inletd(*cls.args)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop_clean()

    def setUp(self):
        self.srv.delete_all()


class RequireStarttlsTest(Server):
    args = (*make_cert(), "--smtp-require-starttls")

    def test_mail_in_clear_text_is_530(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo("client.example")
            self.assertTrue(c.has_extn("starttls"))
            with self.assertRaises(smtplib.SMTPSenderRefused) as e:
                c.sendmail("a@sender.example", ["b@inbox.test.example"], b"x\r\n")
            self.assertEqual(e.exception.smtp_code, 530)
            self.assertEqual(e.exception.smtp_error, b"5.7.0 Must issue a STARTTLS command first")

    def test_accepted_after_starttls(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.starttls(context=tls_context())
            c.sendmail("a@sender.example", ["b@inbox.test.example"],
                       make_message("after starttls", "x\r\n").encode())
        wait_for(lambda: self.srv.find("after starttls"), "after starttls")

    def test_swaks(self):
        swaks = real_client(self, "swaks")
        base = [swaks, "--server", f"127.0.0.1:{self.srv.smtp_port}",
                "--to", "someone@inbox.test.example", "--from", "swaks@sender.example"]
        r = subprocess.run(base + ["--header", "Subject: swaks clear"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("530 5.7.0 Must issue a STARTTLS command first", r.stdout)
        r = subprocess.run(base + ["-tls", "--header", "Subject: swaks tls"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_for(lambda: self.srv.find("swaks tls"), "swaks tls")
        self.assertIsNone(self.srv.find("swaks clear"))


class ImplicitTlsTest(Server):
    # Mailpit's SMTPS with a certificate made at start for the names given.
    args = ("--smtp-require-tls", "--smtp-tls-cert", "sans:mx.test.example,127.0.0.1",
            "--smtp-tls-key", "sans:mx.test.example,127.0.0.1")

    def test_smtplib_over_tls_and_the_generated_certificate(self):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with smtplib.SMTP_SSL("127.0.0.1", self.srv.smtp_port, context=ctx,
                              timeout=DEADLINE) as c:
            c.ehlo("client.example")
            self.assertFalse(c.has_extn("starttls"))  # already secured
            c.sendmail("a@sender.example", ["b@inbox.test.example"],
                       make_message("over smtps", "x\r\n").encode())
            cert = c.sock.getpeercert(binary_form=True)
        wait_for(lambda: self.srv.find("over smtps"), "over smtps")
        # The certificate names what was asked for (openssl reads it).
        text = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-text"],
                              input=cert, capture_output=True, timeout=DEADLINE).stdout.decode()
        self.assertIn("DNS:mx.test.example", text)
        self.assertIn("IP Address:127.0.0.1", text)

    def test_clear_text_gets_no_greeting(self):
        with self.assertRaises((smtplib.SMTPServerDisconnected, OSError)):
            with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=5) as c:
                c.ehlo("client.example")

    def test_swaks_tls_on_connect_and_openssl_s_client(self):
        swaks = real_client(self, "swaks")
        r = subprocess.run([swaks, "--server", f"127.0.0.1:{self.srv.smtp_port}",
                            "--tls-on-connect", "--to", "someone@inbox.test.example",
                            "--from", "swaks@sender.example", "--header", "Subject: swaks smtps"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_for(lambda: self.srv.find("swaks smtps"), "swaks smtps")
        r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{self.srv.smtp_port}",
                            "-quiet"], input="QUIT\r\n", capture_output=True, text=True,
                           timeout=DEADLINE)
        self.assertIn("220 ", r.stdout)
        self.assertIn("221 ", r.stdout)


class AllowedRecipientsTest(Server):
    args = ("--smtp-allowed-recipients", r"@allowed\.example$")

    def test_refused_recipient_is_550(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            refused = c.sendmail("a@sender.example", ["x@other.example", "y@allowed.example"],
                                 make_message("allowed only", "x\r\n").encode())
        self.assertEqual(refused, {"x@other.example": (
            550, b"5.1.0 Requested action not taken: mailbox unavailable")})
        m = wait_for(lambda: self.srv.find("allowed only"), "allowed only")
        full = self.srv.get_json(f"/api/v1/message/{m['ID']}")
        self.assertEqual(full["Envelope"]["To"], ["y@allowed.example"])


class IgnoreRejectedTest(Server):
    args = ("--smtp-allowed-recipients", r"@allowed\.example$",
            "--smtp-ignore-rejected-recipients")

    def test_rejected_get_250_and_are_dropped(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            self.assertEqual(c.sendmail("a@sender.example", ["x@other.example"],
                                        make_message("nobody left", "x\r\n").encode()), {})
            self.assertEqual(c.sendmail("a@sender.example", ["x@other.example", "y@allowed.example"],
                                        make_message("one left", "x\r\n").encode()), {})
        m = wait_for(lambda: self.srv.find("one left"), "one left")
        full = self.srv.get_json(f"/api/v1/message/{m['ID']}")
        self.assertEqual(full["Envelope"]["To"], ["y@allowed.example"])
        self.assertIsNone(self.srv.find("nobody left"))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
