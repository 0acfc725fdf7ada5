#!/usr/bin/env bash
# Group commit across a network: bench/store-pg/latency.py against one throwaway cluster
# (fsync and synchronous_commit on) reached through delay_proxy.
#   bench/store-pg/latency.sh [ROUNDS=3] [SECONDS=8] [extra latency.py args]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
ROUNDS=${1:-3}
SECONDS_EACH=${2:-8}
shift 2 || true
cmake --build "$BUILD" --target store_pg_bench delay_proxy >/dev/null
cd "$ROOT"
INLET_PG_FSYNC=on exec "$ROOT/store/test/with-pg-shards.sh" 1 /usr/bin/python3 "$ROOT/bench/store-pg/latency.py" \
  --build "$BUILD" --rounds "$ROUNDS" --seconds "$SECONDS_EACH" "$@"
