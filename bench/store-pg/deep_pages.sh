#!/usr/bin/env bash
# Deep pages over three shards, in order vs shuffled: bench/store-pg/deep_pages.py under
# three throwaway clusters.
#   bench/store-pg/deep_pages.sh [ROUNDS=3] [MESSAGES=20000] [extra deep_pages.py args]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
ROUNDS=${1:-3}
MESSAGES=${2:-20000}
shift 2 || true
cmake --build "$BUILD" --target inletd inlet-load >/dev/null
cd "$ROOT"
exec "$ROOT/store/test/with-pg-shards.sh" 3 /usr/bin/python3 "$ROOT/bench/store-pg/deep_pages.py" \
  --build "$BUILD" --rounds "$ROUNDS" --messages "$MESSAGES" "$@"
