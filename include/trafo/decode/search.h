// Decoding as two choices apart, as in CTranslate2's decoding.h and sampling.h: the search strategy
// (how hypotheses are grown and kept: greedy, beam) and the token selector (which pieces a step
// takes from the log-probabilities: the best ones today, a random draw for sampling next).
#pragma once

#include <memory>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trafo/decode/translator.h"

namespace trafo::decode {

class TokenSelector {
 public:
  virtual ~TokenSelector() = default;
  // log_probs [N,M] -> (scores [N,k], ids [N,k]): the k pieces row n takes, best first.
  virtual std::tuple<at::Tensor, at::Tensor> select(const at::Tensor& log_probs, int64_t k) const = 0;
};

// The k most probable (argmax for k = 1).
class BestTokens final : public TokenSelector {
 public:
  std::tuple<at::Tensor, at::Tensor> select(const at::Tensor& log_probs, int64_t k) const override;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // One padded batch, as greedy_search and beam_search in translator.h take it.
  virtual std::vector<std::vector<Hypothesis>> search(model::Transformer& model, const at::Tensor& src,
                                                      const std::vector<int64_t>& max_lengths,
                                                      const DecodeOptions& options,
                                                      const TokenSelector& selector) const = 0;
};

class GreedySearch final : public SearchStrategy {
 public:
  std::vector<std::vector<Hypothesis>> search(model::Transformer& model, const at::Tensor& src,
                                              const std::vector<int64_t>& max_lengths, const DecodeOptions& options,
                                              const TokenSelector& selector) const override;
};

class BeamSearch final : public SearchStrategy {
 public:
  std::vector<std::vector<Hypothesis>> search(model::Transformer& model, const at::Tensor& src,
                                              const std::vector<int64_t>& max_lengths, const DecodeOptions& options,
                                              const TokenSelector& selector) const override;
};

// What `options` ask for: greedy for beam 1, else beam search; the best tokens.
std::unique_ptr<SearchStrategy> make_search(const DecodeOptions& options);
std::unique_ptr<TokenSelector> make_selector(const DecodeOptions& options);

}  // namespace trafo::decode
