#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, clang, ASan+UBSan) in build-fuzz/ and runs each for
# SECONDS (default 60) on its seeds: the checked-in fuzz/corpus/<target>/, plus tiny checkpoints
# made fresh by the current build/trafo (the checkpoint format changes; old seeds would be
# rejected early). Prints executions, exec/s and findings per harness; exits 1 on a finding.
# Findings (the input, then its stack in <input>.log) are saved under fuzz/findings/<target>/.
#
# Usage: scripts/fuzz.sh [SECONDS]
#   FUZZ_TARGETS="metrics config_file"  run only these (default: all eight)
#   TRAFO_CPU_LOCK=/tmp/trafo-cpu.lock   take this flock around each build and each harness run
#   FUZZ_NICE=19                         run the harnesses under nice
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${1:-60}
TARGETS=(${FUZZ_TARGETS:-corpus_reader checkpoint config_file metrics translate_line torch_pickle html http_request})
BUILD_DIR=build-fuzz
CLANG=${CLANG:-clang++-14}

say() { printf 'fuzz: %s\n' "$*" >&2; }
fail() { printf 'fuzz: error: %s\n' "$*" >&2; exit 2; }
heavy() {
  if [ -n "${TRAFO_CPU_LOCK:-}" ]; then flock "$TRAFO_CPU_LOCK" "$@"; else "$@"; fi
}

command -v "$CLANG" >/dev/null || fail "$CLANG not found (scripts/setup.sh installs clang-14 and libclang-rt-14-dev)"

# The harnesses link the main build's libtrafo_core.a for the code they do not fuzz.
heavy ./scripts/build.sh --target trafo
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  prefix=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')
  cmake -S fuzz -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER="$CLANG" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
fi
build_start=$(date +%s)
heavy cmake --build "$BUILD_DIR" -j "$(nproc)"
say "harnesses built in $(($(date +%s) - build_start)) s"

# Fresh checkpoint seeds from the current binary: a 1-step run of a d_model 8 model.
seeds=$BUILD_DIR/seeds
if [ ! -f "$seeds/checkpoint/last.pt" ] || [ build/trafo -nt "$seeds/checkpoint/last.pt" ]; then
  say "making fresh checkpoint seeds with build/trafo"
  rm -rf "$seeds/toy" "$seeds/run" "$seeds/checkpoint"
  mkdir -p "$seeds/checkpoint"
  build/trafo toy-corpus --out "$seeds/toy" --train 300 --dev 10 --test 1 2>/dev/null
  build/trafo train --data-dir "$seeds/toy" --src-lang en --tgt-lang de --run-dir "$seeds/run" --threads 1 \
    --d-model 8 --heads 2 --d-ff 16 --encoder-layers 1 --decoder-layers 1 --vocab-size 400 \
    --max-steps 1 --valid-every 1 --valid-max-sentences 2 2>"$seeds/train.log" \
    || fail "trafo train could not make a seed checkpoint (see $seeds/train.log)"
  cp "$seeds/run/checkpoint-last.pt" "$seeds/checkpoint/last.pt"
fi

# Per harness: libFuzzer limits. LibTorch alone takes ~400 MB of RSS under ASan; no input
# here needs a single allocation over 256 MB, so one is reported as a finding.
limits() {
  case $1 in
    metrics) echo "-rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10" ;;
    # An input of many lines is many decoding batches; 1 KiB holds lines of every kind.
    translate_line) echo "-rss_limit_mb=4096 -malloc_limit_mb=256 -timeout=30 -max_len=1024" ;;
    *) echo "-rss_limit_mb=4096 -malloc_limit_mb=256 -timeout=30" ;;
  esac
}

# Leaks inside LibTorch itself, not trafo's (see the file).
export LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}

status=0
summary=()
for target in "${TARGETS[@]}"; do
  binary=$BUILD_DIR/${target}_fuzz
  [ -x "$binary" ] || fail "no harness $binary"
  work=$BUILD_DIR/corpus/$target
  findings=fuzz/findings/$target
  mkdir -p "$work" "$findings"
  dirs=("$work" "fuzz/corpus/$target")
  [ -d "$seeds/$target" ] && dirs+=("$seeds/$target")
  extra=()
  [ -f "fuzz/$target.dict" ] && extra+=(-dict="fuzz/$target.dict")
  log=$BUILD_DIR/$target.log
  say "running $target for ${SECONDS_PER_TARGET} s"
  rc=0
  # shellcheck disable=SC2046
  heavy nice -n "${FUZZ_NICE:-0}" "$binary" -max_total_time="$SECONDS_PER_TARGET" $(limits "$target") \
    -print_final_stats=1 -artifact_prefix="$findings/" "${extra[@]}" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  found=$(sed -n 's/^artifact_prefix=.*Test unit written to \(.*\)$/\1/p' "$log")
  if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
    status=1
    [ -n "$found" ] && cp "$log" "$found.log"
    summary+=("$(printf '%-15s %10s execs %7s exec/s  FINDING (exit %s): %s' "$target" "${execs:-?}" "${rate:-?}" "$rc" "${found:-see $log}")")
    grep -m1 -E '==trafo-fuzz== FINDING|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|terminate called' "$log" >&2 || tail -20 "$log" >&2
  else
    summary+=("$(printf '%-15s %10s execs %7s exec/s  no findings' "$target" "${execs:-?}" "${rate:-?}")")
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
exit "$status"
