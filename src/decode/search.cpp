#include "trafo/decode/search.h"

#include <torch/torch.h>

namespace trafo::decode {

std::tuple<at::Tensor, at::Tensor> BestTokens::select(const at::Tensor& log_probs, int64_t k,
                                                      const SelectionContext& /*context*/) const {
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

namespace {

uint64_t mix(uint64_t value) {  // splitmix64's finaliser
  value += 0x9E3779B97F4A7C15ULL;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ULL;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBULL;
  return value ^ (value >> 31);
}

}  // namespace

SampledTokens::SampledTokens(const DecodeOptions& options)
    : topk_(options.sampling_topk),
      topp_(options.sampling_topp),
      temperature_(options.sampling_temperature),
      seed_(options.seed) {}

std::tuple<at::Tensor, at::Tensor> SampledTokens::select(const at::Tensor& log_probs, int64_t k,
                                                         const SelectionContext& context) const {
  TORCH_CHECK(k == 1, "sampling takes one piece a row");
  const int64_t rows = log_probs.size(0), pieces = log_probs.size(1);
  // Candidates, most probable first where a cut needs the order: the top K, or all pieces.
  auto scaled = log_probs.to(torch::kDouble) / temperature_;  // [N,M]
  at::Tensor values, ids;
  if (topk_ > 0 && topk_ < pieces) {
    std::tie(values, ids) = scaled.topk(topk_, 1);
  } else if (topp_ < 1.0) {
    std::tie(values, ids) = scaled.sort(1, /*descending=*/true);
  } else {
    values = scaled;
    ids = torch::arange(pieces, torch::TensorOptions().dtype(torch::kLong).device(log_probs.device())).expand({rows, pieces});
  }
  auto probs = torch::softmax(values, 1);  // [N,C]; pieces the search forbids have log p -inf: 0
  if (topp_ < 1.0) {
    // The nucleus: the most probable pieces until their sum reaches P (the first always kept).
    const auto before = probs.cumsum(1) - probs;
    probs = probs.masked_fill(before >= topp_, 0.0);
  }
  const auto cumulative = probs.cumsum(1);  // [N,C]
  // Each row's uniform draw from (seed, sentence, step): the same in any batch.
  std::vector<double> draws(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t sentence = context.sentences != nullptr ? (*context.sentences)[static_cast<size_t>(r)] : r;
    const uint64_t bits = mix(seed_ ^ mix(static_cast<uint64_t>(sentence) * 0x632BE59BD9B4E019ULL +
                                         static_cast<uint64_t>(context.step)));
    draws[static_cast<size_t>(r)] = static_cast<double>(bits >> 11) * 0x1.0p-53;
  }
  const auto uniform = torch::tensor(draws, torch::kDouble).to(log_probs.device()).unsqueeze(1);  // [N,1]
  const auto target = uniform * cumulative.narrow(1, cumulative.size(1) - 1, 1);
  auto pick = torch::searchsorted(cumulative, target, /*out_int32=*/false, /*right=*/true);       // [N,1]
  pick = pick.clamp_max(cumulative.size(1) - 1);
  const auto chosen = ids.gather(1, pick);                                                         // [N,1]
  return {log_probs.gather(1, chosen), chosen};
}

std::unique_ptr<TokenSelector> make_selector(const DecodeOptions& options) {
  if (options.sampling()) return std::make_unique<SampledTokens>(options);
  return std::make_unique<BestTokens>();
}

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
