#!/usr/bin/env bash
# `trafo serve` against offline `trafo translate` and against CTranslate2 behind a minimal Python
# server (bench/serve_load.py), on a default-size model and 1,000 toy sentences, all on 127.0.0.1:
#   - offline: `trafo translate --threads T` on the sentences, less its start-up (one sentence), in
#     turn with the served load of the same round;
#   - served: CLIENTS concurrent clients, one sentence a request (LibreTranslate's POST /translate);
#   - lone: one one-sentence request at a time, its latency against the server's decoding time of it;
#   - ct2: the same load against the model's CTranslate2 export, greedy, one request at a time each.
# Each figure is the median of ROUNDS rounds. With --soak MINUTES it then runs the soak (good, bad and
# dropped requests from 16 clients) and reports failed good requests and the server's RSS.
#
#   bench/serve.sh [--threads 2] [--clients 64] [--rounds 3] [--steps 300] [--checkpoint FILE]
#                  [--soak MINUTES] [--work DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
threads=2
clients=64
rounds=3
steps=300
checkpoint=""
soak=0
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --checkpoint) checkpoint="$2"; shift 2 ;;
    --soak) soak="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "serve.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$work" ]] || work=$(mktemp -d /tmp/trafo-serve-bench.XXXXXX)
mkdir -p "$work"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# shellcheck source=bench/serve_common.sh
source "$root/bench/serve_common.sh"

processor
toy_model
head -1 "$sentences" >"$work/one.en"
"$trafo" export --checkpoint "$checkpoint" --out "$work/ct2" --force >/dev/null 2>&1
decoding=(--threads "$threads" --precision fp32)

# Sentences a second of offline translate, less its start-up (the time of one sentence).
offline_round() {
  local start all one
  start=$(date +%s.%N); "$trafo" translate -c "$checkpoint" "${decoding[@]}" <"$sentences" >"$work/offline.de" 2>/dev/null
  all=$(echo "$(date +%s.%N) - $start" | bc)
  start=$(date +%s.%N); "$trafo" translate -c "$checkpoint" "${decoding[@]}" <"$work/one.en" >/dev/null 2>/dev/null
  one=$(echo "$(date +%s.%N) - $start" | bc)
  echo "$(wc -l <"$sentences") / ($all - $one)" | bc -l
}

start_server "${decoding[@]}"
# Offline and served take turns in each round (the server idles meanwhile), so that a change in the
# machine's speed moves both; the share is each round's served over its offline, their median.
offline=(); served=(); share=(); p50=(); p95=(); p99=(); lone=(); lone_decoding=(); ratio=()
for _ in $(seq "$rounds"); do
  offline+=("$(offline_round)")
  result=$("$python" "$root/bench/serve_load.py" load --url "$url" --sentences "$sentences" --clients "$clients")
  served+=("$(field sentences_per_s <<<"$result")"); p50+=("$(field p50_ms <<<"$result")")
  share+=("$(echo "100 * ${served[-1]} / ${offline[-1]}" | bc -l)")
  p95+=("$(field p95_ms <<<"$result")"); p99+=("$(field p99_ms <<<"$result")")
  [[ "$(field failures <<<"$result")" == 0 ]] || say "failed requests: $result"
  result=$("$python" "$root/bench/serve_load.py" lone --url "$url" --sentence "$(cat "$work/one.en")")
  lone+=("$(field p50_ms <<<"$result")"); lone_decoding+=("$(field decoding_p50_ms <<<"$result")")
  ratio+=("$(field ratio <<<"$result")")
done
if [[ "$soak" != 0 ]]; then
  say "soak for $soak minutes"
  soak_result=$("$python" "$root/bench/serve_load.py" soak --url "$url" --pid "$server" --sentences "$sentences" \
    --minutes "$soak")
fi
kill -TERM "$server"; wait "$server" || say "trafo serve exited $?"

"$python" "$root/bench/serve_load.py" ct2-server --model "$work/ct2" --sp "$work/ct2/sentencepiece.model" \
  --port $((port + 1)) --threads "$threads" >"$work/ct2.out" 2>&1 &
ct2=$!
trap 'kill $ct2 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q listening "$work/ct2.out" 2>/dev/null && break; sleep 0.2; done
ct2_rate=(); ct2_p50=(); ct2_p99=()
for _ in $(seq "$rounds"); do
  result=$("$python" "$root/bench/serve_load.py" load --url "http://127.0.0.1:$((port + 1))" \
    --sentences "$sentences" --clients "$clients")
  ct2_rate+=("$(field sentences_per_s <<<"$result")"); ct2_p50+=("$(field p50_ms <<<"$result")")
  ct2_p99+=("$(field p99_ms <<<"$result")")
done
kill "$ct2"

m() { printf '%s\n' "$@" | median; }
echo "threads $threads, $clients clients, $(wc -l <"$sentences") sentences, medians of $rounds rounds"
printf 'offline trafo translate:      %8.1f sentences/s\n' "$(m "${offline[@]}")"
printf 'trafo serve, %3d clients:     %8.1f sentences/s (%.0f%% of offline, by round %s), p50 %s ms, p95 %s ms, p99 %s ms\n' \
  "$clients" "$(m "${served[@]}")" "$(m "${share[@]}")" \
  "$(printf '%.0f%% ' "${share[@]}" | sed 's/ $//')" "$(m "${p50[@]}")" "$(m "${p95[@]}")" "$(m "${p99[@]}")"
printf 'trafo serve, lone request:    p50 %s ms, its decoding %s ms, ratio %s\n' \
  "$(m "${lone[@]}")" "$(m "${lone_decoding[@]}")" "$(m "${ratio[@]}")"
printf 'CTranslate2 + Python server:  %8.1f sentences/s, p50 %s ms, p99 %s ms\n' \
  "$(m "${ct2_rate[@]}")" "$(m "${ct2_p50[@]}")" "$(m "${ct2_p99[@]}")"
[[ -z "${soak_result:-}" ]] || echo "soak: $soak_result"
