#!/usr/bin/env bash
# Exact client cost of decoding user types (valgrind callgrind): instructions of
# pg_types_bench's decode-only reads, from read_all's inclusive count over its calls.
#   bench/pg/callgrind_types.sh [BIN_DIR=build/bin]
# Prints instructions per composite of the attach10 read (1000 rows x 10 mail.attach
# composites, decoded 6 times: 4 decode-only reps + 2 end-to-end) and per row of the
# pg_type read by name (decoded 40 times). Runs under its own throwaway PostgreSQL.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:-$here/../../build/bin}" && pwd)
if [ -z "${INLET_PG_DSN:-}" ]; then
  exec "$here/../../scripts/with-postgres.sh" "$0" "$bin"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin/pg_types_bench" --setup-only
valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$bin/pg_types_bench" --no-setup --rounds 1 --reps 4 \
  >"$out/stdout" 2>/dev/null
rows=$(awk '/pg_type rows:/ {gsub(/;/, "", $3); print $3}' "$out/stdout")
callgrind_annotate --inclusive=yes "$out/cg.out" 2>/dev/null | awk -v rows="$rows" '
  /read_all<std::tuple<long/ { gsub(",", "", $1); printf "attach10 read_all: %d instructions, %.1f per composite\n", $1, $1 / 6 / 10000 }
  /read_all<\(anonymous namespace\)::pg_type_row/ { gsub(",", "", $1); printf "pg_type read_all (by name): %d instructions, %.1f per row (%d rows x 40 reads)\n", $1, $1 / 40 / rows, rows }'
