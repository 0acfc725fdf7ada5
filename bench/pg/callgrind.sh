#!/usr/bin/env bash
# Exact client cost per operation: instructions (valgrind callgrind) of pg_bench run at two
# operation counts, (Ir(2N) - Ir(N)) / N, so process start and connection set-up cancel
# out. Runs under its own throwaway PostgreSQL (scripts/with-postgres.sh).
#   bench/pg/callgrind.sh BIN_DIR "SHAPE..." "CLIENT..." [SCALE]
# e.g. bench/pg/callgrind.sh build/bin "select1 pg_type" "libpq_pipe inlet_pipe_raw inlet_pipe_typed" 0.25
# Prints one line per (shape, client): instructions per operation.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$1" && pwd)
shapes=$2
clients=$3
scale=${4:-0.25}
if [ -z "${INLET_PG_DSN:-}" ]; then
  exec "$here/../../scripts/with-postgres.sh" "$0" "$@"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
base_ops() {
  case $1 in select1) echo 4000 ;; pg_type) echo 300 ;; series1000) echo 800 ;;
    bytea100) echo 1500 ;; intarr100) echo 800 ;; *) echo 6 ;; esac
}
ir() {  # total instructions of one run
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$bin/pg_bench" --rounds 1 \
    --scale "$1" --only "$2" --client "$3" --depth 64 >/dev/null 2>&1
  awk '/^(summary|totals):/ {print $2; exit}' "$out/cg.out"
}
for s in $shapes; do
  for c in $clients; do
    n=$(awk -v b="$(base_ops "$s")" -v k="$scale" 'BEGIN { n = int(b * k); print (n < 1 ? 1 : n) }')
    s2=$(awk -v k="$scale" 'BEGIN { print 2 * k }')
    a=$(ir "$scale" "$s" "$c")
    b=$(ir "$s2" "$s" "$c")
    echo "$s $c $(( (b - a) / n ))"
  done
done
