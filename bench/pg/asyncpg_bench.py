"""asyncpg on the same shapes as pg_bench.cpp (shapes.hpp), one connection, sequential.
   python asyncpg_bench.py DSN SCALE ROUND  -> one JSON line per shape on stdout.
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


async def main(dsn, scale, rnd):
    for name, sql, params, base in SHAPES:
        ops = max(1, int(base * scale))
        conn = await asyncpg.connect(dsn)
        stmt = await conn.prepare(sql) if params != "batch" else None
        rows = [(i, "row %d" % i) for i in range(1000)]
        if stmt is not None:  # warm
            await (stmt.fetch(*params) if params else stmt.fetch())
        c0, t0 = cpu(), time.perf_counter()
        n = 0
        for _ in range(ops):
            if params == "batch":
                await conn.executemany(sql, rows)
            elif params:
                n += len(await stmt.fetch(*params))
            else:
                n += len(await stmt.fetch())
        wall, c = time.perf_counter() - t0, cpu() - c0
        await conn.close()
        print(json.dumps({"round": rnd, "shape": name, "client": "asyncpg_seq",
                          "ops_per_s": ops / wall, "cpu_us_per_op": c * 1e6 / ops}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3])))
