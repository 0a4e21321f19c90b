#!/usr/bin/env bash
# Memory of a real training run: `trafo train` with no config (the built-in defaults) on a real
# corpus, with validation decoding as it comes, for a fixed time. VmRSS is sampled every few
# seconds; the figure is the growth from minute WARM (after warm-up: vocabulary, caches, the first
# validations) to the end, which must stay under 5% (docs/performance.md "Flat memory").
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
awk -v warm=$((warm * 60)) '
  { t[NR] = $1; r[NR] = $2; if ($2 > peak) peak = $2 }
  $1 <= warm { at_warm = $2 }
  END {
    if (!at_warm) at_warm = r[1]
    printf "RSS at minute %d: %.1f MB, at the end (%d s): %.1f MB, peak %.1f MB, growth %+.2f%%\n",
      warm / 60, at_warm / 1024, t[NR], r[NR] / 1024, peak / 1024, 100 * (r[NR] - at_warm) / at_warm
  }' "$work/samples"
