#!/usr/bin/env bash
# Runs inlet_microbench with repetitions in random interleaved order (naive and ours
# alternate) and prints the median ratio naive/ours with its spread.
# usage: bench/microbench/run.sh [REPETITIONS] [MIN_TIME_S]   (from a build with INLET_BENCH=ON)
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=${1:-7} min_time=${2:-0.2}
out=docs/benchmarks/data/load-microbench.json
mkdir -p "$(dirname "$out")"
build/bin/inlet_microbench --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
  --benchmark_min_time="$min_time" --benchmark_report_aggregates_only=false \
  --benchmark_out="$out" --benchmark_out_format=json >/dev/null
python3 bench/microbench/ratios.py "$out"
