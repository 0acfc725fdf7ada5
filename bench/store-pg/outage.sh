#!/usr/bin/env bash
# Healthy-shard throughput during a one-shard outage: bench/store-pg/outage.py under three
# throwaway clusters with fsync on.
#   bench/store-pg/outage.sh [ROUNDS=3] [SECONDS=8] [extra outage.py args]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
ROUNDS=${1:-3}
SECS=${2:-8}
shift 2 || true
cmake --build "$BUILD" --target inletd inlet-load inlet-pg-admin >/dev/null
cd "$ROOT"
INLET_PG_FSYNC=on exec "$ROOT/store/test/with-pg-shards.sh" 3 /usr/bin/python3 "$ROOT/bench/store-pg/outage.py" \
  --build "$BUILD" --rounds "$ROUNDS" --seconds "$SECS" "$@"
