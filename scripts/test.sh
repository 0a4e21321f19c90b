#!/usr/bin/env bash
# Sets up (if needed), builds and runs every test, printing CTest's summary; then runs each
# libFuzzer harness for a few seconds on its checked-in seeds (scripts/fuzz.sh; README
# "Fuzzing and sanitizers").
# Usage: scripts/test.sh [--sanitize] [--no-fuzz] [extra ctest arguments]
#   --sanitize  instead: the whole suite built with ASan+UBSan (gcc) in build-sanitize/, run by
#               CTest there (quickstart_smoke excluded: it builds and runs build/, not this build)
#   --no-fuzz   no fuzz smoke run (refused under CI=true). It is also left out when extra
#               ctest arguments pick tests, except under CI=true.
#   FUZZ_SECONDS  seconds per harness in the smoke run (default 10)
#   TEST_JOBS     tests CTest runs at once (default 2: each test has its own temporary folders,
#                 token cache and ports, and two at once took 13-15 minutes on 2 cores, not 22)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=false
fuzz=true
ctest_args=()
for arg in "$@"; do
  case $arg in
    --sanitize) sanitize=true ;;
    --no-fuzz) fuzz=false ;;
    *) ctest_args+=("$arg") ;;
  esac
done
if [ "${CI:-}" = true ]; then
  [ "$fuzz" = true ] || { echo "test: error: --no-fuzz is not allowed under CI=true" >&2; exit 2; }
elif ((${#ctest_args[@]})); then
  fuzz=false
fi

./scripts/setup.sh

if [ "$sanitize" = true ]; then
  # -O1 keeps the sanitized build and its tests within reach on 2 cores; frame pointers and
  # line tables for readable reports; the first UBSan report fails the test.
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1"
  if [ ! -f build-sanitize/build.ninja ]; then
    prefix=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')
    cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
      -DTRAFO_JEMALLOC=OFF -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
  fi
  BUILD_DIR=build-sanitize ./scripts/build.sh
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  cd build-sanitize
  exec ctest --output-on-failure --timeout 1800 -j1 -E '^quickstart_smoke$' "${ctest_args[@]}"
fi

./scripts/build.sh
status=0
(cd build && ctest --output-on-failure --timeout 900 -j"${TEST_JOBS:-2}" "${ctest_args[@]}") || status=$?
if [ "$fuzz" = true ]; then
  ./scripts/fuzz.sh "${FUZZ_SECONDS:-10}" || status=1
fi
exit "$status"
