#!/usr/bin/env bash
# inletd with auto-relay on (--smtp-relay-all into a local Postfix smtp-sink) vs off, in the
# same run: smtp-source, 50 sessions, 9 KB messages, ROUNDS rounds alternating. Prints
# messages/s per round, the ratio on/off, the on rate counted until the relay queue has
# drained (every message passed on, not only accepted), and the relay counters (sent,
# failed, dropped) from /metrics once drained or 60 s passed. With MAILPIT set (a Mailpit
# binary), each round also runs Mailpit off and with the same relay options
# (--smtp-relay-all, MP_SMTP_RELAY_HOST/PORT) on the same load. The server's own CPU
# seconds (user + system, its whole run) are printed too: on a loaded machine the rates
# swing with the neighbours, the CPU a server spent on the load does much less.
#
#   bench/outbound/relay.sh [ROUNDS=3] [MESSAGES=20000]  (INLETD=build/bin/inletd MAILPIT=...)
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
  for _ in $(seq 300); do
    grep -q "http listening" "$tmp/log" 2>/dev/null && grep -q "smtp listening" "$tmp/log" && break
    sleep 0.1
  done
  smtp_port=$(sed -n 's/.*smtp listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
  http_port=$(sed -n 's/.*http listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
}

start_mailpit() {  # args: extra flags; sets smtp_port http_port mailpit_pid
  smtp_port=$(free_port); http_port=$(free_port)
  "$MAILPIT" --smtp "127.0.0.1:$smtp_port" --listen "127.0.0.1:$http_port" --max 5000 \
    --database "$tmp/mailpit.db" "$@" >"$tmp/mlog" 2>&1 &
  mailpit_pid=$!
  pids+=("$mailpit_pid")
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$http_port/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
}

run_round() {  # sets t0 and rate (messages/s)
  local t1
  t0=$(date +%s.%N)
  timeout 300 smtp-source -s 50 -l 9216 -m "$messages" -f a@bench.example -t b@bench.example \
    "127.0.0.1:$smtp_port" >/dev/null
  t1=$(date +%s.%N)
  rate=$(python3 -c "print(f'{$messages / ($t1 - $t0):.0f}')")
}

cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }

metric() { awk -v n="$1" '$1==n{print $2}' <<<"$(curl -s "http://127.0.0.1:$http_port/metrics")"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sink_port=$(free_port)
user=(); [ "$(id -u)" = 0 ] && user=(-u nobody)
smtp-sink "${user[@]}" "127.0.0.1:$sink_port" 256 >/dev/null 2>&1 &
pids+=($!)
sleep 0.5

echo "round off_msg_s on_msg_s ratio on_drained_msg_s drained_ratio relay_sent relay_failed relay_dropped off_cpu_s on_cpu_s"
for r in $(seq "$rounds"); do
  start_inletd
  run_round; off=$rate
  off_cpu=$(cpu "$inletd_pid")
  kill "$inletd_pid"; wait "$inletd_pid" || true
  start_inletd --relay "127.0.0.1:$sink_port" --smtp-relay-all
  run_round; on=$rate
  for _ in $(seq 600); do
    [ "$(metric inlet_relay_queue_depth)" = 0 ] &&
      [ "$(( $(metric inlet_relay_sent_total) + $(metric inlet_relay_failed_total) ))" -ge "$messages" ] && break
    sleep 0.02
  done
  t2=$(date +%s.%N)
  drained=$(python3 -c "print(f'{$messages / ($t2 - $t0):.0f}')")
  sent=$(metric inlet_relay_sent_total); failed=$(metric inlet_relay_failed_total)
  dropped=$(metric inlet_relay_dropped_total)
  on_cpu=$(cpu "$inletd_pid")
  kill "$inletd_pid"; wait "$inletd_pid" || true
  echo "$r $off $on $(python3 -c "print(f'{$on / $off:.2f}')") $drained $(python3 -c "print(f'{$drained / $off:.2f}')") $sent $failed $dropped $off_cpu $on_cpu"
  if [ -n "${MAILPIT:-}" ]; then
    rm -f "$tmp"/mailpit.db*
    start_mailpit
    run_round; moff=$rate
    moff_cpu=$(cpu "$mailpit_pid")
    kill "$mailpit_pid"; wait "$mailpit_pid" || true
    rm -f "$tmp"/mailpit.db*
    MP_SMTP_RELAY_HOST=127.0.0.1 MP_SMTP_RELAY_PORT=$sink_port start_mailpit --smtp-relay-all
    run_round; mon=$rate
    sleep 2  # Mailpit relays from goroutines after its 250: let them finish
    mon_cpu=$(cpu "$mailpit_pid")
    kill "$mailpit_pid"; wait "$mailpit_pid" || true
    echo "$r mailpit $moff $mon $(python3 -c "print(f'{$mon / $moff:.2f}')") cpu_s $moff_cpu $mon_cpu"
  fi
done
