#!/usr/bin/env python3
"""Mailpit's options as a Mailpit user gives them, checked by what they change (smtplib,
urllib): SIZE in MB, the label in the greeting, chaos from its triggers alone, message
dates, the AUTH user as a tag, the webui flags, the log file, --verbose; and Mailpit's whole
command line starting a server that names what it does not support yet."""
import argparse
import json
import os
import shutil
import smtplib
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import DEADLINE, Inletd, wait_for  # noqa: E402


def message(subject, date="Tue, 03 Mar 2026 10:20:30 +0100"):
    return (f"From: a@example.org\r\nTo: b@example.com\r\nSubject: {subject}\r\n"
            f"Date: {date}\r\n\r\nbody\r\n").encode()


class MailpitOptions(unittest.TestCase):
    def test_max_message_size_is_megabytes_and_zero_is_no_limit(self):
        srv = Inletd("--max-message-size", "3")
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.ehlo()
                self.assertEqual(s.esmtp_features.get("size"), str(3 * 1024 * 1024))
        finally:
            srv.stop()
        srv = Inletd("--max-message-size", "0")
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.ehlo()
                self.assertEqual(s.esmtp_features.get("size"), "0")
                big = message("big") + (b"x" * 998 + b"\r\n") * 2100  # 2 MiB
                s.sendmail("a@example.org", ["b@example.com"], big)  # 2 MiB: no limit
        finally:
            srv.stop()

    def test_label_in_the_greeting_and_chaos_from_its_triggers_alone(self):
        srv = Inletd("--label", "staging", "--chaos-triggers", "Recipient:550:100")
        try:
            s = smtplib.SMTP(timeout=DEADLINE)
            code, greeting = s.connect("127.0.0.1", srv.smtp_port)
            try:
                self.assertEqual(code, 220)
                self.assertIn(b"(staging)", greeting)
                s.ehlo()
                s.mail("a@example.org")
                code, text = s.rcpt("b@example.com")
                self.assertEqual(code, 550)
                self.assertIn(b"Chaos recipient error", text)
            finally:
                s.quit()
            self.assertEqual(srv.get_json("/api/v1/chaos")["Recipient"]["Probability"], 100)
        finally:
            srv.stop()

    def test_message_dates_username_tags_and_webui_flags(self):
        srv = Inletd("--use-message-dates", "--tags-username", "--smtp-auth-accept-any",
                     "--smtp-auth-allow-insecure", "--hide-delete-all-button",
                     "--disable-http-compression")
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.login("deploy-bot", "whatever")
                s.sendmail("a@example.org", ["b@example.com"], message("dated"))
            m = wait_for(lambda: srv.find("dated"), "the message listed")
            self.assertEqual(m["Created"][:19], "2026-03-03T09:20:30")
            self.assertIn("deploy-bot", m["Tags"])
            self.assertTrue(srv.get_json("/api/v1/webui")["HideDeleteAllButton"])
            status, headers, _ = srv.get("/")
            self.assertEqual(status, 200)
            self.assertIsNone(headers.get("Content-Encoding"))
        finally:
            srv.stop()

    def test_log_file_and_verbose(self):
        fd, log = tempfile.mkstemp(prefix="inlet-mp-log.")
        os.close(fd)
        proc = subprocess.Popen([e2e_test.INLETD, "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                                 "--max-connections", "1000", "--log-file", log, "-v"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            text = wait_for(lambda: "smtp listening" in open(log).read() and open(log).read(),
                            "the listening lines in the log file")
            port = int(text.split("smtp listening on 127.0.0.1:")[1].split()[0])
            with smtplib.SMTP("127.0.0.1", port, timeout=DEADLINE) as s:
                s.sendmail("a@example.org", ["b@example.com"], message("logged"))
            wait_for(lambda: "stored" in open(log).read(), "a line for the stored message")
        finally:
            proc.terminate()
            proc.wait(timeout=DEADLINE)
            os.unlink(log)

    def test_mailpits_whole_command_line_starts_and_names_what_it_ignores(self):
        tmp = tempfile.mkdtemp(prefix="inlet-mailpit-options-")
        database = os.path.join(tmp, "m.db")
        args = ["-d", database, "--disable-wal", "--disable-version-check", "--compression", "2",
                "--label", "L", "--tenant-id", "t1", "-m", "100", "--max-age", "2d",
                "--use-message-dates", "--ignore-duplicate-ids", "-q", "--allowed-hosts",
                "mailpit,localhost", "--webroot", "mail", "--api-cors", "a.com,b.com",
                "--block-remote-css-and-fonts", "--allow-internal-http-requests",
                "--disable-link-check-rate-limit", "--allow-untrusted-tls",
                "--disable-http-compression", "--hide-delete-all-button",
                "--send-api-auth-accept-any", "--smtp-auth-accept-any", "--smtp-auth-allow-insecure",
                "--smtp-max-recipients", "10", "--smtp-disable-rdns", "--enable-chaos",
                "--tag", "a=b", "--tags-title-case", "--tags-disable", "x-tags", "--tags-username",
                "--webhook-limit", "2", "--webhook-delay", "1", "--disable-html-check"]
        env = dict(os.environ, MP_SMTP_RELAY_ALL="true", MP_ENABLE_PROMETHEUS="false")
        proc = subprocess.Popen([e2e_test.INLETD, "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                                 "--max-connections", "1000", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=env)
        lines = []
        try:
            end = time.monotonic() + DEADLINE
            while time.monotonic() < end:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line)
                if "http listening" in line:
                    break
            out = "".join(lines)
            self.assertIn("http listening", out)
            for named in ("--ignore-duplicate-ids", "--send-api-auth-accept-any", "--smtp-relay-all",
                          "--enable-prometheus"):
                self.assertTrue(any(named in l and "not supported" in l for l in lines),
                                named + "\n" + out)
            self.assertIn("deprecated --disable-html-check", out)
            # --database and its options take effect: the file store, in that file.
            self.assertFalse(any("--database" in l or "--disable-wal" in l for l in lines), out)
            self.assertTrue(os.path.exists(database))
        finally:
            proc.terminate()
            proc.wait(timeout=DEADLINE)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
