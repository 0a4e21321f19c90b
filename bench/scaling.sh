#!/usr/bin/env bash
# Data-parallel scaling of `trafo train` on this machine: 2 processes × 1 thread (Gloo on
# loopback, --nproc 2 --threads 2) against 1 process × 2 threads, on the toy corpus with
# ~4k-token global batches. Prints target tokens/s (median over the timed steps, then over
# rounds), the ratio, the time of one all-reduce of all gradients (timed at start-up, ranks
# ready), and the wait per step after backward (what backward did not hide, including waiting
# for the slower rank).
#
#   bench/scaling.sh [--rounds N] [--configs "toy base"] [--trafo PATH]
#
# toy = d_model 256, 3+3 layers (5 warm-up + 30 timed steps); base = d_model 512, 6+6 (2 + 8).
# Uses the project's interpreter (.venv/bin/python) to read metrics.jsonl.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
configs="toy base"
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --configs) configs="$2"; shift 2 ;;
    --trafo) trafo="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scaling.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x "$trafo" ]] || { echo "scaling.sh: no trafo binary at $trafo" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$trafo" toy-corpus --out "$work/data" --train 50000 --dev 10 --test 1 2>/dev/null

for config in $configs; do
  case "$config" in
    toy) model=(--d-model 256 --heads 4 --encoder-layers 3 --decoder-layers 3 --d-ff 1024); warm=5; timed=30 ;;
    base) model=(--d-model 512 --heads 8 --encoder-layers 6 --decoder-layers 6 --d-ff 2048); warm=2; timed=8 ;;
    *) echo "scaling.sh: unknown config $config (toy or base)" >&2; exit 2 ;;
  esac
  for ((r = 1; r <= rounds; r++)); do
    for layout in 1x2 2x1; do
      nproc=${layout%x*}
      echo "$config round $r/$rounds: $nproc process(es) x $((2 / nproc)) thread(s)" >&2
      "$trafo" train --data-dir "$work/data" --src-lang en --tgt-lang de --vocab-size 2000 "${model[@]}" \
        --batch-tokens 4096 --max-steps $((warm + timed)) --valid-every 0 --valid-max-sentences 2 \
        --valid-samples 0 --early-stopping 0 --log-every 1 --nproc "$nproc" --threads 2 \
        --run-dir "$work/run-$config-$layout-$r" --no-resume --overwrite 2>"$work/log" ||
        { cat "$work/log" >&2; exit 1; }
    done
  done
  echo "$config $warm" >> "$work/configs"
done

"$python" - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
print("| config | parameters | gradient MB/step | 1 proc x 2 threads tgt tok/s | 2 procs x 1 thread tgt tok/s | ratio | one gradient all-reduce | wait after backward per step |")
print("|---|---|---|---|---|---|---|---|")
for line in open(f"{work}/configs"):
    config, warm = line.split()[0], int(line.split()[1])
    speeds = {"1x2": [], "2x1": []}
    allreduce, waits, parameters, gradient_bytes = [], [], 0, 0
    for r in range(1, rounds + 1):
        for layout in speeds:
            events = [json.loads(l) for l in open(f"{work}/run-{config}-{layout}-{r}/metrics.jsonl")]
            start = next(e for e in events if e["event"] == "start")
            parameters = start["parameters"]
            steps = [e for e in events if e["event"] == "train" and e["step"] > warm]
            speeds[layout].append(statistics.median(e["tgt_tokens_per_s"] for e in steps))
            if layout == "2x1":
                gradient_bytes = start["gradient_bytes"]
                allreduce.append(start["gradient_allreduce_s"])
                waits.append(statistics.median(e["allreduce_s"] for e in steps))
    one, two = statistics.median(speeds["1x2"]), statistics.median(speeds["2x1"])
    print(f"| {config} | {parameters / 1e6:.1f} M | {gradient_bytes / 1e6:.0f} | {one:.0f} | {two:.0f} | "
          f"{two / one:.2f}x | {statistics.median(allreduce) * 1e3:.0f} ms | {statistics.median(waits) * 1e3:.0f} ms |")
PY
