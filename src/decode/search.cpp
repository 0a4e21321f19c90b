#include "trafo/decode/search.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "trafo/util/mix.h"

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

SampledTokens::SampledTokens(const DecodeOptions& options)
    : topk_(options.sampling_topk),
      topp_(options.sampling_topp),
      temperature_(options.sampling_temperature),
      seed_(options.seed) {}

int64_t SampledTokens::pick(const Candidate* candidates, int64_t count, double uniform) const {
  // Most probable first, so that the nucleus is well defined.
  const double top = candidates[0].value;
  double probs[kHostCandidates];
  double total = 0.0;
  for (int64_t c = 0; c < count; ++c) {
    probs[c] = std::exp((candidates[c].value - top) / temperature_);  // banned pieces (-inf): 0
    total += probs[c];
  }
  if (topp_ < 1.0) {  // the nucleus ends where the mass before a piece reaches P
    double before = 0.0, kept = 0.0;
    for (int64_t c = 0; c < count; ++c) {
      const double share = probs[c] / total;
      if (before >= topp_) probs[c] = 0.0;
      before += share;
      kept += probs[c];
    }
    total = kept;
  }
  const double target = uniform * total;
  double cumulative = 0.0;
  int64_t chosen = candidates[0].id;
  for (int64_t c = 0; c < count; ++c) {
    if (probs[c] <= 0.0) continue;
    chosen = candidates[c].id;  // the last possible piece, should rounding leave the target past the sum
    cumulative += probs[c];
    if (cumulative > target) break;
  }
  return chosen;
}

std::tuple<at::Tensor, at::Tensor> SampledTokens::select_on_host(const at::Tensor& log_probs, int64_t candidates,
                                                                 const SelectionContext& context) const {
  const int64_t rows = log_probs.size(0), pieces = log_probs.size(1);
  const float* data = log_probs.data_ptr<float>();
  std::vector<int64_t> picked(static_cast<size_t>(rows));
  std::vector<float> scores(static_cast<size_t>(rows));
  // Rows apart on the threads: each row's draw depends on its row alone.
  at::parallel_for(0, rows, 16, [&](int64_t first, int64_t last) {
    Candidate top[kHostCandidates];
    for (int64_t r = first; r < last; ++r) {
      // The K largest of the row, kept sorted (equal values: the lower id first); most pieces are
      // turned away by one comparison with the K-th.
      const float* row = data + r * pieces;
      int64_t count = 0;
      float floor = -INFINITY;
      auto offer = [&](int64_t p) {
        const float value = row[p];
        if (count == candidates && !(value > floor)) return;
        int64_t at = count < candidates ? count++ : candidates - 1;
        while (at > 0 && top[at - 1].value < value) {
          top[at] = top[at - 1];
          --at;
        }
        top[at] = {value, p};
        if (count == candidates) floor = static_cast<float>(top[candidates - 1].value);
      };
      int64_t p = 0;
      for (; p < candidates; ++p) offer(p);
      // Blocks of 16 whose largest does not beat the K-th are passed over whole (a vectorised max).
      for (; p + 16 <= pieces; p += 16) {
        float largest = row[p];
        for (int64_t j = 1; j < 16; ++j) largest = row[p + j] > largest ? row[p + j] : largest;
        if (!(largest > floor)) continue;
        for (int64_t j = 0; j < 16; ++j) offer(p + j);
      }
      for (; p < pieces; ++p) offer(p);
      const int64_t id = pick(top, count, draw(context, r));
      picked[static_cast<size_t>(r)] = id;
      scores[static_cast<size_t>(r)] = row[id];
    }
  });
  return {torch::tensor(scores, torch::kFloat).unsqueeze(1), torch::tensor(picked, torch::kLong).unsqueeze(1)};
}

double SampledTokens::draw(const SelectionContext& context, int64_t row) const {
  const int64_t sentence = context.sentences != nullptr ? (*context.sentences)[static_cast<size_t>(row)] : row;
  const uint64_t bits = util::mix(
      seed_ ^ util::mix(static_cast<uint64_t>(sentence) * 0x632BE59BD9B4E019ULL + static_cast<uint64_t>(context.step)));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

std::tuple<at::Tensor, at::Tensor> SampledTokens::select(const at::Tensor& log_probs, int64_t k,
                                                         const SelectionContext& context) const {
  TORCH_CHECK(k == 1, "sampling takes one piece a row");
  const int64_t rows = log_probs.size(0), pieces = log_probs.size(1);
  // The candidates: the top K, or all pieces. Few of them, on a CPU: found and drawn from on the host.
  const int64_t candidates = topk_ > 0 && topk_ < pieces ? topk_ : pieces;
  if (log_probs.device().is_cpu() && candidates <= kHostCandidates && log_probs.scalar_type() == torch::kFloat) {
    return select_on_host(log_probs.contiguous(), candidates, context);
  }
  // Most probable first where a cut needs the order (top K taken before the temperature, which keeps it).
  at::Tensor values, ids;
  if (candidates < pieces) {
    std::tie(values, ids) = log_probs.topk(candidates, 1);
  } else if (topp_ < 1.0) {
    std::tie(values, ids) = log_probs.sort(1, /*descending=*/true);
  } else {
    values = log_probs;
    ids = torch::arange(pieces, torch::TensorOptions().dtype(torch::kLong).device(log_probs.device()))
              .expand({rows, pieces});
  }
  auto probs = torch::softmax(values.to(torch::kDouble) / temperature_, 1);  // [N,C]; banned pieces (-inf): 0
  if (topp_ < 1.0) {
    // The nucleus: the most probable pieces until their sum reaches P (the first always kept).
    const auto before = probs.cumsum(1) - probs;
    probs = probs.masked_fill(before >= topp_, 0.0);
  }
  const auto cumulative = probs.cumsum(1);  // [N,C]
  std::vector<double> draws(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) draws[static_cast<size_t>(r)] = draw(context, r);
  const auto uniform = torch::tensor(draws, torch::kDouble).to(log_probs.device()).unsqueeze(1);  // [N,1]
  const auto target = uniform * cumulative.narrow(1, cumulative.size(1) - 1, 1);
  auto pick = torch::searchsorted(cumulative, target, /*out_int32=*/false, /*right=*/true);  // [N,1]
  const auto chosen = ids.gather(1, pick.clamp_max(cumulative.size(1) - 1));
  return {log_probs.gather(1, chosen), chosen};
}

std::unique_ptr<TokenSelector> make_selector(const DecodeOptions& options) {
  if (options.sampling()) return std::make_unique<SampledTokens>(options);
  return std::make_unique<BestTokens>();
}

std::vector<std::vector<Hypothesis>> greedy_search(model::Transformer& model, const torch::Tensor& src,
                                                   const std::vector<int64_t>& max_lengths,
                                                   const DecodeOptions& options) {
  return GreedySearch().search({model}, src, max_lengths, options, BestTokens());
}

std::vector<std::vector<Hypothesis>> beam_search(model::Transformer& model, const torch::Tensor& src,
                                                 const std::vector<int64_t>& max_lengths,
                                                 const DecodeOptions& options) {
  return BeamSearch().search({model}, src, max_lengths, options, BestTokens());
}

}  // namespace trafo::decode
