#!/usr/bin/env bash
# The seed 000 table (see run.py --help). Skips cleanly when build/bin/inletd is missing or
# rejects a model. usage: bench/io-models/run.sh [--inletd PATH] [--pin] [run.py options]
set -euo pipefail
cd "$(dirname "$0")/../.."
py=python3
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && py=/usr/bin/python3
exec "$py" bench/io-models/run.py "$@"
