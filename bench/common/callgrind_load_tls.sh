#!/usr/bin/env bash
# inlet-load's own user-space instructions per message, with and without --starttls (callgrind):
# inlet-load runs under valgrind twice (N1 and N2 messages of 9,000 bytes over 10 connections)
# against a native inletd --store sink with a throwaway certificate; (Ir(N2) - Ir(N1)) / (N2 - N1).
# usage: bench/common/callgrind_load_tls.sh [BIN_DIR] [N1] [N2]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/bin} n1=${2:-1000} n2=${3:-3000}
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
port=$((30000 + RANDOM % 20000))
"$bin/inletd" --smtp 127.0.0.1:$port --listen 127.0.0.1:$((port + 1)) --store sink --quiet \
  --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" 2>/dev/null & pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
ir() {  # messages, extra flags -> total instructions
  local n=$1; shift
  timeout 300 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin/inlet-load" -t 127.0.0.1:$port \
    -c 10 -n "$n" -d 280 --size-mean 9000 --size-sigma 0 --synthetic-count 16 -q "$@" >/dev/null 2>&1
  callgrind_annotate "$tmp/cg" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
for flags in "" "--starttls"; do
  a=$(ir "$n1" $flags); b=$(ir "$n2" $flags)
  echo "inlet-load ${flags:-(clear text)}: N=$n1 $a, N=$n2 $b, per message $(( (b - a) / (n2 - n1) ))"
done
