#!/usr/bin/env bash
# Memory over time (issue 15): RSS of training over many toy steps and of `trafo translate` over
# many lines must stay flat after warm-up (docs/design.md "Flat memory": growth under 5%).
#
#   bench/memory.sh [--steps 5000] [--lines 100000] [--threads 2] [--trafo PATH]
#
# Training: `trafo bench --leak-steps STEPS` on the toy model (small batches so that the steps are
# many), RSS at step STEPS/5 against RSS at the end. Translation: a tiny model trained for a few
# steps on the toy corpus translates LINES toy sentences from a file; VmRSS is sampled every
# 0.2 s and the sample at 20% of the run is compared with the last one.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
steps=5000
lines=100000
threads=2
trafo="$root/build/trafo"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --lines) lines="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --trafo) trafo="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "memory.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$trafo" ]] || { echo "memory.sh: no trafo binary at $trafo" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== training: $steps toy steps, --batch-tokens 512, $threads threads"
"$trafo" bench --config "$root/configs/toy.toml" --threads "$threads" --batch-tokens 512 --leak-steps "$steps" \
  --precision fp32 --decode-sentences 0 --train-steps 1 --warmup-steps 0 2>/dev/null | grep -i -E "rss|memory|leak"

echo "== translate: $lines lines, $threads threads"
"$trafo" toy-corpus --out "$work/toy" --train 3000 --dev 50 --test 2000 2>/dev/null
"$trafo" train --data-dir "$work/toy" --src-lang en --tgt-lang de --run-dir "$work/run" --vocab-size 1000 \
  --d-model 64 --heads 4 --d-ff 128 --encoder-layers 2 --decoder-layers 2 --max-steps 200 --valid-every 0 \
  --threads "$threads" --batch-tokens 2048 2>/dev/null
for ((i = 0; i * 2000 < lines; i++)); do cat "$work/toy/test.en"; done | head -n "$lines" >"$work/input.txt"
"$trafo" translate --checkpoint "$work/run/checkpoint-last.pt" --threads "$threads" --input "$work/input.txt" \
  --output "$work/output.txt" 2>/dev/null &
pid=$!
samples=()
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [[ -n "$rss" ]] && samples+=("$rss")
  sleep 0.2
done
wait "$pid"
n=${#samples[@]}
early=${samples[$((n / 5))]}
last=${samples[$((n - 1))]}
echo "translated $(wc -l <"$work/output.txt") lines in $n samples of 0.2 s"
awk -v a="$early" -v b="$last" 'BEGIN { printf "RSS at 20%%: %.1f MB, at the end: %.1f MB, growth %+.2f%%\n", a / 1024, b / 1024, 100 * (b - a) / a }'
