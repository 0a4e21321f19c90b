#!/usr/bin/env bash
# `trafo serve` throughput with and without its translation cache (--cache-sentences), on a load where
# every other request repeats an earlier one. REQUESTS one-sentence requests (LibreTranslate's POST
# /translate, en->de): request 0, 2, 4, ... is the next unseen sentence of the toy corpus's dev and
# test sets (seed 1, 2,000 distinct sentences), request 1, 3, 5, ... repeats one of the requests before
# it, drawn with --seed: half the requests are repeats. bench/serve_load.py load sends them in file
# order, each of CLIENTS concurrent clients taking the next unsent one; a repeat whose sentence is
# still being decoded is not a cache hit, so the hits can fall short of REQUESTS / 2.
# ROUNDS rounds, each a server with --cache-sentences 0 and then one with --cache-sentences CACHE, a
# fresh server (an empty cache) for every load. Reported: sentences/s (median of the rounds, and each
# round), the medians of the rounds' p50 and p95 latency, and trafo_cache_hits_total and
# trafo_cache_misses_total from /metrics after each load. Before the timed rounds, an untimed check
# round on two more fresh servers records every answer of the same load: the translations with and
# without the cache must be identical, request by request (differences in WORK/cache-differences.tsv).
# The model: --checkpoint CKPT; without it a default-size model trained for STEPS steps as
# bench/serve.sh makes one (a few minutes); with --smoke a 32-wide one-layer model trained for 2
# steps, 20 requests, 1 round (each unless given).
# Prints the processor and date, a Markdown table, and last one JSON object on one line.
# On 2 cores, with a given default-size checkpoint: about 2 minutes for the defaults.
#
#   bench/cache.sh [--checkpoint CKPT | --steps 300 | --smoke] [--requests 2000] [--rounds 3]
#                  [--clients 64] [--cache 10000] [--threads 2] [--seed 1] [--work DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
checkpoint=""
steps=300
smoke=0
requests=""
rounds=""
clients=64
cache=10000
threads=2
seed=1
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --checkpoint) checkpoint="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --requests) requests="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cache.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ "$smoke" == 1 ]]; then requests=${requests:-20}; rounds=${rounds:-1}; else requests=${requests:-2000}; rounds=${rounds:-3}; fi
# shellcheck source=bench/serve_common.sh
source "$root/bench/serve_common.sh"  # say, processor, bench_start
bench_start cache

# The toy corpus: its dev and test sets are the sentences; its training set the model's, if made here.
if [[ -z "$checkpoint" && "$smoke" == 0 ]]; then pairs=20000; elif [[ -z "$checkpoint" ]]; then pairs=300; else pairs=100; fi
"$trafo" toy-corpus --out "$work/toy" --train "$pairs" --dev 1000 --test 1000 --force >/dev/null 2>&1
if [[ -z "$checkpoint" ]]; then
  if [[ "$smoke" == 1 ]]; then
    say "a tiny model trained for 2 steps in $work/run"
    model=(--max-steps 2 --valid-every 2 --valid-max-sentences 5 --d-model 32 --heads 2 --encoder-layers 1
           --decoder-layers 1 --d-ff 64 --vocab-size 1000)
  else
    say "a default-size model trained for $steps steps in $work/run"
    model=(--max-steps "$steps" --valid-every "$steps" --vocab-size 2000)
  fi
  "$trafo" train --data-dir "$work/toy" --src-lang en --tgt-lang de --run-dir "$work/run" "${model[@]}" \
    --threads "$threads" --early-stopping 0 --cache-dir "$work/cache" --no-resume --overwrite >"$work/train.log" 2>&1 \
    || { say "training failed, see $work/train.log"; tail -5 "$work/train.log" >&2; exit 1; }
  checkpoint="$work/run/checkpoint-last.pt"
fi
[[ -f "$checkpoint" ]] || { echo "cache.sh: no checkpoint $checkpoint" >&2; exit 1; }

# The requests, a sentence a line: WORK/requests.en.
"$python" - "$work" "$requests" "$seed" <<'PY'
import random, sys

work, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pool, seen = [], set()
for name in ("dev.en", "test.en"):
    for line in open("%s/toy/%s" % (work, name), encoding="utf-8"):
        line = line.strip()
        if line and line not in seen:
            seen.add(line)
            pool.append(line)
fresh = (n + 1) // 2
if fresh > len(pool):
    raise SystemExit("cache.sh: %d requests need %d distinct sentences; the toy dev and test sets hold %d"
                     % (n, fresh, len(pool)))
rng, out = random.Random(seed), []
for i in range(n):
    out.append(pool[i // 2] if i % 2 == 0 else rng.choice(out))
with open(work + "/requests.en", "w", encoding="utf-8") as f:
    f.write("".join(line + "\n" for line in out))
PY

server=""
trap '[[ -z "$server" ]] || kill "$server" 2>/dev/null || true' EXIT
# NAME OPTIONS...: `trafo serve` of the checkpoint on a free port; sets server and url.
serve_up() {
  local name=$1
  shift
  serve_named "$name" -c "$checkpoint" "$@"
}
# The cache counters of /metrics, as JSON.
cache_metrics() {
  "$python" - "$url" <<'PY'
import json, re, sys, urllib.request

text = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=30).read().decode()
value = lambda name: int(float(re.search(r"^%s (\S+)$" % name, text, re.M).group(1)))
print(json.dumps({"hits": value("trafo_cache_hits_total"), "misses": value("trafo_cache_misses_total")}))
PY
}
# OUT: the same load as serve_load.py's (file order, CLIENTS clients on keep-alive connections), every
# answer kept: OUT gets a JSON list of the translations, request by request.
collect() {
  "$python" - "$url" "$work/requests.en" "$clients" "$1" <<'PY'
import asyncio, json, re, sys
from urllib.parse import urlparse

url, path, clients, out = urlparse(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
lines = open(path, encoding="utf-8").read().splitlines()
answers = [None] * len(lines)
pending = list(range(len(lines)))[::-1]


async def client():
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    while pending:
        i = pending.pop()
        body = json.dumps({"q": lines[i], "source": "en", "target": "de"}).encode()
        writer.write(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        head = await reader.readuntil(b"\r\n\r\n")
        answer = await reader.readexactly(int(re.search(rb"(?i)content-length: *(\d+)", head).group(1)))
        if not head.startswith(b"HTTP/1.1 200"):
            raise SystemExit("request %d answered %r" % (i, head[:40]))
        answers[i] = json.loads(answer)["translatedText"]
    writer.close()


async def run():
    await asyncio.gather(*(client() for _ in range(clients)))


asyncio.run(run())
json.dump(answers, open(out, "w", encoding="utf-8"), ensure_ascii=False)
PY
}

say "$requests requests, $clients clients, $rounds rounds; check round first"
for size in 0 "$cache"; do
  serve_up "check-$size" --cache-sentences "$size"
  collect "$work/answers-$size.json"
  cache_metrics >"$work/check-metrics-$size.json"
  serve_down
done
: >"$work/rounds.jsonl"
for round in $(seq "$rounds"); do
  for size in 0 "$cache"; do
    serve_up "serve-$size" --cache-sentences "$size"
    load=$("$python" "$root/bench/serve_load.py" load --url "$url" --sentences "$work/requests.en" --clients "$clients")
    metrics=$(cache_metrics)
    serve_down
    echo "{\"round\": $round, \"cache_sentences\": $size, \"load\": $load, \"metrics\": $metrics}" >>"$work/rounds.jsonl"
    say "round $round, --cache-sentences $size: $load $metrics"
  done
done

"$python" - "$work" "$cpu" "$date" "$checkpoint" "$threads" "$clients" "$requests" "$rounds" "$cache" "$seed" <<'PY'
import json, statistics, sys

work, cpu, date, checkpoint = sys.argv[1:5]
threads, clients, requests, rounds, cache, seed = map(int, sys.argv[5:11])
lines = open(work + "/requests.en", encoding="utf-8").read().splitlines()
rounds_ = [json.loads(line) for line in open(work + "/rounds.jsonl")]
without, with_ = (json.load(open("%s/answers-%d.json" % (work, size), encoding="utf-8")) for size in (0, cache))
differ = [i for i in range(len(lines)) if without[i] != with_[i]]
with open(work + "/cache-differences.tsv", "w", encoding="utf-8") as f:
    for i in differ:
        f.write("%d\t%s\t%s\t%s\n" % (i, lines[i], without[i], with_[i]))
# Each sentence answered alike every time it was asked, in each server.
inconsistent = {size: sum(len(set(a for l, a in zip(lines, answers) if l == line)) > 1 for line in set(lines))
                for size, answers in ((0, without), (cache, with_))}
check_metrics = {size: json.load(open("%s/check-metrics-%d.json" % (work, size))) for size in (0, cache)}

median = lambda values: round(statistics.median(values), 2)
rows = {}
for size in (0, cache):
    mine = [r for r in rounds_ if r["cache_sentences"] == size]
    if any(r["load"]["failures"] for r in mine):
        print("failed requests with --cache-sentences %d: %s" % (size, [r["load"]["failures"] for r in mine]),
              file=sys.stderr)
    rows[size] = {"cache_sentences": size, "sentences_per_s": median([r["load"]["sentences_per_s"] for r in mine]),
                  "sentences_per_s_by_round": [r["load"]["sentences_per_s"] for r in mine],
                  "p50_ms": median([r["load"]["p50_ms"] for r in mine]),
                  "p95_ms": median([r["load"]["p95_ms"] for r in mine]),
                  "cache_hits": median([r["metrics"]["hits"] for r in mine]),
                  "cache_hits_by_round": [r["metrics"]["hits"] for r in mine],
                  "cache_misses": median([r["metrics"]["misses"] for r in mine]),
                  "failures": sum(r["load"]["failures"] for r in mine)}
repeats = requests // 2
speedup = round(rows[cache]["sentences_per_s"] / rows[0]["sentences_per_s"], 3) if rows[0]["sentences_per_s"] else None

print()
print("%d requests, %d of them repeats (seed %d), %d distinct sentences; %d clients, --threads %d; medians of %d rounds"
      % (requests, repeats, seed, len(set(lines)), clients, threads, rounds))
print()
print("| --cache-sentences | sentences/s (by round) | p50 ms | p95 ms | cache hits (by round) | cache misses | failures |")
print("|---|---|---|---|---|---|---|")
for size, r in rows.items():
    print("| %d | %.1f (%s) | %.1f | %.1f | %g (%s) | %g | %d |" % (
        size, r["sentences_per_s"], ", ".join("%.1f" % v for v in r["sentences_per_s_by_round"]), r["p50_ms"],
        r["p95_ms"], r["cache_hits"], ", ".join(str(v) for v in r["cache_hits_by_round"]), r["cache_misses"],
        r["failures"]))
print()
print("with the cache / without: %sx sentences/s; translations identical with and without the cache: %s (%d of %d "
      "requests differ); check round hits %d of %d repeats" % (
          speedup, "yes" if not differ else "NO", len(differ), len(lines), check_metrics[cache]["hits"], repeats))
print(json.dumps({"benchmark": "cache", "date": date, "processor": cpu, "checkpoint": checkpoint, "threads": threads,
                  "clients": clients, "requests": requests, "repeats": repeats, "distinct_sentences": len(set(lines)),
                  "rounds": rounds, "seed": seed, "without_cache": rows[0], "with_cache": rows[cache],
                  "speedup": speedup, "identical_translations": not differ, "differing_requests": len(differ),
                  "sentences_answered_differently_within_a_server": inconsistent,
                  "check_round_metrics": check_metrics}))
PY
