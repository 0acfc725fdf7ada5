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

    def test_cr_cr_lf_headers_normalised_or_refused_when_strict(self):
        bare = (b"From: a@example.org\r\r\nTo: b@example.com\r\nSubject: bare cr\r\r\n"
                b"\r\nline\r\r\nend\r\n")
        srv = Inletd()
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("a@example.org", ["b@example.com"], bare)
            m = wait_for(lambda: srv.find("bare cr"), "the message listed")
            raw = srv.raw(m["ID"])
            self.assertNotIn(b"\r\r\n", raw)  # stored as Mailpit stores it
            self.assertIn(b"Subject: bare cr\r\n", raw)
            self.assertIn(b"line\r\nend", raw)
            self.assertEqual(m["From"]["Address"], "a@example.org")
        finally:
            srv.stop()
        srv = Inletd("--smtp-strict-rfc-headers")
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                with self.assertRaises(smtplib.SMTPDataError) as e:
                    s.sendmail("a@example.org", ["b@example.com"], bare)
                self.assertEqual(e.exception.smtp_code, 451)
                # A well-formed message on the same connection is taken.
                s.sendmail("a@example.org", ["b@example.com"], message("well formed"))
            wait_for(lambda: srv.find("well formed"), "the well-formed message listed")
            self.assertIsNone(srv.find("bare cr"))
        finally:
            srv.stop()

    def test_send_api_credentials_of_its_own_or_none(self):
        send = {"From": {"Email": "a@example.org"}, "To": [{"Email": "b@example.com"}],
                "Subject": "sent with its own credentials", "Text": "t"}
        curl = e2e_test.real_client(self, "curl")

        def call(srv, path, user=None, body=None):
            cmd = [curl, "-s", "-o", "/dev/null", "-w", "%{http_code}",
                   srv.url(path)]
            if user:
                cmd += ["-u", user]
            if body is not None:
                cmd += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
            return int(subprocess.run(cmd, capture_output=True, text=True,
                                      timeout=DEADLINE).stdout)

        with tempfile.NamedTemporaryFile("w", suffix=".htpasswd") as f:
            f.write("sender:sendpw\n")
            f.flush()
            env = {"MP_UI_AUTH": "reader:readpw"}
            srv = Inletd("--send-api-auth-file", f.name, env=env)
            try:
                self.assertEqual(call(srv, "/api/v1/send", "sender:sendpw", send), 200)
                self.assertEqual(call(srv, "/api/v1/send", "reader:readpw", send), 401)
                self.assertEqual(call(srv, "/api/v1/send", None, send), 401)
                self.assertEqual(call(srv, "/api/v1/messages", "reader:readpw"), 200)
                self.assertEqual(call(srv, "/api/v1/messages", "sender:sendpw"), 401)
            finally:
                srv.stop()
        srv = Inletd("--send-api-auth-accept-any", env={"MP_UI_AUTH": "reader:readpw"})
        try:
            self.assertEqual(call(srv, "/api/v1/send", None, send), 200)
            self.assertEqual(call(srv, "/api/v1/messages"), 401)
        finally:
            srv.stop()

    def test_prometheus_names_and_a_listener_of_its_own(self):
        curl = e2e_test.real_client(self, "curl")

        def fetch(url, user=None):
            cmd = [curl, "-s", "-w", "\n%{http_code}", url] + (["-u", user] if user else [])
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=DEADLINE).stdout
            body, _, code = out.rpartition("\n")
            return int(code), body

        srv = Inletd("--enable-prometheus", "127.0.0.1:0", env={"MP_UI_AUTH": "u:p"})
        try:
            line = next(l for l in srv.log if "prometheus listening on" in l)
            port = int(line.rsplit(":", 1)[1])
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("a@example.org", ["b@example.com"], message("counted"))
                s.sendmail("a@example.org", ["b@example.com"], message("counted too"))
            code, body = fetch(f"http://127.0.0.1:{port}/metrics")
            self.assertIn("# TYPE mailpit_tag_messages gauge", body)  # no tag yet: no sample
            self.assertNotIn("mailpit_tag_messages{", body)
            ids = [m["ID"] for m in json.loads(subprocess.run(
                [curl, "-s", "-u", "u:p", srv.url("/api/v1/messages")], capture_output=True,
                text=True, timeout=DEADLINE).stdout)["messages"]]
            subprocess.run([curl, "-s", "-u", "u:p", "-X", "PUT", "-H", "Content-Type: application/json",
                            "-d", json.dumps({"IDs": ids, "Tags": ["Blue", "say hi.2"]}),
                            srv.url("/api/v1/tags")], check=True, capture_output=True, timeout=DEADLINE)
            subprocess.run([curl, "-s", "-u", "u:p", "-X", "PUT", "-H", "Content-Type: application/json",
                            "-d", json.dumps({"IDs": ids[:1], "Tags": ["Blue"]}),
                            srv.url("/api/v1/tags")], check=True, capture_output=True, timeout=DEADLINE)
            code, body = fetch(f"http://127.0.0.1:{port}/metrics")  # no credentials needed
            self.assertEqual(code, 200)
            self.assertIn("# TYPE mailpit_messages gauge", body)
            self.assertRegex(body, r"(?m)^mailpit_smtp_accepted_total 2$")
            # Mailpit's per-tag gauge.
            self.assertRegex(body, r'(?m)^mailpit_tag_messages\{tag="Blue"\} 2$')
            self.assertRegex(body, r'(?m)^mailpit_tag_messages\{tag="say hi\.2"\} 1$')
            self.assertIn("inlet_store_messages", body)
            self.assertEqual(fetch(f"http://127.0.0.1:{port}/api/v1/messages")[0], 404)
            self.assertEqual(fetch(srv.url("/metrics"))[0], 401)  # the UI's keeps its auth
            code, body = fetch(srv.url("/metrics"), "u:p")
            self.assertEqual(code, 200)
            self.assertIn("mailpit_uptime_seconds", body)
        finally:
            srv.stop()
        srv = Inletd()
        try:  # without the flag: inlet's own names only, as before
            code, body = fetch(srv.url("/metrics"))
            self.assertEqual(code, 200)
            self.assertNotIn("mailpit_", body)
        finally:
            srv.stop()

    def test_ui_over_https_with_a_sans_certificate(self):
        import ssl
        import urllib.request
        curl = e2e_test.real_client(self, "curl")
        srv = Inletd("--ui-tls-cert", "sans:inlet.test,127.0.0.1",
                     "--ui-tls-key", "sans:inlet.test,127.0.0.1")
        try:
            base = f"https://127.0.0.1:{srv.http_port}"
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("a@example.org", ["b@example.com"], message("over https"))
            out = subprocess.run([curl, "-sk", base + "/api/v1/messages"], capture_output=True,
                                 text=True, timeout=DEADLINE).stdout
            self.assertEqual(json.loads(out)["messages"][0]["Subject"], "over https")
            # Plain HTTP on the HTTPS port gets no answer.
            r = subprocess.run([curl, "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                f"http://127.0.0.1:{srv.http_port}/livez"],
                               capture_output=True, text=True, timeout=DEADLINE)
            self.assertEqual(r.stdout, "000")
            # The event stream over TLS: a new message arrives as an event.
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            req = urllib.request.Request(base + "/api/events",
                                         headers={"Accept": "text/event-stream"})
            with urllib.request.urlopen(req, context=ctx, timeout=DEADLINE) as resp:
                self.assertEqual(resp.status, 200)
                self.assertTrue(resp.readline().startswith(b"retry:"))
                with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                    s.sendmail("a@example.org", ["b@example.com"], message("live over tls"))
                lines = [resp.readline() for _ in range(6)]
                self.assertTrue(any(b"live over tls" in l for l in lines), lines)
            # The certificate names what was asked for.
            cert = ssl.get_server_certificate(("127.0.0.1", srv.http_port))
            text = subprocess.run(["openssl", "x509", "-noout", "-text"], input=cert,
                                  capture_output=True, text=True, timeout=DEADLINE).stdout
            self.assertIn("DNS:inlet.test", text)
            # Mailpit's readyz subcommand as its image's HEALTHCHECK calls it.
            rc = subprocess.run([e2e_test.INLETD, "readyz", "--https", "-l",
                                 f"127.0.0.1:{srv.http_port}"], timeout=DEADLINE).returncode
            self.assertEqual(rc, 0)
        finally:
            srv.stop()

    def test_ignore_duplicate_ids(self):
        dup = (b"From: a@example.org\r\nTo: b@example.com\r\nSubject: dup\r\n"
               b"Message-ID: <dup-1@example.org>\r\n\r\nbody\r\n")
        srv = Inletd("--ignore-duplicate-ids")
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("a@example.org", ["b@example.com"], dup)
                s.mail("a@example.org")
                s.rcpt("b@example.com")
                code, text = s.data(dup)
                self.assertEqual((code, text), (250, b"2.0.0 Ok: queued"))
            wait_for(lambda: srv.get_json("/api/v1/info")["RuntimeStats"]["SMTPIgnored"] == 1,
                     "one ignored")
            self.assertEqual(srv.messages()["total"], 1)
            self.assertTrue(srv.get_json("/api/v1/webui")["DuplicatesIgnored"])
        finally:
            srv.stop()

    def test_api_answers_gzipped_unless_disabled(self):
        curl = e2e_test.real_client(self, "curl")

        def fetch(srv):
            r = subprocess.run([curl, "-s", "--compressed", "-D", "-", "-o", "/dev/null",
                                srv.url("/api/v1/messages")], capture_output=True, text=True,
                               timeout=DEADLINE)
            body = subprocess.run([curl, "-s", "--compressed", srv.url("/api/v1/messages")],
                                  capture_output=True, text=True, timeout=DEADLINE).stdout
            return r.stdout.lower(), json.loads(body)

        for disabled in (False, True):
            srv = Inletd(*(["--disable-http-compression"] if disabled else []))
            try:
                with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                    for i in range(8):  # a list of some KB
                        s.sendmail("a@example.org", ["b@example.com"], message(f"gz {i}"))
                wait_for(lambda: srv.messages()["total"] == 8, "eight stored")
                head, listing = fetch(srv)
                self.assertEqual(listing["total"], 8)  # curl decoded it
                if disabled:
                    self.assertNotIn("content-encoding", head)
                else:
                    self.assertIn("content-encoding: gzip", head)
                    self.assertIn("accept-encoding", head.split("vary:", 1)[1].split("\n")[0])
                # Without Accept-Encoding, plain JSON as before.
                plain = subprocess.run([curl, "-s", "-D", "-", srv.url("/api/v1/messages")],
                                       capture_output=True, text=True, timeout=DEADLINE).stdout
                self.assertNotIn("content-encoding", plain.lower())
            finally:
                srv.stop()

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
                "--smtp-max-recipients", "10", "--smtp-disable-rdns", "--smtp-strict-rfc-headers",
                "--enable-chaos",
                "--tag", "a=b", "--tags-title-case", "--tags-disable", "x-tags", "--tags-username",
                "--webhook-limit", "2", "--webhook-delay", "1", "--disable-html-check"]
        env = dict(os.environ, MP_ENABLE_PROMETHEUS="false")
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
            # Every option of this command line has an effect now: none is named as ignored.
            self.assertFalse(any("not supported" in l for l in lines), out)
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
