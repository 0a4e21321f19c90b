#include "trafo/train/batch_fit.h"

#include <algorithm>

#include "trafo/data/token_cache.h"

namespace trafo::train {

int64_t largest_fitting(int64_t low, int64_t high, int64_t step, const std::function<bool(int64_t)>& fits) {
  low = std::max(step, low / step * step);
  high = std::max(low, high / step * step);
  if (!fits(low)) return low;
  int64_t good = low, bad = high + step;  // the largest known to fit, the smallest known not to
  for (int64_t next = std::min(2 * low, high); good < high; next = std::min(2 * good, high)) {
    if (!fits(next)) {
      bad = next;
      break;
    }
    good = next;
  }
  while (bad - good > step) {
    const int64_t middle = (good + bad) / 2 / step * step;
    (fits(middle) ? good : bad) = middle;
  }
  return good;
}

CorpusExtent corpus_extent(const std::vector<data::CachedCorpus>& corpora, int64_t max_positions) {
  CorpusExtent extent;
  for (const auto& cached : corpora) {
    const auto& corpus = cached.corpus;
    for (int64_t i = 0; i < corpus.size(); ++i) {
      const int64_t pieces = std::min(max_positions, std::max(corpus.source_length(i), corpus.target_length(i)) + 1);
      extent.longest = std::max(extent.longest, pieces);
      extent.epoch_tokens += pieces;
    }
  }
  return extent;
}

int64_t fit_ceiling(const CorpusExtent& extent) {
  return std::max(kDefaultBatchTokens, std::min(kMaxFittedTokens, extent.epoch_tokens / kMinUpdatesPerEpoch));
}

}  // namespace trafo::train
