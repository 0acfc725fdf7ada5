#!/usr/bin/env python3
"""End-to-end tests of MailHog's API (v1, v2) and MailDev's REST API served by inletd.

Mail goes in with smtplib; each catcher's documented paths are read and changed over HTTP
as its users' test helpers do: status codes and JSON shapes checked against MailHog's
data.Message and MailDev's mail object. Also: the /api/v1/messages collision rule, and
inletd started with nothing but MailHog's or MailDev's own variables.

    catchers_e2e_test.py --inletd build/bin/inletd [unittest args]
"""
import json
import os
import re
import smtplib
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_e2e_test  # noqa: E402  (its websocket client)
import e2e_test  # noqa: E402
from e2e_test import DEADLINE, HTTP, Inletd, wait_for  # noqa: E402


def multipart(subject, to="bob@inbox.example"):
    return (
        "From: Ann Sender <ann@sender.example>\r\n"
        f"To: Bob <{to}>\r\n"
        "Cc: Cy <cy@inbox.example>\r\n"
        f"Subject: {subject}\r\n"
        "Date: Mon, 05 Jan 2026 19:02:09 +0000\r\n"
        "X-Priority: 1\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n"
        "--outer\r\n"
        "Content-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n"
        "--alt\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\n"
        "The wax at the bank was surfer wax\r\n"
        "--alt\r\n"
        "Content-Type: text/html; charset=utf-8\r\n\r\n"
        "<p>The wax at the bank was <b>surfer</b> wax</p>\r\n"
        "--alt--\r\n"
        "--outer\r\n"
        "Content-Type: text/plain; name=\"notes.txt\"\r\n"
        "Content-Disposition: attachment; filename=\"notes.txt\"\r\n\r\n"
        "attachment body\r\n"
        "--outer--\r\n").encode()


def send(port, frm, to, data):
    with smtplib.SMTP("127.0.0.1", port, timeout=DEADLINE) as s:
        s.sendmail(frm, to, data)


def request(url, method="GET", body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, data=data)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with HTTP.open(req, timeout=DEADLINE) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def check_exit(rc, log):
    """A sanitizer build reports in the log and exits non-zero."""
    if rc != 0 or "Sanitizer" in log or "runtime error" in log:
        raise AssertionError(f"inletd exited {rc}:\n{log}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_ports():
    """Two distinct free ports (the kernel may hand the same one out twice in a row)."""
    smtp = free_port()
    web = free_port()
    while web == smtp:
        web = free_port()
    return smtp, web


PATH_KEYS = {"Relays", "Mailbox", "Domain", "Params"}
MESSAGE_KEYS = {"ID", "From", "To", "Content", "Created", "MIME", "Raw"}
CONTENT_KEYS = {"Headers", "Body", "Size", "MIME"}
RAW_KEYS = {"From", "To", "Data", "Helo"}
MAILDEV_KEYS = {"id", "time", "read", "subject", "from", "to", "cc", "bcc", "date", "text",
                "html", "headers", "priority", "attachments", "envelope", "size", "sizeHuman"}
SUMMARY_KEYS = {"id", "time", "read", "subject", "size", "sizeHuman", "from", "to",
                "attachmentCount", "preview"}


class Catchers(unittest.TestCase):
    def url(self, path):
        return self.srv.url(path)

    def get_json(self, path, status=200):
        st, headers, body = request(self.url(path))
        self.assertEqual(st, status, body)
        self.assertIn("application/json", headers["Content-Type"])
        return json.loads(body)

    def fill(self):
        self.assertEqual(request(self.url("/api/v2/messages"), "DELETE")[0], 200)
        send(self.srv.smtp_port, "ann@sender.example", ["bob@inbox.example"],
             multipart("first wave"))
        send(self.srv.smtp_port, "dan@other.example", ["eve@inbox.example"],
             b"From: dan@other.example\r\nTo: eve@inbox.example\r\nSubject: second wave\r\n\r\n"
             b"nothing about surfing\r\n")
        wait_for(lambda: self.get_json("/api/v2/messages")["total"] == 2, "two messages")


class MailHogTest(Catchers):
    @classmethod
    def setUpClass(cls):
        cls.srv = Inletd("--mailhog-api")

    @classmethod
    def tearDownClass(cls):
        check_exit(cls.srv.stop(), "".join(cls.srv.log))

    def check_message(self, m):
        self.assertEqual(set(m), MESSAGE_KEYS)
        self.assertEqual(set(m["From"]), PATH_KEYS)
        for p in m["To"]:
            self.assertEqual(set(p), PATH_KEYS)
        self.assertEqual(set(m["Content"]), CONTENT_KEYS)
        self.assertEqual(set(m["Raw"]), RAW_KEYS)
        self.assertRegex(m["Created"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
        for k, v in m["Content"]["Headers"].items():
            self.assertIsInstance(v, list, k)

    def test_v2_list_and_paging(self):
        self.fill()
        page = self.get_json("/api/v2/messages")
        self.assertEqual(set(page), {"total", "count", "start", "items"})
        self.assertEqual((page["total"], page["count"], page["start"]), (2, 2, 0))
        for m in page["items"]:
            self.check_message(m)
        first = page["items"][0]  # newest first, as MailHog lists
        self.assertEqual(first["Content"]["Headers"]["Subject"], ["second wave"])
        self.assertEqual(first["From"]["Mailbox"], "dan")
        self.assertEqual(first["From"]["Domain"], "other.example")
        self.assertEqual(first["Raw"]["To"], ["eve@inbox.example"])
        self.assertIn("nothing about surfing", first["Content"]["Body"])
        self.assertIsNone(first["MIME"])
        second = page["items"][1]
        parts = second["MIME"]["Parts"]
        self.assertEqual(len(parts), 2)
        self.assertEqual(parts[1]["Headers"]["Content-Disposition"],
                         ['attachment; filename="notes.txt"'])
        self.assertEqual(len(parts[0]["MIME"]["Parts"]), 2)  # the alternative's children
        one = self.get_json("/api/v2/messages?start=1&limit=1")
        self.assertEqual((one["total"], one["count"], one["start"]), (2, 1, 1))
        self.assertEqual(one["items"][0]["ID"], second["ID"])
        # MailHog ignores a start or limit that is not a positive integer (never a 400).
        bad = self.get_json("/api/v2/messages?start=x&limit=-3")
        self.assertEqual((bad["total"], bad["count"], bad["start"]), (2, 2, 0))

    def test_v2_search(self):
        self.fill()
        r = self.get_json("/api/v2/search?kind=from&query=dan@other.example")
        self.assertEqual(r["total"], 1)
        self.assertEqual(r["items"][0]["Raw"]["From"], "dan@other.example")
        r = self.get_json("/api/v2/search?kind=to&query=bob@inbox.example")
        self.assertEqual([m["Content"]["Headers"]["Subject"][0] for m in r["items"]], ["first wave"])
        r = self.get_json("/api/v2/search?kind=containing&query=surfer")
        self.assertEqual(r["total"], 1)
        self.assertEqual(request(self.url("/api/v2/search?kind=bcc&query=x"))[0], 400)
        self.assertEqual(request(self.url("/api/v2/search?kind=from"))[0], 400)

    def test_v2_search_envelope(self):
        """kind=from/to find the envelope (MAIL FROM, RCPT TO) or else the header, as
        MailHog's storage does: a VERP sender and a Bcc-style recipient that no header
        names are found; Mailpit's header-only to: does not see the latter."""
        self.assertEqual(request(self.url("/api/v2/messages"), "DELETE")[0], 200)
        port = self.srv.smtp_port
        send(port, "bounces+7f3a@Mailer.Example", ["list@brand.example", "Hidden@Secret.example"],
             b"From: Brand News <news@brand.example>\r\nTo: list@brand.example\r\n"
             b"Subject: verp\r\n\r\nhello\r\n")
        for i in range(3):
            send(port, f"plain{i}@sender.example", [f"r{i}@inbox.example"],
                 f"From: plain{i}@sender.example\r\nTo: r{i}@inbox.example\r\n"
                 f"Subject: plain {i}\r\n\r\nhi\r\n".encode())
        wait_for(lambda: self.get_json("/api/v2/messages")["total"] == 4, "four messages")

        def search(kind, query, extra=""):
            q = urllib.parse.urlencode({"kind": kind, "query": query})
            return self.get_json(f"/api/v2/search?{q}{extra}")

        def subjects(r):
            return [m["Content"]["Headers"]["Subject"][0] for m in r["items"]]

        for query in ("bounces+7f3a", "MAILER.example", "news@brand", "Brand News"):
            r = search("from", query)
            self.assertEqual((r["total"], r["count"], r["start"]), (1, 1, 0), query)
            self.assertEqual(subjects(r), ["verp"], query)
            self.assertEqual(r["items"][0]["Raw"]["From"], "bounces+7f3a@Mailer.Example")
        for query in ("hidden@secret", "SECRET.EXAMPLE", "list@brand"):
            r = search("to", query)
            self.assertEqual(subjects(r), ["verp"], query)
            self.check_message(r["items"][0])
        # The sender is not a recipient, nor the other way round.
        self.assertEqual(search("to", "bounces+7f3a")["total"], 0)
        self.assertEqual(search("from", "hidden@secret")["total"], 0)
        none = search("to", "nobody@nowhere")
        self.assertEqual((none["total"], none["count"], none["start"], none["items"]),
                         (0, 0, 0, []))
        # MailHog's paging over the matches: newest first, total independent of the window.
        r = search("from", "sender.example", "&start=1&limit=1")
        self.assertEqual((r["total"], r["count"], r["start"]), (3, 1, 1))
        self.assertEqual(subjects(r), ["plain 1"])
        # Mailpit's language keeps its own meaning: to: reads the To: header only.
        mp = self.get_json("/api/v1/search?" + urllib.parse.urlencode({"query": "to:hidden"}))
        self.assertEqual(mp["messages_count"], 0)

    def test_v1_paths(self):
        self.fill()
        lst = self.get_json("/api/v1/messages")
        self.assertIsInstance(lst, list)  # MailHog's flavour: an array
        self.assertEqual(len(lst), 2)
        mid = lst[1]["ID"]
        m = self.get_json(f"/api/v1/messages/{mid}")
        self.check_message(m)
        st, headers, body = request(self.url(f"/api/v1/messages/{mid}/download"))
        self.assertEqual(st, 200)
        self.assertIn("attachment", headers["Content-Disposition"])
        self.assertIn(b"Subject: first wave", body)
        st, _, body = request(self.url(f"/api/v1/messages/{mid}/mime/part/1/download"))
        self.assertEqual((st, body), (200, b"attachment body"))
        self.assertEqual(request(self.url(f"/api/v1/messages/{mid}/mime/part/9/download"))[0], 404)
        # Mailpit's views read the same ID.
        self.assertEqual(self.get_json(f"/api/v1/message/{mid}")["Subject"], "first wave")
        self.assertEqual(request(self.url(f"/api/v1/messages/{mid}"), "DELETE")[0], 200)
        self.assertEqual(request(self.url(f"/api/v1/messages/{mid}"))[0], 404)
        self.assertEqual(request(self.url(f"/api/v1/messages/{mid}"), "DELETE")[0], 404)
        self.assertEqual(request(self.url("/api/v1/messages"), "DELETE")[0], 200)
        self.assertEqual(self.get_json("/api/v1/messages"), [])
        self.assertEqual(request(self.url("/api/v1/messages"), "PUT")[0], 405)

    def test_large_pages_are_cut(self):
        self.assertEqual(request(self.url("/api/v2/messages"), "DELETE")[0], 200)
        line = "x" * 76 + "\r\n"
        big = ("Subject: big\r\n\r\n" + line * 13000).encode()  # ~1 MB each
        for _ in range(4):
            send(self.srv.smtp_port, "a@b.example", ["c@d.example"], big)
        page = self.get_json("/api/v2/messages")
        # The answer holds whole messages: it stops near the listing byte bound and says so.
        self.assertEqual(page["total"], 4)
        self.assertGreaterEqual(page["count"], 1)
        self.assertLess(page["count"], 4)
        self.assertEqual(page["count"], len(page["items"]))
        self.assertEqual(request(self.url("/api/v2/messages"), "DELETE")[0], 200)

    def test_v1_event_stream_and_v2_websocket_carry_new_messages(self):
        # The v1 stream: Server-Sent Events, each new message as MailHog's data.Message.
        resp = urllib.request.urlopen(self.url("/api/v1/events"), timeout=DEADLINE)
        self.assertEqual(resp.headers["Content-Type"], "text/event-stream")
        self.assertTrue(resp.readline().startswith(b"retry:"))
        # The v2 websocket, as MailHog's UI opens it.
        sock, head, accept, rest = api_e2e_test.ws_connect(self.srv.http_port, "/api/v2/websocket")
        self.assertIn("101", head.split("\r\n")[0])
        self.assertIn(accept, head)
        send(self.srv.smtp_port, "ann@sender.example", ["bob@inbox.example"],
             b"From: ann@sender.example\r\nTo: bob@inbox.example\r\nSubject: live hog\r\n\r\n"
             b"live\r\n")
        line = b""
        while not line.startswith(b"data: "):
            line = resp.readline()
        m = json.loads(line[6:])
        self.check_message(m)
        self.assertEqual(m["Content"]["Headers"]["Subject"], ["live hog"])
        resp.close()
        buf = [rest]
        w = json.loads(api_e2e_test.ws_read_text(sock, buf))
        self.check_message(w)
        self.assertEqual(w["ID"], m["ID"])  # no Mailpit stats message in between
        sock.close()

    def test_release_without_relay(self):
        self.fill()
        mid = self.get_json("/api/v2/messages")["items"][0]["ID"]
        st, _, _ = request(self.url(f"/api/v1/messages/{mid}/release"), "POST",
                           {"Host": "127.0.0.1", "Port": "1", "Email": "x@y.example"})
        self.assertEqual(st, 400)  # no relay configured: nothing leaves


JIM_KEYS = ["DisconnectChance", "AcceptChance", "LinkSpeedAffect", "LinkSpeedMin",
            "LinkSpeedMax", "RejectSenderChance", "RejectRecipientChance", "RejectAuthChance"]


class JimTest(Catchers):
    """MailHog's /api/v2/jim, driving inlet's chaos: rejections seen by smtplib."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Inletd("--mailhog-api", "--smtp-auth-accept-any", "--smtp-auth-allow-insecure")

    @classmethod
    def tearDownClass(cls):
        check_exit(cls.srv.stop(), "".join(cls.srv.log))

    def jim(self, method, body=None):
        return request(self.url("/api/v2/jim"), method, body)

    def test_jim_lifecycle_and_rejections(self):
        port = self.srv.smtp_port
        self.assertEqual(self.jim("GET")[0], 404)       # Jim is out
        self.assertEqual(self.jim("PUT", {})[0], 404)
        self.assertEqual(self.jim("DELETE")[0], 404)
        # Invited with a body: the named settings, every other one 0 (as MailHog decodes).
        self.assertEqual(self.jim("POST", {"RejectSenderChance": 1, "LinkSpeedMin": 2048})[0], 201)
        try:
            st, headers, body = self.jim("GET")
            self.assertEqual(st, 200)
            self.assertIn("application/json", headers["Content-Type"])
            got = json.loads(body)
            self.assertEqual(list(got), JIM_KEYS)
            self.assertEqual(got["RejectSenderChance"], 1)
            self.assertEqual(got["LinkSpeedMin"], 2048)
            self.assertEqual(got["AcceptChance"], 0)
            self.assertEqual(self.jim("POST", {})[0], 400)  # already in
            # Mailpit's view of the same chaos.
            chaos = self.get_json("/api/v1/chaos")
            self.assertEqual(chaos["Sender"], {"ErrorCode": 550, "Probability": 100})
            with self.assertRaises(smtplib.SMTPSenderRefused) as e:
                send(port, "ann@sender.example", ["bob@inbox.example"], b"Subject: x\r\n\r\nx\r\n")
            self.assertEqual(e.exception.smtp_code, 550)

            self.assertEqual(self.jim("PUT", {"RejectRecipientChance": 1.0})[0], 200)
            self.assertEqual(json.loads(self.jim("GET")[2])["RejectSenderChance"], 0)
            with self.assertRaises(smtplib.SMTPRecipientsRefused) as e:
                send(port, "ann@sender.example", ["bob@inbox.example"], b"Subject: x\r\n\r\nx\r\n")
            self.assertEqual(e.exception.recipients["bob@inbox.example"][0], 550)
            self.assertEqual(self.jim("PUT", "not an object")[0], 400)

            self.assertEqual(self.jim("PUT", {"RejectAuthChance": 1})[0], 200)
            with smtplib.SMTP("127.0.0.1", port, timeout=DEADLINE) as s:
                with self.assertRaises(smtplib.SMTPAuthenticationError) as e:
                    s.login("user", "secret")
                self.assertEqual(e.exception.smtp_code, 535)
        finally:
            self.assertEqual(self.jim("DELETE")[0], 200)
        self.assertEqual(self.jim("GET")[0], 404)
        self.assertEqual(self.get_json("/api/v1/chaos")["Recipient"]["Probability"], 0)
        send(port, "ann@sender.example", ["bob@inbox.example"], b"Subject: ok\r\n\r\nx\r\n")
        # A body-less POST invites Jim with the last settings, as MailHog does.
        self.assertEqual(request(self.url("/api/v2/jim"), "POST")[0], 201)
        try:
            self.assertEqual(json.loads(self.jim("GET")[2])["RejectAuthChance"], 1)
        finally:
            self.assertEqual(self.jim("DELETE")[0], 200)


class CollisionTest(unittest.TestCase):
    def test_mailpit_is_the_default(self):
        srv = Inletd()
        try:
            send(srv.smtp_port, "a@b.example", ["c@d.example"], b"Subject: x\r\n\r\nx\r\n")
            wait_for(lambda: srv.messages()["total"] == 1, "one message")
            st, _, body = request(srv.url("/api/v1/messages"))
            self.assertIsInstance(json.loads(body), dict)  # Mailpit's object
            self.assertIn("messages", json.loads(body))
            # MailHog's other paths do not collide and are there anyway.
            self.assertEqual(json.loads(request(srv.url("/api/v2/messages"))[2])["total"], 1)
            self.assertEqual(len(json.loads(request(srv.url("/api/email"))[2])), 1)
        finally:
            check_exit(srv.stop(), "".join(srv.log))


class MailDevTest(Catchers):
    @classmethod
    def setUpClass(cls):
        cls.srv = Inletd()

    @classmethod
    def tearDownClass(cls):
        check_exit(cls.srv.stop(), "".join(cls.srv.log))

    def check_mail(self, m):
        self.assertEqual(set(m), MAILDEV_KEYS)
        self.assertEqual(set(m["envelope"]), {"from", "to", "host", "remoteAddress"})
        for a in m["from"] + m["to"] + m["cc"]:
            self.assertEqual(set(a), {"address", "name"})
        for a in m["attachments"]:
            self.assertEqual(set(a), {"filename", "generatedFileName", "contentType",
                                      "contentDisposition", "contentId", "size"})

    def test_list_get_and_bodies(self):
        self.fill()
        for prefix in ("/api", ""):  # MailDev 3 and its 2.x paths
            mails = self.get_json(f"{prefix}/email")
            self.assertEqual(len(mails), 2)
            for m in mails:
                self.check_mail(m)
            self.assertEqual(mails[0]["subject"], "first wave")  # arrival order
        m = self.get_json("/api/email")[0]
        self.assertEqual(m["from"], [{"address": "ann@sender.example", "name": "Ann Sender"}])
        self.assertEqual(m["cc"], [{"address": "cy@inbox.example", "name": "Cy"}])
        self.assertEqual(m["text"].strip(), "The wax at the bank was surfer wax")
        self.assertIn("<b>surfer</b>", m["html"])
        self.assertEqual(m["headers"]["subject"], "first wave")
        self.assertEqual(m["priority"], "high")
        self.assertEqual(m["date"], "2026-01-05T19:02:09.000Z")
        self.assertEqual(m["attachments"][0]["filename"], "notes.txt")
        self.assertEqual(m["envelope"]["from"], {"address": "ann@sender.example"})
        self.assertEqual(m["envelope"]["to"], [{"address": "bob@inbox.example"}])
        self.assertEqual(m["envelope"]["remoteAddress"], "127.0.0.1")
        self.assertFalse(m["read"])
        got = self.get_json(f"/api/email/{m['id']}")
        self.assertTrue(got["read"])  # opening marks it read
        self.assertTrue(self.get_json("/api/email")[0]["read"])
        self.assertEqual(self.get_json(f"/api/v1/message/{m['id']}")["Subject"], "first wave")
        st, h, body = request(self.url(f"/api/email/{m['id']}/html"))
        self.assertEqual(st, 200)
        self.assertIn("text/html", h["Content-Type"])
        self.assertIn(b"<b>surfer</b>", body)
        st, _, body = request(self.url(f"/api/email/{m['id']}/source"))
        self.assertIn(b"Subject: first wave", body)
        st, h, body = request(self.url(f"/email/{m['id']}/download"))
        self.assertEqual(st, 200)
        self.assertIn(".eml", h["Content-Disposition"])
        st, _, body = request(self.url(f"/api/email/{m['id']}/attachment/notes.txt"))
        self.assertEqual((st, body), (200, b"attachment body"))
        self.assertEqual(request(self.url(f"/api/email/{m['id']}/attachment/none.txt"))[0], 404)
        self.assertEqual(request(self.url("/api/email/nosuchid"))[0], 404)

    def test_paging_filters_summary(self):
        self.fill()
        self.assertEqual([m["subject"] for m in self.get_json("/api/email?sort=desc")],
                         ["second wave", "first wave"])
        self.assertEqual([m["subject"] for m in self.get_json("/api/email?skip=1&limit=1")],
                         ["second wave"])
        self.assertEqual([m["subject"] for m in self.get_json("/api/email?subject=first%20wave")],
                         ["first wave"])
        self.assertEqual(len(self.get_json("/api/email?from.address=dan@other.example")), 1)
        s = self.get_json("/api/email/summary?limit=1")
        self.assertEqual(set(s), {"items", "total", "storeTotal", "unread", "skip", "limit"})
        self.assertEqual(set(s["items"][0]), SUMMARY_KEYS)
        self.assertEqual((s["total"], s["storeTotal"], s["unread"], s["limit"]), (2, 2, 2, 1))
        self.assertEqual(s["items"][0]["subject"], "second wave")
        s = self.get_json("/api/email/summary?sort=asc&limit=1")
        self.assertEqual(s["items"][0]["subject"], "first wave")
        s = self.get_json("/api/email/summary?search=surfer")
        self.assertEqual((s["total"], s["storeTotal"]), (1, 2))
        self.assertEqual(self.get_json("/api/email/summary?limit=1000")["limit"], 200)

    def test_deletes_and_read_all(self):
        self.fill()
        ids = [m["id"] for m in self.get_json("/api/email")]
        st, _, body = request(self.url("/api/email/read-all"), "PATCH")
        self.assertEqual((st, json.loads(body)), (200, 2))
        self.assertEqual(self.get_json("/api/email/summary")["unread"], 0)
        st, _, body = request(self.url(f"/api/email/{ids[0]}"), "DELETE")
        self.assertEqual((st, json.loads(body)), (200, True))
        self.assertEqual(request(self.url(f"/api/email/{ids[0]}"), "DELETE")[0], 404)
        st, _, body = request(self.url("/api/email/delete"), "POST", [ids[1]])
        self.assertEqual(st, 200)
        self.assertEqual(self.get_json("/api/email"), [])
        self.assertEqual(request(self.url("/api/email/delete"), "POST", {"x": 1})[0], 400)
        self.fill()
        st, _, body = request(self.url("/api/email/all"), "DELETE")
        self.assertEqual((st, json.loads(body)), (200, True))
        self.assertEqual(self.get_json("/email"), [])

    def test_config_and_health(self):
        self.assertEqual(self.get_json("/api/healthz"), True)
        self.assertEqual(self.get_json("/healthz"), True)
        self.assertIn("isOutgoingEnabled", self.get_json("/api/config"))


class Started:
    """inletd started with only a catcher's variables, as its compose files start it."""

    def __init__(self, env, http_port, smtp_port, args=()):
        e = dict(os.environ)
        e.update(env)
        self.proc = subprocess.Popen([e2e_test.INLETD, "--max-connections", "200", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=e)
        self.log = []
        end = time.monotonic() + DEADLINE
        want = {f"smtp listening on 127.0.0.1:{smtp_port}", f"http listening on 127.0.0.1:{http_port}"}
        while time.monotonic() < end and want:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.log.append(line)
            want = {w for w in want if w not in line}
        if want:
            self.proc.kill()
            raise RuntimeError("inletd did not listen where told:\n" + "".join(self.log))
        self._drain = threading.Thread(target=lambda: self.log.extend(self.proc.stdout), daemon=True)
        self._drain.start()

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(timeout=DEADLINE)
        self._drain.join(timeout=DEADLINE)
        return rc


class VariablesTest(unittest.TestCase):
    def test_mailhog_variables(self):
        smtp, web = two_ports()
        srv = Started({"MH_SMTP_BIND_ADDR": f"127.0.0.1:{smtp}",
                       "MH_API_BIND_ADDR": f"127.0.0.1:{web}",
                       "MH_UI_BIND_ADDR": f"127.0.0.1:{web}",
                       "MH_HOSTNAME": "mailhog.test.example"}, web, smtp)
        try:
            with smtplib.SMTP("127.0.0.1", smtp, timeout=DEADLINE) as s:
                code, msg = s.ehlo()
                self.assertIn(b"mailhog.test.example", msg)
                s.sendmail("a@b.example", ["c@d.example"], b"Subject: hog\r\n\r\nx\r\n")
            base = f"http://127.0.0.1:{web}"
            wait_for(lambda: json.loads(request(base + "/api/v2/messages")[2])["total"] == 1, "mail")
            # MailHog's variables select MailHog's /api/v1/messages.
            self.assertIsInstance(json.loads(request(base + "/api/v1/messages")[2]), list)
        finally:
            check_exit(srv.stop(), "".join(srv.log))

    def test_mailhog_invite_jim(self):
        smtp, web = two_ports()
        srv = Started({"MH_SMTP_BIND_ADDR": f"127.0.0.1:{smtp}",
                       "MH_API_BIND_ADDR": f"127.0.0.1:{web}"}, web, smtp,
                      ["-invite-jim", "-jim-reject-sender=0", "-jim-reject-recipient=1",
                       "-jim-linkspeed-max=999"])
        try:
            base = f"http://127.0.0.1:{web}"
            got = json.loads(request(base + "/api/v2/jim")[2])
            self.assertEqual(got["RejectRecipientChance"], 1)
            self.assertEqual(got["LinkSpeedMax"], 999)
            self.assertEqual(got["DisconnectChance"], 0.005)  # MailHog's default
            with self.assertRaises(smtplib.SMTPRecipientsRefused):
                send(smtp, "a@b.example", ["c@d.example"], b"Subject: hog\r\n\r\nx\r\n")
        finally:
            check_exit(srv.stop(), "".join(srv.log))

    def test_maildev_variables(self):
        smtp, web = two_ports()
        srv = Started({"MAILDEV_SMTP_PORT": str(smtp), "MAILDEV_WEB_PORT": str(web),
                       "MAILDEV_IP": "127.0.0.1", "MAILDEV_WEB_IP": "127.0.0.1"}, web, smtp)
        try:
            send(smtp, "a@b.example", ["c@d.example"], b"Subject: dev\r\n\r\nx\r\n")
            base = f"http://127.0.0.1:{web}"
            wait_for(lambda: len(json.loads(request(base + "/api/email")[2])) == 1, "mail")
            # Mailpit's object stays where MailHog's flavour is not asked for.
            self.assertIsInstance(json.loads(request(base + "/api/v1/messages")[2]), dict)
        finally:
            check_exit(srv.stop(), "".join(srv.log))

    def test_maildev_flags(self):
        smtp, web = two_ports()
        args = [e2e_test.INLETD, "--max-connections", "200", "-s", str(smtp), "-w", str(web),
                "--ip", "127.0.0.1", "--web-ip", "127.0.0.1"]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            seen = ""
            end = time.monotonic() + DEADLINE
            while time.monotonic() < end and f"http listening on 127.0.0.1:{web}" not in seen:
                line = p.stdout.readline()
                if not line:
                    break
                seen += line
            self.assertIn(f"smtp listening on 127.0.0.1:{smtp}", seen)
            self.assertIn(f"http listening on 127.0.0.1:{web}", seen)
        finally:
            p.terminate()
            rc = p.wait(timeout=DEADLINE)
            check_exit(rc, seen + p.stdout.read())


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
