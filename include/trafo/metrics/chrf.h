// chrF and chrF++ as sacreBLEU 2.x computes them (Popović 2015, 2017): character n-grams of
// Unicode code points (whitespace removed by default), optional word n-grams, F-beta from
// precision and recall averaged over the orders that have n-grams on both sides.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trafo::metrics {

struct ChrfOptions {
  int char_order = 6;          // longest character n-gram
  int word_order = 0;          // longest word n-gram: 0 is chrF, 2 is chrF++
  int beta = 2;                // recall weighs beta times as much as precision
  bool lowercase = false;      // lowercase hypotheses and references
  bool whitespace = false;     // keep whitespace inside character n-grams
  bool eps_smoothing = false;  // chrF++.py's epsilon smoothing instead of the effective order
};

struct ChrfScore {
  double score = 0.0;  // 0..100
  std::string name;    // "chrF2", "chrF2++" (one '+' per word order)
  // For each order (characters 1..char_order, then words 1..word_order) the hypothesis
  // n-grams, reference n-grams and matches, summed over the corpus: 3 numbers per order.
  std::vector<long long> statistics;
};

// chrF of `hypotheses` against one or more reference streams, each as long as `hypotheses`;
// with several references, each sentence counts the reference that gives it the best
// sentence-level F score. Throws trafo::InputError when a stream's length differs or a line
// is not valid UTF-8.
ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      const ChrfOptions& options = {});

// e.g. "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:trafo-2.6.0-compatible".
std::string chrf_signature(const ChrfOptions& options, int num_references);

// sacreBLEU's text line: "chrF2 = 59.73", or "chrF2|<signature> = 59.73" with a signature.
std::string format(const ChrfScore& score, int width = 2, std::string_view signature = {});

}  // namespace trafo::metrics
