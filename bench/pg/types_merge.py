"""types.sh's samples -> OUT_JSON and a Markdown table on stdout.
   python3 types_merge.py OUT_JSON SAMPLES.jsonl
Ratios are taken within a round (same server, same minute), then the median and
[min..max] over rounds; wall and client CPU separately."""
import json, statistics, sys

PAIRS = [  # (A, B): A / B per round
    ("inlet_typed", "inlet_raw"),
    ("inlet_typed", "asyncpg"),
    ("inlet_typed", "asyncpg_read"),
    ("inlet_raw", "asyncpg"),
]


def main(out_json, samples):
    rows = [json.loads(l) for l in open(samples) if l.strip()]
    with open(out_json, "w") as f:
        json.dump(rows, f, indent=1)
    by = {}  # (shape, client) -> {round: sample}
    for r in rows:
        by.setdefault((r["shape"], r["client"]), {})[r["round"]] = r
    shapes = sorted({r["shape"] for r in rows})
    clients = sorted({r["client"] for r in rows})
    print("| shape | client | rows | wall us/request, median [min..max] | client CPU us/request | CPU us/row |")
    print("|---|---|---:|---:|---:|---:|")
    for s in shapes:
        for c in clients:
            d = by.get((s, c))
            if not d:
                continue
            w = [x["wall_us_per_op"] for x in d.values()]
            u = [x["cpu_us_per_op"] for x in d.values()]
            n = next(iter(d.values()))["rows"]
            print("| %s | %s | %d | %.0f [%.0f..%.0f] | %.0f [%.0f..%.0f] | %.3f |" % (
                s, c, n, statistics.median(w), min(w), max(w), statistics.median(u), min(u), max(u),
                statistics.median(u) / max(n, 1)))
    print()
    print("| shape | A / B | rounds | wall ratio, median [min..max] | CPU ratio, median [min..max] |")
    print("|---|---|---:|---:|---:|")
    for s in shapes:
        for a, b in PAIRS:
            da, db = by.get((s, a)), by.get((s, b))
            if not da or not db:
                continue
            common = sorted(set(da) & set(db))
            if not common:
                continue
            w = [da[k]["wall_us_per_op"] / db[k]["wall_us_per_op"] for k in common]
            u = [da[k]["cpu_us_per_op"] / db[k]["cpu_us_per_op"] for k in common]
            print("| %s | %s / %s | %d | %.2f [%.2f..%.2f] | %.2f [%.2f..%.2f] |" % (
                s, a, b, len(common), statistics.median(w), min(w), max(w), statistics.median(u), min(u), max(u)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
