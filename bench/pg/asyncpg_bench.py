"""asyncpg on the same shapes as pg_bench.cpp (shapes.hpp).
   python asyncpg_bench.py DSN SCALE ROUND [CONNS=1]  -> one JSON line per shape on stdout.
Client "asyncpg_seq": a prepared statement, `await stmt.fetch()` one after another on each
connection (asyncpg serialises queries per connection); fetch() returns parsed Records.
With CONNS > 1 (asyncpg's own benchmark setup: 10), CONNS coroutines on one event loop,
each with its own connection, share the shape's statements. insert1000 uses executemany
(1000 INSERTs pipelined with ONE Sync: one implicit transaction, not the same commit work
as the other clients' one Sync per statement).
Reports operations/s (wall) and this process's CPU microseconds per operation."""
import asyncio, json, resource, sys, time

import asyncpg

SHAPES = [
    ("select1", "SELECT 1+1", None, 4000),
    ("pg_type", "SELECT typname, typnamespace, typowner, typlen, typbyval, typcategory, typispreferred, "
                "typisdefined, typdelim, typrelid, typelem, typarray FROM pg_type WHERE typtypmod = $1 "
                "AND typisdefined = $2", (-1, True), 300),
    ("series1000", "SELECT i FROM generate_series(1, 1000) AS i", None, 800),
    ("bytea100", "SELECT b FROM bench_bytes", None, 1500),
    ("intarr100", "SELECT a FROM bench_arrays", None, 800),
    ("insert1000", "INSERT INTO bench_ins (a, b) VALUES ($1, $2)", "batch", 6),
]


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def client(conn, stmt, sql, params, idx):
    """Statements idx (row numbers for the insert batch) on one connection."""
    n = 0
    if params == "batch":
        rows = [(i, "row %d" % i) for i in idx]
        for g in range(0, len(rows), 1000):
            await conn.executemany(sql, rows[g:g + 1000])
            n += len(rows[g:g + 1000])
        return n
    for _ in idx:
        n += len(await (stmt.fetch(*params) if params else stmt.fetch()))
    return n


async def main(dsn, scale, rnd, conns):
    for name, sql, params, base in SHAPES:
        ops = max(1, int(base * scale))
        total = ops * (1000 if params == "batch" else 1)
        cs = [await asyncpg.connect(dsn) for _ in range(conns)]
        stmts = []
        for conn in cs:  # prepare and warm outside the timing
            stmt = await conn.prepare(sql) if params != "batch" else None
            if stmt is not None:
                await (stmt.fetch(*params) if params else stmt.fetch())
            stmts.append(stmt)
        c0, t0 = cpu(), time.perf_counter()
        await asyncio.gather(*(client(cs[k], stmts[k], sql, params, range(k, total, conns)) for k in range(conns)))
        wall, c = time.perf_counter() - t0, cpu() - c0
        for conn in cs:
            await conn.close()
        print(json.dumps({"round": rnd, "shape": name, "client": "asyncpg_seq", "conns": conns,
                          "ops_per_s": ops / wall, "cpu_us_per_op": c * 1e6 / ops}), flush=True)


if __name__ == "__main__":
    a = sys.argv
    asyncio.run(main(a[1], float(a[2]), int(a[3]), int(a[4]) if len(a) > 4 else 1))
