"""asyncpg on the end-to-end shapes of types_bench.cpp (--e2e-only), for bench/pg/types.sh.
   python asyncpg_types_bench.py DSN ROUND REPS JSON_FILE
Shapes (same SQL text as types_bench.cpp; the schema and rows were made by
`pg_types_bench --setup-only`):
  attach10  SELECT mid, st_id, attaches FROM mail.messages: 1000 rows, each with an array
            of 10 mail.attach composites. asyncpg decodes each composite into a Record
            (its native composite codec, binary, found by its type introspection).
  pg_type   OZO's pg_type query, 2 parameters: Records, whose fields are read by name.
Each request is `await stmt.fetch(...)` on a prepared statement, one after another on one
connection. Client "asyncpg": fetch() alone (every value is already decoded into a
Python object then: the Records, the composites' Records, str and int). Client
"asyncpg_read": fetch() and then every field of every row read back (by name for
pg_type), what a program does next; it costs Python time the C++ struct read does not
have. Prepared and warmed (type introspection included) before the clock. REPS requests for attach10, 4 x REPS for
pg_type, like types_bench. Appends one JSON line per shape to JSON_FILE: wall time and
this process's CPU (getrusage, user + sys) per request."""
import asyncio, json, resource, sys, time

import asyncpg

ATTACH_SQL = "SELECT mid, st_id, attaches FROM mail.messages"
PG_TYPE_SQL = ("SELECT typname::text, typnamespace, typowner, typlen, typbyval, typcategory::text, typispreferred, "
               "typisdefined, typdelim::text, typrelid, typelem, typarray FROM pg_type WHERE typtypmod = $1 AND "
               "typisdefined = $2")
PG_TYPE_NAMES = ("typname", "typnamespace", "typowner", "typlen", "typbyval", "typcategory", "typispreferred",
                 "typisdefined", "typdelim", "typrelid", "typelem", "typarray")


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def attach10_fetch(stmt):
    rows = await stmt.fetch()
    return len(rows), len(rows)


async def pg_type_fetch(stmt):
    rows = await stmt.fetch(-1, True)
    return len(rows), len(rows)


async def attach10(stmt):
    rows = await stmt.fetch()
    n = 0
    for mid, st_id, attaches in rows:
        n += mid + len(st_id)
        for a in attaches:  # a Record: filename, type, size
            n += len(a[0]) + len(a[1]) + a[2]
    return len(rows), n


async def pg_type(stmt):
    rows = await stmt.fetch(-1, True)
    n = 0
    for r in rows:
        for name in PG_TYPE_NAMES:
            n += 1 if r[name] is not None else 0
    return len(rows), n


async def main(dsn, rnd, reps, out):
    conn = await asyncpg.connect(dsn)
    s_attach, s_type = await conn.prepare(ATTACH_SQL), await conn.prepare(PG_TYPE_SQL)
    shapes = [("attach10", "asyncpg", s_attach, attach10_fetch, reps),
              ("attach10", "asyncpg_read", s_attach, attach10, reps),
              ("pg_type", "asyncpg", s_type, pg_type_fetch, 4 * reps),
              ("pg_type", "asyncpg_read", s_type, pg_type, 4 * reps)]
    checksum = 0
    with open(out, "a") as f:
        for name, client, stmt, fn, ops in shapes:
            for _ in range(2):  # warm
                await fn(stmt)
            c0, t0 = cpu(), time.perf_counter()
            for _ in range(ops):
                nrows, n = await fn(stmt)
                checksum += n
            wall, c = time.perf_counter() - t0, cpu() - c0
            f.write(json.dumps({"round": rnd, "shape": name, "client": client, "rows": nrows,
                                "wall_us_per_op": round(wall * 1e6 / ops, 2),
                                "cpu_us_per_op": round(c * 1e6 / ops, 2)}) + "\n")
    await conn.close()
    print("asyncpg_types_bench: checksum %d" % checksum, file=sys.stderr)


if __name__ == "__main__":
    a = sys.argv
    asyncio.run(main(a[1], int(a[2]), int(a[3]), a[4]))
