#!/usr/bin/env bash
# Training speed alone and beside one busy process: what trafo's default (--threads 0 follows the
# machine's load) costs on an idle machine and saves on a shared one, against fixed thread counts.
#
#   bench/shared_machine.sh [--rounds N] [--trafo PATH] [BENCH OPTIONS...]
#
# Each setting runs `trafo bench --json --decode-sentences 0 BENCH OPTIONS` N times (default 3)
# alone, then N times beside a busy loop on one core; prints the median target tokens/s of each.
# Default BENCH OPTIONS: --config configs/toy.toml --train-steps 20 --precision fp32 (give one
# precision: the median is over the run's training records). Run it on an idle machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
trafo="$root/build/trafo"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --trafo) trafo="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
((${#args[@]})) || args=(--config "$root/configs/toy.toml" --train-steps 20 --precision fp32)
[[ -x "$trafo" ]] || { echo "shared_machine.sh: no trafo binary at $trafo (build it, or pass --trafo PATH)" >&2; exit 2; }

# Each setting: NAME|ENVIRONMENT|EXTRA BENCH OPTIONS. "trafo default" is --threads 0, which follows
# the machine's load (src/util/device.cpp); the others fix the threads as trafo did before.
cores=$(nproc)
settings=("trafo default (threads follow the load)||"
          "$cores threads, libgomp's spin waits||--threads $cores"
          "$cores threads, OMP_WAIT_POLICY=PASSIVE|OMP_WAIT_POLICY=PASSIVE|--threads $cores"
          "1 thread||--threads 1")

tokens_per_s() {  # prints the median over the training records of one bench run
  grep '"record":"train"' | sed 's/.*"tgt_tokens_per_s":\([0-9.e+]*\).*/\1/' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

grep -m1 "model name" /proc/cpuinfo
printf '%-44s %-8s %s\n' setting machine "target tok/s (median of $rounds)"
for situation in alone shared; do
  busy=""
  if [[ $situation == shared ]]; then
    (while :; do :; done) &
    busy=$!
  fi
  for setting in "${settings[@]}"; do
    IFS='|' read -r name env_text extra <<< "$setting"
    results=()
    for ((r = 1; r <= rounds; r++)); do
      # shellcheck disable=SC2086 # the environment and options are words
      results+=("$(env $env_text "$trafo" bench --json --decode-sentences 0 "${args[@]}" $extra | tokens_per_s)")
    done
    printf '%-44s %-8s %s\n' "$name" "$situation" "$(printf '%s\n' "${results[@]}" | median)"
  done
  [[ -n $busy ]] && kill "$busy"
done
