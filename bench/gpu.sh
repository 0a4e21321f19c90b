#!/usr/bin/env bash
# The CUDA benchmark in one call (docs/performance.md "CUDA"): on a CUDA machine, from what
# bench/gpu_pack.sh packed into device/, and with that machine's PyTorch (the same LibTorch version,
# built for CUDA) as trafo's LibTorch:
#   1. trafo bench against the plain PyTorch loop (bench/pytorch_reference.py --loop plain:
#      nn.Transformer, fused Adam, bf16 autocast), transformer-base (configs/base.toml) and the
#      default model, fp32 and bf16, 8,192-token batches, medians of 3 rounds; and trafo in bf16
#      at --batch-tokens auto (the budget fitted to the GPU's memory), with its MFU;
#   2. the sync-free step's CUDA test (train_step_test), when packed;
#   3. a real run: trafo train on the packed corpus for 2 minutes, its test BLEU, and greedy and
#      beam-5 decoding of the test set; greedy CUDA and CPU text compared;
#   4. with the time left, torch.compile of the plain loop on base in bf16.
# Prints one table at the end (bench/gpu_table.py). Results go to $OUT (or /tmp/trafo-gpu).
# Usage: bash bench/gpu.sh [--quick]   (--quick: 1 round, 2 timed steps, no real run: a smoke test)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/trafo-gpu}
mkdir -p "$out"
quick=false
[ "${1:-}" = --quick ] && quick=true
python=${PYTHON:-python3}
torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
# CUDA's runtime as that PyTorch has it (the wheel's nvidia folder).
cudart=$(find "$torch_lib/../../nvidia" -name 'libcudart.so.*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH="$torch_lib${cudart:+:$(dirname "$cudart")}:$PWD/device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
trafo=$PWD/device/trafo
log=$out/gpu.log
started=$SECONDS
say() { echo "[gpu.sh +$((SECONDS - started))s] $*" | tee -a "$log" >&2; }

{ nvidia-smi -L; ldd "$trafo" | grep -E 'not found|torch_cuda|cudart'; grep -m1 'model name' /proc/cpuinfo; nproc; "$python" -c 'import torch; print(torch.__version__)'; } 2>&1 | tee -a "$log"
# 25 untimed steps: each of the 10 synthetic batches twice, so that every shape bucket is captured
# before the clock starts.
rounds=3 steps=20 warmup=25
$quick && rounds=1 steps=4 warmup=20
common=(--device cuda --precision both --batch-tokens 8192 --rounds "$rounds" --train-steps "$steps"
        --warmup-steps "$warmup" --decode-sentences 0 --json)
for model in base default; do
  config=()
  [ "$model" = base ] && config=(--config configs/base.toml)
  for graphs in on off; do
    say "trafo bench, $model model, CUDA graphs $graphs"
    suffix=$([ "$graphs" = on ] && echo "" || echo "-eager")
    timeout 150 "$trafo" bench "${config[@]}" "${common[@]}" --cuda-graphs "$graphs" > "$out/trafo-$model$suffix.jsonl" \
      2>> "$log" || say "trafo bench $model (graphs $graphs) failed"
  done
  say "trafo bench, $model model, bf16, --batch-tokens auto"
  fitted=("${common[@]/8192/auto}")
  timeout 150 "$trafo" bench "${config[@]}" "${fitted[@]/both/bf16}" > "$out/trafo-$model-auto.jsonl" \
    2>> "$log" || say "trafo bench $model (batch-tokens auto) failed"
  say "plain PyTorch loop, $model model"
  timeout 150 "$python" bench/pytorch_reference.py --loop plain "${config[@]}" "${common[@]}" \
    > "$out/plain-$model.jsonl" 2>> "$log" || say "plain loop $model failed"
done

if [ -x device/train_step_test ]; then
  say "train_step_test on CUDA"
  timeout 60 device/train_step_test >> "$log" 2>&1 && say "train_step_test passed" || say "train_step_test FAILED"
fi

if ! $quick && [ -f device/data/train.en ]; then
  run=/tmp/trafo-gpu-run
  rm -rf "$run"
  say "trafo train on the packed corpus, 2 minutes"
  timeout 200 "$trafo" train --data-dir device/data --src-lang en --tgt-lang fr --device cuda --preset standard \
    --batch-tokens 8192 --max-time 2m --threads 4 --run-dir "$run" >> "$log" 2>&1 || say "trafo train failed"
  cp "$run/metrics.jsonl" "$out/train-metrics.jsonl" 2>/dev/null
  if [ -f "$run/checkpoint-best.pt" ]; then
    timeout 60 "$trafo" eval --checkpoint "$run/checkpoint-best.pt" --device cuda --threads 4 \
      --src device/data/test.en --ref device/data/test.fr > "$out/eval.txt" 2>> "$log" || say "trafo eval failed"
    for beam in 1 5; do
      begin=$EPOCHREALTIME
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
  fi
fi

if ! $quick && (( SECONDS - started < 330 )); then
  say "torch.compile of the plain loop, base, bf16"
  timeout $((450 - (SECONDS - started))) "$python" bench/pytorch_reference.py --loop compile --config configs/base.toml \
    "${common[@]/both/bf16}" > "$out/compile-base.jsonl" 2>> "$log" || say "torch.compile run failed or ran out of time"
fi
say "done"
grep -E '^\[.*\] (precision|CUDA graphs|done|preset)|FAILED|PASSED|error' "$log" | tail -20
"$python" bench/gpu_table.py "$out" | tee "$out/table.md"
