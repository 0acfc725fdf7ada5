"""Merges the per-round outputs of run.sh into one JSON and a Markdown table.
   python merge.py OUT.json ROUND_FILES...   (pg_bench --json files and asyncpg JSON lines)
Ratios are taken within each round (same server, same minute), then the median and the
[min..max] spread over rounds are reported."""
import json, statistics, sys

out_path, files = sys.argv[1], sys.argv[2:]
samples = {}  # (shape, client) -> {round: (ops, cpu)}
for f in files:
    text = open(f).read().strip()
    if not text:
        continue
    if text.startswith("{\"depth\""):
        d = json.loads(text)
        rnd = int(f.rsplit("_r", 1)[1].split(".")[0])
        for r in d["results"]:
            samples.setdefault((r["shape"], r["client"]), {})[rnd] = (r["ops_per_s"][0], r["cpu_us_per_op"][0])
    else:
        for line in text.splitlines():
            r = json.loads(line)
            samples.setdefault((r["shape"], r["client"]), {})[r["round"]] = (r["ops_per_s"], r["cpu_us_per_op"])

shapes = []
for s, _ in samples:
    if s not in shapes:
        shapes.append(s)
clients = ["libpq_sync", "libpq_pipe", "inlet_seq_raw", "inlet_seq_typed", "inlet_pipe_raw",
           "inlet_pipe_typed", "asyncpg_seq"]


def stat(v):
    return statistics.median(v), min(v), max(v)


rows = []
print("| shape | client | ops/s | CPU us/op | ops/s vs libpq_sync | ops/s vs libpq_pipe | CPU/op vs libpq_pipe |")
print("|---|---|---:|---:|---:|---:|---:|")
for s in shapes:
    for c in clients:
        d = samples.get((s, c))
        if not d:
            continue
        sync, pipe = samples[(s, "libpq_sync")], samples[(s, "libpq_pipe")]
        rs = [d[r][0] / sync[r][0] for r in d if r in sync]
        rp = [d[r][0] / pipe[r][0] for r in d if r in pipe]
        cp = [d[r][1] / pipe[r][1] for r in d if r in pipe]
        ops = statistics.median(x[0] for x in d.values())
        cpu = statistics.median(x[1] for x in d.values())
        m1, m2, m3 = stat(rs), stat(rp), stat(cp)
        print(f"| {s} | {c} | {ops:.0f} | {cpu:.1f} | {m1[0]:.2f} [{m1[1]:.2f}..{m1[2]:.2f}] | "
              f"{m2[0]:.2f} [{m2[1]:.2f}..{m2[2]:.2f}] | {m3[0]:.2f} [{m3[1]:.2f}..{m3[2]:.2f}] |")
        rows.append({"shape": s, "client": c, "rounds": sorted(d), "ops_per_s": [d[r][0] for r in sorted(d)],
                     "cpu_us_per_op": [d[r][1] for r in sorted(d)], "median_ops_vs_libpq_sync": m1[0],
                     "median_ops_vs_libpq_pipe": m2[0], "median_cpu_vs_libpq_pipe": m3[0]})
json.dump({"results": rows}, open(out_path, "w"), indent=1)
