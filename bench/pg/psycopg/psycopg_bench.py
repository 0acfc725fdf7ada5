"""psycopg 3 on the shapes of bench/pg/shapes.hpp, for bench/pg/run.sh.
   python psycopg_bench.py DSN SCALE ROUND [CONNS=1] [DEPTH=64]
One JSON line per (shape, client) on stdout, the format merge.py reads. Clients:
  psycopg_seq   cursor.execute(..., prepare=True) then fetchall(), one after another;
  psycopg_pipe  conn.pipeline(): DEPTH executes, then their fetchall()s. psycopg sends a
                Sync when results are fetched, so each group of DEPTH statements is one
                implicit transaction (one commit for DEPTH INSERTs, not one each).
Binary results (cursor(binary=True)), server-side prepared statements, autocommit;
parameters typed as int4/bool/text like the other clients. fetchall() turns every field of
every row into a Python value. With CONNS > 1 (seq only), CONNS threads each drive their own
connection (psycopg is a blocking driver; the GIL serialises the Python parts)."""
import json, resource, sys, threading, time

import psycopg
from psycopg.types.numeric import Int4

PG_TYPE_SQL = ("SELECT typname, typnamespace, typowner, typlen, typbyval, typcategory, typispreferred, "
               "typisdefined, typdelim, typrelid, typelem, typarray FROM pg_type WHERE typtypmod = %s "
               "AND typisdefined = %s")
# (name, SQL, base operation count, statements per operation)
SHAPES = [
    ("select1", "SELECT 1+1", 4000, 1),
    ("pg_type", PG_TYPE_SQL, 300, 1),
    ("series1000", "SELECT i FROM generate_series(1, 1000) AS i", 800, 1),
    ("bytea100", "SELECT b FROM bench_bytes", 1500, 1),
    ("intarr100", "SELECT a FROM bench_arrays", 800, 1),
    ("insert1000", "INSERT INTO bench_ins (a, b) VALUES (%s, %s)", 6, 1000),
]


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def params(name, i):
    if name == "pg_type":
        return (Int4(-1), True)
    if name == "insert1000":
        return (Int4(i), "row %d" % i)
    return None


def run(conn, name, sql, idx, depth):
    """Statements idx on one connection; returns a checksum of what was read."""
    n = 0
    cur = conn.cursor(binary=True)
    if depth <= 1:
        for i in idx:
            cur.execute(sql, params(name, i), prepare=True)
            n += cur.rowcount if name == "insert1000" else len(cur.fetchall())
        return n
    curs = [conn.cursor(binary=True) for _ in range(depth)]
    idx = list(idx)
    with conn.pipeline():
        for g in range(0, len(idx), depth):
            group = idx[g:g + depth]
            for c, i in zip(curs, group):
                c.execute(sql, params(name, i), prepare=True)
            for c, _ in zip(curs, group):
                n += c.rowcount if name == "insert1000" else len(c.fetchall())
    return n


def main(dsn, scale, rnd, conns, depth):
    checksum = 0
    for name, sql, base, batch in SHAPES:
        ops = max(1, int(base * scale))
        clients = [("psycopg_seq", 1)] + ([("psycopg_pipe", depth)] if conns == 1 else [])
        for client, d in clients:
            cs = [psycopg.connect(dsn, autocommit=True) for _ in range(conns)]
            for c in cs:  # prepare and warm outside the timing
                checksum += run(c, name, sql, [0], 1)
            total = ops * batch
            sums, errors = [0] * conns, []

            def work(k):
                try:
                    sums[k] = run(cs[k], name, sql, range(k, total, conns), d)
                except Exception as e:  # reported after the timing, never swallowed
                    errors.append(e)

            c0, t0 = cpu(), time.perf_counter()
            if conns == 1:
                work(0)
            else:
                ts = [threading.Thread(target=work, args=(k,)) for k in range(conns)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
            wall, c = time.perf_counter() - t0, cpu() - c0
            if errors:
                raise errors[0]
            checksum += sum(sums)
            for x in cs:
                x.close()
            print(json.dumps({"round": rnd, "shape": name, "client": client, "conns": conns,
                              "ops_per_s": ops / wall, "cpu_us_per_op": c * 1e6 / ops}), flush=True)
    print("(checksum %d)" % checksum, file=sys.stderr)


if __name__ == "__main__":
    a = sys.argv
    main(a[1], float(a[2]), int(a[3]), int(a[4]) if len(a) > 4 else 1, int(a[5]) if len(a) > 5 else 64)
