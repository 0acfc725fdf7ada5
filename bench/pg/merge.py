"""Merges the per-round outputs of run.sh into one JSON and Markdown tables.
   python merge.py OUT.json ROUND_FILES...
Inputs: pg_bench --json files (one connection; the round is in the name, *_rN.json) and
JSON lines {"round", "shape", "client", "conns", "ops_per_s", "cpu_us_per_op"} from
pg_bench --clients and every peer program ("conns" defaults to 1).
Ratios are taken within each round (same server, same minute), then the median and the
[min..max] spread over rounds are reported: against libpq_pipe (the limit of a
libpq-based client) and against the best peer of that round (the peer driver with the
most ops/s on that shape, among those doing the same work)."""
import json, statistics, sys

# Known clients, in table order; anything else is appended.
ORDER = ["libpq_sync", "libpq_pipe", "inlet_seq_raw", "inlet_seq_typed", "inlet_pipe_raw", "inlet_pipe_typed",
         "inlet_batch", "inlet_pool_typed", "asyncpg_seq", "psycopg_seq", "psycopg_pipe", "pqxx_seq", "tokio_pg_seq",
         "tokio_pg_pipe", "pgx_seq", "pgx_batch"]
OURS = ("libpq_", "inlet_")
# Not the same work: these commit a whole batch of INSERTs at one Sync (one implicit
# transaction) where every other client commits each INSERT. Shown, flagged, and left out
# of "best peer".
NOT_SAME = {("insert1000", "asyncpg_seq"), ("insert1000", "pgx_batch"), ("insert1000", "psycopg_pipe"),
            ("insert1000", "inlet_batch")}


def load(files):
    samples = {}  # (conns, shape, client) -> {round: (ops, cpu)}
    for f in files:
        text = open(f).read().strip()
        if not text:
            continue
        if text.startswith("{\"depth\""):
            d = json.loads(text)
            rnd = int(f.rsplit("_r", 1)[1].split(".")[0])
            for r in d["results"]:
                samples.setdefault((1, r["shape"], r["client"]), {})[rnd] = (r["ops_per_s"][0], r["cpu_us_per_op"][0])
        else:
            for line in text.splitlines():
                r = json.loads(line)
                key = (r.get("conns", 1), r["shape"], r["client"])
                samples.setdefault(key, {})[r["round"]] = (r["ops_per_s"], r["cpu_us_per_op"])
    return samples


def stat(v):
    return (statistics.median(v), min(v), max(v)) if v else None


def fmt(m):
    return "-" if m is None else f"{m[0]:.2f} [{m[1]:.2f}..{m[2]:.2f}]"


# One Sync per group of DEPTH statements (explicit batches) where libpq_pipe and inlet send
# one per statement: fewer protocol messages for the same rows. Counted as peers, and the
# goal table shows the best peer both with and without them.
ONE_SYNC_PER_BATCH = {"pgx_batch", "psycopg_pipe"}


def is_peer(shape, client):
    return not client.startswith(OURS) and (shape, client) not in NOT_SAME


def main():
    out_path, files = sys.argv[1], sys.argv[2:]
    samples = load(files)
    shapes, clients = [], list(ORDER)
    for _, s, c in samples:
        if s not in shapes:
            shapes.append(s)
        if c not in clients:
            clients.append(c)
    rows = []
    for conns in sorted({k[0] for k in samples}):
        print(f"\n### {conns} connection{'s' if conns > 1 else ''}\n")
        print("| shape | client | ops/s | CPU us/op | ops/s vs libpq_pipe | CPU/op vs libpq_pipe | ops/s vs best peer |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for s in shapes:
            here = {c: samples[(conns, s, c)] for c in clients if (conns, s, c) in samples}
            if not here:
                continue
            pipe = here.get("libpq_pipe", {})
            rounds = sorted({r for d in here.values() for r in d})
            best = {}  # round -> (ops, client) of the best peer
            for r in rounds:
                cands = [(d[r][0], c) for c, d in here.items() if is_peer(s, c) and r in d]
                if cands:
                    best[r] = max(cands)
            for c, d in here.items():
                rp = stat([d[r][0] / pipe[r][0] for r in d if r in pipe])
                cp = stat([d[r][1] / pipe[r][1] for r in d if r in pipe])
                rb = stat([d[r][0] / best[r][0] for r in d if r in best])
                ops = statistics.median(x[0] for x in d.values())
                cpu = statistics.median(x[1] for x in d.values())
                flag = " (†)" if (s, c) in NOT_SAME else ""
                print(f"| {s} | {c}{flag} | {ops:.0f} | {cpu:.1f} | {fmt(rp)} | {fmt(cp)} | {fmt(rb)} |")
                rows.append({"conns": conns, "shape": s, "client": c, "rounds": sorted(d),
                             "ops_per_s": [d[r][0] for r in sorted(d)],
                             "cpu_us_per_op": [d[r][1] for r in sorted(d)],
                             "median_ops_per_s": ops, "median_cpu_us_per_op": cpu,
                             "median_ops_vs_libpq_pipe": rp and rp[0], "median_cpu_vs_libpq_pipe": cp and cp[0],
                             "median_ops_vs_best_peer": rb and rb[0], "same_work": (s, c) not in NOT_SAME,
                             "best_peer_by_round": {str(r): best[r][1] for r in sorted(best)}})
    print("\n(†) commits a batch of INSERTs at one Sync: not the same work, left out of 'best peer'.")
    goals(samples, shapes)
    json.dump({"results": rows}, open(out_path, "w"), indent=1)


def goals(samples, shapes):
    """The two goals of issue 7, per shape: our best typed client vs the best peer (ops/s,
    per round; also vs the best peer sending a Sync per statement as we do), and our
    clients' CPU/op vs libpq_pipe."""
    for conns in sorted({k[0] for k in samples}):
        mode = "pipe" if conns == 1 else "seq"  # at N connections each inlet connection is sequential
        print(f"\n### Goals, {conns} connection{'s' if conns > 1 else ''}\n")
        print(f"| shape | our best typed | best peer | ours vs best peer | best peer, a Sync per statement | "
              f"ours vs it | inlet_{mode}_raw CPU/op vs libpq_pipe | inlet_{mode}_typed CPU/op vs libpq_pipe | "
              f"inlet_batch vs best peer with one Sync per batch |")
        print("|---|---|---|---:|---|---:|---:|---:|---:|")
        for s in shapes:
            get = lambda c: samples.get((conns, s, c), {})
            typed = [c for c in ("inlet_pipe_typed", "inlet_seq_typed", "inlet_pool_typed") if get(c)]
            peers = [c for n, s2, c in samples if n == conns and s2 == s and is_peer(s, c)]
            if not typed or not peers:
                continue
            med = lambda c: statistics.median(x[0] for x in get(c).values())
            ours = max(typed, key=med)

            def versus(group, mine=None):
                mine = mine or ours
                if not group or not get(mine):
                    return "-", "-"
                best = max(group, key=med)
                ratio = stat([get(mine)[r][0] / max(get(p)[r][0] for p in group if r in get(p))
                              for r in get(mine) if any(r in get(p) for p in group)])
                return f"{best} {med(best):.0f}", fmt(ratio)

            b_all, r_all = versus(peers)
            b_sync, r_sync = versus([p for p in peers if p not in ONE_SYNC_PER_BATCH])
            # like with like: our explicit batch against the peers' batches (same Syncs)
            batchers = [c for n, s2, c in samples if n == conns and s2 == s and c in ONE_SYNC_PER_BATCH]
            b_batch, r_batch = versus(batchers, "inlet_batch")
            pipe = get("libpq_pipe")
            cpu = lambda c: fmt(stat([get(c)[r][1] / pipe[r][1] for r in get(c) if r in pipe]))
            print(f"| {s} | {ours} {med(ours):.0f} | {b_all} | {r_all} | {b_sync} | {r_sync} | "
                  f"{cpu('inlet_' + mode + '_raw')} | {cpu('inlet_' + mode + '_typed')} | "
                  f"{r_batch} ({b_batch}) |")


if __name__ == "__main__":
    main()
