#!/usr/bin/env python3
"""Mailpit's and the other catchers' own API clients, installed from the package registry as their users
install them (tests/clients, from its lockfile), driven against inletd started with that
catcher's variables. The mail goes in through smtplib; each client script asserts what
it reads back and exits non-zero on the first difference.

    catcher_clients_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import os
import smtplib
import subprocess
import sys
import unittest
from email.message import EmailMessage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import DEADLINE, Inletd, real_client, wait_for  # noqa: E402

CLIENTS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                       "..", "tests", "clients"))


def node_with(test, package):
    """Node, once tests/clients has `package` installed: a CI run fails without it (the
    install script puts it there), elsewhere the test is skipped."""
    node = real_client(test, "node")
    if not os.path.isdir(os.path.join(CLIENTS, "node_modules", package)):
        if os.environ.get("CI"):
            test.fail("tests/clients is not installed (scripts/install-web-deps.sh)")
        test.skipTest("tests/clients not installed")
    return node


def messages():
    first = EmailMessage()
    first["From"] = "Ann <ann@example.org>"
    first["To"] = "bob@example.com"
    first["Subject"] = "First: Grüße"
    first.set_content("café au lait\n", cte="quoted-printable")
    second = EmailMessage()
    second["From"] = "Ann <ann@example.org>"
    second["To"] = "carl@example.com"
    second["Subject"] = "Second: html"
    second.set_content("plain part\n")
    second.add_alternative("<p><b>bold</b></p>\n", subtype="html")
    third = EmailMessage()
    third["From"] = "Ann <ann@example.org>"
    third["To"] = "bob@example.com"
    third["Subject"] = "Third: attachment"
    third.set_content("see the notes\n")
    third.add_attachment(b"attached notes\n", maintype="text", subtype="plain",
                         filename="notes.txt")
    return [first, second, third]


class MailHogClient(unittest.TestCase):
    def test_npm_mailhog_client(self):
        node = node_with(self, "mailhog")
        # Started as a MailHog compose file starts it: MailHog's own variable selects
        # MailHog's API on /api/v1/messages.
        srv = Inletd(env={"MH_HOSTNAME": "mailhog.test.example"})
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                for m in messages():
                    s.send_message(m)
            wait_for(lambda: len(srv.get_json("/api/v2/messages")["items"]) == 3, "three stored")
            r = subprocess.run([node, os.path.join(CLIENTS, "mailhog_client.mjs"),
                                str(srv.http_port)], capture_output=True, text=True,
                               timeout=DEADLINE, cwd=CLIENTS)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("every call answered", r.stdout)
        finally:
            srv.stop()


class MailDevClient(unittest.TestCase):
    def test_npm_cypress_maildev_commands(self):
        node = node_with(self, "cypress-maildev")
        # Started with a MailDev variable: MailDev's flavour (its 2.x paths are served in
        # every flavour; the harness's own --listen and --smtp win over port 1080).
        srv = Inletd(env={"MAILDEV_MAX_EMAILS": "100"})
        try:
            otp = EmailMessage()
            otp["From"] = "Ann <ann@example.org>"
            otp["To"] = "carl@example.com"
            otp["Subject"] = "Your code"
            otp.set_content("Your one-time code is 482913.\n")
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                for m in messages() + [otp]:
                    s.send_message(m)
            wait_for(lambda: srv.messages()["total"] == 4, "four stored")
            r = subprocess.run([node, os.path.join(CLIENTS, "maildev_client.mjs"),
                                str(srv.http_port)], capture_output=True, text=True,
                               timeout=DEADLINE, cwd=CLIENTS)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("every call answered", r.stdout)
        finally:
            srv.stop()


class MailpitClient(unittest.TestCase):
    def test_npm_mailpit_api_client(self):
        node = node_with(self, "mailpit-api")
        srv = Inletd("--enable-chaos")
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.send_message(messages()[0])
            wait_for(lambda: srv.messages()["total"] == 1, "one stored")
            r = subprocess.run([node, os.path.join(CLIENTS, "mailpit_client.mjs"),
                                str(srv.http_port)], capture_output=True, text=True,
                               timeout=DEADLINE, cwd=CLIENTS)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("every call answered", r.stdout)
        finally:
            srv.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
