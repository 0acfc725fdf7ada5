#!/usr/bin/env python3
"""The seed 000 table on this machine: inletd's I/O models under the same load.

Three experiments, each skipping cleanly what inletd rejects (a combination whose server
does not come up or exits at once is reported as "rejected" and left out of the tables):
  models   every --models x --buffers x --parses at --connections (default 50,1000,10000):
           messages/s, server CPU, RSS, p50/p99 latency
  threads  thread-per-connection vs async at 1000..5000 connections (seed 002's claim)
  reads    --reads-per-event 1 vs 4 vs 16 (any list) on the async models (seed 003's +10 %)
Every run is inlet-load, closed loop, pipelining, ~9 KB lognormal messages, bounded by
--seconds and a message count; models are alternated within each round.

Flags are inletd's real ones (--io-model NAME, --threads, --reads-per-event). Any model name
is passed through to --io-model (a model inletd does not know is reported as rejected), so
new models (stackful, process, ...) need no edit here. A model may name its own binary as
MODEL@BINARY (BINARY is a path, or a name in --bin-dir), e.g. `--models coro,coro@inletd-uring`;
`--bin inletd,inletd-uring` runs every model on each binary; `uring:M` is short for
`M@inletd-uring`. process needs --store sink (the default here); its server CPU and RSS
columns are the parent's only (the children are not summed). The buffer axis is inletd's
--receive-buffer (`--buffers segment,flat`, template --buffer-flag), the parse axis its
--parse (`--parses after,streaming`, template --parse-flag). With more than one parse mode,
each row also gets a same-round ratio to the same model and buffer with the first parse mode
listed ("parse ratio").
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "common"))
import harness  # noqa: E402

DEFAULT_MODELS = "coro,async-1n,async-nn,async-n2n,thread"


def main():
    root = harness.repo_root()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(root, "build/bin"),
                    help="directory of inletd and inlet-load (default build/bin)")
    ap.add_argument("--inletd", help="default BIN_DIR/inletd")
    ap.add_argument("--inlet-load", help="default BIN_DIR/inlet-load")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--buffers", default="segment", help="comma list: segment, flat")
    ap.add_argument("--parses", default="after", help="comma list: after, streaming")
    ap.add_argument("--buffer-flag", default="--receive-buffer {}", help="template of the buffer axis's flag")
    ap.add_argument("--parse-flag", default="--parse {}", help="template of the parse axis's flag")
    ap.add_argument("--store", default="sink")
    ap.add_argument("--server-threads", type=int, default=2)
    ap.add_argument("--connections", default="50,1000,10000")
    ap.add_argument("--thread-models", default="thread,coro,async-nn", help="experiment 'threads'")
    ap.add_argument("--thread-connections", default="1000,2000")
    ap.add_argument("--bin", default="", help="comma list of server binaries (paths or names in --bin-dir); "
                    "default: --inletd")
    ap.add_argument("--reads-per-event", default="1,4,16", help="values of experiment 'reads'")
    ap.add_argument("--reads-models", default="async-1n,async-nn,async-n2n", help="experiment 'reads'")
    ap.add_argument("--reads-connections", default="1000", help="connections of experiment 'reads'")
    ap.add_argument("--experiments", default="models,threads,reads")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--count", type=int, default=500000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--load-threads", type=int, default=1)
    ap.add_argument("--load-args", default="", help="extra inlet-load flags, e.g. '--size-mean 1000000 "
                    "--size-sigma 0 --synthetic-count 8' (large messages)")
    ap.add_argument("--pin", action="store_true", help="taskset: server CPU 0, client CPU 1")
    ap.add_argument("--json", default=os.path.join(root, "docs/benchmarks/data/inletd-io-models.json"))
    ap.add_argument("--png", default="", help="PNG path (needs matplotlib); none by default")
    a = ap.parse_args()
    a.inletd = a.inletd or os.path.join(a.bin_dir, "inletd")
    a.inlet_load = a.inlet_load or os.path.join(a.bin_dir, "inlet-load")
    resolve = lambda b: b if os.sep in b else os.path.join(a.bin_dir, b)  # noqa: E731
    bins = [resolve(b) for b in a.bin.split(",") if b] or [a.inletd]
    bins = [b for b in bins if os.access(b, os.X_OK) or print(f"{b}: not found, skipped", file=sys.stderr)]
    if not bins:
        print("no server binary found: nothing to measure (skipped)", file=sys.stderr)
        return 0
    if not os.access(a.inlet_load, os.X_OK):
        sys.exit(f"inlet-load not found at {a.inlet_load}")
    scpu, ccpu = ("0", "1") if a.pin else (None, None)
    exps = set(a.experiments.split(","))
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731

    def variants(spec):
        """MODEL, MODEL@BINARY or uring:MODEL (= MODEL@inletd-uring) -> [(label, model, binary)]."""
        if spec.startswith("uring:"):
            spec = spec[len("uring:"):] + "@inletd-uring"
        m, _, b = spec.partition("@")
        if b:
            return [(spec, m, resolve(b))]
        return [(m if len(bins) == 1 else f"{m}@{os.path.basename(x)}", m, x) for x in bins]

    configs = []  # (experiment, label, binary, extra server args, connection list)
    if "models" in exps:
        for spec in split(a.models):
            for base, m, binary in variants(spec):
                for b in split(a.buffers):
                    for p in split(a.parses):
                        extra = ["--io-model", m] + a.buffer_flag.format(b).split() + a.parse_flag.format(p).split()
                        label = base if not (a.buffer_flag or a.parse_flag) else f"{base}/{b}/{p}"
                        configs.append(("models", label, binary, extra, [int(c) for c in split(a.connections)]))
    if "threads" in exps:
        for spec in split(a.thread_models):
            for base, m, binary in variants(spec):
                configs.append(("threads", base, binary, ["--io-model", m],
                                [int(c) for c in split(a.thread_connections)]))
    if "reads" in exps:
        for spec in split(a.reads_models):
            for base, m, binary in variants(spec):
                for n in split(a.reads_per_event):
                    configs.append(("reads", f"{base} reads/event={n}", binary,
                                    ["--io-model", m, "--reads-per-event", n], [int(c) for c in split(a.reads_connections)]))

    out = {"machine": harness.machine(), "args": vars(a), "runs": [], "rejected": []}
    accepted = []
    for exp, label, binary, extra, conns in configs:
        # Probe: does inletd accept this combination?
        srv = start(a, binary, extra, scpu)
        if srv is None:
            out["rejected"].append({"experiment": exp, "label": label, "args": extra})
            print(f"{exp}: {label}: rejected by inletd, skipped", file=sys.stderr)
            continue
        srv.stop()
        accepted.append((exp, label, binary, extra, conns))

    for rnd in range(a.rounds):
        order = accepted[rnd % max(1, len(accepted)):] + accepted[:rnd % max(1, len(accepted))]
        for exp, label, binary, extra, conns in order:
            for c in conns:
                srv = start(a, binary, extra, scpu)  # a fresh server per point: RSS is this load's
                if srv is None:
                    continue
                try:
                    args = ["-c", str(c), "-j", str(a.load_threads),
                            "--sources", str(max(1, c // 4000 + 1))] + a.load_args.split()
                    r = harness.measure(srv, lambda: harness.inlet_load(a.inlet_load, srv.port, args, a.count,
                                                                        a.seconds, ccpu, srv.pid))
                finally:
                    srv.stop()
                raw = r.pop("raw", {}) or {}
                r["server_cpu_percent"] = (raw.get("server") or {}).get("cpu_percent")
                r["server_rss_max_bytes"] = (raw.get("server") or {}).get("rss_max_bytes")
                r.update({"experiment": exp, "label": label, "connections": c, "round": rnd})
                out["runs"].append(r)
                print(f"r{rnd} {exp:7} {label:32} c={c:<6} {r['msgs_per_s']:9.0f} msg/s", file=sys.stderr)
    out["machine"]["loadavg_end"] = os.getloadavg()
    out["summary"] = summarize(out["runs"])
    print(markdown(out))
    harness.write_json(a.json, out)
    try:
        if out["summary"] and a.png:
            from plot import plot_models  # noqa: E402
            plot_models(out, a.png)
    except ImportError:
        print("matplotlib missing: no PNG (use /usr/bin/python3 with python3-matplotlib)", file=sys.stderr)
    return 0


def start(a, binary, extra, cpus):
    port = harness.free_port()
    cmd = [binary, "--smtp", f"127.0.0.1:{port}", "--listen", f"127.0.0.1:{harness.free_port()}",
           "--store", a.store, "--threads", str(a.server_threads), "--max-connections", "20000",
           "--max-connections-per-ip", "20000", "--quiet"] + extra
    srv = harness.Server("inletd", cmd, port, cpus, startup=10)
    time.sleep(0.1)
    if not srv.ok or srv.proc.poll() is not None:
        srv.stop()
        return None
    return srv


def base_label(runs, exp, label):
    labels = list(dict.fromkeys(r["label"] for r in runs if r["experiment"] == exp))
    if exp == "reads":
        model = label.split(" reads/event=")[0]
        return next((x for x in labels if x.split(" reads/event=")[0] == model), label)
    return labels[0] if labels else label


def parse_ref(runs, exp, label):
    """models: the label of the same model and buffer with the first parse mode listed (or None)."""
    if exp != "models" or label.count("/") < 2:
        return None
    stem = label.rsplit("/", 1)[0]
    for x in dict.fromkeys(r["label"] for r in runs if r["experiment"] == exp):
        if x.rsplit("/", 1)[0] == stem:
            return x
    return None


def summarize(runs):
    rows = []
    keys = list(dict.fromkeys((r["experiment"], r["label"], r["connections"]) for r in runs))
    for exp, label, c in keys:
        mine = [r for r in runs if (r["experiment"], r["label"], r["connections"]) == (exp, label, c)]
        med = lambda k: harness.median_spread([r.get(k) for r in mine])[0]  # noqa: E731
        m, lo, hi = harness.median_spread([r["msgs_per_s"] for r in mine])
        # Same-round ratio to a reference configuration: reads -> reads/event of the first value
        # listed for this model; models -> the first model listed (at the same connections).
        ref = base_label(runs, exp, label)
        ratios = []
        for r in mine:
            b = next((x for x in runs if (x["experiment"], x["label"], x["connections"], x["round"]) ==
                      (exp, ref, c, r["round"])), None)
            if b and b["msgs_per_s"]:
                ratios.append(r["msgs_per_s"] / b["msgs_per_s"])
        rm, rlo, rhi = harness.median_spread(ratios)
        # models: same-round ratio to the same model and buffer with the first parse mode.
        pref = parse_ref(runs, exp, label)
        pratios = []
        for r in mine:
            b = next((x for x in runs if (x["experiment"], x["label"], x["connections"], x["round"]) ==
                      (exp, pref, c, r["round"])), None) if pref else None
            if b and b["msgs_per_s"]:
                pratios.append(r["msgs_per_s"] / b["msgs_per_s"])
        pm, plo, phi = harness.median_spread(pratios)
        rows.append({"parse_ref": pref, "parse_ratio": pm, "parse_ratio_min": plo, "parse_ratio_max": phi,
                     "cpu_us_per_msg": med("server_cpu_us_per_msg"),"experiment": exp, "label": label, "connections": c, "msgs_per_s": m, "min": lo, "max": hi,
                     "ref": ref, "ratio": rm, "ratio_min": rlo, "ratio_max": rhi,
                     "cpu_percent": med("server_cpu_percent"), "rss_mb": (med("server_rss_max_bytes") or 0) / 1048576,
                     "p50_us": med("p50_us"), "p99_us": med("p99_us"), "failed": med("failed")})
    return rows


def markdown(out):
    f = lambda v, p=0: "-" if v is None else f"{v:,.{p}f}"  # noqa: E731
    lines = []
    for exp in ("models", "threads", "reads"):
        rows = [r for r in out["summary"] if r["experiment"] == exp]
        if not rows:
            continue
        lines += [f"### {exp}", "", "| configuration | connections | msg/s median (min-max) | same-round ratio "
                  "(min-max) | to | parse ratio (min-max) | server CPU % | server CPU µs/msg | server RSS MiB "
                  "| p50 ms | p99 ms |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            pr = "-" if not r.get("parse_ref") or r.get("parse_ref") == r["label"] else (
                f"{f(r.get('parse_ratio'), 2)} ({f(r.get('parse_ratio_min'), 2)}-{f(r.get('parse_ratio_max'), 2)})")
            lines.append(f"| {r['label']} | {r['connections']:,} | {f(r['msgs_per_s'])} ({f(r['min'])}-{f(r['max'])}) | "
                         f"{f(r.get('ratio'), 2)} ({f(r.get('ratio_min'), 2)}-{f(r.get('ratio_max'), 2)}) | "
                         f"{r.get('ref', '')} | {pr} | {f(r['cpu_percent'])} | {f(r.get('cpu_us_per_msg'))} | "
                         f"{f(r['rss_mb'], 1)} | "
                         f"{f((r['p50_us'] or 0) / 1000, 2)} | {f((r['p99_us'] or 0) / 1000, 2)} |")
        lines.append("")
    if out["rejected"]:
        lines.append("rejected by inletd (skipped): " + ", ".join(f"{r['label']}" for r in out["rejected"]))
    m = out["machine"]
    lines.append(f"\nmachine: {m['nproc']} CPUs, {m['cpu']}; load average {m['loadavg_start'][0]:.2f} at start, "
                 f"{m['loadavg_end'][0]:.2f} at end")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
