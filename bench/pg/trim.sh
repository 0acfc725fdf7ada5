#!/usr/bin/env bash
# The bytea100 anomaly (docs/benchmarks/pg.md): glibc's heap trimming with large results.
# Runs pg_bench's pipelined clients on one shape, alternating glibc's default malloc
# settings with a raised trim threshold, ROUNDS times each, under one throwaway
# PostgreSQL; prints per run the client CPU per operation and the brk() calls per
# operation (counted in a second run of the same configuration under strace, since
# strace slows the process it counts).
#   bench/pg/trim.sh BIN_DIR [SHAPE=bytea100] [ROUNDS=3] [DEPTH=64] [CLIENTS="libpq_pipe inlet_pipe_raw inlet_pipe_typed inlet_batch"]
# Bounded: each run is a fixed count of operations (pg_bench's base count for the shape).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$1" && pwd)
shape=${2:-bytea100}
rounds=${3:-3}
depth=${4:-64}
clients=${5:-libpq_pipe inlet_pipe_raw inlet_pipe_typed inlet_batch}
tunable=glibc.malloc.trim_threshold=33554432
if [ -z "${INLET_PG_DSN:-}" ]; then
  exec "$here/../../scripts/with-postgres.sh" "$0" "$@"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# pg_bench creates the tables (bench_bytes, ...) on every start; one run to warm the server.
# ops: pg_bench's operation count for the shape at scale 1 (base_ops in pg_bench.cpp).
"$bin/pg_bench" --rounds 1 --scale 0.1 --only "$shape" --client libpq_pipe --depth "$depth" >/dev/null 2>&1
case $shape in select1) ops=4000 ;; pg_type) ops=300 ;; series1000) ops=800 ;;
  bytea100) ops=1500 ;; intarr100) ops=800 ;; *) ops=6 ;; esac
printf '| round | malloc | client | CPU us/op | brk calls/op |\n|---|---|---|---:|---:|\n'
for r in $(seq 1 "$rounds"); do
  for mode in default raised; do
    t=""; [ "$mode" = raised ] && t=$tunable
    for c in $clients; do
      cpu=$(GLIBC_TUNABLES=$t "$bin/pg_bench" --rounds 1 --only "$shape" --client "$c" --depth "$depth" 2>/dev/null |
            awk -F'|' -v c="$c" '$3 ~ " "c" " {gsub(/ /, "", $5); print $5}')
      GLIBC_TUNABLES=$t strace -f -c -e trace=brk -o "$out/st" "$bin/pg_bench" --rounds 1 --only "$shape" \
        --client "$c" --depth "$depth" >/dev/null 2>&1
      brk=$(awk '$NF == "brk" {print $4}' "$out/st")
      printf '| %s | %s | %s | %s | %s |\n' "$r" "$mode" "$c" "$cpu" \
        "$(awk -v b="${brk:-0}" -v n="$ops" 'BEGIN {printf "%.1f", b / n}')"
    done
  done
done
