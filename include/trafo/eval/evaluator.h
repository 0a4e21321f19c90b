// How a model is judged on a dev or test set, in one place for validation during training and for
// `trafo eval`, so that their figures agree by construction: the teacher-forced loss, then the
// sources translated and scored with BLEU and chrF against the references.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trafo/data/corpus.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/translator.h"
#include "trafo/metrics/bleu.h"
#include "trafo/metrics/chrf.h"
#include "trafo/model/transformer.h"

namespace trafo::eval {

// A parallel set read once: its pairs as pieces for the loss (empty pairs, and pairs longer than the
// model's positions, left out) and its first `max_sentences` lines as text for decoding (0: all).
struct EvalSet {
  static EvalSet read(const std::string& source_path, const std::string& reference_path,
                      const data::Tokenizer& tokenizer, int64_t max_positions, int64_t max_sentences = 0,
                      int tag = -1);  // a corpus tag's piece before every source (-1: none)
  data::Corpus pairs;
  std::vector<std::string> sources, references;
};

// Unsmoothed -log p of every non-padding target token (eos included), summed.
struct TeacherForcedLoss {
  double sum = 0.0;
  int64_t tokens = 0;
  int64_t pairs = 0;
  double mean() const;  // per token; NaN without tokens
};

struct EvalResult {
  TeacherForcedLoss loss;
  std::vector<std::string> hypotheses;  // the best translation of each source
  metrics::BleuScore bleu;
  metrics::ChrfScore chrf;
  long long repetition_loops = 0;  // hypotheses with an n-gram repeated 4 or more times in a row
  double loss_seconds = 0.0;       // of the teacher-forced pass
  double translate_seconds = 0.0;
};

class Evaluator {
 public:
  // `options`: the search, its batch budget and the precision (options.bf16: the loss too runs
  // under bf16 autocast). Batches hold at least the model's positions, so every pair fits one.
  explicit Evaluator(decode::DecodeOptions options) : options_(options) {}

  // In eval mode for the call, restored after; no gradients.
  TeacherForcedLoss loss(model::Transformer& model, const data::Corpus& pairs) const;
  EvalResult run(model::Transformer& model, const data::Tokenizer& tokenizer, const EvalSet& set) const;
  // An ensemble (one vocabulary): each step's log-probabilities are the mean of the models', for the
  // loss and for decoding. One model gives the figures of the single-model calls above.
  TeacherForcedLoss loss(std::vector<model::Transformer>& models, const data::Corpus& pairs) const;
  EvalResult run(std::vector<model::Transformer>& models, const data::Tokenizer& tokenizer, const EvalSet& set) const;
  // The same with the sources translated by `translate` (the best text of each line): `trafo eval`
  // gives its translation engine's (inference/translation.h), with the search these options hold.
  using Translate = std::function<std::vector<std::string>(const std::vector<std::string>&)>;
  EvalResult run(std::vector<model::Transformer>& models, const EvalSet& set, const Translate& translate) const;

  const decode::DecodeOptions& options() const { return options_; }

 private:
  decode::DecodeOptions options_;
};

}  // namespace trafo::eval
