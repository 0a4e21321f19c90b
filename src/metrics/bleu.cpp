#include "trafo/metrics/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "text.h"
#include "trafo/errors.h"

namespace trafo::metrics {
namespace {

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool is_period_or_comma(char32_t c) { return c == U'.' || c == U','; }

// mteval-v13a's first class: ASCII punctuation and symbols except ' , - . (and the space,
// which the class also holds; padding it changes nothing once words are split).
bool is_13a_symbol(char32_t c) {
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
         (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == U'/';
}

// Python's str.replace: every non-overlapping occurrence, left to right.
void replace_all(std::u32string& s, std::u32string_view from, std::u32string_view to) {
  std::u32string out;
  std::size_t start = 0;
  for (std::size_t hit; (hit = s.find(from, start)) != std::u32string::npos;) {
    out.append(s, start, hit - start).append(to);
    start = hit + from.size();
  }
  if (start == 0) return;
  out.append(s, start, std::u32string::npos);
  s = std::move(out);
}

// One re.sub pass of a two-character pattern `(A)(B)`: scans left to right, and after a match
// resumes behind it, as Python's non-overlapping substitution does. `emit(a, b, out)` writes
// the replacement.
template <typename Match, typename Emit>
std::u32string substitute_pairs(const std::u32string& s, Match match, Emit emit) {
  std::u32string out;
  out.reserve(s.size() + s.size() / 2);
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && match(s[i], s[i + 1])) {
      emit(s[i], s[i + 1], out);
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

std::vector<std::u32string> tokens_13a(std::u32string line) {
  replace_all(line, U"<skipped>", U"");
  replace_all(line, U"-\n", U"");
  replace_all(line, U"\n", U" ");
  if (line.find(U'&') != std::u32string::npos) {
    replace_all(line, U"&quot;", U"\"");
    replace_all(line, U"&amp;", U"&");
    replace_all(line, U"&lt;", U"<");
    replace_all(line, U"&gt;", U">");
  }
  // The line is padded with a space on both sides before the regular expressions run.
  std::u32string s;
  s.reserve(2 * line.size() + 2);
  s.push_back(U' ');
  for (const char32_t c : line) {
    if (is_13a_symbol(c)) {
      s.append({U' ', c, U' '});
    } else {
      s.push_back(c);
    }
  }
  s.push_back(U' ');
  // ([^0-9])([\.,]) → "\1 \2 ": period and comma unless preceded by a digit.
  s = substitute_pairs(
      s, [](char32_t a, char32_t b) { return !is_digit(a) && is_period_or_comma(b); },
      [](char32_t a, char32_t b, std::u32string& out) {
        out.append({a, U' ', b, U' '});
      });
  // ([\.,])([^0-9]) → " \1 \2": period and comma unless followed by a digit.
  s = substitute_pairs(
      s, [](char32_t a, char32_t b) { return is_period_or_comma(a) && !is_digit(b); },
      [](char32_t a, char32_t b, std::u32string& out) {
        out.append({U' ', a, U' ', b});
      });
  // ([0-9])(-) → "\1 \2 ": a dash after a digit.
  s = substitute_pairs(
      s, [](char32_t a, char32_t b) { return is_digit(a) && b == U'-'; },
      [](char32_t a, char32_t b, std::u32string& out) {
        out.append({a, U' ', b, U' '});
      });
  return text::split(s);
}

// sacreBLEU's BLEU._preprocess_segment: optional lowercase, rstrip, tokenize.
std::vector<std::u32string> preprocess(const std::string& line, const BleuOptions& options) {
  std::u32string s = text::decode(line);
  if (options.lowercase) s = text::lowercase(s);
  s.resize(text::rstrip(s).size());
  return options.tokenizer == BleuTokenizer::k13a ? tokens_13a(std::move(s)) : text::split(s);
}

// counts[n - 1] maps each n-gram (tokens joined by spaces) to how often it occurs.
using NgramCounts = std::vector<std::unordered_map<std::u32string, int64_t>>;

NgramCounts count_ngrams(const std::vector<std::u32string>& tokens, int max_order) {
  NgramCounts counts(max_order);
  for (int n = 1; n <= max_order; ++n) {
    for (std::size_t i = 0; i + n <= tokens.size(); ++i) {
      std::u32string key = tokens[i];
      for (int k = 1; k < n; ++k) key.append(1, U' ').append(tokens[i + k]);
      ++counts[n - 1][key];
    }
  }
  return counts;
}

// The reference length closest to the hypothesis length; the shorter one on a tie.
int64_t closest_ref_len(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t best_diff = -1, best_len = -1;
  for (const int64_t len : ref_lens) {
    const int64_t diff = std::llabs(hyp_len - len);
    if (best_diff == -1 || diff < best_diff || (diff == best_diff && len < best_len)) {
      best_diff = diff;
      best_len = len;
    }
  }
  return best_len;
}

// sacreBLEU's my_log: log(0) is floored to a very low number instead of -inf.
double floored_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

std::string tokenize_13a(std::string_view line) {
  const auto tokens = tokens_13a(text::decode(line));
  std::u32string joined;
  for (const auto& token : tokens) {
    if (!joined.empty()) joined.push_back(U' ');
    joined += token;
  }
  return text::encode(joined);
}

BleuScore compute_bleu(const std::vector<int64_t>& counts, const std::vector<int64_t>& totals,
                       int64_t sys_len, int64_t ref_len, const BleuOptions& options) {
  const int order = static_cast<int>(counts.size());
  BleuScore result;
  result.counts = counts;
  result.totals = totals;
  result.sys_len = sys_len;
  result.ref_len = ref_len;
  result.ratio = ref_len > 0 ? static_cast<double>(sys_len) / ref_len : 0.0;
  result.bp = 1.0;
  if (sys_len < ref_len) {
    result.bp = sys_len > 0 ? std::exp(1.0 - static_cast<double>(ref_len) / sys_len) : 0.0;
  }
  result.precisions.assign(order, 0.0);
  // No match at any order: the score is 0 (sacreBLEU #141).
  if (std::all_of(counts.begin(), counts.end(), [](int64_t c) { return c == 0; })) return result;

  const double default_value = options.smoothing == BleuSmoothing::kAddK ? 1.0 : 0.1;
  const double smooth_value = options.smooth_value.value_or(default_value);
  double exp_divisor = 1.0;
  int effective_order = order;
  for (int n = 1; n <= order; ++n) {
    double correct = static_cast<double>(counts[n - 1]);
    double total = static_cast<double>(totals[n - 1]);
    if (options.smoothing == BleuSmoothing::kAddK && n > 1) {
      correct += smooth_value;
      total += smooth_value;
    }
    if (total == 0.0) break;
    if (options.effective_order) effective_order = n;
    double& precision = result.precisions[n - 1];
    if (correct > 0.0) {
      precision = 100.0 * correct / total;
    } else if (options.smoothing == BleuSmoothing::kExp) {
      exp_divisor *= 2.0;  // 1/2, 1/4, ... of a match for each successive empty order
      precision = 100.0 / (exp_divisor * total);
    } else if (options.smoothing == BleuSmoothing::kFloor) {
      precision = 100.0 * smooth_value / total;
    }
  }
  double log_sum = 0.0;
  for (int n = 0; n < effective_order; ++n) log_sum += floored_log(result.precisions[n]);
  result.score = result.bp * std::exp(log_sum / effective_order);
  return result;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      const BleuOptions& options) {
  if (options.max_ngram_order < 1) throw InputError("BLEU needs max_ngram_order >= 1");
  text::check_streams(hypotheses, references, "BLEU");

  const int order = options.max_ngram_order;
  std::vector<int64_t> counts(order, 0), totals(order, 0);
  int64_t sys_len = 0, ref_len = 0;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    // Reference n-grams clip at the highest count any single reference has.
    NgramCounts ref_ngrams(order);
    std::vector<int64_t> ref_lens;
    for (const auto& stream : references) {
      const auto tokens = preprocess(stream[i], options);
      ref_lens.push_back(static_cast<int64_t>(tokens.size()));
      const NgramCounts ngrams = count_ngrams(tokens, order);
      for (int n = 0; n < order; ++n) {
        for (const auto& [ngram, count] : ngrams[n]) {
          int64_t& best = ref_ngrams[n][ngram];
          best = std::max(best, count);
        }
      }
    }
    const auto hyp_tokens = preprocess(hypotheses[i], options);
    const auto hyp_len = static_cast<int64_t>(hyp_tokens.size());
    sys_len += hyp_len;
    ref_len += closest_ref_len(hyp_len, ref_lens);
    const NgramCounts hyp_ngrams = count_ngrams(hyp_tokens, order);
    for (int n = 0; n < order; ++n) {
      for (const auto& [ngram, count] : hyp_ngrams[n]) {
        totals[n] += count;
        const auto found = ref_ngrams[n].find(ngram);
        if (found != ref_ngrams[n].end()) counts[n] += std::min(count, found->second);
      }
    }
  }
  return compute_bleu(counts, totals, sys_len, ref_len, options);
}

std::string bleu_signature(const BleuOptions& options, int num_references) {
  std::string smooth;
  switch (options.smoothing) {
    case BleuSmoothing::kExp:
      smooth = "exp";
      break;
    case BleuSmoothing::kNone:
      smooth = "none";
      break;
    case BleuSmoothing::kFloor:
      smooth = "floor" + printf_string("[%.2f]", options.smooth_value.value_or(0.1));
      break;
    case BleuSmoothing::kAddK:
      smooth = "add-k" + printf_string("[%.2f]", options.smooth_value.value_or(1.0));
      break;
  }
  return "nrefs:" + std::to_string(num_references) +
         "|case:" + (options.lowercase ? "lc" : "mixed") +
         "|eff:" + (options.effective_order ? "yes" : "no") +
         "|tok:" + (options.tokenizer == BleuTokenizer::k13a ? "13a" : "none") +
         "|smooth:" + smooth + "|version:" + std::string(kSignatureVersion);
}

std::string format(const BleuScore& score, int width, std::string_view signature) {
  std::string line = "BLEU";
  if (!signature.empty()) line.append("|").append(signature);
  char number[64];
  std::snprintf(number, sizeof number, " = %.*f ", width, score.score);
  line += number;
  for (std::size_t n = 0; n < score.precisions.size(); ++n) {
    if (n > 0) line += '/';
    line += printf_string("%.1f", score.precisions[n]);
  }
  line += printf_string(" (BP = %.3f", score.bp) + printf_string(" ratio = %.3f", score.ratio);
  line += " hyp_len = " + std::to_string(score.sys_len) +
          " ref_len = " + std::to_string(score.ref_len) + ")";
  return line;
}

}  // namespace trafo::metrics
