#!/usr/bin/env python3
"""inlet-load vs Postfix's smtp-source, same sink, same message size, one run, alternating.

For each sink (the swallow server, Postfix's smtp-sink) and each round, every client sends
--count messages of ~--size bytes over --connections connections; the order of the clients
rotates each round. Reported per client: messages/s (median, min-max over rounds), its ratio
to smtp-source in the same round, the client's CPU per message and the sink's CPU per message.

usage: bench/peers/client_compare.py [--rounds 5] [--count 20000] [--connections 50]
       [--pin] [--json docs/benchmarks/data/load-vs-smtp-source.json]
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "common"))
import harness  # noqa: E402


def main():
    root = harness.repo_root()
    ap = argparse.ArgumentParser()
    ap.add_argument("--inlet-load", default=os.path.join(root, "build/bin/inlet-load"))
    ap.add_argument("--swallow", default=os.path.join(root, "build/bin/swallow"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--size", type=int, default=9000)
    ap.add_argument("--threads", type=int, default=1, help="inlet-load threads")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--pin", action="store_true", help="taskset: sink on CPU 0, client on CPU 1")
    ap.add_argument("--sinks", default="swallow,smtp-sink")
    ap.add_argument("--json")
    a = ap.parse_args()

    scpu, ccpu = ("0", "1") if a.pin else (None, None)
    fixed = ["--size-mean", str(a.size), "--size-sigma", "0", "-c", str(a.connections),
             "-j", str(a.threads)]
    clients = {
        "smtp-source -d": lambda port, pid: harness.smtp_source(
            port, a.connections, a.count, a.size, a.timeout, ccpu),
        "inlet-load no-pipelining": lambda port, pid: harness.inlet_load(
            a.inlet_load, port, fixed + ["--no-pipelining"], a.count, a.timeout, ccpu),
        "inlet-load pipelining": lambda port, pid: harness.inlet_load(
            a.inlet_load, port, fixed, a.count, a.timeout, ccpu),
        "inlet-load pipelining+bdat": lambda port, pid: harness.inlet_load(
            a.inlet_load, port, fixed + ["--bdat"], a.count, a.timeout, ccpu),
    }
    sinks = {}
    if "swallow" in a.sinks:
        sinks["swallow"] = lambda port: [a.swallow, "--listen", f"127.0.0.1:{port}", "--max-seconds", "3600"]
    if "smtp-sink" in a.sinks and shutil.which("smtp-sink"):
        sinks["smtp-sink"] = lambda port: (["smtp-sink"] + (["-u", "nobody"] if os.geteuid() == 0 else [])
                                           + [f"127.0.0.1:{port}", "1024"])
    out = {"machine": harness.machine(), "args": vars(a), "runs": []}
    names = list(clients)
    for sink, mk in sinks.items():
        port = harness.free_port()
        srv = harness.Server(sink, mk(port), port, scpu)
        if not srv.ok:
            print(f"{sink}: did not start, skipped", file=sys.stderr)
            srv.stop()
            continue
        try:
            for rnd in range(a.rounds):
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                for name in order:
                    r = harness.measure(srv, lambda: clients[name](port, srv.pid))
                    r.pop("raw", None)
                    r.update({"sink": sink, "client": name, "round": rnd})
                    out["runs"].append(r)
                    print(f"{sink:10} r{rnd} {name:28} {r['msgs_per_s']:9.0f} msg/s", file=sys.stderr)
        finally:
            srv.stop()
    out["machine"]["loadavg_end"] = os.getloadavg()
    out["summary"] = summarize(out["runs"], names)
    print(markdown(out))
    if a.json:
        harness.write_json(a.json, out)


def summarize(runs, names):
    rows = []
    for sink in dict.fromkeys(r["sink"] for r in runs):
        per_round = {}
        for r in runs:
            if r["sink"] == sink:
                per_round.setdefault(r["round"], {})[r["client"]] = r
        for name in names:
            rates, ratios, ccpu, scpu = [], [], [], []
            for rr in per_round.values():
                if name not in rr:
                    continue
                rates.append(rr[name]["msgs_per_s"])
                ccpu.append(rr[name]["client_cpu_us_per_msg"])
                scpu.append(rr[name]["server_cpu_us_per_msg"])
                ref = rr.get("smtp-source -d", {}).get("msgs_per_s")
                if ref:
                    ratios.append(rr[name]["msgs_per_s"] / ref)
            m, lo, hi = harness.median_spread(rates)
            rm, rlo, rhi = harness.median_spread(ratios)
            rows.append({"sink": sink, "client": name, "msgs_per_s": m, "min": lo, "max": hi,
                         "ratio": rm, "ratio_min": rlo, "ratio_max": rhi,
                         "client_cpu_us_per_msg": harness.median_spread(ccpu)[0],
                         "server_cpu_us_per_msg": harness.median_spread(scpu)[0]})
    return rows


def markdown(out):
    f = lambda v, p=0: "-" if v is None else f"{v:,.{p}f}"  # noqa: E731
    lines = ["| sink | client | msg/s median (min-max) | ratio to smtp-source (min-max) | "
             "client CPU us/msg | sink CPU us/msg |", "|---|---|---|---|---|---|"]
    for r in out["summary"]:
        lines.append(f"| {r['sink']} | {r['client']} | {f(r['msgs_per_s'])} ({f(r['min'])}-{f(r['max'])}) | "
                     f"{f(r['ratio'], 2)} ({f(r['ratio_min'], 2)}-{f(r['ratio_max'], 2)}) | "
                     f"{f(r['client_cpu_us_per_msg'], 1)} | {f(r['server_cpu_us_per_msg'], 1)} |")
    m = out["machine"]
    lines.append("")
    lines.append(f"machine: {m['nproc']} CPUs, {m['cpu']}; load average at start "
                 f"{m['loadavg_start'][0]:.2f}, at end {m['loadavg_end'][0]:.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
