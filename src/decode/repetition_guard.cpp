#include "repetition_guard.h"

#include <limits>
#include <set>

#include "step_decoder.h"

namespace trafo::decode::detail {

void guard_repetition(torch::Tensor& log_probs, const std::vector<const std::vector<int>*>& histories,
                      const DecodeOptions& options) {
  std::vector<int64_t> banned_rows, banned_pieces, held_rows, held_pieces;
  const auto n = static_cast<size_t>(std::max(options.no_repeat_ngram, 0));
  for (size_t row = 0; row < histories.size(); ++row) {
    const auto& pieces = *histories[row];
    if (options.repetition_penalty != 1.0) {
      for (const int piece : std::set<int>(pieces.begin(), pieces.end())) {
        held_rows.push_back(static_cast<int64_t>(row));
        held_pieces.push_back(piece);
      }
    }
    // The pieces that followed each earlier occurrence of the row's last N-1 pieces.
    if (n == 0 || pieces.size() + 1 < n) continue;
    const size_t tail = pieces.size() - (n - 1);
    std::set<int> banned;
    for (size_t start = 0; start + n <= pieces.size(); ++start) {
      if (std::equal(pieces.begin() + static_cast<std::ptrdiff_t>(start),
                     pieces.begin() + static_cast<std::ptrdiff_t>(start + n - 1),
                     pieces.begin() + static_cast<std::ptrdiff_t>(tail))) {
        banned.insert(pieces[start + n - 1]);
      }
    }
    for (const int piece : banned) {
      banned_rows.push_back(static_cast<int64_t>(row));
      banned_pieces.push_back(piece);
    }
  }
  const auto device = log_probs.device();
  if (!held_rows.empty()) {
    const auto rows = device_tensor(held_rows, device), pieces = device_tensor(held_pieces, device);
    log_probs.index_put_({rows, pieces}, log_probs.index({rows, pieces}) * options.repetition_penalty);
  }
  if (!banned_rows.empty()) {
    log_probs.index_put_({device_tensor(banned_rows, device), device_tensor(banned_pieces, device)},
                         -std::numeric_limits<float>::infinity());
  }
}

}  // namespace trafo::decode::detail
