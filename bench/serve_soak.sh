#!/usr/bin/env bash
# A bounded hostile-client soak of `trafo serve` on 127.0.0.1 (bench/serve_load.py soak). For MINUTES
# (at most 10): 16 clients send good requests (each answer checked against the first for its line),
# malformed ones and ones that hang up mid-body; 8 hostile clients connect and say nothing, drip a head
# a byte at a time, send chunked and gzip bodies and a Content-Length past --max-request-bytes, or never
# read their answer; /health is probed every 0.5 s. Then SIGTERM while good requests are in flight.
# Prints the soak's figures and one line: PASS when every good request was answered correctly, every
# hostile one as it should be, /health answered 200 within 1 s throughout, RSS at the end is within 10%
# of the second minute's, every request sent before SIGTERM was answered 200 or 503, and the server
# exited 0. It builds nothing; without --checkpoint it trains serve.sh's toy model (STEPS steps).
#
#   bench/serve_soak.sh [--trafo build/trafo] [--checkpoint FILE] [--sentences FILE] [--minutes 5]
#                       [--threads 2] [--steps 300] [--work DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
checkpoint=""
sentences=""
minutes=5
threads=2
steps=300
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --trafo) trafo="$2"; shift 2 ;;
    --checkpoint) checkpoint="$2"; shift 2 ;;
    --sentences) sentences="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "serve_soak.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
awk -v m="$minutes" 'BEGIN {exit !(m > 0 && m <= 10)}' || { echo "serve_soak.sh: --minutes is 0 to 10" >&2; exit 2; }
[[ -x "$trafo" ]] || { echo "serve_soak.sh: no $trafo: build it first" >&2; exit 2; }
[[ -n "$work" ]] || work=$(mktemp -d /tmp/trafo-serve-soak.XXXXXX)
mkdir -p "$work"
# shellcheck source=bench/serve_common.sh
source "$root/bench/serve_common.sh"

processor
toy_model
limits=(--read-timeout 5 --max-request-bytes 1048576)
start_server --threads "$threads" --precision fp32 "${limits[@]}"
say "soak for $minutes minutes against $url, then SIGTERM"
result=$("$python" "$root/bench/serve_load.py" soak --url "$url" --pid "$server" --sentences "$sentences" \
  --minutes "$minutes" --clients 16 --hostile 8 "${limits[@]}" --sigterm-at-end)
# The drain is bounded by --request-timeout (60 s): a server still up 90 s after SIGTERM has hung.
(sleep 90; kill -KILL "$server" 2>/dev/null) &
watchdog=$!
status=0
wait "$server" || status=$?
kill "$watchdog" 2>/dev/null || true
echo "soak: $result"
"$python" "$root/bench/serve_load.py" verdict --result "$result" --exit-code "$status"
