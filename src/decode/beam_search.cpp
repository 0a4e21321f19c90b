// Beam search over K rows per sentence (B×K decoder rows); see translator.h for the rules.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <torch/torch.h>

#include "repetition_guard.h"
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

// The search's bookkeeping between steps: the sentences still open (one group of K decoder rows
// each), each row's pieces, raw score and constraint state, and the hypotheses that ended.
struct Beams {
  std::vector<int64_t> active;               // the sentence of each group of rows
  std::vector<std::vector<int>> histories;   // the pieces of each row
  std::vector<double> row_scores;            // each row's raw score (constrained rows read it)
  std::vector<ConstraintState> states;       // each row's constraint state (constrained rows)
  std::vector<std::vector<Hypothesis>> finished;  // per sentence
  std::vector<std::vector<Hypothesis>> unmet;     // per sentence: ended at eos without every constraint
};

// The candidates each open row of a constrained sentence offers besides the step's 2K best (Post &
// Vilar): its own best piece, the pieces that take its constraints further, and eos once it holds
// them all, so that a hypothesis that wrote its terms at a cost can still go on and end. Rows in
// order; read group by group (`live_at`, `wanted_at`).
struct Offers {
  std::vector<int64_t> live_rows, best_pieces;
  std::vector<double> best_log_probs;
  std::vector<int64_t> wanted_rows, wanted_tokens;
  std::vector<double> wanted_log_probs;
  size_t live_at = 0, wanted_at = 0;
};

Offers constrained_offers(const Beams& beams, const torch::Tensor& log_probs, int64_t beam,
                          const std::vector<Constraints>& constraints, const torch::Device& device) {
  Offers offers;
  for (size_t n = 0; n < beams.active.size(); ++n) {
    const auto sentence = static_cast<size_t>(beams.active[n]);
    if (constraints.empty() || constraints[sentence].empty()) continue;
    for (int64_t k = 0; k < beam; ++k) {
      const auto row = static_cast<size_t>(static_cast<int64_t>(n) * beam + k);
      if (beams.row_scores[row] == kMinusInfinity) continue;
      offers.live_rows.push_back(static_cast<int64_t>(row));
      auto pieces = beams.states[row].wanted(constraints[sentence]);
      if (beams.states[row].all_met()) pieces.push_back(data::Tokenizer::kEos);
      for (const int piece : pieces) {
        offers.wanted_rows.push_back(static_cast<int64_t>(row));
        offers.wanted_tokens.push_back(piece);
      }
    }
  }
  if (offers.live_rows.empty()) return offers;
  const auto [best, best_ids] = log_probs.index_select(0, detail::device_tensor(offers.live_rows, device)).max(1);
  auto gathered = best.to(torch::kDouble);
  if (!offers.wanted_rows.empty()) {
    gathered = torch::cat({gathered, log_probs.index({detail::device_tensor(offers.wanted_rows, device),
                                                      detail::device_tensor(offers.wanted_tokens, device)})
                                         .to(torch::kDouble)});
  }
  const auto host_values = gathered.to(torch::kCPU).contiguous();
  const auto host_ids = best_ids.to(torch::kCPU).contiguous();
  const auto* values = host_values.data_ptr<double>();
  offers.best_log_probs.assign(values, values + offers.live_rows.size());
  offers.wanted_log_probs.assign(values + offers.live_rows.size(), values + host_values.numel());
  offers.best_pieces.assign(host_ids.data_ptr<int64_t>(), host_ids.data_ptr<int64_t>() + host_ids.numel());
  return offers;
}

// The hypothesis that ends row `row` with eos at raw score `score`.
Hypothesis ended(const Beams& beams, int64_t row, double score, const DecodeOptions& options) {
  const auto& pieces = beams.histories[static_cast<size_t>(row)];
  return Hypothesis{pieces, "", score / length_penalty(static_cast<int64_t>(pieces.size()) + 1, options.length_penalty)};
}

// A group's 2K best candidates this step, best first: raw score, and parent row × V + piece.
struct Top {
  at::TensorAccessor<double, 1> scores, ids;
};

// Group n's extensions that go on, best first, from its 2K candidates; those of the first K that end
// in eos finish.
std::vector<Extension> free_extensions(const Top& top, int64_t n, int64_t beam, int64_t vocab, Beams& beams,
                                       const DecodeOptions& options) {
  const auto sentence = static_cast<size_t>(beams.active[static_cast<size_t>(n)]);
  std::vector<Extension> open;
  for (int64_t j = 0; j < 2 * beam && static_cast<int64_t>(open.size()) < beam; ++j) {
    const auto id = static_cast<int64_t>(top.ids[j]);
    if (id % vocab != data::Tokenizer::kEos) {
      open.push_back(Extension{n * beam + id / vocab, id % vocab, top.scores[j], {}});
    } else if (j < beam && top.scores[j] > kMinusInfinity) {
      beams.finished[sentence].push_back(ended(beams, n * beam + id / vocab, top.scores[j], options));
    }
  }
  return open;
}

// The same for a constrained sentence: its 2K candidates and its rows' offers, each distinct
// (parent, piece) once, best first; eos finishes a hypothesis (unmet without every constraint); the
// K kept are shared out over the banks of constraint pieces met (allocate).
std::vector<Extension> constrained_extensions(const Top& top, int64_t n, int64_t beam, int64_t vocab, Beams& beams,
                                              Offers& offers,
                                              const Constraints& constraints, const DecodeOptions& options) {
  const auto sentence = static_cast<size_t>(beams.active[static_cast<size_t>(n)]);
  std::vector<Extension> candidates;
  for (int64_t j = 0; j < 2 * beam; ++j) {
    const auto id = static_cast<int64_t>(top.ids[j]);
    candidates.push_back(Extension{n * beam + id / vocab, id % vocab, top.scores[j], {}});
  }
  for (; offers.wanted_at < offers.wanted_rows.size() && offers.wanted_rows[offers.wanted_at] < (n + 1) * beam;
       ++offers.wanted_at) {
    const auto row = offers.wanted_rows[offers.wanted_at];
    candidates.push_back(Extension{row, offers.wanted_tokens[offers.wanted_at],
                                   beams.row_scores[static_cast<size_t>(row)] + offers.wanted_log_probs[offers.wanted_at], {}});
  }
  for (; offers.live_at < offers.live_rows.size() && offers.live_rows[offers.live_at] < (n + 1) * beam; ++offers.live_at) {
    const auto row = offers.live_rows[offers.live_at];
    candidates.push_back(Extension{row, offers.best_pieces[offers.live_at],
                                   beams.row_scores[static_cast<size_t>(row)] + offers.best_log_probs[offers.live_at], {}});
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
    const auto& from = beams.states[static_cast<size_t>(candidate.parent)];
    if (candidate.token == data::Tokenizer::kEos) {
      (from.all_met() ? beams.finished : beams.unmet)[sentence].push_back(
          ended(beams, candidate.parent, candidate.score, options));
      continue;
    }
    candidate.state = from.after(static_cast<int>(candidate.token), constraints);
    distinct.push_back(std::move(candidate));
  }
  return allocate(std::move(distinct), constraint_pieces(constraints), beam, constraints);
}

// The next step's rows: each extension of the groups that go on, and closed rows where a
// constrained sentence keeps fewer than K.
struct NextRows {
  std::vector<int64_t> index, tokens, active;
  std::vector<float> scores;
  std::vector<std::vector<int>> histories;
  std::vector<ConstraintState> states;

  void add(const Beams& beams, int64_t sentence, std::vector<Extension>& open, int64_t beam) {
    active.push_back(sentence);
    for (auto& extension : open) {
      index.push_back(extension.parent);
      tokens.push_back(extension.token);
      scores.push_back(static_cast<float>(extension.score));
      histories.push_back(beams.histories[static_cast<size_t>(extension.parent)]);
      histories.back().push_back(static_cast<int>(extension.token));
      states.push_back(std::move(extension.state));
    }
    for (auto k = static_cast<int64_t>(open.size()); k < beam; ++k) {
      index.push_back(open.front().parent);
      tokens.push_back(data::Tokenizer::kEos);
      scores.push_back(-std::numeric_limits<float>::infinity());
      histories.push_back({});
      states.push_back(open.front().state);
    }
  }
};

// Each sentence's n-best, best first: its finished hypotheses, and where too few held every
// constraint, the best of those that did not.
std::vector<std::vector<Hypothesis>> best_of(Beams& beams, int n_best) {
  const auto best_first = [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; };
  for (size_t sentence = 0; sentence < beams.finished.size(); ++sentence) {
    auto& hypotheses = beams.finished[sentence];
    std::stable_sort(hypotheses.begin(), hypotheses.end(), best_first);
    auto& rest = beams.unmet[sentence];
    std::stable_sort(rest.begin(), rest.end(), best_first);
    for (size_t i = 0; i < rest.size() && static_cast<int>(hypotheses.size()) < n_best; ++i) {
      hypotheses.push_back(std::move(rest[i]));
    }
    if (hypotheses.empty()) hypotheses.push_back(Hypothesis{{}, "", kMinusInfinity});  // unreachable: eos is forced
    if (static_cast<int>(hypotheses.size()) > n_best) hypotheses.resize(static_cast<size_t>(n_best));
  }
  return std::move(beams.finished);
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
  const auto constrained = [&](int64_t sentence) {
    return !constraints.empty() && !constraints[static_cast<size_t>(sentence)].empty();
  };

  Beams beams;
  beams.active.resize(static_cast<size_t>(rows));
  std::iota(beams.active.begin(), beams.active.end(), 0);
  beams.histories.resize(static_cast<size_t>(rows * beam));
  beams.finished.resize(static_cast<size_t>(rows));
  beams.unmet.resize(static_cast<size_t>(rows));
  // Only the first row of a sentence is open at step 0: the others start at -inf.
  beams.row_scores.assign(static_cast<size_t>(rows * beam), kMinusInfinity);
  beams.states.resize(static_cast<size_t>(rows * beam));
  for (int64_t n = 0; n < rows; ++n) {
    beams.row_scores[static_cast<size_t>(n * beam)] = 0.0;
    if (!constrained(n)) continue;
    for (int64_t k = 0; k < beam; ++k) {
      beams.states[static_cast<size_t>(n * beam + k)].met.assign(constraints[static_cast<size_t>(n)].size(), 0);
    }
  }
  auto scores = torch::tensor(std::vector<float>(beams.row_scores.begin(), beams.row_scores.end()), torch::kFloat)
                    .to(device);  // [N*K]
  auto tokens = torch::full({rows * beam}, data::Tokenizer::kBos, torch::TensorOptions().dtype(torch::kLong).device(device));

  for (int64_t step = 0; !beams.active.empty(); ++step) {
    const auto groups = static_cast<int64_t>(beams.active.size());
    auto log_probs = decoder.next_log_probs(tokens, step);                              // [N*K,V]
    if (detail::guards_repetition(options)) {
      std::vector<const std::vector<int>*> histories;
      for (const auto& history : beams.histories) histories.push_back(&history);
      detail::guard_repetition(log_probs, histories, options);
    }
    const auto candidates = (scores.unsqueeze(1) + log_probs).view({groups, beam * vocab});  // [N,K*V]
    const auto [top_scores, top_ids] = selector.select(candidates, 2 * beam);          // [N,2K]
    const auto host = detail::to_host({top_scores, top_ids});                           // [2,N,2K]
    const auto values = host.accessor<double, 3>();
    auto offers = constrained_offers(beams, log_probs, beam, constraints, device);
    NextRows next;
    for (int64_t n = 0; n < groups; ++n) {
      const int64_t sentence = beams.active[static_cast<size_t>(n)];
      const Top top{values[0][n], values[1][n]};
      auto open = constrained(sentence)
                      ? constrained_extensions(top, n, beam, vocab, beams, offers,
                                               constraints[static_cast<size_t>(sentence)], options)
                      : free_extensions(top, n, beam, vocab, beams, options);
      const double best_open = open.empty() ? kMinusInfinity : open.front().score;
      const auto& ended = beams.finished[static_cast<size_t>(sentence)];
      const bool done = static_cast<int64_t>(ended.size()) >= beam || step >= max_lengths[static_cast<size_t>(sentence)] ||
                        best_open == kMinusInfinity ||
                        cannot_be_beaten(ended, best_open, max_lengths[static_cast<size_t>(sentence)], options);
      if (!done) next.add(beams, sentence, open, beam);
    }
    beams.active = std::move(next.active);
    if (beams.active.empty()) break;
    beams.histories = std::move(next.histories);
    decoder.select(next.index);
    tokens = detail::device_tensor(next.tokens, device);
    scores = torch::tensor(next.scores, torch::kFloat).to(device);
    beams.row_scores.assign(next.scores.begin(), next.scores.end());
    beams.states = std::move(next.states);
  }
  return best_of(beams, options.n_best);
}

}  // namespace trafo::decode
