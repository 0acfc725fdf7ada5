#!/usr/bin/env python3
"""No acknowledged message is lost, none is stored twice: inletd with the file store
(--database on a temporary file) under load from SENDERS smtplib clients, killed with
SIGKILL and started again on the same file, twice; then tags and read flags set through
the HTTP API survive a restart.

    python3 store/test/file_durability.py --inletd build/bin/inletd --seconds 10

Each sender keeps an SMTP session open and sends numbered messages (a unique token in
the subject), logging every token acknowledged with 250 and every one refused or lost
with its connection. At the end inletd is started once more and every message is read
through the HTTP API: each acknowledged token must be there exactly once; an
unacknowledged one may be there (its commit made it, the reply did not) but never
twice. Prints the counts as JSON and exits 1 on any loss or double. Bounded: --seconds
of load, --max-messages per sender, every wait capped.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
from inlet_support import DEADLINE, Inletd, Sender, all_messages, api, tally  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--seconds", type=float, default=10, help="load duration (two kills spread over it)")
    ap.add_argument("--senders", type=int, default=16)
    ap.add_argument("--max-messages", type=int, default=2000, help="per sender")
    ap.add_argument("--json", help="write the counts here")
    ap.add_argument("--extra", default="", help="more inletd flags (e.g. '--disable-wal')")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inlet-file-durability-")
    try:
        return run(a, os.path.join(tmp, "mail.db"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(a, database):
    d = Inletd(a.inletd, ["--database", database, "--max", "0"] + a.extra.split())
    d.start()
    run_id = f"r{int(time.time())}"
    stop = threading.Event()
    senders = [Sender(n, d.smtp_port, run_id, stop, lambda n, i: [f"box{(n + i) % 8}@example.com"],
                      a.max_messages) for n in range(a.senders)]
    for s in senders:
        s.start()
    faults = []
    step = a.seconds / 3
    for _ in range(2):
        time.sleep(step)
        faults.append(("kill -9 inletd", sum(len(s.acked) for s in senders)))
        d.kill9()
        d.start()  # same ports: the senders reconnect
    time.sleep(step)
    stop.set()
    for s in senders:
        s.join(timeout=DEADLINE)
    d.kill9()

    d.start()
    try:
        messages, page = all_messages(d.http_port)
        present = {}
        for m in messages:
            if m["Subject"].startswith(run_id + "-"):
                present[m["Subject"]] = present.get(m["Subject"], 0) + 1
        result, missing, doubled = tally(senders, present, faults)

        # Tags and read flags set through the API survive a restart.
        ids = [m["ID"] for m in messages[:10]]
        api(d.http_port, "PUT", "/api/v1/tags", {"IDs": ids[:5], "Tags": ["Kept", "durable tag"]})
        api(d.http_port, "PUT", "/api/v1/messages", {"IDs": ids[3:8], "Read": True})
        before = {m["ID"]: (m["Read"], sorted(m["Tags"])) for m in all_messages(d.http_port)[0]
                  if m["ID"] in ids}
        d.stop()
        d.start()
        after = {m["ID"]: (m["Read"], sorted(m["Tags"])) for m in all_messages(d.http_port)[0]
                 if m["ID"] in ids}
        tags_after = api(d.http_port, "GET", "/api/v1/tags")
    finally:
        d.stop()
    flags_kept = (before == after and all(after[i][1] == ["Kept", "durable tag"] for i in ids[:5])
                  and all(after[i][0] for i in ids[3:8]) and not after[ids[9]][0])
    result["tags_and_read_flags_kept"] = flags_kept
    result["tags_after_restart"] = tags_after
    print(json.dumps(result, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    if missing:
        print("LOST:", missing[:20], file=sys.stderr)
    if doubled:
        print("DOUBLED:", doubled[:20], file=sys.stderr)
    ok = not missing and not doubled and result["acknowledged"] > 0 and flags_kept and \
        all(n > 0 for _, n in faults)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
