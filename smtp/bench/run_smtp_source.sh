#!/usr/bin/env bash
# End-to-end comparison under Postfix's smtp-source, alternating servers A B C..
# in one run (benchmarking.md): Postfix smtp-sink (reference) vs
# smtp_sink_server for the given I/O models. Every load is bounded by a message
# count and a timeout; servers bind 127.0.0.1 and are killed by PID.
#
#   smtp/bench/run_smtp_source.sh BUILD_DIR [ROUNDS] [MESSAGES] [SESSIONS] [SIZE] [MODELS...]
# Prints one JSON object per run on stdout.
set -euo pipefail
build=${1:?build dir}; rounds=${2:-3}; msgs=${3:-20000}; sess=${4:-50}; size=${5:-9000}
shift $(( $# < 5 ? $# : 5 ))
models=("$@"); [ ${#models[@]} -eq 0 ] && models=(coro thread)
port=25250
bin="$build/bin/smtp_sink_server"
sink_user=$( [ "$(id -u)" = 0 ] && echo "-u nobody" || true )

wait_port() { for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }

run_one() {  # name, server command...
  local name=$1; shift
  port=$((port + 1))
  "$@" "$port" > /dev/null 2>&1 &
  local pid=$!
  wait_port "$port" || { kill "$pid" 2>/dev/null; echo "{\"server\":\"$name\",\"error\":\"no listen\"}"; return; }
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  timeout 120 smtp-source -d -s "$sess" -l "$size" -m "$msgs" -f a@x.test -t b@y.test "127.0.0.1:$port" || rc=$?
  t1=$(date +%s.%N)
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  awk -v n="$name" -v a="$t0" -v b="$t1" -v m="$msgs" -v rc="$rc" -v s="$sess" -v l="$size" \
    'BEGIN{printf "{\"server\":\"%s\",\"messages\":%d,\"sessions\":%d,\"size\":%d,\"seconds\":%.3f,\"msgs_per_s\":%.0f,\"rc\":%d}\n", n, m, s, l, b-a, m/(b-a), rc}'
}

# exec: the background job's PID is the server itself, so kill reaches it.
sink_cmd() { exec smtp-sink $sink_user -c "127.0.0.1:$1" 1000; }
ours_cmd() { local model=$1 rpe=$2 p=$3; exec "$bin" --listen "127.0.0.1:$p" --model "$model" --reads-per-event "$rpe" --seconds 300; }

for r in $(seq "$rounds"); do
  run_one smtp-sink sink_cmd
  for m in "${models[@]}"; do
    model=${m%%:*}; rpe=1; [[ $m == *:* ]] && rpe=${m##*:}
    run_one "inlet-$m" ours_cmd "$model" "$rpe"
  done
done
