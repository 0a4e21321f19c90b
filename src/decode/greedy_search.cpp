// Greedy search: one piece a step per row, as the selector takes it (the most probable by default);
// finished rows leave the batch.
#include <numeric>

#include <torch/torch.h>

#include "step_decoder.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/search.h"

namespace trafo::decode {

std::vector<std::vector<Hypothesis>> GreedySearch::search(const std::vector<model::Transformer>& models,
                                                          const torch::Tensor& src,
                                                          const std::vector<int64_t>& max_lengths,
                                                          const DecodeOptions& options,
                                                          const TokenSelector& selector,
                                                          const std::vector<int64_t>& sentences) const {
  c10::InferenceMode inference;
  const int64_t rows = src.size(0);
  std::vector<std::vector<Hypothesis>> results(rows, std::vector<Hypothesis>(1));
  detail::StepDecoder decoder(models, src, max_lengths, options.use_cache, /*repeat=*/1);
  std::vector<int64_t> alive(rows);  // batch row of each decoder row
  std::iota(alive.begin(), alive.end(), 0);
  auto tokens = torch::full({rows}, data::Tokenizer::kBos, torch::TensorOptions().dtype(torch::kLong).device(src.device()));

  for (int64_t step = 0; !alive.empty(); ++step) {
    std::vector<int64_t> row_sentences;  // the input sentence of each decoder row
    for (const int64_t row : alive) row_sentences.push_back(sentences.empty() ? row : sentences[row]);
    const auto [chosen, ids] =
        selector.select(decoder.next_log_probs(tokens, step), 1, {&row_sentences, step});  // [N,1], [N,1]
    const auto best = chosen.squeeze(1), next = ids.squeeze(1);                           // [N], [N]
    const auto host = detail::to_host({next, best});                           // [2,N]
    const auto values = host.accessor<double, 2>();
    std::vector<int64_t> keep;  // decoder rows still open
    for (size_t i = 0; i < alive.size(); ++i) {
      auto& hypothesis = results[alive[i]].front();
      const auto token = static_cast<int>(values[0][i]);
      hypothesis.score += values[1][i];
      if (token == data::Tokenizer::kEos) continue;
      hypothesis.tokens.push_back(token);
      keep.push_back(static_cast<int64_t>(i));
    }
    tokens = next;
    if (keep.size() == alive.size()) continue;
    std::vector<int64_t> still_alive;
    for (const int64_t i : keep) still_alive.push_back(alive[i]);
    alive = std::move(still_alive);
    if (alive.empty()) break;
    decoder.select(keep);
    tokens = tokens.index_select(0, detail::device_tensor(keep, src.device()));
  }
  return results;
}

}  // namespace trafo::decode
