#!/usr/bin/env bash
# Guided alignment against attention alignments on the toy corpus, the same training time each:
# alignment error rate of `trafo align` on test pairs against the lexicon's gold links, tag placement
# (bench/html_tags.py) and test BLEU.
#
#   bench/guided_alignment.sh [MINUTES] [WORK]          # default 10 minutes a model, /tmp/guided-bench
#
# The guided model learns eflomal's links of the training pairs (the recipe of
# docs/guide-fine-tuning.md "Guided alignment"), never the gold ones. Both models train one after
# the other with the same options and --max-time; run it on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-10}
WORK=${2:-/tmp/guided-bench}
TRAFO=${TRAFO:-build/trafo}
PYTHON=.venv/bin/python
PAIRS=${PAIRS:-500}
mkdir -p "$WORK"
grep -m1 'model name' /proc/cpuinfo
"$TRAFO" toy-corpus --out "$WORK/data" --alignments --force > /dev/null
if [ ! -s "$WORK/data/train.eflomal" ]; then
  /usr/bin/time -f "eflomal: %e s" .venv/bin/eflomal-align -s "$WORK/data/train.en" -t "$WORK/data/train.de" \
    -f "$WORK/data/train.eflomal" --overwrite
fi
head -n "$PAIRS" "$WORK/data/test.en" > "$WORK/test.en"
head -n "$PAIRS" "$WORK/data/test.de" > "$WORK/test.de"
head -n "$PAIRS" "$WORK/data/test.align" > "$WORK/test.gold"

for variant in attention guided; do
  extra=()
  [ "$variant" = guided ] && extra=(--guided-alignment "$WORK/data/train.eflomal")
  "$TRAFO" train --data-dir "$WORK/data" --src-lang en --tgt-lang de --max-time "${MINUTES}m" \
    --run-dir "$WORK/$variant" --no-resume --overwrite --cache-dir "$WORK/cache" "${extra[@]}" > "$WORK/$variant.out" 2>&1
  "$TRAFO" align -c "$WORK/$variant/checkpoint-best.pt" --src "$WORK/test.en" --tgt "$WORK/test.de" \
    > "$WORK/$variant.align" 2> /dev/null
  bleu=$("$TRAFO" eval -c "$WORK/$variant/checkpoint-best.pt" --src "$WORK/test.en" --ref "$WORK/test.de" 2>&1 |
    grep -o 'BLEU[^,]*' | head -1)
  steps=$(grep -o '"step": *[0-9]*' "$WORK/$variant/metrics.jsonl" | tail -1 | grep -o '[0-9]*$')
  aer=$("$PYTHON" - "$WORK/test.gold" "$WORK/$variant.align" <<'PY'
import sys
# AER (Och & Ney 2003) with sure = possible = gold, over links whose source word gold aligns: the
# gold holds only the words the lexicon is sure of.
matched = predicted = reference = 0
for gold_line, line in zip(open(sys.argv[1]), open(sys.argv[2])):
    gold = {tuple(map(int, f.split("-"))) for f in gold_line.split()}
    sure = {s for s, _ in gold}
    found = {tuple(map(int, f.split("-"))) for f in line.split()}
    found = {link for link in found if link[0] in sure}
    matched += len(found & gold)
    predicted += len(found)
    reference += len(gold)
print(f"{1 - 2 * matched / (predicted + reference):.3f} over {reference} gold links")
PY
)
  tags=$("$PYTHON" bench/html_tags.py --checkpoint "$WORK/$variant/checkpoint-best.pt" --sentences "$PAIRS" \
    --work "$WORK/$variant-html" 2>&1 | grep -E 'well-formed|aligned placement' | tr '\n' ' ')
  echo "$variant: ${steps:-?} steps, AER $aer, test $bleu, tags: $tags"
done
