#!/usr/bin/env bash
# inlet::pg's typed reads of user-defined types against its raw read and asyncpg's record
# decoding, on ONE throwaway PostgreSQL, rounds alternating between the two programs
# (the order flips every round; inside pg_types_bench typed and raw alternate too):
#   attach10  1000 rows, each (int8, text, mail.attach[] of 10 composites)
#   pg_type   OZO's pg_type query (2 parameters, ~600 rows x 12 columns), rows by name
# Prints a Markdown table (medians of per-round ratios, [min..max]) and writes the
# samples to OUT_JSON.
#   bench/pg/types.sh [ROUNDS=7] [REPS=20]
# Environment: BUILD (default build/, configured), OUT_JSON (default
# docs/benchmarks/data/pg_types.json), MALLOC_TUNABLES (as run.sh, the same for both).
# asyncpg is pip-installed (pinned) into the venv run.sh and bulk.sh use; without it the
# run still measures inlet's typed vs raw reads.
# Bounded: REPS requests per shape, client and round (x4 for pg_type); each program run
# is killed after 600 s.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/pg
BUILD=${BUILD:-$ROOT/build}
ROUNDS=${1:-7}
REPS=${2:-20}
OUT_JSON=${OUT_JSON:-$ROOT/docs/benchmarks/data/pg_types.json}
MALLOC_TUNABLES=${MALLOC_TUNABLES-glibc.malloc.trim_threshold=33554432}
cmake --build "$BUILD" --target pg_types_bench >/dev/null
PY=""
VENV=$BUILD/pgvenv
if { [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >/dev/null 2>&1; } &&
   "$VENV/bin/pip" install -q "asyncpg==0.32.0" >/dev/null 2>&1; then
  PY=$VENV/bin/python
else echo "types.sh: skipping asyncpg: venv or pip install asyncpg==0.32.0 failed" >&2; fi
OUT=$BUILD/pgtypes-run
rm -rf "$OUT"; mkdir -p "$OUT"
export ROUNDS REPS OUT BUILD PY HERE MALLOC_TUNABLES
"$ROOT/scripts/with-postgres.sh" bash -c '
  set -euo pipefail
  if [ -n "$MALLOC_TUNABLES" ]; then export GLIBC_TUNABLES=$MALLOC_TUNABLES; fi
  "$BUILD/bin/pg_types_bench" --setup-only
  inlet() {
    timeout 600 "$BUILD/bin/pg_types_bench" --no-setup --e2e-only --rounds 1 --round "$1" --reps "$REPS" \
      --json "$OUT/types.jsonl" >"$OUT/inlet_r$1.txt" 2>&1 || echo "types.sh: pg_types_bench failed (see $OUT/inlet_r$1.txt)" >&2
  }
  apg() {
    [ -n "$PY" ] || return 0
    timeout 600 "$PY" "$HERE/asyncpg_types_bench.py" "$INLET_PG_DSN" "$1" "$REPS" "$OUT/types.jsonl" \
      2>"$OUT/asyncpg_r$1.log" || echo "types.sh: asyncpg failed (see $OUT/asyncpg_r$1.log)" >&2
  }
  for r in $(seq 1 "$ROUNDS"); do
    echo "round $r / $ROUNDS" >&2
    if [ $((r % 2)) = 1 ]; then inlet "$r"; apg "$r"; else apg "$r"; inlet "$r"; fi
  done'
mkdir -p "$(dirname "$OUT_JSON")"
python3 "$HERE/types_merge.py" "$OUT_JSON" "$OUT/types.jsonl"
