#!/usr/bin/env python3
"""inletd beside its peers: the same client (inlet-load) and the same load, one run, alternating.

Peers (each skipped cleanly when it is not available):
  inletd-sink, inletd-memory   build/bin/inletd (or --inletd PATH) with --store sink|memory
  inletd-memory-tls            inletd --store memory with a throwaway self-signed certificate;
                               inlet-load adds --starttls (smtp-source has no TLS: no row)
  smtp-sink                    Postfix's sink server, the speed reference
  aiosmtpd                     Debian's python3-aiosmtpd, handler aiosmtpd.handlers.Sink
  haraka                       npm Haraka with queue/discard (bench/peers/setup-haraka.sh)
  swallow                      the TCP limit (bench/peers/swallow.cpp)
  baseline-inletd-*            with --baseline PATH: the same inletd rows for another inletd
                               binary (an earlier build), measured in the same rounds

Loads: closed loop, pipelining, --connections list (default 10,100,1000), each run bounded by
--seconds and --count; plus Postfix's smtp-source (-d, 50 sessions, count-bounded) as a
second, independent client. Ratios are to inletd-sink in the same round (to smtp-sink when
inletd is missing, and the table says so). Output: Markdown on stdout, JSON (--json), PNG
(--png, needs matplotlib: Debian python3-matplotlib with /usr/bin/python3).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "common"))
import harness  # noqa: E402


# Peers whose clients need extra inlet-load flags; smtp-source cannot drive them.
CLIENT_ARGS = {"inletd-memory-tls": ["--starttls"], "baseline-inletd-memory-tls": ["--starttls"]}


def self_signed(tmp):
    """(cert, key) made by `openssl req` in tmp, or None when openssl is missing."""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                       capture_output=True)
    return (cert, key) if r.returncode == 0 else None


def peer_commands(a, root, tmp):
    """name -> function(port) returning argv, or None when the peer is unavailable."""
    peers = {}
    tls = self_signed(tmp)
    if not tls:
        print("openssl missing: inletd-memory-tls skipped", file=sys.stderr)
    binaries = [("", a.inletd or os.path.join(a.bin_dir, "inletd"))]
    if a.baseline:
        binaries.append(("baseline-", a.baseline))
    for prefix, inletd in binaries:
        if not os.access(inletd, os.X_OK):
            print(f"inletd not found at {inletd}: {prefix}inletd rows skipped", file=sys.stderr)
            continue

        def inletd_cmd(store, extra=(), inletd=inletd):
            return lambda port: [
                inletd, "--smtp", f"127.0.0.1:{port}", "--listen", f"127.0.0.1:{harness.free_port()}",
                "--store", store, "--max-connections", "20000", "--max-connections-per-ip", "20000",
                "--quiet"] + list(extra) + a.inletd_args.split()
        for store in ("sink", "memory"):
            peers[f"{prefix}inletd-{store}"] = inletd_cmd(store)
        if tls:
            peers[f"{prefix}inletd-memory-tls"] = inletd_cmd("memory", ["--tls-cert", tls[0], "--tls-key", tls[1]])
    if shutil.which("smtp-sink"):
        peers["smtp-sink"] = lambda port: (["smtp-sink"] + (["-u", "nobody"] if os.geteuid() == 0 else [])
                                           + [f"127.0.0.1:{port}", "1024"])
    py = "/usr/bin/python3"
    if os.access(py, os.X_OK) and subprocess.run([py, "-c", "import aiosmtpd"],
                                                 capture_output=True).returncode == 0:
        peers["aiosmtpd"] = lambda port: [py, "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{port}",
                                          "-c", "aiosmtpd.handlers.Sink"]
    else:
        print("aiosmtpd not importable by /usr/bin/python3: skipped", file=sys.stderr)
    if a.haraka:
        setup = os.path.join(os.path.dirname(__file__), "setup-haraka.sh")

        def haraka(port):
            r = subprocess.run(["bash", setup, str(port)], capture_output=True, text=True, timeout=900)
            return r.stdout.split() if r.returncode == 0 and r.stdout.strip() else None
        peers["haraka"] = haraka
    swallow = a.swallow or os.path.join(a.bin_dir, "swallow")
    if os.access(swallow, os.X_OK):
        peers["swallow"] = lambda port: [swallow, "--listen", f"127.0.0.1:{port}", "--max-seconds", "3600"]
    return peers


def main():
    root = harness.repo_root()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(root, "build/bin"),
                    help="directory of inletd, inlet-load, swallow (default build/bin)")
    ap.add_argument("--inletd", help="inletd binary (default BIN_DIR/inletd)")
    ap.add_argument("--inletd-args", default="", help="extra inletd arguments, e.g. '--threads 1'")
    ap.add_argument("--inlet-load", help="default BIN_DIR/inlet-load")
    ap.add_argument("--modes", default="pipelining",
                    help="inlet-load modes, comma list of pipelining, no-pipelining, bdat")
    ap.add_argument("--swallow")
    ap.add_argument("--baseline", help="another inletd binary measured beside it (rows baseline-inletd-*)")
    ap.add_argument("--haraka", action="store_true", help="include Haraka (npm install on first use)")
    ap.add_argument("--peers", help="comma list to restrict the peers")
    ap.add_argument("--connections", default="10,100,1000")
    ap.add_argument("--threads", type=int, default=1, help="inlet-load threads")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--count", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smtp-source", type=int, default=5000, help="messages per smtp-source run (0: none)")
    ap.add_argument("--rates", default="", help="open loop sweep, e.g. 1000,2000,4000 (msg/s, 100 connections)")
    ap.add_argument("--rate-connections", type=int, default=100, help="connections of the open-loop sweep")
    ap.add_argument("--rate-peers", help="comma list of peers for the open-loop sweep (default: all)")
    ap.add_argument("--pin", action="store_true", help="taskset: server CPU 0, client CPU 1")
    ap.add_argument("--reference", default="smtp-sink",
                    help="peer the ratios are to (issue 4's goals are to smtp-sink)")
    ap.add_argument("--json")
    ap.add_argument("--png", help="throughput vs connections (and latency vs rate beside it)")
    ap.add_argument("--latency-png", help="latency percentiles vs offered rate only")
    a = ap.parse_args()
    a.inlet_load = a.inlet_load or os.path.join(a.bin_dir, "inlet-load")
    if not os.access(a.inlet_load, os.X_OK):
        sys.exit(f"inlet-load not found at {a.inlet_load}: build it first")
    scpu, ccpu = ("0", "1") if a.pin else (None, None)
    conns = [int(c) for c in a.connections.split(",") if c]
    tmp = tempfile.TemporaryDirectory()
    peers = peer_commands(a, root, tmp.name)
    if a.peers:
        keep = set(a.peers.split(","))
        peers = {k: v for k, v in peers.items() if k in keep}

    machine = harness.machine()  # load average before the run
    servers = {}
    runs, open_rows = [], []
    try:
        for name, mk in peers.items():
            port = harness.free_port()
            cmd = mk(port)
            if not cmd:
                print(f"{name}: not available, skipped", file=sys.stderr)
                continue
            srv = harness.Server(name, cmd, port, scpu, startup=30)
            if srv.ok:
                servers[name] = srv
            else:
                print(f"{name}: did not start or rejected its arguments, skipped", file=sys.stderr)
                srv.stop()
        mode_args = {"pipelining": [], "no-pipelining": ["--no-pipelining"], "bdat": ["--bdat"]}
        loads = [(f"inlet-load {m} c={c}", c, mode_args[m]) for m in a.modes.split(",") if m for c in conns]
        if a.smtp_source and shutil.which("smtp-source"):
            loads.append(("smtp-source -d s=50", None, []))
        names = list(servers)
        for rnd in range(a.rounds):
            for load, c, margs in loads:
                order = names[rnd % max(1, len(names)):] + names[:rnd % max(1, len(names))]
                for name in order:
                    srv = servers[name]
                    if c is None and name in CLIENT_ARGS:
                        continue  # smtp-source cannot speak what this peer needs
                    if c is None:
                        fn = lambda: harness.smtp_source(srv.port, 50, a.smtp_source, 9000, a.seconds * 20, ccpu)  # noqa: E731
                    else:
                        args = (["-c", str(c), "-j", str(a.threads), "--sources", str(max(1, c // 4000 + 1))]
                                + margs + CLIENT_ARGS.get(name, []))
                        fn = lambda: harness.inlet_load(a.inlet_load, srv.port, args, a.count,  # noqa: E731
                                                        a.seconds, ccpu)
                    r = harness.measure(srv, fn)
                    raw = r.pop("raw", None)
                    if raw:
                        r["extension_fallbacks"] = raw.get("extension_fallbacks")
                    r.update({"peer": name, "load": load, "connections": c, "round": rnd})
                    runs.append(r)
                    print(f"r{rnd} {load:22} {name:14} {r['msgs_per_s']:9.0f} msg/s "
                          f"{r.get('mb_per_s', 0):7.1f} MB/s", file=sys.stderr)
        rate_names = [n for n in names if not a.rate_peers or n in a.rate_peers.split(",")]
        for rate in [float(x) for x in a.rates.split(",") if x]:
            for name in rate_names:
                srv = servers[name]
                args = ["-c", str(a.rate_connections), "-j", str(a.threads), "--rate", str(rate)] + CLIENT_ARGS.get(name, [])
                r = harness.measure(srv, lambda: harness.inlet_load(a.inlet_load, srv.port, args,
                                                                    int(rate * a.seconds) + 1, a.seconds, ccpu))
                r.pop("raw", None)
                r.update({"peer": name, "rate": rate})
                open_rows.append(r)
                print(f"open {rate:8.0f}/s {name:14} p50 {r.get('p50_us', 0) / 1000:8.2f} ms  "
                      f"p99 {r.get('p99_us', 0) / 1000:8.2f} ms  achieved {r['msgs_per_s']:8.0f}/s", file=sys.stderr)
    finally:
        for srv in servers.values():
            srv.stop()
        tmp.cleanup()
    out = {"machine": machine, "args": vars(a), "peers": list(servers), "runs": runs,
           "open_loop": open_rows}
    out["machine"]["loadavg_end"] = os.getloadavg()
    ref = next((p for p in (a.reference, "smtp-sink", "inletd-sink") if p in servers), None)
    out["reference"] = ref
    out["summary"] = summarize(runs, ref)
    print(markdown(out))
    if open_rows:
        print("\n| offered msg/s | peer | achieved msg/s | p50 ms | p99 ms | p99.9 ms | max ms |\n|---|---|---|---|---|---|---|")
        for r in open_rows:
            print(f"| {r['rate']:,.0f} | {r['peer']} | {r['msgs_per_s']:,.0f} | {r.get('p50_us', 0) / 1000:.2f} | "
                  f"{r.get('p99_us', 0) / 1000:.2f} | {r.get('p999_us', 0) / 1000:.2f} | {r.get('max_us', 0) / 1000:.2f} |")
    if a.json:
        harness.write_json(a.json, out)
    if a.png and out["summary"]:
        from plot import plot_peers  # noqa: E402  (bench/common/plot.py, needs matplotlib)
        plot_peers(out, a.png)
        if out["open_loop"] and not a.latency_png:
            from plot import plot_latency_vs_rate  # noqa: E402
            plot_latency_vs_rate(out, a.png.replace(".png", "-latency.png"))
    if a.latency_png and out["open_loop"]:
        from plot import plot_latency_vs_rate  # noqa: E402
        plot_latency_vs_rate(out, a.latency_png)


def summarize(runs, ref):
    rows = []
    loads = list(dict.fromkeys(r["load"] for r in runs))
    peers = list(dict.fromkeys(r["peer"] for r in runs))
    for load in loads:
        for peer in peers:
            mine = [r for r in runs if r["load"] == load and r["peer"] == peer]
            if not mine:
                continue  # e.g. a TLS peer under smtp-source
            ratios, bratios = [], []
            for r in mine:
                base = next((x for x in runs if x["load"] == load and x["peer"] == ref
                             and x["round"] == r["round"]), None)
                if base and base["msgs_per_s"]:
                    ratios.append(r["msgs_per_s"] / base["msgs_per_s"])
                lim = next((x for x in runs if x["load"] == load and x["peer"] == "swallow"
                            and x["round"] == r["round"]), None)
                if lim and lim.get("mb_per_s"):
                    bratios.append(r.get("mb_per_s", 0) / lim["mb_per_s"])
            med = lambda k: harness.median_spread([r.get(k) for r in mine])[0]  # noqa: E731
            m, lo, hi = harness.median_spread([r["msgs_per_s"] for r in mine])
            rm, rlo, rhi = harness.median_spread(ratios)
            rows.append({"load": load, "peer": peer, "connections": mine[0]["connections"] if mine else None,
                         "msgs_per_s": m, "min": lo, "max": hi, "ratio": rm, "ratio_min": rlo,
                         "ratio_max": rhi, "bytes_vs_swallow": harness.median_spread(bratios)[0],
                         "p50_us": med("p50_us"), "p99_us": med("p99_us"),
                         "server_cpu_us_per_msg": med("server_cpu_us_per_msg"),
                         "server_rss_mb": (med("server_rss_bytes") or 0) / 1048576})
    return rows


def markdown(out):
    f = lambda v, p=0: "-" if v is None else f"{v:,.{p}f}"  # noqa: E731
    ref = out["reference"] or "none"
    lines = [f"| load | peer | msg/s median (min-max) | ratio to {ref} (min-max) | bytes/s vs swallow | "
             "p50 ms | p99 ms | server CPU us/msg | server RSS MiB |", "|---|---|---|---|---|---|---|---|---|"]
    for r in out["summary"]:
        ms = lambda v: None if v is None else v / 1000  # noqa: E731
        lines.append(f"| {r['load']} | {r['peer']} | {f(r['msgs_per_s'])} ({f(r['min'])}-{f(r['max'])}) | "
                     f"{f(r['ratio'], 2)} ({f(r['ratio_min'], 2)}-{f(r['ratio_max'], 2)}) | "
                     f"{f(r['bytes_vs_swallow'], 2)} | {f(ms(r['p50_us']), 2)} | {f(ms(r['p99_us']), 2)} | "
                     f"{f(r['server_cpu_us_per_msg'], 1)} | {f(r['server_rss_mb'], 1)} |")
    m = out["machine"]
    lines += ["", f"machine: {m['nproc']} CPUs, {m['cpu']}, kernel {m['kernel']}; load average "
              f"{m['loadavg_start'][0]:.2f} at start, {m['loadavg_end'][0]:.2f} at end; "
              f"peers run: {', '.join(out['peers'])}"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
