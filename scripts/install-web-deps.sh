#!/usr/bin/env bash
# The web page's packages: `npm ci` in http/web from the committed lockfile (esbuild,
# Preact, TypeScript, axe-core), and a Python venv with Playwright for the browser tests
# (http/web/.venv), and the other catchers' API clients in tests/clients. Each step
# reruns only when its lockfile or requirements changed.
# Playwright's own browser download is never run: the tests drive Debian's chromium.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
web=$root/http/web
req=$root/http/test/browser/requirements.txt

lock_sum=$(sha256sum "$web/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$web/node_modules/.inlet-lock" 2>/dev/null)" != "$lock_sum" ]; then
  echo "install-web-deps: npm ci in http/web"
  (cd "$web" && npm ci --ignore-scripts --no-audit --no-fund)
  echo "$lock_sum" > "$web/node_modules/.inlet-lock"
fi

# Other catchers' API clients that the end-to-end tests drive (tests/clients).
clients=$root/tests/clients
clients_sum=$(sha256sum "$clients/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$clients/node_modules/.inlet-lock" 2>/dev/null)" != "$clients_sum" ]; then
  echo "install-web-deps: npm ci in tests/clients"
  (cd "$clients" && npm ci --ignore-scripts --no-audit --no-fund)
  echo "$clients_sum" > "$clients/node_modules/.inlet-lock"
fi

req_sum=$(sha256sum "$req" | cut -d' ' -f1)
if [ "$(cat "$web/.venv/.inlet-req" 2>/dev/null)" != "$req_sum" ]; then
  echo "install-web-deps: Python venv for the browser tests"
  rm -rf "$web/.venv"
  /usr/bin/python3 -m venv "$web/.venv"
  "$web/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  echo "$req_sum" > "$web/.venv/.inlet-req"
fi
