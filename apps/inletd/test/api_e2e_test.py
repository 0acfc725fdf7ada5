#!/usr/bin/env python3
"""End-to-end tests of inletd's Mailpit API v1 with real clients (smtplib, urllib, curl).

Mail goes in over SMTP, the API is read and changed over HTTP, as a Mailpit user's test
helpers do. The server is the one e2e_test.py starts (loopback, kernel-chosen ports).

    api_e2e_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import json
import os
import shutil
import smtplib
import subprocess
import sys
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import DEADLINE, HTTP, Inletd, wait_for  # noqa: E402


def mime_with_parts(subject):
    """multipart/mixed: related(html + inline image by Content-ID) + a PDF attachment."""
    return (
        "From: Ann Sender <ann@sender.example>\r\n"
        "To: Bob <bob@inbox.test.example>\r\n"
        f"Subject: {subject}\r\n"
        "Message-ID: <parts@sender.example>\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n"
        "--outer\r\n"
        "Content-Type: multipart/related; boundary=\"rel\"\r\n\r\n"
        "--rel\r\n"
        "Content-Type: text/html; charset=utf-8\r\n\r\n"
        "<html><body><p>Quarterly <b>figures</b> &amp; a logo</p><img src=\"cid:logo@x\"></body></html>\r\n"
        "--rel\r\n"
        "Content-Type: image/png\r\n"
        "Content-ID: <logo@x>\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n"
        "iVBORw0KGgo=\r\n"
        "--rel--\r\n"
        "--outer\r\n"
        "Content-Type: application/pdf; name=\"figures.pdf\"\r\n"
        "Content-Disposition: attachment; filename=\"figures.pdf\"\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n"
        "JVBERi0xLjQK\r\n"
        "--outer--\r\n").encode()


def plain(subject, body, to="bob@inbox.test.example", extra=""):
    return (f"From: Carol <carol@sender.example>\r\nTo: {to}\r\nSubject: {subject}\r\n"
            f"Message-ID: <{subject.replace(' ', '.')}@sender.example>\r\n{extra}"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n").encode()


class ApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Inletd()

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        log = "".join(cls.srv.log)
        # A sanitizer build reports there and exits non-zero.
        if rc != 0 or "Sanitizer" in log or "runtime error" in log:
            raise AssertionError(f"inletd exited {rc}:\n{log}")

    def setUp(self):
        self.srv.delete_all()

    def send(self, msg, rcpts=("bob@inbox.test.example",)):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.sendmail("sender@sender.example", list(rcpts), msg)

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        req = urllib.request.Request(self.srv.url(path), data=data, method=method)
        try:
            with HTTP.open(req, timeout=DEADLINE) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def search(self, query, **params):
        params["query"] = query
        return self.srv.get_json("/api/v1/search?" + urllib.parse.urlencode(params))

    def subjects(self, listing):
        return [m["Subject"] for m in listing["messages"]]

    def test_search_finds_what_a_test_helper_waits_for(self):
        self.send(plain("Your order 1234", "Thanks for ordering."))
        self.send(plain("Password reset", "Click the link to reset."))
        self.send(plain("Another order 5678", "Order shipped."))
        wait_for(lambda: self.srv.messages()["messages_count"] == 3, "3 messages")
        r = self.search("subject:order")
        self.assertEqual(self.subjects(r), ["Another order 5678", "Your order 1234"])
        self.assertEqual(r["messages_count"], 2)
        self.assertEqual(r["messages_unread"], 2)
        self.assertEqual(r["total"], 3)
        self.assertEqual(self.subjects(self.search("reset link")), ["Password reset"])
        self.assertEqual(self.subjects(self.search('"click the link"')), ["Password reset"])
        self.assertEqual(self.subjects(self.search("order -shipped")), ["Your order 1234"])
        self.assertEqual(self.subjects(self.search("from:carol subject:order", limit=1, start=1)),
                         ["Your order 1234"])
        status, body = self.request("GET", "/api/v1/search?query=larger%3Ahuge")
        self.assertEqual(status, 400)

    def test_put_search_marks_only_matches_and_delete_search(self):
        self.send(plain("keep one", "a"))
        self.send(plain("mark me", "b"))
        self.send(plain("keep two", "c"))
        wait_for(lambda: self.srv.messages()["messages_count"] == 3, "3 messages")
        status, body = self.request("PUT", "/api/v1/messages", {"Search": "subject:mark", "Read": True})
        self.assertEqual((status, body), (200, b"ok"))
        listing = self.srv.messages()
        self.assertEqual(listing["unread"], 2)
        self.assertEqual({m["Subject"]: m["Read"] for m in listing["messages"]},
                         {"keep one": False, "mark me": True, "keep two": False})
        status, _ = self.request("DELETE", "/api/v1/search?query=subject%3Akeep")
        self.assertEqual(status, 200)
        self.assertEqual(self.subjects(self.srv.messages()), ["mark me"])

    def test_latest_and_bcc_from_envelope(self):
        self.send(plain("first", "x"))
        self.send(plain("second", "y", extra="Cc: cc@inbox.test.example\r\n"),
                  rcpts=("bob@inbox.test.example", "cc@inbox.test.example", "hidden@inbox.test.example"))
        wait_for(lambda: self.srv.messages()["messages_count"] == 2, "2 messages")
        m = self.srv.get_json("/api/v1/message/latest")
        self.assertEqual(m["Subject"], "second")
        self.assertEqual([a["Address"] for a in m["Bcc"]], ["hidden@inbox.test.example"])
        self.assertEqual(self.subjects(self.search("bcc:hidden")), ["second"])
        self.assertEqual(self.subjects(self.search("addressed:cc@inbox")), ["second"])
        status, _, raw = self.srv.get("/api/v1/message/latest/raw")
        self.assertEqual(status, 200)
        self.assertIn(b"Subject: second", raw)

    def test_inline_parts_are_not_attachments(self):
        self.send(mime_with_parts("with parts"))
        self.send(plain("no parts", "z"))
        wait_for(lambda: self.srv.messages()["messages_count"] == 2, "2 messages")
        summary = [m for m in self.srv.messages()["messages"] if m["Subject"] == "with parts"][0]
        self.assertEqual(summary["Attachments"], 1)
        self.assertEqual(self.subjects(self.search("has:inline")), ["with parts"])
        self.assertEqual(self.subjects(self.search("has:attachment")), ["with parts"])
        self.assertEqual(self.subjects(self.search("-has:attachment")), ["no parts"])
        # HTML-only text is searchable as words; attachment names too.
        self.assertEqual(self.subjects(self.search('"quarterly figures & a logo"')), ["with parts"])
        self.assertEqual(self.subjects(self.search("figures.pdf")), ["with parts"])
        m = self.srv.get_json(f"/api/v1/message/{summary['ID']}")
        self.assertEqual([a["FileName"] for a in m["Attachments"]], ["figures.pdf"])
        self.assertEqual([a["ContentID"] for a in m["Inline"]], ["logo@x"])

    def test_curl_search(self):
        curl = shutil.which("curl")
        if not curl:
            self.skipTest("curl not installed")
        self.send(plain("curl me", "hello"))
        wait_for(lambda: self.srv.messages()["messages_count"] == 1, "1 message")
        r = subprocess.run([curl, "-s", "--noproxy", "*", "-G", self.srv.url("/api/v1/search"),
                            "--data-urlencode", "query=subject:\"curl me\""],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.subjects(json.loads(r.stdout)), ["curl me"])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
