// Corpus BLEU as sacreBLEU 2.x computes it (Papineni et al. 2002; Post 2018): the same
// tokenizers, n-gram clipping over several reference streams, closest reference length,
// smoothing, and the same reproducibility signature and one-line report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trafo::metrics {

// The sacreBLEU release our BLEU and chrF are checked against, token for token.
inline constexpr std::string_view kSacrebleuVersion = "2.6.0";
// What signatures carry in their `version` field: not sacreBLEU itself, compatible with it.
inline constexpr std::string_view kSignatureVersion = "trafo-2.6.0-compatible";

enum class BleuTokenizer {
  k13a,  // mteval-v13a.pl, sacreBLEU's default ("13a")
  kNone  // split on whitespace only ("none")
};

enum class BleuSmoothing {
  kExp,    // NIST geometric sequence, mteval-v13a's (sacreBLEU's default)
  kFloor,  // a zero count becomes smooth_value
  kAddK,   // add smooth_value to counts and totals of orders 2..n
  kNone
};

struct BleuOptions {
  bool lowercase = false;                         // lowercase hypotheses and references
  BleuTokenizer tokenizer = BleuTokenizer::k13a;  // word tokenizer applied before counting
  BleuSmoothing smoothing = BleuSmoothing::kExp;  // what to do with zero n-gram matches
  std::optional<double> smooth_value;             // floor: 0.1, add-k: 1 when unset
  int max_ngram_order = 4;                        // longest n-gram counted
  bool effective_order = false;                   // drop orders with no hypothesis n-grams
};

struct BleuScore {
  double score = 0.0;              // 0..100
  std::vector<int64_t> counts;     // clipped n-gram matches, one per order 1..max_ngram_order
  std::vector<int64_t> totals;     // hypothesis n-grams, one per order
  std::vector<double> precisions;  // 0..100, after smoothing, one per order
  double bp = 0.0;                 // brevity penalty
  int64_t sys_len = 0;             // hypothesis tokens
  int64_t ref_len = 0;             // closest reference tokens, summed over sentences
  double ratio = 0.0;              // sys_len / ref_len (0 when ref_len is 0)
};

// The 13a tokenization of one line, tokens joined by single spaces (sacreBLEU's Tokenizer13a).
std::string tokenize_13a(std::string_view line);

// BLEU of `hypotheses` against one or more reference streams, each as long as `hypotheses`
// (sacreBLEU's corpus_bleu(hyps, [ref_stream_1, ref_stream_2, ...])). Throws
// trafo::InputError when a stream's length differs or a line is not valid UTF-8.
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      const BleuOptions& options = {});

// The score from summed statistics (sacreBLEU's BLEU.compute_bleu); `counts` and `totals`
// have one entry per order and set the order.
BleuScore compute_bleu(const std::vector<int64_t>& counts, const std::vector<int64_t>& totals,
                       int64_t sys_len, int64_t ref_len, const BleuOptions& options = {});

// e.g. "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:trafo-2.6.0-compatible".
std::string bleu_signature(const BleuOptions& options, int num_references);

// sacreBLEU's text line with `width` decimals for the score: "BLEU = 33.52 65.0/40.6/27.4/18.7
// (BP = 0.983 ratio = 0.983 hyp_len = 2145 ref_len = 2182)"; with a signature the name becomes
// "BLEU|<signature>". sacreBLEU's command line uses width 1, its Python API width 2.
std::string format(const BleuScore& score, int width = 2, std::string_view signature = {});

}  // namespace trafo::metrics
