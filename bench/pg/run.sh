#!/usr/bin/env bash
# inlet::pg vs raw libpq (sync and pipelined) and asyncpg, on one throwaway PostgreSQL,
# rounds alternating between the programs. Writes docs/benchmarks/data/pg.json and prints
# a Markdown table.
#   bench/pg/run.sh [ROUNDS=5] [SCALE=1] [DEPTH=64]
# Needs a configured build dir (BUILD, default build/). asyncpg is pip-installed into a
# venv under the build dir; if that fails the table simply has no asyncpg rows.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
ROUNDS=${1:-5}
SCALE=${2:-1}
DEPTH=${3:-64}
cmake --build "$BUILD" --target pg_bench >/dev/null

VENV=$BUILD/pgvenv
HAVE_ASYNCPG=0
if [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"; then
  if "$VENV/bin/pip" install -q asyncpg >/dev/null 2>&1; then HAVE_ASYNCPG=1; fi
fi

OUT=$BUILD/pgbench-run
rm -rf "$OUT"
mkdir -p "$OUT"
export ROUNDS SCALE DEPTH OUT HAVE_ASYNCPG VENV BUILD ROOT
"$ROOT/scripts/with-postgres.sh" bash -c '
  set -euo pipefail
  for r in $(seq 1 "$ROUNDS"); do
    "$BUILD/bin/pg_bench" --rounds 1 --scale "$SCALE" --depth "$DEPTH" --json "$OUT/cpp_r$r.json" \
      >/dev/null 2>"$OUT/cpp_r$r.log"
    if [ "$HAVE_ASYNCPG" = 1 ]; then
      "$VENV/bin/python" "$ROOT/bench/pg/asyncpg_bench.py" "$INLET_PG_DSN" "$SCALE" "$r" > "$OUT/asyncpg_r$r.jsonl"
    fi
  done'
mkdir -p "$ROOT/docs/benchmarks/data"
python3 "$ROOT/bench/pg/merge.py" "$ROOT/docs/benchmarks/data/pg.json" "$OUT"/cpp_r*.json "$OUT"/asyncpg_r*.jsonl 2>/dev/null \
  || python3 "$ROOT/bench/pg/merge.py" "$ROOT/docs/benchmarks/data/pg.json" "$OUT"/cpp_r*.json
