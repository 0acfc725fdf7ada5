#!/usr/bin/env bash
# Runs every libFuzzer binary in BUILD/bin for a few seconds each over its corpus.
#   scripts/run-fuzzers.sh BUILD [SECONDS]
# With FUZZ_RUNS=N set, each target instead runs the first N inputs from seed 1 (at
# most SECONDS, default 60, for slow targets): the same sequence on every machine, so
# a CI run is reproducible (a time cap only shortens it). Targets run FUZZ_JOBS at a
# time (default: the number of cores); each is single-threaded.
set -euo pipefail
BUILD=${1:-build-fuzz}
SECS=${2:-${FUZZ_RUNS:+60}}
SECS=${SECS:-10}
JOBS=${FUZZ_JOBS:-$(nproc)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# One target: its summary (and on failure the log tail) goes to $results/NAME.out, its
# exit status to $results/NAME.rc.
run_one() {
  local f=$1 name corpus work limit rc=0
  name=$(basename "$f")
  corpus=$(find "$ROOT" -path "$ROOT/build*" -prune -o -type d -path "*/fuzz/corpus/$name" -print | head -1)
  work=$(mktemp -d)
  {
    if [ -n "${FUZZ_RUNS:-}" ]; then
      echo "== $name ($FUZZ_RUNS runs from seed 1, at most $SECS s)"
      limit=(-runs="$FUZZ_RUNS" -seed=1 -max_total_time="$SECS")
    else
      echo "== $name ($SECS s)"
      limit=(-max_total_time="$SECS")
    fi
    if ! "$f" "${limit[@]}" -rss_limit_mb=2048 -artifact_prefix="$work/" "$work" ${corpus:+"$corpus"} >"$work/log" 2>&1; then
      rc=1
      echo "FAILED: $name"; tail -40 "$work/log"
      # Keep what reproduces it: the crash/leak/timeout inputs and the log.
      local keep="$BUILD/fuzz-artifacts/$name"
      mkdir -p "$keep"
      cp "$work"/log "$keep/" 2>/dev/null || true
      find "$work" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) \
        -exec cp {} "$keep/" \;
      echo "kept in $keep (replay: $f $keep/crash-...)"
    else
      tail -1 "$work/log"
    fi
  } >"$results/$name.out" 2>&1
  echo $rc >"$results/$name.rc"
  rm -rf "$work"
}

targets=()
for f in "$BUILD"/bin/fuzz_*; do
  case "$f" in *_replay) continue;; esac
  [ -x "$f" ] && targets+=("$f")
done
running=0
for f in "${targets[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  run_one "$f" &
  running=$((running + 1))
done
wait || true

status=0
for f in "${targets[@]}"; do
  name=$(basename "$f")
  cat "$results/$name.out"
  [ "$(cat "$results/$name.rc" 2>/dev/null || echo 1)" = 0 ] || status=1
done
exit $status
