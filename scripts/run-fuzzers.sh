#!/usr/bin/env bash
# Runs every libFuzzer binary in BUILD/bin for a few seconds each over its corpus.
#   scripts/run-fuzzers.sh BUILD [SECONDS]
# With FUZZ_RUNS=N set, each target instead runs the first N inputs from seed 1 (at
# most SECONDS, default 60, for slow targets): the same sequence on every machine, so
# a CI run is reproducible (a time cap only shortens it).
set -euo pipefail
BUILD=${1:-build-fuzz}
SECS=${2:-${FUZZ_RUNS:+60}}
SECS=${SECS:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
status=0
for f in "$BUILD"/bin/fuzz_*; do
  case "$f" in *_replay) continue;; esac
  [ -x "$f" ] || continue
  name=$(basename "$f")
  corpus=$(find "$ROOT" -path "$ROOT/build*" -prune -o -type d -path "*/fuzz/corpus/$name" -print | head -1)
  work=$(mktemp -d)
  if [ -n "${FUZZ_RUNS:-}" ]; then echo "== $name ($FUZZ_RUNS runs from seed 1, at most $SECS s)"; else echo "== $name ($SECS s)"; fi
  if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS" -seed=1 -max_total_time="$SECS"); else limit=(-max_total_time="$SECS"); fi
  if ! "$f" "${limit[@]}" -rss_limit_mb=2048 -artifact_prefix="$work/" "$work" ${corpus:+"$corpus"} >"$work/log" 2>&1; then
    echo "FAILED: $name"; tail -40 "$work/log"; status=1
    # Keep what reproduces it: the crash/leak/timeout inputs and the log.
    keep="$BUILD/fuzz-artifacts/$name"
    mkdir -p "$keep"
    cp "$work"/log "$keep/" 2>/dev/null || true
    find "$work" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) \
      -exec cp {} "$keep/" \;
    echo "kept in $keep (replay: $f $keep/crash-...)"
  else
    tail -1 "$work/log"
  fi
  rm -rf "$work"
done
exit $status
