#!/usr/bin/env bash
# Where trafo's CUDA training step spends its time, in one call of about 6 minutes on the CUDA
# machine (from what bench/gpu_pack.sh packed into device/; bench/gpu.sh is the full table):
#   1. transformer-base (configs/base.toml) and the default model, fp32 and bf16: trafo bench at
#      8,192-token batches with CUDA graphs, beside the plain PyTorch loop; then base in bf16 at
#      --batch-tokens auto, with its MFU;
#   2. 3 eager bf16 steps of base and of the default model at 8,192 tokens under LibTorch's profiler,
#      summed per CUDA kernel (bench/profile_summary.py --kernels) and per CPU op;
#   3. the packed test binaries, whose CUDA tests skip without a GPU;
#   4. a 1-minute trafo train on the packed corpus, its test BLEU, greedy and beam-5 decoding.
# Usage: bash bench/gpu_profile.sh   (results in $OUT, or /tmp/trafo-gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
common=(--device cuda --rounds 3 --train-steps 20 --warmup-steps 25 --decode-sentences 0 --json)
base=(--config configs/base.toml)
for model in base default; do
  config=()
  [ "$model" = base ] && config=("${base[@]}")
  say "trafo bench, $model, fp32 and bf16, 8,192 tokens, CUDA graphs on"
  timeout 120 "$trafo" bench "${config[@]}" "${common[@]}" --precision both --batch-tokens 8192 --cuda-graphs on \
    > "$out/trafo-$model.jsonl" 2>> "$log" || say "trafo bench $model failed"
  say "plain PyTorch loop, $model, fp32 and bf16, 8,192 tokens"
  timeout 120 "$python" bench/pytorch_reference.py --loop plain "${config[@]}" "${common[@]}" --precision both \
    --batch-tokens 8192 > "$out/plain-$model.jsonl" 2>> "$log" || say "plain loop $model failed"
done
say "trafo bench, base, bf16, --batch-tokens auto"
timeout 150 "$trafo" bench "${base[@]}" "${common[@]}" --precision bf16 --batch-tokens auto \
  > "$out/trafo-base-auto.jsonl" 2>> "$log" || say "trafo bench base auto failed"
for model in base default; do
  config=()
  [ "$model" = base ] && config=("${base[@]}")
  say "profile of 3 eager bf16 steps, $model"
  timeout 120 "$trafo" bench "${config[@]}" --device cuda --precision bf16 --batch-tokens 8192 --rounds 1 \
    --train-steps 3 --warmup-steps 10 --decode-sentences 0 --cuda-graphs off --profile "/tmp/profile-$model" \
    >> "$log" 2>&1 || say "profile $model failed"
  if [ -f "/tmp/profile-$model.bf16.json" ]; then
    { "$python" bench/profile_summary.py "/tmp/profile-$model.bf16.json" --kernels --top 40
      "$python" bench/profile_summary.py "/tmp/profile-$model.bf16.json" --top 30; } > "$out/profile-$model.txt" 2>&1
    gzip -c "/tmp/profile-$model.bf16.json" > "$out/profile-$model.bf16.json.gz"
  fi
done
packed_tests
real_run 1m
say "done"
cat "$out"/profile-*.txt | head -90
"$python" bench/gpu_table.py "$out" | tee "$out/table.md"
pack_results
