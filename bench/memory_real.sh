#!/usr/bin/env bash
# Memory of a real training run: `trafo train` with no config (the built-in defaults) on a real
# corpus, with validation decoding as it comes, for a fixed time. VmRSS is sampled every few
# seconds; the figure is the growth from minute WARM (after warm-up: vocabulary, caches, the first
# validations) to the end, which must stay under 5% (docs/performance.md "Flat memory"), as medians
# of the two minutes after WARM and of the last two minutes.
# Synthetic fixed-shape loops (bench/memory.sh) miss what a real run does: batches of every
# shape, bf16 autocast where the processor runs it, and greedy decoding of the dev set.
#
#   bench/memory_real.sh --data-dir DIR --src-lang en --tgt-lang fr [--minutes 20] [--warm 5]
#                        [--threads 1] [--trafo PATH] [--samples FILE] [-- extra train options]
#
# Prints the processor, RSS at minute WARM, at the end, the peak and the growth, and writes every
# sample ("seconds kB") to FILE when given.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data_dir=""
src=en
tgt=de
minutes=20
warm=5
threads=1
trafo="$root/build/trafo"
samples_file=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data-dir) data_dir="$2"; shift 2 ;;
    --src-lang) src="$2"; shift 2 ;;
    --tgt-lang) tgt="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --warm) warm="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --trafo) trafo="$2"; shift 2 ;;
    --samples) samples_file="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "memory_real.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$data_dir" ]] || { echo "memory_real.sh: give --data-dir (a folder of train/dev.LANG files)" >&2; exit 2; }
[[ -x "$trafo" ]] || { echo "memory_real.sh: no trafo binary at $trafo" >&2; exit 2; }
(( warm < minutes )) || { echo "memory_real.sh: --warm must be below --minutes" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "processor: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); bf16 flags:" \
  "$(grep -m1 -o -w -E 'avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "== trafo train --data-dir $data_dir --src-lang $src --tgt-lang $tgt --max-time ${minutes}m --threads $threads ${extra[*]}"
TRAFO_CACHE_DIR="$work/cache" "$trafo" train --data-dir "$data_dir" --src-lang "$src" --tgt-lang "$tgt" \
  --run-dir "$work/run" --max-time "${minutes}m" --threads "$threads" "${extra[@]}" 2>"$work/train.log" &
pid=$!
start=$(date +%s)
: >"$work/samples"
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [[ -n "$rss" ]] && echo "$(($(date +%s) - start)) $rss" >>"$work/samples"
  sleep 5
done
wait "$pid" || { echo "memory_real.sh: training failed:" >&2; tail -5 "$work/train.log" >&2; exit 1; }
[[ -n "$samples_file" ]] && cp "$work/samples" "$samples_file"
steps=$(grep -c '"event":"train"' "$work/run/metrics.jsonl" || true)
valids=$(grep -c '"event":"valid"' "$work/run/metrics.jsonl" || true)
echo "$(grep -m1 -oE "precision (bf16|fp32)" "$work/train.log" || echo "precision: see train.log"); $steps progress lines, $valids validations"
# Medians over windows of two minutes, after warm-up and at the end: a lone sample can fall inside a
# validation's decoding, whose transient peak is no growth.
"$root/.venv/bin/python" - "$work/samples" "$warm" <<'PY'
import statistics, sys
samples = [tuple(map(int, line.split())) for line in open(sys.argv[1])]
warm, end = int(sys.argv[2]) * 60, samples[-1][0]
after = [rss for t, rss in samples if warm <= t < warm + 120]
last = [rss for t, rss in samples if t >= end - 120]
at_warm = next((rss for t, rss in samples if t >= warm), samples[0][1])
peak = max(rss for _, rss in samples)
a, b = statistics.median(after), statistics.median(last)
print(f"RSS median of minutes {warm // 60}-{warm // 60 + 2}: {a / 1024:.1f} MB, of the last two minutes: {b / 1024:.1f} MB, "
      f"growth {100 * (b - a) / a:+.2f}%")
print(f"single samples: {at_warm / 1024:.1f} MB at minute {warm // 60}, {samples[-1][1] / 1024:.1f} MB at the end "
      f"({end} s); peak {peak / 1024:.1f} MB")
PY
