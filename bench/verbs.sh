#!/usr/bin/env bash
# The verbs' speed (README "Performance"): score-pairs against eval's teacher-forced pass, sampling
# against greedy decoding, an ensemble of 2 against one model, on one checkpoint and one set of
# sentences, side by side in one run.
#
#   bench/verbs.sh [--checkpoint CKPT] [--sentences N] [--rounds R] [--threads T] [--trafo PATH]
#
# Default: the toy fixture model (tests/fixtures/checkpoints/toy-format2.pt, d-model 64, 2+2 layers)
# on N (default 4000) toy test sentences and their references (`trafo toy-corpus`), fp32, 2 threads,
# medians of R (default 3) rounds. Translation figures are target pieces per second of the whole
# command; scoring figures those of the scoring pass alone (score-pairs' log, eval's loss_seconds).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
checkpoint="$root/tests/fixtures/checkpoints/toy-format2.pt"
sentences=4000
rounds=3
threads=2
trafo="$root/build/trafo"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --checkpoint) checkpoint="$2"; shift 2 ;;
    --sentences) sentences="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --trafo) trafo="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "verbs.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$trafo" toy-corpus --out "$work/toy" --train 0 --dev 0 --test "$sentences" >/dev/null 2>&1
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
common=(--threads "$threads" --precision fp32)
echo "processor: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) threads; $threads threads used"

pieces_of() { awk '{n += NF} END {print n}'; }
scoring=() evals=() greedy=() sampled=() ensemble=()
for ((r = 0; r < rounds; r++)); do
  log=$("$trafo" score-pairs -c "$checkpoint" "${common[@]}" --src "$work/toy/test.en" --tgt "$work/toy/test.de" 2>&1 >/dev/null)
  scoring+=("$(sed -n 's/.*: \([0-9]*\) target pieces\/s.*/\1/p' <<< "$log")")
  json=$("$trafo" eval -c "$checkpoint" "${common[@]}" --src "$work/toy/test.en" --ref "$work/toy/test.de" --json 2>/dev/null)
  evals+=("$(sed 's/.*"loss_seconds":\([0-9.e-]*\).*"target_tokens":\([0-9]*\).*/\2 \1/' <<< "$json" | awk '{print $1 / $2}')")
  for kind in greedy sampled ensemble; do
    case $kind in
      greedy) extra=() ;;
      sampled) extra=(--sampling-topk 10 --seed 1) ;;
      ensemble) extra=(-c "$checkpoint") ;;
    esac
    start=$(date +%s.%N)
    "$trafo" translate -c "$checkpoint" "${common[@]}" "${extra[@]}" --input "$work/toy/test.en" --output "$work/out.txt" 2>/dev/null
    end=$(date +%s.%N)
    # Pieces: the words of the output are a lower bound; the ratio between the rows is what counts.
    words=$(pieces_of < "$work/out.txt")
    value=$(echo "$words / ($end - $start)" | bc -l)
    case $kind in greedy) greedy+=("$value") ;; sampled) sampled+=("$value") ;; ensemble) ensemble+=("$value") ;; esac
  done
done
m() { printf '%s\n' "$@" | median; }
s=$(m "${scoring[@]}"); e=$(m "${evals[@]}"); g=$(m "${greedy[@]}"); p=$(m "${sampled[@]}"); n=$(m "${ensemble[@]}")
printf 'score-pairs %.0f target pieces/s; eval teacher-forced %.0f: %.2fx\n' "$s" "$e" "$(echo "$s / $e" | bc -l)"
printf 'translate greedy %.0f words/s; sampling top-10 %.0f: %.2fx; ensemble of 2 %.0f: %.2fx\n' \
  "$g" "$p" "$(echo "$p / $g" | bc -l)" "$n" "$(echo "$n / $g" | bc -l)"
