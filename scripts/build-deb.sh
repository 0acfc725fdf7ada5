#!/usr/bin/env bash
# Builds the Debian packages from a build directory (default: build):
#   scripts/build-deb.sh [BUILD_DIR]  ->  BUILD_DIR/packages/inlet_<v>_<arch>.deb
#                                         BUILD_DIR/packages/libinlet-dev_<v>_<arch>.deb
# The packages hold what that build compiled (Release in `make build`); see
# cmake/InletPackage.cmake for their contents and docs/install.md for their use.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# INLET_DEB_NO_BUILD=1: package what is built (the package test, which runs after the
# build, must not start a build of its own).
if [ -z "${INLET_DEB_NO_BUILD:-}" ]; then
  cmake --build "$build" >/dev/null
fi
rm -rf "$build/packages"
(cd "$build" && cpack -G DEB -B packages >packages.log 2>&1) || { cat "$build/packages.log" >&2; exit 1; }
rm -rf "$build/packages/_CPack_Packages"
ls "$build"/packages/*.deb
