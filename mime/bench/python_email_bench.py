#!/usr/bin/python3
"""Python's email package (policy=default) parsing the same corpus from memory: the
further reference point for mime_parse_bench. Parses every message (header block and
the whole MIME tree, like message_from_bytes does), over several rounds.

usage: /usr/bin/python3 mime/bench/python_email_bench.py [--rounds N] [--json-out F] DIR...
"""
import argparse
import email
import email.policy
import json
import os
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json-out")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    msgs = []
    for p in a.paths:
        for root, _, names in os.walk(p):
            for n in sorted(names):
                with open(os.path.join(root, n), "rb") as f:
                    msgs.append(f.read())
    total = sum(len(m) for m in msgs)
    times = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for m in msgs:
            email.message_from_bytes(m, policy=email.policy.default)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"python email: {len(msgs)} messages, {total} bytes, {a.rounds} rounds: "
          f"median {total / med / 1e9:.4f} GB/s ({len(msgs) / med:.0f} msgs/s), "
          f"best {total / min(times) / 1e9:.4f}, worst {total / max(times) / 1e9:.4f}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"messages": len(msgs), "bytes": total, "seconds": times}, f)


if __name__ == "__main__":
    main()
