#!/usr/bin/env bash
# What `trafo translate --split-sentences` does to paragraphs. The issue's target: paragraphs cut into
# sentences score at least the sentence-level BLEU less 0.5, and better than paragraphs left whole.
# From the test set (the toy corpus's 1,000 test pairs unless --data-dir gives another DIR/test.SRC,
# DIR/test.TGT), paragraphs of 2-5 consecutive sentences (lengths drawn with --seed; a last lone
# sentence joins the paragraph before it), joined with a space, and their references joined alike.
# Translated, greedy, with --threads THREADS:
#   - sentence-level: the test sentences one a line (--split-sentences off), their translations then
#     joined by the same grouping; its BLEU on the lines themselves is given too;
#   - split: the paragraphs with --split-sentences on;
#   - unsplit: the paragraphs with --split-sentences off.
# Corpus BLEU is sacrebleu's (2.x, tokenize 13a, the default), with its length ratio (hypothesis /
# reference words); chrF too. Sentences: sentence-final punctuation ([.!?] runs before a space or the
# line's end) per paragraph in the source, the reference and each output: an unsplit translation
# that drops sentences has fewer than its source; the share of paragraphs with fewer is given too.
# The checkpoint: --checkpoint CKPT, or with --train a model trained first on a toy corpus of
# TRAIN_PAIRS pairs (1,000 dev, 1,000 test) for MAX_TIME, the defaults otherwise (plus TRAIN_ARGS).
# Prints the processor and date, a Markdown table, and last one JSON object on one line. Files in WORK.
# On 2 cores: --train takes MAX_TIME plus about a minute; the translations of a default-size model a
# minute or two.
#
#   bench/paragraphs.sh --checkpoint CKPT [--data-dir DIR] [--src-lang en] [--tgt-lang de]
#   bench/paragraphs.sh --train [--max-time 10m] [--train-pairs 50000] [--train-args "OPTIONS"]
#   common options:     [--lines 1000] [--seed 1] [--threads 2] [--work DIR]
# Smoke test: bench/paragraphs.sh --train --train-pairs 300 --lines 20 --max-time 1m \
#   --train-args "--max-steps 2 --valid-every 2 --valid-max-sentences 5 --d-model 32 --heads 2
#                 --encoder-layers 1 --decoder-layers 1 --d-ff 64 --vocab-size 1000 --early-stopping 0"
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
checkpoint=""
train=0
max_time=10m
train_pairs=50000
train_args=""
data_dir=""
src=en
tgt=de
lines=1000
seed=1
threads=2
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --checkpoint) checkpoint="$2"; shift 2 ;;
    --train) train=1; shift ;;
    --max-time) max_time="$2"; shift 2 ;;
    --train-pairs) train_pairs="$2"; shift 2 ;;
    --train-args) train_args="$2"; shift 2 ;;
    --data-dir) data_dir="$2"; shift 2 ;;
    --src-lang) src="$2"; shift 2 ;;
    --tgt-lang) tgt="$2"; shift 2 ;;
    --lines) lines="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "paragraphs.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ "$train" == 1 && -n "$checkpoint" ]] || [[ "$train" == 0 && -z "$checkpoint" ]]; then
  echo "paragraphs.sh: give --checkpoint CKPT or --train (see --help)" >&2; exit 2
fi
# shellcheck source=bench/serve_common.sh
source "$root/bench/serve_common.sh"  # say, processor, bench_start
bench_start paragraphs

if [[ "$train" == 1 ]]; then
  [[ -z "$data_dir" ]] || { echo "paragraphs.sh: --train makes its own toy corpus; leave out --data-dir" >&2; exit 2; }
  src=en tgt=de data_dir="$work/toy"
  say "toy corpus of $train_pairs pairs and a model trained for $max_time in $work"
  "$trafo" toy-corpus --out "$data_dir" --train "$train_pairs" --dev 1000 --test 1000 --force >/dev/null 2>&1
  # shellcheck disable=SC2086  # the extra options are words
  "$trafo" train --data-dir "$data_dir" --src-lang en --tgt-lang de --run-dir "$work/run" --max-time "$max_time" \
    --threads "$threads" --cache-dir "$work/cache" --no-resume --overwrite $train_args >"$work/train.log" 2>&1 \
    || { say "training failed, see $work/train.log"; tail -5 "$work/train.log" >&2; exit 1; }
  checkpoint="$work/run/checkpoint-best.pt"
  [[ -f "$checkpoint" ]] || checkpoint="$work/run/checkpoint-last.pt"
  say "$(grep -m1 -o 'done.*' "$work/train.log" || tail -1 "$work/train.log")"
elif [[ -z "$data_dir" ]]; then
  data_dir="$work/toy"
  "$trafo" toy-corpus --out "$data_dir" --train 100 --dev 10 --test 1000 --force >/dev/null 2>&1
fi
[[ -f "$checkpoint" ]] || { echo "paragraphs.sh: no checkpoint $checkpoint" >&2; exit 1; }
head -n "$lines" "$data_dir/test.$src" >"$work/sentences.$src"
head -n "$lines" "$data_dir/test.$tgt" >"$work/sentences.$tgt"

# The paragraphs: paragraphs.SRC, paragraphs.TGT, and groups (the sentences of each, a line each).
"$python" - "$work" "$src" "$tgt" "$seed" <<'PY'
import random, sys

work, src, tgt, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sources = open("%s/sentences.%s" % (work, src), encoding="utf-8").read().splitlines()
references = open("%s/sentences.%s" % (work, tgt), encoding="utf-8").read().splitlines()
assert len(sources) == len(references), "test source and reference differ in lines"
rng, groups, i = random.Random(seed), [], 0
while i < len(sources):
    if len(sources) - i == 1 and groups:  # a lone last sentence joins the paragraph before it
        groups[-1] += 1
        break
    n = min(rng.randint(2, 5), len(sources) - i)
    groups.append(n)
    i += n
with open(work + "/groups", "w") as f:
    f.write("".join("%d\n" % n for n in groups))
for lines, lang in ((sources, src), (references, tgt)):
    with open("%s/paragraphs.%s" % (work, lang), "w", encoding="utf-8") as f:
        i = 0
        for n in groups:
            f.write(" ".join(lines[i:i + n]) + "\n")
            i += n
PY

# NAME INPUT SPLIT: translate INPUT into WORK/NAME.TGT with --split-sentences SPLIT; seconds taken.
translate() {
  local start
  start=$(date +%s.%N)
  "$trafo" translate -c "$checkpoint" -i "$2" -o "$work/$1.$tgt" --split-sentences "$3" --threads "$threads" \
    2>"$work/$1.err" || { say "translate $1 failed"; cat "$work/$1.err" >&2; exit 1; }
  echo "$(date +%s.%N) - $start" | bc
}
say "translating $(wc -l <"$work/sentences.$src") sentences and $(wc -l <"$work/groups") paragraphs with $checkpoint"
t_sentences=$(translate sentence-level "$work/sentences.$src" off)
t_split=$(translate split "$work/paragraphs.$src" on)
t_unsplit=$(translate unsplit "$work/paragraphs.$src" off)

"$python" - "$work" "$src" "$tgt" "$cpu" "$date" "$checkpoint" "$threads" "$seed" "$t_sentences" "$t_split" \
  "$t_unsplit" <<'PY'
import json, re, statistics, sys

import sacrebleu

work, src, tgt, cpu, date, checkpoint, threads, seed = sys.argv[1:9]
seconds = dict(zip(["sentence-level", "split", "unsplit"], map(float, sys.argv[9:12])))
read = lambda name: open("%s/%s" % (work, name), encoding="utf-8").read().splitlines()
groups = [int(n) for n in read("groups")]
sentence_refs, sentence_hyps = read("sentences." + tgt), read("sentence-level." + tgt)
paragraph_srcs, paragraph_refs = read("paragraphs." + src), read("paragraphs." + tgt)


def join(lines):
    out, i = [], 0
    for n in groups:
        out.append(" ".join(lines[i:i + n]))
        i += n
    return out


outputs = {"sentence-level (joined)": join(sentence_hyps), "paragraphs, split": read("split." + tgt),
           "paragraphs, unsplit": read("unsplit." + tgt)}
for name, hyps in outputs.items():
    assert len(hyps) == len(paragraph_refs), "%s: %d lines for %d paragraphs" % (name, len(hyps), len(paragraph_refs))
ends = re.compile(r"[.!?]+(?=[\"'»«”“)\]]*(\s|$))")
count = lambda line: len(ends.findall(line))
sentences_in = [count(line) for line in paragraph_srcs]


def score(hyps, refs):
    bleu = sacrebleu.corpus_bleu(hyps, [refs])
    return {"bleu": round(bleu.score, 2), "chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
            "length_ratio": round(bleu.sys_len / max(bleu.ref_len, 1), 3)}


rows = {}
for name, hyps in outputs.items():
    row = score(hyps, paragraph_refs)
    out = [count(line) for line in hyps]
    row["sentences_per_paragraph"] = round(float(statistics.mean(out)), 3)
    row["paragraphs_with_fewer_sentences_than_source_pct"] = round(
        100.0 * sum(o < i for o, i in zip(out, sentences_in)) / len(hyps), 2)
    rows[name] = row
for name, key in zip(outputs, seconds):
    rows[name]["seconds"] = round(seconds[key], 2)
lines_score = score(sentence_hyps, sentence_refs)
sentence_level, split, unsplit = (rows[k]["bleu"] for k in outputs)
checks = {"split_at_least_sentence_level_less_0.5": split >= sentence_level - 0.5, "split_above_unsplit": split > unsplit}

print()
print("%d test sentences in %d paragraphs of %.2f sentences on average (2-5, seed %s); source: %.3f sentence ends a "
      "paragraph, reference: %.3f" % (len(sentence_refs), len(groups), statistics.mean(groups), seed,
                                       statistics.mean(sentences_in), statistics.mean(count(l) for l in paragraph_refs)))
print()
print("| translated | BLEU | chrF | length ratio | sentence ends a paragraph (source %.3f) | paragraphs with fewer than the source | seconds |"
      % statistics.mean(sentences_in))
print("|---|---|---|---|---|---|---|")
for name, r in rows.items():
    print("| %s | %.2f | %.2f | %.3f | %.3f | %.2f%% | %.1f |" % (name, r["bleu"], r["chrf"], r["length_ratio"],
          r["sentences_per_paragraph"], r["paragraphs_with_fewer_sentences_than_source_pct"], r["seconds"]))
print("| sentence-level, on the lines themselves | %.2f | %.2f | %.3f | | | |" % (
    lines_score["bleu"], lines_score["chrf"], lines_score["length_ratio"]))
print()
print("split %.2f >= sentence-level %.2f - 0.5: %s; split %.2f > unsplit %.2f: %s" % (
    split, sentence_level, "yes" if checks["split_at_least_sentence_level_less_0.5"] else "NO", split, unsplit,
    "yes" if checks["split_above_unsplit"] else "NO"))
print(json.dumps({"benchmark": "paragraphs", "date": date, "processor": cpu, "threads": int(threads),
                  "checkpoint": checkpoint, "sentences": len(sentence_refs), "paragraphs": len(groups), "seed": int(seed),
                  "source_sentences_per_paragraph": round(float(statistics.mean(sentences_in)), 3),
                  "bleu_sentence_level_joined": sentence_level, "bleu_paragraphs_split": split,
                  "bleu_paragraphs_unsplit": unsplit, "bleu_sentence_level_lines": lines_score["bleu"],
                  "unsplit_sentences_per_paragraph_out": rows["paragraphs, unsplit"]["sentences_per_paragraph"],
                  "checks": checks, "meets_target": all(checks.values()), "rows": rows,
                  "sentence_level_lines": lines_score, "sacrebleu": sacrebleu.__version__}))
PY
