#!/usr/bin/env bash
# The CUDA benchmark in one call (docs/performance.md "CUDA"): on a CUDA machine, from what
# bench/gpu_pack.sh packed into device/, and with that machine's PyTorch (the same LibTorch version,
# built for CUDA) as trafo's LibTorch:
#   1. trafo bench against the plain PyTorch loop (bench/pytorch_reference.py --loop plain:
#      nn.Transformer, fused Adam, bf16 autocast), transformer-base (configs/base.toml) and the
#      default model, fp32 and bf16, 8,192-token batches, medians of 3 rounds; and trafo in bf16
#      at --batch-tokens auto (the budget fitted to the GPU's memory), with its MFU;
#   2. the CUDA tests of trafo_tests (the sync-free step, the loss kernel, greedy search), when packed;
#   3. a real run: trafo train on the packed corpus for 2 minutes, its test BLEU, and greedy and
#      beam-5 decoding of the test set; greedy CUDA and CPU text compared;
#   4. with the time left, torch.compile of the plain loop on base in bf16.
# Prints one table at the end (bench/gpu_table.py). Results go to $OUT (or /tmp/trafo-gpu).
# Usage: bash bench/gpu.sh [--quick]   (--quick: 1 round, 2 timed steps, no real run: a smoke test)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
quick=false
[ "${1:-}" = --quick ] && quick=true
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

packed_tests
$quick || real_run 2m

if ! $quick && (( SECONDS - started < 330 )); then
  say "torch.compile of the plain loop, base, bf16"
  timeout $((450 - (SECONDS - started))) "$python" bench/pytorch_reference.py --loop compile --config configs/base.toml \
    "${common[@]/both/bf16}" > "$out/compile-base.jsonl" 2>> "$log" || say "torch.compile run failed or ran out of time"
fi
say "done"
grep -E '^\[.*\] (precision|CUDA graphs|done|preset)|FAILED|PASSED|error' "$log" | tail -20
"$python" bench/gpu_table.py "$out" | tee "$out/table.md"
pack_results
