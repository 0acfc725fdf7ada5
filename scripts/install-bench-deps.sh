#!/usr/bin/env bash
# Installs what the benchmark harnesses and corpus scripts need beyond scripts/install-deps.sh
# (not needed by `make test`): Python peers and plotting, libpqxx (a bench/pg peer),
# CPython's email test messages, Node.js for Haraka and the spam-assassin corpus, wrk (HTTP
# load for http/bench). Idempotent.
set -euo pipefail
bash "$(dirname "$0")/install-deps.sh"
PKGS=(python3-aiosmtpd python3-matplotlib libpython3.11-testsuite nodejs npm libpqxx-dev wrk
      libtcmalloc-minimal4)  # tcmalloc for the allocator comparison (LD_PRELOAD; docs/benchmarks/hostile.md)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js/npm may come from elsewhere on a developer machine; only install when absent.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" != "0" ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# One package at a time: apt's resolver otherwise may pick libboost-dev (1.74) for
# matplotlib's dependencies, which conflicts with libboost1.81-dev.
for p in "${missing[@]}"; do $SUDO apt-get install -y -qq --no-install-recommends "$p"; done
