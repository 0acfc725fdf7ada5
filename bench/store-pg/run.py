#!/usr/bin/env python3
"""The PostgreSQL store's figures in one run, alternating (bench/store-pg/run.sh starts
the clusters: four, fsync and synchronous_commit on; shard 0 is the 1-shard store,
shards 1-3 the 3-shard store).

1. inletd end to end, memory store vs PostgreSQL store (1 and 3 shards), each round in
   alternating order, under Postfix's smtp-source (50 sessions, 9 KB, reused
   connections) and inlet-load (pipelined). Three client processes each send to one
   recipient, one per shard of the 3-shard store, so the load spreads over shards.
   Per run: messages/s, inletd and PostgreSQL CPU per message, WAL bytes per message,
   the batch sizes (from inletd's /metrics), latency (inlet-load: p50/p99 from the start
   of the data to the 250).
2. The write path alone (store_pg_bench) against the limit, a bare binary-COPY loop
   writing the same rows with the same commit cadence (store_pg_copy_ref, batch = the
   store's mean batch), 1 and 3 shards, alternating.
3. The raw column: lz4 vs pglz vs no compression (store_pg_bench, 1 shard).

    bench/store-pg/run.sh [ROUNDS] [MESSAGES]
Bounded: every client run has a message count and a timeout.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "common"))
import harness  # noqa: E402

HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))
CLK = os.sysconf("SC_CLK_TCK")


def psql(dsn, sql):
    out = subprocess.run(["psql", dsn, "-At", "-c", sql], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return out.stdout.strip()


cluster_cpu = harness.cluster_cpu


class Shards:
    def __init__(self, dsns, datas):
        self.dsns, self.datas = dsns, datas

    def reset(self):
        for d in self.dsns:
            psql(d, "SET client_min_messages = warning; DROP SCHEMA IF EXISTS mail CASCADE; CHECKPOINT")

    def wal(self):
        return [psql(d, "SELECT pg_current_wal_lsn()") for d in self.dsns]

    def wal_bytes(self, before):
        return sum(float(psql(d, f"SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '{b}')")) for d, b in
                   zip(self.dsns, before))

    def cpu(self):
        return sum(cluster_cpu(d) for d in self.datas)


def batch_hist(port):
    """inlet_pg_batch_size buckets (cumulative, summed over shards) from /metrics."""
    try:
        text = HTTP.open(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    except OSError:
        return {}
    h = {}
    for m in re.finditer(r'inlet_pg_batch_size_bucket\{shard="\d+",le="([^"]+)"\} (\d+)', text):
        h[m.group(1)] = h.get(m.group(1), 0) + int(m.group(2))
    for m in re.finditer(r'inlet_pg_batch_size_(sum|count)\{shard="\d+"\} (\d+)', text):
        h[m.group(1)] = h.get(m.group(1), 0) + int(m.group(2))
    return h


def hist_delta(a, b):
    return {k: b.get(k, 0) - a.get(k, 0) for k in b}


def run_inletd(args, shards, kind, recipients, messages, timeout):
    smtp, http = harness.free_port(), harness.free_port()
    cmd = [os.path.join(args.build, "bin", "inletd"), "--smtp", f"127.0.0.1:{smtp}", "--listen",
           f"127.0.0.1:{http}", "--quiet", "--max-messages", str(10 * messages)]
    if shards is None:
        cmd += ["--store", "memory", "--max-store-bytes", str(4 << 30)]
    else:
        shards.reset()
        cmd += ["--store", shards.dsns[0], "--buckets", str(args.buckets), "--pg-writers", str(args.pg_writers)]
        for d in shards.dsns[1:]:
            cmd += ["--shard", d]
    srv = harness.Server("inletd", cmd, smtp, startup=30)
    if not srv.ok:
        srv.stop()
        return {"error": "inletd did not start"}
    time.sleep(1.0)  # the store's shards are up (inletd waits for them before it listens)
    wal0 = shards.wal() if shards else None
    pgcpu0 = shards.cpu() if shards else 0
    h0 = batch_hist(http) if shards else {}
    t0, _, _ = srv.ticks()
    per = messages // len(recipients)
    sessions = [17, 17, 16]
    procs = []
    start = time.monotonic()
    for i, r in enumerate(recipients):
        if kind == "smtp-source":
            c = ["timeout", str(timeout), "smtp-source", "-d", "-s", str(sessions[i]), "-m", str(per), "-l", "9000",
                 "-f", "load@inlet.test", "-t", r, f"127.0.0.1:{smtp}"]
        else:
            c = [os.path.join(args.build, "bin", "inlet-load"), "--target", f"127.0.0.1:{smtp}", "-c",
                 str(sessions[i]), "--count", str(per), "--duration", str(timeout), "--size-mean", "9000",
                 "--to", r, "--json", "--quiet"]
        procs.append(subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        outs.append((p.returncode, out.decode(errors="replace")))
    wall = time.monotonic() - start
    t1, rss, _ = srv.ticks()
    res = {"store": "memory" if shards is None else f"pg{len(shards.dsns)}", "client": kind, "seconds": wall}
    done, failed, p99s, p50s = 0, 0, [], []
    for rc, out in outs:
        if kind == "smtp-source":
            done += per if rc == 0 else 0
            failed += 0 if rc == 0 else per
        else:
            try:
                j = json.loads(out.strip().splitlines()[-1])
                done += j["messages_ok"]
                failed += j["messages_failed"]
                p50s.append(j["latency"]["p50_us"])
                p99s.append(j["latency"]["p99_us"])
            except (ValueError, IndexError, KeyError):
                failed += per
    res.update({"messages": done, "failed": failed, "msgs_per_s": done / wall if wall else 0,
                "inletd_cpu_us_per_msg": 1e6 * (t1 - t0) / CLK / done if done else None,
                "inletd_rss_bytes": rss})
    if p99s:
        res["p50_us_max"], res["p99_us_max"] = max(p50s), max(p99s)
    if shards:
        res["pg_cpu_us_per_msg"] = 1e6 * (shards.cpu() - pgcpu0) / done if done else None
        res["wal_bytes_per_msg"] = shards.wal_bytes(wal0) / done if done else None
        res["batches"] = hist_delta(h0, batch_hist(http))
    srv.stop()
    return res


def scratch():
    """A fresh path for one program's JSON line (the programs append)."""
    fd, path = tempfile.mkstemp(prefix="store-pg-bench.", suffix=".json")
    os.close(fd)
    os.remove(path)
    return path


def run_prog(cmd, timeout):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(out.stdout)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=30000)
    ap.add_argument("--seconds", type=float, default=10, help="store_pg_bench / copy_ref runs")
    ap.add_argument("--buckets", type=int, default=1024)
    ap.add_argument("--pg-writers", type=int, default=2, help="inletd --pg-writers")
    ap.add_argument("--out", default="docs/benchmarks/data/store-pg.json")
    ap.add_argument("--skip", default="", help="comma list: e2e,write,compression")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    dsns = os.environ["INLET_PG_SHARDS"].split()
    datas = [os.environ[f"INLET_PG_SHARD{i}_DATA"] for i in range(len(dsns))]
    one, three = Shards(dsns[:1], datas[:1]), Shards(dsns[1:4], datas[1:4])
    skip = set(a.skip.split(","))
    report = {"machine": harness.machine(), "rounds": a.rounds, "messages": a.messages, "e2e": [],
              "write": [], "compression": []}
    timeout = 300

    # Recipients: one mailbox on each shard of the 3-shard store.
    three.reset()
    admin = os.path.join(a.build, "bin", "inlet-pg-admin")
    srv = None
    boot = [os.path.join(a.build, "bin", "inletd"), "--smtp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
            "--store", three.dsns[0], "--buckets", str(a.buckets)] + sum([["--shard", d] for d in three.dsns[1:]], [])
    p = subprocess.Popen(boot, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        if "http listening" in line:
            break
    p.terminate()
    p.wait(timeout=30)
    candidates = [f"rcpt{i}@inlet.test" for i in range(60)]
    where = subprocess.run([admin] + sum([["--store", d] for d in three.dsns], []) + ["where"] + candidates,
                           capture_output=True, text=True, timeout=60).stdout
    by_shard = {}
    for line in where.splitlines():
        addr, _, _, _, shard = line.split()
        by_shard.setdefault(int(shard), addr)
    recipients = [by_shard[i] for i in sorted(by_shard)][:3]
    report["recipients"] = recipients
    print("recipients (one per shard of the 3-shard store):", recipients, flush=True)

    if "e2e" not in skip:
        for rnd in range(a.rounds):
            order = [None, one, three] if rnd % 2 == 0 else [three, one, None]
            for kind in ("smtp-source", "inlet-load"):
                for sh in order:
                    r = run_inletd(a, sh, kind, recipients, a.messages, timeout)
                    r["round"] = rnd
                    report["e2e"].append(r)
                    print(json.dumps({k: v for k, v in r.items() if k != "batches"}), flush=True)

    if "write" not in skip:
        for rnd in range(a.rounds):
            for sh in ([one, three] if rnd % 2 == 0 else [three, one]):
                base = sum([["--store", d] for d in sh.dsns], []) + sum([["--pgdata", d] for d in sh.datas], [])
                tmp = scratch()
                run_prog([os.path.join(a.build, "bin", "store_pg_bench")] + base +
                         ["--seconds", str(a.seconds), "--inflight", "256", "--fresh", "--json", tmp,
                          "--label", f"store{len(sh.dsns)}"], timeout)
                s = json.loads(open(tmp).read().splitlines()[-1])
                mean = max(1, round(s["batch_messages"] / max(1, s["batches"])))
                os.remove(tmp)
                run_prog([os.path.join(a.build, "bin", "store_pg_copy_ref")] + base +
                         ["--seconds", str(a.seconds), "--batch", str(mean), "--conns", "4", "--json", tmp,
                          "--label", f"copy{len(sh.dsns)}"], timeout)
                c = json.loads(open(tmp).read().splitlines()[-1])
                os.remove(tmp)
                report["write"].append({"round": rnd, "shards": len(sh.dsns), "store": s, "copy": c,
                                        "ratio": s["msgs_per_s"] / c["msgs_per_s"] if c["msgs_per_s"] else None})

    if "compression" not in skip:
        for rnd in range(a.rounds):
            for comp in (["lz4", "pglz", "none"] if rnd % 2 == 0 else ["none", "pglz", "lz4"]):
                tmp = scratch()
                run_prog([os.path.join(a.build, "bin", "store_pg_bench"), "--store", one.dsns[0], "--pgdata",
                          one.datas[0], "--seconds", str(a.seconds), "--inflight", "256", "--fresh",
                          "--compression", comp, "--json", tmp, "--label", comp], timeout)
                s = json.loads(open(tmp).read().splitlines()[-1])
                os.remove(tmp)
                size = psql(one.dsns[0], "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                                         "JOIN pg_inherits i ON i.inhrelid = c.oid "
                                         "WHERE i.inhparent = 'mail.message'::regclass")
                rows = psql(one.dsns[0], "SELECT count(*) FROM mail.message")
                s["disk_bytes_per_msg"] = float(size) / max(1, int(rows))
                s["round"] = rnd
                report["compression"].append(s)

    harness.write_json(a.out, report)
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
