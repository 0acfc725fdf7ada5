#!/usr/bin/env python3
"""End-to-end tests of Mailpit's spam checks (--enable-spamassassin, --enable-rspamd).

The test starts a real spamd (Debian's spamd/spamassassin) and a real rspamd (Debian's
rspamd) on 127.0.0.1 with temporary directories, sends a GTUBE message through inletd's
SMTP with smtplib, and reads /api/v1/message/{ID}/sa-check and /rspamd-check. Neither
daemon makes network tests (spamd -L; rspamd's resolver points at a closed local port).
Without the daemon installed the class is skipped, unless CI is set.

    spam_e2e_test.py --inletd build/bin/inletd [unittest args]
"""
import argparse
import json
import os
import shutil
import signal
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the Inletd harness)
from e2e_test import Inletd, make_message, wait_for  # noqa: E402
from api_e2e_test import SchemaChecked  # noqa: E402  (answers checked against Mailpit's swagger)

# The standard GTUBE test string, which every SpamAssassin and rspamd scores as spam.
GTUBE = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"
START_WAIT = 90.0  # seconds a daemon may take to answer its first request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing(binary):
    if shutil.which(binary) or os.path.exists("/usr/sbin/" + binary):
        return None
    if os.environ.get("CI"):
        raise RuntimeError(f"{binary} is not installed (scripts/install-deps.sh installs it)")
    return f"{binary} is not installed"


def stop_process(proc):
    """Ends a daemon the test started, by its process group (its children with it)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def send_gtube(srv, subject):
    with smtplib.SMTP("127.0.0.1", srv.smtp_port, timeout=30) as c:
        c.sendmail("alice@sender.example", ["bob@rcpt.example"],
                   make_message(subject, GTUBE + "\r\n"))
    return wait_for(lambda: srv.find(subject), "the message in the listing")["ID"]


def spamd_ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"PING SPAMC/1.5\r\n\r\n")
            s.shutdown(socket.SHUT_WR)
            return s.recv(100).startswith(b"SPAMD/1.5 0 PONG")
    except OSError:
        return False


def http_ok(url):
    try:
        with e2e_test.HTTP.open(url, timeout=2) as r:
            return r.status == 200 and r.read().strip().startswith(b"pong")
    except OSError:
        return False


def wait_ready(proc, ready, what, log):
    end = time.monotonic() + START_WAIT
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited {proc.returncode}:\n{open(log).read()[-4000:]}")
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not answer within {START_WAIT} s")


class ServerCase(unittest.TestCase):
    daemon = None

    @classmethod
    def tearDownClass(cls):
        try:
            if getattr(cls, "srv", None):
                cls.srv.stop_clean()
        finally:
            if getattr(cls, "proc", None):
                stop_process(cls.proc)
            if getattr(cls, "tmp", None):
                shutil.rmtree(cls.tmp, ignore_errors=True)


class SpamAssassinTest(ServerCase, SchemaChecked):
    @classmethod
    def setUpClass(cls):
        why = missing("spamd")
        if why:
            raise unittest.SkipTest(why)
        spamd = shutil.which("spamd") or "/usr/sbin/spamd"
        cls.tmp = tempfile.mkdtemp(prefix="inlet-spamd-")
        cls.port = free_port()
        cls.sock = os.path.join(cls.tmp, "spamd.sock")
        log = os.path.join(cls.tmp, "spamd.log")
        # -x: no user configuration; -L: local tests only (no DNS or network lookups).
        with open(log, "w") as out:
            cls.proc = subprocess.Popen(
                [spamd, "-x", "-L", "--listen", f"127.0.0.1:{cls.port}", "--listen", cls.sock,
                 "-A", "127.0.0.1",
                 "--pidfile", os.path.join(cls.tmp, "spamd.pid"), "--min-children", "1",
                 "--max-children", "2", "-s", "stderr"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env=dict(os.environ, HOME=cls.tmp))
        try:
            wait_ready(cls.proc, lambda: spamd_ping(cls.port), "spamd", log)
            cls.srv = Inletd("--enable-spamassassin", f"127.0.0.1:{cls.port}")
        except Exception:
            stop_process(cls.proc)
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    def test_gtube_is_spam_with_the_gtube_rule(self):
        msg_id = send_gtube(self.srv, "sa gtube")
        r = self.srv.get_json(f"/api/v1/message/{msg_id}/sa-check")
        self.check_schema("/api/v1/message/{ID}/sa-check", "get", r)
        self.assertEqual(sorted(r), ["Error", "IsSpam", "Rules", "Score"])
        self.assertEqual(r["Error"], "")
        self.assertTrue(r["IsSpam"])
        self.assertGreaterEqual(r["Score"], 1000)
        gtube = [x for x in r["Rules"] if x["Name"] == "GTUBE"]
        self.assertEqual(len(gtube), 1, r["Rules"])
        self.assertEqual(gtube[0]["Score"], 1000)
        self.assertIn("Generic Test for Unsolicited Bulk Email", gtube[0]["Description"])
        latest = self.srv.get_json("/api/v1/message/latest/sa-check")
        self.assertTrue(latest["IsSpam"])

    def test_unix_socket(self):
        srv = Inletd("--enable-spamassassin", "unix:" + self.sock)
        try:
            msg_id = send_gtube(srv, "sa gtube unix")
            r = srv.get_json(f"/api/v1/message/{msg_id}/sa-check")
            self.assertEqual(r["Error"], "")
            self.assertTrue(r["IsSpam"])
            self.assertIn("GTUBE", [x["Name"] for x in r["Rules"]])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_plain_message_is_not_spam(self):
        with smtplib.SMTP("127.0.0.1", self.srv.smtp_port, timeout=30) as c:
            c.sendmail("alice@sender.example", ["bob@rcpt.example"],
                       make_message("sa ham", "Lunch at noon on Tuesday?\r\n"))
        msg_id = wait_for(lambda: self.srv.find("sa ham"), "listing")["ID"]
        r = self.srv.get_json(f"/api/v1/message/{msg_id}/sa-check")
        self.assertFalse(r["IsSpam"])
        self.assertEqual(r["Error"], "")
        self.assertLess(r["Score"], 5)
        self.assertNotIn("GTUBE", [x["Name"] for x in r["Rules"]])

    def test_webui_says_spamassassin_is_on(self):
        r = self.check_schema("/api/v1/webui", "get", self.srv.get_json("/api/v1/webui"))
        self.assertIs(r["SpamAssassin"], True)
        self.assertIs(r["Rspamd"], False)

    def test_unknown_message_is_404(self):
        with self.assertRaises(e2e_test.urllib.error.HTTPError) as e:
            self.srv.get("/api/v1/message/aaaaaaaaaaaaaaaaaaaaaa/sa-check")
        self.assertEqual(e.exception.code, 404)


class SpamdDownTest(unittest.TestCase):
    """A spamd that is not there: 200 with the error, as Mailpit answers."""

    def test_refused_connection_is_the_error(self):
        port = free_port()  # nothing listens there
        srv = Inletd("--enable-spamassassin", f"127.0.0.1:{port}")
        try:
            msg_id = send_gtube(srv, "sa down")
            r = srv.get_json(f"/api/v1/message/{msg_id}/sa-check")
            self.assertFalse(r["IsSpam"])
            self.assertIn("refused", r["Error"])
            self.assertIsNone(r["Rules"])
            with self.assertRaises(e2e_test.urllib.error.HTTPError) as e:
                srv.get(f"/api/v1/message/{msg_id}/rspamd-check")
            self.assertEqual(e.exception.code, 400)
        finally:
            self.assertEqual(srv.stop(), 0)


class RspamdTest(ServerCase, SchemaChecked):
    @classmethod
    def setUpClass(cls):
        why = missing("rspamd")
        if why:
            raise unittest.SkipTest(why)
        rspamd = shutil.which("rspamd") or "/usr/sbin/rspamd"
        cls.tmp = tempfile.mkdtemp(prefix="inlet-rspamd-")
        os.chmod(cls.tmp, 0o777)  # rspamd's workers run as nobody when the test is root
        cls.port = free_port()
        ports = [free_port() for _ in range(2)]
        over = os.path.join(cls.tmp, "override.d")
        os.makedirs(over)
        for d in ("db", "run", "log"):
            os.makedirs(os.path.join(cls.tmp, d))
            os.chmod(os.path.join(cls.tmp, d), 0o777)
        files = {
            "worker-normal.inc": f'bind_socket = "127.0.0.1:{cls.port}";\ncount = 1;\n',
            "worker-controller.inc": f'bind_socket = "127.0.0.1:{ports[0]}";\ncount = 1;\n',
            "worker-proxy.inc": f'bind_socket = "127.0.0.1:{ports[1]}";\ncount = 1;\n',
            "worker-fuzzy.inc": "enabled = false;\n",
            "logging.inc": 'type = "console";\nlevel = "error";\n',
            # No DNS: every lookup goes to a closed local port and fails fast.
            "options.inc": 'dns { nameserver = ["127.0.0.1:1"]; timeout = 0.2s; '
                           'retransmits = 1; }\n',
        }
        for name, text in files.items():
            with open(os.path.join(over, name), "w") as f:
                f.write(text)
        log = os.path.join(cls.tmp, "rspamd.log")
        args = [rspamd, "-f", "-c", "/etc/rspamd/rspamd.conf", f"--var=LOCAL_CONFDIR={cls.tmp}",
                f"--var=DBDIR={cls.tmp}/db", f"--var=RUNDIR={cls.tmp}/run",
                f"--var=LOGDIR={cls.tmp}/log"]
        if os.geteuid() == 0:
            args += ["-u", "nobody", "-g", "nogroup"]
        with open(log, "w") as out:
            cls.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True,
                                        env=dict(os.environ, HOME=cls.tmp))
        try:
            wait_ready(cls.proc, lambda: http_ok(f"http://127.0.0.1:{cls.port}/ping"), "rspamd",
                       log)
            cls.srv = Inletd("--enable-rspamd", f"127.0.0.1:{cls.port}")
        except Exception:
            stop_process(cls.proc)
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    def test_gtube_is_spam_with_the_gtube_symbol(self):
        msg_id = send_gtube(self.srv, "rspamd gtube")
        r = self.srv.get_json(f"/api/v1/message/{msg_id}/rspamd-check")
        self.check_schema("/api/v1/message/{ID}/rspamd-check", "get", r)
        self.assertEqual(sorted(r), ["Action", "Error", "IsSpam", "Rules", "Score", "Threshold"])
        self.assertEqual(r["Error"], "")
        self.assertTrue(r["IsSpam"])
        self.assertEqual(r["Action"], "reject")
        self.assertIn("GTUBE", [x["Name"] for x in r["Rules"]])
        self.assertGreater(r["Threshold"], 0)

    def test_webui_says_rspamd_is_on(self):
        r = self.check_schema("/api/v1/webui", "get", self.srv.get_json("/api/v1/webui"))
        self.assertIs(r["Rspamd"], True)
        self.assertIs(r["SpamAssassin"], False)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    args, rest = ap.parse_known_args()
    e2e_test.INLETD = os.path.abspath(args.inletd)
    unittest.main(argv=[sys.argv[0]] + rest)
