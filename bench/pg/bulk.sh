#!/usr/bin/env bash
# Bulk transfers on ONE throwaway PostgreSQL, each (task, client) in its own process (so
# that peak RSS is its own), clients in a rotating order per round:
#   copy_wide   COPY in of 9 KB bytea rows: inlet, raw libpq PQputCopyData, asyncpg copy_records_to_table
#   copy_narrow COPY in of (int4, int8, text) rows: the same three
#   stream      SELECT generate_series(1, N): inlet buffered / stream / cursor, libpq buffered /
#               single-row mode, asyncpg buffered / cursor
# Prints a Markdown table of medians with ratios (COPY: against the libpq loop; stream:
# against inlet's buffered read) and writes the samples to OUT_JSON.
#   bench/pg/bulk.sh [ROUNDS=3] [WIDE_ROWS=20000] [NARROW_ROWS=1000000] [STREAM_ROWS=10000000]
# Environment: BUILD (default build/), PEERS ("asyncpg" or empty), OUT_JSON (default
# docs/benchmarks/data/pg_bulk.json), MALLOC_TUNABLES (as run.sh).
# Bounded: fixed row counts, each process killed after 600 s.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/pg
BUILD=${BUILD:-$ROOT/build}
ROUNDS=${1:-3}
WIDE_ROWS=${2:-20000}
NARROW_ROWS=${3:-1000000}
STREAM_ROWS=${4:-10000000}
PEERS=${PEERS-asyncpg}
OUT_JSON=${OUT_JSON:-$ROOT/docs/benchmarks/data/pg_bulk.json}
MALLOC_TUNABLES=${MALLOC_TUNABLES-glibc.malloc.trim_threshold=33554432}
cmake --build "$BUILD" --target pg_bulk_bench >/dev/null
PY=""
VENV=$BUILD/pgvenv
if [[ " $PEERS " == *" asyncpg "* ]]; then
  if { [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >/dev/null 2>&1; } &&
     "$VENV/bin/pip" install -q "asyncpg==0.32.0" >/dev/null 2>&1; then
    PY=$VENV/bin/python
  else echo "bulk.sh: skipping asyncpg: venv or pip install asyncpg==0.32.0 failed" >&2; fi
fi
OUT=$BUILD/pgbulk-run
rm -rf "$OUT"; mkdir -p "$OUT"
export ROUNDS WIDE_ROWS NARROW_ROWS STREAM_ROWS OUT BUILD PY HERE MALLOC_TUNABLES
"$ROOT/scripts/with-postgres.sh" bash -c '
  set -euo pipefail
  if [ -n "$MALLOC_TUNABLES" ]; then export GLIBC_TUNABLES=$MALLOC_TUNABLES; fi
  one() {  # one TASK CLIENT ROWS ROUND
    local log=$OUT/$1_$2_r$4.log
    if [[ $2 == asyncpg* ]]; then
      [ -n "$PY" ] || return 0
      timeout 600 "$PY" "$HERE/bulk_asyncpg.py" "$INLET_PG_DSN" "$1" "$2" "$3" "$4" 2>"$log" >>"$OUT/bulk.jsonl" \
        || echo "bulk.sh: $1/$2 failed (see $log)" >&2
    else
      timeout 600 "$BUILD/bin/pg_bulk_bench" --task "$1" --client "$2" --rows "$3" --round "$4" 2>"$log" >>"$OUT/bulk.jsonl" \
        || echo "bulk.sh: $1/$2 failed (see $log)" >&2
    fi
  }
  rotate() {  # rotate K WORDS...: the words, starting at the K-th (mod count)
    local k=$1; shift; local a=("$@"); local n=${#a[@]}
    for i in $(seq 0 $((n - 1))); do echo "${a[$(((i + k) % n))]}"; done
  }
  for r in $(seq 1 "$ROUNDS"); do
    echo "round $r / $ROUNDS" >&2
    for c in $(rotate "$r" inlet libpq asyncpg); do one copy_wide "$c" "$WIDE_ROWS" "$r"; done
    for c in $(rotate "$r" inlet libpq asyncpg); do one copy_narrow "$c" "$NARROW_ROWS" "$r"; done
    for c in $(rotate "$r" inlet_buffered inlet_stream inlet_cursor libpq_buffered libpq_single_row \
                 asyncpg_buffered asyncpg_cursor); do
      one stream "$c" "$STREAM_ROWS" "$r"
    done
  done'
mkdir -p "$(dirname "$OUT_JSON")"
python3 - "$OUT/bulk.jsonl" "$OUT_JSON" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump(rows, open(sys.argv[2], "w"), indent=1)
ref = {"copy_wide": "libpq", "copy_narrow": "libpq", "stream": "inlet_buffered"}
order = ["inlet", "libpq", "asyncpg", "inlet_buffered", "inlet_stream", "inlet_cursor",
         "libpq_buffered", "libpq_single_row", "asyncpg_buffered", "asyncpg_cursor"]
print("| task | client | rows | rows/s (median) | vs %s | per-round ratios | peak RSS MB |" % "ref")
print("|---|---|---:|---:|---:|---|---:|")
for task in ["copy_wide", "copy_narrow", "stream"]:
    by = {}
    for r in rows:
        if r["task"] == task:
            by.setdefault(r["client"], []).append(r)
    base = {r["round"]: r["rows_per_s"] for r in by.get(ref[task], [])}
    for c in sorted(by, key=order.index):
        s = by[c]
        med = statistics.median(x["rows_per_s"] for x in s)
        ratios = [x["rows_per_s"] / base[x["round"]] for x in s if x["round"] in base]
        rss = statistics.median(x["peak_rss_mb"] for x in s)
        print("| %s | %s | %d | %.0f | %s | %s | %.0f |" % (
            task, c, s[0]["rows"], med,
            "%.2fx" % statistics.median(ratios) if ratios else "-",
            " ".join("%.2f" % x for x in ratios), rss))
    print("| | (ratio: rows/s over %s's in the same round) | | | | | |" % ref[task])
PY
