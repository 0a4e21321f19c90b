#!/usr/bin/env bash
# Two `trafo train` runs side by side on one machine, with no config file: the same data, the same
# wall-clock budget and one thread each, each with its own options (and binary, if given). Then each
# run's best checkpoint is scored on the test set, one after the other, and the table says steps,
# epochs, dev BLEU (best and last), test BLEU and chrF, and the dev curve. Run it on an idle machine:
# a busy core slows a run by several times.
#
#   bench/small_data.sh --data-dir DIR --src-lang en --tgt-lang fr --minutes 22 --work W
#                       [--a "OPTIONS"] [--b "OPTIONS"] [--name-a A] [--name-b B]
#                       [--binary-a PATH] [--binary-b PATH]
#
# DIR holds train.*, dev.* and test.* files. Each run trains into W/NAME (its own cache folder too, so
# that both build their token caches alike); W/NAME/train.out keeps what trafo printed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data="" src="" tgt="" minutes=22 work=""
options_a="" options_b="" name_a="a" name_b="b"
binary_a="$root/build/trafo" binary_b="$root/build/trafo"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data-dir) data="$2"; shift 2 ;;
    --src-lang) src="$2"; shift 2 ;;
    --tgt-lang) tgt="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --a) options_a="$2"; shift 2 ;;
    --b) options_b="$2"; shift 2 ;;
    --name-a) name_a="$2"; shift 2 ;;
    --name-b) name_b="$2"; shift 2 ;;
    --binary-a) binary_a="$2"; shift 2 ;;
    --binary-b) binary_b="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "small_data.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for needed in data src tgt work; do
  [[ -n "${!needed}" ]] || { echo "small_data.sh: --${needed/data/data-dir} is needed" >&2; exit 2; }
done
[[ "$name_a" != "$name_b" ]] || { echo "small_data.sh: the two runs need different names" >&2; exit 2; }
python="$root/.venv/bin/python"
mkdir -p "$work"
say() { printf 'small_data.sh: %s\n' "$*" >&2; }

processor=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
processor="$processor, family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
bf16=$(grep -o -m1 -w -E 'amx_bf16|avx512_bf16' /proc/cpuinfo | head -1 || true)
say "processor: $processor (${bf16:-no native bf16}), $(nproc) cores; $minutes minutes each, side by side"

train() {  # NAME BINARY OPTIONS
  local name="$1" binary="$2" options="$3"
  rm -rf "${work:?}/$name"
  mkdir -p "$work/$name"
  # shellcheck disable=SC2086  # OPTIONS is a list of options
  "$binary" train --data-dir "$data" --src-lang "$src" --tgt-lang "$tgt" --max-time "${minutes}m" --threads 1 \
    --run-dir "$work/$name/run" --cache-dir "$work/$name/cache" $options >"$work/$name/train.out" 2>&1
}
train "$name_a" "$binary_a" "$options_a" & pid_a=$!
train "$name_b" "$binary_b" "$options_b" & pid_b=$!
status=0
wait "$pid_a" || status=$?
wait "$pid_b" || status=$?
if [[ $status -ne 0 ]]; then
  say "a run failed: see $work/$name_a/train.out and $work/$name_b/train.out"
  exit 1
fi

for name in "$name_a" "$name_b"; do
  binary="$binary_a"; [[ "$name" == "$name_b" ]] && binary="$binary_b"
  "$binary" eval --checkpoint "$work/$name/run/checkpoint-best.pt" --src "$data/test.$src" --ref "$data/test.$tgt" \
    --threads 2 --json >"$work/$name/test.json" 2>"$work/$name/eval.err"
done

"$python" - "$work" "$name_a" "$name_b" "$options_a" "$options_b" <<'EOF'
import json, sys
work, names, options = sys.argv[1], sys.argv[2:4], sys.argv[4:6]
print("| run | options | steps | epochs | dev BLEU best / last | test BLEU | test chrF |")
print("|---|---|---|---|---|---|---|")
curves = {}
for name, given in zip(names, options):
    events = [json.loads(line) for line in open(f"{work}/{name}/run/metrics.jsonl")]
    valid = [e for e in events if e["event"] == "valid"]
    last = [e for e in events if e["event"] in ("train", "valid", "end")][-1]
    test = json.load(open(f"{work}/{name}/test.json"))
    best = max(e["bleu"] for e in valid) if valid else float("nan")
    print(f"| {name} | `{given or '(defaults)'}` | {last['step']} | {last.get('epoch', '?')} | "
          f"{best:.1f} / {valid[-1]['bleu']:.1f} | {test['bleu']:.2f} | {test['chrf']:.2f} |")
    curves[name] = " ".join(f"{e['step']}:{e['bleu']:.1f}" for e in valid)
for name in names:
    print(f"\n{name} dev BLEU by step: {curves[name]}")
EOF
