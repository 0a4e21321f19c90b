// BLEU and chrF on arbitrary bytes: metrics::corpus_bleu and metrics::corpus_chrf.
// Input: two option bytes, then lines split at '\n'; each line is HYPOTHESIS '\t' REFERENCE
// ['\t' SECOND REFERENCE] (missing fields are empty lines).
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"
#include "trafo/metrics/bleu.h"
#include "trafo/metrics/chrf.h"

using namespace trafo;

namespace {

bool in_range(double score) { return std::isfinite(score) && score >= 0.0 && score <= 100.0 + 1e-9; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t a = data[0], b = data[1];
  const int num_refs = 1 + (a & 1);

  metrics::BleuOptions bleu;
  bleu.lowercase = (a >> 1) & 1;
  bleu.tokenizer = (a >> 2) & 1 ? metrics::BleuTokenizer::kNone : metrics::BleuTokenizer::k13a;
  static constexpr metrics::BleuSmoothing kSmoothings[] = {metrics::BleuSmoothing::kExp, metrics::BleuSmoothing::kFloor,
                                                           metrics::BleuSmoothing::kAddK, metrics::BleuSmoothing::kNone};
  bleu.smoothing = kSmoothings[(a >> 3) & 3];
  bleu.effective_order = (a >> 5) & 1;
  bleu.max_ngram_order = 1 + ((a >> 6) & 3);  // 1..4

  metrics::ChrfOptions chrf;
  chrf.char_order = 1 + (b & 7);              // 1..8
  chrf.word_order = (b >> 3) & 3;             // 0..3 (2: chrF++)
  chrf.lowercase = bleu.lowercase;
  chrf.whitespace = (b >> 5) & 1;
  chrf.eps_smoothing = (b >> 6) & 1;
  chrf.beta = 1 + (b >> 7);                   // 1..2

  std::vector<std::string> hypotheses;
  std::vector<std::vector<std::string>> references(num_refs);
  for (const auto& line : fuzz::split_lines(std::string_view(reinterpret_cast<const char*>(data) + 2, size - 2))) {
    auto [hypothesis, rest] = fuzz::split_once(line, '\t');
    hypotheses.emplace_back(hypothesis);
    for (auto& stream : references) {
      const auto [reference, more] = fuzz::split_once(rest, '\t');
      stream.emplace_back(reference);
      rest = more;
    }
  }

  fuzz::expect_trafo_errors("corpus_bleu", [&] {
    const auto score = metrics::corpus_bleu(hypotheses, references, bleu);
    fuzz::check(in_range(score.score), "BLEU " + std::to_string(score.score) + " outside [0, 100]");
    fuzz::check(std::isfinite(score.bp) && score.bp >= 0.0 && score.bp <= 1.0, "brevity penalty outside [0, 1]");
    fuzz::check(score.counts.size() == static_cast<size_t>(bleu.max_ngram_order) &&
                    score.totals.size() == score.counts.size(), "one count and total per order");
    for (size_t n = 0; n < score.counts.size(); ++n) {
      fuzz::check(score.counts[n] >= 0 && score.counts[n] <= score.totals[n], "more matches than hypothesis n-grams");
    }
    metrics::format(score, 2, metrics::bleu_signature(bleu, num_refs));
  });
  fuzz::expect_trafo_errors("corpus_chrf", [&] {
    const auto score = metrics::corpus_chrf(hypotheses, references, chrf);
    fuzz::check(in_range(score.score), "chrF " + std::to_string(score.score) + " outside [0, 100]");
    fuzz::check(score.statistics.size() == 3 * static_cast<size_t>(chrf.char_order + chrf.word_order),
                "three statistics per order");
    for (size_t i = 0; i + 2 < score.statistics.size(); i += 3) {
      fuzz::check(score.statistics[i + 2] >= 0 && score.statistics[i + 2] <= score.statistics[i] &&
                      score.statistics[i + 2] <= score.statistics[i + 1], "more matches than n-grams");
    }
    metrics::format(score, 2, metrics::chrf_signature(chrf, num_refs));
  });
  for (const auto& hypothesis : hypotheses) {
    fuzz::expect_trafo_errors("tokenize_13a", [&] { metrics::tokenize_13a(hypothesis); });
  }
  return 0;
}
