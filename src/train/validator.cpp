#include "trafo/train/validator.h"

#include <algorithm>
#include <cmath>

namespace trafo::train {
namespace {

// `trafo eval`'s options by default, its batches included: in bf16 a sentence's last bits, and so a
// near tie, can change with the sentences padded beside it, and the figures must equal a fresh eval's.
eval::Evaluator greedy(int64_t max_positions, bool bf16, int tag) {
  decode::DecodeOptions options;
  options.source_tag = tag;
  options.batch_tokens = std::max(options.batch_tokens, max_positions);  // every pair the model takes fits a batch
  options.bf16 = bf16;
  return eval::Evaluator(options);
}

}  // namespace

Validator::Validator(const std::string& source_path, const std::string& target_path,
                     const data::Tokenizer& tokenizer, int64_t max_sentences, int64_t samples,
                     int64_t max_positions, bool bf16, int tag)
    : tokenizer_(tokenizer),
      set_(eval::EvalSet::read(source_path, target_path, tokenizer, max_positions, max_sentences, tag)),
      evaluator_(greedy(max_positions, bf16, tag)),
      samples_(samples) {}

ValidationResult Validator::run(model::Transformer& model) {
  const auto evaluated = evaluator_.run(model, tokenizer_, set_);
  ValidationResult result;
  result.loss = evaluated.loss.tokens > 0 ? evaluated.loss.mean() : 0.0;
  result.ppl = std::exp(result.loss);
  result.bleu = evaluated.bleu.score;
  result.chrf = evaluated.chrf.score;
  result.repetition_loops = evaluated.repetition_loops;
  const auto shown = std::min<int64_t>(samples_, static_cast<int64_t>(evaluated.hypotheses.size()));
  for (int64_t i = 0; i < shown; ++i) {
    result.samples.push_back({{"src", set_.sources[i]}, {"ref", set_.references[i]}, {"hyp", evaluated.hypotheses[i]}});
  }
  return result;
}

}  // namespace trafo::train
