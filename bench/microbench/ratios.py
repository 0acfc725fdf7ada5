#!/usr/bin/env python3
"""Median ratio naive/ours (CPU time per item) over the repetitions of inlet_microbench's JSON."""
import json
import re
import statistics
import sys

PAIRS = [  # (naive, ours, what); {a} is the shared suffix, matched by regex group
    (r"BM_malloc_free(/.*)", "BM_thread_local_pool{a}", "thread-local pool vs malloc/free"),
    (r"BM_std_list_of_pointers()", "BM_intrusive_list{a}", "intrusive list vs std::list<T*>"),
    (r"BM_counters_false_sharing(/.*)", "BM_counters_padded{a}", "padded vs false-shared counters"),
    (r"BM_store_seq_cst()", "BM_store_relaxed{a}", "relaxed vs seq_cst store"),
    (r"BM_fetch_add_seq_cst()", "BM_fetch_add_relaxed{a}", "relaxed vs seq_cst fetch_add (x86: same instruction)"),
    (r"BM_send_loop()", "BM_sendmsg_gather{a}", "one sendmsg of 16 buffers vs 16 send()"),
    (r"BM_wait_poll(/.*)", "BM_wait_epoll{a}", "epoll vs poll"),
    (r"BM_wait_epoll(/.*)", "BM_wait_io_uring{a}", "io_uring vs epoll"),
]


def main(path):
    data = json.load(open(path))
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        runs.setdefault(b["run_name"], []).append(b)
    print(f"machine: {data['context'].get('num_cpus')} CPUs, load average {data['context'].get('load_avg')}")
    print("| technique | benchmark | naive CPU ns/iter | ours CPU ns/iter | ratio naive/ours median (min-max) |")
    print("|---|---|---|---|---|")
    for naive_re, ours_fmt, what in PAIRS:
        for name in sorted(runs):
            m = re.fullmatch(naive_re, name)
            if not m:
                continue
            ours = ours_fmt.format(a=m.group(1))
            if ours not in runs:
                continue
            nv = [r["cpu_time"] for r in sorted(runs[name], key=lambda r: r["repetition_index"])]
            ov = [r["cpu_time"] for r in sorted(runs[ours], key=lambda r: r["repetition_index"])]
            ratios = [a / b for a, b in zip(nv, ov) if b > 0]
            if not ratios:
                continue
            print(f"| {what} | {name} | {statistics.median(nv):,.0f} | {statistics.median(ov):,.0f} | "
                  f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")


if __name__ == "__main__":
    main(sys.argv[1])
