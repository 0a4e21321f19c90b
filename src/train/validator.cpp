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

Validator::Validator(const std::vector<DevSet>& sets, const data::Tokenizer& tokenizer, int64_t max_sentences,
                     int64_t samples, int64_t max_positions, bool bf16)
    : tokenizer_(tokenizer), samples_(samples) {
  for (const auto& set : sets) {
    sets_.push_back({set.name,
                     eval::EvalSet::read(set.source, set.target, tokenizer, max_positions, max_sentences, set.tag),
                     greedy(max_positions, bf16, set.tag)});
  }
}

ValidationResult Validator::run(model::Transformer& model) {
  ValidationResult result;
  int with_loss = 0;  // sets with a pair inside the model's positions: a set without one has no loss
  for (auto& set : sets_) {
    const auto evaluated = set.evaluator.run(model, tokenizer_, set.pairs);
    const double loss = evaluated.loss.tokens > 0 ? evaluated.loss.mean() : 0.0;
    result.loss += loss;
    with_loss += evaluated.loss.tokens > 0 ? 1 : 0;
    result.bleu += evaluated.bleu.score;
    result.chrf += evaluated.chrf.score;
    result.repetition_loops += evaluated.repetition_loops;
    if (sets_.size() > 1) {
      result.directions[set.name] = {
          {"loss", loss}, {"ppl", std::exp(loss)}, {"bleu", evaluated.bleu.score}, {"chrf", evaluated.chrf.score}};
    }
    const auto shown = std::min<int64_t>(samples_ - static_cast<int64_t>(result.samples.size()),
                                         static_cast<int64_t>(evaluated.hypotheses.size()));
    for (int64_t i = 0; i < shown; ++i) {
      result.samples.push_back(
          {{"src", set.pairs.sources[i]}, {"ref", set.pairs.references[i]}, {"hyp", evaluated.hypotheses[i]}});
    }
  }
  const auto n = static_cast<double>(std::max<size_t>(sets_.size(), 1));
  result.loss /= std::max(with_loss, 1);
  result.bleu /= n;
  result.chrf /= n;
  result.ppl = std::exp(result.loss);
  return result;
}

}  // namespace trafo::train
