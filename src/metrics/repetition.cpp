#include "trafo/metrics/repetition.h"

#include <sstream>

namespace trafo::metrics {

bool has_repetition_loop(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  const auto size = static_cast<int>(words.size());
  for (int n = 1; n <= kLoopLongestN && n * kLoopRepeats <= size; ++n) {
    // The run of positions i where words[i] == words[i - n]: a run of n × (repeats - 1) such positions
    // is an n-gram followed by repeats - 1 copies of itself.
    int run = 0;
    for (int i = n; i < size; ++i) {
      run = words[i] == words[i - n] ? run + 1 : 0;
      if (run >= n * (kLoopRepeats - 1)) return true;
    }
  }
  return false;
}

long long count_repetition_loops(const std::vector<std::string>& hypotheses) {
  long long loops = 0;
  for (const auto& hypothesis : hypotheses) loops += has_repetition_loop(hypothesis) ? 1 : 0;
  return loops;
}

}  // namespace trafo::metrics
