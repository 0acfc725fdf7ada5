#!/usr/bin/env python3
"""End-to-end tests of inletd's Mailpit API v1 with real clients (smtplib, urllib, curl).

Mail goes in over SMTP, the API is read and changed over HTTP, as a Mailpit user's test
helpers do. The server is the one e2e_test.py starts (loopback, kernel-chosen ports).

    api_e2e_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import base64
import hashlib
import http.server
import json
import os
import shutil
import smtplib
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

try:
    import jsonschema  # Debian python3-jsonschema, installed by scripts/install-deps.sh
except ImportError:  # pragma: no cover - reported by the schema test
    jsonschema = None

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
        cls.srv.stop_clean()

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


ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.."))
with open(os.path.join(ROOT, "http/assets/mailpit-api-v1.swagger.json")) as f:
    SWAGGER = json.load(f)


def response_schema(path, method):
    """The 200 schema the swagger gives for an operation."""
    r = SWAGGER["paths"][path][method]["responses"]["200"]
    if "$ref" in r:
        r = SWAGGER["responses"][r["$ref"].split("/")[-1]]
    return r.get("schema")


def resolve(schema):
    while "$ref" in schema:
        schema = SWAGGER["definitions"][schema["$ref"].split("/")[-1]]
    return schema


def missing_fields(value, schema, where="$"):
    """Every property the swagger defines is present (Mailpit always writes them all)."""
    schema = resolve(schema)
    out = []
    if schema.get("type") == "object" and isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name not in value:
                out.append(f"{where}.{name}")
            else:
                out += missing_fields(value[name], sub, f"{where}.{name}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for k, v in value.items():
                out += missing_fields(v, extra, f"{where}[{k!r}]")
    elif schema.get("type") == "array" and isinstance(value, list):
        for i, v in enumerate(value[:5]):
            out += missing_fields(v, schema.get("items", {}), f"{where}[{i}]")
    return out


class SchemaChecked:
    """Mixin: check an answer against the swagger's schema for its operation."""

    def check_schema(self, path, method, body):
        self.assertIsNotNone(jsonschema, "python3-jsonschema is not installed (scripts/install-deps.sh)")
        schema = response_schema(path, method)
        root = dict(schema)
        root["definitions"] = SWAGGER["definitions"]
        jsonschema.Draft4Validator(root).validate(body)
        self.assertEqual(missing_fields(body, schema), [], f"{method.upper()} {path}")
        return body


class LinkServer(http.server.BaseHTTPRequestHandler):
    """Loopback targets for the link check: /ok 200, /missing 404, /nohead refuses HEAD."""

    def _answer(self, head):
        if self.path.startswith("/missing"):
            self.send_response(404)
        elif self.path.startswith("/nohead") and head:
            self.send_response(405)
        elif self.path.startswith("/moved"):
            self.send_response(301)
            self.send_header("Location", "/ok")
        else:
            self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        if not head:
            self.wfile.write(b"ok")

    def do_HEAD(self):
        self._answer(True)

    def do_GET(self):
        self._answer(False)

    def log_message(self, *args):
        pass


def ws_connect(port, path="/api/events", headers=""):
    """A minimal websocket client (RFC 6455): the upgrade, then unmasked server frames."""
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{headers}\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            break
        head += d
    head, rest = head.split(b"\r\n\r\n", 1)
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    return s, head.decode("latin-1"), accept, rest


def ws_read_text(s, buf):
    """Next text frame's payload (bytes left over are kept in buf[0])."""
    def need(n):
        while len(buf[0]) < n:
            d = s.recv(65536)
            if not d:
                raise EOFError
            buf[0] += d
    while True:
        need(2)
        b0, b1 = buf[0][0], buf[0][1]
        n, off = b1 & 0x7F, 2
        if n == 126:
            need(4)
            n, off = struct.unpack(">H", buf[0][2:4])[0], 4
        elif n == 127:
            need(10)
            n, off = struct.unpack(">Q", buf[0][2:10])[0], 10
        need(off + n)
        payload, buf[0] = buf[0][off:off + n], buf[0][off + n:]
        if b0 & 0x0F == 1:
            return payload.decode()
        if b0 & 0x0F == 8:
            raise EOFError


class OperationsTest(ApiTest, SchemaChecked):
    """Every operation of the swagger against a running inletd, each JSON answer checked
    against the swagger's schema."""

    @classmethod
    def setUpClass(cls):
        cls.links = http.server.ThreadingHTTPServer(("127.0.0.1", 0), LinkServer)
        threading.Thread(target=cls.links.serve_forever, daemon=True).start()
        cls.link_base = f"http://127.0.0.1:{cls.links.server_address[1]}"
        cls.srv = Inletd("--enable-chaos", "--tag", "invoices=subject:invoice", "--api-cors", "*",
                         "--allow-internal-http-requests")  # the links are on loopback

    @classmethod
    def tearDownClass(cls):
        cls.links.shutdown()
        super().tearDownClass()

    def rich(self, subject):
        png = ("iVBORw0KGgoAAAANSUhEUgAAAPAAAACgCAIAAAC9uXYyAAABRElEQVR42u3SQQ0AAAjEsBOBWCQiCxV8SJMqWJbqgTciAYYG"
               "Q4OhwdAYGgwNhgZDg6ExNBgaDA2GBkNjaDA0GBoMDYbG0GBoMDQYGgyNocHQYGgwNBgaQ4OhwdBgaDA0hgZDg6HB0BgaDA2GBkOD"
               "oTE0GBoMDYYGQ2NoMDQYGgwNhsbQYGgwNBgaDI2hwdBgaDA0GBpDg6HB0GBoMDSGBkODocHQYGgMDYYGQ4OhMTQYGgwNhgZDY2gw"
               "NBgaDA2GxtBgaDA0GBoMjaHB0GBoMDQYGkODocHQYGgwNIYGQ4OhwdBgaAwNhgZDg6ExtAoYGgwNhgZDY2gwNBgaDA2GxtBgaDA0"
               "GBoMjaHB0GBoMDQYGkODocHQYGgwNIYGQ4OhwdBgaAwNhgZDg6HB0BgaDA2GBkNjaDA0GBoMDYbG0GBoMDTcWG/IQ6r6MrpnAAAA"
               "AElFTkSuQmCC")
        return ("From: Ann <ann+alerts@sender.example>\r\nTo: Bob <bob@inbox.test.example>\r\n"
                f"Subject: {subject}\r\nX-Tags: first, Second tag\r\n"
                "List-Unsubscribe: <mailto:stop@sender.example>, <https://sender.example/u>\r\n"
                "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=o\r\n\r\n"
                "--o\r\nContent-Type: multipart/alternative; boundary=a\r\n\r\n"
                f"--a\r\nContent-Type: text/plain\r\n\r\nSee {self.link_base}/ok and {self.link_base}/missing\r\n"
                "--a\r\nContent-Type: multipart/related; boundary=r\r\n\r\n"
                f"--r\r\nContent-Type: text/html\r\n\r\n<html><body style=\"display:flex\"><p>Hi "
                f"<a href=\"{self.link_base}/nohead\">x</a> <img src=\"cid:pic@x\"></p></body></html>\r\n"
                "--r\r\nContent-Type: image/png\r\nContent-ID: <pic@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                f"{png}\r\n--r--\r\n--a--\r\n"
                "--o\r\nContent-Type: application/pdf; name=report.pdf\r\nContent-Disposition: attachment; "
                "filename=report.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--o--\r\n").encode()

    def get_json(self, path):
        status, body = self.request("GET", path)
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def test_messages_search_and_message(self):
        self.send(self.rich("invoice 7"), rcpts=("bob@inbox.test.example", "hidden@inbox.test.example"))
        self.send(plain("other", "x"))
        wait_for(lambda: self.srv.messages()["messages_count"] == 2, "2 messages")
        listing = self.check_schema("/api/v1/messages", "get", self.get_json("/api/v1/messages"))
        self.check_schema("/api/v1/search", "get", self.get_json("/api/v1/search?query=invoice"))
        m = self.check_schema("/api/v1/message/{ID}", "get", self.get_json("/api/v1/message/latest"))
        self.assertEqual(m["Subject"], "other")
        rich = [x for x in listing["messages"] if x["Subject"] == "invoice 7"][0]
        m = self.check_schema("/api/v1/message/{ID}", "get", self.get_json(f"/api/v1/message/{rich['ID']}"))
        # Tags: X-Tags, the plus address, the --tag rule; listed everywhere.
        self.assertEqual(sorted(m["Tags"]), ["Second tag", "alerts", "first", "invoices"])
        self.assertEqual(sorted(rich["Tags"]), sorted(m["Tags"]))
        self.assertEqual(sorted(listing["tags"]), ["Second tag", "alerts", "first", "invoices"])
        self.assertEqual([a["Address"] for a in m["Bcc"]], ["hidden@inbox.test.example"])
        self.assertEqual([a["FileName"] for a in m["Attachments"]], ["report.pdf"])
        self.assertEqual(len(m["Attachments"][0]["Checksums"]["SHA256"]), 64)
        self.assertEqual([a["ContentID"] for a in m["Inline"]], ["pic@x"])
        self.assertEqual(m["ListUnsubscribe"]["Links"], ["mailto:stop@sender.example", "https://sender.example/u"])
        self.assertTrue(m["Read"])
        self.assertIn(f"{self.link_base}/ok", m["Text"])

    def test_headers_parts_thumbnail_raw_views(self):
        self.send(self.rich("parts"))
        wait_for(lambda: self.srv.messages()["messages_count"] == 1, "1 message")
        mid = self.srv.messages()["messages"][0]["ID"]
        headers = self.get_json(f"/api/v1/message/{mid}/headers")
        jsonschema.Draft4Validator(response_schema("/api/v1/message/{ID}/headers", "get")).validate(headers)
        self.assertEqual(headers["X-Tags"], ["first, Second tag"])
        status, _, pdf = self.srv.get(f"/api/v1/message/{mid}/part/2")
        self.assertEqual((status, pdf), (200, b"%PDF-1.4\n"))
        status, hdrs, thumb = self.srv.get(f"/api/v1/message/{mid}/part/1.2.2/thumb")
        self.assertEqual(status, 200)
        self.assertEqual(hdrs["Content-Type"], "image/jpeg")
        self.assertEqual(thumb[:2], b"\xff\xd8")
        status, hdrs, raw = self.srv.get(f"/api/v1/message/{mid}/raw?dl=1")
        self.assertEqual(hdrs["Content-Disposition"], f'attachment; filename="{mid}.eml"')
        self.assertEqual(raw, self.rich("parts"))
        status, hdrs, html = self.srv.get(f"/view/{mid}.html?embed=1")
        self.assertIn(f"/api/v1/message/{mid}/part/1.2.2".encode(), html)
        self.assertIn(b'target="_blank"', html)
        self.assertTrue(hdrs["Content-Security-Policy"].startswith("sandbox"))
        status, _, text = self.srv.get(f"/view/{mid}.txt")
        self.assertIn(b"/ok", text)
        status, hdrs, png = self.srv.get(f"/view/{mid}/part/1.2.2")
        self.assertEqual(png[1:4], b"PNG")

    def test_tags_operations(self):
        self.send(plain("t1", "x"))
        self.send(plain("t2", "x"))
        wait_for(lambda: self.srv.messages()["messages_count"] == 2, "2 messages")
        ids = [m["ID"] for m in self.srv.messages()["messages"]]
        self.assertEqual(self.request("PUT", "/api/v1/tags", {"IDs": ids, "Tags": ["blue", "Red"]}), (200, b"ok"))
        tags = self.get_json("/api/v1/tags")
        jsonschema.Draft4Validator(response_schema("/api/v1/tags", "get")).validate(tags)
        self.assertEqual(tags, ["blue", "Red"])
        self.assertEqual(self.request("PUT", "/api/v1/tags/Red", {"Name": "Green"})[0], 200)
        self.assertEqual(self.request("DELETE", "/api/v1/tags/blue")[0], 200)
        self.assertEqual(self.get_json("/api/v1/tags"), ["Green"])
        self.assertEqual(self.search("tag:green")["messages_count"], 2)

    def test_send_then_read(self):
        r = self.request("POST", "/api/v1/send", {
            "From": {"Email": "app@sender.example", "Name": "App"}, "To": [{"Email": "user@inbox.test.example"}],
            "Subject": "Sent by API", "Text": "text body", "HTML": "<b>html body</b>", "Tags": ["api"],
            "Attachments": [{"Content": base64.b64encode(b"file").decode(), "Filename": "f.txt"}]})
        self.assertEqual(r[0], 200, r[1])
        sent = json.loads(r[1])
        jsonschema.Draft4Validator(response_schema("/api/v1/send", "post")).validate(sent)
        m = self.check_schema("/api/v1/message/{ID}", "get", self.get_json(f"/api/v1/message/{sent['ID']}"))
        self.assertEqual(m["Subject"], "Sent by API")
        self.assertEqual(m["Text"], "text body")
        self.assertEqual(m["HTML"], "<b>html body</b>")
        self.assertEqual(m["Tags"], ["api"])
        self.assertEqual(m["Attachments"][0]["FileName"], "f.txt")
        self.assertEqual(self.request("POST", "/api/v1/send", {"To": []})[0], 400)

    def test_error_bodies_as_mailpit_writes_them(self):
        # httpError: 400, the message as plain text; 404: "404 page not found";
        # POST /api/v1/send: 400 with {"Error": "..."} (JSONErrorResponse).
        for path in ("/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA", "/api/v1/message/latest", "/api/v1/nope"):
            req = urllib.request.Request(self.srv.url(path))
            with self.assertRaises(urllib.error.HTTPError) as e:
                HTTP.open(req, timeout=DEADLINE)
            self.assertEqual(e.exception.code, 404, path)
            self.assertTrue(e.exception.headers["Content-Type"].startswith("text/plain"), path)
            self.assertEqual(e.exception.read(), b"404 page not found", path)
        status, body = self.request("GET", "/api/v1/search?query=")
        self.assertEqual((status, body), (400, b"a search needs a query"))
        status, body = self.request("POST", "/api/v1/send", {"To": []})
        self.assertEqual(status, 400)
        self.assertTrue(json.loads(body)["Error"])

    def test_checks_chaos_info_webui_health_swagger(self):
        self.send(self.rich("checks"))
        wait_for(lambda: self.srv.messages()["messages_count"] == 1, "1 message")
        mid = self.srv.messages()["messages"][0]["ID"]
        lc = self.check_schema("/api/v1/message/{ID}/link-check", "get",
                               self.get_json(f"/api/v1/message/{mid}/link-check"))
        by_url = {l["URL"]: l["StatusCode"] for l in lc["Links"]}
        self.assertEqual(by_url[f"{self.link_base}/ok"], 200)
        self.assertEqual(by_url[f"{self.link_base}/missing"], 404)
        self.assertEqual(by_url[f"{self.link_base}/nohead"], 200)  # HEAD refused, GET answered
        self.assertEqual(lc["Errors"], 1)
        status, body = self.request("GET", f"/api/v1/message/{mid}/html-check")
        if status == 200:
            hc = self.check_schema("/api/v1/message/{ID}/html-check", "get", json.loads(body))
            self.assertIn("css-display-flex", [w["Slug"] for w in hc["Warnings"]])
        else:
            self.assertIn(b"caniemail", body)
        self.assertEqual(self.request("GET", f"/api/v1/message/{mid}/sa-check")[0], 400)
        chaos = self.check_schema("/api/v1/chaos", "get", self.get_json("/api/v1/chaos"))
        self.assertEqual(chaos["Sender"]["Probability"], 0)
        status, body = self.request("PUT", "/api/v1/chaos", {"Sender": {"ErrorCode": 451, "Probability": 50}})
        self.assertEqual(json.loads(body)["Sender"]["Probability"], 50)
        self.request("PUT", "/api/v1/chaos", {})
        info = self.check_schema("/api/v1/info", "get", self.get_json("/api/v1/info"))
        self.assertEqual(info["Messages"], 1)
        self.assertGreaterEqual(info["RuntimeStats"]["SMTPAccepted"], 1)
        ui = self.check_schema("/api/v1/webui", "get", self.get_json("/api/v1/webui"))
        self.assertTrue(ui["ChaosEnabled"])
        self.assertEqual(self.srv.get("/livez")[2], b"ok")
        self.assertEqual(self.srv.get("/readyz")[0], 200)
        status, hdrs, swagger = self.srv.get("/api/v1/swagger.json")
        self.assertEqual(json.loads(swagger), SWAGGER)
        self.assertEqual(hdrs["Access-Control-Allow-Origin"], "*")  # --api-cors
        status, _ = self.request("OPTIONS", "/api/v1/messages")
        self.assertEqual(status, 204)
        self.assertEqual(self.srv.get("//api//v1/messages")[0], 200)

    def test_websocket_and_sse_events(self):
        s, head, accept, rest = ws_connect(self.srv.http_port)
        try:
            self.assertTrue(head.startswith("HTTP/1.1 101"), head)
            self.assertIn(f"Sec-WebSocket-Accept: {accept}", head)
            buf = [rest]
            first = json.loads(ws_read_text(s, buf))
            self.assertEqual(first["Type"], "stats")
            self.send(plain("over the websocket", "x"))
            while True:
                ev = json.loads(ws_read_text(s, buf))
                if ev["Type"] == "new":
                    break
            self.assertEqual(ev["Data"]["Subject"], "over the websocket")
            self.request("PUT", "/api/v1/messages", {"IDs": [ev["Data"]["ID"]], "Read": True})
            while True:
                up = json.loads(ws_read_text(s, buf))
                if up["Type"] == "update":
                    break
            self.assertEqual(up["Data"], {"ID": ev["Data"]["ID"], "Read": True})
            self.srv.delete_all()
            while json.loads(ws_read_text(s, buf))["Type"] != "prune":
                pass
        finally:
            s.close()
        # Server-Sent Events for clients that ask for them.
        c = socket.create_connection(("127.0.0.1", self.srv.http_port), timeout=DEADLINE)
        c.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        data = c.recv(4096)
        self.send(plain("over sse", "x"))
        end = time.monotonic() + DEADLINE
        while b"over sse" not in data and time.monotonic() < end:
            data += c.recv(65536)
        c.close()
        self.assertIn(b"text/event-stream", data)
        self.assertIn(b"event: new\ndata: {\"Type\":\"new\"", data)


class HttpDefenceTest(unittest.TestCase):
    """Address lists, the Host header, public mode and the rate limit, end to end."""

    def raw_get(self, srv, path, host):
        with socket.create_connection(("127.0.0.1", srv.http_port), timeout=DEADLINE) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split()[1]), head.decode(errors="replace"), body

    def test_link_check_does_not_reach_internal_addresses(self):
        hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self):
                hits.append(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        links = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=links.serve_forever, daemon=True).start()
        srv = Inletd()  # Mailpit's default: --allow-internal-http-requests not given
        try:
            url = f"http://127.0.0.1:{links.server_address[1]}/secret"
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("a@example.org", ["b@example.com"],
                           f"Subject: probe\r\n\r\nSee {url} and http://[::1]:9/x\r\n".encode())
            wait_for(lambda: srv.messages()["messages_count"] == 1, "1 message")
            mid = srv.messages()["messages"][0]["ID"]
            with HTTP.open(srv.url(f"/api/v1/message/{mid}/link-check"), timeout=DEADLINE) as r:
                lc = json.loads(r.read())
            self.assertEqual(lc["Errors"], 2)
            for link in lc["Links"]:
                self.assertEqual((link["StatusCode"], link["Status"]), (0, "private/reserved address"))
            self.assertEqual(hits, [])  # nothing reached the loopback server
        finally:
            srv.stop()
            links.shutdown()

    def test_address_lists_host_header_public_mode(self):
        srv = Inletd("--allowed-host", "mail.test.example")
        try:
            to = ",\r\n ".join(f"u{i}@inbox.test.example" for i in range(80000))
            msg = f"From: a@sender.example\r\nTo: {to}\r\nSubject: many\r\n\r\nbody\r\n"
            for _ in range(3):
                with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                    c.sendmail("a@sender.example", ["u1@inbox.test.example"], msg)
            wait_for(lambda: json.loads(srv.get("/api/v1/messages")[2])["total"] == 3 or None, "messages")
            code, _, body = self.raw_get(srv, "/api/v1/messages?limit=1000", "localhost")
            self.assertEqual(code, 200)
            self.assertLess(len(body), 256 * 1024)  # each summary keeps the first addresses
            for m in json.loads(body)["messages"]:
                self.assertLessEqual(len(m["To"]), 100)
                # the list is cut, and says so with the whole count
                self.assertEqual(m["Totals"], {"To": 80000, "Cc": 0, "Bcc": 0, "ReplyTo": 0,
                                               "Attachments": 0})
            few = json.loads(srv.get("/api/v1/search?query=subject:many&limit=1")[2])["messages"][0]
            self.assertIn("Totals", few)
            # the message itself keeps the same first addresses, and says so too
            whole = json.loads(srv.get(f"/api/v1/message/{few['ID']}")[2])
            self.assertEqual(len(whole["To"]), 100)
            self.assertEqual(whole["Totals"]["To"], 80000)
            self.assertEqual(self.raw_get(srv, "/api/v1/messages", "rebound.example")[0], 403)
            self.assertEqual(self.raw_get(srv, "/api/v1/messages", "mail.test.example:8025")[0], 200)
        finally:
            srv.stop()
        pub = Inletd("--public", "--api-rate-limit", "1", "--api-rate-burst", "4")
        try:
            with smtplib.SMTP("127.0.0.1", pub.smtp_port, timeout=DEADLINE) as c:
                c.sendmail("a@sender.example", ["me@inbox.test.example"], plain("mine", "x", to="me@inbox.test.example"))
            self.assertEqual(self.raw_get(pub, "/api/v1/messages", "localhost")[0], 403)
            box = "/api/v1/mailbox/me@inbox.test.example"
            listing = wait_for(lambda: (lambda r: r if r[0] == 200 and json.loads(r[2])["count"] == 1 else None)(
                self.raw_get(pub, box, "localhost")), "mailbox")
            self.assertEqual(json.loads(listing[2])["messages"][0]["Subject"], "mine")
            refused = [r for r in (self.raw_get(pub, box, "localhost") for _ in range(8)) if r[0] == 429]
            self.assertTrue(refused)  # 4 at once, then one a second
            self.assertIn("Retry-After:", refused[0][1])
        finally:
            pub.stop()

    def test_event_stream_caps_from_flags(self):
        def sse(src):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(DEADLINE)
            s.bind((src, 0))  # any 127/8 address is this machine's loopback
            s.connect(("127.0.0.1", srv.http_port))
            s.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                if not chunk:
                    break
                head += chunk
            return s, head.decode(errors="replace")

        # per client from the flag, in all from the environment
        with scoped_environ(INLET_HTTP_MAX_EVENT_STREAMS="3"):
            srv = Inletd("--http-max-event-streams-per-client", "2")
        opened = []
        try:
            for _ in range(2):
                s, head = sse("127.0.0.1")
                opened.append(s)
                self.assertTrue(head.startswith("HTTP/1.1 200"), head)
            s, head = sse("127.0.0.1")
            opened.append(s)
            self.assertTrue(head.startswith("HTTP/1.1 429"), head)
            self.assertIn("Retry-After:", head)
            s, head = sse("127.0.0.2")  # another client: its own share, the third in all
            opened.append(s)
            self.assertTrue(head.startswith("HTTP/1.1 200"), head)
            s, head = sse("127.0.0.3")
            opened.append(s)
            self.assertTrue(head.startswith("HTTP/1.1 503"), head)
            self.assertIn("Retry-After:", head)
        finally:
            for s in opened:
                s.close()
            srv.stop()


def scoped_environ(**env):
    """Runs a block with extra environment variables (for a child inletd)."""
    class _Scope:
        def __enter__(self):
            self.saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)

        def __exit__(self, *exc):
            for k, v in self.saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return _Scope()


class ReleaseAndMailpitFlagsTest(unittest.TestCase):
    def test_release_through_a_relay(self):
        relay = Inletd()  # a second inletd is the relay's SMTP server
        try:
            with scoped_environ(MP_SMTP_RELAY_HOST="127.0.0.1", MP_SMTP_RELAY_PORT=str(relay.smtp_port),
                                MP_SMTP_RELAY_ALLOWED_RECIPIENTS=r"@allowed\.example$"):
                srv = Inletd()
            try:
                with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                    c.sendmail("a@sender.example", ["bob@inbox.test.example"], plain("to release", "body"))
                mid = wait_for(lambda: srv.find("to release"), "message")["ID"]
                ui = json.loads(srv.get("/api/v1/webui")[2])
                self.assertTrue(ui["MessageRelay"]["Enabled"])
                req = urllib.request.Request(srv.url(f"/api/v1/message/{mid}/release"), method="POST",
                                             data=json.dumps({"To": ["x@allowed.example"]}).encode())
                with HTTP.open(req, timeout=DEADLINE) as r:
                    self.assertEqual(r.read(), b"ok")
                got = wait_for(lambda: relay.find("to release"), "released copy")
                raw = relay.raw(got["ID"])
                self.assertIn(b"body", raw)
                self.assertNotIn(b"Message-ID: <to.release@sender.example>", raw)  # a new ID
                env = json.loads(relay.get(f"/api/v1/message/{got['ID']}")[2])["Envelope"]
                self.assertEqual(env["To"], ["x@allowed.example"])
                bad = urllib.request.Request(srv.url(f"/api/v1/message/{mid}/release"), method="POST",
                                             data=json.dumps({"To": ["x@elsewhere.example"]}).encode())
                with self.assertRaises(urllib.error.HTTPError) as e:
                    HTTP.open(bad, timeout=DEADLINE)
                self.assertEqual(e.exception.code, 400)
            finally:
                srv.stop()
        finally:
            relay.stop()

    def test_max_age_deletes_old_messages(self):
        with scoped_environ(MP_MAX_AGE="2s"):  # Mailpit's variable; the sweep runs every second
            srv = Inletd()
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                c.sendmail("a@sender.example", ["bob@inbox.test.example"], plain("short-lived", "x"))
            self.assertIsNotNone(srv.find("short-lived"))  # kept for two seconds at least
            wait_for(lambda: srv.messages()["messages_count"] == 0, "the message to expire")
            self.assertEqual(srv.get_json("/api/v1/info")["RuntimeStats"]["MessagesDeleted"], 1)
            self.assertFalse(any("--max-age" in l and "ignored" in l for l in srv.log))
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_auth_file_webroot_and_mailpit_options(self):
        with tempfile.NamedTemporaryFile("w", suffix=".htpasswd", delete=False) as f:
            f.write("user:$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/\n")  # secret
            path = f.name
        try:
            srv = Inletd("--ui-auth-file", path, "--webroot", "mail", "--enable-spamassassin", "127.0.0.1:783")
            try:
                with self.assertRaises(urllib.error.HTTPError) as e:
                    HTTP.open(srv.url("/mail/api/v1/messages"), timeout=DEADLINE)
                self.assertEqual(e.exception.code, 401)
                req = urllib.request.Request(srv.url("/mail/api/v1/messages"))
                req.add_header("Authorization", "Basic " + base64.b64encode(b"user:secret").decode())
                with HTTP.open(req, timeout=DEADLINE) as r:
                    self.assertEqual(json.loads(r.read())["total"], 0)
                self.assertEqual(srv.get("/mail/livez")[0], 200)  # health needs no password
                s, head, _, _ = ws_connect(srv.http_port, "/mail/api/events")
                s.close()
                self.assertTrue(head.startswith("HTTP/1.1 401"), head)
                # Every Mailpit option takes effect now: none is named as ignored.
                self.assertFalse(any("ignored" in l for l in srv.log), srv.log)
            finally:
                srv.stop()
        finally:
            os.unlink(path)
        r = subprocess.run([e2e_test.INLETD, "--no-such-mailpit-flag"], capture_output=True, text=True,
                           timeout=DEADLINE)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not an inletd or Mailpit option", r.stderr)
        self.assertIn("--no-such-mailpit-flag", r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
