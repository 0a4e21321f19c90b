#!/usr/bin/env bash
# Fine-tuning an OPUS-MT-shaped model (d_model 512, 6+6 layers, 8 heads, d_ff 2048, swish, 58,101
# pieces, random weights): trafo against the same model in PyTorch Python as transformers runs it
# (MarianMTModel, AdamW, autocast for bf16), on the same synthetic batches and threads.
#
#   bench/marian_finetune.sh [--rounds N] [--threads N] [--batch-tokens N] [--train-steps N]
#
# 1. tests/marian_make.py --opus-shape writes the Hugging Face folder; `trafo import` turns it into
#    a checkpoint (its time and peak RSS are reported).
# 2. `trafo bench` trains the imported model's architecture (post-norm, sines and cosines in halves,
#    untied: two more 58,101 x 512 matrices than MarianMTModel's one shared embedding), and
#    bench/pytorch_reference.py --model marian trains MarianMTModel, in fp32 and, where the CPU
#    runs bf16 natively, in bf16. Both report target tokens/s and MFU (medians of the rounds).
# Defaults: 3 rounds of 4 timed steps (after 2 untimed), --threads $(nproc), batches of 2,048 tokens.
# Run it on an idle machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
threads=$(nproc)
batch_tokens=2048
steps=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --batch-tokens) batch_tokens="$2"; shift 2 ;;
    --train-steps) steps="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "marian_finetune.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
[[ -x "$trafo" ]] || { echo "marian_finetune.sh: build trafo first (scripts/build.sh)" >&2; exit 2; }
[[ -x "$python" ]] || { echo "marian_finetune.sh: run scripts/setup.sh first" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "making the OPUS-MT-shaped MarianMT folder..." >&2
"$trafo" toy-corpus --out "$out/text" --train 20000 --dev 10 --test 10 >/dev/null 2>&1
"$python" "$root/tests/marian_make.py" "$out/opus" "$out/text/train.en" "$out/text/train.de" swish 1 safetensors \
  --opus-shape >/dev/null
# Wall seconds and peak RSS (KiB) of the import, as the child's resource usage gives them.
"$python" -c 'import resource, subprocess, sys, time
started = time.time()
subprocess.run(sys.argv[2:], check=True, stderr=subprocess.DEVNULL)
open(sys.argv[1], "w").write(f"{time.time() - started} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")' \
  "$out/import.time" "$trafo" import --from "$out/opus" --out "$out/opus.pt"

shape=(--vocab-size 58101 --d-model 512 --heads 8 --encoder-layers 6 --decoder-layers 6 --d-ff 2048
       --activation swish --max-positions 512 --dropout 0.1)
timing=(--threads "$threads" --batch-tokens "$batch_tokens" --train-steps "$steps" --warmup-steps 2
        --rounds "$rounds" --decode-sentences 0 --precision auto)
echo "trafo bench (the imported architecture)..." >&2
"$trafo" bench --json "${shape[@]}" --norm post --positions sinusoidal-halves --output-bias true \
  --attention-dropout 0 --activation-dropout 0 "${timing[@]}" > "$out/trafo.jsonl"
echo "pytorch_reference.py --model marian (transformers' MarianMTModel)..." >&2
"$python" "$root/bench/pytorch_reference.py" --json --model marian "${shape[@]}" "${timing[@]}" > "$out/marian.jsonl"

"$python" - "$out" <<'PY'
import json, sys
folder = sys.argv[1]
seconds, kb = open(f"{folder}/import.time").read().split()
def records(name):
    return {(r["record"], r.get("precision", "")): r for r in map(json.loads, open(f"{folder}/{name}.jsonl"))}
trafo, marian = records("trafo"), records("marian")
setup = trafo[("setup", "")]
print(f"OPUS-MT-shaped fine-tuning: {setup['parameters'] / 1e6:.1f} M parameters in trafo's model, "
      f"{marian[('setup', '')]['parameters'] / 1e6:.1f} M in MarianMTModel; {setup['threads']} threads, batches of "
      f"~{setup['batch_tokens']} tokens ({setup['mean_target_tokens']:.0f} target tokens on average); medians of "
      f"{setup['rounds']} rounds of {setup['train_steps']} steps")
print(f"trafo import: {float(seconds):.1f} s, peak RSS {int(kb) / 1024:.0f} MB")
print(f"{'precision':<10} {'trafo tok/s':>12} {'MarianMT tok/s':>15} {'ratio':>7} {'trafo MFU':>10} {'MarianMT MFU':>13}")
for p in ("fp32", "bf16"):
    if ("train", p) not in trafo:
        continue
    t, m = trafo[("train", p)], marian[("train", p)]
    ratio = t["tgt_tokens_per_s"] / m["tgt_tokens_per_s"]
    print(f"{p:<10} {t['tgt_tokens_per_s']:>12.0f} {m['tgt_tokens_per_s']:>15.0f} {ratio:>6.2f}x "
          f"{100 * t['mfu']:>9.1f}% {100 * m['mfu']:>12.1f}%   target >= 1.5x: {'ok' if ratio >= 1.5 else 'MISSED'}")
PY
