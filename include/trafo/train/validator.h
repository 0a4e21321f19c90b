// Validation on the dev set through eval::Evaluator, as `trafo eval` judges a checkpoint: loss and
// perplexity by teacher forcing, then greedy decoding scored with BLEU and chrF, and a few sample
// translations.
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
};

class Validator {
 public:
  // Reads the dev pair once; decodes at most `max_sentences` of it (0: all). Pairs longer than the
  // model's `max_positions` are left out of the loss (with a warning); their sources are cut for decoding.
  // `tag` (a corpus tag's piece, -1: none) goes before every source, as `trafo eval --tag` puts it.
  // Batches are those of `trafo eval` with its default --batch-tokens, whatever the training budget.
  Validator(const std::string& source_path, const std::string& target_path, const data::Tokenizer& tokenizer,
            int64_t max_sentences, int64_t samples, int64_t max_positions, bool bf16 = false, int tag = -1);
  ValidationResult run(model::Transformer& model);

 private:
  const data::Tokenizer& tokenizer_;
  eval::EvalSet set_;
  eval::Evaluator evaluator_;  // greedy; loss and decoding under bf16 autocast with `bf16`
  int64_t samples_;
};

}  // namespace trafo::train
