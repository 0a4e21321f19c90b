#!/usr/bin/env bash
# The main job on the toy corpus: set up, build, generate the corpus, train with
# configs/toy.toml, evaluate the best checkpoint on the test set, translate three sentences.
# Environment: RUN_DIR (default runs/toy), QUICKSTART_ARGS (extra `trafo train` options,
# e.g. "--max-steps 20" for a smoke run), TOY_TRAIN (training pairs, default 50000).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_DIR=${RUN_DIR:-runs/toy}
DATA_DIR=${DATA_DIR:-data/toy}
TOY_TRAIN=${TOY_TRAIN:-50000}

./scripts/setup.sh
./scripts/build.sh
trafo=build/trafo

echo "== generating the toy corpus in $DATA_DIR" >&2
"$trafo" toy-corpus --out "$DATA_DIR" --train "$TOY_TRAIN" --force  # the same corpus again

echo "== training (configs/toy.toml) into $RUN_DIR" >&2
# shellcheck disable=SC2086
"$trafo" train --config configs/toy.toml --data-dir "$DATA_DIR" --run-dir "$RUN_DIR" ${QUICKSTART_ARGS:-}

best="$RUN_DIR/checkpoint-best.pt"
[ -f "$best" ] || best="$RUN_DIR/checkpoint-last.pt"
echo "== evaluating $best on the toy test set" >&2
"$trafo" eval --checkpoint "$best" --src "$DATA_DIR/test.en" --ref "$DATA_DIR/test.de" --output "$RUN_DIR/test.hyp.de"

echo "== translating three sentences" >&2
printf '%s\n' "The old man sees the small dog." \
  "I know that the teacher has not found the book." \
  "Does the girl see the red car?" | "$trafo" translate --checkpoint "$best"

echo "== done: the run is in $RUN_DIR (metrics.jsonl, checkpoints, config.toml)" >&2
