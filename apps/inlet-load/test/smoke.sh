#!/usr/bin/env bash
# Loopback smoke test: inlet-load against the swallow server, tiny and bounded.
# usage: smoke.sh INLET_LOAD SWALLOW
set -euo pipefail
load=$1 swallow=$2
# swallow binds one SO_REUSEPORT socket per thread, so it cannot take port 0: pick a port,
# and pick again if swallow exits (the port was taken by another test).
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null || true' EXIT
up=0
for _ in $(seq 10); do
  port=$((20000 + RANDOM % 20000))
  "$swallow" --listen 127.0.0.1:$port --max-seconds 60 & spid=$!
  for _ in $(seq 50); do
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
    kill -0 $spid 2>/dev/null || break
    sleep 0.1
  done
  sleep 0.2
  if kill -0 $spid 2>/dev/null; then up=1; break; fi
  wait $spid 2>/dev/null || true
done
[ $up = 1 ] || { echo "swallow did not start"; exit 1; }
check() {  # args: inlet-load flags; expects every message accepted
  out=$("$load" --target 127.0.0.1:$port --duration 20 --json --server-pid $spid "$@")
  echo "$out"
  python3 - "$out" "$@" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); want = int(sys.argv[sys.argv.index("--count") + 1])
assert r["messages_ok"] == want, r
assert r["messages_failed"] == 0 and not r["errors"], r
assert r["latency"]["count"] == want and r["latency"]["max_us"] >= r["latency"]["p50_us"] > 0, r
assert r["server"]["pid"] > 0 and r["server"]["threads_max"] >= 1, r
PY
}
check --count 200 -c 4 -j 2
check --count 50 -c 3 --no-pipelining -m 2
check --count 60 -c 2 --bdat --sources 3
check --count 40 -c 2 --rate 400
echo "smoke ok"
