#!/usr/bin/env python3
"""End-to-end tests of Mailpit's webhook (--webhook-url, --webhook-limit, --webhook-delay).

A receiver (Python's http.server, HTTP/1.1 keep-alive) runs on 127.0.0.1 in the test;
mail goes in with smtplib; the payload must equal the API's MessageSummary of the message.

    outbound_webhook_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import http.server
import json
import os
import re
import smtplib
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import Inletd, make_message, wait_for  # noqa: E402


class Receiver:
    """Records each POST: (arrival time, client port, headers, decoded JSON body)."""

    def __init__(self, status=200):
        self.hits = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                with outer.lock:
                    outer.hits.append((time.monotonic(), self.client_address[1],
                                       dict(self.headers), json.loads(body)))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self):
        return f"http://127.0.0.1:{self.port}/hook"

    def count(self):
        with self.lock:
            return len(self.hits)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def metric(srv, name):
    text = srv.get("/metrics")[2].decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def send(srv, subjects):
    with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=30) as c:
        for s in subjects:
            c.sendmail("alice@sender.example", ["bob@rcpt.example"],
                       make_message(s, "webhook body"))


class ServerCase(unittest.TestCase):
    args = ()

    @classmethod
    def setUpClass(cls):
        cls.rx = Receiver()
        cls.srv = Inletd("--webhook-url", cls.rx.url(), "--label", "hooks", *cls.args)

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        cls.rx.close()
        log = "".join(cls.srv.log)
        if rc != 0 or "Sanitizer" in log or "runtime error" in log:
            raise AssertionError(f"inletd exited {rc}:\n{log}")


class PayloadTest(ServerCase):
    args = ("--webhook-limit", "0")

    def test_payload_is_the_api_summary(self):
        send(self.srv, ["hook payload one"])
        hit = wait_for(lambda: next((h for h in list(self.rx.hits)
                                     if h[3]["Subject"] == "hook payload one"), None),
                       "webhook request")
        _, _, headers, body = hit
        listed = wait_for(lambda: self.srv.find("hook payload one"), "listing")
        self.assertEqual(body, listed)
        self.assertEqual(headers.get("Content-Type"), "application/json")
        self.assertEqual(headers.get("Mailpit-Label"), "hooks")

    def test_api_send_also_fires(self):
        before = self.rx.count()
        req = {"From": {"Email": "api@sender.example"}, "To": [{"Email": "x@rcpt.example"}],
               "Subject": "hook via api send", "Text": "t"}
        import urllib.request
        r = urllib.request.Request(self.srv.url("/api/v1/send"), data=json.dumps(req).encode(),
                                   headers={"Content-Type": "application/json"}, method="POST")
        with e2e_test.HTTP.open(r, timeout=30) as resp:
            self.assertEqual(resp.status, 200)
        wait_for(lambda: any(h[3]["Subject"] == "hook via api send" for h in self.rx.hits[before:]),
                 "webhook for the API's send")


class LimitTest(ServerCase):
    args = ("--webhook-limit", "4")

    def test_limit_spaces_requests_and_reuses_the_connection(self):
        send(self.srv, [f"limited {i}" for i in range(6)])
        wait_for(lambda: self.rx.count() >= 6, "six webhook requests")
        times = [h[0] for h in self.rx.hits]
        gaps = [b - a for a, b in zip(times, times[1:])]
        # 4 a second: 250 ms apart at least (a little slack for the clocks' resolution).
        self.assertGreaterEqual(min(gaps), 0.22, gaps)
        self.assertEqual(len({h[1] for h in self.rx.hits}), 1, "one kept-alive connection")
        self.assertEqual(sorted(h[3]["Subject"] for h in self.rx.hits),
                         sorted(f"limited {i}" for i in range(6)))
        wait_for(lambda: metric(self.srv, "inlet_webhook_sent_total") == 6, "sent counter")


class DelayTest(ServerCase):
    args = ("--webhook-limit", "0", "--webhook-delay", "1")

    def test_delay_before_each_request(self):
        t0 = time.monotonic()
        send(self.srv, ["delayed"])
        wait_for(lambda: self.rx.count() >= 1, "delayed webhook request")
        self.assertGreaterEqual(self.rx.hits[0][0] - t0, 1.0)


class ReceiverDownTest(unittest.TestCase):
    """A receiver that accepts connections and never answers: the queue fills, the rest is
    dropped and counted, and no SMTP reply waits for it."""

    def test_bounded_and_replies_not_delayed(self):
        hole = socket.socket()
        hole.bind(("127.0.0.1", 0))
        hole.listen(1)
        srv = Inletd("--webhook-url", f"http://127.0.0.1:{hole.getsockname()[1]}/hook",
                     "--webhook-limit", "0")
        try:
            worst = 0.0
            with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=30) as c:
                for i in range(1300):
                    t = time.monotonic()
                    c.sendmail("alice@sender.example", ["bob@rcpt.example"],
                               make_message(f"down {i}", "x"))
                    worst = max(worst, time.monotonic() - t)
            dropped = metric(srv, "inlet_webhook_dropped_total")
            depth = metric(srv, "inlet_webhook_queue_depth")
            self.assertLessEqual(depth, 1000)
            self.assertGreaterEqual(dropped, 1300 - 1000 - 1)
            self.assertEqual(metric(srv, "inlet_webhook_sent_total"), 0)
            # A reply never waits on the webhook (its request hangs for 5 s here).
            self.assertLess(worst, 2.0)
        finally:
            rc = srv.stop()
            hole.close()
        self.assertEqual(rc, 0, "".join(srv.log))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
