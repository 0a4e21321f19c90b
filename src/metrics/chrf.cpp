#include "trafo/metrics/chrf.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "text.h"
#include "trafo/errors.h"
#include "trafo/metrics/bleu.h"  // kSignatureVersion

namespace trafo::metrics {
namespace {

// One counter per order: characters 1..char_order, then words 1..word_order. Word n-grams
// are their words joined by a space.
using CharNgramCounts = std::vector<std::unordered_map<std::u32string, long long>>;

bool is_ascii_punctuation(char32_t c) {  // Python's string.punctuation
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
         (c >= 0x7B && c <= 0x7E);
}

// chrF++'s word split: one punctuation mark at the end of a word, or else at its start,
// becomes a word of its own ("(hi)" gives "(hi" and ")", as sacreBLEU does).
std::vector<std::u32string> words_for_chrf(std::u32string_view line) {
  std::vector<std::u32string> words;
  for (auto& word : text::split(line)) {
    if (word.size() > 1 && is_ascii_punctuation(word.back())) {
      const char32_t mark = word.back();
      word.pop_back();
      words.push_back(std::move(word));
      words.emplace_back(1, mark);
    } else if (word.size() > 1 && is_ascii_punctuation(word.front())) {
      words.emplace_back(1, word.front());
      words.push_back(word.substr(1));
    } else {
      words.push_back(std::move(word));
    }
  }
  return words;
}

CharNgramCounts count_char_ngrams(const std::string& line, const ChrfOptions& options) {
  std::u32string s = text::decode(line);
  if (options.lowercase) s = text::lowercase(s);
  CharNgramCounts counts(options.char_order + options.word_order);
  const std::u32string chars = options.whitespace ? s : text::remove_spaces(s);
  for (int n = 1; n <= options.char_order; ++n) {
    for (std::size_t i = 0; i + n <= chars.size(); ++i) ++counts[n - 1][chars.substr(i, n)];
  }
  if (options.word_order > 0) {
    const auto words = words_for_chrf(s);
    for (int n = 1; n <= options.word_order; ++n) {
      auto& counter = counts[options.char_order + n - 1];
      for (std::size_t i = 0; i + n <= words.size(); ++i) {
        std::u32string key = words[i];
        for (int k = 1; k < n; ++k) key.append(1, U' ').append(words[i + k]);
        ++counter[key];
      }
    }
  }
  return counts;
}

// [hyp, ref, match] per order. Hypothesis n-grams do not count at an order where the
// reference has none (sacreBLEU's rule).
std::vector<long long> match_statistics(const CharNgramCounts& hyp, const CharNgramCounts& ref) {
  std::vector<long long> stats;
  stats.reserve(3 * hyp.size());
  for (std::size_t order = 0; order < hyp.size(); ++order) {
    long long hyp_count = 0, ref_count = 0, matches = 0;
    for (const auto& [ngram, count] : hyp[order]) {
      hyp_count += count;
      const auto found = ref[order].find(ngram);
      if (found != ref[order].end()) matches += std::min(count, found->second);
    }
    for (const auto& entry : ref[order]) ref_count += entry.second;
    stats.insert(stats.end(), {ref[order].empty() ? 0 : hyp_count, ref_count, matches});
  }
  return stats;
}

// F-beta in 0..100 from [hyp, ref, match] triples. By default precision and recall are
// averaged over the orders with n-grams on both sides (the effective order), then combined:
// (1 + β²) P R / (β² P + R). With eps_smoothing, F is taken per order (a missing side counts
// as 1e-16) and averaged over all orders.
double f_score(const std::vector<long long>& stats, const ChrfOptions& options) {
  const double eps = 1e-16;
  const double factor = static_cast<double>(options.beta) * options.beta;
  const std::size_t orders = stats.size() / 3;
  double eps_score = 0.0, sum_precision = 0.0, sum_recall = 0.0;
  int effective_order = 0;
  for (std::size_t i = 0; i < orders; ++i) {
    const long long n_hyp = stats[3 * i], n_ref = stats[3 * i + 1], n_match = stats[3 * i + 2];
    const double precision = n_hyp > 0 ? static_cast<double>(n_match) / n_hyp : eps;
    const double recall = n_ref > 0 ? static_cast<double>(n_match) / n_ref : eps;
    const double denominator = factor * precision + recall;
    eps_score += denominator > 0 ? (1 + factor) * precision * recall / denominator : eps;
    if (n_hyp > 0 && n_ref > 0) {
      sum_precision += precision;
      sum_recall += recall;
      ++effective_order;
    }
  }
  if (options.eps_smoothing) return orders > 0 ? 100.0 * eps_score / orders : 0.0;
  if (effective_order == 0) return 0.0;
  const double precision = sum_precision / effective_order;
  const double recall = sum_recall / effective_order;
  if (precision + recall == 0.0) return 0.0;
  return 100.0 * (1 + factor) * precision * recall / (factor * precision + recall);
}

}  // namespace

ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      const ChrfOptions& options) {
  if (options.char_order < 0 || options.word_order < 0 ||
      options.char_order + options.word_order < 1 || options.beta < 1) {
    throw InputError("chrF needs char_order, word_order >= 0 (not both 0) and beta >= 1");
  }
  text::check_streams(hypotheses, references, "chrF");

  const std::size_t orders = options.char_order + options.word_order;
  std::vector<long long> totals(3 * orders, 0);
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    const CharNgramCounts hyp = count_char_ngrams(hypotheses[i], options);
    std::vector<long long> best;
    double best_f = -1.0;
    for (const auto& stream : references) {  // the first of equally good references wins
      auto stats = match_statistics(hyp, count_char_ngrams(stream[i], options));
      const double f = f_score(stats, options);
      if (f > best_f) {
        best_f = f;
        best = std::move(stats);
      }
    }
    for (std::size_t k = 0; k < totals.size(); ++k) totals[k] += best[k];
  }

  ChrfScore result;
  result.score = f_score(totals, options);
  result.name = "chrF" + std::to_string(options.beta) + std::string(options.word_order, '+');
  result.statistics = std::move(totals);
  return result;
}

std::string chrf_signature(const ChrfOptions& options, int num_references) {
  return "nrefs:" + std::to_string(num_references) +
         "|case:" + (options.lowercase ? "lc" : "mixed") +
         "|eff:" + (options.eps_smoothing ? "no" : "yes") +
         "|nc:" + std::to_string(options.char_order) + "|nw:" + std::to_string(options.word_order) +
         "|space:" + (options.whitespace ? "yes" : "no") +
         "|version:" + std::string(kSignatureVersion);
}

std::string format(const ChrfScore& score, int width, std::string_view signature) {
  std::string line = score.name;
  if (!signature.empty()) line.append("|").append(signature);
  char number[64];
  std::snprintf(number, sizeof number, " = %.*f", width, score.score);
  return line + number;
}

}  // namespace trafo::metrics
