#!/usr/bin/env bash
# Bucket moves: rebalance time for empty buckets (batched vs one bucket per step) and put
# latency while a rebalance runs under load: bench/store-pg/rebalance.py under four
# throwaway clusters with fsync on.
#   bench/store-pg/rebalance.sh [SECONDS=10] [extra rebalance.py args]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
SECS=${1:-10}
shift 1 || true
cmake --build "$BUILD" --target inletd inlet-pg-admin store_pg_bench >/dev/null
cd "$ROOT"
INLET_PG_FSYNC=on exec "$ROOT/store/test/with-pg-shards.sh" 4 /usr/bin/python3 "$ROOT/bench/store-pg/rebalance.py" \
  --build "$BUILD" --seconds "$SECS" "$@"
