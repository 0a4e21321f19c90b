# Sourced by bench/gpu.sh and bench/gpu_profile.sh on the CUDA machine: trafo as bench/gpu_pack.sh
# packed it in device/, that machine's PyTorch (the same LibTorch version, built for CUDA) first on
# the library path, results in $OUT (or /tmp/trafo-gpu), and the steps both scripts share.
out=${OUT:-/tmp/trafo-gpu}
mkdir -p "$out"
python=${PYTHON:-python3}
torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
# CUDA's runtime as that PyTorch has it (the wheel's nvidia folder).
cudart=$(find "$torch_lib/../../nvidia" -name 'libcudart.so.*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH="$torch_lib${cudart:+:$(dirname "$cudart")}:$PWD/device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
trafo=$PWD/device/trafo
log=$out/gpu.log
started=$SECONDS
say() { echo "[gpu +$((SECONDS - started))s] $*" | tee -a "$log" >&2; }

{ nvidia-smi -L; ldd "$trafo" | grep -E 'not found|torch_cuda|cudart'; grep -m1 'model name' /proc/cpuinfo; nproc; "$python" -c 'import torch; print(torch.__version__)'; } 2>&1 | tee -a "$log"

# The packed test executable's CUDA tests (they skip without a GPU).
packed_tests() {
  [ -x device/trafo_tests ] || return 0
  local suites='TrainStep.*:Bf16.*:DecodeTest.*'
  say "trafo_tests $suites on CUDA"
  if timeout 120 device/trafo_tests --gtest_filter="$suites" >> "$log" 2>&1; then say "they passed"; else say "they FAILED"; fi
}

# A real run: trafo train on the packed corpus for $1 (a --max-time), its test BLEU, greedy and beam-5
# decoding of the test set, and greedy CUDA and CPU text compared.
real_run() {
  [ -f device/data/train.en ] || return 0
  local run=/tmp/trafo-gpu-run
  rm -rf "$run"
  say "trafo train on the packed corpus, $1"
  timeout 200 "$trafo" train --data-dir device/data --src-lang en --tgt-lang fr --device cuda --preset standard \
    --batch-tokens 8192 --max-time "$1" --threads 4 --run-dir "$run" >> "$log" 2>&1 || say "trafo train failed"
  cp "$run/metrics.jsonl" "$out/train-metrics.jsonl" 2>/dev/null
  [ -f "$run/checkpoint-best.pt" ] || return 0
  timeout 60 "$trafo" eval --checkpoint "$run/checkpoint-best.pt" --device cuda --threads 4 \
    --src device/data/test.en --ref device/data/test.fr > "$out/eval.txt" 2>> "$log" || say "trafo eval failed"
  for beam in 1 5; do
    local begin=$EPOCHREALTIME
    timeout 60 "$trafo" translate --checkpoint "$run/checkpoint-best.pt" --device cuda --beam "$beam" \
      --threads 4 < device/data/test.en > "$out/beam$beam.cuda.txt" 2>> "$log" || say "translate beam $beam failed"
    echo "beam $beam: $(wc -l < "$out/beam$beam.cuda.txt") sentences in $(awk -v a="$begin" -v b="$EPOCHREALTIME" \
      'BEGIN {printf "%.2f", b - a}') s" | tee -a "$out/decode.txt"
  done
  for device in cuda cpu; do
    head -300 device/data/test.en | timeout 60 "$trafo" translate --checkpoint "$run/checkpoint-best.pt" \
      --device "$device" --precision fp32 --threads 8 > "$out/greedy.$device.txt" 2>> "$log"
  done
  echo "greedy fp32, first 300 sentences: $(diff "$out/greedy.cuda.txt" "$out/greedy.cpu.txt" | grep -c '^<') of" \
    "$(wc -l < "$out/greedy.cpu.txt") differ between CUDA and CPU" | tee -a "$out/decode.txt"
}

# The device tool brings back at most 8 files: everything in $out goes into results.tar.gz, but
# the table, which stays beside it.
pack_results() {
  (cd "$out" && tar czf /tmp/results.tar.gz --exclude table.md . && find . -type f ! -name table.md -delete &&
    mv /tmp/results.tar.gz .)
}
