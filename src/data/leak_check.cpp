#include "trafo/data/leak_check.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <unordered_map>

#include "trafo/data/batcher.h"
#include "trafo/data/corpus.h"
#include "trafo/data/tokenizer.h"

namespace trafo::data {

Overlap find_overlap(const std::filesystem::path& source, const Tokenizer& tokenizer,
                     const std::vector<const Corpus*>& training) {
  Overlap overlap;
  std::unordered_multimap<uint64_t, int64_t> lines_by_hash;
  std::ifstream in(source, std::ios::binary);
  for (std::string line; std::getline(in, line);) {
    ++overlap.lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto ids = tokenizer.encode(line);
    if (!ids.empty()) lines_by_hash.emplace(source_hash(ids.data(), ids.size()), overlap.lines);
  }
  std::vector<bool> found(static_cast<size_t>(overlap.lines) + 1, false);
  for (const Corpus* corpus : training) {
    for (int64_t first = 0; first < corpus->size(); first += kBlockPairs) {
      const int64_t last = std::min(corpus->size(), first + kBlockPairs);
      for (int64_t i = first; i < last; ++i) {
        const auto [begin, end] = lines_by_hash.equal_range(corpus->record(i).source_hash);
        for (auto it = begin; it != end; ++it) found[static_cast<size_t>(it->second)] = true;
      }
      corpus->release(first, last);
    }
  }
  for (int64_t line = 1; line <= overlap.lines; ++line) {
    if (found[static_cast<size_t>(line)]) overlap.in_training.push_back(line);
  }
  return overlap;
}

}  // namespace trafo::data
