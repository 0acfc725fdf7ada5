#!/usr/bin/env python3
"""End-to-end tests of inletd with real clients that no one here wrote.

Each test class starts its own inletd on 127.0.0.1 with port 0 (inletd prints the bound
addresses), talks SMTP to it with Python's smtplib, raw sockets, swaks, curl and Postfix's
smtp-source, and reads every message back through the HTTP API, byte for byte.

    e2e_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import atexit
import base64
import email
import email.policy
import json
import os
import re
import shutil
import signal
import smtplib
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

INLETD = None
DEADLINE = 30.0  # seconds any single wait may take


def asan_build(binary):
    """True when `binary` links GCC's AddressSanitizer runtime."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    return "libasan" in r.stdout


# The process model forks from a parent with several threads. glibc's and jemalloc's
# allocators are fork-safe; the libasan of GCC 12 is not (its allocator installs no
# atfork handlers), so under ASan a child can hang on an allocator lock another parent
# thread held at the fork. The model's end-to-end runs are in the Release suite.
ASAN_FORK_UNSAFE = "the ASan allocator of this toolchain is not fork-safe (Release suite runs it)"

# Talk to our loopback server directly, whatever proxy the environment names.
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Inletd:
    """A running inletd process bound to loopback ports chosen by the kernel."""

    def __init__(self, *extra, env=None):
        args = [INLETD, "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                "--hostname", "mx.test.example"] + list(extra)
        # inletd registers a socket state per allowed connection as it starts (10,000 by
        # default: a quarter of a second here, more under ASan); no test opens that many.
        if "--max-connections" not in extra:
            args += ["--max-connections", "1000"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1,
                                     env=dict(os.environ, **env) if env else None)
        self.smtp_port = None
        self.http_port = None
        self.log = []
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end and (self.smtp_port is None or self.http_port is None):
            line = self.proc.stdout.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"smtp listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.smtp_port = int(m.group(1))
            m = re.search(r"http listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.http_port = int(m.group(1))
        if self.smtp_port is None or self.http_port is None:
            self.proc.kill()
            raise RuntimeError("inletd did not start:\n" + "".join(self.log))
        # Keep draining stdout so the server never blocks on a full pipe.
        self._drain = threading.Thread(target=self._drain_output, daemon=True)
        self._drain.start()

    def _drain_output(self):
        for line in self.proc.stdout:
            self.log.append(line)

    def url(self, path):
        return f"http://127.0.0.1:{self.http_port}{path}"

    def get(self, path):
        with HTTP.open(self.url(path), timeout=DEADLINE) as r:
            return r.status, r.headers, r.read()

    def get_json(self, path):
        status, _, body = self.get(path)
        return json.loads(body)

    def delete_all(self):
        req = urllib.request.Request(self.url("/api/v1/messages"), method="DELETE")
        with HTTP.open(req, timeout=DEADLINE) as r:
            return r.status

    def messages(self, limit=1000):
        return self.get_json(f"/api/v1/messages?limit={limit}")

    def raw(self, msg_id):
        return self.get(f"/api/v1/message/{msg_id}/raw")[2]

    def find(self, subject):
        for m in self.messages()["messages"]:
            if m["Subject"] == subject:
                return m
        return None

    def stop_clean(self):
        """Stops it; a non-zero exit or a sanitizer's report in the log fails the test."""
        rc = self.stop()
        log = "".join(self.log)
        if rc != 0 or "Sanitizer" in log or "runtime error" in log:
            raise AssertionError(f"inletd exited {rc}:\n{log}")

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                return self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        return self.proc.returncode



def real_client(test, name, fallback=None):
    """The path of a real client program the test needs. Missing, the test
    skips on a developer's machine but fails under CI (the CI environment
    variable set), where the project installs every client it tests with."""
    path = shutil.which(name) or (fallback if fallback and os.path.exists(fallback) else None)
    if path:
        return path
    if os.environ.get("CI"):
        test.fail(f"{name} is not installed, and CI must run this test")
    test.skipTest(f"{name} not installed")

def smtp_dialog(port, chunks, read_until_close=False, timeout=10.0):
    """Sends each chunk in one write, collects the replies; returns the reply text."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        out += recv_reply(s)  # greeting
        for c in chunks:
            s.sendall(c)
            out += recv_available(s)
        if read_until_close:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                out += d
    finally:
        s.close()
    return out.decode("latin-1")


def recv_reply(s):
    """Reads one complete (possibly multi-line) reply."""
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            return buf
        buf += d
        lines = buf.split(b"\r\n")
        if len(lines) >= 2 and re.match(rb"^\d{3} ", lines[-2]):
            return buf


def recv_available(s, settle=0.3):
    """Reads replies until the server has been quiet for `settle` seconds."""
    buf = b""
    s.settimeout(settle)
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            if buf.endswith(b"\r\n"):
                break
            continue
        if not d:
            break
        buf += d
    s.settimeout(10.0)
    return buf


def wait_for(pred, what, timeout=DEADLINE):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def make_message(subject, body, frm="Alice Example <alice@sender.example>",
                 to="bob@inbox.test.example", extra=""):
    return (f"From: {frm}\r\nTo: {to}\r\nSubject: {subject}\r\n"
            f"Date: Sun, 22 Nov 2026 10:00:00 +0000\r\nMessage-ID: <{subject.replace(' ', '.')}@sender.example>\r\n"
            f"{extra}MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}")


class Base(unittest.TestCase):
    extra_args = ()

    @classmethod
    def setUpClass(cls):
        cls.srv = Inletd(*cls.extra_args)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def setUp(self):
        self.srv.delete_all()


class DeliveryTest(Base):
    def send_smtplib(self, msg_bytes, rcpts=("bob@inbox.test.example",)):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo("client.example")
            c.sendmail("alice@sender.example", list(rcpts), msg_bytes)

    def test_smtplib_roundtrip_byte_exact(self):
        body = "Hello Bob,\r\n.a line that starts with a dot\r\n..two dots\r\n.\r\nnot the end\r\n"
        msg = make_message("smtplib roundtrip", body).encode()
        self.send_smtplib(msg)
        m = wait_for(lambda: self.srv.find("smtplib roundtrip"), "message in store")
        self.assertEqual(m["From"]["Address"], "alice@sender.example")
        self.assertEqual(m["From"]["Name"], "Alice Example")
        self.assertEqual([t["Address"] for t in m["To"]], ["bob@inbox.test.example"])
        self.assertEqual(m["Size"], len(msg))
        self.assertEqual(self.srv.raw(m["ID"]), msg)

    def test_message_detail(self):
        msg = make_message("detail view", "Some text for the detail view.\r\n",
                           extra="Cc: Carol <carol@x.example>\r\n").encode()
        self.send_smtplib(msg, rcpts=("bob@inbox.test.example", "carol@x.example"))
        m = wait_for(lambda: self.srv.find("detail view"), "message in store")
        d = self.srv.get_json(f"/api/v1/message/{m['ID']}")
        self.assertEqual(d["ID"], m["ID"])
        self.assertEqual(d["Subject"], "detail view")
        self.assertEqual(d["MessageID"], "detail.view@sender.example")
        self.assertEqual(d["Cc"][0]["Address"], "carol@x.example")
        self.assertIn("Some text for the detail view.", d["Text"])
        self.assertEqual(d["Envelope"]["From"], "alice@sender.example")
        self.assertEqual(sorted(d["Envelope"]["To"]), ["bob@inbox.test.example", "carol@x.example"])

    def test_eight_bit_body_with_8bitmime(self):
        body = "Gr\u00fc\u00dfe aus M\u00fcnchen \u2014 \u65e5\u672c\u8a9e\r\n"
        msg = make_message("eight bit", body).encode("utf-8")
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo()
            self.assertTrue(c.has_extn("8bitmime"))
            c.sendmail("alice@sender.example", ["bob@inbox.test.example"], msg,
                       mail_options=["BODY=8BITMIME"])
        m = wait_for(lambda: self.srv.find("eight bit"), "message in store")
        self.assertEqual(self.srv.raw(m["ID"]), msg)

    def test_listing_newest_first_and_paging(self):
        for i in range(5):
            self.send_smtplib(make_message(f"page {i}", f"message {i}\r\n").encode())
        wait_for(lambda: self.srv.messages()["total"] == 5, "5 messages")
        all_ = self.srv.messages()
        self.assertEqual([m["Subject"] for m in all_["messages"]],
                         [f"page {i}" for i in range(4, -1, -1)])
        p = self.srv.get_json("/api/v1/messages?start=1&limit=2")
        self.assertEqual(p["total"], 5)
        self.assertEqual(p["start"], 1)
        self.assertEqual(p["messages_count"], 5)  # Mailpit: messages matching the query
        self.assertEqual(p["count"], 2)           # messages in this page
        self.assertEqual([m["Subject"] for m in p["messages"]], ["page 3", "page 2"])

    def test_delete_by_id_and_all(self):
        for i in range(3):
            self.send_smtplib(make_message(f"del {i}", "x\r\n").encode())
        wait_for(lambda: self.srv.messages()["total"] == 3, "3 messages")
        victim = self.srv.find("del 1")["ID"]
        req = urllib.request.Request(self.srv.url("/api/v1/messages"), method="DELETE",
                                     data=json.dumps({"IDs": [victim]}).encode(),
                                     headers={"Content-Type": "application/json"})
        with HTTP.open(req, timeout=DEADLINE) as r:
            self.assertEqual(r.status, 200)
        self.assertEqual(sorted(m["Subject"] for m in self.srv.messages()["messages"]),
                         ["del 0", "del 2"])
        with self.assertRaises(urllib.error.HTTPError) as cm:
            self.srv.get(f"/api/v1/message/{victim}")
        self.assertEqual(cm.exception.code, 404)
        self.srv.delete_all()
        self.assertEqual(self.srv.messages()["total"], 0)

    def test_pipelined_transaction_raw_socket(self):
        body = make_message("pipelined", "piped body\r\n..dot\r\n").encode()
        stuffed = body.replace(b"\r\n.", b"\r\n..")
        out = smtp_dialog(self.srv.smtp_port, [
            b"EHLO pipe.example\r\n",
            b"MAIL FROM:<p@sender.example>\r\nRCPT TO:<a@inbox.test.example>\r\n"
            b"RCPT TO:<b@inbox.test.example>\r\nDATA\r\n",
            stuffed + b"\r\n.\r\nQUIT\r\n",
        ], read_until_close=True)
        self.assertIn("250-PIPELINING", out)
        codes = re.findall(r"^(\d{3})[ -]", out, re.M)
        # greeting, EHLO lines..., MAIL, RCPT, RCPT, DATA(354), end of data(250), QUIT(221)
        self.assertEqual(codes[-6:], ["250", "250", "250", "354", "250", "221"])
        m = wait_for(lambda: self.srv.find("pipelined"), "message in store")
        self.assertEqual(self.srv.raw(m["ID"]), body + b"\r\n")

    def test_terminator_split_across_writes(self):
        msg = make_message("split end", "split terminator\r\n").encode()
        s = socket.create_connection(("127.0.0.1", self.srv.smtp_port), timeout=10)
        try:
            recv_reply(s)
            for cmd in (b"HELO a\r\n", b"MAIL FROM:<a@b.example>\r\n", b"RCPT TO:<c@d.example>\r\n",
                        b"DATA\r\n"):
                s.sendall(cmd)
                recv_reply(s)
            # The message's last CRLF is the first CRLF of the terminator: split it too.
            s.sendall(msg[:-2])
            for piece in (b"\r", b"\n", b".", b"\r", b"\n"):
                time.sleep(0.05)
                s.sendall(piece)
            self.assertTrue(recv_reply(s).startswith(b"250"))
        finally:
            s.close()
        m = wait_for(lambda: self.srv.find("split end"), "message in store")
        self.assertEqual(self.srv.raw(m["ID"]), msg)

    def test_swaks(self):
        swaks = real_client(self, "swaks")
        r = subprocess.run([swaks, "--server", f"127.0.0.1:{self.srv.smtp_port}",
                            "--to", "someone@inbox.test.example", "--from", "swaks@sender.example",
                            "--header", "Subject: via swaks", "--body", "Sent with swaks.",
                            "--pipeline"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        m = wait_for(lambda: self.srv.find("via swaks"), "swaks message")
        raw = self.srv.raw(m["ID"])
        self.assertIn(b"Sent with swaks.", raw)
        self.assertIn(b"To: someone@inbox.test.example", raw)

    def test_curl(self):
        curl = real_client(self, "curl")
        msg = make_message("via curl", "Sent with curl.\r\n.leading dot\r\n").encode()
        r = subprocess.run([curl, "-sS", "--noproxy", "*", f"smtp://127.0.0.1:{self.srv.smtp_port}/client.example",
                            "--mail-from", "curl@sender.example",
                            "--mail-rcpt", "x@inbox.test.example", "--upload-file", "-"],
                           input=msg, capture_output=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = wait_for(lambda: self.srv.find("via curl"), "curl message")
        self.assertEqual(self.srv.raw(m["ID"]), msg)

    def test_web_page_served(self):
        status, headers, body = self.srv.get("/")
        self.assertEqual(status, 200)
        self.assertIn("text/html", headers.get("Content-Type", ""))
        self.assertIn(b"<html", body.lower())


class BadInputTest(Base):
    extra_args = ("--max-message-bytes", "20000")

    def test_overlong_command_line(self):
        out = smtp_dialog(self.srv.smtp_port, [b"EHLO x\r\n", b"MAIL FROM:<" + b"a" * 5000 + b"@x>\r\n",
                                               b"NOOP\r\n"])
        self.assertRegex(out, r"\n500 5\.5\.6 ")
        self.assertRegex(out, r"\n250 2\.0\.0 ")  # the session goes on after the error

    def test_unknown_command(self):
        out = smtp_dialog(self.srv.smtp_port, [b"EHLO x\r\n", b"FROB\r\n"])
        self.assertRegex(out, r"\n500 5\.5\.[12] ")

    def test_out_of_sequence(self):
        out = smtp_dialog(self.srv.smtp_port, [b"EHLO x\r\n", b"RCPT TO:<a@b.example>\r\n",
                                               b"DATA\r\n"])
        self.assertEqual(len(re.findall(r"\n503 5\.5\.1 ", out)), 2, out)

    def test_size_declared_too_big(self):
        out = smtp_dialog(self.srv.smtp_port, [b"EHLO x\r\n", b"MAIL FROM:<a@b.example> SIZE=999999\r\n"])
        self.assertIn("250-SIZE 20000", out)
        self.assertRegex(out, r"\n552 5\.3\.4 ")

    def test_data_over_size_limit(self):
        big = b"Subject: too big\r\n\r\n" + (b"x" * 998 + b"\r\n") * 30
        out = smtp_dialog(self.srv.smtp_port, [b"EHLO x\r\n", b"MAIL FROM:<a@b.example>\r\n",
                                               b"RCPT TO:<c@d.example>\r\n", b"DATA\r\n",
                                               big + b".\r\n", b"NOOP\r\n"])
        self.assertRegex(out, r"\n552 5\.3\.4 ")
        self.assertRegex(out, r"\n250 2\.0\.0 ")
        self.assertIsNone(self.srv.find("too big"))

    def test_disconnect_mid_data_stores_nothing(self):
        s = socket.create_connection(("127.0.0.1", self.srv.smtp_port), timeout=10)
        recv_reply(s)
        for cmd in (b"EHLO x\r\n", b"MAIL FROM:<a@b.example>\r\n", b"RCPT TO:<c@d.example>\r\n", b"DATA\r\n"):
            s.sendall(cmd)
            recv_reply(s)
        s.sendall(b"Subject: half\r\n\r\nhalf a message\r\n")
        s.close()
        # A later message goes through: the server keeps serving.
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.sendmail("a@b.example", ["c@d.example"], make_message("after half", "ok\r\n").encode())
        wait_for(lambda: self.srv.find("after half"), "next message")
        self.assertIsNone(self.srv.find("half"))
        self.assertEqual(self.srv.messages()["total"], 1)

    def test_eight_bit_header_without_declaration_is_accepted_as_is(self):
        # Policy (docs/smtp.md): undeclared 8-bit data is accepted and stored unchanged.
        msg = "Subject: undeclared 8bit\r\n\r\nd\u00e9j\u00e0 vu\r\n".encode("utf-8")
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.sendmail("a@b.example", ["c@d.example"], msg)
        m = wait_for(lambda: self.srv.find("undeclared 8bit"), "8-bit message")
        self.assertEqual(self.srv.raw(m["ID"]), msg)

    def test_smuggling_lookalike_does_not_end_message(self):
        # "\n.\n" and "\r\n.\n" are not the end of data: they stay inside the message.
        body = (b"Subject: smuggle\r\n\r\nline one\n.\nMAIL FROM:<evil@x.example>\r\n"
                b"line two\r\n.\nRCPT TO:<victim@x.example>\r\n")
        out = smtp_dialog(self.srv.smtp_port, [b"EHLO x\r\n", b"MAIL FROM:<a@b.example>\r\n",
                                               b"RCPT TO:<c@d.example>\r\n", b"DATA\r\n",
                                               body + b"\r\n.\r\n"])
        self.assertEqual(len(re.findall(r"\n250 2\.0\.0 Ok", out)), 1, out)
        m = wait_for(lambda: self.srv.find("smuggle"), "smuggling message")
        self.assertEqual(self.srv.messages()["total"], 1)
        self.assertIn(b"MAIL FROM:<evil@x.example>", self.srv.raw(m["ID"]))

    def test_bad_client_does_not_block_others(self):
        stall = socket.create_connection(("127.0.0.1", self.srv.smtp_port), timeout=10)
        try:
            recv_reply(stall)
            stall.sendall(b"EHLO slow\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<c@d.example>\r\nDATA\r\n")
            stall.sendall(b"Subject: stalled\r\n\r\npartial")
            with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
                c.sendmail("a@b.example", ["c@d.example"], make_message("while stalled", "ok\r\n").encode())
            wait_for(lambda: self.srv.find("while stalled"), "message while another client stalls")
        finally:
            stall.close()


class LoadTest(Base):
    extra_args = ("--max-messages", "100000")

    def test_smtp_source_all_messages_arrive(self):
        src = real_client(self, "smtp-source", "/usr/sbin/smtp-source")
        n = 400
        r = subprocess.run([src, "-d", "-s", "8", "-S", "load", "-m", str(n), "-l", "9000", "-f", "load@sender.example",
                            "-t", "sink@inbox.test.example", f"127.0.0.1:{self.srv.smtp_port}"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_for(lambda: self.srv.messages(limit=1)["total"] == n, f"{n} messages")
        m = self.srv.messages(limit=1)["messages"][0]
        self.assertGreaterEqual(m["Size"], 9000)


class HeavyPathDeliveryTest(DeliveryTest):
    """Every delivery test again, each message parsed and stored on the worker pool."""
    extra_args = ("--heavy-message-bytes", "1")


class HeavyPathLoadTest(LoadTest):
    extra_args = ("--max-messages", "100000", "--heavy-message-bytes", "1")


class EvictionTest(Base):
    extra_args = ("--max-messages", "3")

    def test_oldest_evicted(self):
        for i in range(5):
            with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
                c.sendmail("a@b.example", ["c@d.example"], make_message(f"evict {i}", "x\r\n").encode())
        wait_for(lambda: self.srv.find("evict 4"), "last message")
        self.assertEqual([m["Subject"] for m in self.srv.messages()["messages"]],
                         ["evict 4", "evict 3", "evict 2"])


TERMS_DIR = tempfile.mkdtemp(prefix="inletd-e2e-")
atexit.register(shutil.rmtree, TERMS_DIR, True)
TERMS_FILE = os.path.join(TERMS_DIR, "terms.txt")
with open(TERMS_FILE, "w") as f:
    f.write("# e2e term list\ncheap pills\nre:wire\\s+transfer\nlottery winner\t0.5\n")

ATTACHMENT_ONLY = (
    "Subject: quarterly report\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n"
    "--b1\r\nContent-Type: text/plain\r\n\r\nPlease find the report attached.\r\n"
    "--b1\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\"r.txt\"\r\n\r\n"
    "cheap pills are mentioned only in here\r\n--b1--\r\n")
# "cheap pills" only inside an RFC 2047 encoded Subject (base64, UTF-8).
ENCODED_SUBJECT = ("Subject: =?UTF-8?B?" + base64.b64encode("Buy cheap pills now".encode()).decode()
                   + "?=\r\n\r\nNothing to see in the body.\r\n")
# The term across a quoted-printable soft line break, in a latin-1 text part.
QP_BODY = ("Subject: qp body\r\nMIME-Version: 1.0\r\n"
           "Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
           "caf=E9 offers: send by wire =\r\ntransfer today\r\n")


class FilterTagTest(Base):
    extra_args = ("--filter-terms", TERMS_FILE, "--filter-action", "tag")

    def send(self, raw):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.sendmail("a@b.example", ["c@d.example"], raw.encode())

    def tags_of(self, subject):
        m = wait_for(lambda: self.srv.find(subject), subject)
        return m["Tags"]

    def test_attachment_only_term_is_not_matched(self):
        self.send(ATTACHMENT_ONLY)
        self.assertEqual(self.tags_of("quarterly report"), [])

    def test_encoded_subject_term_is_matched(self):
        self.send(ENCODED_SUBJECT)
        self.assertEqual(self.tags_of("Buy cheap pills now"), ["spam"])

    def test_regex_across_qp_soft_break(self):
        self.send(QP_BODY)
        self.assertEqual(self.tags_of("qp body"), ["spam"])

    def test_weight_below_threshold_is_not_tagged(self):
        self.send("Subject: lucky\r\n\r\nYou are a lottery winner.\r\n")
        self.assertEqual(self.tags_of("lucky"), [])

    def test_metrics_count_scans(self):
        self.send("Subject: counted\r\n\r\ncheap pills\r\n")
        wait_for(lambda: self.srv.find("counted"), "counted")
        metrics = self.srv.get("/metrics")[2].decode()
        self.assertRegex(metrics, r"inlet_filter_messages_scanned_total [1-9]")
        self.assertRegex(metrics, r"inlet_filter_tagged_total [1-9]")


class FilterRejectTest(Base):
    extra_args = ("--filter-terms", TERMS_FILE, "--filter-action", "reject")

    def test_reject_at_end_of_data_nothing_stored(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            with self.assertRaises(smtplib.SMTPDataError) as cm:
                c.sendmail("a@b.example", ["c@d.example"], ENCODED_SUBJECT.encode())
            self.assertEqual(cm.exception.smtp_code, 550)
            self.assertIn(b"5.7.1", cm.exception.smtp_error)
            # The session goes on: a clean message on the same connection is stored.
            c.sendmail("a@b.example", ["c@d.example"], ATTACHMENT_ONLY.encode())
        wait_for(lambda: self.srv.find("quarterly report"), "clean message")
        self.assertEqual(self.srv.messages()["total"], 1)

    def test_sighup_reload_and_bad_file_keeps_list(self):
        # The list is replaced by rename, as a deployment should: inletd also watches the
        # file, and a reload queued by one write could read it truncated by the next
        # in-place write (an empty list, valid; seen once in CI).
        def write_atomically(path, text):
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        alt = os.path.join(TERMS_DIR, "reload.txt")
        with open(alt, "w") as f:
            f.write("first term\n")
        srv = Inletd("--filter-terms", alt, "--filter-action", "reject")
        try:
            def rejected(text):
                with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                    try:
                        c.sendmail("a@b.example", ["c@d.example"], f"Subject: t\r\n\r\n{text}\r\n".encode())
                        return False
                    except smtplib.SMTPDataError as e:
                        return e.smtp_code == 550
            self.assertTrue(rejected("the first term"))
            self.assertFalse(rejected("a second term"))
            write_atomically(alt, "second term\n")
            srv.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: rejected("a second term"), "reload to take effect")
            self.assertFalse(rejected("the first term"))
            write_atomically(alt, "re:(unclosed\n")
            srv.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "kept the list in force" in "".join(srv.log), "bad reload reported")
            self.assertTrue(rejected("a second term"))
        finally:
            self.assertEqual(srv.stop(), 0)


CERT_FILE = os.path.join(TERMS_DIR, "cert.pem")
KEY_FILE = os.path.join(TERMS_DIR, "key.pem")


def make_cert():
    if not os.path.exists(CERT_FILE):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=mx.test.example", "-keyout", KEY_FILE, "-out", CERT_FILE],
                       check=True, capture_output=True, timeout=60)
    return ("--tls-cert", CERT_FILE, "--tls-key", KEY_FILE)


# --parse streaming vs --parse after: the corpus below (and CPython's email test messages
# when Debian's libpython3.11-testsuite is installed) goes to two inletd, one per mode,
# with the same term list; every summary the API serves must be the same.
MULTIPART_ALT = (
    "From: =?ISO-8859-1?Q?Andr=E9?= <andre@sender.example>\r\nTo: a@x.example, \"B, C\" <bc@x.example>\r\n"
    "Cc: cc@x.example\r\nSubject: alternative and inline\r\nDate: Mon, 23 Nov 2026 08:00:00 +0100\r\n"
    "Message-ID: <alt.1@sender.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\npreamble\r\n"
    "--outer\r\nContent-Type: multipart/alternative; boundary=\"inner\"\r\n\r\n"
    "--inner\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlain text: cheap pills.\r\n"
    "--inner\r\nContent-Type: text/html\r\n\r\n<p>HTML text</p>\r\n--inner--\r\n"
    "--outer\r\nContent-Type: application/pdf; name=\"a.pdf\"\r\nContent-Disposition: attachment; "
    "filename=\"a.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    + base64.encodebytes(bytes(range(256)) * 8).decode().replace("\n", "\r\n")
    + "--outer\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner message\r\n\r\ninner body\r\n"
    "--outer--\r\nepilogue\r\n")
# Long enough to arrive in many reads, with dot lines (unstuffed before the parser sees them).
LONG_BODY = make_message("long body", "".join(f".line {i} of a long body; lottery winner\r\n" if i % 3 == 0
                                              else f"line {i}\r\n" for i in range(20000)))


def parse_corpus():
    corpus = [("alternative", MULTIPART_ALT.encode()), ("long", LONG_BODY.encode()),
              ("attachment-only", ATTACHMENT_ONLY.encode()), ("encoded-subject", ENCODED_SUBJECT.encode()),
              ("qp", QP_BODY.encode()), ("plain", make_message("plain one", "Hello.\r\n").encode()),
              ("no-headers", b"\r\njust a body\r\n"), ("empty", b"")]
    data = "/usr/lib/python3.11/test/test_email/data"
    if os.path.isdir(data):
        for name in sorted(os.listdir(data)):
            if name.startswith("msg_") and name.endswith(".txt"):
                with open(os.path.join(data, name), "rb") as f:
                    raw = f.read().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
                corpus.append((name, raw))
    return corpus


class ParseModeTest(unittest.TestCase):
    MODELS = ("coro", "thread", "stackful")

    def run_mode(self, parse, model, buffer, corpus, *extra):
        """Sends the corpus to a fresh inletd; returns {name: (list entry, detail)}."""
        srv = Inletd("--parse", parse, "--io-model", model, "--receive-buffer", buffer, "--threads", "2",
                     "--filter-terms", TERMS_FILE, "--filter-action", "tag", *extra)
        try:
            out = {}
            accepted = []
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                c.ehlo("client.example")
                for i, (name, raw) in enumerate(corpus):
                    try:
                        self.assertEqual(c.sendmail("alice@sender.example", [f"n{i}@inbox.test.example"], raw),
                                         {}, name)
                        accepted.append(i)
                    except smtplib.SMTPDataError as e:  # e.g. a line over 1000 octets: both modes refuse
                        out[name] = ("refused", e.smtp_code)
            wait_for(lambda: srv.messages()["total"] == len(accepted), "the corpus stored")
            for i in accepted:
                name = corpus[i][0]
                listed = srv.get_json(f"/api/v1/mailbox/n{i}%40inbox.test.example")["messages"]
                self.assertEqual(len(listed), 1, name)
                entry = listed[0]
                detail = srv.get_json(f"/api/v1/message/{entry['ID']}")
                raw = srv.raw(entry["ID"])
                for d in (entry, detail):
                    if d.get("Date") == d.get("Created"):  # no Date: header, so the received time
                        d.pop("Date")
                    for volatile in ("ID", "Created", "Read"):
                        d.pop(volatile, None)
                    d.get("Envelope", {}).pop("Remote", None)
                out[name] = (entry, detail, raw)
            self.assertEqual(srv.stop(), 0)
            return out
        finally:
            if srv.proc.poll() is None:
                srv.proc.kill()
                srv.proc.wait()

    def test_streaming_serves_the_same_summaries(self):
        corpus = parse_corpus()
        after = self.run_mode("after", "coro", "segment", corpus)
        stored = [v[0] for v in after.values() if v[0] != "refused"]
        self.assertGreaterEqual(len(stored), 8)
        self.assertTrue(any(e["Tags"] == ["spam"] for e in stored))  # the filter ran
        self.assertTrue(any(e["Attachments"] > 0 for e in stored))
        for model in self.MODELS:
            for buffer in ("segment", "flat") if model == "coro" else ("segment",):
                with self.subTest(model=model, buffer=buffer):
                    streamed = self.run_mode("streaming", model, buffer, corpus)
                    for name, _ in corpus:
                        self.assertEqual(streamed[name], after[name], f"{name} ({model}, {buffer})")
        # Every message on the worker pool: the streamed parse moves there with its body.
        for model in ("coro", "thread"):
            with self.subTest(model=model, heavy=True):
                streamed = self.run_mode("streaming", model, "segment", corpus, "--heavy-message-bytes", "1")
                for name, _ in corpus:
                    self.assertEqual(streamed[name], after[name], f"{name} ({model}, on the worker pool)")

    def test_streaming_with_sink_and_process_model(self):
        if asan_build(INLETD):
            self.skipTest(ASAN_FORK_UNSAFE)
        srv = Inletd("--parse", "streaming", "--io-model", "process", "--store", "sink")
        try:
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                for name, raw in parse_corpus()[:6]:
                    self.assertEqual(c.sendmail("a@sender.example", ["b@inbox.test.example"], raw), {}, name)
            self.assertEqual(srv.stop(), 0)
        finally:
            if srv.proc.poll() is None:
                srv.proc.kill()
                srv.proc.wait()

    def test_process_model_takes_a_heavy_message(self):
        # Over --heavy-message-bytes: a forked connection has no worker pool to wait for.
        if asan_build(INLETD):
            self.skipTest(ASAN_FORK_UNSAFE)
        for parse in ("after", "streaming"):
            with self.subTest(parse=parse):
                srv = Inletd("--parse", parse, "--io-model", "process", "--store", "sink",
                             "--heavy-message-bytes", "4096")
                try:
                    with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=DEADLINE) as c:
                        self.assertEqual(c.sendmail("a@sender.example", ["b@inbox.test.example"],
                                                    LONG_BODY.encode()), {})
                    self.assertEqual(srv.stop(), 0)
                finally:
                    if srv.proc.poll() is None:
                        srv.proc.kill()
                        srv.proc.wait()

    def test_help_documents_parse(self):
        r = subprocess.run([INLETD, "--help"], capture_output=True, text=True, timeout=DEADLINE)
        self.assertIn("--parse", r.stdout)
        r = subprocess.run([INLETD, "--parse", "later"], capture_output=True, text=True, timeout=DEADLINE)
        self.assertNotEqual(r.returncode, 0)


class TlsTest(Base):
    @classmethod
    def setUpClass(cls):
        cls.extra_args = make_cert()
        super().setUpClass()

    def test_smtplib_starttls(self):
        import ssl
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        msg = make_message("over tls", "Encrypted on the wire.\r\n").encode()
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo()
            self.assertTrue(c.has_extn("starttls"))
            c.starttls(context=ctx)
            c.ehlo()
            self.assertFalse(c.has_extn("starttls"))
            c.sendmail("a@b.example", ["c@d.example"], msg)
        m = wait_for(lambda: self.srv.find("over tls"), "TLS message")
        self.assertEqual(self.srv.raw(m["ID"]), msg)

    def test_swaks_tls_pipelined(self):
        swaks = real_client(self, "swaks")
        r = subprocess.run([swaks, "--server", f"127.0.0.1:{self.srv.smtp_port}", "--tls",
                            "--pipeline", "--to", "t@inbox.test.example", "--from", "s@sender.example",
                            "--header", "Subject: swaks tls"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_for(lambda: self.srv.find("swaks tls"), "swaks TLS message")

    def test_commands_pipelined_after_starttls_are_discarded(self):
        # RFC 3207 4.2 / CVE-2011-0411: plaintext sent behind STARTTLS must not be executed.
        import ssl
        s = socket.create_connection(("127.0.0.1", self.srv.smtp_port), timeout=10)
        try:
            recv_reply(s)
            s.sendall(b"EHLO x\r\n")
            recv_available(s)
            s.sendall(b"STARTTLS\r\nMAIL FROM:<injected@x.example>\r\n")
            self.assertTrue(recv_reply(s).startswith(b"220"))
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            t = ctx.wrap_socket(s)
            t.sendall(b"EHLO x\r\n")
            recv_available(t)
            t.sendall(b"RCPT TO:<c@d.example>\r\n")
            self.assertTrue(recv_available(t).startswith(b"503"))  # no MAIL in force
            t.close()
        finally:
            s.close()


class ShutdownTest(unittest.TestCase):
    def test_sigterm_finishes_transaction_in_flight(self):
        self.sigterm_in_flight()

    def test_sigterm_finishes_transaction_on_the_worker_pool(self):
        # The message is parsed and stored on the heavy-message pool while the server stops.
        self.sigterm_in_flight("--heavy-message-bytes", "1")

    def sigterm_in_flight(self, *extra):
        srv = Inletd(*extra)
        try:
            s = socket.create_connection(("127.0.0.1", srv.smtp_port), timeout=10)
            recv_reply(s)
            for cmd in (b"EHLO x\r\n", b"MAIL FROM:<a@b.example>\r\n", b"RCPT TO:<c@d.example>\r\n",
                        b"DATA\r\n"):
                s.sendall(cmd)
                recv_reply(s)
            s.sendall(b"Subject: in flight\r\n\r\nbody\r\n")
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
            # New connections are refused or told to go away while we finish.
            s.sendall(b".\r\n")
            # The transaction in flight completes (250), then the session is told to go
            # away (421 4.3.2) and closed.
            rest = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                rest += d
            s.close()
            self.assertRegex(rest.decode(), r"^250 [^\r]*\r\n421 4\.3\.2 ")
            self.assertEqual(srv.proc.wait(timeout=DEADLINE), 0)
        finally:
            if srv.proc.poll() is None:
                srv.proc.kill()
                srv.proc.wait()


class IoModelBase:
    """Real clients against one --io-model (classes made by add_io_model_tests).

    Each model gets a pipelined swaks transaction and an smtplib send. With a
    store the messages are read back byte-exact through the HTTP API; the
    process model runs with --store sink (the child parses and discards), so
    there the 250 replies and /metrics are what can be checked.
    """
    binary = None
    model = None
    sink = False

    @classmethod
    def setUpClass(cls):
        # AUTH offered (not required): the SASL exchange runs under every model.
        args = ["--io-model", cls.model, "--threads", "2", "--smtp-auth-accept-any",
                "--smtp-auth-allow-insecure"]
        if cls.sink:
            args += ["--store", "sink"]
        global INLETD
        saved, INLETD = INLETD, cls.binary
        try:
            cls.srv = Inletd(*args)
        finally:
            INLETD = saved

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        if rc != 0:
            raise AssertionError(f"inletd {cls.model} exited {rc}:\n" + "".join(cls.srv.log))

    def test_swaks_pipeline(self):
        swaks = real_client(self, "swaks")
        subject = f"swaks {self.model}"
        r = subprocess.run([swaks, "--server", f"127.0.0.1:{self.srv.smtp_port}",
                            "--to", "someone@inbox.test.example", "--from", "swaks@sender.example",
                            "--header", f"Subject: {subject}", "--body", "Pipelined.", "--pipeline"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("250 2.0.0 Ok: queued as", r.stdout)
        if not self.sink:
            m = wait_for(lambda: self.srv.find(subject), "swaks message")
            self.assertIn(b"Pipelined.", self.srv.raw(m["ID"]))

    def test_smtplib_send(self):
        subject = f"smtplib {self.model}"
        msg = make_message(subject, "Line one.\r\n.dot line\r\n").encode()
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo("client.example")
            refused = c.sendmail("alice@sender.example", ["bob@inbox.test.example"], msg)
        self.assertEqual(refused, {})
        if self.sink:
            return
        m = wait_for(lambda: self.srv.find(subject), "smtplib message")
        self.assertEqual(self.srv.raw(m["ID"]), msg)


    def test_smtplib_auth_login(self):
        subject = f"auth {self.model}"
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=DEADLINE) as c:
            c.ehlo("client.example")
            c.user, c.password = "user-" + self.model, "pw"
            self.assertEqual(c.auth("LOGIN", c.auth_login, initial_response_ok=False)[0], 235)
            refused = c.sendmail("alice@sender.example", ["bob@inbox.test.example"],
                                 make_message(subject, "x\r\n").encode())
        self.assertEqual(refused, {})
        if not self.sink:
            m = wait_for(lambda: self.srv.find(subject), "authenticated message")
            self.assertEqual(m["Username"], "user-" + self.model)


class ProcessModelNeedsSinkTest(unittest.TestCase):
    def test_process_with_memory_store_is_refused(self):
        r = subprocess.run([INLETD, "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                            "--io-model", "process", "--store", "memory"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--io-model process needs --store sink", r.stderr)

    def test_process_with_webhooks_is_refused(self):
        # The children store nothing, so a webhook would never fire: refused, not ignored.
        r = subprocess.run([INLETD, "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                            "--io-model", "process", "--store", "sink",
                            "--webhook-url", "http://127.0.0.1:9/hook"],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not with --io-model process", r.stderr)


def add_io_model_tests(inletd_uring):
    """One IoModel_* class per model (and per reactor when inletd-uring is given)."""
    runs = [(INLETD, m, False) for m in ("coro", "async-1n", "async-nn", "async-n2n", "thread", "stackful")]
    if not asan_build(INLETD):
        runs.append((INLETD, "process", True))
    if inletd_uring:
        runs += [(inletd_uring, m, False) for m in ("coro", "async-nn", "stackful")]
    for binary, model, sink in runs:
        tag = ("uring_" if binary == inletd_uring else "") + model.replace("-", "_")
        name = f"IoModel_{tag}"
        globals()[name] = type(name, (IoModelBase, unittest.TestCase), {"binary": binary, "model": model, "sink": sink})


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--io-models", action="store_true",
                    help="run only the per-io-model real-client tests (IoModel_*)")
    ap.add_argument("--inletd-uring", help="also run the io-model tests against this binary")
    args, rest = ap.parse_known_args()
    INLETD = os.path.abspath(args.inletd)
    if args.io_models:
        add_io_model_tests(os.path.abspath(args.inletd_uring) if args.inletd_uring else None)
        rest = ["-k", "IoModel", "-k", "ProcessModelNeedsSink"] + rest
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
