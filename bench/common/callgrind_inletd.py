#!/usr/bin/env python3
"""inletd's user-space instructions per message, exact (valgrind --tool=callgrind).

inletd runs under callgrind twice, once receiving N1 and once N2 messages from inlet-load
(which runs natively); (Ir(N2) - Ir(N1)) / (N2 - N1) removes start-up and shutdown. The
same difference is taken per function, inclusive and exclusive, and functions are grouped
into components by name (--groups), so the report says where a message's instructions go:
smtp session, mime parse, summary, filter scan, store insert, live events / JSON.

Kernel work (loopback TCP) is not counted: this is the part of the cost our code decides.
Every run is bounded (inlet-load --count and --duration; inletd stopped by its PID).

usage: bench/common/callgrind_inletd.py --store sink --counts 300,900 [--json out.json]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

# Component -> regex over callgrind's function names (inclusive cost of the outermost match
# is what counts; see group_costs). Order matters only for the report.
GROUPS = [
    ("pipeline::deliver (all of parse+filter+store)", r"inletd::pipeline::deliver\(|inlet::mail::ingest::deliver\("),
    ("mime parse", r"inlet::mime::parser::feed|inlet::mime::parser::parse|inlet::mime::parse\("),
    ("summary (mime::summarize + analyze)", r"inlet::mime::summarize\("),
    ("filter scan", r"inlet::filter::scan_parsed|inlet::filter::scan::"),
    ("flatten (body copy into the store)", r"(inletd|inlet::mail)::\(anonymous namespace\)::flatten"),
    ("store put", r"inlet::store::memory_store::put|inlet::store::memory_store::insert"),
    ("live events / JSON", r"inlet::http::.*(event|publish|broadcast|notify)|boost::json::serialize"),
    ("smtp session (consume)", r"inlet::smtp::server_session::consume|inlet::smtp::server_session::on_"),
    ("malloc/free", r"^(malloc|free|operator new|operator delete|_int_malloc|_int_free|cfree)"),
    ("memcpy/memmove", r"__memcpy|__memmove|memcpy@|memmove@"),
]


def annotate(path, inclusive):
    """{function: Ir} from callgrind_annotate (all functions, no threshold)."""
    out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                          "--threshold=100", path], capture_output=True, text=True, check=True).stdout
    costs, total = {}, None
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*\S)\s*$", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        name = m.group(2)
        if name.startswith("PROGRAM TOTALS"):
            total = ir
            continue
        if ":" in name and not name.startswith("???"):
            name = name.split(":", 1)[1] if re.match(r"^[^ ]*\.(c|cc|cpp|h|hpp|S)?:", name) or name.startswith("???:") else name
        name = re.sub(r"\s+\[[^\]]*\]$", "", name)  # object file
        costs[name] = costs.get(name, 0) + ir
    return total, costs


def one_run(a, count, tmp):
    out = os.path.join(tmp, f"cg.{a.store}.{count}")
    port, http = harness.free_port(), harness.free_port()
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", a.inletd,
           "--smtp", f"127.0.0.1:{port}", "--listen", f"127.0.0.1:{http}", "--store", a.store,
           "--threads", "1", "--quiet"] + a.inletd_args.split()
    srv = harness.Server("inletd", cmd, port, None, startup=120)
    try:
        if not srv.ok:
            sys.exit("inletd under valgrind did not start")
        load = [a.inlet_load, "--target", f"127.0.0.1:{port}", "-c", str(a.connections), "-n", str(count),
                "--size-mean", str(a.size), "--size-sigma", "0", "--synthetic-count", "16", "--duration", "600",
                "--json", "-q"] + a.load_args.split()
        rc, so, _, _ = harness.run_bounded(load, 660)
        j = json.loads(so.strip().splitlines()[-1])
        if j["messages_ok"] != count:
            sys.exit(f"inlet-load: {j['messages_ok']} of {count} accepted: {j['errors']}")
    finally:
        srv.stop()  # SIGTERM: inletd shuts down gracefully, callgrind writes its file
    return out


def main():
    root = harness.repo_root()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(root, "build/bin"))
    ap.add_argument("--store", default="sink", help="sink or memory")
    ap.add_argument("--counts", default="300,900")
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--size", type=int, default=9000, help="bytes per message (fixed size)")
    ap.add_argument("--inletd-args", default="")
    ap.add_argument("--load-args", default="", help="extra inlet-load flags, e.g. --bdat")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--show", default="", help="regex: also print (and keep in the JSON) every function "
                    "matching it, inclusive and exclusive instructions per message")
    ap.add_argument("--json")
    ap.add_argument("--keep", help="copy the larger run's callgrind file here (callgrind_annotate --tree=caller it)")
    a = ap.parse_args()
    a.inletd = os.path.join(a.bin_dir, "inletd")
    a.inlet_load = os.path.join(a.bin_dir, "inlet-load")
    n1, n2 = [int(x) for x in a.counts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        f1, f2 = one_run(a, n1, tmp), one_run(a, n2, tmp)
        if a.keep:
            shutil.copy(f2, a.keep)
        t1, inc1 = annotate(f1, True)
        t2, inc2 = annotate(f2, True)
        _, exc1 = annotate(f1, False)
        _, exc2 = annotate(f2, False)
    per = lambda c2, c1: (c2 - c1) / (n2 - n1)  # noqa: E731
    total = per(t2, t1)
    inc = {k: per(v, inc1.get(k, 0)) for k, v in inc2.items()}
    exc = {k: per(v, exc1.get(k, 0)) for k, v in exc2.items()}
    groups = []
    for label, rx in GROUPS:
        r = re.compile(rx)
        table = exc if label.startswith(("malloc", "memcpy")) else inc
        names = [k for k in table if r.search(k)]
        # Inclusive costs of nested matches (parse calling parse) would double count: take
        # the largest single match for inclusive groups, the sum for exclusive ones.
        v = sum(table[k] for k in names) if table is exc else max((table[k] for k in names), default=0.0)
        groups.append({"component": label, "instructions_per_message": v,
                       "functions": sorted(names, key=lambda k: -table[k])[:5]})
    print(f"inletd --store {a.store}: {total:,.0f} instructions per message "
          f"(N={n1:,} and {n2:,}, {a.connections} connections, {a.size}-byte messages {a.load_args})")
    print("\n| component | instructions/message | share |\n|---|---|---|")
    for g in groups:
        print(f"| {g['component']} | {g['instructions_per_message']:,.0f} | "
              f"{100 * g['instructions_per_message'] / total:.1f} % |")
    shown = {}
    if a.show:
        rx = re.compile(a.show)
        print(f"\nfunctions matching {a.show!r}: inclusive / exclusive instructions per message")
        for k in sorted((k for k in inc if rx.search(k)), key=lambda k: -inc[k]):
            shown[k] = {"inclusive": inc[k], "exclusive": exc.get(k, 0.0)}
            print(f"{inc[k]:12,.0f} {exc.get(k, 0.0):12,.0f}  {k[:150]}")
    print(f"\ntop {a.top} functions, exclusive instructions per message:")
    for k, v in sorted(exc.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{v:12,.0f}  {k[:150]}")
    print(f"\ntop {a.top} functions, inclusive instructions per message:")
    for k, v in sorted(inc.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{v:12,.0f}  {k[:150]}")
    if a.json:
        harness.write_json(a.json, {"store": a.store, "counts": [n1, n2], "connections": a.connections,
                                    "size": a.size, "load_args": a.load_args, "per_message": total,
                                    "groups": groups, "shown": shown,
                                    "top_exclusive": sorted(exc.items(), key=lambda kv: -kv[1])[:60],
                                    "top_inclusive": sorted(inc.items(), key=lambda kv: -kv[1])[:60]})


if __name__ == "__main__":
    main()
