// Translation with a trained model: encode once, decode step by step with the KV cache,
// greedy or beam search, batches sorted by length, results in input order.
#pragma once

#include <string>
#include <vector>

#include "trafo/data/tokenizer.h"
#include "trafo/model/transformer.h"

namespace trafo::decode {

struct DecodeOptions {
  int beam = 1;                  // 1: greedy search
  double length_penalty = 1.0;   // beam score = log p / ((5 + |y|) / 6)^alpha (Wu et al. 2016); 0: raw log p
  int n_best = 1;                // hypotheses returned per sentence (≤ beam)
  double max_length_a = 1.5;     // output length ≤ a × source length + b (in pieces)
  int64_t max_length_b = 10;
  int64_t batch_tokens = 4096;   // source pieces per decoding batch (sentences sorted by length)
  bool use_cache = true;         // false: recompute the whole prefix every step (benchmarks, tests)
};

struct Hypothesis {
  std::vector<int> tokens;  // without bos/eos
  std::string text;         // detokenized
  double score = 0.0;       // sum of token log-probabilities (eos included), length-penalised for beams
};

class Translator {
 public:
  // `model` in eval mode on its device; `tokenizer` must outlive the Translator.
  Translator(model::Transformer model, const data::Tokenizer& tokenizer, DecodeOptions options);

  // One list of n_best hypotheses per input sentence, best first, in input order.
  // Empty input lines give one empty hypothesis.
  std::vector<std::vector<Hypothesis>> translate(const std::vector<std::string>& sources);
  // The best hypothesis' text per sentence.
  std::vector<std::string> translate_best(const std::vector<std::string>& sources);
  // Pre-tokenized input: token ids without eos.
  std::vector<std::vector<Hypothesis>> translate_ids(const std::vector<std::vector<int>>& sources);

  const DecodeOptions& options() const { return options_; }

 private:
  model::Transformer model_;
  const data::Tokenizer& tokenizer_;
  DecodeOptions options_;
};

}  // namespace trafo::decode
