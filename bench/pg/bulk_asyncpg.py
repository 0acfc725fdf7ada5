"""asyncpg on the tasks of bulk_bench.cpp (same tables, same rows, same query).
   python bulk_asyncpg.py DSN TASK CLIENT ROWS ROUND  -> one JSON line on stdout.
copy_wide / copy_narrow, client "asyncpg": copy_records_to_table (binary COPY).
stream, client "asyncpg_cursor": `async for` over conn.cursor(q, prefetch=10000) in a
transaction (DECLARE + FETCH 10000); client "asyncpg_buffered": conn.fetch(q).
The tables are made by bulk_bench.cpp's setup, repeated here; rows are made before the
clock starts. Reports rows/s (wall), CPU seconds and this process's peak RSS."""
import asyncio, json, random, resource, sys, time

import asyncpg

SETUP = ("DROP TABLE IF EXISTS bulk_wide, bulk_narrow;"
         "CREATE UNLOGGED TABLE bulk_wide (id int4, body bytea);"
         "ALTER TABLE bulk_wide ALTER body SET STORAGE EXTERNAL;"
         "CREATE UNLOGGED TABLE bulk_narrow (id int4, n int8, t text)")
STREAM_SQL = "SELECT generate_series(1, $1::int4)"


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def main(dsn, task, client, rows, rnd):
    admin = await asyncpg.connect(dsn)
    await admin.execute(SETUP)
    conn = await asyncpg.connect(dsn)
    if task == "copy_wide":
        rng = random.Random(42)
        bodies = [bytes(rng.getrandbits(8) for _ in range(9 * 1024)) for _ in range(16)]
        data = [(i, bodies[i % 16]) for i in range(rows)]
        table, cols = "bulk_wide", ["id", "body"]
    elif task == "copy_narrow":
        data = [(i, i * 7919, "row %d" % i) for i in range(rows)]
        table, cols = "bulk_narrow", ["id", "n", "t"]
    t0, c0 = time.perf_counter(), cpu()
    if task.startswith("copy"):
        await conn.copy_records_to_table(table, records=data, columns=cols)
        n = await admin.fetchval("SELECT count(*) FROM " + table)
        ok = n == rows
    elif client == "asyncpg_cursor":
        n = s = 0
        async with conn.transaction():
            async for r in conn.cursor(STREAM_SQL, rows, prefetch=10000):
                s += r[0]
                n += 1
        ok = n == rows and s == rows * (rows + 1) // 2
    else:
        res = await conn.fetch(STREAM_SQL, rows)
        s = sum(r[0] for r in res)
        n = len(res)
        ok = n == rows and s == rows * (rows + 1) // 2
    wall, c = time.perf_counter() - t0, cpu() - c0
    if not ok:
        sys.exit("bulk_asyncpg: %s/%s: wrong rows" % (task, client))
    print(json.dumps({"round": rnd, "task": task, "client": client, "rows": rows,
                      "rows_per_s": round(rows / wall), "cpu_s": round(c, 3),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
    await conn.close()
    await admin.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
