#!/usr/bin/env python3
"""Mailpit's auto-relay and forwarding end to end: an inletd relays or forwards every new
message to a second inletd (the relay target, whose API shows what arrived and with which
envelope); a target that is down leaves the 250 and the stored copy alone, and is counted.

    outbound_relay_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import os
import re
import smtplib
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import DEADLINE, Inletd, wait_for  # noqa: E402


def message(subject, frm="Ann <ann@example.org>", to="x@keep.example"):
    return (f"From: {frm}\r\nTo: {to}\r\nSubject: {subject}\r\n"
            f"Message-ID: <{subject.replace(' ', '-')}@example.org>\r\n\r\nbody\r\n").encode()


def metric(srv, name):
    _, _, body = srv.get("/metrics")
    m = re.search(rf"^{name} (\d+)$", body.decode(), re.M)
    return int(m.group(1)) if m else None


def full(srv, subject):
    m = srv.find(subject)
    return srv.get_json(f"/api/v1/message/{m['ID']}") if m else None


class Relay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.target = Inletd()

    @classmethod
    def tearDownClass(cls):
        cls.target.stop()

    def test_relay_all_matching_and_blocked(self):
        relay = f"127.0.0.1:{self.target.smtp_port}"
        src = Inletd("--relay", relay, "--smtp-relay-all",
                     "--relay-blocked-recipients", r"@blocked\.example$")
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("ann@example.org", ["x@keep.example", "y@blocked.example"],
                           message("relayed all"))
            got = wait_for(lambda: full(self.target, "relayed all"), "relayed copy")
            self.assertEqual(got["Envelope"]["To"], ["x@keep.example"])  # blocked one left out
            self.assertEqual(got["Envelope"]["From"], "ann@example.org")
            self.assertIsNotNone(src.find("relayed all"))  # stored here too
            wait_for(lambda: metric(src, "inlet_relay_sent_total") == 1, "counted")
        finally:
            src.stop()
        src = Inletd("--relay", relay, "--smtp-relay-matching", r"@keep\.example$")
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("ann@example.org", ["a@keep.example", "b@other.example"],
                           message("relayed matching"))
                s.sendmail("ann@example.org", ["c@other.example"], message("not relayed"))
            got = wait_for(lambda: full(self.target, "relayed matching"), "matching copy")
            self.assertEqual(got["Envelope"]["To"], ["a@keep.example"])
            wait_for(lambda: src.find("not relayed"), "stored, not relayed")
            self.assertEqual(metric(src, "inlet_relay_sent_total"), 1)
            self.assertIsNone(self.target.find("not relayed"))
        finally:
            src.stop()

    def test_forward_with_prefix_and_override_from(self):
        env = {"MP_SMTP_FORWARD_HOST": "127.0.0.1",
               "MP_SMTP_FORWARD_PORT": str(self.target.smtp_port),
               "MP_SMTP_FORWARD_TO": "archive@copies.example, audit@copies.example",
               "MP_SMTP_FORWARD_SUBJECT_PREFIX": "[fwd]",
               "MP_SMTP_FORWARD_OVERRIDE_FROM": "relay@inlet.example"}
        src = Inletd(env=env)
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("ann@example.org", ["x@any.example"], message("Grüße forwarded"))
            got = wait_for(lambda: full(self.target, "[fwd] Grüße forwarded"), "forwarded copy")
            self.assertEqual(got["Envelope"]["To"], ["archive@copies.example",
                                                    "audit@copies.example"])
            self.assertEqual(got["Envelope"]["From"], "relay@inlet.example")
            self.assertEqual(got["From"], {"Name": "Ann", "Address": "relay@inlet.example"})
            headers = self.target.get_json(f"/api/v1/message/{got['ID']}/headers")
            self.assertEqual(headers["X-Original-From"], ["ann@example.org"])
            mine = full(src, "Grüße forwarded")  # stored unchanged here
            self.assertEqual(mine["From"]["Address"], "ann@example.org")
            wait_for(lambda: metric(src, "inlet_forward_sent_total") == 1, "counted")
        finally:
            src.stop()

    def test_target_down_leaves_the_250_and_is_counted(self):
        with smtplib.SMTP("127.0.0.1", self.target.smtp_port, timeout=DEADLINE):
            pass
        src = Inletd("--relay", "127.0.0.1:9", "--smtp-relay-all")  # discard port: refused
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("ann@example.org", ["x@keep.example"], message("target down"))
            self.assertIsNotNone(wait_for(lambda: src.find("target down"), "stored"))
            wait_for(lambda: metric(src, "inlet_relay_failed_total") == 1, "failure counted")
        finally:
            src.stop()

    def test_auto_relay_without_a_relay_is_refused(self):
        import subprocess
        r = subprocess.run([e2e_test.INLETD, "--smtp-relay-all"], capture_output=True,
                           text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 2)
        self.assertIn("relay configuration must be set", r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
