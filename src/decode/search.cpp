#include "trafo/decode/search.h"

#include <torch/torch.h>

namespace trafo::decode {

std::tuple<at::Tensor, at::Tensor> BestTokens::select(const at::Tensor& log_probs, int64_t k) const {
  if (k == 1) {
    const auto [best, id] = log_probs.max(-1);  // the first of equal maxima, as greedy search always took
    return {best.unsqueeze(1), id.unsqueeze(1)};
  }
  return log_probs.topk(k, 1);
}

std::unique_ptr<SearchStrategy> make_search(const DecodeOptions& options) {
  if (options.beam == 1) return std::make_unique<GreedySearch>();
  return std::make_unique<BeamSearch>();
}

std::unique_ptr<TokenSelector> make_selector(const DecodeOptions& /*options*/) { return std::make_unique<BestTokens>(); }

std::vector<std::vector<Hypothesis>> greedy_search(model::Transformer& model, const torch::Tensor& src,
                                                   const std::vector<int64_t>& max_lengths,
                                                   const DecodeOptions& options) {
  return GreedySearch().search(model, src, max_lengths, options, BestTokens());
}

std::vector<std::vector<Hypothesis>> beam_search(model::Transformer& model, const torch::Tensor& src,
                                                 const std::vector<int64_t>& max_lengths,
                                                 const DecodeOptions& options) {
  return BeamSearch().search(model, src, max_lengths, options, BestTokens());
}

}  // namespace trafo::decode
