#!/usr/bin/env python3
"""inletd's heap allocations per message (heaptrack), by the function that called the allocator.

inletd runs under heaptrack twice, once receiving N1 and once N2 messages from inlet-load
(which runs natively); (calls(N2) - calls(N1)) / (N2 - N1) removes start-up and shutdown, in
total and per calling function (heaptrack_print's "most calls to allocation functions", whose
first frame is the function that called malloc/new). Every run is bounded (inlet-load --count
and --duration; inletd stopped by its PID).

usage: bench/common/heaptrack_inletd.py --store memory --counts 300,900 [--json out.json]
"""
import argparse
import json
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402


def one_run(a, count, tmp):
    out = os.path.join(tmp, f"ht.{a.store}.{count}")
    port, http = harness.free_port(), harness.free_port()
    cmd = ["heaptrack", "-o", out, a.inletd, "--smtp", f"127.0.0.1:{port}", "--listen", f"127.0.0.1:{http}",
           "--store", a.store, "--threads", "1", "--quiet"] + a.inletd_args.split()
    srv = harness.Server("inletd", cmd, port, None, startup=60)
    try:
        if not srv.ok:
            sys.exit("inletd under heaptrack did not start")
        load = [a.inlet_load, "--target", f"127.0.0.1:{port}", "-c", str(a.connections), "-n", str(count),
                "--size-mean", str(a.size), "--size-sigma", "0", "--synthetic-count", "16", "--duration", "300",
                "--json", "-q"] + a.load_args.split()
        rc, so, _, _ = harness.run_bounded(load, 360)
        j = json.loads(so.strip().splitlines()[-1])
        if j["messages_ok"] != count:
            sys.exit(f"inlet-load: {j['messages_ok']} of {count} accepted: {j['errors']}")
    finally:
        # SIGTERM to inletd alone (a child of heaptrack's script): heaptrack then writes its
        # file and exits; a signal to the whole group would cut that short.
        with open(f"/proc/{srv.pid}/task/{srv.pid}/children") as f:
            for child in f.read().split():
                if os.path.basename(os.readlink(f"/proc/{child}/exe")) == "inletd":
                    os.kill(int(child), signal.SIGTERM)
        try:
            srv.proc.wait(timeout=120)
        finally:
            srv.stop()
    files = [f for f in os.listdir(tmp) if f.startswith(os.path.basename(out))]
    return os.path.join(tmp, files[0])


def calls(path):
    """(total allocation calls, {calling function: calls})."""
    out = subprocess.run(["heaptrack_print", "-f", path, "--print-peaks", "0", "--print-allocators", "1",
                          "--print-leaks", "0", "--print-temporary", "0", "-n", "400", "-s", "0"],
                         capture_output=True, text=True, check=True).stdout
    total, per = None, {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^calls to allocation functions: (\d+)", line)
        if m:
            total = int(m.group(1))
        m = re.match(r"^(\d+) calls to allocation functions with .* from$", line)
        if m and i + 1 < len(lines):
            name = lines[i + 1].strip()
            name = re.sub(r"^0x[0-9a-f]+$", "(unresolved frame)", name)  # ASLR: the address differs per run
            per[name] = per.get(name, 0) + int(m.group(1))
    return total, per


def main():
    root = harness.repo_root()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(root, "build/bin"))
    ap.add_argument("--store", default="memory", help="sink or memory")
    ap.add_argument("--counts", default="300,900")
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--size", type=int, default=9000)
    ap.add_argument("--inletd-args", default="")
    ap.add_argument("--load-args", default="")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--keep", help="copy the larger run's heaptrack file here (heaptrack_print it for call stacks)")
    a = ap.parse_args()
    a.inletd = os.path.join(a.bin_dir, "inletd")
    a.inlet_load = os.path.join(a.bin_dir, "inlet-load")
    # heaptrack sees only the C library's malloc: an inletd linked with jemalloc or tcmalloc
    # (the default build) would report 0 allocations, so refuse it.
    linked = subprocess.run(["ldd", a.inletd], capture_output=True, text=True).stdout
    for lib in ("libjemalloc", "libtcmalloc"):
        if lib in linked:
            sys.exit(f"{a.inletd} is linked with {lib}, which heaptrack does not see: measure a "
                     "build configured with -DINLET_ALLOCATOR=system")
    n1, n2 = [int(x) for x in a.counts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        t1, p1 = calls(one_run(a, n1, tmp))
        f2 = one_run(a, n2, tmp)
        t2, p2 = calls(f2)
        if a.keep:
            shutil.copy(f2, a.keep)
    per_msg = (t2 - t1) / (n2 - n1)
    rows = sorted(((k, (v - p1.get(k, 0)) / (n2 - n1)) for k, v in p2.items()), key=lambda kv: -kv[1])
    rows = [(k, v) for k, v in rows if v >= 0.05]
    print(f"inletd --store {a.store}: {per_msg:.2f} heap allocations per message "
          f"(N={n1:,} and {n2:,}, {a.connections} connections, {a.size}-byte messages {a.load_args})")
    print(f"\ntop {a.top} callers of the allocator, allocations per message:")
    for k, v in rows[:a.top]:
        print(f"{v:8.2f}  {k[:160]}")
    if a.json:
        harness.write_json(a.json, {"store": a.store, "counts": [n1, n2], "connections": a.connections,
                                    "size": a.size, "load_args": a.load_args,
                                    "allocations_per_message": per_msg, "callers": rows[:80]})


if __name__ == "__main__":
    main()
