// Decoding as two choices apart, as in CTranslate2's decoding.h and sampling.h: the search strategy
// (how hypotheses are grown and kept: greedy, beam) and the token selector (which pieces a step
// takes from the log-probabilities: the best ones today, a random draw for sampling next).
#pragma once

#include <memory>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trafo/decode/glossary.h"
#include "trafo/decode/translator.h"

namespace trafo::decode {

// Which sentence of the whole input each row decodes, and the step: what a random draw may depend on.
struct SelectionContext {
  const std::vector<int64_t>* sentences = nullptr;  // per row; null: row n is sentence n
  int64_t step = 0;
};

class TokenSelector {
 public:
  virtual ~TokenSelector() = default;
  // log_probs [N,M] -> (scores [N,k], ids [N,k]): the k pieces row n takes, best first; scores are
  // the log-probabilities of the pieces taken.
  virtual std::tuple<at::Tensor, at::Tensor> select(const at::Tensor& log_probs, int64_t k,
                                                    const SelectionContext& context = {}) const = 0;
};

// The k most probable (argmax for k = 1).
class BestTokens final : public TokenSelector {
 public:
  std::tuple<at::Tensor, at::Tensor> select(const at::Tensor& log_probs, int64_t k,
                                            const SelectionContext& context = {}) const override;
};

// One piece a row drawn at random (k must be 1), as DecodeOptions' sampling options say: from the
// top K, then the nucleus of probability P, at temperature T; each row's draw from (seed, sentence,
// step) by inverse transform, so that it does not depend on the other rows.
class SampledTokens final : public TokenSelector {
 public:
  explicit SampledTokens(const DecodeOptions& options);
  std::tuple<at::Tensor, at::Tensor> select(const at::Tensor& log_probs, int64_t k,
                                            const SelectionContext& context = {}) const override;

 private:
  static constexpr int64_t kHostCandidates = 64;  // up to this many candidates a row, drawn on the host
  double draw(const SelectionContext& context, int64_t row) const;  // uniform in [0, 1)
  struct Candidate {
    double value;  // log p
    int64_t id;
  };
  // The piece a uniform draw takes from `count` (at most kHostCandidates) candidates, most probable first.
  int64_t pick(const Candidate* candidates, int64_t count, double uniform) const;
  // On a CPU, with at most kHostCandidates `candidates` (the top K, or every piece of a small vocabulary):
  // each row's best found and drawn from without a tensor operation, the rows on all threads.
  std::tuple<at::Tensor, at::Tensor> select_on_host(const at::Tensor& log_probs, int64_t candidates,
                                                    const SelectionContext& context) const;
  int64_t topk_;
  double topp_, temperature_;
  uint64_t seed_;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // One padded batch, as greedy_search and beam_search in translator.h take it.
  // `models`: one, or an ensemble whose log-probabilities are averaged at each step.
  // `sentences`: which sentence of the whole input each batch row is (empty: row n is sentence n).
  // `prefixes`: empty, or one per row: the pieces its output must begin with (a target prefix).
  // `constraints`: empty, or one list per row of piece sequences its output must hold (glossary.h);
  // beam search only.
  virtual std::vector<std::vector<Hypothesis>> search(const std::vector<model::Transformer>& models, const at::Tensor& src,
                                                      const std::vector<int64_t>& max_lengths,
                                                      const DecodeOptions& options, const TokenSelector& selector,
                                                      const std::vector<int64_t>& sentences = {},
                                                      const std::vector<std::vector<int>>& prefixes = {},
                                                      const std::vector<Constraints>& constraints = {}) const = 0;
};

class GreedySearch final : public SearchStrategy {
 public:
  // How often the host reads back whether rows have ended. 0: at every step, and finished rows
  // leave the batch (the CPU, where a read-back costs nothing and a smaller batch is faster). N > 0:
  // every N steps; every row stays in the batch to the end, its state kept on the device, and the
  // pieces come back once (CUDA, where a read-back stalls the queue of kernels). Both give the same
  // pieces and scores wherever a row's sums do not depend on its batch (fp32 on a CPU: tested).
  static constexpr int64_t kByDevice = -1;     // 0 on a CPU, kSyncFreeSteps on CUDA
  static constexpr int64_t kSyncFreeSteps = 8;
  explicit GreedySearch(int64_t check_every = kByDevice) : check_every_(check_every) {}
  std::vector<std::vector<Hypothesis>> search(const std::vector<model::Transformer>& models, const at::Tensor& src,
                                              const std::vector<int64_t>& max_lengths, const DecodeOptions& options,
                                              const TokenSelector& selector,
                                              const std::vector<int64_t>& sentences = {},
                                              const std::vector<std::vector<int>>& prefixes = {},
                                              const std::vector<Constraints>& constraints = {}) const override;

 private:
  int64_t check_every_;
};

// With constraints, lexically constrained: dynamic beam allocation (Post & Vilar 2018). Each
// step's candidates are the 2K best extensions and, for every open hypothesis, the pieces that
// take its constraints further; the K kept are spread over banks by the number of constraint
// pieces met (K / (pieces + 1) each, the rest by score), and a hypothesis may end only once it
// holds every constraint (at the length limit the best unfinished one ends, should none hold them).
// A row without constraints is searched exactly as without.
class BeamSearch final : public SearchStrategy {
 public:
  std::vector<std::vector<Hypothesis>> search(const std::vector<model::Transformer>& models, const at::Tensor& src,
                                              const std::vector<int64_t>& max_lengths, const DecodeOptions& options,
                                              const TokenSelector& selector,
                                              const std::vector<int64_t>& sentences = {},
                                              const std::vector<std::vector<int>>& prefixes = {},
                                              const std::vector<Constraints>& constraints = {}) const override;
};

// What `options` ask for: greedy for beam 1, else beam search; the best tokens, or sampled ones.
std::unique_ptr<SearchStrategy> make_search(const DecodeOptions& options);
std::unique_ptr<TokenSelector> make_selector(const DecodeOptions& options);

}  // namespace trafo::decode
