// Greedy search: one piece a step per row, as the selector takes it (the most probable by default);
// finished rows leave the batch, or, on CUDA, stay to its end without the host waiting at each step.
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <torch/torch.h>

#include "repetition_guard.h"
#include "step_decoder.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/search.h"

namespace trafo::decode {

namespace {

// Every row stays in the batch: a finished row is fed eos and its choices are ignored. The host
// reads back only whether all rows have ended, every `check_every` steps, and at the end every
// step's pieces and the scores, in one transfer each.
std::vector<std::vector<Hypothesis>> search_keeping_rows(const std::vector<model::Transformer>& models,
                                                         const torch::Tensor& src,
                                                         const std::vector<int64_t>& max_lengths,
                                                         const DecodeOptions& options, const TokenSelector& selector,
                                                         const std::vector<int64_t>& sentences,
                                                         const std::vector<std::vector<int>>& prefixes,
                                                         int64_t check_every) {
  const int64_t rows = src.size(0);
  detail::StepDecoder decoder(models, src, max_lengths, options.use_cache, /*repeat=*/1, prefixes);
  std::vector<int64_t> row_sentences(static_cast<size_t>(rows));
  for (int64_t row = 0; row < rows; ++row) row_sentences[row] = sentences.empty() ? row : sentences[row];
  const auto on = torch::TensorOptions().device(src.device());
  auto tokens = torch::full({rows}, data::Tokenizer::kBos, on.dtype(torch::kLong));
  auto ended = torch::zeros({rows}, on.dtype(torch::kBool));
  auto scores = torch::zeros({rows}, on.dtype(torch::kDouble));  // summed in double, as the host sums
  const auto eos = torch::full({rows}, data::Tokenizer::kEos, on.dtype(torch::kLong));
  std::vector<torch::Tensor> steps;  // [N] each: the piece of every row (eos once it has ended)
  // At its limit a row may only end: every row has ended after the longest limit's step.
  const int64_t last = *std::max_element(max_lengths.begin(), max_lengths.end());
  for (int64_t step = 0; step <= last; ++step) {
    const auto [chosen, ids] =
        selector.select(decoder.next_log_probs(tokens, step), 1, {&row_sentences, step});  // [N,1], [N,1]
    scores += chosen.squeeze(1).to(torch::kDouble).masked_fill(ended, 0.0);
    tokens = torch::where(ended, eos, ids.squeeze(1));
    steps.push_back(tokens);
    ended = ended.logical_or(tokens.eq(data::Tokenizer::kEos));
    if ((step + 1) % check_every == 0 && ended.all().item<bool>()) break;
  }
  const auto pieces = torch::stack(steps, 1).cpu();  // [N,steps]
  const auto totals = scores.cpu();
  const auto piece = pieces.accessor<int64_t, 2>();
  const auto total = totals.accessor<double, 1>();
  std::vector<std::vector<Hypothesis>> results(rows, std::vector<Hypothesis>(1));
  for (int64_t row = 0; row < rows; ++row) {
    auto& hypothesis = results[row].front();
    for (int64_t step = 0; step < pieces.size(1) && piece[row][step] != data::Tokenizer::kEos; ++step) {
      hypothesis.tokens.push_back(static_cast<int>(piece[row][step]));
    }
    hypothesis.score = total[row];
  }
  return results;
}

}  // namespace

std::vector<std::vector<Hypothesis>> GreedySearch::search(const std::vector<model::Transformer>& models,
                                                          const torch::Tensor& src,
                                                          const std::vector<int64_t>& max_lengths,
                                                          const DecodeOptions& options,
                                                          const TokenSelector& selector,
                                                          const std::vector<int64_t>& sentences,
                                                          const std::vector<std::vector<int>>& prefixes,
                                                          const std::vector<Constraints>& constraints) const {
  if (!constraints.empty()) throw std::logic_error("GreedySearch: constraints need the beam search");
  c10::InferenceMode inference;
  const int64_t check_every =
      check_every_ == kByDevice ? (src.device().is_cuda() ? kSyncFreeSteps : 0) : check_every_;
  // The repetition guard reads each row's pieces on the host at every step.
  if (check_every > 0 && src.size(0) > 0 && !detail::guards_repetition(options)) {
    return search_keeping_rows(models, src, max_lengths, options, selector, sentences, prefixes, check_every);
  }
  const int64_t rows = src.size(0);
  std::vector<std::vector<Hypothesis>> results(rows, std::vector<Hypothesis>(1));
  detail::StepDecoder decoder(models, src, max_lengths, options.use_cache, /*repeat=*/1, prefixes);
  std::vector<int64_t> alive(rows);  // batch row of each decoder row
  std::iota(alive.begin(), alive.end(), 0);
  auto tokens = torch::full({rows}, data::Tokenizer::kBos, torch::TensorOptions().dtype(torch::kLong).device(src.device()));

  for (int64_t step = 0; !alive.empty(); ++step) {
    std::vector<int64_t> row_sentences;  // the input sentence of each decoder row
    for (const int64_t row : alive) row_sentences.push_back(sentences.empty() ? row : sentences[row]);
    auto log_probs = decoder.next_log_probs(tokens, step);  // [N,V]
    if (detail::guards_repetition(options)) {
      std::vector<const std::vector<int>*> histories;
      for (const int64_t row : alive) histories.push_back(&results[row].front().tokens);
      detail::guard_repetition(log_probs, histories, options);
    }
    const auto [chosen, ids] = selector.select(log_probs, 1, {&row_sentences, step});  // [N,1], [N,1]
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
