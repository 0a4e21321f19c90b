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

// Where a hypothesis stands with its row's constraints: which are in its pieces, and the one it
// is writing (Post & Vilar 2018's tracking of phrasal constraints).
struct ConstraintState {
  std::vector<char> met;  // per constraint
  int current = -1;       // the constraint being written; -1: none
  size_t written = 0;     // its pieces written so far

  // The constraint pieces it holds: the bank it belongs to.
  size_t pieces_met(const Constraints& constraints) const {
    size_t pieces = current >= 0 ? written : 0;
    for (size_t c = 0; c < constraints.size(); ++c) pieces += met[c] != 0 ? constraints[c].size() : 0;
    return pieces;
  }
  bool all_met() const { return std::all_of(met.begin(), met.end(), [](char m) { return m != 0; }); }

  // After `token`: a phrase goes on, is done, or, broken off, counts no more; else the token may
  // begin an unmet one.
  ConstraintState after(int token, const Constraints& constraints) const {
    ConstraintState next = *this;
    if (next.current >= 0) {
      const auto& phrase = constraints[static_cast<size_t>(next.current)];
      if (token == phrase[next.written]) {
        if (++next.written == phrase.size()) {
          next.met[static_cast<size_t>(next.current)] = 1;
          next.current = -1;
          next.written = 0;
        }
        return next;
      }
      next.current = -1;
      next.written = 0;
    }
    for (size_t c = 0; c < constraints.size(); ++c) {
      if (next.met[c] != 0 || constraints[c].front() != token) continue;
      if (constraints[c].size() == 1) {
        next.met[c] = 1;
      } else {
        next.current = static_cast<int>(c);
        next.written = 1;
      }
      break;
    }
    return next;
  }

  // The pieces that take it further: the next of the phrase it writes, or the first of each unmet one.
  std::vector<int> wanted(const Constraints& constraints) const {
    if (current >= 0) return {constraints[static_cast<size_t>(current)][written]};
    std::vector<int> pieces;
    for (size_t c = 0; c < constraints.size(); ++c) {
      const int first = constraints[c].front();
      if (met[c] == 0 && std::find(pieces.begin(), pieces.end(), first) == pieces.end()) pieces.push_back(first);
    }
    return pieces;
  }
};

// One extension of a hypothesis: its decoder row this step, the piece, the raw score after it.
struct Extension {
  int64_t parent;
  int64_t token;
  double score;
  ConstraintState state;
};

// The K a constrained sentence keeps of its candidates (best first in `candidates`): K / (pieces + 1)
// from each bank of constraint pieces met, the most met first, then the best of the rest. Returned
// best first.
std::vector<Extension> allocate(std::vector<Extension> candidates, size_t pieces, int64_t beam,
                                const Constraints& constraints) {
  const auto quota = std::max<int64_t>(1, beam / static_cast<int64_t>(pieces + 1));
  std::vector<int64_t> taken_in_bank(pieces + 1, 0);
  std::vector<char> kept(candidates.size(), 0);
  int64_t count = 0;
  for (auto bank = static_cast<int64_t>(pieces); bank >= 0 && count < beam; --bank) {
    for (size_t i = 0; i < candidates.size() && count < beam; ++i) {
      if (kept[i] != 0 || static_cast<int64_t>(candidates[i].state.pieces_met(constraints)) != bank) continue;
      if (taken_in_bank[static_cast<size_t>(bank)] >= quota) break;
      kept[i] = 1;
      ++taken_in_bank[static_cast<size_t>(bank)];
      ++count;
    }
  }
  for (size_t i = 0; i < candidates.size() && count < beam; ++i) {
    if (kept[i] == 0) {
      kept[i] = 1;
      ++count;
    }
  }
  std::vector<Extension> chosen;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (kept[i] != 0) chosen.push_back(std::move(candidates[i]));
  }
  return chosen;  // `candidates` was best first, and so is what it keeps
}

}  // namespace

std::vector<std::vector<Hypothesis>> BeamSearch::search(const std::vector<model::Transformer>& models,
                                                        const torch::Tensor& src,
                                                        const std::vector<int64_t>& max_lengths,
                                                        const DecodeOptions& options,
                                                        const TokenSelector& selector,
                                                        const std::vector<int64_t>& /*sentences*/,
                                                        const std::vector<std::vector<int>>& prefixes,
                                                        const std::vector<Constraints>& constraints) const {
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
  // Constrained rows only: each decoder row's raw score and constraint state, on the host, and the
  // unfinished hypotheses that ended at the length limit without every constraint.
  const auto constrained = [&](int64_t sentence) {
    return !constraints.empty() && !constraints[static_cast<size_t>(sentence)].empty();
  };
  std::vector<double> row_scores(static_cast<size_t>(rows * beam), kMinusInfinity);
  std::vector<ConstraintState> states(static_cast<size_t>(rows * beam));
  for (int64_t n = 0; n < rows; ++n) {
    row_scores[static_cast<size_t>(n * beam)] = 0.0;
    if (!constrained(n)) continue;
    for (int64_t k = 0; k < beam; ++k) states[static_cast<size_t>(n * beam + k)].met.assign(constraints[static_cast<size_t>(n)].size(), 0);
  }
  std::vector<std::vector<Hypothesis>> unmet(rows);

  for (int64_t step = 0; !active.empty(); ++step) {
    const auto groups = static_cast<int64_t>(active.size());
    const auto log_probs = decoder.next_log_probs(tokens, step);                        // [N*K,V]
    const auto candidates = (scores.unsqueeze(1) + log_probs).view({groups, beam * vocab});  // [N,K*V]
    const auto [top_scores, top_ids] = selector.select(candidates, 2 * beam);          // [N,2K]
    const auto host = detail::to_host({top_scores, top_ids});                           // [2,N,2K]
    const auto values = host.accessor<double, 3>();
    // Each open row of a constrained sentence also offers its own best piece, the pieces that take
    // its constraints further, and eos once it holds them all (Post & Vilar's candidates): a
    // hypothesis that wrote its terms at a cost must still be able to go on and end.
    std::vector<int64_t> live_rows, wanted_rows, wanted_tokens;
    for (int64_t n = 0; n < groups; ++n) {
      if (!constrained(active[n])) continue;
      const auto& sentence_constraints = constraints[static_cast<size_t>(active[n])];
      for (int64_t k = 0; k < beam; ++k) {
        const auto row = static_cast<size_t>(n * beam + k);
        if (row_scores[row] == kMinusInfinity) continue;
        live_rows.push_back(static_cast<int64_t>(row));
        auto pieces = states[row].wanted(sentence_constraints);
        if (states[row].all_met()) pieces.push_back(data::Tokenizer::kEos);
        for (const int piece : pieces) {
          wanted_rows.push_back(static_cast<int64_t>(row));
          wanted_tokens.push_back(piece);
        }
      }
    }
    std::vector<double> wanted_log_probs, best_log_probs;
    std::vector<int64_t> best_pieces;
    if (!live_rows.empty()) {
      const auto live = detail::device_tensor(live_rows, device);
      const auto [best, best_ids] = log_probs.index_select(0, live).max(1);
      auto gathered = best.to(torch::kDouble);
      if (!wanted_rows.empty()) {
        gathered = torch::cat({gathered, log_probs.index({detail::device_tensor(wanted_rows, device),
                                                          detail::device_tensor(wanted_tokens, device)})
                                             .to(torch::kDouble)});
      }
      const auto host_values = gathered.to(torch::kCPU).contiguous();
      const auto host_ids = best_ids.to(torch::kCPU).contiguous();
      const auto* values_at = host_values.data_ptr<double>();
      best_log_probs.assign(values_at, values_at + live_rows.size());
      wanted_log_probs.assign(values_at + live_rows.size(), values_at + host_values.numel());
      best_pieces.assign(host_ids.data_ptr<int64_t>(), host_ids.data_ptr<int64_t>() + host_ids.numel());
    }

    std::vector<int64_t> index, next_tokens, next_active;
    std::vector<float> next_scores;
    std::vector<std::vector<int>> next_histories;
    std::vector<ConstraintState> next_states;
    size_t wanted_at = 0, live_at = 0;  // the next of wanted_rows and live_rows
    for (int64_t n = 0; n < groups; ++n) {
      const int64_t sentence = active[n];
      std::vector<Extension> open;  // extensions that go on, best first
      if (!constrained(sentence)) {
        for (int64_t j = 0; j < 2 * beam && static_cast<int64_t>(open.size()) < beam; ++j) {
          const auto id = static_cast<int64_t>(values[1][n][j]);
          if (id % vocab != data::Tokenizer::kEos) {
            open.push_back(Extension{n * beam + id / vocab, id % vocab, values[0][n][j], {}});
          } else if (j < beam && values[0][n][j] > kMinusInfinity) {
            const auto& pieces = histories[n * beam + id / vocab];
            const double penalty = length_penalty(static_cast<int64_t>(pieces.size()) + 1, options.length_penalty);
            finished[sentence].push_back(Hypothesis{pieces, "", values[0][n][j] / penalty});
          }
        }
      } else {
        const auto& sentence_constraints = constraints[static_cast<size_t>(sentence)];
        std::vector<Extension> candidates;
        for (int64_t j = 0; j < 2 * beam; ++j) {
          const auto id = static_cast<int64_t>(values[1][n][j]);
          candidates.push_back(Extension{n * beam + id / vocab, id % vocab, values[0][n][j], {}});
        }
        for (; wanted_at < wanted_rows.size() && wanted_rows[wanted_at] < (n + 1) * beam; ++wanted_at) {
          const auto row = static_cast<size_t>(wanted_rows[wanted_at]);
          candidates.push_back(Extension{wanted_rows[wanted_at], wanted_tokens[wanted_at],
                                         row_scores[row] + wanted_log_probs[wanted_at], {}});
        }
        for (; live_at < live_rows.size() && live_rows[live_at] < (n + 1) * beam; ++live_at) {
          const auto row = static_cast<size_t>(live_rows[live_at]);
          candidates.push_back(Extension{live_rows[live_at], best_pieces[live_at],
                                         row_scores[row] + best_log_probs[live_at], {}});
        }
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Extension& a, const Extension& b) { return a.score > b.score; });
        std::vector<Extension> distinct;
        for (auto& candidate : candidates) {
          if (candidate.score == kMinusInfinity) continue;
          const bool seen = std::any_of(distinct.begin(), distinct.end(), [&](const Extension& e) {
            return e.parent == candidate.parent && e.token == candidate.token;
          });
          if (seen) continue;
          const auto& from = states[static_cast<size_t>(candidate.parent)];
          if (candidate.token == data::Tokenizer::kEos) {
            const auto& pieces = histories[candidate.parent];
            const double penalty = length_penalty(static_cast<int64_t>(pieces.size()) + 1, options.length_penalty);
            (from.all_met() ? finished : unmet)[sentence].push_back(Hypothesis{pieces, "", candidate.score / penalty});
            continue;
          }
          candidate.state = from.after(static_cast<int>(candidate.token), sentence_constraints);
          distinct.push_back(std::move(candidate));
        }
        open = allocate(std::move(distinct), constraint_pieces(sentence_constraints), beam, sentence_constraints);
      }
      const double best_open = open.empty() ? kMinusInfinity : open.front().score;
      const bool done = static_cast<int64_t>(finished[sentence].size()) >= beam || step >= max_lengths[sentence] ||
                        best_open == kMinusInfinity ||
                        cannot_be_beaten(finished[sentence], best_open, max_lengths[sentence], options);
      if (done) continue;
      next_active.push_back(sentence);
      for (auto& extension : open) {
        index.push_back(extension.parent);
        next_tokens.push_back(extension.token);
        next_scores.push_back(static_cast<float>(extension.score));
        next_histories.push_back(histories[extension.parent]);
        next_histories.back().push_back(static_cast<int>(extension.token));
        next_states.push_back(std::move(extension.state));
      }
      // A constrained sentence keeps K rows even when fewer candidates go on: the rest stay closed.
      for (auto k = static_cast<int64_t>(open.size()); k < beam; ++k) {
        index.push_back(open.front().parent);
        next_tokens.push_back(data::Tokenizer::kEos);
        next_scores.push_back(-std::numeric_limits<float>::infinity());
        next_histories.push_back({});
        next_states.push_back(open.front().state);
      }
    }
    active = std::move(next_active);
    if (active.empty()) break;
    histories = std::move(next_histories);
    decoder.select(index);
    tokens = detail::device_tensor(next_tokens, device);
    scores = torch::tensor(next_scores, torch::kFloat).to(device);
    row_scores.assign(next_scores.begin(), next_scores.end());
    states = std::move(next_states);
  }

  const auto best_first = [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; };
  for (size_t sentence = 0; sentence < finished.size(); ++sentence) {
    auto& hypotheses = finished[sentence];
    std::stable_sort(hypotheses.begin(), hypotheses.end(), best_first);
    // Too few held every constraint: the best of those that did not fill the n-best.
    auto& rest = unmet[sentence];
    std::stable_sort(rest.begin(), rest.end(), best_first);
    for (size_t i = 0; i < rest.size() && static_cast<int>(hypotheses.size()) < options.n_best; ++i) {
      hypotheses.push_back(std::move(rest[i]));
    }
    if (hypotheses.empty()) hypotheses.push_back(Hypothesis{{}, "", kMinusInfinity});  // unreachable: eos is forced
    if (static_cast<int>(hypotheses.size()) > options.n_best) hypotheses.resize(options.n_best);
  }
  return finished;
}

}  // namespace trafo::decode
