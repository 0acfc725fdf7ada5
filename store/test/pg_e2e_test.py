#!/usr/bin/env python3
"""End to end over the PostgreSQL store: two inletd instances in front of the shards of
store/test/with-pg-shards.sh (three in ctest). swaks, curl and Python's smtplib send
through either instance; every message is read back through the *other* one, byte for
byte, in the global listing, in each recipient's mailbox and as raw bytes; both
instances' /api/events streams announce every message.

    store/test/with-pg-shards.sh 3 /usr/bin/python3 store/test/pg_e2e_test.py --inletd build/bin/inletd

RebalanceUnderLoad needs four shards and inlet-pg-admin (ctest store_pg_rebalance_e2e):

    INLET_PG_FSYNC=on store/test/with-pg-shards.sh 4 /usr/bin/python3 store/test/pg_e2e_test.py \
        --inletd build/bin/inletd --admin build/bin/inlet-pg-admin RebalanceUnderLoad
"""
import argparse
import json
import os
import random
import re
import shutil
import smtplib
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

INLETD = None
ADMIN = None  # inlet-pg-admin, for the rebalance under load
DEADLINE = 30.0
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
from inlet_support import HTTP, free_port, pg_ctl  # noqa: E402


class Inletd:
    def __init__(self, shards, buckets=64):
        self.smtp_port, self.http_port = free_port(), free_port()
        args = [INLETD, "--smtp", f"127.0.0.1:{self.smtp_port}", "--listen", f"127.0.0.1:{self.http_port}",
                "--hostname", "mx.test.example", "--store", shards[0], "--buckets", str(buckets)]
        for s in shards[1:]:
            args += ["--shard", s]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.log = []
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.log.append(line)
            if "http listening" in line:
                break
        else:
            raise RuntimeError("inletd did not start: " + "".join(self.log))
        self.reader = threading.Thread(target=lambda: [self.log.append(l) for l in self.proc.stdout],
                                       daemon=True)
        self.reader.start()

    def get(self, path):
        with HTTP.open(f"http://127.0.0.1:{self.http_port}{path}", timeout=DEADLINE) as r:
            return r.read()

    def json(self, path):
        return json.loads(self.get(path))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=DEADLINE)  # the pipe's end reached: then it can be closed
        self.proc.stdout.close()


class Events(threading.Thread):
    """Reads an /api/events stream; keeps the subjects and IDs of 'new' events."""

    def __init__(self, inletd):
        super().__init__(daemon=True)
        self.inletd = inletd
        self.subjects = []
        self.ids = set()
        self.ready = threading.Event()

    def run(self):
        with socket.create_connection(("127.0.0.1", self.inletd.http_port), timeout=DEADLINE * 2) as s:
            s.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            self.ready.set()
            buf = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                done = 0
                for m in re.finditer(rb'event: new\r?\ndata: (\{.*?\})\r?\n', buf):
                    done = m.end()
                    try:
                        data = json.loads(m.group(1)).get("Data", {})
                    except ValueError:
                        continue
                    subject = data.get("Subject")
                    if data.get("ID"):
                        self.ids.add(data["ID"])
                    if subject and subject not in self.subjects:
                        self.subjects.append(subject)
                # What was read is dropped up to the last whole event (a long stream).
                buf = buf[done:] if done else buf[-65536:]


SHARDS = []


class TwoInstances(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.a = Inletd(SHARDS)
        cls.b = Inletd(SHARDS)
        cls.ev_a, cls.ev_b = Events(cls.a), Events(cls.b)
        for e in (cls.ev_a, cls.ev_b):
            e.start()
            e.ready.wait(DEADLINE)
        time.sleep(0.5)  # the streams are subscribed
        cls.tmp = tempfile.mkdtemp(prefix="inlet-pg-e2e.")

    @classmethod
    def tearDownClass(cls):
        cls.a.stop()
        cls.b.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def find(self, inletd, subject):
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            for m in inletd.json("/api/v1/messages?limit=500")["messages"]:
                if m["Subject"] == subject:
                    return m
            time.sleep(0.1)
        self.fail(f"{subject!r} never listed")

    def check(self, via, subject, raw, rcpt):
        m = self.find(via, subject)
        self.assertEqual(via.get(f"/api/v1/message/{m['ID']}/raw"), raw)
        for r in rcpt:
            box = via.json(f"/api/v1/mailbox/{r}")
            self.assertIn(m["ID"], [x["ID"] for x in box["messages"]], r)
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end and not (subject in self.ev_a.subjects and subject in self.ev_b.subjects):
            time.sleep(0.05)
        self.assertIn(subject, self.ev_a.subjects, "instance A's event stream")
        self.assertIn(subject, self.ev_b.subjects, "instance B's event stream")

    def test_smtplib_through_b_read_through_a(self):
        raw = (b"From: Bob <bob@example.org>\r\nTo: alice@example.com\r\nSubject: via smtplib\r\n\r\n"
               b"caf\xc3\xa9 and 8-bit \xff bytes\r\n.leading dot\r\n")
        with smtplib.SMTP("127.0.0.1", self.b.smtp_port, timeout=DEADLINE) as s:
            s.sendmail("bob@example.org", ["alice@example.com"], raw)
        self.check(self.a, "via smtplib", raw, ["alice@example.com"])

    def test_swaks_through_a_read_through_b(self):
        if not shutil.which("swaks"):
            self.skipTest("swaks not installed")
        rcpt = ["ann@example.com", "bob@example.org", "carol@example.net", "dave@example.com"]
        raw = ("From: Ann <ann@example.com>\r\nTo: " + ", ".join(rcpt) + "\r\nSubject: via swaks\r\n\r\n"
               "Four recipients, three shards.\r\n").encode()
        path = os.path.join(self.tmp, "swaks.eml")
        with open(path, "wb") as f:
            f.write(raw)
        out = subprocess.run(["swaks", "--server", f"127.0.0.1:{self.a.smtp_port}", "--from", "ann@example.com",
                              "--to", ",".join(rcpt), "--data", "@" + path], capture_output=True, text=True,
                             timeout=DEADLINE)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        # swaks ends the data it sends with a line end of its own (after the file's).
        self.check(self.b, "via swaks", raw + b"\r\n", rcpt)
        # Listed once in the global listing, although stored on several shards.
        listed = [m for m in self.b.json("/api/v1/messages?limit=500")["messages"] if m["Subject"] == "via swaks"]
        self.assertEqual(len(listed), 1)

    def test_curl_through_a_read_through_b(self):
        if not shutil.which("curl"):
            self.skipTest("curl not installed")
        raw = b"From: Eve <eve@example.org>\r\nSubject: via curl\r\n\r\nHello from curl.\r\n"
        path = os.path.join(self.tmp, "curl.eml")
        with open(path, "wb") as f:
            f.write(raw)
        out = subprocess.run(["curl", "-s", f"smtp://127.0.0.1:{self.a.smtp_port}", "--mail-from", "eve@example.org",
                              "--mail-rcpt", "frank@example.com", "--upload-file", path], capture_output=True,
                             timeout=DEADLINE)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.check(self.b, "via curl", raw, ["frank@example.com"])

    def test_body_words_are_searchable_through_the_other_instance(self):
        # The search text (subject, addresses, the decoded body) is built by the store at
        # insert from the raw bytes: a word only in the quoted-printable body must be found.
        raw = (b"From: Hal <hal@example.org>\r\nSubject: searchable\r\nMIME-Version: 1.0\r\n"
               b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
               b"the word zyzzyv=\r\nalent only here, and caf=C3=A9\r\n")
        with smtplib.SMTP("127.0.0.1", self.b.smtp_port, timeout=DEADLINE) as s:
            s.sendmail("hal@example.org", ["ivy@example.com"], raw)
        m = self.find(self.a, "searchable")
        for q in ("zyzzyvalent", "caf%C3%A9"):
            found = self.a.json(f"/api/v1/search?query={q}")["messages"]
            self.assertEqual([x["ID"] for x in found], [m["ID"]], q)
        self.assertEqual(self.a.json("/api/v1/search?query=zyzzyv")["messages_count"], 1)
        self.assertEqual(self.a.json("/api/v1/search?query=nowhere-in-it")["messages_count"], 0)

    def test_cut_address_lists_answer_their_totals_through_the_other_instance(self):
        # inletd keeps the first addresses of a long list and the whole count (Totals);
        # the PostgreSQL store keeps the count, so the answers are the memory store's
        # (apps/inletd/test/api_e2e_test.py).
        to = ",\r\n ".join(f"t{i}@example.com" for i in range(5000))
        raw = f"From: k@example.org\r\nTo: {to}\r\nSubject: many addresses\r\n\r\nbody\r\n".encode()
        with smtplib.SMTP("127.0.0.1", self.a.smtp_port, timeout=DEADLINE) as s:
            s.sendmail("k@example.org", ["t0@example.com"], raw)
        want = {"To": 5000, "Cc": 0, "Bcc": 0, "ReplyTo": 0, "Attachments": 0}
        m = self.find(self.b, "many addresses")
        self.assertLessEqual(len(m["To"]), 100)
        self.assertEqual(m.get("Totals"), want, "listing")
        found = self.b.json("/api/v1/search?query=subject:%22many%20addresses%22")["messages"]
        self.assertEqual([x.get("Totals") for x in found], [want], "search")
        box = self.b.json("/api/v1/mailbox/t0@example.com")["messages"]
        self.assertEqual([x.get("Totals") for x in box], [want], "mailbox")
        whole = self.b.json(f"/api/v1/message/{m['ID']}")
        self.assertEqual(len(whole["To"]), len(m["To"]))
        self.assertEqual(whole.get("Totals"), want, "message")
        # A message whose lists are whole has no Totals (Mailpit's shape).
        raw = b"From: l@example.org\r\nTo: lee@example.com\r\nSubject: few addresses\r\n\r\nbody\r\n"
        with smtplib.SMTP("127.0.0.1", self.a.smtp_port, timeout=DEADLINE) as s:
            s.sendmail("l@example.org", ["lee@example.com"], raw)
        few = self.find(self.b, "few addresses")
        self.assertNotIn("Totals", few)
        self.assertNotIn("Totals", self.b.json(f"/api/v1/message/{few['ID']}"))

    def test_read_flag_and_delete_cross_instances(self):
        raw = b"Subject: to delete\r\n\r\nbye\r\n"
        with smtplib.SMTP("127.0.0.1", self.a.smtp_port, timeout=DEADLINE) as s:
            s.sendmail("x@example.org", ["gina@example.com"], raw)
        m = self.find(self.b, "to delete")
        req = urllib.request.Request(f"http://127.0.0.1:{self.b.http_port}/api/v1/messages", method="PUT",
                                     data=json.dumps({"IDs": [m["ID"]], "Read": True}).encode())
        HTTP.open(req, timeout=DEADLINE).read()
        self.assertTrue(self.find(self.a, "to delete")["Read"])
        req = urllib.request.Request(f"http://127.0.0.1:{self.a.http_port}/api/v1/messages", method="DELETE",
                                     data=json.dumps({"IDs": [m["ID"]]}).encode())
        HTTP.open(req, timeout=DEADLINE).read()
        ids = [x["ID"] for x in self.b.json("/api/v1/messages?limit=500")["messages"]]
        self.assertNotIn(m["ID"], ids)


class ShardListChecks(unittest.TestCase):
    """What an operator sees when the shard list is not the cluster's."""

    def run_inletd(self, shards, *extra):
        args = [INLETD, "--smtp", f"127.0.0.1:{free_port()}", "--listen", f"127.0.0.1:{free_port()}",
                "--store", shards[0], "--buckets", "64", *extra]
        for s in shards[1:]:
            args += ["--shard", s]
        return subprocess.run(args, capture_output=True, text=True, timeout=DEADLINE * 3)

    def test_a_shorter_list_than_the_cluster_is_refused(self):
        Inletd(SHARDS).stop()  # the cluster exists with every shard
        r = self.run_inletd(SHARDS[:1])
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(f"the cluster has {len(SHARDS)} shards", r.stderr)

    def test_expect_shards_checks_the_list(self):
        r = self.run_inletd(SHARDS, "--expect-shards", str(len(SHARDS) + 1))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(f"expected {len(SHARDS) + 1} shards", r.stderr)


class ShardOutage(unittest.TestCase):
    """One shard stopped: its recipients are refused at RCPT, the others' mail is taken,
    and nothing is written and then taken back on the healthy shards."""

    @classmethod
    def setUpClass(cls):
        cls.a = Inletd(SHARDS)
        cls.b = Inletd(SHARDS)
        cls.ev_b = Events(cls.b)
        cls.ev_b.start()
        cls.ev_b.ready.wait(DEADLINE)
        time.sleep(0.5)
        cls.down = len(SHARDS) - 1
        assert pg_ctl(cls.down, "stop -m immediate") == 0

    @classmethod
    def tearDownClass(cls):
        assert pg_ctl(cls.down, "start") == 0
        end = time.monotonic() + DEADLINE  # both instances see the shard again
        for inst in (cls.a, cls.b):
            while time.monotonic() < end:
                try:
                    inst.get("/readyz")
                    break
                except OSError:
                    time.sleep(0.1)
        cls.a.stop()
        cls.b.stop()

    def rcpt_codes(self, boxes):
        with smtplib.SMTP("127.0.0.1", self.a.smtp_port, timeout=DEADLINE) as s:
            s.ehlo("probe.example")
            s.mail("probe@example.org")
            codes = {b: s.rcpt(b)[0] for b in boxes}
            s.rset()
        return codes

    def metric(self, name):
        text = self.a.get("/metrics").decode()
        return sum(float(v) for v in re.findall(rf"^{re.escape(name)}\s+([0-9.e+]+)$", text, re.M))

    def test_recipients_on_the_down_shard_alone_are_refused(self):
        boxes = [f"outage{i}@example.com" for i in range(24)]
        end = time.monotonic() + DEADLINE
        while True:  # the store notices the shard is gone within a reconnect period
            codes = self.rcpt_codes(boxes)
            if 451 in codes.values() or time.monotonic() > end:
                break
            time.sleep(0.2)
        refused = [b for b, c in codes.items() if c == 451]
        taken = [b for b, c in codes.items() if c == 250]
        self.assertTrue(refused, codes)
        self.assertTrue(taken, codes)
        self.assertEqual(len(refused) + len(taken), len(boxes), codes)

        subject = "outage mixed %d" % time.time_ns()
        raw = f"From: a@example.org\r\nSubject: {subject}\r\n\r\nbody\r\n".encode()
        with smtplib.SMTP("127.0.0.1", self.a.smtp_port, timeout=DEADLINE) as s:
            failed = s.sendmail("a@example.org", [refused[0], taken[0], taken[1]], raw)
        self.assertEqual(list(failed), [refused[0]])
        self.assertEqual(failed[refused[0]][0], 451)
        for box in taken[:2]:
            try:
                listing = self.b.json(f"/api/v1/mailbox/{box}")
            except urllib.error.HTTPError as e:
                self.fail(f"{box}: {e.code} {e.read()!r}")
            found = [m for m in listing["messages"] if m["Subject"] == subject]
            self.assertEqual(len(found), 1, box)

        # A message whose every recipient is on the down shard is refused before DATA:
        # nothing is committed anywhere, so there is nothing to take back and no event.
        gone = "outage refused %d" % time.time_ns()
        with self.assertRaises(smtplib.SMTPRecipientsRefused):
            with smtplib.SMTP("127.0.0.1", self.a.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("a@example.org", refused[:2],
                           f"Subject: {gone}\r\n\r\nx\r\n".encode())
        end = time.monotonic() + 2
        while time.monotonic() < end and subject not in self.ev_b.subjects:
            time.sleep(0.05)
        self.assertIn(subject, self.ev_b.subjects)
        self.assertNotIn(gone, self.ev_b.subjects)
        self.assertEqual(self.metric('inlet_pg_failed_put_cleanups_total{result="removed"}'), 0)


class ShardRestart(unittest.TestCase):
    """Every shard restarted under warm connection pools: once /readyz says ok on both
    instances, the very first reads answer 200 (a pooled connection that died with its
    server is retried on a fresh one, not turned into a 503)."""

    @classmethod
    def setUpClass(cls):
        cls.a = Inletd(SHARDS)
        cls.b = Inletd(SHARDS)

    @classmethod
    def tearDownClass(cls):
        cls.a.stop()
        cls.b.stop()

    @staticmethod
    def status(inst, path):
        try:
            inst.get(path)
            return 200
        except urllib.error.HTTPError as e:
            return e.code

    def reads(self, inst, boxes, subject):
        paths = ["/api/v1/messages?limit=50", f"/api/v1/search?query={urllib.parse.quote(subject)}"]
        paths += [f"/api/v1/mailbox/{b}" for b in boxes]
        return {p: self.status(inst, p) for p in paths}

    def wait_ready(self, inst):
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            if self.status_or_none(inst, "/readyz") == 200:
                return
            time.sleep(0.05)
        self.fail("readyz never ok again")

    def status_or_none(self, inst, path):
        try:
            return self.status(inst, path)
        except OSError:
            return None

    def test_first_reads_after_every_shard_restarted_answer(self):
        boxes = [f"restart{i}@example.com" for i in range(12)]  # spread over the shards
        subject = "restart %d" % time.time_ns()
        raw = f"From: a@example.org\r\nSubject: {subject}\r\n\r\nbody\r\n".encode()
        with smtplib.SMTP("127.0.0.1", self.a.smtp_port, timeout=DEADLINE) as s:
            self.assertEqual(s.sendmail("a@example.org", boxes, raw), {})
        for _ in range(3):  # warm both pools: connections to every shard
            for inst in (self.a, self.b):
                self.assertEqual(set(self.reads(inst, boxes, subject).values()), {200})
        for shard in range(len(SHARDS)):
            self.assertEqual(pg_ctl(shard, "restart -m fast"), 0, f"shard {shard}")
        for inst in (self.a, self.b):
            self.wait_ready(inst)
        for inst in (self.a, self.b):
            codes = self.reads(inst, boxes, subject)
            self.assertEqual({p: c for p, c in codes.items() if c != 200}, {})
            box = inst.json(f"/api/v1/mailbox/{boxes[0]}")
            self.assertIn(subject, [m["Subject"] for m in box["messages"]])


def psql(dsn, sql):
    out = subprocess.run(["psql", dsn, "-At", "-F", "\t", "-c", sql], capture_output=True, text=True,
                         timeout=DEADLINE * 2)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return [line.split("\t") for line in out.stdout.splitlines() if line]


def percentile(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


class RebalanceUnderLoad(unittest.TestCase):
    """Two inletd on three shards, a fourth shard added empty, and `inlet-pg-admin
    rebalance` run while smtplib senders load instance A, a reader loop lists, counts and
    searches on instance B and B's event stream is open. No read fails, the global total
    never drops below what was acknowledged before the read, every acknowledged message
    is stored once, and every `new` event names a message that exists. Put latency
    before and during the rebalance is printed, not asserted."""

    SENDERS = 4
    PER_SENDER = 2000     # bounds the load in count...
    LOAD_SECONDS = 40.0   # ...and in time
    BEFORE = 4.0          # seconds of load before the rebalance starts
    AFTER = 2.0           # and after it ends
    MAILBOXES = 300

    @classmethod
    def setUpClass(cls):
        if not ADMIN or len(SHARDS) < 4:
            raise unittest.SkipTest("needs --admin and four shards (ctest store_pg_rebalance_e2e)")
        cls.shards = SHARDS[:4]
        Inletd(cls.shards[:3]).stop()  # a cluster of three shards
        for dsn in cls.shards[:3]:
            assert psql(dsn, "SELECT count(*) FROM mail.bucket WHERE state = 'owned'")[0][0] != "0"
        # The fourth shard is appended to every instance's list: it joins without buckets.
        cls.a = Inletd(cls.shards)
        cls.b = Inletd(cls.shards)
        cls.events = Events(cls.b)
        cls.events.start()
        cls.events.ready.wait(DEADLINE)
        time.sleep(0.5)

    @classmethod
    def tearDownClass(cls):
        cls.a.stop()
        cls.b.stop()

    def sender(self, n, stop, acked, lock):
        rng = random.Random(n)
        smtp = None
        for i in range(self.PER_SENDER):
            if stop.is_set():
                break
            subject = f"rb-{n}-{i}-end"  # no subject is a substring of another (search)
            rcpt = [f"rb{rng.randrange(self.MAILBOXES)}@example.com" for _ in range(rng.randint(1, 3))]
            raw = f"From: s{n}@example.org\r\nSubject: {subject}\r\n\r\nbody {i}\r\n".encode()
            t0 = time.monotonic()
            try:
                if smtp is None:
                    smtp = smtplib.SMTP("127.0.0.1", self.a.smtp_port, timeout=DEADLINE)
                refused = smtp.sendmail(f"s{n}@example.org", rcpt, raw)
            except (smtplib.SMTPException, OSError) as e:
                with lock:
                    self.send_errors.append(f"{subject}: {e!r}")
                if smtp is not None:
                    try:
                        smtp.close()
                    except OSError:
                        pass
                smtp = None
                continue
            t1 = time.monotonic()
            with lock:
                if refused:  # some recipients refused: the message is stored for the others
                    self.send_errors.append(f"{subject}: refused {refused}")
                acked.append((t0, t1 - t0, subject, rcpt[0]))
        if smtp is not None:
            smtp.quit()

    def reader(self, stop, acked, lock):
        rng = random.Random(99)
        while not stop.is_set():
            with lock:
                acked_before = len(acked)
                known = acked[rng.randrange(len(acked))] if acked else None
            paths = ["/api/v1/messages?limit=50"]
            if known:
                paths.append(f"/api/v1/mailbox/{known[3]}")
                paths.append("/api/v1/search?query=" + urllib.parse.quote(f'subject:"{known[2]}"'))
            paths.append(f"/api/v1/mailbox/rb{rng.randrange(self.MAILBOXES)}@example.com")
            for path in paths:
                try:
                    page = self.b.json(path)
                except urllib.error.HTTPError as e:
                    self.read_errors.append(f"{path}: {e.code} {e.read()[:200]!r}")
                    continue
                except OSError as e:
                    self.read_errors.append(f"{path}: {e!r}")
                    continue
                self.reads += 1
                ids = [m["ID"] for m in page["messages"]]
                if len(ids) != len(set(ids)):
                    self.read_errors.append(f"{path}: an ID listed twice")
                if path.startswith("/api/v1/messages"):
                    self.totals.append(page["total"])
                    if page["total"] < acked_before:
                        self.read_errors.append(f"total {page['total']} < {acked_before} acknowledged before")
                elif path.startswith("/api/v1/search"):
                    if known[2] not in [m["Subject"] for m in page["messages"]]:
                        self.read_errors.append(f"{known[2]!r} acknowledged but not found by search")
            time.sleep(0.01)

    def test_rebalance_to_a_new_shard_under_load(self):
        self.send_errors, self.read_errors, self.totals, self.reads = [], [], [], 0
        acked, lock, stop = [], threading.Lock(), threading.Event()
        senders = [threading.Thread(target=self.sender, args=(n, stop, acked, lock)) for n in range(self.SENDERS)]
        reader = threading.Thread(target=self.reader, args=(stop, acked, lock))
        load_end = time.monotonic() + self.LOAD_SECONDS
        for t in senders + [reader]:
            t.start()
        try:
            time.sleep(self.BEFORE)
            cmd = [ADMIN]
            for dsn in self.shards:
                cmd += ["--store", dsn]
            began = time.monotonic()
            out = subprocess.run(cmd + ["rebalance", "--group", "4"], capture_output=True, text=True,
                                 timeout=self.LOAD_SECONDS)
            ended = time.monotonic()
            print(f"\nrebalance ({ended - began:.2f} s): {out.stdout.strip()} {out.stderr.strip()}", file=sys.stderr)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            time.sleep(min(self.AFTER, max(0.0, load_end - time.monotonic())))
        finally:
            stop.set()
            for t in senders + [reader]:
                t.join(DEADLINE * 2)
        self.assertFalse(any(t.is_alive() for t in senders + [reader]))

        owned = [int(psql(dsn, "SELECT count(*) FROM mail.bucket WHERE state = 'owned'")[0][0])
                 for dsn in self.shards]
        self.assertEqual(sum(owned), 64, owned)
        self.assertGreaterEqual(min(owned), 15, owned)  # the new shard has its share

        before = [lat for t0, lat, _, _ in acked if t0 < began]
        during = [lat for t0, lat, _, _ in acked if began <= t0 < ended]
        ms = lambda v: f"p50 {percentile(v, 0.5) * 1e3:.1f} ms, p99 {percentile(v, 0.99) * 1e3:.1f} ms, " \
                       f"max {max(v, default=float('nan')) * 1e3:.1f} ms"
        print(f"put latency before ({len(before)} messages): {ms(before)}", file=sys.stderr)
        print(f"put latency during ({len(during)} messages): {ms(during)}", file=sys.stderr)

        # Every shard read directly: home copies by subject, and every home copy's ID.
        present, ids = {}, set()
        for dsn in self.shards:
            for subject, n in psql(dsn, "SELECT subject, count(*) FROM mail.message WHERE home GROUP BY subject"):
                present[subject] = present.get(subject, 0) + int(n)
            ids.update(r[0] for r in psql(dsn, "SELECT id FROM mail.message WHERE home"))
        subjects = {s for _, _, s, _ in acked}
        lost = sorted(subjects - present.keys())
        doubled = sorted(s for s, n in present.items() if n > 1)
        unacked = sorted(present.keys() - subjects)
        print(f"acknowledged {len(acked)}, present {sum(present.values())}, lost {len(lost)}, "
              f"doubled {len(doubled)}, stored but not acknowledged {len(unacked)}; "
              f"{self.reads} reads, totals {min(self.totals, default=0)}..{max(self.totals, default=0)}, "
              f"{len(self.events.ids)} new events", file=sys.stderr)
        self.assertEqual(self.send_errors, [])
        self.assertEqual(self.read_errors, [])
        self.assertGreater(len(before), 0)
        self.assertGreater(self.reads, 0)
        self.assertEqual(lost, [])
        self.assertEqual(doubled, [])
        self.assertEqual(len(subjects), len(acked))
        self.assertEqual(self.b.json("/api/v1/messages?limit=1")["total"], sum(present.values()))
        time.sleep(0.5)  # the last events arrive
        self.assertEqual(sorted(self.events.ids - ids), [], "a new event for a message that does not exist")
        self.assertGreater(len(self.events.ids), 0)


def main():
    global INLETD, ADMIN
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--admin", help="inlet-pg-admin (the rebalance under load)")
    a, rest = ap.parse_known_args()
    INLETD, ADMIN = a.inletd, a.admin
    SHARDS.extend(os.environ.get("INLET_PG_SHARDS", "").split())
    if not SHARDS:
        print("pg_e2e_test: run under store/test/with-pg-shards.sh", file=sys.stderr)
        return 2
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
