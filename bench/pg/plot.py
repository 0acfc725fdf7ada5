"""Draws the merged bench/pg results (merge.py's JSON) as one PNG.
   /usr/bin/python3 plot.py pg.json pg.png      (Debian's python3-matplotlib)
Rows: one per connection count (1, 10). Left: ops/s relative to libpq_pipe of the same
round (median over rounds; higher is better). Right: client CPU per operation relative to
libpq_pipe (lower is better). Log scale: the clients span two orders of magnitude.
Bars hatched: not the same work (a batch of INSERTs committed at one Sync)."""
import json, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

data = json.load(open(sys.argv[1]))["results"]
conns_list = sorted({r["conns"] for r in data})
# Table order of merge.py; colours by family: libpq greys, inlet greens, each peer its own hue.
ORDER = ["libpq_sync", "libpq_pipe", "inlet_seq_raw", "inlet_seq_typed", "inlet_pipe_raw", "inlet_pipe_typed",
         "inlet_batch", "inlet_pool_typed", "asyncpg_seq", "psycopg_seq", "psycopg_pipe", "pqxx_seq", "tokio_pg_seq",
         "tokio_pg_pipe", "pgx_seq", "pgx_batch"]
COLOUR = {"libpq_sync": "#bbbbbb", "libpq_pipe": "#555555", "inlet_seq_raw": "#c7e9c0", "inlet_seq_typed": "#74c476",
          "inlet_pipe_raw": "#31a354", "inlet_pipe_typed": "#006d2c", "inlet_batch": "#00441b", "inlet_pool_typed": "#a1d99b",
          "asyncpg_seq": "#3182bd", "psycopg_seq": "#fdae6b", "psycopg_pipe": "#e6550d", "pqxx_seq": "#9e9ac8",
          "tokio_pg_seq": "#fc9272", "tokio_pg_pipe": "#de2d26", "pgx_seq": "#9ecae1", "pgx_batch": "#08519c"}
shapes = []
for r in data:
    if r["shape"] not in shapes:
        shapes.append(r["shape"])
clients = [c for c in ORDER if any(r["client"] == c for r in data)]
clients += [c for c in dict.fromkeys(r["client"] for r in data) if c not in clients]
cmap = plt.get_cmap("tab20")
colour = {c: COLOUR.get(c, cmap(i % 20)) for i, c in enumerate(clients)}

fig, axes = plt.subplots(len(conns_list), 2, figsize=(18, 5.5 * len(conns_list)), squeeze=False)
for row, conns in enumerate(conns_list):
    here = {(r["shape"], r["client"]): r for r in data if r["conns"] == conns}
    cl = [c for c in clients if any((s, c) in here for s in shapes)]
    width = 0.9 / max(1, len(cl))
    for col, (key, title) in enumerate([("median_ops_vs_libpq_pipe", "ops/s vs libpq_pipe (higher is better)"),
                                        ("median_cpu_vs_libpq_pipe", "CPU/op vs libpq_pipe (lower is better)")]):
        ax = axes[row][col]
        for j, c in enumerate(cl):
            xs, ys, hatch = [], [], []
            for i, s in enumerate(shapes):
                r = here.get((s, c))
                if r and r.get(key):
                    xs.append(i - 0.45 + width * (j + 0.5))
                    ys.append(r[key])
                    hatch.append("" if r["same_work"] else "//")
            bars = ax.bar(xs, ys, width, label=c, color=colour[c])
            for b, h in zip(bars, hatch):
                b.set_hatch(h)
        ax.set_yscale("log")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(shapes)
        ax.set_title(f"{conns} connection{'s' if conns > 1 else ''}: {title}")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[row][1].legend(fontsize=8, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
fig.suptitle("bench/pg: every client against the same local PostgreSQL 15, medians over rounds "
             "(ratios taken within a round)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=80)
