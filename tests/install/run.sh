#!/usr/bin/env bash
# The installed package, as a user would use it: `cmake --install` of BUILD into a fresh
# prefix, then the consumer project (its own CMake project, outside inlet's tree) is
# configured with find_package(inlet COMPONENTS <c>), built and run, for each component
# given. The pg consumer runs against INLET_PG_DSN (start it under scripts/with-postgres.sh).
#   tests/install/run.sh BUILD_DIR pg mime
set -euo pipefail
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inlet-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" --component dev >"$work/install.log" 2>&1 \
  || { cat "$work/install.log" >&2; exit 1; }
echo "consumer: installed the dev component into a fresh prefix ($(du -sk "$work/prefix" | cut -f1) KiB)"

for c in "$@"; do
  cmake -S "$here/consumer" -B "$work/build-$c" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCOMPONENT="$c" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure-$c.log" 2>&1 \
    || { cat "$work/configure-$c.log" >&2; exit 1; }
  cmake --build "$work/build-$c" >"$work/build-$c.log" 2>&1 \
    || { cat "$work/build-$c.log" >&2; exit 1; }
  case "$c" in
    pg) "$work/build-$c/pg_consumer" "${INLET_PG_DSN:?run under scripts/with-postgres.sh}" ;;
    *) "$work/build-$c/${c}_consumer" ;;
  esac
  echo "consumer: inlet::$c found, built and run"
done
