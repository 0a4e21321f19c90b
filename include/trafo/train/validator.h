// Validation on the dev set through eval::Evaluator, as `trafo eval` judges a checkpoint: loss and
// perplexity by teacher forcing, then greedy decoding scored with BLEU and chrF, and a few sample
// translations. A model of several directions is judged on each direction's dev set and on their
// macro average.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trafo/data/corpus.h"
#include "trafo/data/tokenizer.h"
#include "trafo/eval/evaluator.h"
#include "trafo/model/transformer.h"

namespace trafo::train {

struct ValidationResult {
  double loss = 0.0;  // unsmoothed NLL per target token (eos included)
  double ppl = 0.0;
  double bleu = 0.0;
  double chrf = 0.0;
  long long repetition_loops = 0;  // hypotheses with an n-gram 4 or more times in a row (metrics/repetition.h)
  nlohmann::json samples = nlohmann::json::array();  // [{src, ref, hyp}]
  // With two or more dev sets: each one's {loss, ppl, bleu, chrf} by its name ("en-fr"); loss, bleu and
  // chrf above are then their macro averages (ppl that of the averaged loss), repetition_loops their sum.
  nlohmann::json directions = nlohmann::json::object();
};

// One dev set: a direction's pairs, and the tag its sources take (a corpus tag's piece, -1: none).
struct DevSet {
  std::string name;  // "en-fr"; "" for a model of one direction
  std::string source, target;
  int tag = -1;
};

class Validator {
 public:
  // Reads each dev set once; decodes at most `max_sentences` of each (0: all). Pairs longer than the
  // model's `max_positions` are left out of the loss (with a warning); their sources are cut for decoding.
  // A set's tag goes before every source, as `trafo eval --tag` puts it. Batches are those of `trafo
  // eval` with its default --batch-tokens, whatever the training budget.
  Validator(const std::vector<DevSet>& sets, const data::Tokenizer& tokenizer, int64_t max_sentences, int64_t samples,
            int64_t max_positions, bool bf16 = false);
  ValidationResult run(model::Transformer& model);

 private:
  struct Set {
    std::string name;
    eval::EvalSet pairs;
    eval::Evaluator evaluator;  // greedy; loss and decoding under bf16 autocast with `bf16`
  };
  const data::Tokenizer& tokenizer_;
  std::vector<Set> sets_;
  int64_t samples_;
};

}  // namespace trafo::train
