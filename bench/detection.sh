#!/usr/bin/env bash
# Language detection of `trafo serve`'s POST /detect (LibreTranslate's API): how often the language it
# names first is the language of the text. The issue's target: at least 99% right on lines of 5 words
# or more. The detector's candidates are the source languages served, so each test serves two
# directions, both ways, from tiny checkpoints (1 to 2 training steps of a 32-wide model: detection
# does not depend on translation quality; they are trained on the same TRAIN_PAIRS pairs a real model
# of that corpus would see, should the detector ever learn from a model's corpus):
#   - toy: en->de and de->en on the toy corpus (de->en is `--src-lang de --tgt-lang en` on the same
#     files); LINES toy dev sentences of each side, expected en and de;
#   - gettext: with --gettext DIR (a corpus of UI strings, DIR/{train,dev}.{en,fr}, such as the
#     gettext-enfr corpus bench/gettext_corpus.py builds), en->fr and fr->en on it (its first
#     TRAIN_PAIRS training pairs, copied into WORK); up to LINES of its dev strings of each side,
#     expected en and fr. Skipped (and said so in the output) without it.
# One request a line, one at a time on a keep-alive connection; an empty answer ([]: no candidate
# language) counts as wrong ("none"). Per source and language: lines, share right; and the same for
# lines of >= 5 words and of < 5 words (words: split at white space). The wrong answers go to
# WORK/detection-errors.tsv (source, expected, answered, line).
# Prints the processor and date, a Markdown table, and last one JSON object on one line.
# About a minute on 2 cores (most of it the vocabularies of the tiny models).
#
#   bench/detection.sh [--lines 1000] [--train-pairs 20000] [--threads 2] [--work DIR]
#                      [--gettext DIR]
# Smoke test: bench/detection.sh --lines 20 --train-pairs 200
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
lines=1000
train_pairs=20000
threads=2
work=""
gettext=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --lines) lines="$2"; shift 2 ;;
    --train-pairs) train_pairs="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --gettext) gettext="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "detection.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/serve_common.sh
source "$root/bench/serve_common.sh"  # say, processor, bench_start
bench_start detection

# DATA_DIR SRC TGT RUN: a 32-wide, one-layer model trained for 2 steps; its best checkpoint.
tiny_model() {
  "$trafo" train --data-dir "$1" --src-lang "$2" --tgt-lang "$3" --run-dir "$4" --max-steps 2 --valid-every 2 \
    --valid-max-sentences 5 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64 --vocab-size 1000 \
    --early-stopping 0 --threads "$threads" --cache-dir "$work/cache" --no-resume --overwrite >"$4.log" 2>&1 \
    || { say "training $2-$3 failed, see $4.log"; tail -5 "$4.log" >&2; exit 1; }
  echo "$4/checkpoint-best.pt"
}

server=""
trap '[[ -z "$server" ]] || kill "$server" 2>/dev/null || true' EXIT
# NAME CHECKPOINT...: `trafo serve` of the checkpoints on a free port; sets server and url.
serve_up() {
  local name=$1 args=() c
  shift
  for c in "$@"; do args+=(-c "$c"); done
  serve_named "$name" "${args[@]}"
  say "$name: $(head -1 "$work/$name.out")"
}

# URL LIMIT FILE LANG SOURCE [FILE LANG SOURCE ...]: POST /detect for the first LIMIT non-empty lines
# of each FILE; one JSON row a file appended to WORK/detection-rows.jsonl, wrong answers to
# WORK/detection-errors.tsv.
detect() {
  "$python" - "$work/detection-rows.jsonl" "$work/detection-errors.tsv" "$@" <<'PY'
import http.client, json, sys, urllib.parse

rows_path, errors_path, url, limit = sys.argv[1], sys.argv[2], urllib.parse.urlparse(sys.argv[3]), int(sys.argv[4])
specs = sys.argv[5:]
connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)


def detect(text):
    connection.request("POST", "/detect", json.dumps({"q": text}), {"Content-Type": "application/json"})
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise SystemExit("POST /detect answered %d: %r" % (answer.status, body[:200]))
    found = json.loads(body)
    return found[0]["language"] if found else "none"


def share(right, n):
    return round(100.0 * right / n, 2) if n else None


with open(rows_path, "a", encoding="utf-8") as rows, open(errors_path, "a", encoding="utf-8") as errors:
    for i in range(0, len(specs), 3):
        path, language, source = specs[i:i + 3]
        with open(path, encoding="utf-8") as f:
            texts = [line.strip() for line in f if line.strip()][:limit]
        tally = {"long": [0, 0], "short": [0, 0]}  # [lines, right]
        wrong_as = {}
        for text in texts:
            answered = detect(text)
            kind = "long" if len(text.split()) >= 5 else "short"
            tally[kind][0] += 1
            if answered == language:
                tally[kind][1] += 1
            else:
                wrong_as[answered] = wrong_as.get(answered, 0) + 1
                errors.write("%s\t%s\t%s\t%s\n" % (source, language, answered, text))
        n = tally["long"][0] + tally["short"][0]
        right = tally["long"][1] + tally["short"][1]
        rows.write(json.dumps({
            "source": source, "language": language, "lines": n, "correct_pct": share(right, n),
            "lines_5_words_or_more": tally["long"][0], "correct_pct_5_words_or_more": share(*tally["long"][::-1]),
            "lines_under_5_words": tally["short"][0], "correct_pct_under_5_words": share(*tally["short"][::-1]),
            "wrong_as": dict(sorted(wrong_as.items(), key=lambda kv: -kv[1]))}) + "\n")
PY
}

: >"$work/detection-rows.jsonl"
: >"$work/detection-errors.tsv"

say "toy corpus ($train_pairs training pairs, $lines dev pairs) and tiny en-de, de-en models in $work"
"$trafo" toy-corpus --out "$work/toy" --train "$train_pairs" --dev "$lines" --test 10 --force >/dev/null 2>&1
ende=$(tiny_model "$work/toy" en de "$work/run-en-de")
deen=$(tiny_model "$work/toy" de en "$work/run-de-en")
serve_up serve-toy "$ende" "$deen"
detect "$url" "$lines" "$work/toy/dev.en" en toy "$work/toy/dev.de" de toy
serve_down

gettext_note="used: $gettext (dev set; first $train_pairs training pairs for the models)"
if [[ -n "$gettext" && -f "$gettext/train.en" && -f "$gettext/train.fr" && -f "$gettext/dev.en" && -f "$gettext/dev.fr" ]]; then
  say "gettext-enfr: tiny en-fr, fr-en models"
  mkdir -p "$work/gettext"
  for l in en fr; do
    head -n "$train_pairs" "$gettext/train.$l" >"$work/gettext/train.$l"
    cp "$gettext/dev.$l" "$work/gettext/dev.$l"
  done
  enfr=$(tiny_model "$work/gettext" en fr "$work/run-en-fr")
  fren=$(tiny_model "$work/gettext" fr en "$work/run-fr-en")
  serve_up serve-gettext "$enfr" "$fren"
  detect "$url" "$lines" "$work/gettext/dev.en" en gettext "$work/gettext/dev.fr" fr gettext
  serve_down
else
  gettext_note="skipped: $gettext/{train,dev}.{en,fr} not found"
  [[ -n "$gettext" ]] || gettext_note="skipped: no --gettext DIR"
  say "gettext $gettext_note"
fi

"$python" - "$work" "$cpu" "$date" "$threads" "$train_pairs" "$gettext_note" <<'PY'
import json, sys

work, cpu, date, threads, train_pairs, gettext_note = sys.argv[1:]
rows = [json.loads(line) for line in open(work + "/detection-rows.jsonl", encoding="utf-8")]
target = 99.0
fmt = lambda v: "-" if v is None else "%.2f%%" % v
print()
print("| source | language | lines | correct | >= 5 words: lines, correct | < 5 words: lines, correct | wrong answers | >= 5 words >= 99% |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    wrong = ", ".join("%s %d" % kv for kv in r["wrong_as"].items()) or "-"
    long_ok = r["correct_pct_5_words_or_more"]
    verdict = "-" if long_ok is None else ("yes" if long_ok >= target else "NO")
    print("| %s | %s | %d | %s | %d, %s | %d, %s | %s | %s |" % (
        r["source"], r["language"], r["lines"], fmt(r["correct_pct"]), r["lines_5_words_or_more"], fmt(long_ok),
        r["lines_under_5_words"], fmt(r["correct_pct_under_5_words"]), wrong, verdict))
print()
print("gettext-enfr: %s. Wrong answers: %s/detection-errors.tsv" % (gettext_note, work))
longs = [r["correct_pct_5_words_or_more"] for r in rows if r["correct_pct_5_words_or_more"] is not None]
print(json.dumps({"benchmark": "detection", "date": date, "processor": cpu, "threads": int(threads),
                  "train_pairs": int(train_pairs), "gettext": gettext_note, "target_pct_5_words_or_more": target,
                  "worst_pct_5_words_or_more": min(longs) if longs else None,
                  "meets_target": bool(longs) and min(longs) >= target, "rows": rows}))
PY
