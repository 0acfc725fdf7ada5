#!/usr/bin/env bash
# The store-pg figures in one run: four throwaway clusters (fsync and synchronous_commit
# on) under store/test/with-pg-shards.sh, then bench/store-pg/run.py (see there).
#   bench/store-pg/run.sh [ROUNDS=3] [MESSAGES=30000] [extra run.py args]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
ROUNDS=${1:-3}
MESSAGES=${2:-30000}
shift 2 || true
cmake --build "$BUILD" --target inletd inlet-load inlet-pg-admin store_pg_bench store_pg_copy_ref >/dev/null
cd "$ROOT"
INLET_PG_FSYNC=on exec "$ROOT/store/test/with-pg-shards.sh" 4 /usr/bin/python3 "$ROOT/bench/store-pg/run.py" \
  --build "$BUILD" --rounds "$ROUNDS" --messages "$MESSAGES" "$@"
