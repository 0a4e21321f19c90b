#!/usr/bin/env bash
# Configures and builds trafo (Release) in build/ against the LibTorch of .venv.
# Usage: scripts/build.sh [extra cmake --build arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  prefix=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
fi
cmake --build "$BUILD_DIR" -j "$(nproc)" "$@"
