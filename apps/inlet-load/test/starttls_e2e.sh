#!/usr/bin/env bash
# inlet-load --starttls against a real inletd with a throwaway self-signed certificate:
# every message accepted over TLS, each connection one handshake, the messages counted back
# through inletd's HTTP API; certificate verification fails without the CA and passes with it.
# usage: starttls_e2e.sh INLET_LOAD INLETD
set -euo pipefail
load=$1 inletd=$2
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$pid" ] && wait "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
# Port 0: inletd binds free ports itself and prints them (no race with other tests). The
# file exists before inletd starts: the background child opens it, maybe after the first sed.
: >"$dir/out"
"$inletd" --smtp 127.0.0.1:0 --listen 127.0.0.1:0 --store memory --quiet \
  --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" >"$dir/out" & pid=$!
smtp= http=
for _ in $(seq 300); do
  smtp=$(sed -n 's/^inletd: smtp listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/out")
  http=$(sed -n 's/^inletd: http listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/out")
  [ -n "$smtp" ] && [ -n "$http" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "inletd exited"; cat "$dir/out"; exit 1; }
  sleep 0.1
done
[ -n "$smtp" ] && [ -n "$http" ] || { echo "inletd did not report its ports"; exit 1; }
run() { local d=$1; shift; "$load" --target 127.0.0.1:$smtp --duration "$d" --json -q --starttls "$@" || true; }
check() {  # JSON, expected ok, expected handshakes, expected error substring ("" = none)
  python3 - "$@" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); ok, hs, err = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
assert r["config"]["starttls"] is True, r
assert r["messages_ok"] == ok, r
assert r["tls_handshakes"] >= hs, r
if err:
    assert any(err in k for k in r["errors"]), r
else:
    assert r["messages_failed"] == 0 and not r["errors"], r
PY
}
check "$(run 30 --count 120 -c 4)" 120 4 ""
check "$(run 30 --count 30 -c 2 --bdat)" 30 2 ""
check "$(run 30 --count 20 -c 2 --no-pipelining -m 5)" 20 4 ""
check "$(run 30 --count 10 -c 1 --tls-verify --tls-ca "$dir/cert.pem" --tls-name localhost)" 10 1 ""
# Unknown CA: the handshake must fail, nothing is sent.
check "$(run 2 --count 5 -c 1 --tls-verify --tls-name localhost)" 0 0 "certificate verify failed"
# Read back: every accepted message is in the store.
python3 - "$http" <<'PY'
import json, sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v1/messages?limit=1") as f:
    total = json.load(f)["total"]
assert total == 180, total
PY
echo "starttls e2e ok"
