"""What the end-to-end and durability suites share: ports, the HTTP API, an inletd process
that can be killed, an SMTP sender that books every outcome, and the tally of a run.

Imported by the suites under store/test (and any other that adds this folder to sys.path);
standard library only, so a suite runs on a bare python3.
"""
import json
import os
import smtplib
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

DEADLINE = 60.0
# Loopback only, and never through a proxy the environment may name.
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port, method, path, body=None):
    """One API request; the JSON answer decoded (text when it is not JSON)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with HTTP.open(req, timeout=30) as r:
        text = r.read().decode()
        return json.loads(text) if text.startswith(("{", "[")) else text


def http_get(port, path, timeout=5):
    """(status, body text); status 0 when nothing answered."""
    try:
        with HTTP.open(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError as e:
        return 0, str(e)


def wait_http(port, proc, path="/livez", deadline=DEADLINE):
    """Waits until `path` answers 200; raises (with the process's output) if it exits."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("inletd exited: " + (proc.stdout.read() if proc.stdout else ""))
        if http_get(port, path, timeout=2)[0] == 200:
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing answered on port {port}")


def pg_ctl(shard, args, timeout=120):
    """pg_ctl on shard i of store/test/with-pg-shards.sh ("stop -m immediate", "start", ...);
    a start uses the options that script started it with. Returns the exit status."""
    data = os.environ[f"INLET_PG_SHARD{shard}_DATA"]
    port = os.environ[f"INLET_PG_SHARD{shard}_PORT"]
    d = os.path.dirname(data)
    bin_dir = os.environ.get("INLET_PG_BIN", "/usr/lib/postgresql/15/bin")
    cmd = [os.path.join(bin_dir, "pg_ctl"), "-D", data, "-l", os.path.join(d, "pg.log"), "-w", "-t", "60",
           *args.split()]
    if args.startswith("start"):
        fsync = os.environ.get("INLET_PG_FSYNC") or "off"
        cmd += ["-o", f"-c listen_addresses=127.0.0.1 -p {port} -k {d} -c fsync={fsync} "
                      f"-c synchronous_commit=on -c max_connections=200 " + os.environ.get("INLET_PG_OPTS", "")]
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout).returncode


def all_messages(port):
    """Every message summary of the global listing, paged; (messages, last page)."""
    out, start = [], 0
    while True:
        page = api(port, "GET", f"/api/v1/messages?start={start}&limit=1000")
        out += page["messages"]
        start += len(page["messages"])
        if not page["messages"] or start >= page["messages_count"]:
            return out, page


class Inletd:
    """inletd on two free loopback ports with the given store flags; kill9() is SIGKILL of
    this process alone. Started when 'smtp listening' is printed; the rest is drained."""

    def __init__(self, binary, store_args):
        self.binary, self.store_args = binary, list(store_args)
        self.smtp_port, self.http_port = free_port(), free_port()
        self.proc = None

    def start(self):
        args = [self.binary, "--smtp", f"127.0.0.1:{self.smtp_port}", "--listen",
                f"127.0.0.1:{self.http_port}", "--quiet"] + self.store_args
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            line = self.proc.stdout.readline()
            if not line:
                break
            if "smtp listening" in line:
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # drain
                return
        raise RuntimeError("inletd did not start: " + (self.proc.stdout.read() or ""))

    def kill9(self):
        self.proc.kill()
        self.proc.wait(timeout=DEADLINE)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=DEADLINE)


class Sender(threading.Thread):
    """One SMTP client sending numbered ~9 KB messages (Subject: RUN-N-I) until `stop` is set
    or `limit` are sent, booking each as acknowledged (250), refused (a 4xx/5xx reply) or
    lost (the connection went away before the reply: unknown, may or may not be stored).
    `recipients(n, i)` gives the envelope recipients of message i of sender n."""

    def __init__(self, n, port, run_id, stop, recipients, limit=None):
        super().__init__(daemon=True)
        self.n, self.port, self.run_id, self.stop_flag = n, port, run_id, stop
        self.recipients, self.limit = recipients, limit
        self.acked, self.refused, self.lost = [], [], []

    def run(self):
        smtp = None
        i = 0
        while not self.stop_flag.is_set() and (self.limit is None or i < self.limit):
            token = f"{self.run_id}-{self.n}-{i}"
            rcpt = self.recipients(self.n, i)
            i += 1
            body = (f"Subject: {token}\r\nFrom: load@example.org\r\nTo: {rcpt[0]}\r\n\r\n" +
                    ("durable " * 9 + "\r\n") * 120).encode()  # ~9 KB in 74-byte lines
            try:
                if smtp is None:
                    smtp = smtplib.SMTP("127.0.0.1", self.port, timeout=30)
                refused = smtp.sendmail("load@example.org", rcpt, body)
                (self.refused if refused else self.acked).append(token)
            except (smtplib.SMTPResponseException, smtplib.SMTPRecipientsRefused):
                self.refused.append(token)  # 451 and the like: not acknowledged
            except (OSError, smtplib.SMTPException):
                self.lost.append(token)
                try:
                    if smtp is not None:
                        smtp.close()
                except Exception:
                    pass
                smtp = None
                time.sleep(0.05)
        if smtp is not None:
            try:
                smtp.quit()
            except Exception:
                pass


def tally(senders, present, faults):
    """The counts of a durability run: `present` maps each of the run's subjects found in the
    store to how many times; acknowledged messages must all be there, none twice."""
    acked = [t for s in senders for t in s.acked]
    refused = [t for s in senders for t in s.refused]
    lost = [t for s in senders for t in s.lost]
    missing = [t for t in acked if present.get(t, 0) == 0]
    doubled = [t for t, n in present.items() if n > 1]
    unacked_present = [t for t in refused + lost if present.get(t, 0) > 0]
    result = {
        "sent": len(acked) + len(refused) + len(lost),
        "acknowledged": len(acked),
        "refused_451": len(refused),
        "connection_lost": len(lost),
        "present": len(present),
        "acknowledged_missing": len(missing),
        "present_twice_or_more": len(doubled),
        "unacknowledged_but_present": len(unacked_present),
        "faults": [{"fault": f, "acknowledged_before": n} for f, n in faults],
    }
    return result, missing, doubled
