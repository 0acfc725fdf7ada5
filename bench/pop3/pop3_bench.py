#!/usr/bin/env python3
"""POP3 retrieval: inletd's POP3 server vs Mailpit's, in one run (A B A B).

Each round loads N messages of ~9 KB into a fresh server (`inletd ingest` over SMTP, not
timed), then times Python's poplib retrieving all of them the way a mail client empties
a maildrop: sessions of USER/PASS, STAT, RETR and DELE of every listed message, QUIT
(which removes them), until N messages came back. Both servers list at most the newest
100 messages per session (Mailpit's rule, which inletd follows), so N = 10,000 is 100
sessions (one UIDL per session too). Reported: messages/s, the ratio inletd/Mailpit per round, and the client's own
CPU seconds (poplib is pure Python: when the server is fast, the client bounds the rate)
and each server's CPU seconds during the retrieval (/proc: every thread, user + system).

usage: bench/pop3/pop3_bench.py --inletd build/bin/inletd --mailpit ~/go/bin/mailpit
       [--messages N] [--rounds R] [--timeout S] [--client poplib|raw] [--json OUT]
Servers bind to 127.0.0.1; every wait and every retrieval is bounded by --timeout.
"""
import argparse
import json
import os
import poplib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import catchers  # noqa: E402
import harness  # noqa: E402

USER, PASSWORD = "bench", "bench-pw"


def start(kind, binary, n, tmp, auth_file):
    pop3 = harness.free_port()
    proc, smtp, http, _ = catchers.start(
        kind, binary, n, tmp, extra=["--pop3", f"127.0.0.1:{pop3}", "--pop3-auth-file", auth_file])
    return proc, smtp, http, pop3


def retrieve_all(port, n, timeout):
    """Empties the server over POP3; returns (seconds, client CPU seconds, octets).

    Mailpit answers QUIT before its deletion finishes, so the next session may list a
    message already retrieved (and answer RETR with -ERR once it is gone): messages are
    counted once by UID, one seen before is only deleted again."""
    seen = set()
    octets = 0
    t0, c0 = time.monotonic(), time.process_time()
    while len(seen) < n:
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"retrieval timed out after {len(seen)} of {n} messages")
        p = poplib.POP3("127.0.0.1", port, timeout=30)
        p.user(USER)
        p.pass_(PASSWORD)
        uids = [l.split()[1] for l in p.uidl()[1]]
        if not uids:
            raise RuntimeError(f"maildrop empty after {len(seen)} of {n} messages")
        for i, uid in enumerate(uids, 1):
            if uid not in seen:
                try:
                    _, lines, size = p.retr(i)
                except poplib.error_proto:
                    continue  # removed meanwhile (Mailpit's late deletion)
                if not lines:
                    raise RuntimeError("an empty message")
                octets += size
                seen.add(uid)
            try:
                p.dele(i)
            except poplib.error_proto:
                pass
        p.quit()
    return time.monotonic() - t0, time.process_time() - c0, octets


class RawClient:
    """A pipelining POP3 client on a plain socket: every RETR of a session goes out in one
    write and the answers are cut at their terminators in bulk (C-speed bytes.find), so
    the client costs little beside the server. Both servers read commands one line at a
    time from a buffered stream, so pipelined commands work on both."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = bytearray()
        self.pos = 0  # answers before it are consumed (no copy per answer)
        self.keep = False
        self.line()  # greeting

    def fill(self):
        if self.pos > (1 << 20):
            del self.buf[:self.pos]
            self.pos = 0
        d = self.s.recv(1 << 20)
        if not d:
            raise RuntimeError("connection closed")
        self.buf += d

    def line(self):
        while (i := self.buf.find(b"\r\n", self.pos)) < 0:
            self.fill()
        l = bytes(self.buf[self.pos:i])
        self.pos = i + 2
        return l

    def multi(self):
        """The body's length of a +OK multi-line answer (its status line read already)."""
        start = self.pos
        if self.buf.startswith(b".\r\n", start):
            self.pos += 3
            return 0
        while (i := self.buf.find(b"\r\n.\r\n", max(start, self.pos))) < 0:
            at = len(self.buf) - 4 - self.pos
            self.fill()  # may move the buffer's start: keep offsets relative
            start = self.pos + max(0, at)
        n = i + 2 - self.pos
        self.last = bytes(self.buf[self.pos:i + 2]) if self.keep else None
        self.pos = i + 5
        return n

    def multi_bytes(self):
        self.keep = True
        n = self.multi()
        self.keep = False
        return self.last if n else b""

    def cmd(self, c):
        self.s.sendall(c)
        return self.line()


def retrieve_all_raw(port, n, timeout):
    seen = set()
    octets = 0
    t0, c0 = time.monotonic(), time.process_time()
    while len(seen) < n:
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"retrieval timed out after {len(seen)} of {n} messages")
        c = RawClient(port)
        c.cmd(f"USER {USER}\r\n".encode())
        if not c.cmd(f"PASS {PASSWORD}\r\n".encode()).startswith(b"+OK"):
            raise RuntimeError("sign-in refused")
        if not c.cmd(b"UIDL\r\n").startswith(b"+OK"):
            raise RuntimeError("UIDL refused")
        uids = [l.split()[1] for l in c.multi_bytes().split(b"\r\n") if l]
        if not uids:
            raise RuntimeError(f"maildrop empty after {len(seen)} of {n} messages")
        want = [(i, u) for i, u in enumerate(uids, 1) if u not in seen]
        c.s.sendall(b"".join(b"RETR %d\r\nDELE %d\r\n" % (i, i) for i, _ in want) +
                    b"".join(b"DELE %d\r\n" % i for i, u in enumerate(uids, 1) if u in seen))
        for _, uid in want:
            if c.line().startswith(b"+OK"):
                size = c.multi()
                if not size:
                    raise RuntimeError("an empty message")
                octets += size
                seen.add(uid)
            c.line()  # DELE's answer
        for _ in range(len(uids) - len(want)):
            c.line()
        c.cmd(b"QUIT\r\n")
        c.s.close()
    return time.monotonic() - t0, time.process_time() - c0, octets


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(kind, binary, inletd, maildir, n, tmp, auth_file, timeout, client):
    proc, smtp, http, pop3 = start(kind, binary, n, tmp, auth_file)
    try:
        subprocess.run([inletd, "ingest", "-S", f"127.0.0.1:{smtp}", maildir],
                       capture_output=True, timeout=timeout, check=True)
        end = time.monotonic() + timeout
        while catchers.total(http) < n:
            if time.monotonic() > end:
                raise RuntimeError(f"{kind}: only {catchers.total(http)} of {n} stored")
            time.sleep(0.05)
        fetch = retrieve_all_raw if client == "raw" else retrieve_all
        s0 = cpu_seconds(proc.pid)
        secs, cpu, octets = fetch(pop3, n, timeout)
        server_cpu = cpu_seconds(proc.pid) - s0
        end = time.monotonic() + 30  # Mailpit deletes after its QUIT reply
        while catchers.total(http) != 0 and time.monotonic() < end:
            time.sleep(0.05)
        left = catchers.total(http)
        if left != 0:
            raise RuntimeError(f"{kind}: {left} messages left after the retrieval")
        return {"msgs_per_s": n / secs, "seconds": secs, "client_cpu_s": cpu,
                "server_cpu_s": server_cpu, "octets": octets}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--mailpit", required=True)
    ap.add_argument("--messages", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--client", choices=("poplib", "raw"), default="poplib",
                    help="poplib (the default), or a pipelining raw-socket client")
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inlet-pop3-bench-")
    try:
        maildir = os.path.join(tmp, "maildir")
        catchers.make_maildir(maildir, a.messages, "pop3", stuff_every=25)
        auth_file = os.path.join(tmp, "users")
        # APR1 for both: a cheap hash either reads (bcrypt would cost ~100 ms a sign-in)
        apr1 = subprocess.run(["openssl", "passwd", "-apr1", PASSWORD], capture_output=True,
                              text=True, check=True).stdout.strip()
        with open(auth_file, "w") as f:
            f.write(f"{USER}:{apr1}\n")
        res = {"inletd": [], "mailpit": []}
        for r in range(a.rounds):
            for kind, binary in (("inletd", a.inletd), ("mailpit", a.mailpit)):
                x = run(kind, binary, a.inletd, maildir, a.messages, tmp, auth_file, a.timeout,
                        a.client)
                res[kind].append(x)
                print(f"round {r + 1} {kind}: {x['msgs_per_s']:.0f} msg/s "
                      f"({x['seconds']:.2f} s, server CPU {x['server_cpu_s']:.2f} s, "
                      f"client CPU {x['client_cpu_s']:.2f} s, "
                      f"{x['octets']} octets)", flush=True)
        ratios = [i["msgs_per_s"] / m["msgs_per_s"] for i, m in zip(res["inletd"], res["mailpit"])]
        print(f"POP3 retrieval ({a.client}) inletd/mailpit: median {statistics.median(ratios):.2f}x "
              f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
        cpu = [m["server_cpu_s"] / max(i["server_cpu_s"], 0.01)
               for i, m in zip(res["inletd"], res["mailpit"])]
        print(f"server CPU per message mailpit/inletd: median {statistics.median(cpu):.2f}x "
              f"(rounds: {', '.join(f'{x:.2f}' for x in cpu)})")
        res["ratios"] = ratios
        res["server_cpu_ratios"] = cpu
        res["load_average"] = os.getloadavg()
        res["messages"] = a.messages
        res["client"] = a.client
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
