#!/usr/bin/env python3
"""Runs store_bench pairs alternately (A B A B ...) and prints median ratios with spread.

usage: store/bench/run_pairs.py BUILD/bin/store_bench ROUNDS OUT.json
Each round runs every benchmark of a pair once (its own process, min_time 0.2 s), in
alternating order, so slow phases of a noisy machine hit both sides.
"""
import json, statistics, subprocess, sys

PAIRS = [
    ("put: memory_store / reference", "BM_put_memory_store$", "BM_put_reference$"),
    ("list page 50: N=100k / N=1k", "BM_list_page50/100000$", "BM_list_page50/1000$"),
    ("mailbox page 50: N=100k / N=1k", "BM_list_mailbox_page50/100000$", "BM_list_mailbox_page50/1000$"),
    ("get: N=100k / N=1k", "BM_get/100000$", "BM_get/1000$"),
    ("put 2 threads / 1 thread (time per put)", "BM_put_contended/real_time/threads:2$", "BM_put_contended/real_time/threads:1$"),
    ("put 4 threads / 1 thread (time per put)", "BM_put_contended/real_time/threads:4$", "BM_put_contended/real_time/threads:1$"),
]

def run(binary, flt):
    out = subprocess.run([binary, "--benchmark_filter=" + flt, "--benchmark_min_time=0.2",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    # per item time: for threaded runs real_time is per iteration of each thread; convert to
    # time per put across all threads via items_per_second when present.
    if "items_per_second" in b:
        return 1e9 / b["items_per_second"], b
    return b["real_time"], b

def main():
    binary, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    raw = {name: {"a": [], "b": [], "ratio": []} for name, _, _ in PAIRS}
    for r in range(rounds):
        for name, a, b in PAIRS:
            order = [(a, "a"), (b, "b")] if r % 2 == 0 else [(b, "b"), (a, "a")]
            got = {}
            for flt, side in order:
                ns, _ = run(binary, flt)
                got[side] = ns
                raw[name][side].append(ns)
            raw[name]["ratio"].append(got["a"] / got["b"])
    print(f"{'pair':45s} {'A ns':>10s} {'B ns':>10s} {'ratio':>7s} {'min':>6s} {'max':>6s}")
    for name, _, _ in PAIRS:
        d = raw[name]
        print(f"{name:45s} {statistics.median(d['a']):10.1f} {statistics.median(d['b']):10.1f} "
              f"{statistics.median(d['ratio']):7.2f} {min(d['ratio']):6.2f} {max(d['ratio']):6.2f}")
    with open(out, "w") as f:
        json.dump({"rounds": rounds, "pairs": raw}, f, indent=1)

if __name__ == "__main__":
    main()
