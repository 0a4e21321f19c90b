#!/usr/bin/env bash
# What `trafo distill` buys on a corpus: a student-tiny trained on an ensemble's translations against
# the same student trained on the original pairs for the same time, and both against the teachers.
#   1. two teachers, --preset standard, TEACHER_TIME each, seeds 1 and 2, one tokenizer (the second
#      takes the first's with --vocab-from);
#   2. `trafo distill --teacher T1,T2` (beam 4, the worst 5% dropped) with STUDENT_TIME for its student;
#   3. the baseline: `trafo train --preset student-tiny --vocab-from T1` for STUDENT_TIME on DIR's pairs.
# Reported: test BLEU and chrF (greedy, `trafo eval`) of each teacher, the ensemble, the student and
# the baseline; sentences/s of `trafo translate` (greedy, --threads THREADS, fp32, median of 3) of a
# teacher and the student; the bytes of each model for translation (`trafo average` of one
# checkpoint: weights only); stage 1's lines/s against `trafo translate --beam 4` of the same
# ensemble on the first 2,000 training sources.
# Prints the processor and date, a Markdown table, and last one JSON object on one line. Files in WORK.
# On 2 cores: 2 x TEACHER_TIME + 2 x STUDENT_TIME, plus the teachers' translation of the corpus.
#
#   bench/distill.sh --data-dir DIR --src-lang en --tgt-lang fr [--teacher-time 10m] [--student-time 10m]
#                    [--threads 2] [--work DIR]
# Smoke test: bench/distill.sh --data-dir DIR --src-lang en --tgt-lang de --teacher-time 20s --student-time 10s
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
trafo="$root/build/trafo"
python="$root/.venv/bin/python"
data=""
src=""
tgt=""
teacher_time=10m
student_time=10m
threads=2
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data-dir) data="$2"; shift 2 ;;
    --src-lang) src="$2"; shift 2 ;;
    --tgt-lang) tgt="$2"; shift 2 ;;
    --teacher-time) teacher_time="$2"; shift 2 ;;
    --student-time) student_time="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "distill.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$data" && -n "$src" && -n "$tgt" ]] || { echo "distill.sh: give --data-dir, --src-lang and --tgt-lang" >&2; exit 2; }
for f in train dev test; do
  [[ -f "$data/$f.$src" && -f "$data/$f.$tgt" ]] || { echo "distill.sh: no $data/$f.$src and .$tgt" >&2; exit 2; }
done
# shellcheck source=bench/serve_common.sh
source "$root/bench/serve_common.sh"  # say, processor, bench_start
bench_start distill
common=(--data-dir "$data" --src-lang "$src" --tgt-lang "$tgt" --threads "$threads" --cache-dir "$work/cache"
        --early-stopping 0 --no-resume --overwrite)

# NAME SECONDS_VAR ARGS...: a trafo command logged to WORK/NAME.log, its wall seconds into SECONDS_VAR.
timed() {
  local name=$1 var=$2 start
  shift 2
  say "$name: trafo $*"
  start=$(date +%s.%N)
  "$trafo" "$@" >"$work/$name.log" 2>&1 || { say "$name failed, see $work/$name.log"; tail -3 "$work/$name.log" >&2; exit 1; }
  printf -v "$var" '%s' "$(echo "$(date +%s.%N) - $start" | bc)"
}
best() { if [[ -f "$1/checkpoint-best.pt" ]]; then echo "$1/checkpoint-best.pt"; else echo "$1/checkpoint-last.pt"; fi; }

timed teacher1 ignored train "${common[@]}" --preset standard --seed 1 --max-time "$teacher_time" --run-dir "$work/teacher1"
t1=$(best "$work/teacher1")
timed teacher2 ignored train "${common[@]}" --preset standard --seed 2 --max-time "$teacher_time" --run-dir "$work/teacher2" \
  --vocab-from "$t1"
t2=$(best "$work/teacher2")
timed distill distill_s distill "${common[@]}" --teacher "$t1,$t2" --max-time "$student_time" --run-dir "$work/student"
timed baseline ignored train "${common[@]}" --preset student-tiny --vocab-from "$t1" --max-time "$student_time" \
  --run-dir "$work/baseline"
student=$(best "$work/student")
baseline=$(best "$work/baseline")

# Test BLEU and chrF, greedy.
evaluate() { "$trafo" eval "$@" --src "$data/test.$src" --ref "$data/test.$tgt" --threads "$threads" --precision fp32 --json 2>/dev/null | tail -1; }
evaluate --checkpoint "$t1" >"$work/eval-teacher1.json"
evaluate --checkpoint "$t2" >"$work/eval-teacher2.json"
evaluate --checkpoint "$t1" --checkpoint "$t2" >"$work/eval-ensemble.json"
evaluate --checkpoint "$t1" --checkpoint "$t2" --beam 4 >"$work/eval-ensemble-beam4.json"
evaluate --checkpoint "$student" >"$work/eval-student.json"
evaluate --checkpoint "$baseline" >"$work/eval-baseline.json"

# Sentences/s of greedy translation, median of 3; the bytes of each model for translation.
speed() {
  local runs=() start
  for _ in 1 2 3; do
    start=$(date +%s.%N)
    "$trafo" translate --checkpoint "$1" --input "$data/test.$src" --output "$work/speed.out" --threads "$threads" \
      --precision fp32 2>/dev/null
    runs+=("$(echo "$(date +%s.%N) - $start" | bc)")
  done
  printf '%s\n' "${runs[@]}" | sort -g | sed -n 2p
}
teacher_s=$(speed "$t1")
student_s=$(speed "$student")
for m in teacher1:"$t1" student:"$student"; do
  "$trafo" average --out "$work/${m%%:*}-weights.pt" --force "${m#*:}" >/dev/null 2>&1
done

# Stage 1 against translate --beam 4 of the same ensemble on the first 2,000 training sources.
head -n 2000 "$data/train.$src" >"$work/beam-sources.txt"
start=$(date +%s.%N)
"$trafo" translate --checkpoint "$t1" --checkpoint "$t2" --beam 4 --input "$work/beam-sources.txt" \
  --output "$work/beam.out" --threads "$threads" 2>/dev/null
beam_s=$(echo "$(date +%s.%N) - $start" | bc)
stage1_rate=$(grep -o '| [0-9.]* lines/s' "$work/distill.log" | tail -1 | grep -o '[0-9.]*')

"$python" - "$work" "$cpu" "$date" "$threads" "$teacher_time" "$student_time" "$data" "$(wc -l <"$data/test.$src")" \
  "$teacher_s" "$student_s" "$beam_s" "$stage1_rate" <<'PY'
import json, os, sys

work, cpu, date, threads, teacher_time, student_time, data, test_lines = sys.argv[1:9]
teacher_s, student_s, beam_s, stage1_rate = map(float, sys.argv[9:13])
test_lines = int(test_lines)
scores = {name: json.load(open("%s/eval-%s.json" % (work, name)))
          for name in ("teacher1", "teacher2", "ensemble", "ensemble-beam4", "student", "baseline")}
size = lambda name: os.path.getsize("%s/%s-weights.pt" % (work, name))
beam_rate = 2000 / beam_s
result = {
    "benchmark": "distill", "date": date, "processor": cpu, "threads": int(threads), "data": data,
    "teacher_time": teacher_time, "student_time": student_time,
    "bleu": {k: round(v["bleu"], 2) for k, v in scores.items()},
    "chrf": {k: round(v["chrf"], 2) for k, v in scores.items()},
    "student_minus_baseline_bleu": round(scores["student"]["bleu"] - scores["baseline"]["bleu"], 2),
    "student_minus_ensemble_bleu": round(scores["student"]["bleu"] - scores["ensemble"]["bleu"], 2),
    "sentences_per_s": {"teacher1": round(test_lines / teacher_s, 1), "student": round(test_lines / student_s, 1)},
    "student_speedup": round(teacher_s / student_s, 2),
    "weights_bytes": {"teacher1": size("teacher1"), "student": size("student")},
    "stage1_lines_per_s": stage1_rate, "translate_beam4_lines_per_s": round(beam_rate, 1),
    "stage1_share_of_translate": round(stage1_rate / beam_rate, 3),
}
print()
print("| model | test BLEU | chrF |")
print("|---|---|---|")
for name in scores:
    print("| %s | %.2f | %.2f |" % (name, scores[name]["bleu"], scores[name]["chrf"]))
print()
print("student - baseline: %+.2f BLEU; student - ensemble (greedy): %+.2f BLEU" % (
    result["student_minus_baseline_bleu"], result["student_minus_ensemble_bleu"]))
print("translate, greedy, %d sentences: teacher %.1f/s, student %.1f/s (%.2fx); weights %d vs %d bytes (%.2fx)" % (
    test_lines, result["sentences_per_s"]["teacher1"], result["sentences_per_s"]["student"], result["student_speedup"],
    size("teacher1"), size("student"), size("student") / size("teacher1")))
print("stage 1: %.1f lines/s; translate --beam 4, same ensemble: %.1f lines/s (%.2fx)" % (
    stage1_rate, beam_rate, result["stage1_share_of_translate"]))
print(json.dumps(result))
PY
