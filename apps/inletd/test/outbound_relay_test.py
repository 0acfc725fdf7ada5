#!/usr/bin/env python3
"""Mailpit's auto-relay and forwarding end to end: an inletd relays or forwards every new
message to a second inletd (the relay target, whose API shows what arrived and with which
envelope); a target that is down leaves the 250 and the stored copy alone, and is counted.

    outbound_relay_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import json
import os
import re
import shutil
import smtplib
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.request

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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CountingProxy:
    """A TCP pass-through on 127.0.0.1 to `port` that counts the connections it accepts."""

    def __init__(self, port):
        self.port, self.accepted = port, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.listen_port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            u = socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE)
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for x in (a, b):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.sock.close()


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

    def test_one_connection_for_many_messages(self):
        proxy = CountingProxy(self.target.smtp_port)
        src = Inletd("--relay", f"127.0.0.1:{proxy.listen_port}", "--smtp-relay-all")
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                for i in range(10):
                    s.sendmail("ann@example.org", ["x@keep.example"], message(f"reused {i}"))
            wait_for(lambda: metric(src, "inlet_relay_sent_total") == 10, "all relayed")
            for i in range(10):
                self.assertIsNotNone(wait_for(lambda: self.target.find(f"reused {i}"), "arrived"))
            # The connections were kept between messages: at most one per sender thread.
            self.assertLessEqual(proxy.accepted, 2)
        finally:
            src.stop()
            proxy.close()

    @unittest.skipUnless(os.path.exists("/usr/sbin/smtp-sink"), "Postfix's smtp-sink not installed")
    def test_relay_and_forward_into_postfix_smtp_sink(self):
        sink, port = start_sink()
        try:
            env = {"MP_SMTP_FORWARD_HOST": "127.0.0.1", "MP_SMTP_FORWARD_PORT": str(port),
                   "MP_SMTP_FORWARD_TO": "archive@copies.example"}
            src = Inletd("--relay", f"127.0.0.1:{port}", "--smtp-relay-all", env=env)
            try:
                with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                    for i in range(20):
                        s.sendmail("ann@example.org", ["x@keep.example"], message(f"sink {i}"))
                wait_for(lambda: metric(src, "inlet_relay_sent_total") == 20, "relayed")
                wait_for(lambda: metric(src, "inlet_forward_sent_total") == 20, "forwarded")
                self.assertEqual(metric(src, "inlet_relay_failed_total"), 0)
                self.assertEqual(metric(src, "inlet_forward_failed_total"), 0)
            finally:
                src.stop()
        finally:
            sink.terminate()
            sink.wait(timeout=DEADLINE)

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

    def test_allowed_recipients_does_not_limit_auto_relay(self):
        # Mailpit's relay allowed-recipients limits release only; auto-relay applies the
        # blocked-recipients alone (then --smtp-relay-matching).
        with tempfile.TemporaryDirectory() as d:
            conf = os.path.join(d, "relay.yaml")
            with open(conf, "w") as f:
                f.write(f"host: 127.0.0.1\nport: {self.target.smtp_port}\n"
                        "allowed-recipients: '@allowed\\.example$'\n"
                        "blocked-recipients: '^blocked@'\n")
            src = Inletd("--smtp-relay-config", conf, "--smtp-relay-matching", r"@(allowed|other)\.")
            try:
                with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                    s.sendmail("ann@example.org", ["a@allowed.example", "b@other.example",
                                                   "blocked@other.example", "c@none.example"],
                               message("allowlist and auto-relay"))
                got = wait_for(lambda: full(self.target, "allowlist and auto-relay"), "relayed")
                self.assertEqual(got["Envelope"]["To"], ["a@allowed.example", "b@other.example"])
            finally:
                src.stop()


    def test_auto_relay_without_a_relay_is_refused(self):
        import subprocess
        r = subprocess.run([e2e_test.INLETD, "--smtp-relay-all"], capture_output=True,
                           text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 2)
        self.assertIn("relay configuration must be set", r.stderr)

def start_sink(*flags):
    """Postfix's smtp-sink on a free loopback port; (process, port)."""
    port = free_port()
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    sink = subprocess.Popen(["/usr/sbin/smtp-sink", *user, *flags, f"127.0.0.1:{port}", "64"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    wait_for(listening, "smtp-sink listening")
    return sink, port


def labelled(srv, name, label):
    _, _, body = srv.get("/metrics")
    m = re.search(rf'^{name}\{{{label}\}} (\d+)$', body.decode(), re.M)
    return int(m.group(1)) if m else None


def release(srv, mid, to):
    req = urllib.request.Request(srv.url(f"/api/v1/message/{mid}/release"), method="POST",
                                 data=json.dumps({"To": to}).encode())
    with e2e_test.HTTP.open(req, timeout=DEADLINE) as r:  # no proxy from the environment
        return r.read()


class KeptConnections(unittest.TestCase):
    """Releases, auto-relay and forwarding to one destination share its kept connections
    (counted by a pass-through in front of a server nobody here wrote, and by inletd's
    inlet_outbound_connections_total)."""

    RELEASES = 10

    def _releases_over_one_connection(self, server_port, arrived):
        proxy = CountingProxy(server_port)
        src = Inletd("--relay", f"127.0.0.1:{proxy.listen_port}")
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("ann@example.org", ["x@keep.example"], message("released again"))
            mid = wait_for(lambda: src.find("released again"), "stored")["ID"]
            for i in range(self.RELEASES):
                self.assertEqual(release(src, mid, [f"r{i}@copies.example"]), b"ok")
            wait_for(lambda: arrived() == self.RELEASES, "every release arrived")
            self.assertEqual(proxy.accepted, 1)
            self.assertEqual(labelled(src, "inlet_outbound_connections_total", 'kind="opened"'), 1)
            self.assertEqual(labelled(src, "inlet_outbound_connections_total", 'kind="reused"'),
                             self.RELEASES - 1)
        finally:
            src.stop()
            proxy.close()

    def test_releases_into_a_second_inletd(self):
        target = Inletd()
        try:
            self._releases_over_one_connection(
                target.smtp_port,
                lambda: sum(1 for m in target.messages()["messages"]
                            if m["Subject"] == "released again"))
        finally:
            target.stop()

    @unittest.skipUnless(os.path.exists("/usr/sbin/smtp-sink"), "Postfix's smtp-sink not installed")
    def test_releases_into_postfix_smtp_sink(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o777)  # smtp-sink writes as nobody when started by root
            dump = os.path.join(d, "dump")
            sink, port = start_sink("-D", dump)
            try:
                def arrived():
                    try:
                        with open(dump, "rb") as f:
                            return f.read().count(b"\nSubject: released again\n")  # LF: as it dumps
                    except OSError:
                        return 0
                self._releases_over_one_connection(port, arrived)
            finally:
                sink.terminate()
                sink.wait(timeout=DEADLINE)

    def test_release_reuses_the_auto_relay_connection(self):
        target = Inletd()
        proxy = CountingProxy(target.smtp_port)
        src = Inletd("--relay", f"127.0.0.1:{proxy.listen_port}", "--smtp-relay-all")
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                for i in range(3):
                    s.sendmail("ann@example.org", ["x@keep.example"], message(f"shared {i}"))
            wait_for(lambda: metric(src, "inlet_relay_sent_total") == 3, "auto-relayed")
            for i in range(3):
                mid = wait_for(lambda: src.find(f"shared {i}"), "stored")["ID"]
                self.assertEqual(release(src, mid, ["y@copies.example"]), b"ok")
            wait_for(lambda: sum(1 for m in target.messages()["messages"]
                                 if m["Subject"].startswith("shared ")) == 6, "all arrived")
            # Auto-relay's senders keep at most two; the releases took one of them.
            self.assertLessEqual(proxy.accepted, 2)
            self.assertEqual(labelled(src, "inlet_outbound_connections_total", 'kind="opened"'),
                             proxy.accepted)
        finally:
            src.stop()
            proxy.close()
            target.stop()


DOTTED = (b"From: Ann <ann@example.org>\r\nTo: x@keep.example\r\nSubject: SUBJECT\r\n"
          b"Message-ID: <dotted@example.org>\r\n\r\n.leading dot\r\n..two\r\n.\r\nend\r\n")


class TlsAndPipelining(unittest.TestCase):
    """The relay's own SMTP client against servers that do what it must cope with: STARTTLS
    required (with AUTH after it), TLS from the first byte, no PIPELINING."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def conf(self, text):
        path = os.path.join(self.dir.name, "relay.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def relay_one(self, target, conf_text, subject):
        src = Inletd("--smtp-relay-config", self.conf(conf_text), "--smtp-relay-all")
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("ann@example.org", ["x@keep.example"],
                           DOTTED.replace(b"SUBJECT", subject.encode()))
            wait_for(lambda: (metric(src, "inlet_relay_sent_total") or 0) +
                     (metric(src, "inlet_relay_failed_total") or 0) == 1, "relay done")
            return metric(src, "inlet_relay_sent_total"), "".join(src.log)
        finally:
            src.stop()

    def check_arrived(self, target, subject):
        got = wait_for(lambda: target.find(subject), "relayed copy")
        _, _, raw = target.get(f"/api/v1/message/{got['ID']}/raw")
        self.assertTrue(raw.endswith(b"\r\n\r\n.leading dot\r\n..two\r\n.\r\nend\r\n"), raw)

    def test_starttls_required_then_auth_plain(self):
        sans = "sans:localhost,127.0.0.1"
        target = Inletd("--smtp-tls-cert", sans, "--smtp-tls-key", sans,
                        "--smtp-require-starttls", "--smtp-auth-accept-any")
        try:
            base = (f"host: 127.0.0.1\nport: {target.smtp_port}\nstarttls: true\n"
                    "auth: plain\nusername: relay\npassword: secret\n")
            sent, _ = self.relay_one(target, base + "allow-insecure: true\n", "over starttls")
            self.assertEqual(sent, 1)
            self.check_arrived(target, "over starttls")
            # The target's certificate is self-signed: verified, it is refused.
            sent, _ = self.relay_one(target, base, "unverified")
            self.assertEqual(sent, 0)
            self.assertIsNone(target.find("unverified"))
        finally:
            target.stop()

    def test_implicit_tls_and_auth_login(self):
        sans = "sans:localhost,127.0.0.1"
        target = Inletd("--smtp-tls-cert", sans, "--smtp-tls-key", sans, "--smtp-require-tls",
                        "--smtp-auth-accept-any")
        try:
            sent, _ = self.relay_one(
                target, f"host: 127.0.0.1\nport: {target.smtp_port}\ntls: true\n"
                        "allow-insecure: true\nauth: login\nusername: relay\npassword: pw\n",
                "over smtps")
            self.assertEqual(sent, 1)
            self.check_arrived(target, "over smtps")
        finally:
            target.stop()

    @unittest.skipUnless(os.path.exists("/usr/sbin/smtp-sink"), "Postfix's smtp-sink not installed")
    def test_server_without_pipelining(self):
        sink, port = start_sink("-p")  # -p: PIPELINING not announced
        try:
            proxy = CountingProxy(port)
            src = Inletd("--relay", f"127.0.0.1:{proxy.listen_port}", "--smtp-relay-all")
            try:
                with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                    for i in range(30):
                        s.sendmail("ann@example.org", ["x@keep.example", "y@keep.example"],
                                   DOTTED.replace(b"SUBJECT", f"one by one {i}".encode()))
                wait_for(lambda: metric(src, "inlet_relay_sent_total") == 30, "relayed")
                self.assertEqual(metric(src, "inlet_relay_failed_total"), 0)
                self.assertLessEqual(proxy.accepted, 2)
            finally:
                src.stop()
                proxy.close()
        finally:
            sink.terminate()
            sink.wait(timeout=DEADLINE)


class ForwardSmtpErrors(unittest.TestCase):
    """forward-smtp-errors: a recipient the relay or forwarding target refuses. Without it
    (Mailpit's default) the copy goes to the recipients the target took; with it the
    message is not sent, and the SMTP client gets the target's refusal, nothing stored."""

    @classmethod
    def setUpClass(cls):
        # The target refuses every recipient outside keep.example.
        cls.target = Inletd("--smtp-allowed-recipients", r"@keep\.example$")
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.target.stop()
        cls.dir.cleanup()

    def conf(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(f"host: 127.0.0.1\nport: {self.target.smtp_port}\n" + text)
        return path

    def refusal(self, rcpt):
        """What the target itself answers RCPT TO:<rcpt>."""
        with smtplib.SMTP("127.0.0.1", self.target.smtp_port, timeout=DEADLINE) as s:
            s.ehlo()
            s.mail("ann@example.org")
            return s.rcpt(rcpt)

    def test_relay_skips_refused_recipients_by_default(self):
        src = Inletd("--smtp-relay-config", self.conf("r1.yaml", ""), "--smtp-relay-all")
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                s.sendmail("ann@example.org", ["x@keep.example", "y@gone.example"],
                           message("skip refused"))
            got = wait_for(lambda: full(self.target, "skip refused"), "relayed")
            self.assertEqual(got["Envelope"]["To"], ["x@keep.example"])
            wait_for(lambda: metric(src, "inlet_relay_sent_total") == 1, "counted as sent")
        finally:
            src.stop()

    def test_relay_refusal_is_the_clients_reply(self):
        code, text = self.refusal("y@gone.example")
        self.assertGreaterEqual(code, 500)
        src = Inletd("--smtp-relay-config", self.conf("r2.yaml", "forward-smtp-errors: true\n"),
                     "--smtp-relay-all")
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                with self.assertRaises(smtplib.SMTPDataError) as e:
                    s.sendmail("ann@example.org", ["x@keep.example", "y@gone.example"],
                               message("refused whole"))
                self.assertEqual(e.exception.smtp_code, code)
                self.assertEqual(e.exception.smtp_error, text)
                # The session goes on: a message the target takes is relayed and stored.
                s.sendmail("ann@example.org", ["x@keep.example"], message("taken whole"))
            self.assertIsNotNone(full(src, "taken whole"))
            self.assertIsNotNone(wait_for(lambda: full(self.target, "taken whole"), "relayed"))
            self.assertIsNone(src.find("refused whole"))
            self.assertIsNone(self.target.find("refused whole"))
            self.assertEqual(metric(src, "inlet_relay_sent_total"), 1)
            self.assertEqual(metric(src, "inlet_relay_failed_total"), 1)
        finally:
            src.stop()

    def test_forward_refusal_and_target_down(self):
        env = {"MP_SMTP_RELAY_HOST": ""}
        conf = self.conf("f.yaml", "to: a@keep.example, b@gone.example\n"
                                   "forward-smtp-errors: true\n")
        src = Inletd("--smtp-forward-config", conf, env=env)
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                with self.assertRaises(smtplib.SMTPDataError) as e:
                    s.sendmail("ann@example.org", ["x@any.example"], message("forward refused"))
                self.assertEqual(e.exception.smtp_code, self.refusal("b@gone.example")[0])
            self.assertIsNone(src.find("forward refused"))
        finally:
            src.stop()
        # A target that is down answers no code: Mailpit's 451 4.3.5.
        down = os.path.join(self.dir.name, "down.yaml")
        with open(down, "w") as f:
            f.write("host: 127.0.0.1\nport: 9\nto: a@keep.example\nforward-smtp-errors: true\n")
        src = Inletd("--smtp-forward-config", down)
        try:
            with smtplib.SMTP("127.0.0.1", src.smtp_port, timeout=DEADLINE) as s:
                with self.assertRaises(smtplib.SMTPDataError) as e:
                    s.sendmail("ann@example.org", ["x@any.example"], message("forward down"))
                self.assertEqual(e.exception.smtp_code, 451)
                self.assertEqual(e.exception.smtp_error, b"4.3.5 Unable to process mail")
        finally:
            src.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
