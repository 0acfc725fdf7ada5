#!/usr/bin/env bash
# Installs every Debian package inlet needs to build, test and benchmark.
# Idempotent: only packages that are missing are installed. Safe to run often.
set -euo pipefail

PKGS=(
  # toolchain (dpkg-dev: dpkg-shlibdeps for the Debian packages)
  g++ cmake ninja-build make pkg-config git ca-certificates dpkg-dev adduser
  clang-19 lld-19 libclang-rt-19-dev
  # libraries
  libboost1.81-dev libboost-context1.81-dev libboost-json1.81-dev
  libpq-dev libssl-dev liburing-dev libhyperscan-dev libgmime-3.0-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libfmt-dev libspdlog-dev libcli11-dev libyaml-cpp-dev
  # inletd's allocator (INLET_ALLOCATOR=jemalloc, the default)
  libjemalloc-dev
  # time zones of search dates (the date library reads the system zoneinfo)
  libhowardhinnant-date-dev tzdata
  # the HTTP API: thumbnails (GraphicsMagick), link check and message release (libcurl)
  libgraphicsmagick1-dev libcurl4-openssl-dev
  # the file store (--database): SQLite, zstd for --compression, the sqlite3 CLI for fixtures
  libsqlite3-dev libzstd-dev sqlite3
  # test peers and tools
  postgresql-15 swaks libnet-ssleay-perl curl postfix python3 openssl valgrind
  # a POP3 retriever for the POP3 end-to-end test
  fetchmail
  python3-jsonschema
  # spam checks' end-to-end test: a real spamd and a real rspamd
  spamd spamassassin rspamd
  # the web page's browser tests: Debian's chromium (driven by Playwright), fonts, venv
  chromium fonts-dejavu fonts-noto-color-emoji python3-venv
)
# The web page's build: node and npm (Debian's, unless a Node.js with npm is there).
if ! command -v npm >/dev/null 2>&1; then PKGS+=(nodejs npm); fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # postfix asks a question at install; answer it so the daemon is not configured.
  echo "postfix postfix/main_mailer_type select No configuration" | $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# caniemail's data for the API's HTML check (an npm package, so after npm is installed).
sudo_cmd=""
if [ "$(id -u)" != "0" ]; then sudo_cmd="sudo"; fi
$sudo_cmd bash "$(dirname "$0")/fetch-caniemail.sh" || echo "install-deps: caniemail data not fetched" >&2

# The web page's npm packages (from the committed lockfile) and the browser tests' venv.
bash "$(dirname "$0")/install-web-deps.sh"
