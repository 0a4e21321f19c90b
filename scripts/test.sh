#!/usr/bin/env bash
# Sets up (if needed), builds and runs every test, printing CTest's summary.
# Usage: scripts/test.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
cd build
ctest --output-on-failure --timeout 900 -j1 "$@"
