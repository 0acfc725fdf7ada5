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

--failover (run with INLET_PG_REPLICA_SHARD=i: shard i is a primary with a synchronous
streaming replica, its URI naming both): the faults are instead the failover of shard
i: its primary is stopped with -m immediate, /readyz must report shard i, the replica is
promoted (pg_ctl promote), and writes to the shard's mailboxes must resume through the
same inletd process (never restarted). Then the same count checks.

--delay-proxy BIN --delay-ms D: inletd reaches every shard through BIN (tests/support's
delay_proxy), which holds every byte D ms each way: the shards "across a network", so
the group commit has batches in flight across a round trip when the faults hit. The
faults and the final count go to the shards directly.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
from inlet_support import DEADLINE, Inletd, Sender, http_get, pg_ctl, tally  # noqa: E402


def env(name):
    return os.environ.get(name, "")


def start_delay_proxies(binary, delay_ms, shards):
    """A delay_proxy per shard URI (single host): the proxies and the URIs through them."""
    procs, uris = [], []
    for dsn in shards:
        m = re.match(r"(postgresql://[^@/]*@?)([^:/,]+):(\d+)(/.*)$", dsn)
        if not m:
            raise RuntimeError(f"cannot put a proxy in front of {dsn}")
        p = subprocess.Popen([binary, "--target", f"{m.group(2)}:{m.group(3)}",
                              "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, text=True)
        procs.append(p)
        uris.append(f"{m.group(1)}127.0.0.1:{int(p.stdout.readline())}{m.group(4)}")
    return procs, uris


def pg_ctl_data(data, args):
    cmd = [os.path.join(env("INLET_PG_BIN"), "pg_ctl"), "-D", data, "-w", "-t", "60"] + args.split()
    if os.getuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120).returncode


def psql(dsn, sql):
    out = subprocess.run(["psql", dsn, "-At", "-F", "\t", "-c", sql], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return out.stdout


def restart_faults(d, shards, faults, acked_now, step):
    """kill -9 inletd; stop one shard, then every shard, with -m immediate."""
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

def failover_faults(a, d, shards, senders, faults, acked_now, step):
    """Shard i's primary stopped -m immediate, its replica promoted; inletd keeps running."""
    i = int(env("INLET_PG_REPLICA_SHARD") or "-1")
    rdata = env(f"INLET_PG_SHARD{i}_REPLICA_DATA")
    if i < 0 or not rdata:
        raise RuntimeError("--failover needs INLET_PG_REPLICA_SHARD (with-pg-shards.sh)")
    pid = d.proc.pid
    time.sleep(step)
    faults.append((f"pg_ctl stop -m immediate (shard {i} primary)", acked_now()))
    pg_ctl(i, "stop -m immediate")
    # Readiness names the shard while it has no primary (bounded wait).
    seen = None
    end = time.monotonic() + 15
    while time.monotonic() < end and seen is None:
        code, body = http_get(d.http_port, "/readyz")
        if code == 503 and f"shard {i} " in body:
            seen = body.strip()
        time.sleep(0.05)
    a.readyz_during_outage = seen
    time.sleep(1.0)
    # With reads on replicas the shard stays readable while it has no primary.
    a.read_during_outage = None
    if a.replica_reads:
        a.read_during_outage = "ok"
        for box in [f"box{n}@example.com" for n in range(40)]:
            code, body = http_get(d.http_port, f"/api/v1/mailbox/{box}?limit=1")
            if code != 200 or '"total":0,' in body.replace(" ", ""):
                a.read_during_outage = f"{box}: HTTP {code} {body[:200]}"
                break
    faults.append((f"pg_ctl promote (shard {i} replica)", acked_now()))
    if pg_ctl_data(rdata, "promote") != 0:
        raise RuntimeError("pg_ctl promote failed")
    promoted = time.monotonic()
    # Writes to the shard's mailboxes resume: a message acknowledged after the promotion
    # whose home is on that shard is checked at the end; here, readiness comes back.
    a.ready_after_s = None
    end = time.monotonic() + 30
    while time.monotonic() < end:
        code, _ = http_get(d.http_port, "/readyz")
        if code == 200:
            a.ready_after_s = round(time.monotonic() - promoted, 2)
            break
        time.sleep(0.05)
    a.acked_at_promotion = acked_now()
    a.marks = [len(s.acked) for s in senders]
    time.sleep(step * 2)
    # Reads of the failed-over shard work again: a mailbox on it lists its messages.
    a.read_after = None
    for box in [f"box{n}@example.com" for n in range(40)]:
        code, body = http_get(d.http_port, f"/api/v1/mailbox/{box}?limit=1")
        if code != 200:
            a.read_after = f"{box}: HTTP {code}"
            break
    else:
        a.read_after = "ok"
    a.same_process = d.proc.poll() is None and d.proc.pid == pid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--seconds", type=float, default=30, help="load duration (faults spread over it)")
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--json", help="write the counts here")
    ap.add_argument("--failover", action="store_true",
                    help="fail over the shard INLET_PG_REPLICA_SHARD instead of the restarts")
    ap.add_argument("--replica-reads", action="store_true",
                    help="with --failover: that shard's reads on its replica "
                         "(target_session_attrs=prefer-standby in its URI); its mailboxes must "
                         "stay readable while it has no primary")
    ap.add_argument("--delay-proxy", help="delay_proxy binary: inletd reaches the shards through it")
    ap.add_argument("--delay-ms", type=float, default=0, help="with --delay-proxy: one-way delay")
    a = ap.parse_args()
    shards = env("INLET_PG_SHARDS").split()
    if not shards:
        print("pg_durability: run under store/test/with-pg-shards.sh", file=sys.stderr)
        return 2
    if a.failover and a.replica_reads:
        i = int(env("INLET_PG_REPLICA_SHARD") or "0")
        shards[i] += ("&" if "?" in shards[i] else "?") + "target_session_attrs=prefer-standby"
    proxies, reach = [], shards
    if a.delay_proxy:
        if a.failover:
            print("pg_durability: --delay-proxy is for the restart faults", file=sys.stderr)
            return 2
        proxies, reach = start_delay_proxies(a.delay_proxy, a.delay_ms, shards)
    try:
        return run(a, shards, reach)
    finally:
        for p in proxies:
            p.kill()
            p.wait(timeout=DEADLINE)
            p.stdout.close()


def run(a, shards, reach):
    """The load and the faults with inletd reaching the shards at `reach`; the checks read
    `shards` directly."""
    d = Inletd(a.inletd, ["--store", reach[0], "--buckets", "64"] +
               [x for sh in reach[1:] for x in ("--shard", sh)])
    d.start()
    run_id = f"r{int(time.time())}"
    stop = threading.Event()
    mailboxes = [f"box{i}@example.com" for i in range(40)]

    def recipients(n, i):
        rcpt = [mailboxes[(n * 7 + i) % len(mailboxes)]]
        if i % 5 == 0:  # some messages for two mailboxes (often two shards)
            rcpt.append(mailboxes[(n * 11 + i * 3) % len(mailboxes)])
        return rcpt

    senders = [Sender(n, d.smtp_port, run_id, stop, recipients) for n in range(a.senders)]
    for s in senders:
        s.start()
    faults = []
    step = a.seconds / 4

    def acked_now():
        return sum(len(s.acked) for s in senders)

    if a.failover:
        failover_faults(a, d, shards, senders, faults, acked_now, step)
    else:
        restart_faults(d, shards, faults, acked_now, step)
    stop.set()
    for s in senders:
        s.join(timeout=DEADLINE)
    d.stop()

    present = {}
    for dsn in shards:
        out = psql(dsn, "SELECT subject, count(*) FROM mail.message WHERE home GROUP BY subject")
        for line in out.splitlines():
            subject, n = line.split("\t")
            if subject.startswith(run_id + "-"):
                present[subject] = present.get(subject, 0) + int(n)
    result, missing, doubled = tally(senders, present, faults)
    result["shard_delay_ms_each_way"] = a.delay_ms if a.delay_proxy else 0
    print(json.dumps(result, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    if missing:
        print("LOST:", missing[:20], file=sys.stderr)
    if doubled:
        print("DOUBLED:", doubled[:20], file=sys.stderr)
    ok = not missing and not doubled and result["acknowledged"] > 0
    if a.failover:
        # Writes resumed on the promoted primary: messages acknowledged after the promotion
        # are stored there (home copies on that shard).
        i = int(env("INLET_PG_REPLICA_SHARD"))
        after = {t for s, m in zip(senders, a.marks) for t in s.acked[m:]}
        on_shard = set()
        out = psql(shards[i], "SELECT subject FROM mail.message WHERE home")
        for line in out.splitlines():
            if line in after:
                on_shard.add(line)
        failover = {
            "readyz_during_outage": a.readyz_during_outage,
            "ready_again_after_promote_s": a.ready_after_s,
            "acknowledged_after_promotion": len(after),
            "acknowledged_after_promotion_on_failed_over_shard": len(on_shard),
            "inletd_never_restarted": a.same_process,
            "mailbox_reads_after_promotion": a.read_after,
            "mailbox_reads_during_outage": a.read_during_outage,
        }
        print(json.dumps(failover, indent=2))
        ok = (ok and a.readyz_during_outage is not None and a.ready_after_s is not None and
              len(on_shard) > 0 and a.same_process and a.read_after == "ok" and
              (not a.replica_reads or a.read_during_outage == "ok"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
