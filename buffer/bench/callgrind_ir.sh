#!/usr/bin/env bash
# Instructions per message (callgrind Ir) of the receive-and-hand-off cycle,
# for each contender: two runs with different message counts, the difference
# divided by the extra messages, so that setup and warm-up cancel out.
#   buffer/bench/callgrind_ir.sh BUILD_DIR [CHUNK] [RING]
set -euo pipefail
BIN=${1:-build}/bin/bench_buffer_handoff
CHUNK=${2:-16384}
RING=${3:-64}
ir() {  # contender messages
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" --messages="$2" --rounds=1 \
    --only="$1" --chunk="$CHUNK" --ring="$RING" 2>&1 >/dev/null | awk '/Collected/ {print $4}'
}
printf '%-16s %12s   (chunk %s, ring %s)\n' buffer "Ir/message" "$CHUNK" "$RING"
for c in inlet asio_streambuf dynamic_string floor; do
  a=$(ir "$c" 1000); b=$(ir "$c" 5000)
  # warm-up is messages/10 + 100: 200 and 600 messages, so 4400 extra in all
  printf '%-16s %12d\n' "$c" $(( (b - a) / 4400 ))
done
