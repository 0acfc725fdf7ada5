#!/usr/bin/env bash
# Installs Haraka from npm into build/peers/haraka (idempotent) and writes a config that
# listens on 127.0.0.1:$1, accepts any recipient at inlet.test and discards every message
# (Haraka's own queue/discard plugin), one process, no TLS.
# usage: bench/peers/setup-haraka.sh PORT [DIR]
set -euo pipefail
port=${1:?port}
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${2:-$root/build/peers/haraka}
mkdir -p "$dir"
if [ ! -x "$dir/node_modules/.bin/haraka" ]; then
  # encoding-japanese 2.5.0 and libqp 3.0.1 (wanted by dependencies) are missing from the registry mirror
  # here: pin the previous releases.
  cat > "$dir/package.json" <<'JSON'
{"name": "inlet-haraka-peer", "private": true, "version": "0.0.0",
 "overrides": {"encoding-japanese": "2.4.0", "libqp": "2.1.2"}}
JSON
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error Haraka@3 >/dev/null)
fi
cfg=$dir/instance
if [ ! -d "$cfg" ]; then
  "$dir/node_modules/.bin/haraka" -i "$cfg" >/dev/null
fi
mkdir -p "$cfg/config"
# Haraka's own defaults with the listen address changed and nodes=0: one process, no
# cluster master + worker (the default nodes=1 forks a worker, and the harness would sample
# the idle master).
sed -e "s|^;listen=\[::0\]:25|listen=127.0.0.1:$port|" -e "s|^;nodes=cpus|nodes=0|" \
  "$dir/node_modules/Haraka/config/smtp.ini" \
  > "$cfg/config/smtp.ini"
grep -q "^listen=127.0.0.1:$port" "$cfg/config/smtp.ini" || { echo "smtp.ini: no listen line" >&2; exit 1; }
printf 'rcpt_to.in_host_list\nqueue/discard\n' > "$cfg/config/plugins"
printf 'inlet.test\n' > "$cfg/config/host_list"
printf 'LOGWARN\n' > "$cfg/config/loglevel"
# queue/discard only discards when told to: YES_REALLY_DO_DISCARD.
echo "env YES_REALLY_DO_DISCARD=1 $dir/node_modules/.bin/haraka -c $cfg"
