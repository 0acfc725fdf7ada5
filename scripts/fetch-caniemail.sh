#!/usr/bin/env bash
# Installs caniemail.com's feature-support data (the npm package caniemail@2.0.2, MIT)
# for the HTML check of inlet's API: http/CMakeLists.txt embeds it at build time when the
# file is there (-DINLET_CANIEMAIL_JSON=PATH to use another copy).
#
#   scripts/fetch-caniemail.sh [DEST]   DEST defaults to /usr/local/share/inlet/caniemail.json
set -euo pipefail
dest=${1:-/usr/local/share/inlet/caniemail.json}
if [ -s "$dest" ]; then exit 0; fi
if ! command -v npm >/dev/null; then
  echo "fetch-caniemail: npm not found; the HTML check will be built without its data" >&2
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent caniemail@2.0.2 >/dev/null 2>&1 && tar xzf ./*.tgz)
mkdir -p "$(dirname "$dest")"
cp "$tmp/package/data/caniemail.json" "$dest.part"
mv "$dest.part" "$dest"
echo "fetch-caniemail: $dest"
