#!/usr/bin/env bash
# `trafo serve` against offline `trafo translate` and against CTranslate2 behind a minimal Python
# server (bench/serve_load.py), on a default-size model and 1,000 toy sentences, all on 127.0.0.1:
#   - offline: `trafo translate --threads T` on the sentences, less its start-up (one sentence), in
#     turn with the served load of the same round;
#   - served: CLIENTS concurrent clients, one sentence a request (LibreTranslate's POST /translate);
#   - lone: one one-sentence request at a time, its latency against the server's decoding time of it;
#   - ct2: the same load against the model's CTranslate2 export, greedy, one request at a time each.
# Each figure is the median of ROUNDS rounds. --precision fp32,bf16 measures each precision in every
# round, in turn, each with a server of its own (CTranslate2 runs once, in its default float32). With
# --soak MINUTES it then runs the soak (good, bad and dropped requests from 16 clients) against the
# first precision's server and reports failed good requests and the server's RSS.
#
#   bench/serve.sh [--threads 2] [--clients 64] [--rounds 3] [--steps 300] [--checkpoint FILE]
#                  [--precision fp32[,bf16]] [--soak MINUTES] [--work DIR] [--serve-args "OPTIONS"]
# --serve-args gives the servers more options (e.g. "--decoders 1").
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
precisions=fp32
serve_args=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --checkpoint) checkpoint="$2"; shift 2 ;;
    --soak) soak="$2"; shift 2 ;;
    --precision) precisions="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --serve-args) serve_args="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
IFS=, read -r -a precision_list <<<"$precisions"

# Sentences a second of offline translate in precision $1, less its start-up (the time of one sentence).
offline_round() {
  local start all one decoding=(--threads "$threads" --precision "$1")
  start=$(date +%s.%N); "$trafo" translate -c "$checkpoint" "${decoding[@]}" <"$sentences" >"$work/offline.de" 2>/dev/null
  all=$(echo "$(date +%s.%N) - $start" | bc)
  start=$(date +%s.%N); "$trafo" translate -c "$checkpoint" "${decoding[@]}" <"$work/one.en" >/dev/null 2>/dev/null
  one=$(echo "$(date +%s.%N) - $start" | bc)
  echo "$(wc -l <"$sentences") / ($all - $one)" | bc -l
}

# A server for each precision, each on its own port; the others idle while one is loaded.
declare -A urls pids
for precision in "${precision_list[@]}"; do
  # shellcheck disable=SC2086  # the options, one word each
  start_server --threads "$threads" --precision "$precision" $serve_args
  urls[$precision]=$url; pids[$precision]=$server
  grep -q listening "$work/serve.out" || { say "trafo serve --precision $precision did not start"; cat "$work/serve.err" >&2; exit 1; }
  cp "$work/serve.err" "$work/serve-$precision.err"
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
# Offline and served take turns in each round (the server idles meanwhile), so that a change in the
# machine's speed moves both; the share is each round's served over its offline, their median.
declare -A offline served share p50 p95 p99 lone lone_decoding ratio
for _ in $(seq "$rounds"); do
  for precision in "${precision_list[@]}"; do
    url=${urls[$precision]}
    rate=$(offline_round "$precision")
    offline[$precision]+="$rate "
    result=$("$python" "$root/bench/serve_load.py" load --url "$url" --sentences "$sentences" --clients "$clients")
    served[$precision]+="$(field sentences_per_s <<<"$result") "
    share[$precision]+="$(echo "100 * $(field sentences_per_s <<<"$result") / $rate" | bc -l) "
    p50[$precision]+="$(field p50_ms <<<"$result") "; p95[$precision]+="$(field p95_ms <<<"$result") "
    p99[$precision]+="$(field p99_ms <<<"$result") "
    [[ "$(field failures <<<"$result")" == 0 ]] || say "failed requests ($precision): $result"
    result=$("$python" "$root/bench/serve_load.py" lone --url "$url" --sentence "$(cat "$work/one.en")")
    lone[$precision]+="$(field p50_ms <<<"$result") "; lone_decoding[$precision]+="$(field decoding_p50_ms <<<"$result") "
    ratio[$precision]+="$(field ratio <<<"$result") "
  done
done
if [[ "$soak" != 0 ]]; then
  say "soak for $soak minutes"
  soak_result=$("$python" "$root/bench/serve_load.py" soak --url "${urls[${precision_list[0]}]}" \
    --pid "${pids[${precision_list[0]}]}" --sentences "$sentences" --minutes "$soak")
fi
for precision in "${precision_list[@]}"; do
  kill -TERM "${pids[$precision]}"; wait "${pids[$precision]}" || say "trafo serve --precision $precision exited $?"
done

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

m() { printf '%s\n' $1 | median; }
echo "threads $threads, $clients clients, $(wc -l <"$sentences") sentences, medians of $rounds rounds"
for precision in "${precision_list[@]}"; do
  printf '%s: offline trafo translate: %8.1f sentences/s\n' "$precision" "$(m "${offline[$precision]}")"
  printf '%s: trafo serve, %3d clients: %8.1f sentences/s (%.0f%% of offline, by round %s), p50 %s ms, p95 %s ms, p99 %s ms\n' \
    "$precision" "$clients" "$(m "${served[$precision]}")" "$(m "${share[$precision]}")" \
    "$(printf '%.0f%% ' ${share[$precision]} | sed 's/ $//')" "$(m "${p50[$precision]}")" "$(m "${p95[$precision]}")" \
    "$(m "${p99[$precision]}")"
  printf '%s: trafo serve, lone request: p50 %s ms, its decoding %s ms, ratio %s\n' "$precision" \
    "$(m "${lone[$precision]}")" "$(m "${lone_decoding[$precision]}")" "$(m "${ratio[$precision]}")"
  grep -h "precision" "$work/serve-$precision.err" | head -1 | sed "s/^/$precision: server: /" || true
done
printf 'CTranslate2 + Python server:  %8.1f sentences/s, p50 %s ms, p99 %s ms\n' \
  "$(m "${ct2_rate[*]}")" "$(m "${ct2_p50[*]}")" "$(m "${ct2_p99[*]}")"
[[ -z "${soak_result:-}" ]] || echo "soak: $soak_result"
