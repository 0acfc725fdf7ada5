#!/usr/bin/env bash
# inlet::pg vs raw libpq (sync and pipelined) and every peer driver we can run, on ONE
# throwaway PostgreSQL, rounds alternating between the programs:
#   asyncpg and psycopg 3 (pip, into a venv under the build dir), libpqxx (Debian's
#   libpqxx-dev, the optional CMake target pqxx_bench), tokio-postgres (cargo, Cargo.lock
#   committed), pgx v5 (Go module proxy, go.sum committed).
# Each round runs every program once at one connection and once at CLIENTS concurrent
# connections (asyncpg's benchmark setup: 10). Writes docs/benchmarks/data/pg.json,
# prints Markdown tables and draws docs/benchmarks/pg.png.
#   bench/pg/run.sh [ROUNDS=3] [SCALE=1] [DEPTH=64] [CLIENTS=10]
# Environment: BUILD (default build/, must be configured), PEERS (default
# "asyncpg psycopg pqxx tokio pgx"), OUT_JSON (default docs/benchmarks/data/pg.json),
# PLOT (default docs/benchmarks/pg.png; empty: no plot).
# MALLOC_TUNABLES (default "glibc.malloc.trim_threshold=33554432"; empty: glibc's defaults)
# is exported as GLIBC_TUNABLES to every program alike (Go's allocator ignores it). With
# glibc's default 128 KiB trim threshold, freeing a 100 KB result at the top of the heap
# returns the memory with brk() and the next result takes it back (page faults): ~34 brk
# calls per bytea100 query in whichever client's heap happens to be laid out that way, a
# 2-4x CPU swing between runs (docs/benchmarks/pg.md, "The bytea100 anomaly").
# A peer that fails to build or install is skipped with the reason printed; the run goes on.
# Versions are pinned (pip ==, Cargo.lock, go.sum) so that a rerun measures the same drivers.
# Bounded: every program runs a fixed count of operations per shape (x SCALE) and each
# program run is killed after 600 s.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/pg
BUILD=${BUILD:-$ROOT/build}
ROUNDS=${1:-3}
SCALE=${2:-1}
DEPTH=${3:-64}
CLIENTS=${4:-10}
PEERS=${PEERS:-asyncpg psycopg pqxx tokio pgx}
OUT_JSON=${OUT_JSON:-$ROOT/docs/benchmarks/data/pg.json}
PLOT=${PLOT-$ROOT/docs/benchmarks/pg.png}
MALLOC_TUNABLES=${MALLOC_TUNABLES-glibc.malloc.trim_threshold=33554432}
mkdir -p "$BUILD/bin"
cmake --build "$BUILD" --target pg_bench >/dev/null

skip() { echo "run.sh: skipping $1: $2" >&2; }
want() { [[ " $PEERS " == *" $1 "* ]]; }

# ---- build / install the peers (each optional) ------------------------------------------
PROGS=()   # "name|command prefix" ; each is called as PREFIX DSN SCALE ROUND CONNS [DEPTH]
VENV=$BUILD/pgvenv
if want asyncpg || want psycopg; then
  if [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >/dev/null 2>&1; then
    if want asyncpg; then
      if "$VENV/bin/pip" install -q "asyncpg==0.32.0" >/dev/null 2>&1; then
        PROGS+=("asyncpg|$VENV/bin/python $HERE/asyncpg_bench.py")
      else skip asyncpg "pip install asyncpg==0.32.0 failed"; fi
    fi
    if want psycopg; then
      if "$VENV/bin/pip" install -q "psycopg[binary]==3.3.9" >/dev/null 2>&1; then
        PROGS+=("psycopg|$VENV/bin/python $HERE/psycopg/psycopg_bench.py")
      else skip psycopg "pip install psycopg[binary]==3.3.9 failed"; fi
    fi
  else
    skip "asyncpg psycopg" "python3 -m venv failed"
  fi
fi
if want pqxx; then
  if cmake --build "$BUILD" --target pqxx_bench >"$BUILD/pqxx_build.log" 2>&1; then
    PROGS+=("pqxx|$BUILD/bin/pqxx_bench")
  else skip pqxx "target pqxx_bench did not build (libpqxx-dev missing? see $BUILD/pqxx_build.log)"; fi
fi
if want tokio; then
  if command -v cargo >/dev/null 2>&1 && cargo build --release --locked -q \
      --manifest-path "$HERE/tokio-postgres/Cargo.toml" --target-dir "$BUILD/cargo" >"$BUILD/tokio_build.log" 2>&1; then
    PROGS+=("tokio|$BUILD/cargo/release/tokio_pg_bench")
  else skip tokio-postgres "cargo build failed or cargo missing (see $BUILD/tokio_build.log)"; fi
fi
if want pgx; then
  if command -v go >/dev/null 2>&1 && (cd "$HERE/pgx" && go build -o "$BUILD/bin/pgx_bench" .) >"$BUILD/pgx_build.log" 2>&1; then
    PROGS+=("pgx|$BUILD/bin/pgx_bench")
  else skip pgx "go build failed or go missing (see $BUILD/pgx_build.log)"; fi
fi
echo "run.sh: peers: ${PROGS[*]:-none}" | sed "s|$ROOT/||g" >&2

OUT=$BUILD/pgbench-run
rm -rf "$OUT"
mkdir -p "$OUT"
printf '%s\n' "${PROGS[@]}" > "$OUT/progs"
export ROUNDS SCALE DEPTH CLIENTS OUT BUILD MALLOC_TUNABLES
echo "run.sh: GLIBC_TUNABLES=$MALLOC_TUNABLES for every client" >&2
"$ROOT/scripts/with-postgres.sh" bash -c '
  if [ -n "$MALLOC_TUNABLES" ]; then export GLIBC_TUNABLES=$MALLOC_TUNABLES; fi
  set -euo pipefail
  run() {  # run LOG COMMAND...: bounded, a failing peer is reported and skipped
    if ! timeout 600 "${@:2}" 2>"$1"; then echo "run.sh: ${2##*/} failed (see $1)" >&2; fi
  }
  for r in $(seq 1 "$ROUNDS"); do
    echo "round $r / $ROUNDS" >&2
    run "$OUT/cpp_r$r.log" "$BUILD/bin/pg_bench" --rounds 1 --scale "$SCALE" --depth "$DEPTH" --json "$OUT/cpp_r$r.json" >/dev/null
    while IFS="|" read -r name cmd; do
      [ -n "$name" ] || continue
      run "$OUT/${name}_r$r.log" $cmd "$INLET_PG_DSN" "$SCALE" "$r" 1 "$DEPTH" > "$OUT/${name}_r$r.jsonl"
    done < "$OUT/progs"
    run "$OUT/cppN_r$r.log" "$BUILD/bin/pg_bench" --clients "$CLIENTS" --round "$r" --scale "$SCALE" --depth "$DEPTH" \
      --json "$OUT/cppN_r$r.jsonl" >/dev/null
    while IFS="|" read -r name cmd; do
      [ -n "$name" ] || continue
      run "$OUT/${name}N_r$r.log" $cmd "$INLET_PG_DSN" "$SCALE" "$r" "$CLIENTS" "$DEPTH" > "$OUT/${name}N_r$r.jsonl"
    done < "$OUT/progs"
  done'
mkdir -p "$(dirname "$OUT_JSON")"
python3 "$HERE/merge.py" "$OUT_JSON" "$OUT"/cpp_r*.json "$OUT"/*.jsonl
if [ -n "$PLOT" ]; then
  /usr/bin/python3 "$HERE/plot.py" "$OUT_JSON" "$PLOT" || skip plot "matplotlib missing (scripts/install-bench-deps.sh)"
fi
