#!/usr/bin/env bash
# inletd with the webhook on (no rate limit, a local receiver) vs off, in the same run:
# smtp-source, 50 sessions, 9 KB messages, ROUNDS rounds alternating. Prints messages/s
# per round, the ratio on/off, and the webhook counters (sent, dropped) from /metrics.
#
#   bench/outbound/run.sh [ROUNDS=3] [MESSAGES=20000]     (from the build tree's root: build/bin/inletd)
set -euo pipefail
rounds=${1:-3}
messages=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
inletd=${INLETD:-$here/../../build/bin/inletd}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

start_inletd() {  # args: extra flags; sets smtp_port http_port inletd_pid
  "$inletd" --smtp 127.0.0.1:0 --listen 127.0.0.1:0 --max-messages 5000 "$@" >"$tmp/log" 2>&1 &
  inletd_pid=$!
  pids+=("$inletd_pid")
  for _ in $(seq 100); do
    grep -q "http listening" "$tmp/log" 2>/dev/null && break
    sleep 0.1
  done
  smtp_port=$(sed -n 's/.*smtp listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
  http_port=$(sed -n 's/.*http listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
}

run_round() {  # prints messages/s
  local t0 t1
  t0=$(date +%s.%N)
  timeout 300 smtp-source -s 50 -l 9216 -m "$messages" -f a@bench.example -t b@bench.example \
    "127.0.0.1:$smtp_port" >/dev/null
  t1=$(date +%s.%N)
  python3 -c "print(f'{$messages / ($t1 - $t0):.0f}')"
}

mkfifo "$tmp/rx_in"
python3 "$here/receiver.py" <"$tmp/rx_in" >"$tmp/rx_out" &
rx_pid=$!
pids+=("$rx_pid")
exec 3>"$tmp/rx_in"
for _ in $(seq 50); do [ -s "$tmp/rx_out" ] && break; sleep 0.1; done
rx_port=$(head -1 "$tmp/rx_out")

echo "round off_msg_s on_msg_s ratio webhook_sent webhook_dropped"
for r in $(seq "$rounds"); do
  start_inletd
  off=$(run_round)
  kill "$inletd_pid"; wait "$inletd_pid" || true
  start_inletd --webhook-url "http://127.0.0.1:$rx_port/hook" --webhook-limit 0
  on=$(run_round)
  metrics=$(curl -s "http://127.0.0.1:$http_port/metrics")
  sent=$(awk '/^inlet_webhook_sent_total/{print $2}' <<<"$metrics")
  dropped=$(awk '/^inlet_webhook_dropped_total/{print $2}' <<<"$metrics")
  kill "$inletd_pid"; wait "$inletd_pid" || true
  echo "$r $off $on $(python3 -c "print(f'{$on / $off:.2f}')") $sent $dropped"
done
exec 3>&-
wait "$rx_pid" || true
echo "receiver got $(tail -1 "$tmp/rx_out") requests in all"
