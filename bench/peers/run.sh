#!/usr/bin/env bash
# inletd beside its peers (see run.py --help). Writes docs/benchmarks/data/peers.json and
# docs/benchmarks/data/peers.png (+ peers-latency.png with --rates) when called without --json/--png.
# usage: bench/peers/run.sh [--bin-dir build/bin] [--modes pipelining,no-pipelining,bdat] [--haraka] [--pin] [run.py options]
set -euo pipefail
cd "$(dirname "$0")/../.."
py=python3
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && py=/usr/bin/python3
args=("$@")
[[ " $* " == *" --json "* ]] || args+=(--json docs/benchmarks/data/peers.json)
[[ " $* " == *" --png "* ]] || args+=(--png docs/benchmarks/data/peers.png)
exec "$py" bench/peers/run.py "${args[@]}"
