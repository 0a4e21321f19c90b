#!/usr/bin/env bash
# Data at scale (README "Data at scale"): tokenizing into the token cache on 1 and on all threads, a
# new run and a resume on a cached 1M-pair corpus, peak memory at 100k and at 10M pairs, and the
# shares two corpora weighted 3:1 get over 1,000 steps.
#
#   bench/data_scale.sh [--work DIR] [--big PAIRS] [--rounds N] [--trafo PATH] [--only PARTS]
#
# PARTS, comma-separated (default all): tokenizing, start, memory, weights.
# Corpora are toy corpora (`trafo toy-corpus`; the big one is copies with other seeds joined) made
# once under DIR (default /tmp/trafo-data-scale). The model is configs/toy.toml's. Times are medians
# of N rounds (default 3); memory is the peak resident set (/usr/bin/time). Run it on an idle machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/trafo-data-scale
big=10000000
rounds=3
trafo="$root/build/trafo"
only=tokenizing,start,memory,weights
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --big) big="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --trafo) trafo="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "data_scale.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x "$trafo" ]] || { echo "data_scale.sh: no trafo binary at $trafo (build it, or pass --trafo PATH)" >&2; exit 2; }
mkdir -p "$work"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# corpus NAME PAIRS: DIR/NAME/{train,dev,test}.{en,de}, PAIRS training pairs (copies of 2M-pair corpora beyond 2M).
corpus() {
  local dir="$work/$1" pairs=$2
  [[ -f "$dir/done" ]] && return
  mkdir -p "$dir"
  if (( pairs <= 1999000 )); then
    "$trafo" toy-corpus --out "$dir" --train "$pairs" --dev 500 --test 500 --force >/dev/null 2>&1
  else
    : > "$dir/train.en"; : > "$dir/train.de"
    local left=$pairs seed=1
    while (( left > 0 )); do
      local part=$(( left < 1999000 ? left : 1999000 ))  # toy-corpus makes 2M pairs at most, dev and test included
      "$trafo" toy-corpus --out "$dir/part" --train "$part" --dev 500 --test 500 --seed "$seed" --force >/dev/null 2>&1
      cat "$dir/part/train.en" >> "$dir/train.en"; cat "$dir/part/train.de" >> "$dir/train.de"
      [[ $seed == 1 ]] && cp "$dir/part/dev."* "$dir/part/test."* "$dir/"
      left=$(( left - part )); seed=$(( seed + 1 ))
    done
    rm -rf "$dir/part"
  fi
  touch "$dir/done"
}

# train NAME RUN CACHE THREADS STEPS [MORE OPTIONS]: one `trafo train`; stderr to RUN.log, then
# "SECONDS PEAK_KB" on stdout.
train() {
  local name=$1 run=$2 cache=$3 threads=$4 steps=$5; shift 5
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f %M -o "$run.rss" "$trafo" train --config "$root/configs/toy.toml" --data-dir "$work/$name" \
    --src-lang en --tgt-lang de --run-dir "$run" --cache-dir "$cache" --threads "$threads" --max-steps "$steps" \
    --valid-every 0 --valid-max-sentences 1 --valid-samples 0 --log-every "${LOG_EVERY:-1000000}" "$@" 2> "$run.log"
  end=$(date +%s.%N)
  echo "$(echo "$end - $start" | bc) $(cat "$run.rss")"
}

built_seconds() { sed -n 's/.*token cache .* (built in \([0-9.]*\) s).*/\1/p' "$1" | head -1; }

echo "processor: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) threads;" \
     "flags: $(grep -o -w 'avx512f\|avx512_bf16\|amx_bf16\|avx2' /proc/cpuinfo | sort -u | xargs)"
corpus small 100000
corpus million 1000000

part() { [[ ",$only," == *",$1,"* ]]; }

if part tokenizing; then
echo "== tokenizing 1M pairs into the token cache (vocabulary cached first) =="
vocab="$work/vocab-cache"
rm -rf "$vocab"; train million "$work/run-vocab" "$vocab" 0 1 >/dev/null
for threads in 1 $(nproc); do
  times=()
  for ((r = 0; r < rounds; r++)); do
    rm -f "$vocab"/corpus-*.tokens
    rm -rf "$work/run-tok"
    train million "$work/run-tok" "$vocab" "$threads" 1 >/dev/null
    times+=("$(built_seconds "$work/run-tok.log")")
  done
  echo "threads $threads: median $(printf '%s\n' "${times[@]}" | median) s (${times[*]})"
done

fi

if part start; then
echo "== 1M pairs: first start, a new run on cached data, a resume (wall time of a 1-step run) =="
for kind in first new resume; do
  times=()
  for ((r = 0; r < rounds; r++)); do
    case $kind in
      first) rm -rf "$work/cache-1m" "$work/run-1m"; out=$(train million "$work/run-1m" "$work/cache-1m" 0 1) ;;
      new) rm -rf "$work/run-1m-new"; out=$(train million "$work/run-1m-new" "$work/cache-1m" 0 1) ;;
      resume) out=$(train million "$work/run-1m-new" "$work/cache-1m" 0 $((2 + r))) ;;
    esac
    times+=("${out%% *}")
  done
  echo "$kind: median $(printf '%s\n' "${times[@]}" | median) s (${times[*]})"
done

fi

if part memory; then
echo "== peak resident memory, 20 steps (first start, then a new run on cached data) =="
corpus big "$big"
for name in small big; do
  rm -rf "$work/cache-$name" "$work/run-$name"
  first=$(train "$name" "$work/run-$name" "$work/cache-$name" 0 20)
  rm -rf "$work/run-$name"
  again=$(train "$name" "$work/run-$name" "$work/cache-$name" 0 20)
  echo "$name ($(wc -l < "$work/$name/train.en") pairs): first start ${first%% *} s, ${first##* } KB peak;" \
       "cached ${again%% *} s, ${again##* } KB peak"
done

fi

if part weights; then
echo "== two corpora weighted 3:1 over 1,000 steps =="
rm -rf "$work/run-weights"
LOG_EVERY=100 train small "$work/run-weights" "$work/cache-small" 0 1000 \
  --corpus "$work/small/train.en,$work/small/train.de,3" --corpus "$work/million/train.en,$work/million/train.de,1" >/dev/null
grep '"event":"train"' "$work/run-weights/metrics.jsonl" | sed 's/.*"corpus_pairs":\[\([0-9]*\),\([0-9]*\)\].*/\1 \2/' |
  awk '{a += $1; b += $2} END {printf "pairs served: %d and %d, shares %.2f%% and %.2f%%\n", a, b, 100 * a / (a + b), 100 * b / (a + b)}'
fi
