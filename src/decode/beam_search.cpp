// Beam search over K rows per sentence (B×K decoder rows); see translator.h for the rules.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <torch/torch.h>

#include "step_decoder.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/search.h"

namespace trafo::decode {
namespace {

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

// GNMT: ((5 + |y|) / 6)^alpha, |y| = output pieces + eos.
double length_penalty(int64_t length, double alpha) {
  return alpha == 0.0 ? 1.0 : std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

// True when no open hypothesis can still enter the sentence's n-best: its raw score only falls,
// and the penalty's divisor is largest at the longest allowed output (max_length + eos).
bool cannot_be_beaten(const std::vector<Hypothesis>& finished, double best_open, int64_t max_length,
                      const DecodeOptions& options) {
  if (static_cast<int>(finished.size()) < options.n_best) return false;
  std::vector<double> scores;
  for (const auto& hypothesis : finished) scores.push_back(hypothesis.score);
  std::nth_element(scores.begin(), scores.begin() + (options.n_best - 1), scores.end(), std::greater<>());
  const double bound = best_open / length_penalty(max_length + 1, options.length_penalty);
  return scores[options.n_best - 1] >= bound;
}

}  // namespace

std::vector<std::vector<Hypothesis>> BeamSearch::search(const std::vector<model::Transformer>& models,
                                                        const torch::Tensor& src,
                                                        const std::vector<int64_t>& max_lengths,
                                                        const DecodeOptions& options,
                                                        const TokenSelector& selector,
                                                        const std::vector<int64_t>& /*sentences*/,
                                                        const std::vector<std::vector<int>>& prefixes) const {
  c10::InferenceMode inference;
  const int64_t beam = options.beam, vocab = models.front()->config().vocab_size, rows = src.size(0);
  const auto& device = src.device();
  detail::StepDecoder decoder(models, src, max_lengths, options.use_cache, beam, prefixes);

  std::vector<int64_t> active(rows);  // sentence of each group of `beam` decoder rows
  std::iota(active.begin(), active.end(), 0);
  std::vector<std::vector<int>> histories(rows * beam);  // pieces of each decoder row
  std::vector<std::vector<Hypothesis>> finished(rows);
  // Only the first row of a sentence is open at step 0: the others start at -inf.
  auto scores = torch::full({rows, beam}, kMinusInfinity, torch::TensorOptions().dtype(torch::kFloat).device(device));
  scores.select(1, 0).fill_(0.0);
  scores = scores.view({rows * beam});  // [N*K]
  auto tokens = torch::full({rows * beam}, data::Tokenizer::kBos, torch::TensorOptions().dtype(torch::kLong).device(device));

  for (int64_t step = 0; !active.empty(); ++step) {
    const auto groups = static_cast<int64_t>(active.size());
    const auto log_probs = decoder.next_log_probs(tokens, step);                        // [N*K,V]
    const auto candidates = (scores.unsqueeze(1) + log_probs).view({groups, beam * vocab});  // [N,K*V]
    const auto [top_scores, top_ids] = selector.select(candidates, 2 * beam);          // [N,2K]
    const auto host = detail::to_host({top_scores, top_ids});                           // [2,N,2K]
    const auto values = host.accessor<double, 3>();

    std::vector<int64_t> index, next_tokens, next_active;
    std::vector<float> next_scores;
    std::vector<std::vector<int>> next_histories;
    for (int64_t n = 0; n < groups; ++n) {
      const int64_t sentence = active[n];
      std::vector<int64_t> open;  // candidates that go on, best first
      for (int64_t j = 0; j < 2 * beam && static_cast<int64_t>(open.size()) < beam; ++j) {
        const auto id = static_cast<int64_t>(values[1][n][j]);
        if (id % vocab != data::Tokenizer::kEos) {
          open.push_back(j);
        } else if (j < beam && values[0][n][j] > kMinusInfinity) {
          const auto& pieces = histories[n * beam + id / vocab];
          const double penalty = length_penalty(static_cast<int64_t>(pieces.size()) + 1, options.length_penalty);
          finished[sentence].push_back(Hypothesis{pieces, "", values[0][n][j] / penalty});
        }
      }
      const double best_open = values[0][n][open.front()];
      const bool done = static_cast<int64_t>(finished[sentence].size()) >= beam || step >= max_lengths[sentence] ||
                        best_open == kMinusInfinity ||
                        cannot_be_beaten(finished[sentence], best_open, max_lengths[sentence], options);
      if (done) continue;
      next_active.push_back(sentence);
      for (const int64_t j : open) {
        const auto id = static_cast<int64_t>(values[1][n][j]);
        const int64_t parent = n * beam + id / vocab;
        index.push_back(parent);
        next_tokens.push_back(id % vocab);
        next_scores.push_back(static_cast<float>(values[0][n][j]));
        next_histories.push_back(histories[parent]);
        next_histories.back().push_back(static_cast<int>(id % vocab));
      }
    }
    active = std::move(next_active);
    if (active.empty()) break;
    histories = std::move(next_histories);
    decoder.select(index);
    tokens = detail::device_tensor(next_tokens, device);
    scores = torch::tensor(next_scores, torch::kFloat).to(device);
  }

  for (auto& hypotheses : finished) {
    if (hypotheses.empty()) hypotheses.push_back(Hypothesis{{}, "", kMinusInfinity});  // unreachable: eos is forced
    std::stable_sort(hypotheses.begin(), hypotheses.end(),
                     [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    if (static_cast<int>(hypotheses.size()) > options.n_best) hypotheses.resize(options.n_best);
  }
  return finished;
}

}  // namespace trafo::decode
