# shellcheck shell=bash disable=SC2034,SC2154  # the sourcing script sets and reads these variables
# Sourced by bench/serve.sh, bench/serve_soak.sh and the benchmarks of served or translated text.
# Needs trafo, python, work, threads, steps and checkpoint set (checkpoint may be empty).

say() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
field() { "$python" -c "import json,sys; print(json.loads(sys.stdin.read())['$1'])"; }

processor() {
  echo "processor: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')" \
    "(family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ');" \
    "$(grep -o -m1 -w -E 'amx_bf16|avx512_bf16' /proc/cpuinfo | head -1 || echo 'no bf16 flag'); $(nproc) cores)"
}

# A benchmark's first lines: WORK made (a fresh temporary folder unless set), then the processor and
# the date printed and kept in cpu and date.
bench_start() {
  [[ -n "$work" ]] || work=$(mktemp -d "/tmp/trafo-$1-bench.XXXXXX")
  mkdir -p "$work"
  cpu=$(processor | sed 's/^processor: //')
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  echo "processor: $cpu"
  echo "date: $date"
}

# Without a checkpoint, a default-size model trained for STEPS steps on a toy corpus. Unless
# sentences is set, it becomes 1,000 toy test sentences.
toy_model() {
  if [[ -z "$checkpoint" ]]; then
    say "toy corpus and a default-size model trained for $steps steps in $work"
    "$trafo" toy-corpus --out "$work/toy" --train 20000 --dev 100 --test 1000 >/dev/null 2>&1
    "$trafo" train --data-dir "$work/toy" --src-lang en --tgt-lang de --run-dir "$work/run" --max-steps "$steps" \
      --valid-every "$steps" --vocab-size 2000 --threads "$threads" --early-stopping 0 --overwrite >/dev/null 2>&1
    checkpoint="$work/run/checkpoint-last.pt"
  elif [[ -z "${sentences:-}" && ! -f "$work/toy/test.en" ]]; then
    "$trafo" toy-corpus --out "$work/toy" --train 100 --dev 10 --test 1000 >/dev/null 2>&1
  fi
  sentences=${sentences:-$work/toy/test.en}
}

# NAME ARGS...: `trafo serve ARGS...` on a free port (port 0), with --threads THREADS, its output in
# WORK/NAME.out and .err; sets server (its PID) and url once it listens, or ends the benchmark.
serve_named() {
  local name=$1
  shift
  "$trafo" serve "$@" --port 0 --threads "$threads" >"$work/$name.out" 2>"$work/$name.err" &
  server=$!
  for _ in $(seq 300); do
    grep -q listening "$work/$name.out" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  url=$(grep -m1 -o 'http://[0-9.]*:[0-9]*' "$work/$name.out") \
    || { say "trafo serve ($name) did not start"; cat "$work/$name.err" >&2; exit 1; }
}
# Stops serve_named's server, answering what is in flight (SIGTERM).
serve_down() { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=""; }

# `trafo serve` of the checkpoint on a free port of 127.0.0.1, with OPTIONS; sets server (its PID),
# port and url once it listens.
start_server() {
  port=$((20000 + RANDOM % 20000))
  "$trafo" serve -c "$checkpoint" "$@" --port "$port" >"$work/serve.out" 2>"$work/serve.err" &
  server=$!
  trap 'kill $server 2>/dev/null || true' EXIT
  for _ in $(seq 100); do grep -q listening "$work/serve.out" 2>/dev/null && break; sleep 0.2; done
  url="http://127.0.0.1:$port"
}
