#!/usr/bin/env bash
# trafo bench against the PyTorch Python reference, in turn, over several rounds; prints each
# round's ratios and their medians next to issue 6's targets.
#
#   bench/compare.sh [--rounds N] [--trafo PATH] [BENCH OPTIONS...]
#
# BENCH OPTIONS go to both programs unchanged (--config FILE, --threads N, --device cpu|cuda, --precision,
# --train-steps, --decode-sentences, model options, ...). Defaults: 3 rounds, build/trafo, --threads $(nproc).
# Without --config both use trafo's ModelConfig defaults (d_model 256, 3+3 layers, d_ff 1024,
# vocabulary 8000); configs/base.toml gives the base model.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
args=()
threads_given=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --trafo) trafo="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) [[ "$1" == --threads ]] && threads_given=1; args+=("$1"); shift ;;
  esac
done
[[ $threads_given == 1 ]] || args+=(--threads "$(nproc)")
[[ -x "$trafo" ]] || { echo "compare.sh: no trafo binary at $trafo (build it, or pass --trafo PATH)" >&2; exit 2; }
[[ -x "$python" ]] || { echo "compare.sh: no project interpreter at $python (run scripts/setup.sh)" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds: trafo bench ${args[*]}" >&2
  "$trafo" bench --json "${args[@]}" > "$out/trafo.$r.jsonl"
  echo "round $r/$rounds: pytorch_reference.py ${args[*]}" >&2
  "$python" "$root/bench/pytorch_reference.py" --json "${args[@]}" > "$out/pytorch.$r.jsonl"
done

"$python" - "$out" "$rounds" <<'EOF'
import json, statistics, sys

folder, rounds = sys.argv[1], int(sys.argv[2])

def load(name, r):
    records = {}
    with open(f"{folder}/{name}.{r}.jsonl") as f:
        for line in f:
            rec = json.loads(line)
            key = tuple(rec.get(k, "") for k in ("record", "precision", "decoder", "batching"))
            records[key] = rec
    return records

runs = [(load("trafo", r), load("pytorch", r)) for r in range(1, rounds + 1)]
setup = runs[0][0][("setup", "", "", "")]
print(f"trafo vs PyTorch Python, {rounds} round(s): d_model {setup['d_model']}, layers "
      f"{setup['encoder_layers']}+{setup['decoder_layers']}, d_ff {setup['d_ff']}, vocab {setup['vocab_size']}, "
      f"{setup['threads']} thread(s), {setup.get('device', 'cpu')}, trafo's CPU kernels "
      f"{setup.get('cpu_kernels', '?')} (TRAFO_CPU_KERNELS forces avx2 or none), batches ~{setup['batch_tokens']} tokens "
      f"({setup['mean_target_tokens']:.0f} target tokens on average)\n")
print(f"{'figure':<52} {'rounds':<32} {'median':>9}  target")

def line(name, values, fmt, target=None, passed=None):
    values = [v for v in values if v is not None]
    if not values:
        return
    m = statistics.median(values)
    verdict = "" if target is None else f"{target}  {'ok' if passed(m) else 'MISSED'}"
    print(f"{name:<52} {' '.join(fmt(v) for v in values):<32} {fmt(m):>9}  {verdict}")

def get(records, key, field):
    rec = records.get(key)
    return None if rec is None else rec[field]

ratio = lambda v: f"{v:.2f}x"
percent = lambda v: f"{100 * v:.1f}%"
number = lambda v: f"{v:.0f}"
for p, mfu_target, speed_target in (("fp32", 0.60, 1.2), ("bf16", 0.40, 1.3)):
    key = ("train", p, "", "")
    if key not in runs[0][0]:
        continue
    line(f"training {p}: trafo tgt tok/s", [get(t, key, "tgt_tokens_per_s") for t, _ in runs], number)
    line(f"training {p}: pytorch tgt tok/s", [get(q, key, "tgt_tokens_per_s") for _, q in runs], number)
    line(f"training {p}: trafo / pytorch",
         [get(t, key, "tgt_tokens_per_s") / get(q, key, "tgt_tokens_per_s") for t, q in runs], ratio,
         f">= {speed_target}x", lambda m, x=speed_target: m >= x)
    line(f"training {p}: trafo MFU", [get(t, key, "mfu") for t, _ in runs], percent,
         f">= {100 * mfu_target:.0f}%", lambda m, x=mfu_target: m >= x)
    line(f"training {p}: pytorch MFU", [get(q, key, "mfu") for _, q in runs], percent)
    line(f"matmul peak {p} GFLOP/s: trafo run",
         [get(t, ("matmul_peak", p, "", ""), "gflops") for t, _ in runs], number)
    line(f"matmul peak {p} GFLOP/s: pytorch run",
         [get(q, ("matmul_peak", p, "", ""), "gflops") for _, q in runs], number)
if ("train", "bf16", "", "") in runs[0][0] and ("train", "fp32", "", "") in runs[0][0]:
    cuda = setup.get("device", "cpu").startswith("cuda")
    for name, i in (("trafo", 0), ("pytorch", 1)):
        line(f"training bf16 / fp32: {name}",
             [get(run[i], ("train", "bf16", "", ""), "tgt_tokens_per_s") /
              get(run[i], ("train", "fp32", "", ""), "tgt_tokens_per_s") for run in runs], ratio,
             ">= 1.5x" if cuda and name == "trafo" else None, lambda m: m >= 1.5)
for batching, label in (("batched", "batched"), ("batch1", "batch 1")):
    mine = ("decode", "fp32", "cached", batching)
    if mine not in runs[0][0]:
        continue
    line(f"decoding {label}: trafo tgt tok/s", [get(t, mine, "tgt_tokens_per_s") for t, _ in runs], number)
    for decoder, target in (("recompute", 10.0), ("cached", 1.5)):
        theirs = ("decode", "fp32", decoder, batching)
        line(f"decoding {label}: pytorch {decoder} tgt tok/s",
             [get(q, theirs, "tgt_tokens_per_s") for _, q in runs], number)
        line(f"decoding {label}: trafo / pytorch {decoder}",
             [get(t, mine, "tgt_tokens_per_s") / get(q, theirs, "tgt_tokens_per_s") for t, q in runs], ratio,
             f">= {target:g}x" if batching == "batched" else None, lambda m, x=target: m >= x)
memory = ("memory", "", "", "")
line("peak RSS after training, MB: trafo", [get(t, memory, "peak_rss_mb") for t, _ in runs], number)
line("peak RSS after training, MB: pytorch", [get(q, memory, "peak_rss_mb") for _, q in runs], number)
for p in ("fp32", "bf16"):
    trend = ("memory_trend", p, "", "")
    if trend in runs[0][0]:
        line(f"RSS growth {p}, step/5 -> end: trafo", [get(t, trend, "growth_percent") / 100 for t, _ in runs],
             percent, "< 5%", lambda m: m < 0.05)
        line(f"RSS growth {p}, step/5 -> end: pytorch", [get(q, trend, "growth_percent") / 100 for _, q in runs],
             percent)
EOF
