#include "trafo/metrics/language_id.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "text.h"
#include "trafo/errors.h"
#include "trafo/json.h"

namespace trafo::metrics {
namespace {

constexpr const char* kKind = "char-ngrams";
constexpr const char* kFirstKind = "char-ngrams-1-3";  // what trafo wrote first: log-probabilities
constexpr const char* kWord = "W:";  // before a whole word; lowercased text never holds "W"
// The least lead, in log-probability per feature, of the likeliest language over the next for a
// line to be labelled: on gettext's fr, es and it UI strings this leaves 0.2-1% of lines (such as
// "Importante", "Sistema") unlabelled and labels 98.5-99% of the others right.
constexpr double kLeast = 0.05;

}  // namespace

// Each feature of `line`: the n-grams of 1 to longest_ characters of " word ", lowercased, as
// UTF-8, and (words_) each word after kWord.
template <typename Each>
void LanguageId::each_feature(const std::string& line, const Each& each) const {
  for (const auto& word : text::split(text::lowercase(text::decode(line)))) {
    const std::u32string padded = U" " + word + U" ";
    for (size_t n = 1; n <= longest_; ++n) {
      for (size_t at = 0; at + n <= padded.size(); ++at) {
        if (n == 1 && padded[at] == U' ') continue;  // a space alone says nothing
        each(text::encode(std::u32string_view(padded).substr(at, n)));
      }
    }
    if (words_) each(kWord + text::encode(word));
  }
}

void LanguageId::weigh(Profile& profile) {
  const auto total = static_cast<double>(profile.total);
  profile.log_p.clear();
  for (const auto& [feature, count] : profile.counts) profile.log_p[feature] = std::log(static_cast<double>(count) / total);
  profile.unseen = std::log(0.5 / total);
}

LanguageId LanguageId::learn(const std::map<std::string, std::vector<std::string>>& lines_by_language, size_t kept) {
  LanguageId id;
  for (const auto& [language, lines] : lines_by_language) {
    std::unordered_map<std::string, int64_t> counts;
    int64_t total = 0;
    for (const auto& line : lines) {
      id.each_feature(line, [&](const std::string& feature) {
        ++counts[feature];
        ++total;
      });
    }
    if (total == 0) continue;
    std::vector<std::pair<std::string, int64_t>> ranked(counts.begin(), counts.end());
    const auto keep = std::min(kept, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(),
                      [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    Profile profile;
    profile.counts.insert(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep));
    profile.total = total;
    weigh(profile);
    id.profiles_[language] = std::move(profile);
  }
  return id;
}

std::string LanguageId::to_json() const {
  nlohmann::json languages = nlohmann::json::object();
  for (const auto& [language, profile] : profiles_) {
    // sorted, so that the same profiles always give the same text
    const std::map<std::string, int64_t> counts(profile.counts.begin(), profile.counts.end());
    languages[language] = {{"total", profile.total}, {"counts", counts}};
  }
  return nlohmann::json{{"kind", kKind}, {"longest", longest_}, {"words", words_}, {"languages", languages}}.dump();
}

LanguageId LanguageId::from_json(const std::string& json) {
  try {
    const auto parsed = parse_json(json, "the language identifier");
    const auto kind = parsed.at("kind").get<std::string>();
    LanguageId id;
    if (kind == kFirstKind) {  // log-probabilities of 1-3-grams; the counts they came from
      id.longest_ = 3;
      id.words_ = false;
      for (const auto& [language, profile] : parsed.at("languages").items()) {
        auto& into = id.profiles_[language];
        const double total = 0.5 / std::exp(profile.at("unseen").get<double>());
        into.total = std::llround(total);
        if (into.total <= 0) throw InputError("a language identifier with no text for " + language);
        for (const auto& [ngram, log_p] : profile.at("ngrams").items()) {
          into.counts[ngram] = std::llround(std::exp(log_p.get<double>()) * total);
        }
        weigh(into);
      }
      return id;
    }
    if (kind != kKind) throw InputError("a language identifier of another kind (" + kind + ")");
    id.longest_ = parsed.at("longest").get<size_t>();
    id.words_ = parsed.at("words").get<bool>();
    if (id.longest_ < 1 || id.longest_ > 8) throw InputError("a language identifier of n-grams up to " + std::to_string(id.longest_));
    for (const auto& [language, profile] : parsed.at("languages").items()) {
      auto& into = id.profiles_[language];
      into.total = profile.at("total").get<int64_t>();
      into.counts = profile.at("counts").get<std::unordered_map<std::string, int64_t>>();
      if (into.total <= 0) throw InputError("a language identifier with no text for " + language);
      weigh(into);
    }
    return id;
  } catch (const nlohmann::json::exception&) {
    throw InputError("a language identifier that is not what trafo writes");
  }
}

std::vector<std::string> LanguageId::languages() const {
  std::vector<std::string> names;
  for (const auto& [language, profile] : profiles_) names.push_back(language);
  return names;
}

std::string LanguageId::identify(const std::string& line) const {
  std::map<std::string, double> score;
  int64_t features = 0;
  each_feature(line, [&](const std::string& feature) {
    ++features;
    for (const auto& [language, profile] : profiles_) {
      const auto found = profile.log_p.find(feature);
      score[language] += found != profile.log_p.end() ? found->second : profile.unseen;
    }
  });
  if (features == 0) return "";
  std::string best;
  double best_score = -std::numeric_limits<double>::infinity();
  double second_score = -std::numeric_limits<double>::infinity();
  for (const auto& [language, value] : score) {
    if (value > best_score) {
      best = language;
      second_score = best_score;
      best_score = value;
    } else {
      second_score = std::max(second_score, value);
    }
  }
  return (best_score - second_score) / static_cast<double>(features) < kLeast ? "" : best;
}

OffTarget OffTarget::count(const LanguageId& identifier, const std::vector<std::string>& asked,
                           const std::vector<std::string>& references, const std::vector<std::string>& translations) {
  OffTarget counts;
  const size_t lines = std::min({asked.size(), references.size(), translations.size()});
  for (size_t i = 0; i < lines; ++i) {
    if (asked[i].empty()) continue;
    const auto reference = identifier.identify(references[i]);
    const auto translation = identifier.identify(translations[i]);
    counts.references += reference.empty() ? 0 : 1;
    counts.references_right += reference == asked[i] ? 1 : 0;
    if (translation.empty()) continue;
    const int64_t off = translation != asked[i] ? 1 : 0;
    ++counts.labelled;
    counts.labelled_off += off;
    if (reference != asked[i]) continue;
    ++counts.judged;
    if (off != 0) counts.off_lines.push_back(static_cast<int64_t>(i));
  }
  return counts;
}

}  // namespace trafo::metrics
