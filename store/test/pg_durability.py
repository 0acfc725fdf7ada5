#!/usr/bin/env python3
"""No acknowledged message is lost, none is stored twice: inletd with the PostgreSQL store
under load, killed with SIGKILL, and its shards stopped with `pg_ctl stop -m immediate`.

Run it under store/test/with-pg-shards.sh with INLET_PG_FSYNC=on (fsync and
synchronous_commit on):

    INLET_PG_FSYNC=on store/test/with-pg-shards.sh 3 \\
        /usr/bin/python3 store/test/pg_durability.py --inletd build/bin/inletd --seconds 60

SENDERS threads each keep an SMTP session open and send numbered messages (a unique
token in the subject), logging every token the server acknowledged with 250 and every
one it refused or lost (451, a dropped connection). Meanwhile the faults run in turn:
kill -9 inletd and start it again; stop one shard with -m immediate and start it again;
stop every shard at once likewise. At the end every shard is read directly (SQL, home
copies): each acknowledged token must be there exactly once; an unacknowledged one may
be there (its commit made it, the reply did not) but never twice. Prints the counts and
exits 1 on any loss or double. Bounded: --seconds of load, each wait capped.
"""
import argparse
import json
import os
import re
import smtplib
import subprocess
import sys
import threading
import time

DEADLINE = 60.0


def env(name):
    return os.environ.get(name, "")


def pg_ctl(shard, args):
    data = env(f"INLET_PG_SHARD{shard}_DATA")
    port = env(f"INLET_PG_SHARD{shard}_PORT")
    d = os.path.dirname(data)
    cmd = [os.path.join(env("INLET_PG_BIN"), "pg_ctl"), "-D", data, "-l", os.path.join(d, "pg.log"),
           "-w", "-t", "60"] + args.split()
    if args.startswith("start"):
        fsync = env("INLET_PG_FSYNC") or "off"
        cmd += ["-o", f"-c listen_addresses=127.0.0.1 -p {port} -k {d} -c fsync={fsync} "
                      f"-c synchronous_commit=on -c max_connections=200"]
    if os.getuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120).returncode


def psql(dsn, sql):
    out = subprocess.run(["psql", dsn, "-At", "-F", "\t", "-c", sql], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return out.stdout


class Inletd:
    def __init__(self, binary, shards, smtp_port, http_port):
        self.binary, self.shards = binary, shards
        self.smtp_port, self.http_port = smtp_port, http_port
        self.proc = None

    def start(self):
        args = [self.binary, "--smtp", f"127.0.0.1:{self.smtp_port}", "--listen", f"127.0.0.1:{self.http_port}",
                "--store", self.shards[0], "--buckets", "64", "--quiet"]
        for s in self.shards[1:]:
            args += ["--shard", s]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            line = self.proc.stdout.readline()
            if not line:
                break
            if "smtp listening" in line:
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # drain
                return
        raise RuntimeError("inletd did not start")

    def kill9(self):
        self.proc.kill()  # SIGKILL, this process only
        self.proc.wait(timeout=DEADLINE)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Sender(threading.Thread):
    """One SMTP client: numbered messages, every outcome logged."""

    def __init__(self, n, port, run, stop, mailboxes):
        super().__init__(daemon=True)
        self.n, self.port, self.run_id, self.stop_flag, self.mailboxes = n, port, run, stop, mailboxes
        self.acked, self.refused, self.lost = [], [], []

    def run(self):
        i = 0
        smtp = None
        while not self.stop_flag.is_set():
            token = f"{self.run_id}-{self.n}-{i}"
            i += 1
            rcpt = [self.mailboxes[(self.n * 7 + i) % len(self.mailboxes)]]
            if i % 5 == 0:  # some messages for two mailboxes (often two shards)
                rcpt.append(self.mailboxes[(self.n * 11 + i * 3) % len(self.mailboxes)])
            body = (f"Subject: {token}\r\nFrom: load@example.org\r\n\r\n" +
                    ("durable " * 9 + "\r\n") * 120).encode()  # ~9 KB in 74-byte lines
            try:
                if smtp is None:
                    smtp = smtplib.SMTP("127.0.0.1", self.port, timeout=30)
                refused = smtp.sendmail("load@example.org", rcpt, body)
                if refused:
                    self.refused.append(token)
                else:
                    self.acked.append(token)
            except smtplib.SMTPResponseException:
                self.refused.append(token)  # 451 and the like: not acknowledged
            except smtplib.SMTPRecipientsRefused:
                self.refused.append(token)
            except (OSError, smtplib.SMTPException):
                self.lost.append(token)  # the connection went away before the reply
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--seconds", type=float, default=30, help="load duration (faults spread over it)")
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--json", help="write the counts here")
    a = ap.parse_args()
    shards = env("INLET_PG_SHARDS").split()
    if not shards:
        print("pg_durability: run under store/test/with-pg-shards.sh", file=sys.stderr)
        return 2
    import socket

    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    d = Inletd(a.inletd, shards, free_port(), free_port())
    d.start()
    run_id = f"r{int(time.time())}"
    stop = threading.Event()
    mailboxes = [f"box{i}@example.com" for i in range(40)]
    senders = [Sender(n, d.smtp_port, run_id, stop, mailboxes) for n in range(a.senders)]
    for s in senders:
        s.start()
    faults = []
    step = a.seconds / 4

    def acked_now():
        return sum(len(s.acked) for s in senders)

    time.sleep(step)
    faults.append(("kill -9 inletd", acked_now()))
    d.kill9()
    time.sleep(0.5)
    d.start()
    time.sleep(step)
    victim = 1 if len(shards) > 1 else 0
    faults.append((f"pg_ctl stop -m immediate (shard {victim})", acked_now()))
    pg_ctl(victim, "stop -m immediate")
    time.sleep(1.0)
    pg_ctl(victim, "start")
    time.sleep(step)
    faults.append(("pg_ctl stop -m immediate (every shard)", acked_now()))
    for i in range(len(shards)):
        pg_ctl(i, "stop -m immediate")
    time.sleep(1.0)
    for i in range(len(shards)):
        pg_ctl(i, "start")
    time.sleep(step)
    stop.set()
    for s in senders:
        s.join(timeout=DEADLINE)
    d.stop()

    acked = [t for s in senders for t in s.acked]
    refused = [t for s in senders for t in s.refused]
    lost = [t for s in senders for t in s.lost]
    present = {}
    for dsn in shards:
        out = psql(dsn, "SELECT subject, count(*) FROM mail.message WHERE home GROUP BY subject")
        for line in out.splitlines():
            subject, n = line.split("\t")
            if subject.startswith(run_id + "-"):
                present[subject] = present.get(subject, 0) + int(n)
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
    print(json.dumps(result, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    if missing:
        print("LOST:", missing[:20], file=sys.stderr)
    if doubled:
        print("DOUBLED:", doubled[:20], file=sys.stderr)
    ok = not missing and not doubled and len(acked) > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
