#!/usr/bin/env bash
# One English->{fr,es,it} model against three bilingual ones, the same total wall-clock, default
# model size, no config file: the multilingual corpus of this machine's gettext catalogues
# (bench/gettext_corpus.py --langs), its multi-way dev and test sets, the multilingual model trained
# for MINUTES and each bilingual model for MINUTES / 3, one after the other. Then every model is
# scored on the test set of each of its directions (`eval --tgt-lang` for the multilingual one), and
# the table gives test BLEU and chrF per direction, the macro averages, and the differences. With
# --retry N, a second look at the multilingual model's test translations: decoded with
# `--retry-off-target N`, their BLEU and off-target rate. Run it on an idle machine.
#
#   bench/multilingual.sh [--minutes 60] [--work /tmp/multilingual] [--threads 2] [--langs fr,es,it]
#                         [--multi "OPTIONS"]   # more options for the multilingual run
#                         [--train "OPTIONS"]   # more options for every run (e.g. the case variants)
#                         [--retry N]           # also score the multilingual model with --retry-off-target N
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
minutes=60 work=/tmp/multilingual threads=2 langs=fr,es,it multi_options="" train_options="" retry=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --langs) langs="$2"; shift 2 ;;
    --multi) multi_options="$2"; shift 2 ;;
    --retry) retry="$2"; shift 2 ;;
    --train) train_options="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "multilingual.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
data="$work/data"
IFS=, read -r -a targets <<< "$langs"
first="${targets[0]}"
grep -m1 'model name' /proc/cpuinfo
"$python" "$root/bench/gettext_corpus.py" --langs "$langs" --out "$data"

corpora=()
for lang in "${targets[@]}"; do
  corpora+=(--corpus "$data/train.en-$lang.en,$data/train.en-$lang.$lang,1,,,en,$lang")
done
# shellcheck disable=SC2086  # the extra options are words
"$trafo" train --data-dir "$data" --src-lang en --tgt-lang "$first" "${corpora[@]}" --max-time "${minutes}m" \
  --threads "$threads" --run-dir "$work/multi" --cache-dir "$work/cache" --no-resume --overwrite $multi_options $train_options \
  > "$work/multi.out" 2>&1
share=$("$python" -c "print(f'{$minutes / ${#targets[@]}:.4g}')")
for lang in "${targets[@]}"; do
  # shellcheck disable=SC2086  # the extra options are words
  "$trafo" train --data-dir "$data" --src-lang en --tgt-lang "$lang" --train-src "$data/train.en-$lang.en" \
    --train-tgt "$data/train.en-$lang.$lang" --max-time "${share}m" --threads "$threads" --run-dir "$work/en-$lang" \
    --cache-dir "$work/cache" --no-resume --overwrite $train_options > "$work/en-$lang.out" 2>&1
done

# CHECKPOINT LANG [OPTIONS]: "BLEU CHRF OFF-TARGET" on the test set ("-": no identifier). The
# off-target rate is over the lines whose reference the identifier labels as asked, then over every
# line it labels, then the share of references it labels right.
scores() {
  "$trafo" eval --checkpoint "$1" --src "$data/test.en" --ref "$data/test.$2" --threads "$threads" --json "${@:3}" \
    2> /dev/null | "$python" -c "import json, sys; d = json.load(sys.stdin); o = d.get('off_target')
print(f\"{d['bleu']:.2f} {d['chrf']:.2f} \" + (f\"{100 * o['rate']:.1f}%_of_{o['judged']}_({100 * o['labelled_rate']:.1f}%_of_all_{o['labelled']};_refs_{100 * o['references_identified']:.1f}%)\" if o else '-'))"
}
echo "| direction | bilingual (${share} min) BLEU / chrF | multilingual (${minutes} min) BLEU / chrF | difference (BLEU) | multilingual off-target |"
echo "|---|---|---|---|---|"
sum_bi=0 sum_multi=0
for lang in "${targets[@]}"; do
  read -r bi_bleu bi_chrf _ < <(scores "$work/en-$lang/checkpoint-best.pt" "$lang")
  read -r multi_bleu multi_chrf off < <(scores "$work/multi/checkpoint-best.pt" "$lang" --tgt-lang "$lang")
  difference=$("$python" -c "print(f'{$multi_bleu - $bi_bleu:+.2f}')")
  echo "| en-$lang | $bi_bleu / $bi_chrf | $multi_bleu / $multi_chrf | $difference | ${off//_/ } |"
  sum_bi=$("$python" -c "print($sum_bi + $bi_bleu)")
  sum_multi=$("$python" -c "print($sum_multi + $multi_bleu)")
done
"$python" -c "n = ${#targets[@]}; b = $sum_bi / n; m = $sum_multi / n; print(f'| macro | {b:.2f} | {m:.2f} | {m - b:+.2f} | |')"
if [[ "$retry" -gt 0 ]]; then
  echo
  echo "| direction | multilingual, --retry-off-target $retry: BLEU / chrF | off-target |"
  echo "|---|---|---|"
  for lang in "${targets[@]}"; do
    read -r multi_bleu multi_chrf off < <(scores "$work/multi/checkpoint-best.pt" "$lang" --tgt-lang "$lang" \
      --retry-off-target "$retry")
    echo "| en-$lang | $multi_bleu / $multi_chrf | ${off//_/ } |"
  done
fi
